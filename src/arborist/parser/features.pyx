"""First-order arc features (McDonald, Crammer and Pereira 2005), hashed.

A template is a list of atoms, each an attribute of the head (h) or modifier (m)
at an offset: "h.form h.xpos m.xpos", "h.xpos h+1.xpos m-1.xpos m.xpos". Every
atom is a per-token value, so for each template the hash of its head-side atoms
is computed once per token (H[t, i]) and likewise the modifier side (M[t, i]);
the feature of arc (h, m) is then mix(H[t, h], M[t, m]), a few cycles. The
special templates "between.upos" and "between.xpos" add one feature (h.tag, b, m.tag)
per distinct tag b strictly between h and m. The special templates "between_count.ATTR=VALUE"
(e.g. "between_count.upos=VERB") count the words strictly between h and m whose ATTR is VALUE,
capped at 15 (TurboParser's verb, punctuation and coordination counts), and add two features:
the count alone, and (h.ATTR, count, m.ATTR). Every feature is used twice: on its own and
conjoined with the arc's direction and distance, in one of two layouts:

  "fine"    11 distance bins a direction (`arc_distance_bin`), the conjoined feature hashed
            anywhere in the table (arborist.DependencyTree.v1's default);
  "coarse"  7 direction-distance codes (modifier right of its head at distance 1, 2, 3-6,
            7 or more; left at 1, 2-3, 4 or more), the conjoined feature in one of the 7
            other slots of its plain feature's 64-byte cache line (slot (s + 1 + code) mod 8
            of the line of slot s). A first-order parser's arc scoring waits on its weights'
            cache misses (a 2**24 table is 128 MB); this layout halves them, and at first
            order the coarser distance is also more accurate (`DependencyTree.v2`'s default;
            README, "Models and configs").

Scoring all (n+1)^2 arcs and adding a scaled feature vector of given arcs to the
weights are the two operations; both enumerate features with the same code
(`_arc_indices`), so the scores are exactly w . phi.
"""
from libc.stdint cimport uint64_t, int8_t, int64_t
from libc.stdlib cimport qsort
from libc.math cimport INFINITY
import numpy

from ..hashing cimport GOLDEN, combine, mix64
from ..weights cimport Weights, prefetch
from .atoms cimport offset_atoms_hash
from .distance cimport arc_distance_bin
from .eisner cimport _fill, _backtrack, _outside
from ..sentence import ATTR_NAMES
from ..strings import hash_string

DEFAULT_TEMPLATES = (
    # unigram: head
    "h.form h.xpos", "h.form", "h.xpos", "h.prefix h.xpos", "h.prefix", "h.upos", "h.lemma h.upos",
    # unigram: modifier
    "m.form m.xpos", "m.form", "m.xpos", "m.prefix m.xpos", "m.prefix", "m.upos", "m.lemma m.upos",
    # bigram
    "h.form h.xpos m.form m.xpos", "h.xpos m.form m.xpos", "h.form m.form m.xpos",
    "h.form h.xpos m.xpos", "h.form h.xpos m.form", "h.form m.form", "h.xpos m.xpos",
    "h.prefix h.xpos m.prefix m.xpos", "h.xpos m.prefix m.xpos", "h.prefix m.prefix m.xpos",
    "h.prefix h.xpos m.xpos", "h.prefix h.xpos m.prefix", "h.prefix m.prefix",
    "h.upos m.upos", "h.upos m.form", "h.form m.upos", "h.lemma m.lemma",
    # surrounding POS
    "h.xpos h+1.xpos m-1.xpos m.xpos", "h-1.xpos h.xpos m-1.xpos m.xpos",
    "h.xpos h+1.xpos m.xpos m+1.xpos", "h-1.xpos h.xpos m.xpos m+1.xpos",
    "h-1.xpos h.xpos m.xpos", "h.xpos h+1.xpos m.xpos", "h.xpos m-1.xpos m.xpos", "h.xpos m.xpos m+1.xpos",
    "h.upos h+1.upos m-1.upos m.upos", "h-1.upos h.upos m-1.upos m.upos",
    "h.upos h+1.upos m.upos m+1.upos", "h-1.upos h.upos m.upos m+1.upos",
    # words around head and modifier
    "h.form m-1.xpos m.xpos", "h.form m.xpos m+1.xpos", "h-1.xpos h.xpos m.form", "h.xpos h+1.xpos m.form",
    "h.form h-1.form", "h.form h+1.form", "m.form m-1.form", "m.form m+1.form",
    "h.lower m.lower h.xpos m.xpos", "h.upos m.upos m.lower", "h.lower h.upos m.upos",
    # morphological features (the FEATS column)
    "h.feats", "m.feats", "h.feats m.feats", "h.xpos h.feats m.xpos m.feats", "h.feats m.xpos", "h.xpos m.feats",
    "h.form m.feats", "h.feats m.form",
    # in-between POS
    "between.upos", "between.xpos",
)

