"""The training driver: config -> corpora -> components -> the best pipeline on dev.

A config names its components under [components.NAME], each with a `structure`, a
`trainer`, optionally its `kind` (a registered component kind; by default the kind
registered for its structure) and a [components.NAME.training] section with its own
`max_epochs` / `patience` / `keep` / `seeds` (N runs averaged: `Training.train_members`).
The components train in pipeline order: a component comes
after those whose columns it reads (the parser after the taggers, the labeler after
the parser), and otherwise in config order. Each trains with its own structure and
trainer on what the components before it produce, and is kept at its best epoch on
dev (or its last, with `keep = "last"`):

- its training sentences carry the `jackknife_folds`-fold jackknifed predictions of the
  components before it whose columns it reads and whose kind is jackknifed (each fold
  predicted by a copy trained on the other folds for the full component's best number
  of epochs), so it trains on inputs of the quality it will see; the other columns
  are gold (the labeler trains on gold trees);
- its dev sentences carry what the pipeline before it predicts.

The kind says everything else: which examples its structure sees, its dev score.

The output directory is laid out like `spacy train`'s:

    model-best/     the pipeline of the best epochs on dev so far, replaced
                    atomically whenever a component improves
    checkpoint/     the current component's trainer state after its last epoch
                    (weights, averaging or dual state, random state), the
                    history, and the jackknifed predictions, for `--resume`
    training.json   per-component, per-epoch metrics and the trainer's tables (for
                    C-annealing the table of §7.1.2; for MaxEnDNet one row per outer
                    iteration)

so a crash loses at most the current epoch.

`[training] workers = N` (N > 1) shares the work among N workers, which `engine` places:
"local" (default: processes forked on this machine, which read the examples
copy-on-write) or "ray" (Ray tasks and actors, on the cluster at RAY_ADDRESS or on
`ray.init(num_cpus=N)`; Ray is imported only then), and the model is the one a single
worker trains, bit for bit: the jackknife folds run in parallel, each fold training
serially (with the local engine they start with their component's training and follow it
epoch by epoch, `_follow`; the next components train while they run); a first-order
parser scores each sentence in two threads (`scoring_threads`); the component after it,
when its training does not depend on it (the labeler trains on gold trees) and its
trainer is of the perceptron family, trains ahead in a process of its own while it trains
(`AheadTraining`: its epochs' states are restored in turn and scored on dev as usual);
and the dev sentences are annotated in N threads. With
`parameter_mixing = true` as well, a component of the perceptron family trains by
iterative parameter mixing over N shards (`arborist.learn.mixing`: each epoch, N shards
from the mixed weights, then their average; the averaged weights stay the exact mean
over every example visited): faster epochs, a different model (measured: dev UAS a few
tenths lower at the same number of epochs), so it is asked for, never implied. Other
trainers (EG, MaxEnDNet, SGD) then train serially, with a message. A resumed run keeps
the number of shards its checkpoint was trained with.
"""
from __future__ import annotations

import copy
import inspect
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from confection import Config

from .component import TOKEN_COLUMNS, Component
from .confidence import describe_fit, upstream_inputs
from .learn.mixing import ENGINES, ParameterMixing, connect_ray, parallel_trainer
from .learn.perceptron import SWVP
from .corpus import read_corpus
from .model import (BEST_MODEL, UD_FILE_NAME, Pipeline, annotate, language_code, load, read_json, recover_directory,
                    spacy_language_error, write_directory)
from .registry import component_kind, kind_for_structure, registry
from .sentence import FORM
from .structure import scoring_threads
from .tracking import trackers_for, tracking_settings

CHECKPOINT = "checkpoint"
JACKKNIFE = "jackknife.npz"
# The columns a component may read with no component before it writing them: the input's (a
# CoNLL-U file's, the raw text), and a pruner's arcs (without one a parser allows every arc).
INPUT_COLUMNS = ("text", "form", "head", "deprel", "arcs") + TOKEN_COLUMNS
TRAINING_DEFAULTS = {
    "train_path": None,
    "dev_path": None,
    "max_epochs": 15,
    "patience": 0,
    "max_train_sentences": 0,
    "jackknife_folds": 10,
    "workers": 1,  # workers for the jackknife folds (and parameter mixing's shards); 1: serial
    "parameter_mixing": False,  # with workers > 1: the perceptron family trains by parameter mixing (another model)
    "mixes_per_epoch": 1,  # parameter mixing's rounds per epoch (1: McDonald et al.'s IPM, one mix per epoch)
    "engine": "local",  # where the workers run: "local" (forked processes) or "ray" (Ray tasks and actors)
    "calibrate": True,
    # Which epoch model-best keeps: "best" on dev, or "last" (a structure whose epoch count is
    # its setting: the tokenizer's 40 epochs fit the training text, which a dev score tied at
    # an early epoch would throw away).
    "keep": "best",
    # Train each component this many times, its trainer's seed counting up from the configured
    # one, and keep the mean of the runs' best weights (`Training.train_members`): an ensemble
    # that predicts at the cost of one model. Usually set per component.
    "seeds": 1,
}
KEEP = ("best", "last")
COMPONENT_TRAINING = ("max_epochs", "patience", "keep", "seeds")  # what [components.NAME.training] may override
MEMBER_SUM, MEMBER_BEST = "members.sum", "members.best"  # checkpoint arrays of a component trained with seeds
COMPONENT_ENTRIES = {"kind", "structure", "trainer", "training"}


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Config:
    """The config file with `overrides` ({"training.max_epochs": 3}). A config without spaCy's
    `[nlp]` section gets `lang = null` (`with_language`), so that `--set nlp.lang=it` works
    with every config, not only those that name it."""
    text = Path(path).read_text(encoding="utf-8")
    if "nlp" not in Config().from_str(text, interpolate=False):
        text += '\n[nlp]\nlang = null\n'
    return Config().from_str(text, overrides=overrides or {})


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


def save_checkpoint(directory: Path, trainer, state: dict, extra: dict | None = None) -> None:
    """The trainer's state, `state` and the `extra` arrays (a component trained with seeds:
    MEMBER_SUM and MEMBER_BEST) in one atomic write."""
    arrays, meta = trainer.state()
    arrays = {**arrays, **(extra or {})}

    def write(tmp: Path) -> None:
        np.savez(tmp / "arrays.npz", **arrays)
        if (directory / JACKKNIFE).is_file():  # written once, before the first component that reads them
            shutil.copy2(directory / JACKKNIFE, tmp / JACKKNIFE)
        (tmp / "state.json").write_text(json.dumps({**state, "trainer": meta}) + "\n", encoding="utf-8")

    write_directory(directory, write)


CHECKPOINT_STATE = {"component": str, "epoch": int, "config": str, "report": dict, "trainer": dict}


