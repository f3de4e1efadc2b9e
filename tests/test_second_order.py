"""Second-order trees (sibling and grandparent parts), their kernels, features and pruner,
against brute-force enumeration of projective trees."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest

from arborist.weights import Weights
from arborist.parser.eisner import eisner_argmax, eisner_marginals
from arborist.parser.second_order_eisner import (SecondOrderLayout, second_order_argmax, second_order_hill_climb,
                                                 second_order_marginals)
from arborist.parser.part_features import PartFeatures
from arborist.parser.second_order import PART_TYPES, ArcPruner, SecondOrderTree, prune
from arborist.parser.features import DEFAULT_TEMPLATES
from arborist.registry import registry
from confection import Config

from arborist.corpus import read_corpus
from arborist.sentence import Sentence

from protocol import check_gradient, check_protocol
from test_tree import HASH_BITS, TAGS, WORDS, hamming, is_tree, projective_trees, sentence, spanning_trees

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"
PART_CHOICES = [("sibling",), ("grandparent",), ("stop",), ("sibling", "grandparent"), ("sibling", "stop"),
                ("sibling", "grandparent", "stop")]


def layout_of(allowed, parts):
    return SecondOrderLayout(allowed, "sibling" in parts, "grandparent" in parts, "stop" in parts)


def random_mask(rng, n, density):
    """Allowed arcs: a random share of all arcs plus a right-branching chain (so a
    single-root projective tree always remains)."""
    allowed = rng.random((n + 1, n + 1)) < density
    allowed[np.arange(n), np.arange(1, n + 1)] = True
    return allowed


def parts_of(heads):
    """The sibling (h, s, m), stop (h, s, STOP) and grandparent (g, h, m) parts of a tree,
    from their definitions: STOP is n+1 on the right, -1 on the left (the root has no
    left side), s the outermost child or h itself."""
    n = len(heads) - 1
    siblings, stops, grandparents = set(), set(), set()
    for h in range(n + 1):
        for side, stop in (([m for m in range(h + 1, n + 1) if heads[m] == h], n + 1),
                           ([m for m in range(h - 1, 0, -1) if heads[m] == h], -1)):
            previous = h
            for m in side:  # nearest to h first
                siblings.add((h, previous, m))
                previous = m
            if h >= 1 or stop > 0:
                stops.add((h, previous, stop))
    for m in range(1, n + 1):
        if heads[m] >= 1:
            grandparents.add((heads[heads[m]], heads[m], m))
    return siblings, stops, grandparents


def enumerate_scores(layout, scores, trees):
    """Each tree's score, summed from the parts' definitions (not the layout's indicator)."""
    arc_index = {tuple(a): i for i, a in enumerate(layout.arcs)}
    sib_index = {tuple(p): layout.sibling_offset + i for i, p in enumerate(layout.siblings)}
    stop_index = {tuple(p): layout.stop_offset + i for i, p in enumerate(layout.stops)}
    assert len(stop_index) == layout.n_stop_slots  # each stop part once
    grand_index = {tuple(p): layout.grand_offset + i for i, p in enumerate(layout.grandparents)}
    values, indicators = [], []
    for heads in trees:
        ind = np.zeros(layout.n_parts)
        for m in range(1, len(heads)):
            ind[arc_index[(heads[m], m)]] = 1
        siblings, stops, grandparents = parts_of(heads)
        if layout.sibling:
            for p in siblings:
                ind[sib_index[p]] = 1
        if layout.stop:
            for p in stops:
                ind[stop_index[p]] = 1
        if layout.grandparent:
            for p in grandparents:
                ind[grand_index[p]] = 1
        values.append(ind @ scores)
        indicators.append(ind)
    return np.array(values), np.array(indicators)


@pytest.mark.parametrize("parts", PART_CHOICES)
@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("pruned", [False, True])
def test_kernels_against_brute_force(n, single_root, parts, pruned):
    """argmax, log Z and the marginals of every part type (arcs, siblings, grandparents)
    against enumeration of every projective tree of allowed arcs."""
    rng = np.random.default_rng([n, single_root, len(parts), pruned, parts[0] == "sibling", "stop" in parts])
    for _ in range(3):
        allowed = random_mask(rng, n, 0.5) if pruned else np.ones((n + 1, n + 1), dtype=bool)
        layout = layout_of(allowed, parts)
        trees = [y for y in projective_trees(n, single_root)
                 if all(allowed[y[m], m] for m in range(1, n + 1))]
        scores = rng.normal(size=layout.n_parts) * 2
        values, indicators = enumerate_scores(layout, scores, trees)
        heads, best = second_order_argmax(layout, scores, single_root)
        assert np.isclose(best, values.max())
        assert any(np.array_equal(heads, y) for y in trees)
        assert np.isclose(layout.indicator(heads) @ scores, values.max())
        mu, logz = second_order_marginals(layout, scores, single_root)
        assert np.isclose(logz, np.logaddexp.reduce(values), atol=1e-9)
        expected = np.exp(values - np.logaddexp.reduce(values)) @ indicators
        np.testing.assert_allclose(mu, expected, atol=1e-9)
        # the layout's indicator is the parts' definition, each part once (it counts, so a
        # part found twice shows)
        for y, ind in zip(trees, indicators):
            np.testing.assert_array_equal(layout.indicator(y), ind)


def test_part_counts_of_a_full_layout():
    n = 4
    layout = SecondOrderLayout(np.ones((n + 1, n + 1), dtype=bool))
    assert layout.n_arcs == n * n  # every head 0..n but m itself, for each m
    # sibling slots: for arc (h, m), one first-child slot plus one per word strictly between
    # h and m other than... every word between is an allowed child of h
    expected = sum(1 + max(0, abs(h - m) - 1) for h in range(n + 1) for m in range(1, n + 1) if h != m)
    assert layout.n_sibling_slots == expected
    # grandparent slots: arc (h, m) with h >= 1 has one per allowed head of h (n of them)
    assert layout.n_grand_slots == sum(n for h in range(1, n + 1) for m in range(1, n + 1) if h != m)
    assert {tuple(p) for p in layout.siblings} >= {(2, 2, 3), (2, 3, 4), (4, 3, 1), (0, 0, 1), (0, 2, 4)}
    # stop slots: one per arc (as the outermost child) and one per childless side (the root
    # has no left side); they come after the siblings, and only with stop = True
    assert layout.n_stop_slots == layout.n_arcs + 2 * n + 1 and not layout.stop
    assert layout.grand_offset == layout.stop_offset == layout.n_arcs + layout.n_sibling_slots
    assert {tuple(p) for p in layout.stops} >= {(2, 4, 5), (2, 1, -1), (0, 4, 5), (0, 0, 5), (3, 3, -1)}
    with_stop = SecondOrderLayout(np.ones((n + 1, n + 1), dtype=bool), stop=True)
    assert with_stop.grand_offset == with_stop.stop_offset + with_stop.n_stop_slots
    assert with_stop.n_parts == layout.n_parts + layout.n_stop_slots


@pytest.mark.parametrize("single_root", [True, False])
def test_zero_second_order_scores_reduce_to_first_order_eisner(single_root):
    rng = np.random.default_rng(7)
    n = 12
    arc = rng.normal(size=(n + 1, n + 1)) * 3
    layout = SecondOrderLayout(np.ones((n + 1, n + 1), dtype=bool))
    scores = np.zeros(layout.n_parts)
    scores[: layout.n_arcs] = arc[layout.arcs[:, 0], layout.arcs[:, 1]]
    heads, best = second_order_argmax(layout, scores, single_root)
    np.testing.assert_array_equal(heads, eisner_argmax(arc, single_root)[0])
    mu, logz = second_order_marginals(layout, scores, single_root)
    mu1, logz1 = eisner_marginals(arc, single_root)
    assert np.isclose(logz, logz1)
    np.testing.assert_allclose(mu[: layout.n_arcs], mu1[layout.arcs[:, 0], layout.arcs[:, 1]], atol=1e-10)


def test_no_overflow_with_large_scores():
    rng = np.random.default_rng(3)
    n = 8
    layout = SecondOrderLayout(random_mask(rng, n, 0.6))
    scores = rng.normal(size=layout.n_parts) * 1e4
    mu, logz = second_order_marginals(layout, scores)
    heads, best = second_order_argmax(layout, scores)
    assert np.isfinite(logz) and np.isfinite(mu).all()
    assert np.isclose(logz, best, rtol=1e-6)  # the best tree takes (nearly) all the mass
    np.testing.assert_allclose(mu, layout.indicator(heads), atol=1e-6)


def test_a_word_without_heads_and_an_infeasible_mask_are_errors():
    allowed = np.ones((4, 4), dtype=bool)
    allowed[:, 2] = False
    with pytest.raises(ValueError, match="word 2 has no allowed head"):
        SecondOrderLayout(allowed)
    allowed = np.zeros((3, 3), dtype=bool)
    allowed[2, 1] = allowed[1, 2] = True  # no arc from the root
    layout = SecondOrderLayout(allowed)
    with pytest.raises(ValueError, match="no projective tree"):
        second_order_argmax(layout, np.zeros(layout.n_parts))
    with pytest.raises(ValueError, match="not among the allowed arcs"):
        layout.indicator(np.array([-1, 0, 1]))


def second_order_tree(parts, single_root):
    return SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, single_root, parts=parts)


