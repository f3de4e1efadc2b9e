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
cimport cython
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free
import numpy

from ..hashing cimport GOLDEN, combine, mix64
from ..helper cimport Helper
from ..weights cimport Weights, add_term, prefetch
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
        return PartSweeps(self, sentence, [(parts, kind)], w=w).run()[0]

    def add(self, sentence, parts, coef, Weights weights, double scale=1.0, str kind="sibling"):
        """weights += scale * sum_r coef[r] * phi(r), over parts with coef != 0."""
        PartSweeps(self, sentence, [(parts, kind)], coefficients=[coef], target=weights, scale=scale).run()

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

    def _templates(self, str kind):
        if kind == "sibling":
            return self.sibling
        if kind == "grandparent":
            return self.grandparent
        raise ValueError(f"kind must be 'sibling' or 'grandparent', got {kind!r}")

    def part_indices(self, sentence, part, str kind):
        """The feature indices of one part (for tests and inspection)."""
        cdef Weights probe = Weights(self.bits, False)
        self.add(sentence, numpy.asarray([part]), numpy.ones(1), probe, 1.0, kind)
        idx = numpy.flatnonzero(probe.array)
        return numpy.repeat(idx, probe.array[idx].astype(numpy.int64)).astype(numpy.uint64)


cdef struct Sweep:
    # One kernel pass over parts of one kind: scoring (read: the weights read; values: the
    # parts' scores, written) or adding (read NULL; values: the coefficients; w, u, s, step:
    # the target's arrays, as `add_term` takes them).
    const int* parts  # rows (a, b, c)
    int n_parts
    bint sibling
    int n
    const uint64_t* roles  # R[t, role, i] at roles[(3 t + role) columns + i]
    int columns
    int T
    uint64_t mask
    const double* read
    double* values
    double scale
    double* w
    double* u
    const double* s
    double step
    uint64_t* buffer  # 4T indices: this part's and the next one's
    double change  # adding: the running sum of the changes of ||w||^2


cdef struct SweepList:
    Sweep* sweeps
    int count


cdef void _run_sweeps(void* argument) noexcept nogil:
    cdef SweepList* tasks = <SweepList*>argument
    cdef int j
    for j in range(tasks.count):
        _run_sweep(&tasks.sweeps[j])


cdef void _run_sweep(Sweep* a) noexcept nogil:
    # While one part's weights are read or updated, the next part's indices are hashed and
    # their weights prefetched, so that its cache misses (nearly every read of a 2**24
    # vector) overlap the work on this one.
    cdef int k = 2 * a.T, p, nxt, i
    cdef bint adding = a.read == NULL
    cdef const double* weights = a.w if adding else a.read
    cdef uint64_t* index = a.buffer
    cdef uint64_t* ahead = a.buffer + k
    cdef uint64_t* swap
    cdef double total, value, change = a.change
    p = _next_part(a.values, adding, -1, a.n_parts)
    if p < a.n_parts:
        _part_indices(a, a.parts + 3 * p, index, weights)
    while p < a.n_parts:
        nxt = _next_part(a.values, adding, p, a.n_parts)
        if nxt < a.n_parts:
            _part_indices(a, a.parts + 3 * nxt, ahead, weights)
        if not adding:
            total = 0.0
            for i in range(k):
                total += weights[index[i]]
            a.values[p] = total
        else:
            value = a.scale * a.values[p]
            for i in range(k):
                change += add_term(a.w, a.u, a.s, a.step, index[i], value)
        swap = index
        index = ahead
        ahead = swap
        p = nxt
    a.change = change


cdef inline int _next_part(const double* values, bint adding, int p, int n_parts) noexcept nogil:
    """The part after p to work on: every part when scoring, those with a coefficient when adding."""
    p += 1
    if adding:
        while p < n_parts and values[p] == 0.0:
            p += 1
    return p


