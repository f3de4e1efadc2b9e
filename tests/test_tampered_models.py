"""Tampered models and checkpoints (issue 28, items 5-6): every variant is refused with a
message naming the file, through `load` and the CLI, never a Python traceback, and no
variant executes code (pickled object arrays are never loaded)."""
from __future__ import annotations

import io
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from arborist.cli import app
from arborist.model import ModelError, load

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"
PWNED = "/tmp/arborist-pwned"


class Pwn:
    """Unpickling this writes a file: a tampered array must never be unpickled."""

    def __reduce__(self):
        return (Path(PWNED).write_text, ("pwned",))


def meta_edits():
    """(id, edit of the parsed meta.json)."""
    def entry(i, key, value):
        def edit(meta):
            meta["components"][i][key] = value
        return edit

    def structure(i, key, value):
        def edit(meta):
            meta["components"][i]["structure"][key] = value
        return edit

    def nested(depth):
        def edit(meta):  # written as text below: json.dumps itself cannot nest this deep
            meta["components"][0]["structure"]["templates"] = f"NESTED{depth}"
        return edit

    yield "components-not-a-list", lambda m: m.update(components={"a": 1})
    yield "components-list-of-strings", lambda m: m.update(components=["parser"])
    yield "components-null", lambda m: m.update(components=None)
    yield "format-version-string", lambda m: m.update(format_version="3")
    yield "format-version-99", lambda m: m.update(format_version=99)
    yield "format-missing", lambda m: m.pop("format")
    yield "info-a-list", lambda m: m.update(info=[1, 2])
    for i in range(4):
        yield f"kind-unknown-{i}", entry(i, "kind", "nope")
        yield f"kind-number-{i}", entry(i, "kind", 7)
        yield f"name-list-{i}", entry(i, "name", ["x"])
        yield f"name-path-{i}", entry(i, "name", "../x")
        yield f"structure-list-{i}", entry(i, "structure", [1])
        yield f"structure-null-{i}", entry(i, "structure", None)
        yield f"structure-no-name-{i}", structure(i, "@structures", None)
        yield f"structure-unknown-{i}", structure(i, "@structures", "arborist.Nope.v1")
        yield f"hash-bits-huge-{i}", structure(i, "hash_bits", 1e30)
        yield f"hash-bits-negative-{i}", structure(i, "hash_bits", -3)
        yield f"hash-bits-string-{i}", structure(i, "hash_bits", "22")
        yield f"hash-bits-float-{i}", structure(i, "hash_bits", 14.5)
        yield f"templates-integers-{i}", structure(i, "templates", [1, 2, 3])
        yield f"templates-empty-{i}", structure(i, "templates", [])
        yield f"unknown-argument-{i}", structure(i, "colour", "blue")
    yield "tags-not-strings", structure(0, "tags", [1, 2])
    yield "tags-duplicate", structure(0, "tags", ["NOUN", "NOUN"])
    yield "labels-not-strings", structure(3, "labels", [{"a": 1}])
    yield "attribute-unknown", structure(0, "attribute", "colour")
    yield "order-7", structure(0, "order", 7)
    yield "deep-nesting", nested(5000)
    yield "wrong-structure-for-kind", lambda m: m["components"][0].update(structure=m["components"][2]["structure"])


def array_edits():
    """(id, component file, writer of the tampered bytes)."""
    def save(array):
        def write(path):
            with open(path, "wb") as f:
                np.save(f, array, allow_pickle=True)
        return write

    def header_shape(path):
        data = path.read_bytes()
        path.write_bytes(data.replace(b"'shape': (", b"'shape': (7696581394432, ", 1))

    yield "zero-bytes", "parser.npy", lambda p: p.write_bytes(b"")
    yield "truncated", "parser.npy", lambda p: p.write_bytes(p.read_bytes()[:1000])
    yield "not-npy", "parser.npy", lambda p: p.write_text("hello")
    yield "pickled-object", "parser.npy", save(np.array([Pwn()], dtype=object))
    yield "pickled-object-vocabulary", "vocabulary.npy", save(np.array([Pwn()], dtype=object))
    yield "float32", "parser.npy", lambda p: np.save(p, np.load(p).astype(np.float32))
    yield "wrong-length", "parser.npy", lambda p: np.save(p, np.load(p)[:-1])
    yield "two-dimensional", "parser.npy", lambda p: np.save(p, np.load(p).reshape(2, -1))
    yield "nan", "parser.npy", lambda p: np.save(p, np.where(np.arange(len(np.load(p))) == 5, np.nan, np.load(p)))
    yield "inf", "upos.npy", lambda p: np.save(p, np.full_like(np.load(p), np.inf))
    yield "huge-shape-header", "parser.npy", header_shape
    yield "vocabulary-unsorted", "vocabulary.npy", lambda p: np.save(p, np.load(p)[::-1].copy())
    yield "vocabulary-float", "vocabulary.npy", lambda p: np.save(p, np.load(p).astype(np.float64))
    yield "missing-weights", "labeler.npy", lambda p: p.unlink()
    yield "meta-not-json", "meta.json", lambda p: p.write_text("{ not json")
    yield "meta-not-utf8", "meta.json", lambda p: p.write_bytes(b"\xff\xfe\x00")
    yield "meta-a-list", "meta.json", lambda p: p.write_text("[1]")
    yield "meta-unterminated", "meta.json", lambda p: p.write_text(p.read_text()[:-40])


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model


