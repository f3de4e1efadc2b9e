"""The CRF primal, L-BFGS and SGD against brute force and hand-computed steps."""
from __future__ import annotations

import numpy as np

from arborist.learn.baselines import SGD, CRFPrimal, lbfgs
from arborist.learn.eg import EG
from arborist.weights import Weights

from test_eg import BITS, Brute, make_dataset


def test_primal_value_and_gradient_against_brute_force():
    structure, examples = make_dataset()
    C = 2.0
    primal = CRFPrimal(structure, examples, C, BITS)
    brute = Brute(structure, examples, C, "crf")
    rng = np.random.default_rng(0)
    w = rng.normal(scale=0.3, size=1 << BITS)
    value, grad = primal.value_and_gradient(w)
    assert np.isclose(value, brute.primal(C * w), rtol=1e-12)  # Brute.primal takes w(alpha) = C w
    assert np.isclose(primal.value(w), value, rtol=1e-12)
    assert primal.evaluations == 1
    for k in rng.choice(1 << BITS, size=12, replace=False):
        e = np.zeros_like(w)
        e[k] = 1e-6
        fd = (primal.value(w + e) - primal.value(w - e)) / 2e-6
        assert abs(fd - grad[k]) < 1e-5 * max(1.0, abs(grad[k])), (k, fd, grad[k])


def test_lbfgs_reaches_the_eg_optimum_and_counts_evaluations():
    structure, examples = make_dataset()
    C = 3.0
    curve = []
    w = lbfgs(structure, examples, C, BITS, max_evaluations=200, callback=curve.append)
    eg = EG("crf", C=C, eta=0.5, seed=0)
    eg.begin(structure, examples, BITS)
    for _ in range(400):
        eg.epoch(structure, examples)
    best = eg.objectives(structure, examples)
    assert best["relative_gap"] < 1e-8
    assert abs(CRFPrimal(structure, examples, C, BITS).value(w) - best["primal"]) < 1e-6 * best["primal"]
    np.testing.assert_allclose(w, eg.prediction_weights().array, atol=1e-4)
    its = [c["effective_iterations"] for c in curve]
    assert its == sorted(its) and its[-1] <= 200 and len(its) >= 5
    primals = [c["primal"] for c in curve]
    assert all(b <= a + 1e-12 for a, b in zip(primals, primals[1:]))  # L-BFGS-B descends


def test_sgd_step_matches_hand_computation():
    structure, examples = make_dataset()
    C, eta0, n = 2.0, 0.1, len(examples)
    sgd = SGD(C=C, eta0=eta0, seed=4)
    sgd.begin(structure, examples, BITS)
    sgd.v.array[:] = np.random.default_rng(1).normal(size=1 << BITS)
    order = np.random.default_rng(4).integers(n, size=n)  # the order SGD will draw
    w = sgd.v.array.copy()
    primal = CRFPrimal(structure, examples, C, BITS)
    for k, i in enumerate(order):
        eta = eta0 / (1 + k / n)
        g = Weights(BITS)
        primal.loss(examples[i], Weights(BITS, False, w.copy()), gradient=g)
        w = w - eta * (g.array + C / n * w)
    metrics = sgd.epoch(structure, examples)
    np.testing.assert_allclose(sgd.prediction_weights().array, w, atol=1e-12)
    assert metrics["effective_iterations"] == 1.0
    assert np.isclose(metrics["primal"], primal.value(w))
