"""The UPOS tagger's tag dictionary (`LinearChain(dictionary_min_count=N)`) at several N, on
gold tokens: one tagger per treebank, trained as bench_lemma_morph.py trains it (first order,
margin 20, 15 epochs; training scores every tag whatever N is) except that its best epoch is
chosen on dev without a dictionary (bench_lemma_morph.py and the pipelines choose it with
theirs, so their UPOS at N = 1 can differ slightly), then dev tagged under the dictionary of each N (a lowercase form seen N times or more in
training takes only the tags seen with it; N = 0: no dictionary).

    python scripts/bench_tag_dictionary.py [--treebanks en_ewt,tr_imst] [--counts 0,1,2,3,5,10]

Writes scripts/results/tag_dictionary_<treebank>.json: dev UPOS at each N, and at N = 1 the
dev words whose tag the dictionary changed: wrong -> right counted by "before -> gold", right
-> wrong by "gold -> after".
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from bench_lemma_morph import TREEBANKS, UD, tag_sentences, train_tagger  # noqa: E402

from arborist.corpus import read_corpus  # noqa: E402

ROOT_DIR = Path(__file__).resolve().parent.parent


def run(treebank: str, counts: list[int], margin: float, epochs: int) -> dict:
    train = list(read_corpus(str(UD / treebank / f"{treebank}-ud-train.conllu")))
    dev = list(read_corpus(str(UD / treebank / f"{treebank}-ud-dev.conllu")))
    start = time.perf_counter()
    chain, w, best_epoch, _ = train_tagger(train, dev, epochs, margin=margin)
    seconds = time.perf_counter() - start
    gold = [t for x in dev for t in x.upos[1:]]
    forms = [f for x in dev for f in x.forms[1:]]
    upos, tags = {}, {}
    for n in counts:
        chain.dictionary_min_count, chain.dictionary = n, None
        if n:
            chain.learn_dictionary(train)
        tags[n] = [t for sentence in tag_sentences(chain, w, dev) for t in sentence]
        upos[n] = 100.0 * sum(a == b for a, b in zip(tags[n], gold)) / len(gold)
        print(f"{treebank}: N = {n}: dev UPOS {upos[n]:.2f}", flush=True)
    out = {"treebank": treebank, "tagger": {"margin": margin, "epochs": epochs, "best_epoch": best_epoch,
                                            "train_seconds": seconds},
           "dev_words": len(gold), "dev_upos": {str(n): upos[n] for n in counts}}
    if 0 in tags and 1 in tags:
        fixed, broken = collections.Counter(), collections.Counter()
        examples = []
        for form, g, a, b in zip(forms, gold, tags[0], tags[1]):
            if a != b and b == g:
                fixed[f"{a} -> {g}"] += 1
            elif a != b and a == g:
                broken[f"{g} -> {b}"] += 1
                examples.append(f"{form} {g} -> {b}")
        out["n1_changes"] = {"fixed": sum(fixed.values()), "broken": sum(broken.values()),
                             "fixed_by_tags": dict(fixed.most_common(10)),
                             "broken_by_tags": dict(broken.most_common(10)), "broken_examples": examples[:20]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--treebanks", default=",".join(TREEBANKS))
    parser.add_argument("--counts", default="0,1,2,3,5,10,20")
    parser.add_argument("--tagger-margin", type=float, default=20.0)
    parser.add_argument("--tagger-epochs", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT_DIR / "scripts" / "results"))
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    for treebank in args.treebanks.split(","):
        result = run(treebank, counts, args.tagger_margin, args.tagger_epochs)
        result["command"] = " ".join(["bench_tag_dictionary.py"] + sys.argv[1:])
        path = Path(args.out) / f"tag_dictionary_{treebank}.json"
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
