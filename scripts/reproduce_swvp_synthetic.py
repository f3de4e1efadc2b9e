"""Table 1 of Dror and Reichart (SWVP) on the Section 6 HMM data: CSP against the four
SWVP variants (B-WM, B-WMR, A-WM, A-WMR) on first-order linear chains.

For each setup (3) and dataset (10, `arborist.synthetic.dataset`): train CSP and every
SWVP variant for each beta in {0.5, 1, ..., 5}, all averaged, for the same number of
epochs with the same example order; pick each variant's beta on dev, report its
test accuracy (mean and std over the datasets), its wins over CSP, and "Gener." (the
dev-chosen beta's test accuracy is within 0.5 points of the best beta's on test).
The true HMM's test accuracy is reported with Viterbi decoding (the most probable
sequence) and with posterior decoding (the most probable state per position, the
Bayes-optimal tag accuracy and so the ceiling; Viterbi is not, and a learned model
can beat it).

Results per dataset are appended to a JSON-lines file as they finish, so an
interrupted run continues where it stopped (--fresh starts over).

    python scripts/reproduce_swvp_synthetic.py            # everything: about 40 min on 2 cores
    python scripts/reproduce_swvp_synthetic.py --datasets 2 --epochs 3 --betas 1 2   # a smoke run
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np

from arborist.experiments import synthetic
from arborist.learn.perceptron import SWVP, Perceptron
from arborist.tagger.chain import LinearChain

VARIANTS = {"B-WM": ("wm", False), "B-WMR": ("wmr", False), "A-WM": ("wm", True), "A-WMR": ("wmr", True)}
BETAS = tuple(b / 2 for b in range(1, 11))
HASH_BITS = 16
# Seed's Table 1: (mean, std, wins) per setup.
SEED_TABLE = {
    "B-WM": [(75.47, 3.05, 9), (63.18, 1.32, 9), (28.48, 1.9, 5)],
    "B-WMR": [(75.96, 2.42, 8), (63.02, 2.49, 9), (24.31, 5.2, 4)],
    "A-WM": [(74.18, 2.16, 7), (61.65, 2.30, 9), (30.45, 1.0, 6)],
    "A-WMR": [(75.17, 3.07, 7), (61.02, 1.93, 8), (25.8, 3.18, 2)],
    "CSP": [(72.24, 3.45, None), (57.89, 2.85, None), (25.27, 8.55, None)],
}


def accuracy(chain, weights, sentences, states) -> float:
    pred = np.array([chain.argmax(x, chain.scores(x, weights)) for x in sentences])
    return float((pred == states).mean())


def train_run(trainer, setup, data, epochs) -> dict:
    """Train on data["train"]; dev and test accuracy (percent) after every epoch."""
    chain = LinearChain(synthetic.tag_names(setup), attribute="upos", templates=synthetic.HMM_TEMPLATES,
                        hash_bits=HASH_BITS)
    trainer.begin(chain, data["train"][0], HASH_BITS)
    history = {"dev": [], "test": [], "updates": [], "backoffs": []}
    for _ in range(epochs):
        metrics = trainer.epoch(chain, data["train"][0])
        w = trainer.prediction_weights()
        for split in ("dev", "test"):
            history[split].append(100 * accuracy(chain, w, data[split][0], data[split][1]))
        history["updates"].append(metrics["updates"])
        history["backoffs"].append(metrics["backoffs"])
    return history


def run_dataset(job) -> dict:
    setup, index, epochs, betas = job
    start = time.perf_counter()
    _, arrays = synthetic.dataset(setup, index)
    data = {split: (synthetic.to_sentences(states, obs, f"hmm{setup}-{index}-{split}"), states)
            for split, (states, obs) in arrays.items()}
    runs = {"CSP": {"-": train_run(Perceptron(seed=0), setup, data, epochs)}}
    for variant, (weighting, aggressive) in VARIANTS.items():
        runs[variant] = {str(beta): train_run(SWVP("single", weighting, aggressive, beta, seed=0), setup, data, epochs)
                         for beta in betas}
    return {"setup": setup, "dataset": index, "epochs": epochs, "betas": list(betas),
            "runs": runs, "seconds": time.perf_counter() - start}


def true_model_accuracy(setup: int, index: int) -> dict:
    """Test accuracy (%) of the true HMM: Viterbi (the most probable sequence) and posterior
    decoding (the most probable state per position, the Bayes-optimal tag accuracy)."""
    hmm, arrays = synthetic.dataset(setup, index)
    states, observations = arrays["test"]
    return {"viterbi": 100 * float(np.mean([(hmm.viterbi(o) == s).mean() for s, o in zip(states, observations)])),
            "posterior": 100 * float(np.mean([(hmm.posterior_decode(o) == s).mean()
                                              for s, o in zip(states, observations)]))}


def summarize(results: list[dict]) -> dict:
    """Per setup and variant: test accuracy at the dev-chosen beta (final epoch), wins, Gener."""
    table = {}
    for setup in sorted({r["setup"] for r in results}):
        rows = sorted((r for r in results if r["setup"] == setup), key=lambda r: r["dataset"])
        csp = [r["runs"]["CSP"]["-"]["test"][-1] for r in rows]
        truth = [true_model_accuracy(setup, r["dataset"]) for r in rows]
        entry = {"datasets": len(rows), "true_model": _stats([t["viterbi"] for t in truth]),
                 "true_model_posterior": _stats([t["posterior"] for t in truth]),
                 "CSP": {**_stats(csp), "test": csp}}
        for variant in VARIANTS:
            chosen, wins, gener, betas, backoff = [], 0, 0, [], []
            for r, c in zip(rows, csp):
                by_beta = r["runs"][variant]
                beta = max(by_beta, key=lambda b: (by_beta[b]["dev"][-1], -float(b)))
                test = by_beta[beta]["test"][-1]
                chosen.append(test)
                betas.append(float(beta))
                wins += test > c
                gener += test >= max(h["test"][-1] for h in by_beta.values()) - 0.5
                run = by_beta[beta]
                backoff.append(sum(run["backoffs"]) / max(sum(run["updates"]), 1))
            entry[variant] = {**_stats(chosen), "test": chosen, "wins": wins, "gener": gener, "beta": betas,
                              "backoff_share": float(np.mean(backoff))}
        table[str(setup)] = entry
    return table


def _stats(values) -> dict:
    return {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0}


def markdown(table: dict) -> str:
    setups = sorted(table, key=int)
    head = "| model | " + " | ".join(f"setup {s}: {synthetic.SETUP_NAMES[int(s)]}" for s in setups) + " |"
    lines = ["### Measured (test accuracy %, mean (std) over datasets; wins over CSP; Gener.)", "",
             head, "|---|" + "---|" * len(setups)]
    for variant in list(VARIANTS) + ["CSP"]:
        cells = []
        for s in setups:
            e = table[s][variant]
            n = table[s]["datasets"]
            extra = f"; {e['wins']}/{n} wins; {e['gener']}/{n} gener." if variant != "CSP" else ""
            cells.append(f"{e['mean']:.2f} ({e['std']:.2f}){extra}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines.append("| true HMM, Viterbi | " + " | ".join(
        f"{table[s]['true_model']['mean']:.2f} ({table[s]['true_model']['std']:.2f})" for s in setups) + " |")
    lines.append("| true HMM, posterior decoding | " + " | ".join(
        f"{table[s]['true_model_posterior']['mean']:.2f} ({table[s]['true_model_posterior']['std']:.2f})"
        for s in setups) + " |")
    lines.append("| B-/A- back-off share (updates that fell back to CSP's) | " + " | ".join(
        ", ".join(f"{v} {table[s][v]['backoff_share']:.2f}" for v in VARIANTS) for s in setups) + " |")
    lines += ["", "### The seed's Table 1", "", head, "|---|" + "---|" * len(setups)]
    for variant, cells in SEED_TABLE.items():
        row = [f"{m:.2f} ({sd:.2f})" + (f"; {w}/10 wins" if w is not None else "")
               for (m, sd, w), s in zip(cells, ("1", "2", "3")) if s in setups]
        lines.append(f"| {variant} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setups", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--datasets", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--betas", type=float, nargs="+", default=list(BETAS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="scripts/results/swvp_synthetic")
    ap.add_argument("--fresh", action="store_true", help="ignore results of an earlier run")
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs_path = out.with_name(out.name + "_runs.jsonl")
    done = []
    if runs_path.exists() and not args.fresh:
        done = [json.loads(line) for line in runs_path.read_text().splitlines() if line.strip()]
        done = [r for r in done if r["epochs"] == args.epochs and r["betas"] == list(args.betas)]
    elif runs_path.exists():
        runs_path.unlink()
    have = {(r["setup"], r["dataset"]) for r in done}
    jobs = [(s, i, args.epochs, tuple(args.betas)) for s in args.setups for i in range(args.datasets)
            if (s, i) not in have]
    print(f"{len(have)} datasets done earlier, {len(jobs)} to run", flush=True)
    with multiprocessing.Pool(args.workers) as pool, runs_path.open("a") as sink:
        for result in pool.imap_unordered(run_dataset, jobs):
            sink.write(json.dumps(result) + "\n")
            sink.flush()
            done.append(result)
            print(f"setup {result['setup']} dataset {result['dataset']}: CSP "
                  f"{result['runs']['CSP']['-']['test'][-1]:.2f} "
                  f"({result['seconds']:.0f} s)", flush=True)
    wanted = [r for r in done if r["setup"] in args.setups and r["dataset"] < args.datasets]
    table = summarize(wanted)
    json_path = out.with_suffix(".json")
    json_path.write_text(json.dumps({"epochs": args.epochs, "betas": list(args.betas), "hash_bits": HASH_BITS,
                                     "table": table}, indent=2))
    out.with_suffix(".md").write_text(markdown(table))
    print(markdown(table))


if __name__ == "__main__":
    main()
