"""Decoding speed of projective (Eisner) and non-projective (Chu-Liu-Edmonds) first-order
parsing, argmax and marginals, on the same score matrices.

The scores come from a first-order perceptron trained briefly on the start of the
training set (so they have a trained model's spread), computed once for every dev
sentence. Each repeat times every decoder over all of dev in turn (interleaved, so
machine noise hits all of them alike); the medians are reported as words/s, and the
whole parse (features + decoding) as well. Then the time of the matrix-tree marginals
for one 150-word sentence, in the linear domain and in the log-domain fallback.

    python scripts/bench_decoders.py [--corpus-dir ../shared/corpora/ud/en_ewt]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from arborist.corpus import read_corpus
from arborist.learn.perceptron import Perceptron
from arborist.parser.eisner import eisner_argmax, eisner_marginals
from arborist.parser.mst import mst_argmax, mst_marginals
from arborist.parser.tree import DependencyTree

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, items) -> float:
    start = time.perf_counter()
    for item in items:
        fn(item)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus-dir", default=str(ROOT / ".." / "shared" / "corpora" / "ud" / "en_ewt"))
    ap.add_argument("--train-sentences", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output", default=str(ROOT / "scripts" / "results" / "bench_decoders.json"))
    args = ap.parse_args()
    corpus = Path(args.corpus_dir)
    name = corpus.name
    train = read_corpus(corpus / f"{name}-ud-train.conllu")[: args.train_sentences]
    dev = read_corpus(corpus / f"{name}-ud-dev.conllu")
    words = sum(x.n for x in dev)
    trees = {flag: DependencyTree(hash_bits=20, projective=flag) for flag in (True, False)}
    trainer = Perceptron(seed=0)
    trainer.begin(trees[True], train, 20)
    for _ in range(2):
        trainer.epoch(trees[True], train)
    w = trainer.prediction_weights()
    scores = [trees[True].scores(x, w) for x in dev]

    runs = {
        "eisner argmax": lambda s: eisner_argmax(s, True),
        "mst argmax": lambda s: mst_argmax(s, True),
        "eisner marginals": lambda s: eisner_marginals(s, True),
        "mst marginals": lambda s: mst_marginals(s, True),
    }
    parse = {f"parse, {'projective' if flag else 'non-projective'}": (lambda x, t=trees[flag]: t.argmax(x, t.scores(x, w)))
             for flag in (True, False)}
    rates = {k: [] for k in [*runs, *parse]}
    for _ in range(args.repeat):
        for key, fn in runs.items():
            rates[key].append(words / timed(fn, scores))
        for key, fn in parse.items():
            rates[key].append(words / timed(fn, dev))
    fallbacks = 0
    for s in scores:
        try:
            mst_marginals(s, True, "linear")
        except FloatingPointError:
            fallbacks += 1

    rng = np.random.default_rng(0)
    spread = float(np.std(np.concatenate([s[:, 1:].ravel() for s in scores])))
    long = rng.normal(size=(151, 151)) * spread
    per_sentence = {}
    for domain in ("linear", "log"):
        times = []
        for _ in range(max(args.repeat, 5) * 3):
            start = time.perf_counter()
            mst_marginals(long, True, domain)
            times.append(time.perf_counter() - start)
        per_sentence[f"mst marginals, 150 words, {domain} domain (ms)"] = 1000 * statistics.median(times)
    times = []
    for _ in range(15):
        start = time.perf_counter()
        eisner_marginals(long, True)
        times.append(time.perf_counter() - start)
    per_sentence["eisner marginals, 150 words (ms)"] = 1000 * statistics.median(times)

    result = {"corpus": f"{name} dev", "sentences": len(dev), "words": words, "repeat": args.repeat,
              "words_per_second_median": {k: statistics.median(v) for k, v in rates.items()},
              "words_per_second_all": rates, "linear_domain_fallbacks": fallbacks, "score_std": spread,
              **per_sentence, "machine": platform.processor() or platform.machine()}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=1))
    for k, v in result["words_per_second_median"].items():
        print(f"{k:32s} {v:12,.0f} words/s")
    for k, v in per_sentence.items():
        print(f"{k:44s} {v:.2f}")
    print(f"log-domain fallbacks on {name} dev: {fallbacks} of {len(dev)}")


if __name__ == "__main__":
    main()
