"""The tagger kind: one tag column (UPOS or XPOS) predicted by a linear chain."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..component import Component, ModelError
from ..evaluate import tag_scores
from ..sentence import ROOT, UPOS, XPOS, Sentence, SentenceBatch
from ..strings import hash_strings
from ..tagger.chain import check_dictionary_forms

TAG_ROWS = {"upos": UPOS, "xpos": XPOS}


@contextmanager
def _dictionary_file(path: Path):
    """A ModelError naming `path` for a tag dictionary file that is missing, truncated or forged."""
    try:
        yield
    except (OSError, ValueError, EOFError, MemoryError) as e:
        raise ModelError(f"{path}: cannot read the tag dictionary ({type(e).__name__}: {e})") from None


def with_tags(sentence: Sentence, attribute: str, tags: list[str]) -> Sentence:
    """A copy of the sentence whose UPOS or XPOS column (strings and hashes) is `tags`."""
    if len(tags) != sentence.n:
        raise ValueError(f"{len(tags)} tags for a sentence of {sentence.n} words")
    column = [ROOT] + list(tags)
    attrs = sentence.attrs.copy()
    attrs[TAG_ROWS[attribute]] = hash_strings(column)
    return replace(sentence, attrs=attrs, **{attribute: column})


class Tagger(Component):
    """Predicts one tag column (UPOS or XPOS) with a linear chain. Components after it that
    read its column train on its jackknifed tags, so they see tags of the quality it gives
    them at parse time."""

    kind = "tagger"
    structures = ("arborist.LinearChain.v1",)
    jackknifed = True

    @property
    def reads(self) -> tuple[str, ...]:
        """Its form; and the UPOS column, whose tags restrict an XPOS chain's (candidates_from)."""
        return ("form", "upos") if getattr(self.structure, "candidates_from", None) else ("form",)

    def scores(self, x):
        """The parts of the tags the word may not take (candidates_from, the dictionary) at -inf."""
        return self.structure.pruned(x, super().scores(x))

    def possible_classes(self, x) -> np.ndarray | None:
        """The tags each word may take (candidates_from, the dictionary), None when any."""
        return self.structure.allowed(x.attrs[:, 1:])

    # -- saving: the weights, and the tag dictionary (dictionary_min_count) beside them ----
    def save(self, directory: Path) -> None:
        if self.structure.dictionary_min_count and self.structure.dictionary is None:
            raise ValueError(f"{self.name}: the tag dictionary (dictionary_min_count) was never learned: "
                             "initialize the chain on training sentences first")
        super().save(directory)
        if self.structure.dictionary_min_count:
            forms, rows = self.structure.dictionary
            np.save(directory / f"{self.name}.dictionary_forms.npy", forms, allow_pickle=False)
            np.save(directory / f"{self.name}.dictionary_tags.npy", rows, allow_pickle=False)

    @classmethod
    def load(cls, directory: Path, name: str, structure, info=None, weights_file=None, mmap=False):
        if getattr(structure, "dictionary_min_count", 0) and structure.features is not None:
            forms_path = directory / f"{name}.dictionary_forms.npy"
            tags_path = directory / f"{name}.dictionary_tags.npy"
            with _dictionary_file(forms_path):
                forms = np.load(forms_path, allow_pickle=False)
                check_dictionary_forms(forms)
            with _dictionary_file(tags_path):
                structure.set_dictionary(forms, np.load(tags_path, allow_pickle=False))
        return super().load(directory, name, structure, info, weights_file, mmap)

    @property
    def attribute(self) -> str:
        return self.structure.attribute

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.attribute,)

    @property
    def score_key(self) -> str:
        return f"dev_{self.attribute}"

    def tags(self, sentence: Sentence) -> list[str]:
        """The predicted tag of every word (without the root)."""
        return self.structure.tag_names(self.predict(sentence))

    def tag(self, sentence: Sentence) -> Sentence:
        """The sentence with this tagger's column replaced by its predictions."""
        return with_tags(sentence, self.attribute, self.tags(sentence))

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        batch.attrs[TAG_ROWS[self.attribute], batch.words] = self.structure.tag_hashes[predicted]

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        words = batch.word_starts
        tags = self.structure.tags
        return [tags[k] for k in predicted[words[i]:words[i + 1]].tolist()]

    def apply(self, sentence: Sentence, value: list[str]) -> Sentence:
        return with_tags(sentence, self.attribute, value)

    def sentence_fields(self, value: list[str]) -> dict:
        return {self.attribute: [ROOT] + list(value)}

    def column_values(self, value: list[str]) -> dict[str, list[str]]:
        return {self.attribute: value}

    def column_ids(self, batch: SentenceBatch, predicted):
        return {self.attribute: (self.structure.tag_hashes[predicted], list(self.structure.tags))}

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.structure.tags)

    # -- probabilities: each word's tag marginals, by forward-backward -------------------
    @property
    def confidence_column(self) -> str:
        return self.attribute

    def word_probabilities(self, x, scores) -> np.ndarray:
        return self.structure.tag_marginals(x, scores)

    def batch_distributions(self, batch: SentenceBatch):
        """By the chain's batch kernel (`LinearChain.marginals_batch`) at order 1; a second-order
        chain has none (sentence by sentence)."""
        found = self.structure.marginals_batch(batch, self.weights, self.temperature)
        if found is None:
            return super().batch_distributions(batch)
        tags, probs = found
        starts = batch.word_starts
        return tags, [probs[starts[i]:starts[i + 1]] for i in range(batch.n_sentences)]

    def predicted_classes(self, batch: SentenceBatch, predicted, i: int) -> np.ndarray:
        words = batch.word_starts
        return np.asarray(predicted[words[i]:words[i + 1]], dtype=np.intp)

    def gold_classes(self, x, gold: Sentence) -> np.ndarray:
        index = self.structure.tag_index
        column = gold.upos if self.attribute == "upos" else gold.xpos
        return np.array([index.get(t, -1) for t in column[1:]], dtype=np.intp)

    def score(self, gold, parsed, unseen=None) -> dict:
        return tag_scores(((g, {self.attribute: p.values[self.name]}) for g, p in zip(gold, parsed)), unseen)
