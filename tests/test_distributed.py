"""Batch parsing on a local Ray cluster (2 CPUs): the same bytes as `arborist parse`, a
killed worker changes nothing, resume and unreadable inputs as in the one-process path."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install \"arborist[ray]\"")

from arborist.batch import parse_files, plan  # noqa: E402
from arborist.distributed import parse as parse_on_ray  # noqa: E402
from arborist.model import load  # noqa: E402

DEV = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-dev.conllu"
TEXT = ("The cat sat on the mat. It was warm!\n\nA second paragraph, with a comma; and more words.\n"
        "It goes on over two lines.\n\n\n\"Quotes\" (and brackets) - dashes... 3.5 kg, 40% off.\n")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def inputs(directory: Path, copies: int = 2) -> Path:
    directory.mkdir()
    (directory / "sub").mkdir()
    for k in range(copies):
        (directory / f"text{k}.txt").write_text(TEXT * (k + 1), encoding="utf-8")
        (directory / "sub" / f"gold{k}.conllu").write_bytes(DEV.read_bytes())
    return directory


def outputs(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def one_process(model, source: Path, target: Path, fmt: str = "conllu") -> tuple[dict[str, bytes], int]:
    """The outputs of `arborist parse` in this process, and the words it counted."""
    target.mkdir()
    report = parse_files(load(model), plan([source], target, fmt), fmt, model_path=model, progress=False)
    return outputs(target), report.words


@pytest.mark.parametrize("fmt", ["conllu", "json"])
def test_ray_writes_the_bytes_of_the_one_process_path(cluster, tiny_model, tmp_path, fmt):
    source = inputs(tmp_path / "in")
    expected, words = one_process(tiny_model, source, tmp_path / "local", fmt)
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", fmt, workers=2)
    assert report.exit_code == 0 and len(report.written) == 4 and not report.failed
    assert outputs(tmp_path / "ray") == expected
    assert report.words == words > 0
    again = parse_on_ray([source], tiny_model, tmp_path / "ray", fmt, workers=2)  # resume: nothing left to do
    assert len(again.skipped) == 4 and not again.written


def test_unreadable_inputs_are_reported_and_the_rest_parsed(cluster, tiny_model, tmp_path):
    source = inputs(tmp_path / "in", copies=1)
    (source / "binary.txt").write_bytes(b"abc\x00def\n")
    (source / "bad.conllu").write_text("1\tonly\tthree\n\n", encoding="utf-8")
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", workers=2)
    assert report.exit_code == 2
    failed = {p.name: message for p, message in report.failed}
    assert set(failed) == {"binary.txt", "bad.conllu"}
    assert "binary.txt:1" in failed["binary.txt"] and "bad.conllu:1" in failed["bad.conllu"]
    assert sorted(p.name for p in report.written) == ["gold0.conllu", "text0.txt"]
    assert not any(p.name.startswith(".") for p in (tmp_path / "ray").rglob("*"))  # no temporary files left


def test_a_killed_worker_changes_nothing(cluster, tiny_model, tmp_path):
    """SIGKILL one parsing actor mid-run: Ray restarts it and parses its file again; every
    output is complete and identical to the one-process path's."""
    import psutil

    source = tmp_path / "in"
    source.mkdir()
    for k in range(6):
        (source / f"gold{k}.conllu").write_bytes(DEV.read_bytes() * 12)
    expected, _ = one_process(tiny_model, source, tmp_path / "local")
    killed = []

    def kill_a_worker():
        deadline = time.time() + 60
        while time.time() < deadline and not killed:
            for process in psutil.process_iter(["pid", "cmdline"]):
                if "FileParser" in " ".join(process.info["cmdline"] or []):
                    time.sleep(0.5)  # mid-file
                    os.kill(process.info["pid"], signal.SIGKILL)
                    killed.append(process.info["pid"])
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", workers=2)
    killer.join()
    assert killed, "no worker was found to kill"
    assert report.exit_code == 0 and len(report.written) == 6
    assert outputs(tmp_path / "ray") == expected