@pytest.mark.parametrize("parts", PART_CHOICES)
@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("pruned", [False, True])
def test_protocol_against_brute_force(n, single_root, parts, pruned):
    rng = np.random.default_rng([n, single_root, len(parts), pruned, "stop" in parts, 11])
    masks = {n: random_mask(rng, n, 0.5)} if pruned else None
    structure = second_order_tree(parts, single_root)
    x = structure.example(sentence(n), masks[n] if pruned else None)  # the sentence with its pruned parts
    allowed = masks[n] if pruned else np.ones((n + 1, n + 1), dtype=bool)
    labels = [y for y in projective_trees(n, single_root) if all(allowed[y[m], m] for m in range(1, n + 1))]
    for _ in range(2):
        scores = rng.normal(size=x.layout.n_parts) * 2
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(structure, x, scores, labels, gold, hamming, rng, HASH_BITS)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [2, 4])
def test_marginals_are_gradient_of_log_z(n, single_root):
    rng = np.random.default_rng(n)
    structure = second_order_tree(("sibling", "grandparent", "stop"), single_root)
    x = structure.example(sentence(n))
    check_gradient(structure, x, rng.normal(size=x.layout.n_parts))


def test_perceptron_update_adds_the_features_of_the_parts_that_differ():
    """A hand-checkable update: gold 0->2, 2->1, 2->3 against 0->1, 1->2, 2->3. The
    differing parts are arcs (2,1), (1,2), (0,1) vs (0,2); the gold's siblings (0,0,2),
    (2,2,1), (2,2,3) against (0,0,1), (1,1,2), (2,2,3): (2,2,3) cancels; grandparents
    (0,2,1), (0,2,3) against (0,1,2), (1,2,3)."""
    x = sentence(3)
    tree = second_order_tree(("sibling", "grandparent"), True)
    gold, pred = np.array([-1, 2, 0, 2]), np.array([-1, 0, 1, 2])
    w = Weights(HASH_BITS, False)
    tree.add_features(x, tree.indicator(x, gold) - tree.indicator(x, pred), w, 1.0)
    expected = Weights(HASH_BITS, False)
    arcs = tree.features
    for (h, m), sign in [((2, 1), 1), ((0, 2), 1), ((2, 3), 1), ((0, 1), -1), ((1, 2), -1), ((2, 3), -1)]:
        for index in arcs.arc_indices(x, h, m):
            expected.array[index] += sign
    pf = tree.part_features
    for part, sign in [((0, 0, 2), 1), ((2, 2, 1), 1), ((0, 0, 1), -1), ((1, 1, 2), -1)]:
        for index in pf.part_indices(x, part, "sibling"):
            expected.array[index] += sign
    for part, sign in [((0, 2, 1), 1), ((0, 2, 3), 1), ((0, 1, 2), -1), ((1, 2, 3), -1)]:
        for index in pf.part_indices(x, part, "grandparent"):
            expected.array[index] += sign
    np.testing.assert_allclose(w.array, expected.array)
    assert np.abs(w.array).sum() > 0


