"""Thread scaling (issue 8): the same work in 1 thread and in N threads of one process.

The feature and decoding kernels run without the GIL, so threads can share one loaded
model. Workloads over the en_ewt dev sentences (2,001 sentences, 25,147 words), each
split into equal shares, one per thread:

  annotate   `Pipeline.annotate` on each CoNLL-U sentence: tagging, parsing, labeling
  parse      `Pipeline.parse` on the thread's sentences (batches of 64, `annotate_batch`)
  spacy      `nlp(text)` on each sentence's text with the pipeline `arborist parse` uses
             (spaCy tokenizer, sentencizer, arborist_tagger, arborist_parser)
  spacy_pipe `nlp.pipe(texts)` on the thread's sentence texts (the components annotate
             batches of Docs, one region without the GIL per stage)

Rounds interleave the thread counts so that a noisy machine slows them alike; reported
per workload and thread count: the median words/s and the speedup over one thread.
Every threaded run's heads must equal the one-thread heads (checked). Writes JSON.

    python scripts/bench_threads.py MODEL [--threads 1 2] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import arborist
from arborist.batch import spacy_pipeline
from arborist.corpus import read_conllu

HERE = Path(__file__).resolve().parent
DEFAULT_DEV = HERE.parent.parent / "shared" / "corpora" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"


def sentence_text(sentence) -> str:
    """The `# text =` comment of a CoNLL-U sentence, else its forms joined by spaces."""
    for line in sentence.lines:
        if line.startswith("# text = "):
            return line[len("# text = "):].strip()
    return " ".join(sentence.forms[1:])


def shares(items: list, k: int) -> list[list]:
    return [items[i::k] for i in range(k)]


def run(work, items: list, threads: int) -> tuple[float, list]:
    """Seconds to apply `work` (items -> one result per item) to every item with `threads`
    threads, and the results in item order."""
    parts = shares(items, threads)
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        done = list(pool.map(work, parts))
    seconds = time.perf_counter() - start
    results = [None] * len(items)
    for i, part in enumerate(done):
        results[i::threads] = part
    return seconds, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_DEV)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output", type=Path, default=HERE / "results" / "bench_threads.json")
    args = ap.parse_args()

    pipeline = arborist.load(args.model)
    sentences = list(read_conllu(args.corpus))
    words = sum(s.n for s in sentences)
    texts = [sentence_text(s) for s in sentences]
    nlp = spacy_pipeline(pipeline)
    def doc_heads(doc):
        return tuple(token.head.i for token in doc)

    workloads = {
        "annotate": (lambda part: [tuple(pipeline.annotate(s)[1]) for s in part], sentences, words),
        "parse": (lambda part: [tuple(heads) for _, heads, _ in pipeline.parse(part)], sentences, words),
        "spacy": (lambda part: [doc_heads(nlp(t)) for t in part], texts, None),
        "spacy_pipe": (lambda part: [doc_heads(doc) for doc in nlp.pipe(part)], texts, None),
    }
    # Warm-up: caches (tagger word features, spaCy's vocabulary) filled before timing.
    reference = {name: run(work, items, 1)[1] for name, (work, items, _) in workloads.items()}
    spacy_words = sum(len(heads) for heads in reference["spacy"])
    for name in ("spacy", "spacy_pipe"):
        workloads[name] = (*workloads[name][:2], spacy_words)

    timings: dict[str, dict[int, list[float]]] = {name: {k: [] for k in args.threads} for name in workloads}
    for round_ in range(args.repeat):
        for name, (work, items, n_words) in workloads.items():
            for k in args.threads:
                seconds, results = run(work, items, k)
                if results != reference[name]:
                    raise SystemExit(f"{name}: {k} threads gave other heads than 1 thread")
                timings[name][k].append(n_words / seconds)
                print(f"round {round_} {name:8s} {k} threads: {n_words / seconds:9,.0f} words/s", flush=True)

    summary = {}
    for name, by_threads in timings.items():
        base = statistics.median(by_threads[args.threads[0]])
        summary[name] = {str(k): {"words_per_second": round(statistics.median(v)),
                                  "speedup": round(statistics.median(v) / base, 3),
                                  "runs": [round(x) for x in v]} for k, v in by_threads.items()}
        print(name, ", ".join(f"{k} threads {s['words_per_second']:,} words/s ({s['speedup']:.2f}x)"
                              for k, s in summary[name].items()))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "benchmark": "threads", "model": str(args.model), "corpus": str(args.corpus),
        "words": {"annotate": words, "spacy": spacy_words},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_at_end": list(os.getloadavg())},
        "results": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