def load_checkpoint(directory: Path) -> tuple[dict, dict]:
    """(state, arrays) of a checkpoint; a damaged one is a ValueError naming its file."""
    import zipfile

    path = directory / "state.json"
    if not path.is_file():
        raise ValueError(f"{directory}: no checkpoint to resume from (state.json missing)")
    state = read_json(path, "checkpoint state", ValueError)
    if not isinstance(state, dict) or any(not isinstance(state.get(k), t) for k, t in CHECKPOINT_STATE.items()):
        raise ValueError(f"{path}: not a checkpoint state (an object with {', '.join(CHECKPOINT_STATE)})")
    try:
        with np.load(directory / "arrays.npz", allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise ValueError(f"{directory / 'arrays.npz'}: cannot read the checkpoint's arrays "
                         f"({type(e).__name__}: {e})") from None
    return state, arrays


MAX_TRAINED_HASH_BITS = 32  # 2**32 float64 weights: 32 GiB, each of a trainer's vectors


def config_error(error: Exception) -> str:
    """A registry call's error in one line: confection's "setting: what is wrong" for each
    setting (its own message is the whole block of settings), anything else as it is."""
    errors = getattr(error, "errors", None)
    if errors:
        return "; ".join(f"{' -> '.join(map(str, e.get('loc', ())[1:])) or 'it'}: {e.get('msg')}" for e in errors)
    return str(error).strip()


class ComponentSpec:
    """One [components.NAME] section: its kind's class and the registry calls."""

    def __init__(self, name: str, section: dict):
        missing = [k for k in ("structure", "trainer") if k not in section]
        if missing:
            raise ValueError(f"[components.{name}] needs {' and '.join(f'[components.{name}.{k}]' for k in missing)}")
        extra = sorted(set(section) - COMPONENT_ENTRIES)
        if extra:
            raise ValueError(f"[components.{name}]: unknown entries {', '.join(extra)} "
                             "(expected structure, trainer and optionally kind and training)")
        bad = sorted(set(section.get("training", {})) - set(COMPONENT_TRAINING))
        if bad:
            raise ValueError(f"[components.{name}.training] may set only {', '.join(COMPONENT_TRAINING)}, "
                             f"not {', '.join(bad)}")
        if "seeds" in section.get("training", {}):
            _check_seeds(section["training"]["seeds"], f"[components.{name}.training] seeds")
        _check_counts(section.get("training", {}), f"[components.{name}.training] ")
        if section.get("training", {}).get("keep", "best") not in KEEP:
            raise ValueError(f"[components.{name}.training] keep must be one of {', '.join(map(repr, KEEP))}, "
                             f"got {section['training']['keep']!r}")
        self.name, self.section = name, section
        structure_name = section["structure"].get("@structures")
        kind = section.get("kind") or kind_for_structure(structure_name)
        if kind is None:
            raise ValueError(f"[components.{name}]: no component kind predicts with {structure_name!r}; "
                             f"name one with kind = \"...\" (registered: {', '.join(registry.components.get_all())})")
        try:
            self.cls = component_kind(kind)
        except Exception:  # catalogue's RegistryError
            raise ValueError(f"[components.{name}]: unknown component kind {kind!r} (registered: "
                             f"{', '.join(registry.components.get_all())})") from None
        self.kind = kind
        self.probe = self.cls(self.structure())  # its columns, before anything is trained
        # A bad setting fails here, before any component trains (not hours later, with a
        # checkpoint that --resume of the corrected config refuses).
        bits = getattr(self.probe.structure, "hash_bits", None)
        if isinstance(bits, int) and not 1 <= bits <= MAX_TRAINED_HASH_BITS:
            raise ValueError(f"[components.{name}.structure] hash_bits must be between 1 and "
                             f"{MAX_TRAINED_HASH_BITS} (2**{MAX_TRAINED_HASH_BITS} weights: 32 GiB), got {bits}")
        try:
            registry.resolve(Config({"t": section["trainer"]}), validate=True)
        except Exception as e:  # confection's ConfigValidationError, catalogue's RegistryError, a trainer's own
            raise ValueError(f"[components.{name}.trainer]: {config_error(e)}") from None

    def structure(self):
        try:
            return registry.resolve(Config({"s": self.section["structure"]}), validate=True)["s"]
        except Exception as e:  # confection's ConfigValidationError, catalogue's RegistryError, its own
            raise ValueError(f"[components.{self.name}.structure]: {config_error(e)}") from None

    def resolve(self) -> tuple[Component, Any]:
        """A fresh (component without weights, trainer) pair."""
        resolved = registry.resolve(Config({"c": {k: self.section[k] for k in ("structure", "trainer")}}),
                                    validate=True)["c"]
        component = self.cls(resolved["structure"])
        component.name = self.name
        component.trainer_call = dict(self.section["trainer"])
        return component, resolved["trainer"]

    def limits(self, settings: dict) -> dict:
        return {k: self.section.get("training", {}).get(k, settings[k]) for k in COMPONENT_TRAINING}

    def member(self, k: int) -> "ComponentSpec":
        """The spec of run k of a component trained with `seeds` (`Training.train_members`):
        its trainer's seed is the configured one (or the trainer's default) plus k."""
        trainer = dict(self.section["trainer"])
        name = trainer.get("@trainers")
        try:
            parameters = inspect.signature(registry.trainers.get(name)).parameters
        except Exception:  # catalogue's RegistryError
            raise ValueError(f"[components.{self.name}.trainer]: unknown trainer {name!r} (registered: "
                             f"{', '.join(registry.trainers.get_all())})") from None
        if "seed" not in parameters:
            raise ValueError(f"{self.name}: seeds > 1 needs a trainer that takes a seed; {name!r} takes none, so "
                             "its runs would not differ (train with seeds = 1)")
        shuffle = trainer.get("shuffle", parameters["shuffle"].default if "shuffle" in parameters else True)
        if shuffle is False:
            raise ValueError(f"{self.name}: seeds > 1 with [components.{self.name}.trainer] shuffle = false trains "
                             "the same run again and again (the seed orders the examples); set shuffle = true")
        base = trainer.get("seed", parameters["seed"].default)
        if not isinstance(base, int) or isinstance(base, bool):
            raise ValueError(f"[components.{self.name}.trainer] seed must be an integer to train with seeds, "
                             f"got {base if base is not inspect.Parameter.empty else 'nothing'!r}")
        trainer["seed"] = base + k
        member = copy.copy(self)
        member.section = {**self.section, "trainer": trainer}
        return member


def component_specs(config: Config) -> dict[str, ComponentSpec]:
    """The [components.NAME] sections in pipeline order: each after the components whose
    columns it reads, otherwise in config order; two components never write one column."""
    if "structure" in config or "trainer" in config:
        raise ValueError("[structure] and [trainer] belong to a component: write [components.parser.structure] "
                         "and [components.parser.trainer] (see configs/quickstart.cfg)")
    sections = config.get("components")
    if not sections:
        raise ValueError("the config has no [components.NAME] sections (a tagger or a parser to train)")
    specs = [ComponentSpec(name, section) for name, section in sections.items()]
    writers: dict[str, ComponentSpec] = {}
    for spec in specs:
        for column in spec.probe.writes:
            if column in writers:
                other = writers[column]
                raise ValueError(f"[components.{other.name}] and [components.{spec.name}] both write "
                                 f"{column.upper()}: at most one {spec.kind} per pipeline, got {other.name}, {spec.name}")
            writers[column] = spec
    ordered: list[ComponentSpec] = []
    pending = list(specs)
    for spec in specs:
        own = set(spec.probe.reads) & set(spec.probe.writes)
        if own:
            raise ValueError(f"[components.{spec.name}] ({spec.kind}) reads {', '.join(sorted(own))}, which it "
                             "predicts: its templates must not read it (a morphologizer_draft's must not read feats, "
                             "a lemmatizer's must not read infl)")
    while pending:  # a stable topological order: the first pending spec whose inputs are ready
        ready = next((s for s in pending if all(writers[c] in ordered for c in s.probe.reads if c in writers)), None)
        if ready is None:  # each reads what another predicts: no order trains them on predictions
            raise ValueError("the components " + ", ".join(f"[components.{s.name}] (reads {', '.join(s.probe.reads)})"
                                                            for s in pending)
                             + " read each other's columns: one of them must not (e.g. a lemmatizer reading feats "
                             "and a morphologizer with reads_lemma = true)")
        ordered.append(ready)
        pending.remove(ready)
    for i, spec in enumerate(ordered):
        # A column that no component before it writes is read from the input; an intermediate
        # column (a draft's bundles) is in no input: reading it without its writer would train
        # on the training set's gold values (FEATS) and predict from an empty row.
        missing = [c for c in spec.probe.reads if c not in INPUT_COLUMNS
                   and not any(c in s.probe.writes for s in ordered[:i])]
        if missing:
            raise ValueError(f"[components.{spec.name}] reads {', '.join(missing)}, which no component before it "
                             "writes: add the component that predicts it (for feats_draft, a [components.NAME] "
                             'with kind = "morphologizer_draft"), or leave out what reads it (reads_draft)')
        if spec.probe.intermediate and not any(set(spec.probe.writes) & set(s.probe.reads) for s in ordered[i + 1:]):
            raise ValueError(f"[components.{spec.name}] ({spec.kind}) predicts {', '.join(spec.probe.writes)} for a "
                             "later component to read, and none does (a morphologizer with reads_draft = true)")
    return {spec.name: spec for spec in ordered}


class Training:
    """One `arborist train` run: the corpora, the pipeline trained so far, the report, and
    the jackknifed predictions, shared by the components' steps."""

    def __init__(self, config: Config, output: Path | None, tracker, state: dict | None, arrays: dict | None):
        self.settings = _settings(config)
        self.specs = component_specs(config)
        drafts = [s.name for s in self.specs.values() if s.probe.intermediate]
        if drafts and not self.settings["jackknife_folds"]:
            raise ValueError(f"training.jackknife_folds = 0 with {', '.join(drafts)}: the component reading its "
                             "predictions would train on the training set's gold values (a copy of its input); "
                             "set jackknife_folds to 2 or more, or leave the draft out")
        self.output, self.tracker = output, tracker
        self.state, self.arrays = state, arrays
        self.config_text = config.to_str()
        for key in ("train_path", "dev_path"):
            given = self.settings[key]
            if given and not Path(str(given)).exists():
                raise ValueError(f"training.{key} {given}: no such file (a relative path is read from the current "
                                 f"directory, {Path.cwd()})")
        self.train_set = read_corpus(self.settings["train_path"], require_heads=True)
        if not self.train_set:
            raise ValueError(f"{self.settings['train_path']}: no sentences in the training file")
        if self.settings["max_train_sentences"]:
            self.train_set = self.train_set[:self.settings["max_train_sentences"]]
        self.dev_set = (read_corpus(self.settings["dev_path"], require_heads=True) if self.settings["dev_path"]
                        else [])
        if self.settings["dev_path"] and not self.dev_set:  # (it would select epochs on a score of 0)
            raise ValueError(f"{self.settings['dev_path']}: no sentences in the dev file (leave training.dev_path "
                             "out to train without a dev set)")
        tracker.message(f"train: {len(self.train_set)} sentences, {sum(s.n for s in self.train_set)} words; "
                        f"dev: {len(self.dev_set)} sentences")
        folds = self.settings["jackknife_folds"]
        jackknifed = [s.name for s in self.specs.values() if s.probe.jackknifed]
        if folds and jackknifed and len(self.train_set) < folds:
            raise ValueError(f"{self.settings['train_path']}: {len(self.train_set)} training sentences, fewer than "
                             f"training.jackknife_folds = {folds}: jackknifing {', '.join(jackknifed)} needs a "
                             "sentence in every fold (set jackknife_folds = 0 to train on gold columns)")
        vocabulary = (np.unique(np.concatenate([x.attrs[FORM, 1:] for x in self.train_set])) if self.train_set
                      else None)
        self.pipeline = Pipeline(vocabulary=vocabulary, info={"config": self.config_text})
        self.report: dict = {"components": {}}
        self.jackknifed: dict[str, list[list[str]]] = {}
        self._jackknifing: dict[str, Jackknife] = {}  # started, not yet collected
        self._ahead: dict[str, AheadTraining] = {}  # components training ahead, not yet collected
        self._train_inputs: dict[str, list] = {}
        # A component trained with seeds (`train_members`): the current run's best weights and
        # the sum of the finished runs' (None before the first), which the checkpoint keeps.
        self.member_best: np.ndarray | None = None
        self.member_total: np.ndarray | None = None
        if state is None and output is not None and (output / CHECKPOINT / JACKKNIFE).exists():
            (output / CHECKPOINT / JACKKNIFE).unlink()  # an earlier run's predictions: this run jackknifes its own
        self.fingerprint = data_fingerprint(self.settings)
        if state is not None:
            recorded = state.get("data")
            if recorded is not None and recorded != self.fingerprint:
                changed = [k for k in self.fingerprint if recorded.get(k) != self.fingerprint[k]]
                raise ValueError(f"{output / CHECKPOINT}: the data changed since the checkpoint was written "
                                 f"({', '.join(changed)}); resume with the same training and dev files")
            self.report = state["report"]
            components = self.report.get("components")
            if not isinstance(components, dict) or not all(isinstance(e, dict) for e in components.values()):
                raise ValueError(f"{output / CHECKPOINT / 'state.json'}: not a checkpoint state (its report has no "
                                 "components)")
            if (output / BEST_MODEL).exists():
                for name, component in load(output / BEST_MODEL).components.items():
                    self.pipeline.add(name, component)
            missing = [n for n, e in self.report["components"].items() if e.get("best_epoch") and n not in
                       self.pipeline.components]
            if missing:
                raise ValueError(f"{output / BEST_MODEL}: components {', '.join(missing)} trained before the "
                                 "checkpoint are missing; train again without --resume")
            self.jackknifed = _load_jackknife(output / CHECKPOINT, [x.n for x in self.train_set])
            tracker.message(f"resuming {state['component']} after epoch {state['epoch']} from {output / CHECKPOINT}")

    def run(self) -> tuple[Pipeline, dict]:
        try:
            for name, spec in self.specs.items():
                limits = spec.limits(self.settings)
                entry = self.report["components"].get(name, {})
                resuming = self.state is not None and self.state["component"] == name
                if entry.get("done"):
                    # Only the last component trained may go on, when it stopped at max_epochs and
                    # the resumed run allows more; the ones before it are fixed (later ones read them).
                    if not (resuming and entry.get("stopped") == "max_epochs" and self.state["epoch"] < limits["max_epochs"]):
                        self.start_jackknife(name)
                        continue
                self.train(spec, limits, resuming)
                self.state = None
                self.start_jackknife(name)
        finally:
            for pending in [*self._jackknifing.values(), *self._ahead.values()]:
                pending.close()
            self._jackknifing.clear()
            self._ahead.clear()
        return self.pipeline, self.report

    def upstream(self, name: str) -> list[Component]:
        """The trained components before `name`, in pipeline order."""
        names = list(self.specs)
        before = set(names[:names.index(name)])
        return [c for n, c in self.pipeline.components.items() if n in before]

    def train(self, spec: ComponentSpec, limits: dict, resuming: bool, member: int | None = None) -> Component:
        """Train the component of `spec` (with `member`, one run of `train_members`); the
        component as its last epoch left it (its best epoch went to the pipeline, or, for a
        member, to `self.member_best`)."""
        if member is None and limits["seeds"] > 1:
            return self.train_members(spec, limits, resuming)
        component, trainer = spec.resolve()
        if self.settings["parameter_mixing"]:
            trainer = parallel_trainer(trainer, self.settings["workers"], self.settings["engine"], self.tracker,
                                       self.settings["mixes_per_epoch"])
        try:
            self._train(spec, component, trainer, limits, resuming, member)
        finally:
            if isinstance(trainer, ParameterMixing):
                trainer.close()
        return component

    def _train(self, spec: ComponentSpec, component: Component, trainer, limits: dict, resuming: bool,
               member: int | None = None) -> None:
        component.link(self.upstream(spec.name))
        train_inputs = self.train_inputs(spec.name, component)
        component.structure.initialize(train_inputs)
        train_x = component.examples(train_inputs, training=True)
        dev_x = self.dev_inputs(spec.name)
        report = component.training_report(train_x)
        # member None: a component trained once; 0, 1, ...: a run of `train_members`. The report
        # and the next component's training ahead happen once (for run 0); jackknife folds
        # cannot follow the runs of a seeded component (they average N runs afterwards).
        if report and not member:
            self.tracker.message(report)
        if member is None:
            self.follow_jackknife(spec.name, component, self.state["epoch"] + 1 if resuming else 1)
        if not member:
            self.train_next_ahead(spec.name)
        _train_component(spec.name, component, trainer, train_x, dev_x, self, limits,
                         self.arrays if resuming else None, self.state if resuming else None,
                         self._ahead.pop(spec.name, None), member)

    def train_members(self, spec: ComponentSpec, limits: dict, resuming: bool) -> Component:
        """`seeds` = N: train the component N times, run k with the trainer's seed plus k, each
        kept at its best epoch on dev, and put the mean of their weights into the pipeline,
        as `arborist average` does with N trainings (linear scores: the ensemble of the runs,
        at the cost of one model). After each run model-best holds the mean of the runs so
        far, and the report the dev scores of that mean (`members[k]["average"]`). The
        checkpoint keeps the sum of the finished runs' best weights and the current run's
        best (MEMBER_SUM, MEMBER_BEST), so a resumed run ends with the same weights."""
        name, seeds = spec.name, limits["seeds"]
        entry = self.report["components"].setdefault(name, _new_entry(spec.probe))
        entry.setdefault("members", [])
        total, k = None, 0
        if resuming:
            k = self.state["member"]
            total = self.arrays.pop(MEMBER_SUM, None)
            self.member_best = self.arrays.pop(MEMBER_BEST, None)
        dev_x = self.dev_inputs(name)
        component = None
        while k < seeds:
            member_spec = spec.member(k)
            self.member_total = total
            if k < len(entry["members"]) and entry["members"][k].get("done"):
                component = member_spec.resolve()[0]  # the run ended before the interruption: only its sum is left
                component.link(self.upstream(name))
                component.structure.initialize(self.train_inputs(name, component))
            else:
                if not resuming:
                    self.member_best = None
                    self.tracker.message(f"{name}: run {k + 1} of {seeds}, trainer seed "
                                         f"{member_spec.section['trainer']['seed']}")
                component = self.train(member_spec, limits, resuming, member=k)
            resuming = False
            total = self.member_best if total is None else total + self.member_best
            self.member_best = None
            k += 1
            mean = _with_array(component, total / k)
            mean.trainer_call = dict(spec.section["trainer"])
            scores = {f"dev_{key}": v for key, v in _dev_scores(mean, dev_x, self, self.settings["workers"]).items()
                      if key not in ("words", "sentences")} if dev_x else {}
            entry["members"][k - 1]["average"] = scores
            mean.info = {"best_epoch": [m["best_epoch"] for m in entry["members"][:k]], "seeds": k, "dev": scores}
            self.pipeline.add(name, mean)
            if self.output is not None:
                self.pipeline.save(self.output / BEST_MODEL)
            if dev_x:
                self.tracker.message(f"{name}: the mean of {k} run{'s' * (k > 1)}: {entry['key']} "
                                     f"{scores.get(entry['key'], 0.0):.2f}")
        self.member_total = None  # the sum's memory (a weight table) is not needed any more
        entry["best_epoch"] = [m["best_epoch"] for m in entry["members"]]
        entry["best"] = entry["members"][-1]["average"].get(entry["key"]) if dev_x else None
        entry["done"], entry["stopped"] = True, "seeds"
        if dev_x and self.settings["calibrate"]:
            self.calibrate(name, dev_x)
        if self.output is not None:
            (self.output / "training.json").write_text(json.dumps(self.report, indent=2) + "\n", encoding="utf-8")
        return component

    def calibrate(self, name: str, dev_x: list) -> None:
        """Fit the best epoch's temperature on dev (`Component.calibrate`), for the
        probabilities of its predictions; kept in its meta.json info (called when the
        component's last epoch is done, before its progress is saved, so that a resumed run
        has it too)."""
        component = self.pipeline.components.get(name)
        if component is None or not component.confidence_column:
            return
        start = time.perf_counter()
        workers = self.settings["workers"]
        with scoring_threads(component.structure, workers):
            fit = component.calibrate(dev_x, self.dev_set, threads=workers)
        if fit is None:
            return
        self.report["components"][name]["calibration"] = fit
        self.tracker.message(describe_fit(name, fit) + f", {time.perf_counter() - start:.1f} s")
        if self.output is not None:
            self.pipeline.save(self.output / BEST_MODEL)

    # -- inputs ------------------------------------------------------------------------
    def train_inputs(self, name: str, component: Component) -> list:
        """The training sentences with the jackknifed predictions of the components before
        `name` that it reads (memoized: a jackknife fold trains on the same inputs)."""
        if name not in self._train_inputs:
            sentences = self.train_set
            folds = self.settings["jackknife_folds"]
            for up in self.upstream(name):
                if folds and up.jackknifed and set(up.writes) & set(component.reads):
                    values = self.jackknife(up)
                    sentences = [up.apply(x, values[i]) for i, x in enumerate(sentences)]
            self._train_inputs[name] = sentences
        return self._train_inputs[name]

    def dev_inputs(self, name: str) -> list:
        """The dev sentences with what the components before `name` predict."""
        return upstream_inputs(self.upstream(name), self.dev_set)

    def read_later(self, name: str) -> bool:
        """Whether a later component trains on the jackknifed predictions of `name`."""
        spec = self.specs[name]
        if not self.settings["jackknife_folds"] or not spec.probe.jackknifed:
            return False
        later = list(self.specs)[list(self.specs).index(name) + 1:]
        return any(set(spec.probe.writes) & set(self.specs[n].probe.reads) for n in later)

    def follow_jackknife(self, name: str, component: Component, first_epoch: int) -> None:
        """With workers > 1 on this machine, start the folds of `name` as its own training
        starts: they train epoch by epoch behind it (`_follow`) on the cores it leaves, and
        take its best epoch when it has chosen one (`start_jackknife`)."""
        if (self.settings["workers"] < 2 or self.settings["engine"] != "local" or name in self.jackknifed
                or name in self._jackknifing or not self.read_later(name)
                or "fork" not in multiprocessing.get_all_start_methods()):
            return
        pending = Jackknife(self.specs[name], self.train_inputs(name, component), self.settings["jackknife_folds"],
                           None, self.tracker, upstream=self.upstream(name), workers=self.settings["workers"])
        pending.allow(min(first_epoch + 1, self.specs[name].limits(self.settings)["max_epochs"]))
        self._jackknifing[name] = pending

    def train_next_ahead(self, name: str) -> None:
        """With workers > 1 on this machine, start training the component after `name` in a
        forked process now, when its training does not depend on `name`: its training
        sentences have gold values where `name` predicts (the labeler trains on gold trees;
        only its dev scores need the parser), the components whose jackknifed predictions
        it reads are done, and its trainer's epochs depend on nothing but the examples (the
        perceptron family). Its epochs then run beside `name`'s on the core the parser's
        second thread leaves idle (`AheadTraining`); `_train_component` takes them in turn."""
        names = list(self.specs)
        if (self.settings["workers"] < 2 or self.settings["engine"] != "local" or self.settings["parameter_mixing"]
                or "fork" not in multiprocessing.get_all_start_methods() or names.index(name) + 1 == len(names)):
            return
        after = names[names.index(name) + 1]
        spec = self.specs[after]
        if (after in self.report["components"] or spec.cls.link is not Component.link
                or spec.limits(self.settings)["seeds"] > 1 or after in self._ahead):
            return
        component, trainer = spec.resolve()
        if not isinstance(trainer, SWVP):
            return
        probe, folds = spec.probe, self.settings["jackknife_folds"]
        if not set(self.specs[name].probe.writes) & set(probe.reads):
            return  # independent of `name`: it trains after it, as configured
        for up_name in names[:names.index(after)]:
            up = self.specs[up_name].probe
            if folds and up.jackknifed and set(up.writes) & set(probe.reads) and (
                    up_name == name or up_name not in self.jackknifed):
                return  # its training sentences are not ready (or would wait for folds still running)
        upstream = self.upstream(after)
        train_inputs = self.train_inputs(after, component)
        limits = spec.limits(self.settings)
        self.tracker.message(f"training {after} ahead, beside {name} (its dev scores wait for {name})")
        self._ahead[after] = AheadTraining(spec, train_inputs, upstream, limits["max_epochs"])

    def allow_folds(self, name: str, epochs: int) -> None:
        """The following folds of `name` may train up to `epochs` epochs."""
        if name in self._jackknifing:
            self._jackknifing[name].allow(epochs)

    def start_jackknife(self, name: str) -> None:
        """With workers > 1, the jackknife of `name` (just trained: its best epoch is known)
        runs in the background when a later component will train on it, so that its folds
        share the cores with the training of the next components instead of waiting for
        the first one that reads it; folds that followed its training are told the epoch."""
        if self.settings["workers"] < 2 or name in self.jackknifed or not self.read_later(name):
            return
        if name in self._jackknifing:
            self._jackknifing[name].finish(self.report["components"][name]["best_epoch"])
            return
        component = self.pipeline.components.get(name)
        if component is not None:
            self._jackknifing[name] = self._jackknife_job(component)

    def _jackknife_job(self, component: Component) -> Jackknife:
        return Jackknife(self.specs[component.name], self.train_inputs(component.name, component),
                         self.settings["jackknife_folds"], self.report["components"][component.name]["best_epoch"],
                         self.tracker, upstream=self.upstream(component.name), workers=self.settings["workers"],
                         engine=self.settings["engine"])

    def jackknife(self, component: Component) -> list:
        """The jackknifed predictions of `component` on the training sentences (computed once,
        or collected from `start_jackknife`)."""
        if component.name not in self.jackknifed:
            pending = self._jackknifing.pop(component.name, None) or self._jackknife_job(component)
            self.jackknifed[component.name] = pending.result()
            if self.output is not None:
                _save_jackknife(self.output / CHECKPOINT, self.jackknifed)
        return self.jackknifed[component.name]


def jackknife(spec: ComponentSpec | dict, sentences: list, folds: int, epochs: int, tracker, name: str = "",
              upstream: list[Component] = (), workers: int = 1, engine: str = "local") -> list:
    """Each sentence's prediction by the component of `spec` (a ComponentSpec or a
    [components.NAME] section) trained, as the spec says, for `epochs` epochs on the folds
    that do not hold the sentence (sentence i is in fold i mod `folds`). The folds are
    independent: with `workers` > 1 they run in that many forked processes (engine
    "local") or as Ray tasks (engine "ray"), with the same result as in one (each fold's
    trainer has its own seed from the spec; a fold trains serially)."""
    return Jackknife(spec, sentences, folds, epochs, tracker, name, upstream, workers, engine).result()


class Jackknife:
    """A jackknife (see `jackknife`) started in the background: with `workers` > 1 its folds
    run in forked processes or Ray tasks from construction on, while the caller goes on
    (training the next component); `result()` waits for them. With one worker the folds
    run in `result()`, one after another."""

    def __init__(self, spec: ComponentSpec | dict, sentences: list, folds: int, epochs: int | None, tracker,
                 name: str = "", upstream: list[Component] = (), workers: int = 1, engine: str = "local"):
        if folds < 2:
            raise ValueError(f"training.jackknife_folds must be 0 (parser trains on gold tags) or >= 2, got {folds}")
        if not isinstance(spec, ComponentSpec):
            spec = ComponentSpec(name or "component", spec)
        self.name, self.folds, self.tracker, self.epochs = spec.name, folds, tracker, epochs
        # A fold links its copy to the components before it only when its kind reads them
        # there (`Component.link`): trained components hold weights and feature tables that
        # Ray's object store could not take, and nothing else needs them.
        linked = list(upstream) if spec.cls.link is not Component.link else []
        self.job = (spec, sentences, folds, epochs, linked)
        self._workers: list = []  # (process, connection) of the forked fold workers
        self._refs = None
        # epochs None: the folds follow the component's own training (`follow`), which has
        # not chosen its best epoch yet: [epochs a fold may train, the best epoch or 0].
        self.progress = None
        if epochs is None:
            if engine != "local" or workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
                raise ValueError("folds that follow a training run in forked local workers")
            self.progress = multiprocessing.get_context("fork").RawArray("i", 2)
            self.progress[0] = 1
        if engine == "ray":
            ray = connect_ray(workers)
            tracker.message(f"jackknifing {spec.name}: {folds} folds as Ray tasks, {epochs} epochs")
            job_ref = ray.put(self.job)
            task = ray.remote(num_cpus=1)(_fold)
            self._refs = [task.remote(fold, job_ref) for fold in range(folds)]
        elif workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            tracker.message(f"jackknifing {spec.name}: {folds} folds in {workers} processes, "
                            + (f"{epochs} epochs (in the background)" if epochs is not None else
                               "following its training epoch by epoch (in the background)"))
            # Plain forked processes, fold f in worker f mod N: they inherit the job (nothing is
            # pickled but the predictions they send back), and unlike a Pool they start no
            # threads in this process, so that the next jackknife's fork, while these run,
            # cannot copy a lock a thread holds, and stopping them is a kill.
            context = multiprocessing.get_context("fork")
            n = min(workers, folds)
            for k in range(n):
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_fold_worker,
                                          args=(self.job, list(range(k, folds, n)), send, self.progress,
                                                os.getpid()),
                                          name=f"jackknife-{spec.name}-{k}", daemon=True)
                process.start()
                send.close()
                self._workers.append((process, receive))

    def allow(self, epochs: int) -> None:
        """Following folds may train up to `epochs` epochs (the component's training decides
        when: see `_train_component`)."""
        if self.progress is not None and not self.progress[1]:
            self.progress[0] = max(self.progress[0], epochs)

    def finish(self, best_epoch: int) -> None:
        """The component's best epoch: following folds predict with their weights after it."""
        if self.progress is not None:
            self.progress[1] = best_epoch
            self.epochs = best_epoch

    def result(self) -> list:
        if self.progress is not None and not self.progress[1]:
            raise RuntimeError(f"the jackknife of {self.name} follows a training that has not chosen its best epoch")
        if self._refs is not None:
            import ray

            results = ray.get(self._refs)
            self._refs = None
        elif self._workers:
            results: list = [None] * self.folds
            try:
                for process, receive in self._workers:
                    try:
                        status, payload = receive.recv()
                    except EOFError:
                        process.join()
                        raise RuntimeError(f"a jackknife process of {self.name} died (exit code "
                                           f"{process.exitcode}) before sending its folds' predictions") from None
                    if status != "ok":
                        raise RuntimeError(f"jackknifing {self.name} failed in a worker process: {payload}")
                    for fold, values in payload:
                        results[fold] = values
            finally:
                self.close()
        else:
            results = []
            for fold in range(self.folds):
                self.tracker.message(f"jackknifing {self.name}: fold {fold + 1}/{self.folds}, {self.epochs} epochs")
                results.append(_fold(fold, self.job))
        predicted: list = [None] * len(self.job[1])
        for fold, values in enumerate(results):
            predicted[fold::self.folds] = values
        return predicted

    def close(self) -> None:
        """Stop the folds still running (an abandoned run) and release the workers; idempotent."""
        for process, receive in self._workers:
            if process.is_alive():
                process.kill()
            process.join()
            receive.close()
        self._workers = []
        if self._refs is not None:
            import ray

            for ref in self._refs:
                ray.cancel(ref, force=True)
            self._refs = None


