"""Per-word choice among candidate classes, each class a sum of hashed atom scores.

The lemmatizer (classes: edit scripts) and the morphologizer (classes: FEATS bundles)
both pick one class per word out of a small candidate set, without transitions. A class
is a list of atoms (the whole class, and the pieces it is made of: a script's suffix
rule and casing, a bundle's Feature=Value pairs), so a class seen rarely still gets the
weights its pieces learned from every other class that shares them:

  score(word, class) = sum over atoms a of class: sum over templates j of kind(a):
                           w[(key[word, j] + a) & mask]

key[word, j] is template j's feature of the word (its values and its neighbours',
combined with the template's seed by the splitmix64 mixer, as the tagger's emission
keys); atom a of that key owns weight slot key + a, so all atoms of one feature are
adjacent (one feature costs few cache lines for every candidate). Atom kinds select
which templates an atom is conjoined with (the whole class usually gets fewer).

An atom's score is computed once per word (memoized by a stamp) and shared by every
candidate that contains it. `score_parts` and `add` enumerate exactly the same
features, so scores are w . phi; `predict_many` computes keys and the argmax of every
word of a batch in one region without the GIL, with the same ties as `segment_argmax`
(the first best candidate).
"""
from libc.stdint cimport uint64_t, int64_t
from libc.math cimport INFINITY, exp

import numpy

from ..hashing cimport combine, mix64
from ..weights cimport Weights
from ..strings import hash_string, hash_strings

cdef uint64_t BOS = hash_string("<S>")
cdef uint64_t EOS = hash_string("</S>")
MAX_PARTS = 3


cdef void _keys(const uint64_t[:, ::1] values, Py_ssize_t base, int n, const uint64_t[::1] seeds,
                const int[::1] n_parts, const int[:, ::1] columns, const int[:, ::1] offsets,
                uint64_t[:, ::1] keys, Py_ssize_t out_base) noexcept nogil:
    """keys[out_base + t, j]: template j's feature of word t of the sentence whose n words are
    rows base..base+n-1 of `values` (outside the sentence every value is BOS/EOS)."""
    cdef int t, j, m, pos
    cdef uint64_t key
    for t in range(n):
        for j in range(seeds.shape[0]):
            key = seeds[j]
            for m in range(n_parts[j]):
                pos = t + offsets[j, m]
                key = combine(key, BOS if pos < 0 else EOS if pos >= n else values[base + pos, columns[j, m]])
            keys[out_base + t, j] = key


cdef double _class_score(const uint64_t[:, ::1] kv, Py_ssize_t row, int c, const double* w, uint64_t mask,
                         const int64_t[::1] class_start, const int[::1] class_atoms, const int[::1] atom_kind,
                         const int64_t[::1] kind_start, const int[::1] kind_templates,
                         double[::1] memo, int64_t[::1] stamp, int64_t word) noexcept nogil:
    """Score of class c at keys row `row`; atom scores are memoized per `word` (a stamp)."""
    cdef double total = 0.0, s
    cdef Py_ssize_t m, q
    cdef int a, g
    for m in range(class_start[c], class_start[c + 1]):
        a = class_atoms[m]
        if stamp[a] != word:
            g = atom_kind[a]
            s = 0.0
            for q in range(kind_start[g], kind_start[g + 1]):
                s += w[(kv[row, kind_templates[q]] + <uint64_t>a) & mask]
            memo[a] = s
            stamp[a] = word
        total += memo[a]
    return total


