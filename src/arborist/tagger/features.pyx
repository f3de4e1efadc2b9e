"""Hashed features of tag-sequence parts (see `viterbi` for the part layouts).

The score of a part decomposes into pieces, each computed once and shared by
every part that contains it:

  order 1: S[t, p, c]     = E[t, c] + B[p, c] + W[t, p, c]
  order 2: S[t, q, p, c]  = E[t, c] + B[p, c] + W[t, p, c] + T[q, p, c]

  E[t, c]     emission: every emission template's feature of word t (EMISSION_TEMPLATES
              by default), conjoined with tag c
              (computed once per (t, c), not once per part);
  B[p, c]     the tag bigram (p = START at t = 0);
  W[t, p, c]  the tag bigram conjoined with word t's lowercase form;
  T[q, p, c]  the tag trigram (order 2).

Emission template names: "bias" (always on); "<value>" for a WORD_VALUES value
of the word itself ("suffix3"); "<value><offset>" for the value of the word at
that offset ("lower-1", "shape+1"; outside the sentence every value is BOS/EOS);
and "a|b|..." for the conjunction of such names ("lower-1|lower" is the word
bigram, "shape-1|shape|shape+1" the shape trigram). The context templates
"<value><offset>" for CONTEXT_VALUES at CONTEXT_OFFSETS are followed by the
conjunctions in CONJUNCTIONS.

Word-level values that come from strings (forms, affixes, shape, flags) are
computed in Python once per distinct form and cached as 64-bit string hashes
(`arborist.strings`); the nogil kernels combine them with per-template seeds
and the neighbours' values with a splitmix64 mixer into one 64-bit key per
(word, template), `emission_keys`.

Weight layout: a key is not re-hashed with each tag. Emission key k owns the
block of K consecutive weights (k + rank(c)) & mask, rank(c) the position of
tag c's name in the sorted tag names, so one emission feature costs one cache
miss for all K tags; the bigram+word piece of word t owns the (K+1)*K block
(combine(seed, lower_t) + rank(p) * K + rank(c)) & mask, rank(START) = K.
Blocks of different keys overlap at random offsets, so two distinct features
collide with the same probability as with one hash per feature. The tag bigram
and trigram are hashed from the tag names. Weights depend on the tag names,
not on the order of the tag list.

`score` and `add` enumerate features with the same code (`touch`,
`_visit_emission`, `_emission_index`, `_word_bigram_index`), so scores are
exactly w . phi: for coefficients over parts, `add` sums them per piece (E
over (q, p), W over q, B over t, q, T over t) and adds each piece's features
once with the summed coefficient.
"""
from libc.stdint cimport uint64_t, int64_t
from libc.math cimport INFINITY, exp, log
import re
import threading

import numpy

from ..hashing cimport GOLDEN, combine, mix64
from ..weights cimport Weights, touch
from ..sentence import FORM
from ..strings import hash_string, hash_strings
from .viterbi cimport _forward1, _backtrack1, _forward2, _backtrack2

PREFIX_LENGTHS = (1, 2, 3, 4, 5, 6)
SUFFIX_LENGTHS = (1, 2, 3, 4, 5, 6, 7, 8)
SHAPE_RUN = 4  # a word shape keeps at most 4 repeats of a character class
CONTEXT_OFFSETS = (-2, -1, 1, 2)

# Values of one word, computed from its form (WORD_VALUES[i] -> column i):
# the strings of `word_strings`, then the 0/1 flags of `word_flags`.
STRING_VALUES = (("form", "lower") + tuple(f"prefix{k}" for k in PREFIX_LENGTHS)
                 + tuple(f"suffix{k}" for k in SUFFIX_LENGTHS) + ("shape",))
FLAG_VALUES = ("has_digit", "has_hyphen", "upper_initial", "all_upper")
WORD_VALUES = STRING_VALUES + FLAG_VALUES
CONTEXT_VALUES = ("lower", "suffix3")  # the values of the neighbours at CONTEXT_OFFSETS
# Conjunctions of values of the word and its neighbours (see the naming above).
CONJUNCTIONS = ("lower-1|lower", "lower|lower+1",  # word bigrams
                "lower|suffix3-1", "lower|suffix3+1",  # the word with a neighbour's suffix
                "shape-1|shape|shape+1")  # shape trigram
EMISSION_TEMPLATES = (("bias",) + WORD_VALUES
                      + tuple(f"{v}{o:+d}" for o in CONTEXT_OFFSETS for v in CONTEXT_VALUES)
                      + CONJUNCTIONS)

cdef int N_VALUES = len(WORD_VALUES)
cdef int LOWER_COLUMN = WORD_VALUES.index("lower")
cdef int N_STRING_VALUES = len(STRING_VALUES)
cdef uint64_t BOS = hash_string("<S>")
cdef uint64_t EOS = hash_string("</S>")
START = "<START>"
VOCAB_LIMIT = 1 << 20  # forms cached before the cache is cleared
MAX_PARTS = 3  # values conjoined by one template


