"""AtomChoice: one class per word out of its candidates, behind the Structure protocol.

An example is one sentence: its words' template keys and, per word, the candidate
classes (CSR: word i's candidates are cand[cand_start[i]:cand_start[i+1]], no
duplicates). Parts are the (word, candidate) pairs, one flat float64 array in that
order. A label is an int32 array of class ids, one per word (like a chain's tags);
every label picks exactly one part per word, so:

  argmax          the best candidate of each word (first on ties)
  marginals       a softmax per word; log Z is the sum of the words' log-sum-exps
  part_cost       1 on every part whose class is not the word's gold class (Hamming)

Scores are sums of atom scores (`atoms.AtomTables`); the lemmatizer and the
morphologizer are this structure with their own classes, atoms and candidates.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..sentence import FORM as FORM_ROW, known_lemmas
from ..structure import take_positions
from .atoms import AtomTables, U64Map, segment_argmax
from . import values as _values
from .values import reads_attrs, template_table


@dataclass
class ChoiceExample:
    keys: np.ndarray        # uint64 (n, templates)
    cand_start: np.ndarray  # int64 (n+1,)
    cand: np.ndarray        # int32 (parts,)
    gold_classes: np.ndarray | None = None  # int32 (n,), -1 where the gold class is unknown
    where: str = "<memory>"  # provenance for errors
    # int32 (n,): the class the lexicon gives a word whatever its scores, -1 where it gives
    # none (prediction only: a training example's words are all scored), as `predict_batch`
    # gives it; `forced_source`: which of the structure's two lexicons gave it (1: its (form,
    # UPOS) pairs; 2: its fallback, the morphologizer's one-bundle suffix guesses, the
    # lemmatizer's form lexicon), 0 where none did. Their values are right at different
    # rates (probabilities: `WordChoice.calibrate`).
    forced: np.ndarray | None = None
    forced_source: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.cand_start) - 1


@dataclass
class BatchChoices:
    """`CandidateModel.softmax_batch`: a batch's words (sentences concatenated, no roots)."""
    classes: np.ndarray        # int32 (words,): the prediction, `predict_batch`'s
    forced: np.ndarray         # int32 (words,): the lexicon's class, -1 where it gives none
    forced_source: np.ndarray  # int8 (words,): `ChoiceExample.forced_source`
    cand_start: np.ndarray     # int64 (words + 1,): word k's candidates are entries cand_start[k]..; none if forced
    cand: np.ndarray           # int32: each candidate's class
    cand_values: np.ndarray    # uint64: the string id of the value (bundle, lemma) it writes for its word
    probs: np.ndarray          # float64: the softmax of the word's candidates' scores / temperature


