"""W&B tracking: an offline `arborist train` run, read back from its transaction log with
the wandb SDK's own record types (wandb.proto), not a fake run object."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arborist.cli import app

wandb = pytest.importorskip("wandb")
from wandb.proto import wandb_internal_pb2  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BLOCK = 32768  # the transaction log is a LevelDB-style log: 32 KiB blocks of framed chunks
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def read_records(path: Path) -> list:
    """Every wandb_internal_pb2.Record of a run-*.wandb file. wandb 0.31 writes these from its
    Go core and no longer ships a Python reader, so the framing is undone here: a 7-byte file
    header (':W&B', magic 0xBEE1, version 0), then chunks with a 7-byte header (crc32, length,
    type) that never straddle a 32 KiB block; FIRST/MIDDLE/LAST chunks make one record."""
    data = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, magic, version)
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # block trailer padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == FULL:
            records.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            records.append(pending + chunk)
            pending = b""
    out = []
    for raw in records:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        out.append(record)
    return out


def history(records) -> list[dict]:
    rows = []
    for record in records:
        if record.WhichOneof("record_type") == "history":
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                         for item in record.history.item})
    return rows


def run_files(output: Path) -> list[Path]:
    return sorted(output.glob("wandb/offline-run-*/run-*.wandb"))


def train(output: Path, *extra: str):
    result = CliRunner().invoke(app, ["train", "configs/quickstart.cfg", "--output", str(output), *extra])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


@pytest.fixture
def offline_run(offline, tmp_path):
    output = tmp_path / "run"
    train(output, "--set", "training.max_epochs=2", "--set", "tracking.name=\"quick\"",
          "--set", "tracking.tags=[\"test\", \"sample\"]")
    return output


def test_offline_run_history_has_every_components_epoch_metrics(offline_run):
    files = run_files(offline_run)
    assert len(files) == 1
    records = read_records(files[0])
    rows = history(records)
    keys = set().union(*rows)
    for component, dev in (("upos", "dev_upos"), ("xpos", "dev_xpos"), ("parser", "dev_uas"),
                           ("labeler", "dev_las")):
        for metric in (dev, "train_accuracy", "updates", "backoffs", "epoch_seconds", "examples_per_second",
                       "dev_words_per_second", "train_words_per_second", "epoch"):
            assert f"{component}/{metric}" in keys, (component, metric)
        epochs = [row[f"{component}/epoch"] for row in rows if f"{component}/epoch" in row]
        assert epochs == [1, 2]
    assert {"parser/dev_uas_nopunct", "labeler/dev_las_full", "upos/dev_upos_unseen"} <= keys
    # The logged values are the ones training.json reports.
    report = json.loads((offline_run / "training.json").read_text())
    logged = [row["parser/dev_uas"] for row in rows if "parser/dev_uas" in row]
    assert logged == pytest.approx([e["dev_uas"] for e in report["components"]["parser"]["history"]])


def test_offline_run_has_name_tags_config_summary_and_model_artifact(offline_run):
    records = read_records(run_files(offline_run)[0])
    kinds = [r.WhichOneof("record_type") for r in records]
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert run.display_name == "quick" and list(run.tags) == ["test", "sample"] and run.project == "arborist"
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["components"]["parser"]["structure"]["@structures"] == "arborist.DependencyTree.v1"
    assert config["training"]["max_epochs"] == 2  # the resolved config, --set values included
    summary = {}
    for record in records:
        if record.WhichOneof("record_type") == "summary":
            summary.update({item.key: json.loads(item.value_json) for item in record.summary.update})
    assert {"parser/best_dev_uas", "labeler/best_dev_las", "upos/best_epoch"} <= set(summary)
    assert "artifact" in kinds
    artifact = next(r.artifact for r in records if r.WhichOneof("record_type") == "artifact")
    assert artifact.type == "model"
    assert {"meta.json", "parser.npy", "labeler.npy"} <= {entry.path for entry in artifact.manifest.contents}


def test_no_wandb_and_the_config_switch_turn_it_off(offline, tmp_path):
    train(tmp_path / "a", "--set", "training.max_epochs=1", "--no-wandb")
    train(tmp_path / "b", "--set", "training.max_epochs=1", "--set", "tracking.wandb=false")
    assert not (tmp_path / "a" / "wandb").exists() and not (tmp_path / "b" / "wandb").exists()


def test_resume_continues_the_same_wandb_run(offline, tmp_path):
    output = tmp_path / "run"
    train(output, "--set", "training.max_epochs=1")
    train(output, "--set", "training.max_epochs=2", "--resume")
    files = run_files(output)
    assert len(files) == 2
    assert files[0].name == files[1].name  # run-<id>.wandb: one run id, continued
    resumed = history(read_records(files[1]))
    assert [row["labeler/epoch"] for row in resumed if "labeler/epoch" in row] == [2]


def test_bad_tracking_settings_are_refused(offline, tmp_path):
    result = CliRunner().invoke(app, ["train", "configs/quickstart.cfg", "--output", str(tmp_path / "x"),
                                      "--set", "tracking.colour=1"])
    assert result.exit_code != 0 and "unknown [tracking] setting(s): colour" in result.output


def test_eg_objectives_and_annealing_rows_are_logged(offline, tmp_path):
    """EG's primal, dual, gap, learning rate and halvings per epoch, and one row per C value
    when C-annealing moves on (a loose tolerance makes it move every epoch here)."""
    output = tmp_path / "eg"
    result = CliRunner().invoke(app, [
        "train", "configs/en_ewt_eg_crf.cfg", "--output", str(output),
        "--set", "paths.train=\"corpora/sample/sample-train.conllu\"",
        "--set", "paths.dev=\"corpora/sample/sample-dev.conllu\"",
        "--set", "training.max_epochs=3", "--set", "components.parser.structure.hash_bits=16",
        "--set", "components.parser.trainer.anneal_tolerance=10.0"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = history(read_records(run_files(output)[0]))
    keys = set().union(*rows)
    for metric in ("primal", "dual", "duality_gap", "relative_gap", "mean_eta", "halvings", "C", "dev_uas"):
        assert f"parser/{metric}" in keys, metric
    annealing = [row for row in rows if "parser/annealing/C" in row]
    report = json.loads((output / "training.json").read_text())["components"]["parser"]["annealing"]
    assert [row["parser/annealing/C"] for row in annealing] == [row["C"] for row in report]
    assert len(annealing) >= 2
