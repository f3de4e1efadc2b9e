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
by a constant larger than the score range of any two trees, so the best tree has
the fewest root arcs (one) and, among those, the highest score.

`mst_marginals`: the matrix-tree theorem in the single-root form of Koo, Globerson,
Carreras and Collins (2007): with A[h, m] = exp(S[h, m]) over words and
r[m] = exp(S[0, m]), the Laplacian L of the words with its first row replaced by r
has det = Z, and arc marginals follow from its inverse. Column m of that matrix
holds only arcs into m, so each column is scaled by exp(-max_h S[h, m]) first
(log Z gains the shifts back; the marginals are unchanged): scores of 1e4 do not
overflow. The LU factorization and inverse are LAPACK's (numpy).
"""
import numpy
from libc.math cimport INFINITY, isfinite

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


def mst_argmax(scores, bint single_root=True):
    """Highest-scoring spanning tree (non-projective): heads (int32, n+1), heads[0] = -1; its score."""
    S = _check_scores(scores)
    cdef int N = S.shape[0], h, m
    W_arr = S.copy()
    numpy.fill_diagonal(W_arr, -INFINITY)
    W_arr[:, 0] = -INFINITY
    arcs = W_arr[:, 1:]
    finite = arcs[numpy.isfinite(arcs)]
    if single_root and finite.size:
        # Larger than the score difference of any two trees (n arcs each).
        W_arr[0, 1:] -= (N + 1) * (finite.max() - finite.min() + 1.0)
    cdef double[:, ::1] W = W_arr
    src_arr = numpy.repeat(numpy.arange(N, dtype=numpy.intc)[:, None], N, axis=1)
    dst_arr = numpy.ascontiguousarray(src_arr.T)
    cdef int[:, ::1] src = src_arr, dst = dst_arr
    heads_arr = numpy.full(N, -1, dtype=numpy.intc)
    work = numpy.zeros(16 * N + N * N + 4, dtype=numpy.intc)
    cdef int[::1] ws = work
    cdef int[::1] hv = heads_arr
    cdef int status
    cdef int* base = &ws[0]
    # Work arrays: alive, best_in, mark, cycle (N each), cycle members (2N: the contracted
    # cycles hold at most 2N nodes in all), member_start, reps, in_src, in_dst (N each), the
    # members' saved cycle arcs (2N each), group (N), group before each contraction (N*N).
    with nogil:
        status = _cle(N, W, src, dst, &hv[0], base, base + N, base + 2 * N, base + 3 * N, base + 4 * N,
                      base + 6 * N, base + 7 * N, base + 8 * N, base + 9 * N, base + 10 * N, base + 12 * N,
                      base + 14 * N, base + 16 * N)
    if status != 0:
        raise ValueError("no spanning tree has a finite score (some word has no allowed head)")
    heads_arr[0] = -1
    heads = heads_arr.astype(numpy.int32)
    score = float(S[heads[1:], numpy.arange(1, N)].sum())
    if not numpy.isfinite(score):
        raise ValueError("no spanning tree has a finite score (all trees use a forbidden arc)")
    return heads, score


def mst_marginals(scores, bint single_root=True):
    """Arc marginals mu[h, m] = P(h -> m) over all (single-root) spanning trees, and log Z."""
    S = _check_scores(scores)
    N = S.shape[0]
    n = N - 1
    arcs = S.copy()
    numpy.fill_diagonal(arcs, -numpy.inf)
    arcs[:, 0] = -numpy.inf
    shift = arcs[:, 1:].max(axis=0)  # per modifier
    if not numpy.isfinite(shift).all():
        raise ValueError("no spanning tree has a finite score (some word has no allowed head)")
    E = numpy.exp(arcs[:, 1:] - shift[None, :])  # E[h, m-1]: arc h -> m, column-scaled
    A = E[1:]  # (n, n) word -> word
    r = E[0]  # root -> word
    L = -A.copy()
    L[numpy.arange(n), numpy.arange(n)] = A.sum(axis=0)  # diagonal of A is 0 (exp(-inf))
    if single_root:
        L[0] = r
    else:
        L[numpy.arange(n), numpy.arange(n)] += r
    sign, logdet = numpy.linalg.slogdet(L)
    if sign <= 0 or not numpy.isfinite(logdet):
        raise ValueError("no spanning tree has a finite score (the Laplacian is singular)")
    inv = numpy.linalg.inv(L)
    mu = numpy.zeros((N, N))
    diag = numpy.diag(inv)
    if single_root:
        # Koo et al. (2007), single root: first row of L replaced by r (0-based word indices).
        not_first_m = numpy.ones(n)
        not_first_m[0] = 0.0
        words = A * (not_first_m[None, :] * diag[None, :]) - A * (not_first_m[:, None] * inv.T)
        mu[0, 1:] = r * inv[:, 0]
    else:
        words = A * diag[None, :] - A * inv.T
        mu[0, 1:] = r * diag
    mu[1:, 1:] = words
    numpy.fill_diagonal(mu, 0.0)
    return mu, float(logdet + shift.sum())
