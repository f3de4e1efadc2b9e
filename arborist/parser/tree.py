"""DependencyTree: first-order projective trees behind the Structure protocol.

Parts are arcs: an (n+1, n+1) array indexed [head, modifier]; column 0 (arcs
into the root) and the diagonal are not parts and are always 0. A label is a
heads array (int32, n+1) with heads[0] = -1.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..sentence import Sentence
from .eisner import eisner_argmax, eisner_marginals
from .features import DEFAULT_TEMPLATES, ArcFeatures


class DependencyTree:
    name = "tree"

    def __init__(self, templates: Sequence[str] = DEFAULT_TEMPLATES, hash_bits: int = 22, single_root: bool = True):
        self.features = ArcFeatures(templates, hash_bits)
        self.single_root = bool(single_root)

    @property
    def hash_bits(self) -> int:
        return self.features.bits

    def config(self) -> dict:
        return {
            "structure": self.name,
            "templates": list(self.features.templates),
            "hash_bits": self.features.bits,
            "single_root": self.single_root,
        }

    @classmethod
    def from_config(cls, config: dict) -> "DependencyTree":
        return cls(config["templates"], config["hash_bits"], config["single_root"])

    # -- the protocol -------------------------------------------------------
    def scores(self, x: Sentence, w) -> np.ndarray:
        return self.features.score(x, w.array)

    def argmax(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        return eisner_argmax(scores, self.single_root)[0]

    def cost_augmented_argmax(self, x: Sentence, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: Sentence, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return eisner_marginals(scores, self.single_root)

    def indicator(self, x: Sentence, y: np.ndarray) -> np.ndarray:
        n = len(y) - 1
        out = np.zeros((n + 1, n + 1))
        out[y[1:], np.arange(1, n + 1)] = 1.0
        return out

    def part_cost(self, x: Sentence, gold: np.ndarray) -> np.ndarray:
        n = len(gold) - 1
        cost = 1.0 - self.indicator(x, gold)
        cost[:, 0] = 0.0
        cost[np.arange(n + 1), np.arange(n + 1)] = 0.0
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        self.features.add(x, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # A position is a word; taking pred there means taking its predicted head.
        out = np.array(gold, copy=True)
        idx = np.asarray(positions, dtype=np.intp)
        out[idx] = pred[idx]
        return out

    def gold(self, x: Sentence) -> np.ndarray:
        return x.heads

    def hits(self, x: Sentence, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold[1:]) == np.asarray(pred[1:])).sum()), len(gold) - 1

    def initialize(self, sentences) -> None:
        """Nothing to learn from the training data before training (the feature space is hashed)."""
