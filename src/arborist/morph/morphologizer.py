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

from collections import Counter, defaultdict
from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from ..sentence import FEATS, FORM, UPOS, Sentence
from ..strings import hash_string, hash_strings
from .atoms import pair_keys
from .choice import CandidateModel, KeyIndex, conll_column, csr, load_state, save_state  # noqa: F401
from .values import SUFFIX_LENGTHS, VALUE_STRINGS

MISSING = "_"
FEATS_COLUMN = 5
UPOS_COLUMN = 3
SEP = "\t"  # between the UPOS and the FEATS of a joint class
FEATURE_TEMPLATES = (
    "bias", "form", "lower", "prefix1", "prefix2", "prefix3",
    "suffix1", "suffix2", "suffix3", "suffix4", "suffix5", "suffix6", "shape",
    "has_digit", "upper_initial",
    "upos", "upos|suffix1", "upos|suffix2", "upos|suffix3", "upos|suffix4", "upos|lower",
    "upos-1", "upos+1", "upos-1|upos", "upos|upos+1", "upos-2", "upos+2",
    "lower-1", "lower+1", "suffix2-1", "suffix2+1", "suffix3-1", "suffix3+1",
    "upos-1|suffix2-1", "upos+1|suffix2+1",
    # Agreement and longer endings (dev UFeats +0.86 el_gdt, +0.24 tr_imst, +0.13 en_ewt, +0.03 it_partut).
    "lower-2", "lower+2", "suffix1-1", "suffix1+1", "upos-1|suffix3", "upos+1|suffix3", "suffix3-1|suffix3",
    "suffix3|suffix3+1", "upos-1|upos|upos+1", "prefix4", "suffix7", "upos|suffix5", "upos|suffix6",
)
# Stacking (`reads_draft`): the templates that read the FEATS row as a first morphologizer
# (the `morphologizer_draft` kind) left it: the word's own draft bundle and its neighbours',
# so that agreement inside a noun phrase is read from the neighbours' bundles, not only
# from their strings. Gold tokens, 5-fold jackknifed drafts, best of 10 epochs: dev UFeats
# el_gdt 89.47 -> 90.44, tr_imst 86.86 -> 86.98, hu_szeged 90.33 -> 90.39, it_partut
# 95.87 -> 95.91 (notes/lemma_morph.md, "Stacking").
DRAFT_TEMPLATES = ("feats", "feats-1", "feats+1", "upos|feats-1", "upos|feats+1", "feats-1|feats+1")


def with_templates(feature_templates: Sequence[str] | None, *extra: Sequence[str]) -> tuple[str, ...]:
    """The feature templates (the default ones unless given) and, in order, those of each
    `extra` set they lack (DRAFT_TEMPLATES for `reads_draft`, LEMMA_TEMPLATES for `reads_lemma`)."""
    out = tuple(FEATURE_TEMPLATES if feature_templates is None else feature_templates)
    for templates in extra:
        out += tuple(t for t in templates if t not in out)
    return out


# `reads_lemma`: the templates that read the inflection of the word and its neighbours, the
# form past its common prefix with the lemma a lemmatizer before the morphologizer predicted
# (`arborist.morph.values.inflection`: "evlerinde" / "ev" -> "lerinde/"), where the suffix
# templates read a fixed number of characters (notes/lemma_morph.md, "A morphologizer that
# reads the lemma").
LEMMA_TEMPLATES = ("infl", "upos|infl", "infl-1", "infl+1")

BUNDLE_TEMPLATES = ("bias", "upos", "lower", "upos|suffix2", "upos|suffix3", "upos-1|upos", "upos|upos+1")
# The UPOS atoms of joint classes: the tagger's own evidence, and its tag.
UPOS_TEMPLATES = ("bias", "upos", "lower", "form", "suffix1", "suffix2", "suffix3", "suffix4", "prefix1", "prefix2",
                  "shape", "upper_initial", "has_digit", "lower-1", "lower+1", "upos-1", "upos+1", "upos-1|upos",
                  "upos|upos+1", "lower-1|lower", "lower|lower+1", "suffix2-1", "suffix2+1")


def upos_rank(u: int, by_upos: dict) -> tuple:
    """Order of UPOS ids: most frequent first."""
    return (-sum(by_upos[u].values()), u)


def bundle_pairs(bundle: str) -> list[str]:
    """The Feature=Value pairs of a FEATS bundle ('_' has none)."""
    return [] if bundle == MISSING else bundle.split("|")


