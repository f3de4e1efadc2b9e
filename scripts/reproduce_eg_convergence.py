"""Reproduce the comparison of §7.2 (Figure 12) of seeds/001: the CRF primal against
effective iterations for EG, L-BFGS and SGD, first-order parsing, gold tags.

    python scripts/reproduce_eg_convergence.py --sentences 2000 --iterations 30

For each C: randomized online EG with the adaptive rate of §7 (eta_ini searched
on 10% of the data); the same with the C-annealing schedule that §7.1.1 uses for
low C (10 C for 5 iterations, then C (1 + 9 x 0.7^(t-5))); scipy's L-BFGS-B from w = 0, and SGD with eta0 chosen from
{1, 0.1, 0.01, 0.001} by dev UAS after one epoch. Effective iterations = example
visits / n: every rate EG tries is a visit, and EG is also charged its
initialization pass (w(alpha) at theta = 0) and its eta_ini search (EG-warm: also
the perceptron's 2 epochs and the warm start's scale search; -fast: eta_fast_growth = 2); every
L-BFGS function evaluation (line search included) is n visits; an SGD step is
one (the epochs spent choosing eta0 are charged too). The primal values for the
curves are computed outside the count. Writes JSON and a PNG to scripts/results/.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arborist.corpus import read_corpus  # noqa: E402
from arborist.learn.baselines import SGD, CRFPrimal, lbfgs  # noqa: E402
from arborist.learn.eg import EG  # noqa: E402
from arborist import Parser  # noqa: E402
from arborist.evaluate import attachment_scores  # noqa: E402
from arborist.parser.tree import DependencyTree  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpora" / "ud" / "en_ewt"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def dev_uas(structure, weights, dev):
    parser = Parser(structure, weights)
    return attachment_scores((x, parser.predict(x), None) for x in dev)["uas"]


def annealed_C(C, t, start_factor):
    """§7.1.1: C_t = k C for the first 5 iterations, then C (1 + (k - 1) 0.7^(t - 5))."""
    return C * start_factor if t <= 5 else C * (1.0 + (start_factor - 1.0) * 0.7 ** (t - 5))


def run_eg(structure, train, dev, C, bits, iterations, seed, anneal_from=None, warm_epochs=0, fast_growth=None,
           gap_sampling=0.0):
    """Randomized online EG at C; with anneal_from = k, the annealed schedule of §7.1.1
    (the primal plotted is always the one at the target C); with warm_epochs = k, the
    dual warm-started (issue 26) from an averaged perceptron trained k epochs on the same
    sentences, charged k effective iterations (the warm start's scale search is in
    search_visits); with gap_sampling = m, each epoch's visits drawn by the sentences' gaps
    (m of them; the objectives pass after each epoch gives the gaps)."""
    from arborist.learn.perceptron import Perceptron

    n = len(train)
    eg = EG("crf", C=C * anneal_from if anneal_from else C, seed=seed, objectives_every=10**9,
            eta_fast_growth=fast_growth, gap_sampling=gap_sampling)
    start = time.perf_counter()
    if warm_epochs:
        perceptron = Perceptron(seed=seed)
        perceptron.begin(structure, train, bits)
        for _ in range(warm_epochs):
            perceptron.epoch(structure, train)
        eg.warm_weights = perceptron.prediction_weights().array.copy()
    eg.begin(structure, train, bits)
    charged = 1.0 + eg.search_visits / n + warm_epochs  # init pass, searches, the perceptron's epochs
    primal = CRFPrimal(structure, train, C, bits)
    w = eg.prediction_weights().array
    curve = [{"effective_iterations": charged, "primal": primal.value(w), "dev_uas": dev_uas(structure, w, dev),
              "seconds": time.perf_counter() - start}]
    t = 0
    while curve[-1]["effective_iterations"] < iterations:
        t += 1
        if anneal_from:
            eg.C = annealed_C(C, t, anneal_from)
        epoch = eg.epoch(structure, train)
        w = eg.prediction_weights().array
        # the visits weighed by their sentences' parts (gap sampling draws long ones more), plus the same charge
        point = {"effective_iterations": charged + eg.effective_iterations(n), "C": eg.C,
                 "part_weighted_iterations": charged + epoch["part_weighted_iterations"],
                 "dev_uas": dev_uas(structure, w, dev), "mean_eta": float(eg.eta.mean()),
                 "seconds": time.perf_counter() - start}
        if eg.C == C:
            m = eg.objectives(structure, train)
            point.update(primal=m["primal"], dual=m["dual"], relative_gap=m["relative_gap"])
        else:
            point["primal"] = primal.value(w)
        curve.append(point)
        log(f"  EG C={C}: {curve[-1]}")
    return {"eta_ini": eg.eta_ini, "curve": curve, "anneal_from": anneal_from, "warm_epochs": warm_epochs, "eta_fast_growth": fast_growth,
            "warm_start": eg.warm_start_result, "gap_sampling": gap_sampling}


def run_lbfgs(structure, train, dev, C, bits, iterations):
    curve = []

    def record(point):
        curve.append(point)
        log(f"  L-BFGS C={C}: {point}")

    w = lbfgs(structure, train, C, bits, max_evaluations=iterations, callback=record)
    if curve:
        curve[-1]["dev_uas"] = dev_uas(structure, w, dev)
    return {"curve": curve}


def run_sgd(structure, train, dev, C, bits, iterations, seed, rates=(1.0, 0.1, 0.01, 0.001)):
    n = len(train)
    trials = {}
    for eta0 in rates:
        sgd = SGD(C=C, eta0=eta0, seed=seed)
        sgd.begin(structure, train, bits)
        try:
            sgd.epoch(structure, train)
            trials[eta0] = dev_uas(structure, sgd.prediction_weights().array, dev)
        except (ValueError, FloatingPointError) as e:  # a rate too large for this C
            trials[eta0] = float("nan")
            log(f"  SGD eta0={eta0}: {e}")
        log(f"  SGD C={C} eta0={eta0}: dev UAS after one epoch {trials[eta0]:.2f}")
    eta0 = max((r for r in rates if not math.isnan(trials[r])), key=lambda r: trials[r])
    charged = float(len(rates))  # the epochs spent choosing eta0
    sgd = SGD(C=C, eta0=eta0, seed=seed)
    sgd.begin(structure, train, bits)
    start = time.perf_counter()
    curve = []
    while not curve or curve[-1]["effective_iterations"] < iterations:
        m = sgd.epoch(structure, train)
        curve.append({"effective_iterations": charged + sgd.steps / n, "primal": m["primal"],
                      "dev_uas": dev_uas(structure, sgd.prediction_weights().array, dev),
                      "seconds": time.perf_counter() - start})
        log(f"  SGD C={C}: {curve[-1]}")
    return {"eta0": eta0, "eta0_trials": trials, "curve": curve}


METHODS = {
    "EG": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed),
    "EG-annealed": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed, anneal_from=10.0),
    "EG-warm": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed, warm_epochs=2),
    "EG-fast": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed, fast_growth=2.0),
    "EG-warm-fast": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed, warm_epochs=2,
                                                                 fast_growth=2.0),
    "EG-annealed-fast": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed,
                                                                     anneal_from=10.0, fast_growth=2.0),
    "EG-warm-fast-gap": lambda st, tr, dv, C, bits, its, seed: run_eg(st, tr, dv, C, bits, its, seed, warm_epochs=2,
                                                                     fast_growth=2.0, gap_sampling=0.8),
    "L-BFGS": lambda st, tr, dv, C, bits, its, seed: run_lbfgs(st, tr, dv, C, bits, int(its)),
    "SGD": lambda st, tr, dv, C, bits, its, seed: run_sgd(st, tr, dv, C, bits, its, seed),
}


def first_within(curve, threshold):
    for point in curve:
        if point["primal"] <= threshold:
            return point["effective_iterations"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=str(CORPUS / "en_ewt-ud-train.conllu"))
    ap.add_argument("--dev", default=str(CORPUS / "en_ewt-ud-dev.conllu"))
    ap.add_argument("--sentences", type=int, default=2000, help="the first N training sentences (0 = all)")
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    ap.add_argument("--iterations", type=float, default=30, help="effective iterations per method")
    ap.add_argument("--hash-bits", type=int, default=22)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--merge", action="store_true", help="add these methods to an existing results JSON")
    ap.add_argument("--lift-nonprojective", action="store_true",
                    help="train on the lifts of the non-projective training trees (DependencyTree's "
                         "lift_nonprojective): with them, a projective CRF's loss is never negative")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "results" / "eg_convergence"))
    args = ap.parse_args()

    train = read_corpus(args.train)
    if args.sentences:
        train = train[: args.sentences]
    dev = read_corpus(args.dev)
    structure = DependencyTree(hash_bits=args.hash_bits, lift_nonprojective=args.lift_nonprojective)
    # A non-projective gold tree lies outside the projective trees that log Z sums over, so its
    # loss log Z - score(gold) can be negative and the primal unbounded by 0; lifting avoids it.
    train = [structure.training_tree(x) for x in train]
    log(f"train: {len(train)} sentences, {sum(s.n for s in train)} words; dev {len(dev)} sentences")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = {"train": args.train, "sentences": len(train), "words": sum(s.n for s in train),
               "hash_bits": args.hash_bits, "iterations": args.iterations,
               "lift_nonprojective": args.lift_nonprojective, "runs": {}}
    if args.merge and out.with_suffix(".json").exists():
        results = json.loads(out.with_suffix(".json").read_text())
    for C in args.C:
        log(f"C = {C}")
        runs = {k: v for k, v in results["runs"].get(str(C), {}).items() if k in METHODS}
        for name in args.methods:
            runs[name] = METHODS[name](structure, train, dev, C, args.hash_bits, args.iterations, args.seed)
        best = min(p["primal"] for r in runs.values() for p in r["curve"])
        threshold = best + 0.01 * abs(best)  # the primal can be negative without lifting
        summary = {"best_primal": best, "within_1_percent": {k: first_within(r["curve"], threshold)
                                                              for k, r in runs.items()}}
        lb_at = summary["within_1_percent"].get("L-BFGS")
        for name in ("EG", "EG-annealed", "EG-warm", "EG-fast", "EG-warm-fast", "EG-annealed-fast", "EG-warm-fast-gap"):
            at = summary["within_1_percent"].get(name)
            if name in runs:
                summary[f"{name}_faster_than_lbfgs"] = at is not None and (lb_at is None or at < lb_at)
        results["runs"][str(C)] = {"summary": summary, **runs}
        log(f"C = {C}: {summary}")
        out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out.with_suffix(".png"))
    print(json.dumps({C: r["summary"] for C, r in results["runs"].items()}, indent=2))


def plot(results, path):
    try:
        import matplotlib
    except ImportError:
        log(f"matplotlib is not installed: no plot ({path} not written)")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 4), squeeze=False)
    for ax, (C, r) in zip(axes[0], runs.items()):
        best = r["summary"]["best_primal"]
        for name, style, color in (("EG", "-o", "C0"), ("EG-annealed", "-x", "C1"), ("L-BFGS", "-s", "C2"),
                                    ("SGD", "-^", "C3"), ("EG-warm", "-d", "C4"), ("EG-fast", "-v", "C5"),
                                    ("EG-warm-fast", "-D", "C6"), ("EG-annealed-fast", "-+", "C7"),
                                    ("EG-warm-fast-gap", "-*", "C8")):
            if name not in r:
                continue
            xs = [p["effective_iterations"] for p in r[name]["curve"]]
            ys = [p["primal"] for p in r[name]["curve"]]
            ax.plot(xs, ys, style, color=color, markersize=3, label=name)
        ax.axhline(best * 1.01, color="grey", linestyle=":", label="best + 1%")
        if best > 0:
            ax.set_yscale("log")
            ax.set_ylim(best * 0.98, best * 10)
        else:  # the raw trees' CRF primal can fall below 0 (see main)
            ax.set_yscale("symlog", linthresh=max(1.0, abs(best)))
            ax.set_ylim(best - 0.02 * abs(best), None)
        ax.set_xlabel("effective iterations")
        ax.set_ylabel("primal objective")
        ax.set_title(f"C = {C}")
        ax.legend()
    fig.suptitle(f"CRF primal, first-order parsing, {results['sentences']} en_ewt training sentences")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
