"""The Multiclass structure through the shared protocol suite, and trainers on it."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from arborist.learn.eg import EG
from arborist.learn.perceptron import SWVP, Perceptron
from arborist.weights import Weights
from arborist.multiclass import Multiclass, MulticlassExample
from arborist.structure import differing_positions
from arborist.registry import make_structure

from protocol import check_gradient, check_protocol, check_trainer_fits

BITS = 12
CLASSES = ["nsubj", "obj", "nmod:poss", "acl:relcl"]


def example(rng, label=-1, n_features=6):
    return MulticlassExample(rng.integers(0, 2**63, size=n_features, dtype=np.uint64), label)


def labels(structure):
    return [np.array([k], dtype=np.int32) for k in range(structure.n_classes)]


def hamming(gold, y):
    return int(gold[0] != y[0])


@pytest.mark.parametrize("k", [2, 4, 7])
def test_protocol_against_brute_force(k):
    rng = np.random.default_rng(k)
    structure = Multiclass([f"c{i}" for i in range(k)], hash_bits=BITS)
    for _ in range(3):
        x = example(rng)
        scores = rng.normal(size=k) * 2
        gold = labels(structure)[int(rng.integers(k))]
        check_protocol(structure, x, scores, labels(structure), gold, hamming, rng, BITS)
        check_gradient(structure, x, scores)


def test_scores_are_the_sum_of_each_feature_class_slot():
    rng = np.random.default_rng(1)
    structure = Multiclass(CLASSES, hash_bits=BITS)
    w = Weights(BITS, False, rng.normal(size=1 << BITS))
    x = MulticlassExample(np.array([5, 2**64 - 1, 5], dtype=np.uint64))
    mask = (1 << BITS) - 1
    want = [w.array[(5 + k) & mask] * 2 + w.array[(2**64 - 1 + k) % 2**64 & mask] for k in range(4)]
    np.testing.assert_allclose(structure.scores(x, w), want)


def test_mix_and_differing_positions():
    structure = Multiclass(CLASSES)
    gold, pred = np.array([1], dtype=np.int32), np.array([3], dtype=np.int32)
    positions = differing_positions(gold, pred)
    assert list(positions) == [0]
    assert structure.mix(gold, pred, positions)[0] == 3
    assert structure.mix(gold, pred, [])[0] == 1
    assert structure.hits(None, gold, pred) == (0, 1)


def test_config_round_trip_and_bad_classes():
    structure = Multiclass(CLASSES, hash_bits=14)
    again = make_structure(structure.registry_call())
    assert again.classes == CLASSES and again.hash_bits == 14
    with pytest.raises(ValueError, match="two distinct"):
        Multiclass(["a", "a"])
    with pytest.raises(ValueError, match="shape"):
        structure.add_features(example(np.random.default_rng(0)), np.zeros(3), Weights(14), 1.0)


def separable_data(rng, n=60):
    """Each class has its own indicative feature plus shared noise features."""
    data = []
    for i in range(n):
        label = i % len(CLASSES)
        noise = rng.integers(1000, 1100, size=3, dtype=np.uint64)
        data.append(MulticlassExample(np.concatenate([[np.uint64(label * 64)], noise]).astype(np.uint64), label))
    return data


@pytest.mark.parametrize("trainer", [Perceptron(seed=0), SWVP(seed=0), EG("crf", C=1.0, seed=0),
                                     EG("m3n", C=1.0, seed=0)], ids=["csp", "swvp", "eg-crf", "eg-m3n"])
def test_every_trainer_learns_separable_classes(trainer):
    check_trainer_fits(trainer, Multiclass(CLASSES, hash_bits=BITS), separable_data(np.random.default_rng(2)), BITS)


def test_eg_crf_reaches_the_brute_force_primal_optimum():
    # Multiclass logistic regression: the CRF primal sum_i (log Z_i - s_i(gold)) + C/2 |v|^2
    # with scores s = phi . v and v = w / C, minimized by scipy on the distinct slots.
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    structure = Multiclass(CLASSES[:3], hash_bits=8)
    train = [MulticlassExample(rng.integers(0, 12, size=3, dtype=np.uint64), int(rng.integers(3))) for _ in range(12)]
    C = 2.0
    eg = EG("crf", C=C, seed=1, objectives_every=10**9)
    eg.begin(structure, train, 8)
    for _ in range(3000):
        eg.epoch(structure, train)
        if eg.epochs_done % 100 == 0 and eg.objectives(structure, train)["relative_gap"] < 1e-8:
            break
    slots = [structure._slots(x) for x in train]

    def primal(v):
        total = 0.0
        for x, s in zip(train, slots):
            scores = v[s].sum(axis=0)
            total += logsumexp(scores) - scores[x.label]
        return total + C / 2 * v @ v

    best = minimize(primal, np.zeros(1 << 8), method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 5000})
    v_eg = eg.weights.array / C
    assert abs(primal(v_eg) - best.fun) < 1e-6 * abs(best.fun)
    np.testing.assert_allclose(v_eg, best.x, atol=1e-4)


def test_an_example_without_a_gold_class_is_refused():
    structure = Multiclass(CLASSES)
    with pytest.raises(ValueError, match="no gold label"):
        structure.gold(MulticlassExample(np.array([5], dtype=np.uint64)))
