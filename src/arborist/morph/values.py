"""Word values and feature templates of the lemmatizer and the morphologizer.

A word's values (columns of a uint64 matrix, string ids of `arborist.strings`):
the strings of its form (VALUE_STRINGS: form, lowercase form, prefixes, suffixes of
the lowercase form, shape), 0/1 flags (VALUE_FLAGS), and the token's UPOS, FEATS and
XPOS ids (VALUE_ATTRS, from the Sentence's rows: the taggers' and morphologizer's
predictions at prediction time). String values are computed in Python once per
distinct form (a cache shared by threads, as the tagger's); the kernels combine them.

The inflection of a word (VALUE_DERIVED, "infl") is computed from its form and the string of
its LEMMA row (`inflection`): a model whose templates read it needs a lemmatizer before it,
and is given the lemma strings (`values(..., lemma_of=)`).

Template names, as the tagger's: "bias"; "<value>"; "<value><offset>" (the value of
the word at that offset, BOS/EOS outside the sentence); "a|b|c" conjunctions.
"""
from __future__ import annotations

import os
import re
import threading

import numpy as np

from ..sentence import FEATS, FORM, LEMMA, UPOS, XPOS
from ..strings import hash_strings
from ..tagger.features import word_shape
from .atoms import U64Map, pair_keys

NOT_FOUND = np.uint64(0xFFFFFFFFFFFFFFFF)

PREFIX_LENGTHS = (1, 2, 3, 4)
SUFFIX_LENGTHS = (1, 2, 3, 4, 5, 6, 7)
VALUE_STRINGS = (("form", "lower") + tuple(f"prefix{k}" for k in PREFIX_LENGTHS)
                 + tuple(f"suffix{k}" for k in SUFFIX_LENGTHS) + ("shape",))
VALUE_FLAGS = ("has_digit", "has_hyphen", "upper_initial", "all_upper")
VALUE_ATTRS = ("upos", "feats", "xpos")  # appended: a new one must not move the columns of the others
VALUE_DERIVED = ("infl",)  # from the form and the lemma: `inflection`
VALUES = VALUE_STRINGS + VALUE_FLAGS + VALUE_ATTRS + VALUE_DERIVED
INFL = VALUES.index("infl")
N_FORM_VALUES = len(VALUE_STRINGS) + len(VALUE_FLAGS)
ATTR_ROWS = {"upos": UPOS, "feats": FEATS, "xpos": XPOS}
MAX_PARTS = 3
VOCAB_LIMIT = 1 << 20  # forms cached before the cache is cleared


def form_strings(word: str) -> list[str]:
    lower = word.lower()
    # Suffixes of the lowercase form: inflection is what they show, casing the flags.
    return ([word, lower] + [lower[:k] for k in PREFIX_LENGTHS] + [lower[-k:] for k in SUFFIX_LENGTHS]
            + [word_shape(word)])


def form_flags(word: str) -> tuple[int, ...]:
    return (int(any(ch.isdigit() for ch in word)), int("-" in word), int(word[:1].isupper()), int(word.isupper()))


def inflection(form: str, lemma: str | None) -> str:
    """What inflection does to the lemma: the lowercase form and lemma past their common
    prefix ("evlerinde", "ev" -> "lerinde/"; "went", "go" -> "went/go"). Suffix templates read a
    fixed number of characters; this reads the ending wherever the stem ends. "?" when the
    lemma is not known (an input without lemmas)."""
    if lemma is None or lemma == "_":
        return "?"
    f, l = form.lower(), lemma.lower()
    k = len(os.path.commonprefix((f, l)))
    return f"{f[k:]}/{l[k:]}"


def template_parts(name: str) -> tuple[tuple[int, int], ...]:
    """The (VALUES column, word offset) pairs that template `name` conjoins."""
    if name == "bias":
        return ()
    parts = []
    for piece in name.split("|"):
        match = re.fullmatch(r"([a-z_0-9]+?)([+-][0-9]+)?", piece)
        if match is None or match.group(1) not in VALUES:
            raise ValueError(f"template {name!r}: {piece!r} is not one of {VALUES} with an optional offset")
        parts.append((VALUES.index(match.group(1)), int(match.group(2) or 0)))
    if len(parts) > MAX_PARTS:
        raise ValueError(f"template {name!r} conjoins more than {MAX_PARTS} values")
    return tuple(parts)


def template_table(templates, namespace: str):
    """(seeds, n_parts, columns, offsets) of the templates; seeds depend on `namespace` so
    that two models never share a feature by accident."""
    if len(set(templates)) != len(templates):
        raise ValueError(f"duplicate templates in {list(templates)}")
    n_parts = np.zeros(len(templates), dtype=np.int32)
    columns = np.zeros((len(templates), MAX_PARTS), dtype=np.int32)
    offsets = np.zeros((len(templates), MAX_PARTS), dtype=np.int32)
    for j, name in enumerate(templates):
        parts = template_parts(name)
        n_parts[j] = len(parts)
        for m, (column, offset) in enumerate(parts):
            columns[j, m], offsets[j, m] = column, offset
    seeds = hash_strings([f"{namespace}/{name}" for name in templates])
    return seeds, n_parts, columns, offsets


def reads_attrs(templates) -> set[str]:
    """The token attributes (VALUE_ATTRS: "upos", "feats", "xpos") and derived values
    (VALUE_DERIVED: "infl") some template reads."""
    out = set()
    for name in templates:
        for column, _ in template_parts(name):
            if VALUES[column] in VALUE_ATTRS + VALUE_DERIVED:
                out.add(VALUES[column])
    return out


