"""Arc-label features for the second-stage labeler, hashed.

Given a tree (a heads array), every word m has one arc (h = heads[m], m) to label. A
template is a list of atoms, each a value of that arc:

    h.ATTR, m.ATTR, g.ATTR   an attribute (form, lower, lemma, upos, xpos, prefix, feats)
                             of the head, the modifier, or the head's head (g of an arc
                             from the root is a NONE value); h and m take an offset,
                             h+1.upos, m-1.form (outside the sentence: BOS / EOS)
    dir, dist                the arc's direction, its binned length
    sib.ATTR                 one feature per other dependent s of h, with the side of m
                             that s is on (the head's other dependents)
    child.ATTR               one feature per dependent c of m, with its side

A template holds at most one of sib / child. The key of a feature is the hash of its
template and atom values; class k of feature key f has the weight (f + k) & mask, so
the K weights of one feature are adjacent, as in the tagger's emissions.

`label_keys` lists each word's feature keys (CSR); `score_labels` and `add_labels`
read and update weights from those lists, so scores are exactly w . phi.
"""
from libc.math cimport exp
from libc.stdint cimport uint64_t, int64_t
import numpy

from ..hashing cimport combine, mix64
from ..weights cimport Weights, prefetch
from ..sentence import ATTR_NAMES
from ..strings import hash_string

DEFAULT_LABEL_TEMPLATES = (
    "dir",
    # the modifier
    "m.form", "m.lower dir", "m.lemma", "m.prefix", "m.upos", "m.xpos", "m.feats", "m.upos dir", "m.xpos dir",
    "m.upos m.feats dir", "m.upos dir dist", "m.lemma m.upos dir",
    # the head
    "h.form", "h.lemma", "h.upos", "h.xpos", "h.feats", "h.lemma h.upos dir",
    # head and modifier
    "h.upos m.upos dir", "h.xpos m.xpos dir", "h.upos m.upos dir dist", "h.lemma m.lemma", "h.form m.form",
    "h.lemma m.upos dir", "h.upos m.lemma dir", "h.upos m.feats dir", "h.feats m.feats", "h.upos m.xpos m.feats",
    # the grandparent
    "g.upos h.upos m.upos dir", "g.lemma h.upos m.upos", "g.upos h.lemma",
    # context
    "m-1.upos m.upos", "m.upos m+1.upos", "m-1.lower m.upos", "m.upos m+1.lower", "h.upos m-1.upos m.upos dir",
    "h.upos m.upos m+1.upos dir", "h-1.upos h.upos m.upos", "h.upos h+1.upos m.upos",
    # the head's other dependents and the modifier's own
    "sib.upos h.upos m.upos", "sib.xpos m.xpos dir", "sib.lower m.upos", "child.upos m.upos", "child.lower m.upos",
    "child.upos h.upos m.upos dir", "child.feats m.upos",
)

# Atom kinds in the compiled template table.
cdef enum:
    HEAD = 0
    MOD = 1
    GRAND = 2
    SIB = 3
    CHILD = 4
    DIR = 5
    DIST = 6

ROLES = {"h": HEAD, "m": MOD, "g": GRAND, "sib": SIB, "child": CHILD}
cdef int MAX_ATOMS = 6
cdef int MAX_OFFSET = 2
cdef uint64_t BOS = hash_string("<S>")
cdef uint64_t EOS = hash_string("</S>")
cdef uint64_t NONE = hash_string("<NONE>")


cdef inline int label_distance_bin(int d) noexcept nogil:
    if d <= 3:
        return d
    if d <= 6:
        return 4
    if d <= 10:
        return 5
    return 6


