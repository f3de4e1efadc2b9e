"""The pruner kind: a first-order model whose arc marginals decide which arcs a
second-order parser may use. It predicts no column of its own in a pipeline: the
parser after it asks it for each sentence's arcs ("arcs")."""
from __future__ import annotations

import numpy as np

from ..component import Component
from ..evaluate import attachment_scores, pruning_scores
from ..sentence import Sentence


class Pruner(Component):
    kind = "pruner"
    structures = ("arborist.Pruner.v1",)
    reads = ("form", "lemma", "upos", "xpos")
    writes = ("arcs",)
    score_key = "dev_uas"

    def allowed(self, sentence: Sentence) -> np.ndarray:
        """(n+1, n+1) bool: the arcs kept for this sentence (none for an empty one)."""
        if sentence.n == 0:
            return np.zeros((1, 1), dtype=bool)
        return self.structure.allowed(sentence, self.weights)

    def predict(self, x):
        if x.n == 0:  # its tree: the root's slot alone
            return np.full(1, -1, dtype=np.int32)
        return super().predict(x)

    def annotate(self, batch):
        return None  # the second-order parser runs it, on the sentences it parses

    def score(self, gold, parsed, unseen=None) -> dict:
        """Its own trees' attachment, and what it keeps for a second-order parser."""
        inputs = [p.sentence for p in parsed]
        return (attachment_scores((g, self.predict(x), None) for g, x in zip(gold, inputs))
                | pruning_scores((g, self.allowed(x)) for g, x in zip(gold, inputs)))