class AtomChoice:
    """The protocol over `ChoiceExample`s; `tables` are the kernel's fixed tables."""

    def __init__(self, tables: AtomTables):
        self.tables = tables

    @property
    def hash_bits(self) -> int:
        return self.tables.bits

    def _segments(self, x: ChoiceExample) -> np.ndarray:
        return np.repeat(np.arange(x.n), np.diff(x.cand_start))

    # -- the protocol -------------------------------------------------------
    def scores(self, x: ChoiceExample, w) -> np.ndarray:
        return self.tables.score_parts(x.keys, x.cand_start, x.cand, w.array)

    def argmax(self, x: ChoiceExample, scores: np.ndarray) -> np.ndarray:
        best = segment_argmax(np.ascontiguousarray(scores, dtype=np.float64), x.cand_start)
        return x.cand[best].astype(np.int32)

    def cost_augmented_argmax(self, x, scores, gold):
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: ChoiceExample, scores: np.ndarray) -> tuple[np.ndarray, float]:
        scores = np.asarray(scores, dtype=np.float64)
        if x.n == 0:
            return np.zeros(0), 0.0
        starts = x.cand_start[:-1]
        top = np.maximum.reduceat(scores, starts)
        e = np.exp(scores - np.repeat(top, np.diff(x.cand_start)))
        total = np.add.reduceat(e, starts)
        mu = e / np.repeat(total, np.diff(x.cand_start))
        return mu, float((top + np.log(total)).sum())

    def indicator(self, x: ChoiceExample, y) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (x.n,):
            raise ValueError(f"a label has one class per word: {x.n} words, got shape {y.shape}")
        hit = x.cand == np.repeat(y, np.diff(x.cand_start))
        found = np.add.reduceat(hit.astype(np.int64), x.cand_start[:-1]) if x.n else np.zeros(0)
        if (found != 1).any():
            i = int(np.flatnonzero(found != 1)[0])
            raise ValueError(f"{x.where}: class {int(y[i])} of word {i + 1} is not one of its candidates")
        return hit.astype(np.float64)

    def part_cost(self, x, gold) -> np.ndarray:
        return 1.0 - self.indicator(x, gold)

    def add_features(self, x: ChoiceExample, coef, w, scale: float = 1.0) -> None:
        self.tables.add(x.keys, x.cand_start, x.cand, coef, w, scale)

    def mix(self, gold, pred, positions: Sequence[int]) -> np.ndarray:
        return take_positions(gold, pred, positions)

    def gold(self, x: ChoiceExample) -> np.ndarray:
        if x.gold_classes is None or (x.gold_classes < 0).any():
            i = -1 if x.gold_classes is None else int(np.flatnonzero(x.gold_classes < 0)[0])
            raise ValueError(f"{x.where}: word {i + 1} has no gold class (unseen in training)"
                             if i >= 0 else f"{x.where}: the example has no gold classes")
        return x.gold_classes

    def hits(self, x, gold, pred) -> tuple[int, int]:
        return int((np.asarray(gold) == np.asarray(pred)).sum()), len(gold)


def csr(lists) -> tuple[np.ndarray, np.ndarray]:
    """(starts int64, flat int32) of a list of int lists."""
    sizes = [len(x) for x in lists]
    starts = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    flat = np.fromiter((v for x in lists for v in x), dtype=np.int32, count=int(starts[-1]))
    return starts, flat


class KeyIndex:
    """Position of each key in a fixed key array, found by a nogil hash map (one call per
    batch, instead of a binary search per key); -1 for a key not in the array."""

    def __init__(self, keys: np.ndarray, values: np.ndarray | None = None):
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.map = U64Map(max(len(keys), 16))
        if len(keys):
            self.map.put_many(keys, np.arange(len(keys), dtype=np.uint64) if values is None
                              else np.asarray(values).astype(np.uint64))

    def find(self, keys) -> np.ndarray:
        found = self.map.get_many(keys)
        return np.where(found == np.uint64(0xFFFFFFFFFFFFFFFF), -1, found.astype(np.int64)).astype(np.int32)


