"""Lemmatizer: one edit script per word (`scripts`), chosen among the scripts that apply to its form.

Classes are the edit scripts of the training pairs (plus "keep the form", always a
class). A script's atoms are the script itself (kind "script"), its suffix rule
(suffix_del -> suffix_add, kind "suffix"), its prefix rule (kind "prefix") and its
casing (kind "case"), so the suffix rule "s -> ''" learns from every casing it comes
with and the casing from every rule.

A word's candidates are the scripts seen at least `min_count` times whose deletions
match its form (`scripts.applies`), plus "keep the form" (the fallback: a form no
script applies to is its own lemma). A lexicon gives the most frequent script of
every (form, UPOS) pair seen at least `lexicon_min_count` times in training
(`lexicon_min_count=0`: no lexicon); the classifier decides the other words. With
`lexicon_share` > 0, a pair is forced only when its most frequent script has at least
that share of its occurrences; a more ambiguous pair ("'s" AUX: "be" or "have") has
the scripts it was seen with as its candidates, and the classifier chooses among them.

With `known_lemmas`, a candidate whose lemma is attested in training as the lemma of
another form ("dog" for the unseen "dogs" when "dog" was seen) is its own class: the
script's atoms plus a "known" atom (kind "known", `known_templates`), so the
classifier learns how much an attested lemma counts (Lemming's dictionary feature).
Class k < K is script k, class K + k script k with the known atom (K scripts). "Another
form" keeps the feature honest on training words, whose own lemma is always attested.
"""
from __future__ import annotations

import threading
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from ..morph.atoms import U64Map, pair_keys
from ..morph.values import NOT_FOUND, cached_string_ids
from ..morph.choice import CandidateModel, KeyIndex, conll_column, csr
from ..sentence import FORM, LEMMA, ROOT, UPOS, Sentence
from ..strings import hash_string, hash_strings
from . import scripts as edit

LEMMA_COLUMN = 2
KEEP = edit.Script("keep", "", "", "", "")
SCRIPT_TEMPLATES = ("bias", "lower", "upos", "suffix1", "suffix2", "suffix3", "suffix4",
                    "upos|suffix1", "upos|suffix2", "upos|suffix3", "prefix1", "prefix2", "shape")
SUFFIX_TEMPLATES = ("bias", "lower", "upos", "suffix1", "suffix2", "suffix3", "suffix4", "suffix5", "suffix6",
                    "suffix7", "upos|suffix1", "upos|suffix2", "upos|suffix3", "upos|suffix4", "upos|suffix5",
                    "upos|lower", "upos-1|upos", "upos|upos+1")
KNOWN_TEMPLATES = ("bias", "upos", "suffix1", "suffix2", "suffix3", "upos|suffix2", "upper_initial")
PREFIX_TEMPLATES = ("bias", "upos", "prefix1", "prefix2", "prefix3", "prefix4", "upos|prefix2", "upos|prefix3")
CASE_TEMPLATES = ("bias", "upos", "shape", "upper_initial", "all_upper", "has_digit", "lower", "form",
                  "upos|upper_initial", "lower-1|upper_initial", "upos|all_upper", "upos-1|upos|upper_initial")


