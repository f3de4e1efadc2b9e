"""Second-order part features, hashed into the parser's weight vector: sibling parts
(h, s, m) (McDonald and Pereira 2006) and grandparent parts (g, h, m) (Koo and
Collins 2010).

A sibling template is a list of atoms ROLE.ATTR with ROLE one of h, s, m
("h.xpos s.xpos m.xpos", "s.form m.form"); a grandparent template uses g, h, m
("g.xpos h.xpos m.xpos"). As for arcs, an atom may read a neighbour of its role's
word, up to two away ("s.upos s+1.upos m-1.upos m.upos"; beyond the sentence it
reads a boundary value). Each role's atoms are hashed once per token and template
(R[t, role, i]), and a part's feature mixes its three role hashes. When m is h's
first child on its side (s = h) the s role takes a "first child" value, so the
first-child case has features of its own. Stop parts
(h, s, STOP), s being h's outermost child on a side (TurboParser's last-child
siblings), are sibling parts whose m role takes a "stop" value; they are rows
(h, s, n+1) on the right and (h, s, -1) on the left, with s = h for a side without
children. Every feature fires twice: conjoined with the direction(s) of the part's
arcs, and with those directions and a binned distance (between s and m for
siblings, h and m for grandparents; a bin of its own for stop parts).
"""
from libc.stdint cimport uint64_t
import numpy

from ..hashing cimport GOLDEN, combine, mix64
from ..weights cimport Weights, prefetch
from .atoms cimport offset_atoms_hash
from .distance cimport arc_distance_bin
from ..sentence import ATTR_NAMES
from ..strings import hash_string

DEFAULT_SIBLING_TEMPLATES = (
    "h.xpos s.xpos m.xpos", "h.upos s.upos m.upos",
    "s.xpos m.xpos", "s.upos m.upos", "s.form m.form", "s.form m.xpos", "s.xpos m.form",
    "s.lemma m.lemma", "s.upos m.lemma", "s.lemma m.upos",
    "h.form s.xpos m.xpos", "h.xpos s.form m.xpos", "h.xpos s.xpos m.form",
    "h.lemma s.upos m.upos", "h.upos s.lemma m.upos", "h.upos s.upos m.lemma",
)
DEFAULT_GRANDPARENT_TEMPLATES = (
    "g.xpos h.xpos m.xpos", "g.upos h.upos m.upos",
    "g.xpos m.xpos", "g.upos m.upos", "g.form m.form", "g.form m.xpos", "g.xpos m.form",
    "g.lemma m.lemma", "g.upos m.lemma", "g.lemma m.upos",
    "g.form h.xpos m.xpos", "g.xpos h.form m.xpos", "g.xpos h.xpos m.form",
    "g.lemma h.upos m.upos", "g.upos h.lemma m.upos", "g.upos h.upos m.lemma",
)
ROLES = {"sibling": "hsm", "grandparent": "ghm"}
cdef int MAX_ATOMS = 4
cdef int MAX_OFFSET = 2  # as in the arc templates
cdef uint64_t FIRST_CHILD = hash_string("<FIRST-CHILD>")
cdef uint64_t STOP = hash_string("<STOP>")
cdef uint64_t BOS = hash_string("<S>")  # as the arc features': a neighbour before the root
cdef uint64_t EOS = hash_string("</S>")  # or after the last word


def parse_part_template(str template, str kind):
    """'g.xpos h.form m-1.xpos' -> per role, the (attribute row, offset) of its atoms."""
    roles = ROLES[kind]
    out = [[], [], []]
    for atom in template.split():
        where, _, attr = atom.partition(".")
        try:
            role, offset = where[:1], int(where[1:] or 0)
            if role not in roles or not role or attr not in ATTR_NAMES or abs(offset) > MAX_OFFSET \
                    or where[1:2] not in ("", "+", "-"):
                raise ValueError
        except ValueError:
            raise ValueError(f"bad {kind} feature atom {atom!r} in template {template!r}: expected "
                             f"{'|'.join(roles)}[+-k].ATTR with |k| <= {MAX_OFFSET} and ATTR one of "
                             f"{', '.join(ATTR_NAMES)}") from None
        out[roles.index(role)].append((ATTR_NAMES.index(attr), offset))
    if not template.split():
        raise ValueError(f"empty {kind} template")
    if any(len(atoms) > MAX_ATOMS for atoms in out):
        raise ValueError(f"template {template!r} has more than {MAX_ATOMS} atoms on one role")
    return out


