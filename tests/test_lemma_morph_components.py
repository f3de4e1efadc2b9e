"""The lemmatizer and morphologizer as pipeline components: trained by `arborist train` on
jackknifed UPOS, with the parser on their jackknifed LEMMA and FEATS; scored by `arborist
evaluate`; written by `arborist parse` and set in spaCy; saved and loaded with their
learned state."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from arborist.cli import app
from arborist.corpus import read_corpus
from arborist.model import load
from arborist.morph.choice import conll_column
from arborist.train import load_config, train

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"
EXTRA = """
[components.feats]

[components.feats.structure]
@structures = "arborist.Morphologizer.v1"
hash_bits = 16

[components.feats.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0

[components.lemma]

[components.lemma.structure]
@structures = "arborist.Lemmatizer.v1"
hash_bits = 16

[components.lemma.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from trackers import Quiet

    root = tmp_path_factory.mktemp("lemma_morph")
    text = (REPO / "configs" / "quickstart.cfg").read_text().replace("\n[components.parser]\n",
                                                                     EXTRA + "\n[components.parser]\n", 1)
    (root / "full.cfg").write_text(text)
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2}
    pipeline, report = train(load_config(root / "full.cfg", overrides), root / "run", Quiet())
    return root, pipeline, report


def test_trained_in_pipeline_order_with_jackknifed_inputs(run):
    root, pipeline, report = run
    assert list(pipeline.components) == ["upos", "xpos", "feats", "lemma", "parser", "labeler"]
    assert report["components"]["feats"]["kind"] == "morphologizer"
    assert report["components"]["lemma"]["key"] == "dev_lemma"
    jackknife = np.load(root / "run" / "checkpoint" / "jackknife.npz")
    assert {"upos_values", "xpos_values", "feats_values", "lemma_values"} <= set(jackknife.files)
    assert report["components"]["lemma"]["best"] > 80 and report["components"]["feats"]["best"] > 70


def test_evaluate_and_parse_give_lemmas_and_feats(run, tmp_path):
    root, pipeline, report = run
    result = CliRunner().invoke(app, ["evaluate", str(root / "run"), str(SAMPLE / "sample-dev.conllu"), "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)
    assert scores["lemma"] == pytest.approx(report["components"]["lemma"]["best"])
    assert {"feats", "feats_unseen", "ufeats", "ufeats_unseen", "lemma_unseen", "uas", "las"} <= set(scores)
    # the official scorer's table of the same output: UFeats, UPOS, UAS and LAS (universal labels) as ours
    official = scores["conll18"]
    for ours, metric in (("ufeats", "UFeats"), ("upos", "UPOS"), ("uas", "UAS"), ("las", "LAS")):
        assert scores[ours] == pytest.approx(official[metric]["f1"]), metric
    assert {"Lemmas", "MLAS", "BLEX"} <= set(official) and official["Words"]["f1"] == 100.0
    result = CliRunner().invoke(app, ["parse", str(root / "run"), str(SAMPLE / "sample-dev.conllu"), "-d",
                                      str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 0, result.output
    gold = read_corpus(SAMPLE / "sample-dev.conllu")
    parsed = read_corpus(tmp_path / "out" / "sample-dev.conllu")
    expected = pipeline.annotate_many(gold)
    for g, p, e in zip(gold, parsed, expected):
        assert conll_column(p, 2) == e.columns["lemma"] and conll_column(p, 5) == e.columns["feats"]
    assert any(conll_column(p, 2) != conll_column(g, 2) for p, g in zip(parsed, gold))  # predicted, not copied
    # UFeats of unseen words, by hand: the bundles' universal features (the scorer's list)
    from udtools.udeval import UNIVERSAL_FEATURES

    universal = lambda bundle: sorted(f for f in bundle.split("|") if f.split("=")[0] in UNIVERSAL_FEATURES)
    pairs = [(universal(a), universal(b)) for g, p in zip(gold, parsed)
             for a, b, new in zip(conll_column(p, 5), conll_column(g, 5), pipeline.unseen(g)) if new]
    assert pairs and scores["ufeats_unseen"] == pytest.approx(100 * sum(a == b for a, b in pairs) / len(pairs))


def test_ufeats_compares_the_universal_features_only():
    """A bundle that differs from the gold one only in a feature the scorer leaves out (Typo)
    is wrong in FEATS and right in UFeats; one that differs in a universal one, wrong in both."""
    from types import SimpleNamespace

    from arborist.components.morphologizer import Morphologizer, MorphologizerDraft

    lines = ["1\ta\ta\tX\t_\tNumber=Sing|Typo=Yes\t0\troot\t_\t_",
             "2\tb\tb\tX\t_\tNumber=Plur\t1\tdep\t_\t_", "3\tc\tc\tX\t_\t_\t1\tdep\t_\t_"]
    gold = read_corpus_text("\n".join(lines) + "\n\n")
    parsed = [SimpleNamespace(values={"feats": ["Number=Sing", "Number=Sing", "_"]})]
    unseen = lambda sentence: np.array([True, False, False])
    scores = Morphologizer.score(SimpleNamespace(name="feats", column="feats", conll_index=5,
                                                 views=Morphologizer.views), gold, parsed, unseen)
    assert scores["feats"] == pytest.approx(100 / 3) and scores["ufeats"] == pytest.approx(200 / 3)
    assert scores["feats_unseen"] == 0 and scores["ufeats_unseen"] == 100
    assert not MorphologizerDraft.views  # the draft's bundles are no output: FEATS accuracy only


def read_corpus_text(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gold.conllu"
        path.write_text(text, encoding="utf-8")
        return read_corpus(path)


def test_save_load_and_spacy_keep_their_learned_state(run, tmp_path):
    from arborist.batch import spacy_pipeline

    root, pipeline, _ = run
    loaded = load(root / "run")
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    for a, b in zip(pipeline.annotate_many(dev), loaded.annotate_many(dev)):
        assert a.columns == b.columns and np.array_equal(a.heads, b.heads)
    nlp = spacy_pipeline(loaded)
    nlp.to_disk(tmp_path / "nlp")
    import spacy

    again = spacy.load(tmp_path / "nlp")
    from spacy.tokens import Doc

    x = dev[0]
    doc = Doc(again.vocab, words=x.forms[1:])
    for name, proc in again.pipeline:
        doc = proc(doc)
    expected = loaded.annotate(x)
    assert [t.lemma_ for t in doc] == expected.columns["lemma"]
    assert [str(t.morph) or "_" for t in doc] == [f if f != "_" else "_" for f in expected.columns["feats"]]


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def test_lemma_and_feats_probabilities(run):
    """FEATS and LEMMA probabilities (issue 27's confidences for the new kinds), computed
    here from the structure's raw scores: a value's probability is the softmax of scores / T
    over the word's candidates summed over the candidates that write it (two scripts, one
    lemma); a word the lexicon decides has its lexicon's share of right dev values; T is the
    maximum-likelihood temperature of the gold values; the predictions are those without
    probabilities."""
    from arborist.confidence import upstream_inputs
    from arborist.morph.atoms import pair_keys
    from arborist.sentence import FORM, UPOS, SentenceBatch

    root, pipeline, report = run
    loaded = load(root / "run")
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    components = list(loaded.components.values())
    checked = {"forced": 0, "scored": 0, "merged": 0}
    decided_by = {}
    for name in ("feats", "lemma"):
        fit = report["components"][name]["calibration"]
        component = loaded.components[name]
        assert component.confidence_column == name
        assert component.temperature == pytest.approx(fit["temperature"]) and fit["temperature"] != 1.0
        assert fit["nll_after"] <= fit["nll_before"] and fit["words"] > 20
        i = components.index(component)
        inputs = upstream_inputs(components[:i], dev)
        batch = SentenceBatch.from_sentences(inputs)
        plain = component.predict_batch(SentenceBatch.from_sentences(inputs))
        predicted, found = component.annotate_confident(batch, 50)
        c = found[name]
        structure, t = component.structure, component.temperature
        right, decided, fitted = [0, 0], [0, 0], []
        for s, (x, g) in enumerate(zip(component.examples(inputs), dev)):
            values = component.value(batch, predicted, s)
            assert values == component.value(batch, plain, s)  # the same lemmas / bundles
            gold_values = conll_column(g, component.conll_index)
            raw = structure.scores(x, component.weights)
            a = int(batch.starts[s]) + 1
            for m in range(x.n):
                lo, hi = x.cand_start[m], x.cand_start[m + 1]
                form = inputs[s].forms[m + 1]
                written = (structure.feats_strings(x.cand[lo:hi]) if name == "feats"
                           else structure.lemma_strings([form] * (hi - lo), x.cand[lo:hi]))
                listed = [(c.value(v), q) for v, q in zip(c.top[a + m], c.top_prob[a + m]) if v >= 0]
                assert len({v for v, _ in listed}) == len(listed)  # values, each once
                assert listed[0][1] == pytest.approx(max(q for _, q in listed))
                if x.forced[m] >= 0:
                    source = int(x.forced_source[m]) - 1
                    # source 1: the (form, UPOS) pair is in the lexicon (known pairs; lemma lexicon)
                    pair = pair_keys(inputs[s].attrs[FORM, m + 1:m + 2], inputs[s].attrs[UPOS, m + 1:m + 2])[0]
                    lexicon = structure._arrays["known_keys" if name == "feats" else "lexicon_keys"]
                    assert source == (0 if pair in set(lexicon.tolist()) else 1)
                    decided[source] += 1
                    right[source] += int(values[m] == gold_values[m])
                    expected = fit["lexicon_probs"][source]
                    assert listed == [(values[m], pytest.approx(expected))]
                    checked["forced"] += 1
                else:
                    p = softmax(raw[lo:hi] / t)
                    expected = sum(q for q, v in zip(p, written) if v == values[m])
                    assert sum(q for _, q in listed) == pytest.approx(1.0)
                    checked["scored"] += 1
                    checked["merged"] += int(written.count(values[m]) > 1)
                    if gold_values[m] in written:
                        fitted.append((raw[lo:hi], np.array([v == gold_values[m] for v in written])))
                assert c.prob[a + m] == pytest.approx(expected, abs=1e-9)
                assert dict(listed)[values[m]] == pytest.approx(expected, abs=1e-9)
        # the lexicons' probabilities: each source's share of right values on dev
        assert fit["lexicon_words"] == decided
        decided_by[name] = decided
        assert fit["lexicon_probs"] == [(r + 1) / (d + 2) for r, d in zip(right, decided)]  # Laplace
        # the temperature: the maximum of the gold values' likelihood over the scored words

        def nll(temperature):
            return np.mean([-np.log(softmax(v / temperature)[hit].sum()) for v, hit in fitted])

        assert len(fitted) == fit["words"] and nll(t) == pytest.approx(fit["nll_after"], rel=1e-9)
        assert nll(t) <= nll(t * 1.05) and nll(t) <= nll(t / 1.05)
    assert checked["forced"] and checked["scored"] and checked["merged"]  # every case was seen
    assert all(min(d) > 0 for d in decided_by.values())  # both sources were seen


def test_probabilities_of_another_prediction_are_those_of_its_values(run):
    """`confidences(batch, predicted)` of a prediction that is not the component's own (each
    word given its neighbour's class): each word gets the probability of the value its
    predicted class writes, the sum over its candidates that write it, or its lexicon's
    probability when the lexicon decides that value, and 0 otherwise."""
    from arborist.confidence import upstream_inputs
    from arborist.sentence import SentenceBatch

    root, pipeline, report = run
    loaded = load(root / "run")
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    components = list(loaded.components.values())
    for name in ("feats", "lemma"):
        component = loaded.components[name]
        structure, t = component.structure, component.temperature
        inputs = upstream_inputs(components[:components.index(component)], dev)
        own = component.predict_batch(SentenceBatch.from_sentences(inputs))
        other = np.roll(own, 1)
        c = component.confidences(SentenceBatch.from_sentences(inputs), other, 0)[name]
        batch = SentenceBatch.from_sentences(inputs)
        changed = 0
        for s, x in enumerate(component.examples(inputs)):
            values = component.value(batch, other, s)
            forms = inputs[s].forms[1:]
            raw = structure.scores(x, component.weights)
            a = int(batch.starts[s]) + 1
            for m in range(x.n):
                if x.forced[m] >= 0:
                    decided = component.candidate_values([forms[m]], x.forced[m:m + 1])[0]
                    expected = component.lexicon_probs[int(x.forced_source[m]) - 1] if decided == values[m] else 0.0
                else:
                    lo, hi = x.cand_start[m], x.cand_start[m + 1]
                    written = component.candidate_values([forms[m]] * (hi - lo), x.cand[lo:hi])
                    p = softmax(raw[lo:hi] / t)
                    expected = sum(q for q, v in zip(p, written) if v == values[m])
                assert c.prob[a + m] == pytest.approx(expected, abs=1e-9)
            changed += int((other[batch.word_starts[s]:batch.word_starts[s + 1]]
                            != own[batch.word_starts[s]:batch.word_starts[s + 1]]).sum())
        assert changed > 10


def test_k_best_values_with_ties_are_in_the_order_of_the_candidates():
    """With every score equal, a value's probability is its share of the word's candidates, and
    the k best values come by that share, ties in the order of the value's first candidate
    (the order a per-word dict and a stable sort give); k beyond the number of values lists
    each value once."""
    from arborist.components.lemmatizer import Lemmatizer as Kind
    from arborist.lemma.lemmatizer import Lemmatizer
    from arborist.sentence import SentenceBatch

    train = read_corpus(SAMPLE / "sample-train.conllu")
    structure = Lemmatizer(hash_bits=16)
    structure.initialize(train)
    component = Kind(structure, np.zeros(1 << 16))
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    batch = SentenceBatch.from_sentences(dev)
    predicted, found = component.annotate_confident(batch, 1000)
    c = found["lemma"]
    checked = 0
    for s, x in enumerate(component.examples(dev)):
        a = int(batch.starts[s]) + 1
        for m in range(x.n):
            if x.forced[m] >= 0:
                continue
            lo, hi = x.cand_start[m], x.cand_start[m + 1]
            written = component.candidate_values([dev[s].forms[m + 1]] * (hi - lo), x.cand[lo:hi])
            counts = {v: written.count(v) for v in dict.fromkeys(written)}
            expected = sorted(counts.items(), key=lambda item: -item[1])  # stable: first candidate first
            listed = [(c.value(v), q) for v, q in zip(c.top[a + m], c.top_prob[a + m]) if v >= 0]
            assert [v for v, _ in listed] == [v for v, _ in expected]
            np.testing.assert_allclose([q for _, q in listed], [n / (hi - lo) for _, n in expected])
            checked += int(len(counts) > 2 and len(set(counts.values())) < len(counts))
    assert checked > 5  # words with tied values beyond the first place


def test_a_joint_morphologizers_feats_probabilities_sum_its_classes(run):
    """A joint morphologizer's classes are (UPOS, FEATS) pairs: a bundle's probability is the
    sum over the UPOS that carry it, and its k best list each bundle once."""
    from arborist.components.morphologizer import Morphologizer as Kind
    from arborist.morph.morphologizer import Morphologizer
    from arborist.sentence import UPOS, SentenceBatch
    from arborist.strings import hash_string

    def tagged_part(sentences):
        """Every second ADP's input UPOS made PART, as a tagger's errors would: the candidates
        of an input PART are then PART's and ADP's classes, which share bundles ("_")."""
        adp, part, k = hash_string("ADP"), hash_string("PART"), 0
        for x in sentences:
            for m in np.flatnonzero(x.attrs[UPOS] == adp):
                k += 1
                if k % 2:
                    x.attrs[UPOS, m] = part
        return sentences

    train = tagged_part(read_corpus(SAMPLE / "sample-train.conllu"))
    structure = Morphologizer(hash_bits=16, joint=True)
    structure.initialize(train)
    rng = np.random.default_rng(7)
    component = Kind(structure, rng.normal(size=1 << 16))
    dev = tagged_part(read_corpus(SAMPLE / "sample-dev.conllu"))
    batch = SentenceBatch.from_sentences(dev)
    predicted, found = component.annotate_confident(batch, 20)
    c = found["feats"]
    repeated = 0
    for s, x in enumerate(component.examples(dev)):
        raw = structure.scores(x, component.weights)
        values = component.value(batch, predicted, s)
        a = int(batch.starts[s]) + 1
        for m in range(x.n):
            if x.forced[m] >= 0:
                continue
            lo, hi = x.cand_start[m], x.cand_start[m + 1]
            written = structure.feats_strings(x.cand[lo:hi])
            repeated += int(len(set(written)) < len(written))
            p = softmax(raw[lo:hi])
            listed = [c.value(v) for v in c.top[a + m] if v >= 0]
            assert sorted(listed) == sorted(set(written))
            assert c.prob[a + m] == pytest.approx(sum(q for q, v in zip(p, written) if v == values[m]))
    assert repeated  # some word has one bundle under two UPOS


def test_parse_writes_feats_and_lemma_probabilities(run, tmp_path):
    """`arborist parse --probs`: FeatsProb and LemmaProb in MISC (their k best values, which
    MISC cannot hold, are left out), the columns as without --probs; in JSON from text, their
    k best values as spaCy extensions."""
    root, _, _ = run
    dev = SAMPLE / "sample-dev.conllu"
    for flags, out in (([], "plain"), (["--probs", "--k-best", "2"], "probs")):
        result = CliRunner().invoke(app, ["parse", str(root / "run"), str(dev), "-d", str(tmp_path / out),
                                          "--no-progress"] + flags)
        assert result.exit_code == 0, result.output
    plain, probs = (read_corpus(tmp_path / d / "sample-dev.conllu") for d in ("plain", "probs"))
    for a, b in zip(plain, probs):
        for column in (2, 3, 5, 6, 7):
            assert conll_column(a, column) == conll_column(b, column)
        for misc in conll_column(b, 9):
            keys = [item.split("=", 1)[0] for item in misc.split("|")]
            assert {"FeatsProb", "LemmaProb", "UposCands", "HeadCands"} <= set(keys)
            assert "FeatsCands" not in keys and "LemmaCands" not in keys
    text = tmp_path / "in.txt"
    text.write_text("The girls were walking home.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["parse", str(root / "run"), str(text), "-d", str(tmp_path / "json"), "-f",
                                      "json", "--probs", "--k-best", "2", "--no-progress"])
    assert result.exit_code == 0, result.output
    (doc,) = [json.loads(line) for line in next((tmp_path / "json").iterdir()).read_text().splitlines()]
    tokens = doc["underscore_token"]
    assert len(tokens["feats_prob"]) == len(tokens["lemma_candidates"]) == len(doc["tokens"])
    for token, p, cands in zip(doc["tokens"], tokens["lemma_prob"], tokens["lemma_candidates"]):
        p, cands = p["value"], dict(cands["value"])  # spaCy's entries: {"start": character, "value": ...}
        assert 0 < p <= 1 and cands[token["lemma"]] == pytest.approx(p)
    assert any(len(c["value"]) == 2 for c in tokens["lemma_candidates"] + tokens["feats_candidates"])
    # bundles as spaCy writes them: no features is "" (str(token.morph)), not CoNLL-U's "_"
    assert [c["value"][0][0] for c in tokens["feats_candidates"]] == [t.get("morph", "") for t in doc["tokens"]]
    assert "" in [c["value"][0][0] for c in tokens["feats_candidates"]]
    # a FEATS value spaCy cannot read ("Typo", with --gold-tags: the input's) is no error in JSON
    odd = tmp_path / "odd.conllu"
    lines = dev.read_text(encoding="utf-8").split("\n")
    first = next(i for i, line in enumerate(lines) if line[:2] == "2\t")
    cols = lines[first].split("\t")
    lines[first] = "\t".join(cols[:5] + ["Typo"] + cols[6:])
    odd.write_text("\n".join(lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["parse", str(root / "run"), str(odd), "-d", str(tmp_path / "odd"), "-f", "json",
                                      "--gold-tags", "--no-progress"])
    assert result.exit_code == 0, result.output
    # JSON of CoNLL-U input has the predicted lemmas and FEATS too
    result = CliRunner().invoke(app, ["parse", str(root / "run"), str(dev), "-d", str(tmp_path / "json2"), "-f",
                                      "json", "--no-progress"])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in next((tmp_path / "json2").iterdir()).read_text().splitlines()]
    for d, p in zip(docs, plain):
        assert [t["lemma"] for t in d["tokens"]] == conll_column(p, 2)
        assert [t.get("morph") or "_" for t in d["tokens"]] == conll_column(p, 5)


def test_pickled_structures_predict_as_the_originals(run):
    """What Ray's tasks and actors receive: every component's structure pickled and unpickled
    (the lexicons' and candidate indexes' hash maps with their entries, the caches left out)
    predicts on dev, new words and all, as the trained pipeline does. As Ray does, the arrays
    travel out of band and come back read-only: the caches a copy fills must be its own."""
    import pickle

    def ray_like_copy(obj):
        buffers = []
        data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
        return pickle.loads(data, buffers=[b.raw().toreadonly() for b in buffers])

    root, pipeline, _ = run
    copy = load(root / "run")
    for component in copy.components.values():
        component.structure = ray_like_copy(component.structure)
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    for a, b in zip(pipeline.annotate_many(dev), copy.annotate_many(dev)):
        assert a.columns == b.columns and np.array_equal(a.heads, b.heads)


def test_spacy_to_bytes_keeps_the_learned_state_directories(run):
    """A model whose components keep a state directory (NAME.state/) survives spaCy's
    to_bytes/from_bytes, which serializes the model's files by their relative paths."""
    from arborist.batch import spacy_pipeline

    root, _, _ = run
    loaded = load(root / "run")
    nlp = spacy_pipeline(loaded)
    tagger = nlp.get_pipe("arborist_tagger")
    again = type(tagger)(nlp, "again", None, tagger.scorer).from_bytes(tagger.to_bytes())
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    for a, b in zip(tagger.arborist.annotate_many(dev), again.arborist.annotate_many(dev)):
        assert a.columns == b.columns


def train_small(tmp_path, sections: str):
    """The finished `Training` of configs/quickstart.cfg with `sections` before its parser, on 60
    sample sentences (2 epochs, 2 jackknife folds)."""
    import arborist.train as train_module
    from trackers import Quiet

    text = (REPO / "configs" / "quickstart.cfg").read_text().replace("\n[components.parser]\n",
                                                                     sections + "\n[components.parser]\n", 1)
    (tmp_path / "x.cfg").write_text(text)
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2, "training.max_train_sentences": 60}
    run_ = train_module.Training(load_config(tmp_path / "x.cfg", overrides), tmp_path / "run", Quiet(), None, None)
    run_.run()
    return run_


def captured_components(monkeypatch) -> dict:
    """{name: component} of every component `arborist train` trains from now on."""
    import arborist.train as train_module

    captured = {}
    original = train_module._train_component

    def wrapper(name, component, trainer, train_x, dev_x, *args, **kwargs):
        captured[name] = component
        return original(name, component, trainer, train_x, dev_x, *args, **kwargs)

    monkeypatch.setattr(train_module, "_train_component", wrapper)
    return captured


def test_a_morphologizer_reading_xpos_trains_on_jackknifed_xpos(tmp_path, monkeypatch):
    """Templates that read "xpos" make the component read the XPOS column: training gives it
    the XPOS tagger's jackknifed tags (one fold's tagger never saw the sentence), and its
    feature values carry the sentence's XPOS row."""
    from arborist.components.morphologizer import Morphologizer as MorphologizerKind
    from arborist.morph.morphologizer import FEATURE_TEMPLATES, Morphologizer
    from arborist.morph.values import SHARED, VALUES
    from arborist.sentence import XPOS

    assert MorphologizerKind(Morphologizer()).reads == ("form", "upos")
    reading = Morphologizer(feature_templates=FEATURE_TEMPLATES + ("xpos", "xpos|suffix2"))
    assert MorphologizerKind(reading).reads == ("form", "upos", "xpos")
    x = read_corpus(SAMPLE / "sample-dev.conllu", require_heads=True)[0]
    np.testing.assert_array_equal(SHARED.sentence_values(x)[:, VALUES.index("xpos")], x.attrs[XPOS, 1:])

    captured = captured_components(monkeypatch)
    templates = json.dumps(list(FEATURE_TEMPLATES) + ["xpos", "xpos|suffix2"])
    run_ = train_small(tmp_path, FEATS_SECTION.replace("hash_bits = 16", f"hash_bits = 16\nfeature_templates = {templates}"))
    feats_inputs = run_.train_inputs("feats", captured["feats"])
    gold = run_.train_set
    jackknifed = run_.jackknifed["xpos"]
    assert [list(x.attrs[XPOS, 1:]) for x in feats_inputs] != [list(x.attrs[XPOS, 1:]) for x in gold]
    from arborist.strings import hash_strings
    for x, tags in zip(feats_inputs, jackknifed):
        np.testing.assert_array_equal(x.attrs[XPOS, 1:], hash_strings(tags))


# EXTRA's morphologizer reading the bundles of a draft (config order: the draft after it)
FEATS_SECTION = EXTRA.split("[components.lemma]")[0]
STACKED = (FEATS_SECTION.replace("hash_bits = 16", "hash_bits = 16\nreads_draft = true")
           + FEATS_SECTION.replace("components.feats", "components.feats_draft").replace(
               "[components.feats_draft]\n", '[components.feats_draft]\nkind = "morphologizer_draft"\n', 1))


def test_a_stacked_morphologizer_reads_the_drafts_bundles(tmp_path, monkeypatch):
    """Stacking: a morphologizer with reads_draft = true trains on the jackknifed bundles of
    the morphologizer_draft before it (one fold's draft never saw the sentence), reads the
    draft's FEATS row at prediction and overwrites it; the drafts are no output column."""
    from arborist.batch import spacy_pipeline
    from arborist.morph.morphologizer import DRAFT_TEMPLATES
    from arborist.sentence import FEATS
    from arborist.strings import hash_strings

    captured = captured_components(monkeypatch)
    run_ = train_small(tmp_path, STACKED)
    pipeline = run_.pipeline
    names = list(pipeline.components)
    assert names.index("feats_draft") < names.index("feats")
    draft, feats = pipeline.components["feats_draft"], pipeline.components["feats"]
    assert draft.kind == "morphologizer_draft" and feats.reads == ("form", "upos", "feats_draft")
    assert set(DRAFT_TEMPLATES) <= set(feats.structure.kinds["feature"])

    # Training: the FEATS rows are the draft's jackknifed bundles, not the gold ones.
    inputs = run_.train_inputs("feats", captured["feats"])
    jackknifed = run_.jackknifed["feats_draft"]
    assert [list(x.attrs[FEATS, 1:]) for x in inputs] != [list(x.attrs[FEATS, 1:]) for x in run_.train_set]
    for x, bundles in zip(inputs, jackknifed):
        np.testing.assert_array_equal(x.attrs[FEATS, 1:], hash_strings(bundles))

    # Prediction: the output FEATS are the second morphologizer's on the draft's row.
    dev = read_corpus(SAMPLE / "sample-dev.conllu", require_heads=True)
    upstream = [pipeline.components[n] for n in names[:names.index("feats_draft")]]
    from arborist.confidence import upstream_inputs
    drafted = [draft.apply(x, draft.structure.feats_strings(draft.predict(x))) for x in upstream_inputs(upstream, dev)]
    parsed = pipeline.annotate_many(dev)
    for p, x in zip(parsed, drafted):
        assert "feats_draft" not in p.columns
        assert p.columns["feats"] == feats.structure.feats_strings(feats.predict(x))
    assert any(p.values["feats"] != p.values["feats_draft"] for p in parsed)  # the second pass changes some
    # ... and reads the row: on the input's own FEATS row it predicts otherwise
    assert any(feats.predict(x).tolist() != feats.predict(d).tolist() for x, d in zip(upstream_inputs(upstream, dev), drafted))

    # Saved and loaded, in CoNLL-U and in spaCy: the same FEATS.
    again = load(tmp_path / "run")
    assert [p.columns for p in again.annotate_many(dev)] == [p.columns for p in parsed]
    nlp = spacy_pipeline(again)
    from spacy.tokens import Doc
    doc = Doc(nlp.vocab, words=dev[0].forms[1:])
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    assert [str(t.morph) or "_" for t in doc] == parsed[0].columns["feats"]


def test_stacking_mistakes_are_clear_errors_before_any_training(tmp_path):
    """A config that would train a model on gold values where prediction has none is refused
    when it is read (`component_specs`, `Training`), naming the component: a morphologizer
    reading drafts without a draft before it; a draft whose own templates read FEATS; a draft
    that nothing reads; a draft without jackknifing."""
    import arborist.train as train_module
    from trackers import Quiet

    def config(sections, **overrides):
        text = (REPO / "configs" / "quickstart.cfg").read_text().replace("\n[components.parser]\n",
                                                                         sections + "\n[components.parser]\n", 1)
        (tmp_path / "x.cfg").write_text(text)
        return load_config(tmp_path / "x.cfg", {"paths.train": str(SAMPLE / "sample-train.conllu"), **overrides})

    draft_section = STACKED[STACKED.index("[components.feats_draft]"):]
    reading = FEATS_SECTION.replace("hash_bits = 16", "hash_bits = 16\nreads_draft = true")
    with pytest.raises(ValueError, match=r"\[components.feats\] reads feats_draft.*morphologizer_draft"):
        train_module.component_specs(config(reading))
    with pytest.raises(ValueError, match=r"\[components.feats_draft\] \(morphologizer_draft\) reads feats_draft, which it predicts"):
        train_module.component_specs(config(draft_section.replace("hash_bits = 16", "hash_bits = 16\nreads_draft = true")
                                            + FEATS_SECTION))
    with pytest.raises(ValueError, match=r"\[components.feats_draft\] \(morphologizer_draft\).*none does"):
        train_module.component_specs(config(FEATS_SECTION + draft_section))
    with pytest.raises(ValueError, match=r"jackknife_folds = 0 with feats_draft"):
        train_module.Training(config(STACKED, **{"training.jackknife_folds": 0}), tmp_path / "run", Quiet(), None, None)
    assert list(train_module.component_specs(config(STACKED)))[2:4] == ["feats_draft", "feats"]
    from arborist.registry import kind_for_structure
    assert kind_for_structure("arborist.Morphologizer.v1") == "morphologizer"  # never the draft by default


def test_spacy_keeps_bundles_whose_feature_order_it_changes(tmp_path):
    """A bundle whose features spaCy orders otherwise ("Number=Sing|NumType=Card", UD's order;
    spaCy's: "NumType=Card|Number=Sing") reaches `token.morph` and the CoNLL-U written from a
    Doc (`--probs` on text, `-f json`) in UD's order: before, those words lost their FEATS
    (304 of hu_szeged's 11,421 dev words), and the parser reads them as training did (with
    spaCy's order in the FEATS row, 29 heads and 68 labels of hu_szeged's dev text changed)."""
    from spacy.tokens import Doc

    import arborist.train as train_module
    from arborist.batch import spacy_pipeline
    from arborist.sentence import Sentence
    from arborist.spacy_components import to_ud_label, ud_feats
    from trackers import Quiet

    paths = {}
    for part in ("train", "dev"):  # every "Number=Sing" bundle becomes one that spaCy reorders
        text = (SAMPLE / f"sample-{part}.conllu").read_text(encoding="utf-8")
        (tmp_path / f"{part}.conllu").write_text(text.replace("\tNumber=Sing\t", "\tNumber=Sing|NumType=Card\t"),
                                                 encoding="utf-8")
        paths[f"paths.{part}"] = str(tmp_path / f"{part}.conllu")
    text = (REPO / "configs" / "quickstart.cfg").read_text().replace("\n[components.parser]\n",
                                                                     FEATS_SECTION + "\n[components.parser]\n", 1)
    (tmp_path / "x.cfg").write_text(text)
    overrides = {**paths, "training.max_epochs": 2, "training.jackknife_folds": 2, "training.max_train_sentences": 60}
    train_module.Training(load_config(tmp_path / "x.cfg", overrides), tmp_path / "run", Quiet(), None, None).run()
    pipeline = load(tmp_path / "run")
    nlp = spacy_pipeline(pipeline)
    seen = 0
    for x in read_corpus(tmp_path / "dev.conllu")[:15]:
        doc = Doc(nlp.vocab, words=x.forms[1:])
        for _, proc in nlp.pipeline:
            doc = proc(doc)
        parsed = pipeline.annotate(Sentence.from_forms([x.forms[1:]])[0])  # the words only, as the Doc
        expected = parsed.columns["feats"]
        assert [ud_feats(str(t.morph)) for t in doc] == expected
        seen += expected.count("Number=Sing|NumType=Card")
        # ... and the parser after it reads them as training did (the FEATS row of UD's strings)
        assert [0 if t.head.i == t.i else t.head.i + 1 for t in doc] == parsed.heads[1:].tolist()
        assert [to_ud_label(t.dep_) for t in doc] == parsed.deprels[1:]
    assert seen > 5



@pytest.mark.parametrize("bad", [[0.9], "x", [0.5, 2.0], [True, 0.5]])
def test_a_tampered_lexicon_probability_is_a_clear_error(run, tmp_path, bad):
    import shutil

    from arborist.component import ModelError

    root, _, _ = run
    model = tmp_path / "model"
    shutil.copytree(root / "run" / "model-best", model)
    meta = json.loads((model / "meta.json").read_text())
    entry = next(c for c in meta["components"] if c["name"] == "feats")
    assert len(entry["info"]["lexicon_probs"]) == 2  # what training wrote
    entry["info"]["lexicon_probs"] = bad
    (model / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="meta.json: lexicon_probs of feats must be two probabilities"):
        load(model)


READING_LEMMAS = (FEATS_SECTION.replace("hash_bits = 16", "hash_bits = 16\nreads_lemma = true")
                  + EXTRA[EXTRA.index("[components.lemma]"):])


def test_a_morphologizer_reads_the_inflection_of_the_lemmatizers_lemmas(tmp_path, monkeypatch):
    """reads_lemma = true: the morphologizer runs after the lemmatizer (listed after it in the
    config), trains on the lemmatizer's jackknifed lemmas and their inflections, and reads the
    lemmas the lemmatizer wrote into the batch at prediction (the batch path and the
    one-sentence path agree); saved and loaded, and in spaCy, the same FEATS."""
    from arborist.batch import spacy_pipeline
    from arborist.confidence import upstream_inputs
    from arborist.morph.morphologizer import LEMMA_TEMPLATES
    from arborist.morph.values import INFL, SHARED, FormValues, inflection
    from arborist.sentence import LEMMA, ROOT, SentenceBatch, known_lemmas
    from arborist.strings import hash_strings

    captured = captured_components(monkeypatch)
    run_ = train_small(tmp_path, READING_LEMMAS)
    pipeline = run_.pipeline
    names = list(pipeline.components)
    assert names.index("lemma") < names.index("feats")
    feats, lemma = pipeline.components["feats"], pipeline.components["lemma"]
    assert feats.reads == ("form", "upos", "lemma")
    assert set(LEMMA_TEMPLATES) <= set(feats.structure.kinds["feature"])

    # Training: the LEMMA rows and strings are the lemmatizer's jackknifed lemmas, and the
    # inflection values are computed from them.
    inputs = run_.train_inputs("feats", captured["feats"])
    jackknifed = run_.jackknifed["lemma"]
    assert [x.lemmas[1:] for x in inputs] != [conll_column(x, 2) for x in inputs]  # some differ from gold
    for x, lemmas in zip(inputs, jackknifed):
        assert x.lemmas == [ROOT] + lemmas
        np.testing.assert_array_equal(x.attrs[LEMMA, 1:], hash_strings(lemmas))
        values = SHARED.values(x.attrs[:, 1:], dict(zip(x.attrs[0, 1:].tolist(), x.forms[1:])).__getitem__,
                               known_lemmas(x).get)
        np.testing.assert_array_equal(values[:, INFL], hash_strings([inflection(f, m) for f, m in
                                                                     zip(x.forms[1:], lemmas)]))

    # Prediction: the batch path reads the lemmas the lemmatizer wrote, as the one-sentence
    # path reads the sentence's.
    dev = read_corpus(SAMPLE / "sample-dev.conllu", require_heads=True)
    upstream = [pipeline.components[n] for n in names[:names.index("feats")]]
    lemmatized = upstream_inputs(upstream, dev)
    assert all(x.lemmas[1:] == lemma.structure.lemma_strings(x.forms[1:], lemma.predict(x)) for x in lemmatized)
    # Each path gets its own inflection cache, so that it has to find the lemma strings itself
    # (training's dev scores have cached every dev pair in the shared one).
    feats.structure.form_values = FormValues()
    expected = [feats.structure.feats_strings(feats.predict(x)) for x in lemmatized]
    feats.structure.form_values = FormValues()
    parsed = pipeline.annotate_many(dev)
    for p, x, e in zip(parsed, lemmatized, expected):
        assert p.columns["feats"] == e
        assert p.sentence.lemmas == x.lemmas
    batch = SentenceBatch.from_sentences(lemmatized)
    assert batch.lemmas == {h: s for x in lemmatized for h, s in zip(x.attrs[LEMMA, 1:].tolist(), x.lemmas[1:])}
    assert [batch.sentence(i).lemmas for i in range(3)] == [x.lemmas for x in lemmatized[:3]]
    # ... and reads them: with every lemma the form itself (every inflection "/"), FEATS change
    as_forms = [lemma.apply(x, x.forms[1:]) for x in lemmatized]
    assert any(feats.predict(x).tolist() != feats.predict(u).tolist() for x, u in zip(lemmatized, as_forms))

    # Saved and loaded, in CoNLL-U and in spaCy: the same FEATS.
    again = load(tmp_path / "run")
    assert list(again.components).index("lemma") < list(again.components).index("feats")
    again.components["feats"].structure.form_values = FormValues()
    assert [p.columns for p in again.annotate_many(dev)] == [p.columns for p in parsed]
    again.components["feats"].structure.form_values = FormValues()
    nlp = spacy_pipeline(again)
    from spacy.tokens import Doc
    for k in range(3):
        doc = Doc(nlp.vocab, words=dev[k].forms[1:])
        for _, proc in nlp.pipeline:
            doc = proc(doc)
        assert [str(t.morph) or "_" for t in doc] == parsed[k].columns["feats"]


def test_inflection_values():
    """`inflection`: the form and the lemma past their common prefix, lowercased; "?" without
    a lemma. The cache keeps a pair only once its lemma's string is known."""
    from arborist.morph.values import INFL, FormValues, inflection
    from arborist.sentence import Sentence
    from arborist.strings import hash_strings

    assert inflection("evlerinde", "ev") == "lerinde/"
    assert inflection("Went", "go") == "went/go"
    assert inflection("Dogs", "dog") == "s/"
    assert inflection("ran", "ran") == "/"
    assert inflection("x", None) == "?" and inflection("x", "_") == "?"
    s = Sentence.from_columns(["Evlerinde", "kaldı"], lemmas=["ev", "kal"])
    assert s.lemmas[1:] == ["ev", "kal"] and Sentence.from_columns(["a"]).lemmas == []
    values = FormValues()
    text = dict(zip(s.attrs[0, 1:].tolist(), s.forms[1:])).__getitem__
    known = dict(zip(hash_strings(["ev", "kal"]).tolist(), ["ev", "kal"]))
    unknown = values.values(s.attrs[:, 1:], text, {}.get)
    np.testing.assert_array_equal(unknown[:, INFL], hash_strings(["?", "?"]))
    got = values.values(s.attrs[:, 1:], text, known.get)  # not the cached "?"
    np.testing.assert_array_equal(got[:, INFL], hash_strings(["lerinde/", "dı/"]))
    np.testing.assert_array_equal(values.values(s.attrs[:, 1:], text, {}.get)[:, INFL], got[:, INFL])  # now cached
    assert (values.values(s.attrs[:, 1:], text)[:, INFL] == 0).all()  # not asked for


def test_lemma_strings_are_read_only_where_they_match_the_lemma_row():
    """A Sentence whose LEMMA row was changed without its strings (the gold lemmas of a dev
    file blanked before prediction) gives no lemma string for those words: the inflection is
    then "?", never one made from a lemma the row does not hold."""
    from dataclasses import replace

    from arborist.sentence import LEMMA, Sentence, SentenceBatch, known_lemmas
    from arborist.strings import hash_strings

    s = Sentence.from_columns(["Evlerinde", "kaldı"], lemmas=["ev", "kal"])
    assert known_lemmas(s) == dict(zip(hash_strings(["ev", "kal"]).tolist(), ["ev", "kal"]))
    attrs = s.attrs.copy()
    attrs[LEMMA, 1] = hash_strings(["_"])[0]
    blanked = replace(s, attrs=attrs)
    assert known_lemmas(blanked) == {int(hash_strings(["kal"])[0]): "kal"}
    assert known_lemmas(blanked).get(int(hash_strings(["_"])[0])) is None
    assert SentenceBatch.from_sentences([blanked]).lemmas == known_lemmas(blanked)


def test_a_lemma_reading_morphologizer_and_a_feats_reading_lemmatizer_are_refused(tmp_path):
    """Two components that read each other's column have no order in which both train on
    predictions (before, the config order was taken and one trained on the gold column); a
    lemmatizer reading the inflection would read its own column."""
    import arborist.train as train_module

    def config(sections):
        text = (REPO / "configs" / "quickstart.cfg").read_text().replace("\n[components.parser]\n",
                                                                         sections + "\n[components.parser]\n", 1)
        (tmp_path / "x.cfg").write_text(text)
        return load_config(tmp_path / "x.cfg", {"paths.train": str(SAMPLE / "sample-train.conllu")})

    feats_reading_lemma = FEATS_SECTION.replace("hash_bits = 16", "hash_bits = 16\nreads_lemma = true")
    lemma = EXTRA[EXTRA.index("[components.lemma]"):]
    assert list(train_module.component_specs(config(feats_reading_lemma + lemma)))[2:4] == ["lemma", "feats"]
    lemma_reading_feats = lemma.replace("hash_bits = 16", 'hash_bits = 16\nscript_templates = ["upos", "upos|feats"]')
    with pytest.raises(ValueError, match=r"\[components.feats\].*\[components.lemma\].* read each other's columns"):
        train_module.component_specs(config(feats_reading_lemma + lemma_reading_feats))
    lemma_reading_infl = lemma.replace("hash_bits = 16", 'hash_bits = 16\nscript_templates = ["upos", "infl"]')
    with pytest.raises(ValueError, match=r"\[components.lemma\] \(lemmatizer\) reads lemma, which it predicts"):
        train_module.component_specs(config(lemma_reading_infl))


def test_a_batch_makes_its_lemma_strings_when_one_is_asked_for():
    """`SentenceBatch.lemma_of`: the strings a lemmatizer left as a source are made at the first
    id the batch does not know, once; an id no source has is None."""
    from arborist.sentence import Sentence, SentenceBatch

    batch = SentenceBatch.from_sentences([Sentence.from_columns(["a", "b"], lemmas=["x", "y"])])
    calls = []

    def source():
        calls.append(1)
        return [(7, "seven"), (8, "eight")]

    batch.lemma_sources.append(source)
    known = next(iter(batch.lemmas))
    assert batch.lemma_of(known) in ("x", "y") and not calls  # known: the source is not made
    assert batch.lemma_of(8) == "eight" and batch.lemma_of(7) == "seven" and len(calls) == 1
    assert batch.lemma_of(9) is None and len(calls) == 1


def test_a_string_id_cache_keeps_what_it_found_when_it_is_cleared():
    """`cached_string_ids`, the cache of the lemmatizer's lemma ids and of the inflections: the
    ids of the keys found before a clear are returned too (the lemmatizer's own copy of it read
    the map again after clearing it, and returned NOT_FOUND for them), and a string marked
    not cacheable is returned but not kept."""
    import threading

    from arborist.morph.atoms import U64Map
    from arborist.morph.values import NOT_FOUND, cached_string_ids
    from arborist.strings import hash_strings

    cache, lock = U64Map(), threading.Lock()
    text = {1: "a", 2: "b", 3: "c"}
    make = lambda keys: (lambda rows: ([text[k] for k in keys[rows].tolist()], None))
    first = np.array([1, 2], dtype=np.uint64)
    np.testing.assert_array_equal(cached_string_ids(cache, lock, first, 1, make(first)), hash_strings(["a", "b"]))
    both = np.array([1, 3, 2, 3], dtype=np.uint64)  # 2 entries > limit 1: cleared before 3 is put
    np.testing.assert_array_equal(cached_string_ids(cache, lock, both, 1, make(both)), hash_strings(["a", "c", "b", "c"]))
    assert len(cache) == 1 and (cache.get_many(np.array([1, 2], dtype=np.uint64)) == NOT_FOUND).all()
    fresh = U64Map()
    keys = np.array([1, 2], dtype=np.uint64)
    kept = lambda rows: ([text[k] for k in keys[rows].tolist()], np.array([True, False]))
    np.testing.assert_array_equal(cached_string_ids(fresh, lock, keys, 10, kept), hash_strings(["a", "b"]))
    assert (fresh.get_many(keys) == np.array([hash_strings(["a"])[0], NOT_FOUND], dtype=np.uint64)).all()


def test_spacy_scores_lemmas_and_features_as_its_own_components_do(run):
    """`nlp.evaluate` reports lemma_acc, morph_acc and morph_per_feat, the analysis compared by
    its key as spaCy's morphologizer_score does (compared as a MorphAnalysis it raised
    AttributeError on a gold word without features); the tagger declares what it sets, so
    `analyze_pipes` finds a component that requires lemmas and features satisfied."""
    import spacy
    from spacy.language import Language
    from spacy.tokens import Doc
    from spacy.training import Example

    from arborist.batch import spacy_pipeline

    root, _, _ = run
    nlp = spacy_pipeline(load(root / "run"))
    x = read_corpus(SAMPLE / "sample-dev.conllu")[0]
    words = x.forms[1:]
    gold = Doc(nlp.vocab, words=words, lemmas=conll_column(x, 2), pos=conll_column(x, 3), morphs=conll_column(x, 5))
    for token, feats in zip(gold, conll_column(x, 5)):
        if feats == "_":
            token.set_morph(None)  # no features: no analysis, as a Doc made without morphs has
    assert any(not t.has_morph() for t in gold)
    predicted = nlp(Doc(nlp.vocab, words=words))
    scores = nlp.evaluate([Example(Doc(nlp.vocab, words=words), gold)])
    right = lambda attr: sum(getattr(p, attr) == getattr(g, attr) for p, g in zip(predicted, gold)) / len(words)
    assert scores["lemma_acc"] == pytest.approx(right("lemma_"))
    analysed = [(p, g) for p, g in zip(predicted, gold) if g.has_morph()]  # spaCy scores these
    assert scores["morph_acc"] == pytest.approx(sum(p.morph.key == g.morph.key for p, g in analysed) / len(analysed))
    assert scores["pos_acc"] == pytest.approx(right("pos_"))
    assert set(scores["morph_per_feat"]) == {f.split("=")[0] for t in gold for f in str(t.morph).split("|") if f}

    @Language.component("needs_lemmas_and_features", requires=["token.lemma", "token.morph"])
    def needs(doc):
        return doc

    nlp.add_pipe("needs_lemmas_and_features")
    assert nlp.analyze_pipes()["problems"]["needs_lemmas_and_features"] == []
    # Whitespace tokens too have a lemma (their text) and an analysis (the empty one)
    doc = nlp("The girl left.  She smiled.\n\nThen")
    space = [t for t in doc if t.is_space]
    assert len(space) == 2 and all(t.lemma_ == t.text and t.has_morph() and not str(t.morph) for t in space)
    assert doc.has_annotation("LEMMA", require_complete=True) and doc.has_annotation("MORPH", require_complete=True)


def test_k_best_of_lemmas_and_feats_is_at_most_their_candidates(run):
    """--k-best 10**6 allocated (words, k) arrays per component (killed for memory)."""
    _, pipeline, _ = run
    for parsed in pipeline.annotate_many(read_corpus(SAMPLE / "sample-dev.conllu")[:5], confidence=10**9):
        for column in ("lemma", "feats"):
            assert parsed.confidences[column].top.shape[1] <= 1000, column
