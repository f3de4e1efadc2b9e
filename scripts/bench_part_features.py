"""Second-order feature speed: a trained parser's scores() and add_features() over the pruned
dev sentences (the two calls every EG and perceptron visit makes), in one process.

    python scripts/bench_part_features.py MODEL [--repeat 5] [--threads 2] [--output F]

Reports the median of the repeats in microseconds per sentence for each call (the parts
each sentence has are fixed by the pruner, so the work is the same from run to run). With
--threads 2, each repeat also makes the calls within `scoring_threads(structure, 2)` (the
part helper of `[training] workers = 2`), alternated with the one-thread calls."""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import arborist
from arborist.corpus import read_corpus
from arborist.structure import scoring_threads
from arborist.weights import Weights


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--corpus", default="../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--output", default=None)
    args = ap.parse_args()

    parser = arborist.load(args.model).writer("head")
    sentences = read_corpus(args.corpus)
    examples = parser.examples(sentences)
    structure, weights = parser.structure, parser.weights
    coefs = [np.random.default_rng(i).standard_normal(x.layout.n_parts) * 1e-3
             for i, x in enumerate(examples)]
    target = Weights(weights.bits, False, weights.array.copy())
    suffixes = {1: ""} if args.threads < 2 else {1: "", args.threads: f"_{args.threads}_threads"}
    runs = {call + suffix: [] for suffix in suffixes.values() for call in ("scores", "add_features")}
    for _ in range(args.repeat):
        for threads, suffix in suffixes.items():
            with scoring_threads(structure, threads):
                start = time.perf_counter()
                for x in examples:
                    structure.scores(x, weights)
                runs["scores" + suffix].append((time.perf_counter() - start) / len(examples) * 1e6)
                start = time.perf_counter()
                for x, c in zip(examples, coefs):
                    structure.add_features(x, c, target, 1.0)
                runs["add_features" + suffix].append((time.perf_counter() - start) / len(examples) * 1e6)
    result = {
        "benchmark": "part_features",
        "model": str(args.model),
        "corpus": args.corpus,
        "sentences": len(examples),
        "parts": int(sum(x.layout.n_parts for x in examples)),
        "microseconds_per_sentence_median": {k: statistics.median(v) for k, v in runs.items()},
        "microseconds_per_sentence_runs": runs,
        "machine": platform.processor() or platform.machine(),
    }
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["microseconds_per_sentence_median"]))


if __name__ == "__main__":
    main()
