"""EG's warm start (issue 26): theta_i from a trained model's scores, and the gap as a
stopping rule, against the alpha-space brute force of test_eg."""
from __future__ import annotations

import numpy as np
import pytest

from arborist.learn.eg import EG
from arborist.weights import Weights

from test_eg import BITS, Brute, make_dataset, run_to_convergence


def trained_weights(structure, examples, C, objective="crf", tolerance=1e-9):
    """A converged EG solution's prediction weights w* = w(alpha*) / C."""
    eg = EG(objective, C=C, eta=0.5, seed=1, objectives_every=10**9)
    eg.begin(structure, examples, BITS)
    run_to_convergence(eg, structure, examples, tolerance=tolerance)
    return eg.prediction_weights().array.copy()


def some_weights(structure, examples, seed=0):
    rng = np.random.default_rng(seed)
    w = Weights(BITS)
    for x in examples:  # a perceptron-like vector: gold features minus noise
        structure.add_features(x, structure.indicator(x, structure.gold(x)), w, 1.0)
    return w.array + rng.normal(0.0, 0.3, w.array.size)



def q_at_start(structure, examples, brute, objective, C, w0, a, b):
    """The brute-force Q at the warm start theta_i = a e_i + b w0 . phi (both given)."""
    probe = EG(objective, C=C, eta=0.5, warm_start_scale=b, warm_start_margin=a)
    probe.warm_weights = w0
    probe.begin(structure, examples, BITS)
    return brute.Q(brute.alpha_from_theta(probe.theta))

@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_warm_theta_w_and_objectives_follow_the_formulas(objective):
    structure, examples = make_dataset()
    C, a, b = 2.0, 1.5, 0.7
    w0 = some_weights(structure, examples)
    eg = EG(objective, C=C, eta=0.5, warm_start_scale=b, warm_start_margin=a)
    eg.warm_weights = w0
    eg.begin(structure, examples, BITS)
    brute = Brute(structure, examples, C, objective)
    for k, x in enumerate(examples):
        # theta_i over parts, by hand: b * w0 . phi(x, r) + a * e_r (a given margin applies to both)
        expected = np.zeros_like(eg.theta[k])
        heads = x.heads
        for h in range(x.n + 1):
            for m in range(1, x.n + 1):
                if h == m:
                    continue
                probe = Weights(BITS)
                part = np.zeros_like(eg.theta[k])
                part[h, m] = 1.0
                structure.add_features(x, part, probe, 1.0)
                expected[h, m] = b * float(probe.array @ w0) + a * float(heads[m] != h)
        mask = np.ones_like(expected, dtype=bool)
        mask[:, 0] = False
        np.fill_diagonal(mask, False)
        np.testing.assert_allclose(eg.theta[k][mask], expected[mask], atol=1e-9)
    alphas = brute.alpha_from_theta(eg.theta)
    w = brute.w(alphas)
    np.testing.assert_allclose(eg.weights.array, w, atol=1e-9)
    assert abs(eg.dual_value() - brute.Q(alphas)) < 1e-9
    m = eg.objectives(structure, examples)
    assert abs(m["primal"] - brute.primal(w)) < 1e-9 * abs(brute.primal(w))
    assert abs(m["dual"] + brute.Q(alphas)) < 1e-9
    assert m["duality_gap"] >= 0
    assert eg.setup_report()["warm_start_scale"] == b


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_q_decreases_from_the_warm_start_to_the_cold_optimum(objective):
    structure, examples = make_dataset()
    C = 3.0
    eg = EG(objective, C=C, eta=0.5, seed=2, warm_start_scale=0.5, warm_start_margin=1.0,
            objectives_every=10**9)
    eg.warm_weights = some_weights(structure, examples)
    eg.accepted_changes = []
    eg.begin(structure, examples, BITS)
    brute = Brute(structure, examples, C, objective)
    q = brute.Q(brute.alpha_from_theta(eg.theta))
    for _ in range(40):
        i = int(eg.rng.integers(len(examples)))
        accepted, dq = eg.visit(structure, examples[i], i)
        q_new = brute.Q(brute.alpha_from_theta(eg.theta))
        assert q_new <= q + 1e-12
        if accepted:
            assert abs((q_new - q) - dq) < 1e-9
        q = q_new
    metrics = run_to_convergence(eg, structure, examples)
    assert max(eg.accepted_changes) <= 0.0
    cold = EG(objective, C=C, eta=0.5, seed=1, objectives_every=10**9)
    cold.begin(structure, examples, BITS)
    cold_metrics = run_to_convergence(cold, structure, examples)
    assert abs(metrics["primal"] - cold_metrics["primal"]) < 1e-5 * cold_metrics["primal"]


