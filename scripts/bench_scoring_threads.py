"""A parser's training epochs with its scoring in one thread and in two
(`arborist.structure.scoring_threads`, which `[training] workers > 1` turns on: a
first-order parser scores half of the heads in a second thread, a second-order one part of
its parts): the seconds per epoch of each, interleaved epoch by epoch so that machine noise
hits both alike, and a check that both train the same weights bit for bit. Writes JSON.

    python scripts/bench_scoring_threads.py [--config configs/en_ewt_pipeline.cfg] [--epochs 3]
    python scripts/bench_scoring_threads.py --config configs/en_ewt_second_order_eg_m3n.cfg \
        --upstream MODEL --epochs 4 --output scripts/results/bench_scoring_threads_second_order.json

A second-order parser needs its pruner: `--upstream MODEL` links the components of a
trained model before it (MODEL/model-best of the same config).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


class Silent:
    def __getattr__(self, name):
        return lambda *a, **k: None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/en_ewt_pipeline.cfg")
    ap.add_argument("--component", default="parser")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--upstream", help="a trained model whose components before the component are linked to it")
    ap.add_argument("--note", default="")
    ap.add_argument("--output", default="scripts/results/bench_scoring_threads.json")
    args = ap.parse_args()
    from arborist.model import load
    from arborist.structure import scoring_threads
    from arborist.train import Training, load_config

    config = load_config(REPO / args.config, {"training.calibrate": False, "training.jackknife_folds": 0})
    run = Training(config, None, Silent(), None, None)
    spec = run.specs[args.component]
    upstream = []
    if args.upstream:
        trained = load(args.upstream).components
        upstream = [c for name, c in trained.items() if name != args.component][: list(trained).index(args.component)]
    setups = {}
    for threads in (1, 2):
        component, trainer = spec.resolve()
        component.link(upstream)
        component.structure.initialize(run.train_set)
        examples = component.examples(run.train_set, training=True)
        trainer.begin(component.structure, examples, component.structure.hash_bits)
        setups[threads] = (component, trainer, examples, [])
    load = os.getloadavg()
    for epoch in range(1, args.epochs + 1):
        for threads, (component, trainer, examples, seconds) in setups.items():
            start = time.perf_counter()
            with scoring_threads(component.structure, threads):
                trainer.epoch(component.structure, examples)
            seconds.append(time.perf_counter() - start)
            print(f"epoch {epoch}, {threads} thread(s): {seconds[-1]:.2f} s", file=sys.stderr, flush=True)
    identical = bool(np.array_equal(setups[1][1].weights.array, setups[2][1].weights.array))
    one, two = (statistics.median(setups[t][3]) for t in (1, 2))
    out = {"benchmark": "scoring_threads", "note": args.note, "config": args.config, "component": args.component,
           "upstream": args.upstream,
           "machine": {"cpus": os.cpu_count(), "load_average_start": list(load),
                       "load_average_end": list(os.getloadavg())},
           "train_sentences": len(run.train_set), "epochs": args.epochs,
           "epoch_seconds": {"one_thread": setups[1][3], "two_threads": setups[2][3]},
           "epoch_seconds_median": {"one_thread": one, "two_threads": two},
           "speedup_median": one / two,
           # uniform epochs and epochs that draw by the gap (long sentences) differ in cost:
           # each epoch's ratio, and the ratio of the totals
           "speedup_by_epoch": [a / b for a, b in zip(setups[1][3], setups[2][3])],
           "seconds_total": {"one_thread": sum(setups[1][3]), "two_threads": sum(setups[2][3])},
           "speedup_total": sum(setups[1][3]) / sum(setups[2][3]),
           "identical_weights": identical}
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"median epoch: 1 thread {one:.2f} s, 2 threads {two:.2f} s -> x{one / two:.2f}; "
          f"total x{out['speedup_total']:.2f}; "
          f"identical weights: {identical}; wrote {args.output}")
    if not identical:
        raise SystemExit("the weights differ")


if __name__ == "__main__":
    main()
