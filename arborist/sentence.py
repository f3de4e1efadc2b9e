"""Sentence: the per-sentence arrays every kernel reads.

Index 0 of every per-token array is the artificial root; words are 1..n.
Token attributes are 64-bit string hashes (see `arborist.strings`), stored as
rows of one uint64 matrix so a kernel gets a single contiguous array.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .strings import hash_strings

# Rows of Sentence.attrs.
FORM, LOWER, LEMMA, UPOS, XPOS, PREFIX, FEATS = range(7)
ATTR_NAMES = ("form", "lower", "lemma", "upos", "xpos", "prefix", "feats")
PREFIX_LENGTH = 5  # McDonald, Crammer and Pereira (2005): 5-character prefixes
ROOT = "<ROOT>"


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
        n = len(forms)
        lemmas = lemmas or ["_"] * n
        upos = upos or ["_"] * n
        xpos = xpos or ["_"] * n
        feats = feats or ["_"] * n
        all_forms = [ROOT] + list(forms)
        lower = [ROOT] + [f.lower() for f in forms]
        prefix = [ROOT] + [f.lower()[:PREFIX_LENGTH] for f in forms]
        columns = (all_forms, lower, [ROOT] + list(lemmas), [ROOT] + list(upos), [ROOT] + list(xpos), prefix,
                   [ROOT] + list(feats))
        attrs = np.stack([hash_strings(col) for col in columns])
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
            **provenance,
        )