cdef class _PartTemplates:
    """One kind's templates: atoms[t, role, 2k] attribute rows (-1 ends) and atoms[t, role,
    2k+1] their offsets, seeds[t, role]."""
    cdef readonly tuple templates
    cdef readonly str kind
    cdef object atoms, seeds

    def __init__(self, templates, str kind):
        self.templates = tuple(templates)
        self.kind = kind
        T = len(self.templates)
        self.atoms = numpy.full((T, 3, 2 * MAX_ATOMS), -1, dtype=numpy.intc)
        self.seeds = numpy.zeros((T, 3), dtype=numpy.uint64)
        for t, template in enumerate(self.templates):
            for r, atoms in enumerate(parse_part_template(template, kind)):
                self.seeds[t, r] = hash_string(f"{kind}/{template}/{ROLES[kind][r]}")
                for k, (attr, offset) in enumerate(atoms):
                    self.atoms[t, r, 2 * k] = attr
                    self.atoms[t, r, 2 * k + 1] = offset

    def role_hashes(self, const uint64_t[:, :] attrs):
        """R (T, 3, n+3) uint64: each token's hash per template and role; column n+1 holds
        the s role's first-child value and column n+2 the m role's stop value (sibling
        templates)."""
        cdef int n_tokens = attrs.shape[1], T = len(self.templates), t, r, i
        cdef const int[:, :, ::1] atoms = self.atoms
        cdef const uint64_t[:, ::1] seeds = self.seeds
        R = numpy.empty((T, 3, n_tokens + 2), dtype=numpy.uint64)
        cdef uint64_t[:, :, ::1] Rv = R
        with nogil:
            for t in range(T):
                for r in range(3):
                    for i in range(n_tokens):
                        Rv[t, r, i] = offset_atoms_hash(seeds[t, r], atoms[t, r], attrs, 0, i, n_tokens, BOS, EOS)
                    Rv[t, r, n_tokens] = combine(seeds[t, r], FIRST_CHILD)
                    Rv[t, r, n_tokens + 1] = combine(seeds[t, r], STOP)
        return R


