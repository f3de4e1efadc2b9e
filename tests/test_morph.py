"""The per-word choice structure (AtomChoice) and the Morphologizer: the shared protocol
suite against brute force, the batch kernel against the one-sentence path, every
trainer, and state round trips."""
from __future__ import annotations

import itertools
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_corpus
from arborist.learn.eg import EG
from arborist.learn.medn import MaxEnDNet
from arborist.learn.perceptron import SWVP, Perceptron
from arborist.morph.atoms import AtomTables, U64Map, segment_argmax
from arborist.morph.choice import AtomChoice, ChoiceExample, conll_column
from arborist.morph.morphologizer import Morphologizer
from arborist.morph.values import VALUES, template_table
from arborist.sentence import FEATS, UPOS, SentenceBatch
from arborist.strings import hash_string
from arborist.weights import Weights

from protocol import check_gradient, check_protocol

BITS = 12
UD = Path(os.environ.get("ARBORIST_UD", "/work/shared/corpora/ud"))

TOY = """\
1	The	the	DET	DT	Definite=Def|PronType=Art	2	det	_	_
2	dogs	dog	NOUN	NNS	Number=Plur	3	nsubj	_	_
3	bark	bark	VERB	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	0	root	_	_

1	A	a	DET	DT	Definite=Ind|PronType=Art	2	det	_	_
2	dog	dog	NOUN	NN	Number=Sing	3	nsubj	_	_
3	barks	bark	VERB	VBZ	Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin	0	root	_	_

1	Dogs	dog	NOUN	NNS	Number=Plur	2	nsubj	_	_
2	barked	bark	VERB	VBD	Mood=Ind|Tense=Past|VerbForm=Fin	0	root	_	_
3	.	.	PUNCT	.	_	2	punct	_	_

1	She	she	PRON	PRP	Case=Nom|Gender=Fem|Number=Sing|Person=3|PronType=Prs	2	nsubj	_	_
2	barked	bark	VERB	VBD	Mood=Ind|Tense=Past|VerbForm=Fin	0	root	_	_
3	.	.	PUNCT	.	_	2	punct	_	_

"""


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.conllu"
    path.write_text(TOY, encoding="utf-8")
    return read_corpus(path)


def hamming(gold, y):
    return int((np.asarray(gold) != np.asarray(y)).sum())


def all_labels(x: ChoiceExample):
    per_word = [x.cand[x.cand_start[i]:x.cand_start[i + 1]].tolist() for i in range(x.n)]
    return [np.array(y, dtype=np.int32) for y in itertools.product(*per_word)]


def random_tables(rng, n_classes=5, n_atoms=9, templates=("bias", "lower", "suffix2", "upos", "lower-1|upos")):
    seeds, n_parts, columns, offsets = template_table(templates, "test")
    class_atoms = [sorted(rng.choice(n_atoms, size=int(rng.integers(1, 4)), replace=False)) for _ in range(n_classes)]
    kind_start = np.array([0, len(templates), len(templates) + 2])  # kind 0: every template, kind 1: two
    kind_templates = np.array(list(range(len(templates))) + [0, 3])
    class_start = np.concatenate([[0], np.cumsum([len(a) for a in class_atoms])])
    return AtomTables(BITS, seeds, n_parts, columns, offsets, kind_start, kind_templates, class_start,
                      np.concatenate(class_atoms), rng.integers(0, 2, size=n_atoms))


def random_example(rng, tables, n=3):
    values = rng.integers(0, 50, size=(n, len(VALUES)), dtype=np.uint64)
    lists = [sorted(rng.choice(tables.n_classes, size=int(rng.integers(1, 4)), replace=False)) for _ in range(n)]
    cand_start = np.concatenate([[0], np.cumsum([len(c) for c in lists])]).astype(np.int64)
    gold = np.array([c[int(rng.integers(len(c)))] for c in lists], dtype=np.int32)
    return ChoiceExample(tables.keys(values), cand_start, np.concatenate(lists).astype(np.int32), gold), values


@pytest.mark.parametrize("seed", range(4))
def test_choice_protocol_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    tables = random_tables(rng)
    structure = AtomChoice(tables)
    x, _ = random_example(rng, tables, n=1 + seed % 3)
    labels = all_labels(x)
    scores = rng.normal(size=len(x.cand)) * 2
    check_protocol(structure, x, scores, labels, structure.gold(x), hamming, rng, BITS)
    check_gradient(structure, x, scores)


