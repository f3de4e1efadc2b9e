"""Copy a trained pipeline and give its tokenizer the multiword expander that the current
code learns (with its defaults, the multiword classifier on); the character chain's weights
and every other component stay as they are.

    python scripts/refit_expander.py MODEL NEW_MODEL TRAIN.conllu

This is what retraining the pipeline's config gives today, without the hours of it: training
is deterministic and no component reads the tokenizer's output while training (they train on
the treebank's tokens), so only the expander changes. Checked on tr_imst: `arborist train
configs/tokenizer.cfg` gives a tokenizer.expander.json and tokenizer.npy identical byte for
byte to this script's (notes/tokenizer.md).
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from arborist.tokenizer.chain import TokenizerChain
from arborist.tokenizer.corpus import read_paragraphs


def main(model: str, output: str, train: str) -> None:
    source, target = Path(model), Path(output)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    component = next(c for c in meta["components"] if c["kind"] == "tokenizer")
    settings = {k: v for k, v in component["structure"].items() if k != "@structures"}
    chain = TokenizerChain(**settings)  # what the model had, with today's defaults for the rest
    paragraphs = read_paragraphs(train)
    chain.expander.fit_sentences(([(t.form, t.words or None, t.upos) for t in s.tokens]
                                  for p in paragraphs for s in p.sentences), *chain.mwt_context)
    component["structure"] = chain.registry_call()
    (target / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (target / f"{component['name']}.expander.json").write_text(
        json.dumps(chain.expander.to_json(), ensure_ascii=False), encoding="utf-8")
    print(f"wrote {target} (multiword classifier: {chain.expander.classifier})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
