"""Second-order trees behind the Structure protocol, and the first-order pruner whose
arc marginals decide which arcs they may use.

`SecondOrderTree` (`DependencyTree` with `order = 2`) has four part types: arcs,
sibling parts (h, s, m), stop parts (h, s, STOP: s is h's outermost child on a side,
or h itself; TurboParser's last-child siblings, scored by the sibling templates) and
grandparent parts (g, h, m); `parts` selects the second-order ones. A sentence's parts
are numbered by a `SecondOrderLayout` built from its allowed arcs, and Parts are one
flat array (arcs, then siblings, then stops, then grandparents), so every trainer
handles them as it handles first-order arc matrices. A label is a heads array, as for
first-order trees.

Exact second-order decoding is projective (`second_order_eisner`). With `projective =
false` the argmax is approximate and non-projective, as in McDonald and Pereira (2006):
the projective argmax, then greedy single head changes while the score rises
(`second_order_hill_climb`); non-projective second-order decoding is NP-hard. Marginals
(CRF, EG, confidences) stay those of projective trees, which is also what McDonald and
Pereira's training used. `projective = "auto"` decides at `initialize` from the training
trees, as for first-order trees.

`ArcPruner` (registered as `arborist.Pruner.v1`, a pipeline component of kind
"pruner") is a first-order tree whose `allowed` keeps, for each word, the heads
whose marginal is at least `threshold` times the word's best head's, at most
`max_heads` of them, plus the arcs of its own best projective tree (so a projective
single-root tree always remains). A non-projective pruner (`projective = false`, for a
hill-climbing parser) takes the marginals of the matrix-tree theorem, which do not
starve crossing arcs as projective marginals do, and keeps its best non-projective
tree's arcs too. Training sentences also keep their gold arcs
(`SecondOrderTree.example`), so the gold tree's parts exist for every update.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..sentence import Sentence
from .eisner import eisner_argmax, eisner_marginals
from .mst import mst_argmax
from .second_order_eisner import (SecondOrderLayout, prune, second_order_argmax, second_order_hill_climb,
                                  second_order_marginals)
from .part_features import DEFAULT_GRANDPARENT_TEMPLATES, DEFAULT_SIBLING_TEMPLATES, PartFeatures, PartSweeps
from .tree import DependencyTree

PART_TYPES = ("sibling", "grandparent", "stop")
# the parts of a second-order parser that does not name them (every model saved before
# stop parts existed names its parts)
DEFAULT_PARTS = ("sibling", "grandparent")
# An arc costs about as much to score as 4 parts (en_ewt dev, 2**24, a sentence: 51 µs for
# its 59 arcs, 144 µs for its 610 parts): the share of the parts the scoring helper takes
# counts this thread's arcs so (`PartSweeps.start`'s lead).
ARC_PART_COST = 4

# The pruner's arc templates: the unigram, bigram and surrounding-POS templates of the
# first-order set, without the lexical conjunctions that make full scoring expensive.
PRUNER_TEMPLATES = (
    "h.form h.xpos", "h.xpos", "h.upos", "h.form", "m.form m.xpos", "m.xpos", "m.upos", "m.form",
    "h.xpos m.xpos", "h.upos m.upos", "h.form m.xpos", "h.xpos m.form", "h.form m.form", "h.lemma m.lemma",
    "h.xpos h+1.xpos m-1.xpos m.xpos", "h-1.xpos h.xpos m-1.xpos m.xpos",
    "h.xpos h+1.xpos m.xpos m+1.xpos", "h-1.xpos h.xpos m.xpos m+1.xpos",
    "between.xpos",
)


class ArcPruner(DependencyTree):
    """A first-order tree model used for its arc marginals (projective by default)."""

    name = "pruner"

    def __init__(self, templates: Sequence[str] = PRUNER_TEMPLATES, hash_bits: int = 22, single_root: bool = True,
                 threshold: float = 1e-4, max_heads: int = 10, projective: bool | str = True):
        super().__init__(templates, hash_bits, single_root, projective=projective)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"pruner threshold must be in [0, 1], got {threshold}")
        if max_heads < 1:
            raise ValueError(f"pruner max_heads must be >= 1, got {max_heads}")
        self.threshold, self.max_heads = float(threshold), int(max_heads)

    def registry_call(self) -> dict:
        return {"@structures": "arborist.Pruner.v1", "templates": list(self.features.templates),
                "hash_bits": self.features.bits, "single_root": self.single_root, "threshold": self.threshold,
                "max_heads": self.max_heads, "projective": self.projective}

    def allowed(self, x: Sentence, w) -> np.ndarray:
        """The arcs a second-order parser may use in x (weights w)."""
        scores = self.scores(x, w)
        marginals, _ = self.marginals(x, scores)
        best_tree, _ = eisner_argmax(scores, self.single_root)
        allowed = prune(marginals, best_tree, self.threshold, self.max_heads)
        if not self.projective:
            best_tree = mst_argmax(scores, self.single_root)[0]
            allowed[best_tree[1:], np.arange(1, x.n + 1)] = True
        return allowed


class PrunedSentence:
    """A sentence and the parts a second-order parser may use in it: what every trainer and
    decoder is given instead of the bare sentence (`SecondOrderTree.example`). The
    attributes the feature kernels read (attrs, heads, n) are the sentence's."""

    __slots__ = ("sentence", "layout", "parts", "pruned_gold")

    def __init__(self, sentence: Sentence, layout: SecondOrderLayout, parts: tuple, pruned_gold: int = 0):
        self.sentence = sentence
        self.layout = layout
        self.parts = parts  # (arcs, siblings, stops, grandparents): index tables, built once; None if unused
        self.pruned_gold = pruned_gold  # gold arcs the pruner dropped (added back for training)

    def __getattr__(self, name):
        return getattr(self.sentence, name)


