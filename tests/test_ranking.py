"""The Ranking structure through the shared protocol suite, and every trainer on it."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from arborist.learn.eg import EG
from arborist.learn.perceptron import SWVP, Perceptron
from arborist.ranking import Ranking, RankingExample
from arborist.registry import make_structure
from arborist.weights import Weights

from protocol import check_gradient, check_protocol, check_trainer_fits

BITS = 10


def random_example(rng, sizes, gold=None):
    items = [[list(rng.integers(0, 2**63, size=int(rng.integers(1, 4)), dtype=np.uint64)) for _ in range(k)]
             for k in sizes]
    return RankingExample.of(items, gold)


def all_labels(x):
    sizes = np.diff(x.cand_start)
    return [np.array(y, dtype=np.int32) for y in itertools.product(*(range(int(k)) for k in sizes))]


@pytest.mark.parametrize("sizes", [(1,), (3,), (2, 1, 3), (4, 2)])
def test_protocol_against_brute_force(sizes):
    rng = np.random.default_rng(len(sizes) * 10 + sum(sizes))
    structure = Ranking(BITS)
    for _ in range(3):
        x = random_example(rng, sizes)
        scores = rng.normal(size=int(x.cand_start[-1])) * 2
        labels = all_labels(x)
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(structure, x, scores, labels, gold, lambda g, y: int((g != y).sum()), rng, BITS)
        check_gradient(structure, x, scores)


def test_scores_sum_each_candidates_own_slots():
    rng = np.random.default_rng(1)
    structure = Ranking(BITS)
    w = Weights(BITS, False, rng.normal(size=1 << BITS))
    x = RankingExample.of([[[5, 5, 2**64 - 1], [7]], [[3]]])
    mask = (1 << BITS) - 1
    want = [2 * w.array[5] + w.array[(2**64 - 1) & mask], w.array[7], w.array[3]]
    np.testing.assert_allclose(structure.scores(x, w), want)
    assert list(structure.argmax(x, np.array([0.0, 1.0, -5.0]))) == [1, 0]
    assert list(structure.argmax(x, np.array([1.0, 1.0, 0.0]))) == [0, 0]  # the first on ties


def test_bad_examples_and_labels_are_refused():
    with pytest.raises(ValueError, match="at least one candidate"):
        RankingExample.of([[[1]], []])
    with pytest.raises(ValueError, match="at least one feature"):
        RankingExample.of([[[1], []]])
    structure = Ranking(BITS)
    x = RankingExample.of([[[1], [2]]], where="f.conllu:3")
    with pytest.raises(ValueError, match="f.conllu:3: the example has no gold"):
        structure.gold(x)
    with pytest.raises(ValueError, match="candidate 2 of item 1 is not one of its 2"):
        structure.indicator(x, np.array([2]))
    with pytest.raises(ValueError, match="hash_bits"):
        Ranking(0)


def test_registry_builds_it():
    structure = make_structure({"@structures": "arborist.Ranking.v1", "hash_bits": 12})
    assert isinstance(structure, Ranking) and structure.registry_call()["hash_bits"] == 12


def separable(rng):
    # Item: candidates whose first feature says right (1000) or wrong (2000), plus noise;
    # the right one sits at a random position.
    data = []
    for _ in range(40):
        k = int(rng.integers(2, 5))
        right = int(rng.integers(k))
        items = [[[1000 if c == right else 2000, int(rng.integers(3000, 3050))] for c in range(k)]]
        data.append(RankingExample.of(items, [right]))
    return data


@pytest.mark.parametrize("trainer", [Perceptron(seed=0), SWVP(seed=0), EG("crf", C=1.0, seed=0),
                                     EG("m3n", C=1.0, seed=0)], ids=["csp", "swvp", "eg-crf", "eg-m3n"])
def test_every_trainer_learns_a_separable_ranking(trainer):
    check_trainer_fits(trainer, Ranking(BITS), separable(np.random.default_rng(2)), BITS)


def test_perceptron_update_by_hand():
    # From w = 0 the first candidate wins the tie; the gold is the second: its feature
    # gains 1 and the first candidate's two lose 1. A second epoch predicts right: no update.
    structure = Ranking(BITS)
    x = RankingExample.of([[[11, 12], [13]]], [1])
    trainer = Perceptron(averaged=False, shuffle=False, seed=0)
    trainer.begin(structure, [x], BITS)
    for _ in range(2):
        trainer.epoch(structure, [x])
        got = trainer.prediction_weights().array
        assert (got[11], got[12], got[13]) == (-1.0, -1.0, 1.0)
        assert np.count_nonzero(got) == 3