def test_warm_start_at_the_crf_optimum_has_no_gap():
    """theta_i = w* . phi(x_i, r) is the CRF optimum: alpha_i = Gibbs(w* . phi), w(alpha)/C = w*."""
    structure, examples = make_dataset()
    C = 2.0
    w_star = trained_weights(structure, examples, C, tolerance=1e-11)
    eg = EG("crf", C=C, eta=0.5, warm_start_scale=1.0)
    eg.warm_weights = w_star
    eg.begin(structure, examples, BITS)
    m = eg.objectives(structure, examples)
    # the gap is linear in the gap of w* (about 1e4 x here: 1e-7 -> 4e-4, 1e-11 -> 4e-8)
    assert m["relative_gap"] < 1e-6
    cold = EG("crf", C=C, eta=0.5)
    cold.begin(structure, examples, BITS)
    assert cold.objectives(structure, examples)["relative_gap"] > 1e-2
    np.testing.assert_allclose(eg.prediction_weights().array, w_star, atol=1e-5)
    # a wrong scale is a worse dual point: a larger Q
    off = EG("crf", C=C, eta=0.5, warm_start_scale=2.0)
    off.warm_weights = w_star
    off.begin(structure, examples, BITS)
    assert off.dual_value() > eg.dual_value() + 1e-3


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_searched_scale_minimizes_q_over_the_grid(objective):
    structure, examples = make_dataset()
    C = 2.0
    w_star = trained_weights(structure, examples, C)
    # warm_start_fraction = 1: the search's subset is the whole set and its C is C
    eg = EG(objective, C=C, eta=0.5, warm_start_fraction=1.0)
    eg.warm_weights = w_star * 3.0  # the right direction at the wrong size
    eg.begin(structure, examples, BITS)
    r = eg.warm_start_result
    assert r["search_subset"] == len(examples)
    brute = Brute(structure, examples, C, objective)

    def q(a, b):
        return q_at_start(structure, examples, brute, objective, C, w_star * 3.0, a, b)

    chosen = q(r["margin"], r["scale"])
    assert abs(chosen - eg.dual_value()) < 1e-9
    # a coordinate-wise minimum over both whole grids (the search's fixed point)
    for b in [2.0 ** k for k in range(-12, 7)]:
        assert chosen <= q(r["margin"], b) + 1e-12
    if objective == "m3n":
        for a in [0.0] + [2.0 ** k for k in range(-4, 7)]:
            assert chosen <= q(a, r["scale"]) + 1e-12
    if objective == "crf":
        assert r["scale"] in (0.25, 0.5)  # the grid points around 1/3, where w* is
        assert r["margin"] == 0.0


def test_crf_given_margin_is_kept_and_the_scale_searched_with_it():
    """The CRF with a model and a given margin: a is not searched, and b minimizes the
    brute-force Q at theta_i = a e_i + b w0 . phi over the grid, the margin included (a search
    that left the margin out of its Q would pick another b here)."""
    structure, examples = make_dataset()
    C, a = 2.0, -3.0
    w0 = trained_weights(structure, examples, C) * 3.0
    eg = EG("crf", C=C, eta=0.5, warm_start_fraction=1.0, warm_start_margin=a)
    eg.warm_weights = w0
    eg.begin(structure, examples, BITS)
    r = eg.warm_start_result
    assert r["margin"] == a
    brute = Brute(structure, examples, C, "crf")

    def q(a_, b):
        return q_at_start(structure, examples, brute, "crf", C, w0, a_, b)

    grid = [2.0 ** k for k in range(-12, 7)]
    with_margin = {b: q(a, b) for b in grid}
    assert abs(with_margin[r["scale"]] - eg.dual_value()) < 1e-9
    assert with_margin[r["scale"]] == min(with_margin.values())
    without = min(grid, key=lambda b: (q(0.0, b), b))
    assert without != r["scale"]  # so the margin must be in the search's Q


