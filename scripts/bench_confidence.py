"""Calibration, filtering and speed of arborist's confidences (issue 27).

For each model given (NAME=MODEL_DIR), on a gold dev file:
- calibration of the head (and, with a labeler, label and labeled-arc) probabilities (a
  label's is given its arc, so it is measured on the words whose head is right; the
  labeled arc's, P(head) * P(label), on every word), and of the taggers', the
  morphologizer's and the lemmatizer's (FEATS and LEMMA: on every word, against the gold
  string):
  expected calibration error over equal-width bins, and the reliability diagram's bins;
  "in_sample" uses the model's own temperature (fitted on this dev set by `arborist train`
  or `arborist calibrate`); "held_out" fits the temperature on one half of the dev
  sentences and measures on the other (both ways, pooled), so that the figure does not
  rest on fitting and measuring on the same words; "uncalibrated" is temperature 1;
- the accuracy-coverage curve: UAS of the arcs whose head probability is >= t, and the
  share of words they cover;
- parse speed: the argmax-only parse and the parse with probabilities (k = 3), best of
  `--repeats` runs each, on the same sentences (`Pipeline.annotate_many`).

Writes scripts/results/confidence_<name>.json and a reliability diagram
scripts/results/confidence_<name>.png per model.

    python scripts/bench_confidence.py --dev ../shared/corpora/ud/en_ewt/en_ewt-ud-dev.conllu \\
        en_ewt_perceptron=models/en_perc
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from arborist.confidence import (
    coverage_curve,
    expected_calibration_error,
    reliability,
    upstream_inputs,
)
from arborist.corpus import read_corpus
from arborist.model import load
from arborist.morph.choice import conll_column

RESULTS = Path(__file__).resolve().parent / "results"


def gather(pipeline, gold, gold_tags):
    """Per column: (probability of the prediction, correct) over every word."""
    parsed = list(pipeline.parse(gold, gold_tags, batch_size=64, confidence=0))
    out = {}
    head_ok = head_p = None
    if "head" in parsed[0].confidences:
        head_ok = np.concatenate([np.asarray(p.heads[1:]) == g.heads[1:] for p, g in zip(parsed, gold)])
        head_p = np.concatenate([p.confidences["head"].prob for p in parsed])
        out["head"] = (head_p, head_ok)
    if parsed[0].deprels is not None and "deprel" in parsed[0].confidences and head_ok is not None:
        label_ok = np.concatenate([np.array([a == b for a, b in zip(p.deprels[1:], g.deprels[1:])])
                                   for p, g in zip(parsed, gold)])
        label_p = np.concatenate([p.confidences["deprel"].prob for p in parsed])
        # a label's probability is given its arc: measured on the arcs the parser gets right
        out["deprel"] = (label_p[head_ok], label_ok[head_ok])
        out["arc"] = (head_p * label_p, head_ok & label_ok)
    for column in ("upos", "xpos"):
        if column in parsed[0].confidences:
            ok = np.concatenate([np.array([a == b for a, b in zip(p.sentence.upos[1:] if column == "upos"
                                                                  else p.sentence.xpos[1:],
                                                                  g.upos[1:] if column == "upos" else g.xpos[1:])])
                                 for p, g in zip(parsed, gold)])
            out[column] = (np.concatenate([p.confidences[column].prob for p in parsed]), ok)
    for column, index in (("feats", 5), ("lemma", 2)):
        # a bundle's probability is given the word's predicted UPOS; measured on every word
        if column in parsed[0].confidences:
            ok = np.concatenate([np.array([a == b for a, b in zip(p.columns[column], conll_column(g, index))])
                                 for p, g in zip(parsed, gold)])
            out[column] = (np.concatenate([p.confidences[column].prob for p in parsed]), ok)
    return out


def held_out(pipeline, gold, gold_tags, bins):
    """ECE per column with the temperatures fitted on the other half of the dev sentences."""
    halves = [gold[0::2], gold[1::2]]
    saved = {n: dict(c.info) for n, c in pipeline.components.items()}
    pooled: dict[str, list] = {}
    temperatures = []
    for fit_on, measure_on in ((0, 1), (1, 0)):
        components = list(pipeline.components.values())
        temps = {}
        for i, component in enumerate(components):
            if component.confidence_column:
                fit = component.calibrate(upstream_inputs(components[:i], halves[fit_on]), halves[fit_on])
                temps[component.name] = fit["temperature"] if fit else None
        temperatures.append(temps)
        for column, (p, ok) in gather(pipeline, halves[measure_on], gold_tags).items():
            pooled.setdefault(column, [[], []])
            pooled[column][0].append(p)
            pooled[column][1].append(ok)
        for n, c in pipeline.components.items():
            c.info = dict(saved[n])
    return {column: expected_calibration_error(np.concatenate(p), np.concatenate(ok), bins)
            for column, (p, ok) in pooled.items()}, temperatures


def timing(pipeline, gold, gold_tags, repeats):
    """Best of `repeats` runs each, interleaved (the machine is shared: both see the same load)."""
    outputs = {}

    def run(confidence):
        start = time.perf_counter()
        out = list(pipeline.parse(gold, gold_tags, batch_size=64, confidence=confidence))
        seconds = time.perf_counter() - start
        outputs[confidence] = out
        return seconds

    words = sum(x.n for x in gold)
    argmax = probs = math.inf
    for _ in range(repeats):
        argmax = min(argmax, run(None))
        probs = min(probs, run(3))
    # the predictions with probabilities are the argmax-only ones
    same = all((a.heads is None and b.heads is None or np.array_equal(a.heads, b.heads))
               and a.deprels == b.deprels and a.columns == b.columns for a, b in zip(outputs[None], outputs[3]))
    return {"words": words, "same_predictions": same, "argmax_seconds": argmax, "probs_seconds": probs, "ratio": probs / argmax,
            "argmax_words_per_second": words / argmax, "probs_words_per_second": words / probs}


def plot(name, reliabilities, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    for label, rows in reliabilities.items():
        xs = [r["mean_prob"] for r in rows if r["words"]]
        ys = [r["accuracy"] for r in rows if r["words"]]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xlabel("mean predicted probability (bin)")
    ax.set_ylabel("accuracy (bin)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"Reliability: {name}")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def table() -> str:
    """The markdown table of every scripts/results/confidence_*.json."""
    lines = ["| model | UAS | T (parser) | head ECE | held out | T = 1 | label ECE | arc ECE | p >= 0.9: words | "
             "p >= 0.9: UAS | time with probs |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for path in sorted(RESULTS.glob("confidence_*.json")):
        r = json.loads(path.read_text())
        if "head" not in r["columns"]:
            continue  # a tagger: see its JSON
        head = r["columns"]["head"]
        at90 = next(c for c in head["coverage"] if c["threshold"] == 0.9)
        t = r["temperatures"].get("parser")

        def ece(column, key="ece"):
            c = r["columns"].get(column)
            return f"{c[key]:.4f}" if c and key in c else "-"

        timing = f"{r['timing']['ratio']:.2f}x" if "timing" in r else "-"
        lines.append(f"| {path.stem[len('confidence_'):]} | {100 * head['accuracy']:.2f} | "
                     f"{t:.1f} | {ece('head')} | {ece('head', 'ece_held_out')} | {ece('head', 'ece_uncalibrated')} | "
                     f"{ece('deprel')} | {ece('arc')} | {100 * at90['coverage']:.1f}% | "
                     f"{100 * (at90['accuracy'] or 0):.2f} | {timing} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", help="NAME=MODEL_DIR")
    ap.add_argument("--dev", type=Path)
    ap.add_argument("--table", action="store_true", help="print the markdown table of the results written so far")
    ap.add_argument("--bins", type=int, default=15)
    ap.add_argument("--gold-tags", action="store_true", help="parse with the dev file's own tags")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-held-out", action="store_true", help="skip the split-half temperature fit (slow at "
                    "second order)")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    if args.table:
        print(table())
        return
    if not args.dev or not args.models:
        ap.error("give --dev and NAME=MODEL_DIR (or --table)")
    gold = read_corpus(args.dev, require_heads=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    for spec in args.models:
        name, _, path = spec.partition("=")
        pipeline = load(path)
        temps = {n: c.temperature for n, c in pipeline.components.items() if c.confidence_column}
        # FEATS and lemmas: the lexicons' probabilities (their dev share of right values) and words
        lexicons = {n: {"probs": c.info["lexicon_probs"], "words": c.info.get("lexicon_words"),
                        "right": c.info.get("lexicon_right"),
                        "shares": [r / w if w else None for r, w in zip(c.info.get("lexicon_right") or (),
                                                                        c.info.get("lexicon_words") or ())]}
                    for n, c in pipeline.components.items() if "lexicon_probs" in c.info}
        result = {"model": path, "dev": str(args.dev), "sentences": len(gold), "bins": args.bins,
                  "gold_tags": args.gold_tags, "temperatures": temps, "lexicons": lexicons, "columns": {}}
        data = gather(pipeline, gold, args.gold_tags)
        saved = {n: dict(c.info) for n, c in pipeline.components.items()}
        for c in pipeline.components.values():
            c.info.pop("temperature", None)
            c.info.pop("lexicon_probs", None)  # FEATS and lemmas: lexicon words at 1 too
        raw = gather(pipeline, gold, args.gold_tags)
        for n, c in pipeline.components.items():
            c.info = saved[n]
        reliabilities = {}
        for column, (p, ok) in data.items():
            rows = reliability(p, ok, args.bins)
            reliabilities[column] = rows
            result["columns"][column] = {
                "words": int(len(p)), "accuracy": float(ok.mean()),
                "ece": expected_calibration_error(p, ok, args.bins),
                "ece_uncalibrated": expected_calibration_error(*raw[column], args.bins),
                "mean_prob": float(p.mean()), "reliability": rows,
                "coverage": coverage_curve(p, ok)}
        if not args.no_held_out:
            ece, fitted = held_out(pipeline, gold, args.gold_tags, args.bins)
            for column, value in ece.items():
                result["columns"][column]["ece_held_out"] = value
            result["held_out_temperatures"] = fitted
        if not args.no_timing:
            result["timing"] = timing(pipeline, gold, args.gold_tags, args.repeats)
        out = RESULTS / f"confidence_{name}.json"
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot(name, {c: r for c, r in reliabilities.items() if c in ("head", "deprel", "arc")}
             or reliabilities, RESULTS / f"confidence_{name}.png")
        for column, c in result["columns"].items():
            at90 = next(r for r in c["coverage"] if r["threshold"] == 0.9)
            print(f"{name} {column}: ECE {c['ece']:.4f} (uncalibrated {c['ece_uncalibrated']:.4f}"
                  + (f", held-out {c['ece_held_out']:.4f}" if "ece_held_out" in c else "")
                  + f"), accuracy {100 * c['accuracy']:.2f}; p>=0.9: {100 * at90['coverage']:.1f}% of words, "
                  f"{100 * (at90['accuracy'] or 0):.2f}% correct", flush=True)
        print(f"{name}: T={temps}" + (f"; parse {result['timing']['ratio']:.2f}x argmax time" if "timing" in result
                                      else ""), flush=True)


if __name__ == "__main__":
    main()
