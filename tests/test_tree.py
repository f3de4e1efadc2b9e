"""DependencyTree and the Eisner kernels against brute-force enumeration."""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arborist.parser.eisner import eisner_argmax, eisner_marginals
from arborist.parser.tree import DependencyTree
from arborist.sentence import Sentence

from protocol import check_gradient, check_protocol

HASH_BITS = 14
WORDS = ["the", "dog", "saw", "a", "cat", "in", "Paris", "today", "."]
TAGS = [("DET", "DT"), ("NOUN", "NN"), ("VERB", "VBD"), ("DET", "DT"), ("NOUN", "NN"), ("ADP", "IN"),
        ("PROPN", "NNP"), ("NOUN", "NN"), ("PUNCT", ".")]


def is_projective(heads) -> bool:
    n = len(heads) - 1
    for m in range(1, n + 1):
        h = heads[m]
        for k in range(min(h, m) + 1, max(h, m)):
            a = k
            while a not in (h, 0):
                a = heads[a]
            if a != h:
                return False
    return True


def is_tree(heads) -> bool:
    n = len(heads) - 1
    for m in range(1, n + 1):
        seen, a = set(), m
        while a != 0:
            if a in seen or heads[a] == a:
                return False
            seen.add(a)
            a = heads[a]
    return True


@lru_cache(maxsize=None)
def spanning_trees(n: int, single_root: bool) -> tuple:
    """Every tree over n words, projective or not, by filtering all head assignments."""
    out = []
    for hs in itertools.product(range(n + 1), repeat=n):
        heads = (-1,) + hs
        if any(heads[m] == m for m in range(1, n + 1)) or not is_tree(heads):
            continue
        if single_root and hs.count(0) != 1:
            continue
        out.append(np.array(heads, dtype=np.int32))
    return tuple(out)


@lru_cache(maxsize=None)
def projective_trees(n: int, single_root: bool) -> tuple:
    """Every projective tree over n words."""
    return tuple(heads for heads in spanning_trees(n, single_root) if is_projective(tuple(heads)))


def test_enumeration_counts():
    # Rooted labeled trees: (n+1)^(n-1) with any number of root children (Cayley), and
    # n^(n-1) with exactly one (a rooted tree on the words, hung from the root).
    assert [len(spanning_trees(n, False)) for n in range(1, 6)] == [(n + 1) ** (n - 1) for n in range(1, 6)]
    assert [len(spanning_trees(n, True)) for n in range(1, 6)] == [n ** (n - 1) for n in range(1, 6)]

    # Known counts of projective dependency trees: single-root 1, 2, 7, 30, 143, 728
    # (A006013 shifted), any number of roots 1, 3, 12, 55, 273 (A001764).
    assert [len(projective_trees(n, True)) for n in range(1, 7)] == [1, 2, 7, 30, 143, 728]
    assert [len(projective_trees(n, False)) for n in range(1, 6)] == [1, 3, 12, 55, 273]


def sentence(n: int) -> Sentence:
    words = [WORDS[i % len(WORDS)] for i in range(n)]
    tags = [TAGS[i % len(TAGS)] for i in range(n)]
    heads = [0] + [1] * (n - 1)  # a valid single-root tree as gold
    return Sentence.from_columns(words, words, [u for u, _ in tags], [x for _, x in tags], heads=heads)


def random_scores(rng, n, scale=2.0):
    return rng.normal(size=(n + 1, n + 1)) * scale


def hamming(gold, y):
    return int((np.asarray(gold[1:]) != np.asarray(y[1:])).sum())


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("projective, n", [(True, n) for n in range(1, 7)] + [(False, n) for n in range(1, 6)])
def test_protocol_against_brute_force(projective, n, single_root):
    # Non-projective trees stop at n = 5: 6^5 single-root spanning trees of 6 words is slow to enumerate.
    rng = np.random.default_rng(100 * n + single_root if projective else 1000 + 10 * n + single_root)
    structure = DependencyTree(hash_bits=HASH_BITS, single_root=single_root, projective=projective)
    labels = (projective_trees if projective else spanning_trees)(n, single_root)
    x = sentence(n)
    for _ in range(2):
        scores = random_scores(rng, n)
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(structure, x, scores, labels, gold, hamming, rng, HASH_BITS)


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_marginals_are_gradient_of_log_z(n, single_root, projective):
    rng = np.random.default_rng(n)
    structure = DependencyTree(hash_bits=HASH_BITS, single_root=single_root, projective=projective)
    check_gradient(structure, sentence(n), random_scores(rng, n))


