"""Pipelines of taggers and a parser: model format 2 (and 1), with_tags, unseen words,
tag scores, jackknifed training, resume, component configs and the command line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from confection import Config
from typer.testing import CliRunner

import arborist.train as train_module
from arborist.cli import app
from arborist.corpus import read_corpus
from arborist.evaluate import attachment_scores, tag_scores
from arborist.learn.perceptron import Perceptron
from arborist import Parser, Tagger
from arborist.components.tagger import with_tags
from arborist.model import FORMAT_VERSION, ModelError, Pipeline, load
from arborist.parser.tree import DependencyTree
from arborist.registry import registry
from arborist.sentence import FORM, ROOT, UPOS, XPOS, Sentence
from arborist.strings import hash_strings
from arborist.tagger.chain import LinearChain
from arborist.train import jackknife, load_checkpoint, train
from arborist.registry import make_structure
from trackers import Quiet

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"
TRAIN = SAMPLE / "sample-train.conllu"
DEV = SAMPLE / "sample-dev.conllu"
TAGGER_BITS, PARSER_BITS = 12, 14
N_TRAIN = 40  # max_train_sentences of the training runs below


@pytest.fixture(scope="module")
def train_set() -> list[Sentence]:
    return read_corpus(TRAIN)


@pytest.fixture(scope="module")
def dev_set() -> list[Sentence]:
    return read_corpus(DEV)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def vocabulary_of(sentences) -> np.ndarray:
    return np.unique(np.concatenate([x.attrs[FORM, 1:] for x in sentences]))


# ---------------------------------------------------------------------------
# Pipelines built by hand
# ---------------------------------------------------------------------------
def random_component(kind: str, train_set, seed: int, attribute: str = "upos"):
    rng = np.random.default_rng(seed)
    if kind == "parser":
        return Parser(DependencyTree(hash_bits=PARSER_BITS), rng.normal(size=2**PARSER_BITS), {"seed": seed})
    chain = LinearChain.from_sentences(train_set, attribute, hash_bits=TAGGER_BITS)
    return Tagger(chain, rng.normal(size=2**TAGGER_BITS), {"seed": seed})


@pytest.fixture(scope="module")
def hand_pipeline(train_set) -> Pipeline:
    """XPOS tagger, UPOS tagger, parser (in that order: not alphabetical), random weights."""
    return Pipeline(
        {
            "xpos": random_component("tagger", train_set, 1, "xpos"),
            "upos": random_component("tagger", train_set, 2, "upos"),
            "parser": random_component("parser", train_set, 3),
        },
        vocabulary=vocabulary_of(train_set),
        info={"note": "by hand"},
    )


def test_pipeline_round_trip(hand_pipeline, dev_set, tmp_path):
    target = hand_pipeline.save(tmp_path / "model")
    assert listing(target) == ["meta.json", "parser.npy", "upos.npy", "vocabulary.npy", "xpos.npy"]
    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    assert meta["format_version"] == FORMAT_VERSION == 3
    assert [(c["name"], c["kind"]) for c in meta["components"]] == [
        ("xpos", "tagger"), ("upos", "tagger"), ("parser", "parser")]
    assert meta["components"][0]["structure"]["attribute"] == "xpos"
    assert meta["components"][0]["structure"]["tags"] == list(hand_pipeline.components["xpos"].structure.tags)
    assert meta["info"] == {"note": "by hand"}

    loaded = load(target)
    assert list(loaded.components) == ["xpos", "upos", "parser"]
    assert [type(c) for c in loaded.components.values()] == [Tagger, Tagger, Parser]
    assert [t.attribute for t in loaded.taggers] == ["xpos", "upos"]
    assert loaded.writer("head") is loaded.components["parser"]
    assert loaded.info == {"note": "by hand"}
    np.testing.assert_array_equal(loaded.vocabulary, hand_pipeline.vocabulary)
    for name, component in hand_pipeline.components.items():
        got = loaded.components[name]
        np.testing.assert_array_equal(got.weights.array, component.weights.array, err_msg=name)
        assert got.structure.registry_call() == component.structure.registry_call()
        assert got.info == component.info

    changed_tags = changed_heads = 0
    for sentence in dev_set:
        tagged, heads, _ = hand_pipeline.annotate(sentence)
        got_tagged, got_heads, _ = loaded.annotate(sentence)
        assert got_tagged.upos == tagged.upos and got_tagged.xpos == tagged.xpos
        np.testing.assert_array_equal(got_tagged.attrs, tagged.attrs)
        np.testing.assert_array_equal(got_heads, heads)
        np.testing.assert_array_equal(loaded.unseen(sentence), hand_pipeline.unseen(sentence))
        # the parser reads the taggers' output, gold_tags=True the input's own tags
        np.testing.assert_array_equal(heads, hand_pipeline.writer("head").predict(hand_pipeline.tag(sentence)))
        gold_tagged, gold_heads, _ = loaded.annotate(sentence, gold_tags=True)
        assert gold_tagged.upos == sentence.upos and gold_tagged.xpos == sentence.xpos
        np.testing.assert_array_equal(gold_heads, hand_pipeline.writer("head").predict(sentence))
        changed_tags += tagged.upos != sentence.upos
        changed_heads += not np.array_equal(heads, gold_heads)
    # (random taggers do change the tags, and the parser's output with them)
    assert changed_tags and changed_heads


def legacy_config(structure) -> dict:
    """A structure's configuration as model formats 1 and 2 stored it."""
    return {"structure": "tree", **{k: v for k, v in structure.registry_call().items() if k != "@structures"}}