def test_search_leaves_a_local_minimum_of_the_scale_for_the_global_one(monkeypatch):
    """A Q with two valleys in b at a = 0 (a shallow one at b = 2, the deepest at b = 1/16)
    and the b = 2 valley alone for any margin: the search starts at a = 0 and scans the whole
    grid of b, so it finds (0, 1/16), the minimum over the joint grid. (The search before it
    scanned b at a = 1 and then only b's neighbours, and stopped at (0, 2): that is how M3N on
    en_ewt got b = 2 and dev UAS 10.)"""
    structure, examples = make_dataset()

    def fake_q(self, structure, cache, a, b, C, hash_bits):
        if a == 0.0:
            return min((np.log2(b) - 1.0) ** 2 + 1.0, (np.log2(b) + 4.0) ** 2)
        return (np.log2(b) - 1.0) ** 2 + 2.0 + a

    monkeypatch.setattr(EG, "_q_at", fake_q)
    eg = EG("m3n", C=1.0, eta=0.5, warm_start_fraction=1.0)
    eg.warm_weights = some_weights(structure, examples)
    eg.begin(structure, examples, BITS)
    r = eg.warm_start_result
    assert (r["margin"], r["scale"]) == (0.0, 1.0 / 16)
    grid = [(a, b) for a in [0.0] + [2.0 ** k for k in range(-4, 7)] for b in [2.0 ** k for k in range(-12, 7)]]
    assert min(grid, key=lambda ab: fake_q(None, None, None, *ab, None, None)) == (0.0, 1.0 / 16)
    assert r["search_evaluations"] < len(grid)  # coordinate descent, not the joint grid


def test_warm_start_loads_npy_and_model_directories(tmp_path):
    from arborist.model import Pipeline
    from arborist.components.parser import Parser

    structure, examples = make_dataset()
    w0 = some_weights(structure, examples)
    np.save(tmp_path / "w.npy", w0)
    a = EG("crf", C=1.0, eta=0.5, warm_start=str(tmp_path / "w.npy"), warm_start_scale=0.5)
    a.begin(structure, examples, BITS)
    pipeline = Pipeline()
    pipeline.add("parser", Parser(structure, w0))
    pipeline.save(tmp_path / "run" / "model-best")
    b = EG("crf", C=1.0, eta=0.5, warm_start=str(tmp_path / "run"), warm_start_scale=0.5)
    b.begin(structure, examples, BITS)
    np.testing.assert_array_equal(a.weights.array, b.weights.array)
    cold = EG("crf", C=1.0, eta=0.5)
    cold.begin(structure, examples, BITS)
    assert not np.array_equal(a.weights.array, cold.weights.array)
    np.save(tmp_path / "small.npy", w0[:16])
    with pytest.raises(ValueError, match="expected 2"):
        EG("crf", warm_start=str(tmp_path / "small.npy"), eta=0.5).begin(structure, examples, BITS)


def test_warm_start_refuses_a_parser_of_the_other_distance_layout(tmp_path):
    from arborist.components.parser import Parser
    from arborist.model import Pipeline
    from arborist.parser.tree import DependencyTree

    structure, examples = make_dataset()  # the fine layout (v1)
    coarse = DependencyTree(hash_bits=BITS, distance_features="coarse")
    w0 = some_weights(structure, examples)
    for name, saved in (("fine", structure), ("coarse", coarse)):
        pipeline = Pipeline()
        pipeline.add("parser", Parser(saved, w0))
        pipeline.save(tmp_path / name / "model-best")
    EG("crf", C=1.0, eta=0.5, warm_start=str(tmp_path / "fine"), warm_start_scale=0.5).begin(structure, examples, BITS)
    with pytest.raises(ValueError, match="distance_features are 'coarse', this one's 'fine'"):
        EG("crf", C=1.0, eta=0.5, warm_start=str(tmp_path / "coarse"), warm_start_scale=0.5).begin(
            structure, examples, BITS)
    EG("crf", C=1.0, eta=0.5, warm_start=str(tmp_path / "coarse"), warm_start_scale=0.5).begin(coarse, examples, BITS)


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_warm_started_checkpoint_resumes_exactly(objective):
    structure, examples = make_dataset()
    w0 = some_weights(structure, examples)
    a = EG(objective, C=1.0, seed=5, warm_start_fraction=0.5)  # scale, margin and eta_ini searched
    a.warm_weights = w0
    a.begin(structure, examples, BITS)
    for _ in range(3):
        a.epoch(structure, examples)
    arrays, meta = a.state()
    b = EG(objective, C=1.0, seed=99)  # no warm start: restore needs none
    b.restore(structure, examples, {k: v.copy() for k, v in arrays.items()}, meta)
    for _ in range(4):
        a.epoch(structure, examples)
        b.epoch(structure, examples)
    np.testing.assert_array_equal(a.weights.array, b.weights.array)
    for ta, tb in zip(a.theta, b.theta):
        np.testing.assert_array_equal(ta, tb)


