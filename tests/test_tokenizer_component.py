"""The tokenizer as the first component of a raw-text pipeline: trained by `arborist train`,
saved and loaded with its multiword expander, and used by `arborist parse` on text, whose
CoNLL-U the official CoNLL 2018 scorer accepts and scores against the gold file."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arborist.cli import app
from arborist.corpus import read_corpus
from arborist.model import load

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"
TOOLS = REPO.parent / "shared" / "tools"
TOKENIZER = """
[components.tokenizer]

[components.tokenizer.structure]
@structures = "arborist.Tokenizer.v1"
hash_bits = 16

[components.tokenizer.trainer]
@trainers = "arborist.MarginPerceptron.v1"
margin = 100.0
seed = 0
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("tokenizer")
    text = (REPO / "configs" / "quickstart.cfg").read_text().replace("[components]\n", "[components]\n" + TOKENIZER, 1)
    (root / "raw.cfg").write_text(text)
    result = CliRunner().invoke(app, ["train", str(root / "raw.cfg"), "--output", str(root / "run"), "--no-wandb",
                                      "--set", f"paths.train={SAMPLE / 'sample-train.conllu'}",
                                      "--set", f"paths.dev={SAMPLE / 'sample-dev.conllu'}",
                                      "--set", "training.max_epochs=3", "--set", "training.jackknife_folds=2"])
    assert result.exit_code == 0, result.output
    return root


def test_trained_first_and_kept_out_of_the_sentence_stages(run):
    pipeline = load(run / "run")
    assert list(pipeline.components)[0] == "tokenizer"
    assert all(c.name != "tokenizer" for c in pipeline.stage())
    report = json.loads((run / "run" / "training.json").read_text())["components"]["tokenizer"]
    assert report["kind"] == "tokenizer" and report["key"] == "dev_words_f1" and report["best"] > 90
    docs = pipeline.tokenize(["The baker ate a pie. It was good.\n\nNew paragraph."])
    (doc, sentences), = docs
    assert [[t.form for t in s.tokens] for s in doc.sentences][0][:4] == ["The", "baker", "ate", "a"]
    assert sum(x.n for x in sentences) == sum(len(s.words) for s in doc.sentences)


@pytest.mark.skipif(not (TOOLS / "conll18_ud_eval.py").exists(), reason="needs ../shared/tools")
def test_parse_on_text_passes_the_official_scorer(run, tmp_path):
    gold = SAMPLE / "sample-dev.conllu"
    (tmp_path / "in").mkdir()
    raw = tmp_path / "in" / "dev.txt"
    subprocess.run([sys.executable, str(TOOLS / "ud_raw_text.py"), str(gold), str(raw)], check=True,
                   capture_output=True)
    result = CliRunner().invoke(app, ["parse", str(run / "run"), str(raw), "-d", str(tmp_path / "out"),
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    output = tmp_path / "out" / "dev.conllu"
    read_corpus(output, require_heads=True)  # valid CoNLL-U by arborist's own reader
    score = subprocess.run([sys.executable, str(TOOLS / "conll18_ud_eval.py"), "-v", str(gold), str(output)],
                           capture_output=True, text=True)
    assert score.returncode == 0, score.stderr
    rows = {line.split("|")[0].strip(): line.split("|") for line in score.stdout.splitlines() if "|" in line}
    assert float(rows["Tokens"][3]) > 95 and float(rows["Sentences"][3]) > 80 and float(rows["UAS"][3]) > 50
