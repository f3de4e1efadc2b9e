"""The training driver: config -> corpora -> epochs -> best model on dev.

Generic over structures and trainers: it reads the corpora, lets the trainer run
epochs, evaluates on dev after each, and saves the best epoch's model
atomically as soon as it is found (so a crash loses at most the current epoch).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confection import Config

from .corpus import read_corpus
from .evaluate import attachment_scores
from .model import Parser
from .registry import registry
from .tracking import ConsoleTracker


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


def train(config: Config, output: str | Path | None = None, tracker=None) -> tuple[Parser, dict]:
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
    tracker = tracker or ConsoleTracker(columns=("train_accuracy", "dev_uas", "updates", "epoch_seconds"))

    train_set = read_corpus(settings["train_path"], require_heads=True)
    limit = settings.get("max_train_sentences") or 0
    if limit:
        train_set = train_set[:limit]
    dev_set = read_corpus(settings["dev_path"], require_heads=True) if settings.get("dev_path") else []
    tracker.message(
        f"train: {len(train_set)} sentences, {sum(s.n for s in train_set)} words; dev: {len(dev_set)} sentences"
    )

    trainer.begin(structure, train_set, structure.hash_bits)
    best: dict = {"dev_uas": -1.0}
    best_parser = None
    history = []
    patience = settings.get("patience") or 0
    for epoch in range(1, settings["max_epochs"] + 1):
        tracker.start_epoch(epoch, len(train_set))
        metrics = trainer.epoch(structure, train_set, tracker)
        metrics["train_accuracy"] *= 100.0
        parser = Parser(structure, trainer.prediction_weights().array)
        if dev_set:
            start = time.perf_counter()
            scores = evaluate_parser(parser, dev_set)
            metrics.update({f"dev_{k}": v for k, v in scores.items() if k not in ("words", "sentences")})
            metrics["dev_words_per_second"] = scores["words"] / (time.perf_counter() - start)
        metrics["epoch"] = epoch
        history.append(metrics)
        tracker.end_epoch(epoch, metrics)
        improved = not dev_set or metrics.get("dev_uas", 0.0) > best["dev_uas"]
        if improved:
            best = dict(metrics)
            best_parser = parser
            best_parser.info = {"best_epoch": epoch, "dev": {k: v for k, v in metrics.items() if k.startswith("dev_")}}
            if output is not None:
                best_parser.info["config"] = config.to_str()
                best_parser.save(output)
        elif patience and epoch - best["epoch"] >= patience:
            tracker.message(f"no dev improvement for {patience} epochs; stopping")
            break
    tracker.close()
    summary = {"best_epoch": best.get("epoch"), "best_dev_uas": best.get("dev_uas"), "history": history}
    return best_parser, summary