def test_format_1_model_loads_as_a_one_parser_pipeline(dev_set, tmp_path):
    structure = DependencyTree(hash_bits=PARSER_BITS, single_root=False)
    weights = np.random.default_rng(7).normal(size=2**PARSER_BITS)
    reference = Parser(make_structure(structure.registry_call()), weights)
    old = tmp_path / "old-model"
    old.mkdir()
    (old / "meta.json").write_text(json.dumps({
        "format": "arborist-model",
        "format_version": 1,
        "kind": "parser",
        "arborist_version": "0.0.9",
        "structure": legacy_config(structure),
        "labels": {"deprel": []},
        "info": {"best_epoch": 4, "config": "[structure]\n"},
    }), encoding="utf-8")
    np.save(old / "weights.npy", weights, allow_pickle=False)

    loaded = load(old)
    assert list(loaded.components) == ["parser"]
    assert loaded.taggers == []
    assert loaded.writer("head").info == {"best_epoch": 4, "config": "[structure]\n"}
    assert loaded.writer("head").structure.registry_call() == structure.registry_call()
    np.testing.assert_array_equal(loaded.writer("head").weights.array, weights)
    assert len(loaded.vocabulary) == 0
    for sentence in dev_set:
        expected = reference.predict(sentence)
        tagged, heads, _ = loaded.annotate(sentence)
        assert tagged.upos == sentence.upos
        np.testing.assert_array_equal(heads, expected)
        assert loaded.unseen(sentence).all()  # no vocabulary: every word is unseen
    # Saving it again writes format 2, which loads to the same predictions.
    loaded.save(tmp_path / "new-model")
    assert listing(tmp_path / "new-model") == ["meta.json", "parser.npy", "vocabulary.npy"]
    again = load(tmp_path / "new-model")
    assert json.loads((tmp_path / "new-model" / "meta.json").read_text())["format_version"] == 3
    for sentence in dev_set[:5]:
        np.testing.assert_array_equal(again.writer("head").predict(sentence), reference.predict(sentence))


def test_format_1_wrong_weights_shape_names_weights_npy(tmp_path):
    structure = DependencyTree(hash_bits=PARSER_BITS)
    (tmp_path / "meta.json").write_text(json.dumps({
        "format": "arborist-model", "format_version": 1, "kind": "parser", "structure": legacy_config(structure)}))
    np.save(tmp_path / "weights.npy", np.zeros(2**PARSER_BITS + 1), allow_pickle=False)
    with pytest.raises(ModelError) as info:
        load(tmp_path)
    assert str(tmp_path / "weights.npy") in str(info.value)


def edit_meta(model: Path, edit) -> Path:
    path = model / "meta.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    edit(meta)
    path.write_text(json.dumps(meta), encoding="utf-8")
    return path


def set_entry(index, key, value):
    def edit(meta):
        meta["components"][index][key] = value
    return edit


@pytest.mark.parametrize("edit, expected", [
    pytest.param(set_entry(1, "kind", "telepathy"), "unknown model kind 'telepathy'", id="unknown-kind"),
    pytest.param(set_entry(1, "kind", None), "unknown model kind None", id="no-kind"),
    pytest.param(set_entry(0, "name", "../xpos"), "invalid component name '../xpos'", id="path-name"),
    pytest.param(set_entry(0, "name", "x pos"), "invalid component name 'x pos'", id="space-name"),
    pytest.param(set_entry(0, "name", 7), "invalid component name 7", id="number-name"),
    pytest.param(set_entry(2, "structure", {"structure": "tree"}), "invalid 'structure' entry of parser",
                 id="bad-structure"),
    pytest.param(set_entry(1, "structure", DependencyTree(hash_bits=TAGGER_BITS).registry_call()),
                 "invalid 'structure' entry of upos", id="tree-structure-for-a-tagger"),
    pytest.param(lambda meta: meta["components"].append(dict(meta["components"][2], name="parser2")),
                 "at most one parser", id="two-parsers"),
    pytest.param(lambda meta: meta["components"].append(dict(meta["components"][1], name="upos2")),
                 "two taggers for UPOS", id="two-upos-taggers"),
])
def test_bad_component_entry_names_meta_json(hand_pipeline, tmp_path, edit, expected):
    model = hand_pipeline.save(tmp_path / "model")
    for extra in ("parser2", "upos2"):  # weights for the duplicated entries
        shutil.copy(model / f"{extra[:-1]}.npy", model / f"{extra}.npy")
    meta_path = edit_meta(model, edit)
    with pytest.raises(ModelError) as info:
        load(model)
    message = str(info.value)
    assert message.startswith(f"{meta_path}:"), message
    assert expected in message


@pytest.mark.parametrize("name, array, expected", [
    ("xpos", np.zeros(2**TAGGER_BITS - 1), "(4095,)"),
    ("upos", np.zeros(2**PARSER_BITS), "(16384,)"),  # a parser-sized array for a tagger
    ("upos", np.zeros(2**TAGGER_BITS, dtype=np.float32), "float32"),
    ("parser", np.zeros((2, 2**(PARSER_BITS - 1))), "(2, 8192)"),
])
def test_wrong_component_weights_name_the_file(hand_pipeline, tmp_path, name, array, expected):
    model = hand_pipeline.save(tmp_path / "model")
    np.save(model / f"{name}.npy", array, allow_pickle=False)
    with pytest.raises(ModelError) as info:
        load(model)
    message = str(info.value)
    assert message.startswith(f"{model / (name + '.npy')}:"), message
    assert expected in message


def test_missing_component_weights_and_bad_vocabulary_name_the_file(hand_pipeline, tmp_path):
    model = hand_pipeline.save(tmp_path / "model")
    (model / "upos.npy").unlink()
    with pytest.raises(ModelError, match="upos.npy: cannot read weights"):
        load(model)
    model = hand_pipeline.save(tmp_path / "model")
    np.save(model / "vocabulary.npy", np.arange(5, dtype=np.int64), allow_pickle=False)
    with pytest.raises(ModelError) as info:
        load(model)
    assert str(model / "vocabulary.npy") in str(info.value) and "uint64" in str(info.value)


def test_component_named_vocabulary(train_set, tmp_path):
    tagger = random_component("tagger", train_set, 5)
    try:
        pipeline = Pipeline({"vocabulary": tagger}, vocabulary=vocabulary_of(train_set))
        pipeline.save(tmp_path / "model")
    except ValueError as e:
        assert "vocabulary" in str(e)  # refusing the name is a fix too
        return
    loaded = load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.components["vocabulary"].weights.array, tagger.weights.array)
    np.testing.assert_array_equal(loaded.vocabulary, pipeline.vocabulary)


