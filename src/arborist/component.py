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
    save(), load()      its files in a model directory (default: `<name>.npy`, the weights)

The training driver (`arborist.train`), the model (`arborist.model`), the CLI and
the spaCy bridge loop over components through these and name no kind.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .sentence import Sentence, SentenceBatch
from .strings import hash_strings
from .weights import Weights

# The columns whose values are per-token strings: what the spaCy bridge's tagging stage
# sets and `--gold-tags` keeps from the input. The others ("head", "deprel", a pruner's
# "arcs") form the tree stage.
TOKEN_COLUMNS = ("upos", "xpos", "lemma", "feats", "misc")
MAX_HASH_BITS = 40  # 8 TiB of weights: anything larger in a model file is forged


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
        s = self.structure
        return s.argmax(x, s.scores(x, self.weights))

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

    # -- saving -----------------------------------------------------------------------------
    def registry_call(self) -> dict:
        """Its entry in meta.json: the kind, the structure's registry call (what was learned
        included) and what training recorded."""
        entry = {"name": self.name, "kind": self.kind, "structure": self.structure.registry_call()}
        if self.trainer_call is not None:
            entry["trainer"] = self.trainer_call
        return entry | {"info": self.info}

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
            weights = np.load(path, allow_pickle=False, mmap_mode="c" if mmap else None)
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
