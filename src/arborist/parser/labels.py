"""ArcLabels: the relation label (DEPREL) of every arc of a given tree, behind the Structure protocol.

The second stage of a labeled parser (McDonald, Lerman and Pereira 2006): the parser
predicts the heads, then each arc (heads[m], m) gets one label out of K by a
multiclass model whose features see the whole tree (`label_features`: head,
modifier, grandparent, the head's other dependents, the modifier's dependents). The
arcs' labels are independent given the tree, so a sentence is a product of n
multiclass problems (`arborist.multiclass.Multiclass`, one per word) sharing one
weight vector, batched so that one trainer step handles a sentence:

  parts    (n+1, K) float64; row m holds word m's K classes, row 0 (the root) is 0
  label    int32 (n+1,) of label indices, label[0] = -1
  argmax   each word's best class; marginals the per-word softmax, log Z the sum of
           the per-word normalizers; Hamming cost 1 per wrongly labeled word

The tree is the example's own `heads`: gold heads in training, the parser's
prediction at parse time (`Labeler.labels`). Labels are full DEPREL strings with
their subtypes (`nmod:poss`), taken from the training data by `initialize`.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from scipy.special import logsumexp

from ..sentence import Sentence, SentenceBatch
from ..structure import take_positions
from .label_features import DEFAULT_LABEL_TEMPLATES, LabelFeatures

MISSING = "_"
ROOT_LABEL = "root"  # UD's label of the arc from the root


class ArcLabels:
    name = "labels"

    def __init__(self, labels: Sequence[str] | None = None, hash_bits: int = 22,
                 templates: Sequence[str] | None = None):
        """`labels=None` leaves the label set to `initialize` (read from the training data)."""
        self.features = LabelFeatures(DEFAULT_LABEL_TEMPLATES if templates is None else templates, hash_bits)
        self.labels: tuple[str, ...] = ()
        self.label_ids: dict[str, int] = {}
        if labels is not None:
            self._set_labels(labels)

    def _set_labels(self, labels: Sequence[str]) -> None:
        labels = tuple(labels)
        if not labels:
            raise ValueError("the labeler needs at least one label")
        if len(set(labels)) != len(labels):
            raise ValueError(f"duplicate labels: {', '.join(sorted({l for l in labels if labels.count(l) > 1}))}")
        self.labels = labels
        self.label_ids = {label: i for i, label in enumerate(labels)}
        # UD's tree constraint on labels, applied when predicting: `root` if and only if HEAD is 0
        # (-1: the label set has no `root`, nothing to constrain).
        self.root = self.label_ids.get(ROOT_LABEL, -1) if len(labels) > 1 else -1

    def initialize(self, sentences: Iterable[Sentence]) -> None:
        """Take the label set (sorted; '_', a missing label, is not one) from the training
        sentences, unless the structure was given its labels."""
        if self.labels:
            return
        labels: set[str] = set()
        for x in sentences:
            labels.update(x.deprels[1:])
        labels.discard(MISSING)
        if not labels:
            raise ValueError("no DEPREL labels in the training sentences (every DEPREL is '_')")
        self._set_labels(sorted(labels))

    @property
    def hash_bits(self) -> int:
        return self.features.bits

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    def registry_call(self) -> dict:
        """The registry call that rebuilds this structure, its learned label set included."""
        return {"@structures": "arborist.ArcLabels.v1", "labels": list(self.labels), "hash_bits": self.hash_bits,
                "templates": list(self.features.templates)}

    def label_names(self, label) -> list[str]:
        """DEPREL strings of a label array: '' for the root, then one per word."""
        return [""] + [self.labels[k] for k in label[1:]]

    # -- the protocol -------------------------------------------------------
    def scores(self, x: Sentence, w) -> np.ndarray:
        if not self.labels:
            raise ValueError("the labeler has no labels yet: call initialize(training sentences) first")
        keys, offsets = self.features.keys(x, x.heads)
        return self.features.score(keys, offsets, w.array, self.n_labels)

    def predict_batch(self, batch: SentenceBatch, w) -> np.ndarray:
        """The argmax labels of the arcs of every tree of the batch (its `heads`), in the
        batch's columns (-1 at roots), computed without the GIL (`LabelFeatures.label_many`)."""
        if not self.labels:
            raise ValueError("the labeler has no labels yet: call initialize(training sentences) first")
        return self.features.label_many(batch.attrs, batch.starts, batch.heads, w.array, self.n_labels, self.root)

    def marginals_batch(self, batch: SentenceBatch, w, temperature: float = 1.0):
        """`predict_batch`'s labels and each word's label distribution given its arc at
        `temperature` ((columns, labels), a zero row at each root), in the same region without
        the GIL (`LabelFeatures.label_marginals_many`)."""
        if not self.labels:
            raise ValueError("the labeler has no labels yet: call initialize(training sentences) first")
        return self.features.label_marginals_many(batch.attrs, batch.starts, batch.heads, w.array, self.n_labels,
                                                  self.root, temperature)

    def constrained_argmax(self, x, scores: np.ndarray) -> np.ndarray:
        """`argmax` under the tree's constraint (see `root`): what a labeler predicts; trainers
        see the unconstrained structure."""
        out = self.argmax(x, scores)
        if self.root >= 0:
            heads = np.asarray(x.heads)
            allowed = np.array(scores[1:], dtype=np.float64, copy=True)
            allowed[:, self.root] = -np.inf
            out[1:] = np.where(heads[1:] == 0, self.root, np.argmax(allowed, axis=1))
        return out

    def argmax(self, x, scores: np.ndarray) -> np.ndarray:
        out = np.argmax(scores, axis=1).astype(np.int32)
        out[0] = -1
        return out

    def cost_augmented_argmax(self, x, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x, scores: np.ndarray) -> tuple[np.ndarray, float]:
        words = scores[1:]
        norms = logsumexp(words, axis=1)
        mu = np.zeros_like(scores, dtype=np.float64)
        mu[1:] = np.exp(words - norms[:, None])
        return mu, float(norms.sum())

    def indicator(self, x, y: np.ndarray) -> np.ndarray:
        out = np.zeros((len(y), self.n_labels))
        out[np.arange(1, len(y)), y[1:]] = 1.0
        return out

    def part_cost(self, x, gold: np.ndarray) -> np.ndarray:
        cost = 1.0 - self.indicator(x, gold)
        cost[0] = 0.0
        return cost

    def add_features(self, x: Sentence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (x.n + 1, self.n_labels):
            raise ValueError(f"coefficients must have shape ({x.n + 1}, {self.n_labels}), got {coef.shape}")
        keys, offsets = self.features.keys(x, x.heads)
        self.features.add(keys, offsets, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        # A position is a word; taking pred there means taking its predicted label.
        return take_positions(gold, pred, positions)

    def gold(self, x: Sentence) -> np.ndarray:
        out = np.full(x.n + 1, -1, dtype=np.int32)
        for m in range(1, x.n + 1):
            k = self.label_ids.get(x.deprels[m])
            if k is None:
                raise ValueError(
                    f"{x.source}:{x.first_line}: DEPREL {x.deprels[m]!r} of word {m} ({x.forms[m]!r}) is not one "
                    f"of the labeler's {self.n_labels} labels" + (" (the label is missing)"
                                                                   if x.deprels[m] == MISSING else "")
                )
            out[m] = k
        return out

    def hits(self, x, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold[1:]) == np.asarray(pred[1:])).sum()), len(gold) - 1
