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


def _parse_big_input(model, tmp_path) -> tuple[subprocess.Popen, Path]:
    """`arborist parse -n 2` of far more input than is parsed before a kill (the workers always
    have chunks queued), in its own session; (process, output directory)."""
    source = tmp_path / "big.conllu"
    source.write_bytes(SAMPLE_DEV.read_bytes() * 2000)  # ~480,000 words
    out_dir = tmp_path / "out"
    env = {**os.environ, "WANDB_MODE": "disabled"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from arborist.cli import app; app()", "parse", str(model), str(source),
         "--output-dir", str(out_dir), "--n-process", "2", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO, start_new_session=True)
    return process, out_dir


def test_killed_parent_leaves_no_worker_traceback(tiny_model, tmp_path):
    process, out_dir = _parse_big_input(tiny_model, tmp_path)

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


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def test_a_worker_killed_mid_run_stops_the_run_with_an_error(tiny_model, tmp_path):
    """A worker killed during `arborist parse -n 2` (the kernel's out-of-memory killer does
    this) loses the chunk it held, and Pool never says so: the run used to wait for it for
    ever. Now it stops within seconds with status 1 and a message, and leaves no half file."""
    process, out_dir = _parse_big_input(tiny_model, tmp_path)
    finished = False
    try:
        deadline = time.monotonic() + 120
        while not (out_dir.is_dir() and any(p.stat().st_size for p in out_dir.glob(".big.conllu.tmp*"))):
            assert process.poll() is None, "parse ended before a worker could be killed: " + process.stderr.read().decode()
            assert time.monotonic() < deadline, "no output after 120 s"
            time.sleep(0.05)
        workers = _children(process.pid)
        assert len(workers) >= 2, workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = process.communicate(timeout=60)
        finished = True
    finally:
        if not finished:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = err.decode("utf-8", "replace")
    assert process.returncode == 1, text
    assert "a worker process died during the run, killed by SIGKILL" in text and "Traceback" not in text, text
    assert not list(out_dir.glob("*big.conllu*"))  # neither a final nor a temporary file


ABANDON_SCRIPT = """
import os, struct, sys, time
import multiprocessing
from arborist.batch import WorkerLost, _WorkerPool

def die_mid_result():
    # Write the start of a result message on the pool's result pipe, then die: what a worker
    # killed while sending a large result leaves behind.
    frame = sys._getframe()
    while 'outqueue' not in frame.f_locals:
        frame = frame.f_back
    os.write(frame.f_locals['outqueue']._writer.fileno(), struct.pack('!i', 1 << 20) + b'partial')
    os._exit(1)

pool = _WorkerPool(2, context=multiprocessing.get_context('fork'))
pool.apply_async(die_mid_result)
deadline = time.monotonic() + 30
while True:
    try:
        pool.check_workers()
    except WorkerLost as e:
        print('lost:', e, flush=True)
        break
    assert time.monotonic() < deadline, 'no worker death seen'
    time.sleep(0.05)
pool.abandon()
print('abandoned', flush=True)
"""


def test_abandon_does_not_wait_on_a_half_sent_result(tmp_path):
    """`_WorkerPool.abandon` (the early-end path) returns, and the process exits, although a
    dead worker left half a result in the result pipe, where Pool.terminate() waits for the
    rest for ever; `check_workers` sees the death (exit status 1)."""
    (tmp_path / "abandon.py").write_text(ABANDON_SCRIPT)
    result = subprocess.run([sys.executable, str(tmp_path / "abandon.py")], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "lost: a worker process died during the run, exit status 1" in result.stdout
    assert result.stdout.rstrip().endswith("abandoned")


AFTER_LAST_RESULT_SCRIPT = """
import os, signal, sys, time
import arborist.batch as batch
from arborist.cli import app

run = batch._run

def run_then_kill_the_workers(jobs, fmt, lang, pool, *args):
    run(jobs, fmt, lang, pool, *args)
    # Every result is in; the idle workers wait for tasks, one of them holding the task
    # pipe's read lock. They die (the out-of-memory killer picks one, here all of them).
    for p in pool._pool:
        os.kill(p.pid, signal.SIGKILL)
    time.sleep(0.5)

batch._run = run_then_kill_the_workers
app(sys.argv[1:])
"""


def test_workers_dead_after_the_last_result_do_not_hang_the_end(tiny_model, tmp_path):
    """Workers that die once every result is in (idle, one holding the task pipe's read lock)
    must not hang the end of the run: Pool.terminate() waits for that lock for ever. The run's
    outputs are complete, so it succeeds."""
    (tmp_path / "run.py").write_text(AFTER_LAST_RESULT_SCRIPT)
    result = subprocess.run([sys.executable, str(tmp_path / "run.py"), "parse", str(tiny_model), str(SAMPLE_DEV),
                             "--output-dir", str(tmp_path / "out"), "--n-process", "2", "--no-progress"],
                            capture_output=True, text=True, timeout=120, cwd=REPO,
                            env={**os.environ, "WANDB_MODE": "disabled"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "sample-dev.conllu").read_bytes().count(b"\n\n") == SAMPLE_DEV.read_bytes().count(b"\n\n")


def test_worker_lost_says_how_the_worker_died():
    from arborist.batch import WorkerLost

    assert "killed by SIGKILL (out of memory?)" in str(WorkerLost(-signal.SIGKILL))
    assert "killed by SIGTERM:" in str(WorkerLost(-signal.SIGTERM))
    assert "killed by signal 40:" in str(WorkerLost(-40))  # a real-time signal has no name
    assert "exit status 3:" in str(WorkerLost(3))