def test_part_features_distinguish_first_child_direction_and_words():
    x = sentence(6)
    pf = PartFeatures(bits=20)
    first, inner = set(pf.part_indices(x, (2, 2, 4), "sibling")), set(pf.part_indices(x, (2, 3, 4), "sibling"))
    assert first and inner and not first & inner
    right, left = set(pf.part_indices(x, (3, 3, 5), "sibling")), set(pf.part_indices(x, (3, 3, 1), "sibling"))
    assert not right & left
    g1, g2 = set(pf.part_indices(x, (0, 2, 3), "grandparent")), set(pf.part_indices(x, (4, 2, 3), "grandparent"))
    assert not g1 & g2
    # stop parts: the last child's stop differs from any sibling pair, by side, and from
    # the childless side's; the two sides of a childless word differ too
    n = x.n
    last_right = set(pf.part_indices(x, (2, 4, n + 1), "sibling"))
    last_left = set(pf.part_indices(x, (5, 3, -1), "sibling"))
    assert last_right and last_left and not last_right & inner and not last_right & first
    assert not last_right & set(pf.part_indices(x, (2, 4, -1), "sibling"))
    assert not last_right & set(pf.part_indices(x, (2, 2, n + 1), "sibling"))
    assert not set(pf.part_indices(x, (3, 3, n + 1), "sibling")) & set(pf.part_indices(x, (3, 3, -1), "sibling"))
    # a stop is not a sibling at the last word (m = n) nor at the root (m = 0)
    assert not last_right & set(pf.part_indices(x, (2, 4, n), "sibling"))
    assert not last_left & set(pf.part_indices(x, (5, 3, 0), "sibling"))
    # a stop part's features do not depend on where the sentence ends (no distance)
    pf_pair = PartFeatures(["s.upos m.upos"], ["g.upos"], bits=20)
    short, long = sentence(3), sentence(7)  # words 2 and 5 are both nouns
    assert sorted(pf_pair.part_indices(short, (1, 2, 4), "sibling")) == sorted(
        pf_pair.part_indices(long, (1, 2, 8), "sibling"))
    assert sorted(pf_pair.part_indices(short, (3, 2, -1), "sibling")) == sorted(
        pf_pair.part_indices(long, (6, 5, -1), "sibling"))
    with pytest.raises(ValueError, match="stop"):
        pf.part_indices(x, (2, 4, n + 2), "sibling")
    with pytest.raises(ValueError, match="part positions"):
        pf.part_indices(x, (2, 4, n + 1), "grandparent")


def test_part_features_depend_only_on_the_words_and_configuration():
    """The same words in the same configuration (directions, distance) give the same features
    wherever they stand in the sentence; a different word in a role gives others. The
    expectation comes from a second sentence, not from the same call again."""
    x = sentence(6)  # words 1..3: the dog saw
    filler = ("Zyx", "INTJ", "UH")  # unlike any of x's words and tags

    def other(words_tags):
        return Sentence.from_columns([w for w, _, _ in words_tags], [w for w, _, _ in words_tags],
                                     [u for _, u, _ in words_tags], [t for _, _, t in words_tags])

    same = [(WORDS[i], *TAGS[i]) for i in range(3)]
    y = other([filler, filler] + same + [filler])  # x's words 1..3 at 3..5, other neighbours
    pf = PartFeatures(bits=20)
    for kind, part, moved in [("grandparent", (1, 2, 3), (3, 4, 5)), ("grandparent", (3, 2, 1), (5, 4, 3)),
                              ("grandparent", (1, 3, 2), (3, 5, 4)), ("sibling", (1, 2, 3), (3, 4, 5)),
                              ("sibling", (2, 2, 3), (4, 4, 5)), ("sibling", (3, 2, 1), (5, 4, 3))]:
        expected = np.sort(pf.part_indices(x, part, kind))
        assert len(expected) > 0
        np.testing.assert_array_equal(np.sort(pf.part_indices(y, moved, kind)), expected, err_msg=f"{kind} {part}")
    # A different word in any one role (form, lemma and tags) changes the features.
    for role in range(3):
        changed = list(same)
        changed[role] = ("cat", "NOUN", "NNS")
        z = other([filler, filler] + changed + [filler])
        for kind in ("grandparent", "sibling"):
            assert set(pf.part_indices(z, (3, 4, 5), kind)) != set(pf.part_indices(x, (1, 2, 3), kind)), (kind, role)