def template_parts(str name):
    """The (WORD_VALUES column, word offset) pairs that template `name` conjoins."""
    if name == "bias":
        return ()
    parts = []
    for piece in name.split("|"):
        match = re.fullmatch(r"([a-z_0-9]+?)([+-][0-9]+)?", piece)
        if match is None or match.group(1) not in WORD_VALUES:
            raise ValueError(f"emission template {name!r}: {piece!r} is not a WORD_VALUES name with an optional offset")
        parts.append((WORD_VALUES.index(match.group(1)), int(match.group(2) or 0)))
    if len(parts) > MAX_PARTS:
        raise ValueError(f"emission template {name!r} conjoins more than {MAX_PARTS} values")
    return tuple(parts)


def _template_table(templates):
    """(n_parts, columns, offsets) arrays of the emission templates, for `_emission_keys`."""
    n_parts = numpy.zeros(len(templates), dtype=numpy.int32)
    columns = numpy.zeros((len(templates), MAX_PARTS), dtype=numpy.int32)
    offsets = numpy.zeros((len(templates), MAX_PARTS), dtype=numpy.int32)
    for j, name in enumerate(templates):
        parts = template_parts(name)
        n_parts[j] = len(parts)
        for m, (column, offset) in enumerate(parts):
            columns[j, m], offsets[j, m] = column, offset
    return n_parts, columns, offsets



def word_shape(str word):
    """Character classes: X upper, x lower, d digit, other characters as themselves;
    runs of one class longer than 4 are cut ("Washington" -> "Xxxxx", "1,000" -> "d,ddd")."""
    out = []
    last, run = None, 0
    for ch in word:
        cls = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        run = run + 1 if cls == last else 1
        last = cls
        if run <= SHAPE_RUN:
            out.append(cls)
    return "".join(out)


def word_strings(str word):
    """The string values of WORD_VALUES[:len(STRING_VALUES)] for one word."""
    lower = word.lower()
    return ([word, lower] + [word[:k] for k in PREFIX_LENGTHS] + [word[-k:] for k in SUFFIX_LENGTHS]
            + [word_shape(word)])


def word_flags(str word):
    """The FLAG_VALUES of one word."""
    return (any(ch.isdigit() for ch in word), "-" in word, word[:1].isupper(), word.isupper())


cdef inline int _lo(int t, int back, int K) noexcept nogil:
    """First valid tag id at t - back: START (K) before the sentence, else 0."""
    return K if t < back else 0


cdef inline int _hi(int t, int back, int K) noexcept nogil:
    return K + 1 if t < back else K


cdef inline uint64_t _emission_index(uint64_t key, int c, const int* rank) noexcept nogil:
    """Emission feature `key` conjoined with tag c: slot rank(c) of the key's block."""
    return key + <uint64_t>rank[c]


cdef inline uint64_t _word_bigram_index(uint64_t block, int p, int c, int K, const int* rank) noexcept nogil:
    """The bigram+word feature (p, c) of a word: slot rank(p) * K + rank(c) of the word's block."""
    return block + <uint64_t>(rank[p] * K + rank[c])


cdef double _visit_emission(const uint64_t[:, ::1] keys, int t, int c, const int* rank, uint64_t mask,
                            const double* w, Weights target, double value) noexcept nogil:
    """Sum of w over the emission features of (t, tag c), or add `value` to each of them."""
    cdef int j
    cdef double total = 0.0
    for j in range(keys.shape[1]):
        total += touch(_emission_index(keys[t, j], c, rank), mask, w, target, value)
    return total


cdef void _emission_keys(const uint64_t[:, ::1] values, Py_ssize_t base, int n, const uint64_t[::1] seeds,
                         const int[::1] n_parts, const int[:, ::1] columns, const int[:, ::1] offsets,
                         uint64_t[:, ::1] keys) noexcept nogil:
    """keys[t, j]: template j's feature of word t, before conjunction with a tag; the
    sentence's n words are rows base..base+n-1 of `values`."""
    cdef int t, j, m, pos
    cdef uint64_t key
    for t in range(n):
        for j in range(keys.shape[1]):
            key = seeds[j]
            for m in range(n_parts[j]):
                pos = t + offsets[j, m]
                key = combine(key, BOS if pos < 0 else EOS if pos >= n else values[base + pos, columns[j, m]])
            keys[t, j] = key


cdef void _bigrams(int K, const uint64_t[:, ::1] BK, uint64_t mask, const double* w,
                   double[:, ::1] B) noexcept nogil:
    """B[p, c]: the tag bigram weights (the same for every sentence)."""
    cdef int p, c
    for p in range(K + 1):
        for c in range(K):
            B[p, c] = touch(BK[p, c], mask, w, None, 0.0)


cdef void _emissions_and_bigrams(int n, int K, const uint64_t[:, ::1] keys, const int* rank,
                                 const uint64_t[:, ::1] BK, uint64_t mask, const double* w,
                                 double[:, ::1] E, double[:, ::1] B) noexcept nogil:
    """E[t, c]: the emission score of tag c at word t (`_visit_emission` for every c at once:
    the same weights, added in the same order); B[p, c]: the tag bigram weights."""
    cdef int t, c, j
    cdef uint64_t key
    for t in range(n):
        for c in range(K):
            E[t, c] = 0.0
        for j in range(keys.shape[1]):
            key = keys[t, j]
            for c in range(K):
                E[t, c] += w[_emission_index(key, c, rank) & mask]
    _bigrams(K, BK, mask, w, B)


