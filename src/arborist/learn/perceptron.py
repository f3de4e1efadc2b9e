"""The structured weighted violations perceptron (SWVP, Algorithm 2 of Dror and
Reichart) and its special case the averaged structured perceptron (CSP, Algorithm 1).

Written against the Structure protocol only. For each example in turn, decode
y* = argmax_y w . phi(x, y); if y* != y, build the mixed assignments m^J (y* at
the positions in J, gold elsewhere) for every J in JJ, weight them with gamma
(SetGamma), and update w += sum_J gamma(m^J) (phi(x, y) - phi(x, m^J)).

JJ ("substructures"):
  "full"    JJ = {[L]}: the one mixed assignment is y* itself and gamma = 1, which is
            exactly CSP (`Perceptron`).
  "single"  single differences (Section 5): one J = {j} per position j where y*
            differs from the gold label (a word and its head, a token and its tag).

gamma ("weighting", Section 5), over the mixed assignments with margins
w . Delta phi(x, y, m^J), all of them (balanced) or only the violations, margin <= 0
(aggressive, footnote 5):
  "wm"   gamma ~ |margin|^beta
  "wmr"  gamma ~ ((N - r) / N)^beta, r the rank of |margin| among the N, 0 for the
         largest (ties share the better rank). The paper leaves the origin of r
         open; from 0, the smallest still gets a positive weight, and one mixed
         assignment gets gamma = 1 as it must.
Both are normalized to sum to 1 (Definition 3, condition 1); if every |margin| is 0
(w = 0 at the start), gamma is uniform.

Dynamic updates (Property 3): at every update the gamma selection conditions are
checked; when condition (2), w . sum_J gamma(m^J) Delta phi(x, y, m^J) <= 0, fails
(balanced weighting can break it), or no gamma can meet condition (1) (aggressive
weighting and no mixed assignment is a violation), the update backs off to CSP's
for that example. The epoch metrics count these back-offs.

Averaging (Collins 2002) uses the clock of `Weights`: the returned weights are the
mean of w after every example.
"""

import time

import numpy as np

from ..structure import Structure, differing_positions
from ..weights import Weights
from . import Trainer

SUBSTRUCTURES = ("full", "single")
WEIGHTINGS = ("wm", "wmr")


def set_gamma(margins: np.ndarray, weighting: str, beta: float, aggressive: bool) -> np.ndarray | None:
    """SetGamma (Section 5): gamma over mixed assignments with these margins, summing to 1;
    None when no gamma meets condition (1) (aggressive, and no margin is <= 0)."""
    margins = np.asarray(margins, dtype=np.float64)
    eligible = margins <= 0.0 if aggressive else np.ones(margins.shape, dtype=bool)
    if not eligible.any():
        return None
    magnitude = np.abs(margins[eligible])
    if weighting == "wm":
        largest = magnitude.max()
        # Scaled by the largest first: the same ratios, without overflow for large margins.
        raw = (magnitude / largest) ** beta if largest > 0.0 else np.zeros_like(magnitude)
    elif weighting == "wmr":
        n = len(magnitude)
        rank = (magnitude[None, :] > magnitude[:, None]).sum(axis=1)  # how many are strictly larger
        raw = ((n - rank) / n) ** beta
    else:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    total = raw.sum()
    gamma = np.zeros(margins.shape)
    gamma[eligible] = raw / total if total > 0.0 else 1.0 / len(raw)
    return gamma


