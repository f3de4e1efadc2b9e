"""Tracking overhead: the same training run with W&B (offline) and without, interleaved.

Trains `--config` (default: the en_ewt perceptron parser, gold tags, 2^22 weights) for
`--epochs` epochs, `--repeat` times each way, alternating which goes first, in fresh
output directories, and reports the median wall time of each and the median of the
per-round ratios with/without - 1. Both runs show the console progress; only W&B differs.
Writes JSON.

    python scripts/bench_tracking.py [--epochs 2] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from arborist.train import load_config, parse_overrides, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/en_ewt_perceptron.cfg")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--set", dest="overrides", action="append",
                    default=["components.parser.structure.hash_bits=22"])
    ap.add_argument("--output", default="scripts/results/bench_tracking.json")
    args = ap.parse_args()
    os.environ["WANDB_MODE"] = "offline"
    os.environ.pop("WANDB_API_KEY", None)
    overrides = parse_overrides(args.overrides + [f"training.max_epochs={args.epochs}"])
    config = load_config(args.config, overrides)
    work = Path(tempfile.mkdtemp(prefix="bench_tracking."))
    seconds = {"wandb": [], "none": []}
    try:
        for round_ in range(args.repeat):
            order = ["wandb", "none"] if round_ % 2 == 0 else ["none", "wandb"]
            for way in order:
                output = work / f"{way}{round_}"
                start = time.perf_counter()
                train(config, output, use_wandb=(way == "wandb"))
                seconds[way].append(time.perf_counter() - start)
                shutil.rmtree(output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    overhead = [a / b - 1.0 for a, b in zip(seconds["wandb"], seconds["none"])]
    result = {
        "benchmark": "tracking",
        "config": args.config,
        "overrides": args.overrides,
        "epochs": args.epochs,
        "seconds_with_wandb": seconds["wandb"],
        "seconds_without": seconds["none"],
        "median_seconds_with_wandb": statistics.median(seconds["wandb"]),
        "median_seconds_without": statistics.median(seconds["none"]),
        "overhead_median": statistics.median(overhead),
        "overhead_runs": overhead,
        "machine": platform.processor() or platform.machine(),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
