"""The en_ewt labeling results (scripts/results/labels_en_ewt.json): train, evaluate, write.

Runs the commands behind the README's labeling table, from the project root, and
writes their figures as they come (nothing rounded, nothing typed in by hand):

    gold_tags       arborist train configs/en_ewt_labeled.cfg --output RUNS/labeled_gold
                    arborist evaluate RUNS/labeled_gold DEV --gold-tags --json
    predicted_tags  arborist train configs/en_ewt_pipeline.cfg --output RUNS/labeled_pipeline
                    arborist evaluate RUNS/labeled_pipeline DEV --json
    labeler_alone   the labeler of configs/en_ewt_labeled.cfg without its parser, at
                    2^22 and 2^24 weights, 12 epochs (RUNS/labeler_alone_BITS.cfg is the
                    config written and trained): with gold trees and tags, LAS is the
                    label accuracy (arborist evaluate ... --gold-tags --json)

With each run: the parser's and the labeler's best epoch and the labeler's per-epoch
history, from the run's training.json, and the median labeler epoch time.

    python scripts/bench_labels_table.py [--runs runs/labels] [--reuse] [--only gold_tags ...]
        [--set section.key=value ...]   (passed to every `arborist train`, e.g. a quick
                                         check on corpora/sample with --dev)

Training everything takes far longer than a benchmark: the predicted-tags run trains
two taggers 10 times over for jackknifing. --reuse takes a run whose model-best exists
as it is instead of training it again, if every component of the run finished training.
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV = "../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu"
LABELED = "configs/en_ewt_labeled.cfg"
PIPELINE = "configs/en_ewt_pipeline.cfg"
LABELER_ALONE_BITS = (22, 24)
LABELER_ALONE_EPOCHS = 12
SECTIONS = ("gold_tags", "predicted_tags", "labeler_alone")


def arborist_command() -> list[str]:
    """The `arborist` console script of this Python (the one the README's commands run)."""
    beside = Path(sys.executable).with_name("arborist")
    found = str(beside) if beside.exists() else shutil.which("arborist")
    if found is None:
        raise SystemExit("the arborist command is not installed (pip install -e .)")
    return [found]


def run(args: list[str]) -> str:
    """Run `arborist ARGS` from the project root; its stdout. A failure stops the script
    with the command's own message."""
    command = arborist_command() + args
    print("$ arborist " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`arborist {' '.join(args)}` failed with exit status {done.returncode}")
    return done.stdout


def finished(output: Path) -> bool:
    """Whether every component of the run finished training (a killed run's model-best can
    hold only the components trained before it stopped)."""
    try:
        report = json.loads((output / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    components = report.get("components", {})
    return bool(components) and all(entry.get("done") for entry in components.values())


def train(config: str, output: Path, overrides: list[str], reuse: bool) -> tuple[str, float | None]:
    """(the command, its seconds, or None when an existing run was reused)."""
    args = ["train", config, "--output", str(output), "--no-wandb"]
    for pair in overrides:
        args += ["--set", pair]
    if reuse and (output / "model-best").is_dir() and finished(output):
        print(f"reusing {output}", file=sys.stderr)
        return "arborist " + " ".join(args), None
    start = time.perf_counter()
    run(args)
    return "arborist " + " ".join(args), time.perf_counter() - start


def evaluate(model: Path, dev: str, gold_tags: bool) -> tuple[str, dict]:
    args = ["evaluate", str(model), dev, "--json"] + (["--gold-tags"] if gold_tags else [])
    return "arborist " + " ".join(args), json.loads(run(args))


def training_record(output: Path) -> dict:
    """Best epochs and the labeler's history from the run's training.json."""
    report = json.loads((output / "training.json").read_text(encoding="utf-8"))
    components = report.get("components", {})
    record = {f"{name}_best_epoch": entry.get("best_epoch") for name, entry in components.items()}
    labeler = components.get("labeler")
    if labeler is not None:
        keep = ("epoch", "dev_las", "dev_las_full", "dev_uas", "train_accuracy", "epoch_seconds")
        history = [{k: row[k] for k in keep if k in row} for row in labeler.get("history", [])]
        record["labeler_history"] = history
        seconds = [row["epoch_seconds"] for row in history if "epoch_seconds" in row]
        if seconds:
            record["labeler_epoch_seconds_median"] = statistics.median(seconds)
    return record


def labeler_alone_config(bits: int, path: Path) -> Path:
    """configs/en_ewt_labeled.cfg without its parser, the labeler at 2^bits weights."""
    from confection import Config

    config = Config().from_disk(REPO / LABELED, interpolate=False)
    del config["components"]["parser"]
    config["components"]["labeler"]["structure"]["hash_bits"] = bits
    config["training"]["max_epochs"] = LABELER_ALONE_EPOCHS
    path.parent.mkdir(parents=True, exist_ok=True)
    config.to_disk(path)
    return path


def section(config: str, output: Path, dev: str, gold_tags: bool, overrides: list[str], reuse: bool) -> dict:
    train_command, seconds = train(config, output, overrides, reuse)
    evaluate_command, scores = evaluate(output, dev, gold_tags)
    return {"commands": [train_command, evaluate_command], "train_seconds": seconds, **scores,
            **training_record(output)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="runs/labels", help="directory for the trained runs (relative to the project root)")
    ap.add_argument("--dev", default=DEV, help="gold CoNLL-U file to evaluate on")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="passed to every arborist train")
    ap.add_argument("--reuse", action="store_true", help="evaluate existing runs instead of training them again")
    ap.add_argument("--output", default="scripts/results/labels_en_ewt.json")
    args = ap.parse_args()

    runs = REPO / args.runs
    result: dict = {"benchmark": "labels_en_ewt", "script": "scripts/bench_labels_table.py", "dev": args.dev,
                    "overrides": args.overrides}
    if "gold_tags" in args.only:
        result["gold_tags"] = section(LABELED, runs / "labeled_gold", args.dev, True, args.overrides, args.reuse)
    if "predicted_tags" in args.only:
        result["predicted_tags"] = section(PIPELINE, runs / "labeled_pipeline", args.dev, False, args.overrides,
                                           args.reuse)
    if "labeler_alone" in args.only:
        result["labeler_alone"] = {}
        for bits in LABELER_ALONE_BITS:
            config = labeler_alone_config(bits, runs / f"labeler_alone_{bits}.cfg")
            result["labeler_alone"][f"hash_bits_{bits}"] = section(
                str(config.relative_to(REPO)) if config.is_relative_to(REPO) else str(config),
                runs / f"labeler_alone_{bits}", args.dev, True, args.overrides, args.reuse)
    result["words"] = next((v["words"] for k, v in result.items() if isinstance(v, dict) and "words" in v), None)
    result["machine"] = platform.processor() or platform.machine()
    out = REPO / args.output
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