class SecondOrderTree(DependencyTree):
    """Trees with arc, sibling, stop and grandparent parts: projective, or approximately
    non-projective by hill climbing (see the module docstring)."""

    order = 2

    def __init__(self, templates: Sequence[str], hash_bits: int = 22, single_root: bool = True,
                 projective: bool | str = True, parts: Sequence[str] = DEFAULT_PARTS,
                 sibling_templates: Sequence[str] = DEFAULT_SIBLING_TEMPLATES,
                 grandparent_templates: Sequence[str] = DEFAULT_GRANDPARENT_TEMPLATES, distance_features: str = "fine",
                 lift_nonprojective: bool = False):
        super().__init__(templates, hash_bits, single_root, projective=projective, distance_features=distance_features,
                         lift_nonprojective=lift_nonprojective)
        parts = tuple(parts)
        if not parts or any(p not in PART_TYPES for p in parts) or len(set(parts)) != len(parts):
            raise ValueError(f"parts must be a non-empty list of {', '.join(PART_TYPES)}, got {list(parts)}")
        self.parts = tuple(p for p in PART_TYPES if p in parts)
        self.part_features = PartFeatures(sibling_templates, grandparent_templates, hash_bits)

    def registry_call(self) -> dict:
        return {**super().registry_call(), "order": 2, "parts": list(self.parts),
                "sibling_templates": list(self.part_features.sibling.templates),
                "grandparent_templates": list(self.part_features.grandparent.templates)}

    # -- examples -----------------------------------------------------------------
    def example(self, x: Sentence, allowed: np.ndarray | None = None, keep_gold: bool = False) -> "PrunedSentence":
        """x with the parts this structure may use: the arcs of `allowed` ((n+1, n+1) bool;
        None: every arc, exact but O(n^4)), plus x's gold arcs with `keep_gold` (a training
        sentence, so that the gold tree's parts exist for every update)."""
        if isinstance(x, PrunedSentence):
            x = x.sentence
        allowed = np.ones((x.n + 1, x.n + 1), dtype=bool) if allowed is None else np.array(allowed, dtype=bool)
        pruned_gold = 0
        if keep_gold:
            gold = (x.heads[1:], np.arange(1, x.n + 1))
            pruned_gold = int((~allowed[gold]).sum())
            allowed[gold] = True
        layout = SecondOrderLayout(allowed, "sibling" in self.parts, "grandparent" in self.parts, "stop" in self.parts)
        # only the tables of the part types in use (None for the others)
        tables = (layout.arcs, layout.siblings if layout.sibling else None, layout.stops if layout.stop else None,
                  layout.grandparents if layout.grandparent else None)
        return PrunedSentence(x, layout, tables, pruned_gold)

    def _parts(self, x: Sentence) -> tuple:
        """(layout, arcs, siblings, stops, grandparents) of an example; a plain sentence allows every arc."""
        if not isinstance(x, PrunedSentence):
            x = self.example(x)
        return (x.layout,) + x.parts

    # -- the protocol ---------------------------------------------------------------
    # A `Helper` thread that scores part of each sentence's parts (`PartSweeps.start`): set
    # only for the span of a training epoch by `scoring_threads`, never saved.
    part_helper = None

    def _part_groups(self, x) -> tuple:
        """(layout, arcs, [(parts, kind)] of the part types in use in the order of the scores,
        [slice of each group in the scores])."""
        layout, arcs, siblings, stops, grandparents = self._parts(x)
        groups, slices = [], []
        if layout.sibling:
            groups.append((siblings, "sibling"))
            slices.append(slice(layout.sibling_offset, layout.sibling_offset + layout.n_sibling_slots))
        if layout.stop:
            groups.append((stops, "sibling"))
            slices.append(slice(layout.stop_offset, layout.stop_offset + layout.n_stop_slots))
        if layout.grandparent:
            groups.append((grandparents, "grandparent"))
            slices.append(slice(layout.grand_offset, layout.grand_offset + layout.n_grand_slots))
        return layout, arcs, groups, slices

    def scores(self, x: Sentence, w) -> np.ndarray:
        layout, arcs, groups, _ = self._part_groups(x)
        sweeps = PartSweeps(self.part_features, x, groups, w=w.array)
        if self.part_helper is None:
            parts = sweeps.run()
            arc_scores = self.features.score(x, w.array, layout.allowed)[arcs[:, 0], arcs[:, 1]]
        else:  # the helper scores its parts while this thread scores the arcs and the rest
            sweeps.start(self.part_helper, ARC_PART_COST * len(arcs))
            try:
                arc_scores = self.features.score(x, w.array, layout.allowed)[arcs[:, 0], arcs[:, 1]]
            finally:
                parts = sweeps.finish()
        return np.concatenate([arc_scores, *parts])

    def argmax(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        layout = self._parts(x)[0]
        heads = second_order_argmax(layout, scores, self.single_root)[0]
        if self.projective == "auto":
            raise ValueError('projective = "auto" is decided by initialize(training sentences); call it first')
        if not self.projective:
            heads = second_order_hill_climb(layout, scores, heads, self.single_root)[0]
        return heads

    def marginals(self, x: Sentence, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return second_order_marginals(self._parts(x)[0], scores, self.single_root)

    def indicator(self, x: Sentence, y: np.ndarray) -> np.ndarray:
        return self._parts(x)[0].indicator(y)

    def part_cost(self, x: Sentence, gold: np.ndarray) -> np.ndarray:
        layout, arcs = self._parts(x)[:2]
        cost = np.zeros(layout.n_parts)
        cost[: layout.n_arcs] = arcs[:, 0] != np.asarray(gold)[arcs[:, 1]]
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        layout, arcs, groups, slices = self._part_groups(x)
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (layout.n_parts,):
            raise ValueError(f"coefficients must have {layout.n_parts} entries (the sentence's parts), "
                             f"got shape {coef.shape}")
        dense = np.zeros((x.n + 1, x.n + 1))
        dense[arcs[:, 0], arcs[:, 1]] = coef[: layout.n_arcs]
        self.features.add(x, dense, w, scale)
        # in this thread, with or without a helper (see PartSweeps)
        PartSweeps(self.part_features, x, groups, coefficients=[coef[s] for s in slices], target=w,
                   scale=scale).run()
