"""Distance pruning (`prune_distances`) on a trained first-order parser: the same weights
parsing the dev set with and without it.

    python scripts/bench_prune_distances.py MODEL [MODEL ...] [--treebank en_ewt] [--repeat 3]

Each MODEL's parser (trained with or without the option: training scores every arc either
way) learns the distance table from the treebank's training file (gold tags, as a parser
trained on gold tags is) and parses the dev file with the batch kernel, alternately with and
without pruning, --repeat times (CPU time of `predict_batch`, medians). Reports dev UAS of
both, the share of arcs pruning keeps, the gold arcs it drops, and words per CPU second.
The parser reads the dev file's own tags (gold), as `arborist evaluate --gold-tags` does.
Writes scripts/results/prune_distances_<treebank>.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parent.parent / "shared" / "corpora" / "ud"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--treebank", default="en_ewt")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()

    from arborist.corpus import read_corpus
    from arborist.model import load
    from arborist.sentence import SentenceBatch

    base = CORPORA / args.treebank / f"{args.treebank}-ud-"
    train = list(read_corpus(base.with_name(base.name + "train.conllu")))
    dev = list(read_corpus(base.with_name(base.name + "dev.conllu")))
    batch = SentenceBatch.from_sentences(dev)
    words = sum(x.n for x in dev)
    gold = np.concatenate([x.heads for x in dev])
    is_word = batch.words

    results = []
    for path in args.models:
        parser = load(path).components["parser"]
        tree = parser.structure
        if tree.order != 1 or not tree.projective:
            raise SystemExit(f"{path}: the benchmark times the batch kernel of first-order projective parsers")
        trained_with = tree.prune_distances
        tree.prune_distances, tree.max_distances = True, None
        tree.learn_max_distances(train)
        kept = dropped_gold = arcs = 0
        for x in dev:
            keep = tree.kept_arcs(x)
            kept += int(keep.sum())
            arcs += x.n * x.n
            dropped_gold += int((~keep[x.heads[1:], np.arange(1, x.n + 1)]).sum())
        runs = {"unpruned": [], "pruned": []}
        heads = {}
        for _ in range(args.repeat):
            for name, prune in (("unpruned", False), ("pruned", True)):
                tree.prune_distances = prune
                start = time.process_time()
                heads[name] = tree.predict_batch(batch, parser.weights)
                runs[name].append(words / (time.process_time() - start))
        row = {"model": str(path), "trained_with_prune_distances": trained_with,
               "arcs_kept_percent": 100.0 * kept / arcs, "gold_arcs_dropped": dropped_gold, "words": words}
        for name in runs:
            right = int((heads[name][is_word] == gold[is_word]).sum())
            row[name] = {"dev_uas": 100.0 * right / words,
                         "words_per_cpu_second_median": int(statistics.median(runs[name])),
                         "words_per_cpu_second_runs": [int(r) for r in runs[name]]}
        row["heads_changed"] = int((heads["pruned"][is_word] != heads["unpruned"][is_word]).sum())
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    out = args.output or HERE / "results" / f"prune_distances_{args.treebank}.json"
    out.write_text(json.dumps({"benchmark": "prune_distances", "treebank": args.treebank, "train": len(train),
                               "dev_words": words, "repeat": args.repeat, "results": results}, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
