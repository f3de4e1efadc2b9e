"""Non-projective trees: Chu-Liu-Edmonds and matrix-tree marginals against enumeration of
every spanning tree (the protocol suite runs DependencyTree(projective=False) in test_tree.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arborist.learn.perceptron import Perceptron
from arborist.parser.eisner import eisner_argmax
from arborist.parser.mst import mst_argmax, mst_marginals
from arborist.parser.tree import AUTO_NONPROJECTIVE_SHARE, DependencyTree, is_projective, nonprojective_share
from arborist.legacy import structure_call
from arborist.registry import make_structure

from protocol import brute_force
from test_tree import HASH_BITS, is_projective as brute_is_projective, is_tree, random_scores, sentence
from test_tree import projective_trees, spanning_trees


def tree_score(scores, heads):
    n = len(heads) - 1
    return float(scores[heads[1:], np.arange(1, n + 1)].sum())


def enumerate_marginals(scores, single_root):
    """Tree scores, arc marginals and log Z by enumerating every spanning tree."""
    n = scores.shape[0] - 1
    structure = DependencyTree(hash_bits=HASH_BITS, single_root=single_root, projective=False)
    values, logz, mu = brute_force(structure, sentence(n), scores, spanning_trees(n, single_root))
    return values, mu.reshape(scores.shape), logz


@pytest.mark.parametrize("domain", ["linear", "log"])
@pytest.mark.parametrize("single_root", [True, False])
def test_both_elimination_domains_match_enumeration(domain, single_root):
    rng = np.random.default_rng(17)
    for n in (1, 2, 3, 4, 5):
        for scale in (0.1, 3.0, 30.0):
            scores = random_scores(rng, n, scale)
            _, mu, logz = enumerate_marginals(scores, single_root)
            got_mu, got_logz = mst_marginals(scores, single_root, domain)
            assert abs(got_logz - logz) < 1e-9 * max(1.0, abs(logz))
            np.testing.assert_allclose(got_mu, mu, atol=1e-9)


def test_single_root_is_the_limit_of_small_root_weights():
    # Z_single is the coefficient of t in Z(t * root weights): the independent check of the
    # elimination's single-root rule.
    rng = np.random.default_rng(4)
    scores = random_scores(rng, 7)
    t = -60.0
    shifted = scores.copy()
    shifted[0, 1:] += t
    _, logz_multi = mst_marginals(shifted, single_root=False)
    _, logz_single = mst_marginals(scores, single_root=True)
    assert abs((logz_multi - t) - logz_single) < 1e-9


def test_two_words_that_head_each_other_need_the_log_domain():
    # Words 1 and 2 prefer each other by 1000 over everything else: every tree breaks the
    # 2-cycle, so the linear domain's pivots underflow and the log domain takes over.
    n = 4
    scores = np.zeros((n + 1, n + 1))
    scores[1, 2] = scores[2, 1] = 1000.0
    with pytest.raises(FloatingPointError):
        mst_marginals(scores, True, "linear")
    mu, logz = mst_marginals(scores, True)  # auto
    mu_log, logz_log = mst_marginals(scores, True, "log")
    np.testing.assert_array_equal(mu, mu_log)
    values, want_mu, want_logz = enumerate_marginals(scores, True)
    assert abs(logz - want_logz) < 1e-9 * abs(want_logz)
    np.testing.assert_allclose(mu, want_mu, atol=1e-9)


@pytest.mark.parametrize("single_root", [True, False])
def test_huge_scores_give_the_best_tree(single_root):
    # Scores of 1e4: the distribution is (nearly) a point mass on the maximum spanning tree.
    rng = np.random.default_rng(5)
    for n in (10, 60, 150):
        scores = random_scores(rng, n, 1e4)
        heads, best = mst_argmax(scores, single_root)
        mu, logz = mst_marginals(scores, single_root)
        assert np.isfinite(mu).all() and -1e-12 * abs(best) <= logz - best < 1e-9 * abs(best)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
        on_best = mu[heads[1:], np.arange(1, n + 1)]
        assert on_best.min() > 0.99
        # The arc the best tree is least sure of: the best tree without it carries at least
        # exp(its score - log Z) of the mass, and (with gaps of thousands elsewhere) about all.
        m = int(np.argmin(on_best)) + 1
        without = scores.copy()
        without[heads[m], m] = -np.inf
        second = mst_argmax(without, single_root)[1]
        assert np.isclose(1.0 - on_best[m - 1], np.exp(second - logz), rtol=1e-6, atol=1e-12)
        mu_log, logz_log = mst_marginals(scores, single_root, "log")
        np.testing.assert_array_equal(mu, mu_log)


@pytest.mark.parametrize("single_root", [True, False])
def test_long_sentences_linear_and_log_agree(single_root):
    rng = np.random.default_rng(6)
    for n, scale in ((60, 3.0), (150, 5.0), (40, 60.0)):  # the last spans about 270 per column
        scores = random_scores(rng, n, scale)
        mu, logz = mst_marginals(scores, single_root, "linear")
        mu_log, logz_log = mst_marginals(scores, single_root, "log")
        np.testing.assert_allclose(mu, mu_log, atol=1e-10)
        assert abs(logz - logz_log) < 1e-11 * abs(logz)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-10)
        assert (mu >= -1e-12).all() and np.all(mu[:, 0] == 0) and np.all(np.diag(mu) == 0)
        if single_root:
            assert abs(mu[0].sum() - 1.0) < 1e-10


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 7), seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.1, 1.0, 10.0, 1e4]),
       single_root=st.booleans())
def test_argmax_is_the_best_spanning_tree(n, seed, scale, single_root):
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n, scale)
    scores[0, 1:] += scale * rng.uniform(0, 3)  # tempt the decoder to attach many words to the root
    heads, best = mst_argmax(scores, single_root)
    assert heads[0] == -1 and is_tree(tuple(heads))
    if single_root:
        assert int((heads[1:] == 0).sum()) == 1
    assert np.isclose(best, tree_score(scores, heads))
    if n <= 6:
        assert np.isclose(best, max(tree_score(scores, y) for y in spanning_trees(n, single_root)),
                          rtol=1e-12, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(8, 120), seed=st.integers(0, 2**32 - 1))
def test_argmax_beats_eisner_and_is_a_tree_on_long_sentences(n, seed):
    # Every projective tree is a spanning tree, so the maximum spanning tree scores at least
    # as high as Eisner's; and Chu-Liu-Edmonds must return a tree whatever the cycles.
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n)
    heads, best = mst_argmax(scores, True)
    assert is_tree(tuple(heads)) and int((heads[1:] == 0).sum()) == 1
    assert best >= eisner_argmax(scores, True)[1] - 1e-9


def test_forbidden_arcs_and_impossible_inputs():
    n = 5
    scores = random_scores(np.random.default_rng(8), n)
    scores[2, 3] = scores[0, 1] = -np.inf
    heads, _ = mst_argmax(scores)
    assert heads[3] != 2 and heads[1] != 0
    with pytest.raises(ValueError, match="finite score"):
        mst_marginals(scores)
    scores[:, 4] = -np.inf
    with pytest.raises(ValueError, match="no spanning tree"):
        mst_argmax(scores)
    with pytest.raises(ValueError, match="shape"):
        mst_argmax(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="domain"):
        mst_marginals(np.zeros((3, 3)), True, "complex")


def test_is_projective_matches_the_brute_force_definition():
    for n in (1, 2, 3, 4, 5):
        for y in spanning_trees(n, False):
            assert is_projective(y) == brute_is_projective(tuple(y))
    assert len([y for y in spanning_trees(4, True) if is_projective(y)]) == len(projective_trees(4, True))


def test_auto_decides_from_the_training_trees():
    projective_gold = sentence(4)  # heads 0 1 1 1
    crossing = sentence(4)
    crossing.heads = np.array([-1, 2, 0, 1, 2], dtype=np.int32)
    assert nonprojective_share([projective_gold, crossing]) == 0.5
    structure = DependencyTree(hash_bits=HASH_BITS, projective="auto")
    with pytest.raises(ValueError, match="initialize"):
        structure.argmax(projective_gold, np.zeros((5, 5)))
    structure.initialize([projective_gold] * 100)
    assert structure.projective is True and structure.registry_call()["projective"] is True
    structure = DependencyTree(hash_bits=HASH_BITS, projective="auto")
    share = AUTO_NONPROJECTIVE_SHARE
    k = int(np.ceil(share * 100))
    structure.initialize([crossing] * k + [projective_gold] * (100 - k))
    assert structure.projective is False
    with pytest.raises(ValueError, match="projective must be"):
        DependencyTree(projective="sometimes")


def test_models_without_the_key_are_projective():
    # the structure configuration of format-1/2 models, converted on load
    config = {"structure": "tree", **{k: v for k, v in DependencyTree(hash_bits=HASH_BITS, projective=False)
                                      .registry_call().items() if k != "@structures"}}
    assert make_structure(structure_call(config)).projective is False
    del config["projective"]
    assert make_structure(structure_call(config)).projective is True


def test_perceptron_learns_a_crossing_tree_that_eisner_cannot_produce():
    crossing = sentence(4)
    crossing.heads = np.array([-1, 2, 0, 1, 2], dtype=np.int32)
    for projective in (False, True):
        structure = DependencyTree(hash_bits=HASH_BITS, projective=projective)
        trainer = Perceptron(averaged=False, seed=0)
        trainer.begin(structure, [crossing], HASH_BITS)
        for _ in range(20):
            trainer.epoch(structure, [crossing])
        pred = structure.argmax(crossing, structure.scores(crossing, trainer.weights))
        hits, total = structure.hits(crossing, crossing.heads, pred)
        if projective:  # the best projective tree gets 3 of the 4 heads right
            assert hits <= 3 and is_projective(pred)
        else:
            assert hits == total


def mutual_pair(pair: float, root: float) -> np.ndarray:
    scores = np.zeros((4, 4))
    scores[1, 2] = scores[2, 1] = pair
    scores[0, 1:] = root
    return scores


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("scores", [
    mutual_pair(460.0, -300.0), mutual_pair(433.0, -312.0), mutual_pair(400.0, -312.0),
    mutual_pair(250.0, -249.0), mutual_pair(240.0, -240.0),  # ranges just under LINEAR_RANGE
    np.array([[0.0, 1137, -1137, -758], [0, 0, -379, 0], [0, 758, 0, -379], [0, 0, -758, 0]]),
], ids=["460/-300", "433/-312", "400/-312", "250/-249", "240/-240", "spread-1137"])
def test_wide_score_ranges_are_exact_in_auto(scores, single_root):
    # Review cases: weights hundreds below their column's best used to underflow in the
    # linear domain and give a wrong log Z, inf or NaN without an error.
    _, mu, logz = enumerate_marginals(scores, single_root)
    got_mu, got_logz = mst_marginals(scores, single_root)
    assert abs(got_logz - logz) < 1e-9 * max(1.0, abs(logz))
    np.testing.assert_allclose(got_mu, mu, atol=1e-9)


def test_single_root_rho_growth_is_rescaled():
    # Every word strongly prefers the root (by 400, inside LINEAR_RANGE): with the root left
    # out of the pivots, the single-root weights grow by about e^400 a step and would
    # overflow after two; the linear domain rescales them and must still be exact.
    n = 6
    scores = np.zeros((n + 1, n + 1))
    scores[0, 1:] = 400.0
    mu, logz = mst_marginals(scores, True, "linear")
    mu_log, logz_log = mst_marginals(scores, True, "log")
    assert abs(logz - logz_log) < 1e-12 * abs(logz_log)
    np.testing.assert_allclose(mu, mu_log, atol=1e-12)
    _, want_mu, want_logz = enumerate_marginals(scores, True)
    np.testing.assert_allclose(mu, want_mu, atol=1e-9)


def test_single_root_argmax_refuses_when_no_single_root_tree_exists():
    scores = np.array([[0.0, 0.0, 0.0], [-np.inf, 0.0, -np.inf], [-np.inf, -np.inf, 0.0]])
    with pytest.raises(ValueError, match="single-root"):
        mst_argmax(scores, True)
    heads, _ = mst_argmax(scores, False)  # both words on the root is the only tree
    assert list(heads) == [-1, 0, 0]


def test_large_placeholder_scores_do_not_break_the_single_root_rule():
    # Forbidden arcs written as a large negative finite number rather than -inf.
    rng = np.random.default_rng(9)
    for _ in range(50):
        n = 5
        scores = random_scores(rng, n)
        scores[rng.integers(0, n + 1), rng.integers(1, n + 1)] = -1e6
        heads, best = mst_argmax(scores, True)
        assert np.isclose(best, max(tree_score(scores, y) for y in spanning_trees(n, True)), rtol=0, atol=1e-9)
