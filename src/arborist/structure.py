"""The Structure protocol: what a trainer may ask of a structured label space.

Trainers (perceptron, EG, MaxEnDNet) see only these operations, so every trainer
trains trees, chains and labels alike. `Parts` are numpy arrays over the
structure's parts; arithmetic on them is element-wise. With
`indicator`, everything else a trainer needs is arithmetic on parts:

    score(y) = (scores * indicator(x, y)).sum()
    loss(y)  = (part_cost(x, gold) * indicator(x, y)).sum()
    perceptron update: add_features(x, indicator(x, gold) - indicator(x, pred), w, 1)

Prediction only (not part of the protocol, never used by trainers): a structure may
also have `predict_batch(batch, w)`, the argmax labels of every sentence of a
`SentenceBatch` concatenated, computed by one kernel call without the GIL, or None
when its configuration has no such kernel; `Component.predict_batch` falls back to
`argmax(x, scores(x, w))` one sentence at a time.
"""
from __future__ import annotations

import contextlib

from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

# A numpy array over the structure's parts. A structure with several part types
# (arcs and siblings of a second-order tree) packs them into one array and hands
# out views, so trainers do plain element-wise arithmetic on a single array: EG
# keeps theta_i in exactly this shape.
Parts = Any
Label = Any


@runtime_checkable
class Structure(Protocol):
    def scores(self, x, w) -> Parts:
        """w . phi(x, r) for every part r (w: a Weights object)."""

    def argmax(self, x, scores: Parts) -> Label:
        """The highest-scoring label (Eisner, Viterbi, max)."""

    def cost_augmented_argmax(self, x, scores: Parts, gold: Label) -> Label:
        """argmax of scores + part_cost(x, gold)."""

    def marginals(self, x, scores: Parts) -> tuple[Parts, float]:
        """mu_r = P(r in y) under p(y) ~ exp(score(y)), and log Z."""

    def indicator(self, x, y: Label) -> Parts:
        """1 for the parts of label y, 0 elsewhere."""

    def part_cost(self, x, gold: Label) -> Parts:
        """e_r: the Hamming loss spread over parts, loss(y) = sum_r e_r [r in y]."""

    def add_features(self, x, coef: Parts, w, scale: float) -> None:
        """w += scale * sum_r coef_r * phi(x, r)."""

    def mix(self, gold: Label, pred: Label, positions: Sequence[int]) -> Label:
        """The label that takes pred at `positions` and gold elsewhere (SWVP's m^J).
        A label is an array and a position an index into it (`differing_positions`)."""

    def gold(self, x) -> Label:
        """The gold label stored with example x."""

    def hits(self, x, gold: Label, pred: Label) -> tuple[int, int]:
        """(positions pred gets right, positions): words with the right head, tokens with
        the right tag. positions - hits is the Hamming loss of pred."""


def differing_positions(gold: Label, pred: Label) -> np.ndarray:
    """The positions (indices into the label array, as `mix` takes them) where pred differs
    from gold: SWVP's single-difference substructures."""
    return np.flatnonzero(np.asarray(gold) != np.asarray(pred))


def take_positions(gold: Label, pred: Label, positions: Sequence[int]) -> np.ndarray:
    """`mix` for a label that is one array: a copy of gold with pred's values at `positions`."""
    out = np.array(gold, dtype=np.int32, copy=True)
    idx = np.asarray(positions, dtype=np.intp)
    out[idx] = np.asarray(pred)[idx]
    return out


@contextlib.contextmanager
def scoring_threads(structure, threads: int):
    """Within the block, a structure that can split one example's work in two threads does
    so when `threads` > 1: a first-order `DependencyTree` scores half of the heads in an
    executor's thread (`score_helper`); a second-order tree scores part of its parts in a
    `Helper` (`part_helper`; its adds stay in one thread). The same scores and the same
    weights, so the same training, faster with a second core. The helper thread ends with
    the block (so nothing that copies or pickles the structure meets it)."""
    if threads < 2 or not (hasattr(structure, "score_helper") or hasattr(structure, "part_helper")):
        yield
        return
    if hasattr(structure, "part_helper"):
        from .helper import Helper

        attribute, helper = "part_helper", Helper()
    else:
        from concurrent.futures import ThreadPoolExecutor

        attribute, helper = "score_helper", ThreadPoolExecutor(1, thread_name_prefix="score-helper")
    with helper:
        setattr(structure, attribute, helper)
        try:
            yield
        finally:
            delattr(structure, attribute)  # back to the class's None
