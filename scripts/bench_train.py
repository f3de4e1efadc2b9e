"""Training speed: seconds per epoch of one or more configs' trainers, in one run.

Builds each config's structure and trainer, runs `--epochs` epochs of each on
the first config's training file, interleaved (A, B, A, B, ...) so that a noisy
shared machine slows them alike, and reports the median epoch time and its ratio
to the first config's. Reading the corpus and dev evaluation are not timed; a
trainer's set-up (EG: the initialization pass and eta_ini search) is reported
apart. For trainers that also compute objectives each epoch (EG's primal, dual
and gap: a monitoring pass), the training pass alone is reported as well.
Writes JSON.

    python scripts/bench_train.py --config configs/en_ewt_perceptron.cfg --config configs/en_ewt_eg_crf.cfg
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
    ap.add_argument("--config", action="append", help="repeatable; default configs/en_ewt_perceptron.cfg")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--output", default="scripts/results/bench_train.json")
    args = ap.parse_args()
    configs = args.config or ["configs/en_ewt_perceptron.cfg"]

    runs = []
    sentences = None
    for path in configs:
        resolved = registry.resolve(load_config(path))
        if sentences is None:
            corpus = resolved["training"]["train_path"]
            sentences = read_corpus(corpus)
        # The config's parser, or its only component (a tagger config).
        components = resolved["components"]
        name = "parser" if "parser" in components else next(iter(components))
        structure, trainer = components[name]["structure"], components[name]["trainer"]
        structure.initialize(sentences)
        start = time.perf_counter()
        trainer.begin(structure, sentences, structure.hash_bits)
        runs.append({"config": path, "component": name, "trainer": type(trainer).__name__, "structure": structure, "obj": trainer,
                     "hash_bits": structure.hash_bits, "setup_seconds": time.perf_counter() - start,
                     "seconds_per_epoch": [], "training_pass_seconds": []})
    for _ in range(args.epochs):
        for run in runs:
            start = time.perf_counter()
            metrics = run["obj"].epoch(run["structure"], sentences)
            run["seconds_per_epoch"].append(time.perf_counter() - start)
            run["training_pass_seconds"].append(metrics.get("epoch_seconds", run["seconds_per_epoch"][-1]))
    base = statistics.median(runs[0]["training_pass_seconds"])
    for run in runs:
        del run["obj"], run["structure"]
        run["seconds_per_epoch_median"] = statistics.median(run["seconds_per_epoch"])
        run["training_pass_seconds_median"] = statistics.median(run["training_pass_seconds"])
        run["training_pass_ratio_to_first"] = run["training_pass_seconds_median"] / base
        run["epoch_ratio_to_first"] = run["seconds_per_epoch_median"] / statistics.median(runs[0]["seconds_per_epoch"])
    result = {
        "benchmark": "train",
        "corpus": corpus,
        "sentences": len(sentences),
        "words": sum(s.n for s in sentences),
        "epochs": args.epochs,
        "runs": runs,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
