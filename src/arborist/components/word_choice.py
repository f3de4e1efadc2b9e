"""What the lemmatizer and morphologizer kinds share: a per-word choice structure
(`arborist.morph.choice.CandidateModel`) that writes one token column, whose learned
state (classes, candidate sets, lexicons) is saved beside its weights, and whose score
is the accuracy of that column on all words and on words unseen in training."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..component import Component, ModelError
from ..morph.choice import conll_column
from ..sentence import ROOT, Sentence
from ..strings import hash_strings


class WordChoice(Component):
    """One class per word; `column` is the CoNLL-U column it writes, `row` its Sentence row."""

    column = ""
    conll_index = 0  # the column's index in a CoNLL-U line
    row = 0
    jackknifed = True

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def reads(self) -> tuple[str, ...]:
        """The form and UPOS (its candidates), and XPOS when a template reads it, so that
        training jackknifes the XPOS tagger for it; FEATS likewise when a template reads it.
        The FEATS row a morphologizer's templates read is the one a `morphologizer_draft`
        before it leaves (stacking), so it reads "feats_draft" and trains on the draft's
        jackknifed bundles; a lemmatizer's read the morphologizer's "feats". Without a
        component writing the column, the templates read the input's row."""
        reads = self.structure.reads
        # (a draft's templates reading FEATS then read its own column, which train.py refuses:
        # in training they would read the input's gold row)
        feats = "feats_draft" if self.column in ("feats", "feats_draft") else "feats"
        return ("form", "upos") + (("xpos",) if "xpos" in reads else ()) + ((feats,) if "feats" in reads else ())

    @property
    def score_key(self) -> str:
        return f"dev_{self.column}"

    def examples(self, sentences, training: bool = False) -> list:
        return self.structure.examples(sentences, training=training)

    def predict(self, x):
        return self.structure.predict_sentence(x, self.weights)

    def decode(self, x, scores):
        return self.structure.decode(x, scores)

    # -- probabilities: each word's softmax over its candidates (a word the lexicon decides
    # has probability 1), given the columns it reads (a bundle's given the word's UPOS) ----
    @property
    def confidence_column(self) -> str:
        return "" if self.intermediate else self.column

    def word_probabilities(self, x, scores) -> np.ndarray:
        p = self.structure.word_distributions(x, scores)
        if x.forced_class is not None and self.lexicon_prob != 1.0:
            p[x.forced_class >= 0] *= self.lexicon_prob
        return p

    def _confidence(self, batch, predicted, distributions, k):
        found = super()._confidence(batch, predicted, distributions, k)
        for c in found.values():
            c.top[c.top_prob <= 0] = -1  # the k best list a word's candidates only
        return found

    @property
    def lexicon_prob(self) -> float:
        """The probability of a word the lexicon decides: its share of right words on dev
        (`calibrate`; 1 before). Its scores do not enter its prediction, so no temperature
        can calibrate it; without this, those words (half of English text) would all say 1,
        and be wrong about 1 time in 50."""
        return float(self.info.get("lexicon_prob", 1.0))

    def calibrate(self, inputs, gold, threads: int = 1) -> dict | None:
        """The temperature of the scored words (`Component.calibrate`), and `lexicon_prob`: the
        share of the dev words the lexicon decides whose value is right."""
        self.info.pop("lexicon_prob", None)
        fit = super().calibrate(inputs, gold, threads)
        right = decided = 0
        for x, g in zip(self.examples(list(inputs)), gold):
            if x.n and x.forced_class is not None:
                words = x.forced_class >= 0
                right += int((x.forced_class[words] == self.gold_classes(x, g)[words]).sum())
                decided += int(words.sum())
        if decided:
            self.info["lexicon_prob"] = right / decided
        if fit is not None:
            fit.update(lexicon_prob=self.lexicon_prob, lexicon_words=decided)
        return fit

    def predicted_classes(self, batch, predicted, i: int) -> np.ndarray:
        words = batch.word_starts
        return np.asarray(predicted[words[i]:words[i + 1]], dtype=np.intp)

    def gold_classes(self, x, gold: Sentence) -> np.ndarray:
        return np.asarray(self.structure.gold_classes(gold), dtype=np.intp)

    def possible_classes(self, x) -> np.ndarray:
        return self.structure.possible_classes(x)

    def apply(self, sentence: Sentence, value: list[str]) -> Sentence:
        if len(value) != sentence.n:
            raise ValueError(f"{len(value)} values for a sentence of {sentence.n} words")
        attrs = sentence.attrs.copy()
        attrs[self.row] = hash_strings([ROOT] + list(value))
        return replace(sentence, attrs=attrs)

    def column_values(self, value: list[str]) -> dict[str, list[str]]:
        return {self.column: value}

    def score(self, gold, parsed, unseen=None) -> dict:
        right = right_unseen = words = unseen_words = 0
        for g, p in zip(gold, parsed):
            ok = np.array([a == b for a, b in zip(p.values[self.name], conll_column(g, self.conll_index))], dtype=bool)
            new = unseen(g) if unseen is not None else np.zeros(g.n, dtype=bool)
            right += int(ok.sum())
            right_unseen += int(ok[new].sum())
            words += g.n
            unseen_words += int(new.sum())
        pct = lambda a, b: 100.0 * a / b if b else 0.0
        return {"words": words, "sentences": len(gold), self.column: pct(right, words),
                f"{self.column}_unseen": pct(right_unseen, unseen_words), "unseen_words": unseen_words}

    # -- saving: the weights, and the learned state in NAME.state/ -----------------------
    def structure_call(self) -> dict:
        """The settings of its structure's call; what training learned is in NAME.state/."""
        settings = self.structure.config()
        return {"@structures": self.structures[0],
                **{k: v for k, v in settings.items() if k not in self.learned and k != "structure"}}

    learned: tuple[str, ...] = ()  # the config() entries that training learns (saved in NAME.state/)

    def save(self, directory: Path) -> None:
        super().save(directory)
        self.structure.save(directory / f"{self.name}.state")

    @classmethod
    def load(cls, directory: Path, name: str, structure, info=None, weights_file=None, mmap=False):
        state = directory / f"{name}.state"
        try:
            learned = type(structure).load(state)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
            raise ModelError(f"{state}: cannot read the learned state ({type(e).__name__}: {e})") from None
        expected = {k: v for k, v in structure.config().items() if k not in cls.learned}
        got = {k: v for k, v in learned.config().items() if k not in cls.learned}
        if expected != got:
            raise ModelError(f"{state}: the learned state does not match meta.json's entry of {name}")
        return super().load(directory, name, learned, info, weights_file, mmap)