@pytest.mark.parametrize("single_root", [True, False])
def test_marginals_of_each_modifier_sum_to_one(single_root):
    rng = np.random.default_rng(7)
    for n in (1, 2, 10, 40):
        mu, _ = eisner_marginals(random_scores(rng, n), single_root)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
        assert (mu >= -1e-12).all() and np.all(mu[:, 0] == 0) and np.all(np.diag(mu) == 0)
        if single_root:
            assert np.isclose(mu[0].sum(), 1.0)


def test_no_overflow_with_large_scores():
    rng = np.random.default_rng(3)
    for n in (5, 50, 120):
        mu, logz = eisner_marginals(random_scores(rng, n, scale=1e4))
        assert np.isfinite(logz) and np.isfinite(mu).all()
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-6)


def test_forbidden_arcs_are_never_used():
    rng = np.random.default_rng(5)
    n = 6
    scores = random_scores(rng, n)
    scores[2, 3] = scores[0, 1] = -np.inf
    heads, _ = eisner_argmax(scores)
    assert heads[3] != 2 and heads[1] != 0
    mu, _ = eisner_marginals(scores)
    assert mu[2, 3] == 0 and mu[0, 1] == 0
    labels = [y for y in projective_trees(n, True) if y[3] != 2 and y[1] != 0]
    values = [sum(scores[y[m], m] for m in range(1, n + 1)) for y in labels]
    assert np.isclose(sum(scores[heads[m], m] for m in range(1, n + 1)), max(values))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.1, 1.0, 10.0, 1e4]))
def test_single_root_argmax_is_a_projective_tree_with_one_root_child(n, seed, scale):
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n, scale)
    scores[0, 1:] += scale * 3  # tempt the decoder to attach many words to the root
    heads, best = eisner_argmax(scores, single_root=True)
    assert heads[0] == -1 and int((heads[1:] == 0).sum()) == 1
    assert is_tree(tuple(heads)) and is_projective(tuple(heads))
    assert np.isclose(best, scores[heads[1:], np.arange(1, n + 1)].sum())


def test_multi_root_argmax_can_attach_several_words_to_root():
    scores = np.zeros((4, 4))
    scores[0, 1:] = 10.0
    heads, _ = eisner_argmax(scores, single_root=False)
    assert list(heads[1:]) == [0, 0, 0]
    heads, _ = eisner_argmax(scores, single_root=True)
    assert int((heads[1:] == 0).sum()) == 1


def test_feature_scores_match_enumerated_indices():
    rng = np.random.default_rng(11)
    structure = DependencyTree(hash_bits=16)
    x = sentence(9)
    w = rng.normal(size=1 << 16)
    from arborist.weights import Weights

    scores = structure.scores(x, Weights(16, False, w))
    for h in range(10):
        for m in range(1, 10):
            if h == m:
                continue
            idx = structure.features.arc_indices(x, h, m)
            assert np.isclose(scores[h, m], w[idx.astype(np.int64)].sum())
    assert np.all(scores[:, 0] == 0) and np.all(np.diag(scores) == 0)


def test_features_depend_on_direction_distance_and_words():
    structure = DependencyTree(hash_bits=20)
    x = sentence(9)
    f = structure.features
    a, b = set(f.arc_indices(x, 2, 5).tolist()), set(f.arc_indices(x, 5, 2).tolist())
    assert a != b
    # Features of an arc depend on its words: the same positions in another sentence differ.
    y = Sentence.from_columns(["x"] * 9, None, ["X"] * 9, ["XX"] * 9, heads=[0] + [1] * 8)
    assert set(f.arc_indices(y, 2, 5).tolist()) != a
    # Template counts: 2 features (plain and direction+distance) per template, plus between-POS.
    n_templates = len([t for t in f.templates if not t.startswith("between.")])
    assert len(f.arc_indices(x, 2, 3)) == 2 * n_templates  # adjacent: nothing in between
    # words 3, 4 are DET/DT and NOUN/NN: two distinct UPOS and two distinct XPOS
    assert len(f.arc_indices(x, 2, 5)) == 2 * n_templates + 2 * (2 + 2)
    # words 2..6: repeated tags fire once (3..5 = DT NN IN -> 3 UPOS, 3 XPOS)
    assert len(f.arc_indices(x, 2, 6)) == 2 * n_templates + 2 * (3 + 3)


