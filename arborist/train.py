"""The training driver: config -> corpora -> components -> the best pipeline on dev.

A config names its components under [components]: taggers (linear chains over
UPOS or XPOS), at most one pruner (a first-order model whose arc marginals prune a
second-order parser's arcs), at most one parser and at most one labeler (DEPREL of each arc, trained
on gold trees, scored on dev on the parser's). Each is trained in turn, taggers first,
with its own structure and trainer, and kept at its best epoch on dev. The
parser (and labeler) is trained on tags of the quality it will see: the training set's tags
come from `jackknife_folds`-fold jackknifing (each fold tagged by a tagger
trained on the other folds for the full tagger's best number of epochs) and
the dev set's from the trained taggers. Generic over structures and trainers.

The output directory is laid out like `spacy train`'s:

    model-best/     the pipeline of the best epochs on dev so far, replaced
                    atomically whenever a component improves
    checkpoint/     the current component's trainer state after its last epoch
                    (weights, averaging or dual state, random state), the
                    history, and the jackknifed tags, for `--resume`
    training.json   per-component, per-epoch metrics and, for C-annealing, the
                    table of §7.1.2 (for MaxEnDNet, one row per outer iteration)

so a crash loses at most the current epoch.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from confection import Config

from .corpus import read_corpus
from .evaluate import attachment_scores, pruning_scores, tag_scores
from .model import (BEST_MODEL, Labeler, Pipeline, Pruner, Tagger, component_for, kind_of, load, with_tags,
                    write_directory)
from .registry import registry
from .sentence import FORM
from .tracking import trackers_for, tracking_settings

CHECKPOINT = "checkpoint"
JACKKNIFE = "jackknife.npz"
TRAINING_DEFAULTS = {
    "train_path": None,
    "dev_path": None,
    "max_epochs": 15,
    "patience": 0,
    "max_train_sentences": 0,
    "jackknife_folds": 10,
}
COMPONENT_TRAINING = ("max_epochs", "patience")  # what [components.NAME.training] may override


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


def annealing_markdown(rows: list[dict], key: str = "dev_uas") -> str:
    """The C-annealing table in the format of Tables 2-3 of seeds/001; `key` is the dev
    score shown (dev_uas for a parser, dev_upos for a UPOS tagger)."""
    title = "Dev " + key[len("dev_"):].upper()
    lines = [f"| C | Iterations | Total Iterations | {title} |", "|---:|---:|---:|---:|"]
    for row in rows:
        score = "" if row.get(key) is None else f"{row[key]:.2f}"
        lines.append(f"| {row['C']:.6g} | {row['iterations']:.2f} | {row['total_iterations']:.2f} | {score} |")
    return "\n".join(lines)


def save_checkpoint(directory: Path, trainer, state: dict) -> None:
    arrays, meta = trainer.state()

    def write(tmp: Path) -> None:
        np.savez(tmp / "arrays.npz", **arrays)
        if (directory / JACKKNIFE).is_file():  # written once, before the parser's first epoch
            shutil.copy2(directory / JACKKNIFE, tmp / JACKKNIFE)
        (tmp / "state.json").write_text(json.dumps({**state, "trainer": meta}) + "\n", encoding="utf-8")

    write_directory(directory, write)


def load_checkpoint(directory: Path) -> tuple[dict, dict]:
    if not (directory / "state.json").is_file():
        raise ValueError(f"{directory}: no checkpoint to resume from (state.json missing)")
    state = json.loads((directory / "state.json").read_text(encoding="utf-8"))
    with np.load(directory / "arrays.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return state, arrays


def train(config: Config, output: str | Path | None = None, tracker=None,
          resume: bool = False, use_wandb: bool = True) -> tuple[Pipeline, dict]:
    """Train every component of the config; returns the best pipeline and the report.

    Without a `tracker`, progress goes to the console and, unless `use_wandb` is false or
    the config's [tracking] says wandb = false, to a W&B run (a resumed run continues the
    W&B run of its checkpoint)."""
    settings = _settings(config)
    specs = _component_specs(config)
    tracking_settings(config)  # a bad [tracking] section fails before any work
    if resume and output is None:
        raise ValueError("--resume needs the --output directory of the run to continue")
    output = Path(output) if output is not None else None
    if tracker is None:
        run_id = None
        if resume and (output / CHECKPOINT / "state.json").is_file():
            run_id = load_checkpoint(output / CHECKPOINT)[0].get("wandb_run_id")
        tracker = trackers_for(config, output, use_wandb, run_id)

    train_set = read_corpus(settings["train_path"], require_heads=True)
    limit = settings["max_train_sentences"] or 0
    if limit:
        train_set = train_set[:limit]
    dev_set = read_corpus(settings["dev_path"], require_heads=True) if settings["dev_path"] else []
    tracker.message(
        f"train: {len(train_set)} sentences, {sum(s.n for s in train_set)} words; dev: {len(dev_set)} sentences"
    )
    config_text = config.to_str()
    vocabulary = np.unique(np.concatenate([x.attrs[FORM, 1:] for x in train_set])) if train_set else None
    pipeline = Pipeline(vocabulary=vocabulary, info={"config": config_text})
    report: dict = {"components": {}}
    state: dict | None = None
    arrays: dict | None = None
    jackknifed: dict[str, list[list[str]]] = {}
    if not resume and output is not None and (output / CHECKPOINT / JACKKNIFE).exists():
        (output / CHECKPOINT / JACKKNIFE).unlink()  # an earlier run's tags: this run jackknifes its own
    if resume:
        state, arrays = load_checkpoint(output / CHECKPOINT)
        if _resumable(state["config"]) != _resumable(config_text):
            raise ValueError(f"{output / CHECKPOINT}: the checkpoint was written with a different config; "
                             "resume with the same config and --set values (only training.max_epochs and "
                             "training.patience may change)")
        report = state["report"]
        if (output / BEST_MODEL).exists():
            for name, component in load(output / BEST_MODEL).components.items():
                pipeline.add(name, component)
        jackknifed = _load_jackknife(output / CHECKPOINT)
        tracker.message(f"resuming {state['component']} after epoch {state['epoch']} from {output / CHECKPOINT}")

    for name, spec in specs.items():
        limits = {k: spec.get("training", {}).get(k, settings[k]) for k in COMPONENT_TRAINING}
        entry = report["components"].get(name, {})
        resuming = state is not None and state["component"] == name
        if entry.get("done"):
            # Only the last component trained may go on, when it stopped at max_epochs and
            # the resumed run allows more; the ones before it are fixed (later ones read them).
            if not (resuming and entry.get("stopped") == "max_epochs" and state["epoch"] < limits["max_epochs"]):
                continue
        resolved = registry.resolve(Config({"c": spec}), validate=True)["c"]
        structure, trainer = resolved["structure"], resolved["trainer"]
        kind = kind_of(structure)
        if kind in ("pruner", "parser", "labeler"):
            folds = settings["jackknife_folds"]
            if pipeline.taggers and folds:
                for tagger_name, tagger in pipeline.components.items():
                    if isinstance(tagger, Tagger) and tagger.attribute not in jackknifed:
                        epochs = report["components"][tagger_name]["best_epoch"]
                        jackknifed[tagger.attribute] = jackknife(specs[tagger_name], train_set, folds, epochs, tracker)
                        if output is not None:
                            _save_jackknife(output / CHECKPOINT, jackknifed)
                train_x = [_retag(x, jackknifed, i) for i, x in enumerate(train_set)]
            else:
                train_x = train_set
            dev_x = [pipeline.tag(x) for x in dev_set]
            if kind == "labeler" and pipeline.parser is not None:
                # The labeler trains on gold trees and is scored on the parser's.
                dev_x = [replace(x, heads=pipeline.parser.predict(x)) for x in dev_x]
        else:
            train_x, dev_x = train_set, dev_set
        if kind == "parser" and structure.order == 2:
            if pipeline.pruner is None:
                tracker.message(f"{name}: second order without a pruner: every arc is allowed (slow on long "
                                "sentences; add a [components.pruner] with arborist.Pruner.v1)")
            else:
                structure.use_pruner(pipeline.pruner)
        structure.initialize(train_x)
        if kind == "parser" and structure.order == 2 and pipeline.pruner is not None:
            kept = structure.training_pruning
            tracker.message(f"{name}: pruned training arcs keep {kept['prune_recall']:.2f}% of the gold arcs (the "
                            f"rest are added back), {kept['heads_per_word']:.2f} heads per word")
        if kind == "parser":
            tracker.message(f"{name}: {'projective' if structure.projective else 'non-projective'} trees"
                            + (f", second order ({', '.join(structure.parts)})" if structure.order == 2 else ""))
        _train_component(name, structure, trainer, train_x, dev_x, dev_set, limits, pipeline, report,
                         config_text, output, tracker, arrays if resuming else None, state if resuming else None)
        state = None
    tracker.summary({f"{name}/best_{entry['key']}": entry["best"] for name, entry in report["components"].items()
                     if entry.get("best") is not None}
                    | {f"{name}/best_epoch": entry["best_epoch"] for name, entry in report["components"].items()})
    if output is not None and (output / BEST_MODEL).is_dir():
        tracker.log_model(output / BEST_MODEL, "model")
    tracker.close()
    return pipeline, report


def _train_component(name, structure, trainer, train_x, dev_x, dev_gold, limits, pipeline, report, config_text,
                     output, tracker, arrays, state) -> None:
    """Epochs of one component; its best epoch on dev goes into `pipeline` (and model-best)."""
    kind = kind_of(structure)
    key = {"tagger": f"dev_{getattr(structure, 'attribute', '')}", "pruner": "dev_uas", "parser": "dev_uas",
           "labeler": "dev_las"}[kind]
    entry = report["components"].setdefault(name, {"kind": kind, "key": key, "best_epoch": None,
                                                   "best": None, "history": [], "done": False})
    tracker.start_component(name, (key,) + tuple(getattr(trainer, "columns", ())))
    first_epoch = 1
    if arrays is not None:
        trainer.restore(structure, train_x, arrays, state["trainer"])
        first_epoch = state["epoch"] + 1
    else:
        start = time.perf_counter()
        trainer.begin(structure, train_x, structure.hash_bits)
        setup = time.perf_counter() - start
        if setup > 1.0:
            tracker.message(f"trainer set-up: {setup:.1f} s" + "".join(
                f"; {k} {v}" for k, v in getattr(trainer, "setup_report", lambda: {})().items()))
    best_score = -1.0 if entry["best"] is None else entry["best"]
    train_words = sum(x.n for x in train_x)
    for epoch in range(first_epoch, limits["max_epochs"] + 1):
        tracker.start_epoch(epoch, len(train_x))
        metrics = trainer.epoch(structure, train_x, tracker)
        if metrics.get("epoch_seconds"):
            metrics["train_words_per_second"] = train_words / metrics["epoch_seconds"]
        if "train_accuracy" in metrics:
            metrics["train_accuracy"] *= 100.0
        component = component_for(structure, trainer.prediction_weights().array)
        if dev_x:
            start = time.perf_counter()
            scores = evaluate_component(component, dev_x, dev_gold, pipeline)
            metrics.update({f"dev_{k}": v for k, v in scores.items() if k not in ("words", "sentences")})
            metrics["dev_words_per_second"] = scores["words"] / (time.perf_counter() - start)
        metrics["epoch"] = epoch
        stop = trainer.finish_epoch(metrics)
        entry["history"].append(metrics)
        tracker.end_epoch(epoch, metrics)
        score = metrics.get(key, 0.0)
        improved = not dev_x or score > best_score
        if improved:
            best_score = score
            entry["best"], entry["best_epoch"] = score, epoch
            component.info = {"best_epoch": epoch, "dev": {k: v for k, v in metrics.items() if k.startswith("dev_")}}
            pipeline.add(name, component)
            if output is not None:
                pipeline.save(output / BEST_MODEL)
        patience_over = bool(not improved and limits["patience"]
                             and epoch - entry["best_epoch"] >= limits["patience"])
        entry["stopped"] = ("schedule" if stop else "patience" if patience_over
                            else "max_epochs" if epoch == limits["max_epochs"] else None)
        entry["done"] = entry["stopped"] is not None
        # One W&B row per finished C value (C-annealing) or outer iteration (MaxEnDNet).
        for prefix, attribute in (("annealing", "annealing_table"), ("outer", "outer_table")):
            table = getattr(trainer, attribute, None)
            if table:
                for row in table[len(entry.get(prefix, [])):]:
                    tracker.log({f"{prefix}/{k}": v for k, v in row.items()})
                entry[prefix] = list(table)
        if output is not None:
            (output / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            save_checkpoint(output / CHECKPOINT, trainer,
                            {"component": name, "epoch": epoch, "config": config_text, "report": report,
                             "wandb_run_id": getattr(tracker, "run_id", None)})
        if stop:
            tracker.message("the trainer finished its schedule; stopping")
            break
        if patience_over:
            tracker.message(f"no dev improvement for {limits['patience']} epochs; stopping")
            break
    entry["done"] = True
    entry["stopped"] = entry.get("stopped") or "max_epochs"
    if entry.get("annealing"):
        tracker.message(annealing_markdown(entry["annealing"], entry["key"]))
    if output is not None:
        (output / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def evaluate_component(component, inputs: list, gold: list, pipeline: Pipeline | None = None) -> dict:
    """Dev scores of one component: a tagger's accuracy (all words and words unseen in
    training) on `inputs`, a parser's attachment scores, or a labeler's attachment scores
    with the labels it gives the trees of `inputs`; `gold` holds the gold annotation."""
    if isinstance(component, Tagger):
        unseen = pipeline.unseen if pipeline is not None else None
        return tag_scores(((g, {component.attribute: component.tags(x)}) for x, g in zip(inputs, gold)), unseen)
    if isinstance(component, Labeler):
        return attachment_scores((g, x.heads, component.labels(x, x.heads)) for x, g in zip(inputs, gold))
    if isinstance(component, Pruner):
        # its own trees' attachment, and what it keeps for a second-order parser
        return attachment_scores((g, component.predict(x), None) for x, g in zip(inputs, gold)) | pruning_scores(
            (g, component.allowed(x)) for x, g in zip(inputs, gold))
    return attachment_scores((g, component.predict(x), None) for x, g in zip(inputs, gold))


def jackknife(spec: dict, sentences: list, folds: int, epochs: int, tracker) -> list[list[str]]:
    """Each sentence's tags as predicted by a tagger trained, as `spec` says, for `epochs`
    epochs on the folds that do not hold it (sentence i is in fold i mod `folds`)."""
    if folds < 2:
        raise ValueError(f"training.jackknife_folds must be 0 (parser trains on gold tags) or >= 2, got {folds}")
    predicted: list[list[str] | None] = [None] * len(sentences)
    for fold in range(folds):
        rest = [x for i, x in enumerate(sentences) if i % folds != fold]
        resolved = registry.resolve(Config({"c": spec}), validate=True)["c"]
        structure, trainer = resolved["structure"], resolved["trainer"]
        structure.initialize(rest)
        tracker.message(f"jackknifing {structure.attribute.upper()}: fold {fold + 1}/{folds}, {epochs} epochs")
        trainer.begin(structure, rest, structure.hash_bits)
        for epoch in range(1, epochs + 1):
            metrics = trainer.epoch(structure, rest, None)
            if trainer.finish_epoch(metrics):
                break
        tagger = component_for(structure, trainer.prediction_weights().array)
        for i in range(fold, len(sentences), folds):
            predicted[i] = tagger.tags(sentences[i])
    return predicted


def _retag(x, jackknifed: dict, i: int):
    for attribute, tags in jackknifed.items():
        x = with_tags(x, attribute, tags[i])
    return x


def _save_jackknife(directory: Path, jackknifed: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for attribute, tags in jackknifed.items():
        arrays[f"{attribute}_tags"] = np.array([t for sentence in tags for t in sentence], dtype=str)
        arrays[f"{attribute}_lengths"] = np.array([len(sentence) for sentence in tags], dtype=np.int64)
    tmp = directory / f".{JACKKNIFE}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    tmp.replace(directory / JACKKNIFE)


def _load_jackknife(directory: Path) -> dict:
    if not (directory / JACKKNIFE).is_file():
        return {}
    out = {}
    with np.load(directory / JACKKNIFE, allow_pickle=False) as data:
        for key in data.files:
            if key.endswith("_lengths"):
                attribute = key[: -len("_lengths")]
                flat = data[f"{attribute}_tags"].tolist()
                bounds = np.concatenate([[0], np.cumsum(data[key])])
                out[attribute] = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return out


def _settings(config: Config) -> dict:
    training = dict(config.get("training", {}))
    unknown = sorted(set(training) - set(TRAINING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown [training] setting(s): {', '.join(unknown)}; known: {', '.join(TRAINING_DEFAULTS)}")
    settings = {**TRAINING_DEFAULTS, **training}
    if not isinstance(settings["max_epochs"], int) or settings["max_epochs"] < 1:
        raise ValueError(f"training.max_epochs must be a positive integer, got {settings['max_epochs']!r}")
    if not settings["train_path"]:
        raise ValueError("training.train_path is not set")
    folds = settings["jackknife_folds"]
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 0 or folds == 1:
        raise ValueError(f"training.jackknife_folds must be 0 (the parser trains on gold tags) or an integer >= 2, "
                         f"got {folds!r}")
    return settings


def _component_specs(config: Config) -> dict:
    """The [components.NAME] sections, taggers first (in config order), then the pruner, the parser
    and the labeler."""
    if "structure" in config or "trainer" in config:
        raise ValueError("[structure] and [trainer] belong to a component: write [components.parser.structure] "
                         "and [components.parser.trainer] (see configs/quickstart.cfg)")
    components = config.get("components")
    if not components:
        raise ValueError("the config has no [components.NAME] sections (a tagger or a parser to train)")
    kinds, tagged = {}, {}
    for name, spec in components.items():
        missing = [k for k in ("structure", "trainer") if k not in spec]
        if missing:
            raise ValueError(f"[components.{name}] needs {' and '.join(f'[components.{name}.{k}]' for k in missing)}")
        extra = sorted(set(spec) - {"structure", "trainer", "training"})
        if extra:
            raise ValueError(f"[components.{name}]: unknown entries {', '.join(extra)} "
                             "(expected structure, trainer and optionally training)")
        bad = sorted(set(spec.get("training", {})) - set(COMPONENT_TRAINING))
        if bad:
            raise ValueError(f"[components.{name}.training] may set only {', '.join(COMPONENT_TRAINING)}, "
                             f"not {', '.join(bad)}")
        structure = registry.resolve(Config({"s": spec["structure"]}), validate=True)["s"]
        kinds[name] = kind_of(structure)
        if kinds[name] == "tagger":
            if structure.attribute in tagged:
                raise ValueError(f"[components.{tagged[structure.attribute]}] and [components.{name}] both tag "
                                 f"{structure.attribute.upper()}")
            tagged[structure.attribute] = name
    pruners = [n for n, k in kinds.items() if k == "pruner"]
    if len(pruners) > 1:
        raise ValueError(f"at most one pruner per pipeline, got {', '.join(pruners)}")
    parsers = [n for n, k in kinds.items() if k == "parser"]
    if len(parsers) > 1:
        raise ValueError(f"at most one parser per pipeline, got {', '.join(parsers)}")
    labelers = [n for n, k in kinds.items() if k == "labeler"]
    if len(labelers) > 1:
        raise ValueError(f"at most one labeler per pipeline, got {', '.join(labelers)}")
    order = [n for n in components if kinds[n] == "tagger"] + pruners + parsers + labelers
    return {name: components[name] for name in order}


def _resumable(config_text: str) -> dict:
    """The parts of a config a resumed run must share with the original: all but how long to train."""
    config = Config().from_str(config_text, interpolate=False)
    training = dict(config.get("training", {}))
    training.pop("max_epochs", None)
    training.pop("patience", None)
    config.pop("tracking", None)  # where progress is logged does not change what is trained
    components = {}
    for name, spec in dict(config.get("components", {})).items():
        spec = dict(spec)
        spec.pop("training", None)
        components[name] = spec
    return {**config, "training": training, "components": components}
