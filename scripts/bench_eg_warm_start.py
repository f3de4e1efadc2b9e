"""Measure EG's warm starts (issue 26) on the first N en_ewt training sentences, first
order, gold tags: per epoch the CRF/M3N primal, dual, relative gap and dev UAS, for

    cold          theta = 0 (uniform alpha_i)
    perceptron    theta_i = b w0 . phi (+ a e_i for M3N), w0 an averaged perceptron trained
                  --perceptron-epochs epochs on the same sentences, a and b searched (Q)
    from_2C_kept  EG at 2C to a relative gap <= --gap, then C halved keeping theta
                  (one step of §7.1.2's C-annealing)
    from_2C_scaled  the same 2C model's prediction weights as w0, b searched

Effective iterations charge everything: EG visits / n, the pass that builds w(alpha), the
warm start's and eta_ini's searches, the perceptron's epochs, the 2C run.

    python scripts/bench_eg_warm_start.py --C 10 --epochs 10 --out scripts/results/eg_warm_start_2000.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from arborist.corpus import read_corpus  # noqa: E402
from arborist.learn.eg import EG  # noqa: E402
from arborist.learn.perceptron import Perceptron  # noqa: E402
from arborist.parser.tree import DependencyTree  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce_eg_convergence import CORPUS, dev_uas, log  # noqa: E402  (the same data and scoring)


def point(eg, structure, train, dev, charged, start):
    m = eg.objectives(structure, train)
    return {"effective_iterations": charged + eg.effective_iterations(len(train)), "C": eg.C,
            "primal": m["primal"], "dual": m["dual"], "relative_gap": m["relative_gap"],
            "dev_uas": dev_uas(structure, eg.prediction_weights().array, dev),
            "mean_eta": float(eg.eta.mean()), "min_eta": float(eg.eta.min()), "seconds": time.perf_counter() - start}


def run(eg, structure, train, dev, epochs, charged, name, start, stop_gap=0.0):
    n = len(train)
    eg.begin(structure, train, structure.hash_bits)
    charged += 1.0 + eg.search_visits / n
    curve = [point(eg, structure, train, dev, charged, start)]
    log(f"  {name} start: {curve[-1]}")
    for _ in range(epochs):
        eg.epoch(structure, train)
        curve.append(point(eg, structure, train, dev, charged, start))
        log(f"  {name}: {curve[-1]}")
        if stop_gap and curve[-1]["relative_gap"] <= stop_gap:
            break
    return {"curve": curve, "warm_start": eg.warm_start_result, "eta_ini": eg.eta_ini}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--C", type=float, nargs="+", default=[10.0])
    ap.add_argument("--objective", default="crf", choices=["crf", "m3n"])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--perceptron-epochs", type=int, default=2)
    ap.add_argument("--gap", type=float, default=0.01)
    ap.add_argument("--hash-bits", type=int, default=22)
    ap.add_argument("--methods", nargs="+", default=["cold", "perceptron", "from_2C_kept", "from_2C_scaled"])
    ap.add_argument("--eta-fast-growth", type=float, default=None, help="EG's eta_fast_growth (default: off)")
    ap.add_argument("--tag", default="", help="suffix of the run names (e.g. the setting compared)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    train = read_corpus(str(CORPUS / "en_ewt-ud-train.conllu"))[: args.sentences]
    dev = read_corpus(str(CORPUS / "en_ewt-ud-dev.conllu"))
    structure = DependencyTree(hash_bits=args.hash_bits)
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.is_file() else {}
    results.update({"sentences": len(train), "hash_bits": args.hash_bits, "objective": args.objective,
                    "command": " ".join(sys.argv)})
    results.setdefault("runs", {})
    for C in args.C:
        runs = results["runs"].setdefault(f"{args.objective} C={C}{args.tag}", {})
        start = time.perf_counter()
        if "cold" in args.methods:
            runs["cold"] = run(EG(args.objective, C=C, objectives_every=10**9, eta_fast_growth=args.eta_fast_growth), structure, train, dev, args.epochs,
                               0.0, "cold", start)
            out.write_text(json.dumps(results, indent=1) + "\n")
        if "perceptron" in args.methods:
            start = time.perf_counter()
            p = Perceptron(seed=0)
            p.begin(structure, train, args.hash_bits)
            for _ in range(args.perceptron_epochs):
                p.epoch(structure, train)
            eg = EG(args.objective, C=C, objectives_every=10**9, eta_fast_growth=args.eta_fast_growth)
            eg.warm_weights = p.prediction_weights().array.copy()
            runs["perceptron"] = run(eg, structure, train, dev, args.epochs, float(args.perceptron_epochs),
                                     "perceptron", start)
            runs["perceptron"]["perceptron_dev_uas"] = dev_uas(structure, eg.warm_weights, dev)
            out.write_text(json.dumps(results, indent=1) + "\n")
        if {"from_2C_kept", "from_2C_scaled"} & set(args.methods):
            start = time.perf_counter()
            big = EG(args.objective, C=2 * C, objectives_every=10**9, eta_fast_growth=args.eta_fast_growth)
            first = run(big, structure, train, dev, 4 * args.epochs, 0.0, "2C", start, stop_gap=args.gap)
            cost = first["curve"][-1]["effective_iterations"]
            arrays, meta = big.state()
            if "from_2C_kept" in args.methods:
                kept = EG(args.objective, C=2 * C, objectives_every=10**9, eta_fast_growth=args.eta_fast_growth)
                kept.restore(structure, train, {k: v.copy() for k, v in arrays.items()}, dict(meta))
                kept.C = C
                kept.sq_norm = kept.weights.sq_norm()
                kept.begin = lambda *a, **k: None  # already started: the 2C state
                kept.search_visits = 0
                curve = [point(kept, structure, train, dev, cost - kept.effective_iterations(len(train)), start)]
                base = cost - kept.effective_iterations(len(train))
                for _ in range(args.epochs):
                    kept.epoch(structure, train)
                    curve.append(point(kept, structure, train, dev, base, start))
                    log(f"  from_2C_kept: {curve[-1]}")
                runs["from_2C_kept"] = {"curve": curve, "first_stage": first["curve"]}
            if "from_2C_scaled" in args.methods:
                eg = EG(args.objective, C=C, objectives_every=10**9, eta_fast_growth=args.eta_fast_growth)
                eg.warm_weights = big.prediction_weights().array.copy()
                r = run(eg, structure, train, dev, args.epochs, cost, "from_2C_scaled", start)
                r["first_stage"] = first["curve"]
                runs["from_2C_scaled"] = r
        out.write_text(json.dumps(results, indent=1) + "\n")
    for key, runs in results["runs"].items():
        for name, r in runs.items():
            c = r["curve"]
            log(f"{key} {name}: start gap {c[0]['relative_gap']:.3g} dev {c[0]['dev_uas']:.2f}; end "
                f"it {c[-1]['effective_iterations']:.1f} gap {c[-1]['relative_gap']:.3g} dev {c[-1]['dev_uas']:.2f}")


if __name__ == "__main__":
    main()
