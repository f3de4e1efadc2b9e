"""The morphologizer kind: FEATS, one bundle per word (`arborist.morph.Morphologizer`)."""
from __future__ import annotations

from ..sentence import FEATS, SentenceBatch
from .word_choice import WordChoice


class Morphologizer(WordChoice):
    kind = "morphologizer"
    structures = ("arborist.Morphologizer.v1",)
    column, conll_index, row = "feats", 5, FEATS
    learned = ("classes",)

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        batch.attrs[FEATS, batch.words] = self.structure.feats_hashes(predicted)

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        words = batch.word_starts
        return self.structure.feats_strings(predicted[words[i]:words[i + 1]])

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.structure.classes)