cdef int MAX_ATOMS = 4
cdef int UPOS_ROW = ATTR_NAMES.index("upos")
cdef int MAX_OFFSET = 2
cdef uint64_t BOS = hash_string("<S>")
cdef uint64_t EOS = hash_string("</S>")
N_DISTANCE_BINS = 11
DISTANCE_FEATURES = ("fine", "coarse")


def parse_template(str template):
    """'h-1.xpos m.form' -> ([(attr, offset)...] head side, [...] modifier side)."""
    head, mod = [], []
    for atom in template.split():
        try:
            where, attr = atom.split(".")
            side, offset = where[0], int(where[1:] or 0)
            if side not in "hm" or attr not in ATTR_NAMES or abs(offset) > MAX_OFFSET:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"bad feature atom {atom!r} in template {template!r}: expected h|m[+-k].ATTR with "
                f"|k| <= {MAX_OFFSET} and ATTR one of {', '.join(ATTR_NAMES)}"
            ) from None
        (head if side == "h" else mod).append((ATTR_NAMES.index(attr), offset))
    if len(head) > MAX_ATOMS or len(mod) > MAX_ATOMS:
        raise ValueError(f"template {template!r} has more than {MAX_ATOMS} atoms on one side")
    return head, mod


cdef int MAX_BETWEEN = 4
cdef int MAX_COUNTS = 4
# TurboParser's cap on the in-between counts
cdef int MAX_COUNT = 15


def parse_count_template(str template):
    """'between_count.upos=VERB' -> (attribute row, value)."""
    attr, sep, value = template[len("between_count."):].partition("=")
    if attr not in ATTR_NAMES or not sep or not value:
        raise ValueError(f"bad feature template {template!r}: expected between_count.ATTR=VALUE with ATTR one of "
                         f"{', '.join(ATTR_NAMES)}")
    return ATTR_NAMES.index(attr), value


