"""Sentence: the per-sentence arrays every kernel reads.

Index 0 of every per-token array is the artificial root; words are 1..n.
Token attributes are 64-bit string hashes (see `arborist.strings`), stored as
rows of one uint64 matrix so a kernel gets a single contiguous array. A
`SentenceBatch` holds many sentences' matrices side by side.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .strings import hash_strings

# Rows of Sentence.attrs.
FORM, LOWER, LEMMA, UPOS, XPOS, PREFIX, FEATS = range(7)
ATTR_NAMES = ("form", "lower", "lemma", "upos", "xpos", "prefix", "feats")
PREFIX_LENGTH = 5  # McDonald, Crammer and Pereira (2005): 5-character prefixes
ROOT = "<ROOT>"
# A longer sentence is parsed in pieces of this many words (`Parser.predict_batch`): parsing
# time grows with the cube of the length, memory with its square.
MAX_SENTENCE_LENGTH = 256
_ROOT_HASH, MISSING_HASH = hash_strings([ROOT, "_"])  # MISSING_HASH: a column's "_", no value


def _forms(forms) -> list:
    """A sentence's forms as given, checked: a str (split into its characters), a None or a
    number among them was an AttributeError deep inside (a review of the Python API)."""
    if isinstance(forms, str):
        raise TypeError(f"a sentence's forms are a list of str (one per word), not the str {forms[:40]!r}")
    forms = list(forms)
    bad = [f for f in forms if not isinstance(f, str)]
    if bad:
        raise TypeError(f"a sentence's forms are str, got {bad[0]!r} ({type(bad[0]).__name__})")
    return forms


def _not_utf8(words: list[str]) -> str:
    """The message for words that cannot be UTF-8 (a lone surrogate: text decoded with
    errors="surrogateescape", or from JSON's \\ud800)."""
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError as e:
            return (f"the word {word!r} holds {word[e.start]!r} (U+{ord(word[e.start]):04X}), a lone surrogate: "
                    "not text UTF-8 can hold (decode the input strictly, or replace such characters)")
    return "a word cannot be encoded as UTF-8"


@dataclass
class Sentence:
    """One sentence: token attribute hashes, gold (or unknown) heads, provenance.

    `heads[m]` is the head of word m (0 = root), -1 where unknown; `heads[0]` is -1.
    `lines` are the sentence's CoNLL-U lines exactly as read (with line endings),
    `word_lines[m]` the index into `lines` of word m, so writing changes only the
    columns that were predicted.
    """

    forms: list[str]
    attrs: np.ndarray  # uint64 (7, n+1)
    heads: np.ndarray  # int32 (n+1,)
    deprels: list[str]  # length n+1, deprels[0] = ''
    upos: list[str]
    lines: list[str] = field(default_factory=list)
    word_lines: list[int] = field(default_factory=list)
    source: str = "<memory>"
    first_line: int = 1
    xpos: list[str] = field(default_factory=list)  # like upos (xpos[0] is the root), the tagger's input/gold
    # The LEMMA row's strings (lemmas[0] is the root), where known: the input's column, or a
    # lemmatizer's prediction; empty when unknown. A morphologizer reading the inflection needs them.
    lemmas: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.forms) - 1

    @property
    def has_heads(self) -> bool:
        return bool(self.n) and bool((self.heads[1:] >= 0).all())

    @classmethod
    def from_columns(
        cls,
        forms: list[str],
        lemmas: list[str] | None = None,
        upos: list[str] | None = None,
        xpos: list[str] | None = None,
        feats: list[str] | None = None,
        heads: list[int] | None = None,
        deprels: list[str] | None = None,
        **provenance,
    ) -> "Sentence":
        """Build from per-word columns (without the root); '_' marks a missing value."""
        forms = _forms(forms)
        n = len(forms)
        all_forms = [ROOT] + list(forms)
        lower = [f.lower() for f in forms]
        # One preallocated matrix, and a missing column filled with the hash of "_": raw text
        # comes here once per sentence with only its forms (Pipeline.tokenize).
        attrs = np.empty((len(ATTR_NAMES), n + 1), dtype=np.uint64)
        attrs[:, 0] = _ROOT_HASH
        try:
            attrs[FORM, 1:] = hash_strings(forms)
        except UnicodeEncodeError:
            raise ValueError(_not_utf8(forms)) from None
        attrs[LOWER, 1:] = hash_strings(lower)
        attrs[PREFIX, 1:] = hash_strings([f[:PREFIX_LENGTH] for f in lower])
        for row, column in ((LEMMA, lemmas), (UPOS, upos), (XPOS, xpos), (FEATS, feats)):
            if column and len(column) != n:
                raise ValueError(f"{ATTR_NAMES[row]}: {len(column)} values for {n} words")
            attrs[row, 1:] = hash_strings(column) if column else MISSING_HASH
        upos = upos or ["_"] * n
        xpos = xpos or ["_"] * n
        head_arr = np.full(n + 1, -1, dtype=np.int32)
        if heads is not None:
            head_arr[1:] = heads
        return cls(
            forms=all_forms,
            attrs=attrs,
            heads=head_arr,
            deprels=[""] + list(deprels or ["_"] * n),
            upos=[ROOT] + list(upos),
            xpos=[ROOT] + list(xpos),
            lemmas=[ROOT] + list(lemmas) if lemmas else [],
            **provenance,
        )

    @classmethod
    def from_forms(cls, sentences: list[list[str]]) -> list["Sentence"]:
        """`from_columns(forms)` of each sentence's forms, the strings of all of them hashed
        in one call (raw text: Pipeline.tokenize makes every sentence this way)."""
        words = [f for forms in sentences for f in _forms(forms)]
        lower = [f.lower() for f in words]
        try:
            hashed = hash_strings(words + lower + [f[:PREFIX_LENGTH] for f in lower]).reshape(3, len(words))
        except UnicodeEncodeError:
            raise ValueError(_not_utf8(words)) from None
        out, at = [], 0
        for forms in sentences:
            n = len(forms)
            attrs = np.empty((len(ATTR_NAMES), n + 1), dtype=np.uint64)
            attrs[:, 0] = _ROOT_HASH
            attrs[(FORM, LOWER, PREFIX), 1:] = hashed[:, at:at + n]
            attrs[(LEMMA, UPOS, XPOS, FEATS), 1:] = MISSING_HASH
            at += n
            missing = ["_"] * n
            out.append(cls(forms=[ROOT, *forms], attrs=attrs, heads=np.full(n + 1, -1, dtype=np.int32),
                           deprels=["", *missing], upos=[ROOT, *missing], xpos=[ROOT, *missing]))
        return out