def die_with_parent(parent: int) -> None:
    """In a forked worker: end when the training process does (killed by SIGKILL or the OOM
    killer, it cannot stop its workers), rather than wait for it, holding a copy of the
    weights, for ever. Linux's parent-death signal (the workers are forked from the main
    thread, whose end is the process's); nothing where there is none."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # it died before the signal was set
        os._exit(1)


def _fold_worker(job, folds: list[int], send, progress=None, parent: int | None = None) -> None:
    """A forked jackknife worker: its folds' predictions, or the error, sent to the parent."""
    if parent is not None:
        die_with_parent(parent)
    try:
        send.send(("ok", [(fold, _fold(fold, job, progress)) for fold in folds]))
    except BaseException as e:  # the parent raises it (a KeyboardInterrupt too: the run stops)
        import traceback

        send.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        send.close()


def _begun(spec: ComponentSpec, sentences: list, upstream: list) -> tuple[Component, Any, list]:
    """A fresh copy of the component and its trainer, begun on `sentences` (a jackknife fold's
    or a component trained ahead): (component, trainer, training examples)."""
    component, trainer = spec.resolve()
    component.link(upstream)
    component.structure.initialize(sentences)
    examples = component.examples(sentences, training=True)
    trainer.begin(component.structure, examples, component.structure.hash_bits)
    return component, trainer, examples


