"""The batch kernels (`tag_many`, `parse_many`, `label_many`) and `Pipeline.annotate_batch`
against the one-sentence path they replace (scores, then the decoder), on random weights;
`DocBatch` against `doc_sentence`; and the kernels running without the GIL."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import spacy

from arborist import Labeler, Parser, Tagger
from arborist.components.tagger import with_tags
from arborist.model import Pipeline
from arborist.parser.labels import ArcLabels
from arborist.parser.tree import DependencyTree
from arborist.sentence import ATTR_NAMES, Sentence, SentenceBatch
from arborist.spacy_components import DocBatch
from arborist.tagger.chain import LinearChain

UPOS = ("ADJ", "ADP", "DET", "NOUN", "PRON", "PUNCT", "VERB")
XPOS = ("DT", "IN", "JJ", "NN", "NNS", "PRP", "VB", "VBD", ".")
LABELS = ("amod", "case", "det", "nmod", "nsubj", "obj", "punct", "root")
BITS = 14


def random_sentences(rng, count: int, lengths=(1, 14), n_xpos: int | None = None) -> list[Sentence]:
    """Sentences of random words, tags and projective-or-not trees; n_xpos: draw XPOS from
    that many distinct strings (more than 64 folds the in-between ids)."""
    out = []
    for _ in range(count):
        n = int(rng.integers(*lengths))
        forms = ["".join(rng.choice(list("abcdeXYZ-1"), int(rng.integers(1, 7)))) for _ in range(n)]
        xpos = [f"X{rng.integers(n_xpos)}" for _ in range(n)] if n_xpos else rng.choice(XPOS, n).tolist()
        heads = [int(rng.integers(0, n + 1)) for _ in range(n)]
        heads = [h if h != m else 0 for m, h in enumerate(heads, start=1)]
        out.append(Sentence.from_columns(forms, [f.lower() for f in forms], rng.choice(UPOS, n).tolist(), xpos,
                                         rng.choice(["_", "Number=Sing", "Number=Plur"], n).tolist(), heads))
    return out


def weights(rng, bits: int = BITS) -> np.ndarray:
    return rng.normal(size=1 << bits)


@pytest.mark.parametrize("order", [1, 2])
def test_tag_many_equals_scores_then_viterbi(order):
    rng = np.random.default_rng(order)
    sentences = random_sentences(rng, 30)
    tagger = Tagger(LinearChain(UPOS, "upos", order, BITS), weights(rng))
    one_by_one = [tagger.predict(x) for x in sentences]
    batch = tagger.predict_batch(SentenceBatch.from_sentences(sentences))
    assert batch.dtype == np.int32
    np.testing.assert_array_equal(batch, np.concatenate(one_by_one))


@pytest.mark.parametrize("single_root", [True, False])
def test_parse_many_equals_scores_then_eisner(single_root):
    rng = np.random.default_rng(int(single_root))
    # Short and long sentences; the last ones have more than 64 distinct XPOS values
    # between some arcs (the in-between ids fold mod 64, as `between_ids` does).
    sentences = random_sentences(rng, 25) + random_sentences(rng, 3, (70, 90), n_xpos=1000)
    parser = Parser(DependencyTree(hash_bits=BITS, single_root=single_root), weights(rng))
    one_by_one = [parser.predict(x) for x in sentences]
    batch = parser.predict_batch(SentenceBatch.from_sentences(sentences))
    np.testing.assert_array_equal(batch, np.concatenate(one_by_one))


@pytest.mark.parametrize("length, n_xpos", [((1, 2), 5), ((5, 30), 12), ((100, 101), 1000), ((300, 301), 40)])
def test_between_ids_are_ranks_among_the_sorted_distinct_values_folded_mod_64(length, n_xpos):
    """`between_ids` against its definition, written with numpy.unique: each token's id is
    the rank of its value among the sentence's distinct values mod 64, and `values` holds
    the first 64 distinct values in order (zeros after the last)."""
    rng = np.random.default_rng(length[0])
    features = DependencyTree(["between.xpos", "between.upos", "h.form m.form"], hash_bits=20).features
    for x in random_sentences(rng, 5, length, n_xpos=n_xpos):
        ids, values = features.between_ids(x.attrs)
        assert ids.shape == (2, x.n + 1) and ids.dtype == np.int8 and values.shape == (2, 64)
        for j, row in enumerate((ATTR_NAMES.index("xpos"), ATTR_NAMES.index("upos"))):
            uniq, inverse = np.unique(x.attrs[row], return_inverse=True)
            np.testing.assert_array_equal(ids[j], inverse % 64)
            expected = np.zeros(64, dtype=np.uint64)
            expected[:min(len(uniq), 64)] = uniq[:64]
            np.testing.assert_array_equal(values[j], expected)


def test_in_between_ids_without_numpy_fold_as_between_ids_does():
    """`parse_many`'s in-between ids (its batch columns) against those `arc_indices` uses (one
    sentence's `between_ids`, checked against numpy.unique above), past 64 distinct values: with only the
    in-between template, weights that reward exactly the features of the flat tree (word 1
    heads every other word) make parse_many find that tree only if its ids are the same."""
    rng = np.random.default_rng(7)
    x = random_sentences(rng, 1, (100, 101), n_xpos=1000)[0]
    features = DependencyTree(["between.xpos"], hash_bits=20).features
    ids, values = features.between_ids(x.attrs)
    assert len(np.unique(x.attrs[4])) > 64 and ids.max() == 63  # folded
    w = np.full(1 << 20, -1.0)
    flat = np.full(x.n + 1, 1, dtype=np.int32)
    flat[0], flat[1] = -1, 0
    assert ids[0, 1:].max() == 63
    for m in range(3, x.n + 1):
        w[features.arc_indices(x, 1, m)] = 10.0
    heads = features.parse_many(np.ascontiguousarray(x.attrs), np.array([0, x.n + 1]), w)
    # Word 2's arcs have no in-between features (all score 0): any head will do.
    np.testing.assert_array_equal(np.delete(heads, 2), np.delete(flat, 2))


def test_empty_sentences_in_a_batch():
    rng = np.random.default_rng(3)
    sentences = random_sentences(rng, 4)
    empty = Sentence.from_columns([])
    batch = SentenceBatch.from_sentences([empty, sentences[0], empty, *sentences[1:], empty])
    parser = Parser(DependencyTree(hash_bits=BITS), weights(rng))
    tagger = Tagger(LinearChain(UPOS, "upos", 1, BITS), weights(rng))
    heads = parser.predict_batch(batch)
    assert heads[0] == -1 and heads[-1] == -1 and len(heads) == batch.attrs.shape[1]
    np.testing.assert_array_equal(heads[1:1 + sentences[0].n + 1], parser.predict(sentences[0]))
    np.testing.assert_array_equal(tagger.predict_batch(batch), np.concatenate([tagger.predict(x) for x in sentences]))


@pytest.mark.parametrize("kind", ["projective", "non-projective", "second order", "second order, non-projective"])
def test_empty_sentences_with_every_parser(kind):
    """The per-sentence decoders (Chu-Liu-Edmonds, second order) take no empty sentence: the
    parser leaves its root slot at -1 and parses the others, with or without probabilities."""
    from arborist.parser.features import DEFAULT_TEMPLATES
    from arborist.parser.second_order import SecondOrderTree

    rng = np.random.default_rng(4)
    sentences = random_sentences(rng, 3)
    empty = Sentence.from_columns([])
    batch = SentenceBatch.from_sentences([empty, sentences[0], empty, *sentences[1:], empty])
    projective = "non-projective" not in kind
    structure = (SecondOrderTree(DEFAULT_TEMPLATES, BITS, True, projective=projective) if "second" in kind
                 else DependencyTree(hash_bits=BITS, projective=projective))
    parser = Parser(structure, weights(rng))
    alone = [parser.predict_batch(SentenceBatch.from_sentences([x])) for x in sentences]
    expected = np.concatenate([[-1], alone[0], [-1], *alone[1:], [-1]])
    np.testing.assert_array_equal(parser.predict_batch(batch), expected)
    heads, confidences = parser.annotate_confident(batch, k=2)
    np.testing.assert_array_equal(heads, expected)
    np.testing.assert_array_equal(parser.predict(empty), [-1])  # the per-sentence path too
    assert [h.tolist() for _, h in parser.parse([empty, sentences[0]])] == [[-1], alone[0].tolist()]
    prob = confidences["head"].prob
    alone = [parser.annotate_confident(SentenceBatch.from_sentences([x]), k=2)[1]["head"].prob for x in sentences]
    np.testing.assert_allclose(prob, np.concatenate([[np.nan], alone[0], [np.nan], *alone[1:], [np.nan]]))


def test_a_pruner_keeps_no_arc_of_an_empty_sentence():
    from arborist.components.pruner import Pruner
    from arborist.registry import make_structure

    rng = np.random.default_rng(5)
    pruner = Pruner(make_structure({"@structures": "arborist.Pruner.v1", "hash_bits": BITS}), weights(rng))
    empty = Sentence.from_columns([])
    np.testing.assert_array_equal(pruner.allowed(empty), np.zeros((1, 1), dtype=bool))
    np.testing.assert_array_equal(pruner.predict(empty), [-1])
    x = random_sentences(rng, 1)[0]
    assert pruner.allowed(x).shape == (x.n + 1, x.n + 1) and len(pruner.predict(x)) == x.n + 1


def test_label_many_equals_scores_then_argmax():
    rng = np.random.default_rng(5)
    sentences = random_sentences(rng, 30)
    labeler = Labeler(ArcLabels(LABELS, BITS), weights(rng))
    one_by_one = [labeler.predict(x) for x in sentences]
    batch = labeler.predict_batch(SentenceBatch.from_sentences(sentences))
    np.testing.assert_array_equal(batch, np.concatenate(one_by_one))
    bad = SentenceBatch.from_sentences(sentences[:2])
    bad.heads[1] = sentences[0].n + 1
    with pytest.raises(ValueError, match="outside"):
        labeler.predict_batch(bad)


@pytest.mark.parametrize("constrained, temperature", [(True, 1.0), (True, 0.3), (False, 2.5)])
def test_label_marginals_many_equals_the_one_sentence_probabilities(constrained, temperature):
    """`label_marginals_many` (the labeler's probabilities): `label_many`'s labels and, per
    word, the labeler's `word_probabilities` of the sentence's scores / T (root-attached words
    `root` with probability 1, no other word ever `root` when the tree constrains labels)."""
    rng = np.random.default_rng(6)
    sentences = random_sentences(rng, 30)
    structure = ArcLabels(LABELS if constrained else LABELS[:-1], BITS)
    assert (structure.root >= 0) == constrained
    labeler = Labeler(structure, weights(rng))
    batch = SentenceBatch.from_sentences(sentences)
    labels, probs = structure.features.label_marginals_many(batch.attrs, batch.starts, batch.heads,
                                                            labeler.weights.array, structure.n_labels,
                                                            structure.root, temperature)
    np.testing.assert_array_equal(labels, labeler.predict_batch(SentenceBatch.from_sentences(sentences)))
    for i, x in enumerate(sentences):
        a, b = batch.starts[i], batch.starts[i + 1]
        expected = labeler.word_probabilities(x, labeler.scores(x) / temperature)
        np.testing.assert_allclose(probs[a + 1:b], expected, rtol=1e-12, atol=1e-15)
        assert (probs[a] == 0).all()
    words = np.ones(len(labels), dtype=bool)
    words[batch.starts[:-1]] = False
    np.testing.assert_allclose(probs[words].sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="temperature"):
        structure.features.label_marginals_many(batch.attrs, batch.starts, batch.heads, labeler.weights.array,
                                                structure.n_labels, structure.root, 0.0)


def test_the_kernels_refuse_starts_that_do_not_begin_at_0():
    """A batch's starts that do not begin at 0 are an error, not a write before the output
    arrays (the tagger's kernels wrote there: a crash)."""
    rng = np.random.default_rng(8)
    sentences = random_sentences(rng, 3)
    batch = SentenceBatch.from_sentences(sentences)
    chain = LinearChain(UPOS, "upos", 1, BITS)
    values = chain.features.form_values(batch.attrs[ATTR_NAMES.index("form")][batch.words], batch.text_of)
    bad = np.array(batch.word_starts, dtype=np.int64)
    bad[0] = -3000
    w = weights(rng)
    with pytest.raises(ValueError, match="begin at 0"):
        chain.features.tag_many(values, bad, w)
    with pytest.raises(ValueError, match="begin at 0"):
        chain.features.tag_marginals_many(values, bad, w)
    starts = np.array(batch.starts, dtype=np.int64)
    starts[0] = -1
    tree, labels = DependencyTree(hash_bits=BITS), ArcLabels(LABELS, BITS)
    with pytest.raises(ValueError, match="begin at 0"):
        tree.features.parse_many(batch.attrs, starts, w)
    with pytest.raises(ValueError, match="begin at 0"):
        labels.features.label_many(batch.attrs, starts, batch.heads, w, len(LABELS))


def test_structures_without_a_batch_kernel_fall_back_to_one_sentence_at_a_time():
    rng = np.random.default_rng(11)
    sentences = random_sentences(rng, 12)
    parser = Parser(DependencyTree(hash_bits=BITS, projective=False), weights(rng))
    assert parser.structure.predict_batch(SentenceBatch.from_sentences(sentences), parser.weights) is None
    np.testing.assert_array_equal(parser.predict_batch(SentenceBatch.from_sentences(sentences)),
                                  np.concatenate([parser.predict(x) for x in sentences]))


def test_annotate_many_equals_the_components_one_after_another():
    rng = np.random.default_rng(13)
    sentences = random_sentences(rng, 20)
    upos = Tagger(LinearChain(UPOS, "upos", 1, BITS), weights(rng))
    xpos = Tagger(LinearChain(XPOS, "xpos", 2, BITS), weights(rng))
    parser = Parser(DependencyTree(hash_bits=BITS), weights(rng))
    labeler = Labeler(ArcLabels(LABELS, BITS), weights(rng))
    pipeline = Pipeline({"upos": upos, "xpos": xpos, "parser": parser, "labeler": labeler})
    got = pipeline.annotate_many(sentences)
    for x, (tagged, heads, deprels) in zip(sentences, got):
        expected = with_tags(x, "upos", upos.tags(x))
        expected = with_tags(expected, "xpos", xpos.tags(expected))
        np.testing.assert_array_equal(tagged.attrs, expected.attrs)
        assert tagged.upos == expected.upos and tagged.xpos == expected.xpos
        np.testing.assert_array_equal(heads, parser.predict(expected))
        assert deprels == labeler.labels(expected, heads)
        np.testing.assert_array_equal(pipeline.tag(x).attrs, expected.attrs)
    assert [tuple(h) for _, h, _ in pipeline.parse(sentences, batch_size=7)] == [tuple(h) for _, h, _ in got]
    tagged_only = pipeline.annotate_many(sentences, tag_only=True)
    assert all(h is None and d is None for _, h, d in tagged_only)
    # A labeler without a parser labels the gold trees; a sentence without one gets no labels.
    no_tree = Sentence.from_columns(["a", "b"])
    labels_only = Pipeline({"labeler": labeler}).annotate_many([sentences[0], no_tree])
    assert labels_only[0][2] == labeler.labels(sentences[0], sentences[0].heads) and labels_only[1][2] is None


def doc_sentence(doc, indices: list[int]) -> Sentence:
    """The words doc[i] for i in `indices` as a Sentence from their strings, with the Doc's
    lemmas, tags and morphology ('_' where the Doc has none), as a CoNLL-U file would give
    them (how the components built their input before `DocBatch`)."""
    tokens = [doc[i] for i in indices]
    return Sentence.from_columns([t.text for t in tokens], [t.lemma_ or "_" for t in tokens],
                                 [t.pos_ or "_" for t in tokens], [t.tag_ or "_" for t in tokens],
                                 [str(t.morph) or "_" for t in tokens])


def test_doc_batch_equals_doc_sentence():
    nlp = spacy.blank("en")
    doc = nlp("The İstanbul QUICK brown  foxes jumped. Over Σίσυφος's 3,000 dogs \n and cats!")
    for i, t in enumerate(doc):
        t.is_sent_start = i in (0, 8)
        if i % 2:
            t.lemma_, t.tag_ = t.text.lower(), "NN"
            t.set_morph("Number=Plur|Case=Nom")
        if i % 3:
            t.pos_ = "NOUN"
    other = nlp("Another doc .")
    batch = DocBatch([doc, other], {})
    sentences = []
    for d, start, end in batch.sentences:
        sentences.append(((doc, other)[d], [i for i in range(start, end) if not (doc, other)[d][i].is_space]))
    assert batch.batch.n_sentences == len(sentences) == 3
    for i, (source, words) in enumerate(sentences):
        a, b = batch.batch.starts[i], batch.batch.starts[i + 1]
        np.testing.assert_array_equal(batch.batch.attrs[:, a:b], doc_sentence(source, words).attrs)
        assert batch.batch.sentence(i).forms == doc_sentence(source, words).forms


def test_kernels_release_the_gil():
    """While one thread parses a batch, another runs Python: it could not if the kernel held the GIL."""
    rng = np.random.default_rng(17)
    batch = SentenceBatch.from_sentences(random_sentences(rng, 60, (60, 61)))
    parser = Parser(DependencyTree(hash_bits=BITS), weights(rng))
    parser.predict_batch(batch)  # warm up
    counted, running = [0], threading.Event()

    def count():
        running.set()
        while running.is_set():
            counted[0] += 1

    def kernel_time():
        start = time.perf_counter()
        parser.structure.features.parse_many(batch.attrs, batch.starts, parser.weights.array)
        return time.perf_counter() - start

    alone = kernel_time()
    counter = threading.Thread(target=count)
    counter.start()
    running.wait()
    before = counted[0]
    shared = kernel_time()
    during = counted[0] - before
    running.clear()
    counter.join()
    # Holding the GIL, the kernel would let the counter run only between switch intervals
    # (none: it is one C call); without it the counter loops all along.
    assert during > 1000, (during, alone, shared)


def test_scores_split_between_two_threads_equal_one_thread():
    # `scoring_threads`: a first-order parser's training scores half of each sentence's heads
    # in a helper thread; every score must be the one-thread score, bit for bit.
    from concurrent.futures import ThreadPoolExecutor

    from arborist.structure import scoring_threads
    from arborist.weights import Weights

    rng = np.random.default_rng(7)
    tree = DependencyTree(hash_bits=BITS)
    w = Weights(BITS, False, rng.normal(size=1 << BITS))
    sentences = random_sentences(rng, 40, lengths=(1, 40)) + random_sentences(rng, 5, (20, 30), n_xpos=90)
    alone = [tree.scores(x, w) for x in sentences]
    with ThreadPoolExecutor(1) as helper:
        split = [tree.features.score(x, w.array, helper=helper) for x in sentences]
    with scoring_threads(tree, 2):
        assert tree.score_helper is not None
        in_block = [tree.scores(x, w) for x in sentences]
    assert tree.score_helper is None
    for x, a, b, c in zip(sentences, alone, split, in_block):
        assert np.count_nonzero(a) > 0 or x.n < 2
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    with scoring_threads(tree, 1):
        assert tree.score_helper is None
