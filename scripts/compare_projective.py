"""Projective (Eisner) against non-projective (Chu-Liu-Edmonds) first-order parsing on UD
dev sets, with the same trainer, features, weights and example order.

For each treebank: the share of non-projective sentences in train and dev, then a
first-order model trained each way (averaged CSP by default, or EG-CRF), dev UAS after
every epoch on all of dev and on its non-projective sentences, for several seeds
(example orders). The tables report the last epoch (no choice made on dev): one per
seed and their mean. Results go to JSON lines as runs finish, so an
interrupted run continues (--fresh starts over); the table is written as markdown
and JSON.

    python scripts/compare_projective.py                       # 5 treebanks, CSP, 8 epochs, seeds 0 1 2
    python scripts/compare_projective.py --treebanks hu_szeged --epochs 1   # smoke run
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np

from arborist.corpus import read_corpus
from arborist.evaluate import attachment_scores
from arborist.learn.eg import EG
from arborist.learn.perceptron import Perceptron
from arborist.parser.tree import DependencyTree, is_projective

CORPORA = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "ud"
TREEBANKS = ("en_ewt", "el_gdt", "hu_szeged", "tr_imst", "it_partut")


def make_trainer(name: str, seed: int):
    if name == "csp":
        return Perceptron(seed=seed)
    if name == "eg-crf":
        return EG("crf", C=1.0, seed=seed)
    raise ValueError(name)


def run(job) -> dict:
    treebank, projective, trainer_name, epochs, hash_bits, seed = job
    train = read_corpus(CORPORA / treebank / f"{treebank}-ud-train.conllu")
    dev = read_corpus(CORPORA / treebank / f"{treebank}-ud-dev.conllu")
    crossing_dev = [i for i, x in enumerate(dev) if not is_projective(x.heads)]
    tree = DependencyTree(hash_bits=hash_bits, projective=projective)
    trainer = make_trainer(trainer_name, seed)
    trainer.begin(tree, train, hash_bits)
    history = {"dev": [], "dev_nonprojective": [], "seconds": [], "decode_seconds": []}
    for _ in range(epochs):
        metrics = trainer.epoch(tree, train)
        w = trainer.prediction_weights()
        start = time.perf_counter()
        predictions = [(x, tree.argmax(x, tree.scores(x, w)), None) for x in dev]
        history["decode_seconds"].append(time.perf_counter() - start)
        history["dev"].append(attachment_scores(predictions)["uas"])
        crossing = [predictions[i] for i in crossing_dev]
        history["dev_nonprojective"].append(attachment_scores(crossing)["uas"] if crossing else None)
        history["seconds"].append(metrics["epoch_seconds"])
    return {"treebank": treebank, "projective": projective, "trainer": trainer_name, "epochs": epochs,
            "hash_bits": hash_bits, "seed": seed, "history": history,
            "train_nonprojective_share": float(np.mean([not is_projective(x.heads) for x in train])),
            "dev_nonprojective_share": len(crossing_dev) / len(dev), "dev_words": sum(x.n for x in dev)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebanks", nargs="+", default=list(TREEBANKS))
    ap.add_argument("--trainer", choices=("csp", "eg-crf"), default="csp")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--hash-bits", type=int, default=22)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--output", default="scripts/results/projective")
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args()
    cache = Path(f"{args.output}_{args.trainer}_runs.jsonl")
    if args.fresh and cache.exists():
        cache.unlink()
    done = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            r = json.loads(line)
            done[(r["treebank"], r["projective"], r["trainer"], r["epochs"], r["hash_bits"], r["seed"])] = r
    jobs = [(t, p, args.trainer, args.epochs, args.hash_bits, seed) for seed in args.seeds for t in args.treebanks
            for p in (True, False)]
    todo = [j for j in jobs if j not in done]
    with multiprocessing.Pool(args.processes) as pool:
        for r in pool.imap_unordered(run, todo):
            done[(r["treebank"], r["projective"], r["trainer"], r["epochs"], r["hash_bits"], r["seed"])] = r
            with cache.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{r['treebank']} projective={r['projective']} seed {r['seed']}: dev UAS {r['history']['dev'][-1]:.2f}",
                  flush=True)
    tables, lines = {}, []
    for seed in args.seeds:
        tables[seed] = table(done, args, seed)
        lines += [f"Seed {seed}:", ""] + markdown(tables[seed]) + [""]
    mean_rows = [{k: (float(np.mean([tables[seed]["rows"][i][k] for seed in args.seeds]))
                      if k not in ("treebank", "epoch_seconds") else row[k]) for k, v in row.items()}
                 for i, row in enumerate(tables[args.seeds[0]]["rows"])]
    mean = {"rows": mean_rows, "average": {k: float(np.mean([tables[s]["average"][k] for s in args.seeds]))
                                           for k in ("projective", "nonprojective")}}
    head = [f"Dev UAS after {args.epochs} epochs of {args.trainer}, first order, 2^{args.hash_bits} weights, gold tags, "
            f"mean over seeds {', '.join(map(str, args.seeds))}:", ""]
    lines = head + markdown(mean) + [""] + lines
    Path(f"{args.output}_{args.trainer}.md").write_text("\n".join(lines))
    Path(f"{args.output}_{args.trainer}.json").write_text(json.dumps({"mean": mean, "per_seed": tables,
                                                                      "settings": vars(args)}, indent=1))
    print("\n".join(lines))


def table(done: dict, args, seed: int) -> dict:
    rows = []
    for t in args.treebanks:
        p, q = (done[(t, flag, args.trainer, args.epochs, args.hash_bits, seed)] for flag in (True, False))
        rows.append({"treebank": t, "train_nonprojective": 100 * p["train_nonprojective_share"],
                     "dev_nonprojective": 100 * p["dev_nonprojective_share"],
                     "projective": p["history"]["dev"][-1], "nonprojective": q["history"]["dev"][-1],
                     "projective_on_crossing": p["history"]["dev_nonprojective"][-1],
                     "nonprojective_on_crossing": q["history"]["dev_nonprojective"][-1],
                     "projective_best_epoch": max(p["history"]["dev"]), "nonprojective_best_epoch": max(q["history"]["dev"]),
                     "epoch_seconds": (float(np.median(p["history"]["seconds"])), float(np.median(q["history"]["seconds"])))})
    return {"rows": rows, "average": {k: float(np.mean([r[k] for r in rows])) for k in ("projective", "nonprojective")}}


def markdown(result: dict) -> list[str]:
    rows, mean = result["rows"], result["average"]
    lines = ["| treebank | non-proj. sentences train / dev | projective | non-projective | difference "
             "| on non-proj. dev sentences: proj. / non-proj. |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        crossing = (f"{r['projective_on_crossing']:.2f} / {r['nonprojective_on_crossing']:.2f}"
                    if r["projective_on_crossing"] is not None else "—")
        lines.append(f"| {r['treebank']} | {r['train_nonprojective']:.1f}% / {r['dev_nonprojective']:.1f}% "
                     f"| {r['projective']:.2f} | {r['nonprojective']:.2f} | {r['nonprojective'] - r['projective']:+.2f} "
                     f"| {crossing} |")
    lines.append(f"| average | | {mean['projective']:.2f} | {mean['nonprojective']:.2f} "
                 f"| {mean['nonprojective'] - mean['projective']:+.2f} | |")
    return lines


if __name__ == "__main__":
    main()
