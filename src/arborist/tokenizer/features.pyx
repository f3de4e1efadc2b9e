"""Hashed features of a first-order chain over the characters of a text (`CharacterChain`).

Parts are those of an order-1 `arborist.tagger.viterbi` chain over characters:
S[t, p, c], shape (n, K+1, K), p = K is START (valid only at t = 0). The score of a part is

    S[t, p, c] = E[t, c] + B[p, c]

E[t, c]: the emission features of character t conjoined with tag c; B[p, c]: the tag bigram.

Values of a character (columns of `values`, computed without the GIL from the four input
columns of `chars.char_values`: code point, lowercase, class, script):

  cp, low, cls, scr   the character itself
  chunk               the lowercase whitespace-delimited chunk holding it (hash; LONG when it
                      is longer than MAX_CHUNK, SPACE_V for whitespace)
  pos, rev            its distance from the chunk's start / end, capped at MAX_POS
  prefix              the chunk so far, low[chunk start .. t) ("the partial token so far"; a
                      token starts at a chunk start or inside a chunk, so this is the text of
                      the token so far whenever no token boundary fell inside the chunk yet)
  suffix              the rest of the chunk, low[t .. chunk end)
  prev                at a chunk's first character, the previous chunk (sentence starts:
                      "Mr. Smith" vs "said. The"); NOTSTART elsewhere
  bi, tri, four       the lowercase n-gram ending at t (before the text: CP_BOS), packed
                      (bi, tri) or hashed (four) once, so an n-gram template costs one
                      combine: "bi+1" is low|low+1
  clsthree, clsfive   the classes of t-1..t+1 and t-2..t+2 (BOS / EOS outside the text)
  shape               the chunk's shape: its characters' classes, punctuation and symbols as
                      themselves, runs of one class cut at 2 ("Prof." -> upper lower lower "."),
                      whatever the chunk's length
  prevshape           at a chunk's first character, the previous chunk's shape (abbreviations
                      before a capital: "Dr. Smith"); NOTSTART elsewhere
  pplast              at a chunk's first character, the last character (class, or the
                      character for punctuation and symbols) of the chunk before the previous
                      one (a numbered heading "... 'Licenza'). 1. Definizioni." is one
                      sentence: its "1." follows a sentence end); LONG past a chunk longer
                      than MAX_CHUNK; NOTSTART elsewhere
  pprev               at a chunk's first character, the chunk before the previous one (with
                      prev and chunk: the word trigram across a boundary, which lets the
                      model memorize a boundary without punctuation); NOTSTART elsewhere
  kpre, ksuf, klong   the known-token lexicon (`set_vocab`: lowercased training tokens seen
                      at least twice, so that training also sees unknown words): whether the
                      chunk so far low[chunk start .. t) is a known token, whether the rest
                      of the chunk low[t .. end) is, and the length (up to C_MAX_KNOWN) of
                      the longest known token starting at t inside the chunk, 0 if none

Templates conjoin up to MAX_PARTS (value, offset) pairs ("low-1|low" is the bigram ending at
t); outside the text a value is BOS / EOS. A chunk's values depend on at most MAX_CHUNK
characters either side, so a window of a longer text with CONTEXT characters of margin on
each side gives its kept characters exactly the features of the whole text.

Weight layout (as the word tagger's): emission key k owns the K consecutive weights
(k + c) & mask; the bigram (p, c) has one hashed weight. `score` and `add` enumerate
features with the same code, so scores are exactly w . phi.
"""
from libc.stdint cimport uint64_t, int64_t, uint32_t, uint8_t, int8_t
from libc.math cimport INFINITY
import re

import numpy

from . import chars as _chars

from ..hashing cimport combine, mix64
from ..weights cimport Weights, touch, prefetch
from ..strings import hash_string, hash_strings
from ..tagger.viterbi cimport _backtrack1
from ..semiring cimport Acc, acc_init, acc_add, acc_value

INPUT_COLUMNS = ("cp", "low", "cls", "scr")
VALUES = INPUT_COLUMNS + ("chunk", "pos", "rev", "prefix", "suffix", "prev", "bi", "tri", "four", "clsthree",
                          "clsfive", "shape", "prevshape", "kpre", "ksuf", "klong", "pplast", "pprev")
cdef int N_INPUT = 4
cdef int N_VALUES = 22
cdef int C_CP = 0, C_LOW = 1, C_CLS = 2, C_SCR = 3, C_CHUNK = 4, C_POS = 5, C_REV = 6
cdef int C_PREFIX = 7, C_SUFFIX = 8, C_PREV = 9
cdef int C_BI = 10, C_TRI = 11, C_FOUR = 12, C_CLS3 = 13, C_CLS5 = 14, C_SHAPE = 15, C_PREVSHAPE = 16
cdef int C_KPRE = 17, C_KSUF = 18, C_KLONG = 19, C_PPLAST = 20, C_PPREV = 21
cdef int C_MAX_KNOWN = 16  # longest known token looked for (characters)
# chars.SPACE and chars.NEWLINE: the classes that separate chunks
cdef uint64_t CLS_SPACE = 0, CLS_NEWLINE = 9

