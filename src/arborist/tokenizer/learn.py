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

    def __init__(self, margin: float = 1.0, averaged: bool = True, shuffle: bool = True, seed: int = 0,
                 margin_epochs: int | None = None, final_margin: float = 0.0):
        """margin_epochs: train with `margin` for that many epochs, then with `final_margin`
        (None: `margin` throughout)."""
        if margin < 0 or final_margin < 0:
            raise ValueError(f"margins must not be negative, got {margin!r} and {final_margin!r}")
        if margin_epochs is not None and margin_epochs < 0:
            raise ValueError(f"margin_epochs must not be negative, got {margin_epochs!r}")
        super().__init__(averaged=averaged, shuffle=shuffle, seed=seed)
        self.margin = float(margin)
        self.margin_epochs = margin_epochs
        self.final_margin = float(final_margin)
        self.epochs_done = 0

    def current_margin(self) -> float:
        if self.margin_epochs is not None and self.epochs_done >= self.margin_epochs:
            return self.final_margin
        return self.margin

    def epoch(self, structure, examples: list, tracker=None) -> dict:
        w = self.weights
        order = self.rng.permutation(len(examples)) if self.shuffle else np.arange(len(examples))
        correct = total = 0.0
        updates = 0
        start = time.perf_counter()
        margin = self.current_margin()
        self.epochs_done += 1
        for i in order:
            x = examples[i]
            gold = structure.gold(x)
            scores = structure.scores(x, w)
            if margin:
                scores = scores + margin * structure.part_cost(x, gold)
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
                "epoch_seconds": seconds, "examples_per_second": len(order) / max(seconds, 1e-9), "margin": margin}

    def settings(self) -> dict:
        return {**super().settings(), "trainer": self.name, "margin": self.margin,
                "margin_epochs": self.margin_epochs, "final_margin": self.final_margin}