class FormValues:
    """Cache of the form values (VALUE_STRINGS and VALUE_FLAGS) per FORM id. The values of a
    form do not depend on the model, so the lemmatizer and the morphologizer share one
    cache (`SHARED`) and a word's strings are hashed once for both. Rows are found by a
    nogil hash map (`atoms.U64Map`), one call per batch."""

    def __init__(self):
        self.lock = threading.Lock()
        self._state = (U64Map(), np.zeros((64, N_FORM_VALUES), dtype=np.uint64), 0)  # map, table, rows used
        self._inflections = U64Map()  # pair_keys(FORM id, LEMMA id) -> string id of the inflection

    def __reduce__(self):
        # A copy (Ray tasks and actors) is a cache of the receiving process, whose values follow
        # from the forms: the shared one there when this is the shared one here.
        return (_shared, ()) if self is SHARED else (FormValues, ())

    def rows(self, form_ids, text_of) -> np.ndarray:
        ids = np.ascontiguousarray(form_ids, dtype=np.uint64)
        index, table, used = self._state  # one snapshot: a table always holds the rows its map names
        found = index.get_many(ids)
        if len(ids) and (found == NOT_FOUND).any() or (len(ids) and found.max() >= used):
            with self.lock:
                index, table, used = self._add(ids, text_of)
                found = index.get_many(ids)
        return table[found.astype(np.intp)]

    def _add(self, ids: np.ndarray, text_of):
        """Add the forms of `ids` not in the cache (lock held); returns the new state."""
        index, table, used = self._state
        missing = np.unique(ids[index.get_many(ids) == NOT_FOUND])
        if used + len(missing) > VOCAB_LIMIT:
            index, table, used = U64Map(), np.zeros((64, N_FORM_VALUES), dtype=np.uint64), 0
            missing = np.unique(ids)
        if len(missing):
            texts = [text_of(f) for f in missing.tolist()]
            rows = np.empty((len(missing), N_FORM_VALUES), dtype=np.uint64)
            rows[:, :len(VALUE_STRINGS)] = hash_strings([s for t in texts for s in form_strings(t)]).reshape(
                len(missing), len(VALUE_STRINGS))
            rows[:, len(VALUE_STRINGS):] = np.array([form_flags(t) for t in texts], dtype=np.uint64)
            if used + len(missing) > table.shape[0]:
                grown = np.zeros((max(2 * table.shape[0], used + len(missing)), N_FORM_VALUES), dtype=np.uint64)
                grown[:used] = table[:used]
                table = grown
            table[used:used + len(missing)] = rows
            # Publish the table before the map names its new rows (readers check `used`).
            self._state = (index, table, used + len(missing))
            index.put_many(missing, np.arange(used, used + len(missing), dtype=np.uint64))
        self._state = (index, table, used + len(missing))
        return self._state

    def values(self, attrs: np.ndarray, text_of, lemma_of=None) -> np.ndarray:
        """(words, len(VALUES)) uint64 of the words whose attribute columns are `attrs` (7, words).
        `lemma_of(LEMMA id)`: the lemma's string or None, for the inflections (0 without)."""
        out = np.empty((attrs.shape[1], len(VALUES)), dtype=np.uint64)
        out[:, :N_FORM_VALUES] = self.rows(attrs[FORM], text_of)
        for k, name in enumerate(VALUE_ATTRS):
            out[:, N_FORM_VALUES + k] = attrs[ATTR_ROWS[name]]
        out[:, INFL] = self.inflections(attrs[FORM], attrs[LEMMA], text_of, lemma_of) if lemma_of is not None else 0
        return out

    def sentence_values(self, sentence) -> np.ndarray:
        text = dict(zip(sentence.attrs[FORM, 1:].tolist(), sentence.forms[1:]))
        return self.values(sentence.attrs[:, 1:], text.__getitem__)

    def inflections(self, form_ids, lemma_ids, text_of, lemma_of) -> np.ndarray:
        """String ids of `inflection(form, lemma)`, cached per (FORM id, LEMMA id) pair; a pair
        whose lemma string is unknown is not cached (a later batch may know it)."""
        form_ids = np.ascontiguousarray(form_ids, dtype=np.uint64)
        lemma_ids = np.ascontiguousarray(lemma_ids, dtype=np.uint64)

        def strings_of(rows):
            lemmas = [lemma_of(m) for m in lemma_ids[rows].tolist()]
            texts = [inflection(text_of(f), m) for f, m in zip(form_ids[rows].tolist(), lemmas)]
            return texts, np.array([m is not None for m in lemmas], dtype=bool)

        return cached_string_ids(self._inflections, self.lock, pair_keys(form_ids, lemma_ids), VOCAB_LIMIT,
                                 strings_of)


def cached_string_ids(cache: U64Map, lock, keys: np.ndarray, limit: int, strings_of) -> np.ndarray:
    """The string ids `cache` (a nogil map, read without the lock, written under it) holds for
    `keys`; the missing ones are made by `strings_of(rows)`, rows the first position of each
    distinct missing key, which returns their strings and which of them may be cached (None:
    all). The cache is cleared once it holds more than `limit` entries."""
    out = cache.get_many(keys)
    missing = np.flatnonzero(out == NOT_FOUND)
    if len(missing):
        new, first = np.unique(keys[missing], return_index=True)
        texts, cacheable = strings_of(missing[first])
        ids = hash_strings(texts)
        with lock:
            if len(cache) > limit:
                cache.clear()
            cache.put_many(new, ids) if cacheable is None else cache.put_many(new[cacheable], ids[cacheable])
        out[missing] = ids[np.searchsorted(new, keys[missing])]
    return out


SHARED = FormValues()


def _shared() -> FormValues:
    return SHARED
