"""LinearChain: first- or second-order tag sequences behind the Structure protocol.

A label is an int32 array of tag ids, length n: entry i is the tag of word i+1
of the Sentence (the root is not tagged). Parts are one float64 array
(see `arborist.tagger.viterbi` for the details):

  order 1: [t, prev, cur]         shape (n, K+1, K)
  order 2: [t, prev2, prev, cur]  shape (n, K+1, K+1, K)

where index K of a previous-tag axis is START (the tag before the sentence).
Only the parts consistent with START being exactly the positions before the
sentence are valid (`valid_parts`); every label uses one valid part per word.
Invalid entries of a score array are ignored by every operation, and are 0 in
scores, indicators, part costs and marginals.

The Hamming loss (wrong tags) is spread on parts as cost 1 on every valid part
whose current tag differs from the gold tag at that position.

`candidates_from = "upos"` (an XPOS chain of order 1) learns at `initialize` the XPOS tags
seen with each UPOS in the training sentences (with the UPOS the tagger is trained on: a
pipeline's jackknifed tags); when tagging, a word may only take the tags of its UPOS (all
of them when its UPOS was not seen), the others' parts get -inf and the batch kernel does
not score them. Training scores every tag, as without it (`scores`).

`dictionary_min_count = N > 0` learns at `initialize` the tags seen with each lowercase form
seen at least N times in the training sentences (UDPipe 1's tagger takes a known form's
analyses from its training dictionary, N = 1); when tagging, such a form may only take those
tags (with candidates_from, those of them its UPOS allows, or its UPOS's tags when none is).
Training scores every tag, so the weights still learn the unknown words' tags. The table is
not part of the registry call: the tagger component saves it beside its weights.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..sentence import FORM, LOWER, UPOS, Sentence, SentenceBatch
from ..strings import hash_strings, sorted_index
from ..structure import take_positions
from .features import EMISSION_TEMPLATES, ChainFeatures
from .viterbi import chain_argmax, chain_marginals, chain_shape, chain_tag_marginals, valid_parts

ATTRIBUTES = ("upos", "xpos")
MISSING = "_"


class LinearChain:
    name = "chain"

    def __init__(self, tags: Sequence[str] | None = None, attribute: str = "upos", order: int = 1,
                 hash_bits: int = 22, templates: Sequence[str] | None = None, missing_tag: bool = False,
                 candidates_from: str | None = None, candidates: dict | None = None,
                 dictionary_min_count: int = 0):
        """`tags=None` leaves the tag set to `initialize`, which reads it from the training data.
        `templates`: the emission templates (`features.EMISSION_TEMPLATES` when None).
        `missing_tag`: '_' (no tag) is a tag like the others, for a treebank that leaves the
        column empty for some words or all (hu_szeged's XPOS); a training choice only, so the
        registry call, whose tag set then holds '_', does not record it."""
        if attribute not in ATTRIBUTES:
            raise ValueError(f"chain attribute must be one of {ATTRIBUTES}, got {attribute!r}")
        if order not in (1, 2):
            raise ValueError(f"chain order must be 1 or 2, got {order!r}")
        if candidates_from not in (None, "upos") or (candidates_from and (attribute != "xpos" or order != 1)):
            raise ValueError(f'candidates_from can only be "upos", for an XPOS chain of order 1 '
                             f"(got {candidates_from!r} for {attribute.upper()}, order {order})")
        if candidates is not None and not candidates_from:
            raise ValueError('candidates needs candidates_from = "upos"')
        if isinstance(dictionary_min_count, bool) or not isinstance(dictionary_min_count, int) or dictionary_min_count < 0:
            raise ValueError(f"dictionary_min_count must be an integer >= 0, got {dictionary_min_count!r}")
        if dictionary_min_count and order != 1:
            raise ValueError(f"a tag dictionary (dictionary_min_count) needs a chain of order 1, got order {order!r}")
        self.dictionary_min_count = dictionary_min_count
        self.dictionary = None  # (sorted lowercase-form string ids, (F, K) bool: the tags of each), learned by initialize
        self.candidates_from = candidates_from
        self.candidates: dict[str, list[str]] | None = None  # UPOS -> its XPOS tags, learned by initialize
        self._candidate_rows = None  # (sorted UPOS hashes, (U, K) bool: the tags of each)
        self._pending_candidates = candidates
        self.attribute = attribute
        self.missing_tag = bool(missing_tag)
        self.order = int(order)
        self._hash_bits = int(hash_bits)
        self.templates = tuple(EMISSION_TEMPLATES if templates is None else templates)
        self._valid: dict[int, np.ndarray] = {}
        self.tags: tuple[str, ...] = ()
        self._tag_hashes = None
        self.features = None
        if tags is not None:
            self._set_tags(tags)

    def _set_candidates(self, candidates: dict) -> None:
        try:
            table = {str(u): [str(t) for t in tags] for u, tags in candidates.items()}
            rows = np.zeros((len(table), self.n_tags), dtype=bool)
            for i, tags in enumerate(table.values()):
                rows[i, [self.tag_index[t] for t in tags]] = True
        except (AttributeError, KeyError, TypeError) as e:
            raise ValueError(f"candidates must map UPOS tags to lists of the chain's tags: {e!r}") from None
        if len(table) and not rows.any(axis=1).all():
            raise ValueError("candidates: a UPOS tag with no XPOS tag")
        hashes = hash_strings(list(table))
        order = np.argsort(hashes)
        self.candidates = table
        self._candidate_rows = (hashes[order], rows[order])

    def learn_candidates(self, sentences: Iterable[Sentence]) -> None:
        """The tags seen with each UPOS in `sentences` (a missing tag is not a candidate unless it is a tag)."""
        table: dict[str, set[str]] = {}
        for x in sentences:
            for upos, tag in zip(_column(x, "upos"), _column(x, self.attribute)):
                if tag in self.tag_index:
                    table.setdefault(upos, set()).add(tag)
        self._set_candidates({u: sorted(tags, key=self.tag_index.get) for u, tags in table.items()})

    def learn_dictionary(self, sentences: Iterable[Sentence]) -> None:
        """The tags seen with each lowercase form seen at least `dictionary_min_count` times."""
        lows, tags = [], []
        for x in sentences:
            lows.append(x.attrs[LOWER, 1:])
            tags.extend(self.tag_index.get(t, -1) for t in _column(x, self.attribute))
        lows = np.concatenate(lows) if lows else np.zeros(0, dtype=np.uint64)
        tags = np.asarray(tags, dtype=np.intp)
        lows = lows[tags >= 0]  # a missing tag that is no tag of the chain is not counted
        tags = tags[tags >= 0]
        forms, which, counts = np.unique(lows, return_inverse=True, return_counts=True)
        rows = np.zeros((len(forms), self.n_tags), dtype=bool)
        rows[which, tags] = True
        keep = counts >= self.dictionary_min_count
        self.set_dictionary(forms[keep].astype(np.uint64), rows[keep])

    def set_dictionary(self, forms: np.ndarray, rows: np.ndarray) -> None:
        """Use the dictionary `forms` (sorted uint64 lowercase-form string ids) -> `rows` ((F, K) bool)."""
        if not self.dictionary_min_count or self.order != 1:
            raise ValueError("a tag dictionary needs a chain of order 1 with dictionary_min_count > 0")
        check_dictionary_forms(forms)
        forms, rows = np.asarray(forms), np.asarray(rows)
        if rows.dtype != bool or rows.shape != (len(forms), self.n_tags):
            raise ValueError(f"a tag dictionary's rows must be bool ({len(forms)}, {self.n_tags}), got "
                             f"{rows.dtype} {rows.shape}")
        if len(forms) and not rows.any(axis=1).all():
            raise ValueError("every form of a tag dictionary must have a tag")
        self.dictionary = (forms, rows)

    def allowed(self, attrs: np.ndarray) -> np.ndarray | None:
        """(words, K) bool: the tags each word may take, from its rows of `attrs` (a Sentence's or
        batch's attrs at those words): its UPOS's (candidates_from) and its form's (the
        dictionary); None when any tag."""
        out = self.allowed_tags(attrs[UPOS]) if self.candidates_from else None
        if self.dictionary is None:
            return out
        forms, rows = self.dictionary
        at = sorted_index(forms, attrs[LOWER])
        known = np.flatnonzero(at >= 0)
        if out is None:
            out = np.ones((len(at), self.n_tags), dtype=bool)
        both = out[known] & rows[at[known]]
        # a form seen only with tags its predicted UPOS does not allow keeps the UPOS's tags
        keep = both.any(axis=1)
        out[known[keep]] = both[keep]
        return out

    def allowed_tags(self, upos_ids: np.ndarray) -> np.ndarray | None:
        """(words, K) bool: the tags each word with UPOS string id `upos_ids` may take (None
        without candidates_from); a UPOS not seen in training allows every tag."""
        if not self.candidates_from:
            return None
        if self._candidate_rows is None:
            raise ValueError("candidates_from learns its table in initialize(training sentences); call it first")
        hashes, rows = self._candidate_rows
        at = sorted_index(hashes, upos_ids)
        out = np.ones((len(at), self.n_tags), dtype=bool)
        out[at >= 0] = rows[at[at >= 0]]
        return out

    def pruned(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        """The scores tagging uses: with candidates_from or a dictionary, -inf on the parts whose
        current tag the word may not take (a copy)."""
        allowed = self.allowed(x.attrs[:, 1:])
        if allowed is None:
            return scores
        out = np.array(scores, dtype=float, copy=True)
        out[~allowed[:, None, :].repeat(self.n_tags + 1, axis=1)] = -np.inf
        return out

    def _set_tags(self, tags: Sequence[str]) -> None:
        tags = tuple(tags)
        if len(set(tags)) != len(tags):
            duplicates = sorted({t for t in tags if tags.count(t) > 1})
            raise ValueError(f"duplicate tags: {', '.join(duplicates)}")
        # checks order, hash bits, template names, K >= 1
        self.features = ChainFeatures(tags, self.order, self._hash_bits, self.templates)
        self.tags = tags
        self.tag_index = {t: i for i, t in enumerate(tags)}
        self._tag_hashes = None
        self._valid.clear()
        if self._pending_candidates is not None:
            candidates, self._pending_candidates = self._pending_candidates, None
            self._set_candidates(candidates)

    def initialize(self, sentences: Iterable[Sentence]) -> None:
        """Take the tag set (sorted; '_', a missing tag, is not one unless `missing_tag`) from the
        training sentences, unless the chain was given its tags."""
        if self.features is not None:
            sentences = list(sentences)
            if self.candidates_from and self.candidates is None:
                self.learn_candidates(sentences)
            if self.dictionary_min_count and self.dictionary is None:
                self.learn_dictionary(sentences)
            return
        sentences = list(sentences)
        tags: set[str] = set()
        for x in sentences:
            tags.update(_column(x, self.attribute))
        if not self.missing_tag:
            tags.discard(MISSING)
        if not tags:
            raise ValueError(f"no {self.attribute.upper()} tags in the training sentences "
                             f"(every {self.attribute.upper()} is '_')")
        self._set_tags(sorted(tags))
        if self.candidates_from and self.candidates is None:
            self.learn_candidates(sentences)
        if self.dictionary_min_count and self.dictionary is None:
            self.learn_dictionary(sentences)

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sentence], attribute: str = "upos", order: int = 1,
                       hash_bits: int = 22, templates: Sequence[str] | None = None,
                       dictionary_min_count: int = 0) -> "LinearChain":
        """The chain over every tag of `attribute` in `sentences` (and its tag dictionary)."""
        chain = cls(None, attribute, order, hash_bits, templates, dictionary_min_count=dictionary_min_count)
        chain.initialize(sentences)
        return chain

    @property
    def hash_bits(self) -> int:
        return self._hash_bits

    @property
    def n_tags(self) -> int:
        return len(self.tags)

    def registry_call(self) -> dict:
        """The registry call that rebuilds this structure, its learned tag set included."""
        call = {
            "@structures": "arborist.LinearChain.v1",
            "tags": list(self.tags),
            "attribute": self.attribute,
            "order": self.order,
            "hash_bits": self.hash_bits,
            "templates": list(self.templates),
        }
        if self.dictionary_min_count:
            call["dictionary_min_count"] = self.dictionary_min_count
        if self.candidates_from:
            call["candidates_from"] = self.candidates_from
            if self.candidates is not None:
                call["candidates"] = self.candidates
        return call

    def shape(self, n: int) -> tuple[int, ...]:
        return chain_shape(n, self.n_tags, self.order)

    def valid_parts(self, n: int) -> np.ndarray:
        """Boolean mask of the valid parts of an n-word sentence."""
        mask = self._valid.get(n)
        if mask is None:
            mask = self._valid[n] = valid_parts(n, self.n_tags, self.order)
            mask.flags.writeable = False
        return mask

    def tag_names(self, label) -> list[str]:
        return [self.tags[i] for i in label]

    @property
    def tag_hashes(self) -> np.ndarray:
        """uint64 (K,): each tag's string id (`arborist.strings`), as a Sentence's UPOS/XPOS row holds it."""
        if self._tag_hashes is None:
            self._tag_hashes = hash_strings(self.tags)
        return self._tag_hashes

    def predict_batch(self, batch: SentenceBatch, w) -> np.ndarray:
        """The argmax labels of every sentence of the batch, concatenated (one tag id per word),
        computed without the GIL (`ChainFeatures.tag_many`)."""
        return self.features.tag_many(*self._batch_inputs(batch), w.array, self.allowed(batch.attrs[:, batch.words]))

    def marginals_batch(self, batch: SentenceBatch, w, temperature: float = 1.0):
        """`predict_batch`'s tags and each word's tag distribution at `temperature`, (words, K),
        in the same region without the GIL (`ChainFeatures.tag_marginals_many`); None for a
        second-order chain, which has no such kernel."""
        if self.order != 1:
            return None
        return self.features.tag_marginals_many(*self._batch_inputs(batch), w.array,
                                                self.allowed(batch.attrs[:, batch.words]), temperature)

    def _batch_inputs(self, batch: SentenceBatch) -> tuple:
        """(the words' form values, the sentences' word starts) for the batch kernels."""
        if self.features is None:
            raise ValueError("the chain has no tags yet: call initialize(training sentences) first")
        return self.features.form_values(batch.attrs[FORM][batch.words], batch.text_of), batch.word_starts

    # -- the protocol -------------------------------------------------------
    def scores(self, x: Sentence, w) -> np.ndarray:
        if self.features is None:
            raise ValueError("the chain has no tags yet: call initialize(training sentences) first")
        return self.features.score(x, w.array)

    def argmax(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        return chain_argmax(scores)[0]

    def cost_augmented_argmax(self, x: Sentence, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: Sentence, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return chain_marginals(scores)

    def tag_marginals(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        """(n, K): each word's tag distribution, the part marginals summed over the previous
        tags, computed without them (`chain_tag_marginals`)."""
        return chain_tag_marginals(scores)[0]

    def _part_index(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """Index arrays of the parts of label y: (t, prev, cur) or (t, prev2, prev, cur)."""
        y = np.asarray(y, dtype=np.intp)
        n, K = len(y), self.n_tags
        padded = np.concatenate([np.full(self.order, K, dtype=np.intp), y])  # START before the sentence
        t = np.arange(n)
        history = tuple(padded[t + k] for k in range(self.order))  # (prev2,) prev
        return (t, *history, y)

    def indicator(self, x: Sentence, y: np.ndarray) -> np.ndarray:
        out = np.zeros(self.shape(len(y)))
        out[self._part_index(y)] = 1.0
        return out

    def part_cost(self, x: Sentence, gold: np.ndarray) -> np.ndarray:
        n, K = len(gold), self.n_tags
        cur = np.arange(K)
        wrong = (cur[None, :] != np.asarray(gold)[:, None]).astype(np.float64)  # (n, K)
        cost = np.zeros(self.shape(n))
        cost[...] = wrong.reshape((n,) + (1,) * self.order + (K,))
        cost[~self.valid_parts(n)] = 0.0
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        self.features.add(x, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # A position is an index into the label (word m is position m - 1): take pred's tag there.
        return take_positions(gold, pred, positions)

    def hits(self, x: Sentence, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold) == np.asarray(pred)).sum()), len(gold)

    def gold(self, x: Sentence) -> np.ndarray:
        tags = _column(x, self.attribute)
        out = np.empty(len(tags), dtype=np.int32)
        ids = self.tag_index
        for i, tag in enumerate(tags):
            tag_id = ids.get(tag)
            if tag_id is None:
                raise ValueError(
                    f"{x.source}:{x.first_line}: {self.attribute.upper()} tag {tag!r} of word {i + 1} "
                    f"({x.forms[i + 1]!r}) is not one of the chain's {self.n_tags} tags"
                    + (" (the tag is missing)" if tag == MISSING else "")
                )
            out[i] = tag_id
        return out


def check_dictionary_forms(forms) -> None:
    """A tag dictionary's form ids: a 1-d uint64 array, sorted and distinct."""
    forms = np.asarray(forms)
    if forms.dtype != np.uint64 or forms.ndim != 1:
        raise ValueError(f"a tag dictionary's form ids must be a 1-d uint64 array, got {forms.dtype} {forms.shape}")
    if len(forms) and not (forms[1:] > forms[:-1]).all():
        raise ValueError("a tag dictionary's form ids must be sorted and distinct")


def _column(x: Sentence, attribute: str) -> list[str]:
    """The words' tags (without the root) of `attribute`."""
    tags = x.upos if attribute == "upos" else x.xpos
    if len(tags) != x.n + 1:
        raise ValueError(f"{x.source}:{x.first_line}: the sentence has no {attribute.upper()} column "
                         f"({len(tags)} values for {x.n} words and the root)")
    return tags[1:]
