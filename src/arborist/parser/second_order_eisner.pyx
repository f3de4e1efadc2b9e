"""Second-order projective dynamic programs over a pruned arc set: sibling parts
(h, s, m) as in McDonald and Pereira (2006), grandparent parts (g, h, m) as in
Koo and Collins (2010) and stop parts (h, s, STOP) as in TurboParser's standard
model, all at once ("model 1" of Koo and Collins without its optional
grand-sibling parts, plus stops) or any of them alone.

One recursion, two semirings, as in `eisner.pyx`: `fill` computes the chart in
max-plus (with back-pointers, for argmax) or in log-sum-exp (log Z), and `outside`
is its backward pass, whose gradient with respect to the part scores is the part
marginals.

Parts. A `SecondOrderLayout` numbers the parts of one sentence given the allowed
arcs (the pruner's output): arcs (h, m); sibling parts (h, s, m), s being the child
of h next to m on m's side and nearer to h, or s = h when m is h's first child on
that side (the "first-child" part); stop parts (h, s, STOP), s being h's outermost
child on a side, or s = h when h has no child on that side, one per arc and two per
word (the root has no left side; STOP is position n+1 on the right, -1 on the left);
grandparent parts (g, h, m) for h >= 1, g the head of h. A part exists when all its
arcs are allowed, so pruned arcs are excluded from every part type. The scores of
all parts are one flat array: arcs, then sibling parts, then stop parts, then
grandparent parts.

Chart (every span carries the slot `gs` of its head's parent g among the allowed
heads of h, which is how grandparent parts are scored; `hs` below is always the
slot of the enclosing head in the list of a child's allowed heads):
  CR[h, gs, e]  complete span h..e (e >= h), h's right dependents
  CL[h, gs, e]  complete span e..h (e <= h), h's left dependents
  I[a, gs]      incomplete span of arc a = (h, m): h's dependents between h and m and
                m's dependents on h's side
  S[a, j]       sibling span between m and its inner sibling r (the j-th allowed child
                of h between h and m, nearest h first): r's and m's facing halves
  I[a, gs] = arc(a) + grand(g, h, m) + ((+) of
                 CL[m, hs, h+1] + sib(h, h, m)                      (m is the first child)
                 I[(h, r), gs] + S[a, j] + sib(h, r, m)  for each j)  (right arcs; left mirrored)
  S[a, j]  = (+)_{r <= q < m} CR[r, hs, q] + CL[m, hs, q+1]
  CR[h, gs, e] = (+)_{h < m <= e} I[(h, m), gs] + CR[m, hs, e] + stop(h, m, STOP)
  CR[h, gs, h] = stop(h, h, STOP)                                     (no right child)
Every use of a complete span closes its head's side (the inner sibling's half in S,
the child's far half in I and in CR, the root's span), which is why the stop part can
be scored where the span is built. With `single_root`, log Z = (+)_m I[(0, m), 0] +
CR[m, hs, n] + stop(0, m, STOP) where the root's arc takes only its first-child term;
without it, log Z = CR[0, 0, n]. Widths grow by one:
the sibling spans and incomplete spans of arcs of width w, then the complete spans of
width w.
"""
from libc.math cimport exp, log, INFINITY
import numpy

from ..semiring cimport Acc, acc_init, acc_add, acc_value

cdef enum:
    ITEM_CR = 0
    ITEM_CL = 1
    ITEM_I = 2
    ITEM_S = 3