cdef void _score(int n, int K, int order, const uint64_t[:, ::1] keys, const uint64_t[:, ::1] values,
                 Py_ssize_t row0, const int* rank, const uint64_t[:, ::1] BK, uint64_t word_bigram_seed,
                 const uint64_t[:, :, ::1] TK, uint64_t mask, const double* w,
                 double[:, ::1] E, double[:, ::1] B, double[:, :, ::1] T, double* S) noexcept nogil:
    """S (flat, C order over (n, Q, K+1, K); Q = K+1 for order 2, 1 for order 1): every valid part."""
    cdef int t, q, p, c, Q = K + 1 if order == 2 else 1
    cdef double piece
    cdef uint64_t block
    cdef Py_ssize_t base
    _emissions_and_bigrams(n, K, keys, rank, BK, mask, w, E, B)
    if order == 2:
        for q in range(K + 1):
            for p in range(K + 1):
                for c in range(K):
                    T[q, p, c] = touch(TK[q, p, c], mask, w, None, 0.0)
    for t in range(n):
        block = combine(word_bigram_seed, values[row0 + t, LOWER_COLUMN])
        for p in range(_lo(t, 1, K), _hi(t, 1, K)):
            for c in range(K):
                piece = E[t, c] + B[p, c] + touch(_word_bigram_index(block, p, c, K, rank), mask, w, None, 0.0)
                if order == 1:
                    S[(<Py_ssize_t>t * (K + 1) + p) * K + c] = piece
                else:
                    for q in range(_lo(t, 2, K), _hi(t, 2, K)):
                        base = ((<Py_ssize_t>t * Q + q) * (K + 1) + p) * K + c
                        S[base] = piece + T[q, p, c]


cdef void _allowed_emissions(int n, int K, const uint64_t[:, ::1] keys, const int* rank, uint64_t mask,
                             const double* w, const unsigned char* allowed, double[:, ::1] E,
                             int[:, ::1] tag_list, int* n_tags) noexcept nogil:
    """E[t, c] for the tags word t may take (`allowed`: row t of an (n, K) mask, NULL: all; the
    others' E is 0 and never read), listed ascending in tag_list[t, :n_tags[t]]."""
    cdef int t, c, i, j, m
    cdef uint64_t key
    for t in range(n):
        m = 0
        for c in range(K):
            if allowed == NULL or allowed[t * K + c]:
                tag_list[t, m] = c
                m += 1
            E[t, c] = 0.0
        n_tags[t] = m
        for j in range(keys.shape[1]):
            key = keys[t, j]
            if m == K:  # every tag: the direct loop (the list's indirection costs UPOS 10%)
                for c in range(K):
                    E[t, c] += w[_emission_index(key, c, rank) & mask]
            else:
                for i in range(m):
                    c = tag_list[t, i]
                    E[t, c] += w[_emission_index(key, c, rank) & mask]


cdef double _viterbi1(int n, int K, const uint64_t[:, ::1] keys, const uint64_t[:, ::1] values, Py_ssize_t row0,
                      const int* rank, const double[:, ::1] B, uint64_t word_bigram_seed, uint64_t mask,
                      const double* w, const unsigned char* allowed, double[:, ::1] E, int[:, ::1] tag_list,
                      int* n_tags, double[:, ::1] alpha, int[:, ::1] bp, int* last) noexcept nogil:
    """`_score` then `_forward1` (max) of an order-1 chain in one pass, B the tag bigram
    weights (`_bigrams`): each part's score is used where it is computed (the same sums in
    the same order, and `acc_add`'s first-maximum tie-breaking, so the same tags). `allowed`
    (NULL: all): row t of an (n, K) mask, the tags word t may take; the others are never
    scored, as if their parts were -inf. Loops run over each word's list of allowed tags
    (`tag_list`, ascending; `n_tags` of them), so a word with 2 of 50 XPOS tags costs 2."""
    cdef int t, p, c, i, ip, m, arg
    cdef double piece, term, best, previous
    cdef uint64_t block
    _allowed_emissions(n, K, keys, rank, mask, w, allowed, E, tag_list, n_tags)
    block = combine(word_bigram_seed, values[row0, LOWER_COLUMN])
    for c in range(K):
        alpha[0, c] = -INFINITY
        bp[0, c] = K
    for i in range(n_tags[0]):
        c = tag_list[0, i]
        alpha[0, c] = E[0, c] + B[K, c] + touch(_word_bigram_index(block, K, c, K, rank), mask, w, None, 0.0)
    for t in range(1, n):
        block = combine(word_bigram_seed, values[row0 + t, LOWER_COLUMN])
        # p outer, c inner: one row of the word's bigram block at a time; ascending p with a
        # strict > keeps the first maximum, as acc_add does
        for c in range(K):
            alpha[t, c] = -INFINITY
            bp[t, c] = -2
        for ip in range(n_tags[t - 1]):
            p = tag_list[t - 1, ip]
            previous = alpha[t - 1, p]
            if previous == -INFINITY:
                continue
            m = n_tags[t]
            for i in range(m):
                c = i if m == K else tag_list[t, i]
                piece = E[t, c] + B[p, c] + touch(_word_bigram_index(block, p, c, K, rank), mask, w, None, 0.0)
                term = previous + piece
                if term != -INFINITY and term > alpha[t, c]:
                    alpha[t, c] = term
                    bp[t, c] = p
        for c in range(K):
            if bp[t, c] < 0:
                bp[t, c] = 0
    best = -INFINITY
    arg = -2
    for c in range(K):
        term = alpha[n - 1, c]
        if term != -INFINITY and term > best:
            best = term
            arg = c
    last[0] = arg if arg >= 0 else 0
    return best


