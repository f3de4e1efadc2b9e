"""Tagging benchmark: arborist's first-order linear chain against python-crfsuite.

For each treebank, on the same train/dev split and with the same emission
features, compares

  arborist         LinearChain(order=1) trained by the averaged perceptron,
                   epoch by epoch up to --epochs; the epoch with the best dev
                   accuracy is kept (dev selection, as `arborist train` does);
  crfsuite lbfgs   pycrfsuite L-BFGS CRF (c1 = c2 = 0.1, 100 iterations,
                   all possible transitions: the sklearn-crfsuite tutorial);
  crfsuite ap      pycrfsuite averaged perceptron, --epochs iterations (no dev
                   selection: crfsuite cannot select an epoch).

crfsuite's attributes are built from `arborist.tagger.features`
(EMISSION_TEMPLATES, WORD_VALUES, CONTEXT_VALUES, CONTEXT_OFFSETS, word_strings,
word_flags), one attribute per emission template, so the two feature sets stay
the same when the templates change (templates are followed by name: "bias", a
WORD_VALUES name, "<CONTEXT_VALUE><CONTEXT_OFFSET>", or "a|b" conjunctions of
these); a template name this script does not know is an error. Before training, the mapping is checked against arborist's own
compiled feature kernel (`ChainFeatures.emission_keys`): on sample sentences,
every template's crfsuite attribute must be in one-to-one correspondence with
arborist's feature key. crfsuite adds its own tag-bigram transition features;
arborist's tag bigram conjoined with the word's lowercase form has no crfsuite
equivalent (crfsuite's transitions cannot be conditioned on attributes).

Reported per tagger: dev accuracy (%), training seconds, and tagging speed in
words/s over the whole dev set (median of 3 repeats, one process):
  arborist: scores + argmax per sentence, with a freshly built chain each
            repeat (its per-form cache of word values starts empty, as after
            loading a model), plus the same with the cache warm;
  crfsuite: feature extraction + Tagger.tag per sentence (end to end), plus
            Tagger.tag alone on prebuilt ItemSequences.
Training seconds exclude reading the corpus and dev evaluation; crfsuite's
include building the attribute lists and Trainer.append.

Deterministic: arborist's perceptron is seeded; crfsuite's averaged perceptron
shuffles with a process-global Mersenne twister that is never reseeded, so
every crfsuite training runs in a freshly forked child of a process that has
never trained crfsuite (same shuffles whatever treebanks ran before).

    pip install -e '.[crfsuite]'   # or: pip install python-crfsuite
    python scripts/bench_vs_crfsuite.py                       # all five treebanks
    python scripts/bench_vs_crfsuite.py --treebanks en_ewt --quick
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arborist.corpus import read_corpus
from arborist.learn.perceptron import Perceptron
from arborist.tagger import features as F
from arborist.tagger.chain import MISSING, LinearChain

try:
    import pycrfsuite
except ImportError:  # pragma: no cover - the extra is optional
    sys.exit("python-crfsuite is not installed: pip install -e '.[crfsuite]' (or pip install python-crfsuite)")

REPO = Path(__file__).resolve().parent.parent
TREEBANKS = ("en_ewt", "el_gdt", "hu_szeged", "tr_imst", "it_partut")
HASH_BITS = 22  # as configs/en_ewt_tagger.cfg
SEED = 0
REPEATS = 3
QUICK_TRAIN_SENTENCES = 500
QUICK_DEV_SENTENCES = 500
CHECK_SENTENCES = 2000  # training sentences on which the feature mapping is checked against arborist

# The sklearn-crfsuite tutorial's settings (CRF(algorithm='lbfgs', c1=0.1, c2=0.1,
# max_iterations=100, all_possible_transitions=True)); crfsuite's defaults otherwise.
LBFGS_PARAMS = {"c1": 0.1, "c2": 0.1, "max_iterations": 100, "feature.possible_transitions": True}
# Averaged perceptron: max_iterations is set to --epochs; epsilon 0 (crfsuite's default)
# stops early only on a training pass without errors.
AP_PARAMS = {"epsilon": 0.0, "feature.possible_transitions": True}

BOS, EOS = "<S>", "</S>"  # the neighbours' values outside the sentence, as in features.pyx


# -- the feature mapping ------------------------------------------------------
def feature_plan() -> list[tuple[str, tuple[tuple[int, int], ...]]]:
    """One entry per EMISSION_TEMPLATES name, in order: (name, parts), parts a tuple of
    (WORD_VALUES column, word offset) as arborist reads the name (`template_parts`:
    "bias", "<value>", "<value><offset>", "a|b|..." conjunctions; BOS/EOS outside the
    sentence); the attribute's value joins the parts' values with '|'."""
    plan = [(name, F.template_parts(name)) for name in F.EMISSION_TEMPLATES]
    if len({name for name, _ in plan}) != len(plan):
        raise ValueError(f"duplicate names in EMISSION_TEMPLATES: {F.EMISSION_TEMPLATES}")
    return plan


def word_values(word: str) -> list[str]:
    """The WORD_VALUES of one word as strings; flags are "0"/"1" (both fire in arborist)."""
    strings = list(F.word_strings(word))
    flags = [str(int(bool(f))) for f in F.word_flags(word)]
    values = strings + flags
    if len(values) != len(F.WORD_VALUES):
        raise ValueError(f"word_strings + word_flags give {len(values)} values, WORD_VALUES names "
                         f"{len(F.WORD_VALUES)}: the mapping would diverge")
    return values


def sentence_attributes(words: list[str], plan) -> list[list[str]]:
    """crfsuite's attributes ("template=value", weight 1) of every word of a sentence."""
    reach = max((abs(offset) for _, parts in plan for _, offset in parts), default=0)
    width = len(F.WORD_VALUES)
    padded = [[BOS] * width] * reach + [word_values(w) for w in words] + [[EOS] * width] * reach
    out = []
    for t in range(reach, reach + len(words)):
        row = []
        for name, parts in plan:
            if not parts:
                row.append(name)
            elif len(parts) == 1:
                column, offset = parts[0]
                row.append(f"{name}={padded[t + offset][column]}")
            else:
                row.append(f"{name}=" + "|".join(padded[t + offset][column] for column, offset in parts))
        out.append(row)
    return out