cdef class SecondOrderLayout:
    """The parts of one sentence under an allowed-arc mask, and the index tables the
    dynamic programs walk. `allowed[h, m]` (n+1, n+1) marks the arcs that may be used;
    every word needs at least one allowed head."""

    cdef readonly int n, n_arcs, n_sibling_slots, n_stop_slots, n_grand_slots, kmax
    cdef readonly bint sibling, grandparent, stop
    cdef readonly int sibling_offset, stop_offset, grand_offset, n_parts
    # arcs are numbered by modifier, then head: arc a = head_start[m] + slot of h
    cdef readonly object arc_h, arc_m, head_start, slot
    # per head, its allowed arcs ordered by modifier position; `split[h]` is the first
    # whose modifier is right of h, `rank[a]` the place of arc a in that list
    cdef readonly object child_start, child_arc, split, rank
    cdef readonly object sib_start, grand_start, arc_order, width_start
    cdef int[::1] v_arc_h, v_arc_m, v_head_start, v_child_start, v_child_arc, v_split, v_rank
    cdef int[::1] v_sib_start, v_grand_start, v_arc_order, v_width_start
    cdef int[:, ::1] v_slot

    def __init__(self, allowed, bint sibling=True, bint grandparent=True, bint stop=False):
        # Built by counting sorts in one pass over the mask (a sentence's layout is built for
        # every sentence a second-order parser sees; numpy calls per table cost more than this).
        mask_arr = numpy.ascontiguousarray(allowed, dtype=bool)
        if mask_arr.ndim != 2 or mask_arr.shape[0] != mask_arr.shape[1] or mask_arr.shape[0] < 2:
            raise ValueError(f"allowed arcs must be (n+1, n+1) with n >= 1, got shape {mask_arr.shape}")
        cdef const unsigned char[:, ::1] mask = mask_arr.view(numpy.uint8)
        cdef int n = mask.shape[0] - 1
        cdef int h, m, a, w, A = 0, kmax = 1, missing = 0
        self.n, self.sibling, self.grandparent, self.stop = n, sibling, grandparent, stop
        self.head_start = numpy.zeros(n + 2, dtype=numpy.intc)
        self.child_start = numpy.zeros(n + 2, dtype=numpy.intc)
        self.width_start = numpy.zeros(n + 2, dtype=numpy.intc)
        self.split = numpy.empty(n + 1, dtype=numpy.intc)
        self.slot = numpy.full((n + 1, n + 1), -1, dtype=numpy.intc)
        self.v_head_start, self.v_child_start = self.head_start, self.child_start
        self.v_width_start, self.v_split, self.v_slot = self.width_start, self.split, self.slot
        cdef int[::1] left = numpy.zeros(n + 1, dtype=numpy.intc)
        # arcs are numbered by modifier, then head (the root and the diagonal are never arcs)
        for m in range(1, n + 1):
            for h in range(n + 1):
                if mask[h, m] and h != m:
                    self.v_slot[h, m] = A - self.v_head_start[m]
                    A += 1
                    self.v_child_start[h + 1] += 1
                    self.v_width_start[(m - h if m > h else h - m) + 1] += 1
                    if m < h:
                        left[h] += 1
            self.v_head_start[m + 1] = A
            if A == self.v_head_start[m] and not missing:
                missing = m
            kmax = max(kmax, A - self.v_head_start[m])
        if missing:
            raise ValueError(f"word {missing} has no allowed head")
        self.n_arcs, self.kmax = A, kmax
        for h in range(n + 1):
            self.v_child_start[h + 1] += self.v_child_start[h]
            self.v_width_start[h + 1] += self.v_width_start[h]
            self.v_split[h] = self.v_child_start[h] + left[h]
        self.arc_h = numpy.empty(A, dtype=numpy.intc)
        self.arc_m = numpy.empty(A, dtype=numpy.intc)
        self.child_arc = numpy.empty(A, dtype=numpy.intc)
        self.rank = numpy.empty(A, dtype=numpy.intc)
        self.arc_order = numpy.empty(A, dtype=numpy.intc)
        self.sib_start = numpy.zeros(A + 1, dtype=numpy.intc)
        self.grand_start = numpy.zeros(A + 1, dtype=numpy.intc)
        self.v_arc_h, self.v_arc_m, self.v_child_arc, self.v_rank = self.arc_h, self.arc_m, self.child_arc, self.rank
        self.v_arc_order, self.v_sib_start, self.v_grand_start = self.arc_order, self.sib_start, self.grand_start
        # children by head, then modifier; arcs by width (stable): counting sorts over the
        # arcs in their own order, which is by modifier
        cdef int[::1] child_fill = numpy.zeros(n + 1, dtype=numpy.intc)
        cdef int[::1] width_fill = numpy.zeros(n + 1, dtype=numpy.intc)
        a = 0
        for m in range(1, n + 1):
            for h in range(n + 1):
                if mask[h, m] and h != m:
                    self.v_arc_h[a], self.v_arc_m[a] = h, m
                    self.v_rank[a] = self.v_child_start[h] + child_fill[h]
                    self.v_child_arc[self.v_rank[a]] = a
                    child_fill[h] += 1
                    w = m - h if m > h else h - m
                    self.v_arc_order[self.v_width_start[w] + width_fill[w]] = a
                    width_fill[w] += 1
                    a += 1
        for a in range(A):
            h, m = self.v_arc_h[a], self.v_arc_m[a]
            # 1 + the allowed children of h strictly between h and m (the inner siblings)
            self.v_sib_start[a + 1] = self.v_sib_start[a] + 1 + (
                self.v_rank[a] - self.v_split[h] if m > h else self.v_split[h] - 1 - self.v_rank[a])
            self.v_grand_start[a + 1] = self.v_grand_start[a] + (
                self.v_head_start[h + 1] - self.v_head_start[h] if h >= 1 else 0)
        self.n_sibling_slots = self.v_sib_start[A]
        self.n_grand_slots = self.v_grand_start[A]
        # one stop part per arc (its modifier is the outermost child), then the childless
        # sides: right for h = 0..n, left for h = 1..n
        self.n_stop_slots = A + 2 * n + 1
        self.sibling_offset = A
        self.stop_offset = A + (self.n_sibling_slots if sibling else 0)
        self.grand_offset = self.stop_offset + (self.n_stop_slots if stop else 0)
        self.n_parts = self.grand_offset + (self.n_grand_slots if grandparent else 0)

    cdef inline int candidate(self, int a, int j) noexcept nogil:
        """The arc (h, r) of the j-th allowed child r of h strictly between h and m
        (a = (h, m)), nearest to h first."""
        cdef int h = self.v_arc_h[a]
        if self.v_arc_m[a] > h:
            return self.v_child_arc[self.v_split[h] + j]
        return self.v_child_arc[self.v_split[h] - 1 - j]

    cdef inline int childless(self, int h, bint right) noexcept nogil:
        """The stop slot of h without children on one side."""
        return self.n_arcs + (h if right else self.n + h)

    cdef inline int n_heads(self, int h) noexcept nogil:
        """Grandparent slots of spans headed by h (the root has one, with no grandparent)."""
        if h == 0:
            return 1
        return self.v_head_start[h + 1] - self.v_head_start[h]

    def arc_index(self, int h, int m) -> int:
        if not (0 <= h <= self.n and 1 <= m <= self.n) or self.slot[h, m] < 0:
            return -1
        return int(self.head_start[m] + self.slot[h, m])

    @property
    def arcs(self):
        """(n_arcs, 2): (h, m) of each arc part."""
        return numpy.stack([self.arc_h, self.arc_m], axis=1)

    @property
    def allowed(self):
        """(n+1, n+1) bool: the allowed arcs."""
        return self.slot >= 0

    @property
    def siblings(self):
        """(n_sibling_slots, 3): (h, s, m) of each sibling part; s = h for a first child."""
        out = numpy.empty((self.n_sibling_slots, 3), dtype=numpy.intc)
        cdef int[:, ::1] o = out
        cdef int a, j, s0
        with nogil:
            for a in range(self.n_arcs):
                s0 = self.v_sib_start[a]
                for j in range(self.v_sib_start[a + 1] - s0):
                    o[s0 + j, 0] = self.v_arc_h[a]
                    o[s0 + j, 1] = self.v_arc_h[a] if j == 0 else self.v_arc_m[self.candidate(a, j - 1)]
                    o[s0 + j, 2] = self.v_arc_m[a]
        return out

    @property
    def stops(self):
        """(n_stop_slots, 3): (h, s, STOP) of each stop part, STOP = n+1 on the right and -1
        on the left; s = h when h has no child on that side."""
        out = numpy.empty((self.n_stop_slots, 3), dtype=numpy.intc)
        cdef int[:, ::1] o = out
        cdef int a, h, n = self.n, A = self.n_arcs
        with nogil:
            for a in range(A):
                o[a, 0], o[a, 1] = self.v_arc_h[a], self.v_arc_m[a]
                o[a, 2] = n + 1 if self.v_arc_m[a] > self.v_arc_h[a] else -1
            for h in range(n + 1):
                o[A + h, 0], o[A + h, 1], o[A + h, 2] = h, h, n + 1
            for h in range(1, n + 1):
                o[A + n + h, 0], o[A + n + h, 1], o[A + n + h, 2] = h, h, -1
        return out

    @property
    def grandparents(self):
        """(n_grand_slots, 3): (g, h, m) of each grandparent part."""
        out = numpy.empty((self.n_grand_slots, 3), dtype=numpy.intc)
        cdef int[:, ::1] o = out
        cdef int a, gs, g0, h
        with nogil:
            for a in range(self.n_arcs):
                h = self.v_arc_h[a]
                g0 = self.v_grand_start[a]
                for gs in range(self.v_grand_start[a + 1] - g0):
                    o[g0 + gs, 0] = self.v_arc_h[self.v_head_start[h] + gs]
                    o[g0 + gs, 1] = h
                    o[g0 + gs, 2] = self.v_arc_m[a]
        return out

    def indicator(self, heads):
        """1.0 for the parts of the head assignment `heads` (n+1, heads[0] = -1), else 0.
        Any assignment whose arcs are allowed has parts, tree or not (SWVP's mixes)."""
        y_arr = numpy.ascontiguousarray(heads, dtype=numpy.intc)
        if y_arr.shape != (self.n + 1,):
            raise ValueError(f"heads must have {self.n + 1} entries, got shape {y_arr.shape}")
        cdef const int[::1] y = y_arr
        cdef int m, n = self.n
        for m in range(1, n + 1):
            if not (0 <= y[m] <= n) or self.v_slot[y[m], m] < 0:
                raise ValueError(f"arc {y[m]} -> {m} is not among the allowed arcs")
        out_arr = numpy.zeros(self.n_parts)
        cdef double[::1] out = out_arr
        cdef int[::1] arc = numpy.empty(n + 1, dtype=numpy.intc), previous = numpy.empty(n + 1, dtype=numpy.intc)
        cdef int[::1] found = numpy.empty(_max_tree_parts(n), dtype=numpy.intc)
        cdef int k, count
        with nogil:
            count = _tree_parts(self, &y[0], &arc[0], &previous[0], &found[0])
            for k in range(count):
                out[found[k]] += 1.0  # counted, so that a part found twice would show
        return out_arr

    cdef inline int inner_index(self, int a, int b) noexcept nogil:
        """j such that candidate(a, j) == b."""
        cdef int h = self.v_arc_h[a]
        if self.v_arc_m[a] > h:
            return self.v_rank[b] - self.v_split[h]
        return self.v_split[h] - 1 - self.v_rank[b]


