"""The training driver: config -> corpora -> epochs -> best model on dev.

Generic over structures and trainers: it reads the corpora, lets the trainer run
epochs, evaluates on dev after each, and writes, in the output directory (laid
out like `spacy train`'s):

    model-best/     the best epoch on dev, replaced atomically when dev improves
    checkpoint/     the last epoch's trainer state (weights, averaging or dual
                    state, random state) and history, for `--resume`
    training.json   per-epoch metrics and, for C-annealing, the table of §7.1.2

so a crash loses at most the current epoch.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from confection import Config

from .corpus import read_corpus
from .evaluate import attachment_scores
from .model import BEST_MODEL, Parser, write_directory
from .registry import registry
from .tracking import ConsoleTracker

CHECKPOINT = "checkpoint"
TRAINING_DEFAULTS = {
    "train_path": None,
    "dev_path": None,
    "max_epochs": 15,
    "patience": 0,
    "max_train_sentences": 0,
}


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Config:
    return Config().from_disk(path, overrides=overrides or {})


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """['training.max_epochs=3', 'paths.train="x"'] -> {'training.max_epochs': 3, ...}."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or "." not in key:
            raise ValueError(f"--set expects section.key=value, got {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def evaluate_parser(parser: Parser, sentences) -> dict:
    return attachment_scores((s, h, None) for s, h in parser.parse(sentences))


def annealing_markdown(rows: list[dict]) -> str:
    """The C-annealing table in the format of Tables 2-3 of seeds/001."""
    lines = ["| C | Iterations | Total Iterations | Dev UAS |", "|---:|---:|---:|---:|"]
    for row in rows:
        uas = "" if row.get("dev_uas") is None else f"{row['dev_uas']:.2f}"
        lines.append(f"| {row['C']:.6g} | {row['iterations']:.2f} | {row['total_iterations']:.2f} | {uas} |")
    return "\n".join(lines)


def save_checkpoint(directory: Path, trainer, state: dict) -> None:
    arrays, meta = trainer.state()

    def write(tmp: Path) -> None:
        np.savez(tmp / "arrays.npz", **arrays)
        (tmp / "state.json").write_text(json.dumps({**state, "trainer": meta}) + "\n", encoding="utf-8")

    write_directory(directory, write)


def load_checkpoint(directory: Path) -> tuple[dict, dict]:
    if not (directory / "state.json").is_file():
        raise ValueError(f"{directory}: no checkpoint to resume from (state.json missing)")
    state = json.loads((directory / "state.json").read_text(encoding="utf-8"))
    with np.load(directory / "arrays.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return state, arrays


def train(config: Config, output: str | Path | None = None, tracker=None, resume: bool = False) -> tuple[Parser, dict]:
    resolved = registry.resolve(config, validate=True)
    structure = resolved["structure"]
    trainer = resolved["trainer"]
    settings = {**TRAINING_DEFAULTS, **resolved["training"]}
    unknown = sorted(set(settings) - set(TRAINING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown [training] setting(s): {', '.join(unknown)}; known: {', '.join(TRAINING_DEFAULTS)}")
    if not isinstance(settings["max_epochs"], int) or settings["max_epochs"] < 1:
        raise ValueError(f"training.max_epochs must be a positive integer, got {settings['max_epochs']!r}")
    if not settings["train_path"]:
        raise ValueError("training.train_path is not set")
    if resume and output is None:
        raise ValueError("--resume needs the --output directory of the run to continue")
    output = Path(output) if output is not None else None
    tracker = tracker or ConsoleTracker(columns=getattr(trainer, "columns", ()))

    train_set = read_corpus(settings["train_path"], require_heads=True)
    limit = settings.get("max_train_sentences") or 0
    if limit:
        train_set = train_set[:limit]
    dev_set = read_corpus(settings["dev_path"], require_heads=True) if settings.get("dev_path") else []
    tracker.message(
        f"train: {len(train_set)} sentences, {sum(s.n for s in train_set)} words; dev: {len(dev_set)} sentences"
    )

    config_text = config.to_str()
    best: dict = {"dev_uas": -1.0}
    history: list[dict] = []
    first_epoch = 1
    if resume:
        state, arrays = load_checkpoint(output / CHECKPOINT)
        if _resumable(state["config"]) != _resumable(config_text):
            raise ValueError(f"{output / CHECKPOINT}: the checkpoint was written with a different config; "
                             "resume with the same config and --set values (only training.max_epochs and "
                             "training.patience may change)")
        trainer.restore(structure, train_set, arrays, state["trainer"])
        history, best = state["history"], state["best"]
        first_epoch = state["epoch"] + 1
        tracker.message(f"resuming after epoch {state['epoch']} from {output / CHECKPOINT}")
    else:
        start = time.perf_counter()
        trainer.begin(structure, train_set, structure.hash_bits)
        setup = time.perf_counter() - start
        if setup > 1.0:
            tracker.message(f"trainer set-up: {setup:.1f} s" + "".join(
                f"; {k} {v}" for k, v in getattr(trainer, "setup_report", lambda: {})().items()))

    best_parser = None
    patience = settings.get("patience") or 0
    for epoch in range(first_epoch, settings["max_epochs"] + 1):
        tracker.start_epoch(epoch, len(train_set))
        metrics = trainer.epoch(structure, train_set, tracker)
        if "train_accuracy" in metrics:
            metrics["train_accuracy"] *= 100.0
        parser = Parser(structure, trainer.prediction_weights().array)
        if dev_set:
            start = time.perf_counter()
            scores = evaluate_parser(parser, dev_set)
            metrics.update({f"dev_{k}": v for k, v in scores.items() if k not in ("words", "sentences")})
            metrics["dev_words_per_second"] = scores["words"] / (time.perf_counter() - start)
        metrics["epoch"] = epoch
        stop = trainer.finish_epoch(metrics)
        history.append(metrics)
        tracker.end_epoch(epoch, metrics)
        improved = not dev_set or metrics.get("dev_uas", 0.0) > best["dev_uas"]
        if improved:
            best = dict(metrics)
            best_parser = parser
            best_parser.info = {"best_epoch": epoch, "dev": {k: v for k, v in metrics.items() if k.startswith("dev_")},
                                "config": config_text}
            if output is not None:
                best_parser.save(output / BEST_MODEL)
        if output is not None:
            report = _report(history, best, trainer)
            (output / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            save_checkpoint(output / CHECKPOINT, trainer,
                            {"epoch": epoch, "config": config_text, "history": history, "best": best})
        if stop:
            tracker.message("the trainer finished its schedule; stopping")
            break
        if not improved and patience and epoch - best["epoch"] >= patience:
            tracker.message(f"no dev improvement for {patience} epochs; stopping")
            break
    tracker.close()
    if best_parser is None and output is not None and (output / BEST_MODEL).exists():
        from .model import load

        best_parser = load(output / BEST_MODEL)  # resumed after the best epoch
    summary = _report(history, best, trainer)
    if summary.get("annealing"):
        tracker.message(annealing_markdown(summary["annealing"]))
    return best_parser, summary


def _resumable(config_text: str) -> dict:
    """The parts of a config a resumed run must share with the original: all but how long to train."""
    config = Config().from_str(config_text, interpolate=False)
    training = dict(config.get("training", {}))
    training.pop("max_epochs", None)
    training.pop("patience", None)
    return {**config, "training": training}


def _report(history, best, trainer) -> dict:
    report = {"best_epoch": best.get("epoch"), "best_dev_uas": best.get("dev_uas"), "history": history}
    table = getattr(trainer, "annealing_table", None)
    if table:
        report["annealing"] = table
    return report