@pytest.mark.parametrize("projective, n", [(True, 3), (True, 5), (False, 4)])
def test_protocol_with_coarse_distance_features(projective, n):
    rng = np.random.default_rng(7 * n + projective)
    structure = DependencyTree(hash_bits=HASH_BITS, projective=projective, distance_features="coarse")
    labels = (projective_trees if projective else spanning_trees)(n, True)
    x = sentence(n)
    scores = random_scores(rng, n)
    check_protocol(structure, x, scores, labels, labels[int(rng.integers(len(labels)))], hamming, rng, HASH_BITS)


# (head, modifier, coarse direction-distance code): right of the head at 1, 2, 3-6, 7+; left at 1, 2-3, 4+
COARSE_CASES = [(2, 3, 0), (2, 4, 1), (2, 5, 2), (2, 8, 2), (1, 8, 3), (0, 9, 3),
                (3, 2, 4), (4, 2, 5), (5, 2, 5), (6, 2, 6), (9, 1, 6)]


def test_coarse_layout_puts_each_conjoined_feature_in_its_plain_features_cache_line():
    """The plain features are the same in both layouts; "coarse" puts each one's conjunction
    with the arc's direction-distance code c at slot (s + 1 + c) mod 8 of plain slot s's line."""
    from collections import Counter

    from arborist.parser.features import ArcFeatures

    x = sentence(9)
    fine, coarse = ArcFeatures(bits=22, distance_features="fine"), ArcFeatures(bits=22, distance_features="coarse")
    assert (fine.distance_features, coarse.distance_features) == ("fine", "coarse")
    for h, m, code in COARSE_CASES:
        a, b = Counter(fine.arc_indices(x, h, m).tolist()), Counter(coarse.arc_indices(x, h, m).tolist())
        plain = a & b
        assert sum(plain.values()) == sum(a.values()) // 2  # every plain feature, nothing else
        conjoined = Counter((p & ~7) | ((p + 1 + code) & 7) for p in plain.elements())
        assert b == plain + conjoined, (h, m)


def test_distance_features_option_registry_and_old_models():
    from arborist.registry import make_structure

    v2 = make_structure({"@structures": "arborist.DependencyTree.v2", "hash_bits": 16})
    v1 = make_structure({"@structures": "arborist.DependencyTree.v1", "hash_bits": 16})
    assert v2.features.distance_features == "coarse" and v1.features.distance_features == "fine"
    # the saved call names the layout: a model reloads as it was trained, and a fine one is
    # saved as v1, as before v2 existed (`arborist average` compares the calls)
    assert "distance_features" not in v1.registry_call() and v1.registry_call()["@structures"].endswith("v1")
    assert v2.registry_call()["@structures"].endswith("v2") and v2.registry_call()["distance_features"] == "coarse"
    fine_v2 = make_structure({"@structures": "arborist.DependencyTree.v2", "hash_bits": 16, "distance_features": "fine"})
    assert fine_v2.registry_call() == v1.registry_call()
    for structure in (v1, v2):
        again = make_structure(structure.registry_call())
        assert again.features.distance_features == structure.features.distance_features
    second = make_structure({"@structures": "arborist.DependencyTree.v2", "hash_bits": 16, "order": 2})
    assert second.features.distance_features == "coarse"
    assert make_structure(second.registry_call()).features.distance_features == "coarse"
    with pytest.raises(ValueError, match="distance_features must be one of fine, coarse"):
        DependencyTree(hash_bits=16, distance_features="medium")
    # the two layouts score differently (same plain features, other conjoined slots)
    x = sentence(6)
    w = np.random.default_rng(0).normal(size=1 << 16)
    from arborist.weights import Weights

    assert not np.allclose(v1.scores(x, Weights(16, False, w)), v2.scores(x, Weights(16, False, w)))


def test_bad_templates_are_rejected():
    with pytest.raises(ValueError, match="bad feature atom"):
        DependencyTree(["h.colour"])
    with pytest.raises(ValueError, match="bad feature atom"):
        DependencyTree(["h+5.form"])


