"""First-order projective dynamic programs (Eisner 1996).

One recursion, two semirings: `_fill` computes the chart in max-plus (recording
back-pointers, for argmax) or in log-sum-exp (for log Z); `_outside` is the
backward pass of the log-sum-exp chart, whose gradient with respect to the arc
scores is the arc marginals.

Positions are 0..n, 0 being the root. Charts, for s < t:
  Ir[s,t]: incomplete span, arc s -> t;   Il[s,t]: incomplete span, arc t -> s
  Cr[s,t]: complete span headed by s;     Cl[s,t]: complete span headed by t
  B[s,t]  = (+)_{r=s..t-1} Cr[s,r] (x) Cl[r+1,t]   (shared by Ir and Il)
With `single_root` the chart covers words 1..n only and the root takes exactly
one child m: Z = (+)_m S[0,m] (x) Cl[1,m] (x) Cr[m,n]. Without it, Z = Cr[0,n]
and arcs into the root are excluded.
Scores S[h, m] are read only for valid arcs (m >= 1, h != m); other entries are
ignored, and an entry of -inf forbids that arc.
"""
from libc.math cimport exp, log, INFINITY
import numpy

from ..semiring cimport reduce_terms

cdef enum:
    SPAN_CR = 0
    SPAN_CL = 1
    SPAN_IR = 2
    SPAN_IL = 3


cdef double _fill(const double[:, ::1] S, int n, bint single_root, bint use_max,
                  double[:, ::1] Ir, double[:, ::1] Il, double[:, ::1] Cr, double[:, ::1] Cl,
                  double[:, ::1] B, int[:, ::1] bp_b, int[:, ::1] bp_cr, int[:, ::1] bp_cl,
                  double* terms, int* root_arg) noexcept nogil:
    cdef int s, t, r, k, arg, lo = 1 if single_root else 0
    cdef double inner
    for s in range(n + 1):
        Cr[s, s] = 0.0
        Cl[s, s] = 0.0
    for k in range(1, n + 1):
        for s in range(lo, n + 1 - k):
            t = s + k
            for r in range(s, t):
                terms[r - s] = Cr[s, r] + Cl[r + 1, t]
            inner = reduce_terms(terms, k, use_max, &arg)
            B[s, t] = inner
            bp_b[s, t] = s + arg
            Ir[s, t] = S[s, t] + inner
            Il[s, t] = -INFINITY if s == 0 else S[t, s] + inner
            for r in range(s + 1, t + 1):
                terms[r - s - 1] = Ir[s, r] + Cr[r, t]
            Cr[s, t] = reduce_terms(terms, k, use_max, &arg)
            bp_cr[s, t] = s + 1 + arg
            for r in range(s, t):
                terms[r - s] = Cl[s, r] + Il[r, t]
            Cl[s, t] = reduce_terms(terms, k, use_max, &arg)
            bp_cl[s, t] = s + arg
    if not single_root:
        return Cr[0, n]
    for r in range(1, n + 1):
        terms[r - 1] = S[0, r] + Cl[1, r] + Cr[r, n]
    result = reduce_terms(terms, n, use_max, &arg)
    root_arg[0] = 1 + arg
    return result


cdef void _backtrack(int n, bint single_root, int root_child, int[:, ::1] bp_b, int[:, ::1] bp_cr,
                     int[:, ::1] bp_cl, int[::1] heads, int* stack) noexcept nogil:
    # Explicit stack of (kind, s, t) triples; every span pushes at most two.
    cdef int top = 0, kind, s, t, r
    if single_root:
        heads[root_child] = 0
        stack[0] = SPAN_CL; stack[1] = 1; stack[2] = root_child
        stack[3] = SPAN_CR; stack[4] = root_child; stack[5] = n
        top = 2
    else:
        stack[0] = SPAN_CR; stack[1] = 0; stack[2] = n
        top = 1
    while top > 0:
        top -= 1
        kind = stack[3 * top]; s = stack[3 * top + 1]; t = stack[3 * top + 2]
        if s >= t:
            continue
        if kind == SPAN_CR:
            r = bp_cr[s, t]
            stack[3 * top] = SPAN_IR; stack[3 * top + 1] = s; stack[3 * top + 2] = r
            stack[3 * top + 3] = SPAN_CR; stack[3 * top + 4] = r; stack[3 * top + 5] = t
            top += 2
        elif kind == SPAN_CL:
            r = bp_cl[s, t]
            stack[3 * top] = SPAN_CL; stack[3 * top + 1] = s; stack[3 * top + 2] = r
            stack[3 * top + 3] = SPAN_IL; stack[3 * top + 4] = r; stack[3 * top + 5] = t
            top += 2
        else:
            if kind == SPAN_IR:
                heads[t] = s
            else:
                heads[s] = t
            r = bp_b[s, t]
            stack[3 * top] = SPAN_CR; stack[3 * top + 1] = s; stack[3 * top + 2] = r
            stack[3 * top + 3] = SPAN_CL; stack[3 * top + 4] = r + 1; stack[3 * top + 5] = t
            top += 2


cdef inline void _spread(double g, double total, double a, double b, double* ga, double* gb) noexcept nogil:
    # d total / d a for total = logsumexp(..., a + b, ...), times the upstream gradient g.
    cdef double p
    if a == -INFINITY or b == -INFINITY:
        return
    p = g * exp(a + b - total)
    ga[0] += p
    gb[0] += p


