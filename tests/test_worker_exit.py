"""`arborist parse --n-process 2` whose parent is killed: the workers end without tracebacks
(issue 28, item 9). Before arborist.batch._quiet_worker, each worker busy with a chunk
printed two BrokenPipeError tracebacks when it sent its result to the dead parent."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DEV = REPO / "corpora" / "sample" / "sample-dev.conllu"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs fork and Linux process semantics")


def test_killed_parent_leaves_no_worker_traceback(tiny_model, tmp_path):
    # Far more input than is parsed before the kill: the workers always have chunks queued.
    source = tmp_path / "big.conllu"
    source.write_bytes(SAMPLE_DEV.read_bytes() * 2000)  # ~480,000 words
    out_dir = tmp_path / "out"
    env = {**os.environ, "WANDB_MODE": "disabled"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from arborist.cli import app; app()", "parse", str(tiny_model), str(source),
         "--output-dir", str(out_dir), "--n-process", "2", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO, start_new_session=True)
    def written() -> bool:
        return any(p.stat().st_size for p in out_dir.glob(".big.conllu.tmp*")) if out_dir.is_dir() else False

    finished = False
    try:
        # Kill the parent once the first results are written: the workers are then busy
        # with the chunks after them, and each will try to send a result to the dead parent.
        deadline = time.monotonic() + 120
        while not written():
            assert process.poll() is None, "parse ended before it could be killed: " + process.stderr.read().decode()
            assert time.monotonic() < deadline, "no output after 120 s"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        # The workers hold the stderr pipe too: its end means every process has exited.
        _, err = process.communicate(timeout=60)
        finished = True
    finally:
        if not finished:  # the test failed with them alive: the parent's process group, workers too
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = err.decode("utf-8", "replace")
    assert process.returncode == -signal.SIGKILL
    assert "Traceback" not in text and "BrokenPipeError" not in text, text
    assert not (out_dir / "big.conllu").exists()  # only the killed run's temporary file