def test_pipeline_refuses_bad_names_and_second_parser(train_set):
    pipeline = Pipeline({"parser": random_component("parser", train_set, 1)})
    with pytest.raises(ValueError, match="at most one parser"):
        pipeline.add("other", random_component("parser", train_set, 2))
    pipeline.add("parser", random_component("parser", train_set, 2))  # replacing it is fine
    assert pipeline.writer("head").info == {"seed": 2}
    with pytest.raises(ValueError, match="must be letters"):
        pipeline.add("a/b", random_component("tagger", train_set, 1))
    pipeline.add("tags", random_component("tagger", train_set, 1))
    with pytest.raises(ValueError, match="two taggers for UPOS"):
        pipeline.add("tags2", random_component("tagger", train_set, 1))
    assert list(pipeline.components) == ["parser", "tags"]
    assert [t.attribute for t in pipeline.taggers] == ["upos"]


# ---------------------------------------------------------------------------
# with_tags, unseen words, tag scores
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("attribute", ["upos", "xpos"])
def test_with_tags_replaces_one_column(dev_set, attribute):
    sentence = dev_set[3]
    before = sentence.attrs.copy()
    before_upos, before_xpos = list(sentence.upos), list(sentence.xpos)
    tags = [f"T{i % 3}" for i in range(sentence.n)]
    out = with_tags(sentence, attribute, tags)
    assert getattr(out, attribute) == [ROOT] + tags
    other = "xpos" if attribute == "upos" else "upos"
    assert getattr(out, other) == getattr(sentence, other)
    row = UPOS if attribute == "upos" else XPOS
    np.testing.assert_array_equal(out.attrs[row], hash_strings([ROOT] + tags))
    np.testing.assert_array_equal(np.delete(out.attrs, row, axis=0), np.delete(before, row, axis=0))
    # the same hashes as a sentence read with these tags
    columns = {"upos": sentence.upos[1:], "xpos": sentence.xpos[1:], attribute: tags}
    rebuilt = Sentence.from_columns(sentence.forms[1:], None, columns["upos"], columns["xpos"])
    np.testing.assert_array_equal(out.attrs[[UPOS, XPOS]], rebuilt.attrs[[UPOS, XPOS]])
    assert out.forms == sentence.forms and out.lines == sentence.lines
    np.testing.assert_array_equal(out.heads, sentence.heads)
    # the input is left as it was
    np.testing.assert_array_equal(sentence.attrs, before)
    assert sentence.upos == before_upos and sentence.xpos == before_xpos
    with pytest.raises(ValueError, match="tags for a sentence of"):
        with_tags(sentence, attribute, tags[:-1])


def test_unseen_against_a_set_of_forms(train_set, dev_set):
    seen_sentences = train_set[:25]
    pipeline = Pipeline(vocabulary=vocabulary_of(seen_sentences)[::-1])  # any order in
    forms = {f for x in seen_sentences for f in x.forms[1:]}
    total = unseen_count = 0
    for sentence in dev_set + train_set[20:30]:
        expected = np.array([f not in forms for f in sentence.forms[1:]])
        got = pipeline.unseen(sentence)
        assert got.dtype == bool
        np.testing.assert_array_equal(got, expected, err_msg=" ".join(sentence.forms))
        total += sentence.n
        unseen_count += int(expected.sum())
    assert 0 < unseen_count < total
    # Case matters (FORM, not the lower-cased form), and an empty vocabulary makes every word unseen.
    case = Sentence.from_columns(["The", "the", "THE"])
    np.testing.assert_array_equal(Pipeline(vocabulary=hash_strings(["the", "zzz"])).unseen(case),
                                  [True, False, True])
    np.testing.assert_array_equal(Pipeline().unseen(case), [True, True, True])


def test_tag_scores_by_hand():
    a = Sentence.from_columns(["a", "b", "c"], upos=["X", "Y", "Z"], xpos=["x", "y", "z"])
    b = Sentence.from_columns(["d", "e"], upos=["X", "X"], xpos=["x", "x"])
    new = {id(a): np.array([False, True, True]), id(b): np.array([True, False])}
    pairs = [
        (a, {"upos": ["X", "Y", "Y"], "xpos": ["x", "q", "z"]}),  # upos 2/3 (unseen 1/2), xpos 2/3 (unseen 1/2)
        (b, {"upos": ["Y", "X"], "xpos": ["x", "x"]}),            # upos 1/2 (unseen 0/1), xpos 2/2 (unseen 1/1)
    ]
    scores = tag_scores(pairs, lambda s: new[id(s)])
    assert scores == pytest.approx({
        "words": 5, "sentences": 2, "unseen_words": 3,
        "upos": 60.0, "upos_unseen": 100 / 3,
        "xpos": 80.0, "xpos_unseen": 200 / 3,
    })
    # without an unseen function: no unseen scores; only the predicted columns are scored
    assert tag_scores([(a, {"upos": ["X", "Y", "Z"]}), (b, {"upos": ["X", "Y"]})]) == pytest.approx(
        {"words": 5, "sentences": 2, "upos": 80.0})
    # no unseen words: 0, not a division by zero
    scores = tag_scores([(b, {"upos": ["X", "X"]})], lambda s: np.zeros(s.n, dtype=bool))
    assert scores == pytest.approx({"words": 2, "sentences": 1, "unseen_words": 0, "upos": 100.0,
                                    "upos_unseen": 0.0})


# ---------------------------------------------------------------------------
# The perceptron's training accuracy on a chain
# ---------------------------------------------------------------------------
class RecordingChain(LinearChain):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.predictions = []

    def argmax(self, x, scores):
        pred = super().argmax(x, scores)
        self.predictions.append((x, pred))
        return pred


