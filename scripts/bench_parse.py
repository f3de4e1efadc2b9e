"""Parsing speed: one process, model loaded, features + decoding over a treebank.

Reads the corpus first (reading is not timed), then parses every sentence
`--repeat` times and reports the median words/s. Writes JSON.

    python scripts/bench_parse.py MODEL [--corpus ../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import arborist
from arborist.corpus import read_corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--corpus", default="../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output", default="scripts/results/bench_parse.json")
    args = ap.parse_args()

    parser = arborist.load(args.model)
    sentences = read_corpus(args.corpus, require_heads=False)
    words = sum(s.n for s in sentences)
    runs = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for s in sentences:
            parser.predict(s)
        runs.append(words / (time.perf_counter() - start))
    result = {
        "benchmark": "parse",
        "model": str(args.model),
        "corpus": args.corpus,
        "sentences": len(sentences),
        "words": words,
        "words_per_second_median": statistics.median(runs),
        "words_per_second_runs": runs,
        "hash_bits": parser.structure.hash_bits,
        "machine": platform.processor() or platform.machine(),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
