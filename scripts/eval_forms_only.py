"""Accuracy of a pipeline given only the word forms, as `arborist parse` gets them from raw text.

Raw text has no LEMMA or FEATS (spaCy's blank pipelines neither lemmatize nor analyse
morphology), so a model whose templates read those columns parses raw text worse than
`arborist evaluate` shows. This scores each model twice on a treebank's gold tokenization,
with predicted tags: once with the file's LEMMA and FEATS, once with the forms alone.
Reported: UPOS, UAS and LAS (universal relations, punctuation included, as `evaluate`).

    python scripts/eval_forms_only.py MODEL [MODEL ...] [--corpus DEV.conllu]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import arborist
from arborist.corpus import read_conllu
from arborist.sentence import Sentence

HERE = Path(__file__).resolve().parent
DEFAULT_DEV = HERE.parent.parent / "shared" / "corpora" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"


def score(pipeline, sentences, with_columns: bool) -> dict:
    upos = uas = las = words = 0
    for gold in sentences:
        # The gold sentence keeps the file's LEMMA and FEATS; annotate predicts its tags.
        x = gold if with_columns else Sentence.from_columns(gold.forms[1:])
        tagged, heads, deprels = pipeline.annotate(x)
        for m in range(1, gold.n + 1):
            hit = heads[m] == gold.heads[m]
            uas += hit
            las += hit and deprels[m].split(":")[0] == gold.deprels[m].split(":")[0]
            upos += tagged.upos[m] == gold.upos[m]
            words += 1
    return {"upos": round(100 * upos / words, 2), "uas": round(100 * uas / words, 2),
            "las": round(100 * las / words, 2), "words": words}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_DEV)
    ap.add_argument("--output", type=Path, default=HERE / "results" / "eval_forms_only.json")
    args = ap.parse_args()
    sentences = list(read_conllu(args.corpus, require_heads=True))
    results = {}
    for path in args.models:
        pipeline = arborist.load(path)
        results[str(path)] = {mode: score(pipeline, sentences, mode == "lemma_feats")
                              for mode in ("lemma_feats", "forms_only")}
        print(path, json.dumps(results[str(path)]), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"corpus": str(args.corpus), "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
