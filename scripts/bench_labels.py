"""What labeling adds to parsing time: parse alone against parse + label, interleaved.

Loads a model with a parser and a labeler, reads the corpus (not timed) and, `--repeat`
times, runs over every sentence (gold tags, so that only the parser and labeler are
timed) in alternating order:

    parse   parser.predict(sentence)                              (features + decoding)
    label   parser.predict(sentence), then labeler.labels(sentence, heads)

and reports the median words/s of each and the median of the per-round ratios
label/parse - 1 (the share labeling adds). Writes JSON.

    python scripts/bench_labels.py MODEL [--corpus ../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu]
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
    ap.add_argument("--output", default="scripts/results/bench_labels.json")
    args = ap.parse_args()

    pipeline = arborist.load(args.model)
    parser, labeler = pipeline.writer("head"), pipeline.writer("deprel")
    if parser is None or labeler is None:
        raise SystemExit(f"{args.model}: the model needs a parser and a labeler")
    sentences = read_corpus(args.corpus, require_heads=False)
    words = sum(s.n for s in sentences)

    def parse():
        for s in sentences:
            parser.predict(s)

    def parse_and_label():
        for s in sentences:
            labeler.labels(s, parser.predict(s))

    def timed(run) -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    timed(parse_and_label)  # warm up both (caches, lazy imports)
    parse_seconds, label_seconds = [], []
    for round_ in range(args.repeat):
        order = [(parse, parse_seconds), (parse_and_label, label_seconds)]
        for run, out in (order if round_ % 2 == 0 else order[::-1]):
            out.append(timed(run))
    added = [b / a - 1.0 for a, b in zip(parse_seconds, label_seconds)]
    result = {
        "benchmark": "labels",
        "model": str(args.model),
        "corpus": args.corpus,
        "sentences": len(sentences),
        "words": words,
        "labels": len(labeler.label_set),
        "label_templates": len(labeler.structure.features.templates),
        "parse_words_per_second_median": words / statistics.median(parse_seconds),
        "parse_and_label_words_per_second_median": words / statistics.median(label_seconds),
        "labeling_adds_median": statistics.median(added),
        "labeling_adds_runs": added,
        "parse_seconds_runs": parse_seconds,
        "parse_and_label_seconds_runs": label_seconds,
        "machine": platform.processor() or platform.machine(),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
