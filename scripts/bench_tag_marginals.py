"""Tag marginals for a tagger's probabilities: `chain_tag_marginals` against the part
marginals summed over the previous tags (`chain_marginals`, what the tagger used before).

On a trained pipeline's tagger and a dev file: the scores of every dev sentence are
computed once, then both ways of getting each word's tag distribution run over all of them,
interleaved, `--repeats` times; the median of each, their ratio, the largest difference
between the two results, and the time of the tagger's temperature fit (`Component.calibrate`,
1 thread and 2) go to JSON.

    python scripts/bench_tag_marginals.py MODEL --component xpos \\
        --dev ../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from arborist.confidence import upstream_inputs
from arborist.corpus import read_conllu
from arborist.model import load
from arborist.tagger.viterbi import chain_marginals, chain_tag_marginals

RESULTS = Path(__file__).resolve().parent / "results"


def summed(scores):
    mu, _ = chain_marginals(scores)
    return mu.sum(axis=tuple(range(1, mu.ndim - 1)))


def tag_only(scores):
    return chain_tag_marginals(scores)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--component", default="xpos")
    ap.add_argument("--dev", default="../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--output", default=str(RESULTS / "bench_tag_marginals.json"))
    args = ap.parse_args()

    pipeline = load(args.model)
    components = list(pipeline.components.values())
    names = [c.name for c in components]
    tagger = pipeline.components[args.component]
    gold = list(read_conllu(args.dev, require_heads=True))
    inputs = upstream_inputs(components[:names.index(args.component)], gold)
    examples = tagger.examples(inputs)
    scores = [tagger.structure.scores(x, tagger.weights) for x in examples if x.n]
    words = sum(s.shape[0] for s in scores)
    largest = max(float(np.abs(summed(s) - tag_only(s)).max()) for s in scores)

    times: dict[str, list[float]] = {"chain_marginals_summed": [], "chain_tag_marginals": []}
    for _ in range(args.repeats):
        for name, f in (("chain_marginals_summed", summed), ("chain_tag_marginals", tag_only)):
            start = time.perf_counter()
            for s in scores:
                f(s)
            times[name].append(time.perf_counter() - start)
    median = {k: statistics.median(v) for k, v in times.items()}

    fits = {}
    for threads in (1, 2):
        start = time.perf_counter()
        fit = tagger.calibrate(inputs, gold, threads=threads)
        fits[f"threads_{threads}"] = {"seconds": time.perf_counter() - start, "temperature": fit["temperature"]}

    result = {
        "benchmark": "tag_marginals",
        "model": args.model, "component": args.component, "dev": args.dev,
        "sentences": len(scores), "words": words, "tags": len(tagger.structure.tags),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_end": list(os.getloadavg())},
        "repeats": args.repeats, "seconds": times, "median_seconds": median,
        "speedup": median["chain_marginals_summed"] / median["chain_tag_marginals"],
        "largest_difference": largest,
        "calibration": fits,
        "same_temperature": fits["threads_1"]["temperature"] == fits["threads_2"]["temperature"],
    }
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{args.component}: {words} words, {len(tagger.structure.tags)} tags; summed part marginals "
          f"{median['chain_marginals_summed']:.2f} s, tag marginals {median['chain_tag_marginals']:.2f} s "
          f"(x{result['speedup']:.2f}, largest difference {largest:.1e}); calibration "
          f"{fits['threads_1']['seconds']:.1f} s in 1 thread, {fits['threads_2']['seconds']:.1f} s in 2")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
