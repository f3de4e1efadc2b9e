"""ArcLabels (the second-stage labeler) through the shared protocol suite; its features; trainers on it."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from arborist.learn.perceptron import Perceptron
from arborist.weights import Weights
from arborist.parser.label_features import LabelFeatures, parse_label_template
from arborist.parser.labels import ArcLabels
from arborist.sentence import Sentence
from arborist.registry import make_structure

from protocol import check_gradient, check_protocol

BITS = 12
WORDS = ["the", "dog", "saw", "a", "cat", "today"]
UPOS = ["DET", "NOUN", "VERB", "DET", "NOUN", "NOUN"]
HEADS = [2, 3, 0, 5, 3, 3]
DEPRELS = ["det", "nsubj", "root", "det", "obj", "obl:tmod"]


def sentence(n=len(WORDS), heads=None, deprels=None, **provenance) -> Sentence:
    return Sentence.from_columns(WORDS[:n], None, UPOS[:n], [u.lower() for u in UPOS[:n]], None,
                                 heads if heads is not None else None, deprels, **provenance)


def random_tree(rng, n):
    """A random tree (heads[0] = -1): each word attaches to an earlier-visited word or the root."""
    order = rng.permutation(n) + 1
    heads = np.full(n + 1, -1, dtype=np.int32)
    placed = [0]
    for m in order:
        heads[m] = placed[int(rng.integers(len(placed)))]
        placed.append(m)
    return heads


def all_labels(n, k):
    return [np.array([-1, *ys], dtype=np.int32) for ys in itertools.product(range(k), repeat=n)]


def hamming(gold, y):
    return int((np.asarray(gold[1:]) != np.asarray(y[1:])).sum())


@pytest.mark.parametrize("n,k", [(1, 2), (2, 3), (3, 3), (4, 2)])
def test_protocol_against_brute_force(n, k):
    rng = np.random.default_rng(10 * n + k)
    structure = ArcLabels([f"l{i}" for i in range(k)], hash_bits=BITS)
    for _ in range(3):
        x = sentence(n, heads=random_tree(rng, n)[1:])
        w = Weights(BITS, False, rng.normal(size=1 << BITS))
        scores = structure.scores(x, w)
        labels = all_labels(n, k)
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(structure, x, scores, labels, gold, hamming, rng, BITS)
        check_gradient(structure, x, scores)


def test_large_scores_stay_finite():
    structure = ArcLabels(["a", "b", "c"], hash_bits=BITS)
    x = sentence(3, heads=[2, 0, 2])
    scores = np.zeros((4, 3))
    scores[1:] = [[1e4, -1e4, 0.0], [5e3, 5e3, -1e4], [0.0, 0.0, 0.0]]
    mu, logz = structure.marginals(x, scores)
    assert np.isfinite(logz) and np.isfinite(mu).all()
    np.testing.assert_allclose(mu[1:].sum(axis=1), 1.0)
    np.testing.assert_allclose(mu[2], [0.5, 0.5, 0.0], atol=1e-12)
    assert np.isclose(logz, 1e4 + 5e3 + np.log(2) + np.log(3))


@pytest.mark.parametrize("bits", [BITS, 3])  # with 3 bits most blocks of 4 weights wrap around the end
def test_scores_are_the_sum_of_each_key_class_slot(bits):
    rng = np.random.default_rng(0)
    structure = ArcLabels(["a", "b", "c", "d"], hash_bits=bits)
    x = sentence(heads=HEADS)
    w = Weights(bits, False, rng.normal(size=1 << bits))
    keys, offsets = structure.features.keys(x, x.heads)
    mask = (1 << bits) - 1
    scores = structure.scores(x, w)
    assert not scores[0].any()
    for m in range(1, x.n + 1):
        mine = keys[offsets[m]:offsets[m + 1]]
        want = [w.array[(mine + np.uint64(k)) & np.uint64(mask)].sum() for k in range(4)]
        np.testing.assert_allclose(scores[m], want)


def count_keys(template, heads):
    x = sentence(heads=heads)
    _, offsets = LabelFeatures([template], BITS).keys(x, x.heads)
    return np.diff(offsets)[1:]  # per word 1..n


def test_sibling_and_child_templates_fire_once_per_other_dependent():
    # saw (3) has dependents dog (2), cat (5), today (6); dog has the; cat has a.
    assert list(count_keys("sib.upos m.upos", HEADS)) == [0, 2, 0, 0, 2, 2]
    assert list(count_keys("child.upos m.upos", HEADS)) == [0, 1, 3, 0, 1, 0]
    assert list(count_keys("h.upos m.upos dir", HEADS)) == [1] * 6


def test_keys_follow_the_tree():
    """A word's keys depend on its own arc: moving another word's head changes only the
    words whose head, grandparent, siblings or children that move touches."""
    templates = ["h.form m.form", "g.upos h.upos m.upos", "m.form dir dist"]
    features = LabelFeatures(templates, BITS)
    x = sentence(heads=HEADS)
    keys, offsets = features.keys(x, x.heads)
    moved = list(HEADS)
    moved[3] = 3  # "a" now attaches to "saw" instead of "cat"
    keys2, offsets2 = features.keys(x, np.array([-1, *moved], dtype=np.int32))
    per_word = lambda k, o: [tuple(k[o[m]:o[m + 1]]) for m in range(1, 7)]
    before, after = per_word(keys, offsets), per_word(keys2, offsets2)
    changed = [m + 1 for m in range(6) if before[m] != after[m]]
    assert changed == [4]
    # The grandparent of an arc from the root is a NONE value, not the root's own attributes.
    x_root = sentence(heads=HEADS)
    g_keys, g_off = LabelFeatures(["g.upos"], BITS).keys(x_root, x_root.heads)
    root_child = g_keys[g_off[3]:g_off[4]]
    other = g_keys[g_off[2]:g_off[3]]  # dog <- saw <- root: g = root
    assert root_child[0] != other[0]


def test_template_errors_name_the_atom():
    for bad, needle in [("m.colour", "m.colour"), ("g+1.upos", "g+1.upos"), ("h+3.form", "h+3.form"),
                        ("sib.upos child.upos", "at most one"), ("", "empty")]:
        with pytest.raises(ValueError, match=re.escape(needle)):
            parse_label_template(bad)
    with pytest.raises(ValueError, match="at least one"):
        LabelFeatures([], BITS)


def test_initialize_reads_full_labels_and_gold_errors_name_the_line():
    x = sentence(heads=HEADS, deprels=DEPRELS)
    structure = ArcLabels(hash_bits=BITS)
    structure.initialize([x, sentence(2, heads=[2, 0], deprels=["nmod:poss", "_"])])
    assert structure.labels == ("det", "nmod:poss", "nsubj", "obj", "obl:tmod", "root")
    assert structure.label_names(structure.gold(x)) == [""] + DEPRELS
    unknown = sentence(2, heads=[2, 0], deprels=["det", "flat"], source="dev.conllu", first_line=17)
    with pytest.raises(ValueError, match=r"dev.conllu:17: DEPREL 'flat' of word 2"):
        structure.gold(unknown)
    again = make_structure(structure.registry_call())
    assert again.labels == structure.labels and again.features.templates == structure.features.templates


def test_perceptron_update_is_gold_minus_predicted_features():
    """One unaveraged perceptron step from zero weights, by hand: every score is 0, so the
    prediction is label 0 for every word, and each word m whose gold label g != 0 adds +1 at
    its keys' class-g slots and -1 at their class-0 slots."""
    structure = ArcLabels(["det", "nsubj", "obj", "obl:tmod", "root"], hash_bits=BITS)
    x = sentence(heads=HEADS, deprels=DEPRELS)
    trainer = Perceptron(averaged=False, shuffle=False)
    trainer.begin(structure, [x], BITS)
    metrics = trainer.epoch(structure, [x])
    assert metrics["train_accuracy"] == 2 / 6  # the two "det" words
    keys, offsets = structure.features.keys(x, x.heads)
    want = np.zeros(1 << BITS)
    mask = np.uint64((1 << BITS) - 1)
    for m, gold in enumerate(structure.gold(x)[1:], start=1):
        mine = keys[offsets[m]:offsets[m + 1]]
        np.add.at(want, (mine + np.uint64(gold)) & mask, 1.0)
        np.add.at(want, mine & mask, -1.0)
    np.testing.assert_allclose(trainer.weights.array, want)