def _fold(fold: int, job, progress=None) -> list:
    """The predictions, in order, for the held-out sentences of one jackknife fold: its copy
    of the component trained for the job's epochs (or, with `progress`, for the best epoch
    the component's own training chooses; see `_follow`)."""
    spec, sentences, folds, epochs, upstream = job
    rest = [x for i, x in enumerate(sentences) if i % folds != fold]
    if isinstance(epochs, list):
        # A component trained with seeds (its runs' best epochs): the fold's copy is the mean
        # of as many runs, run k with the trainer's seed plus k trained for run k's best epoch.
        total = None
        for k, member_epochs in enumerate(epochs):
            component, trainer, examples = _begun(spec.member(k), rest, upstream)
            weights = _trained(component, trainer, examples, member_epochs).weights.array
            total = np.array(weights, copy=True) if total is None else total + weights
        component = _with_array(component, total / len(epochs))
    else:
        component, trainer, examples = _begun(spec, rest, upstream)
        component = (_follow(component, trainer, examples, progress) if progress is not None
                     else _trained(component, trainer, examples, epochs))
    return [parsed.values[component.name] for parsed in annotate([component], sentences[fold::folds])]


def _trained(component: Component, trainer, examples: list, epochs: int) -> Component:
    """The component with its trainer's weights after `epochs` epochs (fewer when the
    trainer's schedule ends first)."""
    for _ in range(epochs):
        if trainer.finish_epoch(trainer.epoch(component.structure, examples, None)):
            break
    return _with_weights(component, trainer)


