"""Clean `file: error` messages instead of tracebacks (issue 28, items 5-6)."""
from __future__ import annotations

import errno
from pathlib import Path

from typer.testing import CliRunner

from arborist.cli import app

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"


def test_unknown_language(tiny_model, tmp_path):
    (tmp_path / "a.txt").write_text("Hello there.\n")
    result = CliRunner().invoke(app, ["parse", str(tiny_model), str(tmp_path / "a.txt"), "-d", str(tmp_path / "out"),
                                      "--lang", "zz"])
    assert result.exit_code == 1 and "--lang zz: spaCy has no language 'zz'" in result.output
    assert "Traceback" not in result.output


def test_full_disk_while_parsing(tiny_model, tmp_path, monkeypatch):
    import arborist.batch

    def full(self, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.tmp))

    monkeypatch.setattr(arborist.batch._Output, "write", full)
    (tmp_path / "a.txt").write_text("Hello there.\n")
    result = CliRunner().invoke(app, ["parse", str(tiny_model), str(tmp_path / "a.txt"), "-d", str(tmp_path / "out"),
                                      "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "No space left on device (the disk is full)" in result.output and "Traceback" not in result.output


def test_read_only_package_target(tiny_model, tmp_path, monkeypatch):
    import arborist.model

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "pkg"))

    monkeypatch.setattr(arborist.model.tempfile, "mkdtemp", read_only)
    result = CliRunner().invoke(app, ["package", str(tiny_model), str(tmp_path / "pkg")])
    assert result.exit_code == 1 and "(the filesystem is read-only)" in result.output, result.output


def test_a_one_sentence_training_file_is_refused_before_training(tmp_path):
    one = tmp_path / "one.conllu"
    one.write_text((SAMPLE / "sample-train.conllu").read_text().split("\n\n")[0] + "\n\n")
    result = CliRunner().invoke(app, ["train", str(REPO / "configs" / "quickstart.cfg"), "--set",
                                      f"paths.train={one}", "--output", str(tmp_path / "run"), "--no-wandb"])
    assert result.exit_code == 1
    assert "1 training sentences, fewer than training.jackknife_folds = 5" in result.output
    assert not (tmp_path / "run" / "model-best").exists()