def test_perceptron_train_accuracy_counts_tags_not_parts(train_set):
    chain = RecordingChain(None, "upos", order=1, hash_bits=TAGGER_BITS)
    chain.initialize(train_set[:30])
    trainer = Perceptron(averaged=True, shuffle=True, seed=1)
    trainer.begin(chain, train_set[:30], chain.hash_bits)
    metrics = trainer.epoch(chain, train_set[:30])
    assert len(chain.predictions) == 30
    tags_right = parts_right = words = 0
    for x, pred in chain.predictions:
        gold = chain.gold(x)
        tags_right += int((gold == pred).sum())
        parts_right += int((chain.indicator(x, gold) * chain.indicator(x, pred)).sum())
        words += x.n
    assert tags_right != parts_right  # so the two definitions can be told apart
    assert metrics["train_accuracy"] == pytest.approx(tags_right / words)


# ---------------------------------------------------------------------------
# Jackknifing
# ---------------------------------------------------------------------------
TAGGER_SPEC = {
    "structure": {"@structures": "arborist.LinearChain.v1", "attribute": "upos", "hash_bits": 14},
    "trainer": {"@trainers": "arborist.Perceptron.v1", "seed": 0},
}


def train_tagger(spec: dict, sentences: list, epochs: int) -> Tagger:
    resolved = registry.resolve(Config({"c": spec}), validate=True)["c"]
    structure, trainer = resolved["structure"], resolved["trainer"]
    structure.initialize(sentences)
    trainer.begin(structure, sentences, structure.hash_bits)
    for _ in range(epochs):
        trainer.epoch(structure, sentences, None)
    return Tagger(structure, trainer.prediction_weights().array)


def unique_word_corpus(n: int) -> list[Sentence]:
    """Sentence i holds word w<i>, the only word with tag T<i>."""
    return [Sentence.from_columns(["the", f"w{i}", "runs", "."], upos=["DET", f"T{i}", "VERB", "PUNCT"])
            for i in range(n)]


@pytest.mark.parametrize("folds", [2, 3])
def test_jackknife_tags_each_sentence_with_a_tagger_that_never_saw_it(folds):
    sentences = unique_word_corpus(6)
    epochs = 4
    # A tagger trained on a sentence learns its unique tag (so a leak would show) ...
    full = train_tagger(TAGGER_SPEC, sentences, epochs)
    assert [full.tags(x)[1] for x in sentences] == [f"T{i}" for i in range(6)]
    # ... a jackknifed one cannot predict it.
    predicted = jackknife(TAGGER_SPEC, sentences, folds, epochs, Quiet())
    assert [len(tags) for tags in predicted] == [x.n for x in sentences]
    for i, tags in enumerate(predicted):
        assert f"T{i}" not in tags, (i, tags)
        assert tags[0] == "DET" and tags[2:] == ["VERB", "PUNCT"]  # what the other folds teach
    # Sentence i is in fold i mod folds, tagged by a tagger trained on the other folds.
    for fold in range(folds):
        rest = [x for i, x in enumerate(sentences) if i % folds != fold]
        tagger = train_tagger(TAGGER_SPEC, rest, epochs)
        for i in range(fold, len(sentences), folds):
            assert predicted[i] == tagger.tags(sentences[i]), i


def test_jackknife_on_the_sample(train_set):
    sentences = train_set[:N_TRAIN]
    predicted = jackknife(TAGGER_SPEC, sentences, 2, 2, Quiet())
    assert [len(tags) for tags in predicted] == [x.n for x in sentences]
    gold = [x.upos[1:] for x in sentences]
    wrong = sum(p != g for tags, gold_tags in zip(predicted, gold) for p, g in zip(tags, gold_tags))
    words = sum(x.n for x in sentences)
    assert 0 < wrong < words / 2  # predicted tags: mostly right, not gold


def test_jackknife_rejects_fewer_than_two_folds(train_set):
    for folds in (1, 0, -2):
        with pytest.raises(ValueError, match=f"jackknife_folds must be 0 .* or >= 2, got {folds}"):
            jackknife(TAGGER_SPEC, train_set[:10], folds, 1, Quiet())


# ---------------------------------------------------------------------------
# Training a pipeline
# ---------------------------------------------------------------------------
def pipeline_config(folds: int = 2, max_epochs: int = 2, tagger_seed: int = 0, extra: str = "",
                    taggers: tuple[str, ...] = ("upos", "xpos")) -> Config:
    sections = ["[components]"]
    for attribute in taggers:
        sections.append(f'''
[components.{attribute}]

[components.{attribute}.structure]
@structures = "arborist.LinearChain.v1"
attribute = "{attribute}"
hash_bits = {TAGGER_BITS}

[components.{attribute}.trainer]
@trainers = "arborist.Perceptron.v1"
seed = {tagger_seed}
''')
    sections.append(f'''
[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = {PARSER_BITS}

[components.parser.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 3

[training]
train_path = "{TRAIN}"
dev_path = "{DEV}"
max_epochs = {max_epochs}
max_train_sentences = {N_TRAIN}
jackknife_folds = {folds}
''')
    return Config().from_str("\n".join(sections) + extra)


def capturing(mp: pytest.MonkeyPatch) -> dict:
    """Record each component's training and dev inputs as the driver hands them over."""
    captured = {}
    original = train_module._train_component

    def wrapper(name, structure, trainer, train_x, dev_x, *args, **kwargs):
        captured[name] = (list(train_x), list(dev_x))
        return original(name, structure, trainer, train_x, dev_x, *args, **kwargs)

    mp.setattr(train_module, "_train_component", wrapper)
    return captured


@pytest.fixture(scope="module")
def trained_pipeline(tmp_path_factory):
    """Two taggers (UPOS for 4 epochs, best at 3) and a parser on 2-fold jackknifed tags."""
    out = tmp_path_factory.mktemp("pipeline") / "run"
    config = pipeline_config(extra="\n[components.upos.training]\nmax_epochs = 6\n")
    with pytest.MonkeyPatch.context() as mp:
        captured = capturing(mp)
        tracker = Quiet()
        pipeline, report = train(config, out, tracker)
    return out, config, pipeline, report, captured, tracker