def test_stop_gap_stops_when_the_relative_gap_is_small():
    structure, examples = make_dataset()
    eg = EG("crf", C=3.0, eta=0.5, stop_gap=1e-3)
    eg.begin(structure, examples, BITS)
    for epoch in range(1, 5000):
        metrics = eg.epoch(structure, examples)
        if eg.finish_epoch(metrics):
            break
    assert metrics["relative_gap"] <= 1e-3
    before = eg.objectives(structure, examples)["relative_gap"]
    assert before <= 1e-3
    # without stop_gap, the same state does not stop
    assert not EG("crf", C=3.0, eta=0.5).finish_epoch(metrics)
    with pytest.raises(ValueError, match="stop_gap"):
        EG(stop_gap=-1.0)


def test_fast_growth_applies_only_to_steps_accepted_at_the_first_rate():
    structure, examples = make_dataset()
    eg = EG("crf", C=0.5, eta=4.0, eta_growth=1.05, eta_fast_growth=2.0, seed=3)
    eg.begin(structure, examples, BITS)
    seen = set()
    for _ in range(80):
        i = int(eg.rng.integers(len(examples)))
        before, halvings = eg.eta[i], eg.halvings
        accepted, dq = eg.visit(structure, examples[i], i)
        if not accepted or dq == 0.0:
            continue
        tries = eg.halvings - halvings
        want = before * 0.5 ** tries * (2.0 if tries == 0 else 1.05)
        assert eg.eta[i] == pytest.approx(want)
        seen.add(tries == 0)
    assert seen == {True, False}
    with pytest.raises(ValueError, match="eta_fast_growth"):
        EG(eta_fast_growth=0.5)


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_primal_scale_search_certifies_the_best_point_on_the_ray(objective):
    """The primal reported is the enumerated P(t w(alpha)/C) at the reported t, no point of a
    grid on the ray is lower, the model predicts with t w(alpha)/C, and its trees are those
    of w(alpha)/C."""
    structure, examples = make_dataset()
    C = 50.0  # w(alpha) off its best length, with the best inside the search's bounds
    eg = EG(objective, C=C, eta=0.5, seed=3, primal_scale_search=True)
    eg.begin(structure, examples, BITS)
    for _ in range(2):  # far from the optimum
        eg.epoch(structure, examples)
    brute = Brute(structure, examples, C, objective)
    w = eg.weights.array.copy()  # w(alpha); the model is w(alpha) / C
    m = eg.objectives(structure, examples)
    t = m["primal_scale"]
    assert t == eg.primal_scale and t != 1.0
    assert abs(m["primal_unscaled"] - brute.primal(w)) < 1e-9 * abs(brute.primal(w))
    assert abs(m["primal"] - brute.primal(t * w)) < 1e-9 * abs(m["primal"])
    assert m["primal"] < m["primal_unscaled"]
    grid = min(brute.primal(k * w) for k in np.geomspace(1 / 16, 16.0, 601))  # the search's bounds
    assert m["primal"] <= grid + 1e-4 * abs(grid)
    assert m["duality_gap"] == m["primal"] - m["dual"] and m["duality_gap"] >= 0
    np.testing.assert_allclose(eg.prediction_weights().array, t * w / C, rtol=1e-12)
    for x in examples:
        scaled = structure.argmax(x, structure.scores(x, eg.prediction_weights()))
        np.testing.assert_array_equal(scaled, structure.argmax(x, structure.scores(x, Weights(BITS, False, w / C))))
    # the scale is part of the checkpoint; without the option it stays 1
    arrays, meta = eg.state()
    resumed = EG(objective, C=C, seed=3, primal_scale_search=True)
    resumed.restore(structure, examples, arrays, meta)
    assert resumed.primal_scale == t
    off = EG(objective, C=C, seed=3)  # the same checkpoint resumed without the search: t = 1
    off.restore(structure, examples, arrays, meta)
    assert off.primal_scale == 1.0
    plain = EG(objective, C=C, eta=0.5, seed=3)
    plain.begin(structure, examples, BITS)
    assert "primal_scale" not in plain.objectives(structure, examples) and plain.primal_scale == 1.0