def _follow(component: Component, trainer, examples: list, progress) -> Component:
    """Train epoch by epoch while the component's own training runs: epoch e once the
    training allows it (progress[0] >= e), until it names its best epoch (progress[1]). An
    epoch trained before the best is known keeps a copy of its weights, so that the fold
    ends with exactly the weights of `best` epochs (or fewer, when the trainer's schedule
    ends first), as a fold told the number of epochs at the start does."""
    done, stopped, kept = 0, False, {}
    while True:
        best = progress[1]
        if best and (done >= best or stopped):
            break
        if stopped or (not best and done >= progress[0]):
            time.sleep(0.02)  # the training is ahead of no one: wait for its next epoch or its choice
            continue
        stopped = trainer.finish_epoch(trainer.epoch(component.structure, examples, None))
        done += 1
        if not progress[1]:
            kept[done] = np.array(trainer.prediction_weights().array, copy=True)
    best = progress[1]
    return _with_array(component, kept[best]) if best < done else _with_weights(component, trainer)


class AheadTraining:
    """The epochs of a component trained ahead in a forked process (`Training.train_next_ahead`).
    The process writes the trainer's state after each epoch (`Trainer.state`: weights,
    averaging, random state) to a temporary directory and says so through a pipe; `epoch(e)`
    waits for epoch e and gives its training metrics and state, which `_train_component`
    restores into its own trainer: the same trainer state, epoch by epoch, as training it
    there (so the dev scores, the best epoch and every checkpoint are the one-process ones)."""

    def __init__(self, spec: ComponentSpec, sentences: list, upstream: list, max_epochs: int):
        self.name = spec.name
        self.directory = Path(tempfile.mkdtemp(prefix=f"arborist-ahead-{spec.name}-"))
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_ahead_worker, name=f"ahead-{spec.name}", daemon=True,
                                        args=(spec, sentences, upstream, max_epochs, self.directory, send,
                                              os.getpid()))
        self._process.start()
        send.close()
        self._epochs: dict[int, tuple] = {}

    def epoch(self, epoch: int) -> tuple[dict, dict, dict]:
        """(training metrics, state arrays, state meta) of epoch `epoch`, waiting for it."""
        while epoch not in self._epochs:
            try:
                message = self._receive.recv()
            except EOFError:
                self._process.join()
                raise RuntimeError(f"the process training {self.name} ahead died (exit code "
                                   f"{self._process.exitcode}) before epoch {epoch}") from None
            if message[0] == "error":
                raise RuntimeError(f"training {self.name} ahead failed: {message[1]}")
            _, done, metrics, meta = message
            self._epochs[done] = (metrics, meta)
        metrics, meta = self._epochs.pop(epoch)
        folder = self.directory / str(epoch)
        arrays = {f.stem: np.load(f, allow_pickle=False) for f in sorted(folder.glob("*.npy"))}
        shutil.rmtree(folder, ignore_errors=True)
        return metrics, arrays, meta

    def close(self) -> None:
        """Stop the process (the component stopped before its last epoch, or the run ended) and
        remove its files; idempotent."""
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._receive.close()
            self._process = None
        shutil.rmtree(self.directory, ignore_errors=True)


