"""The tag dictionary of a tagger (`LinearChain(dictionary_min_count=N)`): the learned table,
decoding under it against brute force, the batch kernels against the one-sentence path, the
tagger component (restricted when it tags, not when it trains), its combination with the
XPOS candidates of a UPOS, and the files a pipeline saves it in."""
from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_corpus
from arborist.registry import make_structure
from arborist.sentence import FORM, Sentence, SentenceBatch
from arborist.strings import hash_strings
from arborist.tagger.chain import LinearChain
from arborist.tagger.viterbi import chain_argmax, chain_tag_marginals
from arborist.weights import Weights

SAMPLE = Path(__file__).resolve().parent.parent / "corpora" / "sample"
HASH_BITS = 14
UPOS = ["ADJ", "DET", "NOUN", "VERB"]


def tagged(words: list[str], upos: list[str]) -> Sentence:
    return Sentence.from_columns(words, None, upos)


TRAIN = [tagged(["The", "dog", "runs"], ["DET", "NOUN", "VERB"]),
         tagged(["the", "runs", "dog"], ["DET", "NOUN", "NOUN"]),
         tagged(["a", "red", "dog"], ["DET", "ADJ", "NOUN"])]


def names(chain: LinearChain, row) -> list[str]:
    return [t for t, ok in zip(chain.tags, row) if ok]


def test_learns_the_tags_of_each_lowercase_form_seen_often_enough():
    for n, expected in ((1, {"the": ["DET"], "dog": ["NOUN"], "runs": ["NOUN", "VERB"], "a": ["DET"], "red": ["ADJ"]}),
                        (2, {"the": ["DET"], "dog": ["NOUN"], "runs": ["NOUN", "VERB"]}),
                        (3, {"dog": ["NOUN"]})):
        chain = LinearChain(None, hash_bits=HASH_BITS, dictionary_min_count=n)
        chain.initialize(TRAIN)
        x = tagged(["THE", "dog", "runs", "a", "red", "cat"], ["X"] * 6)
        allowed = chain.allowed(x.attrs[:, 1:])
        got = {w.lower(): names(chain, row) for w, row in zip(x.forms[1:], allowed) if not row.all()}
        assert got == expected, n
        assert allowed[-1].all()  # "cat" was never seen: every tag
    assert LinearChain(None, hash_bits=HASH_BITS).allowed(x.attrs[:, 1:]) is None  # no dictionary


@pytest.mark.parametrize("words", [["the", "runs", "dog"], ["a", "cat", "runs", "red"], ["dog"]])
def test_decoding_under_the_dictionary_against_brute_force(words):
    rng = np.random.default_rng(len(words))
    chain = LinearChain(None, hash_bits=HASH_BITS, dictionary_min_count=1)
    chain.initialize(TRAIN)
    x = tagged(words, ["X"] * len(words))
    w = Weights(HASH_BITS, False, rng.normal(size=1 << HASH_BITS))
    raw = chain.scores(x, w)  # training's scores: every tag
    assert np.isfinite(raw[chain.valid_parts(x.n)]).all()
    allowed = chain.allowed(x.attrs[:, 1:])
    sequences = [np.array(y) for y in itertools.product(*[np.flatnonzero(row) for row in allowed])]
    values = np.array([(raw * chain.indicator(x, y)).sum() for y in sequences])
    best = chain_argmax(chain.pruned(x, raw))[0]
    np.testing.assert_array_equal(best, sequences[int(np.argmax(values))])
    batch = SentenceBatch.from_sentences([x])
    np.testing.assert_array_equal(chain.predict_batch(batch, w), best)


def test_batch_kernels_equal_the_one_sentence_path():
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    chain = LinearChain(None, hash_bits=HASH_BITS, dictionary_min_count=1)
    chain.initialize(train)
    plain = LinearChain(chain.tags, hash_bits=HASH_BITS)
    w = Weights(HASH_BITS, False, np.random.default_rng(3).normal(size=1 << HASH_BITS))
    sentences = dev + train[:40]
    batch = SentenceBatch.from_sentences(sentences)
    tags = chain.predict_batch(batch, w)
    unrestricted = plain.predict_batch(batch, w)
    starts = batch.word_starts
    for i, x in enumerate(sentences):
        np.testing.assert_array_equal(tags[starts[i]:starts[i + 1]], chain_argmax(chain.pruned(x, chain.scores(x, w)))[0])
    assert (tags != unrestricted).any()
    allowed = chain.allowed(batch.attrs[:, batch.words])
    assert allowed[np.arange(len(tags)), tags].all()
    assert not allowed[np.arange(len(tags)), unrestricted].all()
    values = chain.features.form_values(batch.attrs[FORM][batch.words], batch.text_of)
    marginal_tags, probs = chain.marginals_batch(batch, w, 0.7)
    np.testing.assert_array_equal(marginal_tags, tags)
    assert (probs[~allowed] == 0).all()
    for i, x in enumerate(sentences):
        expected = chain_tag_marginals(chain.pruned(x, chain.scores(x, w)) / 0.7)[0]
        np.testing.assert_allclose(probs[starts[i]:starts[i + 1]], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(chain.features.tag_many(values, starts, w.array, None), unrestricted)


def test_with_the_xpos_candidates_of_a_upos():
    """An XPOS chain with both: a form's tags among those its UPOS allows; a form seen only
    with tags its (predicted) UPOS does not allow keeps the UPOS's tags, never none."""
    xpos = [Sentence.from_columns(["the", "dog", "runs"], None, ["DET", "NOUN", "VERB"], ["DT", "NN", "VBZ"]),
            Sentence.from_columns(["the", "runs"], None, ["DET", "NOUN"], ["DT", "NNS"])]
    chain = LinearChain(None, attribute="xpos", hash_bits=HASH_BITS, candidates_from="upos", dictionary_min_count=1)
    chain.initialize(xpos)
    x = Sentence.from_columns(["runs", "dog", "runs", "new"], None, ["VERB", "VERB", "NOUN", "NOUN"], ["_"] * 4)
    allowed = chain.allowed(x.attrs[:, 1:])
    assert [names(chain, row) for row in allowed] == [["VBZ"], ["VBZ"], ["NNS"], ["NN", "NNS"]]


def test_settings_are_checked_and_the_table_is_not_in_the_registry_call():
    chain = LinearChain(None, hash_bits=HASH_BITS, dictionary_min_count=2)
    chain.initialize(TRAIN)
    call = chain.registry_call()
    assert call["dictionary_min_count"] == 2 and "dictionary" not in call
    again = make_structure(call)
    assert again.dictionary is None  # the component's files give it back (below)
    assert "dictionary_min_count" not in LinearChain(UPOS).registry_call()
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="dictionary_min_count"):
            LinearChain(UPOS, dictionary_min_count=bad)
    with pytest.raises(ValueError, match="order 1"):
        LinearChain(UPOS, order=2, dictionary_min_count=1)
    forms, rows = chain.dictionary
    with pytest.raises(ValueError, match="sorted"):
        chain.set_dictionary(forms[::-1].copy(), rows[::-1].copy())
    with pytest.raises(ValueError, match="bool"):
        chain.set_dictionary(forms, rows[:, :2])