def test_part_context_atoms_read_the_neighbours_of_their_role():
    """`s+1.upos` reads the tag after the inner sibling: the same part elsewhere gives the
    same features exactly when those neighbours agree, and a neighbour beyond the sentence
    reads the boundary value on either side (not the root, nor a missing value)."""
    def tagged(upos):
        return Sentence.from_columns(["w"] * len(upos), ["w"] * len(upos), list(upos), ["X"] * len(upos))

    pf = PartFeatures(["s.upos s+1.upos m-1.upos m.upos"], ["g.upos g-1.upos m.upos m+1.upos"], bits=20)

    def features(x, part, kind="sibling"):
        return sorted(pf.part_indices(x, part, kind))

    x = tagged(["A", "B", "C", "D", "E"])  # words 1..5
    # the inner sibling 2 (B, next C) and m = 4 (D, previous C), moved two to the right
    assert features(x, (1, 2, 4)) == features(tagged(["Q", "R", "A", "B", "C", "D", "E"]), (3, 4, 6))
    assert features(x, (1, 2, 4)) != features(tagged(["A", "B", "Z", "D", "E"]), (1, 2, 4))  # s+1 and m-1
    assert features(x, (1, 2, 4)) == features(tagged(["A", "B", "C", "D", "Z"]), (1, 2, 4))  # not read
    # grandparent g = 1 reads g-1, the root (position 0); m = 5 reads m+1, past the end
    end = features(x, (1, 3, 5), "grandparent")
    assert end == features(tagged(["A", "Q", "C", "Q", "E"]), (1, 3, 5), "grandparent")
    assert end != features(tagged(["A", "Q", "C", "Q", "E", "F"]), (1, 3, 5), "grandparent")  # m+1 = F
    shifted = tagged(["Q", "A", "B", "C", "D", "E"])  # g-1 is now Q, not the root
    assert end != features(shifted, (2, 4, 6), "grandparent")
    # two before word 1 is before the sentence, as is two before a root stand-in
    pf2 = PartFeatures(["s-2.upos m.upos"], ["g.upos m.upos"], bits=20)
    assert sorted(pf2.part_indices(x, (3, 1, 2), "sibling")) == sorted(pf2.part_indices(
        tagged(["A", "B", "C", "D"]), (3, 1, 2), "sibling"))
    assert sorted(pf2.part_indices(x, (3, 1, 2), "sibling")) != sorted(pf2.part_indices(x, (4, 3, 2), "sibling"))
    # before the root is a boundary value, not the root's
    pf3 = PartFeatures(["h-1.upos"], ["g.upos"], bits=20)
    assert set(pf3.part_indices(x, (0, 0, 1), "sibling")) != set(pf3.part_indices(x, (1, 1, 2), "sibling"))


def test_bad_part_templates_are_rejected():
    with pytest.raises(ValueError, match="bad sibling feature atom 's[+]3.xpos'"):
        PartFeatures(["s+3.xpos m.xpos"], ["g.xpos m.xpos"])
    with pytest.raises(ValueError, match="bad grandparent feature atom 'g1.xpos'"):
        PartFeatures(["s.xpos m.xpos"], ["g1.xpos m.xpos"])
    with pytest.raises(ValueError, match="bad sibling feature atom 'g.xpos'"):
        PartFeatures(["g.xpos m.xpos"], ["g.xpos m.xpos"])
    with pytest.raises(ValueError, match="bad grandparent feature atom 's.form'"):
        PartFeatures(["s.xpos m.xpos"], ["s.form m.xpos"])
    with pytest.raises(ValueError, match="projective must be"):
        SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, projective="no")
    with pytest.raises(ValueError, match="parts must be"):
        SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, parts=["trigram"])


def test_prune_keeps_heads_within_the_factor_at_most_k_and_the_best_tree():
    mu = np.zeros((4, 4))
    mu[:, 1] = [0.5, 0.0, 0.3, 0.2]       # word 1: all three heads within 1e-1 of the best
    mu[:, 2] = [0.999, 0.00099, 0.0, 0.00001]  # word 2: 1 -> 2 is just under 1e-3 x best
    mu[:, 3] = [0.01, 0.09, 0.9, 0.0]
    best_tree = np.array([-1, 0, 0, 0])  # its arc 0 -> 3 is kept whatever its marginal
    allowed = prune(mu, best_tree, threshold=1e-3, max_heads=2)
    assert allowed[:, 1].tolist() == [True, False, True, False]  # the top 2 of 3 within the factor
    assert allowed[:, 2].tolist() == [True, False, False, False]  # 1 -> 2 is just under 1e-3 x best
    assert allowed[:, 3].tolist() == [True, True, True, False]  # 2 and 1 (top 2), and 0 from the best tree
    assert not allowed[:, 0].any() and not allowed.diagonal().any()


def reference_prune(marginals, best_tree, threshold, max_heads):
    """`prune` written with numpy (the definition the kernel must match)."""
    n = marginals.shape[0] - 1
    columns = marginals[:, 1:]
    keep = columns >= threshold * columns.max(axis=0, keepdims=True)
    if max_heads < n + 1:
        order = np.argsort(-columns, axis=0, kind="stable")
        top = np.zeros_like(keep)
        np.put_along_axis(top, order[:max_heads], True, axis=0)
        keep &= top
    allowed = np.zeros((n + 1, n + 1), dtype=bool)
    allowed[:, 1:] = keep
    allowed[best_tree[1:], np.arange(1, n + 1)] = True
    allowed[np.arange(n + 1), np.arange(n + 1)] = False
    return allowed


