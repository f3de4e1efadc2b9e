"""The lemmatizer kind: LEMMA, one edit script per word (`arborist.lemma.Lemmatizer`)."""
from __future__ import annotations

import numpy as np

from ..component import Confidence
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

    # -- probabilities of lemmas, not of scripts: two scripts often make one lemma of a form
    # ("horses": strip "s", or strip "es" and add "e"), so a lemma's probability is the sum
    # of its scripts', and its k best values are lemmas (names made per batch) ---------------
    def _confidence(self, batch: SentenceBatch, predicted, distributions: list, k: int) -> dict[str, Confidence]:
        n_columns = batch.attrs.shape[1]
        prob = np.full(n_columns, np.nan)
        top = np.full((n_columns, k), -1, dtype=np.int64)
        top_prob = np.zeros((n_columns, k))
        names: list[str] = []
        name_index: dict[str, int] = {}
        words = batch.word_starts
        for i, p in enumerate(distributions):
            a, b = int(batch.starts[i]) + 1, int(batch.starts[i + 1])
            chosen = predicted[words[i]:words[i + 1]]
            for m in range(b - a):
                form = batch.text_of(int(batch.attrs[FORM, a + m]))
                classes = np.flatnonzero(p[m] > 0)
                by_lemma: dict[str, float] = {}
                for c, lemma in zip(classes.tolist(), self.structure.lemma_strings([form] * len(classes), classes)):
                    by_lemma[lemma] = by_lemma.get(lemma, 0.0) + float(p[m, c])
                predicted_lemma = self.structure.lemma_strings([form], chosen[m:m + 1])[0]
                prob[a + m] = by_lemma.get(predicted_lemma, 0.0)
                if k:
                    best = sorted(by_lemma.items(), key=lambda item: -item[1])[:k]
                    for r, (lemma, q) in enumerate(best):
                        top[a + m, r] = name_index.setdefault(lemma, len(names))
                        if top[a + m, r] == len(names):
                            names.append(lemma)
                        top_prob[a + m, r] = q
        return {self.confidence_column: Confidence(prob, top, top_prob, names)}