cdef class _Chart2:
    cdef SecondOrderLayout L
    cdef int n, K, root_arc
    cdef double[::1] CR, CL, I, II, S
    cdef int[::1] bpCR, bpCL, bpI, bpS
    cdef double[::1] gCR, gCL, gI, gS  # outside (adjoint) charts, for marginals

    def __init__(self, SecondOrderLayout layout):
        self.L = layout
        self.n, self.K = layout.n, layout.kmax
        size = (self.n + 1) * self.K * (self.n + 1)
        self.CR, self.CL = numpy.full(size, -INFINITY), numpy.full(size, -INFINITY)
        self.I = numpy.full(layout.n_arcs * self.K, -INFINITY)
        self.II = numpy.full(layout.n_arcs * self.K, -INFINITY)
        self.S = numpy.full(max(1, layout.n_sibling_slots), -INFINITY)
        self.bpCR, self.bpCL = numpy.zeros(size, dtype=numpy.intc), numpy.zeros(size, dtype=numpy.intc)
        self.bpI = numpy.zeros(layout.n_arcs * self.K, dtype=numpy.intc)
        self.bpS = numpy.zeros(max(1, layout.n_sibling_slots), dtype=numpy.intc)

    cdef inline int c(self, int h, int gs, int e) noexcept nogil:
        return (h * self.K + gs) * (self.n + 1) + e

    cdef inline double sib(self, const double* sc, int slot) noexcept nogil:
        return sc[self.L.sibling_offset + slot] if self.L.sibling else 0.0

    cdef inline double stop(self, const double* sc, int slot) noexcept nogil:
        return sc[self.L.stop_offset + slot] if self.L.stop else 0.0

    cdef inline double grand(self, const double* sc, int a, int gs) noexcept nogil:
        if not self.L.grandparent or self.L.v_arc_h[a] == 0:
            return 0.0
        return sc[self.L.grand_offset + self.L.v_grand_start[a] + gs]

    cdef inline double first_child(self, const double* sc, int a) noexcept nogil:
        """The complete half of m facing h when m is h's first child on its side, plus
        the first-child sibling part."""
        cdef int h = self.L.v_arc_h[a], m = self.L.v_arc_m[a], hs = a - self.L.v_head_start[m]
        cdef double half = self.CL[self.c(m, hs, h + 1)] if m > h else self.CR[self.c(m, hs, h - 1)]
        return half + self.sib(sc, self.L.v_sib_start[a])

    cdef inline void sibling_halves(self, int a, int j, int q, int* right_half, int* left_half) noexcept nogil:
        """The chart cells (in CR and CL) of the two halves of S[a, j] split at q: the
        inner one of r and m faces right, the outer one left."""
        cdef int m = self.L.v_arc_m[a], ar = self.L.candidate(a, j), r = self.L.v_arc_m[ar]
        cdef int hs_m = a - self.L.v_head_start[m], hs_r = ar - self.L.v_head_start[r]
        if m > r:
            right_half[0] = self.c(r, hs_r, q)
            left_half[0] = self.c(m, hs_m, q + 1)
        else:
            right_half[0] = self.c(m, hs_m, q)
            left_half[0] = self.c(r, hs_r, q + 1)

    cdef inline double sibling_term(self, int a, int j, int q) noexcept nogil:
        cdef int right_half, left_half
        self.sibling_halves(a, j, q, &right_half, &left_half)
        return self.CR[right_half] + self.CL[left_half]

    cdef inline void children_between(self, int h, int e, int* first, int* stop, int* step) noexcept nogil:
        """The run of h's child-list entries from h outwards towards e (right when e > h)."""
        if e > h:
            first[0] = self.L.v_split[h]
            stop[0] = self.L.v_child_start[h + 1]
            step[0] = 1
        else:
            first[0] = self.L.v_split[h] - 1
            stop[0] = self.L.v_child_start[h] - 1
            step[0] = -1

    cdef void fill_complete(self, const double* sc, int h, int e, bint use_max) noexcept nogil:
        """CR[h, gs, e] (e > h) or CL[h, gs, e] (e < h) for every gs: (+) over the children
        m of h up to e of I[(h, m), gs] + the same-facing complete span of m to e + the
        stop part of m as h's outermost child on that side."""
        cdef bint right = e > h
        cdef double* C = &self.CR[0] if right else &self.CL[0]
        cdef int* bp = &self.bpCR[0] if right else &self.bpCL[0]
        cdef int K = self.K, gs, ci, first, stop, step, a, m
        cdef Acc acc
        self.children_between(h, e, &first, &stop, &step)
        for gs in range(self.L.n_heads(h)):
            acc_init(&acc)
            ci = first
            while ci != stop:
                a = self.L.v_child_arc[ci]
                m = self.L.v_arc_m[a]
                if (m > e) if right else (m < e):
                    break
                acc_add(&acc, self.I[a * K + gs] + C[self.c(m, a - self.L.v_head_start[m], e)] + self.stop(sc, a),
                        a, use_max)
                ci += step
            C[self.c(h, gs, e)] = acc_value(&acc, use_max)
            bp[self.c(h, gs, e)] = acc.arg

    cdef void outside_complete(self, const double* sc, int h, int e, double* mu) noexcept nogil:
        """The outside pass of `fill_complete`: spreads the adjoint of each C[h, gs, e] over
        its terms (and their stop parts' marginals)."""
        cdef bint right = e > h
        cdef double* C = &self.CR[0] if right else &self.CL[0]
        cdef double* gC = &self.gCR[0] if right else &self.gCL[0]
        cdef int K = self.K, gs, ci, first, stop, step, a, m, cell
        cdef double g, V, t, p
        self.children_between(h, e, &first, &stop, &step)
        for gs in range(self.L.n_heads(h)):
            g = gC[self.c(h, gs, e)]
            if g == 0.0:
                continue
            V = C[self.c(h, gs, e)]
            ci = first
            while ci != stop:
                a = self.L.v_child_arc[ci]
                m = self.L.v_arc_m[a]
                if (m > e) if right else (m < e):
                    break
                cell = self.c(m, a - self.L.v_head_start[m], e)
                t = self.I[a * K + gs] + C[cell] + self.stop(sc, a)
                if t != -INFINITY:
                    p = g * exp(t - V)
                    self.gI[a * K + gs] += p
                    gC[cell] += p
                    if self.L.stop:
                        mu[self.L.stop_offset + a] += p
                ci += step

    cdef double fill(self, const double* sc, bint single_root, bint use_max) noexcept nogil:
        cdef int n = self.n, K = self.K, w, idx, a, h, m, r, ar, gs, j, q, cnt, s0, ci, lo, hi
        cdef double F
        cdef Acc acc
        for h in range(n + 1):
            for gs in range(self.L.n_heads(h)):
                # a side without children, closed by its stop part (the root has no left side)
                self.CR[self.c(h, gs, h)] = self.stop(sc, self.L.childless(h, True))
                self.CL[self.c(h, gs, h)] = self.stop(sc, self.L.childless(h, False)) if h >= 1 else 0.0
        for w in range(1, n + 1):
            for idx in range(self.L.v_width_start[w], self.L.v_width_start[w + 1]):
                a = self.L.v_arc_order[idx]
                h = self.L.v_arc_h[a]
                m = self.L.v_arc_m[a]
                s0 = self.L.v_sib_start[a]
                cnt = self.L.v_sib_start[a + 1] - s0 - 1
                for j in range(cnt):
                    r = self.L.v_arc_m[self.L.candidate(a, j)]
                    lo = r if m > r else m
                    hi = m if m > r else r
                    acc_init(&acc)
                    for q in range(lo, hi):
                        acc_add(&acc, self.sibling_term(a, j, q), q, use_max)
                    self.S[s0 + 1 + j] = acc_value(&acc, use_max)
                    self.bpS[s0 + 1 + j] = acc.arg
                F = self.first_child(sc, a)
                for gs in range(self.L.n_heads(h)):
                    acc_init(&acc)
                    acc_add(&acc, F, -1, use_max)
                    if not (single_root and h == 0):
                        for j in range(cnt):
                            ar = self.L.candidate(a, j)
                            acc_add(&acc, self.I[ar * K + gs] + self.S[s0 + 1 + j] + self.sib(sc, s0 + 1 + j),
                                    j, use_max)
                    self.II[a * K + gs] = acc_value(&acc, use_max)
                    self.I[a * K + gs] = sc[a] + self.grand(sc, a, gs) + self.II[a * K + gs]
                    self.bpI[a * K + gs] = acc.arg
            for h in range(n + 1):
                if h + w <= n and not (single_root and h == 0):
                    self.fill_complete(sc, h, h + w, use_max)
                if h >= 1 and h - w >= 1:
                    self.fill_complete(sc, h, h - w, use_max)
        if not single_root:
            return self.CR[self.c(0, 0, n)]
        acc_init(&acc)
        for ci in range(self.L.v_child_start[0], self.L.v_child_start[1]):
            a = self.L.v_child_arc[ci]
            m = self.L.v_arc_m[a]
            acc_add(&acc, self.I[a * K] + self.CR[self.c(m, a - self.L.v_head_start[m], n)] + self.stop(sc, a), a,
                    use_max)
        self.root_arc = acc.arg
        return acc_value(&acc, use_max)

    cdef void backtrack(self, bint single_root, int[::1] heads, int* stack) noexcept nogil:
        # Explicit stack of (kind, x, y, z); every item pushes at most two.
        cdef int top = 0, kind, x, y, z, a, h, m, r, ar, b, hs, hs_r, K = self.K, s0
        if single_root:
            a = self.root_arc
            m = self.L.v_arc_m[a]
            stack[0] = ITEM_I; stack[1] = a; stack[2] = 0; stack[3] = 0
            stack[4] = ITEM_CR; stack[5] = m; stack[6] = a - self.L.v_head_start[m]; stack[7] = self.n
            top = 2
        else:
            stack[0] = ITEM_CR; stack[1] = 0; stack[2] = 0; stack[3] = self.n
            top = 1
        while top > 0:
            top -= 1
            kind = stack[4 * top]; x = stack[4 * top + 1]; y = stack[4 * top + 2]; z = stack[4 * top + 3]
            if kind == ITEM_CR or kind == ITEM_CL:
                if x == z:
                    continue
                a = (self.bpCR if kind == ITEM_CR else self.bpCL)[self.c(x, y, z)]
                m = self.L.v_arc_m[a]
                _push(stack, &top, ITEM_I, a, y, 0)
                _push(stack, &top, kind, m, a - self.L.v_head_start[m], z)
            elif kind == ITEM_I:
                a = x
                h = self.L.v_arc_h[a]
                m = self.L.v_arc_m[a]
                heads[m] = h
                b = self.bpI[a * K + y]
                hs = a - self.L.v_head_start[m]
                if b == -1:
                    if m > h:
                        _push(stack, &top, ITEM_CL, m, hs, h + 1)
                    else:
                        _push(stack, &top, ITEM_CR, m, hs, h - 1)
                else:
                    _push(stack, &top, ITEM_I, self.L.candidate(a, b), y, 0)
                    _push(stack, &top, ITEM_S, a, b, 0)
            else:
                a = x
                m = self.L.v_arc_m[a]
                ar = self.L.candidate(a, y)
                r = self.L.v_arc_m[ar]
                hs = a - self.L.v_head_start[m]
                hs_r = ar - self.L.v_head_start[r]
                z = self.bpS[self.L.v_sib_start[a] + 1 + y]
                if m > r:
                    _push(stack, &top, ITEM_CR, r, hs_r, z)
                    _push(stack, &top, ITEM_CL, m, hs, z + 1)
                else:
                    _push(stack, &top, ITEM_CR, m, hs, z)
                    _push(stack, &top, ITEM_CL, r, hs_r, z + 1)

    cdef void outside(self, const double* sc, bint single_root, double logz, double[::1] mu) noexcept nogil:
        cdef int n = self.n, K = self.K, w, idx, a, h, m, ar, gs, j, q, cnt, s0, ci, hs, lo, hi, r
        cdef int right_half, left_half
        cdef double g, p, t, V
        cdef double[::1] gCR = self.gCR, gCL = self.gCL, gI = self.gI, gS = self.gS
        if single_root:
            for ci in range(self.L.v_child_start[0], self.L.v_child_start[1]):
                a = self.L.v_child_arc[ci]
                m = self.L.v_arc_m[a]
                hs = a - self.L.v_head_start[m]
                t = self.I[a * K] + self.CR[self.c(m, hs, n)] + self.stop(sc, a)
                if t != -INFINITY:
                    p = exp(t - logz)
                    gI[a * K] += p
                    gCR[self.c(m, hs, n)] += p
                    if self.L.stop:
                        mu[self.L.stop_offset + a] += p
        else:
            gCR[self.c(0, 0, n)] = 1.0
        for w in range(n, 0, -1):
            for h in range(n + 1):
                if h + w <= n and not (single_root and h == 0):
                    self.outside_complete(sc, h, h + w, &mu[0])
                if h >= 1 and h - w >= 1:
                    self.outside_complete(sc, h, h - w, &mu[0])
            for idx in range(self.L.v_width_start[w], self.L.v_width_start[w + 1]):
                a = self.L.v_arc_order[idx]
                h = self.L.v_arc_h[a]
                m = self.L.v_arc_m[a]
                hs = a - self.L.v_head_start[m]
                s0 = self.L.v_sib_start[a]
                cnt = self.L.v_sib_start[a + 1] - s0 - 1
                for gs in range(self.L.n_heads(h)):
                    g = gI[a * K + gs]
                    if g == 0.0:
                        continue
                    mu[a] += g
                    if self.L.grandparent and h >= 1:
                        mu[self.L.grand_offset + self.L.v_grand_start[a] + gs] += g
                    V = self.II[a * K + gs]
                    t = self.first_child(sc, a)
                    if t != -INFINITY:
                        p = g * exp(t - V)
                        if self.L.sibling:
                            mu[self.L.sibling_offset + s0] += p
                        if m > h:
                            gCL[self.c(m, hs, h + 1)] += p
                        else:
                            gCR[self.c(m, hs, h - 1)] += p
                    if single_root and h == 0:
                        continue
                    for j in range(cnt):
                        ar = self.L.candidate(a, j)
                        t = self.I[ar * K + gs] + self.S[s0 + 1 + j] + self.sib(sc, s0 + 1 + j)
                        if t != -INFINITY:
                            p = g * exp(t - V)
                            if self.L.sibling:
                                mu[self.L.sibling_offset + s0 + 1 + j] += p
                            gI[ar * K + gs] += p
                            gS[s0 + 1 + j] += p
                for j in range(cnt):
                    g = gS[s0 + 1 + j]
                    if g == 0.0:
                        continue
                    V = self.S[s0 + 1 + j]
                    r = self.L.v_arc_m[self.L.candidate(a, j)]
                    lo = r if m > r else m
                    hi = m if m > r else r
                    for q in range(lo, hi):
                        self.sibling_halves(a, j, q, &right_half, &left_half)
                        t = self.CR[right_half] + self.CL[left_half]
                        if t != -INFINITY:
                            p = g * exp(t - V)
                            gCR[right_half] += p
                            gCL[left_half] += p
        if self.L.stop:
            # the childless sides: every complete span of width 0 is its stop part
            for h in range(n + 1):
                for gs in range(self.L.n_heads(h)):
                    mu[self.L.stop_offset + self.L.childless(h, True)] += gCR[self.c(h, gs, h)]
                    if h >= 1:
                        mu[self.L.stop_offset + self.L.childless(h, False)] += gCL[self.c(h, gs, h)]

    def allocate_outside(self):
        self.gCR = numpy.zeros(self.CR.shape[0])
        self.gCL = numpy.zeros(self.CL.shape[0])
        self.gI = numpy.zeros(self.I.shape[0])
        self.gS = numpy.zeros(self.S.shape[0])


