"""Component: one trained stage of a pipeline, and the lifecycle its kind defines.

A component kind is one class deriving from `Component`, registered by name
(`@registry.components("tagger")`, or through the `arborist_components` entry point
from another package). Everything that differs between kinds lives in the class:

    reads, writes       the columns its features read and it predicts ("form", "upos",
                        "xpos", "lemma", "feats", "head", "deprel", "misc", or a column of
                        its own such as the pruner's "arcs"); two components of a
                        pipeline never write the same column
    jackknifed          whether downstream components that read its columns train on its
                        jackknifed predictions (the taggers) or on the gold columns (the
                        parser: the labeler trains on gold trees)
    structures          the registry names of the structures it predicts with, so that a
                        config may leave out `kind`
    link(upstream)      wiring to the components before it, once (the second-order
                        parser finds its pruner)
    examples()          what its structure is trained and evaluated on, made from
                        sentences (the second-order parser's pruned examples)
    predict_batch()     its prediction for a whole `SentenceBatch`
    write_batch()       its prediction written into the batch for the components after it
    value(), apply()    one sentence's prediction, and that prediction written into a
                        `Sentence` (jackknifing, and the inputs of the components after it)
    score(), score_key  its dev scores, and the one that selects its epochs
    confidence_column   the column whose probabilities it gives ("head", "deprel", "upos"),
                        "" for none; with word_probabilities(), predicted_classes(),
                        gold_classes() and candidate_names the generic `confidences`
                        (probabilities of its predictions, k best values) and
                        `calibrate` (a temperature fitted on dev, kept in `info`) work
    save(), load()      its files in a model directory (default: `<name>.npy`, the weights)

The training driver (`arborist.train`), the model (`arborist.model`), the CLI and
the spaCy bridge loop over components through these and name no kind.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .sentence import Sentence, SentenceBatch
from .strings import hash_strings
from .weights import Weights, aligned_empty, cache_aligned

# The columns whose values are per-token strings: what the spaCy bridge's tagging stage
# sets and `--gold-tags` keeps from the input. The others ("head", "deprel", a pruner's
# "arcs") form the tree stage.
TOKEN_COLUMNS = ("upos", "xpos", "lemma", "feats", "misc")
MAX_HASH_BITS = 40  # 8 TiB of weights: anything larger in a model file is forged


@dataclass
class Confidence:
    """A component's probabilities for its column over a batch, in the batch's columns (a
    sentence's root first; NaN and -1 at roots).

    prob        (N,) the probability of each word's predicted value, from the model's own
                marginals at the component's temperature
    top, top_prob  (N, k) each word's k most probable values (class indices; -1 past the
                number of classes) and their probabilities, best first
    names       the value of each class index (a label set), or None where the index is the
                value itself (a head)"""

    prob: np.ndarray
    top: np.ndarray
    top_prob: np.ndarray
    names: Sequence[str] | None = None

    def value(self, index: int):
        return int(index) if self.names is None else self.names[int(index)]


class ModelError(ValueError):
    """A model directory that cannot be used: every message names the file."""


class Component:
    kind = ""  # the name it is registered under (set by `registry.components`)
    reads: tuple[str, ...] = ("form",)
    writes: tuple[str, ...] = ()
    jackknifed = False
    structures: tuple[str, ...] = ()
    trainer_call: dict | None = None  # the trainer's registry call, recorded by training

    def __init__(self, structure, weights: np.ndarray | None = None, info: dict | None = None):
        self.name = ""  # its name in a pipeline (`Pipeline.add`)
        self.structure = structure
        self.weights = None if weights is None else Weights(
            structure.hash_bits, False, np.ascontiguousarray(weights, dtype=np.float64))
        self.info = dict(info or {})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.kind})>"

    # An intermediate kind's column is no output: it exists for a later component to read
    # (a morphologizer_draft's bundles). A config without `kind` never names one.
    intermediate = False

    @property
    def tagging(self) -> bool:
        """Whether it writes only token columns (the spaCy tagging stage; skipped with gold tags)."""
        return all(c in TOKEN_COLUMNS for c in self.writes)

    # -- wiring and training data -------------------------------------------------
    def link(self, upstream: Sequence["Component"]) -> None:
        """Connect to the components before it in its pipeline (called once, when it is added)."""

    def examples(self, sentences: Sequence[Sentence], training: bool = False) -> list:
        """What the structure is trained on (`training`) or evaluated on, from sentences
        whose input columns the components before it have filled in."""
        return list(sentences)

    def training_report(self, examples: list) -> str | None:
        """A line for the training log about the prepared training examples, if any."""
        return None

    # -- predicting -------------------------------------------------------------------
    def predict(self, x):
        return self.decode(x, self.scores(x))

    def scores(self, x):
        """The structure's scores of example x as prediction uses them (for `predict`, the
        probabilities and calibration; training uses the structure's own)."""
        return self.structure.scores(x, self.weights)

    def decode(self, x, scores):
        """Its prediction for example x from the structure's scores of x (`predict`, and
        `annotate_confident`, which computes the scores once for this and the marginals)."""
        return self.structure.argmax(x, scores)

    def predict_batch(self, batch: SentenceBatch) -> np.ndarray:
        """`predict` of every sentence of the batch, concatenated: by the structure's batch
        kernel (one region without the GIL) when it has one, else sentence by sentence."""
        many = getattr(self.structure, "predict_batch", None)
        result = many(batch, self.weights) if many is not None else None
        if result is None:
            parts = [self.predict(x) for x in self.examples([batch.sentence(i) for i in range(batch.n_sentences)])]
            result = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return result

    def annotate(self, batch: SentenceBatch) -> np.ndarray | None:
        """Predict the batch and write the prediction into it; None for a component that
        predicts nothing by itself (a pruner: the parser after it asks it)."""
        predicted = self.predict_batch(batch)
        self.write_batch(batch, predicted)
        return predicted

    def write_batch(self, batch: SentenceBatch, predicted: np.ndarray) -> None:
        """Write the prediction into the batch, where the components after it read it."""

    def value(self, batch: SentenceBatch, predicted: np.ndarray, i: int):
        """Sentence i's prediction, as `apply` takes it (tags, heads, labels...)."""
        raise NotImplementedError

    def apply(self, sentence: Sentence, value) -> Sentence:
        """The sentence with this component's prediction in its columns."""
        return sentence

    def sentence_fields(self, value) -> dict:
        """The Sentence fields besides `attrs` that `apply` sets (a tagger: its column's
        strings). `annotate` builds each sentence once from the batch's rows and these,
        instead of one copy per component."""
        return {}

    def column_values(self, value) -> dict[str, list[str]]:
        """{column: one string per word} of a prediction, for the token columns it writes
        (CoNLL-U output and scoring); empty for the tree columns."""
        return {}

    def column_ids(self, batch: SentenceBatch, predicted: np.ndarray) -> dict[str, tuple[np.ndarray, list[str]]]:
        """{column: (the string id of every word of the batch, the strings)}: `column_values` of
        the whole batch as string hashes (which are spaCy's string ids), for the spaCy bridge."""
        words: dict[str, list[str]] = {}
        for i in range(batch.n_sentences):
            for column, values in self.column_values(self.value(batch, predicted, i)).items():
                words.setdefault(column, []).extend(values)
        return {c: (hash_strings(v) if v else np.zeros(0, dtype=np.uint64), sorted(set(v))) for c, v in words.items()}

    @property
    def classes(self) -> tuple[str, ...]:
        """The values it can predict (a tag set, a label set), where it has a fixed set."""
        return ()

    # -- scoring --------------------------------------------------------------------------
    score_key = ""  # the dev score that selects its epochs ("dev_uas")

    def score(self, gold: Sequence[Sentence], parsed: Sequence, unseen=None) -> dict:
        """Scores of its predictions (`parsed`, from `arborist.model.annotate`) against the gold
        sentences; `unseen(sentence)` marks the words unseen in training."""
        raise NotImplementedError

    # -- probabilities -----------------------------------------------------------------
    confidence_column = ""  # the column whose probabilities `confidences` gives ("" none)

    @property
    def temperature(self) -> float:
        """The temperature its scores are divided by before normalizing (`calibrate`; 1 if none)."""
        return float(self.info.get("temperature", 1.0))

    @property
    def candidate_names(self) -> Sequence[str] | None:
        """The value of each class (`Confidence.names`); None: the class index is the value."""
        return self.classes or None

    def word_probabilities(self, x, scores: np.ndarray) -> np.ndarray:
        """(n, C): each word's distribution over its C classes under the structure's
        marginals for `scores` (an example, as `examples` makes them)."""
        raise NotImplementedError

    def predicted_classes(self, batch: SentenceBatch, predicted: np.ndarray, i: int) -> np.ndarray:
        """(n,) the class index of each word's prediction in sentence i."""
        raise NotImplementedError

    def gold_classes(self, x, gold: Sentence) -> np.ndarray:
        """(n,) the class index of each word's gold value (-1 where it has none)."""
        raise NotImplementedError

    def possible_classes(self, x) -> np.ndarray | None:
        """(n, C) bool: the classes the structure can give each word of example x (None: all).
        A gold value it cannot give (an arc a pruner removed) has probability 0 at every
        temperature, so `calibrate` leaves such words out."""
        return None

    def distributions(self, examples: Sequence, temperature: float | None = None):
        """`word_probabilities` of each example at `temperature` (default: its own)."""
        t = self.temperature if temperature is None else temperature
        for x in examples:
            if x.n == 0:
                yield np.zeros((0, 1))
            else:
                yield self.word_probabilities(x, self.scores(x) / t)

    def batch_distributions(self, batch: SentenceBatch) -> tuple[np.ndarray, list[np.ndarray]]:
        """(`predict_batch`'s prediction, each sentence's `word_probabilities` at its temperature).
        Sentence by sentence here, each sentence's scores computed once for its argmax and its
        marginals; a kind whose structure has a batch kernel for both overrides it."""
        t = self.temperature
        sentences = [batch.sentence(i) for i in range(batch.n_sentences)]
        parts, distributions = [], []
        for x in self.examples(sentences):
            scores = self.scores(x)
            parts.append(self.decode(x, scores))
            distributions.append(self.word_probabilities(x, scores / t) if x.n else np.zeros((0, 1)))
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)), distributions

    def confidences(self, batch: SentenceBatch, predicted: np.ndarray, k: int = 0) -> dict[str, Confidence]:
        """{column: Confidence} of its prediction `predicted` for the batch (empty for a kind
        without probabilities), from the same examples and weights as the prediction."""
        if not self.confidence_column:
            return {}
        return self._confidence(batch, predicted, self.batch_distributions(batch)[1], k)

    def annotate_confident(self, batch: SentenceBatch, k: int = 0) -> tuple[np.ndarray | None, dict[str, Confidence]]:
        """`annotate` and `confidences` in one pass (`batch_distributions`: the scores are
        computed once, for the argmax and the marginals, so the probabilities cost the marginals,
        not a second scoring). The prediction is the argmax of the same scores as `annotate`'s."""
        if not self.confidence_column:
            return self.annotate(batch), {}
        predicted, distributions = self.batch_distributions(batch)
        self.write_batch(batch, predicted)
        return predicted, self._confidence(batch, predicted, distributions, k)

    def _confidence(self, batch: SentenceBatch, predicted: np.ndarray, distributions: list, k: int
                    ) -> dict[str, Confidence]:
        n_columns = batch.attrs.shape[1]
        prob = np.full(n_columns, np.nan)
        k = min(k, max((p.shape[1] for p in distributions), default=0))  # no more than there are values
        top = np.full((n_columns, k), -1, dtype=np.int64)
        top_prob = np.zeros((n_columns, k))
        for i, p in enumerate(distributions):
            a, b = int(batch.starts[i]) + 1, int(batch.starts[i + 1])
            if b == a:
                continue
            chosen = self.predicted_classes(batch, predicted, i)
            prob[a:b] = p[np.arange(b - a), chosen]
            if k:
                kk = min(k, p.shape[1])
                order = np.argsort(-p, axis=1, kind="stable")[:, :kk]
                order_prob = np.take_along_axis(p, order, axis=1)
                # A value of probability 0 is none the structure can give (a word's own
                # position as its head): no candidate.
                top[a:b, :kk] = np.where(order_prob > 0, order, -1)
                top_prob[a:b, :kk] = np.where(order_prob > 0, order_prob, 0.0)
        return {self.confidence_column: Confidence(prob, top, top_prob, self.candidate_names)}

    def calibrate(self, inputs: Sequence[Sentence], gold: Sequence[Sentence], threads: int = 1) -> dict | None:
        """Fit its temperature on dev by maximum likelihood: the T that maximizes the sum over
        words of log P_T(gold value), P_T from the structure's marginals of scores / T.
        `inputs`: the dev sentences as the components before it leave them; `gold`: the
        same sentences with their gold columns; `threads`: the sentences' marginals are
        computed in that many threads (the kernels release the GIL; the fit is the same).
        Stores T in `info` (saved in meta.json) and
        returns {"temperature", "nll_before", "nll_after", "words", "impossible" (words left
        out: see `possible_classes`)}, or None when the kind
        gives no probabilities or no word has a gold value."""
        if not self.confidence_column:
            return None
        examples = self.examples(list(inputs))
        cached, impossible = [], 0
        for x, g in zip(examples, gold):
            if not x.n:
                continue
            classes = np.array(self.gold_classes(x, g), dtype=np.intp)
            possible = self.possible_classes(x)
            if possible is not None:
                known = np.flatnonzero(classes >= 0)
                out = known[~possible[known, classes[known]]]
                impossible += len(out)
                classes[out] = -1
            cached.append((x, self.scores(x), classes))
        words = sum(int((c >= 0).sum()) for _, _, c in cached)
        if not words:
            return None

        # Each sentence's term goes to its own slot and the slots are summed in order, so the
        # fit does not depend on the number of threads.
        threads = max(1, threads)
        terms = np.zeros(len(cached))

        def add_terms(t: float, first: int, last: int) -> None:
            for i in range(first, last):
                x, scores, classes = cached[i]
                keep = classes >= 0
                p = self.word_probabilities(x, scores / t)[np.flatnonzero(keep), classes[keep]]
                terms[i] = -np.log(np.maximum(p, 1e-300)).sum()

        cuts = [len(cached) * k // threads for k in range(threads + 1)]

        def nll(log_t: float) -> float:
            t = math.exp(log_t)
            if pool is None:
                add_terms(t, 0, len(cached))
            else:
                rest = [pool.submit(add_terms, t, cuts[k], cuts[k + 1]) for k in range(1, threads)]
                add_terms(t, cuts[0], cuts[1])
                for future in rest:
                    future.result()
            return float(terms.sum()) / words

        from concurrent.futures import ThreadPoolExecutor

        from scipy.optimize import minimize_scalar

        pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="calibrate") if threads > 1 else None
        try:
            before = nll(0.0)
            result = minimize_scalar(nll, bounds=(-6.0, 6.0), method="bounded", options={"xatol": 1e-3})
        finally:
            if pool is not None:
                pool.shutdown()
        log_t, after = (float(result.x), float(result.fun)) if result.fun < before else (0.0, before)
        self.info["temperature"] = math.exp(log_t)
        return {"temperature": self.info["temperature"], "nll_before": before, "nll_after": after, "words": words,
                "impossible": impossible}

    # -- saving -----------------------------------------------------------------------------
    def registry_call(self) -> dict:
        """Its entry in meta.json: the kind, the structure's registry call (what was learned
        included) and what training recorded."""
        entry = {"name": self.name, "kind": self.kind, "structure": self.structure_call()}
        if self.trainer_call is not None:
            entry["trainer"] = self.trainer_call
        return entry | {"info": self.info}

    def structure_call(self) -> dict:
        """The structure's registry call, as meta.json stores it."""
        return self.structure.registry_call()

    def save(self, directory: Path) -> None:
        np.save(directory / f"{self.name}.npy", self.weights.array, allow_pickle=False)

    @classmethod
    def load(cls, directory: Path, name: str, structure, info: dict | None = None,
             weights_file: str | None = None, mmap: bool = False) -> "Component":
        """The component `save` wrote (its pipeline gives it its name). `mmap`: map the
        weights copy-on-write instead of reading them, so that the processes of one
        machine that load the same model share its pages."""
        path = directory / (weights_file or f"{name}.npy")
        bits = structure.hash_bits
        if not isinstance(bits, int) or not 1 <= bits <= MAX_HASH_BITS:
            raise ModelError(f"{directory / 'meta.json'}: hash_bits of {name} must be an integer from 1 to "
                             f"{MAX_HASH_BITS}, got {bits!r}")
        try:
            weights = np.load(path, allow_pickle=False, mmap_mode="c") if mmap else read_aligned(path)
        except (OSError, ValueError, EOFError, MemoryError) as e:  # a truncated, empty or forged file
            raise ModelError(f"{path}: cannot read weights ({type(e).__name__}: {e})") from None
        if weights.dtype != np.float64 or weights.shape != (1 << bits,):
            raise ModelError(
                f"{path}: {weights.dtype} {weights.shape} does not match hash_bits {bits} "
                f"(expected float64 ({1 << bits},))")
        if not np.isfinite(weights).all():
            raise ModelError(f"{path}: the weights hold NaN or infinite values")
        if info is not None and not isinstance(info, dict):
            raise ModelError(f"{directory / 'meta.json'}: 'info' of {name} must be an object")
        return cls(structure, weights, info)


def read_aligned(path) -> np.ndarray:
    """A 1-D float64 .npy file read into an array whose data starts on a cache line
    (`weights.cache_aligned`: np.load's would start 32 bytes into one), without a second
    copy; other files go through np.load (no pickle either way)."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            return cache_aligned(np.load(path, allow_pickle=False))
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(f)
        if dtype != np.float64 or len(shape) != 1 or fortran_order:
            return np.load(path, allow_pickle=False)  # the caller reports what does not match
        out = aligned_empty(shape[0])
        if f.readinto(memoryview(out).cast("B")) != out.nbytes:
            raise EOFError(f"{path}: the file ends before its {shape[0]} weights")
    return out