cdef class ArcFeatures:
    """The first-order feature set: templates -> hashed indices into a weight vector."""

    cdef readonly tuple templates
    cdef readonly int bits
    cdef readonly bint coarse
    cdef list sides
    cdef object atoms, seeds, between_rows, count_rows, count_values, count_seeds

    def __init__(self, templates=DEFAULT_TEMPLATES, int bits=22, str distance_features="fine"):
        if distance_features not in DISTANCE_FEATURES:
            raise ValueError(f"distance_features must be one of {', '.join(DISTANCE_FEATURES)}, got {distance_features!r}")
        if bits < 3:
            raise ValueError(f"hash_bits must be at least 3, got {bits}")
        self.templates = tuple(templates)
        self.bits = bits
        self.coarse = distance_features == "coarse"
        pair = [t for t in self.templates if not t.startswith(("between.", "between_count."))]
        between = [t for t in self.templates if t.startswith("between.")]
        counts = [t for t in self.templates if t.startswith("between_count.")]
        for t in between:
            if t[len("between."):] not in ATTR_NAMES:
                raise ValueError(f"bad feature atom {t!r}: expected between.ATTR with ATTR one of {', '.join(ATTR_NAMES)}")
        if len(between) > MAX_BETWEEN:
            raise ValueError(f"at most {MAX_BETWEEN} in-between templates")
        self.between_rows = numpy.array([ATTR_NAMES.index(t[len("between."):]) for t in between], dtype=numpy.intc)
        count_specs = [parse_count_template(t) for t in counts]
        if len(counts) > MAX_COUNTS:
            raise ValueError(f"at most {MAX_COUNTS} in-between count templates")
        self.count_rows = numpy.array([row for row, _ in count_specs], dtype=numpy.intc)
        self.count_values = numpy.array([hash_string(value) for _, value in count_specs], dtype=numpy.uint64)
        self.count_seeds = numpy.array([hash_string(f"{t}/count") for t in counts], dtype=numpy.uint64)
        self.sides = [parse_template(t) for t in pair]
        # Pair templates, then one head/modifier side per in-between template (h.ATTR, m.ATTR),
        # then one per count template.
        self.sides += [([(row, 0)], [(row, 0)]) for row in self.between_rows]
        self.sides += [([(row, 0)], [(row, 0)]) for row in self.count_rows]
        names = pair + between + counts
        # atoms[t, side, 2k] = attribute row, atoms[t, side, 2k+1] = offset; attribute -1 ends the list.
        T = len(self.sides)
        self.atoms = numpy.full((T, 2, 2 * MAX_ATOMS), -1, dtype=numpy.intc)
        self.seeds = numpy.zeros((T, 2), dtype=numpy.uint64)
        for t, sides in enumerate(self.sides):
            for s, atoms in enumerate(sides):
                self.seeds[t, s] = hash_string(f"{names[t]}/{'hm'[s]}")
                for k, (attr, offset) in enumerate(atoms):
                    self.atoms[t, s, 2 * k] = attr
                    self.atoms[t, s, 2 * k + 1] = offset

    @property
    def distance_features(self):
        return "coarse" if self.coarse else "fine"

    def side_hashes(self, const uint64_t[:, :] attrs):
        """H, M (T, n+1) uint64: per template, the hash of each token's head-side and modifier-side atoms."""
        cdef int n_tokens = attrs.shape[1], T = len(self.sides), t, i
        H = numpy.empty((T, n_tokens), dtype=numpy.uint64)
        M = numpy.empty((T, n_tokens), dtype=numpy.uint64)
        cdef uint64_t[:, ::1] Hv = H, Mv = M
        cdef const int[:, :, ::1] atoms = self.atoms
        cdef const uint64_t[:, ::1] seeds = self.seeds
        with nogil:
            for t in range(T):
                for i in range(n_tokens):
                    Hv[t, i] = _side_hash(seeds[t, 0], atoms[t, 0], attrs, 0, i, n_tokens)
                    Mv[t, i] = _side_hash(seeds[t, 1], atoms[t, 1], attrs, 0, i, n_tokens)
        return H, M

    def between_ids(self, attrs):
        """Per in-between template: each token's value as a sentence-local id (< 64), and id -> value hash.

        In-between features fire once per distinct value, so a 64-bit mask of local ids
        is the set of values between h and m."""
        n_between = len(self.between_rows)
        ids = numpy.zeros((n_between, attrs.shape[1]), dtype=numpy.int8)
        values = numpy.zeros((n_between, 64), dtype=numpy.uint64)
        if n_between:
            # more than 64 distinct tags in one sentence fold onto the first ones (never seen in UD)
            self._fill_between_ids(numpy.ascontiguousarray(attrs, dtype=numpy.uint64), ids, values)
        return ids, values

    def count_flags(self, const uint64_t[:, :] attrs):
        """Per count template: int8 (C, n+1), 1 where the token's ATTR is the template's VALUE."""
        flags = numpy.zeros((len(self.count_rows), attrs.shape[1]), dtype=numpy.int8)
        cdef int8_t[:, ::1] out = flags
        cdef const int[::1] rows = self.count_rows
        cdef const uint64_t[::1] values = self.count_values
        with nogil:
            _count_flags(attrs, 0, attrs.shape[1], rows, values, out)
        return flags

    def _fill_between_ids(self, const uint64_t[:, ::1] attrs, int8_t[:, ::1] ids, uint64_t[:, ::1] values):
        cdef const int[::1] rows = self.between_rows
        cdef uint64_t[::1] scratch = numpy.empty(attrs.shape[1], dtype=numpy.uint64)
        with nogil:
            _between_ids(attrs, 0, attrs.shape[1], rows, ids, values, &scratch[0])

    def score(self, sentence, const double[::1] w, allowed=None, helper=None):
        """Scores of all arcs: (n+1, n+1) float64, S[h, m] = w . phi(h, m); invalid arcs 0.
        With `allowed` (n+1, n+1) bool, only the allowed arcs are scored (the rest are 0):
        a second-order parser scores the arcs its pruner kept. With `helper` (an executor
        with a thread of its own), the heads are split in two halves, one scored by the
        helper's thread while this one scores the other, both without the GIL: the same
        sums in the same order, so the same scores, in about half the time on two cores."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        out = numpy.zeros((sentence.n + 1, sentence.n + 1))
        if helper is not None and allowed is None and sentence.n >= 8:
            H, M = self.side_hashes(sentence.attrs)
            ids, values = self.between_ids(sentence.attrs)
            flags = self.count_flags(sentence.attrs)
            # Heads near the middle have the longest in-between sweeps: split at the middle.
            half = (sentence.n + 1) // 2
            other = helper.submit(self._score_heads, H, M, ids, values, flags, w, out, half, sentence.n + 1)
            self._score_heads(H, M, ids, values, flags, w, out, 0, half)
            other.result()
            return out
        cdef const unsigned char[:, ::1] keep
        if allowed is None:
            self._sweep(sentence, &w[0], None, out, 1.0, NULL)
        else:
            keep = numpy.ascontiguousarray(allowed, dtype=numpy.uint8)
            if keep.shape[0] != sentence.n + 1 or keep.shape[1] != sentence.n + 1:
                raise ValueError(f"allowed arcs must be ({sentence.n + 1}, {sentence.n + 1})")
            self._sweep(sentence, &w[0], None, out, 1.0, &keep[0, 0])
        return out

    def add(self, sentence, coef, Weights weights, double scale=1.0):
        """weights += scale * sum_{h,m} coef[h, m] * phi(h, m), over valid arcs with coef != 0."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        C = numpy.asarray(coef, dtype=numpy.float64)
        if C.shape != (sentence.n + 1, sentence.n + 1):
            raise ValueError(f"coefficients must be ({sentence.n + 1}, {sentence.n + 1}), got {C.shape}")
        self._sweep(sentence, NULL, weights, C, scale, NULL)

    def _score_heads(self, const uint64_t[:, ::1] Hv, const uint64_t[:, ::1] Mv, const int8_t[:, ::1] ids,
                     const uint64_t[:, ::1] values, const int8_t[:, ::1] flags, const double[::1] w, double[:, :] A,
                     int first, int stop):
        """Score the arcs of heads first..stop-1 into A (the rows of one thread in `score`)."""
        cdef int n = A.shape[0] - 1, B = len(self.between_rows), C = len(self.count_rows)
        cdef int T = len(self.sides) - B - C
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        cdef uint64_t[::1] index_buffer = numpy.empty(2 * (T + 64 * B + 2 * C), dtype=numpy.uint64)
        cdef const uint64_t[::1] count_seeds = self.count_seeds
        with nogil:
            _visit_arcs(n, T, B, C, Hv, Mv, ids, values, flags, count_seeds, mask, self.coarse, &index_buffer[0],
                        &w[0], None, A, 1.0, NULL, first, stop)

    cdef _sweep(self, sentence, const double* w, Weights target, arcs, double scale,
                const unsigned char* allowed):
        """Score into `arcs` (w != NULL), or add scale * arcs[h, m] * phi(h, m) to `target`
        (see `_visit_arcs`)."""
        H, M = self.side_hashes(sentence.attrs)
        ids_arr, values_arr = self.between_ids(sentence.attrs)
        cdef const uint64_t[:, ::1] Hv = H, Mv = M, values = values_arr
        cdef const int8_t[:, ::1] ids = ids_arr
        cdef const int8_t[:, ::1] flags = self.count_flags(sentence.attrs)
        cdef const uint64_t[::1] count_seeds = self.count_seeds
        cdef double[:, :] A = arcs
        cdef int n = sentence.n, B = len(self.between_rows), C = len(self.count_rows)
        cdef int T = len(self.sides) - B - C
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        # One arc's weight indices: two per pair template, two per in-between value, four per count.
        cdef uint64_t[::1] index_buffer = numpy.empty(2 * (T + 64 * B + 2 * C), dtype=numpy.uint64)
        with nogil:
            _visit_arcs(n, T, B, C, Hv, Mv, ids, values, flags, count_seeds, mask, self.coarse, &index_buffer[0],
                        w, target, A, scale, allowed, 0, n + 1)

    def parse_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, const double[::1] w,
                   bint single_root=True, prune_tags=None, prune_maxima=None):
        """Eisner's best projective tree of every sentence of a batch, in one region without
        the GIL (threads sharing a model run in parallel): sentence i is columns
        starts[i]..starts[i+1]-1 of `attrs` (its root first). Returns int32 heads in the same
        columns, sentence-local (0 = the root), -1 at each root; the same trees as
        `score` then `eisner_argmax` one sentence at a time.

        With distance pruning (`DependencyTree.kept_arcs`): `prune_tags` the sorted UPOS
        hashes (K,) and `prune_maxima` (2, K, K) int32 the longest arc of each (modifier
        right of its head?, head tag, modifier tag); a longer arc is not scored and gets
        -inf, except arcs from the root, between neighbours or touching an unknown tag."""
        return self._parse_many(attrs, starts, w, single_root, prune_tags, prune_maxima, 0.0)[0]

    def marginals_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, const double[::1] w,
                       bint single_root=True, prune_tags=None, prune_maxima=None, double temperature=1.0):
        """`parse_many`'s trees and every word's head distribution: the arc marginals over
        projective trees (inside-outside) of the arc scores divided by `temperature`, in the
        same region without the GIL. Returns (heads as `parse_many`, float64 probs, int64
        offsets): sentence i's n words' rows are probs[offsets[i]:offsets[i+1]] as an
        (n, n+1) array, row m-1 = P(head of m = h) for h = 0..n (`eisner_marginals(scores / T)
        [0][:, 1:].T`, clipped to [0, 1]; 0 for a pruned arc)."""
        if not temperature > 0.0:
            raise ValueError(f"the temperature must be positive, got {temperature!r}")
        return self._parse_many(attrs, starts, w, single_root, prune_tags, prune_maxima, temperature)

    def _parse_many(self, const uint64_t[:, ::1] attrs, const int64_t[::1] starts, const double[::1] w,
                    bint single_root, prune_tags, prune_maxima, double temperature):
        """The kernel of `parse_many` (temperature 0: trees only) and `marginals_many`."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        cdef Py_ssize_t n_sentences = starts.shape[0] - 1, i
        if attrs.shape[0] != len(ATTR_NAMES) or (n_sentences >= 0 and starts[n_sentences] != attrs.shape[1]):
            raise ValueError("attrs must be (7, starts[-1])")
        lengths = numpy.diff(numpy.asarray(starts))
        if (lengths < 1).any():
            raise ValueError("every sentence needs its root column")
        if n_sentences > 0 and starts[0] != 0:
            raise ValueError("starts must begin at 0")
        heads_arr = numpy.full(attrs.shape[1], -1, dtype=numpy.int32)
        # marginals: sentence i's n (n + 1) probabilities from offsets[i]
        cdef bint soft = temperature > 0.0
        words = lengths - 1
        offsets_arr = numpy.zeros(max(n_sentences, 0) + 1, dtype=numpy.int64)
        if soft and n_sentences > 0:
            numpy.cumsum(words * (words + 1), out=offsets_arr[1:])
        probs_arr = numpy.zeros(int(offsets_arr[-1]))
        if n_sentences <= 0:
            return heads_arr, probs_arr, offsets_arr
        cdef int size = int(lengths.max())  # n + 1 of the longest sentence
        cdef int B = len(self.between_rows), C = len(self.count_rows), t, j, n
        cdef int T = len(self.sides) - B - C
        shape = (size, size)
        cdef uint64_t[:, ::1] Hv = numpy.empty((T + B + C, size), dtype=numpy.uint64)
        cdef uint64_t[:, ::1] Mv = numpy.empty((T + B + C, size), dtype=numpy.uint64)
        cdef uint64_t[:, ::1] values = numpy.zeros((max(B, 1), 64), dtype=numpy.uint64)
        cdef int8_t[:, ::1] ids = numpy.zeros((max(B, 1), size), dtype=numpy.int8)
        cdef int8_t[:, ::1] flags = numpy.zeros((max(C, 1), size), dtype=numpy.int8)
        cdef const int[::1] count_rows = self.count_rows
        cdef const uint64_t[::1] count_values = self.count_values, count_seeds = self.count_seeds
        cdef uint64_t[::1] scratch = numpy.empty(size, dtype=numpy.uint64)
        cdef uint64_t[::1] index_buffer = numpy.empty(2 * (T + 64 * B + 2 * C), dtype=numpy.uint64)
        cdef double[:, ::1] A = numpy.zeros(shape)
        cdef double[:, ::1] Ir = numpy.empty(shape), Il = numpy.empty(shape), Cr = numpy.empty(shape)
        cdef double[:, ::1] Cl = numpy.empty(shape), Bc = numpy.empty(shape)
        cdef int[:, ::1] bp_b = numpy.empty(shape, dtype=numpy.intc), bp_cr = numpy.empty(shape, dtype=numpy.intc)
        cdef int[:, ::1] bp_cl = numpy.empty(shape, dtype=numpy.intc)
        cdef double[::1] terms = numpy.empty(size)
        cdef int[::1] stack = numpy.empty(3 * (4 * size + 8), dtype=numpy.intc)
        cdef int[::1] heads = heads_arr
        cdef const int[:, :, ::1] atoms = self.atoms
        cdef const uint64_t[:, ::1] seeds = self.seeds
        cdef const int[::1] rows = self.between_rows
        cdef Py_ssize_t base
        cdef int root_child = 0, failed = -1
        cdef double best
        cdef bint pruning = prune_tags is not None, coarse = self.coarse
        if pruning != (prune_maxima is not None):
            raise ValueError("distance pruning needs both prune_tags and prune_maxima")
        tags_arr = numpy.ascontiguousarray(prune_tags if pruning else numpy.zeros(1), dtype=numpy.uint64)
        maxima_arr = numpy.ascontiguousarray(prune_maxima if pruning else numpy.zeros((2, 1, 1)), dtype=numpy.int32)
        if maxima_arr.ndim != 3 or maxima_arr.shape[0] != 2 or maxima_arr.shape[1] != tags_arr.shape[0] \
                or maxima_arr.shape[2] != tags_arr.shape[0] or (pruning and tags_arr.shape[0] == 0):
            raise ValueError("prune_maxima must be (2, K, K) for K prune_tags")
        if pruning and (tags_arr[1:] < tags_arr[:-1]).any():
            raise ValueError("prune_tags must be sorted")
        cdef const uint64_t[::1] ptags = tags_arr
        cdef const int[:, :, ::1] pmax = maxima_arr
        cdef int[::1] token_tag = numpy.empty(size, dtype=numpy.intc)
        cdef unsigned char[::1] keep = numpy.ones(size * size, dtype=numpy.uint8)
        marginal_shape = (int(size), int(size)) if soft else (1, 1)
        cdef double[:, ::1] gIr = numpy.empty(marginal_shape), gIl = numpy.empty(marginal_shape)
        cdef double[:, ::1] gCr = numpy.empty(marginal_shape), gCl = numpy.empty(marginal_shape)
        cdef double[:, ::1] mu = numpy.empty(marginal_shape)
        cdef double[::1] probs = probs_arr
        cdef const int64_t[::1] offsets = offsets_arr
        cdef int h, m
        cdef double logz, p
        with nogil:
            for i in range(n_sentences):
                base = starts[i]
                n = <int>(starts[i + 1] - base) - 1
                if n == 0:
                    continue
                for t in range(T + B + C):
                    for j in range(n + 1):
                        Hv[t, j] = _side_hash(seeds[t, 0], atoms[t, 0], attrs, base, j, n + 1)
                        Mv[t, j] = _side_hash(seeds[t, 1], atoms[t, 1], attrs, base, j, n + 1)
                _between_ids(attrs, base, n + 1, rows, ids, values, &scratch[0])
                _count_flags(attrs, base, n + 1, count_rows, count_values, flags)
                if pruning:
                    _distance_keep(attrs, base, n, ptags, pmax, token_tag, &keep[0], A)
                _visit_arcs(n, T, B, C, Hv, Mv, ids, values, flags, count_seeds, mask, coarse, &index_buffer[0],
                            &w[0], None, A, 1.0, &keep[0] if pruning else NULL, 0, n + 1)
                best = _fill(A, n, single_root, True, Ir, Il, Cr, Cl, Bc, bp_b, bp_cr, bp_cl, &terms[0],
                             &root_child)
                if best == -INFINITY:
                    failed = <int>i
                    break
                _backtrack(n, single_root, root_child, bp_b, bp_cr, bp_cl, heads[base:base + n + 1], &stack[0])
                heads[base] = -1
                if not soft:
                    continue
                # inside-outside over the same arc scores divided by the temperature
                for h in range(n + 1):
                    for m in range(n + 1):
                        A[h, m] = A[h, m] / temperature
                        gIr[h, m] = gIl[h, m] = gCr[h, m] = gCl[h, m] = mu[h, m] = 0.0
                logz = _fill(A, n, single_root, False, Ir, Il, Cr, Cl, Bc, bp_b, bp_cr, bp_cl, &terms[0], &root_child)
                if not (logz > -INFINITY and logz < INFINITY):
                    failed = <int>i
                    break
                _outside(A, n, single_root, logz, Ir, Il, Cr, Cl, Bc, gIr, gIl, gCr, gCl, mu)
                for m in range(1, n + 1):
                    for h in range(n + 1):
                        p = mu[h, m]
                        probs[offsets[i] + (m - 1) * (n + 1) + h] = 0.0 if p < 0.0 else 1.0 if p > 1.0 else p
        if failed >= 0:
            raise ValueError(f"sentence {failed} of the batch: no projective tree has a finite score")
        return heads_arr, probs_arr, offsets_arr

    def arc_indices(self, sentence, int h, int m):
        """The feature indices of one arc, in enumeration order (for tests and inspection)."""
        cdef Weights probe = Weights(self.bits, False)
        self.add(sentence, _one_hot(sentence.n, h, m), probe)
        idx = numpy.flatnonzero(probe.array)
        return numpy.repeat(idx, probe.array[idx].astype(numpy.int64)).astype(numpy.uint64)


def _one_hot(int n, int h, int m):
    c = numpy.zeros((n + 1, n + 1))
    c[h, m] = 1.0
    return c


cdef inline uint64_t _side_hash(uint64_t seed, const int[::1] atoms, const uint64_t[:, :] attrs,
                                Py_ssize_t base, int i, int n_tokens) noexcept nogil:
    """Token i's side hash; the sentence's tokens are columns base..base+n_tokens-1 of attrs."""
    return offset_atoms_hash(seed, atoms, attrs, base, i, n_tokens, BOS, EOS)


cdef void _distance_keep(const uint64_t[:, :] attrs, Py_ssize_t base, int n, const uint64_t[::1] tags,
                         const int[:, :, ::1] maxima, int[::1] token_tag, unsigned char* keep,
                         double[:, ::1] A) noexcept nogil:
    """keep[h * (n+1) + m]: whether distance pruning keeps arc (h, m) (see `parse_many`);
    A[h, m] = -inf for the arcs it drops. `DependencyTree.kept_arcs` is the same rule in numpy."""
    cdef int j, h, m, lo, hi, mid, d, limit, K = tags.shape[0]
    cdef uint64_t value
    for j in range(n + 1):
        if K == 0:  # an empty table knows no tag: every arc is kept
            token_tag[j] = -1
            continue
        value = attrs[UPOS_ROW, base + j]
        lo, hi = 0, K - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if tags[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        token_tag[j] = lo if tags[lo] == value else -1
    for h in range(n + 1):
        for m in range(n + 1):
            if m == 0 or m == h:
                keep[h * (n + 1) + m] = 0
                continue
            d = m - h if m > h else h - m
            if h == 0 or d == 1 or token_tag[h] < 0 or token_tag[m] < 0:
                keep[h * (n + 1) + m] = 1
                continue
            limit = maxima[1 if m > h else 0, token_tag[h], token_tag[m]]
            if d <= limit:
                keep[h * (n + 1) + m] = 1
            else:
                keep[h * (n + 1) + m] = 0
                A[h, m] = -INFINITY


def distance_kept(const uint64_t[:, :] attrs, prune_tags, prune_maxima):
    """(n+1, n+1) bool: the arcs distance pruning keeps in one sentence (its attrs, root
    first), by the batch kernel's own rule (`_distance_keep`; see `parse_many`)."""
    cdef int n = attrs.shape[1] - 1
    tags_arr = numpy.ascontiguousarray(prune_tags, dtype=numpy.uint64)
    maxima_arr = numpy.ascontiguousarray(prune_maxima, dtype=numpy.int32)
    K = tags_arr.shape[0]
    if maxima_arr.shape != (2, K, K):
        raise ValueError("prune_maxima must be (2, K, K) for K prune_tags")
    cdef const uint64_t[::1] tags = tags_arr
    cdef const int[:, :, ::1] maxima = maxima_arr
    cdef int[::1] token_tag = numpy.empty(n + 1, dtype=numpy.intc)
    keep_arr = numpy.zeros((n + 1) * (n + 1), dtype=numpy.uint8)
    cdef unsigned char[::1] keep = keep_arr
    cdef double[:, ::1] scratch = numpy.zeros((n + 1, n + 1))
    with nogil:
        _distance_keep(attrs, 0, n, tags, maxima, token_tag, &keep[0], scratch)
    return keep_arr.reshape(n + 1, n + 1).astype(bool)