cdef double _tag_marginals1(int n, int K, const uint64_t[:, ::1] values, Py_ssize_t row0, const int* rank,
                            const double[:, ::1] B, uint64_t word_bigram_seed, uint64_t mask, const double* w,
                            const double[:, ::1] E, const int[:, ::1] tag_list, const int* n_tags,
                            double temperature, double* P, Py_ssize_t* offsets, double* tmp,
                            double[:, ::1] alpha, int[:, ::1] bp, int* last,
                            double[:, ::1] fa, double[:, ::1] fb, double* out, double* logz) noexcept nogil:
    """After `_allowed_emissions`: Viterbi over the allowed tags (alpha, bp, last as `_viterbi1`
    leaves them: the same sums in the same order, so the same tags; returns the best score,
    -inf if none) and each word's tag marginals at `temperature`, out[t * K + c] (0 for the
    tags it may not take), by forward-backward in log space over the same part scores divided
    by the temperature; logz[0] is log Z of those scores. Each part's score is computed once
    (P; offsets[t]: where position t's block of n_tags[t-1] x n_tags[t] parts starts), for
    both passes."""
    cdef int t, p, c, i, ip, m, mp, arg
    cdef Py_ssize_t off
    cdef double term, best, previous, mx, total
    cdef uint64_t block
    # The part scores: position 0's (START, c), then each position's (p, c) over the allowed lists.
    block = combine(word_bigram_seed, values[row0, LOWER_COLUMN])
    m = n_tags[0]
    for i in range(m):
        c = tag_list[0, i]
        P[i] = E[0, c] + B[K, c] + touch(_word_bigram_index(block, K, c, K, rank), mask, w, None, 0.0)
    offsets[0] = 0
    off = m
    for t in range(1, n):
        block = combine(word_bigram_seed, values[row0 + t, LOWER_COLUMN])
        mp, m = n_tags[t - 1], n_tags[t]
        offsets[t] = off
        for ip in range(mp):
            p = tag_list[t - 1, ip]
            for i in range(m):
                c = tag_list[t, i]
                P[off + ip * m + i] = E[t, c] + B[p, c] + touch(_word_bigram_index(block, p, c, K, rank), mask, w, None, 0.0)
        off += mp * m
    # Viterbi, as `_viterbi1`, but over P. (One Viterbi for both kernels, `tag_many` computing P
    # first too, gave the same tags and marginals but made `tag_many` about 17% slower on en_ewt
    # UPOS, 0.051 -> 0.059 s for the dev set, alternated three times: the argmax path keeps
    # scoring each part where Viterbi uses it.)
    for c in range(K):
        alpha[0, c] = -INFINITY
        bp[0, c] = K
    for i in range(n_tags[0]):
        alpha[0, tag_list[0, i]] = P[i]
    for t in range(1, n):
        mp, m, off = n_tags[t - 1], n_tags[t], offsets[t]
        for c in range(K):
            alpha[t, c] = -INFINITY
            bp[t, c] = -2
        for ip in range(mp):
            p = tag_list[t - 1, ip]
            previous = alpha[t - 1, p]
            if previous == -INFINITY:
                continue
            for i in range(m):
                c = tag_list[t, i]
                term = previous + P[off + ip * m + i]
                if term != -INFINITY and term > alpha[t, c]:
                    alpha[t, c] = term
                    bp[t, c] = p
        for c in range(K):
            if bp[t, c] < 0:
                bp[t, c] = 0
    best = -INFINITY
    arg = -2
    for c in range(K):
        term = alpha[n - 1, c]
        if term != -INFINITY and term > best:
            best = term
            arg = c
    last[0] = arg if arg >= 0 else 0
    # Forward and backward (log-sum-exp) over positions in the allowed lists, on the part
    # scores divided by the temperature (in place: Viterbi is done with them).
    for off in range(offsets[n - 1] + n_tags[n - 1] * (n_tags[n - 2] if n > 1 else 1)):
        P[off] = P[off] / temperature
    for i in range(n_tags[0]):
        fa[0, i] = P[i]
    for t in range(1, n):
        mp, m, off = n_tags[t - 1], n_tags[t], offsets[t]
        for i in range(m):
            mx = -INFINITY
            for ip in range(mp):
                tmp[ip] = fa[t - 1, ip] + P[off + ip * m + i]
                if tmp[ip] > mx:
                    mx = tmp[ip]
            if mx == -INFINITY:
                fa[t, i] = -INFINITY
                continue
            total = 0.0
            for ip in range(mp):
                total += exp(tmp[ip] - mx)
            fa[t, i] = mx + log(total)
    m = n_tags[n - 1]
    mx = -INFINITY
    for i in range(m):
        fb[n - 1, i] = 0.0
        if fa[n - 1, i] > mx:
            mx = fa[n - 1, i]
    total = 0.0
    for i in range(m):
        total += exp(fa[n - 1, i] - mx)
    logz[0] = mx + log(total) if mx > -INFINITY else -INFINITY
    for t in range(n - 1, 0, -1):
        mp, m, off = n_tags[t - 1], n_tags[t], offsets[t]
        for ip in range(mp):
            mx = -INFINITY
            for i in range(m):
                tmp[i] = P[off + ip * m + i] + fb[t, i]
                if tmp[i] > mx:
                    mx = tmp[i]
            if mx == -INFINITY:
                fb[t - 1, ip] = -INFINITY
                continue
            total = 0.0
            for i in range(m):
                total += exp(tmp[i] - mx)
            fb[t - 1, ip] = mx + log(total)
    for t in range(n):
        for c in range(K):
            out[t * K + c] = 0.0
        for i in range(n_tags[t]):
            out[t * K + tag_list[t, i]] = exp(fa[t, i] + fb[t, i] - logz[0])
    return best


