"""The lemmatizer kind: LEMMA, one edit script per word (`arborist.lemma.Lemmatizer`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..sentence import FORM, LEMMA, ROOT, Sentence, SentenceBatch
from .word_choice import WordChoice


class Lemmatizer(WordChoice):
    kind = "lemmatizer"
    structures = ("arborist.Lemmatizer.v1",)
    column, conll_index, row = "lemma", 2, LEMMA
    learned = ("scripts",)

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        words = batch.words
        form_ids = batch.attrs[FORM, words]
        ids = self.structure.lemma_hashes(form_ids, predicted, batch.text_of)
        batch.attrs[LEMMA, words] = ids
        add_lemma_strings(batch, self.structure, form_ids, predicted, ids)

    def apply(self, sentence: Sentence, value: list[str]) -> Sentence:
        return replace(super().apply(sentence, value), **self.sentence_fields(value))

    def sentence_fields(self, value: list[str]) -> dict:
        return {"lemmas": [ROOT] + list(value)}

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        a, b = int(batch.starts[i]), int(batch.starts[i + 1])
        words = batch.word_starts
        forms = [batch.text_of(f) for f in batch.attrs[FORM, a + 1:b].tolist()]
        return self.structure.lemma_strings(forms, predicted[words[i]:words[i + 1]])

    def candidate_values(self, forms, classes) -> list[str]:
        return self.structure.lemma_strings(forms, classes)


def add_lemma_strings(batch: SentenceBatch, lemmatizer, form_ids, classes, lemma_ids) -> None:
    """Let the batch find the strings of the lemmas a lemmatizer wrote (`SentenceBatch.lemma_of`),
    for a morphologizer after it that reads the inflection: one string per distinct lemma, from
    the (form, script) cache of `lemma_strings`, made the first time one is asked for."""
    def strings():
        unique, first = np.unique(lemma_ids, return_index=True)
        texts = lemmatizer.lemma_strings([batch.text_of(f) for f in np.asarray(form_ids)[first].tolist()],
                                         np.asarray(classes)[first])
        return zip(unique.tolist(), texts)

    batch.lemma_sources.append(strings)