def test_choice_scores_are_sums_of_atom_features():
    # Brute force: score(word, class) = sum over atoms a, templates j of kind(a): w[(key_j + a) & mask].
    rng = np.random.default_rng(5)
    tables = random_tables(rng)
    x, _ = random_example(rng, tables, n=4)
    w = Weights(BITS, False, rng.normal(size=1 << BITS))
    got = AtomChoice(tables).scores(x, w)
    kinds = [tables.kind_templates[tables.kind_start[g]:tables.kind_start[g + 1]] for g in range(2)]
    for i in range(x.n):
        for p in range(x.cand_start[i], x.cand_start[i + 1]):
            c = x.cand[p]
            expected = sum(w.array[(int(x.keys[i, j]) + int(a)) & ((1 << BITS) - 1)]
                           for a in tables.class_atoms[tables.class_start[c]:tables.class_start[c + 1]]
                           for j in kinds[tables.atom_kind[a]])
            assert np.isclose(got[p], expected)


def test_u64map_against_a_dict():
    rng = np.random.default_rng(11)
    m = U64Map(4)
    reference = {}
    for _ in range(20):  # grows from 16 slots, overwrites, key 0
        keys = np.concatenate([rng.integers(0, 2**64 - 1, size=50, dtype=np.uint64), [0, 1]]).astype(np.uint64)  # 0 is stored as 1 << 63 (not a real key)
        values = rng.integers(0, 2**63, size=len(keys), dtype=np.uint64)
        m.put_many(keys, values)
        reference.update(zip(keys.tolist(), values.tolist()))
    probe = np.concatenate([np.array(list(reference), dtype=np.uint64), rng.integers(0, 2**64 - 1, size=100, dtype=np.uint64)])
    got = m.get_many(probe, missing=7)
    assert got.tolist() == [reference.get(k, 7) for k in probe.tolist()]
    assert len(m) == len(reference)


def test_segment_argmax_takes_the_first_best():
    scores = np.array([1.0, 3.0, 3.0, 0.0, -1.0, -1.0])
    assert segment_argmax(scores, np.array([0, 3, 4, 6])).tolist() == [1, 3, 4]
    with pytest.raises(ValueError):
        segment_argmax(scores, np.array([0, 0, 6]))


@pytest.mark.parametrize("temperature", [1.0, 0.3, 7.0])
def test_predict_many_equals_the_one_example_path(temperature):
    """`predict_many` and `softmax_many` (the probabilities' kernel) against the one-example
    path: the same classes, and the softmax of each scored word's candidates' scores / T in
    its set's order (`marginals` of the example), nothing for a forced word."""
    rng = np.random.default_rng(7)
    tables = random_tables(rng, n_classes=8, n_atoms=12)
    structure = AtomChoice(tables)
    w = Weights(BITS, False, rng.normal(size=1 << BITS))
    sets = [sorted(rng.choice(8, size=int(rng.integers(1, 6)), replace=False)) for _ in range(5)]
    set_start = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    set_classes = np.concatenate(sets).astype(np.int32)
    lengths = [3, 1, 5, 2]
    values = rng.integers(0, 30, size=(sum(lengths), len(VALUES)), dtype=np.uint64)
    cand_set = rng.integers(0, 5, size=sum(lengths)).astype(np.int32)
    forced = np.where(rng.random(sum(lengths)) < 0.2, rng.integers(0, 8, size=sum(lengths)), -1).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    got = tables.predict_many(values, starts, cand_set, set_start, set_classes, forced, w.array)
    classes, prob_start, probs = tables.softmax_many(values, starts, cand_set, set_start, set_classes, forced,
                                                     w.array, temperature)
    for i in range(len(lengths)):
        a, b = starts[i], starts[i + 1]
        lists = [sets[s] for s in cand_set[a:b]]
        x = ChoiceExample(tables.keys(values[a:b]), np.concatenate([[0], np.cumsum([len(c) for c in lists])]).astype(np.int64),
                          np.concatenate(lists).astype(np.int32))
        pred = structure.argmax(x, structure.scores(x, w))
        np.testing.assert_array_equal(got[a:b], np.where(forced[a:b] >= 0, forced[a:b], pred))
        mu, _ = structure.marginals(x, structure.scores(x, w) / temperature)
        for t in range(b - a):
            lo, hi = prob_start[a + t], prob_start[a + t + 1]
            if forced[a + t] >= 0:
                assert hi == lo
            else:
                np.testing.assert_allclose(probs[lo:hi], mu[x.cand_start[t]:x.cand_start[t + 1]], rtol=1e-12)
    np.testing.assert_array_equal(classes, got)
    assert prob_start[-1] == len(probs) and (forced >= 0).any() and (forced < 0).any()
    with pytest.raises(ValueError, match="temperature"):
        tables.softmax_many(values, starts, cand_set, set_start, set_classes, forced, w.array, -1.0)