def test_primal_scale_applies_only_where_it_was_certified():
    """An epoch without objectives (objectives_every = 2) and a new C (annealing) predict with
    w(alpha)/C: the last t was certified for another w(alpha) or C."""
    structure, examples = make_dataset()
    eg = EG("m3n", C=0.5, eta=0.5, seed=3, primal_scale_search=True, objectives_every=2)
    eg.begin(structure, examples, BITS)
    scales = [(eg.epoch(structure, examples), eg.primal_scale)[1] for _ in range(4)]
    assert scales[0] == scales[2] == 1.0 and scales[1] != 1.0 and scales[3] != 1.0
    annealed = EG("m3n", C=0.5, eta=0.5, seed=3, primal_scale_search=True, anneal=True, anneal_tolerance=1e9)
    annealed.begin(structure, examples, BITS)
    metrics = annealed.epoch(structure, examples)
    assert annealed.primal_scale == metrics["primal_scale"] != 1.0
    annealed.finish_epoch(metrics)
    assert annealed.C == 0.5 * annealed.anneal_factor and annealed.primal_scale == 1.0


def test_eta_search_visits_count_the_eta_search_only():
    """The set-up report splits the searches' visits: eta's and the warm start's sum to all."""
    structure, examples = make_dataset()
    eg = EG("m3n", C=1.0, seed=5, warm_start_fraction=0.5)  # a, b and eta_ini searched
    eg.warm_weights = some_weights(structure, examples)
    eg.begin(structure, examples, BITS)
    report = eg.setup_report()
    assert report["warm_start_search_visits"] > 0 and report["eta_search_visits"] > 0
    assert report["eta_search_visits"] + report["warm_start_search_visits"] == eg.search_visits
    assert report["eta_search_visits"] % report["eta_search_subset"] == 0


@pytest.mark.parametrize("objective", ["m3n", "crf"])
def test_margin_without_a_model_starts_near_the_gold_trees(objective):
    """warm_start_margin alone: theta_i = a e_i; a < 0 puts alpha_i near the gold tree, so
    w(alpha) and the dual approach 0 as a falls (for the CRF the entropy term too), and EG
    still lowers Q from there."""
    structure, examples = make_dataset()
    C = 1.0
    brute = Brute(structure, examples, C, objective)
    duals = []
    for a in (-2.0, -8.0, -16.0):
        eg = EG(objective, C=C, eta=0.5, seed=2, warm_start_margin=a)
        eg.begin(structure, examples, BITS)
        for x, theta in zip(examples, eg.theta):
            np.testing.assert_array_equal(theta, a * structure.part_cost(x, structure.gold(x)))
        alphas = brute.alpha_from_theta(eg.theta)
        np.testing.assert_allclose(eg.weights.array, brute.w(alphas), atol=1e-9)
        assert abs(eg.dual_value() - brute.Q(alphas)) < 1e-9
        assert eg.setup_report()["warm_start_margin"] == a
        duals.append(eg.dual_value())
    assert abs(duals[-1]) < 1e-4 < abs(duals[0])  # Q -> 0 at the gold trees
    q0 = eg.dual_value()
    for _ in range(3):
        eg.epoch(structure, examples)
    assert eg.dual_value() < q0
    # eta_ini searched from that start, as the config does
    searched = EG(objective, C=C, seed=2, warm_start_margin=-8.0)
    searched.begin(structure, examples, BITS)
    assert searched.setup_report()["eta_search_visits"] == searched.search_visits > 0
    with pytest.raises(ValueError, match="warm_start_margin"):
        EG(objective, warm_start_margin=float("nan"))


