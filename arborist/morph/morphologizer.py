"""Morphologizer: the FEATS bundle of each word, as one class out of the bundles seen in training.

A class is a whole bundle ("Case=Nom|Number=Sing", "_" the empty one), so every
prediction is a bundle the treebank uses; its atoms are the bundle itself (kind
"bundle") and each of its Feature=Value pairs (kind "feature"), so bundles share what
their pairs learned (a rare bundle of frequent pairs is still scored well), the
factored model's generalization inside the whole-bundle model's consistency.

Candidates of a word: the bundles seen in training with its UPOS (the tagger's
prediction; every bundle for a UPOS never seen). At prediction, a (form, UPOS) pair
seen at least `known_min_count` times in training is restricted to the bundles it
was seen with (UDPipe's dictionary); training uses the UPOS candidates, so the model
learns to choose among them for the words the dictionary does not cover.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..sentence import FEATS, FORM, UPOS, Sentence
from ..strings import hash_string, hash_strings
from .atoms import pair_keys
from .choice import CandidateModel, conll_column, csr, lookup

MISSING = "_"
FEATS_COLUMN = 5
FEATURE_TEMPLATES = (
    "bias", "form", "lower", "prefix1", "prefix2", "prefix3",
    "suffix1", "suffix2", "suffix3", "suffix4", "suffix5", "suffix6", "shape",
    "has_digit", "upper_initial",
    "upos", "upos|suffix1", "upos|suffix2", "upos|suffix3", "upos|suffix4", "upos|lower",
    "upos-1", "upos+1", "upos-1|upos", "upos|upos+1", "upos-2", "upos+2",
    "lower-1", "lower+1", "suffix2-1", "suffix2+1", "suffix3-1", "suffix3+1",
    "upos-1|suffix2-1", "upos+1|suffix2+1",
)
BUNDLE_TEMPLATES = ("bias", "upos", "lower", "upos|suffix2", "upos|suffix3", "upos-1|upos", "upos|upos+1")


def bundle_pairs(bundle: str) -> list[str]:
    """The Feature=Value pairs of a FEATS bundle ('_' has none)."""
    return [] if bundle == MISSING else bundle.split("|")


class Morphologizer(CandidateModel):
    name = "morphologizer"
    namespace = "morph"

    def __init__(self, hash_bits: int = 22, feature_templates: Sequence[str] | None = None,
                 bundle_templates: Sequence[str] | None = None, known_min_count: int = 1,
                 bundles: Sequence[str] | None = None):
        super().__init__(hash_bits, {
            "feature": FEATURE_TEMPLATES if feature_templates is None else feature_templates,
            "bundle": BUNDLE_TEMPLATES if bundle_templates is None else bundle_templates,
        })
        self.known_min_count = int(known_min_count)
        self.bundles: tuple[str, ...] = ()
        self.pairs: tuple[str, ...] = ()
        self._arrays: dict[str, np.ndarray] = {}
        if bundles is not None:
            raise ValueError("give a Morphologizer its bundles with from_state(config, arrays)")

    # -- learning the classes -----------------------------------------------
    def initialize(self, sentences: Iterable[Sentence], feats: Sequence[Sequence[str]] | None = None) -> None:
        """Learn the bundles, the UPOS candidate sets and the (form, UPOS) dictionary from the
        training sentences (their UPOS rows as they are: gold or jackknifed) and their FEATS
        (read from the CoNLL-U lines unless `feats` gives one list per sentence)."""
        sentences = list(sentences)
        counts: Counter = Counter()
        by_upos: dict[int, Counter] = defaultdict(Counter)
        by_pair: dict[int, Counter] = defaultdict(Counter)
        pair_count: Counter = Counter()
        for k, s in enumerate(sentences):
            column = list(feats[k]) if feats is not None else conll_column(s, FEATS_COLUMN)
            keys = pair_keys(np.ascontiguousarray(s.attrs[FORM, 1:]), np.ascontiguousarray(s.attrs[UPOS, 1:]))
            for bundle, u, key in zip(column, s.attrs[UPOS, 1:].tolist(), keys.tolist()):
                counts[bundle] += 1
                by_upos[u][bundle] += 1
                by_pair[key][bundle] += 1
                pair_count[key] += 1
        if not counts:
            raise ValueError("no words in the training sentences")
        bundles = sorted(counts)
        index = {b: i for i, b in enumerate(bundles)}
        upos_ids = sorted(by_upos)
        # Sets: one per UPOS (bundles by frequency), then "every bundle" for an unseen UPOS,
        # then one per (form, UPOS) pair of the dictionary.
        sets = [[index[b] for b, _ in by_upos[u].most_common()] for u in upos_ids]
        sets.append([index[b] for b, _ in counts.most_common()])
        known = sorted(k for k in by_pair if pair_count[k] >= self.known_min_count)
        sets += [[index[b] for b, _ in by_pair[k].most_common()] for k in known]
        set_start, set_classes = csr(sets)
        self._arrays = {
            "upos_keys": np.array(upos_ids, dtype=np.uint64),
            "known_keys": np.array(known, dtype=np.uint64),
            "set_start": set_start,
            "set_classes": set_classes,
        }
        self._set_bundles(bundles)

    def _set_bundles(self, bundles: Sequence[str]) -> None:
        self.bundles = tuple(bundles)
        pairs = sorted({p for b in self.bundles for p in bundle_pairs(b)})
        self.pairs = tuple(pairs)
        K = len(self.bundles)
        pair_index = {p: K + j for j, p in enumerate(pairs)}
        # Atom ids: bundle k is atom k, pair j is atom K + j.
        class_atoms = [[k] + [pair_index[p] for p in bundle_pairs(b)] for k, b in enumerate(self.bundles)]
        self._set_tables(class_atoms, ["bundle"] * K + ["feature"] * len(pairs))
        self.bundle_index = {b: k for k, b in enumerate(self.bundles)}
        self.bundle_hashes = hash_strings(self.bundles)

    @property
    def n_classes(self) -> int:
        return len(self.bundles)

    # -- candidates and gold --------------------------------------------------
    def _candidates(self, attrs, text_of, training):
        a = self._arrays
        n_upos = len(a["upos_keys"])
        cand_set = lookup(a["upos_keys"], np.arange(n_upos, dtype=np.int32), attrs[UPOS], missing=n_upos)
        forced = np.full(attrs.shape[1], -1, dtype=np.int32)
        if not training and len(a["known_keys"]):
            known = lookup(a["known_keys"], np.arange(len(a["known_keys"]), dtype=np.int32),
                           pair_keys(np.ascontiguousarray(attrs[FORM]), np.ascontiguousarray(attrs[UPOS])))
            hit = known >= 0
            cand_set[hit] = n_upos + 1 + known[hit]
            # A pair seen with one bundle only needs no scoring.
            single = np.diff(a["set_start"])[cand_set] == 1
            forced[hit & single] = a["set_classes"][a["set_start"][cand_set[hit & single]]]
        return cand_set, a["set_start"], a["set_classes"], forced

    def _gold(self, sentence, gold):
        column = list(gold) if gold is not None else conll_column(sentence, FEATS_COLUMN)
        return np.array([self.bundle_index.get(b, -1) for b in column], dtype=np.int32)

    # -- output -----------------------------------------------------------------
    def feats_strings(self, ids) -> list[str]:
        return [self.bundles[i] for i in np.asarray(ids).tolist()]

    def feats_hashes(self, ids) -> np.ndarray:
        """uint64 string ids of the predicted bundles, as a Sentence's FEATS row holds them."""
        return self.bundle_hashes[np.asarray(ids, dtype=np.intp)]

    def with_feats(self, sentence: Sentence, ids) -> Sentence:
        """A copy of the sentence whose FEATS row holds the predicted bundles."""
        ids = np.asarray(ids)
        if ids.shape != (sentence.n,):
            raise ValueError(f"{len(ids)} bundles for a sentence of {sentence.n} words")
        attrs = sentence.attrs.copy()
        attrs[FEATS, 1:] = self.feats_hashes(ids)
        return replace(sentence, attrs=attrs)

    # -- state ----------------------------------------------------------------
    def config(self) -> dict:
        return {
            "structure": self.name,
            "hash_bits": self.hash_bits,
            "feature_templates": list(self.kinds["feature"]),
            "bundle_templates": list(self.kinds["bundle"]),
            "known_min_count": self.known_min_count,
            "bundles": list(self.bundles),
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> "Morphologizer":
        m = cls(config["hash_bits"], config["feature_templates"], config["bundle_templates"], config["known_min_count"])
        m._arrays = {k: np.asarray(arrays[k]) for k in ("upos_keys", "known_keys", "set_start", "set_classes")}
        m._set_bundles(config["bundles"])
        return m

    def save(self, directory) -> None:
        save_state(directory, self.config(), self.arrays())

    @classmethod
    def load(cls, directory) -> "Morphologizer":
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
