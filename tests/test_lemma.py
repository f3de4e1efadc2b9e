"""Edit scripts and the Lemmatizer: round trips on treebank pairs, candidate restriction
against brute force, the lexicon and the fallback, the protocol suite, the batch kernel
against the one-sentence path, and state round trips."""
from __future__ import annotations

import itertools
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_conllu, read_corpus
from arborist.learn.perceptron import Perceptron
from arborist.lemma import scripts as edit
from arborist.lemma.lemmatizer import KEEP, Lemmatizer
from arborist.morph.choice import conll_column
from arborist.sentence import LEMMA, UPOS, Sentence, SentenceBatch
from arborist.strings import hash_string, hash_strings
from arborist.weights import Weights

from protocol import check_protocol

BITS = 12
UD = Path(os.environ.get("ARBORIST_UD", "/work/shared/corpora/ud"))
TREEBANKS = ("en_ewt", "el_gdt", "hu_szeged", "tr_imst", "it_partut")

TOY = """\
1	The	the	DET	DT	_	2	det	_	_
2	Cats	cat	NOUN	NNS	_	3	nsubj	_	_
3	went	go	VERB	VBD	_	0	root	_	_

1	the	the	DET	DT	_	2	det	_	_
2	cats	cat	NOUN	NNS	_	3	nsubj	_	_
3	walked	walk	VERB	VBD	_	0	root	_	_

1	dogs	dog	NOUN	NNS	_	2	nsubj	_	_
2	walked	walk	VERB	VBD	_	0	root	_	_
3	in	in	ADP	IN	_	4	case	_	_
4	PARIS	Paris	PROPN	NNP	_	2	obl	_	_

1	Dogs	dog	NOUN	NNS	_	2	nsubj	_	_
2	saw	see	VERB	VBD	_	0	root	_	_
3	saw	saw	NOUN	NN	_	2	obj	_	_

"""