cdef void _outside(const double[:, ::1] S, int n, bint single_root, double logz,
                   double[:, ::1] Ir, double[:, ::1] Il, double[:, ::1] Cr, double[:, ::1] Cl,
                   double[:, ::1] B, double[:, ::1] gIr, double[:, ::1] gIl, double[:, ::1] gCr,
                   double[:, ::1] gCl, double[:, ::1] mu) noexcept nogil:
    cdef int s, t, r, k, lo = 1 if single_root else 0
    cdef double g, p
    if single_root:
        for r in range(1, n + 1):
            p = S[0, r] + Cl[1, r] + Cr[r, n]
            if p == -INFINITY:
                continue
            p = exp(p - logz)
            mu[0, r] = p
            gCl[1, r] += p
            gCr[r, n] += p
    else:
        gCr[0, n] = 1.0
    for k in range(n, 0, -1):
        for s in range(lo, n + 1 - k):
            t = s + k
            g = gCl[s, t]
            if g != 0.0:
                for r in range(s, t):
                    _spread(g, Cl[s, t], Cl[s, r], Il[r, t], &gCl[s, r], &gIl[r, t])
            g = gCr[s, t]
            if g != 0.0:
                for r in range(s + 1, t + 1):
                    _spread(g, Cr[s, t], Ir[s, r], Cr[r, t], &gIr[s, r], &gCr[r, t])
            mu[s, t] = gIr[s, t]
            if s > 0:
                mu[t, s] = gIl[s, t]
            g = gIr[s, t] + gIl[s, t]
            if g != 0.0:
                for r in range(s, t):
                    _spread(g, B[s, t], Cr[s, r], Cl[r + 1, t], &gCr[s, r], &gCl[r + 1, t])


def _check_scores(scores):
    S = numpy.ascontiguousarray(scores, dtype=numpy.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 2:
        raise ValueError(f"arc scores must be (n+1, n+1) with n >= 1, got shape {S.shape}")
    return S


cdef class _Chart:
    """The four Eisner charts, the shared inner sums and the back-pointers for one sentence length."""
    cdef int n, root_child
    cdef double[:, ::1] Ir, Il, Cr, Cl, B
    cdef int[:, ::1] bp_b, bp_cr, bp_cl
    cdef double[::1] terms

    def __init__(self, int n):
        shape = (n + 1, n + 1)
        self.n = n
        self.Ir, self.Il = numpy.full(shape, -INFINITY), numpy.full(shape, -INFINITY)
        self.Cr, self.Cl = numpy.full(shape, -INFINITY), numpy.full(shape, -INFINITY)
        self.B = numpy.full(shape, -INFINITY)
        self.bp_b = numpy.zeros(shape, dtype=numpy.intc)
        self.bp_cr, self.bp_cl = numpy.zeros(shape, dtype=numpy.intc), numpy.zeros(shape, dtype=numpy.intc)
        self.terms = numpy.empty(n + 1)

    cdef double fill(self, const double[:, ::1] S, bint single_root, bint use_max) noexcept nogil:
        return _fill(S, self.n, single_root, use_max, self.Ir, self.Il, self.Cr, self.Cl, self.B,
                     self.bp_b, self.bp_cr, self.bp_cl, &self.terms[0], &self.root_child)


def eisner_argmax(scores, bint single_root=True):
    """Highest-scoring projective tree: heads (int32, n+1), heads[0] = -1; and its score."""
    cdef const double[:, ::1] S = _check_scores(scores)
    cdef int n = S.shape[0] - 1
    cdef _Chart chart = _Chart(n)
    cdef int[::1] stack = numpy.empty(3 * (4 * n + 8), dtype=numpy.intc)
    heads_arr = numpy.full(n + 1, -1, dtype=numpy.intc)
    cdef int[::1] heads = heads_arr
    cdef double best
    with nogil:
        best = chart.fill(S, single_root, True)
        if best > -INFINITY:
            _backtrack(n, single_root, chart.root_child, chart.bp_b, chart.bp_cr, chart.bp_cl, heads, &stack[0])
    if best == -INFINITY:
        raise ValueError("no projective tree has a finite score (all trees use a forbidden arc)")
    return heads_arr.astype(numpy.int32), best


def eisner_marginals(scores, bint single_root=True):
    """Arc marginals mu[h, m] = P(h -> m) over projective trees, and log Z."""
    cdef const double[:, ::1] S = _check_scores(scores)
    cdef int n = S.shape[0] - 1
    cdef _Chart chart = _Chart(n)
    shape = (n + 1, n + 1)
    cdef double[:, ::1] gIr = numpy.zeros(shape), gIl = numpy.zeros(shape)
    cdef double[:, ::1] gCr = numpy.zeros(shape), gCl = numpy.zeros(shape)
    mu_arr = numpy.zeros(shape)
    cdef double[:, ::1] mu = mu_arr
    cdef double logz
    with nogil:
        logz = chart.fill(S, single_root, False)
        if logz > -INFINITY:
            _outside(S, n, single_root, logz, chart.Ir, chart.Il, chart.Cr, chart.Cl, chart.B, gIr, gIl, gCr, gCl, mu)
    if logz == -INFINITY:
        raise ValueError("no projective tree has a finite score (all trees use a forbidden arc)")
    return mu_arr, logz
