"""A whole pipeline on a treebank's dev raw text, scored by the official CoNLL 2018 scorer.

    python scripts/bench_raw_text.py --treebank en_ewt MODEL [--tokenizer TOKENIZER_MODEL]

Builds the raw text of the dev file with `../shared/tools/ud_raw_text.py`, runs `arborist
parse` on it (one process: tokenizing, sentence splitting, tagging, lemmas and features,
parsing, labeling, CoNLL-U), and scores the output with `../shared/tools/conll18_ud_eval.py`.
`--tokenizer`: add the tokenizer component of another model (`configs/tokenizer.cfg`) to
MODEL first; without one, a model without a tokenizer uses spaCy's. Writes
scripts/results/raw_text_<treebank>.json with every metric's F1, words/s, and UDPipe 1's
published UD 2.5 figures for comparison (test sets, raw text).

`--gold-tokens`: parse the dev CoNLL-U file itself instead (the treebank's tokens and
sentences, every other column predicted: UPOS, XPOS, lemmas, FEATS, the tree), as issue 24's
"gold tokens" figures are; default output scripts/results/gold_tokens_<treebank>.json.
`--gold-sentences`: the raw text with a sentence per line (`arborist.raw_text.raw_text(gold,
gold_sentences=True)`: the characters of `ud_raw_text.py`'s text when every sentence has its
`# text`, as the five dev files do), parsed with `-i presegmented`, so the tokenizer
tokenizes but the treebank's sentence boundaries are kept; default output
scripts/results/gold_sentences_<treebank>.json.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import official_scorer  # noqa: E402  (scripts/official_scorer.py)

SHARED = HERE.parent.parent / "shared"
# UDPipe 1 (UD 2.5 models), raw text, test sets: the figures the issues compare with.
UDPIPE1 = {
    "en_ewt": {"Words": 98.9, "Sentences": 77.4, "Lemmas": 96.4, "UFeats": 95.4},
    "el_gdt": {"Words": 99.9, "Sentences": 90.2, "Lemmas": 94.6, "UFeats": 90.3},
    "hu_szeged": {"Words": 99.8, "Sentences": 95.9, "Lemmas": 88.5, "UFeats": 88.1},
    "tr_imst": {"Words": 98.3, "Sentences": 97.0, "Lemmas": 90.0, "UFeats": 88.5},
    "it_partut": {"Words": 99.7, "Sentences": 100.0, "Lemmas": 96.5, "UFeats": 96.3},
}


def assemble(model: str, tokenizer: str, directory: Path) -> str:
    """MODEL with TOKENIZER's tokenizer component, saved in `directory`."""
    from arborist.model import load

    pipeline = load(model)
    for name, component in load(tokenizer).components.items():
        if "text" in component.reads:
            pipeline.add(name, component)
    pipeline.save(directory / "model")
    return str(directory / "model")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--treebank", default="en_ewt")
    ap.add_argument("--tokenizer", help="a model whose tokenizer component to use")
    ap.add_argument("--gold-tokens", action="store_true",
                    help="parse the dev CoNLL-U file (the treebank's tokens) instead of its raw text")
    ap.add_argument("--gold-sentences", action="store_true",
                    help="the raw text with a sentence per line, parsed with -i presegmented")
    ap.add_argument("--output", help="default: scripts/results/raw_text_<treebank>.json "
                                     "(gold_tokens_<treebank>.json with --gold-tokens, "
                                     "gold_sentences_<treebank>.json with --gold-sentences)")
    args = ap.parse_args()
    if args.gold_tokens and args.gold_sentences:
        raise SystemExit("--gold-tokens and --gold-sentences: one or the other")
    gold = SHARED / "corpora" / "ud" / args.treebank / f"{args.treebank}-ud-dev.conllu"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        options = []
        if args.gold_tokens:
            text = gold
        elif args.gold_sentences:
            from arborist.raw_text import raw_text

            text = tmp / f"{args.treebank}-dev.txt"
            text.write_text(raw_text(gold, gold_sentences=True), encoding="utf-8")
            options = ["-i", "presegmented"]
        else:
            text = tmp / f"{args.treebank}-dev.txt"
            subprocess.run([sys.executable, str(SHARED / "tools" / "ud_raw_text.py"), str(gold), str(text)],
                           check=True, capture_output=True)
        model = assemble(args.model, args.tokenizer, tmp) if args.tokenizer else args.model
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "arborist.cli", "parse", model, str(text), "--output-dir",
                               str(tmp / "out"), "--no-progress", *options], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        speed = re.search(r"([\d,]+) words, ([\d,]+) words/s", done.stderr)
        # the official scorer's F1 truncated from its counts (its printout rounds them; until
        # 2026-11-28 this script kept the printout's figures)
        scored = official_scorer.score(gold, tmp / "out" / f"{text.stem}.conllu")
    f1 = {name: figures["f1"] for name, figures in scored.items()}
    result = {"treebank": args.treebank, "model": args.model, "tokenizer": args.tokenizer or "the model's own "
              "(spaCy's rule tokenizer and sentencizer when it has none)", "f1": f1,
              "counts": {name: {k: figures[k] for k in ("correct", "gold", "system")} for name, figures in scored.items()},
              "words": int(speed.group(1).replace(",", "")), "words_per_second": int(speed.group(2).replace(",", "")),
              "wall_s": round(wall, 1), "udpipe1_ud25_test": UDPIPE1.get(args.treebank),
              "input": "the dev CoNLL-U (gold tokens)" if args.gold_tokens else
              "the dev raw text, a sentence per line (-i presegmented)" if args.gold_sentences else "the dev raw text"}
    name = "gold_tokens" if args.gold_tokens else "gold_sentences" if args.gold_sentences else "raw_text"
    output = Path(args.output or HERE / "results" / f"{name}_{args.treebank}.json")
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