cdef inline void _push(int* stack, int* top, int kind, int x, int y, int z) noexcept nogil:
    cdef int t = top[0]
    stack[4 * t] = kind
    stack[4 * t + 1] = x
    stack[4 * t + 2] = y
    stack[4 * t + 3] = z
    top[0] = t + 1


def _check(SecondOrderLayout layout, scores):
    sc = numpy.ascontiguousarray(scores, dtype=numpy.float64).reshape(-1)
    if sc.shape[0] != layout.n_parts:
        raise ValueError(f"{sc.shape[0]} part scores for a layout of {layout.n_parts} parts")
    return sc


def second_order_argmax(SecondOrderLayout layout, scores, bint single_root=True):
    """(heads int32 (n+1), heads[0] = -1; the best score): the highest-scoring projective
    tree whose arcs are allowed."""
    sc_arr = _check(layout, scores)
    cdef const double[::1] sc = sc_arr
    cdef _Chart2 chart = _Chart2(layout)
    heads_arr = numpy.full(layout.n + 1, -1, dtype=numpy.intc)
    cdef int[::1] heads = heads_arr
    cdef int[::1] stack = numpy.empty(4 * (6 * layout.n + 8), dtype=numpy.intc)
    cdef double best
    with nogil:
        best = chart.fill(&sc[0], single_root, True)
    if best == -INFINITY:
        raise ValueError("no projective tree within the allowed arcs")
    with nogil:
        chart.backtrack(single_root, heads, &stack[0])
    return heads_arr, best