def test_toy_morphologizer_sets_and_protocol(toy):
    m = Morphologizer(hash_bits=BITS)
    m.initialize(toy)
    assert "_" in m.bundles and "Number=Plur" in m.bundles
    assert "Number=Sing" in m.pairs and "Person=3" in m.pairs
    x = m.example(toy[1], training=True)
    # Candidates: the bundles seen with each word's UPOS.
    dets = set(m.feats_strings(x.cand[x.cand_start[0]:x.cand_start[1]]))
    assert dets == {"Definite=Def|PronType=Art", "Definite=Ind|PronType=Art"}
    rng = np.random.default_rng(0)
    labels = all_labels(x)
    assert len(labels) == 2 * 2 * 3
    check_protocol(m, x, rng.normal(size=len(x.cand)), labels, m.gold(x), hamming, rng, BITS)


def test_known_pairs_restrict_candidates_at_prediction_only(toy):
    m = Morphologizer(hash_bits=BITS, known_min_count=1, suffix_length=0)
    m.initialize(toy)
    # "dog"/NOUN was seen with one bundle: forced at prediction, a free choice in training.
    batch = SentenceBatch.from_sentences([toy[1]])
    _, _, _, forced, _ = m._candidates(batch.attrs[:, batch.words], batch.text_of, training=False)
    assert m.feats_strings(forced[[1]]) == ["Number=Sing"]
    _, _, _, forced_train, _ = m._candidates(batch.attrs[:, batch.words], batch.text_of, training=True)
    assert (forced_train == -1).all()
    # "barked"/VERB was seen once with one bundle too; with known_min_count=3 nothing is known.
    m3 = Morphologizer(hash_bits=BITS, known_min_count=3, suffix_length=0)
    m3.initialize(toy)
    _, _, _, forced3, _ = m3._candidates(batch.attrs[:, batch.words], batch.text_of, training=False)
    assert (forced3 == -1).all()
    # The suffix guesser: "barked" is not in the dictionary (seen twice), but VERB words ending
    # in "ed" were seen 2 times, both with one bundle.
    g = Morphologizer(hash_bits=BITS, known_min_count=3, suffix_length=2, suffix_min_count=2)
    g.initialize(toy)
    cand_set, set_start, set_classes, forced_g, _ = g._candidates(batch.attrs[:, batch.words], batch.text_of, training=False)
    other = SentenceBatch.from_sentences([toy[2]])
    cand_set, set_start, set_classes, forced_g, _ = g._candidates(other.attrs[:, other.words], other.text_of, training=False)
    assert g.feats_strings(forced_g[[1]]) == ["Mood=Ind|Tense=Past|VerbForm=Fin"]
    assert forced_g[0] == -1 or g.feats_strings(forced_g[[0]]) == ["Number=Plur"]


@pytest.mark.parametrize("make_trainer,epochs", [
    (lambda: Perceptron(seed=0), 5),
    (lambda: SWVP(seed=0), 5),
    (lambda: EG("crf", C=10.0, seed=0), 15),
    (lambda: EG("m3n", C=10.0, seed=0), 30),
    (lambda: MaxEnDNet(lam=3.0, C=10.0, inner_epochs=2, eta=0.5, seed=1), 8),
], ids=["csp", "swvp", "eg-crf", "eg-m3n", "medn"])
def test_every_trainer_fits_the_toy_corpus(toy, make_trainer, epochs):
    m = Morphologizer(hash_bits=16)
    m.initialize(toy)
    examples = m.examples(toy)
    trainer = make_trainer()
    trainer.begin(m, examples, m.hash_bits)
    for _ in range(epochs):
        trainer.finish_epoch(trainer.epoch(m, examples))
    w = trainer.prediction_weights()
    right = sum(m.hits(x, m.gold(x), m.argmax(x, m.scores(x, w)))[0] for x in examples)
    assert right == sum(x.n for x in examples)