cdef inline void _part_indices(const Sweep* a, const int* part, uint64_t* index, const double* weights) noexcept nogil:
    """A part's 2T weight indices into index, each prefetched."""
    cdef int n = a.n, b = part[1], c = part[2], code, d, t, k = 0, columns = a.columns
    cdef int first = n + 1, stop = n + 2
    cdef uint64_t key, dirs, dd
    cdef const uint64_t* r
    if a.sibling:
        # (h, s, m): direction of h -> m; distance from the inner sibling
        # (from h for a first child, whose s role takes the first-child value);
        # a stop part's m role takes the stop value and its distance bin is -1
        code = c > part[0]
        d = c - b if c > b else b - c
        if c < 0 or c >= first:
            c, d = stop, 0
        if b == part[0]:
            b = first
    else:
        # (g, h, m): directions of g -> h and h -> m; distance of h -> m
        code = 2 + 2 * (b > part[0]) + (c > b)
        d = c - b if c > b else b - c
    dirs = mix64(<uint64_t>(code + 1) * GOLDEN)
    dd = mix64(<uint64_t>(code * 16 + arc_distance_bin(d) + 100) * GOLDEN)
    for t in range(a.T):
        r = a.roles + 3 * t * columns
        key = mix64(mix64(r[part[0]] ^ (r[columns + b] * GOLDEN)) ^ r[2 * columns + c])
        index[k] = (key ^ dirs) & a.mask
        index[k + 1] = mix64(key ^ dd) & a.mask
        prefetch(weights, index[k])
        prefetch(weights, index[k + 1])
        k += 2