def test_train_report_and_model(trained_pipeline):
    out, _, pipeline, report, _, tracker = trained_pipeline
    assert tracker.components == ["upos", "xpos", "parser"]
    assert list(pipeline.components) == ["upos", "xpos", "parser"]
    assert listing(out) == ["checkpoint", "model-best", "training.json"]
    assert listing(out / "checkpoint") == ["arrays.npz", "jackknife.npz", "state.json"]
    assert json.loads((out / "training.json").read_text()) == json.loads(json.dumps(report))
    components = report["components"]
    assert list(components) == ["upos", "xpos", "parser"]
    assert [(c["kind"], c["key"]) for c in components.values()] == [
        ("tagger", "dev_upos"), ("tagger", "dev_xpos"), ("parser", "dev_uas")]
    assert [len(c["history"]) for c in components.values()] == [6, 2, 2]  # [components.upos.training]
    for name, entry in components.items():
        scores = [row[entry["key"]] for row in entry["history"]]
        assert entry["best"] == max(scores) and scores[entry["best_epoch"] - 1] == max(scores)
        assert entry["done"] and entry["stopped"] == "max_epochs"
        assert pipeline.components[name].info["best_epoch"] == entry["best_epoch"]
    assert {"dev_upos", "dev_upos_unseen", "dev_unseen_words", "train_accuracy"} <= set(components["upos"]["history"][0])
    best = load(out)
    for name, component in pipeline.components.items():
        np.testing.assert_array_equal(best.components[name].weights.array, component.weights.array, err_msg=name)
    state, _ = load_checkpoint(out / "checkpoint")
    assert (state["component"], state["epoch"]) == ("parser", 2)


def test_training_vocabulary_and_unseen_dev_scores(trained_pipeline, train_set, dev_set):
    _, _, pipeline, report, _, _ = trained_pipeline
    forms = {f for x in train_set[:N_TRAIN] for f in x.forms[1:]}
    later = {f for x in train_set[N_TRAIN:] for f in x.forms[1:]} - forms
    assert any(f in later for x in dev_set for f in x.forms[1:])  # so the max_train_sentences cut shows
    np.testing.assert_array_equal(pipeline.vocabulary, np.unique(hash_strings(sorted(forms))))
    np.testing.assert_array_equal(load(trained_pipeline[0]).vocabulary, pipeline.vocabulary)
    # the dev scores of the best UPOS epoch, recomputed by brute force
    tagger = pipeline.components["upos"]
    right = right_unseen = unseen = words = 0
    for x in dev_set:
        for form, gold, pred in zip(x.forms[1:], x.upos[1:], tagger.tags(x)):
            words += 1
            right += gold == pred
            if form not in forms:
                unseen += 1
                right_unseen += gold == pred
    dev = tagger.info["dev"]
    assert dev["dev_unseen_words"] == unseen > 0
    assert dev["dev_upos"] == pytest.approx(100 * right / words)
    assert dev["dev_upos_unseen"] == pytest.approx(100 * right_unseen / unseen)


def test_parser_trains_on_jackknifed_tags(trained_pipeline, train_set, dev_set):
    _, config, pipeline, report, captured, _ = trained_pipeline
    gold = train_set[:N_TRAIN]
    # jackknifing trains for the tagger's best number of epochs, not max_epochs (which differ here)
    assert report["components"]["upos"]["best_epoch"] < len(report["components"]["upos"]["history"])
    for name in ("upos", "xpos"):  # the taggers train on the gold sentences
        assert [x.upos for x in captured[name][0]] == [x.upos for x in gold]
    parser_train, parser_dev = captured["parser"]
    assert len(parser_train) == len(gold)
    differ = {"upos": 0, "xpos": 0}
    for attribute in ("upos", "xpos"):
        spec = config["components"][attribute]
        epochs = report["components"][attribute]["best_epoch"]
        expected = jackknife(spec, gold, 2, epochs, Quiet())
        for x, g, tags in zip(parser_train, gold, expected):
            got = getattr(x, attribute)
            assert len(got) == g.n + 1 and got[0] == ROOT
            assert got[1:] == tags
            np.testing.assert_array_equal(x.attrs[UPOS if attribute == "upos" else XPOS], hash_strings(got))
            differ[attribute] += got != getattr(g, attribute)
    assert differ["upos"] and differ["xpos"]  # jackknifed tags are not the gold ones
    for x, g in zip(parser_train, gold):  # everything else is the gold sentence
        assert x.forms == g.forms
        np.testing.assert_array_equal(x.heads, g.heads)
        np.testing.assert_array_equal(np.delete(x.attrs, [UPOS, XPOS], axis=0), np.delete(g.attrs, [UPOS, XPOS], axis=0))
    # the parser's dev sentences carry the final taggers' tags
    assert [x.upos for x in parser_dev] == [pipeline.tag(g).upos for g in dev_set]
    assert [x.xpos for x in parser_dev] == [pipeline.tag(g).xpos for g in dev_set]
    assert [x.upos for x in parser_dev] != [g.upos for g in dev_set]
    # the dev UAS in the report is the parser's on those tags, scored against gold heads
    parser = pipeline.writer("head")
    scores = attachment_scores((g, parser.predict(x), None) for x, g in zip(parser_dev, dev_set))
    assert parser.info["dev"]["dev_uas"] == pytest.approx(scores["uas"])


def test_jackknife_folds_0_trains_the_parser_on_gold_tags(tmp_path, monkeypatch, train_set):
    def no_jackknife(*args, **kwargs):
        raise AssertionError("jackknife() called with jackknife_folds = 0")

    monkeypatch.setattr(train_module, "jackknife", no_jackknife)
    captured = capturing(monkeypatch)
    pipeline, report = train(pipeline_config(folds=0, max_epochs=1), tmp_path / "run", Quiet())
    gold = train_set[:N_TRAIN]
    parser_train = captured["parser"][0]
    assert [x.upos for x in parser_train] == [x.upos for x in gold]
    assert [x.xpos for x in parser_train] == [x.xpos for x in gold]
    for x, g in zip(parser_train, gold):
        np.testing.assert_array_equal(x.attrs, g.attrs)
    assert "jackknife.npz" not in listing(tmp_path / "run" / "checkpoint")
    assert list(pipeline.components) == ["upos", "xpos", "parser"]