MAX_PARTS = 5
# The largest |offset| of a template's part. CONTEXT's 8 characters beyond the chunks cover an
# offset of 5 plus the 3 characters a 4-gram reaches back, so windows stay exact; the kernel's
# offsets also stay far from int32 overflow.
MAX_OFFSET = 5
cdef int C_MAX_CHUNK = 40, C_MAX_AFFIX = 20, C_MAX_POS = 8
MAX_CHUNK, MAX_AFFIX, MAX_POS = C_MAX_CHUNK, C_MAX_AFFIX, C_MAX_POS
CONTEXT = 3 * MAX_CHUNK + 8  # characters of margin that make a window's features exact

# The known-token templates ("kpre|klong|ksuf", "kpre|klong|low-1", "kpre|klong|low") are
# not in the default set: with them dev Words F1 moved by +0.04 (en_ewt), -0.09 (el_gdt),
# -0.01 (hu_szeged), -0.02 (tr_imst), 0 (it_partut), at the cost of a lexicon lookup per
# character and chunk position.
DEFAULT_TEMPLATES = (
    "bias",
    "low-3", "low-2", "low-1", "low", "low+1", "low+2", "low+3", "cp",
    "bi-1", "bi", "bi+1", "bi+2",
    "tri", "tri+1", "tri+2",
    "four", "four+3",
    "clsfive", "clsthree",
    "cp-1|cp", "scr-1|scr",
    "low-1|cls", "cls-1|low", "low|cls+1", "cls|low+1",
    "prev|chunk", "prevshape|cls", "prevshape|shape", "shape|pos",
    "chunk|pos", "prefix", "prefix|low", "suffix", "rev|cls", "prev|cp",
    # Memorization of sentence boundaries (issue 23's round trip): the word trigram across a
    # boundary, and the bigram twice more under other seeds (three keys of one bigram learn
    # it three times as fast against the generic weights that the margin of 100 scales up).
    # With 40 epochs: en_ewt round trip Sentences 95.36 -> 99.66 (bench_tokenizer.py).
    "pprev|prev|chunk", "prev|chunk|pos", "prev|chunk|rev",
)
MEMORIZE_TEMPLATES = ("pprev|prev|chunk", "prev|chunk|pos", "prev|chunk|rev")

# The default set plus the sentence template "pplast|prevshape|cls" (is a chunk that follows a
# short chunk like "1." the start of a sentence, given that the chunk before "1." ended with
# punctuation?). Not the default: measured on dev (bench_tokenizer.py --pplast), Sentences F1
# it_partut 97.14 -> 100.00 (its three errors, the numbered headings "1. Definizioni."),
# el_gdt 94.75 -> 95.11, tr_imst 96.08 -> 96.09, but el_gdt Words 99.84 -> 99.80 (new
# scattered boundary errors: "(", "Γ.", "Πεκίνο."). Variants: pplast|prevshape|shape
# (it 97.14, el 95.12 / 99.81, tr 96.48 / 97.83), pplast|prevshape (it 99.04, el 94.74 /
# 99.81, tr 96.09 / 97.83), pplast of any last character with |cls (it 100.00, el 94.35 /
# 99.78, tr 96.22 / 97.84).
PPLAST_TEMPLATES = DEFAULT_TEMPLATES + ("pplast|prevshape|cls",)

# A faster set (30 templates; 11-57% more words per CPU second measured on a shared machine): without the outer character
# unigrams, the right 4-gram, the script bigram, the chunk shape by position and one
# class/character conjunction. Measured on dev (bench_tokenizer.py --fast): Words F1 -0.04
# (el_gdt), 0 (it_partut), -0.04 (tr_imst), -0.07 (en_ewt).
FAST_TEMPLATES = tuple(t for t in DEFAULT_TEMPLATES
                       if t not in ("low-3", "low+3", "four+3", "scr-1|scr", "shape|pos", "cls|low+1")
                       and t not in MEMORIZE_TEMPLATES)

cdef uint64_t BOS = hash_string("<char-bos>")
cdef uint64_t EOS = hash_string("<char-eos>")
cdef uint64_t SPACE_V = hash_string("<space>")
cdef uint64_t LONG = hash_string("<long>")
cdef uint64_t NOTSTART = hash_string("<not-chunk-start>")
cdef uint64_t NOPREV = hash_string("<no-previous-chunk>")
cdef uint64_t EMPTY = hash_string("<empty>")
cdef uint64_t STRING_SEED = hash_string("char/string")
cdef uint64_t CP_BOS = 0x1FFFFF  # above every code point: "before the text" in a packed n-gram
cdef uint64_t CLS_BOS = 15, CLS_EOS = 14  # above every class


def template_parts(str name):
    """The (VALUES column, character offset) pairs that template `name` conjoins."""
    if name == "bias":
        return ()
    parts = []
    for piece in name.split("|"):
        match = re.fullmatch(r"([a-z]+?)([+-][0-9]+)?", piece)
        if match is None or match.group(1) not in VALUES:
            raise ValueError(f"character template {name!r}: {piece!r} is not one of {VALUES} with an optional offset")
        offset = int(match.group(2) or 0)
        if abs(offset) > MAX_OFFSET:
            raise ValueError(f"character template {name!r}: offset {offset} is beyond ±{MAX_OFFSET} "
                             "(windows of a long text keep exact features only that far)")
        parts.append((VALUES.index(match.group(1)), offset))
    if len(parts) > MAX_PARTS:
        raise ValueError(f"character template {name!r} conjoins more than {MAX_PARTS} values")
    return tuple(parts)