cdef int _compare_uint64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


cdef void _between_ids(const uint64_t[:, :] attrs, Py_ssize_t base, int n_tokens, const int[::1] rows,
                       int8_t[:, ::1] ids, uint64_t[:, ::1] values, uint64_t* scratch) noexcept nogil:
    """`ArcFeatures.between_ids` without the GIL (the same ids: ranks among the sorted
    distinct values, folded mod 64); `scratch` holds n_tokens values."""
    cdef int j, i, u, lo, hi, mid
    for j in range(rows.shape[0]):
        for i in range(n_tokens):
            scratch[i] = attrs[rows[j], base + i]
        qsort(scratch, n_tokens, sizeof(uint64_t), _compare_uint64)
        u = 0
        for i in range(n_tokens):
            if u == 0 or scratch[i] != scratch[u - 1]:
                scratch[u] = scratch[i]
                u += 1
        for i in range(64):
            values[j, i] = scratch[i] if i < u else 0
        for i in range(n_tokens):
            lo, hi = 0, u - 1
            while lo < hi:  # the rank of the token's value among the u distinct values
                mid = (lo + hi) // 2
                if scratch[mid] < attrs[rows[j], base + i]:
                    lo = mid + 1
                else:
                    hi = mid
            ids[j, i] = <int8_t>(lo % 64)