def corpus_of(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.conllu"
    path.write_text(text, encoding="utf-8")
    return read_corpus(path)


@pytest.fixture
def toy(tmp_path):
    return corpus_of(tmp_path, "toy", TOY)


@pytest.mark.parametrize("form,lemma,script", [
    ("cats", "cat", ("lower", "", "", "s", "")),
    ("Cats", "cat", ("lower", "", "", "s", "")),
    ("The", "the", ("lower", "", "", "", "")),
    ("Paris", "Paris", ("keep", "", "", "", "")),
    ("PARIS", "Paris", ("title", "", "", "", "")),
    ("nasa", "NASA", ("upper", "", "", "", "")),
    ("went", "go", ("lower", "", "", "went", "go")),
    ("unhappiest", "happy", ("lower", "un", "", "iest", "y")),
    ("", "x", ("lower", "", "", "", "x")),
])
def test_extract_known_scripts(form, lemma, script):
    got = edit.extract(form, lemma)
    assert tuple(got) == script
    assert edit.apply(got, form) == lemma


def test_apply_refuses_scripts_that_do_not_apply():
    script = edit.extract("cats", "cat")
    assert edit.applies(script, "dogs") and not edit.applies(script, "dog")
    with pytest.raises(ValueError):
        edit.apply(script, "dog")
    # Deletions may not overlap: strip "ab" in front and "ba" behind needs 4 characters.
    overlap = edit.Script("lower", "ab", "", "ba", "")
    assert not edit.applies(overlap, "aba") and edit.applies(overlap, "abba")
    assert edit.decode(edit.encode(script)) == script


@pytest.mark.parametrize("treebank", TREEBANKS)
def test_round_trip_on_every_training_pair_of_a_slice(treebank):
    path = UD / treebank / f"{treebank}-ud-train.conllu"
    if not path.exists():
        pytest.skip(f"{path} not available")
    pairs = set()
    for s in itertools.islice(read_conllu(path), 1500):
        pairs.update(zip(s.forms[1:], conll_column(s, 2)))
    assert len(pairs) > 1000
    for form, lemma in pairs:
        script = edit.extract(form, lemma)
        assert edit.applies(script, form)
        assert edit.apply(script, form) == lemma, (form, lemma, script)  # casing included


def test_candidates_are_exactly_the_applicable_scripts(toy):
    lem = Lemmatizer(hash_bits=BITS, min_count=1)
    lem.initialize(toy)
    assert KEEP in lem.scripts
    for form in ["cats", "Dogs", "walked", "PARIS", "x", "", "went", "sawed", "İstanbul"]:
        brute = sorted(k for k, sc in enumerate(lem.scripts) if edit.applies(sc, form))
        assert lem.applicable(form) == brute, form
        assert lem.keep_id in lem.applicable(form)
    # min_count keeps rarer scripts out of the candidates (but "keep the form" stays).
    lem2 = Lemmatizer(hash_bits=BITS, min_count=2)
    lem2.initialize(toy)
    for form in ["cats", "walked", "went", "xyz"]:
        brute = sorted(k for k, sc in enumerate(lem2.scripts)
                       if edit.applies(sc, form) and (lem2.counts[k] >= 2 or k == lem2.keep_id))
        assert lem2.applicable(form) == brute, form
    assert lem2.script_index[edit.extract("went", "go")] not in lem2.applicable("went")


def test_upos_restricts_candidates_to_scripts_seen_with_it(toy):
    lem = Lemmatizer(hash_bits=BITS, lexicon_min_count=0, upos_candidates=True)
    lem.initialize(toy)
    batch = SentenceBatch.from_sentences(toy)
    attrs = batch.attrs[:, batch.words]
    cand_set, set_start, set_classes, _, _ = lem._candidates(attrs, batch.text_of, False)
    forms = [f for s in toy for f in s.forms[1:]]
    upos = [u for s in toy for u in s.upos[1:]]
    seen = {}
    for s in toy:
        for f, l, u in zip(s.forms[1:], conll_column(s, 2), s.upos[1:]):
            seen.setdefault(u, set()).add(lem.script_index[edit.extract(f, l)])
    for i, (form, u) in enumerate(zip(forms, upos)):
        got = [lem.script_of(c) for c in set_classes[set_start[cand_set[i]]:set_start[cand_set[i] + 1]].tolist()]
        brute = [k for k in lem.applicable(form) if k in seen[u] or k == lem.keep_id]
        assert got == brute, (form, u)
    # "went" -> "go" was seen with VERB only: no candidate of a NOUN "went".
    assert lem.script_index[edit.extract("went", "go")] not in [
        k for k in lem.applicable("went") if k in seen["NOUN"]]
    free = Lemmatizer(hash_bits=BITS, lexicon_min_count=0)  # the default: no UPOS restriction
    free.initialize(toy)
    cand_set, set_start, set_classes, _, _ = free._candidates(attrs, batch.text_of, False)
    for i, form in enumerate(forms):
        got = set_classes[set_start[cand_set[i]]:set_start[cand_set[i] + 1]].tolist()
        assert [free.script_of(c) for c in got] == free.applicable(form)


def test_lexicon_and_fallback(toy):
    lem = Lemmatizer(hash_bits=BITS)
    lem.initialize(toy)
    batch = SentenceBatch.from_sentences(toy)
    zero = Weights(BITS)
    ids = lem.predict_batch(batch, zero)
    forms = [f for s in toy for f in s.forms[1:]]
    lemmas = lem.lemma_strings(forms, ids)
    # Every training (form, UPOS) pair is in the lexicon: the training lemmas come back,
    # "saw" as a VERB and as a NOUN included.
    assert lemmas == [l for s in toy for l in conll_column(s, 2)]
    # Without the lexicon and with zero weights, the first candidate (most frequent script) wins.
    bare = Lemmatizer(hash_bits=BITS, lexicon_min_count=0)
    bare.initialize(toy)
    _, _, _, forced, _ = bare._candidates(batch.attrs[:, batch.words], batch.text_of, False)
    assert (forced == -1).all()
    # The fallback: a form no learned script applies to is its own lemma.
    assert bare.applicable("Zzz") == [bare.keep_id] or all(
        edit.apply(bare.scripts[k], "Zzz") for k in bare.applicable("Zzz"))
    assert bare.lemma("Zzz", bare.keep_id) == "Zzz"
    assert bare.lemma("dog", bare.script_index[edit.extract("cats", "cat")]) == "dog"  # does not apply: the form


def test_form_lexicon_covers_pairs_with_an_unseen_upos(toy):
    lem = Lemmatizer(hash_bits=BITS)
    lem.initialize(toy)
    retagged = [replace(s, attrs=s.attrs.copy()) for s in toy]
    retagged[0].attrs[UPOS, 3] = hash_string("NOUN")  # "went" as a NOUN: not in the lexicon
    retagged[3].attrs[UPOS, 2] = hash_string("ADJ")  # "saw": seen with two scripts, no form entry
    batch = SentenceBatch.from_sentences(retagged)
    _, _, _, forced, _ = lem._candidates(batch.attrs[:, batch.words], batch.text_of, False)
    assert lem.lemma("went", forced[2]) == "go"
    assert forced[11] == -1
    off = Lemmatizer(hash_bits=BITS, form_lexicon=False)
    off.initialize(toy)
    _, _, _, forced, _ = off._candidates(batch.attrs[:, batch.words], batch.text_of, False)
    assert forced[2] == -1 and forced[11] == -1 and forced[0] >= 0


def test_protocol_on_a_lemmatizer_example(toy):
    lem = Lemmatizer(hash_bits=BITS)
    lem.initialize(toy)
    x = lem.example(toy[1], training=True)
    per_word = [x.cand[x.cand_start[i]:x.cand_start[i + 1]].tolist() for i in range(x.n)]
    labels = [np.array(y, dtype=np.int32) for y in itertools.product(*per_word)]
    assert 1 < len(labels) <= 200
    rng = np.random.default_rng(0)
    check_protocol(lem, x, rng.normal(size=len(x.cand)), labels, lem.gold(x),
                   lambda g, y: int((np.asarray(g) != np.asarray(y)).sum()), rng, BITS)


def test_perceptron_learns_the_toy_lemmas_without_lexicon(toy):
    lem = Lemmatizer(hash_bits=16, lexicon_min_count=0)
    lem.initialize(toy)
    examples = lem.examples(toy)
    trainer = Perceptron(seed=0)
    trainer.begin(lem, examples, lem.hash_bits)
    for _ in range(10):
        trainer.epoch(lem, examples)
    ids = lem.predict_batch(SentenceBatch.from_sentences(toy), trainer.prediction_weights())
    forms = [f for s in toy for f in s.forms[1:]]
    assert lem.lemma_strings(forms, ids) == [l for s in toy for l in conll_column(s, 2)]


def test_batch_equals_sentences_outputs_and_state_round_trip(toy, tmp_path):
    lem = Lemmatizer(hash_bits=BITS, lexicon_min_count=2)
    lem.initialize(toy)
    w = Weights(BITS, False, np.random.default_rng(3).normal(size=1 << BITS))
    batch = SentenceBatch.from_sentences(toy)
    got = lem.predict_batch(batch, w)
    np.testing.assert_array_equal(got, np.concatenate([lem.predict_sentence(s, w) for s in toy]))
    lem.save(tmp_path / "lemma")
    again = Lemmatizer.load(tmp_path / "lemma")
    assert again.config() == lem.config()
    np.testing.assert_array_equal(again.predict_batch(SentenceBatch.from_sentences(toy), w), got)
    sentence, lemmas = lem.with_lemmas(toy[0], got[:3])
    assert sentence.attrs[LEMMA, 1:].tolist() == [hash_string(l) for l in lemmas]
    hashes = lem.lemma_hashes(batch.attrs[0, batch.words], got, batch.text_of)
    forms = [f for s in toy for f in s.forms[1:]]
    assert hashes.tolist() == [hash_string(l) for l in lem.lemma_strings(forms, got)]


def test_batch_builds_candidate_sets_only_for_words_the_lexicon_does_not_force(toy):
    lem = Lemmatizer(hash_bits=BITS, lexicon_min_count=1)
    lem.initialize(toy)
    w = Weights(BITS, False, np.random.default_rng(5).normal(size=1 << BITS))
    batch = SentenceBatch.from_sentences(toy)
    got = lem.predict_batch(batch, w)
    assert lem._pool[3] == 1  # every training pair is in the lexicon: only the shared set 0
    np.testing.assert_array_equal(got, np.concatenate([lem.predict_sentence(s, w) for s in toy]))
    # a pair the lexicon does not know gets its set; the forced ones still do not
    novel = Sentence.from_forms([["zorbles", "quixed"]])[0]
    before = lem._pool[3]
    mixed = lem.predict_batch(SentenceBatch.from_sentences([toy[0], novel]), w)
    assert lem._pool[3] == before + 2
    np.testing.assert_array_equal(mixed, np.concatenate([lem.predict_sentence(s, w) for s in (toy[0], novel)]))


@pytest.mark.skipif(not (UD / "tr_imst" / "tr_imst-ud-dev.conllu").exists(), reason="tr_imst not available")
def test_batch_kernel_equals_one_sentence_path_on_a_treebank():
    sentences = read_corpus(UD / "tr_imst" / "tr_imst-ud-dev.conllu")[:300]
    lem = Lemmatizer(hash_bits=16, lexicon_min_count=2)
    lem.initialize(sentences[:200])
    w = Weights(16, False, np.random.default_rng(4).normal(size=1 << 16))
    got = lem.predict_batch(SentenceBatch.from_sentences(sentences), w)
    np.testing.assert_array_equal(got, np.concatenate([lem.predict_sentence(s, w) for s in sentences]))
    forms = [f for s in sentences for f in s.forms[1:]]
    for form, k in zip(forms, got.tolist()):
        assert edit.applies(lem.scripts[lem.script_of(k)], form)  # candidates only


AMBIGUOUS = """\
1	it	it	PRON	PRP	_	2	nsubj	_	_
2	's	be	AUX	VBZ	_	0	root	_	_
3	good	good	ADJ	JJ	_	2	xcomp	_	_

1	it	it	PRON	PRP	_	3	nsubj	_	_
2	's	have	AUX	VBZ	_	3	aux	_	_
3	gone	go	VERB	VBN	_	0	root	_	_

1	he	he	PRON	PRP	_	2	nsubj	_	_
2	's	be	AUX	VBZ	_	0	root	_	_
3	here	here	ADV	RB	_	2	advmod	_	_

"""


@pytest.fixture
def ambiguous(tmp_path):
    return corpus_of(tmp_path, "ambiguous", AMBIGUOUS)


def test_lexicon_share_leaves_ambiguous_pairs_to_the_classifier(ambiguous, tmp_path):
    be, have = edit.extract("'s", "be"), edit.extract("'s", "have")
    batch = SentenceBatch.from_sentences(ambiguous)
    attrs = batch.attrs[:, batch.words]
    # Default (share 0): "'s" AUX is forced to its most frequent script, "be" (2 of 3).
    forcing = Lemmatizer(hash_bits=BITS, lexicon_share=0.0)
    forcing.initialize(ambiguous)
    _, _, _, forced, _ = forcing._candidates(attrs, batch.text_of, False)
    assert [forcing.scripts[k] for k in forced[[1, 4, 7]]] == [be, be, be]
    # Share 0.5: 2/3 is enough, still forced; share 0.9: not forced, candidates = the pair's two scripts.
    half = Lemmatizer(hash_bits=BITS, lexicon_share=0.5)
    half.initialize(ambiguous)
    assert (half._candidates(attrs, batch.text_of, False)[3] == forced).all()
    lem = Lemmatizer(hash_bits=16, lexicon_share=0.9,
                     script_templates=("bias", "lower", "upos", "lower+1", "upos+1"))
    lem.initialize(ambiguous)
    cand_set, set_start, set_classes, forced, _ = lem._candidates(attrs, batch.text_of, False)
    assert (forced[[1, 4, 7]] == -1).all() and (forced[[0, 2, 3, 5, 6, 8]] >= 0).all()
    for i in (1, 4, 7):
        got = set_classes[set_start[cand_set[i]]:set_start[cand_set[i] + 1]].tolist()
        assert sorted(lem.scripts[lem.script_of(k)] for k in got) == sorted([be, have])
    # The classifier learns the choice from the context ("'s gone": have), which forcing cannot
    # (not averaged: on three sentences the average keeps the first epochs' mistakes).
    trainer = Perceptron(seed=0, averaged=False)
    examples = lem.examples(ambiguous)
    trainer.begin(lem, examples, lem.hash_bits)
    for _ in range(10):
        trainer.epoch(lem, examples)
    w = trainer.prediction_weights()
    ids = lem.predict_batch(batch, w)
    forms = [f for s in ambiguous for f in s.forms[1:]]
    assert lem.lemma_strings(forms, ids) == [l for s in ambiguous for l in conll_column(s, 2)]
    np.testing.assert_array_equal(ids, np.concatenate([lem.predict_sentence(s, w) for s in ambiguous]))
    # State round trip keeps the ambiguous pairs; a state saved before lexicon_share loads as share 0.
    lem.save(tmp_path / "lemma")
    again = Lemmatizer.load(tmp_path / "lemma")
    assert again.config() == lem.config()
    np.testing.assert_array_equal(again.predict_batch(SentenceBatch.from_sentences(ambiguous), w), ids)
    # (and without known_lemmas: its classes are the scripts).
    config, arrays = forcing.config(), forcing.arrays()
    for name in ("lexicon_share", "known_lemmas", "known_templates"):
        del config[name]
    for name in ("ambiguous_keys", "ambiguous_start", "ambiguous_scripts", "lemma_keys", "lemma_forms"):
        del arrays[name]
    old = Lemmatizer.from_state(config, arrays)
    assert old.lexicon_share == 0.0 and not old.known_lemmas and old.n_classes == len(old.scripts)
    np.testing.assert_array_equal(old._candidates(attrs, batch.text_of, False)[3],
                                  forcing._candidates(attrs, batch.text_of, False)[3])
    with pytest.raises(ValueError):
        Lemmatizer(lexicon_share=1.5)


def test_known_lemmas_classes_mark_attested_lemmas(toy, tmp_path):
    lem = Lemmatizer(hash_bits=BITS, lexicon_min_count=0, known_lemmas=True)
    lem.initialize(toy)
    K = len(lem.scripts)
    assert lem.n_classes == 2 * K
    lemma_forms = {}
    for s in toy:
        for f, l in zip(s.forms[1:], conll_column(s, 2)):
            lemma_forms.setdefault(l, set()).add(f)
    attested = lambda form, lemma: bool(lemma_forms.get(lemma, set()) - {form})
    assert attested("walks", "walk") and attested("in", "the") and not attested("in", "in")
    forms = ["walks", "go", "in", "cat", "Dogs", "saw", "Zzz", "went"]
    path = tmp_path / "unseen.conllu"
    lines = [f"{i + 1}\t{f}\t_\tNOUN\t_\t_\t{min(i, 1)}\t{'dep' if i else 'root'}\t_\t_\n" for i, f in enumerate(forms)]
    path.write_text("".join(lines) + "\n", encoding="utf-8")
    sentence = read_corpus(path)[0]
    batch = SentenceBatch.from_sentences([sentence])
    cand_set, set_start, set_classes, _, _ = lem._candidates(batch.attrs[:, batch.words], batch.text_of, False)
    for i, form in enumerate(forms):
        got = set_classes[set_start[cand_set[i]]:set_start[cand_set[i] + 1]].tolist()
        brute = [K + k if attested(form, edit.apply(lem.scripts[k], form)) else k for k in lem.applicable(form)]
        assert got == brute, form
        assert [lem.lemma(form, c) for c in got] == [edit.apply(lem.scripts[k], form) for k in lem.applicable(form)]
    # The value each candidate writes (what the probabilities sum over) is its lemma's string
    # id, with and without attested lemmas (`softmax_batch`; every form here is scored).
    for model in (lem, Lemmatizer(hash_bits=BITS, lexicon_min_count=0, known_lemmas=False)):
        if model is not lem:
            model.initialize(toy)
        choices = model.softmax_batch(batch, Weights(BITS, False, np.random.default_rng(5).normal(size=1 << BITS)))
        word = np.repeat(np.arange(len(forms)), np.diff(choices.cand_start))
        texts = [model.lemma(forms[m], c) for m, c in zip(word.tolist(), choices.cand.tolist())]
        assert choices.cand_values.tolist() == hash_strings(texts).tolist()
        np.testing.assert_allclose(np.bincount(word, weights=choices.probs), 1.0)
    # Gold classes of training words are candidates without the training augmentation.
    for s in toy:
        x = lem.example(s)
        for i, g in enumerate(x.gold_classes.tolist()):
            assert g in x.cand[x.cand_start[i]:x.cand_start[i + 1]].tolist()
    # The known atom's weight alone picks the attested lemma: "walks" -> "walk", not "walks".
    values = lem.form_values.values(batch.attrs[:, batch.words], batch.text_of)
    key = int(lem.tables.keys(values)[0, lem.templates.index("bias")])
    array = np.zeros(1 << BITS)
    array[(key + lem.tables.n_atoms - 1) & ((1 << BITS) - 1)] = 1.0
    w = Weights(BITS, False, array)
    lemmas = lem.lemma_strings(forms, lem.predict_batch(batch, w))
    assert lemmas[:2] == ["walk", "go"] and lemmas[2] == "in"
    plain = Lemmatizer(hash_bits=BITS, lexicon_min_count=0, known_lemmas=False)
    plain.initialize(toy)
    assert plain.lemma_strings(forms, plain.predict_batch(batch, Weights(BITS)))[0] == "walks"  # keep: first
    # Protocol suite, batch = one-sentence path, state round trip.
    x = lem.example(toy[1], training=True)
    per_word = [x.cand[x.cand_start[i]:x.cand_start[i + 1]].tolist() for i in range(x.n)]
    labels = [np.array(y, dtype=np.int32) for y in itertools.product(*per_word)]
    rng = np.random.default_rng(1)
    check_protocol(lem, x, rng.normal(size=len(x.cand)), labels, lem.gold(x),
                   lambda g, y: int((np.asarray(g) != np.asarray(y)).sum()), rng, BITS)
    w = Weights(BITS, False, np.random.default_rng(5).normal(size=1 << BITS))
    got = lem.predict_batch(SentenceBatch.from_sentences(toy), w)
    np.testing.assert_array_equal(got, np.concatenate([lem.predict_sentence(s, w) for s in toy]))
    lem.save(tmp_path / "known")
    again = Lemmatizer.load(tmp_path / "known")
    assert again.config() == lem.config() and again.n_classes == 2 * K
    np.testing.assert_array_equal(again.predict_batch(SentenceBatch.from_sentences(toy), w), got)
