"""Figure 3 of Zhu and Xing (seeds/003 §7.1.1): M3N, Laplace MaxEnDNet, L2-CRF and L1-CRF
on sequences from random linear-chain CRFs with 100 i.i.d. inputs, 10/30/50 relevant.

For each number of relevant inputs and each of `--models` data sets
(`arborist.synthetic_crf.dataset`: 1,000 samples, Gibbs-sampled labels), a random
training set of each size (30, 50, 80, 100, 150; the rest is the test set), the
regularization constant of every method chosen by 5-fold cross-validation on the
training set (lowest mean Hamming error on the held-out folds), then the method is
trained on the whole training set and its per-label error measured on the test set.

  M3N       EG on the M3N dual (`arborist.learn.eg`), C from {1, 4, 16, 64, 256, 1024}
            (EG's C multiplies C/2 ||w||^2: the inverse of the paper's C; the paper gives
            no grid, and a first run chose the top of {0.1, ..., 256}), `--epochs` epochs
  LapMEDN   `arborist.learn.medn.MaxEnDNet`: Algorithm 1 with Sigma^1 = I and lambda from
            10 evenly spaced values in [1, 268] (§7.1.1 has 20; 10 halve the cost) on inputs scaled by
            1/sqrt(C_M3N), C_M3N being M3N's cross-validated C; run as C = 1,
            Sigma^1 = I / C_M3N and lambda x C_M3N (the same problem), so the first outer
            iteration is exactly the chosen M3N. The paper gives neither M3N's C nor the
            input scale; without the scaling (C = 1, Sigma^1 = I) a first run was far
            under-regularized at small sizes (error 0.36 against M3N's 0.22, 30 relevant,
            30 training sequences). 3 outer iterations of `--epochs` / 3 EG epochs each (the
            paper's 3 iterations); the first does not depend on lambda, so it is run once
            per fold and copied
  L2-CRF    CRF primal + C/2 ||w||^2, C from {0.01, 0.1, 1, 4, 9, 16}, L-BFGS (scipy)
  L1-CRF    CRF primal + C ||w||_1, same grid, L-BFGS-B on w = p - m (no OWL-QN in
            scipy; `arborist.learn.baselines.penalized_lbfgs`)

Finished cells (relevant, model, size) are cached in the JSON as they finish, so an
interrupted run continues where it stopped (--fresh starts over). The plot has one
panel per number of relevant inputs: mean test error against training size.

    python scripts/reproduce_medn_synthetic.py                   # everything
    python scripts/reproduce_medn_synthetic.py --models 2 --sizes 30 --sweeps 100   # a smoke run
    python scripts/reproduce_medn_synthetic.py --report   # table and plot of the models finished so far
    # LapMEDN again with a wider lambda grid, the other methods copied from the first run:
    python scripts/reproduce_medn_synthetic.py --methods LapMEDN --reuse scripts/results/medn_synthetic.json \
        --lambdas 0.0625 0.125 0.25 0.5 1 30.67 60.33 90 119.67 149.33 179 208.67 238.33 268 \
        --output scripts/results/medn_synthetic_wide_lambda.json
    # ... and with the paper's grid, 20 evenly spaced values from 1 to 268:
    python scripts/reproduce_medn_synthetic.py --methods LapMEDN --reuse scripts/results/medn_synthetic.json \
        --lambdas $(python -c "import numpy; print(*numpy.linspace(1, 268, 20).round(2))") \
        --output scripts/results/medn_synthetic_paper_lambda.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from arborist.experiments import synthetic_crf
from arborist.learn.baselines import penalized_lbfgs
from arborist.learn.eg import EG
from arborist.learn.medn import MaxEnDNet, sparsity
from arborist.weights import Weights
from arborist.tagger.dense import DenseChain, batch_nll

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("M3N", "LapMEDN", "L2-CRF", "L1-CRF")
C_GRID = (0.01, 0.1, 1.0, 4.0, 9.0, 16.0)  # the CRFs' (§7.1.1)
M3N_GRID = (1.0, 4.0, 16.0, 64.0, 256.0, 1024.0)
LAMBDAS = tuple(float(v) for v in np.linspace(1.0, 268.0, 10).round(2))
FOLDS = 5
CHAIN = DenseChain(synthetic_crf.N_INPUTS, synthetic_crf.N_TAGS)


def error(weights: np.ndarray, inputs: np.ndarray, labels: np.ndarray) -> float:
    """Share of wrongly labelled positions under Viterbi decoding with `weights`."""
    w = Weights(CHAIN.hash_bits, False, np.pad(weights, (0, (1 << CHAIN.hash_bits) - weights.size)))
    wrong = sum(int((CHAIN.argmax(None, CHAIN.scores(_seq(x), w)) != y).sum()) for x, y in zip(inputs, labels))
    return wrong / labels.size


def _seq(x):
    return synthetic_crf.DenseSequence(x, np.zeros(len(x), np.int32))


def run_eg(trainer, examples, epochs):
    trainer.begin(CHAIN, examples, CHAIN.hash_bits)
    for _ in range(epochs):
        trainer.finish_epoch(trainer.epoch(CHAIN, examples))
    return trainer


def fit(method: str, reg: float, inputs, labels, epochs: int, seed: int, C: float = 1.0) -> np.ndarray:
    """The weights (first CHAIN.n_weights slots) of one method trained on (inputs, labels);
    `reg` is the paper's lambda for LapMEDN (with M3N's C = `C`), else the regularization constant."""
    if method in ("L2-CRF", "L1-CRF"):
        loss = lambda w: batch_nll(CHAIN, inputs, labels, w)
        return penalized_lbfgs(loss, CHAIN.n_weights, reg, "l2" if method == "L2-CRF" else "l1")
    examples = synthetic_crf.sequences(inputs, labels)
    if method == "M3N":
        trainer = EG("m3n", reg, "random", objectives_every=10**9, seed=seed)
        return run_eg(trainer, examples, epochs).prediction_weights().array[:CHAIN.n_weights]
    return lapmedn_path(examples, [reg], epochs, seed, C)[0]


def lapmedn_path(examples, lambdas, epochs, seed, C) -> list[np.ndarray]:
    """LapMEDN for every lambda (on inputs scaled by 1/sqrt(C): see the module doc); outer
    iteration 1 (EG-M3N at C) is shared."""
    inner = epochs // 3
    make = lambda: MaxEnDNet("laplace", 1.0, 1.0, inner_epochs=inner, initial_variance=1.0 / C,
                             objectives_every=10**9, seed=seed)
    first = run_eg(make(), examples, inner)
    arrays, meta = first.state()
    out = []
    for lam in lambdas:
        trainer = make()
        trainer.restore(CHAIN, examples, {k: v.copy() for k, v in arrays.items()}, meta)
        trainer.lam = float(lam) * C
        for _ in range(epochs - inner):
            trainer.finish_epoch(trainer.epoch(CHAIN, examples))
        out.append(trainer.prediction_weights().array[:CHAIN.n_weights].copy())
    return out


def cross_validate(method, grid, inputs, labels, epochs, seed, C=1.0) -> tuple[float, list[float]]:
    """The grid value of lowest mean held-out error over FOLDS folds, and the errors."""
    folds = np.arange(len(inputs)) % FOLDS
    errors = np.zeros(len(grid))
    for k in range(FOLDS):
        train, held = folds != k, folds == k
        if method == "LapMEDN":
            weights = lapmedn_path(synthetic_crf.sequences(inputs[train], labels[train]), grid, epochs, seed + k, C)
        else:
            weights = [fit(method, reg, inputs[train], labels[train], epochs, seed + k) for reg in grid]
        errors += [error(w, inputs[held], labels[held]) for w in weights]
    errors /= FOLDS
    return float(grid[int(np.argmin(errors))]), errors.tolist()


def cell(data, relevant, model, size, epochs, lambdas=LAMBDAS, methods=METHODS, reused=None) -> dict:
    """One (relevant, model, size) cell: every method's test error; the methods not in
    `methods` are copied from `reused` (the same cell of an earlier run)."""
    truth, inputs, labels = data
    rng = np.random.default_rng([relevant, model, size])
    order = rng.permutation(len(inputs))
    train, test = order[:size], order[size:]
    out = {"relevant": relevant, "model": model, "size": size}
    for method in METHODS:
        if method not in methods:
            out[method] = reused[method]
            continue
        start = time.perf_counter()
        grid = {"M3N": M3N_GRID, "LapMEDN": lambdas}.get(method, C_GRID)
        C = out["M3N"]["chosen"] if method == "LapMEDN" else 1.0  # M3N runs first
        chosen, cv = cross_validate(method, grid, inputs[train], labels[train], epochs, model, C)
        w = fit(method, chosen, inputs[train], labels[train], epochs, model, C)
        state, _ = CHAIN.split(w)
        out[method] = {"error": error(w, inputs[test], labels[test]), "chosen": chosen, "cv_errors": cv,
                       "irrelevant_weight_share": float(np.abs(state[relevant:]).sum() / max(np.abs(state).sum(), 1e-300)),
                       **sparsity(w), "seconds": time.perf_counter() - start}
    out["true_model_error"] = error(truth, inputs[test], labels[test])
    return out


def summarize(cells: list[dict], sizes, relevants) -> dict:
    table = {}
    for r in relevants:
        for size in sizes:
            rows = [c for c in cells if c["relevant"] == r and c["size"] == size]
            if rows:
                table[f"{r}/{size}"] = {"models": len(rows), **{m: float(np.mean([c[m]["error"] for c in rows]))
                                                               for m in METHODS},
                                        "true_model": float(np.mean([c["true_model_error"] for c in rows]))}
    return table


def markdown(table: dict) -> str:
    lines = ["| relevant | train size | models | " + " | ".join(METHODS) + " | true CRF |",
             "|---:|---:|---:|" + "---:|" * (len(METHODS) + 1)]
    for key, row in table.items():
        r, size = key.split("/")
        best = min(row[m] for m in METHODS)
        cells = [f"**{row[m]:.4f}**" if row[m] == best else f"{row[m]:.4f}" for m in METHODS]
        lines.append(f"| {r} | {size} | {row['models']} | " + " | ".join(cells) + f" | {row['true_model']:.4f} |")
    return "\n".join(lines)


def plot(table: dict, relevants, sizes, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(relevants), figsize=(4.5 * len(relevants), 3.6), squeeze=False)
    for ax, r in zip(axes[0], relevants):
        for m in METHODS:
            xs = [s for s in sizes if f"{r}/{s}" in table]
            ax.plot(xs, [table[f"{r}/{s}"][m] for s in xs], marker="o", label=m)
        ax.set_title(f"{r} relevant features")
        ax.set_xlabel("training size")
        ax.set_ylabel("test error rate")
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--relevant", type=int, nargs="+", default=list(synthetic_crf.RELEVANT))
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 50, 80, 100, 150])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--sweeps", type=int, default=synthetic_crf.GIBBS_SWEEPS)
    parser.add_argument("--epochs", type=int, default=45, help="EG epochs (LapMEDN: 3 outer iterations of a third)")
    parser.add_argument("--output", type=Path, default=RESULTS / "medn_synthetic.json")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--report", action="store_true", help="only write the table and plot of the cells done")
    parser.add_argument("--lambdas", type=float, nargs="+", default=list(LAMBDAS), help="LapMEDN's grid")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS),
                        help="run only these; the others come from --reuse")
    parser.add_argument("--reuse", type=Path, help="an earlier run's JSON: the results of the methods "
                        "not in --methods are copied from its cells (LapMEDN needs M3N's chosen C)")
    args = parser.parse_args()
    settings = {"sweeps": args.sweeps, "epochs": args.epochs, "C_grid": C_GRID, "M3N_grid": M3N_GRID,
                "lambdas": args.lambdas, "lapmedn": "C = 1, Sigma^1 = I / C_M3N, lambda x C_M3N", "folds": FOLDS}
    reused = {}
    if set(args.methods) != set(METHODS):
        if args.reuse is None:
            raise SystemExit("--methods without every method needs --reuse (the other methods' results)")
        old = json.loads(args.reuse.read_text())
        if any(old["settings"][k] != settings[k] for k in ("sweeps", "epochs", "folds")):
            raise SystemExit(f"{args.reuse} was run with other sweeps, epochs or folds")
        reused = {(c["relevant"], c["model"], c["size"]): c for c in old["cells"]}
        settings["reused"] = {"from": args.reuse.name, "methods": [m for m in METHODS if m not in args.methods]}
    cells = []
    if args.output.exists() and not args.fresh:
        saved = json.loads(args.output.read_text())
        if saved["settings"] != json.loads(json.dumps(settings)):
            raise SystemExit(f"{args.output} was written with other settings; use --fresh or another --output")
        cells = saved["cells"]
    done = {(c["relevant"], c["model"], c["size"]) for c in cells}
    # Model by model, so that a partial run has every size for the models it finished.
    for model in range(0 if args.report else args.models):
        for r in args.relevant:
            todo = [s for s in args.sizes if (r, model, s) not in done
                    and (not reused or (r, model, s) in reused)]
            if not todo:
                continue
            data = synthetic_crf.dataset(r, model, sweeps=args.sweeps)
            for size in todo:
                result = cell(data, r, model, size, args.epochs, args.lambdas, args.methods,
                              reused.get((r, model, size)))
                cells.append(result)
                print(f"relevant {r} model {model} size {size}: "
                      + ", ".join(f"{m} {result[m]['error']:.4f} ({result[m]['chosen']:g})" for m in METHODS)
                      + f"; true {result['true_model_error']:.4f}; "
                      + f"{sum(result[m]['seconds'] for m in METHODS):.1f} s", flush=True)
                table = summarize(cells, args.sizes, args.relevant)
                tmp = args.output.with_suffix(".tmp")
                tmp.write_text(json.dumps({"settings": settings, "table": table, "cells": cells}, indent=1) + "\n")
                tmp.replace(args.output)
    if args.report:  # only models with every cell, so each row averages the same data sets
        complete = {m for m in {c["model"] for c in cells}
                    if sum(c["model"] == m for c in cells) == len(args.sizes) * len(args.relevant)}
        cells = [c for c in cells if c["model"] in complete]
        print(f"models with every cell: {sorted(complete)}")
    table = summarize(cells, args.sizes, args.relevant)
    text = markdown(table)
    print(text)
    args.output.with_suffix(".md").write_text(text + "\n")
    plot(table, args.relevant, args.sizes, args.output.with_suffix(".png"))


if __name__ == "__main__":
    main()
