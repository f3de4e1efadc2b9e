"""Training speed: seconds per perceptron epoch on a treebank (first order).

Runs `--epochs` epochs of the averaged perceptron on the training file and
reports the median epoch time (dev evaluation is not included). Writes JSON.

    python scripts/bench_train.py [--corpus ../shared/corpora/ud/en_ewt/en_ewt-ud-train.conllu]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from arborist.corpus import read_corpus
from arborist.learn.perceptron import Perceptron
from arborist.parser.tree import DependencyTree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpora/ud/en_ewt/en_ewt-ud-train.conllu")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--hash-bits", type=int, default=None)
    ap.add_argument("--output", default="scripts/results/bench_train.json")
    args = ap.parse_args()

    sentences = read_corpus(args.corpus)
    structure = DependencyTree() if args.hash_bits is None else DependencyTree(hash_bits=args.hash_bits)
    trainer = Perceptron(seed=0)
    trainer.begin(structure, sentences, structure.hash_bits)
    epochs = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        trainer.epoch(structure, sentences)
        epochs.append(time.perf_counter() - start)
    result = {
        "benchmark": "train",
        "trainer": "perceptron",
        "corpus": args.corpus,
        "sentences": len(sentences),
        "words": sum(s.n for s in sentences),
        "hash_bits": structure.hash_bits,
        "seconds_per_epoch_median": statistics.median(epochs),
        "seconds_per_epoch": epochs,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
