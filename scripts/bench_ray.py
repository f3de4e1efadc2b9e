"""Batch parsing on Ray against the one-machine process pool (issue 25).

    python scripts/bench_ray.py MODEL [--megabytes 10] [--files 20] [--repeat 3]

Input: the en_ewt dev sentence texts in paragraphs (as `bench_batch_parse.py` builds
them), `--megabytes` MB split into `--files` files in /tmp/arborist_bench/ray_input
(Ray spreads whole files over its workers). Each run is a child process, `arborist
parse MODEL DIR --overwrite --no-progress` with `--engine ray --workers N` (Ray
started on this machine with N CPUs) or with the process pool `--n-process N`, and the
words/s it prints (parsing time: Ray's start-up and the model load of every actor
included for Ray, the pool's start included for the pool). Runs interleaved, median of
--repeat. Writes scripts/results/bench_ray.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_batch_parse import DEFAULT_DEV, WORK, build_text  # noqa: E402

CONFIGURATIONS = {"pool_1": ["--n-process", "1"], "ray_1": ["--engine", "ray", "--workers", "1"],
                  "ray_2": ["--engine", "ray", "--workers", "2"], "pool_2": ["--n-process", "2"]}


def split_input(megabytes: int, files: int) -> Path:
    """The text of `megabytes` MB cut at paragraph boundaries into `files` files."""
    target = WORK / f"ray_input_{megabytes}MB_{files}"
    if target.is_dir() and len(list(target.glob("*.txt"))) == files:
        return target
    paragraphs = build_text(DEFAULT_DEV, megabytes).read_text(encoding="utf-8").split("\n\n")
    target.mkdir(parents=True, exist_ok=True)
    per_file = -(-len(paragraphs) // files)
    for k in range(files):
        part = [p for p in paragraphs[k * per_file:(k + 1) * per_file] if p.strip()]
        (target / f"part{k:03d}.txt").write_text("\n\n".join(part) + "\n", encoding="utf-8")
    return target


def run(model: str, source: Path, output: Path, options: list[str]) -> dict:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arborist.cli", "parse", model, str(source), "--output-dir",
                           str(output), "--overwrite", "--no-progress", *options],
                          capture_output=True, text=True, env=dict(os.environ, WANDB_MODE="disabled"))
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"arborist parse {' '.join(options)} failed:\n{done.stderr[-2000:]}")
    match = re.search(r"([\d,]+) words, ([\d,]+) words/s", done.stderr)
    return {"words": int(match.group(1).replace(",", "")), "words_per_second": int(match.group(2).replace(",", "")),
            "wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--megabytes", type=int, default=10)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--configurations", nargs="+", default=list(CONFIGURATIONS), choices=list(CONFIGURATIONS))
    ap.add_argument("--output", default=str(HERE / "results" / "bench_ray.json"))
    args = ap.parse_args()
    source = split_input(args.megabytes, args.files)
    runs: dict[str, list[dict]] = {name: [] for name in args.configurations}
    outputs = {}
    for round_ in range(args.repeat):
        for name in args.configurations:
            out = WORK / f"ray_output_{name}"
            runs[name].append(run(args.model, source, out, CONFIGURATIONS[name]))
            outputs[name] = out
            print(f"round {round_ + 1} {name}: {runs[name][-1]}", flush=True)
    medians = {name: statistics.median(r["words_per_second"] for r in rs) for name, rs in runs.items()}
    identical = len({tuple((p.name, p.read_bytes()) for p in sorted(o.glob("*"))) for o in outputs.values()}) == 1
    result = {"benchmark": "ray", "model": args.model, "input_mb": args.megabytes, "files": args.files,
              "repeat": args.repeat, "runs": runs, "words_per_second_median": medians,
              "outputs_identical": identical, "load_average_at_end": os.getloadavg()}
    if "ray_1" in medians and "ray_2" in medians:
        result["ray_2_over_ray_1"] = medians["ray_2"] / medians["ray_1"]
    if "ray_1" in medians and "pool_1" in medians:
        result["ray_1_time_over_pool_1"] = medians["pool_1"] / medians["ray_1"]
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