@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
def test_prune_matches_its_numpy_definition_with_ties(n):
    rng = np.random.default_rng(n)
    for trial in range(40):
        # marginals rounded to a few values, so that ties at the k-th head are common
        mu = np.round(rng.random((n + 1, n + 1)) ** 3, 1 if trial % 2 else 3)
        tree = np.concatenate([[-1], rng.integers(0, n + 1, n)])
        tree[1:][tree[1:] == np.arange(1, n + 1)] = 0
        if trial % 5 == 4:  # a NaN (or an infinity) in a column: numpy's max is NaN there
            mu[rng.integers(0, n + 1), rng.integers(1, n + 1)] = np.nan if trial % 10 == 4 else np.inf
        for threshold, max_heads in [(1e-4, 10), (0.5, 2), (0.0, 1), (1.0, 3), (1e-2, n + 5), (0.0, 2)]:
            assert np.array_equal(prune(mu, tree, threshold, max_heads),
                                  reference_prune(mu, tree, threshold, max_heads))
    with pytest.raises(ValueError, match="head of word 1 is -1"):
        prune(np.zeros((n + 1, n + 1)), np.full(n + 1, -1), 1e-4, 10)


def reference_layout_tables(allowed):
    """The index tables of `SecondOrderLayout`, computed with numpy from their definitions."""
    mask = np.array(allowed, dtype=bool, copy=True)
    n = mask.shape[0] - 1
    mask[:, 0] = False
    np.fill_diagonal(mask, False)
    counts = mask.sum(axis=0)
    mods, heads = np.nonzero(mask.T)  # by modifier, then head
    A = len(heads)
    head_start = np.concatenate([[0], np.cumsum(counts)])
    slot = np.full((n + 1, n + 1), -1)
    slot[heads, mods] = np.arange(A) - head_start[mods]
    child_arc = np.lexsort((mods, heads))
    child_start = np.concatenate([[0], np.cumsum(np.bincount(heads, minlength=n + 1))])
    rank = np.empty(A, dtype=int)
    rank[child_arc] = np.arange(A)
    split = child_start[:-1] + np.bincount(heads[mods < heads], minlength=n + 1)
    inner = np.where(mods > heads, rank - split[heads], split[heads] - 1 - rank)
    sib_start = np.concatenate([[0], np.cumsum(1 + inner)])
    grand_start = np.concatenate([[0], np.cumsum(np.where(heads >= 1, counts[heads], 0))])
    widths = np.abs(mods - heads)
    arc_order = np.argsort(widths, kind="stable")
    width_start = np.searchsorted(widths[arc_order], np.arange(n + 2))
    return {"arc_h": heads, "arc_m": mods, "head_start": head_start, "slot": slot, "child_arc": child_arc,
            "child_start": child_start, "rank": rank, "split": split, "sib_start": sib_start,
            "grand_start": grand_start, "arc_order": arc_order, "width_start": width_start,
            "kmax": max(1, int(counts.max()))}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20])
def test_layout_tables_match_their_numpy_definitions(n):
    rng = np.random.default_rng(10 + n)
    for density in (0.1, 0.4, 1.0):
        for _ in range(10):
            allowed = random_mask(rng, n, density)
            allowed[rng.integers(0, n + 1), 0] = True  # arcs into the root are never parts
            layout = SecondOrderLayout(allowed)
            for name, expected in reference_layout_tables(allowed).items():
                assert np.array_equal(np.asarray(getattr(layout, name)), expected), name
            assert layout.n_arcs == len(layout.arc_h)
            assert layout.n_sibling_slots == layout.sib_start[-1] and layout.n_grand_slots == layout.grand_start[-1]
    fortran = np.asfortranarray(random_mask(rng, n, 0.5))  # any memory layout of the mask
    assert np.array_equal(SecondOrderLayout(fortran).slot, SecondOrderLayout(np.ascontiguousarray(fortran)).slot)


TRAINERS = {
    "perceptron": {"@trainers": "arborist.Perceptron.v1", "seed": 0},
    "swvp": {"@trainers": "arborist.SWVP.v1", "seed": 0},
    "eg_crf": {"@trainers": "arborist.EG.v1", "objective": "crf", "C": 1.0, "eta": 0.5, "anneal": False, "seed": 0},
    "eg_m3n": {"@trainers": "arborist.EG.v1", "objective": "m3n", "C": 1.0, "eta": 0.5, "anneal": False, "seed": 0},
}


@pytest.fixture(scope="module")
def sample_sentences():
    return read_corpus(SAMPLE / "sample-train.conllu", require_heads=True)


@pytest.mark.parametrize("trainer_name", list(TRAINERS))
def test_every_trainer_trains_a_pruned_second_order_tree(trainer_name, sample_sentences):
    """The four trainers train the second-order structure with every part type unchanged
    (only the protocol), with a trained pruner, and fit the training data."""
    train = sample_sentences[:60]
    pruner_structure = ArcPruner(hash_bits=16, threshold=1e-3, max_heads=4)
    pruner_trainer = registry.resolve(Config({"t": TRAINERS["perceptron"]}))["t"]
    pruner_trainer.begin(pruner_structure, train, 16)
    for _ in range(3):
        pruner_trainer.epoch(pruner_structure, train)
    from arborist import Pruner

    pruner = Pruner(pruner_structure, pruner_trainer.prediction_weights().array)
    tree = SecondOrderTree(DEFAULT_TEMPLATES, 18, parts=PART_TYPES)
    tree.initialize(train)
    train = [tree.example(x, pruner.allowed(x), keep_gold=True) for x in train]
    assert all(x.layout.allowed[x.heads[1:], np.arange(1, x.n + 1)].all() for x in train)  # gold kept
    words = sum(x.n for x in train)
    assert 0 <= sum(x.pruned_gold for x in train) < words
    assert sum(int(x.layout.allowed[:, 1:].sum()) for x in train) >= words
    trainer = registry.resolve(Config({"t": TRAINERS[trainer_name]}))["t"]
    trainer.begin(tree, train, 18)
    for _ in range(4):
        metrics = trainer.epoch(tree, train)
    w = trainer.prediction_weights()
    right = sum(tree.hits(x, x.heads, tree.argmax(x, tree.scores(x, w)))[0] for x in train)
    assert right / sum(x.n for x in train) > 0.9, metrics