def test_lifting_a_hand_worked_tree():
    from arborist.parser.tree import lift_to_projective

    # 2 is the root word, 2 -> 3 -> 1 -> 4: the arcs 3 -> 1 (over 2) and 1 -> 4 (over 2 and 3)
    # cross 0 -> 2. The shorter, 3 -> 1, is lifted first to 2 -> 1; 1 -> 4 still spans 2,
    # which is not below 1, so it is lifted to 2 -> 4.
    assert lift_to_projective([-1, 3, 0, 2, 1]).tolist() == [-1, 2, 0, 2, 2]
    assert lift_to_projective([-1, 0, 1, 1]).tolist() == [-1, 0, 1, 1]
    # the order of the lifts matters from 4 words: 4 -> 1 (length 3) crosses before 1 -> 2
    # (length 1) does not, but the shortest crossing arc, 2 -> 4 over 3, is lifted first
    # (lifting the first crossing arc found would give [-1, 2, 0, 2, 2])
    assert lift_to_projective([-1, 4, 0, 1, 2]).tolist() == [-1, 2, 0, 4, 2]
    # equally short crossing arcs: the leftmost dependent's is lifted first (the rightmost
    # first would give [-1, 2, 3, 0, 5, 3])
    assert lift_to_projective([-1, 2, 5, 0, 1, 3]).tolist() == [-1, 2, 3, 0, 3, 3]


@pytest.mark.parametrize("n", [3, 4, 5])
def test_lifting_every_tree_gives_a_projective_tree_over_ancestors(n):
    from arborist.parser.tree import lift_to_projective

    lifted_any = 0
    for single_root in (True, False):
        for heads in spanning_trees(n, single_root):
            lifted = lift_to_projective(heads)
            assert lifted.dtype == np.int32 and lifted[0] == -1
            assert is_tree(tuple(lifted)) and is_projective(tuple(lifted))
            if is_projective(tuple(heads)):
                assert np.array_equal(lifted, heads)
                continue
            lifted_any += 1
            if single_root:  # a lift never reaches the root when one word hangs from it
                assert (lifted == 0).sum() == 1
            # each word keeps its head or moves to an ancestor of it in the original tree;
            # the root's children stay (an arc from the root is never lifted)
            for m in range(1, n + 1):
                a = int(heads[m])
                while a != lifted[m] and a > 0:
                    a = int(heads[a])
                assert a == lifted[m]
                if heads[m] == 0:
                    assert lifted[m] == 0
    assert lifted_any > 0


def test_lift_nonprojective_option_changes_only_projective_training_trees():
    from arborist.components.parser import Parser
    from arborist.registry import make_structure

    words = WORDS[:4]
    x = Sentence.from_columns(words, words, ["X"] * 4, ["X"] * 4, heads=[3, 0, 2, 1])
    call = {"@structures": "arborist.DependencyTree.v2", "hash_bits": 16, "projective": True}
    plain, lifting = make_structure(call), make_structure({**call, "lift_nonprojective": True})
    assert plain.training_tree(x) is x
    assert lifting.training_tree(x).heads.tolist() == [-1, 2, 0, 2, 2]
    assert make_structure({**call, "projective": False, "lift_nonprojective": True}).training_tree(x) is x
    # saved with the model, left out of the call when off (older models compare equal)
    assert "lift_nonprojective" not in plain.registry_call()
    assert make_structure(lifting.registry_call()).lift_nonprojective
    second = make_structure({**call, "order": 2, "lift_nonprojective": True})
    assert second.training_tree(x).heads.tolist() == [-1, 2, 0, 2, 2]
    # the parser trains on the lifted tree and is scored on the treebank's own
    parser = Parser(lifting)
    assert parser.examples([x], training=True)[0].heads.tolist() == [-1, 2, 0, 2, 2]
    assert parser.examples([x])[0].heads.tolist() == [-1, 3, 0, 2, 1]
    # projective = "auto" (the v2 default) lifts once training has decided on projective trees
    auto = make_structure({**call, "projective": "auto", "lift_nonprojective": True})
    auto.initialize([Sentence.from_columns(words, words, ["X"] * 4, ["X"] * 4, heads=[0, 1, 2, 3])] * 20 + [x])
    assert auto.projective is True
    assert Parser(auto).examples([x], training=True)[0].heads.tolist() == [-1, 2, 0, 2, 2]