cdef inline bint _is_space(uint64_t cls) noexcept nogil:
    return cls == CLS_SPACE or cls == CLS_NEWLINE


cdef uint64_t TOKEN_SEED = hash_string("char/token")


cdef inline bint _known(uint64_t h, const uint64_t* table, uint64_t tmask) noexcept nogil:
    """Whether token hash h is in the open-addressing table (0 = empty slot, linear probing)."""
    if tmask == 0:
        return False
    if h == 0:
        h = 1
    cdef uint64_t i = mix64(h) & tmask
    while table[i] != 0:
        if table[i] == h:
            return True
        i = (i + 1) & tmask
    return False


def token_hashes(strings):
    """uint64 hash of each string's lowercase characters (as the kernel folds a chunk's `low`
    values from TOKEN_SEED): the keys of the known-token table."""
    from .chars import code_points
    out = numpy.empty(len(strings), dtype=numpy.uint64)
    cdef const uint64_t[:, ::1] cv
    cdef uint64_t h
    cdef Py_ssize_t i, j
    for i, text in enumerate(strings):
        cv = numpy.ascontiguousarray(char_values(code_points(text)))
        h = TOKEN_SEED
        for j in range(cv.shape[0]):
            h = combine(h, cv[j, C_LOW])
        out[i] = h if h != 0 else 1
    return out


def token_table(strings):
    """The open-addressing table of the token hashes of `strings` (uint64, a power of 2 at
    least twice their number; 0 marks an empty slot)."""
    hashes = numpy.unique(token_hashes(list(strings)))
    size = 1
    while size < 2 * max(len(hashes), 1):
        size *= 2
    table = numpy.zeros(size, dtype=numpy.uint64)
    cdef uint64_t[::1] tv = table
    cdef uint64_t tmask = size - 1, i, h
    for h in hashes:
        i = mix64(h) & tmask
        while tv[i] != 0:
            i = (i + 1) & tmask
        tv[i] = h
    return table


cdef void _values(const uint64_t[:, ::1] chars, Py_ssize_t base, int n, uint64_t[:, ::1] vals,
                  const uint64_t* table, uint64_t tmask) noexcept nogil:
    """vals[t]: the VALUES of character t of the text in rows base..base+n-1 of `chars`
    (table, tmask: the known-token table, tmask = 0 when there is none)."""
    cdef int t, j, k, e, cs, ce, length, longest
    cdef uint64_t low1, low2, low3, low, c0, hp
    cdef uint64_t h, prev_chunk = NOPREV, chunk, shape, prev_shape = NOPREV, sym, last_sym
    cdef uint64_t prev_last = NOPREV, pp_last = NOPREV, pprev_chunk = NOPREV
    cdef int run
    t = 0
    while t < n:
        for j in range(N_INPUT):
            vals[t, j] = chars[base + t, j]
        if _is_space(chars[base + t, C_CLS]):
            vals[t, C_CHUNK] = SPACE_V
            vals[t, C_POS] = SPACE_V
            vals[t, C_REV] = SPACE_V
            vals[t, C_PREFIX] = SPACE_V
            vals[t, C_SUFFIX] = SPACE_V
            vals[t, C_PREV] = SPACE_V
            vals[t, C_SHAPE] = SPACE_V
            vals[t, C_PREVSHAPE] = SPACE_V
            vals[t, C_KPRE] = SPACE_V
            vals[t, C_KSUF] = SPACE_V
            vals[t, C_KLONG] = SPACE_V
            vals[t, C_PPLAST] = SPACE_V
            vals[t, C_PPREV] = SPACE_V
            t += 1
            continue
        # A chunk starts at t: find its end, then fill all of it.
        cs = t
        ce = t
        while ce < n and not _is_space(chars[base + ce, C_CLS]):
            ce += 1
        length = ce - cs
        if length <= C_MAX_CHUNK:
            h = STRING_SEED
            for j in range(cs, ce):
                h = combine(h, chars[base + j, C_LOW])
            chunk = h
        else:
            chunk = LONG
        shape = STRING_SEED
        last_sym = NOPREV
        run = 0
        for j in range(cs, ce):
            # letters, digits and marks by class; punctuation (every role), symbols, other as the character
            sym = chars[base + j, C_CLS]
            if sym >= 5 and sym != 7 and sym != 9:
                sym = 16 + chars[base + j, C_CP]
            run = run + 1 if sym == last_sym else 1
            last_sym = sym
            if run <= 2:
                shape = combine(shape, sym)
        h = EMPTY
        for j in range(cs, ce):
            if j > cs:
                for k in range(N_INPUT):
                    vals[j, k] = chars[base + j, k]
            vals[j, C_CHUNK] = chunk
            vals[j, C_POS] = j - cs if j - cs < C_MAX_POS else C_MAX_POS
            vals[j, C_REV] = ce - 1 - j if ce - 1 - j < C_MAX_POS else C_MAX_POS
            vals[j, C_PREFIX] = h if j - cs <= C_MAX_AFFIX else LONG
            if j - cs < C_MAX_AFFIX:
                h = combine(h, chars[base + j, C_LOW])
            vals[j, C_PREV] = prev_chunk if j == cs else NOTSTART
            vals[j, C_SHAPE] = shape
            vals[j, C_PREVSHAPE] = prev_shape if j == cs else NOTSTART
            vals[j, C_PPLAST] = pp_last if j == cs else NOTSTART
            vals[j, C_PPREV] = pprev_chunk if j == cs else NOTSTART
        h = EMPTY
        for j in range(ce - 1, cs - 1, -1):
            if ce - j <= C_MAX_AFFIX:
                h = combine(h, chars[base + j, C_LOW])
                vals[j, C_SUFFIX] = h
            else:
                vals[j, C_SUFFIX] = LONG
        # Known tokens: the chunk so far (left to right), and every token starting at j.
        hp = TOKEN_SEED
        for j in range(cs, ce):
            vals[j, C_KPRE] = j > cs and j - cs <= C_MAX_KNOWN and _known(hp, table, tmask)
            if j - cs < C_MAX_KNOWN:
                hp = combine(hp, chars[base + j, C_LOW])
            longest = 0
            if tmask != 0:
                h = TOKEN_SEED
                for e in range(j, ce if ce - j <= C_MAX_KNOWN else j + C_MAX_KNOWN):
                    h = combine(h, chars[base + e, C_LOW])
                    if _known(h, table, tmask):
                        longest = e + 1 - j
            vals[j, C_KLONG] = longest
            vals[j, C_KSUF] = ce - j <= C_MAX_KNOWN and longest == ce - j
        pprev_chunk = prev_chunk
        prev_chunk = chunk
        prev_shape = shape
        # the last character of the chunk before the previous one ("1. Definizioni": was
        # "1." a sentence of its own's start?); LONG past a long chunk, so windows stay exact
        pp_last = prev_last if length <= C_MAX_CHUNK else LONG
        prev_last = (last_sym if last_sym >= 16 else NOPREV) if length <= C_MAX_CHUNK else LONG
        t = ce
    # n-grams of code points (< 2**21) and of classes (< 16) are packed, not hashed: exact
    # and cheap; the template's seed mixes them when the key is made.
    low1 = low2 = low3 = CP_BOS
    for t in range(n):
        low = vals[t, C_LOW]
        vals[t, C_BI] = (low1 << 21) | low
        vals[t, C_TRI] = (low2 << 42) | (low1 << 21) | low
        vals[t, C_FOUR] = combine((low3 << 42) | (low2 << 21) | low1, low)
        low3, low2, low1 = low2, low1, low
        h = vals[t - 2, C_CLS] if t >= 2 else CLS_BOS
        h = (h << 4) | (vals[t - 1, C_CLS] if t >= 1 else CLS_BOS)
        h = (h << 4) | vals[t, C_CLS]
        h = (h << 4) | (vals[t + 1, C_CLS] if t + 1 < n else CLS_EOS)
        vals[t, C_CLS3] = h & 0xFFF
        vals[t, C_CLS5] = (h << 4) | (vals[t + 2, C_CLS] if t + 2 < n else CLS_EOS)


