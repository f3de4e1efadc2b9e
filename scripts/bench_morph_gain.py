"""What predicted lemmas and FEATS give the parser (issue 24): the gold-token pipeline of
`configs/ud_pipeline.cfg` (UPOS, XPOS, FEATS, LEMMA, parser, labeler; no tokenizer) against
the same pipeline without the morphologizer and the lemmatizer, whose parser and labeler
use the default templates minus those that read LEMMA or FEATS.

    python scripts/bench_morph_gain.py --treebanks hu_szeged,tr_imst [--set training.max_epochs=15 ...]

Both configs are derived from configs/ud_pipeline.cfg by confection (so they follow it),
trained with `arborist train`, and scored with `arborist evaluate --json` on the dev file
(gold tokens, every column predicted). Writes scripts/results/morph_gain_<treebank>.json.

Since 2026-11-26 the config's parser is the mean of 16 runs (`seeds = 16`); the recorded
results were made with one parser: `--set components.parser.training.seeds=1
--set components.parser.training.max_epochs=15` reproduces them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confection import Config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "ud"


def reads_morphology(template: str) -> bool:
    return any(part.split(".", 1)[-1] in ("lemma", "feats") for part in template.split())


def configs() -> dict[str, Config]:
    from arborist.parser.features import DEFAULT_TEMPLATES
    from arborist.parser.label_features import DEFAULT_LABEL_TEMPLATES

    base = Config().from_disk(ROOT / "configs" / "ud_pipeline.cfg", interpolate=False)
    del base["components"]["tokenizer"]  # gold tokens
    without = Config().from_str(base.to_str(), interpolate=False)
    del without["components"]["feats"], without["components"]["lemma"]
    without["components"]["parser"]["structure"]["templates"] = [t for t in DEFAULT_TEMPLATES
                                                                 if not reads_morphology(t)]
    without["components"]["labeler"]["structure"]["templates"] = [t for t in DEFAULT_LABEL_TEMPLATES
                                                                  if not reads_morphology(t)]
    return {"with_lemma_feats": base, "without_lemma_feats": without}


def run(config: Config, treebank: str, work: Path, name: str, overrides: list[str]) -> dict:
    train = CORPORA / treebank / f"{treebank}-ud-train.conllu"
    dev = CORPORA / treebank / f"{treebank}-ud-dev.conllu"
    path = work / f"{name}.cfg"
    config.to_disk(path)
    out = work / name
    sets = [f"paths.train={json.dumps(str(train))}", f"paths.dev={json.dumps(str(dev))}", *overrides]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "arborist.cli", "train", str(path), "--output", str(out), "--no-wandb",
                    *[a for s in sets for a in ("--set", s)]], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=open(work / f"{name}.log", "w"))
    seconds = time.perf_counter() - start
    done = subprocess.run([sys.executable, "-m", "arborist.cli", "evaluate", str(out / "model-best"), str(dev),
                           "--json"], check=True, capture_output=True, text=True, cwd=ROOT)
    return {"train_seconds": round(seconds, 1), "scores": json.loads(done.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebanks", default="hu_szeged,tr_imst")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="config overrides for both runs")
    ap.add_argument("--work", default=None, help="keep the runs here (default: a temporary directory)")
    args = ap.parse_args()
    for treebank in args.treebanks.split(","):
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(args.work or scratch) / treebank
            work.mkdir(parents=True, exist_ok=True)
            result = {"treebank": treebank, "overrides": args.overrides, "runs": {}}
            for name, config in configs().items():
                result["runs"][name] = run(config, treebank, work, name, args.overrides)
                print(treebank, name, json.dumps(result["runs"][name]["scores"])[:300], flush=True)
            las = {name: r["scores"].get("las") for name, r in result["runs"].items()}
            uas = {name: r["scores"].get("uas") for name, r in result["runs"].items()}
            result["las_gain"] = las["with_lemma_feats"] - las["without_lemma_feats"]
            result["uas_gain"] = uas["with_lemma_feats"] - uas["without_lemma_feats"]
            result["load_average_at_end"] = os.getloadavg()
            (HERE / "results" / f"morph_gain_{treebank}.json").write_text(json.dumps(result, indent=2) + "\n")
            print(treebank, "LAS gain", result["las_gain"], "UAS gain", result["uas_gain"], flush=True)


if __name__ == "__main__":
    main()
