"""Distance pruning of first-order trees (`DependencyTree(prune_distances=True)`):
the learned table, the rule, the decoders on pruned scores against brute force over
the trees that use only kept arcs, the batch kernel against the one-sentence path, and
the parser component, which prunes when it parses and not when it trains."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_corpus
from arborist.parser.eisner import eisner_argmax
from arborist.parser.mst import mst_argmax
from arborist.registry import make_structure
from arborist.parser.tree import DependencyTree
from arborist.sentence import Sentence, SentenceBatch
from arborist.weights import Weights

from test_tree import projective_trees, sentence, spanning_trees

SAMPLE = Path(__file__).resolve().parent.parent / "corpora" / "sample"
HASH_BITS = 14
# sentence(n)'s tags cycle DET NOUN VERB DET NOUN ADP PROPN NOUN PUNCT
TABLE = {"upos": ["DET", "NOUN", "VERB", "ADP", "PROPN", "PUNCT"],
         "left": [[0] * 6 for _ in range(6)], "right": [[0] * 6 for _ in range(6)]}
TABLE["left"][1][0] = 2  # a NOUN heads a DET up to 2 words to its left
TABLE["left"][2][1] = 3  # a VERB heads a NOUN up to 3 words to its left
TABLE["right"][2][1] = 3  # and to its right


def pruned(projective=True, single_root=True, table=TABLE) -> DependencyTree:
    return DependencyTree(hash_bits=HASH_BITS, single_root=single_root, projective=projective,
                          prune_distances=True, max_distances=table)


def test_learns_the_longest_training_arc_of_each_tag_pair_and_direction():
    # x: word 1 (DET) is headed by word 4 (NOUN), a modifier 3 words left of its head;
    # word 2 (NOUN) by word 3 (VERB), left, 1; word 4 (NOUN) by word 3, right, 1. y adds a
    # shorter NOUN <- DET arc, which does not change the maximum.
    x = Sentence.from_columns(["the", "dog", "saw", "cats"], upos=["DET", "NOUN", "VERB", "NOUN"], heads=[4, 3, 0, 3])
    y = Sentence.from_columns(["a", "b"], upos=["DET", "NOUN"], heads=[2, 0])
    tree = DependencyTree(hash_bits=HASH_BITS, prune_distances=True)
    tree.initialize([x, y])
    table = tree.max_distances
    index = {t: i for i, t in enumerate(table["upos"])}
    assert set(index) == {"DET", "NOUN", "VERB"}  # the root's tag is not a tag
    assert table["left"][index["NOUN"]][index["DET"]] == 3
    assert table["left"][index["VERB"]][index["NOUN"]] == 1
    assert table["right"][index["VERB"]][index["NOUN"]] == 1
    assert table["right"][index["NOUN"]][index["DET"]] == 0  # never seen
    assert sum(map(sum, table["left"])) + sum(map(sum, table["right"])) == 5


def test_the_rule_keeps_root_neighbour_and_unknown_tag_arcs():
    tree = pruned()
    x = Sentence.from_columns(["a", "b", "c", "d", "e", "f"], upos=["DET", "X", "NOUN", "VERB", "PUNCT", "NOUN"])
    keep = tree.kept_arcs(x)
    n = x.n
    for h in range(n + 1):
        for m in range(n + 1):
            if m == 0 or m == h:
                expected = False
            elif h == 0 or abs(h - m) == 1 or 2 in (h, m):  # word 2's tag X is unknown
                expected = True
            else:
                th, tm = (TABLE["upos"].index(x.upos[k]) for k in (h, m))
                expected = abs(h - m) <= TABLE["right" if m > h else "left"][th][tm]
            assert keep[h, m] == expected, (h, m)
    assert keep[4, 6] and keep[3, 1]  # VERB -> NOUN at 2 (<= 3), NOUN -> DET at 2 (<= 2)
    assert not keep[6, 1] and not keep[4, 1] and not keep[6, 4]  # 5 > 2; pairs never seen


def test_training_arcs_are_never_pruned():
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    tree = DependencyTree(hash_bits=HASH_BITS, prune_distances=True)
    tree.initialize(train)
    kept = total = 0
    for x in train:
        keep = tree.kept_arcs(x)
        assert keep[x.heads[1:], np.arange(1, x.n + 1)].all()
        kept += int(keep.sum())
        total += x.n * x.n
    assert kept < 0.9 * total  # and it prunes something


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("projective, n", [(True, n) for n in (3, 5, 6)] + [(False, n) for n in (3, 5)])
def test_decoders_on_pruned_scores_against_brute_force(projective, n, single_root):
    rng = np.random.default_rng(10 * n + single_root + 100 * projective)
    tree = pruned(projective, single_root)
    x = sentence(n)
    keep = tree.kept_arcs(x)
    w = Weights(HASH_BITS, False, rng.normal(size=1 << HASH_BITS))
    raw = tree.scores(x, w)  # training's scores: every arc
    np.testing.assert_array_equal(raw, tree.features.score(x, w.array))
    scores = tree.pruned(x, raw)
    arcs = np.zeros_like(keep)
    arcs[:, 1:] = True
    arcs[np.arange(n + 1), np.arange(n + 1)] = False
    np.testing.assert_array_equal(scores[keep], raw[keep])
    assert np.isneginf(scores[arcs & ~keep]).all() and (scores[~arcs] == 0).all()
    trees = [y for y in (projective_trees if projective else spanning_trees)(n, single_root)
             if keep[y[1:], np.arange(1, n + 1)].all()]
    assert 1 < len(trees) < len((projective_trees if projective else spanning_trees)(n, single_root))
    values = np.array([raw[y[1:], np.arange(1, n + 1)].sum() for y in trees])
    best = tree.argmax(x, scores)
    assert keep[best[1:], np.arange(1, n + 1)].all()
    assert np.isclose(raw[best[1:], np.arange(1, n + 1)].sum(), values.max(), atol=1e-9)
    mu, logz = tree.marginals(x, scores)
    assert np.isclose(logz, np.logaddexp.reduce(values), atol=1e-9)
    probs = np.exp(values - logz)
    expected = sum(p * tree.indicator(x, y) for p, y in zip(probs, trees))
    np.testing.assert_allclose(mu, expected, atol=1e-9)
    # the marginals are the gradient of log Z on the kept arcs
    eps = 1e-5
    for h, m in zip(*np.nonzero(keep)):
        plus, minus = scores.copy(), scores.copy()
        plus[h, m] += eps
        minus[h, m] -= eps
        fd = (tree.marginals(x, plus)[1] - tree.marginals(x, minus)[1]) / (2 * eps)
        assert abs(fd - mu[h, m]) < 1e-6, (h, m)


def test_batch_kernel_equals_the_one_sentence_path():
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    tree = DependencyTree(hash_bits=HASH_BITS, prune_distances=True)
    tree.initialize(train)
    rng = np.random.default_rng(5)
    w = Weights(HASH_BITS, False, rng.normal(size=1 << HASH_BITS))
    sentences = dev + train[:50]
    batch = SentenceBatch.from_sentences(sentences)
    heads = tree.predict_batch(batch, w)
    differs_from_unpruned = 0
    for i, x in enumerate(sentences):
        expected = eisner_argmax(tree.pruned(x, tree.scores(x, w)), True)[0]
        got = heads[batch.starts[i]:batch.starts[i + 1]]
        np.testing.assert_array_equal(got[1:], expected[1:])
        differs_from_unpruned += not np.array_equal(expected, eisner_argmax(tree.scores(x, w), True)[0])
    assert differs_from_unpruned > 0  # random weights like long arcs: pruning changes trees


@pytest.mark.parametrize("prune, single_root, temperature", [(True, True, 1.0), (True, False, 0.4),
                                                             (False, True, 3.0)])
def test_batch_marginals_equal_the_one_sentence_path(prune, single_root, temperature):
    """`marginals_many` (the parser's probabilities): `parse_many`'s trees, and per sentence
    the inside-outside arc marginals of the (pruned) scores / T as (n, n+1) head rows."""
    from arborist.parser.eisner import eisner_marginals

    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    tree = DependencyTree(hash_bits=HASH_BITS, single_root=single_root, prune_distances=prune)
    tree.initialize(train)
    w = Weights(HASH_BITS, False, np.random.default_rng(6).normal(size=1 << HASH_BITS))
    sentences = dev + train[:30]
    batch = SentenceBatch.from_sentences(sentences)
    heads, probs, offsets = tree.marginals_batch(batch, w, temperature)
    np.testing.assert_array_equal(heads, tree.predict_batch(batch, w))
    assert offsets[-1] == len(probs) == sum(x.n * (x.n + 1) for x in sentences)
    pruned_arcs = 0
    for i, x in enumerate(sentences):
        mu, _ = eisner_marginals(tree.pruned(x, tree.scores(x, w)) / temperature, single_root)
        got = probs[offsets[i]:offsets[i + 1]].reshape(x.n, x.n + 1)
        np.testing.assert_allclose(got, np.clip(mu[:, 1:].T, 0.0, 1.0), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.sum(axis=1), 1.0)
        if prune:
            dropped = ~tree.kept_arcs(x)[:, 1:].T
            assert (got[dropped] == 0).all()
            pruned_arcs += int(dropped.sum())
    assert pruned_arcs > 0 or not prune
    with pytest.raises(ValueError, match="temperature"):
        tree.marginals_batch(batch, w, 0.0)


def test_the_table_is_saved_in_the_registry_call():
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    tree = make_structure({"@structures": "arborist.DependencyTree.v1", "hash_bits": HASH_BITS, "projective": True,
                           "prune_distances": True})
    tree.initialize(train)
    call = tree.registry_call()
    assert call["prune_distances"] is True and call["max_distances"] == tree.max_distances
    again = make_structure(call)
    x = train[0]
    np.testing.assert_array_equal(again.kept_arcs(x), tree.kept_arcs(x))
    # no pruning: the call is what it was before distance pruning existed
    assert "prune_distances" not in DependencyTree(hash_bits=HASH_BITS).registry_call()


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="second-order"):
        make_structure({"@structures": "arborist.DependencyTree.v1", "order": 2, "prune_distances": True})
    with pytest.raises(ValueError, match="needs prune_distances"):
        DependencyTree(hash_bits=HASH_BITS, max_distances=TABLE)
    with pytest.raises(ValueError, match="max_distances"):
        pruned(table={"upos": ["DET"], "left": [[1, 2]], "right": [[0]]})
    with pytest.raises(ValueError, match="initialize"):
        DependencyTree(hash_bits=HASH_BITS, prune_distances=True).kept_arcs(sentence(3))


@pytest.mark.parametrize("projective", [True, False])
def test_the_parser_prunes_when_it_parses_and_not_when_it_trains(projective):
    from arborist.components.parser import Parser

    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    tree = DependencyTree(hash_bits=HASH_BITS, projective=projective, prune_distances=True)
    tree.initialize(train)
    w = Weights(HASH_BITS, False, np.random.default_rng(9).normal(size=1 << HASH_BITS))
    parser = Parser(tree, w.array)
    decode = eisner_argmax if projective else mst_argmax
    batch = SentenceBatch.from_sentences(dev)
    heads, confidences = parser.annotate_confident(batch, 2)
    for i, x in enumerate(dev):
        assert np.isfinite(tree.scores(x, w)[1:, 1:][~np.eye(x.n, dtype=bool)]).all()  # what training sees
        expected = decode(tree.pruned(x, tree.scores(x, w)), True)[0]
        np.testing.assert_array_equal(parser.predict(x), expected)
        np.testing.assert_array_equal(heads[batch.starts[i]:batch.starts[i + 1]][1:], expected[1:])
        keep = tree.kept_arcs(x)
        a, b = batch.starts[i] + 1, batch.starts[i + 1]
        top = confidences["head"].top[a:b]
        probs = confidences["head"].top_prob[a:b]
        # a pruned head has probability 0: never among the k best with a positive probability
        assert all(not (p > 0) or keep[h, m] for m, (hs, ps) in enumerate(zip(top, probs), start=1)
                   for h, p in zip(hs, ps))
        np.testing.assert_array_equal(parser.possible_classes(x), keep[:, 1:].T)
    if projective:  # the batch kernel (non-projective trees have none)
        np.testing.assert_array_equal(parser.predict_batch(batch), heads)


def test_an_empty_table_keeps_every_arc():
    # Training trees with no arc between words (one-word sentences): nothing to learn, nothing pruned
    train = [Sentence.from_columns(["a"], upos=["DET"], heads=[0]), Sentence.from_columns(["b"], upos=["NOUN"], heads=[0])]
    tree = DependencyTree(hash_bits=HASH_BITS, prune_distances=True)
    tree.initialize(train)
    assert tree.max_distances["upos"] == []
    x = sentence(5)
    keep = tree.kept_arcs(x)
    assert keep[:, 1:].sum() == 5 * 5  # every arc into a word, self-loops aside
    w = Weights(HASH_BITS, False, np.random.default_rng(2).normal(size=1 << HASH_BITS))
    batch = SentenceBatch.from_sentences([x])
    np.testing.assert_array_equal(tree.predict_batch(batch, w)[1:], eisner_argmax(tree.scores(x, w), True)[0][1:])


def test_sorted_index():
    from arborist.strings import sorted_index

    np.testing.assert_array_equal(sorted_index(np.array([3, 7, 9], dtype=np.uint64), [7, 1, 9, 10, 3]),
                                  [1, -1, 2, -1, 0])
    np.testing.assert_array_equal(sorted_index([], [1, 2]), [-1, -1])