@cython.no_gc_clear  # a started sweep's arrays must outlive the helper's task: __dealloc__ waits
cdef class PartSweeps:
    """The part-feature passes of one sentence over groups of parts [(parts, kind), ...]:
    scoring against `w`, or adding `scale * coefficients` to `target`. `run` makes them in
    this thread. With a `Helper`, `start` hands the helper its share and `finish` makes
    this thread's and waits (between the two, this thread may do other work, such as
    scoring the arcs). The helper scores the last (parts + lead) / 2 parts (`lead`: this
    thread's other work, counted in parts); each part is scored by one thread, so the
    scores are those of one thread. A PartSweeps runs once: `run`, or `start` then `finish`.

    Adds stay in one thread: split by the halves of the weights (so that no index is
    written by both threads), they took as long in two threads as in one (2**24 weights on
    this machine: the writes, not the hashing, bound them), where scoring, whose hashing
    is split too, takes 0.6 times as long."""
    cdef list keep  # the arrays the sweeps point into
    cdef public list outputs
    cdef Sweep* sweeps
    cdef int count, helper_first
    cdef SweepList mine, helpers
    cdef Weights target
    cdef Helper helper
    cdef bint started
    cdef readonly tuple split  # after start: (this thread's parts, the helper's)

    def __cinit__(self):
        self.sweeps = NULL

    def __dealloc__(self):
        if self.helper is not None:  # started and not finished: the helper may still read the sweeps
            with nogil:
                self.helper.wait()
        free(self.sweeps)

    def __init__(self, PartFeatures features, sentence, groups, const double[::1] w=None, coefficients=None,
                 Weights target=None, double scale=1.0):
        cdef uint64_t mask = (<uint64_t>1 << features.bits) - 1
        if (w is None) == (target is None):
            raise ValueError("part sweeps score against w or add to a target, one of the two")
        if w is not None and w.shape[0] != <Py_ssize_t>(mask + 1):
            raise ValueError(f"weight vector has {w.shape[0]} entries, features expect 2**{features.bits}")
        if target is not None and target.bits != features.bits:
            raise ValueError(f"weights have 2**{target.bits} entries, features expect 2**{features.bits}")
        self.keep, self.outputs, self.target = [w], [], target
        prepared, roles_of = [], {}  # the role hashes of a kind, once (sibling and stop parts share them)
        for g, (parts, kind) in enumerate(groups):
            templates = features._templates(kind)
            P = features._parts(sentence, parts, kind)
            if w is not None:
                values = numpy.zeros(P.shape[0])
                self.outputs.append(values)
            else:
                values = numpy.ascontiguousarray(coefficients[g], dtype=numpy.float64)
                if values.shape != (P.shape[0],):
                    raise ValueError(f"{values.shape} coefficients for {P.shape[0]} parts")
            if P.shape[0] and len(templates.templates):
                if kind not in roles_of:
                    roles_of[kind] = templates.role_hashes(sentence.attrs)
                prepared.append((P, kind == "sibling", roles_of[kind], len(templates.templates), values))
        self.keep.extend(prepared)
        # up to two sweeps a group (this thread's and the helper's)
        self.sweeps = <Sweep*>calloc(2 * len(prepared) + 1, sizeof(Sweep))
        if self.sweeps == NULL:
            raise MemoryError()
        cdef const uint64_t[:, :, ::1] R
        cdef const int[:, ::1] Pv
        cdef double[::1] V
        cdef uint64_t[::1] buffer
        cdef Sweep* a
        self.count = 0
        for P, sibling, roles, T, values in prepared:
            R, Pv, V = roles, P, values
            buffer = numpy.empty(4 * T, dtype=numpy.uint64)
            self.keep.append(buffer)
            a = &self.sweeps[self.count]
            a.parts, a.n_parts, a.sibling, a.n = &Pv[0, 0], Pv.shape[0], sibling, sentence.n
            a.roles, a.columns, a.T, a.mask = &R[0, 0, 0], R.shape[2], T, mask
            a.values, a.scale, a.buffer = &V[0], scale, &buffer[0]
            if w is not None:
                a.read = &w[0]
            else:
                a.read = NULL
                a.w = &target.w[0]
                a.u = &target.u[0] if target.averaged else NULL
                a.s = &target.s[0] if target.scaled else NULL
                a.step = target.step
            self.count += 1

    def run(self):
        """Every sweep in this thread; the scores (scoring)."""
        cdef int j
        cdef double change = 0.0 if self.target is None else self.target.sq_norm_change
        if self.started:
            raise RuntimeError("these sweeps ran already")
        self.started = True
        with nogil:
            for j in range(self.count):
                self.sweeps[j].change = change
                _run_sweep(&self.sweeps[j])
                change = self.sweeps[j].change
        if self.target is not None:
            self.target.sq_norm_change = change
        return self.outputs

    def start(self, Helper helper not None, Py_ssize_t lead=0):
        """Hand `helper` its share (see the class); `finish` must follow."""
        cdef int j, groups = self.count, cut
        cdef Py_ssize_t total = 0, share, left
        cdef Sweep* a
        cdef Sweep* b
        cdef uint64_t[::1] buffer
        if self.target is not None:
            raise ValueError("start() scores in two threads; adds are made in one (run())")
        if self.started:
            raise RuntimeError("these sweeps ran already")
        self.started = True
        self.helper = helper
        self.helper_first = self.count
        for j in range(groups):
            total += self.sweeps[j].n_parts
        share = min(total, max(0, (total + lead) // 2))
        left = share
        # the helper's parts are the last `share` ones: split the group where they begin
        for j in range(groups - 1, -1, -1):
            if left <= 0:
                break
            a = &self.sweeps[j]
            cut = a.n_parts - <int>min(left, a.n_parts)
            left -= a.n_parts - cut
            b = &self.sweeps[self.count]
            b[0] = a[0]
            b.parts = a.parts + 3 * cut
            b.values = a.values + cut
            b.n_parts = a.n_parts - cut
            buffer = numpy.empty(4 * a.T, dtype=numpy.uint64)  # the helper's own cache lines
            self.keep.append(buffer)
            b.buffer = &buffer[0]
            a.n_parts = cut
            self.count += 1
        mine = theirs = 0
        for j in range(self.count):
            if j < self.helper_first:
                mine += self.sweeps[j].n_parts
            else:
                theirs += self.sweeps[j].n_parts
        self.split = (mine, theirs)
        self.mine.sweeps, self.mine.count = self.sweeps, self.helper_first
        self.helpers.sweeps, self.helpers.count = self.sweeps + self.helper_first, self.count - self.helper_first
        with nogil:
            helper.post(_run_sweeps, &self.helpers)

    def finish(self):
        """This thread's share, then the helper's wait; the scores."""
        if self.helper is None:
            raise RuntimeError("finish() follows start()")
        with nogil:
            _run_sweeps(&self.mine)
            self.helper.wait()
        self.helper = None
        return self.outputs
