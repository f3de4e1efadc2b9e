"""DependencyTree: first-order trees, projective or not, behind the Structure protocol.

Parts are arcs: an (n+1, n+1) array indexed [head, modifier]; column 0 (arcs
into the root) and the diagonal are not parts and are always 0. A label is a
heads array (int32, n+1) with heads[0] = -1.

Projective trees are decoded by Eisner's algorithm and their marginals come from
inside-outside (`eisner`); non-projective trees by Chu-Liu-Edmonds and the
matrix-tree theorem (`mst`). `projective="auto"` decides at `initialize` from the
training treebank: non-projective when at least `AUTO_NONPROJECTIVE_SHARE` of its
sentences are non-projective (the threshold is set from the dev measurements in the
README, "Projective or not").
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..sentence import Sentence, SentenceBatch
from ..structure import take_positions
from .eisner import eisner_argmax, eisner_marginals
from .features import DEFAULT_TEMPLATES, ArcFeatures
from .mst import mst_argmax, mst_marginals

# Measured (README, "Projective or not"): with the same trainer, non-projective decoding
# gained dev UAS on el_gdt (11.0% of training sentences non-projective) and hu_szeged
# (19.5%), tied on tr_imst (5.0%) and lost on en_ewt (2.3%) and it_partut (2.1%).
AUTO_NONPROJECTIVE_SHARE = 0.08


def is_projective(heads) -> bool:
    """Whether a tree (heads[0] = -1) has no crossing arcs, the arc from the root included."""
    heads = np.asarray(heads)
    m = np.arange(1, len(heads))
    lo, hi = np.minimum(heads[1:], m), np.maximum(heads[1:], m)
    # arcs a, b cross when lo_a < lo_b < hi_a < hi_b
    crossing = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return not crossing.any()


def nonprojective_share(sentences) -> float:
    """The share of sentences whose gold tree is not projective."""
    flags = [not is_projective(x.heads) for x in sentences]
    return sum(flags) / len(flags) if flags else 0.0


class DependencyTree:
    name = "tree"
    order = 1

    def __init__(self, templates: Sequence[str] = DEFAULT_TEMPLATES, hash_bits: int = 22, single_root: bool = True,
                 projective: bool | str = True):
        if projective not in (True, False, "auto"):
            raise ValueError(f"projective must be true, false or \"auto\", got {projective!r}")
        self.features = ArcFeatures(templates, hash_bits)
        self.single_root = bool(single_root)
        self.projective = projective

    @property
    def hash_bits(self) -> int:
        return self.features.bits

    def registry_call(self) -> dict:
        """The registry call that rebuilds this structure (`arborist.registry.make_structure`),
        with what training decided (projective, when it was "auto")."""
        return {
            "@structures": "arborist.DependencyTree.v1",
            "templates": list(self.features.templates),
            "hash_bits": self.features.bits,
            "single_root": self.single_root,
            "projective": self.projective,
        }

    def _decoder(self):
        if self.projective == "auto":
            raise ValueError('projective = "auto" is decided by initialize(training sentences); call it first')
        return (eisner_argmax, eisner_marginals) if self.projective else (mst_argmax, mst_marginals)

    # -- the protocol -------------------------------------------------------
    # An executor with one thread that scores half of each sentence's heads (`ArcFeatures.score`);
    # set only for the span of a training epoch by `scoring_threads`, never saved.
    score_helper = None

    def scores(self, x: Sentence, w) -> np.ndarray:
        return self.features.score(x, w.array, helper=self.score_helper)

    def argmax(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        return self._decoder()[0](scores, self.single_root)[0]

    def predict_batch(self, batch: SentenceBatch, w) -> np.ndarray | None:
        """The argmax trees of every sentence of the batch (heads in the batch's columns),
        computed without the GIL (`ArcFeatures.parse_many`); None for non-projective and
        second-order decoding, which have no batch kernel."""
        if self.order != 1 or self._decoder()[0] is not eisner_argmax:
            return None
        return self.features.parse_many(batch.attrs, batch.starts, w.array, self.single_root)

    def cost_augmented_argmax(self, x: Sentence, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: Sentence, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return self._decoder()[1](scores, self.single_root)

    def indicator(self, x: Sentence, y: np.ndarray) -> np.ndarray:
        n = len(y) - 1
        out = np.zeros((n + 1, n + 1))
        out[y[1:], np.arange(1, n + 1)] = 1.0
        return out

    def part_cost(self, x: Sentence, gold: np.ndarray) -> np.ndarray:
        n = len(gold) - 1
        cost = 1.0 - self.indicator(x, gold)
        cost[:, 0] = 0.0
        cost[np.arange(n + 1), np.arange(n + 1)] = 0.0
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        self.features.add(x, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # A position is a word; taking pred there means taking its predicted head.
        return take_positions(gold, pred, positions)

    def gold(self, x: Sentence) -> np.ndarray:
        return x.heads

    def hits(self, x: Sentence, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold[1:]) == np.asarray(pred[1:])).sum()), len(gold) - 1

    def initialize(self, sentences) -> None:
        """Resolves projective = "auto" from the training trees (the feature space is hashed,
        so there is nothing else to learn before training)."""
        if self.projective == "auto":
            self.projective = nonprojective_share(list(sentences)) < AUTO_NONPROJECTIVE_SHARE