def check_against_arborist(chain: LinearChain, sentences, plan) -> dict:
    """Every template's crfsuite attribute must map one-to-one onto arborist's feature key."""
    forward = [dict() for _ in plan]
    backward = [dict() for _ in plan]
    tokens = 0
    for x in sentences:
        _, keys = chain.features.emission_keys(x)
        attributes = sentence_attributes(x.forms[1:], plan)
        if keys.shape != (len(attributes), len(plan)):
            raise AssertionError(f"arborist has {keys.shape[1]} emission features per word, "
                                 f"the crfsuite mapping {len(plan)}")
        for t, row in enumerate(attributes):
            for j, attribute in enumerate(row):
                key = int(keys[t, j])
                if forward[j].setdefault(attribute, key) != key or backward[j].setdefault(key, attribute) != attribute:
                    raise AssertionError(
                        f"template {plan[j][0]!r}: crfsuite attribute {attribute!r} and arborist's feature "
                        f"disagree ({x.source}:{x.first_line}, word {t + 1}): the feature sets diverge")
        tokens += len(attributes)
    return {"sentences": len(sentences), "words": tokens,
            "distinct_values": {plan[j][0]: len(forward[j]) for j in range(len(plan))}}


# -- data -------------------------------------------------------------------
def gold_tags(x, attribute: str) -> list[str]:
    return list((x.upos if attribute == "upos" else x.xpos)[1:])


def accuracy(predicted: list[list[str]], sentences, attribute: str) -> float:
    right = total = 0
    for tags, x in zip(predicted, sentences):
        gold = gold_tags(x, attribute)
        right += sum(p == g for p, g in zip(tags, gold))
        total += len(gold)
    return 100.0 * right / total


# -- arborist ---------------------------------------------------------------
def arborist_tag(chain: LinearChain, w, sentences) -> list[list[str]]:
    return [chain.tag_names(chain.argmax(x, chain.scores(x, w))) for x in sentences]


