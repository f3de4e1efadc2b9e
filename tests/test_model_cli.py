"""Tests for model save/load (arborist.model) and the command line (arborist.cli)."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import arborist.model as model_module
from arborist.cli import app
from arborist.corpus import read_conllu
from arborist import Parser
from arborist.model import FORMAT_VERSION, ModelError, Pipeline, load
from arborist.parser.tree import DependencyTree
from arborist.strings import hash_strings

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DEV = REPO / "corpora" / "sample" / "sample-dev.conllu"
HASH_BITS = 12


MODEL_FILES = ["meta.json", "parser.npy", "vocabulary.npy"]
VOCABULARY = ["the", "dog", "barks", "."]


def random_parser(seed: int = 0) -> Pipeline:
    """A pipeline of one parser component (named "parser") with random weights."""
    weights = np.random.default_rng(seed).normal(size=2**HASH_BITS)
    parser = Parser(DependencyTree(hash_bits=HASH_BITS), weights, {"note": f"seed {seed}"})
    return Pipeline({"parser": parser}, vocabulary=hash_strings(VOCABULARY), info={"seed": seed})


def dev_sentences():
    return list(read_conllu(SAMPLE_DEV, require_heads=True))


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def is_tree(heads: np.ndarray) -> bool:
    """heads[0] == -1, every word has a head in 0..n and reaches 0 without a cycle."""
    n = len(heads) - 1
    if heads[0] != -1 or not all(0 <= h <= n for h in heads[1:]):
        return False
    for start in range(1, n + 1):
        node, steps = start, 0
        while node != 0:
            node = heads[node]
            steps += 1
            if steps > n:
                return False
    return True


def output_of(result) -> str:
    """stdout and stderr of a CliRunner result."""
    text = result.output
    try:
        err = result.stderr
    except ValueError:  # older click: stderr mixed into output
        err = ""
    return text + ("" if err and err in text else err or "")


# ---------------------------------------------------------------------------
# 1. Save / load round trip
# ---------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    pipeline = random_parser()
    parser = pipeline.writer("head")
    target = tmp_path / "models" / "parser"
    returned = pipeline.save(target)
    assert Path(returned) == target
    assert listing(target) == MODEL_FILES

    loaded = load(target)
    assert isinstance(loaded, Pipeline)
    assert list(loaded.components) == ["parser"]
    assert loaded.taggers == []
    assert isinstance(loaded.writer("head"), Parser)
    np.testing.assert_array_equal(loaded.writer("head").weights.array, parser.weights.array)
    assert loaded.writer("head").weights.array.dtype == np.float64
    assert loaded.writer("head").structure.registry_call() == parser.structure.registry_call()
    assert loaded.writer("head").structure.hash_bits == HASH_BITS
    assert loaded.writer("head").info == {"note": "seed 0"}
    assert loaded.info == {"seed": 0}
    np.testing.assert_array_equal(loaded.vocabulary, np.sort(hash_strings(VOCABULARY)))

    sentences = dev_sentences()
    assert sentences
    for sentence in sentences:
        expected = parser.predict(sentence)
        got = loaded.writer("head").predict(sentence)
        np.testing.assert_array_equal(got, expected)
        assert got[0] == -1 and len(got) == sentence.n + 1
        assert is_tree(got)
        tagged, heads, _ = loaded.annotate(sentence)
        assert tagged is sentence  # no taggers: the input's own tags
        np.testing.assert_array_equal(heads, expected)

    weights = np.load(target / "parser.npy", allow_pickle=False)
    assert weights.shape == (2**HASH_BITS,)
    np.testing.assert_array_equal(weights, parser.weights.array)

    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    assert meta["format"] == "arborist-model"
    assert meta["format_version"] == FORMAT_VERSION == 3
    assert [(c["name"], c["kind"]) for c in meta["components"]] == [("parser", "parser")]
    assert meta["components"][0]["structure"]["hash_bits"] == HASH_BITS
    assert meta["components"][0]["info"] == {"note": "seed 0"}


def test_load_via_package_entry_point(tmp_path):
    import arborist

    random_parser(3).save(tmp_path / "m")
    assert isinstance(arborist.load(tmp_path / "m"), arborist.Pipeline)
    assert isinstance(arborist.load(str(tmp_path / "m")).writer("head"), arborist.Parser)


# ---------------------------------------------------------------------------
# 2. Loading errors
# ---------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path) -> Path:
    return random_parser().save(tmp_path / "model")


def test_load_missing_meta(saved):
    (saved / "meta.json").unlink()
    with pytest.raises(ModelError, match="no meta.json"):
        load(saved)


def test_load_missing_directory(tmp_path):
    with pytest.raises(ModelError, match="meta.json"):
        load(tmp_path / "does-not-exist")


def test_load_wrong_format_version(saved):
    meta_path = saved / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["format_version"] = FORMAT_VERSION + 98
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelError) as info:
        load(saved)
    message = str(info.value)
    assert f"format version {FORMAT_VERSION + 98}" in message
    assert f"reads versions 1 to {FORMAT_VERSION}" in message
    assert str(meta_path) in message


def test_load_wrong_format(saved):
    meta_path = saved / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["format"] = "something-else"
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelError, match="not an arborist model"):
        load(saved)


def test_load_unreadable_meta(saved):
    (saved / "meta.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelError, match="unreadable meta.json"):
        load(saved)


@pytest.mark.parametrize("shape", [(2**HASH_BITS - 1,), (2**(HASH_BITS + 1),), (2, 2**(HASH_BITS - 1))])
def test_load_wrong_weights_shape(saved, shape):
    np.save(saved / "parser.npy", np.zeros(shape), allow_pickle=False)
    with pytest.raises(ModelError) as info:
        load(saved)
    message = str(info.value)
    assert str(saved / "parser.npy") in message
    assert str(shape) in message
    assert f"hash_bits {HASH_BITS}" in message


def test_load_missing_weights(saved):
    (saved / "parser.npy").unlink()
    with pytest.raises(ModelError, match="cannot read weights"):
        load(saved)


def test_load_pickled_weights_refused(saved):
    np.save(saved / "parser.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ModelError, match="cannot read weights"):
        load(saved)


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param("[]", id="json-list"),
        pytest.param('{"format": "arborist-model", "format_version": 1, "kind": "parser"}', id="no-structure"),
        pytest.param(
            '{"format": "arborist-model", "format_version": 1, "kind": "parser", "structure": {}}',
            id="empty-structure",
        ),
        pytest.param('{"format": "arborist-model", "format_version": 2}', id="v2-no-components"),
        pytest.param('{"format": "arborist-model", "format_version": 2, "components": {"parser": {}}}',
                     id="v2-components-not-a-list"),
        pytest.param('{"format": "arborist-model", "format_version": 2, "components": ["parser"]}',
                     id="v2-component-not-an-object"),
        pytest.param('{"format": "arborist-model", "format_version": 2, '
                     '"components": [{"name": "parser", "kind": "parser"}]}', id="v2-no-structure"),
        pytest.param('{"format": "arborist-model", "format_version": 2, '
                     '"components": [{"name": "parser", "kind": "parser", "structure": {}}]}',
                     id="v2-empty-structure"),
    ],
)
def test_load_malformed_meta_gives_model_error(saved, meta):
    (saved / "meta.json").write_text(meta, encoding="utf-8")
    with pytest.raises(ModelError):
        load(saved)


# ---------------------------------------------------------------------------
# 3. Atomic save
# ---------------------------------------------------------------------------
def test_save_over_existing_model_replaces_it(tmp_path):
    parent = tmp_path / "models"
    target = parent / "parser"
    first, second = random_parser(1), random_parser(2)
    first.save(target)
    second.save(target)
    loaded = load(target)
    np.testing.assert_array_equal(loaded.writer("head").weights.array, second.writer("head").weights.array)
    assert loaded.writer("head").info == {"note": "seed 2"}
    assert listing(parent) == ["parser"]  # no temporary or '.old' directories left
    assert listing(target) == MODEL_FILES
    # A third save over it, with a stale extra file in the old model, removes the file too.
    (target / "stale.txt").write_text("x")
    first.save(target)
    assert listing(target) == MODEL_FILES
    assert listing(parent) == ["parser"]
    np.testing.assert_array_equal(load(target).writer("head").weights.array, first.writer("head").weights.array)


def test_failed_save_keeps_previous_model(tmp_path, monkeypatch):
    parent = tmp_path / "models"
    target = parent / "parser"
    first, second = random_parser(1), random_parser(2)
    first.save(target)
    before = {name: (target / name).read_bytes() for name in listing(target)}

    def failing_save(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError, match="simulated"):
        second.save(target)
    monkeypatch.undo()

    assert listing(parent) == ["parser"]
    assert {name: (target / name).read_bytes() for name in listing(target)} == before
    loaded = load(target)
    np.testing.assert_array_equal(loaded.writer("head").weights.array, first.writer("head").weights.array)


def test_failed_first_save_leaves_nothing(tmp_path, monkeypatch):
    parent = tmp_path / "models"
    parent.mkdir()

    def failing_save(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError):
        random_parser().save(parent / "parser")
    monkeypatch.undo()
    assert listing(parent) == []


def test_failed_final_rename_keeps_previous_model(tmp_path, monkeypatch):
    parent = tmp_path / "models"
    target = parent / "parser"
    first = random_parser(1)
    first.save(target)
    real_replace = os.replace

    def flaky_replace(src, dst):
        # the new model's rename fails; moving the previous model back still works
        if Path(dst) == target and ".old" not in Path(src).name:
            raise OSError("rename failed (simulated)")
        return real_replace(src, dst)

    monkeypatch.setattr(model_module.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="simulated"):
        random_parser(2).save(target)
    monkeypatch.undo()

    loaded = load(target)
    np.testing.assert_array_equal(loaded.writer("head").weights.array, first.writer("head").weights.array)
    assert listing(parent) == ["parser"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_saved_model_directory_has_default_permissions(tmp_path):
    parent = tmp_path / "models"
    parent.mkdir()
    reference = parent / "reference"
    reference.mkdir()
    saved = random_parser().save(parent / "parser")
    assert stat.S_IMODE(saved.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode)


# ---------------------------------------------------------------------------
# 4. Command line
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, runner):
    """Train the quickstart config for 2 epochs once; returns (model dir, CliRunner result)."""
    out = tmp_path_factory.mktemp("cli") / "quick-model"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        result = runner.invoke(
            app, ["train", "configs/quickstart.cfg", "--output", str(out), "--set", "training.max_epochs=2"]
        )
    assert result.exit_code == 0, output_of(result) + repr(result.exception)
    return out, result


def test_cli_train_writes_loadable_model(trained):
    model_dir, result = trained
    assert listing(model_dir) == ["checkpoint", "model-best", "training.json"]
    assert listing(model_dir / "model-best") == ["labeler.npy", "meta.json", "parser.npy", "upos.npy",
                                                 "vocabulary.npy", "xpos.npy"]
    assert listing(model_dir.parent) == [model_dir.name]
    pipeline = load(model_dir)  # a run directory loads as its model-best
    best = load(model_dir / "model-best")
    assert list(pipeline.components) == list(best.components) == ["upos", "xpos", "parser", "labeler"]
    for name, component in pipeline.components.items():
        assert np.array_equal(component.weights.array, best.components[name].weights.array), name
    parser = pipeline.writer("head")
    assert parser is pipeline.components["parser"]
    assert parser.structure.hash_bits == 18  # from configs/quickstart.cfg
    assert [t.attribute for t in pipeline.taggers] == ["upos", "xpos"]
    assert parser.info["best_epoch"] in (1, 2)
    assert "dev_uas" in parser.info["dev"]
    assert "dev_upos" in pipeline.components["upos"].info["dev"]
    labeler = pipeline.writer("deprel")
    assert labeler is pipeline.components["labeler"] and labeler.info["best_epoch"] in (1, 2)
    assert {"dev_las", "dev_las_full", "dev_uas"} <= set(labeler.info["dev"])
    # The label set (full DEPREL strings) is the training data's, saved with the model.
    from arborist.corpus import read_corpus

    train_labels = {d for x in read_corpus(REPO / "corpora/sample/sample-train.conllu") for d in x.deprels[1:]}
    assert set(labeler.label_set) == train_labels and "nmod:poss" in train_labels
    assert labeler.info["dev"]["dev_uas"] == pytest.approx(parser.info["dev"]["dev_uas"])  # the parser's trees
    assert "max_epochs = 2" in pipeline.info["config"]
    # one line per component
    lines = [line for line in output_of(result).splitlines() if "best epoch" in line]
    assert [line.split(":")[0] for line in lines] == ["upos", "xpos", "parser", "labeler"]
    assert "dev_upos" in lines[0] and "dev_xpos" in lines[1] and "dev_uas" in lines[2] and "dev_las" in lines[3]


def test_cli_evaluate_json(trained, runner, monkeypatch):
    model_dir, _ = trained
    monkeypatch.chdir(REPO)
    result = runner.invoke(app, ["evaluate", str(model_dir), "corpora/sample/sample-dev.conllu", "--json"])
    assert result.exit_code == 0, output_of(result)
    scores = json.loads(result.stdout)
    # the official scorer's table of `arborist parse`'s output of the same file: the same figures
    official = scores.pop("conll18")
    for ours, metric in (("upos", "UPOS"), ("xpos", "XPOS"), ("uas", "UAS"), ("las", "LAS")):
        assert scores[ours] == pytest.approx(official[metric]["f1"]), metric
    # a model without a lemmatizer or a morphologizer predicts no lemmas and FEATS: those columns
    # are empty in what is scored, not the gold file's own (which scored 100)
    assert official["Lemmas"]["f1"] < 50 and official["UFeats"]["f1"] < 90
    for key in ("uas", "uas_nopunct", "exact_match", "upos", "upos_unseen", "xpos", "xpos_unseen", "las",
                "las_nopunct", "las_full"):
        assert key in scores
        assert 0.0 <= scores[key] <= 100.0
    assert scores["uas"] > 50
    assert scores["upos"] > 50
    assert scores["las_full"] <= scores["las"] <= scores["uas"]
    assert scores["las"] > 30
    sentences = dev_sentences()
    assert scores["sentences"] == len(sentences)
    assert scores["words"] == sum(s.n for s in sentences)
    # The CLI reports what the library computes: tags by the taggers, heads from the predicted tags.
    from arborist.evaluate import attachment_scores, tag_scores

    pipeline = load(model_dir)
    annotated = list(pipeline.parse(sentences))
    expected = attachment_scores((gold, heads, deprels) for gold, (_, heads, deprels) in zip(sentences, annotated))
    expected.update(tag_scores(
        ((gold, {"upos": tagged.upos[1:], "xpos": tagged.xpos[1:]}) for gold, (tagged, _, _) in zip(sentences, annotated)),
        pipeline.unseen))
    assert scores == pytest.approx(expected)


def test_cli_evaluate_table(trained, runner, monkeypatch):
    model_dir, _ = trained
    monkeypatch.chdir(REPO)
    result = runner.invoke(app, ["evaluate", str(model_dir), "corpora/sample/sample-dev.conllu"])
    assert result.exit_code == 0, output_of(result)
    assert "UAS" in result.stdout and "exact match" in result.stdout
    assert "UPOS accuracy" in result.stdout and "XPOS unseen words" in result.stdout
    assert "UAS (predicted tags)" in result.stdout
    assert "LAS (universal labels)" in result.stdout and "LAS (full labels)" in result.stdout
    assert re.search(r"\d+ words \([1-9]\d* unseen in training\)", result.stdout)
    assert "the CoNLL 2018 scorer" in result.stdout and re.search(r"\nMLAS +\d+\.\d\d +\d+\.\d\d", result.stdout)
    assert " -> " not in output_of(result)  # no line about the scorer's temporary files
    # with the file's own tags nothing is tagged: no count of unseen words (it said 0)
    result = runner.invoke(app, ["evaluate", str(model_dir), "corpora/sample/sample-dev.conllu", "--gold-tags"])
    assert result.exit_code == 0 and "unseen in training" not in result.stdout and " words, " in result.stdout


def test_cli_parse_writes_valid_trees(trained, runner, monkeypatch, tmp_path):
    model_dir, _ = trained
    monkeypatch.chdir(REPO)
    out_dir = tmp_path / "parsed"
    result = runner.invoke(
        app, ["parse", str(model_dir), "corpora/sample/sample-dev.conllu", "--output-dir", str(out_dir)]
    )
    assert result.exit_code == 0, output_of(result)
    written = out_dir / "sample-dev.conllu"
    assert listing(out_dir) == ["sample-dev.conllu"]
    parsed = list(read_conllu(written, require_heads=True))
    gold = dev_sentences()
    assert len(parsed) == len(gold)
    for p, g in zip(parsed, gold):
        assert p.forms == g.forms
        assert is_tree(p.heads)
        assert int((p.heads[1:] == 0).sum()) == 1  # quickstart.cfg: single_root = true
    pipeline = load(model_dir)
    for p in parsed:
        assert set(p.deprels[1:]) <= set(pipeline.writer("deprel").label_set)
    assert [p.deprels for p in parsed] == [pipeline.annotate(g)[2] for g in gold]  # DEPREL is the labeler's
    # Only the UPOS, XPOS (predicted tags), HEAD and DEPREL columns differ from the input.
    original = SAMPLE_DEV.read_bytes().splitlines(keepends=True)
    new = written.read_bytes().splitlines(keepends=True)
    assert len(original) == len(new)
    for old_line, new_line in zip(original, new):
        old_cols, new_cols = old_line.split(b"\t"), new_line.split(b"\t")
        assert len(old_cols) == len(new_cols)
        if len(old_cols) == 10:
            keep = [0, 1, 2, 5, 8, 9]
            assert [old_cols[i] for i in keep] == [new_cols[i] for i in keep]
        else:
            assert old_line == new_line


def test_cli_parse_raw_input_without_heads(trained, runner, tmp_path):
    model_dir, _ = trained
    raw = tmp_path / "raw.conllu"
    lines = []
    for line in SAMPLE_DEV.read_text(encoding="utf-8").splitlines(keepends=True):
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            cols[6], cols[7] = "_", "_"
        lines.append("\t".join(cols))
    raw.write_text("".join(lines), encoding="utf-8")
    out_dir = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(model_dir), str(raw), "--output-dir", str(out_dir)])
    assert result.exit_code == 0, output_of(result)
    parsed = list(read_conllu(out_dir / "raw.conllu", require_heads=True))
    assert len(parsed) == len(dev_sentences())
    assert all(is_tree(s.heads) for s in parsed)


def malformed_dev(tmp_path) -> tuple[Path, int]:
    """The sample dev file with a non-integer HEAD on one word line; returns (path, line)."""
    lines = SAMPLE_DEV.read_text(encoding="utf-8").splitlines(keepends=True)
    word_lines = [i for i, line in enumerate(lines) if line.split("\t")[0].isdigit()]
    index = word_lines[len(word_lines) // 2]
    cols = lines[index].split("\t")
    cols[6] = "seven"
    lines[index] = "\t".join(cols)
    path = tmp_path / "bad-dev.conllu"
    path.write_text("".join(lines), encoding="utf-8")
    return path, index + 1


def test_cli_evaluate_malformed_file(trained, runner, tmp_path):
    model_dir, _ = trained
    bad, line = malformed_dev(tmp_path)
    result = runner.invoke(app, ["evaluate", str(model_dir), str(bad), "--json"])
    assert result.exit_code != 0
    assert f"{bad}:{line}:" in output_of(result)
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_parse_malformed_file_writes_nothing(trained, runner, tmp_path):
    model_dir, _ = trained
    bad, line = malformed_dev(tmp_path)
    out_dir = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(model_dir), str(bad), "--output-dir", str(out_dir)])
    assert result.exit_code != 0
    assert f"{bad}:{line}:" in output_of(result)
    assert listing(out_dir) == []


def test_cli_evaluate_not_a_model(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["evaluate", str(empty), "corpora/sample/sample-dev.conllu"])
    assert result.exit_code != 0
    assert "meta.json" in output_of(result)


@pytest.mark.parametrize("pair", ["training.max_epochs", "max_epochs=2"])
def test_cli_train_bad_set(runner, monkeypatch, tmp_path, pair):
    monkeypatch.chdir(REPO)
    out = tmp_path / "never"
    result = runner.invoke(app, ["train", "configs/quickstart.cfg", "--output", str(out), "--set", pair])
    assert result.exit_code != 0
    assert "--set expects section.key=value" in output_of(result)
    assert not out.exists()


def test_cli_train_zero_epochs_does_not_claim_a_model(runner, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    out = tmp_path / "zero"
    result = runner.invoke(
        app, ["train", "configs/quickstart.cfg", "--output", str(out), "--set", "training.max_epochs=0"]
    )
    assert result.exit_code != 0 or out.exists(), output_of(result)


def test_average_never_replaces_what_it_was_not_asked_to(trained, runner, tmp_path):
    """`arborist average -o` replaced whatever was there: a directory of the user's, one of
    the models being averaged (its checkpoint and training.json gone), or a file, moved aside
    to a hidden name while the command said it failed. Now an output that exists needs
    --overwrite, one of the inputs (or a directory holding one, or inside one) is refused, and
    so is a file; `package` and every model write (`write_directory`) refuse a file too."""
    from arborist.model import load, write_directory

    model_dir, _ = trained
    other = tmp_path / "other"
    shutil.copytree(model_dir, other)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for output, extra, message in ((mine, [], "exists (--overwrite replaces it)"),
                                   (other, ["--overwrite"], "an input"), (tmp_path, ["--overwrite"], "an input"),
                                   (other / "sub", ["--overwrite"], "an input"), (afile, ["--overwrite"], "not a directory")):
        result = runner.invoke(app, ["average", str(model_dir), str(other), "-o", str(output), *extra])
        assert result.exit_code == 1 and message in output_of(result), (output, output_of(result))
    assert (mine / "notes.txt").read_text() == "mine\n" and afile.read_text() == "mine\n"
    assert sorted(p.name for p in other.iterdir()) == sorted(p.name for p in Path(model_dir).iterdir())
    result = runner.invoke(app, ["average", str(model_dir), str(other), "-o", str(mine), "--overwrite"])
    assert result.exit_code == 0 and (mine / "meta.json").exists()
    result = runner.invoke(app, ["package", str(model_dir), str(afile), "--overwrite"])
    assert result.exit_code == 1 and "not a directory" in output_of(result) and afile.read_text() == "mine\n"
    with pytest.raises(NotADirectoryError):
        write_directory(afile, lambda tmp: None)
    assert afile.read_text() == "mine\n" and not list(tmp_path.glob(".afile*"))


def test_a_model_whose_language_spacy_cannot_make_is_a_clean_error(trained, runner, tmp_path):
    """A language spaCy cannot make here (no such language, or one needing a library), or a
    meta.json whose training config is damaged: parse and package name the model, no traceback."""
    model_dir, _ = trained
    def zz(config: str) -> str:
        without = re.sub(r"\[nlp\]\nlang = \S+\n", "", config)
        return without + '\n[nlp]\nlang = "zz"\n'

    for name, config in (("zz", zz), ("bad", lambda c: "[[[not a config")):
        broken = tmp_path / name
        shutil.copytree(Path(model_dir) / "model-best", broken)
        meta = json.loads((broken / "meta.json").read_text())
        meta["info"]["config"] = config(meta["info"].get("config") or "")
        (broken / "meta.json").write_text(json.dumps(meta))
        (tmp_path / "t.txt").write_text("Hello there.\n")
        for args in (["parse", str(broken), str(tmp_path / "t.txt")], ["package", str(broken), str(tmp_path / "p")]):
            result = runner.invoke(app, args)
            assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (args, output_of(result))
            assert (f"{broken}: language 'zz'" if name == "zz" else f"{broken / 'meta.json'}: info.config") in \
                output_of(result)


def test_a_model_a_killed_write_left_aside_is_named(trained, runner, tmp_path):
    """Killed between moving model-best aside and renaming the new one in, a write leaves the
    complete previous model as `.model-best.old<pid>`: `train --resume` puts it back; every
    other reader said only that there was no model. It now names the leftover, and moves
    nothing (a reader cannot tell a killed writer from a live one in another PID namespace)."""
    import subprocess
    import sys

    from arborist.model import load

    model_dir, _ = trained
    run = tmp_path / "run"
    shutil.copytree(model_dir, run)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (run / "model-best").rename(run / f".model-best.old{int(dead.stdout)}")
    result = runner.invoke(app, ["evaluate", str(run), str(REPO / "corpora" / "sample" / "sample-dev.conllu")])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    left = run / f".model-best.old{int(dead.stdout)}"
    assert f"a write killed midway left the previous model in {left} (move it back to {run / 'model-best'})" in \
        " ".join(output_of(result).split())
    assert left.is_dir() and not (run / "model-best").exists()  # nothing moved
    left.rename(run / "model-best")
    assert load(run).components.keys() == load(model_dir).components.keys()


def test_train_says_what_it_does_with_the_language_and_without_an_output(runner, tmp_path):
    """Without --output nothing is saved: said before training; the language note prints as
    text (Rich read "[nlp]" as markup and dropped it)."""
    sample = REPO / "corpora" / "sample"
    train_file = tmp_path / "it_sample-ud-train.conllu"
    shutil.copy(sample / "sample-train.conllu", train_file)
    result = runner.invoke(app, ["train", str(REPO / "configs" / "quickstart.cfg"), "--no-wandb",
                                 "--set", f"paths.train={train_file}", "--set", f"paths.dev={sample / 'sample-dev.conllu'}",
                                 "--set", "training.max_epochs=1", "--set", "training.jackknife_folds=0"])
    assert result.exit_code == 0, output_of(result)
    assert "warning: no --output: the model is trained and not saved" in output_of(result)
    assert "[nlp] lang sets another" in " ".join(output_of(result).split())