def kind_table(kinds: Sequence[Sequence[str]], templates: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(kind_start, kind_templates): the template indices each atom kind is conjoined with."""
    index = {t: j for j, t in enumerate(templates)}
    return csr([[index[t] for t in kind] for kind in kinds])


CONLL_COLUMNS = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5}


def format_columns(sentence, **columns) -> str:
    """The sentence's CoNLL-U lines as read, with the columns given (lemma=, upos=, xpos=,
    feats=: one string per word) replaced; every other byte as read. (`corpus.format_sentence`
    writes HEAD, DEPREL, UPOS and XPOS; this adds LEMMA and FEATS for the new components.)"""
    replace_at = []
    for name, values in columns.items():
        if name not in CONLL_COLUMNS:
            raise ValueError(f"unknown column {name!r}: one of {sorted(CONLL_COLUMNS)}")
        if len(values) != sentence.n:
            raise ValueError(f"{len(values)} {name} values for a sentence of {sentence.n} words")
        replace_at.append((CONLL_COLUMNS[name], values))
    lines = list(sentence.lines)
    for m, offset in enumerate(sentence.word_lines):
        body = lines[offset].rstrip("\r\n")
        cols = body.split("\t")
        for col, values in replace_at:
            cols[col] = values[m]
        lines[offset] = "\t".join(cols) + lines[offset][len(body):]
    return "".join(lines)


def conll_column(sentence, column: int) -> list[str]:
    """The words' strings of CoNLL-U column `column` (2 LEMMA, 5 FEATS), read from the lines the
    Sentence keeps (the Sentence itself holds only their string ids)."""
    if len(sentence.word_lines) != sentence.n or not sentence.lines:
        raise ValueError(f"{sentence.source}:{sentence.first_line}: the sentence keeps no CoNLL-U lines "
                         "to read gold lemmas/FEATS from (pass them explicitly)")
    out = []
    for offset in sentence.word_lines:
        columns = sentence.lines[offset].rstrip("\r\n").split("\t")
        out.append(columns[column])
    return out


class CandidateModel(AtomChoice):
    """What the lemmatizer and the morphologizer share: atom kinds with their templates,
    the form-values cache, examples from Sentences and the batch kernel. A subclass
    defines its classes and atoms (`_tables`) and its candidates (`_candidates`)."""

    namespace = "choice"

    def __init__(self, hash_bits: int, kinds: dict[str, Sequence[str]]):
        self.kinds = {name: tuple(ts) for name, ts in kinds.items()}
        templates: list[str] = []
        for ts in self.kinds.values():
            if len(set(ts)) != len(ts):
                raise ValueError(f"duplicate templates in {list(ts)}")
            templates += [t for t in ts if t not in templates]
        self.templates = tuple(templates)
        self._hash_bits = int(hash_bits)
        self._table = template_table(self.templates, self.namespace)  # checks the names
        self.reads = reads_attrs(self.templates)
        self.form_values = _values.SHARED
        self.tables = None

    @property
    def hash_bits(self) -> int:
        return self._hash_bits

    def _set_tables(self, class_atoms: list[list[int]], atom_kinds: list[str]) -> None:
        kind_names = list(self.kinds)
        kind_start, kind_templates = kind_table([self.kinds[k] for k in kind_names], self.templates)
        class_start, flat = csr(class_atoms)
        seeds, n_parts, columns, offsets = self._table
        self.tables = AtomTables(self._hash_bits, seeds, n_parts, columns, offsets, kind_start, kind_templates,
                                 class_start, flat, np.array([kind_names.index(k) for k in atom_kinds], dtype=np.int32))

    def _ready(self) -> None:
        if self.tables is None:
            raise ValueError(f"the {self.name} has no classes yet: call initialize(training sentences) first")

    def _candidates(self, attrs: np.ndarray, text_of, training: bool, forced_sets: bool = True):
        """(cand_set (words,), set_start, set_classes, forced (words,), set_values) for words with
        attribute columns `attrs` (7, words). `training`: no lexicon (forced all -1) and no
        restriction to what a word was seen with, so the model learns to choose among every
        candidate. Without `forced_sets`, a forced word's candidate set may be any valid set
        (the batch kernel never reads it), so a model whose sets cost time to build can skip
        them. set_values (uint64, aligned with set_classes): the string id of the value (bundle,
        lemma) each entry writes for the words of its set, which the probabilities sum over."""
        raise NotImplementedError

    def _gold(self, sentence, gold: list[str] | None) -> np.ndarray:
        raise NotImplementedError

    def example(self, sentence, gold: list[str] | None = None, training: bool = False,
                forced_sets: bool = True) -> ChoiceExample:
        """The sentence as a per-sentence example. With `training`, each word's gold class is
        added to its candidates when missing (gold strings from the sentence's CoNLL-U lines
        unless given). Without, gold classes are filled where known and -1 elsewhere.
        Without `forced_sets`, a word the lexicon decides may get any candidate set (see
        `_candidates`: the probabilities, which do not score those words, skip building them)."""
        self._ready()
        text = dict(zip(sentence.attrs[FORM_ROW, 1:].tolist(), sentence.forms[1:]))
        attrs = sentence.attrs[:, 1:]
        values = self.form_values.values(attrs, text.__getitem__,
                                         known_lemmas(sentence).get if "infl" in self.reads else None)
        keys = self.tables.keys(values)
        cand_set, set_start, set_classes, forced, _ = self._candidates(attrs, text.__getitem__, training, forced_sets)
        try:
            gold_classes = self._gold(sentence, gold)
        except ValueError:
            if training:
                raise
            gold_classes = None
        lists = []
        for i, s in enumerate(cand_set.tolist()):
            cands = set_classes[set_start[s]:set_start[s + 1]].tolist()
            if training and gold_classes is not None and gold_classes[i] >= 0 and gold_classes[i] not in cands:
                cands.append(int(gold_classes[i]))
            lists.append(cands)
        cand_start, cand = csr(lists)
        forced = None if training else np.asarray(forced, dtype=np.int32)
        return ChoiceExample(keys, cand_start, cand, gold_classes, f"{sentence.source}:{sentence.first_line}",
                             forced, None if training else self._forced_sources(attrs, forced))

    def _forced_sources(self, attrs: np.ndarray, forced: np.ndarray) -> np.ndarray:
        """`ChoiceExample.forced_source` of words with attribute columns `attrs` (7, words)."""
        return (forced >= 0).astype(np.int8)

    def examples(self, sentences, training: bool = True) -> list[ChoiceExample]:
        return [self.example(s, training=training) for s in sentences]

    def predict_sentence(self, sentence, w) -> np.ndarray:
        """The one-sentence path: argmax over the example's candidates, then the lexicon."""
        x = self.example(sentence)
        pred = self.argmax(x, self.scores(x, w))
        return np.where(x.forced >= 0, x.forced, pred).astype(np.int32)

    def predict_batch(self, batch, w) -> np.ndarray:
        """The class id of every word of the batch (sentences concatenated, no roots), computed
        by one kernel call without the GIL (`AtomTables.predict_many`)."""
        self._ready()
        attrs = batch.attrs[:, batch.words]
        values = self.form_values.values(attrs, batch.text_of, batch.lemma_of if "infl" in self.reads else None)
        cand_set, set_start, set_classes, forced, _ = self._candidates(attrs, batch.text_of, False, forced_sets=False)
        return self.tables.predict_many(values, np.ascontiguousarray(batch.word_starts, dtype=np.int64),
                                        cand_set, set_start, set_classes, forced, w.array)

    def softmax_batch(self, batch, w, temperature: float = 1.0) -> "BatchChoices":
        """`predict_batch`'s classes and, for every word it scores, its candidates with their
        values and the softmax of their scores / temperature, from one kernel call without the
        GIL (`AtomTables.softmax_many`)."""
        self._ready()
        attrs = batch.attrs[:, batch.words]
        values = self.form_values.values(attrs, batch.text_of, batch.lemma_of if "infl" in self.reads else None)
        cand_set, set_start, set_classes, forced, set_values = self._candidates(attrs, batch.text_of, False,
                                                                                forced_sets=False)
        classes, cand_start, probs = self.tables.softmax_many(
            values, np.ascontiguousarray(batch.word_starts, dtype=np.int64), cand_set, set_start, set_classes,
            forced, w.array, temperature)
        # each scored word's entries of its candidate set, in the kernel's order
        sizes = np.diff(cand_start)
        entries = np.repeat(set_start[cand_set] - cand_start[:-1], sizes) + np.arange(int(cand_start[-1]))
        return BatchChoices(classes, forced, self._forced_sources(attrs, forced), cand_start,
                            set_classes[entries], set_values[entries], probs)

    # -- state: config.json and one .npy per array (no pickle) ----------------
    def save(self, directory) -> None:
        save_state(directory, self.config(), self.arrays())

    @classmethod
    def load(cls, directory):
        return cls.from_state(*load_state(directory))


def save_state(directory, config: dict, arrays: dict[str, np.ndarray]) -> None:
    """config.json and one .npy per array (no pickle)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def load_state(directory) -> tuple[dict, dict[str, np.ndarray]]:
    directory = Path(directory)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    arrays = {p.stem: np.load(p, allow_pickle=False) for p in directory.glob("*.npy")}
    return config, arrays
