"""Tagging and parsing speed: one process, model loaded, features + decoding over a treebank.

Reads the corpus first (reading is not timed), then runs every component of the
model over every sentence `--repeat` times and reports the median words/s of
each component on its own (a tagger on the input, the parser on the tagged
sentences, the labeler on the parser's trees) and of the whole pipeline (tags,
then parse, then labels). Writes JSON.

    python scripts/bench_parse.py MODEL [--corpus ../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

import arborist
from arborist.corpus import read_corpus


def words_per_second(run, sentences, words: int, repeat: int) -> list[float]:
    rates = []
    for _ in range(repeat):
        start = time.perf_counter()
        for s in sentences:
            run(s)
        rates.append(words / (time.perf_counter() - start))
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--corpus", default="../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output", default="scripts/results/bench_parse.json")
    args = ap.parse_args()

    pipeline = arborist.load(args.model)
    sentences = read_corpus(args.corpus, require_heads=False)
    words = sum(s.n for s in sentences)
    tagged = [pipeline.tag(s) for s in sentences]
    trees = tagged
    parser = pipeline.writer("head")
    if parser is not None:  # the labeler labels the parser's trees
        trees = [replace(s, heads=parser.predict(s)) for s in tagged]
    components = {}
    for name, component in pipeline.components.items():
        inputs = sentences if component.tagging else trees if "head" in component.reads else tagged
        runs = words_per_second(component.predict, inputs, words, args.repeat)
        components[name] = {
            "kind": component.kind,
            "structure": {k: v for k, v in component.structure.registry_call().items()
                          if k not in ("tags", "labels", "templates")},
            "words_per_second_median": statistics.median(runs),
            "words_per_second_runs": runs,
        }
    runs = words_per_second(pipeline.annotate, sentences, words, args.repeat)
    result = {
        "benchmark": "parse",
        "model": str(args.model),
        "corpus": args.corpus,
        "sentences": len(sentences),
        "words": words,
        "components": components,
        "pipeline_words_per_second_median": statistics.median(runs),
        "pipeline_words_per_second_runs": runs,
        "machine": platform.processor() or platform.machine(),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