class Morphologizer(CandidateModel):
    name = "morphologizer"
    namespace = "morph"

    def __init__(self, hash_bits: int = 22, feature_templates: Sequence[str] | None = None,
                 bundle_templates: Sequence[str] | None = None, known_min_count: int = 10,
                 joint: bool = False, upos_templates: Sequence[str] | None = None, joint_min_count: int = 3,
                 suffix_length: int = 5, suffix_min_count: int = 3):
        """`joint`: a class is a (UPOS, FEATS) pair, so the morphologizer also re-tags UPOS (the
        input UPOS row, the tagger's, is a feature and picks the candidates: the pairs whose
        UPOS the tagger's tag was seen with at least `joint_min_count` times in the jackknifed
        training set).

        `suffix_length` > 0: at prediction, a word the dictionary does not cover gets the
        classes seen in training with its input UPOS and its longest suffix (of at most
        `suffix_length` characters, lowercase) seen at least `suffix_min_count` times with it
        (UDPipe's guesser); the UPOS candidates when no suffix qualifies."""
        kinds = {
            "feature": FEATURE_TEMPLATES if feature_templates is None else feature_templates,
            "bundle": BUNDLE_TEMPLATES if bundle_templates is None else bundle_templates,
        }
        if joint:
            kinds["upos"] = UPOS_TEMPLATES if upos_templates is None else upos_templates
        super().__init__(hash_bits, kinds)
        self.known_min_count = int(known_min_count)
        self.joint = bool(joint)
        self.joint_min_count = int(joint_min_count)
        self.suffix_length = int(suffix_length)
        self.suffix_min_count = int(suffix_min_count)
        if not 0 <= self.suffix_length <= max(SUFFIX_LENGTHS):
            raise ValueError(f"suffix_length must be in 0..{max(SUFFIX_LENGTHS)}, got {suffix_length}")
        self.classes: tuple[str, ...] = ()
        self.bundles: tuple[str, ...] = ()
        self.pairs: tuple[str, ...] = ()
        self._arrays: dict[str, np.ndarray] = {}

    # -- learning the classes -----------------------------------------------
    def initialize(self, sentences: Iterable[Sentence], feats: Sequence[Sequence[str]] | None = None,
                   upos: Sequence[Sequence[str]] | None = None) -> None:
        """Learn the classes, the candidate sets of each input UPOS and the (form, UPOS)
        dictionary from the training sentences (their UPOS rows as they are: gold or
        jackknifed) and their FEATS (and gold UPOS when joint; both read from the CoNLL-U lines
        unless given, one list per sentence)."""
        sentences = list(sentences)
        counts: Counter = Counter()
        by_upos: dict[int, Counter] = defaultdict(Counter)
        by_pair: dict[int, Counter] = defaultdict(Counter)
        confusion: Counter = Counter()
        pair_count: Counter = Counter()
        by_suffix: dict[int, Counter] = defaultdict(Counter)
        for k, s in enumerate(sentences):
            labels = self._labels(s, feats[k] if feats is not None else None, upos[k] if upos is not None else None)
            keys = pair_keys(np.ascontiguousarray(s.attrs[FORM, 1:]), np.ascontiguousarray(s.attrs[UPOS, 1:]))
            if self.suffix_length:
                text = dict(zip(s.attrs[FORM, 1:].tolist(), s.forms[1:]))
                for suffix_keys in self._suffix_keys(s.attrs[:, 1:], text.__getitem__):
                    for sk, label in zip(suffix_keys.tolist(), labels):
                        by_suffix[sk][label] += 1
            for label, u, key in zip(labels, s.attrs[UPOS, 1:].tolist(), keys.tolist()):
                counts[label] += 1
                by_upos[u][label] += 1
                by_pair[key][label] += 1
                pair_count[key] += 1
                if self.joint:
                    confusion[u, label.split(SEP, 1)[0]] += 1
        if not counts:
            raise ValueError("no words in the training sentences")
        if self.joint:
            # Candidates of input UPOS u: the pairs whose gold UPOS was seen with u often enough.
            for u, c in by_upos.items():
                keep = Counter({label: n for label, n in c.items()
                                if hash_string(label.split(SEP, 1)[0]) == u
                                or confusion[u, label.split(SEP, 1)[0]] >= self.joint_min_count})
                if keep:  # an input UPOS never right and never often wrong the same way keeps all
                    by_upos[u] = keep
        # Class ids group the classes of one UPOS (by the UPOS each is seen with most), so a
        # word's candidates are nearly adjacent atoms: their weights of one feature share
        # cache lines (atom a of key k lives at k + a).
        major = {b: max(by_upos, key=lambda u: (by_upos[u][b], -u)) for b in counts}
        classes = sorted(counts, key=lambda b: (upos_rank(major[b], by_upos), -counts[b], b))
        index = {b: i for i, b in enumerate(classes)}
        upos_ids = sorted(by_upos)
        # Sets: one per UPOS (classes by frequency), then "every class" for an unseen UPOS,
        # then one per (form, UPOS) pair of the dictionary.
        sets = [[index[b] for b, _ in by_upos[u].most_common()] for u in upos_ids]
        sets.append([index[b] for b, _ in counts.most_common()])
        known = sorted(k for k in by_pair if pair_count[k] >= self.known_min_count)
        sets += [[index[b] for b, _ in by_pair[k].most_common()] for k in known]
        suffixes = sorted(k for k, c in by_suffix.items() if sum(c.values()) >= self.suffix_min_count)
        sets += [[index[b] for b, _ in by_suffix[k].most_common() if b in index] for k in suffixes]
        set_start, set_classes = csr(sets)
        self._arrays = {
            "upos_keys": np.array(upos_ids, dtype=np.uint64),
            "known_keys": np.array(known, dtype=np.uint64),
            "suffix_keys": np.array(suffixes, dtype=np.uint64),
            "set_start": set_start,
            "set_classes": set_classes,
        }
        self._set_classes(classes)

    def _suffix_keys(self, attrs, text_of) -> list[np.ndarray]:
        """Keys of (input UPOS, lowercase suffix of length L) for L = suffix_length..1."""
        if not self.suffix_length:
            return []
        rows = self.form_values.rows(attrs[FORM], text_of)
        upos = np.ascontiguousarray(attrs[UPOS])
        return [pair_keys(np.ascontiguousarray(rows[:, VALUE_STRINGS.index(f"suffix{L}")]), upos)
                for L in range(self.suffix_length, 0, -1)]

    def _labels(self, sentence, feats=None, upos=None) -> list[str]:
        feats = list(feats) if feats is not None else conll_column(sentence, FEATS_COLUMN)
        if not self.joint:
            return feats
        upos = list(upos) if upos is not None else conll_column(sentence, UPOS_COLUMN)
        return [f"{u}{SEP}{f}" for u, f in zip(upos, feats)]

    def _set_classes(self, classes: Sequence[str]) -> None:
        self.classes = tuple(classes)
        if self.joint:
            split = [c.split(SEP, 1) for c in self.classes]
            self.class_upos = tuple(u for u, _ in split)
            self.bundles = tuple(f for _, f in split)
        else:
            self.class_upos = None
            self.bundles = self.classes
        # Pairs in the order the classes (grouped by UPOS) first use them: adjacent too.
        pairs = list(dict.fromkeys(p for b in self.bundles for p in bundle_pairs(b)))
        self.pairs = tuple(pairs)
        K = len(self.classes)
        pair_index = {p: K + j for j, p in enumerate(pairs)}
        kinds = ["bundle"] * K + ["feature"] * len(pairs)
        # Atom ids: class k is atom k, pair j is atom K + j, (joint) UPOS tag t is K + pairs + t.
        class_atoms = [[k] + [pair_index[p] for p in bundle_pairs(b)] for k, b in enumerate(self.bundles)]
        if self.joint:
            tags = list(dict.fromkeys(self.class_upos))
            tag_index = {t: K + len(pairs) + j for j, t in enumerate(tags)}
            kinds += ["upos"] * len(tags)
            for k, u in enumerate(self.class_upos):
                class_atoms[k].append(tag_index[u])
            self.upos_hashes_table = hash_strings(self.class_upos)
        self._set_tables(class_atoms, kinds)
        self._indexes()
        self.class_index = {b: k for k, b in enumerate(self.classes)}
        self.bundle_hashes = hash_strings(self.bundles)
        # the bundle each entry of a candidate set writes (`_candidates`' set_values)
        self._set_values = self.bundle_hashes[np.asarray(self._arrays["set_classes"], dtype=np.intp)]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    # -- candidates and gold --------------------------------------------------
    def _indexes(self):
        a = self._arrays
        self._upos_index = KeyIndex(a["upos_keys"])
        self._known_index = KeyIndex(a["known_keys"])
        self._suffix_index = KeyIndex(a["suffix_keys"])

    def _candidates(self, attrs, text_of, training, forced_sets=True):  # its sets are built once: always all
        a = self._arrays
        n_upos = len(a["upos_keys"])
        cand_set = self._upos_index.find(attrs[UPOS])
        cand_set[cand_set < 0] = n_upos  # an unseen UPOS: every class
        forced = np.full(attrs.shape[1], -1, dtype=np.int32)
        if not training:
            known = self._known_index.find(pair_keys(np.ascontiguousarray(attrs[FORM]), np.ascontiguousarray(attrs[UPOS])))
            hit = known >= 0
            cand_set[hit] = n_upos + 1 + known[hit]
            if self.suffix_length and len(a["suffix_keys"]):
                first = n_upos + 1 + len(a["known_keys"])
                for keys in self._suffix_keys(attrs, text_of):  # longest suffix first
                    found = self._suffix_index.find(keys)
                    take = (found >= 0) & ~hit
                    cand_set[take] = first + found[take]
                    hit |= take
            # A pair seen with one bundle only needs no scoring.
            single = np.diff(a["set_start"])[cand_set] == 1
            forced[hit & single] = a["set_classes"][a["set_start"][cand_set[hit & single]]]
        return cand_set, a["set_start"], a["set_classes"], forced, self._set_values

    def _forced_sources(self, attrs, forced):
        # 1: a (form, UPOS) pair seen known_min_count times with one bundle; 2: a one-bundle
        # suffix guess (mostly words unseen in training)
        known = self._known_index.find(pair_keys(np.ascontiguousarray(attrs[FORM]), np.ascontiguousarray(attrs[UPOS])))
        return np.where(forced < 0, 0, np.where(known >= 0, 1, 2)).astype(np.int8)

    def _gold(self, sentence, gold):
        """Gold class ids; `gold`: the FEATS strings (joint: the class strings, UPOS + SEP + FEATS)."""
        labels = list(gold) if gold is not None else self._labels(sentence)
        return np.array([self.class_index.get(b, -1) for b in labels], dtype=np.int32)

    # -- output -----------------------------------------------------------------
    def feats_strings(self, ids) -> list[str]:
        return [self.bundles[i] for i in np.asarray(ids).tolist()]

    def upos_strings(self, ids) -> list[str] | None:
        """The UPOS tags of joint classes (None when not joint)."""
        return None if not self.joint else [self.class_upos[i] for i in np.asarray(ids).tolist()]

    def upos_hashes(self, ids) -> np.ndarray | None:
        return None if not self.joint else self.upos_hashes_table[np.asarray(ids, dtype=np.intp)]

    def feats_hashes(self, ids) -> np.ndarray:
        """uint64 string ids of the predicted bundles, as a Sentence's FEATS row holds them."""
        return self.bundle_hashes[np.asarray(ids, dtype=np.intp)]

    def with_feats(self, sentence: Sentence, ids) -> Sentence:
        """A copy of the sentence whose FEATS row holds the predicted bundles (joint: and whose
        UPOS row and strings hold the predicted UPOS)."""
        ids = np.asarray(ids)
        if ids.shape != (sentence.n,):
            raise ValueError(f"{len(ids)} bundles for a sentence of {sentence.n} words")
        attrs = sentence.attrs.copy()
        attrs[FEATS, 1:] = self.feats_hashes(ids)
        if not self.joint:
            return replace(sentence, attrs=attrs)
        attrs[UPOS, 1:] = self.upos_hashes(ids)
        return replace(sentence, attrs=attrs, upos=[sentence.upos[0]] + self.upos_strings(ids))

    # -- state ----------------------------------------------------------------
    def config(self) -> dict:
        return {
            "structure": self.name,
            "hash_bits": self.hash_bits,
            "feature_templates": list(self.kinds["feature"]),
            "bundle_templates": list(self.kinds["bundle"]),
            "known_min_count": self.known_min_count,
            "joint": self.joint,
            "upos_templates": list(self.kinds.get("upos", UPOS_TEMPLATES)),
            "joint_min_count": self.joint_min_count,
            "suffix_length": self.suffix_length,
            "suffix_min_count": self.suffix_min_count,
            "classes": list(self.classes),
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> "Morphologizer":
        m = cls(config["hash_bits"], config["feature_templates"], config["bundle_templates"], config["known_min_count"],
                config["joint"], config["upos_templates"], config["joint_min_count"], config["suffix_length"],
                config["suffix_min_count"])
        m._arrays = {k: np.asarray(arrays[k]) for k in ("upos_keys", "known_keys", "suffix_keys", "set_start",
                                                         "set_classes")}
        m._set_classes(config["classes"])
        return m