def _ahead_worker(spec: ComponentSpec, sentences: list, upstream: list, max_epochs: int, directory: Path,
                  send, parent: int | None = None) -> None:
    """The forked process of `AheadTraining`: each epoch's trainer state to directory/EPOCH/."""
    if parent is not None:
        die_with_parent(parent)
    try:
        component, trainer, examples = _begun(spec, sentences, upstream)
        for epoch in range(1, max_epochs + 1):
            metrics = trainer.epoch(component.structure, examples, None)
            arrays, meta = trainer.state()

            def write(folder: Path) -> None:
                for key, array in arrays.items():
                    np.save(folder / f"{key}.npy", array, allow_pickle=False)

            write_directory(directory / str(epoch), write)
            send.send(("epoch", epoch, metrics, meta))
    except BaseException as e:  # the parent raises it
        import traceback

        send.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        send.close()


def train(config: Config, output: str | Path | None = None, tracker=None,
          resume: bool = False, use_wandb: bool = True) -> tuple[Pipeline, dict]:
    """Train every component of the config; returns the best pipeline and the report.

    Without a `tracker`, progress goes to the console and, unless `use_wandb` is false or
    the config's [tracking] says wandb = false, to a W&B run (a resumed run continues the
    W&B run of its checkpoint)."""
    settings = _settings(config)
    config, lang_note = with_language(config, settings["train_path"])
    for spec in component_specs(config).values():
        if spec.limits(settings)["seeds"] > 1:
            spec.member(1)  # a trainer without an integer seed
    tracking_settings(config)  # a bad config fails before any work
    if resume and output is None:
        raise ValueError("--resume needs the --output directory of the run to continue")
    output = Path(output) if output is not None else None
    if output is not None:
        check_output(output)
    state = arrays = None
    if resume:
        recover_directory(output / CHECKPOINT)
        recover_directory(output / BEST_MODEL)
        state, arrays = load_checkpoint(output / CHECKPOINT)
        before, now = _resumable(state["config"]), _resumable(config.to_str())
        if before != now:
            raise ValueError(f"{output / CHECKPOINT}: the checkpoint was written with a different config "
                             f"({config_differences(before, now)}); resume with the same config and --set values "
                             "(only training.max_epochs and training.patience may change)")
    if tracker is None:
        tracker = trackers_for(config, output, use_wandb, state.get("wandb_run_id") if state else None)
    if lang_note:
        tracker.message(lang_note)
    pipeline, report = Training(config, output, tracker, state, arrays).run()
    entries = report["components"]
    tracker.summary({f"{name}/best_{e['key']}": e["best"] for name, e in entries.items() if e.get("best") is not None}
                    | {f"{name}/best_epoch": e["best_epoch"] for name, e in entries.items()})
    if output is not None and (output / BEST_MODEL).is_dir():
        tracker.log_model(output / BEST_MODEL, "model")
    tracker.close()
    return pipeline, report


def _train_component(name: str, component: Component, trainer, train_x: list, dev_x: list, run: Training,
                     limits: dict, arrays: dict | None, state: dict | None, ahead: AheadTraining | None = None,
                     member: int | None = None) -> None:
    """Epochs of one component; its best epoch on dev goes into the pipeline (and model-best),
    or, for run `member` of a component trained with seeds, into `run.member_best`.
    With `ahead`, each epoch's training was done ahead (`AheadTraining`): its state is restored."""
    try:
        _train_epochs(name, component, trainer, train_x, dev_x, run, limits, arrays, state, ahead, member)
    finally:
        if ahead is not None:
            ahead.close()


def _new_entry(component: Component) -> dict:
    return {"kind": component.kind, "key": component.score_key, "best_epoch": None, "best": None, "history": [],
            "done": False}