def second_order_marginals(SecondOrderLayout layout, scores, bint single_root=True):
    """(mu (n_parts,), log Z): the marginal probability of every part under
    p(y) ~ exp(sum of the scores of y's parts), over projective trees of allowed arcs."""
    sc_arr = _check(layout, scores)
    cdef const double[::1] sc = sc_arr
    cdef _Chart2 chart = _Chart2(layout)
    chart.allocate_outside()
    mu_arr = numpy.zeros(layout.n_parts)
    cdef double[::1] mu = mu_arr
    cdef double logz
    with nogil:
        logz = chart.fill(&sc[0], single_root, False)
    if logz == -INFINITY:
        raise ValueError("no projective tree within the allowed arcs")
    with nogil:
        chart.outside(&sc[0], single_root, logz, mu)
    return mu_arr, logz


# -- approximate non-projective decoding ------------------------------------------------

cdef inline int _max_tree_parts(int n) noexcept nogil:
    """At most n arcs, n sibling and n grandparent parts, and a stop part for each side
    of every word and the root's right side. Exact: a tree has at most n - 1 grandparent
    parts, but `indicator` also takes assignments with cycles, which can have n."""
    return 5 * n + 1


cdef int _tree_parts(SecondOrderLayout L, const int* y, int* arc, int* previous, int* out) noexcept nogil:
    """Writes the part indices of the head assignment y (every arc allowed) to `out` and
    returns their count. The sibling, stop and grandparent parts of any assignment, tree
    or not, are defined as for a projective tree (the nearest inner child on the same
    side; the outermost child; the head's head), so they are all in the layout whenever
    its arcs are."""
    cdef int n = L.n, m, h, a, b, k = 0
    for m in range(1, n + 1):
        arc[m] = L.v_head_start[m] + L.v_slot[y[m], m]
        out[k] = arc[m]
        k += 1
    if L.sibling or L.stop:
        # right dependents outwards (left to right), then left ones outwards (right to
        # left); previous[h] is h's last child seen on the side, its outermost at the end
        for h in range(n + 1):
            previous[h] = -1
        for m in range(1, n + 1):
            h = y[m]
            if m > h:
                a = arc[m]
                if L.sibling:
                    b = 0 if previous[h] < 0 else 1 + L.inner_index(a, previous[h])
                    out[k] = L.sibling_offset + L.v_sib_start[a] + b
                    k += 1
                previous[h] = a
        if L.stop:
            for h in range(n + 1):
                out[k] = L.stop_offset + (L.childless(h, True) if previous[h] < 0 else previous[h])
                k += 1
        for h in range(n + 1):
            previous[h] = -1
        for m in range(n, 0, -1):
            h = y[m]
            if m < h:
                a = arc[m]
                if L.sibling:
                    b = 0 if previous[h] < 0 else 1 + L.inner_index(a, previous[h])
                    out[k] = L.sibling_offset + L.v_sib_start[a] + b
                    k += 1
                previous[h] = a
        if L.stop:
            for h in range(1, n + 1):
                out[k] = L.stop_offset + (L.childless(h, False) if previous[h] < 0 else previous[h])
                k += 1
    if L.grandparent:
        for m in range(1, n + 1):
            h = y[m]
            if h >= 1:
                out[k] = L.grand_offset + L.v_grand_start[arc[m]] + arc[h] - L.v_head_start[h]
                k += 1
    return k


