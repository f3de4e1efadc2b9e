"""A component kind defined entirely outside the arborist package: the README's worked
example of "Adding a component kind".

`SpaceAfterTagger` predicts, for every word, whether a space follows it, from the word
and the next word, and writes its guess as a MISC item `PredSpaceAfter=Yes|No`. Its
structure is a per-word `Multiclass` (so every trainer trains it); its examples are the
words of the sentences; its dev score is the accuracy against the gold `SpaceAfter=No`.

Registered through entry points (tests/test_component_kinds.py writes them):

    [arborist_components]
    toy_space_after = toy_kind:SpaceAfterTagger
    [arborist_structures]
    toy.SpaceAfter.v1 = toy_kind:make_space_after
"""
from __future__ import annotations

import numpy as np

from arborist.component import Component
from arborist.multiclass import Multiclass, MulticlassExample
from arborist.sentence import FORM, LOWER

CLASSES = ("No", "Yes")
KEY = "PredSpaceAfter"


class SpaceAfter(Multiclass):
    """Yes or No per word: a Multiclass over two classes."""

    def __init__(self, hash_bits: int = 16):
        super().__init__(list(CLASSES), hash_bits)

    def registry_call(self) -> dict:
        return {"@structures": "toy.SpaceAfter.v1", "hash_bits": self.hash_bits}

    def initialize(self, sentences) -> None:
        """Nothing to learn before training: the classes are fixed."""


def make_space_after(hash_bits: int = 16) -> SpaceAfter:
    return SpaceAfter(hash_bits)


def gold_space_after(sentence, m: int) -> int:
    """The class of word m from the sentence's MISC column (-1 without CoNLL-U lines)."""
    if not sentence.lines:
        return -1
    misc = sentence.lines[sentence.word_lines[m - 1]].rstrip("\r\n").split("\t")[9]
    return CLASSES.index("No") if "SpaceAfter=No" in misc.split("|") else CLASSES.index("Yes")


def word_features(sentence, m: int) -> np.ndarray:
    """Hashed ids of the word's form, its lowercase form, the next word's form, and the pair."""
    attrs = sentence.attrs
    after = int(attrs[FORM, m + 1]) if m < sentence.n else 0
    values = [int(attrs[FORM, m]), int(attrs[LOWER, m]), after, (int(attrs[FORM, m]) * 31 + after) % (1 << 64)]
    return np.array([(v + 0x9E3779B97F4A7C15 * (t + 1)) % (1 << 64) for t, v in enumerate(values)], dtype=np.uint64)


class SpaceAfterTagger(Component):
    kind = "toy_space_after"
    structures = ("toy.SpaceAfter.v1",)
    reads = ("form",)
    writes = ("misc",)
    score_key = "dev_misc"

    def examples(self, sentences, training: bool = False) -> list:
        return [MulticlassExample(word_features(x, m), gold_space_after(x, m))
                for x in sentences for m in range(1, x.n + 1)]

    def value(self, batch, predicted, i: int) -> list[str]:
        words = batch.word_starts
        return [f"{KEY}={CLASSES[k]}" for k in predicted[words[i]:words[i + 1]].tolist()]

    def column_values(self, value) -> dict[str, list[str]]:
        return {"misc": value}

    def score(self, gold, parsed, unseen=None) -> dict:
        right = words = 0
        for g, p in zip(gold, parsed):
            for m, item in enumerate(p.values[self.name], start=1):
                right += item == f"{KEY}={CLASSES[gold_space_after(g, m)]}"
                words += 1
        return {"words": words, "sentences": len(gold), "misc": 100.0 * right / words if words else 0.0}
