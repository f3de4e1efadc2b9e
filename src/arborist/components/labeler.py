"""The labeler kind: the DEPREL of each arc of a tree (the parser's, or the input's own)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..component import Component
from ..evaluate import attachment_scores
from ..sentence import Sentence, SentenceBatch


class Labeler(Component):
    """Labels the arcs of a tree with DEPREL strings (the second stage of a labeled parser).
    It trains on gold trees and is scored on the trees of the parser before it."""

    kind = "labeler"
    structures = ("arborist.ArcLabels.v1",)
    reads = ("form", "lemma", "upos", "xpos", "feats", "head")
    writes = ("deprel",)
    score_key = "dev_las"

    @property
    def label_set(self) -> tuple[str, ...]:
        return self.structure.labels

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.structure.labels)

    def labels(self, sentence: Sentence, heads) -> list[str]:
        """The DEPREL of every arc of the tree `heads` (n+1; '' for the root)."""
        tree = replace(sentence, heads=np.asarray(heads, dtype=np.int32))
        return self.structure.label_names(self.predict(tree))

    def decode(self, x, scores):
        """The labels of x's tree, constrained by it: `root` if and only if HEAD is 0."""
        return self.structure.constrained_argmax(x, scores)

    def value(self, batch: SentenceBatch, predicted, i: int) -> list[str]:
        return self.structure.label_names(predicted[int(batch.starts[i]):int(batch.starts[i + 1])])

    def apply(self, sentence: Sentence, value: list[str]) -> Sentence:
        return replace(sentence, deprels=list(value))

    # -- probabilities: the softmax over labels of each arc of the tree it labels, i.e. the
    # probability of the label given the arc (fitted on the dev arcs the parser gets right) --
    confidence_column = "deprel"

    def word_probabilities(self, x, scores) -> np.ndarray:
        # the structure's marginals (a softmax per word), without its log Z, under the tree's
        # constraint on labels: a word attached to the root is `root` with probability 1, any
        # other word never is
        z = np.array(scores[1:], dtype=np.float64, copy=True)
        root = self.structure.root
        if root >= 0:
            attached = np.asarray(x.heads[1:]) == 0
            z[:, root] = -np.inf
            z[attached] = -np.inf
            z[attached, root] = 0.0
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def batch_distributions(self, batch: SentenceBatch):
        """By the batch kernel (`ArcLabels.marginals_batch`), on the batch's tree."""
        labels, probs = self.structure.marginals_batch(batch, self.weights, self.temperature)
        starts = batch.starts
        return labels, [probs[starts[i] + 1:starts[i + 1]] for i in range(batch.n_sentences)]

    def predicted_classes(self, batch: SentenceBatch, predicted, i: int) -> np.ndarray:
        return np.asarray(predicted[int(batch.starts[i]) + 1:int(batch.starts[i + 1])], dtype=np.intp)

    def gold_classes(self, x, gold: Sentence) -> np.ndarray:
        """The gold labels of the arcs of x's tree that are gold arcs (-1 on the others): a
        label's probability is that of the label given its arc, so that the labeled arc's
        is P(head) * P(label)."""
        ids = self.structure.label_ids
        right = np.asarray(x.heads[1:]) == np.asarray(gold.heads[1:])
        return np.array([ids.get(d, -1) if ok else -1 for d, ok in zip(gold.deprels[1:], right)], dtype=np.intp)

    def score(self, gold, parsed, unseen=None) -> dict:
        # the heads it labeled: the parser's when the pipeline has one, else the input's
        return attachment_scores((g, p.heads if p.heads is not None else p.sentence.heads, p.values[self.name])
                                 for g, p in zip(gold, parsed))
