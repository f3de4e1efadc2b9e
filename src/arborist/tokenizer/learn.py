"""A cost-augmented (margin) averaged perceptron for the character chain.

The plain perceptron stops updating a context as soon as its argmax is right, so a rare
context ("(" before a word: 49 times in el_gdt's training text) keeps weights barely above
the generic ones (an inside-a-word letter continues a token), and an unseen word after it
tips the balance. Decoding with `margin * part_cost` added (the Hamming loss of each
character's tag) keeps updating until the gold tags beat every other tagging by `margin`
per wrong character. margin = 0 is the averaged perceptron exactly.

Written against the Structure protocol only (cost_augmented-style decoding through
`part_cost` and `argmax`), so it could live in `arborist.learn`; it is here because this
branch does not touch that package.
"""
from __future__ import annotations

import time

import numpy as np

from ..learn.perceptron import Perceptron


class MarginPerceptron(Perceptron):
    name = "margin-perceptron"

    def __init__(self, margin: float = 1.0, averaged: bool = True, shuffle: bool = True, seed: int = 0):
        if margin < 0:
            raise ValueError(f"margin must not be negative, got {margin!r}")
        super().__init__(averaged=averaged, shuffle=shuffle, seed=seed)
        self.margin = float(margin)

    def epoch(self, structure, examples: list, tracker=None) -> dict:
        w = self.weights
        order = self.rng.permutation(len(examples)) if self.shuffle else np.arange(len(examples))
        correct = total = 0.0
        updates = 0
        start = time.perf_counter()
        for i in order:
            x = examples[i]
            gold = structure.gold(x)
            scores = structure.scores(x, w)
            if self.margin:
                scores = scores + self.margin * structure.part_cost(x, gold)
            pred = structure.argmax(x, scores)
            right, positions = structure.hits(x, gold, pred)
            correct += right
            total += positions
            if right < positions:
                structure.add_features(x, structure.indicator(x, gold) - structure.indicator(x, pred), w, 1.0)
                updates += 1
            w.tick()
            if tracker is not None:
                tracker.advance(1, train_accuracy=correct / max(total, 1.0))
        seconds = time.perf_counter() - start
        return {"train_accuracy": correct / max(total, 1.0), "updates": updates, "backoffs": 0,
                "epoch_seconds": seconds, "examples_per_second": len(order) / max(seconds, 1e-9)}

    def settings(self) -> dict:
        return {**super().settings(), "trainer": self.name, "margin": self.margin}
