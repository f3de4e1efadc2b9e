"""Ranking: one candidate per item, each candidate with its own hashed features.

The multiword expander's classifier (`arborist.tokenizer.mwt`) is this structure: an
item is a surface token, its candidates are "not a multiword token" and the suffix
rewrites that apply to it, and a candidate's features say what the rewrite would make
(is the first word a known word, with which UPOS, which characters precede the cut).
`Multiclass` is the special case where every item has all K classes and a class's
features are the item's shifted by the class; here the features belong to the
candidate, so candidates that differ only in what they would produce compare directly.

An example holds several items (CSR: item i's candidates are parts
cand_start[i]..cand_start[i+1]-1, every item has at least one) and each part's feature
ids (CSR over parts: feat_start, every part has at least one: give each a bias).
Feature f of a part lives in slot f mod 2**hash_bits. A label is an int32 array of
candidate indices, one per item, counted within the item (0 is its first candidate).

  scores          (parts,) the sum of each part's feature weights
  argmax          the first best candidate of each item
  marginals       a softmax per item; log Z is the sum of the items' log-sum-exps
  part_cost       1 on every part that is not the item's gold candidate (Hamming)
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Sequence

import numpy as np

from .morph.atoms import segment_argmax
from .structure import take_positions


@dataclass
class RankingExample:
    cand_start: np.ndarray   # int64 (items + 1,)
    feat_start: np.ndarray   # int64 (parts + 1,)
    features: np.ndarray     # uint64 (feat_start[-1],)
    gold: np.ndarray | None = None  # int32 (items,): the gold candidate of each item, or None
    where: str = "<memory>"

    @property
    def n(self) -> int:
        return len(self.cand_start) - 1

    @classmethod
    def of(cls, items: Sequence[Sequence[Sequence[int]]], gold: Sequence[int] | None = None,
           where: str = "<memory>") -> "RankingExample":
        """From nested lists: items[i][c] is the feature id list of candidate c of item i."""
        sizes = [len(cands) for cands in items]
        if sizes and min(sizes) == 0:
            raise ValueError(f"{where}: every item needs at least one candidate")
        parts = [feats for cands in items for feats in cands]
        lengths = [len(f) for f in parts]
        if lengths and min(lengths) == 0:
            raise ValueError(f"{where}: every candidate needs at least one feature")
        cand_start = np.array([0, *accumulate(sizes)], dtype=np.int64)
        feat_start = np.array([0, *accumulate(lengths)], dtype=np.int64)
        features = np.concatenate([np.asarray(f, dtype=np.uint64) for f in parts]) if parts else np.zeros(0, np.uint64)
        gold_array = None if gold is None else np.asarray(gold, dtype=np.int32)
        return cls(cand_start, feat_start, features, gold_array, where)


class Ranking:
    name = "ranking"

    def __init__(self, hash_bits: int = 18):
        if not 1 <= int(hash_bits) <= 40:
            raise ValueError(f"hash_bits must be between 1 and 40, got {hash_bits}")
        self.hash_bits = int(hash_bits)
        self._mask = np.uint64((1 << self.hash_bits) - 1)

    def registry_call(self) -> dict:
        return {"@structures": "arborist.Ranking.v1", "hash_bits": self.hash_bits}

    def _slots(self, x: RankingExample) -> np.ndarray:
        return np.asarray(x.features, dtype=np.uint64) & self._mask

    def _check_label(self, x: RankingExample, y) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (x.n,):
            raise ValueError(f"{x.where}: a label has one candidate per item: {x.n} items, got shape {y.shape}")
        sizes = np.diff(x.cand_start)
        if ((y < 0) | (y >= sizes)).any():
            i = int(np.flatnonzero((y < 0) | (y >= sizes))[0])
            raise ValueError(f"{x.where}: candidate {int(y[i])} of item {i + 1} is not one of its {int(sizes[i])}")
        return y.astype(np.int64)

    # -- the protocol -------------------------------------------------------
    def scores(self, x: RankingExample, w) -> np.ndarray:
        if len(x.feat_start) == 1:
            return np.zeros(0)
        return np.add.reduceat(w.array[self._slots(x)], x.feat_start[:-1])

    def argmax(self, x: RankingExample, scores: np.ndarray) -> np.ndarray:
        best = segment_argmax(np.ascontiguousarray(scores, dtype=np.float64), x.cand_start)
        return (best - x.cand_start[:-1]).astype(np.int32)

    def cost_augmented_argmax(self, x, scores, gold):
        return self.argmax(x, np.asarray(scores, dtype=np.float64) + self.part_cost(x, gold))

    def marginals(self, x: RankingExample, scores: np.ndarray) -> tuple[np.ndarray, float]:
        scores = np.asarray(scores, dtype=np.float64)
        if x.n == 0:
            return np.zeros(0), 0.0
        sizes = np.diff(x.cand_start)
        starts = x.cand_start[:-1]
        top = np.maximum.reduceat(scores, starts)
        e = np.exp(scores - np.repeat(top, sizes))
        total = np.add.reduceat(e, starts)
        return e / np.repeat(total, sizes), float((top + np.log(total)).sum())

    def indicator(self, x: RankingExample, y) -> np.ndarray:
        y = self._check_label(x, y)
        out = np.zeros(int(x.cand_start[-1]))
        out[x.cand_start[:-1] + y] = 1.0
        return out

    def part_cost(self, x, gold) -> np.ndarray:
        return 1.0 - self.indicator(x, gold)

    def add_features(self, x: RankingExample, coef, w, scale: float = 1.0) -> None:
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (int(x.cand_start[-1]),):
            raise ValueError(f"coefficients must have one value per candidate ({int(x.cand_start[-1])}), "
                             f"got shape {coef.shape}")
        w.add_sparse(self._slots(x), np.repeat(coef, np.diff(x.feat_start)), scale)

    def mix(self, gold, pred, positions: Sequence[int]) -> np.ndarray:
        return take_positions(gold, pred, positions)

    def gold(self, x: RankingExample) -> np.ndarray:
        if x.gold is None:
            raise ValueError(f"{x.where}: the example has no gold candidates")
        return self._check_label(x, x.gold).astype(np.int32)

    def hits(self, x, gold, pred) -> tuple[int, int]:
        return int((np.asarray(gold) == np.asarray(pred)).sum()), len(gold)

    def initialize(self, examples) -> None:
        """Nothing to learn before training: the feature space is hashed."""
