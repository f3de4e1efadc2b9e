"""The morphologizer kind: FEATS, one bundle per word (`arborist.morph.Morphologizer`)."""
from __future__ import annotations

from udtools.udeval import UNIVERSAL_FEATURES

from ..sentence import FEATS, SentenceBatch
from .word_choice import WordChoice


def universal_features(bundle: str) -> str:
    """The bundle's universal features (sorted), what the CoNLL 2018 scorer's UFeats compares."""
    return "|".join(sorted(f for f in bundle.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


class Morphologizer(WordChoice):
    kind = "morphologizer"
    structures = ("arborist.Morphologizer.v1",)
    column, conll_index, row = "feats", 5, FEATS
    learned = ("classes",)
    views = {"ufeats": universal_features}  # the scorer's UFeats, on all words and unseen ones

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        batch.attrs[FEATS, batch.words] = self.structure.feats_hashes(predicted)

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        words = batch.word_starts
        return self.structure.feats_strings(predicted[words[i]:words[i + 1]])

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.structure.classes)

    def candidate_values(self, forms, classes) -> list[str]:
        return self.structure.feats_strings(classes)  # a joint class's FEATS, without its UPOS


class MorphologizerDraft(Morphologizer):
    """A first morphologizer whose bundles a second one reads (stacking): it writes the FEATS
    row of the batch as the morphologizer does, under the column name "feats_draft", so that
    a morphologizer with `reads_draft = true` after it reads them, trains on its jackknifed
    drafts, and overwrites the row with the pipeline's FEATS. Its drafts are no output
    column: CoNLL-U and spaCy get the second morphologizer's FEATS."""

    kind = "morphologizer_draft"
    column = "feats_draft"
    intermediate = True
    views = {}

    @property
    def tagging(self) -> bool:
        return True  # a token column: it runs in the tagging stage (and not with --gold-tags)

    def column_values(self, value: list[str]) -> dict[str, list[str]]:
        return {}