@pytest.mark.parametrize("folds, taggers", [(1, ("upos",)), (1, ()), (2.5, ("upos",))],
                         ids=["1-with-tagger", "1-parser-only", "2.5"])
def test_jackknife_folds_is_validated_before_training(tmp_path, folds, taggers):
    tracker = Quiet()
    error = None
    try:
        train(pipeline_config(folds=folds, max_epochs=1, taggers=taggers), tmp_path / "run", tracker)
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        error = e
    assert isinstance(error, ValueError) and "jackknife_folds" in str(error), repr(error)
    assert tracker.components == []


def comparable(report: dict) -> dict:
    """The report without timings."""
    report = json.loads(json.dumps(report))
    for entry in report["components"].values():
        entry.get("setup", {}).pop("seconds", None)
        for row in entry["history"]:
            for key in [k for k in row if k.endswith("seconds") or k.endswith("per_second")]:
                del row[key]
    return report


def assert_same_run(a: Path, b: Path, report_a: dict, report_b: dict) -> None:
    state_a, arrays_a = load_checkpoint(a / "checkpoint")
    state_b, arrays_b = load_checkpoint(b / "checkpoint")
    assert (state_a["component"], state_a["epoch"]) == (state_b["component"], state_b["epoch"])
    assert sorted(arrays_a) == sorted(arrays_b)
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key], err_msg=key)
    assert train_module._load_jackknife(a / "checkpoint") == train_module._load_jackknife(b / "checkpoint")
    best_a, best_b = load(a), load(b)
    assert list(best_a.components) == list(best_b.components)
    for name in best_a.components:
        np.testing.assert_array_equal(best_a.components[name].weights.array, best_b.components[name].weights.array,
                                      err_msg=name)
    assert comparable(report_a) == comparable(report_b)


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run"
    _, report = train(pipeline_config(max_epochs=3, taggers=("upos",)), out, Quiet())
    return out, report


def test_resume_during_parser_epochs_equals_uninterrupted_and_keeps_the_jackknife(straight_run, tmp_path,
                                                                                   monkeypatch):
    straight, straight_report = straight_run
    config = pipeline_config(max_epochs=3, taggers=("upos",))
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(config, run, Quiet(interrupt_at=("parser", 2, 17)))
    state, _ = load_checkpoint(run / "checkpoint")
    assert (state["component"], state["epoch"]) == ("parser", 1)
    assert "jackknife.npz" in listing(run / "checkpoint")
    tagger_before = (run / "model-best" / "upos.npy").read_bytes()

    def no_jackknife(*args, **kwargs):
        raise AssertionError("jackknifing redone on resume")

    monkeypatch.setattr(train_module, "jackknife", no_jackknife)
    tracker = Quiet()
    _, resumed_report = train(config, run, tracker, resume=True)
    assert tracker.components == ["parser"]  # the tagger is not trained again
    assert (run / "model-best" / "upos.npy").read_bytes() == tagger_before
    assert [row["epoch"] for row in resumed_report["components"]["parser"]["history"]] == [1, 2, 3]
    assert_same_run(straight, run, straight_report, resumed_report)


def test_resume_during_tagger_epochs_equals_uninterrupted(straight_run, tmp_path):
    straight, straight_report = straight_run
    config = pipeline_config(max_epochs=3, taggers=("upos",))
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(config, run, Quiet(interrupt_at=("upos", 2, 5)))
    state, _ = load_checkpoint(run / "checkpoint")
    assert (state["component"], state["epoch"]) == ("upos", 1)
    assert listing(run / "model-best") == ["meta.json", "upos.npy", "vocabulary.npy"]
    tracker = Quiet()
    _, resumed_report = train(config, run, tracker, resume=True)
    assert tracker.components == ["upos", "parser"]
    assert_same_run(straight, run, straight_report, resumed_report)


def test_resume_during_jackknifing_equals_uninterrupted(straight_run, tmp_path):
    straight, straight_report = straight_run
    config = pipeline_config(max_epochs=3, taggers=("upos",))
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(config, run, Quiet(interrupt_on="fold 2/2"))
    state, _ = load_checkpoint(run / "checkpoint")
    assert (state["component"], state["epoch"]) == ("upos", 3)
    assert "jackknife.npz" not in listing(run / "checkpoint")
    tracker = Quiet()
    _, resumed_report = train(config, run, tracker, resume=True)
    assert tracker.components == ["parser"]
    assert_same_run(straight, run, straight_report, resumed_report)


def test_fresh_run_over_an_old_run_does_not_reuse_its_jackknife(tmp_path):
    run = tmp_path / "run"
    train(pipeline_config(max_epochs=2, tagger_seed=1, taggers=("upos",)), run, Quiet())  # an earlier run
    old = train_module._load_jackknife(run / "checkpoint")
    config = pipeline_config(max_epochs=2, tagger_seed=2, taggers=("upos",))
    reference = tmp_path / "reference"
    _, reference_report = train(config, reference, Quiet())
    if old == train_module._load_jackknife(reference / "checkpoint"):
        raise RuntimeError("precondition: the two configs must jackknife differently")
    with pytest.raises(KeyboardInterrupt):
        train(config, run, Quiet(interrupt_at=("upos", 2, 5)))  # a fresh run, interrupted in the tagger
    assert "jackknife.npz" not in listing(run / "checkpoint")
    _, report = train(config, run, Quiet(), resume=True)
    assert_same_run(reference, run, reference_report, report)


