"""Second-order parsing: parsing speed (pruning included), training epoch time and peak
memory, and the pruner's oracle recall on dev.

    python scripts/bench_second_order.py parse MODEL [--compare FIRST_ORDER_MODEL] [--repeat 5]
    python scripts/bench_second_order.py train --config configs/en_ewt_second_order.cfg --pruner MODEL

`parse` times the parser of MODEL (a pipeline with a pruner and a second-order
parser) over the dev treebank with gold tags: every repetition parses fresh copies of
the sentences, so the pruner (first-order scoring and inside-outside) runs for every
sentence, as in real use. With --compare, a first-order model is timed in the same
run, interleaved. It also reports the pruner's oracle recall (share of gold arcs
kept) and heads kept per word.

`train` runs, in a child process per config, one epoch of the config's parser
trainer on en_ewt train with the pruner of --pruner (its trained weights) and reports
the set-up time (pruning every training sentence, the trainer's set-up), the epoch
time, and the child's peak resident memory. Writes JSON to scripts/results/.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from copy import copy
from pathlib import Path

DEV = "../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu"


def parse_speed(args) -> dict:
    import arborist
    from arborist.corpus import read_corpus
    from arborist.evaluate import pruning_scores

    models = {"second_order": arborist.load(args.model)}
    if args.compare:
        models["first_order"] = arborist.load(args.compare)
    sentences = read_corpus(args.corpus, require_heads=True)
    words = sum(s.n for s in sentences)
    runs = {name: [] for name in models}
    for _ in range(args.repeat):
        for name, pipeline in models.items():
            fresh = [copy(s) for s in sentences]  # new objects: no pruning result is reused
            start = time.perf_counter()
            for s in fresh:
                pipeline.writer("head").predict(s)
            runs[name].append(words / (time.perf_counter() - start))
    pruner = models["second_order"].writer("arcs")
    start = time.perf_counter()
    pruning = pruning_scores((s, pruner.allowed(s)) for s in sentences)
    pruning_seconds = time.perf_counter() - start
    return {
        "benchmark": "second_order_parse",
        "corpus": args.corpus,
        "sentences": len(sentences),
        "words": words,
        "words_per_second_median": {name: statistics.median(r) for name, r in runs.items()},
        "words_per_second_runs": runs,
        "pruner_words_per_second": words / pruning_seconds,
        **{f"dev_{k}": v for k, v in pruning.items()},
        "models": {name: str(p) for name, p in [("second_order", args.model), ("first_order", args.compare)] if p},
    }


def train_child(args) -> dict:
    """One epoch of the config's parser trainer; runs in its own process (peak memory)."""
    import arborist
    from arborist.corpus import read_corpus
    from arborist.registry import registry
    from arborist.train import load_config
    from confection import Config

    config = load_config(args.config)
    resolved = registry.resolve(Config({"c": dict(config["components"]["parser"])}), validate=True)["c"]
    structure, trainer = resolved["structure"], resolved["trainer"]
    sentences = read_corpus(registry.resolve(config)["training"]["train_path"], require_heads=True)
    start = time.perf_counter()
    pruner = arborist.load(args.pruner).writer("arcs")
    structure.initialize(sentences)
    sentences = [structure.example(x, pruner.allowed(x), keep_gold=True) for x in sentences]
    prune_seconds = time.perf_counter() - start
    start = time.perf_counter()
    trainer.begin(structure, sentences, structure.hash_bits)
    setup_seconds = time.perf_counter() - start
    epochs = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        trainer.epoch(structure, sentences, None)
        epochs.append(time.perf_counter() - start)
    return {
        "config": args.config,
        "trainer": dict(config["components"]["parser"]["trainer"]),
        "words": sum(s.n for s in sentences),
        "prune_seconds": prune_seconds,
        "trainer_setup_seconds": setup_seconds,
        "epoch_seconds": epochs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse")
    p.add_argument("model")
    p.add_argument("--compare")
    p.add_argument("--corpus", default=DEV)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--output", default="scripts/results/bench_second_order_parse.json")
    t = sub.add_parser("train")
    t.add_argument("--config", action="append", required=True)
    t.add_argument("--pruner", required=True, help="a trained model directory with a pruner")
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--output", default="scripts/results/bench_second_order_train.json")
    c = sub.add_parser("train-child")
    c.add_argument("--config", required=True)
    c.add_argument("--pruner", required=True)
    c.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()

    if args.command == "train-child":
        print(json.dumps(train_child(args)))
        return
    if args.command == "parse":
        result = parse_speed(args)
    else:
        children = []
        for config in args.config:
            out = subprocess.run([sys.executable, __file__, "train-child", "--config", config, "--pruner", args.pruner,
                                  "--epochs", str(args.epochs)], check=True, capture_output=True, text=True)
            children.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(children[-1]), flush=True)
        result = {"benchmark": "second_order_train", "runs": children}
    result["machine"] = platform.processor() or platform.machine()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
