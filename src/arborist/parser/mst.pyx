# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Non-projective first-order trees: maximum spanning arborescence and matrix-tree marginals.

Arc scores are an (n+1, n+1) array S[h, m] (node 0 is the root; column 0 and the
diagonal are not arcs), as for `eisner`.

`mst_argmax`: Chu-Liu-Edmonds in the dense O(n^2) form (Tarjan 1977): every node
keeps its best incoming arc; a cycle of best arcs is contracted into one node whose
incoming scores are max over members v of S[u, v] - S[best_in(v), v] and outgoing
scores max over members of S[v, w]. A contraction of a k-cycle costs O(n k) and
there are at most n contractions of total size O(n), so decoding is O(n^2). The
original arc behind every contracted entry is kept, and the contractions are
undone in reverse order. The UD single-root rule (exactly one word attached to the
root) is imposed as Gabow and Tarjan (1984) suggest: every root arc is penalized
by a constant larger than the score difference of any two trees, so the best tree
has the fewest root arcs (one) and, among those, the highest score. (The penalty
adds to the root arcs' magnitude: scores near 1e15 lose the precision to rank them.)

`mst_marginals`: log Z and arc marginals by the matrix-tree theorem (Koo, Globerson,
Carreras and Collins 2007; single-root variant included), computed by a Gaussian
elimination that never subtracts (below), and its reverse pass for the gradient.
"""
import numpy

from ..semiring cimport logaddexp
from libc.math cimport INFINITY, isfinite, exp, fabs, log, log1p

cdef extern from *:
    """
    #define ARB_NEG_INF (-HUGE_VAL)
    """
    double ARB_NEG_INF


def _check_scores(scores):
    S = numpy.ascontiguousarray(scores, dtype=numpy.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 2:
        raise ValueError(f"arc scores must be (n+1, n+1) with n >= 1, got shape {S.shape}")
    return S


cdef int _find_cycle(int N, const int* alive, const int* best_in, int* mark, int* cycle) noexcept nogil:
    """A cycle of best incoming arcs among the live nodes (written to `cycle`), its length, or 0."""
    cdef int v, u, start, k, length
    for v in range(N):
        mark[v] = -1
    for start in range(1, N):
        if not alive[start] or mark[start] != -1:
            continue
        v = start
        while v != 0 and mark[v] == -1:
            mark[v] = start
            v = best_in[v]
        if v != 0 and mark[v] == start:  # came back to a node of this walk: a cycle through v
            length = 0
            u = v
            while True:
                cycle[length] = u
                length += 1
                u = best_in[u]
                if u == v:
                    break
            return length
    return 0


cdef int _cle(int N, double[:, ::1] W, int[:, ::1] src, int[:, ::1] dst, int* heads,
              int* alive, int* best_in, int* mark, int* cycle, int* members, int* member_start,
              int* reps, int* in_src, int* in_dst, int* saved_src, int* saved_dst, int* group,
              int* saved_group) noexcept nogil:
    """Maximum spanning arborescence rooted at 0 of the score matrix W (modified); heads of
    original nodes in `heads`. Returns 0, or -1 if some node has no finite incoming arc."""
    cdef int v, u, w, k, i, length, rep, n_contractions = 0, n_members = 0, best_u, d, member
    cdef double best, value, cycle_in
    for v in range(N):
        alive[v] = 1
        group[v] = v
    for v in range(1, N):
        best, best_u = ARB_NEG_INF, -1
        for u in range(N):
            if u != v and W[u, v] > best:
                best, best_u = W[u, v], u
        if best_u < 0:
            return -1
        best_in[v] = best_u
    while True:
        length = _find_cycle(N, alive, best_in, mark, cycle)
        if length == 0:
            break
        rep = cycle[0]
        member_start[n_contractions] = n_members
        for i in range(length):
            v = cycle[i]
            members[n_members] = v
            saved_src[n_members] = src[best_in[v], v]
            saved_dst[n_members] = dst[best_in[v], v]
            n_members += 1
            mark[v] = -2  # in the cycle
        reps[n_contractions] = rep
        for d in range(N):
            saved_group[n_contractions * N + d] = group[d]
        # Incoming arcs of the new node: enter member v from u, breaking v's cycle arc.
        for u in range(N):
            if not alive[u] or mark[u] == -2:
                continue
            best, best_u = ARB_NEG_INF, -1
            for i in range(length):
                v = cycle[i]
                value = W[u, v] - W[best_in[v], v]
                if value > best:
                    best, best_u = value, v
            W[u, rep] = best
            if best_u >= 0:
                src[u, rep], dst[u, rep] = src[u, best_u], dst[u, best_u]
        # Outgoing arcs: leave from the best member.
        for w in range(N):
            if not alive[w] or mark[w] == -2:
                continue
            best, best_u = ARB_NEG_INF, -1
            for i in range(length):
                v = cycle[i]
                if W[v, w] > best:
                    best, best_u = W[v, w], v
            W[rep, w] = best
            if best_u >= 0:
                src[rep, w], dst[rep, w] = src[best_u, w], dst[best_u, w]
        for i in range(1, length):
            alive[cycle[i]] = 0
        W[rep, rep] = ARB_NEG_INF
        for d in range(N):
            if mark[group[d]] == -2:
                group[d] = rep
        for w in range(1, N):  # arcs that came from a member now come from the new node
            if alive[w] and w != rep and mark[best_in[w]] == -2:
                best_in[w] = rep
        best, best_u = ARB_NEG_INF, -1
        for u in range(N):
            if alive[u] and u != rep and W[u, rep] > best:
                best, best_u = W[u, rep], u
        if best_u < 0:
            return -1
        best_in[rep] = best_u
        for i in range(length):
            mark[cycle[i]] = -1
        n_contractions += 1
    # The original arc entering every live node; then undo the contractions, last first.
    for v in range(1, N):
        if alive[v]:
            in_src[v], in_dst[v] = src[best_in[v], v], dst[best_in[v], v]
    for k in range(n_contractions - 1, -1, -1):
        rep = reps[k]
        i = member_start[k]
        length = (member_start[k + 1] if k + 1 < n_contractions else n_members) - i
        d = in_dst[rep]
        member = saved_group[k * N + d]  # the member the entering arc goes into
        u, v = in_src[rep], in_dst[rep]
        for w in range(length):
            in_src[members[i + w]], in_dst[members[i + w]] = saved_src[i + w], saved_dst[i + w]
        in_src[member], in_dst[member] = u, v
    for v in range(1, N):
        heads[in_dst[v]] = in_src[v]
    return 0


cdef double _prepare(int N, const double[:, ::1] S, double[:, ::1] W, int[:, ::1] src, int[:, ::1] dst,
                     bint single_root) noexcept nogil:
    """W = S without self-loops and arcs into the root, root arcs penalized for the single-root
    rule; src/dst name the original arc behind every entry. Returns the penalty."""
    cdef int h, m
    cdef double lo, hi, v, penalty = 1.0
    for m in range(N):
        lo, hi = INFINITY, -INFINITY
        for h in range(N):
            src[h, m] = h
            dst[h, m] = m
            if m == 0 or h == m:
                W[h, m] = ARB_NEG_INF
            else:
                v = S[h, m]
                W[h, m] = v
                if isfinite(v):
                    if v < lo:
                        lo = v
                    if v > hi:
                        hi = v
        if hi >= lo:
            penalty += hi - lo
    if single_root:
        # Two trees differ by at most the sum over words of the spread of their head scores,
        # so with this penalty on every root arc the best tree has the fewest root arcs (one)
        # and, among those, the highest score.
        for m in range(1, N):
            W[0, m] -= penalty
    return penalty


def mst_argmax(scores, bint single_root=True):
    """Highest-scoring spanning tree (non-projective): heads (int32, n+1), heads[0] = -1; its score."""
    cdef const double[:, ::1] S = _check_scores(scores)
    cdef int N = S.shape[0], m, status
    cdef double[:, ::1] W = numpy.empty((N, N))
    cdef int[:, ::1] src = numpy.empty((N, N), dtype=numpy.intc)
    cdef int[:, ::1] dst = numpy.empty((N, N), dtype=numpy.intc)
    heads_arr = numpy.empty(N, dtype=numpy.intc)
    cdef int[::1] hv = heads_arr
    # Work arrays: alive, best_in, mark, cycle (N each), cycle members (2N: the contracted
    # cycles hold at most 2N nodes in all), member_start, reps, in_src, in_dst (N each), the
    # members' saved cycle arcs (2N each), group (N), group before each contraction (N*N).
    cdef int[::1] ws = numpy.empty(16 * N + N * N + 4, dtype=numpy.intc)
    cdef int* base = &ws[0]
    cdef double score = 0.0, penalty
    cdef int root_children = 0
    with nogil:
        penalty = _prepare(N, S, W, src, dst, single_root)
        status = _cle(N, W, src, dst, &hv[0], base, base + N, base + 2 * N, base + 3 * N, base + 4 * N,
                      base + 6 * N, base + 7 * N, base + 8 * N, base + 9 * N, base + 10 * N, base + 12 * N,
                      base + 14 * N, base + 16 * N)
        if status == 0:
            hv[0] = -1
            for m in range(1, N):
                score += S[hv[m], m]
                root_children += hv[m] == 0
    if single_root and not isfinite(penalty):
        raise ValueError("arc scores too large for the single-root rule (their spread overflows)")
    if status != 0 or not isfinite(score):
        raise ValueError("no spanning tree has a finite score (some word has no allowed head)")
    if single_root and root_children != 1:
        raise ValueError("no single-root spanning tree has a finite score")
    return heads_arr.astype(numpy.int32, copy=False), score


# -- matrix-tree marginals by elimination ------------------------------------------------
#
# Z is the determinant of the (in-degree) Laplacian of the words, and Gaussian
# elimination of a Laplacian needs no subtraction (Grassmann, Taksar and Heyman 1985):
# eliminating word k leaves the Laplacian of the graph on the other nodes whose arcs are
#     B'[i, j] = B[i, j] + B[i, k] B[k, j] / d_k,     rho'[j] = rho[j] + rho[k] B[k, j] / d_k,
# where d_k, the pivot, is the total weight of the arcs into k (a sum of positive terms),
# and Z is the product of the pivots. With any number of root attachments the pivot
# includes the root arc rho[k] and all n words are eliminated. With the single-root rule
# Z is the coefficient of t in Z(t rho) (Koo et al. 2007 take the same limit with a
# rank-one update): pivots leave rho out, words 1..n-1 are eliminated, and the last
# word's root weight rho[n] is the last factor. log Z's gradient (the marginals) is the
# reverse pass over the same steps; it reads each step's pivot column and row, which
# no later step changes, so it runs on the eliminated matrix in place.
#
# Every quantity of the forward pass is a sum of products of positive numbers, so the
# relative error stays at rounding level. Each column is scaled by its largest weight,
# and the linear domain is used only when no arc is more than LINEAR_RANGE below the
# best arc into its word: then no weight underflows, and every entry and pivot is at
# least an original weight of its column (the updates only add), so the products that
# do underflow are negligible beside them. Entries of B stay below the column sums; the
# single-root rho, whose pivot leaves it out, can grow by e^LINEAR_RANGE a step, so it is
# rescaled (Z is linear in it) and its log scale kept. The result is checked (finite, the
# marginals of every word sum to one); otherwise, and whenever a column's range is
# wider, the same elimination runs on log weights, which needs the values before each
# step for its reverse pass: O(n^3) memory, so it is the fallback, not the rule.

LINEAR_RANGE = 500.0
cdef double _SAFE_PIVOT = 1e-280
cdef double _RHO_CEILING = 1e150


cdef int _eliminate_linear(int n, bint single_root, double[:, ::1] B, double[::1] rho, double[::1] piv,
                           double[::1] rho_scale) noexcept nogil:
    """Forward pass in place: pivots in piv, row k of B becomes B[k, j] / d_k; rho_scale[k] is
    the factor the live rho were multiplied by after step k. 0, or -1 on a pivot too small to
    trust."""
    cdef int k, i, j, K = n - 1 if single_root else n
    cdef double d, a, top
    for k in range(K):
        d = 0.0
        for i in range(k + 1, n):
            d += B[i, k]
        if not single_root:
            d += rho[k]
        if not (d > _SAFE_PIVOT) or d == INFINITY:
            return -1
        piv[k] = d
        for j in range(k + 1, n):
            B[k, j] /= d
        a = rho[k]
        top = 0.0
        if a != 0.0:
            for j in range(k + 1, n):
                rho[j] += a * B[k, j]
                if rho[j] > top:
                    top = rho[j]
        rho_scale[k] = 1.0
        if single_root and top > _RHO_CEILING:  # with any number of root arcs, rho[k] <= d_k
            rho_scale[k] = 1.0 / top
            for j in range(k + 1, n):
                rho[j] *= rho_scale[k]
        for i in range(k + 1, n):
            a = B[i, k]
            if a != 0.0:
                for j in range(k + 1, n):
                    B[i, j] += a * B[k, j]  # j == i writes a self-loop that nothing reads
    if single_root:
        if not (rho[n - 1] > _SAFE_PIVOT) or rho[n - 1] == INFINITY:
            return -1
        piv[n - 1] = rho[n - 1]
    return 0


cdef void _reverse_linear(int n, bint single_root, double[:, ::1] B, double[::1] rho, double[::1] piv,
                          double[::1] rho_scale, double[:, ::1] gB, double[::1] grho,
                          double[::1] row_adj) noexcept nogil:
    """d log Z / d (original B, rho) from the eliminated B, rho and pivots (gB, grho zeroed)."""
    cdef int k, i, j, K = n - 1 if single_root else n
    cdef double d, a, g, acc, gd, rk
    if single_root:
        grho[n - 1] = 1.0 / piv[n - 1]
    for k in range(K - 1, -1, -1):
        d = piv[k]
        gd = 1.0 / d
        for j in range(k + 1, n):
            row_adj[j] = 0.0
            grho[j] *= rho_scale[k]  # the rescaling after step k, undone first
        # rho[j] += rho[k] * f_j with f_j = B[k, j] / d stored in row k
        rk = rho[k]
        acc = 0.0
        for j in range(k + 1, n):
            g = grho[j]
            acc += g * B[k, j]
            row_adj[j] += g * rk
        grho[k] += acc
        gd -= rk * acc / d
        # B[i, j] += B[i, k] * f_j
        for i in range(k + 1, n):
            a = B[i, k]
            acc = 0.0
            for j in range(k + 1, n):
                if j != i:
                    g = gB[i, j]
                    acc += g * B[k, j]
                    row_adj[j] += g * a
            gB[i, k] += acc
            gd -= a * acc / d
        for j in range(k + 1, n):
            gB[k, j] += row_adj[j] / d
        # d = sum_i B[i, k] (+ rho[k])
        for i in range(k + 1, n):
            gB[i, k] += gd
        if not single_root:
            grho[k] += gd


cdef int _eliminate_log(int n, bint single_root, double[:, ::1] L, double[::1] lrho, double[::1] lpiv,
                        double[::1] saved) noexcept nogil:
    """The forward pass on log weights; `saved` receives every overwritten value (the
    word-word block then the root row, per step). 0, or -1 on a pivot of -inf."""
    cdef int k, i, j, K = n - 1 if single_root else n
    cdef Py_ssize_t p = 0
    cdef double d, m, s, a
    for k in range(K):
        m = ARB_NEG_INF
        for i in range(k + 1, n):
            if L[i, k] > m:
                m = L[i, k]
        if not single_root and lrho[k] > m:
            m = lrho[k]
        if m == ARB_NEG_INF:
            return -1
        s = 0.0
        for i in range(k + 1, n):
            s += exp(L[i, k] - m)
        if not single_root:
            s += exp(lrho[k] - m)
        d = m + log(s)
        lpiv[k] = d
        for j in range(k + 1, n):
            L[k, j] -= d
        a = lrho[k]
        for j in range(k + 1, n):
            saved[p] = lrho[j]
            p += 1
            lrho[j] = logaddexp(lrho[j], a + L[k, j])
        for i in range(k + 1, n):
            a = L[i, k]
            for j in range(k + 1, n):
                if j != i:
                    saved[p] = L[i, j]
                    p += 1
                    L[i, j] = logaddexp(L[i, j], a + L[k, j])
    if single_root:
        if lrho[n - 1] == ARB_NEG_INF:
            return -1
        lpiv[n - 1] = lrho[n - 1]
    return 0


cdef void _reverse_log(int n, bint single_root, double[:, ::1] L, double[::1] lrho, double[::1] lpiv,
                       double[::1] saved, double[:, ::1] G, double[::1] grho, double[::1] row_adj) noexcept nogil:
    """d log Z / d (log weights), read off the saved values in reverse order."""
    cdef int k, i, j, K = n - 1 if single_root else n
    cdef Py_ssize_t p
    cdef double d, a, g, t, new, u, gd, rk
    # Position in `saved` just past step k's values: the steps wrote (n-k-1) + (n-k-1)(n-k-2) each.
    p = 0
    for k in range(K):
        p += <Py_ssize_t>(n - k - 1) * (n - k - 1)
    if single_root:
        grho[n - 1] = 1.0
    for k in range(K - 1, -1, -1):
        d = lpiv[k]
        gd = 1.0
        for j in range(k + 1, n):
            row_adj[j] = 0.0
        # Undo the word-word updates (saved after the root row), last first.
        for i in range(n - 1, k, -1):
            a = L[i, k]
            for j in range(n - 1, k, -1):
                if j != i:
                    p -= 1
                    t = a + L[k, j]
                    new = L[i, j]
                    L[i, j] = saved[p]
                    g = G[i, j]
                    if g != 0.0 and t != ARB_NEG_INF:
                        u = exp(t - new)  # the share of the new weight that came through k
                        G[i, j] = g * exp(L[i, j] - new)
                        G[i, k] += g * u
                        row_adj[j] += g * u
        rk = lrho[k]
        for j in range(n - 1, k, -1):
            p -= 1
            t = rk + L[k, j]
            new = lrho[j]
            lrho[j] = saved[p]
            g = grho[j]
            if g != 0.0 and t != ARB_NEG_INF:
                u = exp(t - new)
                grho[j] = g * exp(lrho[j] - new)
                grho[k] += g * u
                row_adj[j] += g * u
        for j in range(k + 1, n):
            G[k, j] += row_adj[j]  # L[k, j] here is the log of B[k, j] / d_k
            gd -= row_adj[j]
            L[k, j] += d  # undo the division: earlier steps read the value before step k
        # d_k = logsumexp of the arcs into k
        for i in range(k + 1, n):
            G[i, k] += gd * exp(L[i, k] - d)
        if not single_root:
            grho[k] += gd * exp(lrho[k] - d)


cdef bint _plausible(int n, bint single_root, double logz, double[:, ::1] mu_words, double[::1] mu_root) noexcept nogil:
    """Marginals that are finite, non-negative and sum to one for every word (and over the
    root's children, with one root child): the check that the linear domain lost nothing."""
    cdef int h, m
    cdef double total, v, root_total = 0.0
    if not isfinite(logz):
        return False
    for m in range(n):
        total = mu_root[m]
        root_total += total
        if not (total >= -1e-9) or not isfinite(total):
            return False
        for h in range(n):
            if h != m:
                v = mu_words[h, m]
                if not (v >= -1e-9) or not isfinite(v):
                    return False
                total += v
        if fabs(total - 1.0) > 1e-8:
            return False
    return not single_root or fabs(root_total - 1.0) <= 1e-8


cdef double _widest_column(int n, const double[:, ::1] arcs) noexcept nogil:
    """The largest spread of the scores of the arcs into one word (self-loops excluded)."""
    cdef int h, m
    cdef double lo, hi, v, widest = 0.0
    for m in range(n):
        lo, hi = INFINITY, -INFINITY
        for h in range(n + 1):
            if h != m + 1:
                v = arcs[h, m]
                lo = v if v < lo else lo
                hi = v if v > hi else hi
        if hi - lo > widest:
            widest = hi - lo
    return widest


def mst_marginals(scores, bint single_root=True, str domain="auto"):
    """Arc marginals mu[h, m] = P(h -> m) over all (single-root) spanning trees, and log Z.

    domain: "linear" (scaled weights; raises FloatingPointError when a column's scores span
    more than LINEAR_RANGE or the result fails its check), "log" (any finite scores, O(n^3)
    memory), or "auto" (linear, and log where linear would raise)."""
    S = _check_scores(scores)
    if domain not in ("auto", "linear", "log"):
        raise ValueError(f"domain must be 'auto', 'linear' or 'log', got {domain!r}")
    cdef int N = S.shape[0], n = N - 1, status = -1
    arcs = S[:, 1:].copy()  # arcs[h, m - 1]: h -> m
    arcs[numpy.arange(1, N), numpy.arange(n)] = -numpy.inf  # no self-loops
    if numpy.isnan(arcs).any():
        raise ValueError("arc scores contain NaN")
    if not numpy.isfinite(arcs[0]).all() or not numpy.isfinite(arcs[1:][~numpy.eye(n, dtype=bool)]).all():
        raise ValueError("marginals need a finite score on every arc")
    cdef double logz = 0.0
    piv_arr = numpy.empty(n)
    cdef double[::1] piv = piv_arr
    row_adj_arr = numpy.zeros(n)
    cdef double[::1] row_adj = row_adj_arr
    cdef double[:, ::1] B, G
    cdef double[::1] rho, grho, saved, scale
    grad_words = numpy.zeros((n, n))
    grad_root = numpy.zeros(n)
    G, grho = grad_words, grad_root
    if domain != "log":
        shift = arcs.max(axis=0)
        if _widest_column(n, arcs) <= LINEAR_RANGE:
            W = numpy.exp(arcs - shift[None, :])
            B_arr = W[1:].copy()  # the elimination overwrites it; W is needed after
            rho_arr = W[0].copy()
            B, rho = B_arr, rho_arr
            scale_arr = numpy.ones(n)
            scale = scale_arr
            with nogil:
                status = _eliminate_linear(n, single_root, B, rho, piv, scale)
                if status == 0:
                    _reverse_linear(n, single_root, B, rho, piv, scale, G, grho, row_adj)
            if status == 0:
                logz = float(numpy.log(piv_arr).sum() + shift.sum() - numpy.log(scale_arr).sum())
                grad_words *= W[1:]
                grad_root *= W[0]
                if not _plausible(n, single_root, logz, G, grho):
                    status = -1
        if status != 0 and domain == "linear":
            raise FloatingPointError("the scores span too wide a range for the linear domain")
    if status != 0:
        L_arr = arcs[1:].copy()
        lrho_arr = arcs[0].copy()
        B, rho = L_arr, lrho_arr
        saved_arr = numpy.empty(sum((n - k - 1) * (n - k - 1) for k in range(n)) + 1)
        saved = saved_arr
        grad_words[:] = 0.0
        grad_root[:] = 0.0
        with nogil:
            status = _eliminate_log(n, single_root, B, rho, piv, saved)
            if status == 0:
                _reverse_log(n, single_root, B, rho, piv, saved, G, grho, row_adj)
        if status != 0:
            raise ValueError("no spanning tree has a finite score")
        logz = float(piv_arr.sum())
    mu = numpy.zeros((N, N))
    mu[0, 1:] = grad_root
    mu[1:, 1:] = grad_words
    numpy.fill_diagonal(mu, 0.0)
    return mu, logz