@pytest.mark.parametrize("joint", [False, True], ids=["feats", "joint"])
def test_batch_equals_sentences_and_state_round_trip(toy, tmp_path, joint):
    m = Morphologizer(hash_bits=BITS, known_min_count=1, joint=joint, joint_min_count=1)
    m.initialize(toy)
    w = Weights(BITS, False, np.random.default_rng(1).normal(size=1 << BITS))
    got = m.predict_batch(SentenceBatch.from_sentences(toy), w)
    one = np.concatenate([m.predict_sentence(s, w) for s in toy])
    np.testing.assert_array_equal(got, one)
    m.save(tmp_path / "morph")
    again = Morphologizer.load(tmp_path / "morph")
    assert again.config() == m.config()
    np.testing.assert_array_equal(again.predict_batch(SentenceBatch.from_sentences(toy), w), got)
    tagged = m.with_feats(toy[0], got[:3])
    assert tagged.attrs[FEATS, 1:].tolist() == [hash_string(b) for b in m.feats_strings(got[:3])]
    if not joint:
        assert (tagged.attrs[:FEATS] == toy[0].attrs[:FEATS]).all()
    else:
        assert tagged.upos[1:] == m.upos_strings(got[:3])
        assert tagged.attrs[UPOS, 1:].tolist() == [hash_string(u) for u in tagged.upos[1:]]


def test_joint_classes_and_candidates(toy):
    # Retag "barked" (VERB) as NOUN in the input rows of the first sentence it occurs in:
    # the joint candidates of input NOUN then include that VERB class once seen once.
    noisy = [replace(s, attrs=s.attrs.copy()) for s in toy]
    noisy[2].attrs[UPOS, 2] = hash_string("NOUN")
    m = Morphologizer(hash_bits=BITS, joint=True, joint_min_count=1)
    m.initialize(noisy)
    verb = "VERB\tMood=Ind|Tense=Past|VerbForm=Fin"
    assert verb in m.classes and m.upos_strings([m.class_index[verb]]) == ["VERB"]
    x = m.example(noisy[2], training=True)
    names = [m.classes[c] for c in x.cand[x.cand_start[1]:x.cand_start[2]]]
    assert verb in names and "NOUN\tNumber=Plur" in names
    strict = Morphologizer(hash_bits=BITS, joint=True, joint_min_count=2)
    strict.initialize(noisy)
    x = strict.example(noisy[2], training=True)
    names = [strict.classes[c] for c in x.cand[x.cand_start[1]:x.cand_start[2]]]
    assert names[-1] == verb and verb not in names[:-1]  # only as the added gold class
    rng = np.random.default_rng(1)
    x = m.example(noisy[0], training=True)
    check_protocol(m, x, rng.normal(size=len(x.cand)), all_labels(x), m.gold(x), hamming, rng, BITS)


@pytest.mark.skipif(not (UD / "en_ewt" / "en_ewt-ud-dev.conllu").exists(), reason="en_ewt not available")
def test_batch_kernel_equals_one_sentence_path_on_a_treebank():
    sentences = read_corpus(UD / "en_ewt" / "en_ewt-ud-dev.conllu")[:300]
    m = Morphologizer(hash_bits=16)
    m.initialize(sentences[:200])
    w = Weights(16, False, np.random.default_rng(2).normal(size=1 << 16))
    got = m.predict_batch(SentenceBatch.from_sentences(sentences), w)
    one = np.concatenate([m.predict_sentence(s, w) for s in sentences])
    np.testing.assert_array_equal(got, one)
    # Unseen UPOS/forms get the fallback sets; every prediction is a bundle of training.
    assert set(m.feats_strings(got)) <= set(m.bundles)
    assert conll_column(sentences[0], 5)[0] in m.bundles