cdef double _tree_score(SecondOrderLayout L, const double* sc, const int* y, int* arc, int* previous,
                        int* found) noexcept nogil:
    """The score of the head assignment y: the sum of its parts' (`_tree_parts`)."""
    cdef int k, count = _tree_parts(L, y, arc, previous, found)
    cdef double total = 0.0
    for k in range(count):
        total += sc[found[k]]
    return total


cdef inline bint _descends(const int* y, int h, int m) noexcept nogil:
    """Whether h is m or below m in the tree y (so that m -> h would close a cycle)."""
    while h > 0 and h != m:
        h = y[h]
    return h == m


cdef double _hill_climb(SecondOrderLayout L, const double* sc, int* y, bint single_root, int* arc,
                        int* previous, int* found, int* moves) noexcept nogil:
    """Greedy ascent over single head changes (McDonald and Pereira 2006, §3.2): from
    the tree y, take the change of one word's head (to another allowed head, keeping a
    tree, and with `single_root` keeping the root's one child) that raises the score the
    most, until none does. Returns the final score; `moves` counts the changes taken."""
    cdef int n = L.n, m, a, h, h_old, best_m, best_h
    cdef double current = _tree_score(L, sc, y, arc, previous, found), best, s
    moves[0] = 0
    while True:
        best, best_m, best_h = current, -1, -1
        for m in range(1, n + 1):
            h_old = y[m]
            if single_root and h_old == 0:
                continue
            for a in range(L.v_head_start[m], L.v_head_start[m + 1]):
                h = L.v_arc_h[a]
                if h == h_old or (single_root and h == 0) or _descends(y, h, m):
                    continue
                y[m] = h
                s = _tree_score(L, sc, y, arc, previous, found)
                y[m] = h_old
                # a strict gain beyond rounding, so that equal-score trees cannot alternate
                if s > best + 1e-9 * (1.0 + (best if best > 0 else -best)):
                    best, best_m, best_h = s, m, h
        if best_m < 0:
            return current
        y[best_m] = best_h
        current = best
        moves[0] += 1


