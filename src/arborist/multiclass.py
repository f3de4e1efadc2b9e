"""Multiclass: one label out of K behind the Structure protocol.

The parts of a multiclass label are the classes: scores, marginals and indicators are
(K,) arrays, argmax is the best class, marginals are the softmax and log Z its
normalizer, and the Hamming cost of a wrong class is 1 (`seeds/001`, §7.1: EG on a
multiclass problem). An example carries hashed feature ids; feature f of class k
lives in slot (f + k) mod 2**hash_bits, so the K weights of a feature are adjacent (one
cache line), as in the tagger. A label is an int32 array of one class index, so that
`mix` and `differing_positions` treat it like any other label array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import logsumexp, softmax

from .structure import take_positions


@dataclass
class MulticlassExample:
    """Hashed feature ids (uint64) and the gold class index (-1 when unknown)."""

    features: np.ndarray
    label: int = -1


class Multiclass:
    name = "multiclass"

    def __init__(self, classes: Sequence[str], hash_bits: int = 18):
        if len(classes) < 2 or len(set(classes)) != len(classes):
            raise ValueError(f"a multiclass structure needs at least two distinct classes, got {list(classes)!r}")
        self.classes = list(classes)
        self.hash_bits = int(hash_bits)
        self._offsets = np.arange(len(self.classes), dtype=np.uint64)
        self._mask = np.uint64((1 << self.hash_bits) - 1)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def registry_call(self) -> dict:
        return {"@structures": "arborist.Multiclass.v1", "classes": list(self.classes), "hash_bits": self.hash_bits}

    def _slots(self, x: MulticlassExample) -> np.ndarray:
        features = np.asarray(x.features, dtype=np.uint64)
        return (features[:, None] + self._offsets[None, :]) & self._mask  # (F, K)

    # -- the protocol -------------------------------------------------------
    def scores(self, x: MulticlassExample, w) -> np.ndarray:
        return w.array[self._slots(x)].sum(axis=0)

    def argmax(self, x, scores: np.ndarray) -> np.ndarray:
        return np.array([int(np.argmax(scores))], dtype=np.int32)

    def cost_augmented_argmax(self, x, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return softmax(scores), float(logsumexp(scores))

    def indicator(self, x, y: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_classes)
        out[int(y[0])] = 1.0
        return out

    def part_cost(self, x, gold: np.ndarray) -> np.ndarray:
        return 1.0 - self.indicator(x, gold)

    def add_features(self, x: MulticlassExample, coef: np.ndarray, w, scale: float = 1.0) -> None:
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (self.n_classes,):
            raise ValueError(f"coefficients must have shape ({self.n_classes},), got {coef.shape}")
        slots = self._slots(x)
        w.add_sparse(slots.ravel(), np.broadcast_to(coef, slots.shape).ravel(), scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # The one position is the class itself.
        return take_positions(gold, pred, positions)

    def gold(self, x: MulticlassExample) -> np.ndarray:
        if not 0 <= x.label < self.n_classes:
            raise ValueError(f"gold class {x.label} is not one of the {self.n_classes} classes "
                             "(-1: the example has no gold label)")
        return np.array([x.label], dtype=np.int32)

    def hits(self, x, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int(gold[0] == pred[0]), 1

    def initialize(self, examples) -> None:
        """The class set is fixed at construction (the feature space is hashed)."""