def _train_epochs(name: str, component: Component, trainer, train_x: list, dev_x: list, run: Training,
                  limits: dict, arrays: dict | None, state: dict | None, ahead: AheadTraining | None,
                  member: int | None = None) -> None:
    if member is None:
        entry = run.report["components"].setdefault(name, _new_entry(component))
        run.tracker.start_component(name, (entry["key"],) + tuple(trainer.columns))
    else:
        members = run.report["components"][name]["members"]
        if len(members) == member:
            members.append({**_new_entry(component), "seed": component.trainer_call.get("seed")})
        entry = members[member]
        run.tracker.start_component(f"{name}.seed{entry['seed']}", (entry["key"],) + tuple(trainer.columns))
    first_epoch, setup = _begin(component, trainer, train_x, run.tracker, arrays, state)
    if setup is not None:  # what the trainer's set-up searched (EG's searches count as effective iterations)
        entry["setup"] = setup
    best_score = -1.0 if entry["best"] is None else entry["best"]
    for epoch in range(first_epoch, limits["max_epochs"] + 1):
        # The folds that follow it may be one epoch ahead: a busy machine slows this training
        # more than the folds (there are more of them), and a fold kept waiting leaves its
        # core idle; the most a stop at this epoch wastes is one epoch of each fold.
        run.allow_folds(name, min(epoch + 1, limits["max_epochs"]))
        metrics, candidate = _epoch(component, trainer, train_x, dev_x, run, epoch, ahead)
        stop = trainer.finish_epoch(metrics)
        entry["history"].append(metrics)
        run.tracker.end_epoch(epoch, metrics)
        score = metrics.get(entry["key"], 0.0)
        improved = not dev_x or limits["keep"] == "last" or score > best_score
        if improved:
            best_score = entry["best"] = score
            entry["best_epoch"] = epoch
            candidate.info = {"best_epoch": epoch, "dev": {k: v for k, v in metrics.items() if k.startswith("dev_")}}
            if member is not None:
                run.member_best = np.array(candidate.weights.array, copy=True)  # kept by the checkpoint
            else:
                run.pipeline.add(name, candidate)
                if run.output is not None:
                    run.pipeline.save(run.output / BEST_MODEL)
        patience_over = bool(not improved and limits["patience"] and epoch - entry["best_epoch"] >= limits["patience"])
        entry["stopped"] = ("schedule" if stop else "patience" if patience_over
                            else "max_epochs" if epoch == limits["max_epochs"] else None)
        entry["done"] = entry["stopped"] is not None
        if entry["done"] and member is None:
            run.start_jackknife(name)  # its folds need the best epoch, not the temperature
            if dev_x and run.settings["calibrate"]:
                run.calibrate(name, dev_x)
        _log_tables(trainer, entry, run.tracker)
        _save_progress(run, trainer, name, epoch, member)
        if stop:
            run.tracker.message("the trainer finished its schedule; stopping")
            break
        if patience_over:
            run.tracker.message(f"no dev improvement for {limits['patience']} epochs; stopping")
            break
    if not entry["done"] and member is None:
        # No epoch left to train (a run resumed with max_epochs at or below its checkpoint's
        # epoch): what the last epoch would have done, so the component is still calibrated.
        run.start_jackknife(name)
        if dev_x and run.settings["calibrate"]:
            run.calibrate(name, dev_x)
    entry["done"] = True
    entry["stopped"] = entry.get("stopped") or "max_epochs"
    if entry.get("annealing"):
        run.tracker.message(annealing_markdown(entry["annealing"], entry["key"]))
    if run.output is not None and member is None:
        (run.output / "training.json").write_text(json.dumps(run.report, indent=2) + "\n", encoding="utf-8")


def _begin(component: Component, trainer, train_x: list, tracker, arrays: dict | None,
           state: dict | None) -> tuple[int, dict | None]:
    """Start (or restore) the trainer: the first epoch to run, and its set-up report with the
    seconds it took (None when restored, or when the trainer reports nothing)."""
    if arrays is not None:
        recorded = state["trainer"].get("workers", 1)
        running = trainer.workers if isinstance(trainer, ParameterMixing) else 1
        if recorded != running:
            def how(k):
                return "serially" if k == 1 else f"by parameter mixing over {k} shards"
            settings = ("training.parameter_mixing = false" if recorded == 1 else
                        f"training.workers = {recorded} and training.parameter_mixing = true")
            raise ValueError(f"{CHECKPOINT}: {component.name}'s epochs so far trained {how(recorded)}, this run would "
                             f"train {how(running)} (the number of shards changes what is trained); resume with "
                             f"{settings}")
        try:
            trainer.restore(component.structure, train_x, arrays, state["trainer"])
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise ValueError(f"{CHECKPOINT}: the checkpoint's trainer state does not fit {component.name}'s trainer "
                             f"({type(e).__name__}: {e}); train again without --resume") from None
        return state["epoch"] + 1, None
    start = time.perf_counter()
    trainer.begin(component.structure, train_x, component.structure.hash_bits)
    seconds = time.perf_counter() - start
    report = trainer.setup_report()
    if seconds > 1.0:
        tracker.message(f"trainer set-up: {seconds:.1f} s" + "".join(f"; {k} {v}" for k, v in report.items()))
    return 1, {"seconds": seconds, **report} if report else None


def _epoch(component: Component, trainer, train_x: list, dev_x: list, run: Training, epoch: int,
           ahead: AheadTraining | None = None):
    """One training epoch (or, with `ahead`, its state restored) and the dev scores of its
    weights: (metrics, the component with them)."""
    run.tracker.start_epoch(epoch, len(train_x))
    # With workers to spare and no parameter mixing (whose forked shards must not inherit a
    # helper thread), a first-order parser scores each sentence in two threads: same model.
    threads = 1 if isinstance(trainer, ParameterMixing) else run.settings["workers"]
    if ahead is not None:
        metrics, arrays, meta = ahead.epoch(epoch)
        trainer.restore(component.structure, train_x, arrays, meta)
        run.tracker.advance(len(train_x), train_accuracy=metrics.get("train_accuracy"))
    else:
        with scoring_threads(component.structure, threads):
            metrics = trainer.epoch(component.structure, train_x, run.tracker)
    if metrics.get("epoch_seconds"):
        metrics["train_words_per_second"] = sum(getattr(x, "n", 1) for x in train_x) / metrics["epoch_seconds"]
    if "train_accuracy" in metrics:
        metrics["train_accuracy"] *= 100.0
    candidate = _with_weights(component, trainer)
    if dev_x:
        start = time.perf_counter()
        scores = _dev_scores(candidate, dev_x, run, threads)
        metrics.update({f"dev_{k}": v for k, v in scores.items() if k not in ("words", "sentences")})
        metrics["dev_words_per_second"] = scores["words"] / (time.perf_counter() - start)
    else:
        candidate.link(run.upstream(component.name))
    metrics["epoch"] = epoch
    return metrics, candidate


def _dev_scores(candidate: Component, dev_x: list, run: Training, threads: int) -> dict:
    """The component's scores on the dev set (linked to the components before it)."""
    candidate.link(run.upstream(candidate.name))
    return candidate.score(run.dev_set, _annotate_in_threads(candidate, dev_x, threads), run.pipeline.unseen)


def _annotate_in_threads(component: Component, sentences: list, threads: int) -> list:
    """`annotate([component], sentences)`, the sentences split among `threads` threads (the
    batch kernels release the GIL; each sentence's prediction is its own, so the same)."""
    if threads < 2 or len(sentences) < 2 * threads:
        return annotate([component], sentences)
    from concurrent.futures import ThreadPoolExecutor

    cuts = [len(sentences) * k // threads for k in range(threads + 1)]
    parts = [sentences[cuts[k]:cuts[k + 1]] for k in range(threads)]
    with ThreadPoolExecutor(threads - 1, thread_name_prefix="dev") as pool:
        rest = [pool.submit(annotate, [component], part) for part in parts[1:]]
        out = annotate([component], parts[0])
        for future in rest:
            out.extend(future.result())
    return out


def data_fingerprint(settings: dict) -> dict:
    """The sha256 of the training and dev files, recorded in the checkpoint so that `--resume`
    refuses data that changed at the same path."""
    import hashlib

    out = {}
    for key in ("train_path", "dev_path"):
        if settings[key]:
            digest = hashlib.sha256()
            with open(settings[key], "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            out[key] = digest.hexdigest()
    return out


def check_output(output: Path) -> None:
    """Refuse an output location that the first save would fail on, before any training."""
    for path, what in ((output, "the output directory"), (output / BEST_MODEL, "its model-best"),
                       (output / CHECKPOINT, "its checkpoint")):
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path}: {what} is a file, not a directory; choose another --output")
    try:
        output.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=output, prefix=".write-test", delete=True)
        probe.close()
    except OSError as e:
        raise ValueError(f"{output}: cannot write the output directory ({e.strerror or e})") from None


def _with_weights(component: Component, trainer) -> Component:
    """A copy of the component that predicts with the trainer's current prediction weights."""
    return _with_array(component, trainer.prediction_weights().array)


def _with_array(component: Component, array: np.ndarray) -> Component:
    """A copy of the component that predicts with the weights `array`."""
    out = type(component)(component.structure, array)
    out.name, out.trainer_call = component.name, component.trainer_call
    return out