def second_order_hill_climb(SecondOrderLayout layout, scores, heads, bint single_root=True):
    """(heads int32 (n+1), score, moves): approximate non-projective second-order decoding
    from the tree `heads` (the projective argmax, usually): greedy single head changes
    while the score rises (`_hill_climb`). The result is a tree of allowed arcs, with one
    root child under `single_root` when `heads` has one, scoring at least as much as
    `heads`, and no single head change improves it."""
    sc_arr = _check(layout, scores)
    cdef const double[::1] sc = sc_arr
    y_arr = numpy.array(heads, dtype=numpy.intc, copy=True)
    if y_arr.shape != (layout.n + 1,):
        raise ValueError(f"heads must have {layout.n + 1} entries, got shape {y_arr.shape}")
    cdef int[::1] y = y_arr
    cdef int m, g, steps
    for m in range(1, layout.n + 1):
        if not (0 <= y[m] <= layout.n) or layout.v_slot[y[m], m] < 0:
            raise ValueError(f"arc {y[m]} -> {m} is not among the allowed arcs")
        g, steps = y[m], 0
        while g > 0 and steps <= layout.n:
            g, steps = y[g], steps + 1
        if g != 0:
            raise ValueError(f"heads is not a tree: word {m} is on a cycle")
    y[0] = -1
    cdef int[::1] arc = numpy.empty(layout.n + 1, dtype=numpy.intc)
    cdef int[::1] previous = numpy.empty(layout.n + 1, dtype=numpy.intc)
    cdef int[::1] found = numpy.empty(_max_tree_parts(layout.n), dtype=numpy.intc)
    cdef int moves = 0
    cdef double score
    with nogil:
        score = _hill_climb(layout, &sc[0], &y[0], single_root, &arc[0], &previous[0], &found[0], &moves)
    return y_arr, score, moves


