"""Confidences: what the probabilities of a pipeline's predictions are used for.

Each component kind that gives probabilities computes them (`Component.confidences`: the
probability of each word's predicted value and its k most probable values, from the
structure's own marginals divided by the component's temperature) and fits its temperature
(`Component.calibrate`). This module names no kind; it works on columns ("head",
"deprel", "upos"...):

- `calibrate_pipeline`: fit every component's temperature on dev sentences, in pipeline
  order, each on what the components before it predict (as training does);
- `misc_items`: the CoNLL-U MISC items of a word (`HeadProb=0.97|DeprelProb=0.93`,
  `ArcProb`, the product of the two, `UposProb`, `FeatsProb`, `LemmaProb`, and
  `HeadCands=3:0.9,5:0.08` with k best values);
- `expected_calibration_error`, `reliability`, `coverage_curve`: the measurements of
  `scripts/bench_confidence.py`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .component import Confidence
from .model import Pipeline, annotate
from .sentence import Sentence

ARC = "arc"  # the labeled arc: the product of the head's and the label's probabilities
LOW = "LowProb"  # the MISC key of an arc under `--min-prob`
# The columns whose k best values MISC cannot hold: a FEATS bundle holds MISC's "|" and "=",
# and a lemma or an XPOS tag may be "," or hold "|" (en_ewt's comma's tag is ",", the Swedish
# treebanks' XPOS "NN|UTR|SIN|IND|NOM"), the separators of MISC and of a Cands item. Their
# probability is in MISC (FeatsProb, LemmaProb, XposProb), their k best values in the JSON
# output and spaCy's extensions.
NO_MISC_CANDIDATES = ("feats", "lemma", "xpos")


def misc_key(column: str, suffix: str = "Prob") -> str:
    """"head" -> "HeadProb"; "deprel" -> "DeprelProb"; "upos" -> "UposProb"."""
    return column[:1].upper() + column[1:] + suffix


def format_prob(p: float) -> str:
    """Three decimals, truncated, without trailing zeros: 0.97, 1, 0.005; 0.8999 is 0.899 and
    0.9996 is 0.999 (1 only for 1). Truncated, not rounded, so that a printed value is at least
    a threshold of three decimals (`--min-prob 0.9`) exactly when the probability is: a word
    marked LowProb=Yes never shows HeadProb=0.9. The digits are those of the float's shortest
    repr, so 0.285 (the float nearest it) prints 0.285, as `--min-prob 0.285` reads it."""
    p = float(p)
    if p >= 1.0:
        return "1"
    if not p >= 0.001:  # NaN too
        return "0"
    digits = repr(p).partition(".")[2][:3].rstrip("0")  # 0.001 <= p < 1: "0.xyz..." (no exponent)
    return f"0.{digits}" if digits else "0"


def confidence_keys(columns) -> frozenset[str]:
    """The MISC keys of the probabilities of `columns` (what `misc_items` and `--min-prob`
    write): an earlier run's items of the columns a run predicts again describe values it
    replaces, so CoNLL-U input loses them (`Annotator`)."""
    columns = set(columns)
    keys = {misc_key(c, suffix) for c in columns for suffix in ("Prob", "Cands")}
    if columns & {"head", "deprel"}:
        keys.add(misc_key(ARC))
    if "head" in columns:
        keys.add(LOW)
    return frozenset(keys)


def arc_prob(confidences: dict[str, Confidence]) -> np.ndarray | None:
    """The labeled arc's probability of each word: P(head) * P(label), or P(head) without labels."""
    head = confidences.get("head")
    if head is None:
        return None
    label = confidences.get("deprel")
    return head.prob * label.prob if label is not None else head.prob


def misc_items(confidences: dict[str, Confidence], word: int, k: int = 0) -> list[str]:
    """The MISC items (Key=Value) of word `word` (0-based, without the root): the probability
    of each column's prediction, the labeled arc's, and with k the k most probable values of
    each column (value:probability, best first, those that round to 0 left out)."""
    items = []
    for column, c in confidences.items():
        items.append(f"{misc_key(column)}={format_prob(c.prob[word])}")
    if "head" in confidences and "deprel" in confidences:
        items.append(f"{misc_key(ARC)}={format_prob(confidences['head'].prob[word] * confidences['deprel'].prob[word])}")
    if k:
        for column, c in confidences.items():
            if column in NO_MISC_CANDIDATES:
                continue
            best = [(c.value(v), p) for v, p in zip(c.top[word, :k].tolist(), c.top_prob[word, :k].tolist()) if v >= 0]
            shown = [f"{v}:{format_prob(p)}" for i, (v, p) in enumerate(best) if i == 0 or format_prob(p) != "0"]
            items.append(f"{misc_key(column, 'Cands')}={','.join(shown)}")
    return items


