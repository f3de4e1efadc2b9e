"""Time the tokenizer's kernel (`CharFeatures.tag_many`) against another build of it, both in
one process and alternated, so that the shared machine's slow and fast spells fall on both.

    python scripts/bench_tokenizer_kernel.py --against OTHER/features.cpython-311-x86_64-linux-gnu.so \
        [--treebank tr_imst] [--model SAVED_TOKENIZER] [--runs 21] [--out JSON]

OTHER is an older (or experimental) build of `arborist/tokenizer/features.pyx`: for example a
copy of the repository at another commit, built with `python setup.py build_ext --inplace`. It
is loaded beside this checkout's build as a second module object, and given the same templates,
hash bits, known-token table and weights. The text is the treebank's training text, raw as
`ud_raw_text.py` writes it, cut into windows of --window characters (`tag_texts` cuts long texts
so) and tagged in one call per run.

Writes JSON (default scripts/results/tokenizer_kernel_<treebank>.json) with, for this build
("current") and the other ("against"): nanoseconds per character of each run, their minimum
and median; whether both builds gave the same tags on every run (they must, for a change that
is only about speed); the load average at the end. Without --model, a tokenizer is trained with
`train_tokenizer`'s defaults (as `bench_tokenizer.py` trains it).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_tokenizer import CORPORA, raw_text  # noqa: E402  (scripts/bench_tokenizer.py)

from arborist.tokenizer import Tokenizer, train_tokenizer
from arborist.tokenizer import features as current_module
from arborist.tokenizer.chars import code_points


def load_build(path: str):
    """The module of another build of `arborist.tokenizer.features` (not put in sys.modules)."""
    if not os.path.exists(path):
        raise SystemExit(f"{path}: no such build")
    spec = importlib.util.spec_from_file_location("arborist.tokenizer.features", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the other build's features extension module (.so)")
    parser.add_argument("--treebank", default="tr_imst")
    parser.add_argument("--model", help="a saved tokenizer (Tokenizer.save); default: train one")
    parser.add_argument("--window", type=int, default=8192, help="characters per text of the batch")
    parser.add_argument("--runs", type=int, default=21, help="timed runs of each build")
    parser.add_argument("--out", help="JSON path (default scripts/results/tokenizer_kernel_<treebank>.json)")
    args = parser.parse_args()

    other = load_build(args.against)
    train = os.path.join(CORPORA, args.treebank, f"{args.treebank}-ud-train.conllu")
    tok = Tokenizer.load(args.model) if args.model else train_tokenizer(train)
    current = tok.chain.features
    features = {"current": current,
                "against": other.CharFeatures(current.n_tags, current.bits, current.templates)}
    table = current.vocab_table
    features["against"].set_vocab(table if table.size > 1 else None)

    with tempfile.TemporaryDirectory() as tmp:
        text = raw_text(train, os.path.join(tmp, "train.txt"))
    pieces = [text[i:i + args.window] for i in range(0, len(text), args.window)]
    chars = np.concatenate([current_module.char_values(code_points(p)) for p in pieces])
    starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in pieces], out=starts[1:])
    n = len(chars)

    times = {"current": [], "against": []}
    same = True
    for run in range(args.runs):
        order = ("current", "against") if run % 2 == 0 else ("against", "current")
        tags = {}
        for name in order:
            start = time.process_time()
            tags[name] = features[name].tag_many(chars, starts, tok.weights)
            times[name].append((time.process_time() - start) * 1e9 / n)
        same = same and bool(np.array_equal(tags["current"], tags["against"]))

    result = {"treebank": args.treebank, "characters": n, "window": args.window, "runs": args.runs,
              "against": os.path.abspath(args.against), "model": args.model, "same_tags": same,
              "load_average": os.getloadavg(),
              "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}
    for name, values in times.items():
        result[name] = {"ns_per_char_min": round(min(values), 1),
                        "ns_per_char_median": round(statistics.median(values), 1),
                        "ns_per_char": [round(v, 1) for v in values]}
    out = args.out or os.path.join(os.path.dirname(__file__), "results", f"tokenizer_kernel_{args.treebank}.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"{args.treebank}, {n} characters: current {result['current']['ns_per_char_min']} ns/char "
          f"(median {result['current']['ns_per_char_median']}), against {result['against']['ns_per_char_min']} "
          f"(median {result['against']['ns_per_char_median']}); same tags: {same} -> {out}")
    if not same:
        raise SystemExit("the two builds tag the text differently")


if __name__ == "__main__":
    main()
