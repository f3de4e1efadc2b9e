"""Hashed weights, averaging, and the perceptron against hand-computed updates."""
from __future__ import annotations

import numpy as np
import pytest

from arborist.learn.perceptron import Perceptron
from arborist.weights import Weights
from arborist.parser.tree import DependencyTree
from arborist.sentence import Sentence


def test_averaging_trick_equals_explicit_average():
    rng = np.random.default_rng(0)
    w = Weights(6, averaged=True)
    explicit = np.zeros(64)
    snapshots = []
    for step in range(25):
        if rng.random() < 0.7:
            idx = rng.integers(0, 64, size=5).astype(np.uint64)
            vals = rng.normal(size=5)
            w.add_sparse(idx, vals, 0.5)
            np.add.at(explicit, idx.astype(np.int64), 0.5 * vals)
        w.tick()
        snapshots.append(explicit.copy())
    np.testing.assert_allclose(w.array, explicit)
    np.testing.assert_allclose(w.averaged_array(), np.mean(snapshots, axis=0), atol=1e-12)


def test_weights_validate_their_array():
    with pytest.raises(ValueError):
        Weights(4, False, np.zeros(15))
    with pytest.raises(ValueError):
        Weights(0)
    w = Weights(4)
    w.add_sparse(np.array([1, 1, 17], dtype=np.uint64), np.array([1.0, 2.0, 4.0]))
    assert w.array[1] == 7.0 and w.nonzero() == 1  # 17 & 15 == 1: indices are masked