def arborist_speed(tags, attribute: str, w, dev, words: int) -> dict:
    cold, warm = [], []
    for _ in range(REPEATS):
        chain = LinearChain(tags, attribute, 1, HASH_BITS)  # empty cache of word values
        start = time.perf_counter()
        for x in dev:
            chain.argmax(x, chain.scores(x, w))
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        for x in dev:
            chain.argmax(x, chain.scores(x, w))
        warm.append(time.perf_counter() - start)
    return {"words_per_second": words / statistics.median(cold),
            "words_per_second_warm_cache": words / statistics.median(warm),
            "tag_seconds": cold, "tag_seconds_warm_cache": warm}


def run_arborist(train, dev, attribute: str, epochs: int, log) -> tuple[dict, LinearChain]:
    chain = LinearChain.from_sentences(train, attribute=attribute, order=1, hash_bits=HASH_BITS)
    trainer = Perceptron(averaged=True, shuffle=True, seed=SEED)
    start = time.perf_counter()
    trainer.begin(chain, train, chain.hash_bits)
    train_seconds = time.perf_counter() - start
    history, best = [], None
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        metrics = trainer.epoch(chain, train)
        train_seconds += time.perf_counter() - start
        w = trainer.prediction_weights()
        dev_accuracy = accuracy(arborist_tag(chain, w, dev), dev, attribute)
        history.append({"epoch": epoch, "train_accuracy": 100.0 * metrics["train_accuracy"],
                        "updates": metrics["updates"], "epoch_seconds": metrics["epoch_seconds"],
                        "dev_accuracy": dev_accuracy})
        if best is None or dev_accuracy > best["dev_accuracy"]:  # strictly better, as `arborist train`
            best = {"dev_accuracy": dev_accuracy, "epoch": epoch, "train_seconds": train_seconds, "weights": w}
        log(f"    arborist epoch {epoch:2d}: dev {dev_accuracy:.2f}  ({metrics['epoch_seconds']:.1f} s)")
    words = sum(x.n for x in dev)
    result = {
        "tagger": "arborist",
        "trainer": "averaged perceptron (arborist.learn.perceptron.Perceptron)",
        "params": {"order": 1, "hash_bits": HASH_BITS, "averaged": True, "shuffle": True, "seed": SEED,
                   "max_epochs": epochs, "selection": "best dev epoch"},
        "n_tags": chain.n_tags,
        "dev_accuracy": best["dev_accuracy"],
        "best_epoch": best["epoch"],
        "epochs_trained": epochs,
        "last_epoch_dev_accuracy": history[-1]["dev_accuracy"],
        "train_seconds": train_seconds,
        "train_seconds_to_best_epoch": best["train_seconds"],
        "history": history,
    }
    result.update(arborist_speed(chain.tags, attribute, best["weights"], dev, words))
    return result, chain


# -- crfsuite ---------------------------------------------------------------
_CHILD: dict = {}  # set before forking a training child: the training sentences and the plan


def _crfsuite_train_child(algorithm: str, params: dict, model_path: str) -> dict:
    """Runs in a fresh fork: build attributes, append, train, write the model; returns the timings."""
    train, attribute, plan = _CHILD["train"], _CHILD["attribute"], _CHILD["plan"]
    start = time.perf_counter()
    xseqs = [sentence_attributes(x.forms[1:], plan) for x in train]
    features_seconds = time.perf_counter() - start
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    start = time.perf_counter()
    for xseq, x in zip(xseqs, train):
        trainer.append(xseq, gold_tags(x, attribute))
    append_seconds = time.perf_counter() - start
    trainer.set_params(params)
    start = time.perf_counter()
    trainer.train(model_path)
    fit_seconds = time.perf_counter() - start
    log = trainer.logparser
    terminated = [line.strip() for line in log.log if "terminated" in line.lower()]
    return {"features_seconds": features_seconds, "append_seconds": append_seconds, "fit_seconds": fit_seconds,
            "iterations": len(log.iterations), "generated_features": log.featgen_num_features,
            "termination": terminated[-1] if terminated else "ran max_iterations",
            "last_iteration": log.last_iteration,
            "params": {k: trainer.get(k) for k in trainer.params()}}


def crfsuite_train(train, attribute: str, plan, algorithm: str, params: dict, model_path: str) -> dict:
    _CHILD.update(train=train, attribute=attribute, plan=plan)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            return pool.apply(_crfsuite_train_child, (algorithm, params, model_path))
    finally:
        _CHILD.clear()