# ---------------------------------------------------------------------------
# Config errors
# ---------------------------------------------------------------------------
TRAINING = f'''
[training]
train_path = "{TRAIN}"
dev_path = "{DEV}"
max_epochs = 1
'''
PARSER = '''
[components.{name}]

[components.{name}.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 10

[components.{name}.trainer]
@trainers = "arborist.Perceptron.v1"
'''


@pytest.mark.parametrize("text, expected", [
    pytest.param('''
[structure]
@structures = "arborist.DependencyTree.v1"

[trainer]
@trainers = "arborist.Perceptron.v1"
''', r"\[structure\] and \[trainer\] belong to a component: write \[components.parser.structure\]",
        id="top-level-structure"),
    pytest.param("[components]\n" + PARSER.format(name="p1") + PARSER.format(name="p2"),
                 "at most one parser per pipeline, got p1, p2", id="two-parsers"),
    pytest.param('''
[components]

[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
''', r"\[components.parser\] needs \[components.parser.trainer\]", id="missing-trainer"),
    pytest.param("[components]\n" + PARSER.format(name="parser") + '''
[components.parser.training]
max_epochs = 2
learning_rate = 0.1
''', r"\[components.parser.training\] may set only max_epochs, patience, keep, seeds, not learning_rate",
        id="unknown-component-training-key"),
    pytest.param("[components]\n" + PARSER.format(name="parser") + '''
[components.parser.optimizer]
x = 1
''', r"\[components.parser\]: unknown entries optimizer", id="unknown-component-entry"),
    pytest.param("", r"no \[components.NAME\] sections", id="no-components"),
])
def test_config_errors(text, expected, tmp_path):
    config = Config().from_str(text + TRAINING)
    with pytest.raises(ValueError, match=expected):
        train(config, tmp_path / "run", Quiet())
    assert not (tmp_path / "run").exists()


def test_unknown_training_setting_lists_the_known_ones(tmp_path):
    config = Config().from_str("[components]\n" + PARSER.format(name="parser") + TRAINING + "jackknife_fold = 3\n")
    with pytest.raises(ValueError, match="unknown \\[training\\] setting\\(s\\): jackknife_fold; known: .*jackknife_folds"):
        train(config, tmp_path / "run", Quiet())


# ---------------------------------------------------------------------------
# Command line on the quickstart pipeline
# ---------------------------------------------------------------------------
def output_of(result) -> str:
    text = result.output
    try:
        err = result.stderr
    except ValueError:
        err = ""
    return text + ("" if err and err in text else err or "")


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory, runner):
    out = tmp_path_factory.mktemp("quickstart") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        result = runner.invoke(app, ["train", "configs/quickstart.cfg", "-o", str(out), "--set",
                                     "training.max_epochs=2"])
    assert result.exit_code == 0, output_of(result) + repr(result.exception)
    pipeline = load(out)
    assert [t.attribute for t in pipeline.taggers] == ["upos", "xpos"] and pipeline.writer("head") is not None
    return out, pipeline


def evaluate_json(runner, model, *extra) -> dict:
    result = runner.invoke(app, ["evaluate", str(model), str(DEV), "--json", *extra])
    assert result.exit_code == 0, output_of(result)
    return json.loads(result.stdout)


def test_cli_evaluate_tags_and_unseen_words(quickstart, runner, train_set, dev_set):
    model, pipeline = quickstart
    scores = evaluate_json(runner, model)
    assert {"upos", "upos_unseen", "xpos", "xpos_unseen", "unseen_words", "uas", "uas_nopunct",
            "exact_match", "words", "sentences"} <= set(scores)
    forms = {f for x in train_set for f in x.forms[1:]}  # quickstart: the whole training file
    unseen = [[f not in forms for f in x.forms[1:]] for x in dev_set]
    assert scores["unseen_words"] == sum(map(sum, unseen)) > 0
    for attribute in ("upos", "xpos"):
        tagger = next(t for t in pipeline.taggers if t.attribute == attribute)
        right = right_unseen = 0
        for x, mask in zip(dev_set, unseen):
            for gold, pred, new in zip(getattr(x, attribute)[1:], tagger.tags(x), mask):
                right += gold == pred
                right_unseen += new and gold == pred
        assert scores[attribute] == pytest.approx(100 * right / scores["words"])
        assert scores[f"{attribute}_unseen"] == pytest.approx(100 * right_unseen / scores["unseen_words"])
    assert scores["upos_unseen"] < scores["upos"]  # sanity: unseen words are harder


def test_cli_evaluate_gold_tags(quickstart, runner, dev_set):
    model, pipeline = quickstart
    predicted = evaluate_json(runner, model)
    gold = evaluate_json(runner, model, "--gold-tags")
    official = gold.pop("conll18")
    predicted.pop("conll18")
    # the scorer's table of the output with the file's own tags: those tags, and our UAS
    assert official["UPOS"]["f1"] == official["XPOS"]["f1"] == 100.0
    assert official["UAS"]["f1"] == pytest.approx(gold["uas"])
    assert not {"upos", "xpos", "upos_unseen", "unseen_words"} & set(gold)
    with_gold = attachment_scores((x, *pipeline.annotate(x, gold_tags=True)[1:]) for x in dev_set)
    assert with_gold["las"] <= with_gold["uas"]
    with_predicted = attachment_scores((x, pipeline.writer("head").predict(pipeline.tag(x)), None) for x in dev_set)
    assert gold == pytest.approx(with_gold)
    assert predicted["uas"] == pytest.approx(with_predicted["uas"])
    # the two differ on this model, so the option's effect is visible
    assert any(not np.array_equal(pipeline.writer("head").predict(x), pipeline.writer("head").predict(pipeline.tag(x)))
               for x in dev_set)


def test_cli_evaluate_tagger_only_model_with_gold_tags(train_set, runner, tmp_path):
    Pipeline({"upos": random_component("tagger", train_set, 1)}).save(tmp_path / "tagger")
    result = runner.invoke(app, ["evaluate", str(tmp_path / "tagger"), str(DEV), "--gold-tags"])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "nothing to evaluate" in output_of(result)