def candidates(c: Confidence, word: int, k: int | None = None) -> list[tuple]:
    """[(value, probability)] of the k most probable values of a word, best first."""
    top = c.top[word] if k is None else c.top[word, :k]
    return [(c.value(v), float(p)) for v, p in zip(top.tolist(), c.top_prob[word, :len(top)].tolist()) if v >= 0]


# -- calibration ---------------------------------------------------------------------------
def upstream_inputs(upstream: list, sentences: list[Sentence]) -> list[Sentence]:
    """The sentences as the components `upstream` leave them for the next one: their token
    columns and, from the others (a parser), their predictions applied."""
    if not upstream:
        return list(sentences)
    out = []
    for parsed in annotate(upstream, sentences):
        x = parsed.sentence
        for component in upstream:
            if component.name in parsed.values and not component.tagging:
                x = component.apply(x, parsed.values[component.name])
        out.append(x)
    return out


def calibrate_pipeline(pipeline: Pipeline, gold: Sequence[Sentence], log: Callable[[str], None] = lambda _: None,
                       threads: int = 1) -> dict[str, dict]:
    """Fit the temperature of every component that gives probabilities on the gold sentences
    (each on what the components before it predict, its marginals in `threads` threads);
    {name: the fit} (`Component.calibrate`)."""
    gold = list(gold)
    components = list(pipeline.components.values())
    fits = {}
    for i, component in enumerate(components):
        if not component.confidence_column:
            continue
        fit = component.calibrate(upstream_inputs(components[:i], gold), gold, threads=threads)
        if fit is not None:
            fits[component.name] = fit
            log(describe_fit(component.name, fit))
    return fits


def describe_fit(name: str, fit: dict) -> str:
    left_out = f", {fit['impossible']} left out whose gold value the structure cannot give" \
        if fit.get("impossible") else ""
    lexicon = "".join(f"; {n} words decided by its {source}, {100 * r / n:.2f}% right" for source, n, r in zip(
        ("lexicon", "fallback lexicon"), fit.get("lexicon_words", ()), fit.get("lexicon_right", ())) if n)
    return (f"{name}: temperature {fit['temperature']:.4g} on {fit['words']} dev words{left_out} "
            f"(negative log-likelihood per word {fit['nll_before']:.4f} -> {fit['nll_after']:.4f}){lexicon}")


# -- measurement ------------------------------------------------------------------------------
def reliability(prob: np.ndarray, correct: np.ndarray, bins: int = 10) -> list[dict]:
    """Equal-width bins of [0, 1]: per bin its words, mean probability and accuracy."""
    prob, correct = np.asarray(prob, dtype=float), np.asarray(correct, dtype=float)
    index = np.minimum((prob * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        sel = index == b
        count = int(sel.sum())
        out.append({"lo": b / bins, "hi": (b + 1) / bins, "words": count,
                    "mean_prob": float(prob[sel].mean()) if count else None,
                    "accuracy": float(correct[sel].mean()) if count else None})
    return out


def expected_calibration_error(prob: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """ECE: the word-weighted mean over equal-width bins of |accuracy - mean probability|."""
    rows = reliability(prob, correct, bins)
    total = sum(r["words"] for r in rows)
    return float(sum(r["words"] * abs(r["accuracy"] - r["mean_prob"]) for r in rows if r["words"]) / total) \
        if total else 0.0


def coverage_curve(prob: np.ndarray, correct: np.ndarray,
                   thresholds: Sequence[float] = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)) -> list[dict]:
    """Per threshold t: the share of words whose probability is >= t and their accuracy."""
    prob, correct = np.asarray(prob, dtype=float), np.asarray(correct, dtype=bool)
    out = []
    for t in thresholds:
        keep = prob >= t
        out.append({"threshold": float(t), "coverage": float(keep.mean()) if len(prob) else 0.0,
                    "accuracy": float(correct[keep].mean()) if keep.any() else None})
    return out
