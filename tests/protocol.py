"""The shared Structure protocol suite: any structure runs through `check_protocol`.

A structure provides a small example x, random part scores of the right shape,
and a brute-force list of every label of x. The suite checks each protocol
operation against enumeration.
"""
from __future__ import annotations

import pickle

import numpy as np

from arborist.weights import Weights


def _flat(parts):
    if isinstance(parts, tuple):
        return np.concatenate([np.ravel(p) for p in parts])
    return np.ravel(np.asarray(parts, dtype=float))


def label_score(structure, x, scores, y) -> float:
    return float((_flat(scores) * _flat(structure.indicator(x, y))).sum())


def label_loss(structure, x, gold, y) -> float:
    return float((_flat(structure.part_cost(x, gold)) * _flat(structure.indicator(x, y))).sum())


def brute_force(structure, x, scores, labels):
    values = np.array([label_score(structure, x, scores, y) for y in labels])
    logz = np.logaddexp.reduce(values)
    probs = np.exp(values - logz)
    mu = sum(p * _flat(structure.indicator(x, y)) for p, y in zip(probs, labels))
    return values, logz, mu


def check_argmax(structure, x, scores, labels):
    values, _, _ = brute_force(structure, x, scores, labels)
    pred = structure.argmax(x, scores)
    assert any(np.array_equal(pred, y) for y in labels), "argmax returned a label outside the label set"
    assert np.isclose(label_score(structure, x, scores, pred), values.max(), atol=1e-9)


def check_marginals(structure, x, scores, labels):
    _, logz, mu = brute_force(structure, x, scores, labels)
    got_mu, got_logz = structure.marginals(x, scores)
    assert np.isclose(got_logz, logz, atol=1e-9), (got_logz, logz)
    np.testing.assert_allclose(_flat(got_mu), mu, atol=1e-9)
    # The marginals sum to the expected number of parts (the same for every label of a
    # first-order tree or a chain; a second-order tree's grandparent parts vary).
    values = np.array([label_score(structure, x, scores, y) for y in labels])
    counts = np.array([_flat(structure.indicator(x, y)).sum() for y in labels])
    assert np.isclose(_flat(got_mu).sum(), np.exp(values - logz) @ counts)


def check_gradient(structure, x, scores, eps=1e-5):
    """Marginals are the gradient of log Z: central finite differences on every part."""
    mu, _ = structure.marginals(x, scores)
    flat_mu = _flat(mu)
    base = np.array(scores, dtype=float, copy=True)
    for k in range(base.size):
        plus, minus = base.copy(), base.copy()
        plus.flat[k] += eps
        minus.flat[k] -= eps
        fd = (structure.marginals(x, plus)[1] - structure.marginals(x, minus)[1]) / (2 * eps)
        assert abs(fd - flat_mu[k]) < 1e-6, (k, fd, flat_mu[k])


def check_cost_augmented(structure, x, scores, labels, gold):
    values = [label_score(structure, x, scores, y) + label_loss(structure, x, gold, y) for y in labels]
    pred = structure.cost_augmented_argmax(x, scores, gold)
    got = label_score(structure, x, scores, pred) + label_loss(structure, x, gold, pred)
    assert np.isclose(got, max(values), atol=1e-9)


def check_part_cost(structure, x, labels, gold, hamming):
    """The part costs spread the Hamming loss: sum_r e_r [r in y] = hamming(gold, y)."""
    for y in labels:
        assert np.isclose(label_loss(structure, x, gold, y), hamming(gold, y))


def check_features(structure, x, coef, hash_bits, rng):
    """add_features and scores agree: sum_r coef_r (w . phi_r) = w . (sum_r coef_r phi_r)."""
    w = Weights(hash_bits, False, rng.normal(size=1 << hash_bits))
    delta = Weights(hash_bits, False)
    structure.add_features(x, coef, delta, 1.0)
    assert np.count_nonzero(delta.array) > 0, "add_features added nothing"
    lhs = float((_flat(coef) * _flat(structure.scores(x, w))).sum())
    rhs = float(w.array @ delta.array)
    assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9)
    # and it is linear in scale
    delta2 = Weights(hash_bits, False)
    structure.add_features(x, coef, delta2, -2.5)
    np.testing.assert_allclose(delta2.array, -2.5 * delta.array)


def check_pickle(structure, x, hash_bits, rng):
    """A pickled copy (what Ray's tasks and actors receive: jackknife folds, parameter-mixing
    shards) scores and decodes x as the structure does."""
    copy = pickle.loads(pickle.dumps(structure))
    w = Weights(hash_bits, False, rng.normal(size=1 << hash_bits))
    scores = structure.scores(x, w)
    np.testing.assert_array_equal(_flat(copy.scores(x, w)), _flat(scores))
    np.testing.assert_array_equal(np.asarray(copy.argmax(x, scores)), np.asarray(structure.argmax(x, scores)))


def check_protocol(structure, x, scores, labels, gold, hamming, rng, hash_bits):
    check_pickle(structure, x, hash_bits, rng)
    check_argmax(structure, x, scores, labels)
    check_marginals(structure, x, scores, labels)
    check_cost_augmented(structure, x, scores, labels, gold)
    check_part_cost(structure, x, labels, gold, hamming)
    other = labels[int(rng.integers(len(labels)))]
    check_features(structure, x, structure.indicator(x, gold) - structure.indicator(x, other) + 0.5 * structure.indicator(x, other), hash_bits, rng)


def check_trainer_fits(trainer, structure, train, hash_bits, epochs=30):
    """After `epochs` epochs, the trainer's prediction weights get every training example right
    (for data a linear model separates)."""
    trainer.begin(structure, train, hash_bits)
    for _ in range(epochs):
        trainer.epoch(structure, train)
    w = trainer.prediction_weights()
    correct = sum(structure.hits(x, structure.gold(x), structure.argmax(x, structure.scores(x, w)))[0] for x in train)
    assert correct == len(train)