@pytest.fixture(scope="module")
def trained_second_order(tmp_path_factory):
    """configs/en_ewt_second_order.cfg on the sample treebank: a pruner, then a pruned
    second-order parser, 3 epochs each, the parser the mean of 2 runs (the config's 16)."""
    from arborist.train import load_config, train

    out = tmp_path_factory.mktemp("second_order")
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "en_ewt_second_order.cfg", {
        "paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
        "components.pruner.structure.hash_bits": 16, "components.parser.structure.hash_bits": 18,
        "components.pruner.training.max_epochs": 3, "components.parser.training.max_epochs": 3,
        "components.parser.training.seeds": 2, "components.pruner.trainer.eta0": 0.05})
    pipeline, report = train(config, out, use_wandb=False)
    return out, pipeline, report


def test_pruned_second_order_parser_trains_saves_loads_and_evaluates(trained_second_order):
    from typer.testing import CliRunner

    from arborist.cli import app
    from arborist.model import load

    out, pipeline, report = trained_second_order
    history = report["components"]["pruner"]["history"]
    assert all(0 < h["dev_prune_recall"] <= 100 and h["dev_heads_per_word"] >= 1 for h in history)
    assert report["components"]["parser"]["best"] > 80
    assert len(report["components"]["parser"]["members"]) == 2 and pipeline.writer("head").info["seeds"] == 2
    loaded = load(out)
    assert isinstance(loaded.writer("head").structure, SecondOrderTree)
    assert loaded.writer("head").pruner is loaded.writer("arcs")  # linked on load
    assert loaded.writer("head").structure.registry_call() == pipeline.writer("head").structure.registry_call()
    dev = read_corpus(SAMPLE / "sample-dev.conllu", require_heads=True)
    for x in dev:
        np.testing.assert_array_equal(loaded.writer("head").predict(x), pipeline.writer("head").predict(x))
    result = CliRunner().invoke(app, ["evaluate", str(out), str(SAMPLE / "sample-dev.conllu"), "--json"])
    assert result.exit_code == 0, result.output
    scores = __import__("json").loads(result.stdout)
    assert scores["uas"] == pytest.approx(report["components"]["parser"]["best"])
    assert 90 <= scores["prune_recall"] <= 100 and scores["heads_per_word"] >= 1


# -- approximate non-projective decoding (hill climbing) ----------------------------------

def single_changes(heads, allowed, single_root):
    """Every tree one head change away from `heads` within `allowed` (by brute force)."""
    n = len(heads) - 1
    for m in range(1, n + 1):
        for h in range(n + 1):
            if h == heads[m] or not allowed[h, m]:
                continue
            y = np.array(heads)
            y[m] = h
            if is_tree(y) and (not single_root or int((y[1:] == 0).sum()) == 1):
                yield y


@pytest.mark.parametrize("parts", PART_CHOICES)
@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("pruned", [False, True])
def test_hill_climb_ends_at_a_local_optimum_between_the_projective_and_the_best_tree(n, single_root, parts, pruned):
    rng = np.random.default_rng([n, single_root, len(parts), pruned, parts[0] == "sibling", "stop" in parts, 29])
    allowed = random_mask(rng, n, 0.6) if pruned else np.ones((n + 1, n + 1), dtype=bool)
    layout = layout_of(allowed, parts)
    allowed = layout.allowed
    trees = [y for y in spanning_trees(n, single_root) if all(allowed[y[m], m] for m in range(1, n + 1))]
    climbed = 0
    for _ in range(10):
        scores = rng.normal(size=layout.n_parts) * 2
        values, _ = enumerate_scores(layout, scores, trees)
        start, start_score = second_order_argmax(layout, scores, single_root)
        heads, score, moves = second_order_hill_climb(layout, scores, start, single_root)
        assert is_tree(heads) and all(allowed[heads[m], m] for m in range(1, n + 1))
        if single_root:
            assert int((heads[1:] == 0).sum()) == 1
        assert np.isclose(score, layout.indicator(heads) @ scores)  # its own score is the parts' sum
        assert score >= start_score - 1e-9 and score <= values.max() + 1e-9
        assert (moves == 0) == np.array_equal(heads, start)
        for y in single_changes(heads, allowed, single_root):
            assert layout.indicator(y) @ scores <= score + 1e-9, (heads, y)
        climbed += moves > 0
    if n == 5 and not pruned:
        assert climbed > 0  # the climb did leave the projective tree sometimes


def test_hill_climb_finds_a_non_projective_tree_that_the_scores_prefer():
    """Arcs 0->2, 2->1, 1->3, 2->4 cross (1->3 with 2->4): with those arcs scoring high
    and every other part 0, the projective argmax cannot take them all, and one head
    change reaches the crossing tree."""
    n = 4
    layout = SecondOrderLayout(np.ones((n + 1, n + 1), dtype=bool))
    wanted = np.array([-1, 2, 0, 1, 2])
    scores = np.zeros(layout.n_parts)
    for m in range(1, n + 1):
        scores[layout.arc_index(int(wanted[m]), m)] = 5.0
    start, _ = second_order_argmax(layout, scores, True)
    assert not np.array_equal(start, wanted)
    heads, score, moves = second_order_hill_climb(layout, scores, start, True)
    np.testing.assert_array_equal(heads, wanted)
    assert score == 20.0 and moves >= 1


