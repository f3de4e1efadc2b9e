"""Throughput and memory of `arborist parse` on raw text (issue 8).

    python scripts/bench_batch_parse.py MODEL [--sizes 10 100] [--n-process 1 2] [--repeat 3]

Builds its inputs in /tmp/arborist_bench/: the sentence texts (`# text =`) of en_ewt
dev joined five to a paragraph, paragraphs separated by blank lines, repeated until
the file has SIZE MB. Each run is a separate `arborist parse MODEL FILE --format conllu
--overwrite --no-progress --n-process N` child process, so a measurement includes
everything: tokenization, sentence splitting, tagging, parsing, labeling and writing
CoNLL-U. Reported per run:

  words/s         words / parsing time, as the command prints it (reading, annotating,
                  writing; not the interpreter start and model load, given separately)
  wall_s          the child's wall time, start to exit
  peak_rss_mb     the largest resident set of the child and its workers
                  (getrusage(RUSAGE_CHILDREN).ru_maxrss of a wrapper process that runs
                  only that child, so earlier runs do not count)

Throughput is measured on the first size only (--sizes 10 100: 10 MB), runs interleaved
over the process counts, median of --repeat; the other sizes are run once with
the largest process count, for memory. Results go to scripts/results/bench_batch_parse.json,
rewritten after every run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DEV = HERE.parent.parent / "shared" / "corpora" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
WORK = Path("/tmp/arborist_bench")
SENTENCES_PER_PARAGRAPH = 5


def build_text(dev: Path, megabytes: int) -> Path:
    """The en_ewt dev sentence texts in paragraphs, repeated to `megabytes` MB (kept between runs)."""
    target = WORK / f"en_ewt_dev_{megabytes}MB.txt"
    if target.exists() and target.stat().st_size >= megabytes * 1_000_000:
        return target
    texts = [line[len("# text = "):].strip() for line in dev.read_text(encoding="utf-8").splitlines()
             if line.startswith("# text = ")]
    paragraphs = [" ".join(texts[i:i + SENTENCES_PER_PARAGRAPH]) for i in range(0, len(texts), SENTENCES_PER_PARAGRAPH)]
    block = ("\n\n".join(paragraphs) + "\n\n").encode("utf-8")
    WORK.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        written = 0
        while written < megabytes * 1_000_000:
            f.write(block)
            written += len(block)
    os.replace(tmp, target)
    return target


def child(command: list[str]) -> None:
    """Run in a wrapper process: run `command`, print its wall time and peak RSS as JSON."""
    import resource

    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"returncode": done.returncode, "stderr": done.stderr[-4000:], "wall_s": wall,
                      "peak_rss_mb": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime}))


def run(model: str, text: Path, n_process: int, out: Path) -> dict:
    command = [sys.executable, "-m", "arborist.cli", "parse", model, str(text), "--output-dir", str(out),
               "--format", "conllu", "--overwrite", "--no-progress", "--n-process", str(n_process)]
    wrapper = subprocess.run([sys.executable, __file__, "--child", json.dumps(command)], capture_output=True,
                             text=True, cwd=WORK, check=True)
    result = json.loads(wrapper.stdout)
    if result["returncode"] != 0:
        raise SystemExit(f"arborist parse failed:\n{result['stderr']}")
    for written in out.glob("*"):  # gigabytes for the larger inputs
        written.unlink()
    match = re.search(r"([\d,]+) words, ([\d,]+) words/s", result["stderr"])
    words, speed = (int(match.group(i).replace(",", "")) for i in (1, 2))
    return {"n_process": n_process, "words": words, "words_per_second": speed, "wall_s": round(result["wall_s"], 2),
            "cpu_s": round(result["cpu_s"], 2), "peak_rss_mb": round(result["peak_rss_mb"], 1),
            "input_mb": round(text.stat().st_size / 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?")
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100], help="input sizes in MB")
    parser.add_argument("--n-process", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "bench_batch_parse.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    if not args.model:
        parser.error("the model directory is required")
    model = str(Path(args.model).resolve())
    out = WORK / f"out{os.getpid()}"  # two benchmarks at once never share an output
    first, *others = [build_text(args.dev, size) for size in args.sizes]
    results = {"benchmark": "batch_parse", "model": args.model, "corpus": str(args.dev),
               "machine": {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg(),
                           "python": platform.python_version()},
               "runs": [], "throughput": {}, "memory": []}
    for round_ in range(args.repeat):
        for n in args.n_process:
            result = run(model, first, n, out)
            result["round"] = round_
            results["runs"].append(result)
            print(json.dumps(result), flush=True)
            write(results, args)  # a long run keeps what it has measured so far
    for text in others:
        result = run(model, text, max(args.n_process), out)
        print(json.dumps(result), flush=True)
        results["runs"].append(result)
        write(results, args)
    print(json.dumps({"throughput": results["throughput"], "memory": results["memory"]}, indent=2))


def write(results: dict, args) -> None:
    """Summaries of the runs so far: median words/s per process count on the first size, the
    speed-up over the first process count, peak RSS per input size; then the JSON file."""
    first_size = results["runs"][0]["input_mb"]
    results["throughput"] = {}
    for n in args.n_process:
        speeds = [r["words_per_second"] for r in results["runs"] if r["n_process"] == n and r["input_mb"] == first_size]
        if speeds:
            results["throughput"][str(n)] = {"words_per_second_median": statistics.median(speeds),
                                             "words_per_second_runs": speeds}
    base = results["throughput"].get(str(args.n_process[0]))
    for n in args.n_process[1:]:
        if base and str(n) in results["throughput"]:
            results["throughput"][str(n)][f"speedup_over_{args.n_process[0]}"] = round(
                results["throughput"][str(n)]["words_per_second_median"] / base["words_per_second_median"], 3)
    results["memory"] = [
        {"input_mb": size, "n_process": n, "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}
        for size in sorted({r["input_mb"] for r in results["runs"]})
        for n in args.n_process
        if (runs := [r for r in results["runs"] if r["input_mb"] == size and r["n_process"] == n])
    ]
    results["machine"]["load_average_now"] = os.getloadavg()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