# Characters whose keys are made, then summed into emissions, per kernel step: the keys of a
# whole window (39 templates x 8 bytes a character) would leave the cache between the two.
cdef int KEY_BLOCK = 64


cdef void _keys(const uint64_t[:, ::1] vals, int n, int t0, int t1, const uint64_t[::1] seeds,
                const int[::1] n_parts, const int[:, ::1] columns, const int[:, ::1] offsets,
                const int[:, ::1] deltas, int reach, uint64_t[:, ::1] keys) noexcept nogil:
    """keys[t - t0, j]: template j's feature of character t, for t0 <= t < t1 of a text of n
    characters, before conjunction with a tag. A part (column, offset) reads vals[t + offset,
    column], BOS / EOS outside the text; deltas[j, m] = offset * V + column of part m of
    template j, and reach the largest |offset|: a row at least reach characters from both
    ends reads its parts at fixed distances, without the BOS / EOS tests (13% of the
    kernel's time)."""
    cdef int t, j, m, pos, J = keys.shape[1], V = vals.shape[1], P = columns.shape[1]
    cdef uint64_t key
    cdef const uint64_t* vp = &vals[0, 0]
    cdef const uint64_t* row
    cdef const int* cols = &columns[0, 0]
    cdef const int* offs = &offsets[0, 0]
    cdef const int* dp = &deltas[0, 0]
    cdef const int* parts = &n_parts[0]
    cdef uint64_t* out
    for t in range(t0, t1):
        out = &keys[t - t0, 0]
        if t >= reach and t + reach < n:
            row = vp + <Py_ssize_t>t * V
            for j in range(J):
                key = seeds[j]
                for m in range(parts[j]):
                    key = combine(key, row[dp[j * P + m]])
                out[j] = key
        else:
            for j in range(J):
                key = seeds[j]
                for m in range(parts[j]):
                    pos = t + offs[j * P + m]
                    key = combine(key, BOS if pos < 0 else EOS if pos >= n else vp[<Py_ssize_t>pos * V + cols[j * P + m]])
                out[j] = key


