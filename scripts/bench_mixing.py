"""Parameter mixing: serial training against K workers, same number of epochs.

Part 1 (always): the config's parser (default configs/en_ewt_perceptron.cfg, the
first-order parser with gold tags) trained serially and by iterative parameter mixing
over `--workers` shards (engine `--engine`), epoch by epoch interleaved (serial epoch 1,
mixed epoch 1, serial epoch 2, ...) so that machine noise hits both alike. Per epoch: the
wall time of the training pass (for the mixed run: forking the shards, the shards, and
the mixing), the CPU time on its critical path (the driver's, which runs shard 0 and the
mixing, or the slowest shard's; an estimate of the epoch time with a free core per
process, for a busy machine), and dev UAS of the averaged weights (scored as the training
driver scores an epoch). Reports the median epoch seconds, the speed-up and the dev UAS
difference at the last epoch and at the best epoch.

Part 2 (`--pipeline`): the whole pipeline config (default configs/en_ewt_pipeline.cfg:
taggers, 10-fold jackknife, parser, labeler; ~20 minutes serial) trained by
`arborist.train.train` with training.workers = 1 and = K (parallel jackknife folds; with
--pipeline-mixing, parameter mixing too), wall-clock each, with the components' best dev
scores.

The issue's targets (2 workers, en_ewt): dev UAS within 0.2 of serial, epochs >= 1.6x
faster, the pipeline >= 1.6x faster. Writes JSON and prints a summary; the load average
at the start and end is recorded (run it on a quiet machine).

    python scripts/bench_mixing.py                         # 8 epochs, 2 workers
    python scripts/bench_mixing.py --pipeline              # and the whole pipeline, 1 vs 2 workers
    python scripts/bench_mixing.py --epochs 2 --max-train-sentences 3000 --output /tmp/x.json   # a quick check
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class Silent:
    """A tracker that prints nothing (messages go to stderr with --verbose)."""

    def __init__(self, verbose: bool = False):
        self.verbose = verbose

    run_id = None

    def start_component(self, *args): pass
    def start_epoch(self, *args): pass
    def advance(self, *args, **kwargs): pass
    def end_epoch(self, *args): pass
    def log(self, *args): pass
    def summary(self, *args): pass
    def log_model(self, *args): pass
    def close(self): pass

    def message(self, text):
        if self.verbose:
            print(text, file=sys.stderr, flush=True)


def load_average() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def compare_epochs(args) -> dict:
    from arborist.learn.mixing import ParameterMixing, parallel_trainer
    from arborist.model import annotate
    from arborist.train import Training, _with_weights, load_config

    overrides = {"training.max_epochs": args.epochs, "training.calibrate": False}
    if args.max_train_sentences:
        overrides["training.max_train_sentences"] = args.max_train_sentences
    if args.seed is not None:
        overrides["components.parser.trainer.seed"] = args.seed
    config = load_config(REPO / args.config if not Path(args.config).is_absolute() else args.config, overrides)
    tracker = Silent(args.verbose)
    run = Training(config, None, tracker, None, None)
    name = "parser" if "parser" in run.specs else next(iter(run.specs))
    spec = run.specs[name]
    setups = {}
    for label, workers in (("serial", 1), (f"workers_{args.workers}", args.workers)):
        component, trainer = spec.resolve()
        component.link([])
        inputs = run.train_inputs(name, component)
        component.structure.initialize(inputs)
        train_x = component.examples(inputs, training=True)
        trainer = parallel_trainer(trainer, workers, args.engine, tracker, args.mixes_per_epoch)
        if isinstance(trainer, ParameterMixing):
            trainer.mix_weight = args.mix_weight
        trainer.begin(component.structure, train_x, component.structure.hash_bits)
        setups[label] = {"component": component, "trainer": trainer, "train_x": train_x, "epochs": []}
    dev_x = run.dev_inputs(name)
    key = spec.probe.score_key
    try:
        for epoch in range(1, args.epochs + 1):
            for label, s in setups.items():
                trainer, component = s["trainer"], s["component"]
                start, cpu = time.perf_counter(), time.process_time()
                metrics = trainer.epoch(component.structure, s["train_x"], None)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
                row = {"epoch": epoch, "epoch_seconds": seconds, "driver_cpu_seconds": cpu,
                       "train_accuracy": 100.0 * metrics["train_accuracy"], "updates": metrics.get("updates")}
                for extra in ("shard_seconds_max", "shard_cpu_seconds_max", "mix_seconds"):
                    if extra in metrics:
                        row[extra] = metrics[extra]
                # The CPU time on the critical path: what the epoch takes when every process has a core.
                row["critical_cpu_seconds"] = max(cpu, metrics.get("shard_cpu_seconds_max", 0.0))
                candidate = _with_weights(component, trainer)
                candidate.link([])
                scores = candidate.score(run.dev_set, annotate([candidate], dev_x), run.pipeline.unseen)
                row[key] = scores[key[len("dev_"):]]
                s["epochs"].append(row)
                print(f"epoch {epoch} {label:>10}: {seconds:7.2f} s (critical-path CPU {row['critical_cpu_seconds']:6.2f} s)"
                      f"  dev {key} {row[key]:.2f}", file=sys.stderr, flush=True)
    finally:
        for s in setups.values():
            if isinstance(s["trainer"], ParameterMixing):
                s["trainer"].close()
    serial, mixed = setups.values()
    out = {"config": args.config, "component": name, "score": key, "workers": args.workers, "engine": args.engine,
           "mix_weight": args.mix_weight, "mixes_per_epoch": args.mixes_per_epoch, "seed": args.seed,
           "train_sentences": len(serial["train_x"]), "dev_sentences": len(dev_x), "epochs": args.epochs, "runs": {}}
    for label, s in setups.items():
        seconds = [r["epoch_seconds"] for r in s["epochs"]]
        scores = [r[key] for r in s["epochs"]]
        out["runs"][label] = {"epochs": s["epochs"], "epoch_seconds_median": statistics.median(seconds),
                              "critical_cpu_seconds_median": statistics.median(r["critical_cpu_seconds"]
                                                                               for r in s["epochs"]),
                              f"last_{key}": scores[-1], f"best_{key}": max(scores),
                              "best_epoch": scores.index(max(scores)) + 1}
    a, b = out["runs"]["serial"], out["runs"][f"workers_{args.workers}"]
    out["speedup_epoch_median"] = a["epoch_seconds_median"] / b["epoch_seconds_median"]
    # Under load the wall times say little; the CPU time on the critical path (the driver, which
    # runs shard 0 and the mixing, or the slowest shard) is what the epoch would take with a
    # free core per process. An estimate, not a measurement of the speed-up.
    out["speedup_critical_cpu_estimate"] = a["critical_cpu_seconds_median"] / b["critical_cpu_seconds_median"]
    out[f"{key}_difference_last"] = b[f"last_{key}"] - a[f"last_{key}"]
    out[f"{key}_difference_best"] = b[f"best_{key}"] - a[f"best_{key}"]
    out["targets"] = {"speedup_at_least_1.6": out["speedup_epoch_median"] >= 1.6,
                      f"{key}_within_0.2_last": abs(out[f"{key}_difference_last"]) <= 0.2}
    return out


def compare_pipeline(args) -> dict:
    from arborist.train import load_config, train

    out = {"config": args.pipeline_config, "parameter_mixing": args.pipeline_mixing, "runs": {}}
    for workers in (1, args.workers):
        overrides = {"training.workers": workers, "training.engine": args.engine, "tracking.wandb": False,
                     "training.parameter_mixing": bool(args.pipeline_mixing and workers > 1)}
        for item in args.pipeline_set:
            key, value = item.split("=", 1)
            try:
                overrides[key] = json.loads(value)  # numbers, true/false, quoted strings
            except json.JSONDecodeError:
                overrides[key] = value
        config = load_config(REPO / args.pipeline_config, overrides)
        with tempfile.TemporaryDirectory(prefix="bench_mixing_") as tmp:
            start = time.perf_counter()
            _, report = train(config, Path(tmp) / "run", Silent(args.verbose), use_wandb=False)
            seconds = time.perf_counter() - start
        best = {n: {"key": e["key"], "best": e["best"], "best_epoch": e["best_epoch"]}
                for n, e in report["components"].items()}
        out["runs"][f"workers_{workers}"] = {"seconds": seconds, "components": best,
                                             "load_average_after": load_average()}
        print(f"pipeline workers={workers}: {seconds:.0f} s  " +
              "  ".join(f"{n} {b['key']} {b['best']:.2f}" for n, b in best.items()), file=sys.stderr, flush=True)
    one, k = out["runs"]["workers_1"], out["runs"][f"workers_{args.workers}"]
    out["speedup"] = one["seconds"] / k["seconds"]
    out["targets"] = {"speedup_at_least_1.6": out["speedup"] >= 1.6}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/en_ewt_perceptron.cfg")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--max-train-sentences", type=int, default=0, help="0: all (a quick check: e.g. 3000)")
    ap.add_argument("--seed", type=int, default=None, help="the parser trainer's seed (default: the config's)")
    ap.add_argument("--mixes-per-epoch", type=int, default=1,
                    help="rounds of shards and mixing per epoch (1: McDonald et al.'s IPM, one mix per epoch)")
    ap.add_argument("--mix-weight", type=float, default=None,
                    help="experiment: weight of each shard's change in the mix (default 1/workers, IPM's average; "
                         "1 sums the changes)")
    ap.add_argument("--pipeline", action="store_true", help="also time the whole pipeline, 1 vs --workers")
    ap.add_argument("--pipeline-config", default="configs/en_ewt_pipeline.cfg")
    ap.add_argument("--pipeline-mixing", action="store_true", help="the pipeline's parallel run also trains its "
                    "perceptrons by parameter mixing (default: parallel jackknife folds only, the same model)")
    ap.add_argument("--pipeline-set", action="append", default=[], metavar="KEY=VALUE",
                    help="config overrides for both pipeline runs (e.g. training.max_epochs=5)")
    ap.add_argument("--skip-epochs", action="store_true", help="only the pipeline comparison")
    ap.add_argument("--note", default="", help="recorded in the JSON (e.g. 'quiet machine')")
    ap.add_argument("--output", default="scripts/results/bench_mixing.json")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    os.chdir(REPO)  # the configs' paths are relative to the project root

    result = {"benchmark": "mixing", "note": args.note, "machine": {"cpus": os.cpu_count(),
              "python": platform.python_version(), "load_average_start": load_average()},
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if not args.skip_epochs:
        result["epochs"] = compare_epochs(args)
    if args.pipeline:
        result["pipeline"] = compare_pipeline(args)
    result["machine"]["load_average_end"] = load_average()
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")

    print(f"load average start {result['machine']['load_average_start']}, end {result['machine']['load_average_end']}")
    if "epochs" in result:
        e = result["epochs"]
        a, b = e["runs"]["serial"], e["runs"][f"workers_{e['workers']}"]
        key = e["score"]
        print(f"{e['config']} ({e['train_sentences']} sentences), {e['epochs']} epochs, {e['workers']} workers "
              f"({e['engine']}):")
        print(f"  epoch seconds (median): serial {a['epoch_seconds_median']:.2f}, mixed {b['epoch_seconds_median']:.2f}"
              f"  -> x{e['speedup_epoch_median']:.2f} (target >= 1.6)")
        print(f"  critical-path CPU seconds (median): serial {a['critical_cpu_seconds_median']:.2f}, mixed "
              f"{b['critical_cpu_seconds_median']:.2f}  -> x{e['speedup_critical_cpu_estimate']:.2f} "
              "(an estimate of the speed-up with a free core per process)")
        print(f"  dev {key} last epoch: serial {a[f'last_{key}']:.2f}, mixed {b[f'last_{key}']:.2f}"
              f"  ({e[f'{key}_difference_last']:+.2f}; target within 0.2)")
        print(f"  dev {key} best: serial {a[f'best_{key}']:.2f} (epoch {a['best_epoch']}), "
              f"mixed {b[f'best_{key}']:.2f} (epoch {b['best_epoch']})")
    if "pipeline" in result:
        p = result["pipeline"]
        print(f"{p['config']}: workers 1 {p['runs']['workers_1']['seconds']:.0f} s, workers {args.workers} "
              f"{p['runs'][f'workers_{args.workers}']['seconds']:.0f} s -> x{p['speedup']:.2f} (target >= 1.6)")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