@pytest.fixture(scope="module")
def dictionary_model(tmp_path_factory):
    from trackers import Quiet

    from arborist.train import load_config, train

    repo = Path(__file__).resolve().parents[1]
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2,
                 "components.upos.structure.dictionary_min_count": 1}
    for name in ("upos", "xpos", "parser", "labeler"):
        overrides[f"components.{name}.structure.hash_bits"] = 14
    out = tmp_path_factory.mktemp("dictionary") / "run"
    train(load_config(repo / "configs" / "quickstart.cfg", overrides), out, Quiet())
    return out / "model-best"


def test_a_pipeline_saves_and_loads_the_dictionary(dictionary_model, tmp_path):
    from arborist.component import ModelError
    from arborist.model import load

    pipeline = load(dictionary_model)
    upos = pipeline.components["upos"]
    forms, rows = upos.structure.dictionary
    train = list(read_corpus(SAMPLE / "sample-train.conllu"))
    lows = sorted({f.lower() for x in train for f in x.forms[1:]})
    np.testing.assert_array_equal(forms, np.sort(hash_strings(lows)))
    meta = json.loads((dictionary_model / "meta.json").read_text(encoding="utf-8"))
    entry = next(c for c in meta["components"] if c["name"] == "upos")
    assert entry["structure"]["dictionary_min_count"] == 1
    dev = list(read_corpus(SAMPLE / "sample-dev.conllu"))
    batch = SentenceBatch.from_sentences(dev)
    predicted = upos.predict_batch(batch)
    assert upos.structure.allowed(batch.attrs[:, batch.words])[np.arange(len(predicted)), predicted].all()
    for missing in ("upos.dictionary_forms.npy", "upos.dictionary_tags.npy"):
        broken = tmp_path / missing
        shutil.copytree(dictionary_model, broken)
        (broken / missing).unlink()
        with pytest.raises(ModelError, match=missing.replace(".", r"\.")):
            load(broken)
    def huge_header(path):
        path.write_bytes(path.read_bytes().replace(b"'shape': (", b"'shape': (7696581394432, ", 1))

    forgeries = {"tags-too-few": ("upos.dictionary_tags.npy", lambda p: np.save(p, rows[:, :3], allow_pickle=False)),
                 "forms-unsorted": ("upos.dictionary_forms.npy", lambda p: np.save(p, forms[::-1].copy(), allow_pickle=False)),
                 "forms-int64": ("upos.dictionary_forms.npy", lambda p: np.save(p, forms.astype(np.int64), allow_pickle=False)),
                 "forms-huge-header": ("upos.dictionary_forms.npy", huge_header),
                 "tags-object": ("upos.dictionary_tags.npy", lambda p: np.save(p, np.array([object()]), allow_pickle=True))}
    for case, (file, forge) in forgeries.items():
        forged = tmp_path / case
        shutil.copytree(dictionary_model, forged)
        forge(forged / file)
        with pytest.raises(ModelError, match=file.replace(".", r"\.")):
            load(forged)


def test_a_dictionary_is_saved_only_with_its_setting(tmp_path):
    """The files go with dictionary_min_count: a chain without it has no dictionary to set, and a
    tagger with it refuses to save before it learned one (its model would not load)."""
    from arborist.components.tagger import Tagger

    chain = LinearChain(None, hash_bits=HASH_BITS)
    chain.initialize(TRAIN)
    with pytest.raises(ValueError, match="dictionary_min_count"):
        chain.learn_dictionary(TRAIN)
    unlearned = Tagger(LinearChain(UPOS, hash_bits=HASH_BITS, dictionary_min_count=1), np.zeros(1 << HASH_BITS))
    with pytest.raises(ValueError, match="never learned"):
        unlearned.save(tmp_path)
    plain = Tagger(chain, np.zeros(1 << HASH_BITS))
    plain.name = "upos"
    plain.save(tmp_path)
    assert not list(tmp_path.glob("*dictionary*"))
