"""XPOS candidates from UPOS (`LinearChain(candidates_from="upos")`): the learned table,
decoding pruned scores against brute force over the allowed tag sequences, the batch
kernel against the one-sentence path, and the tagger component, which restricts the tags
when it tags and not when it trains."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_corpus
from arborist.registry import make_structure
from arborist.sentence import FORM, UPOS, Sentence, SentenceBatch
from arborist.tagger.chain import LinearChain
from arborist.tagger.viterbi import chain_argmax, chain_marginals, chain_tag_marginals
from arborist.weights import Weights

SAMPLE = Path(__file__).resolve().parent.parent / "corpora" / "sample"
HASH_BITS = 14
XPOS = ["DT", "NN", "NNS", "VBD", "VBZ", "IN"]
CANDIDATES = {"DET": ["DT"], "NOUN": ["NN", "NNS"], "VERB": ["VBD", "VBZ", "NN"]}


def chain(candidates=CANDIDATES) -> LinearChain:
    return LinearChain(XPOS, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos", candidates=candidates)


def sentence(upos: list[str]) -> Sentence:
    words = [f"w{i}" for i in range(len(upos))]
    return Sentence.from_columns(words, None, upos, ["NN"] * len(upos))


def test_learns_the_tags_seen_with_each_upos():
    x = Sentence.from_columns(["the", "dogs", "ran"], upos=["DET", "NOUN", "VERB"], xpos=["DT", "NNS", "VBD"])
    y = Sentence.from_columns(["a", "dog", "runs", "in"], upos=["DET", "NOUN", "VERB", "ADP"],
                              xpos=["DT", "NN", "VBZ", "_"])
    tagger = LinearChain(None, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos")
    tagger.initialize([x, y])
    assert tagger.candidates == {"DET": ["DT"], "NOUN": ["NN", "NNS"], "VERB": ["VBD", "VBZ"]}  # "_" is no tag
    allowed = tagger.allowed_tags(sentence(["NOUN", "ADP", "DET"]).attrs[UPOS, 1:])
    names = [[t for t, ok in zip(tagger.tags, row) if ok] for row in allowed]
    assert names == [["NN", "NNS"], list(tagger.tags), ["DT"]]  # ADP was only seen with "_": every tag


@pytest.mark.parametrize("upos", [["DET", "NOUN", "VERB"], ["NOUN", "X", "VERB", "NOUN"], ["VERB"]])
def test_decoding_pruned_scores_against_brute_force(upos):
    rng = np.random.default_rng(len(upos))
    tagger = chain()
    x = sentence(upos)
    w = Weights(HASH_BITS, False, rng.normal(size=1 << HASH_BITS))
    raw = tagger.scores(x, w)  # training's scores: every tag
    scores = tagger.pruned(x, raw)
    allowed = tagger.allowed_tags(x.attrs[UPOS, 1:])
    sequences = [np.array(y) for y in itertools.product(*[np.flatnonzero(row) for row in allowed])]
    assert 1 < len(sequences) < len(XPOS) ** len(upos) or len(upos) == 1
    values = np.array([(raw * tagger.indicator(x, y)).sum() for y in sequences])
    best = chain_argmax(scores)[0]
    assert any(np.array_equal(best, y) for y in sequences)
    assert np.isclose((raw * tagger.indicator(x, best)).sum(), values.max())
    mu, logz = chain_marginals(scores)
    assert np.isclose(logz, np.logaddexp.reduce(values))
    expected = sum(np.exp(v - logz) * tagger.indicator(x, y) for v, y in zip(values, sequences))
    np.testing.assert_allclose(np.where(tagger.valid_parts(x.n), mu, 0.0), expected, atol=1e-9)


def test_batch_kernel_equals_the_one_sentence_path():
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    tagger = LinearChain(None, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos")
    tagger.initialize(train)
    w = Weights(HASH_BITS, False, np.random.default_rng(3).normal(size=1 << HASH_BITS))
    sentences = dev + train[:40]
    batch = SentenceBatch.from_sentences(sentences)
    tags = tagger.predict_batch(batch, w)
    starts = batch.word_starts
    plain = LinearChain(tagger.tags, attribute="xpos", hash_bits=HASH_BITS)
    unrestricted = plain.predict_batch(batch, w)
    changed = 0
    for i, x in enumerate(sentences):
        expected = chain_argmax(tagger.pruned(x, tagger.scores(x, w)))[0]
        np.testing.assert_array_equal(tags[starts[i]:starts[i + 1]], expected)
        np.testing.assert_array_equal(unrestricted[starts[i]:starts[i + 1]], chain_argmax(plain.scores(x, w))[0])
        changed += not np.array_equal(expected, unrestricted[starts[i]:starts[i + 1]])
    assert changed > 0
    allowed = tagger.allowed_tags(batch.attrs[UPOS][batch.words])
    assert allowed[np.arange(len(tags)), tags].all()


@pytest.mark.parametrize("temperature", [1.0, 0.37, 6.5])
def test_batch_marginals_are_the_one_sentence_marginals(temperature):
    """`tag_marginals_many` (what the tagger's probabilities use) gives `tag_many`'s tags and,
    per sentence, `chain_tag_marginals` of the pruned scores divided by the temperature: with
    the XPOS candidates of each UPOS and without (every tag allowed)."""
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    tagger = LinearChain(None, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos")
    tagger.initialize(train)
    plain = LinearChain(tagger.tags, attribute="xpos", hash_bits=HASH_BITS)
    w = Weights(HASH_BITS, False, np.random.default_rng(4).normal(size=1 << HASH_BITS))
    sentences = dev + train[:40]
    batch = SentenceBatch.from_sentences(sentences)
    words, starts = batch.words, batch.word_starts
    for chain in (tagger, plain):
        values = chain.features.form_values(batch.attrs[FORM][words], batch.text_of)
        allowed = chain.allowed_tags(batch.attrs[UPOS][words])
        tags, probs = chain.features.tag_marginals_many(values, starts, w.array, allowed, temperature)
        np.testing.assert_array_equal(tags, chain.features.tag_many(values, starts, w.array, allowed))
        assert probs.shape == (len(tags), chain.n_tags)
        for i, x in enumerate(sentences):
            expected = chain_tag_marginals(chain.pruned(x, chain.scores(x, w)) / temperature)[0]
            np.testing.assert_allclose(probs[starts[i]:starts[i + 1]], expected, rtol=1e-9, atol=1e-12)
        if allowed is not None:
            assert (probs[~allowed] == 0).all()
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="temperature"):
        tagger.features.tag_marginals_many(values, starts, w.array, None, 0.0)
    with pytest.raises(ValueError, match="no tag sequence"):
        tagger.features.tag_marginals_many(values, starts, np.full(1 << HASH_BITS, np.nan), None, 1.0)


def test_the_tagger_restricts_when_it_tags_and_not_when_it_trains():
    from arborist.components.tagger import Tagger

    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    structure = LinearChain(None, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos")
    structure.initialize(train)
    w = np.random.default_rng(4).normal(size=1 << HASH_BITS)
    tagger = Tagger(structure, w)
    assert tagger.reads == ("form", "upos")
    assert Tagger(LinearChain(structure.tags, attribute="xpos", hash_bits=HASH_BITS), w).reads == ("form",)
    batch = SentenceBatch.from_sentences(dev)
    predicted, confidences = tagger.annotate_confident(batch, 3)
    np.testing.assert_array_equal(tagger.predict_batch(batch), predicted)
    conf = confidences["xpos"]
    starts = batch.word_starts
    for i, x in enumerate(dev):
        assert np.isfinite(structure.scores(x, tagger.weights)).all()  # what training sees
        allowed = structure.allowed_tags(x.attrs[UPOS, 1:])
        np.testing.assert_array_equal(tagger.predict(x), predicted[starts[i]:starts[i + 1]])
        np.testing.assert_array_equal(tagger.possible_classes(x), allowed)
        a, b = batch.starts[i] + 1, batch.starts[i + 1]
        for row, top, probs in zip(allowed, conf.top[a:b], conf.top_prob[a:b]):
            assert all(row[t] or p == 0 for t, p in zip(top, probs))


def test_the_table_is_saved_in_the_registry_call_and_bad_settings_are_refused():
    call = chain().registry_call()
    assert call["candidates_from"] == "upos" and call["candidates"] == CANDIDATES
    again = make_structure(call)
    upos = sentence(["VERB", "DET"]).attrs[UPOS, 1:]
    np.testing.assert_array_equal(again.allowed_tags(upos), chain().allowed_tags(upos))
    assert "candidates_from" not in LinearChain(XPOS, attribute="xpos").registry_call()
    with pytest.raises(ValueError, match="XPOS chain of order 1"):
        LinearChain(XPOS, attribute="upos", candidates_from="upos")
    with pytest.raises(ValueError, match="XPOS chain of order 1"):
        LinearChain(XPOS, attribute="xpos", order=2, candidates_from="upos")
    with pytest.raises(ValueError, match="needs candidates_from"):
        LinearChain(XPOS, attribute="xpos", candidates=CANDIDATES)
    with pytest.raises(ValueError, match="candidates must map"):
        chain({"DET": ["XX"]})
    with pytest.raises(ValueError, match="initialize"):
        LinearChain(XPOS, attribute="xpos", candidates_from="upos").allowed_tags(upos)