cdef void _count_flags(const uint64_t[:, :] attrs, Py_ssize_t base, int n_tokens, const int[::1] rows,
                       const uint64_t[::1] values, int8_t[:, ::1] flags) noexcept nogil:
    """`ArcFeatures.count_flags` without the GIL: flags[j, i] = 1 where token i's attribute
    rows[j] is values[j]."""
    cdef int j, i
    for j in range(rows.shape[0]):
        for i in range(n_tokens):
            flags[j, i] = attrs[rows[j], base + i] == values[j]


cdef inline int _coarse_distance(int h, int m, int d) noexcept nogil:
    """The "coarse" direction-distance code 0..6: right of the head at 1, 2, 3-6, 7+; left at 1, 2-3, 4+."""
    if m > h:
        return 0 if d == 1 else 1 if d == 2 else 2 if d <= 6 else 3
    return 4 if d == 1 else 5 if d <= 3 else 6


cdef inline uint64_t _conjoined(uint64_t key, uint64_t index, uint64_t code, bint coarse, uint64_t mask,
                                const double* w) noexcept nogil:
    """The index of feature `key` (plain index `index`) conjoined with the arc's direction and
    distance `code` (`_arc_indices`): coarse, slot (index + code) mod 8 of the plain slot's
    line, which the plain slot's prefetch brings; fine, a hash of (key, code), prefetched."""
    cdef uint64_t conjoined
    if coarse:
        return (index & ~(<uint64_t>7)) | ((index + code) & 7)
    conjoined = mix64(key ^ code) & mask
    prefetch(w, conjoined)
    return conjoined


