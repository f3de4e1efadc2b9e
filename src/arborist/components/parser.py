"""The parser kind: HEAD, by a first- or second-order tree structure."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..component import Component
from ..evaluate import attachment_scores
from ..parser.second_order import PrunedSentence
from ..sentence import MAX_SENTENCE_LENGTH, Sentence, SentenceBatch



class LongSentenceWarning(UserWarning):
    """A sentence was parsed in pieces."""


class Parser(Component):
    """A dependency parser: predicts heads (int32, n+1; heads[0] = -1). A second-order
    parser takes the arcs it may use from the pipeline's pruner (the component before it
    that writes "arcs"), found once when it joins the pipeline; without one every arc is
    allowed."""

    kind = "parser"
    structures = ("arborist.DependencyTree.v2", "arborist.DependencyTree.v1")
    writes = ("head",)
    score_key = "dev_uas"
    # Longer sentences are parsed in pieces of this many words (see predict_batch); spaCy's
    # parser component sets its `max_sentence_length` on its own copy of the component.
    max_sentence_length = MAX_SENTENCE_LENGTH

    def __init__(self, structure, weights=None, info=None):
        super().__init__(structure, weights, info)
        self.pruner = None

    @property
    def second_order(self) -> bool:
        return self.structure.order == 2

    @property
    def reads(self) -> tuple[str, ...]:
        return ("form", "lemma", "upos", "xpos", "feats") + (("arcs",) if self.second_order else ())

    def link(self, upstream) -> None:
        if self.second_order:
            self.pruner = next((c for c in upstream if "arcs" in c.writes), None)

    def examples(self, sentences, training: bool = False) -> list:
        """Second order: each sentence with its pruned parts (training sentences keep their gold
        arcs). Training sentences are the structure's `training_tree`s (lifted with
        lift_nonprojective)."""
        if training:
            sentences = [self.structure.training_tree(x) for x in sentences]
        if not self.second_order:
            return list(sentences)
        return [self.structure.example(x, self.pruner.allowed(x) if self.pruner is not None else None,
                                       keep_gold=training) for x in sentences]

    def training_report(self, examples: list) -> str | None:
        lines = []
        if self.second_order:
            if self.pruner is None:
                lines.append(f"{self.name}: second order without a pruner: every arc is allowed (slow on long "
                             "sentences; add a [components.pruner] with arborist.Pruner.v1)")
            else:
                words = sum(x.n for x in examples)
                pruned = sum(x.pruned_gold for x in examples)
                kept = sum(int(x.layout.allowed[:, 1:].sum()) for x in examples) - pruned
                recall = 100.0 * (words - pruned) / words if words else 0.0
                lines.append(f"{self.name}: pruned training arcs keep {recall:.2f}% of the gold arcs (the rest are "
                             f"added back), {kept / words if words else 0.0:.2f} heads per word")
        s = self.structure
        lines.append(f"{self.name}: {'projective' if s.projective else 'non-projective'} trees"
                     + (f", second order ({', '.join(s.parts)})" if self.second_order else ""))
        return "\n".join(lines)

    def predict_batch(self, batch: SentenceBatch) -> np.ndarray:
        """The heads of every sentence; a sentence longer than `max_sentence_length` words is
        parsed in pieces of that length (parsing time grows with the cube of the length,
        memory with its square), each piece's root attached to the first piece's, with a
        warning that names its file and line."""
        lengths = np.diff(batch.starts) - 1
        if len(lengths) and lengths.min() == 0:
            return self._without_empty(batch, lengths, self.predict_batch)[0]
        if not len(lengths) or lengths.max() <= self.max_sentence_length:
            return super().predict_batch(batch)
        pieces, where = self._pieces(batch, lengths)
        return self._glue(batch, pieces, where, super().predict_batch(pieces))[0]

    @staticmethod
    def _without_empty(batch: SentenceBatch, lengths: np.ndarray, run):
        """`run` (predict_batch or batch_distributions) on the batch's sentences that have words:
        the per-sentence decoders (Chu-Liu-Edmonds, the matrix-tree theorem, second order) take
        no empty sentence, and an empty sentence's only slot is its root (head -1, no
        distribution rows)."""
        keep = np.flatnonzero(lengths > 0)
        heads = np.full(batch.attrs.shape[1], -1, dtype=np.int32)
        distributions = [np.zeros((0, 1)) for _ in range(len(lengths))]
        if not len(keep):
            return heads, distributions
        kept = SentenceBatch.from_sentences([batch.sentence(int(i)) for i in keep])
        kept.origins = [batch.origins[i] for i in keep] if batch.origins else None
        found = run(kept)
        kept_heads, kept_distributions = found if isinstance(found, tuple) else (found, None)
        sub_starts = np.concatenate([[0], np.cumsum(lengths[keep] + 1)])
        for j, i in enumerate(keep.tolist()):
            heads[batch.starts[i]:batch.starts[i + 1]] = kept_heads[sub_starts[j]:sub_starts[j + 1]]
            if kept_distributions is not None:
                distributions[i] = kept_distributions[j]
        return heads, distributions

    def _pieces(self, batch: SentenceBatch, lengths: np.ndarray):
        """`batch.pieces` of at most `max_sentence_length` words, with a warning per longer sentence."""
        for i in np.flatnonzero(lengths > self.max_sentence_length).tolist():
            source, line = batch.origins[i] if batch.origins else ("<memory>", 0)  # spaCy's Docs have none
            where = "" if source == "<memory>" else f"{source}:{line}: " if line else f"{source}: "
            warnings.warn(f"{where}a sentence of {lengths[i]} words is parsed in pieces of at most "
                          f"{self.max_sentence_length} words", LongSentenceWarning, stacklevel=3)
        return batch.pieces(self.max_sentence_length)

    @staticmethod
    def _glue(batch: SentenceBatch, pieces: SentenceBatch, where, predicted) -> tuple[np.ndarray, dict[int, int]]:
        """The heads of the batch's sentences from their pieces' trees: a piece's words keep their
        heads, shifted to the sentence, and a later piece's root word hangs from the first
        piece's; and {sentence: the first piece's root word}."""
        heads = np.full(batch.attrs.shape[1], -1, dtype=np.int32)
        first_root: dict[int, int] = {}
        for p, (i, offset) in enumerate(where):
            local = predicted[pieces.starts[p] + 1:pieces.starts[p + 1]].astype(np.int64)
            root = int(np.flatnonzero(local == 0)[0]) + 1 + offset if (local == 0).any() else 1 + offset
            first_root.setdefault(i, root)
            glued = np.where(local > 0, local + offset, 0)
            if first_root[i] != root or offset:
                glued = np.where(local == 0, first_root[i], glued)
            a = int(batch.starts[i]) + 1 + offset
            heads[a:a + len(local)] = glued
        return heads, first_root

    def predict(self, x):
        if x.n == 0:  # no decoder takes an empty sentence: its only slot is the root's
            return np.full(1, -1, dtype=np.int32)
        if self.second_order and not isinstance(x, PrunedSentence):
            x = self.examples([x])[0]
        return super().predict(x)

    def scores(self, x):
        """First order: the arcs distance pruning drops (`prune_distances`) at -inf."""
        scores = super().scores(x)
        return scores if self.second_order else self.structure.pruned(x, scores)

    def parse(self, sentences):
        for sentence in sentences:
            yield sentence, self.predict(sentence)

    def write_batch(self, batch: SentenceBatch, predicted) -> None:
        batch.heads = predicted

    def value(self, batch: SentenceBatch, predicted, i: int) -> np.ndarray:
        return predicted[int(batch.starts[i]):int(batch.starts[i + 1])]

    def apply(self, sentence: Sentence, value) -> Sentence:
        return replace(sentence, heads=np.asarray(value, dtype=np.int32))

    def score(self, gold, parsed, unseen=None) -> dict:
        return attachment_scores((g, p.values[self.name], None) for g, p in zip(gold, parsed))

    # -- probabilities: a word's classes are its possible heads 0..n ---------------------
    confidence_column = "head"

    def word_probabilities(self, x, scores) -> np.ndarray:
        """(n, n+1): row m-1 is P(head of m = h), the arc marginals (inside-outside, the
        matrix-tree theorem, or the second-order outside pass; pruned arcs have 0)."""
        mu, _ = self.structure.marginals(x, scores)
        if self.second_order:
            arcs = x.parts[0]
            dense = np.zeros((x.n + 1, x.n + 1))
            dense[arcs[:, 0], arcs[:, 1]] = mu[:len(arcs)]
            mu = dense
        return np.clip(mu[:, 1:].T, 0.0, 1.0)

    def predicted_classes(self, batch: SentenceBatch, predicted, i: int) -> np.ndarray:
        return np.asarray(predicted[int(batch.starts[i]) + 1:int(batch.starts[i + 1])], dtype=np.intp)

    def batch_distributions(self, batch: SentenceBatch):
        """By the first-order projective batch kernel (`DependencyTree.marginals_batch`), else
        (second order, the matrix-tree theorem) sentence by sentence. A sentence longer than
        `max_sentence_length` is parsed in pieces, as `predict_batch` does: a word's head
        distribution is its piece's (block-diagonal), the piece's root column going to the head
        its root word gets when the pieces are glued (the first piece's root word, or the root)."""
        sizes = np.diff(batch.starts) - 1
        if len(sizes) and sizes.min() == 0:
            return self._without_empty(batch, sizes, self.batch_distributions)
        if len(sizes) and sizes.max() > self.max_sentence_length:
            return self._piece_distributions(batch, sizes)
        found = None if self.second_order else self.structure.marginals_batch(batch, self.weights, self.temperature)
        if found is None:
            return super().batch_distributions(batch)
        heads, probs, offsets = found
        return heads, [probs[offsets[i]:offsets[i + 1]].reshape(n, n + 1) for i, n in enumerate(sizes.tolist())]

    def _piece_distributions(self, batch: SentenceBatch, sizes: np.ndarray):
        pieces, where = self._pieces(batch, sizes)
        piece_heads, blocks = self.batch_distributions(pieces)
        heads, first_root = self._glue(batch, pieces, where, piece_heads)
        distributions = [np.zeros((n, n + 1)) for n in sizes.tolist()]
        for (i, offset), block in zip(where, blocks):
            n = len(block)
            rows = distributions[i][offset:offset + n]
            rows[:, offset + 1:offset + 1 + n] = block[:, 1:]
            rows[:, 0 if offset == 0 else first_root[i]] += block[:, 0]
        return heads, distributions

    def gold_classes(self, x, gold: Sentence) -> np.ndarray:
        return np.asarray(gold.heads[1:], dtype=np.intp)

    def possible_classes(self, x) -> np.ndarray | None:
        """The heads the pruner kept (second order) or distance pruning keeps."""
        if self.second_order:
            return x.layout.allowed[:, 1:].T
        keep = self.structure.kept_arcs(x)
        return keep[:, 1:].T if keep is not None else None
