"""Laplace MaxEnDNet (seeds/003): the scaled EG step, the variance update of eq. (11),
Gaussian MaxEnDNet = EG-M3N, the dense chain and the synthetic data of §7.1.1."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from arborist.learn.baselines import CRFPrimal, penalized_lbfgs
from arborist.learn.eg import EG
from arborist.learn.medn import MaxEnDNet, sparsity, variance_update
from arborist.weights import Weights
from arborist.experiments.synthetic_crf import dataset, gibbs_labels, random_crf, sequences
from arborist.tagger.dense import DenseChain, DenseSequence, batch_nll
from arborist.tagger.viterbi import chain_marginals

from protocol import check_protocol


def small_problem(n_examples=6, length=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    chain = DenseChain(d, 2)
    truth = rng.normal(size=chain.n_weights)
    examples = []
    for _ in range(n_examples):
        x = rng.normal(size=(length, d))
        w = Weights(chain.hash_bits, False, np.pad(truth, (0, (1 << chain.hash_bits) - chain.n_weights)))
        y = chain.argmax(None, chain.scores(DenseSequence(x, np.zeros(length, np.int32)), w))
        flip = rng.integers(length)  # some noise, so that the margin constraints bind
        y[flip] = 1 - y[flip]
        examples.append(DenseSequence(x, y.astype(np.int32)))
    return chain, examples


def all_labels(length):
    return [np.array(y, dtype=np.int32) for y in itertools.product((0, 1), repeat=length)]


# -- eq. (11) -------------------------------------------------------------------------
def test_variance_update_matches_eq_11_by_hand():
    # <w^2> = Sigma + mu^2: (1 + 4) / 4, (0.5 + 0) / 4, (0.25 + 0.0625) / 4; then sqrt.
    got = variance_update(np.array([1.0, 0.5, 0.25]), np.array([2.0, 0.0, -0.25]), 4.0)
    np.testing.assert_allclose(got, [np.sqrt(1.25), np.sqrt(0.125), np.sqrt(0.078125)], rtol=1e-15)
    assert np.isclose(got[0], 1.118033988749895) and np.isclose(got[1], 0.3535533905932738)


def test_trainer_updates_sigma_by_eq_11_between_outer_iterations():
    chain, examples = small_problem()
    medn = MaxEnDNet(lam=3.0, C=2.0, inner_epochs=2, eta=0.5, seed=1)
    medn.begin(chain, examples, chain.hash_bits)
    for _ in range(2):
        medn.epoch(chain, examples)
    assert np.all(medn.scale == 1.0)  # outer iteration 1 is EG-M3N
    mean = medn.prediction_weights().array.copy()
    medn.epoch(chain, examples)  # starts outer iteration 2 with Sigma = sqrt((1 + mean^2) / 3)
    np.testing.assert_allclose(medn.scale, np.sqrt((1.0 + mean ** 2) / 3.0), rtol=1e-15)
    assert medn.outer_iteration == 2


# -- the scaled EG step ---------------------------------------------------------------
def test_scaled_weights_hold_S_u_and_sum_the_change_of_u_S_u():
    scale = np.array([0.5, 2.0, 1.0, 0.25])
    w = Weights(2, False, None, scale)
    u = np.zeros(4)
    total = 0.0
    for idx, val in ((0, 1.5), (1, -2.0), (0, 0.5), (3, 4.0), (1, 1.0)):
        before = u @ (scale * u)
        u[idx] += val
        total += u @ (scale * u) - before
        w.add_sparse([idx], [val])
    np.testing.assert_allclose(w.array, scale * u, rtol=1e-15)
    assert np.isclose(w.sq_norm_change, total, rtol=1e-14)
    assert np.isclose(w.sq_norm(), u @ (scale * u), rtol=1e-14)
    with pytest.raises(ValueError, match="positive"):
        Weights(2, False, None, np.array([1.0, 0.0, 1.0, 1.0]))


def test_one_scaled_eg_step_by_hand():
    """Figure 2's M3N step with the metric S (eq. 9), computed over explicit labels."""
    chain, examples = small_problem(n_examples=1, length=3)
    x = examples[0]
    bits = chain.hash_bits
    rng = np.random.default_rng(5)
    scale = np.exp(rng.normal(size=1 << bits))
    C, eta = 1.5, 0.7
    eg = EG("m3n", C, "cyclic", eta=eta, eta_growth=1.0)
    eg.scale = scale
    eg.begin(chain, [x], bits)
    eg.accepted_changes = []
    eg.visit(chain, x, 0)

    labels = all_labels(3)
    phi = np.array([feature_vector(chain, x, y, bits) for y in labels])
    gold = next(k for k, y in enumerate(labels) if np.array_equal(y, x.tags))
    cost = np.array([float((y != x.tags).sum()) for y in labels])
    # theta = 0: alpha uniform, u = phi(gold) - mean phi; s_r = (S u) . phi_r / C summed over a
    # label's parts is (S u) . phi(y) / C; theta' = eta (e + s); alpha' = softmax over labels.
    u0 = phi[gold] - phi.mean(axis=0)
    label_theta = eta * (cost + phi @ (scale * u0) / C)
    alpha = np.exp(label_theta - logsumexp(label_theta))
    u1 = phi[gold] - alpha @ phi
    q = lambda a, u: -(a @ cost) + u @ (scale * u) / (2 * C)
    np.testing.assert_allclose(eg.weights.array, scale * u1, atol=1e-12)
    assert np.isclose(eg.accepted_changes[0], q(alpha, u1) - q(np.full(8, 1 / 8), u0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eg.prediction_weights().array, scale * u1 / C, atol=1e-12)


def feature_vector(chain, x, y, bits):
    w = Weights(bits)
    chain.add_features(x, chain.indicator(x, y), w, 1.0)
    return w.array.copy()


def test_scaled_eg_equals_eg_on_rescaled_features():
    """The metric S is a reweighted inner product: EG with S on phi equals plain EG on
    S^1/2 phi (here S depends only on the input dimension, so S^1/2 phi rescales inputs)."""
    chain, examples = small_problem(n_examples=5, length=4, d=3)
    bits = chain.hash_bits
    per_input = np.array([0.3, 2.0, 1.7])
    scale = np.ones(1 << bits)
    state, _ = chain.split(scale)
    state[:] = per_input[:, None]
    scaled = EG("m3n", 2.0, "random", eta=0.5, seed=4)
    scaled.scale = scale
    scaled.begin(chain, examples, bits)
    plain = EG("m3n", 2.0, "random", eta=0.5, seed=4)
    rescaled = [DenseSequence(x.inputs * np.sqrt(per_input), x.tags) for x in examples]
    plain.begin(chain, rescaled, bits)
    for _ in range(5):
        a = scaled.epoch(chain, examples)
        b = plain.epoch(chain, rescaled)
        for key in ("primal", "dual"):
            assert np.isclose(a[key], b[key], rtol=1e-9), key
    root = np.sqrt(scale)
    np.testing.assert_allclose(scaled.prediction_weights().array, root * plain.prediction_weights().array, atol=1e-10)


def test_scaled_eg_objectives_obey_weak_duality_of_eq_9_and_10():
    """The reported primal is (10) (hinge + C/2 w.S^-1 w) and the dual is (9): the primal
    never falls below the dual, and EG narrows the gap."""
    chain, examples = small_problem()
    eg = EG("m3n", 1.0, "random", seed=2)
    eg.scale = np.exp(np.random.default_rng(3).normal(size=1 << chain.hash_bits))
    eg.begin(chain, examples, chain.hash_bits)
    gaps = []
    for _ in range(60):
        metrics = eg.epoch(chain, examples)
        assert metrics["primal"] >= metrics["dual"] - 1e-12 * abs(metrics["primal"])
        gaps.append(metrics["relative_gap"])
    assert gaps[-1] < 0.5 * gaps[0]


# -- Gaussian MaxEnDNet = M3N (Theorem 3) -----------------------------------------------
@pytest.mark.parametrize("schedule", ["random", "batch"])
def test_gaussian_maxendnet_equals_eg_m3n(schedule):
    chain, examples = small_problem(n_examples=8, length=4)
    bits = chain.hash_bits
    medn = MaxEnDNet(prior="gaussian", C=3.0, inner_epochs=2, schedule=schedule, eta=None, seed=7)
    eg = EG("m3n", 3.0, schedule, eta=None, seed=7)
    medn.begin(chain, examples, bits)
    eg.begin(chain, examples, bits)
    assert medn.scale is not None and eg.scale is None  # the scaled code path against the plain one
    for _ in range(6):
        a, b = medn.epoch(chain, examples), eg.epoch(chain, examples)
        assert medn.finish_epoch(a) is False
        assert (a["primal"], a["dual"]) == (b["primal"], b["dual"])
    assert np.array_equal(medn.prediction_weights().array, eg.prediction_weights().array)
    for t1, t2 in zip(medn.theta, eg.theta):
        assert np.array_equal(t1, t2)
    assert [row["outer_iteration"] for row in medn.outer_table] == [1, 2, 3]


def test_laplace_shrinks_irrelevant_weights_more_than_m3n():
    """On §7.1.1 data with 10 relevant inputs of 100, LapMEDN's posterior mean puts less
    weight on the 90 irrelevant inputs, relative to the relevant ones, than M3N."""
    chain = DenseChain(100, 2)
    truth, inputs, labels = dataset(10, 0, samples=60, sweeps=50)
    train = sequences(inputs, labels)

    def ratio(trainer):
        trainer.begin(chain, train, chain.hash_bits)
        for _ in range(12):
            trainer.finish_epoch(trainer.epoch(chain, train))
        state, _ = chain.split(trainer.prediction_weights().array)
        return np.abs(state[10:]).mean() / np.abs(state[:10]).mean()

    m3n = ratio(MaxEnDNet(prior="gaussian", C=1.0, inner_epochs=4, eta=0.5, objectives_every=100))
    lap = ratio(MaxEnDNet(prior="laplace", lam=30.0, C=1.0, inner_epochs=4, eta=0.5, objectives_every=100))
    assert lap < 0.7 * m3n, (lap, m3n)


def test_initial_variance_makes_the_first_outer_iteration_m3n_at_C_over_it():
    chain, examples = small_problem()
    medn = MaxEnDNet(lam=2.0, C=1.0, initial_variance=0.25, inner_epochs=3, eta=0.5, seed=1)
    eg = EG("m3n", 4.0, eta=0.5, seed=1)
    medn.begin(chain, examples, chain.hash_bits)
    eg.begin(chain, examples, chain.hash_bits)
    for _ in range(3):
        a, b = medn.epoch(chain, examples), eg.epoch(chain, examples)
        assert np.isclose(a["primal"], b["primal"], rtol=1e-12) and np.isclose(a["dual"], b["dual"], rtol=1e-12)
    np.testing.assert_allclose(medn.prediction_weights().array, eg.prediction_weights().array, rtol=1e-12, atol=1e-15)
    mean = medn.prediction_weights().array.copy()
    medn.epoch(chain, examples)
    np.testing.assert_allclose(medn.scale, np.sqrt((0.25 + mean ** 2) / 2.0), rtol=1e-15)


def test_resumed_maxendnet_continues_exactly():
    chain, examples = small_problem()
    straight = MaxEnDNet(lam=2.0, C=1.0, inner_epochs=2, seed=3)
    straight.begin(chain, examples, chain.hash_bits)
    for _ in range(5):
        straight.finish_epoch(straight.epoch(chain, examples))
    first = MaxEnDNet(lam=2.0, C=1.0, inner_epochs=2, seed=3)
    first.begin(chain, examples, chain.hash_bits)
    for _ in range(2):
        first.finish_epoch(first.epoch(chain, examples))
    arrays, meta = first.state()
    resumed = MaxEnDNet(lam=2.0, C=1.0, inner_epochs=2, seed=3)
    resumed.restore(chain, examples, arrays, meta)
    for _ in range(3):
        resumed.finish_epoch(resumed.epoch(chain, examples))
    assert np.array_equal(straight.scale, resumed.scale)
    assert np.array_equal(straight.prediction_weights().array, resumed.prediction_weights().array)
    assert straight.outer_table == resumed.outer_table
    with pytest.raises(ValueError, match="prior"):
        MaxEnDNet(lam=5.0).restore(chain, examples, arrays, meta)


def test_sparsity_counts():
    got = sparsity(np.array([0.0, 1.0, -2.0, 1e-5, 0.0, 3e-4]), tolerance=1e-4)
    assert got == {"nonzero_weights": 3, "used_weights": 4, "nonzero_share": 0.5, "nonzero_share_of_used": 0.75}


# -- the dense chain and the CRF baselines ------------------------------------------------
def test_dense_chain_passes_the_protocol_suite():
    chain, examples = small_problem(n_examples=1, length=3)
    x = examples[0]
    rng = np.random.default_rng(0)
    scores = chain.scores(x, Weights(chain.hash_bits, False, rng.normal(size=1 << chain.hash_bits)))
    check_protocol(chain, x, scores, all_labels(3), x.tags, lambda g, y: float((g != y).sum()), rng, chain.hash_bits)


def test_batch_nll_equals_the_generic_crf_primal():
    chain, examples = small_problem(n_examples=5, length=4)
    w = np.random.default_rng(1).normal(size=1 << chain.hash_bits)
    w[chain.n_weights:] = 0.0
    value, grad = batch_nll(chain, np.stack([x.inputs for x in examples]), np.stack([x.tags for x in examples]), w)
    generic_value, generic_grad = CRFPrimal(chain, examples, 1e-300, chain.hash_bits).value_and_gradient(w)
    assert np.isclose(value, generic_value, rtol=1e-12)
    np.testing.assert_allclose(grad, generic_grad[: chain.n_weights], atol=1e-10)


def test_l1_crf_meets_its_optimality_conditions():
    chain, examples = small_problem(n_examples=12, length=4, d=6)
    inputs, tags = np.stack([x.inputs for x in examples]), np.stack([x.tags for x in examples])
    loss = lambda w: batch_nll(chain, inputs, tags, w)
    C = 2.0
    w = penalized_lbfgs(loss, chain.n_weights, C, "l1", tolerance=1e-13)
    grad = loss(w)[1]
    zero = w == 0.0
    assert zero.any() and not zero.all()
    assert np.all(np.abs(grad[zero]) <= C + 1e-4)  # subgradient condition at 0
    np.testing.assert_allclose(grad[~zero], -C * np.sign(w[~zero]), atol=1e-4)
    w2 = penalized_lbfgs(loss, chain.n_weights, C, "l2", tolerance=1e-13)
    np.testing.assert_allclose(loss(w2)[1] + C * w2, 0.0, atol=1e-4)


def test_gibbs_sampler_draws_from_the_crf():
    chain = DenseChain(5, 2)
    rng = np.random.default_rng(0)
    w = random_crf(3, rng, n_inputs=5)
    x = rng.normal(size=(1, 4, 5))
    labels = gibbs_labels(chain, w, np.repeat(x, 4000, axis=0), 30, rng)
    mu, _ = chain_marginals(chain.scores(DenseSequence(x[0], np.zeros(4, np.int32)),
                                         Weights(chain.hash_bits, False, np.pad(w, (0, (1 << chain.hash_bits) - w.size)))))
    exact = mu.sum(axis=1)[:, 1]  # P(y_t = 1)
    np.testing.assert_allclose(labels.mean(axis=0), exact, atol=0.03)


def test_synthetic_datasets_have_the_paper_shape_and_are_seeded():
    truth, inputs, labels = dataset(30, 2, samples=20, sweeps=5)
    assert inputs.shape == (20, 8, 100) and labels.shape == (20, 8)
    state, _ = DenseChain(100, 2).split(truth)
    assert np.count_nonzero(state.any(axis=1)) == 30 and not state[30:].any()
    again = dataset(30, 2, samples=20, sweeps=5)
    assert np.array_equal(again[1], inputs) and np.array_equal(again[2], labels)