def test_hill_climb_rejects_heads_that_are_not_a_tree_of_allowed_arcs():
    layout = SecondOrderLayout(np.ones((4, 4), dtype=bool))
    zeros = np.zeros(layout.n_parts)
    with pytest.raises(ValueError, match="cycle"):
        second_order_hill_climb(layout, zeros, np.array([-1, 2, 1, 0]))
    with pytest.raises(ValueError, match="entries"):
        second_order_hill_climb(layout, zeros, np.array([-1, 0, 1]))


@pytest.mark.parametrize("single_root", [True, False])
def test_non_projective_second_order_tree_decodes_by_hill_climbing(single_root):
    rng = np.random.default_rng(5)
    n = 6
    projective = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, single_root, projective=True)
    climbing = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, single_root, projective=False)
    x = climbing.example(sentence(n))
    differs = 0
    for _ in range(20):
        scores = rng.normal(size=x.layout.n_parts) * 2
        start = projective.argmax(x, scores)
        heads = climbing.argmax(x, scores)
        np.testing.assert_array_equal(heads, second_order_hill_climb(x.layout, scores, start, single_root)[0])
        assert x.layout.indicator(heads) @ scores >= x.layout.indicator(start) @ scores - 1e-9
        differs += not np.array_equal(heads, start)
        # training uses the same decoder (cost-augmented for M3N) and projective marginals
        mu, _ = climbing.marginals(x, scores)
        np.testing.assert_array_equal(mu, projective.marginals(x, scores)[0])
    assert differs > 0
    assert climbing.registry_call()["projective"] is False


def test_second_order_projective_auto_is_decided_by_the_training_trees():
    tree = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective="auto")
    x = tree.example(sentence(3))
    with pytest.raises(ValueError, match="initialize"):
        tree.argmax(x, np.zeros(x.layout.n_parts))
    crossing = sentence(4)
    crossing.heads = np.array([-1, 2, 0, 1, 2])
    tree.initialize([crossing])
    assert tree.projective is False
    tree = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective="auto")
    tree.initialize([sentence(4)])
    assert tree.projective is True
    pruner = ArcPruner(hash_bits=HASH_BITS, projective="auto")  # the pruner decides the same way
    with pytest.raises(ValueError, match="initialize"):
        pruner.allowed(sentence(3), Weights(HASH_BITS))
    pruner.initialize([crossing])
    assert pruner.projective is False and pruner.registry_call()["projective"] is False
    assert pruner.allowed(crossing, Weights(HASH_BITS))[crossing.heads[1:], np.arange(1, 5)].all()


@pytest.mark.parametrize("single_root", [True, False])
def test_non_projective_pruner_keeps_matrix_tree_heads_and_both_best_trees(single_root):
    from arborist.parser.mst import mst_argmax, mst_marginals

    rng = np.random.default_rng(17)
    n = 9
    scores = rng.normal(size=(n + 1, n + 1)) * 3
    pruners = {p: ArcPruner(hash_bits=HASH_BITS, single_root=single_root, threshold=1e-2, max_heads=2, projective=p)
               for p in (True, False)}
    for pruner in pruners.values():
        pruner.scores = lambda x, w: scores  # the scores a trained model would give
    x = sentence(n)
    eisner_tree, mst_tree = eisner_argmax(scores, single_root)[0], mst_argmax(scores, single_root)[0]
    kept = pruners[False].allowed(x, None)
    expected = prune(mst_marginals(scores, single_root)[0], eisner_tree, 1e-2, 2)
    expected[mst_tree[1:], np.arange(1, n + 1)] = True
    np.testing.assert_array_equal(kept, expected)
    np.testing.assert_array_equal(pruners[True].allowed(x, None),
                                  prune(eisner_marginals(scores, single_root)[0], eisner_tree, 1e-2, 2))
    # a projective tree remains for the exact second-order decoder, and the MST tree for the climb
    layout = SecondOrderLayout(kept)
    second_order_argmax(layout, np.zeros(layout.n_parts), single_root)
    assert kept[mst_tree[1:], np.arange(1, n + 1)].all()
    assert pruners[False].registry_call()["projective"] is False