def run_crfsuite(train, dev, attribute: str, plan, algorithm: str, params: dict, log) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_crfsuite_") as tmp:
        model = os.path.join(tmp, f"{algorithm}.crfsuite")
        fit = crfsuite_train(train, attribute, plan, algorithm, params, model)
        tagger = pycrfsuite.Tagger()
        tagger.open(model)
        try:
            info = tagger.info()
            predicted = [tagger.tag(sentence_attributes(x.forms[1:], plan)) for x in dev]
            dev_accuracy = accuracy(predicted, dev, attribute)
            end_to_end = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                for x in dev:
                    tagger.tag(sentence_attributes(x.forms[1:], plan))
                end_to_end.append(time.perf_counter() - start)
            items = [pycrfsuite.ItemSequence(sentence_attributes(x.forms[1:], plan)) for x in dev]
            tag_only = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                for item in items:
                    tagger.tag(item)
                tag_only.append(time.perf_counter() - start)
        finally:
            tagger.close()
    words = sum(x.n for x in dev)
    train_seconds = fit["features_seconds"] + fit["append_seconds"] + fit["fit_seconds"]
    log(f"    crfsuite {algorithm}: dev {dev_accuracy:.2f}  ({train_seconds:.1f} s, {fit['iterations']} iterations)")
    return {
        "tagger": f"crfsuite {algorithm}",
        "trainer": {"lbfgs": "CRF, L-BFGS", "ap": "averaged perceptron"}.get(algorithm, algorithm),
        "params": fit.pop("params"),
        "n_tags": len(info.labels),
        "state_features": len(info.state_features),
        "transition_features": len(info.transitions),
        "dev_accuracy": dev_accuracy,
        "train_seconds": train_seconds,
        **fit,
        "words_per_second": words / statistics.median(end_to_end),
        "words_per_second_tag_only": words / statistics.median(tag_only),
        "tag_seconds": end_to_end,
        "tag_seconds_tag_only": tag_only,
    }


# -- driver -----------------------------------------------------------------
def machine_info() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "numpy": np.__version__,
        "python_crfsuite": _version("python-crfsuite"),
        "arborist": _version("arborist"),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def _version(package: str):
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def display(path: Path) -> str:
    try:
        return os.path.relpath(path, REPO)
    except ValueError:
        return str(path)


def bench_treebank(code: str, corpora: Path, args, plan, log) -> dict:
    paths = {split: corpora / "ud" / code / f"{code}-ud-{split}.conllu" for split in ("train", "dev")}
    train, dev = read_corpus(paths["train"]), read_corpus(paths["dev"])
    entry = {"treebank": code, "train_path": display(paths["train"]), "dev_path": display(paths["dev"]),
             "train_sentences_read": len(train), "dev_sentences_read": len(dev)}
    # A sentence with a missing tag ('_') cannot be a training example (LinearChain.gold refuses it).
    complete = [x for x in train if MISSING not in gold_tags(x, args.attribute)]
    entry["train_sentences_dropped_missing_tag"] = len(train) - len(complete)
    if not complete:
        log(f"{code}: no {args.attribute.upper()} tags in the training set; skipped")
        entry["skipped"] = f"no {args.attribute.upper()} tags in the training set"
        return entry
    train = complete
    if args.quick:
        train, dev = train[:QUICK_TRAIN_SENTENCES], dev[:QUICK_DEV_SENTENCES]
    entry.update({"train_sentences": len(train), "train_words": sum(x.n for x in train),
                  "dev_sentences": len(dev), "dev_words": sum(x.n for x in dev)})
    log(f"{code}: train {entry['train_sentences']} sentences / {entry['train_words']} words, "
        f"dev {entry['dev_sentences']} / {entry['dev_words']}")
    probe = LinearChain.from_sentences(train, attribute=args.attribute, order=1, hash_bits=HASH_BITS)
    entry["feature_check"] = check_against_arborist(probe, train[:CHECK_SENTENCES] + dev, plan)
    del probe
    runs = []
    arborist, _ = run_arborist(train, dev, args.attribute, args.epochs, log)
    runs.append(arborist)
    runs.append(run_crfsuite(train, dev, args.attribute, plan, "lbfgs", LBFGS_PARAMS, log))
    runs.append(run_crfsuite(train, dev, args.attribute, plan, "ap",
                             {**AP_PARAMS, "max_iterations": args.epochs}, log))
    entry["runs"] = runs
    return entry


