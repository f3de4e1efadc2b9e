"""EG on the CRF and M3N duals against alpha-space computations over every tree.

The dataset is small enough to enumerate every projective tree of every
sentence, so the dual variables alpha_i can be held explicitly: the EG step of
Figure 2, w(alpha), Q(alpha) and the primal are computed by brute force and
compared with the theta-space trainer, which never sees a label set.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp, softmax, xlogy

from arborist.learn.eg import EG
from arborist.weights import Weights
from arborist.parser.tree import DependencyTree

from test_tree import is_projective, projective_trees, sentence, spanning_trees

BITS = 10


def make_dataset(projective=True):
    """Four small sentences; the non-projective dataset's 4-word gold tree crosses arcs."""
    structure = DependencyTree(hash_bits=BITS, projective=projective)
    trees = projective_trees if projective else spanning_trees
    examples = []
    for n, gold_index in ((2, 1), (3, 4), (4, 17), (3, 0)):
        x = sentence(n)
        x.heads = trees(n, True)[gold_index].copy()
        examples.append(x)
    assert projective or not is_projective(tuple(examples[2].heads))
    return structure, examples


class Brute:
    """Explicit alpha_i over all trees of each example."""

    def __init__(self, structure, examples, C, objective):
        self.C, self.objective = C, objective
        self.labels, self.phi, self.gold, self.cost, self.ind = [], [], [], [], []
        trees = projective_trees if structure.projective else spanning_trees
        for x in examples:
            labels = trees(x.n, True)
            rows = []
            for y in labels:
                probe = Weights(BITS)
                structure.add_features(x, structure.indicator(x, y), probe, 1.0)
                rows.append(probe.array.copy())
            self.labels.append(labels)
            self.phi.append(np.array(rows))
            self.gold.append(next(k for k, y in enumerate(labels) if np.array_equal(y, x.heads)))
            self.cost.append(np.array([float((y[1:] != x.heads[1:]).sum()) for y in labels]))
            self.ind.append(np.array([structure.indicator(x, y).ravel() for y in labels]))

    def alpha_from_theta(self, thetas):
        return [softmax(ind @ t.ravel()) for ind, t in zip(self.ind, thetas)]

    def w(self, alphas):
        return sum(phi[g] - a @ phi for phi, g, a in zip(self.phi, self.gold, alphas))

    def Q(self, alphas):
        w = self.w(alphas)
        if self.objective == "crf":
            first = sum(float(xlogy(a, a).sum()) for a in alphas)
        else:
            first = -sum(float(a @ e) for a, e in zip(alphas, self.cost))
        return first + float(w @ w) / (2 * self.C)

    def gradient(self, alphas, i):
        w = self.w(alphas)
        psi_dot_w = (self.phi[i][self.gold[i]] - self.phi[i]) @ w / self.C
        if self.objective == "crf":
            return 1.0 + np.log(alphas[i]) + psi_dot_w
        return -self.cost[i] + psi_dot_w

    def eg_step(self, alphas, i, eta):
        """Figure 2: alpha_i' proportional to alpha_i exp(-eta * dQ/dalpha_i)."""
        out = list(alphas)
        new = alphas[i] * np.exp(-eta * self.gradient(alphas, i))
        out[i] = new / new.sum()
        return out

    def primal(self, w):
        v = w / self.C
        total = 0.0
        for phi, g, e in zip(self.phi, self.gold, self.cost):
            s = phi @ v
            if self.objective == "crf":
                total += logsumexp(s) - s[g]
            else:
                total += float(np.max(e + s)) - s[g]
        return total + self.C / 2 * float(v @ v)


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_theta_step_equals_alpha_step(objective):
    structure, examples = make_dataset()
    C, eta = 2.0, 0.3
    eg = EG(objective, C=C, schedule="cyclic", eta=eta)
    eg.begin(structure, examples, BITS)
    brute = Brute(structure, examples, C, objective)
    alphas = brute.alpha_from_theta(eg.theta)
    for a, labels in zip(alphas, brute.labels):  # theta = 0 is the uniform distribution
        np.testing.assert_allclose(a, 1.0 / len(labels))
    np.testing.assert_allclose(eg.weights.array, brute.w(alphas), atol=1e-9)
    accepted_steps = 0
    for i in (0, 2, 0, 1, 3, 2, 1, 0):
        expected = brute.eg_step(alphas, i, eta)
        expected_dq = brute.Q(expected) - brute.Q(alphas)
        accepted, dq = eg.visit(structure, examples[i], i, adaptive=False)
        assert abs(dq - expected_dq) < 1e-9
        if accepted:
            accepted_steps += 1
            alphas = expected
        else:  # a step that would increase Q is not taken
            assert expected_dq > 0
        for got, want in zip(brute.alpha_from_theta(eg.theta), alphas):
            np.testing.assert_allclose(got, want, atol=1e-9)
        np.testing.assert_allclose(eg.weights.array, brute.w(alphas), atol=1e-9)
        assert abs(eg.dual_value() - brute.Q(alphas)) < 1e-9
    assert accepted_steps >= 4


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_dual_change_is_exact_and_never_positive(objective):
    structure, examples = make_dataset()
    C = 0.5
    eg = EG(objective, C=C, eta=4.0, seed=3)  # a large rate, so the halving rule has work to do
    eg.begin(structure, examples, BITS)
    brute = Brute(structure, examples, C, objective)
    q = brute.Q(brute.alpha_from_theta(eg.theta))
    for _ in range(60):
        i = int(eg.rng.integers(len(examples)))
        accepted, dq = eg.visit(structure, examples[i], i)
        q_new = brute.Q(brute.alpha_from_theta(eg.theta))
        if accepted:
            assert abs((q_new - q) - dq) < 1e-9, (q_new - q, dq)  # the one-example formula of §7
            assert dq <= 0.0
        else:
            assert abs(q_new - q) < 1e-12
        q = q_new
    assert eg.halvings > 0