def _in_plane(brute, w, a, u, v):
    return brute.primal(u * w + v * a)


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_primal_average_certifies_the_best_point_in_the_plane(objective):
    """With primal_average, the primal reported is the enumerated P((u w(alpha) + v a) / C) at
    the reported (u, v), no point of a grid over the plane (nor the ray search's point) is
    lower, the cutting planes' lower bound lies below it, the model predicts with that point,
    and the gap stays a gap (the enumerated dual is below every primal)."""
    structure, examples = make_dataset()
    C = 50.0
    eg = EG(objective, C=C, eta=0.5, seed=3, primal_average=True)
    assert eg.primal_scale_search  # the plane holds the ray
    eg.plane_gap_share = 0.0  # search to plane_tolerance (the gap's share is tested below)
    eg.begin(structure, examples, BITS)
    ray_search = EG(objective, C=C, eta=0.5, seed=3, primal_scale_search=True)
    ray_search.begin(structure, examples, BITS)
    for _ in range(3):  # the same dual path: the search does not move alpha
        m = eg.epoch(structure, examples)
        on_ray = ray_search.epoch(structure, examples)
    np.testing.assert_array_equal(eg.weights.array, ray_search.weights.array)
    brute = Brute(structure, examples, C, objective)
    w, a = eg.weights.array.copy(), eg.average.copy()
    u, v = m["primal_scale"], m["primal_average_weight"]
    assert (u, v) == (eg.primal_scale, eg.average_weight) and v > 0
    assert abs(m["primal"] - _in_plane(brute, w, a, u, v)) < 1e-9 * abs(m["primal"])
    assert abs(m["primal_unscaled"] - brute.primal(w)) < 1e-9 * abs(m["primal_unscaled"])
    assert m["primal_search_lower"] <= m["primal"] * (1 + 1e-9)
    assert m["primal"] - m["primal_search_lower"] <= eg.plane_tolerance * abs(m["primal"]) * (1 + 1e-9)
    assert m["primal"] < on_ray["primal"] - 1e-3 * abs(on_ray["primal"])  # the average helps here
    grid = min(_in_plane(brute, w, a, p, q) for p in np.linspace(0, 3, 61) for q in np.linspace(0, 3, 61)
               if 1 / 16 <= p + q <= 16)
    assert m["primal"] <= grid + 1e-9 * abs(grid)
    alphas = brute.alpha_from_theta(eg.theta)
    assert abs(m["dual"] + brute.Q(alphas)) < 1e-9 * abs(m["dual"]) and m["duality_gap"] >= 0
    np.testing.assert_allclose(eg.prediction_weights().array, (u * w + v * a) / C, rtol=1e-12, atol=1e-15)
    # train_accuracy is the predicting model's
    hits = [structure.hits(x, structure.gold(x), structure.argmax(x, structure.scores(x, eg.prediction_weights())))
            for x in examples]
    assert m["train_accuracy"] == sum(h for h, _ in hits) / sum(p for _, p in hits)


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_plane_search_stops_at_its_share_of_the_gap(objective):
    """With plane_gap_share = s the search stops once what the plane could still gain is at
    most s x the gap: in fewer evaluations than the search to plane_tolerance, at a primal
    above the tight search's by at most s x its own gap, which stays a certified gap."""
    structure, examples = make_dataset()
    runs = {}
    for share in (0.0, 0.3):
        eg = EG(objective, C=50.0, eta=0.5, seed=3, primal_average=True)
        eg.plane_gap_share = share
        eg.begin(structure, examples, BITS)
        for _ in range(3):
            m = eg.epoch(structure, examples)
        runs[share] = (eg, m)
    (tight, t), (loose, m) = runs[0.0], runs[0.3]
    np.testing.assert_array_equal(tight.weights.array, loose.weights.array)  # the same dual path
    assert m["dual"] == t["dual"]
    assert m["primal_search_evaluations"] < t["primal_search_evaluations"]
    assert m["primal"] - m["primal_search_lower"] <= 0.3 * m["duality_gap"] * (1 + 1e-9)
    assert t["primal"] <= m["primal"] <= t["primal"] + 0.3 * m["duality_gap"] * (1 + 1e-9)
    brute = Brute(structure, examples, 50.0, objective)
    u, v = m["primal_scale"], m["primal_average_weight"]
    assert abs(m["primal"] - _in_plane(brute, loose.weights.array, loose.average, u, v)) < 1e-9 * abs(m["primal"])
    assert m["primal"] >= -brute.Q(brute.alpha_from_theta(loose.theta)) - 1e-9 * abs(m["primal"])


@pytest.mark.parametrize("objective", ["crf", "m3n"])
def test_train_accuracy_is_that_of_the_certified_point(objective):
    """Where the mean's point parses the training set otherwise than w(alpha)/C (here it
    does), train_accuracy is the point's."""
    structure, examples = make_dataset()
    eg = EG(objective, C=2.0, eta=0.5, seed=3, primal_average=True)
    eg.begin(structure, examples, BITS)
    for _ in range(3):
        m = eg.epoch(structure, examples)

    def accuracy(w):
        hits = [structure.hits(x, structure.gold(x), structure.argmax(x, structure.scores(x, w))) for x in examples]
        return sum(h for h, _ in hits) / sum(p for _, p in hits)

    assert m["primal_average_weight"] > 0
    assert m["train_accuracy"] == accuracy(eg.prediction_weights())
    assert m["train_accuracy"] != accuracy(Weights(BITS, False, eg.weights.array / 2.0))