class SWVP(Trainer):
    """Averaged SWVP; `substructures="full"` is CSP (see the module docstring)."""

    name = "swvp"
    columns = ("train_accuracy", "updates", "backoffs", "epoch_seconds")

    def __init__(self, substructures: str = "single", weighting: str = "wm", aggressive: bool = False,
                 beta: float = 1.0, averaged: bool = True, shuffle: bool = True, seed: int = 0):
        if substructures not in SUBSTRUCTURES:
            raise ValueError(f"substructures must be one of {SUBSTRUCTURES}, got {substructures!r}")
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
        if not beta > 0:
            raise ValueError(f"beta must be positive, got {beta!r}")
        self.substructures = substructures
        self.weighting = weighting
        self.aggressive = bool(aggressive)
        self.beta = float(beta)
        self.averaged = averaged
        self.shuffle = shuffle
        self.rng = np.random.default_rng(seed)
        self.weights: Weights | None = None

    def begin(self, structure: Structure, examples: list, hash_bits: int) -> None:
        self.weights = Weights(hash_bits, averaged=self.averaged)

    def update_coefficients(self, structure: Structure, x, scores, gold, pred) -> tuple[np.ndarray, bool]:
        """(sum_J gamma(m^J) (indicator(gold) - indicator(m^J)), whether it backed off to CSP's update)
        for a wrong prediction `pred` under part scores `scores`."""
        gold_parts = structure.indicator(x, gold)
        if self.substructures == "full":
            # One mixed assignment, y* itself, so gamma = 1 under any weighting: CSP's update.
            # (Its condition (2) fails only when the gold label outscores the decoder's best,
            # i.e. lies outside the decoder's label space; the update is the same.)
            return gold_parts - structure.indicator(x, pred), False
        differ = differing_positions(gold, pred)
        subsets = [differ[k:k + 1] for k in range(len(differ))]
        gold_score = float((scores * gold_parts).sum())
        mixed_parts = [structure.indicator(x, structure.mix(gold, pred, J)) for J in subsets]
        margins = np.array([gold_score - float((scores * parts).sum()) for parts in mixed_parts])
        gamma = set_gamma(margins, self.weighting, self.beta, self.aggressive)
        if gamma is not None:
            if not (gamma >= 0.0).all() or abs(gamma.sum() - 1.0) > 1e-9:  # condition (1)
                raise AssertionError(f"SetGamma broke condition (1): {gamma}")
            if float(gamma @ margins) <= 0.0:  # condition (2)
                coef = gold_parts.copy()
                for g, parts in zip(gamma, mixed_parts):
                    if g:
                        coef -= g * parts
                return coef, False
        return gold_parts - structure.indicator(x, pred), True

    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        """One pass over examples; returns training metrics (accuracy of the positions, updates,
        back-offs to the CSP update, examples/s)."""
        w = self.weights
        order = self.rng.permutation(len(examples)) if self.shuffle else np.arange(len(examples))
        correct = total = 0.0
        updates = backoffs = 0
        start = time.perf_counter()
        for i in order:
            x = examples[i]
            gold = structure.gold(x)
            scores = structure.scores(x, w)
            pred = structure.argmax(x, scores)
            right, positions = structure.hits(x, gold, pred)
            correct += right
            total += positions
            if right < positions:
                coef, backed_off = self.update_coefficients(structure, x, scores, gold, pred)
                structure.add_features(x, coef, w, 1.0)
                updates += 1
                backoffs += backed_off
            w.tick()
            if tracker is not None:
                tracker.advance(1, train_accuracy=correct / max(total, 1.0))
        seconds = time.perf_counter() - start
        return {
            "train_accuracy": correct / max(total, 1.0),
            "updates": updates,
            "backoffs": backoffs,
            "epoch_seconds": seconds,
            "examples_per_second": len(order) / max(seconds, 1e-9),
        }

    def finish_epoch(self, metrics: dict) -> bool:
        """Nothing to schedule between epochs; never asks to stop."""
        return False

    def settings(self) -> dict:
        return {"trainer": self.name, "averaged": self.averaged, "substructures": self.substructures,
                "weighting": self.weighting, "aggressive": self.aggressive, "beta": self.beta}

    def state(self) -> tuple[dict, dict]:
        """(arrays, meta) that `restore` turns back into this exact trainer state."""
        arrays = {"weights": self.weights.array, "accumulator": self.weights.accumulator}
        meta = {**self.settings(), "step": self.weights.step, "rng": self.rng.bit_generator.state}
        return arrays, meta

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        ours = self.settings()
        # Checkpoints written before SWVP existed hold only trainer and averaged (CSP).
        theirs = {**Perceptron().settings(), **{k: meta[k] for k in ours if k in meta}}
        if theirs != ours:
            raise ValueError(f"checkpoint is for {theirs}, not {ours}")
        bits = int(arrays["weights"].size).bit_length() - 1
        self.weights = Weights(bits, self.averaged, arrays["weights"].copy())
        if self.averaged:
            self.weights.accumulator[:] = arrays["accumulator"]
        self.weights.step = meta["step"]
        self.rng.bit_generator.state = meta["rng"]

    def prediction_weights(self) -> Weights:
        """The weights to predict with: the average, for an averaged perceptron."""
        return Weights(self.weights.bits, False, self.weights.averaged_array())


