"""Copy a trained pipeline and give its tokenizer the multiword expander that the current
code learns (with its defaults, the multiword classifier on); the character chain's weights
and every other component stay as they are.

    python scripts/refit_expander.py MODEL NEW_MODEL TRAIN.conllu [--mwt-classifier-margin M]

The expander keeps the model's settings; a setting the model does not record takes today's
default. A model trained before the classifier had a margin, then saved again by today's code,
records margin 0 (what it was trained with), so it refits at 0 unless --mwt-classifier-margin
says otherwise (today's default is 30); the margin used is printed.

This is what retraining the pipeline's config gives today, without the hours of it: training
is deterministic and no component reads the tokenizer's output while training (they train on
the treebank's tokens), so only the expander changes. Checked on tr_imst: `arborist train
configs/tokenizer.cfg` gives a tokenizer.expander.json and tokenizer.npy identical byte for
byte to this script's (notes/tokenizer.md).
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from arborist.tokenizer.chain import TokenizerChain
from arborist.tokenizer.corpus import read_paragraphs


def main(model: str, output: str, train: str, margin: float | None = None) -> None:
    source, target = Path(model), Path(output)
    if margin is not None and not margin >= 0:
        raise SystemExit(f"--mwt-classifier-margin must be >= 0, got {margin}")
    if target.resolve() == source.resolve() or source.resolve() in target.resolve().parents:
        raise SystemExit(f"{output}: NEW_MODEL must not be MODEL or inside it (it is replaced)")
    if not (source / "meta.json").is_file():
        raise SystemExit(f"{model}: not a model directory (no meta.json)")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    component = next(c for c in meta["components"] if c["kind"] == "tokenizer")
    settings = {k: v for k, v in component["structure"].items() if k != "@structures"}
    if margin is not None:
        settings["mwt_classifier_margin"] = margin
    chain = TokenizerChain(**settings)  # what the model had, with today's defaults for the rest
    paragraphs = read_paragraphs(train)
    chain.expander.fit_sentences(([(t.form, t.words or None, t.upos) for t in s.tokens]
                                  for p in paragraphs for s in p.sentences), *chain.mwt_context)
    component["structure"] = chain.registry_call()
    (target / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (target / f"{component['name']}.expander.json").write_text(
        json.dumps(chain.expander.to_json(), ensure_ascii=False), encoding="utf-8")
    print(f"wrote {target} (multiword classifier: {chain.expander.classifier}, "
          f"margin {chain.expander.classifier_margin:g})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("output")
    parser.add_argument("train")
    parser.add_argument("--mwt-classifier-margin", type=float, default=None,
                        help="the classifier's perceptron margin (default: the model's setting)")
    args = parser.parse_args()
    main(args.model, args.output, args.train, args.mwt_classifier_margin)
