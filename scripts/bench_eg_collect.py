"""Collect `arborist train` runs of EG (and the perceptron they are compared with) into
one JSON under scripts/results/: per epoch dev UAS, effective iterations, relative
duality gap, C and seconds, copied from each OUTPUT/training.json.

    python scripts/bench_eg_collect.py --out scripts/results/eg_first_order_en_ewt.json \
        --run perceptron /tmp/eg/perc "arborist train configs/en_ewt_perceptron.cfg ..." \
        --run eg_crf_C4 /tmp/eg/crf4 "arborist train configs/en_ewt_eg_crf_warm.cfg ..."

Effective iterations are EG's own count (every rate tried is a visit / n);
`setup_effective_iterations` adds what begin() spent (the pass that builds w(alpha),
the warm start's scale search and the eta_ini search, from the trainer's setup report),
so `total_effective_iterations` = both. The warm start's source model (the perceptron
run) is charged separately: `source` names it.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

KEYS = ("epoch", "dev_uas", "effective_iterations", "relative_gap", "C", "primal", "dual", "mean_eta",
        "train_accuracy", "halvings", "stalls", "epoch_seconds", "objective_seconds")


def setup_from_log(path: Path) -> dict:
    """The trainer's setup report from the run's log ("trainer set-up: 12.3 s; eta_ini 0.5; ...")."""
    if not path.is_file():
        return {}
    text = path.read_text(errors="replace")
    if "trainer set-up:" not in text:
        return {}
    # the console wraps the line: join it up to the epoch table's header
    block = text.split("trainer set-up:", 1)[1].split("epoch", 1)[0]
    parts = [p.strip() for p in " ".join(block.split()).split(";") if p.strip()]
    out = {"seconds": float(parts[0].split()[0])}
    for p in parts[1:]:
        key, _, value = p.partition(" ")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def collect(name: str, directory: Path, command: str, n_train: int | None) -> dict:
    report = json.loads((directory / "training.json").read_text())
    entry = report["components"]["parser"]
    setup = setup_from_log(directory.with_suffix(".log"))
    epochs = [{k: row[k] for k in KEYS if k in row} for row in entry["history"]]
    out = {"name": name, "command": command, "output": str(directory), "best_epoch": entry.get("best_epoch"),
           "best_dev_uas": entry.get("best"), "stopped": entry.get("stopped"), "setup": setup,
           "annealing": entry.get("annealing", []), "epochs": epochs}
    if n_train and "eta_ini" in setup:
        # begin(): one pass builds w(alpha) (+ the searches, counted in visits over subsets)
        # (logs before 2026-11-27 printed eta_search_visits as the running total of both
        # searches, so this sum counts their warm-start search twice; the README says so)
        setup_visits = setup.get("eta_search_visits", 0) + setup.get("warm_start_search_visits", 0)
        out["setup_effective_iterations"] = 1.0 + setup_visits / n_train
        for row in epochs:
            if "effective_iterations" in row:
                row["total_effective_iterations"] = row["effective_iterations"] + out["setup_effective_iterations"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--run", nargs=3, action="append", metavar=("NAME", "DIR", "COMMAND"), required=True)
    ap.add_argument("--n-train", type=int, default=12544, help="training sentences (en_ewt: 12544)")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    runs = [collect(name, Path(d), cmd, args.n_train) for name, d, cmd in args.run]
    path = Path(args.out)
    old = json.loads(path.read_text()) if path.is_file() else {"runs": []}
    keep = [r for r in old.get("runs", []) if r["name"] not in {r["name"] for r in runs}]
    data = {"note": args.note or old.get("note", ""), "runs": keep + runs}
    path.write_text(json.dumps(data, indent=1) + "\n")
    for r in runs:
        last = r["epochs"][-1] if r["epochs"] else {}
        print(f"{r['name']}: best dev UAS {r['best_dev_uas']:.2f} at epoch {r['best_epoch']}; last epoch "
              f"{last.get('epoch')} eff.it {last.get('total_effective_iterations', last.get('effective_iterations'))} "
              f"gap {last.get('relative_gap')}")


if __name__ == "__main__":
    main()
