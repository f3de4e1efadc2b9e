"""Training speed: seconds per epoch of a config's trainer on its training set.

Builds the structure and trainer from the config (default: the en_ewt
first-order perceptron), runs `--epochs` epochs on the training file and reports
the median epoch time; reading the corpus and dev evaluation are not timed.
Writes JSON.

    python scripts/bench_train.py [--config configs/en_ewt_perceptron.cfg] [--epochs 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from arborist.corpus import read_corpus
from arborist.registry import registry
from arborist.train import load_config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/en_ewt_perceptron.cfg")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--output", default="scripts/results/bench_train.json")
    args = ap.parse_args()

    config = load_config(args.config)
    resolved = registry.resolve(config)
    structure, trainer = resolved["structure"], resolved["trainer"]
    sentences = read_corpus(resolved["training"]["train_path"])
    trainer.begin(structure, sentences, structure.hash_bits)
    epochs = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        trainer.epoch(structure, sentences)
        epochs.append(time.perf_counter() - start)
    result = {
        "benchmark": "train",
        "config": args.config,
        "trainer": type(trainer).__name__,
        "corpus": resolved["training"]["train_path"],
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
