"""What the lemmatizer and morphologizer kinds share: a per-word choice structure
(`arborist.morph.choice.CandidateModel`) that writes one token column, whose learned
state (classes, candidate sets, lexicons) is saved beside its weights, and whose score
is the accuracy of that column on all words and on words unseen in training."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..component import Component, Confidence, ModelError
from ..morph.choice import conll_column
from ..sentence import FORM, ROOT, Sentence
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
        component writing the column, the templates read the input's row. LEMMA when a
        template reads the inflection (`arborist.morph.values.inflection`): a lemmatizer then
        runs before it, and it trains on the lemmatizer's jackknifed lemmas."""
        reads = self.structure.reads
        # (a draft's templates reading FEATS then read its own column, which train.py refuses:
        # in training they would read the input's gold row)
        feats = "feats_draft" if self.column in ("feats", "feats_draft") else "feats"
        return (("form", "upos") + (("xpos",) if "xpos" in reads else ()) + ((feats,) if "feats" in reads else ())
                + (("lemma",) if "infl" in reads else ()))

    @property
    def score_key(self) -> str:
        return f"dev_{self.column}"

    def examples(self, sentences, training: bool = False) -> list:
        return self.structure.examples(sentences, training=training)

    def predict(self, x):
        return self.structure.predict_sentence(x, self.weights)

    # -- probabilities of values (bundles, lemmas), not of classes --------------------------
    # Several classes can write one value (two edit scripts make one lemma of a form; a
    # joint morphologizer's classes repeat a bundle under several UPOS), so a value's
    # probability is the sum of its classes', and its k best values are strings (names made
    # per batch). Only a word's candidates have probability, so it is kept per candidate, not
    # as a dense (words, classes) array: these kinds override `confidences`,
    # `annotate_confident` and `calibrate` instead of giving `word_probabilities`.
    @property
    def confidence_column(self) -> str:
        return "" if self.intermediate else self.column

    def candidate_values(self, forms: list[str], classes: np.ndarray) -> list[str]:
        """The value class classes[j] writes for the word forms[j]."""
        raise NotImplementedError

    @property
    def lexicon_probs(self) -> tuple[float, float]:
        """The probability of a value the lexicon decides, by source (`ChoiceExample.
        forced_source` 1 and 2): that source's share of right values on dev, smoothed
        (`calibrate`; 1 before). Those words' scores do not enter the prediction, so no
        temperature calibrates them."""
        probs = self.info.get("lexicon_probs") or (1.0, 1.0)
        return float(probs[0]), float(probs[1])

    def _lexicon_values(self, x, forms: list[str]) -> list[tuple[int, str, int]]:
        """(word, its value, its lexicon's index 0 or 1) of each word of x a lexicon decides."""
        if x.forced is None:
            return []
        words = np.flatnonzero(x.forced >= 0)
        values = self.candidate_values([forms[m] for m in words], x.forced[words])
        return [(m, v, int(x.forced_source[m]) - 1) for m, v in zip(words.tolist(), values)]

    def _scored_words(self, x, forms: list[str]):
        """(word, first part, end part, its candidates' values) of each word of x the
        structure scores (none a lexicon decides)."""
        words = range(x.n) if x.forced is None else np.flatnonzero(x.forced < 0).tolist()
        for m in words:
            a, b = int(x.cand_start[m]), int(x.cand_start[m + 1])
            yield m, a, b, self.candidate_values([forms[m]] * (b - a), x.cand[a:b])

    def _probability_examples(self, sentences) -> list:
        """Prediction examples without the candidate sets of the words a lexicon decides, which
        the probabilities do not score (most of a lemmatizer's words and candidates)."""
        return [self.structure.example(s, forced_sets=False) for s in sentences]

    def confidences(self, batch, predicted, k: int = 0):
        """The probabilities of `predicted` (its prediction for the batch, whose rows are still
        its inputs: a stacked morphologizer reads the FEATS row it overwrites)."""
        if not self.confidence_column:
            return {}
        return self._confidence_of(batch, self.structure.softmax_batch(batch, self.weights, self.temperature),
                                   predicted, k)

    def annotate_confident(self, batch, k: int = 0):
        if not self.confidence_column:
            return self.annotate(batch), {}
        # one kernel call for the prediction (the lexicon first) and the candidates' softmax,
        # before the prediction overwrites the row it reads
        choices = self.structure.softmax_batch(batch, self.weights, self.temperature)
        self.write_batch(batch, choices.classes)
        return choices.classes, self._confidence_of(batch, choices, choices.classes, k)

    def _confidence_of(self, batch, choices, predicted, k: int) -> dict:
        """The `Confidence` of `predicted` from `softmax_batch`'s `choices`: a value's probability
        is the sum of its candidates' (vectorized over the batch; the sums run in candidate
        order, as a per-word loop would); a word a lexicon decides has its source's probability
        (`lexicon_probs`) on its value. Value strings are made for the k best values only."""
        n_columns = batch.attrs.shape[1]
        prob = np.full(n_columns, np.nan)
        # no more than a word has values (its candidates; one when a lexicon decides it)
        k = min(k, max(int(np.diff(choices.cand_start).max(initial=0)), 1))
        top = np.full((n_columns, k), -1, dtype=np.int64)
        top_prob = np.zeros((n_columns, k))
        names: list[str] = []
        columns = np.flatnonzero(batch.words)  # each word's column of the batch
        n = len(columns)
        if not n:
            return {self.confidence_column: Confidence(prob, top, top_prob, names)}
        predicted = np.asarray(predicted)
        forms = batch.attrs[FORM][columns]

        def texts(words: np.ndarray, classes: np.ndarray) -> list[str]:
            return self.candidate_values([batch.text_of(f) for f in forms[words].tolist()], classes)

        forced = np.flatnonzero(choices.forced >= 0)
        lexicon = np.array(self.lexicon_probs)[np.maximum(choices.forced_source[forced].astype(np.intp) - 1, 0)]
        word = np.repeat(np.arange(n), np.diff(choices.cand_start))  # each candidate's word
        chosen = np.zeros(n, dtype=np.uint64)  # the value id of each word's prediction
        hit = choices.cand == predicted[word]
        chosen[word[hit]] = choices.cand_values[hit]
        # A prediction not the kernel's (`confidences` of another prediction): its value's id,
        # so that it gets the probability of its value, as the kernel's would
        other = np.flatnonzero(predicted != choices.classes)
        if len(other):
            chosen[other] = hash_strings(texts(other, predicted[other]))
        lexicon_right = np.ones(len(forced), dtype=bool)
        forced_other = np.flatnonzero(predicted[forced] != choices.forced[forced])
        if len(forced_other):
            lexicon_right[forced_other] = chosen[forced[forced_other]] == hash_strings(
                texts(forced[forced_other], choices.forced[forced[forced_other]]))
        prob[columns[forced]] = np.where(lexicon_right, lexicon, 0.0)
        scored = np.flatnonzero(np.diff(choices.cand_start) > 0)
        same = choices.cand_values == chosen[word]
        prob[columns[scored]] = np.bincount(word, weights=np.where(same, choices.probs, 0.0), minlength=n)[scored]
        if not k:
            return {self.confidence_column: Confidence(prob, top, top_prob, names)}
        index: dict[str, int] = {}

        def name_ids(words: np.ndarray, classes: np.ndarray) -> list[int]:
            return [index.setdefault(v, len(index)) for v in texts(words, classes)]

        top[columns[forced], 0] = name_ids(forced, choices.forced[forced])
        top_prob[columns[forced], 0] = lexicon
        # the values of each scored word: groups of its candidates with one value id, summed in
        # candidate order, ranked by probability, ties by first candidate (a per-word dict's order)
        order = np.lexsort((choices.cand_values, word))
        w, v = word[order], choices.cand_values[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (w[1:] != w[:-1]) | (v[1:] != v[:-1])
        group = np.cumsum(new) - 1
        group_prob = np.bincount(group, weights=choices.probs[order])
        group_first = order[new]  # the group's first candidate (lexsort is stable)
        group_word = w[new]
        ranked = np.lexsort((group_first, -group_prob, group_word))
        ranked_word = group_word[ranked]
        first_of_word = np.searchsorted(ranked_word, ranked_word, side="left")
        rank = np.arange(len(ranked)) - first_of_word
        keep = ranked[rank < k]
        rows, slots = columns[group_word[keep]], rank[rank < k]
        top[rows, slots] = name_ids(group_word[keep], choices.cand[group_first[keep]])
        top_prob[rows, slots] = group_prob[keep]
        names = list(index)
        return {self.confidence_column: Confidence(prob, top, top_prob, names)}

    def calibrate(self, inputs, gold, threads: int = 1) -> dict | None:
        """The temperature T that maximizes the sum, over the dev words the structure scores,
        of log P_T(gold value) (Brent's method on log T, as `Component.calibrate`; the words
        whose gold value is no candidate's are left out), and `lexicon_probs`: per lexicon
        source, the share of the dev words it decides whose value is right, smoothed
        ((right + 1) / (words + 2)). One thread: the sums are vectorized (`threads` is
        accepted for the common signature)."""
        if not self.confidence_column:
            return None
        from scipy.optimize import minimize_scalar

        parts, starts, hits = [], [0], []
        right, decided = [0, 0], [0, 0]
        impossible = 0
        inputs = list(inputs)
        for x, sentence, g in zip(self._probability_examples(inputs), inputs, gold):
            if not x.n:
                continue
            gold_values = conll_column(g, self.conll_index)
            forms = sentence.forms[1:]
            for m, value, source in self._lexicon_values(x, forms):
                decided[source] += 1
                right[source] += int(value == gold_values[m])
            scores = self.structure.scores(x, self.weights)
            for m, a, b, values in self._scored_words(x, forms):
                hit = [v == gold_values[m] for v in values]
                if not any(hit):
                    impossible += 1
                    continue
                parts.append(scores[a:b])
                hits.extend(hit)
                starts.append(starts[-1] + b - a)
        # Laplace's rule of succession: a source with few dev words (or none) is not certain
        self.info["lexicon_probs"] = [(right[s] + 1) / (decided[s] + 2) for s in (0, 1)]
        self.info["lexicon_words"], self.info["lexicon_right"] = decided, right
        if len(starts) == 1:
            self.info.pop("temperature", None)
            return None
        s = np.concatenate(parts).astype(np.float64)
        hit = np.asarray(hits, dtype=bool)
        first = np.asarray(starts[:-1], dtype=np.int64)
        segment = np.repeat(np.arange(len(first)), np.diff(starts))

        def log_sum_exp(z: np.ndarray) -> np.ndarray:  # per word, -inf entries allowed (not all)
            top = np.maximum.reduceat(z, first)
            return top + np.log(np.add.reduceat(np.exp(z - top[segment]), first))

        def nll(log_t: float) -> float:  # mean of log Z - log (the gold value's share of Z)
            z = s / math.exp(log_t)
            return float(np.mean(log_sum_exp(z) - log_sum_exp(np.where(hit, z, -np.inf))))

        before = nll(0.0)
        result = minimize_scalar(nll, bounds=(-6.0, 6.0), method="bounded", options={"xatol": 1e-3})
        log_t, after = (float(result.x), float(result.fun)) if result.fun < before else (0.0, before)
        self.info["temperature"] = math.exp(log_t)
        return {"temperature": self.info["temperature"], "nll_before": before, "nll_after": after,
                "words": len(first), "impossible": impossible, "lexicon_words": decided,
                "lexicon_right": right, "lexicon_probs": self.info["lexicon_probs"]}


    def apply(self, sentence: Sentence, value: list[str]) -> Sentence:
        if len(value) != sentence.n:
            raise ValueError(f"{len(value)} values for a sentence of {sentence.n} words")
        attrs = sentence.attrs.copy()
        attrs[self.row] = hash_strings([ROOT] + list(value))
        return replace(sentence, attrs=attrs)

    def column_values(self, value: list[str]) -> dict[str, list[str]]:
        return {self.column: value}

    def score(self, gold, parsed, unseen=None) -> dict:
        """The column's accuracy on all words and on words unseen in training, and that of
        each of `views`: {name: a function of a value}, the values compared through it."""
        views = {self.column: None, **self.views}
        right = dict.fromkeys(views, 0)
        right_unseen = dict.fromkeys(views, 0)
        words = unseen_words = 0
        for g, p in zip(gold, parsed):
            new = unseen(g) if unseen is not None else np.zeros(g.n, dtype=bool)
            pairs = list(zip(p.values[self.name], conll_column(g, self.conll_index)))
            for name, view in views.items():
                ok = np.array([a == b if view is None else view(a) == view(b) for a, b in pairs], dtype=bool)
                right[name] += int(ok.sum())
                right_unseen[name] += int(ok[new].sum())
            words += g.n
            unseen_words += int(new.sum())
        pct = lambda a, b: 100.0 * a / b if b else 0.0
        scores = {"words": words, "sentences": len(gold), "unseen_words": unseen_words}
        for name in views:
            scores[name] = pct(right[name], words)
            scores[f"{name}_unseen"] = pct(right_unseen[name], unseen_words)
        return scores

    views: dict = {}  # further accuracies of the column (see `score`)

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
        probs = (info or {}).get("lexicon_probs") if isinstance(info, dict) else None
        if probs is not None and not (isinstance(probs, list) and len(probs) == 2 and all(
                isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1 for p in probs)):
            raise ModelError(f"{directory / 'meta.json'}: lexicon_probs of {name} must be two probabilities, "
                             f"got {probs!r}")
        return super().load(directory, name, learned, info, weights_file, mmap)