class Perceptron(SWVP):
    """The averaged structured perceptron, CSP: SWVP with JJ = {[L]} and gamma = 1."""

    name = "perceptron"

    def __init__(self, averaged: bool = True, shuffle: bool = True, seed: int = 0):
        super().__init__(substructures="full", averaged=averaged, shuffle=shuffle, seed=seed)


class MarginPerceptron(Perceptron):
    """The cost-augmented (margin) averaged perceptron: decoding for the update adds `margin`
    times the Hamming cost of each part (`part_cost`: a wrong tag, head, class or character
    tag), so updates go on until the gold structure beats every other by `margin` per wrong
    position. The plain perceptron stops updating a context as soon as its argmax is right, so
    rare contexts keep weights barely above the generic ones; the margin keeps pushing them.
    margin = 0 is `Perceptron` exactly. Measured: the tokenizer (margin 100, notes/tokenizer.md)
    and the part-of-speech, FEATS and lemma components (margin 20, notes/lemma_morph.md)."""

    name = "margin-perceptron"

    def __init__(self, margin: float = 1.0, averaged: bool = True, shuffle: bool = True, seed: int = 0,
                 margin_epochs: int | None = None, final_margin: float = 0.0):
        """margin_epochs: train with `margin` for that many epochs, then with `final_margin`
        (None: `margin` throughout)."""
        if margin < 0 or final_margin < 0:
            raise ValueError(f"margins must not be negative, got {margin!r} and {final_margin!r}")
        if margin_epochs is not None and margin_epochs < 0:
            raise ValueError(f"margin_epochs must not be negative, got {margin_epochs!r}")
        super().__init__(averaged=averaged, shuffle=shuffle, seed=seed)
        self.margin = float(margin)
        self.margin_epochs = margin_epochs
        self.final_margin = float(final_margin)
        self.epochs_done = 0

    def current_margin(self) -> float:
        if self.margin_epochs is not None and self.epochs_done >= self.margin_epochs:
            return self.final_margin
        return self.margin

    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        w = self.weights
        order = self.rng.permutation(len(examples)) if self.shuffle else np.arange(len(examples))
        correct = total = 0.0
        updates = 0
        start = time.perf_counter()
        margin = self.current_margin()
        self.epochs_done += 1
        for i in order:
            x = examples[i]
            gold = structure.gold(x)
            scores = structure.scores(x, w)
            if margin:
                scores = scores + margin * structure.part_cost(x, gold)
            pred = structure.argmax(x, scores)
            right, positions = structure.hits(x, gold, pred)
            correct += right
            total += positions
            if right < positions:
                structure.add_features(x, structure.indicator(x, gold) - structure.indicator(x, pred), w, 1.0)
                updates += 1
            w.tick()
            if tracker is not None:
                tracker.advance(1, train_accuracy=correct / max(total, 1.0))
        seconds = time.perf_counter() - start
        return {"train_accuracy": correct / max(total, 1.0), "updates": updates, "backoffs": 0,
                "epoch_seconds": seconds, "examples_per_second": len(order) / max(seconds, 1e-9), "margin": margin}

    def settings(self) -> dict:
        return {**super().settings(), "trainer": self.name, "margin": self.margin,
                "margin_epochs": self.margin_epochs, "final_margin": self.final_margin}

    def state(self) -> tuple[dict, dict]:
        arrays, meta = super().state()
        return arrays, {**meta, "epochs_done": self.epochs_done}  # where the margin schedule is

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        super().restore(structure, examples, arrays, meta)
        self.epochs_done = int(meta.get("epochs_done", 0))
