"""DependencyTree: first-order trees, projective or not, behind the Structure protocol.

Parts are arcs: an (n+1, n+1) array indexed [head, modifier]; column 0 (arcs
into the root) and the diagonal are not parts and are always 0. A label is a
heads array (int32, n+1) with heads[0] = -1.

Projective trees are decoded by Eisner's algorithm and their marginals come from
inside-outside (`eisner`); non-projective trees by Chu-Liu-Edmonds and the
matrix-tree theorem (`mst`). `projective="auto"` decides at `initialize` from the
training treebank: non-projective when at least `AUTO_NONPROJECTIVE_SHARE` of its
sentences are non-projective (the threshold is set from the dev measurements in the
README, "Projective or not").

`prune_distances = true` (TurboParser's distance pruning) learns at `initialize`, for
every (head UPOS, modifier UPOS, direction), the longest arc of the training trees
(tagged as the parser is trained on them); when parsing, a longer arc gets the score -inf
and the batch kernel does not score it: about 40% of en_ewt's arcs. Arcs from the root,
arcs between neighbours and arcs touching a UPOS unseen in training are always kept, so
a projective single-root tree always remains. Training scores every arc, as without
pruning (`scores`): on en_ewt, pruning while training too cost 0.19 dev UAS (two seeds),
pruning only when parsing nothing (README, "Models and configs").
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..sentence import UPOS, Sentence, SentenceBatch
from ..strings import hash_strings
from ..structure import take_positions
from .eisner import eisner_argmax, eisner_marginals
from .features import DEFAULT_TEMPLATES, ArcFeatures, distance_kept
from .mst import mst_argmax, mst_marginals

# Measured (README, "Projective or not"): with the same trainer, non-projective decoding
# gained dev UAS on el_gdt (10.9% of training sentences non-projective) and hu_szeged
# (19.4%), tied on tr_imst (4.9%) and lost on en_ewt (2.2%) and it_partut (2.1%).
AUTO_NONPROJECTIVE_SHARE = 0.08


def is_projective(heads) -> bool:
    """Whether a tree (heads[0] = -1) has no crossing arcs, the arc from the root included."""
    heads = np.asarray(heads)
    m = np.arange(1, len(heads))
    lo, hi = np.minimum(heads[1:], m), np.maximum(heads[1:], m)
    # arcs a, b cross when lo_a < lo_b < hi_a < hi_b
    crossing = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return not crossing.any()


def lift_to_projective(heads) -> np.ndarray:
    """The projective tree that lifting gives (Nivre and Nilsson 2005, without the label
    encoding): while some arc h -> d is non-projective (a word between h and d is not a
    descendant of h), the shortest such arc, the leftmost of equal ones, becomes head(h) ->
    d. Each lift moves an arc to an ancestor, so it ends (arcs from the root are projective).
    A projective tree comes back unchanged."""
    heads = np.array(heads, dtype=np.int32)
    n = len(heads) - 1

    def descends(k: int, h: int) -> bool:
        while k > 0 and k != h:
            k = int(heads[k])
        return k == h

    while True:
        shortest = None
        for d in range(1, n + 1):
            h = int(heads[d])
            lo, hi = min(h, d), max(h, d)
            if (shortest is None or hi - lo < shortest[0]) and not all(descends(k, h) for k in range(lo + 1, hi)):
                shortest = (hi - lo, d)
        if shortest is None:
            return heads
        d = shortest[1]
        heads[d] = heads[heads[d]]


def nonprojective_share(sentences) -> float:
    """The share of sentences whose gold tree is not projective."""
    flags = [not is_projective(x.heads) for x in sentences]
    return sum(flags) / len(flags) if flags else 0.0


class DependencyTree:
    name = "tree"
    order = 1

    def __init__(self, templates: Sequence[str] = DEFAULT_TEMPLATES, hash_bits: int = 22, single_root: bool = True,
                 projective: bool | str = True, prune_distances: bool = False, max_distances: dict | None = None,
                 distance_features: str = "fine", lift_nonprojective: bool = False):
        if projective not in (True, False, "auto"):
            raise ValueError(f"projective must be true, false or \"auto\", got {projective!r}")
        self.features = ArcFeatures(templates, hash_bits, distance_features)
        self.single_root = bool(single_root)
        self.projective = projective
        # A projective parser cannot predict a non-projective training tree; with this it
        # trains on the tree's lift (`training_tree`) instead of the tree itself.
        self.lift_nonprojective = bool(lift_nonprojective)
        self.prune_distances = bool(prune_distances)
        if max_distances is not None and not self.prune_distances:
            raise ValueError("max_distances needs prune_distances = true")
        self.max_distances = None  # {"upos": [...], "left": K x K, "right": K x K}, learned by initialize
        self._distance_tables = None  # (sorted UPOS hashes, (2, K, K) int32 [right?, head, modifier])
        if max_distances is not None:
            self._set_max_distances(max_distances)

    @property
    def hash_bits(self) -> int:
        return self.features.bits

    def registry_call(self) -> dict:
        """The registry call that rebuilds this structure (`arborist.registry.make_structure`),
        with what training decided (projective, when it was "auto")."""
        call = {
            "@structures": "arborist.DependencyTree.v1",
            "templates": list(self.features.templates),
            "hash_bits": self.features.bits,
            "single_root": self.single_root,
            "projective": self.projective,
        }
        if self.features.coarse:  # v1 is the fine layout: models saved as before stay comparable
            call["@structures"] = "arborist.DependencyTree.v2"
            call["distance_features"] = "coarse"
        if self.lift_nonprojective:
            call["lift_nonprojective"] = True
        if self.prune_distances:
            call["prune_distances"] = True
            if self.max_distances is not None:
                call["max_distances"] = self.max_distances
        return call

    # -- distance pruning -----------------------------------------------------
    def _set_max_distances(self, table: dict) -> None:
        try:
            tags = [str(t) for t in table["upos"]]
            left = np.array(table["left"], dtype=np.int32).reshape(len(tags), len(tags))
            right = np.array(table["right"], dtype=np.int32).reshape(len(tags), len(tags))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"max_distances must hold upos (K tags), left and right (K x K ints): {e}") from None
        if len(set(tags)) != len(tags):
            raise ValueError("max_distances: repeated UPOS tags")
        self.max_distances = {"upos": tags, "left": left.tolist(), "right": right.tolist()}
        hashes = hash_strings(tags)
        order = np.argsort(hashes)
        # [0]: modifier left of its head, [1]: right of it; rows and columns in hash order
        maxima = np.stack([left, right])[:, order][:, :, order]
        self._distance_tables = (np.ascontiguousarray(hashes[order]), np.ascontiguousarray(maxima, dtype=np.int32))

    def learn_max_distances(self, sentences) -> None:
        """The longest training arc of each (head UPOS, modifier UPOS, direction)."""
        tags: dict[str, int] = {}
        arcs = []  # (head tag, modifier tag, modifier right of head, distance)
        for x in sentences:
            upos = _upos_strings(x)
            heads = np.asarray(x.heads)
            for m in range(1, x.n + 1):
                h = int(heads[m])
                if h <= 0:
                    continue
                arcs.append((tags.setdefault(upos[h], len(tags)), tags.setdefault(upos[m], len(tags)), m > h, abs(h - m)))
        K = len(tags)
        maxima = np.zeros((2, K, K), dtype=np.int64)
        for th, tm, right, d in arcs:
            maxima[int(right), th, tm] = max(maxima[int(right), th, tm], d)
        self._set_max_distances({"upos": list(tags), "left": maxima[0].tolist(), "right": maxima[1].tolist()})

    def kept_arcs(self, x: Sentence) -> np.ndarray | None:
        """(n+1, n+1) bool, the arcs distance pruning keeps (None: pruning is off)."""
        if not self.prune_distances:
            return None
        if self._distance_tables is None:
            raise ValueError("prune_distances learns its table in initialize(training sentences); call it first")
        return distance_kept(np.ascontiguousarray(x.attrs, dtype=np.uint64), *self._distance_tables)

    def _decoder(self):
        if self.projective == "auto":
            raise ValueError('projective = "auto" is decided by initialize(training sentences); call it first')
        return (eisner_argmax, eisner_marginals) if self.projective else (mst_argmax, mst_marginals)

    # -- the protocol -------------------------------------------------------
    # An executor with one thread that scores half of each sentence's heads (`ArcFeatures.score`);
    # set only for the span of a training epoch by `scoring_threads`, never saved.
    score_helper = None

    def scores(self, x: Sentence, w) -> np.ndarray:
        return self.features.score(x, w.array, helper=self.score_helper)

    def pruned(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        """The scores parsing uses: with prune_distances, -inf on the arcs it drops (a copy)."""
        keep = self.kept_arcs(x)
        if keep is None:
            return scores
        drop = ~keep
        drop[:, 0] = False  # column 0 and the diagonal are not parts: they stay as they are
        drop[np.arange(x.n + 1), np.arange(x.n + 1)] = False
        out = np.array(scores, dtype=float, copy=True)
        out[drop] = -np.inf
        return out

    def argmax(self, x: Sentence, scores: np.ndarray) -> np.ndarray:
        return self._decoder()[0](scores, self.single_root)[0]

    def predict_batch(self, batch: SentenceBatch, w) -> np.ndarray | None:
        """The argmax trees of every sentence of the batch (heads in the batch's columns),
        computed without the GIL (`ArcFeatures.parse_many`); None for non-projective and
        second-order decoding, which have no batch kernel."""
        if not self.has_batch_kernel:
            return None
        return self.features.parse_many(batch.attrs, batch.starts, w.array, self.single_root, *self._pruning())

    def marginals_batch(self, batch: SentenceBatch, w, temperature: float = 1.0):
        """`predict_batch`'s trees and each word's head distribution at `temperature` (the arc
        marginals of the pruned scores / T), computed in the same region without the GIL
        (`ArcFeatures.marginals_many`: heads, probs, offsets); None where `predict_batch` is."""
        if not self.has_batch_kernel:
            return None
        return self.features.marginals_many(batch.attrs, batch.starts, w.array, self.single_root, *self._pruning(),
                                            temperature=temperature)

    @property
    def has_batch_kernel(self) -> bool:
        """First-order projective decoding: `parse_many` and `marginals_many`."""
        return self.order == 1 and self._decoder()[0] is eisner_argmax

    def _pruning(self) -> tuple:
        """The batch kernels' distance-pruning arguments (none when it is off)."""
        if not self.prune_distances:
            return ()
        if self._distance_tables is None:
            raise ValueError("prune_distances learns its table in initialize(training sentences); call it first")
        hashes, maxima = self._distance_tables
        # an empty table (no training arc between words) keeps every arc
        return (hashes, maxima) if len(hashes) else ()

    def cost_augmented_argmax(self, x: Sentence, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: Sentence, scores: np.ndarray) -> tuple[np.ndarray, float]:
        decode = self._decoder()[1]
        if decode is mst_marginals and np.isneginf(scores).any():
            # Pruned scores (`pruned`): the matrix-tree theorem wants finite ones, so a pruned
            # arc gets its column's best score minus 400. Its weight, below e^-400 = 1e-174 of
            # that arc's, changes no marginal in double precision, and the column stays within
            # mst.LINEAR_RANGE (500) when its kept scores do, so the fast linear domain applies.
            finite = np.isfinite(scores)
            arcs = np.where(finite, scores, -np.inf)
            np.fill_diagonal(arcs, -np.inf)  # not arcs
            best = arcs.max(axis=0)
            scores = np.where(finite, scores, np.where(np.isfinite(best), best, 0.0)[None, :] - 400.0)
        return decode(scores, self.single_root)

    def indicator(self, x: Sentence, y: np.ndarray) -> np.ndarray:
        n = len(y) - 1
        out = np.zeros((n + 1, n + 1))
        out[y[1:], np.arange(1, n + 1)] = 1.0
        return out

    def part_cost(self, x: Sentence, gold: np.ndarray) -> np.ndarray:
        n = len(gold) - 1
        cost = 1.0 - self.indicator(x, gold)
        cost[:, 0] = 0.0
        cost[np.arange(n + 1), np.arange(n + 1)] = 0.0
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        self.features.add(x, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # A position is a word; taking pred there means taking its predicted head.
        return take_positions(gold, pred, positions)

    def gold(self, x: Sentence) -> np.ndarray:
        return x.heads

    def training_tree(self, x: Sentence) -> Sentence:
        """x as training sees it: with lift_nonprojective, a projective structure gets the
        lift of a non-projective gold tree (`lift_to_projective`); x itself otherwise."""
        if not self.lift_nonprojective or self.projective is not True or is_projective(x.heads):
            return x
        return replace(x, heads=lift_to_projective(x.heads))

    def hits(self, x: Sentence, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold[1:]) == np.asarray(pred[1:])).sum()), len(gold) - 1

    def initialize(self, sentences) -> None:
        """Resolves projective = "auto" from the training trees and, with prune_distances,
        learns the distance table (the feature space is hashed, so there is nothing else to
        learn before training)."""
        sentences = list(sentences)
        if self.projective == "auto":
            self.projective = nonprojective_share(sentences) < AUTO_NONPROJECTIVE_SHARE
        if self.prune_distances and self.max_distances is None:
            self.learn_max_distances(sentences)


def _upos_strings(x: Sentence) -> list[str]:
    """x's UPOS strings, the root's first, checked against the hashes the kernels read."""
    upos = list(x.upos)
    if len(upos) != x.n + 1 or not np.array_equal(hash_strings(upos[1:]), x.attrs[UPOS, 1:]):
        raise ValueError(f"{x.source}:{x.first_line}: the sentence's UPOS strings and hashes differ")
    return upos