def test_a_failed_cutting_plane_step_ends_the_search_with_a_certified_point(monkeypatch):
    """When SLSQP fails, the search keeps the best point it evaluated (a valid certificate)
    and reports no lower bound."""
    import arborist.learn.eg as eg_module

    structure, examples = make_dataset()
    eg = EG("m3n", C=50.0, eta=0.5, seed=3, primal_average=True)
    eg.begin(structure, examples, BITS)
    eg.epoch(structure, examples)
    monkeypatch.setattr(eg_module, "_cutting_plane_step", lambda *args: (np.array([-5.0, 40.0]), -np.inf))
    m = eg.epoch(structure, examples)
    assert m["primal_search_evaluations"] == 1 and m["primal_search_lower"] is None
    brute = Brute(structure, examples, 50.0, "m3n")
    u, v = eg.primal_scale, eg.average_weight
    assert abs(m["primal"] - brute.primal(u * eg.weights.array + v * eg.average)) < 1e-9 * abs(m["primal"])


def test_the_average_halves_each_epoch_back_and_starts_again_at_a_new_C():
    """a_k = sum_j d^(k-j) w_j / sum_j d^(k-j) over the epochs' w(alpha) (d = 1/2, a_1 = w_1);
    epochs without objectives predict with w(alpha)/C; C-annealing drops the old C's average
    and certified point."""
    structure, examples = make_dataset()
    eg = EG("m3n", C=0.5, eta=0.5, seed=3, primal_average=True, objectives_every=3)
    eg.begin(structure, examples, BITS)
    seen = []
    for k in range(1, 5):
        metrics = eg.epoch(structure, examples)
        seen.append(eg.weights.array.copy())
        weights = [0.5 ** (k - j) for j in range(1, k + 1)]
        weights[0] *= 2  # a_1 = w_1 carries what the epochs before it would
        expected = sum(c * s for c, s in zip(weights, seen)) / sum(weights)
        np.testing.assert_allclose(eg.average, expected, rtol=1e-12, atol=1e-14)
        if k == 3:
            assert eg.average_weight == metrics["primal_average_weight"] and "primal_search_lower" in metrics
        else:  # no objectives: no certificate to predict with
            assert "primal" not in metrics and (eg.primal_scale, eg.average_weight) == (1.0, 0.0)
            np.testing.assert_array_equal(eg.prediction_weights().array, eg.weights.array / eg.C)
    annealed = EG("m3n", C=0.5, eta=0.5, seed=3, primal_average=True, anneal=True, anneal_tolerance=1e9)
    annealed.begin(structure, examples, BITS)
    for _ in range(2):
        metrics = annealed.epoch(structure, examples)
    assert annealed.average_weight == metrics["primal_average_weight"] > 0
    annealed.finish_epoch(metrics)
    assert annealed.C == 0.5 * annealed.anneal_factor
    assert annealed.average is None and (annealed.primal_scale, annealed.average_weight) == (1.0, 0.0)
    annealed.epoch(structure, examples)  # the new C's first epoch: its average is its w(alpha), a ray
    np.testing.assert_array_equal(annealed.average, annealed.weights.array)


def test_the_average_is_part_of_the_checkpoint():
    """A run resumed from a checkpoint reports what the uninterrupted run reports; resumed
    without the option, the average is dropped and the ray search goes on."""
    structure, examples = make_dataset()
    straight = EG("m3n", C=2.0, eta=0.5, seed=4, primal_average=True)
    straight.begin(structure, examples, BITS)
    for _ in range(3):
        straight.epoch(structure, examples)
    arrays, meta = straight.state()
    arrays = {k: v.copy() for k, v in arrays.items()}  # the state's arrays are the live ones
    expected = straight.epoch(structure, examples)
    resumed = EG("m3n", C=2.0, eta=0.5, seed=4, primal_average=True)
    resumed.restore(structure, examples, arrays, meta)
    assert resumed.average_weight == meta["average_weight"] > 0
    got = resumed.epoch(structure, examples)
    timings = ("epoch_seconds", "examples_per_second", "objective_seconds", "primal_search_seconds")
    assert {k: v for k, v in got.items() if k not in timings} == {k: v for k, v in expected.items() if k not in timings}
    np.testing.assert_array_equal(resumed.prediction_weights().array, straight.prediction_weights().array)
    without = EG("m3n", C=2.0, eta=0.5, seed=4, primal_scale_search=True)
    without.restore(structure, examples, arrays, meta)
    # u was certified together with the average: alone it certifies nothing
    assert without.average is None and without.average_weight == 0.0 and without.primal_scale == 1.0
    np.testing.assert_array_equal(without.prediction_weights().array, without.weights.array / 2.0)
    metrics = without.epoch(structure, examples)
    assert "primal_average_weight" not in metrics and "primal_scale" in metrics