cdef void _emissions(const uint64_t[:, ::1] keys, int n, int K, uint64_t mask, const double* w,
                     double* E) noexcept nogil:
    """E[t * K + c] = sum over templates j of w[(keys[t, j] + c) & mask], t < n, each row's
    weights prefetched while the previous row is summed (the reads are cache misses; this
    overlaps them)."""
    cdef int t, j, c, J = keys.shape[1]
    cdef const uint64_t* row
    cdef const double* block
    cdef double e0, e1, e2, e3, e4
    cdef double* out
    if n == 0:
        return
    for j in range(J):
        prefetch(w, keys[0, j] & mask)
    for t in range(n):
        if t + 1 < n:
            row = &keys[t + 1, 0]
            for j in range(J):
                prefetch(w, row[j] & mask)
        row = &keys[t, 0]
        out = E + <Py_ssize_t>t * K
        if K == 4:
            # The tokenizer's tag set: the block's four weights summed in registers.
            e0 = e1 = e2 = e3 = 0.0
            for j in range(J):
                e0 += w[row[j] & mask]
                e1 += w[(row[j] + 1) & mask]
                e2 += w[(row[j] + 2) & mask]
                e3 += w[(row[j] + 3) & mask]
            out[0], out[1], out[2], out[3] = e0, e1, e2, e3
        elif K == 5:
            # The sentence-end design's tag set.
            e0 = e1 = e2 = e3 = e4 = 0.0
            for j in range(J):
                e0 += w[row[j] & mask]
                e1 += w[(row[j] + 1) & mask]
                e2 += w[(row[j] + 2) & mask]
                e3 += w[(row[j] + 3) & mask]
                e4 += w[(row[j] + 4) & mask]
            out[0], out[1], out[2], out[3], out[4] = e0, e1, e2, e3, e4
        else:
            for c in range(K):
                out[c] = 0.0
            for j in range(J):
                for c in range(K):
                    out[c] += w[(row[j] + <uint64_t>c) & mask]


cdef void _fill_parts(int n, int K, const double[:, ::1] E, const double[:, ::1] B, double[:, :, ::1] S) noexcept nogil:
    cdef int t, p, c
    for c in range(K):
        S[0, K, c] = E[0, c] + B[K, c]
    for t in range(1, n):
        for p in range(K):
            for c in range(K):
                S[t, p, c] = E[t, c] + B[p, c]


cdef double _viterbi(int n, int K, const double[:, ::1] E, const double[:, ::1] B, double[:, ::1] alpha,
                     int[:, ::1] bp, int* last) noexcept nogil:
    """`_fill_parts` then `viterbi._forward1` (max) in one pass, without the (n, K+1, K) parts:
    each part's score E[t, c] + B[p, c] is formed where it is used, and reduced with the same
    accumulator in the same order (first maximum, -inf skipped), so the same tags."""
    cdef int t, p, c
    cdef Acc acc
    for c in range(K):
        alpha[0, c] = E[0, c] + B[K, c]
        bp[0, c] = K
    for t in range(1, n):
        for c in range(K):
            acc_init(&acc)
            for p in range(K):
                acc_add(&acc, alpha[t - 1, p] + (E[t, c] + B[p, c]), p, True)
            alpha[t, c] = acc_value(&acc, True)
            bp[t, c] = acc.arg if acc.arg >= 0 else 0
    acc_init(&acc)
    for c in range(K):
        acc_add(&acc, alpha[n - 1, c], c, True)
    last[0] = acc.arg if acc.arg >= 0 else 0
    return acc_value(&acc, True)