class Lemmatizer(CandidateModel):
    name = "lemmatizer"
    namespace = "lemma"

    def __init__(self, hash_bits: int = 22, script_templates: Sequence[str] | None = None,
                 suffix_templates: Sequence[str] | None = None, prefix_templates: Sequence[str] | None = None,
                 case_templates: Sequence[str] | None = None, min_count: int = 1, lexicon_min_count: int = 1,
                 upos_candidates: bool = False, form_lexicon: bool = True, lexicon_share: float = 0.99,
                 known_lemmas: bool = True, known_templates: Sequence[str] | None = None):
        kinds = {
            "script": SCRIPT_TEMPLATES if script_templates is None else script_templates,
            "suffix": SUFFIX_TEMPLATES if suffix_templates is None else suffix_templates,
            "prefix": PREFIX_TEMPLATES if prefix_templates is None else prefix_templates,
            "case": CASE_TEMPLATES if case_templates is None else case_templates,
        }
        if known_lemmas:
            kinds["known"] = KNOWN_TEMPLATES if known_templates is None else known_templates
        super().__init__(hash_bits, kinds)
        self.known_lemmas = bool(known_lemmas)
        if min_count < 1 or lexicon_min_count < 0:
            raise ValueError(f"min_count must be >= 1 and lexicon_min_count >= 0, got {min_count}, {lexicon_min_count}")
        self.min_count = int(min_count)
        self.lexicon_min_count = int(lexicon_min_count)
        self.upos_candidates = bool(upos_candidates)
        self.form_lexicon = bool(form_lexicon)
        if not 0.0 <= lexicon_share <= 1.0:
            raise ValueError(f"lexicon_share must be in [0, 1], got {lexicon_share}")
        self.lexicon_share = float(lexicon_share)
        self.scripts: tuple[edit.Script, ...] = ()
        self.counts: np.ndarray = np.zeros(0, dtype=np.int64)
        self._arrays: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        # Pickled (Ray tasks and actors) without its lock and its prediction caches, which the
        # copy makes afresh (`_new_caches`): there, so that they are writable (Ray hands numpy
        # arrays over read-only).
        state = dict(self.__dict__)
        del state["_lock"]
        for cache in ("_pool", "_lemma_ids", "_lemma_texts"):
            state.pop(cache, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if "_lexicon" in state:  # initialized
            self._new_caches()

    # -- learning the classes -----------------------------------------------
    def initialize(self, sentences: Iterable[Sentence], lemmas: Sequence[Sequence[str]] | None = None) -> None:
        """Learn the scripts and the lexicon from the training sentences (UPOS rows as they are)
        and their lemmas (read from the CoNLL-U lines unless `lemmas` gives one list per sentence)."""
        counts: Counter = Counter()
        by_pair: dict[int, Counter] = defaultdict(Counter)
        by_upos: dict[int, Counter] = defaultdict(Counter)
        by_form: dict[int, Counter] = defaultdict(Counter)
        lemma_forms: dict[str, set] = defaultdict(set)
        cache: dict[tuple[str, str], edit.Script] = {}
        for k, s in enumerate(sentences):
            column = list(lemmas[k]) if lemmas is not None else conll_column(s, LEMMA_COLUMN)
            keys = pair_keys(np.ascontiguousarray(s.attrs[FORM, 1:]), np.ascontiguousarray(s.attrs[UPOS, 1:]))
            for form, lemma, key, upos_id, form_id in zip(s.forms[1:], column, keys.tolist(), s.attrs[UPOS, 1:].tolist(),
                                                          s.attrs[FORM, 1:].tolist()):
                script = cache.get((form, lemma))
                if script is None:
                    script = cache[form, lemma] = edit.extract(form, lemma)
                counts[script] += 1
                by_pair[key][script] += 1
                by_upos[upos_id][script] += 1
                by_form[form_id][script] += 1
                if self.known_lemmas and lemma != "_":
                    lemma_forms[lemma].add(form)
        if not counts:
            raise ValueError("no words in the training sentences")
        scripts = sorted(counts, key=lambda sc: (-counts[sc], sc))
        if KEEP not in counts:
            scripts.append(KEEP)
        index = {sc: i for i, sc in enumerate(scripts)}
        lexicon, ambiguous = [], []
        for key, c in by_pair.items():
            total = sum(c.values())
            if not self.lexicon_min_count or total < self.lexicon_min_count:
                continue
            top, n = c.most_common(1)[0]
            if n >= self.lexicon_share * total:
                lexicon.append((key, index[top]))
            else:  # ambiguous: the classifier chooses among the pair's scripts
                ambiguous.append((key, sorted(index[sc] for sc in c)))
        lexicon.sort()
        ambiguous.sort()
        self._arrays = {
            "counts": np.array([counts.get(sc, 0) for sc in scripts], dtype=np.int64),
            "lexicon_keys": np.array([k for k, _ in lexicon], dtype=np.uint64),
            "lexicon_scripts": np.array([v for _, v in lexicon], dtype=np.int32),
            "ambiguous_keys": np.array([k for k, _ in ambiguous], dtype=np.uint64),
        }
        self._arrays["ambiguous_start"], self._arrays["ambiguous_scripts"] = csr([v for _, v in ambiguous])
        # The form lexicon, for a (form, UPOS) pair not in the lexicon (the UPOS is often a tagging
        # error then): forms seen lexicon_min_count times, always with one script.
        forms = sorted((key, index[next(iter(c))]) for key, c in by_form.items()
                       if self.form_lexicon and self.lexicon_min_count and len(c) == 1
                       and sum(c.values()) >= self.lexicon_min_count)
        self._arrays["form_keys"] = np.array([k for k, _ in forms], dtype=np.uint64)
        self._arrays["form_scripts"] = np.array([v for _, v in forms], dtype=np.int32)
        # Attested lemmas (known_lemmas): the lemma's string id, and the string id of its one
        # form when it was seen with one form only (that of "", 0, when with several).
        known = sorted(lemma_forms)
        self._arrays["lemma_keys"] = hash_strings(known)
        self._arrays["lemma_forms"] = hash_strings([next(iter(lemma_forms[l])) if len(lemma_forms[l]) == 1 else ""
                                                    for l in known])
        # Scripts seen with each UPOS (input rows as given: jackknifed tags in training).
        upos_ids = sorted(by_upos)
        self._arrays["upos_keys"], self._arrays["upos_start"], self._arrays["upos_scripts"] = (
            np.array(upos_ids, dtype=np.uint64), *csr([sorted(index[sc] for sc in by_upos[u]) for u in upos_ids]))
        self._set_scripts(scripts)

    def _set_scripts(self, scripts: Sequence[edit.Script]) -> None:
        self.scripts = tuple(scripts)
        self.counts = self._arrays["counts"]
        self.script_index = {sc: i for i, sc in enumerate(self.scripts)}
        self.keep_id = self.script_index[KEEP]
        K = len(self.scripts)
        atoms: dict[tuple, int] = {}
        atom_kinds: list[str] = ["script"] * K

        def atom(kind: str, value) -> int:
            key = (kind, value)
            if key not in atoms:
                atoms[key] = K + len(atoms)
                atom_kinds.append(kind)
            return atoms[key]

        class_atoms = [[k, atom("suffix", (sc.suffix_del, sc.suffix_add)), atom("prefix", (sc.prefix_del, sc.prefix_add)),
                        atom("case", sc.case)] for k, sc in enumerate(self.scripts)]
        if self.known_lemmas:  # class K + k: script k, its lemma attested (the "known" atom)
            known_atom = atom("known", True)
            class_atoms += [atoms_k + [known_atom] for atoms_k in class_atoms]
        self._set_tables(class_atoms, atom_kinds)
        # Applicability index: (lowercase base?, suffix_del) -> [(script id, prefix_del)], for the
        # candidate scripts (seen min_count times) and for all (training adds the gold script).
        self._index = {}
        for candidates_only in (True, False):
            index = defaultdict(list)
            for k, sc in enumerate(self.scripts):
                if candidates_only and self.counts[k] < self.min_count and k != self.keep_id:
                    continue
                index[sc.case != "keep", sc.suffix_del].append((k, sc.prefix_del, len(sc.prefix_del) + len(sc.suffix_del)))
            self._index[candidates_only] = dict(index)
        a = self._arrays
        self._upos_scripts = {int(u): set(a["upos_scripts"][a["upos_start"][i]:a["upos_start"][i + 1]].tolist())
                              for i, u in enumerate(a["upos_keys"].tolist())}
        self._known = dict(zip(a["lemma_keys"].tolist(), a["lemma_forms"].tolist()))
        self._ambiguous = {int(k): a["ambiguous_scripts"][a["ambiguous_start"][i]:a["ambiguous_start"][i + 1]].tolist()
                           for i, k in enumerate(a["ambiguous_keys"].tolist())}
        self._lexicon = KeyIndex(a["lexicon_keys"], a["lexicon_scripts"])
        self._form_lexicon = KeyIndex(a["form_keys"], a["form_scripts"])
        self._new_caches()

    def _new_caches(self) -> None:
        """Empty prediction caches: the candidate sets per (form, UPOS), the lemma ids per
        (form, script), and lemma_strings' texts."""
        self._pool = self._new_pool()
        self._lemma_ids = U64Map()
        self._lemma_texts: dict[tuple[str, int], str] = {}

    @property
    def n_classes(self) -> int:
        return len(self.scripts) * (2 if self.known_lemmas else 1)

    def script_of(self, class_id: int) -> int:
        """The script of a class (class K + k is script k with its lemma attested)."""
        K = len(self.scripts)
        return class_id - K if class_id >= K else class_id

    def attested(self, form: str, lemma: str) -> bool:
        """Whether `lemma` is the training lemma of a form other than `form`."""
        single = self._known.get(hash_string(lemma))
        return single is not None and (single == 0 or single != hash_string(form))

    def _classes(self, form: str, scripts: list[int]) -> tuple[list[int], list[int]]:
        """The classes of a form's candidate scripts (known_lemmas: K + k when script k's lemma
        is attested), and the string id of the lemma each makes of the form (`lemma`'s)."""
        # one lemma per candidate, with the form hashed once (a new form's candidate sets are
        # built in Python: this is most of the cost of an unseen word)
        K = len(self.scripts)
        lemmas = hash_strings([text or form for text in edit.lemmas([self.scripts[k] for k in scripts], form)]).tolist()
        if not self.known_lemmas:
            return list(scripts), lemmas
        form_id, known = hash_string(form), self._known
        out = []
        for k, lemma_id in zip(scripts, lemmas):
            single = known.get(lemma_id)
            out.append(K + k if single is not None and (single == 0 or single != form_id) else k)
        return out, lemmas

    def applicable(self, form: str) -> list[int]:
        """The candidate scripts of a form (ids, by decreasing training frequency); "keep the
        form" is always one."""
        index = self._index[True]
        out = []
        for lowered, base in ((True, form.lower()), (False, form)):
            for cut in range(len(base) + 1):
                for k, prefix, length in index.get((lowered, base[cut:]), ()):
                    if length <= len(base) and base.startswith(prefix):
                        out.append(k)
        return sorted(set(out))

    def _pair_set(self, form: str, upos_id: int, key: int | None = None) -> tuple[list[int], list[int]]:
        """Candidates of a (form, UPOS) pair (pair key `key`) and their lemmas (`_classes`): the
        scripts an ambiguous pair of the lexicon was seen with; else the applicable scripts, and
        with `upos_candidates` only those seen with that UPOS in training ("keep the form" always)."""
        if key is not None and key in self._ambiguous:
            return self._classes(form, self._ambiguous[key])
        cands = self.applicable(form)
        if self.upos_candidates:
            seen = self._upos_scripts.get(upos_id)
            if seen is not None:
                cands = [k for k in cands if k in seen or k == self.keep_id]
        return self._classes(form, cands)

    def _new_pool(self):
        # (pair key -> set id map, set_start buffer, set_classes buffer, sets used, classes used,
        # set_values buffer: each class's lemma of the pair's form). Set 0, named by no key, is
        # {"keep the form"}: the set of words the lexicon forces, whose sets predict_batch does
        # not build (two thirds of the new pairs of English text); its lemma is no one form's (0).
        starts, classes = np.zeros(1024, dtype=np.int64), np.zeros(4096, dtype=np.int32)
        starts[1], classes[0] = 1, self.keep_id
        return (U64Map(), starts, classes, 1, 1, np.zeros(4096, dtype=np.uint64))

    def _grow_pool(self, keys, forms, upos, text_of):
        """Add the candidate sets of the pairs of `keys` not in the pool (lock held)."""
        index, starts, classes, n, used, lemmas = self._pool
        missing, first = np.unique(keys[index.get_many(keys) == NOT_FOUND], return_index=True)
        if n + len(missing) > (1 << 20):
            index, starts, classes, n, used, lemmas = self._new_pool()
            missing, first = np.unique(keys, return_index=True)
        else:
            first = np.flatnonzero(index.get_many(keys) == NOT_FOUND)[first]
        if len(missing):
            sets = [self._pair_set(text_of(f), u, k) for f, u, k in zip(forms[first].tolist(), upos[first].tolist(),
                                                                         missing.tolist())]
            sizes = np.array([len(x) for x, _ in sets], dtype=np.int64)
            total = int(sizes.sum())
            if n + len(missing) + 1 > len(starts):
                grown = np.zeros(2 * (n + len(missing) + 1), dtype=np.int64)
                grown[:n + 1] = starts[:n + 1]
                starts = grown
            if used + total > len(classes):
                grown = np.zeros(2 * (used + total), dtype=np.int32)
                grown[:used] = classes[:used]
                classes = grown
                grown = np.zeros(2 * (used + total), dtype=np.uint64)
                grown[:used] = lemmas[:used]
                lemmas = grown
            classes[used:used + total] = [k for x, _ in sets for k in x]
            lemmas[used:used + total] = [v for _, x in sets for v in x]
            starts[n + 1:n + 1 + len(missing)] = used + np.cumsum(sizes)
            # Publish the sets before the map names them (readers check the set count).
            self._pool = (index, starts, classes, n + len(missing), used + total, lemmas)
            index.put_many(missing, np.arange(n, n + len(missing), dtype=np.uint64))
        self._pool = (index, starts, classes, n + len(missing), used + total if len(missing) else used, lemmas)
        return self._pool

    # -- candidates and gold --------------------------------------------------
    def _candidates(self, attrs, text_of, training, forced_sets=True):
        forms = np.ascontiguousarray(attrs[FORM])
        upos = np.ascontiguousarray(attrs[UPOS])
        keys = pair_keys(forms, upos)
        forced = np.full(attrs.shape[1], -1, dtype=np.int32)
        a = self._arrays
        if not training and len(a["lexicon_keys"]):
            forced = self._lexicon.find(keys)
            if len(a["form_keys"]):
                by_form = self._form_lexicon.find(forms)
                forced = np.where(forced >= 0, forced, by_form).astype(np.int32)
        # the words whose candidate sets are needed (all, or those the lexicon does not force)
        need = None if forced_sets else np.flatnonzero(forced < 0)
        if need is not None:
            keys, forms, upos = keys[need], forms[need], upos[need]
        index, starts, classes, n, _, lemmas = self._pool
        found = index.get_many(keys)
        if len(keys) and ((found == NOT_FOUND).any() or found.max() >= n):
            with self._lock:
                index, starts, classes, n, _, lemmas = self._grow_pool(keys, forms, upos, text_of)
                found = index.get_many(keys)
        if need is None:
            cand_set = found.astype(np.int32)
        else:
            cand_set = np.zeros(attrs.shape[1], dtype=np.int32)  # set 0 for the forced words
            cand_set[need] = found
        return cand_set, starts[:n + 1], classes, forced, lemmas

    def _forced_sources(self, attrs, forced):
        # 1: the (form, UPOS) lexicon; 2: the form lexicon, its fallback
        pair = self._lexicon.find(pair_keys(np.ascontiguousarray(attrs[FORM]), np.ascontiguousarray(attrs[UPOS])))
        return np.where(forced < 0, 0, np.where(pair >= 0, 1, 2)).astype(np.int8)

    def _gold(self, sentence, gold):
        column = list(gold) if gold is not None else conll_column(sentence, LEMMA_COLUMN)
        out = np.empty(sentence.n, dtype=np.int32)
        for i, (form, lemma) in enumerate(zip(sentence.forms[1:], column)):
            k = self.script_index.get(edit.extract(form, lemma), -1)
            out[i] = self._classes(form, [k])[0][0] if k >= 0 else -1
        return out

    # -- output -----------------------------------------------------------------
    def lemma(self, form: str, script_id: int) -> str:
        """The lemma class `script_id` (its script) makes of `form`; the form itself when it does
        not apply or leaves nothing (a CoNLL-U field is never empty: hu_szeged's "okra" got "")."""
        return edit.lemmas((self.scripts[self.script_of(script_id)],), form)[0] or form

    def lemma_strings(self, forms: Sequence[str], ids) -> list[str]:
        """`lemma` of each (form, class), cached: applying a script in Python costs microseconds
        a word, and a corpus repeats its (form, class) pairs. The cache starts over at 2**17
        pairs (about 30 MB); threads share it (a dict's get and set are atomic)."""
        cache = self._lemma_texts
        if len(cache) > (1 << 17):
            cache.clear()
        out = []
        for key in zip(forms, np.asarray(ids).tolist()):
            text = cache.get(key)
            if text is None:
                text = cache[key] = self.lemma(*key)
            out.append(text)
        return out

    def lemma_hashes(self, form_ids, ids, text_of) -> np.ndarray:
        """uint64 string ids of the lemmas (as a LEMMA row holds them) of the words with FORM ids
        `form_ids` and scripts `ids`; cached per (form, script) in a nogil map."""
        form_ids = np.ascontiguousarray(form_ids, dtype=np.uint64)
        ids = np.ascontiguousarray(ids, dtype=np.uint64)

        def strings_of(rows):
            return [self.lemma(text_of(f), k) for f, k in zip(form_ids[rows].tolist(), ids[rows].tolist())], None

        return cached_string_ids(self._lemma_ids, self._lock, pair_keys(form_ids, ids), 1 << 21, strings_of)

    def with_lemmas(self, sentence: Sentence, ids) -> tuple[Sentence, list[str]]:
        """(a copy of the sentence whose LEMMA row holds the predicted lemmas, the lemma strings)."""
        ids = np.asarray(ids)
        if ids.shape != (sentence.n,):
            raise ValueError(f"{len(ids)} scripts for a sentence of {sentence.n} words")
        lemmas = self.lemma_strings(sentence.forms[1:], ids)
        attrs = sentence.attrs.copy()
        attrs[LEMMA] = hash_strings([ROOT] + lemmas)
        return replace(sentence, attrs=attrs), lemmas

    # -- state ----------------------------------------------------------------
    def config(self) -> dict:
        return {
            "structure": self.name,
            "hash_bits": self.hash_bits,
            "script_templates": list(self.kinds["script"]),
            "suffix_templates": list(self.kinds["suffix"]),
            "prefix_templates": list(self.kinds["prefix"]),
            "case_templates": list(self.kinds["case"]),
            "min_count": self.min_count,
            "lexicon_min_count": self.lexicon_min_count,
            "upos_candidates": self.upos_candidates,
            "form_lexicon": self.form_lexicon,
            "lexicon_share": self.lexicon_share,
            "known_lemmas": self.known_lemmas,
            "known_templates": list(self.kinds.get("known", KNOWN_TEMPLATES)),
            "scripts": [edit.encode(sc) for sc in self.scripts],
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> "Lemmatizer":
        m = cls(config["hash_bits"], config["script_templates"], config["suffix_templates"],
                config["prefix_templates"], config["case_templates"], config["min_count"], config["lexicon_min_count"],
                config["upos_candidates"], config["form_lexicon"], config.get("lexicon_share", 0.0),
                config.get("known_lemmas", False), config.get("known_templates"))
        m._arrays = {k: np.asarray(arrays[k]) for k in ("counts", "lexicon_keys", "lexicon_scripts", "upos_keys",
                                                         "upos_start", "upos_scripts", "form_keys", "form_scripts")}
        # Saved before lexicon_share existed: no ambiguous pairs.
        m._arrays["ambiguous_keys"] = np.asarray(arrays.get("ambiguous_keys", np.zeros(0, dtype=np.uint64)))
        m._arrays["ambiguous_start"] = np.asarray(arrays.get("ambiguous_start", np.zeros(1, dtype=np.int64)))
        m._arrays["ambiguous_scripts"] = np.asarray(arrays.get("ambiguous_scripts", np.zeros(0, dtype=np.int32)))
        for name in ("lemma_keys", "lemma_forms"):  # saved before known_lemmas existed: none
            m._arrays[name] = np.asarray(arrays.get(name, np.zeros(0, dtype=np.uint64)))
        m._set_scripts([edit.decode(t) for t in config["scripts"]])
        return m