def test_a_cutting_plane_step_minimizes_the_model_over_the_feasible_set():
    """Kelley's step on three planes and a quadratic, against a fine grid of the same model
    over z >= 0, 1/16 <= z1 + z2 <= 16."""
    from arborist.learn.eg import _cutting_plane_step

    intercepts = np.array([3.0, -1.0, 0.5])
    slopes = np.array([[-2.0, -1.0], [1.0, 0.5], [-0.5, 1.5]])
    gram = np.array([[1.0, 0.3], [0.3, 0.5]])

    def model(z):
        return 0.5 * float(z @ gram @ z) + float(np.max(intercepts + slopes @ z))

    p, q = np.meshgrid(np.linspace(0, 6, 1201), np.linspace(0, 6, 1201))
    z_grid = np.stack([p.ravel(), q.ravel()])[:, (1 / 16 <= p.ravel() + q.ravel())]
    values = 0.5 * np.einsum("in,ij,jn->n", z_grid, gram, z_grid) + (intercepts[:, None] + slopes @ z_grid).max(axis=0)
    for size in (1.0, 1e6):  # a primal in the tens of thousands once stopped SLSQP at its start
        z, low = _cutting_plane_step(size * intercepts, size * slopes, size * gram, np.array([1.0, 0.0]),
                                     (1 / 16, 16.0))
        assert z.min() >= -1e-9 and 1 / 16 - 1e-9 <= z.sum() <= 16 + 1e-9
        assert abs(model(z) - low / size) < 1e-7
        assert low / size <= values.min() + 1e-9 and values.min() - low / size < 1e-3


@pytest.mark.parametrize("objective,per_part", [("crf", False), ("m3n", False), ("m3n", True)])
def test_gap_sampling_draws_examples_by_their_share_of_the_gap(objective, per_part):
    """The examples' gaps sum to the certified gap at w(alpha)/C (P + Q = sum_i [loss_i + term_i
    + (g_i - mu_i).s_i]); an epoch then draws its visits from gap_sampling x the gaps' shares
    plus the rest uniformly; a checkpoint keeps the gaps."""
    structure, examples = make_dataset()
    eg = EG(objective, C=2.0, eta=0.5, seed=3, gap_sampling=0.75, gap_sampling_per_part=per_part)
    eg.begin(structure, examples, BITS)
    assert eg.example_gaps is None  # the first epoch is uniform
    m = eg.epoch(structure, examples)
    gaps = eg.example_gaps.copy()
    assert gaps.min() >= 0 and gaps.max() > 0
    assert abs(gaps.sum() - m["duality_gap"]) < 1e-9 * max(1.0, m["primal"])
    drawn = []

    class Recording:
        def __init__(self, rng):
            self.rng = rng

        def choice(self, n, size, p):
            drawn.append(p)
            return self.rng.choice(n, size=size, p=p)

    eg.rng = Recording(eg.rng)
    parts = [t.size for t in eg.theta]
    before, tries = eg.parts_visited, []
    original = eg._try
    eg._try = lambda structure, x, cost, i, *rest: (tries.append(i), original(structure, x, cost, i, *rest))[1]
    m = eg.epoch(structure, examples)
    n = len(examples)
    weight = gaps / np.array(parts) if per_part else gaps  # per part: the gap per unit of a visit's cost
    np.testing.assert_allclose(drawn[0], 0.75 * weight / weight.sum() + 0.25 / n, rtol=1e-12)
    # every rate tried counts, weighed by its example's parts
    assert eg.parts_visited - before == sum(parts[i] for i in tries) and len(tries) >= n
    assert m["part_weighted_iterations"] == eg.parts_visited / sum(parts)
    del eg._try
    eg.rng = eg.rng.rng
    arrays, meta = eg.state()
    resumed = EG(objective, C=2.0, eta=0.5, seed=3, gap_sampling=0.75)
    resumed.restore(structure, examples, {k: v.copy() for k, v in arrays.items()}, meta)
    np.testing.assert_array_equal(resumed.example_gaps, eg.example_gaps)
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match="gap_sampling"):
            EG(objective, gap_sampling=bad)
    with pytest.raises(ValueError, match="random schedule"):
        EG(objective, schedule="cyclic", gap_sampling=0.5)
    with pytest.raises(ValueError, match="gap_sampling_per_part"):
        EG(objective, gap_sampling_per_part=True)
    annealed = EG(objective, C=2.0, eta=0.5, seed=3, gap_sampling=0.5, anneal=True, anneal_tolerance=1e9)
    annealed.begin(structure, examples, BITS)
    annealed.finish_epoch(annealed.epoch(structure, examples))
    assert annealed.example_gaps is None  # the old C's gaps