cdef class CharFeatures:
    """Emission and transition features of an order-1 chain of K tags over characters."""

    cdef readonly int bits, n_tags
    cdef readonly tuple templates
    cdef object seeds, n_parts, part_columns, part_offsets, part_deltas, bigram_keys
    cdef int reach  # the largest |offset| of a template's part
    cdef readonly object vocab_table  # uint64 open-addressing table of known-token hashes (token_table)

    def __init__(self, int n_tags, int bits=22, templates=DEFAULT_TEMPLATES):
        if not 1 <= bits <= 32:
            raise ValueError(f"hash bits must be in 1..32, got {bits}")
        if n_tags < 1:
            raise ValueError("a chain needs at least one tag")
        self.bits, self.n_tags = bits, n_tags
        self.templates = tuple(templates)
        if len(set(self.templates)) != len(self.templates):
            raise ValueError(f"duplicate character templates in {list(self.templates)}")
        J = len(self.templates)
        self.n_parts = numpy.zeros(J, dtype=numpy.int32)
        self.part_columns = numpy.zeros((J, MAX_PARTS), dtype=numpy.int32)
        self.part_offsets = numpy.zeros((J, MAX_PARTS), dtype=numpy.int32)
        for j, name in enumerate(self.templates):
            parts = template_parts(name)
            self.n_parts[j] = len(parts)
            for m, (column, offset) in enumerate(parts):
                self.part_columns[j, m], self.part_offsets[j, m] = column, offset
        self.part_deltas = self.part_offsets * N_VALUES + self.part_columns
        self.reach = int(numpy.abs(self.part_offsets).max()) if J else 0
        self.seeds = hash_strings([f"char/{name}" for name in self.templates])
        cdef uint64_t seed = hash_string("char/bigram")
        bigram = numpy.empty((n_tags + 1, n_tags), dtype=numpy.uint64)
        for p in range(n_tags + 1):
            for c in range(n_tags):
                bigram[p, c] = combine(combine(seed, <uint64_t>p), <uint64_t>c)
        self.bigram_keys = bigram
        self.vocab_table = numpy.zeros(1, dtype=numpy.uint64)

    def set_vocab(self, table):
        """Use `table` (`token_table` of the known tokens; None: no lexicon) for kpre/ksuf/klong."""
        table = numpy.zeros(1, dtype=numpy.uint64) if table is None else numpy.ascontiguousarray(table, dtype=numpy.uint64)
        if table.ndim != 1 or table.size & (table.size - 1):
            raise ValueError("the known-token table must be a 1-d uint64 array of a power-of-2 size")
        self.vocab_table = table

    cdef uint64_t _tmask(self):
        # a one-slot table is "no lexicon": every token unknown
        return 0 if self.vocab_table.size == 1 else <uint64_t>(self.vocab_table.size - 1)

    def shape(self, int n):
        return (n, self.n_tags + 1, self.n_tags)

    def values(self, chars):
        """(n, len(VALUES)) uint64: the values of every character (`chars`: char_values rows)."""
        chars = numpy.ascontiguousarray(chars, dtype=numpy.uint64)
        if chars.ndim != 2 or chars.shape[1] != N_INPUT:
            raise ValueError(f"chars must be (n, {N_INPUT}) uint64 (chars.char_values)")
        out = numpy.empty((chars.shape[0], N_VALUES), dtype=numpy.uint64)
        cdef const uint64_t[:, ::1] cv = chars
        cdef uint64_t[:, ::1] ov = out
        cdef const uint64_t[::1] table = self.vocab_table
        cdef uint64_t tmask = self._tmask()
        with nogil:
            _values(cv, 0, <int>cv.shape[0], ov, &table[0], tmask)
        return out

    def keys(self, chars):
        """(n, len(templates)) uint64: each character's emission features before the tag."""
        vals = self.values(chars)
        keys = numpy.empty((vals.shape[0], len(self.templates)), dtype=numpy.uint64)
        cdef const uint64_t[:, ::1] vv = vals
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.part_columns, offsets = self.part_offsets, deltas = self.part_deltas
        cdef uint64_t[:, ::1] kv = keys
        with nogil:
            _keys(vv, <int>vv.shape[0], 0, <int>vv.shape[0], seeds, n_parts, columns, offsets, deltas, self.reach, kv)
        return keys

    def _check_weights(self, Py_ssize_t size):
        if size != (<Py_ssize_t>1 << self.bits):
            raise ValueError(f"weight vector has {size} entries, features expect 2**{self.bits}")

    def score(self, chars, const double[::1] w):
        """Scores of every part w . phi(part), shape (n, K+1, K); invalid parts are 0."""
        self._check_weights(w.shape[0])
        cdef int K = self.n_tags, p, c
        keys = self.keys(chars)
        cdef int n = keys.shape[0]
        out = numpy.zeros(self.shape(n))
        if n == 0:
            return out
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        cdef const uint64_t[:, ::1] kv = keys, bk = self.bigram_keys
        cdef double[:, ::1] E = numpy.empty((n, K)), B = numpy.empty((K + 1, K))
        cdef double[:, :, ::1] S = out
        with nogil:
            _emissions(kv, n, K, mask, &w[0], &E[0, 0])
            for p in range(K + 1):
                for c in range(K):
                    B[p, c] = touch(bk[p, c], mask, &w[0], None, 0.0)
            _fill_parts(n, K, E, B, S)
        return out

    def add(self, chars, coef, Weights weights, double scale=1.0):
        """weights += scale * sum_r coef[r] phi(r) over the valid parts r (invalid entries ignored)."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        keys = self.keys(chars)
        cdef int n = keys.shape[0], K = self.n_tags, t, p, c, j
        C = numpy.ascontiguousarray(coef, dtype=numpy.float64)
        if C.shape != self.shape(n):
            raise ValueError(f"coefficients must have shape {self.shape(n)}, got {C.shape}")
        if n == 0:
            return
        cdef const double[:, :, ::1] cv = C
        cdef const uint64_t[:, ::1] kv = keys, bk = self.bigram_keys
        cdef double[:, ::1] cE = numpy.zeros((n, K)), cB = numpy.zeros((K + 1, K))
        cdef uint64_t mask = weights.mask
        with nogil:
            # Sum the coefficients per piece, then add each piece's features once.
            for c in range(K):
                cE[0, c] += cv[0, K, c]
                cB[K, c] += cv[0, K, c]
            for t in range(1, n):
                for p in range(K):
                    for c in range(K):
                        cE[t, c] += cv[t, p, c]
                        cB[p, c] += cv[t, p, c]
            for t in range(n):
                for c in range(K):
                    if cE[t, c] != 0.0:
                        for j in range(kv.shape[1]):
                            touch(kv[t, j] + <uint64_t>c, mask, NULL, weights, scale * cE[t, c])
            for p in range(K + 1):
                for c in range(K):
                    if cB[p, c] != 0.0:
                        touch(bk[p, c], mask, NULL, weights, scale * cB[p, c])

    def tag_many(self, chars, const int64_t[::1] starts, const double[::1] w):
        """Viterbi's best tags of every text of a batch in one region without the GIL: text i is
        rows starts[i]..starts[i+1]-1 of `chars` (char_values rows). Returns int32 tags, one per
        character: the same as `score` then `chain_argmax` one text at a time."""
        self._check_weights(w.shape[0])
        chars = numpy.ascontiguousarray(chars, dtype=numpy.uint64)
        cdef Py_ssize_t n_texts = starts.shape[0] - 1, i
        if chars.ndim != 2 or chars.shape[1] != N_INPUT or (n_texts >= 0 and starts[n_texts] != chars.shape[0]):
            raise ValueError(f"chars must be (starts[-1], {N_INPUT})")
        tags_arr = numpy.zeros(chars.shape[0], dtype=numpy.int32)
        if n_texts <= 0 or chars.shape[0] == 0:
            return tags_arr
        lengths = numpy.diff(numpy.asarray(starts))
        if (lengths < 0).any() or starts[0] != 0:
            raise ValueError("starts must begin at 0 and not decrease")
        cdef int size = int(lengths.max()), K = self.n_tags, n, last = 0, failed = -1, p, c
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        cdef const uint64_t[:, ::1] cv = chars, bk = self.bigram_keys
        cdef uint64_t[:, ::1] vv = numpy.empty((size, N_VALUES), dtype=numpy.uint64)
        cdef uint64_t[:, ::1] kv = numpy.empty((KEY_BLOCK, len(self.templates)), dtype=numpy.uint64)
        cdef const uint64_t[::1] seeds = self.seeds
        cdef const int[::1] n_parts = self.n_parts
        cdef const int[:, ::1] columns = self.part_columns, offsets = self.part_offsets, deltas = self.part_deltas
        cdef int reach = self.reach, t0, t1
        cdef double[:, ::1] E = numpy.empty((size, K)), B = numpy.empty((K + 1, K))
        cdef double[:, ::1] alpha = numpy.empty((size, K))
        cdef int[:, ::1] bp = numpy.zeros((size, K), dtype=numpy.intc)
        cdef int[::1] tags = tags_arr
        cdef Py_ssize_t base
        cdef double best
        cdef const uint64_t[::1] table = self.vocab_table
        cdef uint64_t tmask = self._tmask()
        with nogil:
            for p in range(K + 1):
                for c in range(K):
                    B[p, c] = touch(bk[p, c], mask, &w[0], None, 0.0)
            for i in range(n_texts):
                base = starts[i]
                n = <int>(starts[i + 1] - base)
                if n == 0:
                    continue
                _values(cv, base, n, vv, &table[0], tmask)
                t0 = 0
                while t0 < n:
                    t1 = t0 + KEY_BLOCK if t0 + KEY_BLOCK < n else n
                    _keys(vv, n, t0, t1, seeds, n_parts, columns, offsets, deltas, reach, kv)
                    _emissions(kv, t1 - t0, K, mask, &w[0], &E[t0, 0])
                    t0 = t1
                best = _viterbi(n, K, E, B, alpha, bp, &last)
                if best == -INFINITY or best == INFINITY or best != best:
                    failed = <int>i
                    break
                _backtrack1(n, last, bp, tags[base:base + n])
        if failed >= 0:
            raise ValueError(f"text {failed} of the batch: no tag sequence has a finite score "
                             "(the weights hold inf or nan)")
        return tags_arr


cdef inline bint _inner_space(uint32_t cp) noexcept nogil:
    # Whitespace that may stay inside a token (FORMs with spaces); the scorer drops these (Zs).
    return cp == 0x20 or cp == 0xA0 or cp == 0x2009 or cp == 0x202F


cdef inline bint _control(uint32_t cp) noexcept nogil:
    # Unicode's control characters (Cc): not text, so never in a token (CoNLL-U has none)
    return cp < 0x20 or (0x7F <= cp and cp <= 0x9F)


cdef inline int _role(int8_t tg, int design) noexcept nogil:
    """0 outside a token, 1 a token's first character, 2 a later character. Tags: design 0
    (sentence starts) O B I S = 0 1 2 3; design 1 (sentence ends) O B I E F = 0 1 2 3 4,
    E an inside and F a first character that end a sentence; design 2 (both) O B I S E F =
    0 1 2 3 4 5."""
    if tg <= 2:
        return tg
    if design == 0:
        return 1
    if design == 1:
        return 2 if tg == 3 else 1
    return 2 if tg == 4 else 1


cdef inline bint _starts_sentence(int8_t tg, int design) noexcept nogil:
    return (design == 0 or design == 2) and tg == 3


cdef inline bint _ends_sentence(int8_t tg, int design) noexcept nogil:
    return (design == 1 and (tg == 3 or tg == 4)) or (design == 2 and (tg == 4 or tg == 5))


def decode_spans(const uint32_t[::1] cps, const uint8_t[::1] cls, const int8_t[::1] tags,
                 const int64_t[::1] starts, int max_sentence_tokens=0, int design=0):
    """Tokens and sentences of every text of a batch from its character tags (`_role`: design 0
    O B I S, design 1 O B I E F), text i being characters starts[i]..starts[i+1]-1. Returns
    (token_start, token_end, sentence_start, space_after, first_token) arrays: offsets into the
    batch, whether a token starts a sentence and is followed by whitespace (or ends its text),
    and text i's tokens first_token[i]..first_token[i+1]-1.

    Whatever the tags, the output is valid for the scorer: every non-space character is in a
    token (a non-space O continues the token before it, or starts one); control characters
    count as whitespace (they are not text: no token holds one); whitespace never
    starts or ends a token, and only an inner space between two characters tagged inside stays
    inside one; a sentence start (or end) tagged on whitespace makes the next token start a
    sentence, as does a sentence end anywhere in a token; a text's first token starts a
    sentence; with max_sentence_tokens > 0 a sentence is cut at that length."""
    if design not in (0, 1, 2):
        raise ValueError(f"design must be 0 (sentence starts), 1 (sentence ends) or 2 (both), got {design}")
    cdef Py_ssize_t n_texts = starts.shape[0] - 1
    if cps.shape[0] != cls.shape[0] or cps.shape[0] != tags.shape[0] or n_texts < 0 \
            or starts[n_texts] != cps.shape[0]:
        raise ValueError("cps, cls and tags must have starts[-1] entries")
    cap = max(int(cps.shape[0]), 1)
    tok_start_arr = numpy.empty(cap, dtype=numpy.int64)
    tok_end_arr = numpy.empty(cap, dtype=numpy.int64)
    sent_arr = numpy.zeros(cap, dtype=numpy.bool_)
    after_arr = numpy.zeros(cap, dtype=numpy.bool_)
    first_arr = numpy.zeros(n_texts + 1, dtype=numpy.int64)
    cdef int64_t[::1] ts = tok_start_arr, te = tok_end_arr, first = first_arr
    cdef uint8_t[::1] sent = sent_arr.view(numpy.uint8), after = after_arr.view(numpy.uint8)
    cdef Py_ssize_t i, j, p0, p1, k = 0, since = 0
    cdef int8_t tg
    cdef int role
    cdef bint ws, in_token, pending
    with nogil:
        for j in range(n_texts):
            p0, p1 = starts[j], starts[j + 1]
            first[j] = k
            in_token = False
            pending = True
            since = 0
            for i in range(p0, p1):
                tg = tags[i]
                role = _role(tg, design)
                ws = cls[i] == CLS_SPACE or cls[i] == CLS_NEWLINE or _control(cps[i])
                if ws:
                    if _starts_sentence(tg, design) or _ends_sentence(tg, design):
                        pending = True
                    if (in_token and role == 2 and _inner_space(cps[i]) and i + 1 < p1
                            and _role(tags[i + 1], design) == 2
                            and cls[i + 1] != CLS_SPACE and cls[i + 1] != CLS_NEWLINE and not _control(cps[i + 1])):
                        continue
                    if in_token:
                        te[k - 1] = i
                        after[k - 1] = True
                        in_token = False
                    continue
                if in_token and (role == 2 or role == 0):
                    if _ends_sentence(tg, design):
                        pending = True
                    continue
                if in_token:
                    te[k - 1] = i
                    after[k - 1] = False
                ts[k] = i
                since += 1
                if _starts_sentence(tg, design) or pending or (max_sentence_tokens > 0 and since > max_sentence_tokens):
                    sent[k] = True
                    since = 1
                pending = _ends_sentence(tg, design)
                in_token = True
                k += 1
            if in_token:
                te[k - 1] = p1
                after[k - 1] = True
        first[n_texts] = k
    return tok_start_arr[:k], tok_end_arr[:k], sent_arr[:k], after_arr[:k], first_arr


def fill_char_values(const uint32_t[::1] cps, const uint32_t[::1] lower, const uint8_t[::1] cls,
                     const uint64_t[::1] script, uint64_t[:, ::1] out):
    """out[i] = (cp, lower[cp], cls[cp], script[cp]) for every code point below len(lower) (the
    tables of `chars`); returns the indices of the others (above the BMP) for the caller."""
    cdef Py_ssize_t i, n = cps.shape[0], size = lower.shape[0], n_big = 0
    cdef uint32_t cp
    big_arr = numpy.empty(n, dtype=numpy.intp)
    cdef Py_ssize_t[::1] big = big_arr
    with nogil:
        for i in range(n):
            cp = cps[i]
            out[i, 0] = cp
            if cp < size:
                out[i, 1] = lower[cp]
                out[i, 2] = cls[cp]
                out[i, 3] = script[cp]
            else:
                big[n_big] = i
                n_big += 1
    return big_arr[:n_big]


# Here rather than in `chars`, which this module imports: the kernel above fills it.
def char_values(cps):
    """(n, 4) uint64: code point, lowercase code point, class, script of each code point."""
    lower, cls, script = _chars._tables()
    cps = numpy.ascontiguousarray(cps, dtype=numpy.uint32)
    out = numpy.empty((len(cps), 4), dtype=numpy.uint64)
    for i in fill_char_values(cps, lower, cls, script, out):
        cp = int(cps[i])
        try:
            ch = chr(cp)
        except ValueError:  # not a code point at all: an "other" character
            out[i, 1:] = (cp, _chars.OTHER, 0)
            continue
        out[i, 1:] = (_chars.char_lower(ch), _chars.char_class(ch), _chars.char_script(ch))
    return out
