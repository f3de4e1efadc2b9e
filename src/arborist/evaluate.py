"""Attachment scores with the CoNLL 2018 shared task definitions.

Every word counts (punctuation included); LAS compares the universal part of
DEPREL (before ':'), as the shared task does, and LAS_full the whole label with its
subtype (`nmod:poss` against `nmod:tmod` is wrong). The *_nopunct scores leave out words whose gold UPOS is
PUNCT, and exact match is the share of sentences with every head right.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from .sentence import Sentence


def attachment_scores(
    pairs: Iterable[tuple[Sentence, np.ndarray, Sequence[str] | None]],
) -> dict:
    """pairs: (gold sentence, predicted heads (n+1), predicted deprels (n+1) or None)."""
    words = head_ok = label_ok = full_ok = 0
    words_np = head_ok_np = label_ok_np = 0
    sentences = exact = 0
    labelled = True
    for gold, heads, deprels in pairs:
        n = gold.n
        right = np.asarray(heads[1:]) == gold.heads[1:]
        if deprels is None:
            labelled = False
            lab = full = np.zeros(n, dtype=bool)
        else:
            if len(deprels) != n + 1:
                raise ValueError(f"{gold.source}:{gold.first_line}: {len(deprels)} predicted labels for "
                                 f"{n} words and the root")
            labels = list(zip(deprels[1:], gold.deprels[1:]))
            lab = right & np.array([p.split(":")[0] == g.split(":")[0] for p, g in labels], dtype=bool)
            full = right & np.array([p == g for p, g in labels], dtype=bool)
        punct = np.array([u == "PUNCT" for u in gold.upos[1:]])
        words += n
        head_ok += int(right.sum())
        label_ok += int(lab.sum())
        full_ok += int(full.sum())
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
        scores["las_full"] = pct(full_ok, words)
    return scores


def pruning_scores(pairs: Iterable[tuple[Sentence, np.ndarray]]) -> dict:
    """pairs: (gold sentence, allowed arcs (n+1, n+1) bool). The oracle recall of the
    pruned arc sets (share of gold arcs kept, in %) and the heads kept per word."""
    words = kept = allowed_arcs = 0
    for gold, allowed in pairs:
        n = gold.n
        kept += int(allowed[gold.heads[1:], np.arange(1, n + 1)].sum())
        allowed_arcs += int(allowed[:, 1:].sum())
        words += n
    return {"prune_recall": 100.0 * kept / words if words else 0.0,
            "heads_per_word": allowed_arcs / words if words else 0.0}


def tag_scores(pairs: Iterable[tuple[Sentence, dict]], unseen: Callable[[Sentence], np.ndarray] | None = None) -> dict:
    """Tagging accuracy per predicted column, on every word and on words unseen in training.

    pairs: (gold sentence, {"upos": predicted tags (n), "xpos": ...}); `unseen(sentence)`
    marks the words whose form never occurs in the training data (`Pipeline.unseen`).
    Returns {"words", "sentences", "upos", "upos_unseen", "unseen_words", ...} in percent."""
    right: dict[str, int] = {}
    right_unseen: dict[str, int] = {}
    words = unseen_words = sentences = 0
    for gold, predicted in pairs:
        new = unseen(gold) if unseen is not None else np.zeros(gold.n, dtype=bool)
        for attribute, tags in predicted.items():
            gold_tags = gold.upos if attribute == "upos" else gold.xpos
            ok = np.array([p == g for p, g in zip(tags, gold_tags[1:])], dtype=bool)
            right[attribute] = right.get(attribute, 0) + int(ok.sum())
            right_unseen[attribute] = right_unseen.get(attribute, 0) + int(ok[new].sum())
        words += gold.n
        unseen_words += int(new.sum())
        sentences += 1
    scores: dict = {"words": words, "sentences": sentences}
    for attribute in right:
        scores[attribute] = _pct(right[attribute], words)
        if unseen is not None:
            scores[f"{attribute}_unseen"] = _pct(right_unseen[attribute], unseen_words)
    if unseen is not None:
        scores["unseen_words"] = unseen_words
    return scores


def _pct(a: int, b: int) -> float:
    return 100.0 * a / b if b else 0.0