def test_perceptron_learns_the_sample_treebank_labels():
    from pathlib import Path

    from arborist.corpus import read_corpus

    path = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-train.conllu"
    xs = read_corpus(path, require_heads=True)[:200]
    structure = ArcLabels(hash_bits=18)
    structure.initialize(xs)
    trainer = Perceptron(averaged=True, shuffle=True, seed=0)
    trainer.begin(structure, xs, 18)
    accuracies = [trainer.epoch(structure, xs)["train_accuracy"] for _ in range(5)]
    assert accuracies[-1] > 0.97 and accuracies[-1] > accuracies[0]


def test_heads_outside_the_sentence_are_refused():
    x = sentence(3, source="in.conllu", first_line=4)
    with pytest.raises(ValueError, match=r"in.conllu:4: a head outside 0..3"):
        LabelFeatures(bits=BITS).keys(x, np.array([-1, 2, 7, 0], dtype=np.int32))
    with pytest.raises(ValueError, match="n \\+ 1 = 4"):
        LabelFeatures(bits=BITS).keys(x, np.array([-1, 0], dtype=np.int32))


@pytest.mark.parametrize("trainer", [
    "arborist.Perceptron.v1", "arborist.SWVP.v1", "eg-crf", "eg-m3n"])
def test_every_trainer_learns_labels(trainer):
    """Every trainer trains the labeler through the protocol alone: training accuracy on
    100 sample sentences (gold trees) climbs well above the majority label."""
    from pathlib import Path

    from confection import Config

    from arborist.corpus import read_corpus
    from arborist.registry import registry

    path = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-train.conllu"
    xs = read_corpus(path, require_heads=True)[:100]
    spec = {"@trainers": "arborist.EG.v1", "objective": trainer[3:], "C": 100.0, "seed": 0} if trainer.startswith("eg-") \
        else {"@trainers": trainer, "seed": 0}
    fit = registry.resolve(Config({"t": spec}))["t"]
    structure = ArcLabels(hash_bits=16)
    structure.initialize(xs)
    fit.begin(structure, xs, 16)
    for _ in range(4):
        fit.finish_epoch(fit.epoch(structure, xs))
    w = fit.prediction_weights()
    right = total = 0
    for x in xs:
        r, t = structure.hits(x, structure.gold(x), structure.argmax(x, structure.scores(x, w)))
        right, total = right + r, total + t
    majority = max(np.bincount(np.concatenate([structure.gold(x)[1:] for x in xs]))) / total
    assert right / total > 0.9 > majority + 0.5