def run_to_convergence(eg, structure, examples, tolerance=1e-6, max_epochs=20000):
    for _ in range(max_epochs):
        eg.epoch(structure, examples)
        if eg.epochs_done % 10 == 0:
            m = eg.objectives(structure, examples)
            if m["relative_gap"] < tolerance:
                return m
    raise AssertionError(f"gap {m['relative_gap']} after {max_epochs} epochs")


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("schedule", ["random", "batch"])
@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_converges_to_brute_force_optimum(objective, schedule, projective):
    structure, examples = make_dataset(projective)
    # At C = 1 the projective M3N optimum takes EG tens of thousands of epochs (the
    # non-projective one thousands at C = 6).
    C = 3.0 if projective else 12.0
    eg = EG(objective, C=C, schedule=schedule, eta=0.5, seed=1, objectives_every=10**9)
    eg.accepted_changes = []
    eg.begin(structure, examples, BITS)
    metrics = run_to_convergence(eg, structure, examples)
    assert max(eg.accepted_changes) <= 0.0
    brute = Brute(structure, examples, C, objective)
    alphas = brute.alpha_from_theta(eg.theta)
    w = brute.w(alphas)
    np.testing.assert_allclose(eg.weights.array, w, atol=1e-8)
    assert abs(metrics["primal"] - brute.primal(w)) < 1e-8 * abs(brute.primal(w))
    assert abs(metrics["dual"] + brute.Q(alphas)) < 1e-8 * abs(brute.primal(w))
    assert 0 <= metrics["duality_gap"] < 1e-6 * metrics["primal"]


def test_batch_step_updates_every_example_from_the_same_alpha():
    structure, examples = make_dataset()
    C, eta = 1.0, 0.5
    eg = EG("crf", C=C, schedule="batch", eta=eta, eta_growth=1.0)
    eg.begin(structure, examples, BITS)
    brute = Brute(structure, examples, C, "crf")
    alphas = brute.alpha_from_theta(eg.theta)
    eg.epoch(structure, examples)
    used = eg.batch_eta  # eta_growth = 1: the rate that was accepted, after any halvings
    tries = 1 + round(np.log2(eta / used))
    assert eg.visits == tries * len(examples) and eg.halvings == tries - 1
    q_before = brute.Q(alphas)
    for k in range(tries - 1):  # every rejected rate would have increased Q
        assert brute.Q([brute.eg_step(alphas, i, eta / 2**k)[i] for i in range(len(examples))]) > q_before
    expected = [brute.eg_step(alphas, i, used)[i] for i in range(len(examples))]
    for got, want in zip(brute.alpha_from_theta(eg.theta), expected):
        np.testing.assert_allclose(got, want, atol=1e-9)
    np.testing.assert_allclose(eg.weights.array, brute.w(expected), atol=1e-9)
    assert brute.Q(expected) < q_before


