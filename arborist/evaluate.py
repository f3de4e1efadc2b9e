"""Attachment scores with the CoNLL 2018 shared task definitions.

Every word counts (punctuation included); LAS compares the universal part of
DEPREL (before ':'). The *_nopunct scores leave out words whose gold UPOS is
PUNCT, and exact match is the share of sentences with every head right.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .sentence import Sentence


def attachment_scores(
    pairs: Iterable[tuple[Sentence, np.ndarray, Sequence[str] | None]],
) -> dict:
    """pairs: (gold sentence, predicted heads (n+1), predicted deprels (n+1) or None)."""
    words = head_ok = label_ok = 0
    words_np = head_ok_np = label_ok_np = 0
    sentences = exact = 0
    labelled = True
    for gold, heads, deprels in pairs:
        n = gold.n
        right = np.asarray(heads[1:]) == gold.heads[1:]
        if deprels is None:
            labelled = False
            lab = np.zeros(n, dtype=bool)
        else:
            lab = right & np.array([p.split(":")[0] == g.split(":")[0] for p, g in zip(deprels[1:], gold.deprels[1:])])
        punct = np.array([u == "PUNCT" for u in gold.upos[1:]])
        words += n
        head_ok += int(right.sum())
        label_ok += int(lab.sum())
        words_np += int((~punct).sum())
        head_ok_np += int((right & ~punct).sum())
        label_ok_np += int((lab & ~punct).sum())
        sentences += 1
        exact += int(right.all())
    pct = lambda a, b: 100.0 * a / b if b else 0.0
    scores = {
        "words": words,
        "sentences": sentences,
        "uas": pct(head_ok, words),
        "uas_nopunct": pct(head_ok_np, words_np),
        "exact_match": pct(exact, sentences),
    }
    if labelled:
        scores["las"] = pct(label_ok, words)
        scores["las_nopunct"] = pct(label_ok_np, words_np)
    return scores