def tampered(model: Path, tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(model, target)
    return target


def refused(model: Path, what: str) -> None:
    with pytest.raises(ModelError) as info:
        load(model)
    assert str(model) in str(info.value), str(info.value)
    result = CliRunner().invoke(app, ["evaluate", str(model), str(SAMPLE / "sample-dev.conllu")])
    assert result.exit_code == 1, (what, result.output)
    assert "Traceback" not in result.output and "error:" in result.output and str(model) in result.output, \
        (what, result.output)


@pytest.mark.parametrize("name, edit", list(meta_edits()), ids=[n for n, _ in meta_edits()])
def test_tampered_meta_is_refused(model, tmp_path, name, edit):
    target = tampered(model, tmp_path)
    meta = json.loads((target / "meta.json").read_text())
    edit(meta)
    text = json.dumps(meta)
    if "NESTED" in text:
        depth = int(text.split('"NESTED')[1].split('"')[0])
        text = text.replace(f'"NESTED{depth}"', "[" * depth + "]" * depth)
    (target / "meta.json").write_text(text)
    refused(target, name)


@pytest.mark.parametrize("name, file, write", list(array_edits()), ids=[n for n, _, _ in array_edits()])
def test_tampered_arrays_are_refused_without_running_code(model, tmp_path, name, file, write):
    Path(PWNED).unlink(missing_ok=True)
    target = tampered(model, tmp_path)
    write(target / file)
    refused(target, name)
    assert not Path(PWNED).exists()


def test_there_are_at_least_sixty_variants():
    assert len(list(meta_edits())) + len(list(array_edits())) + len(CHECKPOINT_EDITS) >= 60


CHECKPOINT_EDITS = {
    "state-empty-object": lambda d: (d / "state.json").write_text("{}"),
    "state-a-list": lambda d: (d / "state.json").write_text("[1]"),
    "state-not-json": lambda d: (d / "state.json").write_text("{ nope"),
    "state-epoch-a-string": lambda d: (d / "state.json").write_text(
        json.dumps(dict(json.loads((d / "state.json").read_text()), epoch="2"))),
    "arrays-zero-bytes": lambda d: (d / "arrays.npz").write_bytes(b""),
    "arrays-truncated": lambda d: (d / "arrays.npz").write_bytes((d / "arrays.npz").read_bytes()[:500]),
    "arrays-empty": lambda d: np.savez(d / "arrays.npz"),
    "arrays-pickled": lambda d: np.savez(d / "arrays.npz", w=np.array([Pwn()], dtype=object)),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("checkpoint") / "run"
    result = CliRunner().invoke(app, ["train", str(Path(__file__).resolve().parents[1] / "configs" / "quickstart.cfg"),
                                      "--output", str(out), "--no-wandb", "--set", "training.max_epochs=1",
                                      "--set", "training.jackknife_folds=2"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("name", list(CHECKPOINT_EDITS))
def test_tampered_checkpoints_are_refused(run, tmp_path, name):
    Path(PWNED).unlink(missing_ok=True)
    out = tmp_path / "run"
    shutil.copytree(run, out)
    CHECKPOINT_EDITS[name](out / "checkpoint")
    result = CliRunner().invoke(app, ["train", str(Path(__file__).resolve().parents[1] / "configs" / "quickstart.cfg"),
                                      "--output", str(out), "--no-wandb", "--resume", "--set", "training.max_epochs=2",
                                      "--set", "training.jackknife_folds=2"])
    assert result.exit_code == 1, (name, result.output)
    assert "Traceback" not in result.output and "error:" in result.output and "checkpoint" in result.output, \
        (name, result.output)
    assert not Path(PWNED).exists()
