"""Confidences (issue 27): the probabilities of each component's predictions against
brute-force enumeration, the temperature fit, their survival through saving, loading and
spaCy serialization, and `arborist parse --probs / --min-prob`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from arborist.parser.features import DEFAULT_TEMPLATES
from test_chain import TAGS, all_sequences
from test_chain import sentence as chain_sentence
from test_labels import sentence as label_sentence
from test_tree import HASH_BITS, projective_trees, sentence, spanning_trees

from arborist.components.labeler import Labeler
from arborist.components.parser import Parser
from arborist.components.tagger import Tagger
from arborist.confidence import (
    calibrate_pipeline,
    candidates,
    coverage_curve,
    expected_calibration_error,
    misc_items,
    reliability,
)
from arborist.corpus import read_corpus
from arborist.model import load
from arborist.parser.labels import ArcLabels
from arborist.parser.second_order import SecondOrderTree
from arborist.parser.tree import DependencyTree
from arborist.sentence import Sentence, SentenceBatch
from arborist.tagger.chain import LinearChain

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"


def random_weights(rng, scale=0.5):
    return rng.normal(size=1 << HASH_BITS) * scale


def confident(component, x, k):
    """(prediction, Confidence) of one sentence, and its prediction without probabilities."""
    batch = SentenceBatch.from_sentences([x])
    plain = component.predict_batch(SentenceBatch.from_sentences([x]))
    predicted, found = component.annotate_confident(batch, k)
    (c,) = found.values()
    return predicted, c, plain


def tree_distribution(structure, x, scores, trees):
    """P(tree) of every tree, by enumeration."""
    values = np.array([float((structure.indicator(x, heads) * scores).sum()) for heads in trees])
    p = np.exp(values - values.max())
    return p / p.sum()


def check_against(marginals, predicted_classes, c, k, offset=1):
    """The Confidence of one sentence (root first when offset = 1) against the enumerated
    per-word marginals (n, C)."""
    n = marginals.shape[0]
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(c.prob[offset:offset + n], marginals[np.arange(n), predicted_classes], atol=1e-7)
    for m in range(n):
        top_p = c.top_prob[offset + m]
        expected = np.sort(marginals[m])[::-1][:k]
        np.testing.assert_allclose(top_p[:len(expected)], expected, atol=1e-7)
        # every listed value has the listed probability; their sum is at most 1, exactly 1 with all classes
        listed = c.top[offset + m][c.top[offset + m] >= 0]
        np.testing.assert_allclose(marginals[m, listed], top_p[:len(listed)], atol=1e-7)
        if k >= marginals.shape[1]:
            assert top_p.sum() == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_head_probabilities_match_enumeration(projective, n):
    rng = np.random.default_rng([n, projective, 27])
    structure = DependencyTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective=projective)
    parser = Parser(structure, random_weights(rng), {"temperature": 1.7})
    x = sentence(n)
    predicted, c, plain = confident(parser, x, n + 1)
    np.testing.assert_array_equal(predicted, plain)  # the same tree as without probabilities
    trees = (projective_trees if projective else spanning_trees)(n, True)
    p = tree_distribution(structure, x, structure.scores(x, parser.weights) / 1.7, trees)
    marginals = np.zeros((n, n + 1))
    for prob, heads in zip(p, trees):
        marginals[np.arange(n), heads[1:]] += prob
    check_against(marginals, predicted[1:], c, n + 1)
    assert c.names is None and all(c.value(h) == h for h in range(n + 1))


@pytest.mark.parametrize("parts", [("sibling",), ("grandparent",), ("sibling", "grandparent")])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_second_order_head_probabilities_match_enumeration(parts, n):
    rng = np.random.default_rng([n, len(parts), 28])
    structure = SecondOrderTree(DEFAULT_TEMPLATES, HASH_BITS, True, parts=parts)
    parser = Parser(structure, random_weights(rng), {"temperature": 0.6})
    x = sentence(n)
    predicted, c, plain = confident(parser, x, 3)
    np.testing.assert_array_equal(predicted, plain)
    example = parser.examples([x])[0]
    trees = projective_trees(n, True)
    p = tree_distribution(structure, example, structure.scores(example, parser.weights) / 0.6, trees)
    marginals = np.zeros((n, n + 1))
    for prob, heads in zip(p, trees):
        marginals[np.arange(n), heads[1:]] += prob
    check_against(marginals, predicted[1:], c, 3)


@pytest.mark.parametrize("n,k", [(1, 2), (2, 3), (3, 3), (4, 2)])
def test_label_probabilities_match_enumeration(n, k):
    rng = np.random.default_rng([n, k, 29])
    structure = ArcLabels(["det", "nsubj", "root"][:k], HASH_BITS)
    labeler = Labeler(structure, random_weights(rng), {"temperature": 2.5})
    heads = np.array([-1, 0] + [1] * (n - 1), dtype=np.int32)
    x = label_sentence(n, heads=heads[1:].tolist())
    predicted, c, plain = confident(labeler, x, k)
    np.testing.assert_array_equal(predicted, plain)
    scores = structure.scores(x, labeler.weights) / 2.5
    marginals = np.zeros((n, k))
    # the labelings the tree allows: `root` exactly on the words attached to the root (when the
    # label set has it)
    root = structure.root
    labelings = [np.array(y) for y in np.ndindex(*([k] * n))
                 if root < 0 or all((y[m] == root) == (heads[m + 1] == 0) for m in range(n))]
    values = np.array([sum(scores[m + 1, y[m]] for m in range(n)) for y in labelings])
    p = np.exp(values - values.max())
    p /= p.sum()
    for prob, y in zip(p, labelings):
        marginals[np.arange(n), y] += prob
    check_against(marginals, predicted[1:], c, k)
    assert [c.value(v) for v in c.top[1][:1]] == [structure.labels[int(predicted[1])]]


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_tag_probabilities_match_enumeration(order, n):
    rng = np.random.default_rng([n, order, 30])
    K = 3
    structure = LinearChain(TAGS[:K], attribute="upos", order=order, hash_bits=HASH_BITS)
    tagger = Tagger(structure, random_weights(rng), {"temperature": 0.8})
    x = chain_sentence(n, K)
    predicted, c, plain = confident(tagger, x, K)
    np.testing.assert_array_equal(predicted, plain)
    scores = structure.scores(x, tagger.weights) / 0.8
    sequences = all_sequences(n, K)
    values = np.array([float((structure.indicator(x, y) * scores).sum()) for y in sequences])
    p = np.exp(values - values.max())
    p /= p.sum()
    marginals = np.zeros((n, K))
    for prob, y in zip(p, sequences):
        marginals[np.arange(n), y] += prob
    check_against(marginals, predicted, c, K)


def test_probabilities_of_a_batch_are_those_of_its_sentences():
    rng = np.random.default_rng(31)
    parser = Parser(DependencyTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective=True), random_weights(rng))
    xs = [sentence(n) for n in (3, 1, 6, 4)]
    batch = SentenceBatch.from_sentences(xs)
    predicted, found = parser.annotate_confident(batch, 2)
    c = found["head"]
    assert np.isnan(c.prob[batch.starts[:-1]]).all()
    for i, x in enumerate(xs):
        _, alone, _ = confident(parser, x, 2)
        a, b = batch.starts[i], batch.starts[i + 1]
        np.testing.assert_allclose(c.prob[a:b][1:], alone.prob[1:])
        np.testing.assert_array_equal(c.top[a:b][1:], alone.top[1:])
    # the same as the two-pass `confidences` of a plain prediction
    again = parser.confidences(batch, parser.predict_batch(SentenceBatch.from_sentences(xs)), 2)["head"]
    np.testing.assert_allclose(again.prob, c.prob)


def test_temperature_fit_is_the_maximum_likelihood_temperature():
    rng = np.random.default_rng(32)
    train = read_corpus(SAMPLE / "sample-train.conllu")[:40]
    parser = Parser(DependencyTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective=True), random_weights(rng, 0.1))
    fit = parser.calibrate(train, train)
    t = parser.temperature
    assert t == pytest.approx(fit["temperature"]) and fit["nll_after"] <= fit["nll_before"]

    def nll(temperature):
        total = 0.0
        for p, x in zip(parser.distributions(train, temperature), train):
            total -= np.log(p[np.arange(x.n), x.heads[1:]]).sum()
        return total / sum(x.n for x in train)

    assert nll(t) == pytest.approx(fit["nll_after"], rel=1e-9)
    assert nll(t) <= nll(t * 1.05) and nll(t) <= nll(t / 1.05)
    assert nll(t) < nll(1.0) or t == pytest.approx(1.0)
    # In threads: the same fit, to the last bit (each sentence's term is summed in order).
    for threads in (2, 3):
        again = Parser(DependencyTree(DEFAULT_TEMPLATES, HASH_BITS, True, projective=True), parser.weights.array)
        assert again.calibrate(train, train, threads=threads) == fit


def test_metrics():
    prob = np.array([0.95, 0.95, 0.95, 0.95, 0.55, 0.55])
    correct = np.array([1, 1, 1, 0, 1, 0], dtype=bool)
    # bins: 0.95 (accuracy 0.75, gap 0.2, 4 words), 0.55 (accuracy 0.5, gap 0.05, 2 words)
    assert expected_calibration_error(prob, correct, 10) == pytest.approx((4 * 0.2 + 2 * 0.05) / 6)
    assert sum(r["words"] for r in reliability(prob, correct, 10)) == 6
    curve = {r["threshold"]: r for r in coverage_curve(prob, correct, (0.0, 0.9))}
    assert curve[0.9]["coverage"] == pytest.approx(4 / 6) and curve[0.9]["accuracy"] == pytest.approx(0.75)
    assert curve[0.0]["coverage"] == 1.0


# -- a trained pipeline: training fits the temperatures; they survive saving and spaCy ---------------
def test_training_fits_and_saves_temperatures(tiny_model):
    meta = json.loads((tiny_model / "meta.json").read_text())
    temps = {e["name"]: e["info"].get("temperature") for e in meta["components"]}
    assert all(isinstance(t, float) and t > 0 for t in temps.values()), temps
    report = json.loads((tiny_model.parent / "training.json").read_text())
    assert report["components"]["parser"]["calibration"]["temperature"] == pytest.approx(temps["parser"])


def test_probabilities_survive_saving_and_loading(tiny_model, tmp_path):
    pipeline = load(tiny_model)
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    before = pipeline.annotate_many(dev, confidence=3)
    pipeline.save(tmp_path / "copy")
    after = load(tmp_path / "copy").annotate_many(dev, confidence=3)
    assert set(before[0].confidences) == {"upos", "xpos", "head", "deprel"}
    for a, b in zip(before, after):
        for column in a.confidences:
            np.testing.assert_array_equal(a.confidences[column].prob, b.confidences[column].prob)
            np.testing.assert_array_equal(a.confidences[column].top, b.confidences[column].top)
    plain = pipeline.annotate_many(dev)
    assert all(np.array_equal(p.heads, q.heads) and p.deprels == q.deprels and p.columns == q.columns
               for p, q in zip(plain, before))
    assert not plain[0].confidences
    # the temperature matters: at T = 1 the probabilities differ
    for c in pipeline.components.values():
        c.info.pop("temperature", None)
    raw = pipeline.annotate_many(dev[:3], confidence=0)
    assert not np.allclose(raw[0].confidences["head"].prob, before[0].confidences["head"].prob)


def test_calibrate_pipeline_refits_every_component(tiny_model):
    pipeline = load(tiny_model)
    saved = {n: c.temperature for n, c in pipeline.components.items()}
    for c in pipeline.components.values():
        c.info["temperature"] = 1.0
    fits = calibrate_pipeline(pipeline, read_corpus(SAMPLE / "sample-dev.conllu"))
    assert set(fits) == {"upos", "xpos", "parser", "labeler"}
    for name, t in saved.items():
        assert pipeline.components[name].temperature == pytest.approx(t, rel=1e-6)


def spacy_nlp(model, **config):
    import spacy

    import arborist.spacy_components  # noqa: F401

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("arborist_tagger", config={"model": str(model), **config})
    nlp.add_pipe("arborist_parser", config={"model": str(model), **config})
    return nlp


def test_candidates_hold_no_value_of_probability_zero(tiny_model):
    """A word's own position is no head it can have (probability 0): in a sentence of fewer
    words than k, spaCy's head candidates once listed the word itself twice, as the root and
    as that position; the JSON output listed it too."""
    nlp = spacy_nlp(tiny_model, probabilities=True, k_best=5)
    doc = nlp("Hello world.")
    for token in doc:
        heads = [h for h, _ in token._.head_candidates]
        assert len(heads) == len(set(heads)) and all(p > 0 for _, p in token._.head_candidates)
        assert len(heads) == len(doc)  # the root and every other word: all possible
    sentence = Sentence.from_forms([["Hello", "world", "."]])[0]
    parsed = load(tiny_model).annotate_many([sentence], confidence=5)[0]
    for word in range(sentence.n):
        heads = [h for h, _ in candidates(parsed.confidences["head"], word)]
        assert len(heads) == sentence.n and str(word + 1) not in heads


def test_spacy_extension_attributes_survive_serialization(tiny_model, tmp_path):
    import spacy

    text = "The tired girl is not happy. She read the stories and smiled."
    nlp = spacy_nlp(tiny_model, probabilities=True, k_best=3)
    doc = nlp(text)
    for token in doc:
        assert 0.0 <= token._.head_prob <= 1.0 and 0.0 <= token._.deprel_prob <= 1.0
        assert token._.arc_prob == pytest.approx(token._.head_prob * token._.deprel_prob)
        heads = dict(token._.head_candidates)
        # the best tree's head need not be the word's most probable head, but when listed it
        # has the word's head probability
        assert token.head.i in heads or token._.head_prob <= min(heads.values()) + 1e-12
        assert heads.get(token.head.i, token._.head_prob) == pytest.approx(token._.head_prob)
        assert [p for _, p in token._.head_candidates] == sorted(heads.values(), reverse=True)
        assert sum(heads.values()) <= 1.0 + 1e-9 and all(token.sent.start <= h < token.sent.end for h in heads)
        assert token._.deprel_candidates[0][0] == token.dep_  # per word, the argmax is the most probable
        assert dict(token._.upos_candidates).get(token.pos_, token._.upos_prob) == pytest.approx(token._.upos_prob)
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    again = loaded(text)
    assert [t._.head_prob for t in again] == [t._.head_prob for t in doc]
    assert [t._.head_candidates for t in again] == [t._.head_candidates for t in doc]
    copy = spacy_nlp(tiny_model, probabilities=True, k_best=3)
    copy.get_pipe("arborist_parser").from_bytes(nlp.get_pipe("arborist_parser").to_bytes())
    assert [t._.deprel_prob for t in copy(text)] == [t._.deprel_prob for t in doc]
    # the probabilities are the pipeline's own, for the same sentences
    pipeline = load(tiny_model)
    first = list(doc.sents)[0]
    from arborist.sentence import Sentence

    x = Sentence.from_columns([t.text for t in first])
    parsed = pipeline.annotate(x, confidence=0)
    np.testing.assert_allclose([t._.head_prob for t in first], parsed.confidences["head"].prob)


def test_spacy_components_set_nothing_without_the_setting(tiny_model):
    from spacy.tokens import Token

    nlp = spacy_nlp(tiny_model)
    doc = nlp("The girl is happy.")
    assert all(not Token.has_extension("head_prob") or t._.head_prob is None for t in doc)


def test_misc_items():
    from arborist.component import Confidence

    head = Confidence(np.array([0.971, 0.5]), np.array([[2, 0], [0, 1]]), np.array([[0.971, 0.0291], [0.5, 0.4999]]))
    label = Confidence(np.array([0.93, 1.0]), np.array([[1, 0], [0, 1]]), np.array([[0.93, 0.07], [1.0, 0.0]]),
                       ["nmod:poss", "det"])
    items = misc_items({"head": head, "deprel": label}, 0, 2)
    assert items == ["HeadProb=0.971", "DeprelProb=0.93", "ArcProb=0.903", "HeadCands=2:0.971,0:0.029",
                     "DeprelCands=det:0.93,nmod:poss:0.07"]
    assert misc_items({"head": head, "deprel": label}, 1, 2)[-1] == "DeprelCands=nmod:poss:1"
    # XPOS tags may hold MISC's and the list's separators (en_ewt's comma is ","): their
    # probability is written, their k best values are not (JSON and spaCy have them)
    xpos = Confidence(np.array([0.97, 0.5]), np.array([[0, 1], [1, 0]]), np.array([[0.97, 0.03], [0.5, 0.5]]),
                      [",", "NN|UTR|SIN"])
    assert misc_items({"xpos": xpos}, 0, 2) == ["XposProb=0.97"]


def test_format_prob_truncates_so_that_printed_values_meet_thresholds_as_the_probabilities_do():
    """A word marked LowProb=Yes (p < --min-prob) never shows a HeadProb at the threshold:
    rounding printed 0.8999993 as 0.9 beside LowProb=Yes at --min-prob 0.9."""
    from arborist.confidence import format_prob

    assert [format_prob(p) for p in (0.8999993958150229, 0.9996, 1.0, 0.285, 0.0009, 0.5, 0.1 + 0.2)] == \
        ["0.899", "0.999", "1", "0.285", "0", "0.5", "0.3"]
    rng = np.random.default_rng(0)
    thresholds = [float(f"0.{k:03d}") for k in range(1, 1000)] + [1.0]
    ps = np.concatenate([rng.random(2000), np.array(thresholds), np.nextafter(np.array(thresholds), 0)])
    for p in ps.tolist():
        printed = float(format_prob(p))
        assert 0 <= p - printed < 1e-3
        for t in thresholds[::37] + [0.9, 1.0]:
            assert (printed >= t) == (p >= t), (p, t)


def test_k_best_is_at_most_the_number_of_values(tiny_model):
    """A huge --k-best allocated (words, k) arrays: 20 sentences were killed for memory at k = 10**6."""
    pipeline = load(tiny_model)
    sentences = read_corpus(SAMPLE / "sample-dev.conllu")[:5]
    longest = max(x.n for x in sentences)
    for parsed in pipeline.annotate_many(sentences, confidence=10**9):
        assert parsed.confidences["head"].top.shape[1] <= longest + 1
        assert parsed.confidences["upos"].top.shape[1] <= 20


# -- arborist parse -----------------------------------------------------------------------------
def run_parse(model, inputs, out, *flags):
    result = subprocess.run([sys.executable, "-m", "arborist.cli", "parse", str(model), *map(str, inputs), "-d",
                             str(out), "--no-progress", *flags], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


def conllu_rows(path):
    rows = [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line and line[0].isdigit()]
    return [r for r in rows if r[0].isdigit()]  # words, not multiword tokens or empty nodes


def test_parse_probs_change_only_misc_and_min_prob_marks_or_drops(tiny_model, tmp_path):
    dev = SAMPLE / "sample-dev.conllu"
    plain = conllu_rows(run_parse(tiny_model, [dev], tmp_path / "plain") / "sample-dev.conllu")
    probs = conllu_rows(run_parse(tiny_model, [dev], tmp_path / "probs", "--probs", "--k-best", "2")
                        / "sample-dev.conllu")
    assert [r[:9] for r in plain] == [r[:9] for r in probs]
    pipeline = load(tiny_model)
    head_probs = np.concatenate([p.confidences["head"].prob for p in pipeline.annotate_many(
        read_corpus(dev), confidence=0)])
    for row, p in zip(probs, head_probs):
        misc = dict(item.split("=", 1) for item in row[9].split("|") if "=" in item)
        assert 0 <= p - float(misc["HeadProb"]) < 1e-3  # truncated to three decimals
        heads = dict(c.split(":") for c in misc["HeadCands"].split(","))
        assert heads.get(row[6], misc["HeadProb"]) == misc["HeadProb"]
        assert misc["DeprelCands"].split(",")[0].rsplit(":", 1)[0] == row[7]
    threshold = float(np.quantile(head_probs, 0.3))
    low = head_probs < threshold
    assert 0 < low.sum() < len(low)
    marked = conllu_rows(run_parse(tiny_model, [dev], tmp_path / "marked", "--min-prob", str(threshold))
                         / "sample-dev.conllu")
    assert [("LowProb=Yes" in r[9]) for r in marked] == low.tolist()
    assert not any("HeadProb" in r[9] for r in marked)
    dropped = conllu_rows(run_parse(tiny_model, [dev], tmp_path / "dropped", "--min-prob", str(threshold),
                                    "--drop-low") / "sample-dev.conllu")
    assert [r[6] == "_" and r[7] == "_" for r in dropped] == low.tolist()
    assert [r[9] for r in dropped] == [r[9] for r in plain]
    assert not any("XposCands" in r[9] for r in probs)


def test_parsing_an_output_again_replaces_its_probabilities(tiny_model, tmp_path):
    """An output parsed again had the first run's LowProb=Yes and k best values kept beside the
    new probabilities (and its HeadProb beside a new HEAD without --probs)."""
    dev = SAMPLE / "sample-dev.conllu"
    pipeline = load(tiny_model)
    head_probs = np.concatenate([p.confidences["head"].prob for p in pipeline.annotate_many(
        read_corpus(dev), confidence=0)])
    high, low = (float(np.quantile(head_probs, q)) for q in (0.6, 0.2))
    first = run_parse(tiny_model, [dev], tmp_path / "first", "--probs", "--k-best", "2", "--min-prob", str(high))
    assert "LowProb=Yes" in (first / dev.name).read_text()
    for flags, name in ((["--probs", "--min-prob", str(low)], "low"), ([], "plain")):
        again = run_parse(tiny_model, [first / dev.name], tmp_path / f"again_{name}", *flags) / dev.name
        fresh = run_parse(tiny_model, [dev], tmp_path / f"fresh_{name}", *flags) / dev.name
        assert again.read_text() == fresh.read_text(), name
    # --gold-tags keeps the input's tags, so their probabilities stay; the arcs' go
    kept = run_parse(tiny_model, [first / dev.name], tmp_path / "gold_tags", "--gold-tags") / dev.name
    rows = conllu_rows(kept)
    assert all("UposProb=" in r[9] and "HeadProb" not in r[9] and "LowProb" not in r[9] for r in rows)


def test_parse_text_and_json_with_probabilities(tiny_model, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The tired girl is not happy. She smiled.\n\nAnother paragraph here.\n")
    conllu = conllu_rows(run_parse(tiny_model, [text], tmp_path / "c", "--probs", "--k-best", "2") / "in.conllu")
    plain = conllu_rows(run_parse(tiny_model, [text], tmp_path / "p") / "in.conllu")
    assert [r[:9] for r in plain] == [r[:9] for r in conllu]
    for row in conllu:
        misc = dict(item.split("=", 1) for item in row[9].split("|"))
        heads = dict(c.split(":") for c in misc["HeadCands"].split(","))
        assert heads.get(row[6], misc["HeadProb"]) == misc["HeadProb"]
        assert all(0 <= int(h) <= len([r for r in conllu]) for h in heads)
    (line, *_) = (run_parse(tiny_model, [text], tmp_path / "j", "-f", "json", "--probs", "--min-prob", "1.0",
                            "--drop-low") / "in.jsonl").read_text().splitlines()
    data = json.loads(line)
    assert len(data["underscore_token"]["head_prob"]) == len(data["tokens"])
    assert all(t["head"] is None for t in data["tokens"])  # nothing is certain to 1.0


def test_calibrate_command_writes_the_temperatures(tiny_model, tmp_path):
    pipeline = load(tiny_model)
    for c in pipeline.components.values():
        c.info.pop("temperature", None)
    pipeline.save(tmp_path / "raw")
    result = subprocess.run([sys.executable, "-m", "arborist.cli", "calibrate", str(tmp_path / "raw"),
                             str(SAMPLE / "sample-dev.conllu"), "-o", str(tmp_path / "calibrated")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "parser: temperature" in result.stderr
    raw, calibrated = load(tmp_path / "raw"), load(tmp_path / "calibrated")
    assert all(c.temperature == 1.0 for c in raw.components.values())
    for name, c in calibrated.components.items():
        assert c.temperature == pytest.approx(load(tiny_model).components[name].temperature, rel=1e-6)
