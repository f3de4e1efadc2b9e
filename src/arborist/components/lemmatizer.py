"""The lemmatizer kind: LEMMA, one edit script per word (`arborist.lemma.Lemmatizer`)."""
from __future__ import annotations

from ..sentence import FORM, LEMMA, SentenceBatch
from .word_choice import WordChoice


class Lemmatizer(WordChoice):
    kind = "lemmatizer"
    structures = ("arborist.Lemmatizer.v1",)
    column, conll_index, row = "lemma", 2, LEMMA
    learned = ("scripts",)

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        words = batch.words
        batch.attrs[LEMMA, words] = self.structure.lemma_hashes(batch.attrs[FORM, words], predicted, batch.text_of)

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        a, b = int(batch.starts[i]), int(batch.starts[i + 1])
        words = batch.word_starts
        forms = [batch.text_of(f) for f in batch.attrs[FORM, a + 1:b].tolist()]
        return self.structure.lemma_strings(forms, predicted[words[i]:words[i + 1]])

    def candidate_values(self, forms, classes) -> list[str]:
        return self.structure.lemma_strings(forms, classes)
