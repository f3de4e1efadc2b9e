"""Two builds of arborist, timed by the same benchmarks, interleaved in one run.

Each build is a checkout with its own Python (a virtual environment where that checkout
is installed). Every round runs each benchmark once under each build, alternating the
order from round to round (A B, B A, ...), so a noisy shared machine slows both alike;
each build runs its own checkout's copy of the benchmark script, from its checkout.
Reports the medians per build and their ratio (after / before). Writes JSON.

    python scripts/bench_builds.py --before /work/baseline /work/venv-base/bin/python \\
        --after . /work/venv/bin/python --model MODEL --rounds 3

Benchmarks (each a figure from the script's own JSON):
    parse        bench_parse.py MODEL --repeat 1: the pipeline's words/s (Pipeline.annotate, one call per sentence)
    train        bench_train.py --epochs 1: seconds per perceptron epoch on en_ewt (configs/en_ewt_perceptron.cfg)
    batch_parse  bench_batch_parse.py MODEL --sizes 1 --n-process 1 --repeat 1: words/s of `arborist parse`
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

BENCHMARKS = {
    "parse": (lambda m, out: ["scripts/bench_parse.py", m, "--repeat", "1", "--output", out],
              lambda d: d["pipeline_words_per_second_median"], "words/s"),
    "train": (lambda m, out: ["scripts/bench_train.py", "--epochs", "1", "--output", out],
              lambda d: d["runs"][0]["seconds_per_epoch_median"], "s/epoch"),
    "batch_parse": (lambda m, out: ["scripts/bench_batch_parse.py", m, "--sizes", "1", "--n-process", "1",
                                    "--repeat", "1", "--output", out],
                    lambda d: d["runs"][0]["words_per_second"], "words/s"),
}


def run(build: tuple[str, str], name: str, model: str) -> float:
    tree, python = build
    command, figure, _ = BENCHMARKS[name]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "result.json")
        env = dict(os.environ, WANDB_MODE="disabled")
        subprocess.run([python, *command(model, out)], cwd=tree, env=env, check=True, capture_output=True, text=True)
        return float(figure(json.loads(Path(out).read_text())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", nargs=2, metavar=("TREE", "PYTHON"), required=True)
    ap.add_argument("--after", nargs=2, metavar=("TREE", "PYTHON"), required=True)
    ap.add_argument("--model", required=True, help="a model both builds load (absolute path)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--benchmarks", nargs="+", default=list(BENCHMARKS), choices=list(BENCHMARKS))
    ap.add_argument("--output", default="scripts/results/bench_builds.json")
    args = ap.parse_args()
    builds = {"before": tuple(args.before), "after": tuple(args.after)}
    figures = {name: {"before": [], "after": []} for name in args.benchmarks}
    started = time.time()
    for round_ in range(args.rounds):
        order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
        for name in args.benchmarks:
            for build in order:
                figures[name][build].append(run(builds[build], name, str(Path(args.model).resolve())))
                print(f"round {round_ + 1} {name} {build}: {figures[name][build][-1]:.2f}", flush=True)
    result = {"benchmark": "builds", "builds": {k: list(v) for k, v in builds.items()}, "model": args.model,
              "rounds": args.rounds, "load_average_at_end": os.getloadavg(), "seconds": time.time() - started,
              "results": {}}
    for name, runs in figures.items():
        before, after = statistics.median(runs["before"]), statistics.median(runs["after"])
        result["results"][name] = {"unit": BENCHMARKS[name][2], "before_runs": runs["before"], "after_runs": runs["after"],
                                   "before_median": before, "after_median": after, "after_over_before": after / before}
        print(f"{name}: before {before:.2f}, after {after:.2f} {BENCHMARKS[name][2]} (x{after / before:.3f})")
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