@pytest.mark.parametrize("parts", PART_CHOICES)
def test_part_scores_split_with_a_helper_equal_one_thread(parts, sample_sentences):
    """`scoring_threads`: a second-order tree scores part of each sentence's parts in a
    `Helper` thread while this thread scores the arcs and the rest. Every score must be the
    one-thread score, bit for bit, wherever the split falls (`lead`: none of the parts to
    all of them in the helper), and adds (made in one thread) are unchanged."""
    from arborist.helper import Helper
    from arborist.parser.part_features import PartSweeps
    from arborist.structure import scoring_threads

    rng = np.random.default_rng(11)
    tree = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, parts=parts)
    w = Weights(HASH_BITS, False, rng.normal(size=1 << HASH_BITS))
    examples = [tree.example(x, random_mask(rng, x.n, 0.3)) for x in sample_sentences[:40] if x.n <= 30]
    examples += [tree.example(sentence(n)) for n in (1, 2, 5)]
    alone = [tree.scores(x, w) for x in examples]
    coefficients = [rng.normal(size=x.layout.n_parts) * (rng.random(x.layout.n_parts) < 0.5) for x in examples]
    added_alone = Weights(HASH_BITS, False, w.array.copy())
    for x, c in zip(examples, coefficients):
        tree.add_features(x, c, added_alone, 0.5)
    with Helper() as helper:
        for lead in (-10 ** 6, 0, 7, 10 ** 6):
            for x, expected in zip(examples, alone):
                layout, arcs, groups, _ = tree._part_groups(x)
                sweeps = PartSweeps(tree.part_features, x, groups, w=w.array)
                sweeps.start(helper, lead)
                split = sweeps.finish()
                np.testing.assert_array_equal(np.concatenate(split), expected[layout.n_arcs:])
                parts = layout.n_parts - layout.n_arcs
                assert sweeps.split == (parts - min(parts, max(0, (parts + lead) // 2)),
                                        min(parts, max(0, (parts + lead) // 2)))
    added = Weights(HASH_BITS, False, w.array.copy())
    with scoring_threads(tree, 2):
        assert isinstance(tree.part_helper, Helper)
        in_block = [tree.scores(x, w) for x in examples]
        for x, c in zip(examples, coefficients):
            tree.add_features(x, c, added, 0.5)
    assert tree.part_helper is None and tree.score_helper is None
    for x, a, b in zip(examples, alone, in_block):
        assert np.count_nonzero(a[x.layout.n_arcs:]) > 0 or x.layout.n_parts == x.layout.n_arcs
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(added.array, added_alone.array)
    assert added.sq_norm_change == added_alone.sq_norm_change != 0.0
    with scoring_threads(tree, 1):
        assert tree.part_helper is None


def test_part_sweeps_and_the_helper_refuse_misuse():
    import pickle

    from arborist.helper import Helper
    from arborist.parser.part_features import PartSweeps

    x = sentence(4)
    tree = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, parts=PART_TYPES)
    layout, arcs, groups, slices = tree._part_groups(tree.example(x))
    w = Weights(HASH_BITS, False)
    with pytest.raises(RuntimeError, match="follows start"):
        PartSweeps(tree.part_features, x, groups, w=w.array).finish()
    with pytest.raises(ValueError, match="one of the two"):
        PartSweeps(tree.part_features, x, groups)
    adding = PartSweeps(tree.part_features, x, groups, coefficients=[np.ones(s.stop - s.start) for s in slices],
                        target=w)
    with Helper() as helper:
        with pytest.raises(ValueError, match="adds are made in one"):
            adding.start(helper)
        scoring = PartSweeps(tree.part_features, x, groups, w=w.array)
        with pytest.raises(TypeError):
            scoring.start(None)
        scoring.start(helper)
        with pytest.raises(RuntimeError, match="ran already"):
            scoring.start(helper)
        with pytest.raises(RuntimeError, match="ran already"):
            scoring.run()
        del scoring  # started, never finished: freed once the helper is done with it
        again = PartSweeps(tree.part_features, x, groups, w=w.array)
        again.start(helper, 10 ** 6)
        assert [len(s) for s in again.finish()] == [s.stop - s.start for s in slices]
        with pytest.raises(RuntimeError, match="ran already"):
            again.start(helper)
        once = PartSweeps(tree.part_features, x, groups, w=w.array)
        once.run()
        with pytest.raises(RuntimeError, match="ran already"):
            once.run()
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(helper)
        assert helper.thread.is_alive()
    assert helper.thread is None
    helper.close()  # closing twice is harmless
    w = Weights(HASH_BITS, False, np.random.default_rng(3).normal(size=1 << HASH_BITS))
    if hasattr(os, "fork"):  # a forked child has no helper thread: its share runs in the child's
        with Helper() as live:
            expected = np.concatenate(PartSweeps(tree.part_features, x, groups, w=w.array).run())
            pid = os.fork()
            if pid == 0:  # the child: exit 0 only with the right scores, and without hanging
                child = PartSweeps(tree.part_features, x, groups, w=w.array)
                child.start(live, 5)
                os._exit(0 if np.array_equal(np.concatenate(child.finish()), expected) else 1)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
    # a closed helper's share runs in the posting thread: the same scores
    late = PartSweeps(tree.part_features, x, groups, w=w.array)
    late.start(helper, 5)
    np.testing.assert_array_equal(np.concatenate(late.finish()),
                                  np.concatenate(PartSweeps(tree.part_features, x, groups, w=w.array).run()))


def test_eg_trains_the_same_weights_with_the_part_helper(sample_sentences):
    """An EG-M3N epoch and its gap pass within `scoring_threads(tree, 2)` train the weights
    of one thread bit for bit (the part scores are the same; adds stay in one thread)."""
    from arborist.structure import scoring_threads

    train = sample_sentences[:30]
    weights = []
    for threads in (1, 2):
        tree = SecondOrderTree(DEFAULT_TEMPLATES, 16, parts=PART_TYPES)
        tree.initialize(train)
        examples = [tree.example(x, keep_gold=True) for x in train if x.n <= 25]
        trainer = registry.resolve(Config({"t": {**TRAINERS["eg_m3n"], "objectives_every": 1}}))["t"]
        trainer.begin(tree, examples, 16)
        for _ in range(2):
            with scoring_threads(tree, threads):
                metrics = trainer.epoch(tree, examples)
        weights.append((trainer.prediction_weights().array.copy(), metrics["primal"], metrics["dual"]))
    np.testing.assert_array_equal(weights[0][0], weights[1][0])
    assert weights[0][1:] == weights[1][1:]
    assert np.abs(weights[0][0]).sum() > 0