def test_labeler_saves_its_label_set_and_labels_the_parsers_tree(tmp_path):
    from arborist import Labeler, Parser
    from arborist.model import Pipeline, load
    from arborist.parser.tree import DependencyTree

    rng = np.random.default_rng(3)
    labels = ["det", "nsubj", "obj", "obl:tmod", "root", "nmod:poss"]
    labeler = Labeler(ArcLabels(labels, hash_bits=BITS), rng.normal(size=1 << BITS), {"note": "random"})
    parser = Parser(DependencyTree(hash_bits=BITS), rng.normal(size=1 << BITS))
    x = sentence(heads=HEADS, deprels=DEPRELS)
    pipeline = Pipeline({"parser": parser, "labeler": labeler})
    with pytest.raises(ValueError, match="at most one labeler"):
        pipeline.add("labeler2", labeler)
    _, heads, deprels = pipeline.annotate(x, gold_tags=True)
    assert deprels[0] == "" and len(deprels) == x.n + 1 and set(deprels[1:]) <= set(labels)
    # The labels are those of the predicted tree, not the gold one.
    assert deprels == labeler.labels(x, heads)
    pipeline.save(tmp_path / "model")
    loaded = load(tmp_path / "model")
    assert loaded.writer("deprel").label_set == tuple(labels)
    assert loaded.writer("deprel").info == {"note": "random"}
    assert loaded.annotate(x, gold_tags=True)[2] == deprels
    # Without a parser, a labeler labels the input's own tree; without a tree, nothing.
    alone = Pipeline({"labeler": labeler})
    assert alone.annotate(x, gold_tags=True) [1:] == (None, labeler.labels(x, x.heads))
    assert alone.annotate(sentence(), gold_tags=True)[1:] == (None, None)


