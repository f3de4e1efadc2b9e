"""Train one config with several parser seeds on a UD treebank, average the models and
evaluate every seed and the average on dev.

For TREEBANK and a config (+ --set overrides): `arborist train` once per seed
(`components.parser.trainer.seed=N`, train and dev paths set to the treebank's, the best
epoch on dev kept in model-best), `arborist average` of the seeds' model-best (with
--dev, which refits the temperatures), then `arborist evaluate --gold-tags --json` of each
seed and of the average on dev (the dev file's own UPOS/XPOS/lemmas/FEATS). Dev selects
each seed's epoch, as `arborist train` always does. A seed whose model-best exists (and
whose training.json says done) is not trained again (--fresh trains it again), and its
training seconds come from the previous run's record. Writes
scripts/results/average_seeds_<treebank>_<name>.json.

    python scripts/average_seeds.py it_partut --config configs/en_ewt_perceptron.cfg --name fo_b22 \
        --set components.parser.structure.hash_bits=22
    python scripts/average_seeds.py tr_imst --config configs/en_ewt_second_order.cfg --name so_b22 \
        --set components.parser.structure.hash_bits=22 --seeds 4
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from confection import Config

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora" / "ud"
SEED_KEY = "components.parser.trainer.seed"
# Issue 26: TurboParser basic (first order), dev UAS with gold tags, lemmas and FEATS.
TARGETS = {"el_gdt": 87.20, "hu_szeged": 80.09, "tr_imst": 67.81, "it_partut": 87.80}


def cli(*args: str) -> list[str]:
    return ["nice", "-n", "10", sys.executable, "-m", "arborist.cli", *args]


def run(cmd: list[str], log: Path | None = None) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if log is not None:
        log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout, seconds


def evaluate(model: Path, dev: Path) -> tuple[list[str], dict]:
    cmd = cli("evaluate", str(model), str(dev), "--gold-tags", "--json")
    out, _ = run(cmd)
    return cmd, json.loads(out[out.index("{"):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("treebank")
    ap.add_argument("--config", required=True)
    ap.add_argument("--name", required=True, help="the run's name (results file and model directory)")
    ap.add_argument("--set", action="append", default=[], dest="overrides", help="section.key=value, as arborist train")
    ap.add_argument("--seeds", type=int, default=4, help="train seeds 0..N-1")
    ap.add_argument("--seed-list", type=int, nargs="+", help="these seeds instead of 0..N-1")
    ap.add_argument("--models", default="/work/models/avg", help="root of the model directories")
    ap.add_argument("--target", type=float, help="the figure to reach (default: TurboParser basic's, issue 26)")
    ap.add_argument("--fresh", action="store_true", help="train every seed again")
    ap.add_argument("--suffix", default="", help="appended to the results file's name (e.g. 8 seeds of a run)")
    args = ap.parse_args()

    seeds = args.seed_list or list(range(args.seeds))
    if args.target is None:
        args.target = TARGETS.get(args.treebank)
    train = CORPORA / args.treebank / f"{args.treebank}-ud-train.conllu"
    dev = CORPORA / args.treebank / f"{args.treebank}-ud-dev.conllu"
    base = Path(args.models) / f"{args.treebank}_{args.name}"
    base.mkdir(parents=True, exist_ok=True)
    out_path = ROOT / "scripts" / "results" / f"average_seeds_{args.treebank}_{args.name}{args.suffix}.json"
    previous = json.loads(out_path.read_text()) if out_path.exists() else {}
    previous_seeds = {s["seed"]: s for s in previous.get("seeds", [])}

    # One parser per run: this script averages the runs itself (a config's own `seeds`, as
    # configs/en_ewt_second_order.cfg's 16, would average inside every run).
    config = Config().from_disk(ROOT / args.config, interpolate=False)  # the config as arborist train (cwd ROOT) reads it
    if "seeds" in config.get("components", {}).get("parser", {}).get("training", {}):
        args.overrides.append("components.parser.training.seeds=1")
    if "seeds" in config.get("training", {}):
        args.overrides.append("training.seeds=1")
    runs = []
    for seed in seeds:
        out = base / f"seed{seed}"
        cmd = cli("train", args.config, "-o", str(out), "--no-wandb", "--set", f"paths.train={train}",
                  "--set", f"paths.dev={dev}", *[x for o in args.overrides for x in ("--set", o)],
                  "--set", f"{SEED_KEY}={seed}")
        done = (out / "model-best" / "meta.json").exists() and (out / "training.json").exists() and \
            all(c.get("done") for c in json.loads((out / "training.json").read_text())["components"].values())
        if done and not args.fresh:
            seconds = previous_seeds.get(seed, {}).get("train_seconds")
            if seconds is None and (out / "train_seconds.json").exists():
                seconds = json.loads((out / "train_seconds.json").read_text())["seconds"]
            print(f"seed {seed}: trained already ({out})", flush=True)
        else:
            if out.exists():
                shutil.rmtree(out)
            print(f"seed {seed}: training", flush=True)
            out.mkdir(parents=True)
            _, seconds = run(cmd, log=out / "train.log")
            (out / "train_seconds.json").write_text(json.dumps({"seconds": seconds, "command": cmd}))
        training = json.loads((out / "training.json").read_text())["components"]
        meta = json.loads((out / "model-best" / "meta.json").read_text())
        eval_cmd, scores = evaluate(out / "model-best", dev)
        runs.append({"seed": seed, "model": str(out / "model-best"), "train_command": cmd, "train_seconds": seconds,
                     "evaluate_command": eval_cmd, "uas": scores["uas"], "scores": scores,
                     "best_epoch": {k: c["best_epoch"] for k, c in training.items()},
                     "epochs_run": {k: len(c["history"]) for k, c in training.items()},
                     "dev_history": {k: [h.get(c["key"]) for h in c["history"]] for k, c in training.items()},
                     "epoch_seconds": {k: [h.get("epoch_seconds") for h in c["history"]] for k, c in training.items()},
                     "structures": {c["name"]: {k: v for k, v in c["structure"].items() if "templates" not in k}
                                    for c in meta["components"]}})
        print(f"seed {seed}: dev UAS {scores['uas']:.2f} (best epochs {runs[-1]['best_epoch']}, "
              f"{seconds if seconds is None else round(seconds, 1)} s)", flush=True)

    averaged = base / f"avg_{'_'.join(map(str, seeds))}"
    if averaged.exists():
        shutil.rmtree(averaged)
    avg_cmd = cli("average", *[r["model"] for r in runs], "-o", str(averaged), "--dev", str(dev))
    _, avg_seconds = run(avg_cmd, log=base / f"average_{'_'.join(map(str, seeds))}.log")
    avg_eval_cmd, avg_scores = evaluate(averaged, dev)
    uas = [r["uas"] for r in runs]
    result = {
        "treebank": args.treebank, "name": args.name, "config": args.config, "overrides": args.overrides,
        "seeds": runs, "seed_uas": uas, "mean_uas": statistics.mean(uas),
        "sd_uas": statistics.stdev(uas) if len(uas) > 1 else None, "best_seed_uas": max(uas),
        "average": {"model": str(averaged), "command": avg_cmd, "seconds": avg_seconds,
                    "evaluate_command": avg_eval_cmd, "uas": avg_scores["uas"], "scores": avg_scores},
        "target": args.target, "met": None if args.target is None else avg_scores["uas"] >= args.target,
        "train_seconds_total": sum(r["train_seconds"] or 0 for r in runs),
        "note": "UAS with punctuation, gold UPOS/XPOS/lemmas/FEATS from the dev file; each seed's epoch is the "
                "best on dev (arborist train's model-best)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    met = "" if args.target is None else f", target {args.target:.2f}: {'met' if result['met'] else 'missed'}"
    print(f"{args.treebank} {args.name}: seeds {', '.join(f'{u:.2f}' for u in uas)}; mean {result['mean_uas']:.2f}; "
          f"average {avg_scores['uas']:.2f}{met} -> {out_path.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main()