def markdown_table(results: list[dict], attribute: str) -> str:
    lines = [f"| treebank | tagger | dev {attribute.upper()} acc. (%) | words/s | train s | epochs/iterations |",
             "|---|---|---:|---:|---:|---|"]
    for entry in results:
        if "runs" not in entry:
            lines.append(f"| {entry['treebank']} | skipped: {entry['skipped']} | | | | |")
            continue
        for run in entry["runs"]:
            if run["tagger"] == "arborist":
                it = f"best epoch {run['best_epoch']} of {run['epochs_trained']}"
            else:
                it = f"{run['iterations']} iterations"
            lines.append(f"| {entry['treebank']} | {run['tagger']} | {run['dev_accuracy']:.2f} | "
                         f"{run['words_per_second']:,.0f} | {run['train_seconds']:.1f} | {it} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebanks", nargs="+", default=list(TREEBANKS), metavar="CODE",
                    help=f"UD treebank codes (default: {' '.join(TREEBANKS)})")
    ap.add_argument("--attribute", choices=("upos", "xpos"), default="upos")
    ap.add_argument("--corpora", type=Path, default=REPO / ".." / "shared" / "corpora",
                    help="directory holding ud/<code>/<code>-ud-{train,dev}.conllu "
                         "(default: ../shared/corpora relative to the repository root)")
    ap.add_argument("--epochs", type=int, default=15,
                    help="arborist's maximum epochs, and crfsuite ap's iterations (default 15)")
    ap.add_argument("--output", type=Path, default=REPO / "scripts" / "results" / "bench_vs_crfsuite.json")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: first {QUICK_TRAIN_SENTENCES} training and {QUICK_DEV_SENTENCES} dev "
                         f"sentences of each treebank")
    args = ap.parse_args()
    if args.epochs < 1:
        ap.error("--epochs must be at least 1")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    plan = feature_plan()  # fails on an unknown template before any work
    info = machine_info()
    start = time.perf_counter()
    results = []
    for code in args.treebanks:
        results.append(bench_treebank(code, args.corpora.resolve(), args, plan, log))
    result = {
        "benchmark": "vs_crfsuite",
        "attribute": args.attribute,
        "quick": args.quick,
        "max_train_sentences": QUICK_TRAIN_SENTENCES if args.quick else None,
        "max_dev_sentences": QUICK_DEV_SENTENCES if args.quick else None,
        "epochs": args.epochs,
        "repeats": REPEATS,
        "machine": info,
        "features": {
            "emission_templates": list(F.EMISSION_TEMPLATES),
            "crfsuite_attributes": "one per emission template, 'template=value' with weight 1 "
                                   "(flags as =0/=1, neighbours outside the sentence as <S> / </S>), "
                                   "conjoined with the current tag by crfsuite",
            "transitions": "arborist: tag bigram + tag bigram x lowercase form of the word; "
                           "crfsuite: tag bigram only (feature.possible_transitions on)",
            "hash_bits_arborist": HASH_BITS,
        },
        "speed_measurement": {
            "arborist": "scores + argmax of every dev sentence, fresh chain per repeat (cold word-value cache); "
                        "words_per_second_warm_cache: the same pass again",
            "crfsuite": "attribute extraction + Tagger.tag of every dev sentence; "
                        "words_per_second_tag_only: Tagger.tag on prebuilt ItemSequences",
            "statistic": f"median of {REPEATS} repeats",
        },
        "results": results,
        "total_seconds": None,
    }
    result["total_seconds"] = time.perf_counter() - start
    if hasattr(os, "getloadavg"):
        result["machine"]["load_average_at_end"] = list(os.getloadavg())
    table = markdown_table(results, args.attribute)
    result["table"] = table
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(table)
    print(f"\n{len(results)} treebank(s) in {result['total_seconds']:.0f} s; wrote {args.output}")


if __name__ == "__main__":
    main()
