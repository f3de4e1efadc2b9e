"""The averaged structured perceptron (CSP): Algorithm 1 of Dror and Reichart.

Written against the Structure protocol only. For each example in turn, decode
y* = argmax_y w . phi(x, y); if y* != y, w += phi(x, y) - phi(x, y*). Averaging
(Collins 2002) uses the clock of `Weights`: the returned weights are the mean of
w after every example.
"""

import time

import numpy as np

from ..structure import Structure
from .weights import Weights


class Perceptron:
    name = "perceptron"
    columns = ("train_accuracy", "updates", "epoch_seconds")

    def __init__(self, averaged: bool = True, shuffle: bool = True, seed: int = 0):
        self.averaged = averaged
        self.shuffle = shuffle
        self.rng = np.random.default_rng(seed)
        self.weights: Weights | None = None

    def begin(self, structure: Structure, examples: list, hash_bits: int) -> None:
        self.weights = Weights(hash_bits, averaged=self.averaged)

    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        """One pass over examples; returns training metrics (accuracy of the positions, updates, examples/s)."""
        w = self.weights
        order = self.rng.permutation(len(examples)) if self.shuffle else np.arange(len(examples))
        correct = total = 0.0
        updates = 0
        start = time.perf_counter()
        for count, i in enumerate(order, start=1):
            x = examples[i]
            gold = structure.gold(x)
            pred = structure.argmax(x, structure.scores(x, w))
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
        return {
            "train_accuracy": correct / max(total, 1.0),
            "updates": updates,
            "epoch_seconds": seconds,
            "examples_per_second": len(order) / max(seconds, 1e-9),
        }

    def finish_epoch(self, metrics: dict) -> bool:
        """Nothing to schedule between epochs; never asks to stop."""
        return False

    def state(self) -> tuple[dict, dict]:
        """(arrays, meta) that `restore` turns back into this exact trainer state."""
        arrays = {"weights": self.weights.array, "accumulator": self.weights.accumulator}
        meta = {"trainer": self.name, "averaged": self.averaged, "step": self.weights.step,
                "rng": self.rng.bit_generator.state}
        return arrays, meta

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        if meta.get("trainer") != self.name or meta.get("averaged") != self.averaged:
            raise ValueError(f"checkpoint is for trainer {meta.get('trainer')!r} (averaged={meta.get('averaged')}), "
                             f"not {self.name!r} (averaged={self.averaged})")
        bits = int(arrays["weights"].size).bit_length() - 1
        self.weights = Weights(bits, self.averaged, arrays["weights"].copy())
        if self.averaged:
            self.weights.accumulator[:] = arrays["accumulator"]
        self.weights.step = meta["step"]
        self.rng.bit_generator.state = meta["rng"]

    def prediction_weights(self) -> Weights:
        """The weights to predict with: the average, for an averaged perceptron."""
        return Weights(self.weights.bits, False, self.weights.averaged_array())