cdef class AtomTables:
    """The fixed tables of a choice model: templates, atom kinds, the atoms of each class."""

    cdef readonly int bits, n_templates, n_classes, n_atoms
    cdef readonly uint64_t mask
    cdef readonly object seeds, n_parts, columns, offsets
    cdef readonly object kind_start, kind_templates, class_start, class_atoms, atom_kind

    def __init__(self, int bits, seeds, n_parts, columns, offsets, kind_start, kind_templates,
                 class_start, class_atoms, atom_kind):
        if not 1 <= bits <= 32:
            raise ValueError(f"hash bits must be in 1..32, got {bits}")
        self.bits = bits
        self.mask = (<uint64_t>1 << bits) - 1
        self.seeds = numpy.ascontiguousarray(seeds, dtype=numpy.uint64)
        self.n_parts = numpy.ascontiguousarray(n_parts, dtype=numpy.int32)
        self.columns = numpy.ascontiguousarray(columns, dtype=numpy.int32).reshape(-1, MAX_PARTS)
        self.offsets = numpy.ascontiguousarray(offsets, dtype=numpy.int32).reshape(-1, MAX_PARTS)
        self.kind_start = numpy.ascontiguousarray(kind_start, dtype=numpy.int64)
        self.kind_templates = numpy.ascontiguousarray(kind_templates, dtype=numpy.int32)
        self.class_start = numpy.ascontiguousarray(class_start, dtype=numpy.int64)
        self.class_atoms = numpy.ascontiguousarray(class_atoms, dtype=numpy.int32)
        self.atom_kind = numpy.ascontiguousarray(atom_kind, dtype=numpy.int32)
        self.n_templates = len(self.seeds)
        self.n_classes = len(self.class_start) - 1
        self.n_atoms = len(self.atom_kind)
        T = self.n_templates
        if not (len(self.n_parts) == len(self.columns) == len(self.offsets) == T):
            raise ValueError("template tables disagree in length")
        if self.n_classes < 1 or self.class_start[0] != 0 or self.class_start[len(self.class_start) - 1] != len(self.class_atoms):
            raise ValueError("class_start must run from 0 to len(class_atoms)")
        if len(self.class_atoms) and (self.class_atoms.min() < 0 or self.class_atoms.max() >= self.n_atoms):
            raise ValueError("an atom id of a class is out of range")
        G = len(self.kind_start) - 1
        if len(self.atom_kind) and (self.atom_kind.min() < 0 or self.atom_kind.max() >= G):
            raise ValueError("an atom kind is out of range")
        if len(self.kind_templates) and (self.kind_templates.min() < 0 or self.kind_templates.max() >= T):
            raise ValueError("a kind's template index is out of range")

    def _check_w(self, w):
        if w.shape[0] != <Py_ssize_t>(self.mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")

    def keys(self, values):
        """(n, templates) uint64: the template keys of one sentence's words (values: (n, V))."""
        values = numpy.ascontiguousarray(values, dtype=numpy.uint64)
        if values.ndim != 2:
            raise ValueError("values must be (words, value columns)")
        self._check_columns(values)
        out = numpy.empty((values.shape[0], self.n_templates), dtype=numpy.uint64)
        cdef const uint64_t[:, ::1] vv = values
        cdef uint64_t[:, ::1] kv = out
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.columns, offsets = self.offsets
        with nogil:
            _keys(vv, 0, <int>vv.shape[0], seeds, n_parts, columns, offsets, kv, 0)
        return out

    def _check_columns(self, values):
        if self.n_templates and values.shape[0] and int(self.columns.max()) >= values.shape[1]:
            raise ValueError(f"templates read value column {int(self.columns.max())}, values have {values.shape[1]}")

    def score_parts(self, keys, const int64_t[::1] cand_start, const int[::1] cand, const double[::1] w):
        """Scores of every (word, candidate) part: flat, word i's candidates at cand_start[i]..cand_start[i+1]-1."""
        self._check_w(w)
        keys = numpy.ascontiguousarray(keys, dtype=numpy.uint64)
        self._check_parts(keys, cand_start, cand)
        out = numpy.zeros(cand.shape[0])
        if cand.shape[0] == 0:
            return out
        cdef double[::1] o = out
        cdef const uint64_t[:, ::1] kv = keys
        cdef double[::1] memo = numpy.zeros(self.n_atoms)
        cdef int64_t[::1] stamp = numpy.full(self.n_atoms, -1, dtype=numpy.int64)
        cdef const int64_t[::1] class_start = self.class_start, kind_start = self.kind_start
        cdef const int[::1] class_atoms = self.class_atoms, atom_kind = self.atom_kind, kind_templates = self.kind_templates
        cdef uint64_t mask = self.mask
        cdef Py_ssize_t i, j
        with nogil:
            for i in range(kv.shape[0]):
                for j in range(cand_start[i], cand_start[i + 1]):
                    o[j] = _class_score(kv, i, cand[j], &w[0], mask, class_start, class_atoms, atom_kind,
                                        kind_start, kind_templates, memo, stamp, i)
        return out

    def _check_parts(self, keys, const int64_t[::1] cand_start, const int[::1] cand):
        if keys.ndim != 2 or keys.shape[1] != self.n_templates:
            raise ValueError(f"keys must be (words, {self.n_templates})")
        if cand_start.shape[0] != keys.shape[0] + 1 or cand_start[0] != 0 or cand_start[keys.shape[0]] != cand.shape[0]:
            raise ValueError("cand_start must run from 0 to len(cand), one entry per word and one more")
        c = numpy.asarray(cand)
        if len(c) and (c.min() < 0 or c.max() >= self.n_classes):
            raise ValueError("a candidate class id is out of range")

    def add(self, keys, const int64_t[::1] cand_start, const int[::1] cand, coef, Weights weights, double scale=1.0):
        """weights += scale * sum over parts p of coef[p] * phi(p)."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        keys = numpy.ascontiguousarray(keys, dtype=numpy.uint64)
        self._check_parts(keys, cand_start, cand)
        C = numpy.ascontiguousarray(coef, dtype=numpy.float64)
        if C.shape != (cand.shape[0],):
            raise ValueError(f"coefficients must have shape ({cand.shape[0]},), got {C.shape}")
        cdef const double[::1] cf = C
        cdef const uint64_t[:, ::1] kv = keys
        cdef const int64_t[::1] class_start = self.class_start, kind_start = self.kind_start
        cdef const int[::1] class_atoms = self.class_atoms, atom_kind = self.atom_kind, kind_templates = self.kind_templates
        cdef uint64_t mask = self.mask
        cdef Py_ssize_t i, j, m, q
        cdef int a, c, g
        cdef double v
        with nogil:
            for i in range(kv.shape[0]):
                for j in range(cand_start[i], cand_start[i + 1]):
                    if cf[j] == 0.0:
                        continue
                    v = scale * cf[j]
                    c = cand[j]
                    for m in range(class_start[c], class_start[c + 1]):
                        a = class_atoms[m]
                        g = atom_kind[a]
                        for q in range(kind_start[g], kind_start[g + 1]):
                            weights.add((kv[i, kind_templates[q]] + <uint64_t>a) & mask, v)

    def _check_batch(self, values, const int64_t[::1] word_starts, const int[::1] cand_set,
                     const int64_t[::1] set_start, const int[::1] forced, const double[::1] w):
        """The checked inputs of a batch kernel: values (C-contiguous uint64) and the longest
        sentence's length."""
        self._check_w(w)
        values = numpy.ascontiguousarray(values, dtype=numpy.uint64)
        cdef Py_ssize_t N = values.shape[0], S = word_starts.shape[0] - 1
        if values.ndim != 2 or S < 0 or word_starts[0] != 0 or word_starts[S] != N:
            raise ValueError("values must be (word_starts[-1], V) and word_starts start at 0")
        if cand_set.shape[0] != N or forced.shape[0] != N:
            raise ValueError("cand_set and forced need one entry per word")
        self._check_columns(values)
        sets = numpy.asarray(cand_set)
        if N and (sets.min() < 0 or sets.max() >= set_start.shape[0] - 1):
            raise ValueError("a candidate set id is out of range")
        free = numpy.asarray(forced) < 0
        starts_arr = numpy.asarray(set_start)
        if N and free.any() and (starts_arr[sets[free] + 1] <= starts_arr[sets[free]]).any():
            raise ValueError("a word to score has an empty candidate set")
        if N and (numpy.asarray(forced).max() >= self.n_classes):
            raise ValueError("a forced class id is out of range")
        lengths = numpy.diff(numpy.asarray(word_starts))
        if (lengths < 0).any():
            raise ValueError("word_starts must not decrease")
        return values, int(lengths.max()) if N else 0

    def predict_many(self, values, const int64_t[::1] word_starts, const int[::1] cand_set,
                     const int64_t[::1] set_start, const int[::1] set_classes, const int[::1] forced,
                     const double[::1] w):
        """The best class of every word of a batch, in one region without the GIL: `values`
        (words, V) are the words' values (no roots), sentence i its rows
        word_starts[i]..word_starts[i+1]-1; word k's candidates are candidate set cand_set[k],
        set_classes[set_start[s]..set_start[s+1]-1]; where forced[k] >= 0 that class is taken
        without scoring (a lexicon entry). Returns int32 class ids, one per word: the classes
        `score_parts` then `segment_argmax` give one sentence at a time."""
        values, size = self._check_batch(values, word_starts, cand_set, set_start, forced, w)
        out_arr = numpy.zeros(values.shape[0], dtype=numpy.int32)
        if size:
            self._choose_many(values, size, word_starts, cand_set, set_start, set_classes, forced, w, out_arr,
                              None, None, 1.0)
        return out_arr

    def softmax_many(self, values, const int64_t[::1] word_starts, const int[::1] cand_set,
                     const int64_t[::1] set_start, const int[::1] set_classes, const int[::1] forced,
                     const double[::1] w, double temperature=1.0):
        """`predict_many`'s classes and, for every word it scores (forced[k] < 0), the softmax of
        its candidates' scores divided by `temperature` (`AtomChoice.marginals`), in one region
        without the GIL: (int32 (N,) classes, int64 (N+1,) prob_start, float64 probs), word k's
        probabilities at probs[prob_start[k]:prob_start[k+1]] in the order of its candidate
        set, none for a forced word."""
        if not temperature > 0.0:
            raise ValueError(f"the temperature must be positive, got {temperature!r}")
        values, size = self._check_batch(values, word_starts, cand_set, set_start, forced, w)
        N = values.shape[0]
        sets = numpy.asarray(cand_set, dtype=numpy.intp)
        starts_arr = numpy.asarray(set_start)
        sizes = numpy.where(numpy.asarray(forced) < 0, starts_arr[sets + 1] - starts_arr[sets], 0) if N else sets
        prob_start = numpy.zeros(N + 1, dtype=numpy.int64)
        numpy.cumsum(sizes, out=prob_start[1:])
        probs = numpy.empty(int(prob_start[N]))
        out_arr = numpy.zeros(N, dtype=numpy.int32)
        if size:
            self._choose_many(values, size, word_starts, cand_set, set_start, set_classes, forced, w, out_arr,
                              probs, prob_start, temperature)
        return out_arr, prob_start, probs

    def _choose_many(self, values, int size, const int64_t[::1] word_starts, const int[::1] cand_set,
                     const int64_t[::1] set_start, const int[::1] set_classes, const int[::1] forced,
                     const double[::1] w, int[::1] out, double[::1] probs, const int64_t[::1] prob_start,
                     double temperature):
        """The kernel of `predict_many` (probs None) and `softmax_many` (probs, prob_start given):
        out[k] the best class of word k; with probs, the softmax of its candidates' scores /
        temperature at probs[prob_start[k]..]."""
        cdef Py_ssize_t S = word_starts.shape[0] - 1, i, k, j, j0, o = 0
        cdef const uint64_t[:, ::1] vv = values
        cdef uint64_t[:, ::1] kv = numpy.empty((size, self.n_templates), dtype=numpy.uint64)
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.columns, offsets = self.offsets
        cdef const int64_t[::1] class_start = self.class_start, kind_start = self.kind_start
        cdef const int[::1] class_atoms = self.class_atoms, atom_kind = self.atom_kind, kind_templates = self.kind_templates
        cdef double[::1] memo = numpy.zeros(self.n_atoms)
        cdef int64_t[::1] stamp = numpy.full(self.n_atoms, -1, dtype=numpy.int64)
        cdef uint64_t mask = self.mask
        cdef Py_ssize_t base, n, t
        cdef int best_class, c, K = self.n_classes, bad_class = 0
        cdef bint soft = probs is not None
        cdef double best, s, top, total
        with nogil:
            for i in range(S):
                base = word_starts[i]
                n = word_starts[i + 1] - base
                if n == 0:
                    continue
                _keys(vv, base, <int>n, seeds, n_parts, columns, offsets, kv, 0)
                for t in range(n):
                    k = base + t
                    if forced[k] >= 0:
                        out[k] = forced[k]
                        continue
                    best = -INFINITY
                    j0 = set_start[cand_set[k]]
                    best_class = set_classes[j0]
                    if soft:
                        o = prob_start[k] - j0
                    for j in range(j0, set_start[cand_set[k] + 1]):
                        c = set_classes[j]
                        if c < 0 or c >= K:  # checked here: only the sets in use, not the whole pool
                            bad_class = 1
                            break
                        s = _class_score(kv, t, c, &w[0], mask, class_start, class_atoms, atom_kind,
                                         kind_start, kind_templates, memo, stamp, k)
                        if soft:
                            probs[o + j] = s / temperature
                        if s > best:
                            best, best_class = s, c
                    out[k] = best_class
                    if bad_class:
                        break
                    if soft:
                        # the softmax of scores / T, shifted by its maximum (best / T: division is monotone)
                        top = best / temperature
                        total = 0.0
                        for j in range(prob_start[k], prob_start[k + 1]):
                            probs[j] = exp(probs[j] - top)
                            total += probs[j]
                        for j in range(prob_start[k], prob_start[k + 1]):
                            probs[j] = probs[j] / total
                if bad_class:
                    break
        if bad_class:
            raise ValueError("a candidate class id is out of range")


def segment_argmax(const double[::1] scores, const int64_t[::1] starts):
    """(segments,) int64: the index into `scores` of the first maximum of each segment
    starts[i]..starts[i+1]-1 (every segment non-empty)."""
    cdef Py_ssize_t S = starts.shape[0] - 1, i, j, b
    if S < 0 or (S > 0 and starts[S] != scores.shape[0]):
        raise ValueError("starts must end at len(scores)")
    if S > 0 and (numpy.diff(numpy.asarray(starts)) <= 0).any():
        raise ValueError("every segment needs at least one entry")
    out_arr = numpy.empty(max(S, 0), dtype=numpy.int64)
    cdef int64_t[::1] out = out_arr
    cdef double best
    with nogil:
        for i in range(S):
            b = starts[i]
            best = scores[b]
            for j in range(starts[i] + 1, starts[i + 1]):
                if scores[j] > best:
                    best, b = scores[j], j
            out[i] = b
    return out_arr


def pair_keys(const uint64_t[::1] a, const uint64_t[::1] b):
    """combine(a[i], b[i]) for every i: one 64-bit key of a pair of string ids (lexicon keys)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError("pair_keys needs two arrays of one length")
    out_arr = numpy.empty(a.shape[0], dtype=numpy.uint64)
    cdef uint64_t[::1] out = out_arr
    cdef Py_ssize_t i
    with nogil:
        for i in range(a.shape[0]):
            out[i] = combine(a[i], b[i])
    return out_arr


def _u64map_of(keys, values):
    """A U64Map holding these entries (keys as the map stores them, never 0)."""
    out = U64Map(max(len(keys), 16))
    out.put_many(keys, values)
    return out


cdef class U64Map:
    """A growing open-addressing hash map from uint64 keys to uint64 values, looked up for a
    whole array at once without the GIL: the per-word caches of the prediction path (form ->
    values row, (form, UPOS) -> candidate set, (form, script) -> lemma id) cost a Python dict
    operation per word otherwise. Key 0 is reserved (empty slot); `put_many` maps it to
    1 << 63 (string ids of spaCy symbols are small, so no real key collides). Writers hold
    `lock`; readers see a consistent table because a grown table is a new array."""

    cdef public object lock
    cdef object keys_arr, values_arr
    cdef readonly Py_ssize_t size

    def __init__(self, Py_ssize_t capacity=1024):
        import threading
        cap = 16
        while cap < 2 * capacity:
            cap *= 2
        self.keys_arr = numpy.zeros(cap, dtype=numpy.uint64)
        self.values_arr = numpy.zeros(cap, dtype=numpy.uint64)
        self.size = 0
        self.lock = threading.Lock()

    def __reduce__(self):
        # Pickled (Ray tasks and actors) as its entries, which a map's content can be (a
        # KeyIndex is model state); the copy has its own lock.
        keys, values = self.keys_arr, self.values_arr  # one snapshot, as get_many takes
        used = keys != 0
        return _u64map_of, (keys[used], values[used])

    def __len__(self):
        return self.size

    def get_many(self, keys, uint64_t missing=0xFFFFFFFFFFFFFFFF):
        """values of `keys` (uint64 array), `missing` where a key is absent."""
        cdef const uint64_t[::1] k = numpy.ascontiguousarray(keys, dtype=numpy.uint64)
        out_arr = numpy.empty(k.shape[0], dtype=numpy.uint64)
        cdef uint64_t[::1] out = out_arr
        table_keys, table_values = self.keys_arr, self.values_arr  # one snapshot
        cdef const uint64_t[::1] tk = table_keys
        cdef const uint64_t[::1] tv = table_values
        cdef uint64_t mask = tk.shape[0] - 1, key, h
        cdef Py_ssize_t i
        with nogil:
            for i in range(k.shape[0]):
                key = k[i] if k[i] != 0 else (<uint64_t>1 << 63)
                h = mix64(key) & mask
                while True:
                    if tk[h] == key:
                        out[i] = tv[h]
                        break
                    if tk[h] == 0:
                        out[i] = missing
                        break
                    h = (h + 1) & mask
        return out_arr

    def put_many(self, keys, values):
        """Insert or overwrite (call with `lock` held when threads share the map)."""
        keys = numpy.ascontiguousarray(keys, dtype=numpy.uint64)
        values = numpy.ascontiguousarray(values, dtype=numpy.uint64)
        if keys.shape != values.shape:
            raise ValueError("put_many needs one value per key")
        if 2 * (self.size + keys.shape[0]) > self.keys_arr.shape[0]:
            self._grow(2 * (self.size + keys.shape[0]))
        cdef const uint64_t[::1] k = keys, v = values
        cdef uint64_t[::1] tk = self.keys_arr, tv = self.values_arr
        cdef uint64_t mask = tk.shape[0] - 1, key, h
        cdef Py_ssize_t i, added = 0
        with nogil:
            for i in range(k.shape[0]):
                key = k[i] if k[i] != 0 else (<uint64_t>1 << 63)
                h = mix64(key) & mask
                while tk[h] != 0 and tk[h] != key:
                    h = (h + 1) & mask
                if tk[h] == 0:
                    added += 1
                # The value before the key: a reader that finds the key finds its value.
                tv[h] = v[i]
                tk[h] = key
        self.size += added

    def _grow(self, Py_ssize_t needed):
        cap = self.keys_arr.shape[0]
        while cap < 2 * needed:
            cap *= 2
        old_keys, old_values = self.keys_arr, self.values_arr
        used = old_keys != 0
        new_keys = numpy.zeros(cap, dtype=numpy.uint64)
        new_values = numpy.zeros(cap, dtype=numpy.uint64)
        cdef const uint64_t[::1] ok = numpy.ascontiguousarray(old_keys[used]), ov = numpy.ascontiguousarray(old_values[used])
        cdef uint64_t[::1] tk = new_keys, tv = new_values
        cdef uint64_t mask = cap - 1, h
        cdef Py_ssize_t i
        with nogil:
            for i in range(ok.shape[0]):
                h = mix64(ok[i]) & mask
                while tk[h] != 0:
                    h = (h + 1) & mask
                tk[h] = ok[i]
                tv[h] = ov[i]
        # Readers holding the old arrays keep a consistent (smaller) table.
        self.keys_arr, self.values_arr = new_keys, new_values

    def clear(self):
        self.keys_arr = numpy.zeros(self.keys_arr.shape[0], dtype=numpy.uint64)
        self.values_arr = numpy.zeros(self.keys_arr.shape[0], dtype=numpy.uint64)
        self.size = 0