def known_lemmas(sentence: Sentence) -> dict:
    """{LEMMA id: string} of the sentence's words whose `lemmas` entry is the string of its
    LEMMA row (a row changed without its strings, e.g. blanked, is not matched to them)."""
    if len(sentence.lemmas) != sentence.attrs.shape[1] or len(sentence.lemmas) < 2:
        return {}
    ids = sentence.attrs[LEMMA, 1:]
    same = (hash_strings(sentence.lemmas[1:]) == ids).tolist()
    return {i: text for i, text, ok in zip(ids.tolist(), sentence.lemmas[1:], same) if ok}


@dataclass
class SentenceBatch:
    """Many sentences in one set of arrays, for the kernels that tag, parse and label a
    whole batch without the GIL (`Pipeline.annotate_batch`).

    Sentence i is columns starts[i]..starts[i+1]-1 of `attrs` (its root first, as in a
    Sentence); `heads` holds sentence-local heads in the same columns (-1 at roots and
    where unknown). `text_of(id)` is the string of a FORM id (the tagger computes word
    values from the strings of forms it has not seen)."""

    attrs: np.ndarray  # uint64 (7, N), C-contiguous
    starts: np.ndarray  # int64 (S+1,)
    text_of: object  # Callable[[int], str]
    heads: np.ndarray | None = None  # int32 (N,)
    origins: list | None = None  # (file, first line) of each sentence, where known: for messages
    # The string of each LEMMA id the batch holds, where known (the input sentences' `lemmas`, and
    # what a lemmatizer writes): a morphologizer reading the inflection reads them (`lemma_of`).
    lemmas: dict = field(default_factory=dict)
    # Callables giving (LEMMA id, string) pairs, added by a lemmatizer that wrote the LEMMA row:
    # made only when a string is asked for, since a reader's cache of inflections rarely needs one.
    lemma_sources: list = field(default_factory=list)

    def lemma_of(self, lemma_id: int) -> str | None:
        """The string of a LEMMA id of the batch, None when unknown."""
        text = self.lemmas.get(lemma_id)
        if text is None and self.lemma_sources:
            # emptied in place: a batch cut from this one (`pieces`) shares the list and the dict
            sources = list(self.lemma_sources)
            self.lemma_sources.clear()
            for source in sources:
                self.lemmas.update(source())
            text = self.lemmas.get(lemma_id)
        return text

    @classmethod
    def from_sentences(cls, sentences: list["Sentence"]) -> "SentenceBatch":
        if not sentences:
            return cls(np.zeros((len(ATTR_NAMES), 0), dtype=np.uint64), np.zeros(1, dtype=np.int64), {}.__getitem__,
                       np.zeros(0, dtype=np.int32))
        forms: dict[int, str] = {}
        lemmas: dict[int, str] = {}
        for s in sentences:
            forms.update(zip(s.attrs[FORM].tolist(), s.forms))
            if s.lemmas:
                lemmas.update(known_lemmas(s))
        return cls(np.ascontiguousarray(np.concatenate([s.attrs for s in sentences], axis=1), dtype=np.uint64),
                   np.concatenate([[0], np.cumsum([s.n + 1 for s in sentences])]).astype(np.int64),
                   forms.__getitem__, np.concatenate([s.heads for s in sentences]).astype(np.int32),
                   [(s.source, s.first_line) for s in sentences], lemmas)

    def pieces(self, length: int) -> tuple["SentenceBatch", list]:
        """The batch with every sentence longer than `length` words cut into pieces of at
        most `length` words, each with its sentence's root column; and, per piece, (sentence,
        offset of its first word - 1). Pieces are parsed as sentences of their own."""
        columns, starts, where = [], [0], []
        for i in range(self.n_sentences):
            a, b = int(self.starts[i]), int(self.starts[i + 1])
            n = b - a - 1
            for offset in range(0, max(n, 1), length) if n > length else [0]:
                stop = min(offset + length, n) if n > length else n
                columns.append(a)
                columns.extend(range(a + 1 + offset, a + 1 + stop))
                starts.append(len(columns))
                where.append((i, offset))
        index = np.asarray(columns, dtype=np.int64)
        heads = self.heads[index] if self.heads is not None else None
        return SentenceBatch(np.ascontiguousarray(self.attrs[:, index]), np.asarray(starts, dtype=np.int64),
                             self.text_of, heads, lemmas=self.lemmas, lemma_sources=self.lemma_sources), where

    @property
    def n_sentences(self) -> int:
        return len(self.starts) - 1

    @cached_property
    def word_starts(self) -> np.ndarray:
        """Sentence i's words are entries word_starts[i]..word_starts[i+1]-1 of per-word arrays
        (computed once: each component asks for it once per sentence of the batch)."""
        return self.starts - np.arange(len(self.starts))

    @property
    def words(self) -> np.ndarray:
        """Boolean per column: a word (not a root)."""
        out = np.ones(self.attrs.shape[1], dtype=bool)
        out[self.starts[:-1]] = False
        return out

    def sentence(self, i: int) -> "Sentence":
        """Sentence i as a Sentence (for components without a batch kernel)."""
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        n = b - a - 1
        heads = self.heads[a:b].copy() if self.heads is not None else np.full(n + 1, -1, dtype=np.int32)
        heads[0] = -1
        # "" where a lemma's string is unknown: `known_lemmas` then leaves that word out only
        lemmas = [ROOT] + [self.lemma_of(m) or "" for m in self.attrs[LEMMA, a + 1:b].tolist()]
        return Sentence(forms=[ROOT] + [self.text_of(f) for f in self.attrs[FORM, a + 1:b].tolist()],
                        attrs=self.attrs[:, a:b], heads=heads, deprels=[""] + ["_"] * n, upos=[ROOT] + ["_"] * n,
                        xpos=[ROOT] + ["_"] * n, lemmas=lemmas)