class ToyTree(DependencyTree):
    """Arc features chosen by hand: arc (h, m) has the single feature h * 10 + m."""

    def __init__(self):
        super().__init__(hash_bits=8)

    def scores(self, x, w):
        n = x.n
        s = np.zeros((n + 1, n + 1))
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    s[h, m] = w.array[h * 10 + m]
        return s

    def add_features(self, x, coef, w, scale=1.0):
        idx = [h * 10 + m for h in range(coef.shape[0]) for m in range(1, coef.shape[1]) if coef[h, m] != 0]
        vals = [coef[i // 10, i % 10] for i in idx]
        w.add_sparse(np.array(idx, dtype=np.uint64), np.array(vals), scale)


def toy(heads):
    n = len(heads)
    return Sentence.from_columns(["w"] * n, None, ["X"] * n, ["X"] * n, heads=heads)


def test_perceptron_matches_hand_computed_updates():
    # Sentence of 2 words, gold 0->2->1. With zero weights Eisner (ties -> first split)
    # predicts some tree; we compute every step by hand with the toy features.
    structure = ToyTree()
    x1, x2 = toy([2, 0]), toy([0, 1])
    trainer = Perceptron(averaged=True, shuffle=False)
    trainer.begin(structure, [x1, x2], 8)

    w = np.zeros(256)
    history, updates = [], 0
    for x in (x1, x2, x1, x2):
        scores = structure.scores(x, Weights(8, False, w.copy()))
        pred = structure.argmax(x, scores)
        if not np.array_equal(pred, x.heads):
            updates += 1
            for m in (1, 2):
                w[x.heads[m] * 10 + m] += 1
                w[pred[m] * 10 + m] -= 1
        history.append(w.copy())
    m1 = trainer.epoch(structure, [x1, x2])
    m2 = trainer.epoch(structure, [x1, x2])
    np.testing.assert_array_equal(trainer.weights.array, w)
    np.testing.assert_allclose(trainer.prediction_weights().array, np.mean(history, axis=0))
    assert m1["updates"] + m2["updates"] == updates > 0


# The sequence above ends at w = 0 (x1's update is undone by x2's), and with a final w of 0
# an averaging clock one example off gives the same average (w - u/T shifts by w_T/T).
# The checks below end elsewhere, and spell out each w_t by hand. ToyTree's features
# (h * 10 + m): x1 = toy([2, 0]) has gold arcs 2->1 (21) and 0->2 (2); with w = 0 Eisner
# predicts 0->1 (1), 1->2 (12), so its update is W1 below. x2 = toy([0, 1]) is the reverse:
# under W1 it is predicted as x1's gold, and its update is -W1.
W1 = {21: 1.0, 2: 1.0, 1: -1.0, 12: -1.0}


def dense(sparse: dict, size: int = 256) -> np.ndarray:
    out = np.zeros(size)
    for index, value in sparse.items():
        out[index] = value
    return out


@pytest.mark.parametrize("epochs, after_each, mean", [
    # (examples of each epoch, w after each example by hand, their mean as a multiple of W1)
    ([["x1"], ["x1"], ["x1"]], [W1, W1, W1], 1.0),  # one update, at the first example
    ([["x1", "x2"], ["x1"]], [W1, {}, W1], 2 / 3),
    ([["x2"], ["x1"], ["x1"], ["x2"]], [{}, W1, W1, {}], 1 / 2),  # no update first: x2's gold is w = 0's tree
    ([["x2", "x1"], ["x1", "x1"]], [{}, W1, W1, W1], 3 / 4),  # the update at the second example
], ids=["x1,x1,x1", "x1x2,x1", "x2,x1,x1,x2", "x2x1,x1x1"])
def test_averaged_weights_are_the_mean_after_each_example(epochs, after_each, mean):
    structure = ToyTree()
    examples = {"x1": toy([2, 0]), "x2": toy([0, 1])}
    trainer = Perceptron(averaged=True, shuffle=False)
    trainer.begin(structure, list(examples.values()), 8)
    seen = []
    for names in epochs:
        trainer.epoch(structure, [examples[n] for n in names])
        seen += names
        expected = [dense(w) for w in after_each[: len(seen)]]
        np.testing.assert_array_equal(trainer.weights.array, expected[-1])
        np.testing.assert_allclose(trainer.prediction_weights().array, np.mean(expected, axis=0), atol=1e-12,
                                   err_msg=f"after {seen}")
    # The final mean, by hand too (a check of the w_t written above).
    np.testing.assert_allclose(trainer.prediction_weights().array, mean * dense(W1), atol=1e-12)


def test_weights_average_by_hand():
    """The averaging trick against means written out by hand, ending away from zero."""
    w = Weights(3, averaged=True)
    w.add_sparse(np.array([3], dtype=np.uint64), np.array([1.0]))  # example 1: w = e3
    w.tick()
    w.tick()  # example 2: no change
    np.testing.assert_allclose(w.averaged_array(), dense({3: 1.0}, 8))
    w.add_sparse(np.array([5, 3], dtype=np.uint64), np.array([2.0, -1.0]))  # example 3: w = 2 e5
    w.tick()
    # w_1 = e3, w_2 = e3, w_3 = 2 e5: the mean is 2/3 e3 + 2/3 e5
    np.testing.assert_allclose(w.averaged_array(), dense({3: 2 / 3, 5: 2 / 3}, 8), atol=1e-12)
    w.tick(2)  # examples 4 and 5 change nothing: w_1..w_5 = e3, e3, 2 e5, 2 e5, 2 e5
    np.testing.assert_allclose(w.averaged_array(), dense({3: 2 / 5, 5: 6 / 5}, 8), atol=1e-12)
    np.testing.assert_array_equal(w.array, dense({5: 2.0}, 8))


def test_non_projective_gold_does_not_stop_training():
    # 1 <- 3, 2 <- 4 crossing arcs: gold is non-projective, training still runs.
    structure = DependencyTree(hash_bits=12)
    x = Sentence.from_columns(["a", "b", "c", "d"], None, ["NOUN"] * 4, ["NN"] * 4, heads=[3, 4, 0, 3])
    trainer = Perceptron(shuffle=False)
    trainer.begin(structure, [x], 12)
    for _ in range(3):
        metrics = trainer.epoch(structure, [x])
    assert metrics["updates"] == 1 and metrics["train_accuracy"] < 1.0