def parse_label_template(str template):
    """'h.upos m-1.form dir' -> [(kind, attribute row, offset), ...]."""
    atoms = []
    for atom in template.split():
        if atom in ("dir", "dist"):
            atoms.append((DIR if atom == "dir" else DIST, -1, 0))
            continue
        try:
            where, attr = atom.split(".")
            role = where.rstrip("+-0123456789")
            offset = int(where[len(role):] or 0)
            if role not in ROLES or attr not in ATTR_NAMES or abs(offset) > MAX_OFFSET:
                raise ValueError
            if offset and role not in ("h", "m"):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"bad label feature atom {atom!r} in template {template!r}: expected dir, dist, "
                f"h|m[+-k].ATTR (|k| <= {MAX_OFFSET}), g.ATTR, sib.ATTR or child.ATTR with ATTR one of "
                f"{', '.join(ATTR_NAMES)}"
            ) from None
        atoms.append((ROLES[role], ATTR_NAMES.index(attr), offset))
    if not atoms:
        raise ValueError("an empty label feature template")
    if len(atoms) > MAX_ATOMS:
        raise ValueError(f"label template {template!r} has more than {MAX_ATOMS} atoms")
    if sum(kind in (SIB, CHILD) for kind, _, _ in atoms) > 1:
        raise ValueError(f"label template {template!r}: at most one sib or child atom")
    return atoms