cdef void _add(int n, int K, int order, const uint64_t[:, ::1] keys, const uint64_t[:, ::1] values,
               const int* rank, const uint64_t[:, ::1] BK, uint64_t word_bigram_seed,
               const uint64_t[:, :, ::1] TK, uint64_t mask, const double* coef, double scale, Weights target,
               double[:, ::1] cE, double[:, ::1] cB, double[:, :, ::1] cT) noexcept nogil:
    """target += scale * sum over valid parts r of coef_r phi_r, one add per feature of each piece."""
    cdef int t, q, p, c, Q = K + 1 if order == 2 else 1
    cdef double v, total
    cdef uint64_t block
    for t in range(n):
        block = combine(word_bigram_seed, values[t, LOWER_COLUMN])
        for p in range(_lo(t, 1, K), _hi(t, 1, K)):
            for c in range(K):
                if order == 1:
                    total = coef[(<Py_ssize_t>t * (K + 1) + p) * K + c]
                else:
                    total = 0.0
                    for q in range(_lo(t, 2, K), _hi(t, 2, K)):
                        v = coef[((<Py_ssize_t>t * Q + q) * (K + 1) + p) * K + c]
                        total += v
                        cT[q, p, c] += v
                if total != 0.0:
                    touch(_word_bigram_index(block, p, c, K, rank), mask, NULL, target, scale * total)
                    cE[t, c] += total
                    cB[p, c] += total
    for t in range(n):
        for c in range(K):
            if cE[t, c] != 0.0:
                _visit_emission(keys, t, c, rank, mask, NULL, target, scale * cE[t, c])
    for p in range(K + 1):
        for c in range(K):
            if cB[p, c] != 0.0:
                touch(BK[p, c], mask, NULL, target, scale * cB[p, c])
    if order == 2:
        for q in range(K + 1):
            for p in range(K + 1):
                for c in range(K):
                    if cT[q, p, c] != 0.0:
                        touch(TK[q, p, c], mask, NULL, target, scale * cT[q, p, c])


