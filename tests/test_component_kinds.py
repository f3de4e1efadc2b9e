"""A component kind from outside the package (tests/toy_kind.py), registered through entry
points: `arborist train` trains it, `arborist evaluate` reports its metric, `arborist
parse` writes its column, and a pipeline made by `arborist package` runs it after
`spacy.load`, with no edit to the package. The CLI runs in subprocesses, whose
interpreters see the entry points at start-up (catalogue reads them once)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SAMPLE = TESTS.parent / "corpora" / "sample"

CONFIG = """
[components]

[components.toy]
kind = "toy_space_after"

[components.toy.structure]
@structures = "toy.SpaceAfter.v1"
hash_bits = 16

[components.toy.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0

[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 16

[components.parser.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0

[training]
train_path = "{train}"
dev_path = "{dev}"
max_epochs = 3
jackknife_folds = 0

[tracking]
wandb = false
"""


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """The entry points of a package that holds the toy kind, and a model trained with it."""
    root = tmp_path_factory.mktemp("toy")
    dist = root / "toy_kind-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-kind\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[arborist_components]\ntoy_space_after = toy_kind:SpaceAfterTagger\n\n"
        "[arborist_structures]\ntoy.SpaceAfter.v1 = toy_kind:make_space_after\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(TESTS)]), WANDB_MODE="disabled")
    config = root / "toy.cfg"
    config.write_text(CONFIG.format(train=SAMPLE / "sample-train.conllu", dev=SAMPLE / "sample-dev.conllu"))

    def arborist(*args, check=True):
        done = subprocess.run([sys.executable, "-m", "arborist.cli", *map(str, args)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert not check or done.returncode == 0, done.stderr[-3000:]
        return done

    train = arborist("train", config, "--output", root / "run")
    return root, env, arborist, train


def test_train_trains_the_outside_kind(toy_run):
    root, _, _, train = toy_run
    assert "toy: best epoch" in train.stderr
    meta = json.loads((root / "run" / "model-best" / "meta.json").read_text())
    toy = next(c for c in meta["components"] if c["name"] == "toy")
    assert toy["kind"] == "toy_space_after"
    assert toy["structure"] == {"@structures": "toy.SpaceAfter.v1", "hash_bits": 16}
    assert toy["trainer"]["@trainers"] == "arborist.Perceptron.v1"
    report = json.loads((root / "run" / "training.json").read_text())["components"]["toy"]
    assert report["kind"] == "toy_space_after" and report["key"] == "dev_misc"
    assert report["best"] > 80  # punctuation and the word before it decide most of it


def test_evaluate_reports_its_metric(toy_run):
    root, _, arborist, _ = toy_run
    scores = json.loads(arborist("evaluate", root / "run", SAMPLE / "sample-dev.conllu", "--json").stdout)
    report = json.loads((root / "run" / "training.json").read_text())["components"]["toy"]
    assert scores["misc"] == pytest.approx(report["best"])
    assert scores["uas"] > 50
    table = arborist("evaluate", root / "run", SAMPLE / "sample-dev.conllu").stdout
    assert "MISC accuracy" in table and "UAS" in table


def test_parse_writes_its_column(toy_run):
    root, _, arborist, _ = toy_run
    (root / "in").mkdir()
    (root / "in" / "dev.conllu").write_bytes((SAMPLE / "sample-dev.conllu").read_bytes())
    (root / "in" / "text.txt").write_text("The cat sat on the mat. It was warm, and happy.\n", encoding="utf-8")
    arborist("parse", root / "run", root / "in", "--output-dir", root / "out", "--no-progress")
    for name in ("dev.conllu", "text.conllu"):
        words = [line.split("\t") for line in (root / "out" / name).read_text().splitlines()
                 if line and not line.startswith("#")]
        assert words and all("PredSpaceAfter=" in w[9] for w in words if "-" not in w[0]), name
    parsed = (root / "out" / "dev.conllu").read_text().splitlines()
    gold = (SAMPLE / "sample-dev.conllu").read_text().splitlines()
    for p, g in zip(parsed, gold):  # the other MISC items are kept
        if p and not p.startswith("#") and "SpaceAfter=No" in g.split("\t")[9]:
            assert "SpaceAfter=No" in p.split("\t")[9].split("|")


def test_package_runs_it_after_spacy_load(toy_run):
    root, env, arborist, _ = toy_run
    arborist("package", root / "run", root / "pipeline")
    code = ("import spacy; nlp = spacy.load('pipeline'); doc = nlp('Hello, world. It works!'); "
            "print([t._.misc for t in doc]); print([t.head.i for t in doc])")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    misc = eval(done.stdout.splitlines()[0])
    assert len(misc) == 7 and all(m in ("PredSpaceAfter=Yes", "PredSpaceAfter=No") for m in misc)
    assert misc[0] == "PredSpaceAfter=No"  # "Hello" before ","