def test_bad_inputs_are_refused():
    x = sentence(2, heads=[2, 0])
    structure = ArcLabels(["a", "b"], hash_bits=8)
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        structure.add_features(x, np.ones((3, 5)), Weights(8, False))
    with pytest.raises(ValueError, match="integers"):
        structure.features.keys(x, np.array([-1, 2.0, 0.0]))
    with pytest.raises(ValueError, match="outside"):
        structure.features.keys(x, np.array([-1, 2 + 2**32, 0], dtype=np.int64))
    with pytest.raises(ValueError, match="between 1 and 32"):
        LabelFeatures(bits=33)


def test_cli_evaluates_a_labeler_without_a_parser(tmp_path):
    """A lone labeler labels the gold trees: evaluate reports its LAS (UAS is 100)."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from arborist.cli import app
    from arborist.corpus import read_corpus
    from arborist import Labeler
    from arborist.model import Pipeline

    dev = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-dev.conllu"
    xs = read_corpus(dev, require_heads=True)
    structure = ArcLabels(hash_bits=10)
    structure.initialize(xs)
    Pipeline({"labeler": Labeler(structure, np.zeros(1 << 10))}).save(tmp_path / "m")
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "m"), str(dev), "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)
    assert scores["uas"] == 100.0
    # zero weights: every word gets the alphabetically first label, but the tree decides `root`:
    # the words attached to the root get it, and no other word (issue 28, item 2)
    first = next(label for label in structure.labels if label != "root")
    right = sum(d == ("root" if h == 0 else first) for x in xs for h, d in zip(x.heads[1:], x.deprels[1:]))
    assert scores["las_full"] == pytest.approx(100 * right / sum(x.n for x in xs))


@pytest.mark.parametrize("root_position", [0, 1, 3])
def test_labels_follow_the_tree_root_iff_head_0(root_position):
    """Whatever the weights prefer, a labeler gives `root` to exactly the words attached to the
    root, in the batch kernel and one sentence at a time (issue 28, item 2)."""
    from arborist import Labeler
    from arborist.model import Pipeline
    from arborist.weights import Weights

    names = ["nsubj", "obj", "punct"]
    names.insert(root_position, "root")
    structure = ArcLabels(names, hash_bits=12)
    rng = np.random.default_rng(root_position)
    weights = rng.normal(size=1 << 12)
    x = Sentence.from_columns(["a", "b", "c", "d", "e"], upos=["N", "V", "N", "P", "N"],
                              heads=[2, 0, 2, 0, 4], deprels=["nsubj", "root", "obj", "root", "punct"])
    # weights that make `root` the best label of every word but the two attached to the root
    boost = np.zeros(1 << 12)
    tree = Weights(12, False, boost)
    coef = np.zeros((6, 4))
    coef[1:, structure.root] = 50.0
    coef[[2, 4], structure.root] = -100.0
    structure.add_features(x, coef, tree, 1.0)
    labeler = Labeler(structure, weights + boost)
    labels = labeler.labels(x, x.heads)
    assert [m for m in range(1, 6) if labels[m] == "root"] == [2, 4]
    batch = Pipeline({"labeler": labeler}).annotate_many([x], gold_tags=True)[0].deprels
    assert batch == labels
    scores = structure.scores(x, Weights(12, False, weights + boost))
    unconstrained = structure.argmax(x, scores)
    assert [m for m in range(1, 6) if unconstrained[m] == structure.root] == [1, 3, 5]  # the trainers' argmax