# -- pruning ---------------------------------------------------------------------------

def prune(marginals, best_tree, double threshold, int max_heads):
    """(n+1, n+1) bool: per modifier m, the heads h with marginals[h, m] >= threshold *
    max_h' marginals[h', m], at most `max_heads` of them (the most probable; the lower h
    first among equals), and the arcs of `best_tree` (heads, n+1); never h = m."""
    mu_arr = numpy.ascontiguousarray(marginals, dtype=numpy.float64)
    tree_arr = numpy.ascontiguousarray(best_tree, dtype=numpy.intc)
    if mu_arr.ndim != 2 or mu_arr.shape[0] != mu_arr.shape[1] or tree_arr.shape != (mu_arr.shape[0],):
        raise ValueError(f"marginals must be (n+1, n+1) and the tree n+1 heads, got {mu_arr.shape} and "
                         f"{tree_arr.shape}")
    cdef const double[:, ::1] mu = mu_arr
    cdef const int[::1] tree = tree_arr
    cdef int n = mu.shape[0] - 1, h, m, j, kept, best_h
    out_arr = numpy.zeros((n + 1, n + 1), dtype=bool)
    cdef unsigned char[:, ::1] out = out_arr.view(numpy.uint8)
    for m in range(1, n + 1):
        if not 0 <= tree[m] <= n:
            raise ValueError(f"the best tree's head of word {m} is {tree[m]}, not a position 0..{n}")
    cdef double top, floor, best
    with nogil:
        for m in range(1, n + 1):
            # the column's max, NaN if any entry is NaN (as numpy's max): no head then passes
            # the threshold, and only the best tree's arc is kept
            top = mu[0, m]
            h = 1
            while h <= n and top == top:
                if mu[h, m] > top or mu[h, m] != mu[h, m]:
                    top = mu[h, m]
                h += 1
            floor = threshold * top
            kept = 0
            for h in range(n + 1):
                if mu[h, m] >= floor:
                    kept += 1
            if kept <= max_heads:
                for h in range(n + 1):
                    if mu[h, m] >= floor:
                        out[h, m] = 1
            else:
                # the max_heads most probable heads, which all pass the threshold
                for j in range(max_heads):
                    best_h = -1
                    for h in range(n + 1):
                        if not out[h, m] and (best_h < 0 or mu[h, m] > best):
                            best_h, best = h, mu[h, m]
                    out[best_h, m] = 1
            out[tree[m], m] = 1
            out[m, m] = 0
    return out_arr