cdef class LabelFeatures:
    """The labeler's feature set: templates -> per-word hashed feature keys."""

    cdef readonly tuple templates
    cdef readonly int bits
    cdef object table, seeds, multi

    def __init__(self, templates=DEFAULT_LABEL_TEMPLATES, int bits=20):
        if not 1 <= bits <= 32:
            raise ValueError(f"hash_bits must be between 1 and 32 (the weight vector's limit), got {bits}")
        self.templates = tuple(templates)
        if not self.templates:
            raise ValueError("the labeler needs at least one feature template")
        self.bits = bits
        T = len(self.templates)
        # table[t, a] = (kind, attribute row, offset); kind -1 ends the list. multi[t]: the
        # index of the template's sib/child atom, or -1.
        self.table = numpy.full((T, MAX_ATOMS, 3), -1, dtype=numpy.intc)
        self.multi = numpy.full(T, -1, dtype=numpy.intc)
        self.seeds = numpy.array([hash_string(f"label/{t}") for t in self.templates], dtype=numpy.uint64)
        for t, template in enumerate(self.templates):
            for a, (kind, row, offset) in enumerate(parse_label_template(template)):
                self.table[t, a] = (kind, row, offset)
                if kind in (SIB, CHILD):
                    self.multi[t] = a

    def keys(self, sentence, heads):
        """(keys uint64, offsets int64 (n+2,)): word m's feature keys are keys[offsets[m]:offsets[m+1]]
        (none for the root, m = 0), for the arcs of the tree `heads` (heads[0] = -1)."""
        cdef const uint64_t[:, :] attrs = sentence.attrs
        cdef int n = sentence.n
        H = numpy.asarray(heads)
        if H.dtype != numpy.int32:  # the parser's own heads are int32; check others before casting
            if H.dtype.kind not in "iu":
                raise ValueError(f"heads must be integers, got {H.dtype}")
            if H.shape == (n + 1,) and n and (H[1:].min() < 0 or H[1:].max() > n):
                raise ValueError(f"{sentence.source}:{sentence.first_line}: a head outside 0..{n}")
            H = H.astype(numpy.int32)
        H = numpy.ascontiguousarray(H)
        if H.shape != (n + 1,):
            raise ValueError(f"heads must have n + 1 = {n + 1} entries, got {H.shape}")
        cdef const int[::1] hv = H
        cdef int m
        # Dependents of each token, in word order: kids[start[h]:start[h + 1]] (a counting sort).
        start_arr = numpy.zeros(n + 2, dtype=numpy.int64)
        kids_arr = numpy.empty(max(n, 1), dtype=numpy.int32)
        fill_arr = numpy.empty(n + 1, dtype=numpy.int64)
        cdef int64_t[::1] start = start_arr, fill = fill_arr
        cdef int[::1] kids = kids_arr
        cdef bint bad = False
        with nogil:
            for m in range(1, n + 1):
                if hv[m] < 0 or hv[m] > n:
                    bad = True
                    break
        if bad:
            raise ValueError(f"{sentence.source}:{sentence.first_line}: a head outside 0..{n}")
        with nogil:
            _children(n, hv, start, fill, kids)
        cdef const int[:, :, ::1] table = self.table
        cdef const int[::1] multi = self.multi
        cdef const uint64_t[::1] seeds = self.seeds
        cdef int T = len(self.templates), t, h
        cdef int64_t total = 0, j
        # How many keys each word has: one per plain template, one per sibling / child.
        offsets_arr = numpy.zeros(n + 2, dtype=numpy.int64)
        cdef int64_t[::1] offsets = offsets_arr
        cdef int64_t n_sib, n_child
        with nogil:
            for m in range(1, n + 1):
                h = hv[m]
                n_sib = start[h + 1] - start[h] - 1
                n_child = start[m + 1] - start[m]
                for t in range(T):
                    if multi[t] < 0:
                        total += 1
                    elif table[t, multi[t], 0] == SIB:
                        total += n_sib
                    else:
                        total += n_child
                offsets[m + 1] = total
        keys_arr = numpy.empty(total, dtype=numpy.uint64)
        cdef uint64_t[::1] out = keys_arr
        with nogil:
            for m in range(1, n + 1):
                _word_keys(m, T, table, multi, seeds, start, kids, hv, attrs, 0, n, &out[offsets[m]])
        return keys_arr, offsets_arr

    def label_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, heads, const double[::1] w,
                   int n_labels, int root_label=-1):
        """The best label of every arc of every tree of a batch, in one region without the GIL
        (threads sharing a model run in parallel): sentence i is columns starts[i]..starts[i+1]-1
        of `attrs` and of `heads` (sentence-local heads, the root's ignored). Returns int32 label
        ids in the same columns, -1 at each root: the same labels as `keys`, `score` and the
        first highest class one sentence at a time. With `root_label` >= 0 the tree constrains
        the labels as UD does: a word attached to the root gets `root_label`, and no other word
        gets it."""
        return self._label_many(attrs, starts, heads, w, n_labels, root_label, 0.0)[0]

    def label_marginals_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, heads,
                             const double[::1] w, int n_labels, int root_label=-1, double temperature=1.0):
        """`label_many`'s labels and each word's label distribution given its arc: the softmax of
        its labels' scores / temperature under the same constraint (with `root_label` >= 0, a
        word attached to the root is `root_label` with probability 1 and no other word is), in
        the same region without the GIL. Returns (labels, float64 (N, n_labels) with a zero row
        at each root)."""
        if not temperature > 0.0:
            raise ValueError(f"the temperature must be positive, got {temperature!r}")
        return self._label_many(attrs, starts, heads, w, n_labels, root_label, temperature)

    def _label_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, heads, const double[::1] w,
                    int n_labels, int root_label, double temperature):
        """The kernel of `label_many` (temperature 0: labels only) and `label_marginals_many`."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        if n_labels < 1:
            raise ValueError("n_labels must be at least 1")
        cdef Py_ssize_t n_sentences = starts.shape[0] - 1, i, N = attrs.shape[1]
        if attrs.shape[0] != len(ATTR_NAMES) or (n_sentences >= 0 and starts[n_sentences] != N):
            raise ValueError("attrs must be (7, starts[-1])")
        H = numpy.ascontiguousarray(heads, dtype=numpy.int32)
        if H.shape != (N,):
            raise ValueError(f"heads must have {N} entries, got {H.shape}")
        labels_arr = numpy.full(N, -1, dtype=numpy.int32)
        cdef bint soft = temperature > 0.0
        probs_arr = numpy.zeros((int(N), int(n_labels)) if soft else (1, 1))
        if n_sentences <= 0:
            return labels_arr, probs_arr
        lengths = numpy.diff(numpy.asarray(starts))
        if (lengths < 1).any():
            raise ValueError("every sentence needs its root column")
        if starts[0] != 0:
            raise ValueError("starts must begin at 0")
        word = numpy.ones(N, dtype=bool)
        word[numpy.asarray(starts)[:-1]] = False
        n_of = numpy.repeat(lengths - 1, lengths)
        if ((H < 0) | (H > n_of))[word].any():
            raise ValueError("a head outside 0..n")
        cdef int size = int(lengths.max()), T = len(self.templates), n, m, k, best_k
        cdef const int[::1] hv = H
        cdef int64_t[::1] start = numpy.zeros(size + 1, dtype=numpy.int64), fill = numpy.empty(size, dtype=numpy.int64)
        cdef int[::1] kids = numpy.empty(size, dtype=numpy.int32)
        cdef uint64_t[::1] word_keys = numpy.empty(T * size, dtype=numpy.uint64)
        cdef double[::1] row = numpy.empty(n_labels)
        cdef const int[:, :, ::1] table = self.table
        cdef const int[::1] multi = self.multi
        cdef const uint64_t[::1] seeds = self.seeds
        cdef int[::1] labels = labels_arr
        cdef const double* wp = &w[0]
        cdef Py_ssize_t base
        cdef int64_t j, count
        cdef double[:, ::1] probs = probs_arr
        cdef double top, total
        with nogil:
            for i in range(n_sentences):
                base = starts[i]
                n = <int>(starts[i + 1] - base) - 1
                if n == 0:
                    continue
                for m in range(n + 2):
                    start[m] = 0
                _children(n, hv[base:base + n + 1], start, fill, kids)
                for m in range(1, n + 1):
                    count = _word_keys(m, T, table, multi, seeds, start, kids, hv[base:base + n + 1], attrs, base, n,
                                       &word_keys[0])
                    for j in range(count):
                        prefetch(wp, word_keys[j] & mask)
                    for k in range(n_labels):
                        row[k] = 0.0
                    for j in range(count):
                        _add_block(&row[0], wp, word_keys[j] & mask, mask, n_labels)
                    if root_label >= 0 and hv[base + m] == 0:
                        labels[base + m] = root_label
                        if soft:
                            probs[base + m, root_label] = 1.0
                        continue
                    best_k = 1 if root_label == 0 and n_labels > 1 else 0
                    for k in range(best_k + 1, n_labels):
                        if row[k] > row[best_k] and k != root_label:
                            best_k = k
                    labels[base + m] = best_k
                    if soft:
                        # the softmax of row / T without the root label (which stays 0)
                        top = row[best_k] / temperature
                        total = 0.0
                        for k in range(n_labels):
                            if k != root_label:
                                probs[base + m, k] = exp(row[k] / temperature - top)
                                total += probs[base + m, k]
                        for k in range(n_labels):
                            probs[base + m, k] = probs[base + m, k] / total
        return labels_arr, probs_arr

    def score(self, keys, offsets, const double[::1] w, int n_labels):
        """(n+1, n_labels) float64: S[m, k] = w . phi(m, k); row 0 (the root) is 0."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        cdef const uint64_t[::1] kv = keys
        cdef const int64_t[::1] ov = offsets
        out = numpy.zeros((ov.shape[0] - 1, n_labels))
        cdef double[:, ::1] S = out
        cdef int m, k
        cdef int64_t j
        cdef uint64_t f
        cdef const double* wp = &w[0]
        cdef const double* block
        cdef double* row
        with nogil:
            for j in range(ov[ov.shape[0] - 1]):
                prefetch(wp, kv[j] & mask)
            for m in range(1, ov.shape[0] - 1):
                row = &S[m, 0]
                for j in range(ov[m], ov[m + 1]):
                    _add_block(row, wp, kv[j] & mask, mask, n_labels)
        return out

    def add(self, keys, offsets, coef, Weights weights, double scale=1.0):
        """weights += scale * sum_{m,k} coef[m, k] * phi(m, k) (entries with coef 0 are skipped)."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        cdef const uint64_t[::1] kv = keys
        cdef const int64_t[::1] ov = offsets
        C = numpy.ascontiguousarray(coef, dtype=numpy.float64)
        if C.ndim != 2 or C.shape[0] != ov.shape[0] - 1:
            raise ValueError(f"coefficients must have shape ({ov.shape[0] - 1}, n_labels), got {C.shape}")
        cdef const double[:, ::1] cv = C
        cdef int m, k, K = C.shape[1]
        cdef int64_t j
        cdef uint64_t f, mask = (<uint64_t>1 << self.bits) - 1
        cdef double v
        with nogil:
            for m in range(1, ov.shape[0] - 1):
                for k in range(K):
                    v = cv[m, k]
                    if v == 0.0:
                        continue
                    v *= scale
                    for j in range(ov[m], ov[m + 1]):
                        weights.add((kv[j] + <uint64_t>k) & mask, v)


cdef inline void _add_block(double* row, const double* wp, uint64_t f, uint64_t mask, int n_labels) noexcept nogil:
    """row[k] += the weight of class k of feature index f, for every class k."""
    cdef int k
    cdef const double* block
    if f + <uint64_t>n_labels <= mask + 1:
        # The feature's K weights are one contiguous block: a loop the compiler vectorizes.
        block = wp + f
        for k in range(n_labels):
            row[k] += block[k]
    else:  # the block wraps around the end of the weight vector
        for k in range(n_labels):
            row[k] += wp[(f + <uint64_t>k) & mask]


cdef void _children(int n, const int[::1] hv, int64_t[::1] start, int64_t[::1] fill, int[::1] kids) noexcept nogil:
    """Dependents of each token in word order, kids[start[h]:start[h + 1]] (a counting sort);
    start (n+2) must be zero."""
    cdef int m
    for m in range(1, n + 1):
        start[hv[m] + 1] += 1
    for m in range(n + 1):
        start[m + 1] += start[m]
        fill[m] = start[m]
    for m in range(1, n + 1):
        kids[fill[hv[m]]] = m
        fill[hv[m]] += 1


cdef int64_t _word_keys(int m, int T, const int[:, :, ::1] table, const int[::1] multi, const uint64_t[::1] seeds,
                        const int64_t[::1] start, const int[::1] kids, const int[::1] hv, const uint64_t[:, :] attrs,
                        Py_ssize_t base, int n, uint64_t* out) noexcept nogil:
    """Write word m's feature keys to `out`; return how many. The sentence's tokens are
    columns base..base+n of attrs; hv are its (local) heads."""
    cdef int t, h = hv[m], other, lo, hi, j
    cdef int64_t at = 0
    cdef uint64_t key
    for t in range(T):
        key = _fixed_key(seeds[t], table[t], h, m, hv, attrs, base, n)
        if multi[t] < 0:
            out[at] = mix64(key)
            at += 1
            continue
        if table[t, multi[t], 0] == SIB:
            lo, hi, other = <int>start[h], <int>start[h + 1], m
        else:
            lo, hi, other = <int>start[m], <int>start[m + 1], -1
        for j in range(lo, hi):
            if kids[j] == other:
                continue
            out[at] = mix64(combine(combine(key, attrs[table[t, multi[t], 1], base + kids[j]]),
                                    <uint64_t>(1 if kids[j] < m else 2)))
            at += 1
    return at


cdef inline uint64_t _fixed_key(uint64_t seed, const int[:, ::1] atoms, int h, int m, const int[::1] heads,
                                const uint64_t[:, :] attrs, Py_ssize_t base, int n) noexcept nogil:
    """The hash of a template's single-valued atoms for arc (h, m) (sib/child atoms are skipped)."""
    cdef int a, kind, pos, d
    cdef uint64_t key = seed, value
    for a in range(atoms.shape[0]):
        kind = atoms[a, 0]
        if kind < 0:
            break
        if kind == DIR:
            value = 1 if m < h else 2
        elif kind == DIST:
            d = m - h if m > h else h - m
            value = <uint64_t>(16 + label_distance_bin(d))
        elif kind == GRAND:
            value = NONE if h == 0 else attrs[atoms[a, 1], base + heads[h]]
        elif kind == HEAD or kind == MOD:
            pos = (h if kind == HEAD else m) + atoms[a, 2]
            value = BOS if pos < 0 else EOS if pos > n else attrs[atoms[a, 1], base + pos]
        else:
            continue
        key = combine(key, value)
    return key