def columns_of(path: Path) -> list[list[bytes]]:
    return [line.split(b"\t") for line in path.read_bytes().splitlines(keepends=True)]


def test_cli_parse_writes_predicted_tags_and_heads(quickstart, runner, tmp_path, dev_set):
    model, pipeline = quickstart
    result = runner.invoke(app, ["parse", str(model), str(DEV), "-d", str(tmp_path / "out")])
    assert result.exit_code == 0, output_of(result)
    parsed = read_corpus(tmp_path / "out" / DEV.name)
    assert len(parsed) == len(dev_set)
    changed = 0
    for p, g in zip(parsed, dev_set):
        tagged, heads, deprels = pipeline.annotate(g)
        assert p.upos == tagged.upos and p.xpos == tagged.xpos
        np.testing.assert_array_equal(p.heads, heads)
        assert p.deprels == deprels
        changed += p.upos != g.upos
    assert changed  # predicted, not copied
    keep = [0, 1, 2, 5, 8, 9]
    for old, new in zip(columns_of(DEV), columns_of(tmp_path / "out" / DEV.name), strict=True):
        assert len(old) == len(new)
        if len(old) == 10:
            assert [old[i] for i in keep] == [new[i] for i in keep]
        else:
            assert old == new


def test_cli_parse_gold_tags_keeps_the_tag_columns(quickstart, runner, tmp_path, dev_set):
    model, pipeline = quickstart
    result = runner.invoke(app, ["parse", str(model), str(DEV), "-d", str(tmp_path / "out"), "--gold-tags"])
    assert result.exit_code == 0, output_of(result)
    parsed = read_corpus(tmp_path / "out" / DEV.name)
    for p, g in zip(parsed, dev_set, strict=True):
        np.testing.assert_array_equal(p.heads, pipeline.writer("head").predict(g))
        assert p.deprels == pipeline.annotate(g, gold_tags=True)[2]
    for old, new in zip(columns_of(DEV), columns_of(tmp_path / "out" / DEV.name), strict=True):
        if len(old) == 10:
            assert old[:6] + old[8:] == new[:6] + new[8:]  # only HEAD and DEPREL may change
        else:
            assert old == new


def test_weights_are_read_and_made_on_cache_lines(tmp_path):
    """Loaded and new weight vectors start on a 64-byte boundary (the coarse distance layout
    keeps a feature pair in one line only then), read without changing a value; a file cut
    short is reported as before."""
    from arborist.weights import Weights, cache_aligned

    assert Weights(12).array.ctypes.data % 64 == 0
    assert not Weights(12).array.any()
    shifted = np.arange(20, dtype=np.float64)[1:17]  # 8 bytes past numpy's own alignment
    again = cache_aligned(shifted)
    assert again.ctypes.data % 64 == 0 and np.array_equal(again, shifted)
    weights = np.random.default_rng(0).normal(size=2 ** 12)
    pipeline = Pipeline()
    pipeline.add("parser", Parser(DependencyTree(hash_bits=12, distance_features="coarse"), weights))
    pipeline.save(tmp_path / "m")
    for mmap in (False, True):
        loaded = load(tmp_path / "m", mmap=mmap).components["parser"].weights.array
        assert loaded.ctypes.data % 64 == 0 and np.array_equal(loaded, weights)
    path = tmp_path / "m" / "parser.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ModelError, match="cannot read weights"):
        load(tmp_path / "m")


def test_the_python_api_refuses_what_it_cannot_take_with_clear_errors(quickstart, dev_set, tmp_path):
    """From a review of the Python API: a str where a list goes was taken character by
    character, a list of words or None where a Sentence goes raised AttributeError deep inside,
    confidence=-1 numpy's "negative dimensions", batch_size=0 read everything into one batch,
    and a lone surrogate UnicodeEncodeError from the hashing."""
    from arborist.sentence import Sentence

    model, pipeline = quickstart
    with pytest.raises(TypeError, match="not a str"):
        pipeline.tokenize("Hello world.")
    for wrong in ("Hello world", ["Hello", "world"], None):
        with pytest.raises(TypeError, match="Sentence"):
            pipeline.annotate(wrong)
    with pytest.raises(TypeError, match="Sentence"):
        pipeline.annotate_many(["Hello world"])
    with pytest.raises(TypeError, match="Sentence"):
        pipeline.annotate_many([dev_set[0], None])
    with pytest.raises(TypeError, match="list of str"):
        Sentence.from_columns("Hello")
    with pytest.raises(TypeError, match="got None"):
        Sentence.from_columns(["a", None])
    with pytest.raises(ValueError, match="U\\+D800"):
        Sentence.from_columns(["abc", "\ud800"])
    with pytest.raises(ValueError, match="U\\+D800"):
        Sentence.from_forms([["abc", "x\ud800"]])
    with pytest.raises(ValueError, match="confidence"):
        pipeline.annotate(dev_set[0], confidence=-1)
    for size in (0, -1):
        with pytest.raises(ValueError, match="batch_size"):
            list(pipeline.parse(dev_set, batch_size=size))
    with pytest.raises(ModelError, match="a model is a directory"):
        load(model / "model-best" / "meta.json")
    # gold tags asked for on sentences without any: parsed, with a warning, as the command warns
    # (from Python it was silent); none with tags, or without gold_tags
    from arborist.model import UntaggedInputWarning

    untagged = Sentence.from_columns(["I", "saw", "it", "."])
    with pytest.warns(UntaggedInputWarning, match="no UPOS"):
        pipeline.annotate(untagged, gold_tags=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UntaggedInputWarning)
        pipeline.annotate(untagged)
        pipeline.annotate(dev_set[0], gold_tags=True)
    # what is right still works, numpy's integers too (the first checks refused them)
    assert pipeline.annotate(dev_set[0]).heads is not None and Sentence.from_columns(["a", "b"]).n == 2
    assert len(list(pipeline.parse(dev_set[:3], batch_size=np.int64(2)))) == 3
    assert pipeline.annotate(dev_set[0], confidence=np.int64(2)).confidences["head"].top.shape[1] == 2