cdef int _arc_indices(int h, int m, int T, int B, int C, const uint64_t[:, ::1] H, const uint64_t[:, ::1] M,
                      const uint64_t* masks, const uint64_t[:, ::1] values, const int* counts,
                      const uint64_t[::1] count_seeds, uint64_t mask, bint coarse,
                      uint64_t* index, const double* w) noexcept nogil:
    """Write the weight indices of arc (h, m)'s features to `index` and prefetch
    their weights in `w`; return how many.

    Rows 0..T-1 of H and M are pair templates; rows T..T+B-1 the in-between templates,
    whose features (h value, b value, m value) fire once per distinct b in masks[j]; rows
    T+B..T+B+C-1 the count templates, whose features are (count) and (h value, count,
    m value), the count counts[j] capped at MAX_COUNT. Every feature comes twice: on its
    own and conjoined with direction and distance (`_conjoined`)."""
    cdef int t, b, j, k = 0, c
    cdef int d = m - h if m > h else h - m
    # the arc's direction-distance code: 1 + the coarse code (a slot offset 1..7), or the
    # hash of the fine bin
    cdef uint64_t code = (<uint64_t>(_coarse_distance(h, m, d) + 1) if coarse
                          else mix64(<uint64_t>((m > h) * 16 + arc_distance_bin(d) + 1) * GOLDEN))
    cdef uint64_t key, tag
    for t in range(T):
        key = mix64(H[t, h] ^ (M[t, m] * GOLDEN))
        index[k] = key & mask
        prefetch(w, index[k])
        index[k + 1] = _conjoined(key, index[k], code, coarse, mask, w)
        k += 2
    for j in range(B):
        if masks[j] == 0:
            continue
        for b in range(64):
            if masks[j] & ((<uint64_t>1) << b):
                key = mix64(H[T + j, h] ^ (M[T + j, m] * GOLDEN) ^ mix64(values[j, b]))
                index[k] = key & mask
                prefetch(w, index[k])
                index[k + 1] = _conjoined(key, index[k], code, coarse, mask, w)
                k += 2
    for j in range(C):
        c = counts[j] if counts[j] < MAX_COUNT else MAX_COUNT
        tag = mix64(<uint64_t>(c + 1) * GOLDEN)
        key = mix64(count_seeds[j] ^ tag)
        index[k] = key & mask
        prefetch(w, index[k])
        index[k + 1] = _conjoined(key, index[k], code, coarse, mask, w)
        key = mix64(H[T + B + j, h] ^ (M[T + B + j, m] * GOLDEN) ^ tag)
        index[k + 2] = key & mask
        prefetch(w, index[k + 2])
        index[k + 3] = _conjoined(key, index[k + 2], code, coarse, mask, w)
        k += 4
    return k