cdef class ChainFeatures:
    """Emission and transition features of an order-1 or order-2 chain over `tags`."""

    cdef readonly tuple tags
    cdef readonly int order, bits, n_tags
    cdef readonly tuple templates
    cdef object seeds, rank, bigram_keys, trigram_keys, n_parts, part_columns, part_offsets
    cdef uint64_t word_bigram_seed
    cdef dict vocab
    cdef object table
    cdef object lock

    def __init__(self, tags, int order=1, int bits=20, templates=EMISSION_TEMPLATES):
        """`templates`: the emission templates (names as in EMISSION_TEMPLATES, which is the
        default); the transition features are always on."""
        if order not in (1, 2):
            raise ValueError(f"chain order must be 1 or 2, got {order}")
        if not 1 <= bits <= 32:
            raise ValueError(f"hash bits must be in 1..32, got {bits}")
        self.tags = tuple(tags)
        if not self.tags:
            raise ValueError("a chain needs at least one tag")
        self.order, self.bits, self.n_tags = order, bits, len(self.tags)
        self.templates = tuple(templates)
        if len(set(self.templates)) != len(self.templates):
            raise ValueError(f"duplicate emission templates in {list(self.templates)}")
        self.n_parts, self.part_columns, self.part_offsets = _template_table(self.templates)  # checks names
        self.seeds = hash_strings([f"chain/{name}" for name in self.templates])
        cdef int K = self.n_tags, q, p, c
        names = hash_strings(list(self.tags) + [START])  # START = id K
        bigram = numpy.empty((K + 1, K), dtype=numpy.uint64)
        trigram = numpy.zeros(self.shape(1)[1:] if order == 2 else (1, 1, 1), dtype=numpy.uint64)
        cdef const uint64_t[::1] h = names
        cdef uint64_t[:, ::1] bk = bigram
        cdef uint64_t[:, :, ::1] tr = trigram
        cdef uint64_t bi = hash_string("chain/bigram"), tri = hash_string("chain/trigram")
        for c in range(K):
            for p in range(K + 1):
                bk[p, c] = combine(combine(bi, h[p]), h[c])
                if order == 2:
                    for q in range(K + 1):
                        tr[q, p, c] = combine(combine(combine(tri, h[q]), h[p]), h[c])
        self.bigram_keys, self.trigram_keys = bigram, trigram
        self.word_bigram_seed = hash_string("chain/bigram+lower")
        # A tag's slot in the weight blocks: its name's position among the sorted names (START: K).
        position = {name: i for i, name in enumerate(sorted(self.tags))}
        self.rank = numpy.array([position[name] for name in self.tags] + [K], dtype=numpy.int32)
        self.vocab = {}
        self.table = numpy.zeros((64, N_VALUES), dtype=numpy.uint64)
        self.lock = threading.Lock()

    def __reduce__(self):
        # Pickled (Ray tasks and actors) as its arguments: everything else follows from them,
        # and the copy starts with its own lock and an empty form cache.
        return ChainFeatures, (self.tags, self.order, self.bits, self.templates)

    @property
    def features_per_part(self) -> int:
        """Features of one part: the emission templates, bigram, bigram+word (and trigram)."""
        return len(self.templates) + 2 + (self.order == 2)

    def shape(self, int n):
        K = self.n_tags
        return (n, K + 1, K) if self.order == 1 else (n, K + 1, K + 1, K)

    def word_values(self, sentence):
        """(n, len(WORD_VALUES)) uint64: each word's values (cached per distinct form)."""
        forms = sentence.forms[1:]
        return self.form_values(sentence.attrs[FORM, 1:], dict(zip(sentence.attrs[FORM, 1:].tolist(), forms)).__getitem__)

    def form_values(self, form_ids, text_of):
        """(len(form_ids), len(WORD_VALUES)) uint64: the values of the words whose FORM
        string ids (`arborist.strings`, spaCy's ORTH) are `form_ids`; `text_of(id)` gives
        the form of an id the cache does not hold yet."""
        ids = numpy.asarray(form_ids, dtype=numpy.uint64).tolist()
        # Threads tagging with one model (a spaCy pipeline shared by threads) share the cache:
        # reserving rows and filling them must not interleave, or two threads would write
        # their forms' values into the same rows.
        with self.lock:
            vocab = self.vocab
            missing = [f for f in dict.fromkeys(ids) if f not in vocab]
            if missing:
                if len(vocab) + len(missing) > VOCAB_LIMIT:
                    vocab = self.vocab = {}
                    missing = list(dict.fromkeys(ids))
                start = len(vocab)
                texts = [text_of(f) for f in missing]
                rows = numpy.empty((len(missing), N_VALUES), dtype=numpy.uint64)
                rows[:, :N_STRING_VALUES] = hash_strings([s for f in texts for s in word_strings(f)]).reshape(
                    len(missing), N_STRING_VALUES)
                rows[:, N_STRING_VALUES:] = numpy.array([word_flags(f) for f in texts], dtype=numpy.uint64)
                if start + len(missing) > self.table.shape[0]:
                    grown = numpy.zeros((max(2 * self.table.shape[0], start + len(missing)), N_VALUES), dtype=numpy.uint64)
                    grown[:start] = self.table[:start]
                    self.table = grown
                self.table[start:start + len(missing)] = rows
                for i, f in enumerate(missing):
                    vocab[f] = start + i
            if not ids:
                return numpy.zeros((0, N_VALUES), dtype=numpy.uint64)
            return self.table[[vocab[f] for f in ids]]

    def _batch_inputs(self, values, const int64_t[::1] starts, allowed):
        """The checked inputs of a batch kernel: (values as C-contiguous uint64, allowed as a
        uint8 mask or None, the longest sentence's length; 0 when there is nothing to tag)."""
        values = numpy.ascontiguousarray(values, dtype=numpy.uint64)
        cdef Py_ssize_t n_sentences = starts.shape[0] - 1
        if values.ndim != 2 or values.shape[1] != N_VALUES or (n_sentences >= 0 and starts[n_sentences] != values.shape[0]):
            raise ValueError(f"values must be (starts[-1], {N_VALUES})")
        if n_sentences <= 0 or values.shape[0] == 0:
            return values, None, 0
        lengths = numpy.diff(numpy.asarray(starts))
        if starts[0] != 0 or (lengths < 0).any():
            raise ValueError("starts must begin at 0 and not decrease")
        mask_arr = None
        if allowed is not None:
            if self.order != 1:
                raise ValueError("allowed tags need an order-1 chain")
            mask_arr = numpy.ascontiguousarray(allowed, dtype=numpy.uint8)
            if mask_arr.shape != (values.shape[0], self.n_tags):
                raise ValueError(f"allowed must be ({values.shape[0]}, {self.n_tags}), got {mask_arr.shape}")
            if not mask_arr.any(axis=1).all():
                raise ValueError("allowed gives a word no tag")
        return values, mask_arr, int(lengths.max())

    def tag_marginals_many(self, values, const int64_t[::1] starts, const double[::1] w, allowed=None,
                           double temperature=1.0):
        """`tag_many`'s tags and each word's tag distribution at `temperature` (the marginals of
        the chain whose part scores are divided by it; 0 for the tags `allowed` excludes), of every
        sentence of a batch in one region without the GIL: (int32 (words,), float64 (words, K)).
        The tags are `tag_many`'s; the distributions `chain_tag_marginals` of the pruned scores
        divided by the temperature, one sentence at a time. Order 1 only."""
        if self.order != 1:
            raise ValueError("tag_marginals_many needs an order-1 chain")
        if not temperature > 0.0:
            raise ValueError(f"the temperature must be positive, got {temperature!r}")
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        values, mask_arr, size_ = self._batch_inputs(values, starts, allowed)
        cdef int K = self.n_tags
        tags_arr = numpy.zeros(values.shape[0], dtype=numpy.int32)
        probs_arr = numpy.zeros((values.shape[0], K))
        if size_ == 0:
            return tags_arr, probs_arr
        cdef Py_ssize_t n_sentences = starts.shape[0] - 1, i, base
        cdef int size = size_, n, last = 0, failed = -1
        cdef const uint64_t[:, ::1] vv = values, bk = self.bigram_keys
        cdef uint64_t[:, ::1] kv = numpy.empty((size, len(self.templates)), dtype=numpy.uint64)
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.part_columns, offsets = self.part_offsets
        cdef const int[::1] rank = self.rank
        cdef double[:, ::1] E = numpy.empty((size, K)), B = numpy.empty((K + 1, K))
        cdef const unsigned char[:, ::1] mask_rows
        cdef const unsigned char* allowed_ptr = NULL
        if mask_arr is not None:
            mask_rows = mask_arr
            allowed_ptr = &mask_rows[0, 0]
        cdef int[:, ::1] tag_list = numpy.empty((size, K), dtype=numpy.intc)
        cdef int[::1] n_tags = numpy.empty(size, dtype=numpy.intc)
        cdef double[:, ::1] alpha = numpy.empty((size, K)), fa = numpy.empty((size, K)), fb = numpy.empty((size, K))
        cdef int[:, ::1] bp = numpy.zeros((size, K), dtype=numpy.intc)
        cdef double[::1] pieces = numpy.empty(K + (<Py_ssize_t>size - 1) * K * K)
        cdef Py_ssize_t[::1] piece_offsets = numpy.empty(size, dtype=numpy.intp)
        cdef double[::1] tmp = numpy.empty(K + 1)
        cdef int[::1] tags = tags_arr
        cdef double[:, ::1] probs = probs_arr
        cdef double best, logz = 0.0
        with nogil:
            _bigrams(K, bk, mask, &w[0], B)
            for i in range(n_sentences):
                base = starts[i]
                n = <int>(starts[i + 1] - base)
                if n == 0:
                    continue
                _emission_keys(vv, base, n, seeds, n_parts, columns, offsets, kv)
                _allowed_emissions(n, K, kv, &rank[0], mask, &w[0],
                                   allowed_ptr + base * K if allowed_ptr != NULL else NULL, E, tag_list, &n_tags[0])
                best = _tag_marginals1(n, K, vv, base, &rank[0], B, self.word_bigram_seed, mask, &w[0], E,
                                       tag_list, &n_tags[0], temperature, &pieces[0], &piece_offsets[0], &tmp[0],
                                       alpha, bp, &last, fa, fb, &probs[base, 0], &logz)
                if best == -INFINITY or not (logz > -INFINITY and logz < INFINITY):
                    failed = <int>i
                    break
                _backtrack1(n, last, bp, tags[base:base + n])
        if failed >= 0:
            raise ValueError(f"sentence {failed} of the batch: no tag sequence has a finite score")
        return tags_arr, probs_arr

    def tag_many(self, values, const int64_t[::1] starts, const double[::1] w, allowed=None):
        """Viterbi's best tags of every sentence of a batch, in one region without the GIL
        (threads sharing a model run in parallel): `values` are the words' `form_values`
        (no roots), sentence i its rows starts[i]..starts[i+1]-1. Returns int32 tag ids, one
        per word: the same tags as `score` then `chain_argmax` one sentence at a time.
        `allowed` (order 1): (words, K) bool, the tags each word may take; the others are not
        scored (the same tags as `chain_argmax` of scores with their parts at -inf)."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        values, mask_arr, size_ = self._batch_inputs(values, starts, allowed)
        cdef Py_ssize_t n_sentences = starts.shape[0] - 1, i
        tags_arr = numpy.zeros(values.shape[0], dtype=numpy.int32)
        if size_ == 0:
            return tags_arr
        cdef int size = size_, K = self.n_tags, order = self.order, n, last = 0, failed = -1
        cdef int Q = K + 1 if order == 2 else 1
        cdef const uint64_t[:, ::1] vv = values, bk = self.bigram_keys
        cdef uint64_t[:, ::1] kv = numpy.empty((size, len(self.templates)), dtype=numpy.uint64)
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.part_columns, offsets = self.part_offsets
        cdef const int[::1] rank = self.rank
        cdef const uint64_t[:, :, ::1] tr = self.trigram_keys
        cdef double[:, ::1] E = numpy.empty((size, K)), B = numpy.empty((K + 1, K))
        cdef double[:, :, ::1] T = numpy.empty(self.trigram_keys.shape)
        # order 1 scores its parts inside Viterbi (`_viterbi1`); order 2 stores them first
        cdef double[:, :, :, ::1] S4 = numpy.zeros((int(size), int(Q), int(K) + 1, int(K)) if order == 2
                                                   else (1, 1, 1, 1))
        cdef double[::1] terms = numpy.empty((K + 1) * (K + 1))
        cdef const unsigned char[:, ::1] mask_rows
        cdef const unsigned char* allowed_ptr = NULL
        if mask_arr is not None:
            mask_rows = mask_arr
            allowed_ptr = &mask_rows[0, 0]
        cdef int[:, ::1] tag_list = numpy.empty((size, K), dtype=numpy.intc)
        cdef int[::1] n_tags = numpy.empty(size, dtype=numpy.intc)
        cdef double[:, ::1] alpha1 = numpy.empty((size, K))
        cdef int[:, ::1] bp1 = numpy.zeros((size, K), dtype=numpy.intc)
        second = (int(size), int(K) + 1, int(K)) if order == 2 else (1, 1, 1)
        cdef double[:, :, ::1] alpha2 = numpy.empty(second)
        cdef int[:, :, ::1] bp2 = numpy.zeros(second, dtype=numpy.intc)
        cdef int[::1] tags = tags_arr
        cdef Py_ssize_t base
        cdef double best
        with nogil:
            if order == 1:
                _bigrams(K, bk, mask, &w[0], B)  # once per batch: the same for every sentence
            for i in range(n_sentences):
                base = starts[i]
                n = <int>(starts[i + 1] - base)
                if n == 0:
                    continue
                _emission_keys(vv, base, n, seeds, n_parts, columns, offsets, kv)
                if order == 1:
                    best = _viterbi1(n, K, kv, vv, base, &rank[0], B, self.word_bigram_seed, mask, &w[0],
                                     allowed_ptr + base * K if allowed_ptr != NULL else NULL, E, tag_list,
                                     &n_tags[0], alpha1, bp1, &last)
                    if best > -INFINITY:
                        _backtrack1(n, last, bp1, tags[base:base + n])
                else:
                    _score(n, K, order, kv, vv, base, &rank[0], bk, self.word_bigram_seed, tr, mask, &w[0], E, B, T,
                           &S4[0, 0, 0, 0])
                    best = _forward2(S4, n, K, True, alpha2, bp2, &terms[0], &last)
                    if best > -INFINITY:
                        _backtrack2(n, K, last, bp2, tags[base:base + n])
                if best == -INFINITY:
                    failed = <int>i
                    break
        if failed >= 0:
            raise ValueError(f"sentence {failed} of the batch: no tag sequence has a finite score")
        return tags_arr

    def emission_keys(self, sentence):
        """(n, len(templates)) uint64: each word's emission features before the tag."""
        values = numpy.ascontiguousarray(self.word_values(sentence))
        keys = numpy.empty((values.shape[0], len(self.templates)), dtype=numpy.uint64)
        cdef const uint64_t[:, ::1] vv = values
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.part_columns, offsets = self.part_offsets
        cdef uint64_t[:, ::1] kv = keys
        with nogil:
            _emission_keys(vv, 0, vv.shape[0], seeds, n_parts, columns, offsets, kv)
        return values, keys

    def score(self, sentence, const double[::1] w):
        """Scores of every part: w . phi(part), in the `viterbi` layout; invalid parts are 0."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        cdef int n = sentence.n, K = self.n_tags, order = self.order
        out = numpy.zeros(self.shape(n))
        if n == 0:
            return out
        values, keys = self.emission_keys(sentence)
        cdef const uint64_t[:, ::1] vv = values, kv = keys, bk = self.bigram_keys
        cdef const int[::1] rank = self.rank
        cdef const uint64_t[:, :, ::1] tr = self.trigram_keys
        cdef double[:, ::1] E = numpy.empty((n, K)), B = numpy.empty((K + 1, K))
        cdef double[:, :, ::1] T = numpy.empty(self.trigram_keys.shape)
        cdef double[::1] flat = out.reshape(-1)
        with nogil:
            _score(n, K, order, kv, vv, 0, &rank[0], bk, self.word_bigram_seed, tr, mask, &w[0], E, B, T, &flat[0])
        return out

    def add(self, sentence, coef, Weights weights, double scale=1.0):
        """weights += scale * sum_r coef[r] * phi(r) over valid parts r (invalid entries are ignored)."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        cdef int n = sentence.n, K = self.n_tags, order = self.order
        C = numpy.ascontiguousarray(coef, dtype=numpy.float64)
        if C.shape != self.shape(n):
            raise ValueError(f"coefficients must have shape {self.shape(n)}, got {C.shape}")
        if n == 0:
            return
        values, keys = self.emission_keys(sentence)
        cdef const uint64_t[:, ::1] vv = values, kv = keys, bk = self.bigram_keys
        cdef const int[::1] rank = self.rank
        cdef const uint64_t[:, :, ::1] tr = self.trigram_keys
        cdef const double[::1] flat = C.reshape(-1)
        cdef double[:, ::1] cE = numpy.zeros((n, K)), cB = numpy.zeros((K + 1, K))
        cdef double[:, :, ::1] cT = numpy.zeros(self.trigram_keys.shape)
        with nogil:
            _add(n, K, order, kv, vv, &rank[0], bk, self.word_bigram_seed, tr, weights.mask, &flat[0], scale, weights, cE, cB, cT)

    def part_indices(self, sentence, part):
        """The feature indices of one part (t, prev, cur) or (t, prev2, prev, cur) (tests, inspection)."""
        cdef Weights probe = Weights(self.bits, False)
        coef = numpy.zeros(self.shape(sentence.n))
        coef[tuple(part)] = 1.0
        self.add(sentence, coef, probe)
        idx = numpy.flatnonzero(probe.array)
        return numpy.repeat(idx, probe.array[idx].astype(numpy.int64)).astype(numpy.uint64)