cdef class PartFeatures:
    """Sibling and grandparent templates -> hashed indices into a weight vector of 2**bits."""
    cdef readonly int bits
    cdef readonly _PartTemplates sibling, grandparent

    def __init__(self, sibling_templates=DEFAULT_SIBLING_TEMPLATES,
                 grandparent_templates=DEFAULT_GRANDPARENT_TEMPLATES, int bits=22):
        self.bits = bits
        self.sibling = _PartTemplates(sibling_templates, "sibling")
        self.grandparent = _PartTemplates(grandparent_templates, "grandparent")

    def score(self, sentence, const double[::1] w, parts, str kind):
        """w . phi(r) for each part r: rows (h, s, m) for kind "sibling" (m = n+1 or -1 for
        a stop part), (g, h, m) for "grandparent"."""
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        if w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{self.bits}")
        P = self._parts(sentence, parts, kind)
        out = numpy.zeros(P.shape[0])
        if P.shape[0]:
            self._sweep(sentence, P, kind, &w[0], None, out, 1.0)
        return out

    def add(self, sentence, parts, coef, Weights weights, double scale=1.0, str kind="sibling"):
        """weights += scale * sum_r coef[r] * phi(r), over parts with coef != 0."""
        if weights.bits != self.bits:
            raise ValueError(f"weights have 2**{weights.bits} entries, features expect 2**{self.bits}")
        P = self._parts(sentence, parts, kind)
        C = numpy.ascontiguousarray(coef, dtype=numpy.float64)
        if C.shape != (P.shape[0],):
            raise ValueError(f"{C.shape} coefficients for {P.shape[0]} parts")
        if P.shape[0]:
            self._sweep(sentence, P, kind, NULL, weights, C, scale)

    def _parts(self, sentence, parts, str kind):
        P = numpy.ascontiguousarray(parts, dtype=numpy.intc).reshape(-1, 3)
        if not P.size:
            return P
        words = P[:, :2] if kind == "sibling" else P
        if words.min() < 0 or words.max() > sentence.n:
            raise ValueError(f"part positions must be in 0..{sentence.n}")
        if kind == "sibling" and ((P[:, 2] < -1) | (P[:, 2] > sentence.n + 1)).any():
            raise ValueError(f"sibling modifiers must be in 0..{sentence.n}, or -1 / {sentence.n + 1} (stop)")
        return P

    cdef _sweep(self, sentence, const int[:, ::1] P, str kind, const double* w, Weights target,
                double[::1] values, double scale):
        cdef _PartTemplates templates
        if kind == "sibling":
            templates = self.sibling
        elif kind == "grandparent":
            templates = self.grandparent
        else:
            raise ValueError(f"kind must be 'sibling' or 'grandparent', got {kind!r}")
        R = templates.role_hashes(sentence.attrs)
        cdef const uint64_t[:, :, ::1] Rv = R
        cdef int T = len(templates.templates), n_parts = P.shape[0], n = sentence.n, k = 2 * T, p, nxt, i
        cdef bint sibling = kind == "sibling"
        cdef uint64_t mask = (<uint64_t>1 << self.bits) - 1
        cdef double total, value, change
        # Two parts' weight indices: while one part's weights are read or updated, the next
        # part's indices are hashed and its weights prefetched, so that its cache misses
        # (nearly every read of a 2**24 vector) overlap the work on this one.
        cdef uint64_t[::1] index_buffer = numpy.empty(4 * max(T, 1), dtype=numpy.uint64)
        cdef uint64_t* index = &index_buffer[0]
        cdef uint64_t* ahead = index + k
        cdef const int* parts = &P[0, 0]
        cdef double* coef = &values[0]
        cdef const double* weights = w if w != NULL else &target.w[0]
        cdef const uint64_t* roles = &Rv[0, 0, 0] if T else NULL
        cdef int columns = Rv.shape[2]
        if w == NULL:
            change = target.sq_norm_change
        with nogil:
            p = _next_part(coef, w == NULL, -1, n_parts)
            if p < n_parts:
                _part_indices(parts + 3 * p, sibling, n, roles, columns, T, mask, index, weights)
            while p < n_parts:
                nxt = _next_part(coef, w == NULL, p, n_parts)
                if nxt < n_parts:
                    _part_indices(parts + 3 * nxt, sibling, n, roles, columns, T, mask, ahead, weights)
                if w != NULL:
                    total = 0.0
                    for i in range(k):
                        total += w[index[i]]
                    coef[p] = total
                else:
                    value = scale * coef[p]
                    for i in range(k):
                        change = target.add_summing(index[i], value, change)
                index, ahead = ahead, index
                p = nxt
        if w == NULL:
            target.sq_norm_change = change

    def part_indices(self, sentence, part, str kind):
        """The feature indices of one part (for tests and inspection)."""
        cdef Weights probe = Weights(self.bits, False)
        self.add(sentence, numpy.asarray([part]), numpy.ones(1), probe, 1.0, kind)
        idx = numpy.flatnonzero(probe.array)
        return numpy.repeat(idx, probe.array[idx].astype(numpy.int64)).astype(numpy.uint64)


cdef inline int _next_part(const double* values, bint adding, int p, int n_parts) noexcept nogil:
    """The part after p to work on: every part when scoring, those with a coefficient when adding."""
    p += 1
    if adding:
        while p < n_parts and values[p] == 0.0:
            p += 1
    return p


cdef inline void _part_indices(const int* part, bint sibling, int n, const uint64_t* roles,
                               int columns, int T, uint64_t mask, uint64_t* index,
                               const double* weights) noexcept nogil:
    """A part's 2T weight indices into index, each prefetched (part: its row (a, b, c) of the
    parts). R[t, role, i] is roles[(3 t + role) columns + i]."""
    cdef int a = part[0], b = part[1], c = part[2], code, d, t, k = 0
    cdef int first = n + 1, stop = n + 2
    cdef uint64_t key, dirs, dd
    cdef const uint64_t* r
    if sibling:
        # (h, s, m): direction of h -> m; distance from the inner sibling
        # (from h for a first child, whose s role takes the first-child value);
        # a stop part's m role takes the stop value and its distance bin is -1
        code = c > a
        d = c - b if c > b else b - c
        if c < 0 or c >= first:
            c, d = stop, 0
        if b == a:
            b = first
    else:
        # (g, h, m): directions of g -> h and h -> m; distance of h -> m
        code = 2 + 2 * (b > a) + (c > b)
        d = c - b if c > b else b - c
    dirs = mix64(<uint64_t>(code + 1) * GOLDEN)
    dd = mix64(<uint64_t>(code * 16 + arc_distance_bin(d) + 100) * GOLDEN)
    for t in range(T):
        r = roles + 3 * t * columns
        key = mix64(mix64(r[a] ^ (r[columns + b] * GOLDEN)) ^ r[2 * columns + c])
        index[k] = (key ^ dirs) & mask
        index[k + 1] = mix64(key ^ dd) & mask
        prefetch(weights, index[k])
        prefetch(weights, index[k + 1])
        k += 2