cdef void _visit_arcs(int n, int T, int B, int C, const uint64_t[:, ::1] Hv, const uint64_t[:, ::1] Mv,
                      const int8_t[:, ::1] ids, const uint64_t[:, ::1] values, const int8_t[:, ::1] flags,
                      const uint64_t[::1] count_seeds, uint64_t mask, bint coarse, uint64_t* index,
                      const double* w, Weights target, double[:, :] A, double scale,
                      const unsigned char* allowed, int first_head, int stop_head) noexcept nogil:
    """Visit every arc of an n-word sentence once, h outwards: score into A (w != NULL),
    or add scale * A[h, m] * phi(h, m) to `target`. The in-between masks and counts grow by
    one token per step outwards from h, so a sweep is O(n^2) whatever the arc values.
    `allowed` (NULL: all): the (n+1)^2 arcs to score. Only heads first_head..stop_head-1
    (0..n+1 for all): each head's arcs are independent of the others'."""
    cdef int h, m, j, i, k, step, first, stop
    cdef uint64_t masks[4]
    cdef int counts[4]
    cdef double total, value
    cdef const double* weights = w if w != NULL else &target.w[0]
    for h in range(first_head, stop_head):
        for step in range(-1, 2, 2):
            for j in range(B):
                masks[j] = 0
            for j in range(C):
                counts[j] = 0
            first = h + step
            stop = n + 1 if step == 1 else 0
            m = first
            while m != stop and m >= 0:
                if m != first:
                    for j in range(B):
                        masks[j] |= (<uint64_t>1) << ids[j, m - step]
                    for j in range(C):
                        counts[j] += flags[j, m - step]
                if w != NULL:
                    if allowed == NULL or allowed[h * (n + 1) + m]:
                        # All indices (prefetched) first, then the reads: the cache
                        # misses overlap (see `prefetch`); same sum, same order.
                        k = _arc_indices(h, m, T, B, C, Hv, Mv, masks, values, counts, count_seeds, mask,
                                         coarse, index, weights)
                        total = 0.0
                        for i in range(k):
                            total += w[index[i]]
                        A[h, m] = total
                elif A[h, m] != 0.0:
                    k = _arc_indices(h, m, T, B, C, Hv, Mv, masks, values, counts, count_seeds, mask,
                                     coarse, index, weights)
                    value = scale * A[h, m]
                    for i in range(k):
                        target.add(index[i], value)
                m += step