def test_eta_search_picks_the_largest_rate_improving_95_percent():
    structure, examples = make_dataset()
    examples = examples * 10
    eg = EG("crf", C=0.05, eta_search_fraction=0.5, seed=0)
    eg.begin(structure, examples, BITS)
    chosen = eg.eta_ini
    assert eg.eta_search_result["eta"] == chosen
    seed = np.random.default_rng(0)
    subset_size = eg.eta_search_result["subset"]
    assert subset_size == 20
    # Re-run the probe at the chosen rate and at twice it, on the same subset and seed.
    rng = np.random.default_rng(0)
    subset = [examples[i] for i in sorted(rng.choice(len(examples), size=subset_size, replace=False))]
    probe_seed = int(rng.integers(2**31))
    assert eg.improvement_share(structure, subset, BITS, chosen, probe_seed) >= 0.95
    if chosen < 4.0:
        assert eg.improvement_share(structure, subset, BITS, 2 * chosen, probe_seed) < 0.95
    del seed


def test_annealing_records_rows_and_warm_starts():
    structure, examples = make_dataset()
    eg = EG("crf", C=10.0, eta=0.5, anneal=True, anneal_factor=0.5, anneal_tolerance=1e-3, C_min=2.0)
    eg.begin(structure, examples, BITS)
    stopped = False
    for _ in range(2000):
        metrics = eg.epoch(structure, examples)
        metrics["dev_uas"] = 50.0
        theta_before = [t.copy() for t in eg.theta]
        if eg.finish_epoch(metrics):
            stopped = True
            break
        if eg.annealing_table and eg.annealing_table[-1]["total_iterations"] == metrics["effective_iterations"]:
            for a, b in zip(theta_before, eg.theta):  # warm start: C changed, theta kept
                np.testing.assert_array_equal(a, b)
    assert stopped
    assert [row["C"] for row in eg.annealing_table] == [10.0, 5.0, 2.5]
    assert all(row["relative_gap"] <= 1e-3 for row in eg.annealing_table)
    totals = np.cumsum([row["iterations"] for row in eg.annealing_table])
    np.testing.assert_allclose(totals, [row["total_iterations"] for row in eg.annealing_table])


@pytest.mark.parametrize("schedule", ["random", "batch"])
def test_checkpoint_resume_gives_identical_state(schedule):
    structure, examples = make_dataset()
    a = EG("m3n", C=1.0, schedule=schedule, seed=5)
    a.begin(structure, examples, BITS)
    for _ in range(3):
        a.epoch(structure, examples)
    arrays, meta = a.state()
    b = EG("m3n", C=1.0, schedule=schedule, seed=99)
    b.restore(structure, examples, {k: v.copy() for k, v in arrays.items()}, meta)
    for _ in range(4):
        a.epoch(structure, examples)
        b.epoch(structure, examples)
    np.testing.assert_array_equal(a.weights.array, b.weights.array)
    for ta, tb in zip(a.theta, b.theta):
        np.testing.assert_array_equal(ta, tb)
    with pytest.raises(ValueError, match="not eg/crf"):
        EG("crf").restore(structure, examples, arrays, meta)
    with pytest.raises(ValueError, match="examples"):
        EG("m3n").restore(structure, examples[:2], arrays, meta)


def test_rejects_bad_settings():
    with pytest.raises(ValueError, match="objective"):
        EG("svm")
    with pytest.raises(ValueError, match="schedule"):
        EG(schedule="sometimes")
    with pytest.raises(ValueError, match="C must be positive"):
        EG(C=0)