def _log_tables(trainer, entry: dict, tracker) -> None:
    """One W&B row per new row of the trainer's tables (a finished C value of C-annealing, an
    outer iteration of MaxEnDNet); the report keeps the tables."""
    for prefix, table in trainer.tables().items():
        if table:
            for row in table[len(entry.get(prefix, [])):]:
                tracker.log({f"{prefix}/{k}": v for k, v in row.items()})
            entry[prefix] = list(table)


def _save_progress(run: Training, trainer, name: str, epoch: int, member: int | None = None) -> None:
    if run.output is None:
        return
    (run.output / "training.json").write_text(json.dumps(run.report, indent=2) + "\n", encoding="utf-8")
    state = {"component": name, "epoch": epoch, "config": run.config_text, "report": run.report,
             "data": run.fingerprint, "wandb_run_id": getattr(run.tracker, "run_id", None)}
    extra = {}
    if member is not None:
        state["member"] = member
        extra = {MEMBER_BEST: run.member_best}
        if run.member_total is not None:
            extra[MEMBER_SUM] = run.member_total
    save_checkpoint(run.output / CHECKPOINT, trainer, state, extra)


def _save_jackknife(directory: Path, jackknifed: dict) -> None:
    """The jackknifed predictions (one string per word), per component."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for name, values in jackknifed.items():
        arrays[f"{name}_values"] = np.array([t for sentence in values for t in sentence], dtype=str)
        arrays[f"{name}_lengths"] = np.array([len(sentence) for sentence in values], dtype=np.int64)
    tmp = directory / f".{JACKKNIFE}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    tmp.replace(directory / JACKKNIFE)


def _load_jackknife(directory: Path, lengths: list[int] | None = None) -> dict:
    """The jackknifed predictions a checkpoint kept, {column: each training sentence's values};
    a damaged file (unreadable, or not one value per word of the training sentences, whose
    `lengths` these are when given) is a ValueError naming it."""
    import zipfile

    path = directory / JACKKNIFE
    if not path.is_file():
        return {}
    out = {}
    try:
        with np.load(path, allow_pickle=False) as data:
            for key in data.files:
                if key.endswith("_lengths"):
                    name = key[: -len("_lengths")]
                    counts, values = data[key], data[f"{name}_values"]
                    expected = lengths if lengths is not None else counts.tolist()
                    if counts.dtype.kind not in "iu" or counts.ndim != 1 or counts.tolist() != expected \
                            or min(expected, default=0) < 0 or values.ndim != 1 or len(values) != sum(expected):
                        raise ValueError(f"{name}: not one value per word of the {len(expected)} training sentences")
                    flat = values.tolist()
                    bounds = np.concatenate([[0], np.cumsum(counts)])
                    out[name] = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: cannot read the checkpoint's jackknifed predictions ({type(e).__name__}: "
                         f"{e})") from None
    return out


def with_language(config: Config, train_path) -> tuple[Config, str]:
    """The config with its `[nlp] lang` (`model.language_code`: spaCy's code of the training
    data's language, from the training file's UD name when the config has none), and a note
    saying where an inferred one came from ("" when the config sets it or none is known). A
    `lang` spaCy does not know is refused here, before any training."""
    lang = dict(config.get("nlp") or {}).get("lang")
    if lang is not None:
        why = spacy_language_error(lang) if isinstance(lang, str) else "not a language code"
        if why is not None:
            raise ValueError(f"[nlp] lang = {lang!r}: spaCy cannot make it ({why}); a code such as en, de, el, "
                             "hu, it, tr, or xx, spaCy's multi-language class")
        return config, ""
    lang = language_code(train_path)
    if lang is None:
        return config, ""
    name = Path(str(train_path)).name
    code = UD_FILE_NAME.match(name).group(1)
    why = "" if lang == code else (f", which spaCy cannot make here ({spacy_language_error(code)}): its "
                                   "multi-language class")
    return (Config(config).merge({"nlp": {"lang": lang}}),
            f"language: {lang} (from the training file's UD name {name}{why}; [nlp] lang sets another)")


def _settings(config: Config) -> dict:
    training = dict(config.get("training", {}))
    unknown = sorted(set(training) - set(TRAINING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown [training] setting(s): {', '.join(unknown)}; known: {', '.join(TRAINING_DEFAULTS)}")
    settings = {**TRAINING_DEFAULTS, **training}
    _check_counts(settings, "training.")
    if not isinstance(settings["max_train_sentences"], int) or isinstance(settings["max_train_sentences"], bool) \
            or settings["max_train_sentences"] < 0:
        raise ValueError("training.max_train_sentences must be 0 (all) or a positive integer, "
                         f"got {settings['max_train_sentences']!r}")
    if not isinstance(settings["calibrate"], bool):
        raise ValueError(f"training.calibrate must be true or false, got {settings['calibrate']!r}")
    if not settings["train_path"]:
        raise ValueError("training.train_path is not set")
    _check_seeds(settings["seeds"], "training.seeds")
    if settings["keep"] not in KEEP:
        raise ValueError(f"training.keep must be one of {', '.join(map(repr, KEEP))}, got {settings['keep']!r}")
    if not isinstance(settings["workers"], int) or isinstance(settings["workers"], bool) or settings["workers"] < 1:
        raise ValueError(f"training.workers must be a positive integer, got {settings['workers']!r}")
    if not isinstance(settings["parameter_mixing"], bool):
        raise ValueError(f"training.parameter_mixing must be true or false, got {settings['parameter_mixing']!r}")
    mixes = settings["mixes_per_epoch"]
    if not isinstance(mixes, int) or isinstance(mixes, bool) or mixes < 1:
        raise ValueError(f"training.mixes_per_epoch must be a positive integer, got {mixes!r}")
    if settings["engine"] not in ENGINES:
        raise ValueError(f"training.engine must be one of {', '.join(repr(e) for e in ENGINES)}, "
                         f"got {settings['engine']!r}")
    folds = settings["jackknife_folds"]
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 0 or folds == 1:
        raise ValueError(f"training.jackknife_folds must be 0 (the parser trains on gold tags) or an integer >= 2, "
                         f"got {folds!r}")
    return settings


def _check_counts(settings: dict, where: str) -> None:
    """max_epochs (a positive integer) and patience (0 or null, none, or a positive integer) of the
    [training] section or a component's (`where`: "training." or "[components.NAME.training] ")."""
    for key, least in (("max_epochs", 1), ("patience", 0)):
        value = settings.get(key, least)
        if key == "patience" and value is None:  # null: no early stopping, as 0
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            what = "a positive integer" if least else "0 (none) or a positive integer"
            raise ValueError(f"{where}{key} must be {what}, got {value!r}")


def _check_seeds(value, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{where} must be a positive integer (the number of runs averaged), got {value!r}")


def config_differences(before: dict, now: dict, most: int = 5) -> str:
    """The settings two configs differ in, "training.train_path: 'a' then 'b'" (the first
    `most` of them)."""
    def flat(d, prefix=""):
        out = {}
        for key, value in d.items():
            if isinstance(value, dict):
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = value
        return out

    a, b = flat(before), flat(now)
    missing = object()
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k, missing) != b.get(k, missing)]
    shown = [f"{k}: {a.get(k, 'unset')!r} then {b.get(k, 'unset')!r}" for k in keys[:most]]
    return "; ".join(shown) + (f"; and {len(keys) - most} more" if len(keys) > most else "")


def _resumable(config_text: str) -> dict:
    """The parts of a config a resumed run must share with the original: all but how long to train."""
    config = Config().from_str(config_text, interpolate=False)
    training = dict(config.get("training", {}))
    training.pop("max_epochs", None)
    training.pop("patience", None)
    # How many workers share the work, and where they run, are checked when the trainer is
    # restored: they change what parameter mixing trains (the number of shards), not the rest.
    training.pop("workers", None)
    training.pop("engine", None)
    training.pop("parameter_mixing", None)
    training.pop("mixes_per_epoch", None)
    config.pop("tracking", None)  # where progress is logged does not change what is trained
    config.pop("nlp", None)  # the language (spaCy's tokenizer for raw text) does not either
    components = {}
    for name, spec in dict(config.get("components", {})).items():
        spec = dict(spec)
        seeds = dict(spec.pop("training", None) or {}).get("seeds")
        if seeds is not None:
            spec["seeds"] = seeds  # a resumed run averages as many runs as the original
        components[name] = spec
    return {**config, "training": training, "components": components}
