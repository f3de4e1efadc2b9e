"""Dynamic programs over tag sequences: Viterbi and forward-backward, first and second order.

A sentence has n words (positions 0..n-1 here, words 1..n of the Sentence) and
K tags; index K is START, the tag of the (virtual) positions before the sentence.
Part layouts (score arrays are float64, C-contiguous):

  order 1 (bigram):  S[t, prev, cur],        shape (n, K+1, K)
  order 2 (trigram): S[t, prev2, prev, cur], shape (n, K+1, K+1, K)

with prev = y[t-1] and prev2 = y[t-2], START where t-1 < 0 (t-2 < 0). Valid parts:

  order 1: t = 0: prev = START;                  t >= 1: prev < K
  order 2: t = 0: prev2 = prev = START;          t = 1: prev2 = START, prev < K;
           t >= 2: prev2 < K, prev < K

A tag sequence uses exactly one valid part per position. Entries of invalid
parts are never read (whatever their value, they do not change any result and
their marginals are 0); an entry of -inf forbids that part.

One forward recursion serves both semirings: max-plus with back-pointers (for
argmax) and log-sum-exp (for log Z). `_backward*` is the log-sum-exp backward
pass; part marginals are exp(alpha + S + beta - log Z). Everything is in log
space, shifted by the running max, so scores of 1e4 neither overflow nor
underflow.
"""
from libc.math cimport exp, log, INFINITY
import numpy

from ..semiring cimport reduce_terms


cdef inline double _prob(double log_value, double logz) noexcept nogil:
    if log_value == -INFINITY:
        return 0.0
    return exp(log_value - logz)


# -- order 1 ------------------------------------------------------------------

cdef double _forward1(const double[:, :, ::1] S, int n, int K, bint use_max,
                      double[:, ::1] alpha, int[:, ::1] bp, double* terms, int* last) noexcept nogil:
    """alpha[t, c] = (+) over tag sequences of words 0..t ending in c; returns (+)_c alpha[n-1, c]."""
    cdef int t, p, c, arg
    for c in range(K):
        alpha[0, c] = S[0, K, c]
        bp[0, c] = K
    for t in range(1, n):
        for c in range(K):
            for p in range(K):
                terms[p] = alpha[t - 1, p] + S[t, p, c]
            alpha[t, c] = reduce_terms(terms, K, use_max, &arg)
            bp[t, c] = arg
    for c in range(K):
        terms[c] = alpha[n - 1, c]
    return reduce_terms(terms, K, use_max, last)


cdef void _backtrack1(int n, int last, int[:, ::1] bp, int[::1] tags) noexcept nogil:
    cdef int t
    tags[n - 1] = last
    for t in range(n - 1, 0, -1):
        tags[t - 1] = bp[t, tags[t]]


cdef void _backward1(const double[:, :, ::1] S, int n, int K, double logz, double[:, ::1] alpha,
                     double[:, ::1] beta, double* terms, double[:, :, ::1] mu, bint parts=True) noexcept nogil:
    """beta[t, c] = log-sum-exp over continuations of words t+1..n-1 given y[t] = c; then the
    part marginals mu (unless `parts` is false)."""
    cdef int t, p, c, arg
    for c in range(K):
        beta[n - 1, c] = 0.0
    for t in range(n - 2, -1, -1):
        for p in range(K):
            for c in range(K):
                terms[c] = S[t + 1, p, c] + beta[t + 1, c]
            beta[t, p] = reduce_terms(terms, K, False, &arg)
    if not parts:
        return
    for c in range(K):
        mu[0, K, c] = _prob(S[0, K, c] + beta[0, c], logz)
    for t in range(1, n):
        for p in range(K):
            for c in range(K):
                mu[t, p, c] = _prob(alpha[t - 1, p] + S[t, p, c] + beta[t, c], logz)


cdef void _tags1(int n, int K, double logz, double[:, ::1] alpha, double[:, ::1] beta,
                 double[:, ::1] marg) noexcept nogil:
    """Tag marginals marg[t, c] = P(y[t] = c) = exp(alpha[t, c] + beta[t, c] - log Z): without
    the part marginals, two exps per part instead of three."""
    cdef int t, c
    for t in range(n):
        for c in range(K):
            marg[t, c] = _prob(alpha[t, c] + beta[t, c], logz)


# -- order 2 ------------------------------------------------------------------
# The state at t is (y[t-1], y[t]) = (p, c), p in 0..K (K = START, only at t = 0).

cdef double _forward2(const double[:, :, :, ::1] S, int n, int K, bint use_max,
                      double[:, :, ::1] alpha, int[:, :, ::1] bp, double* terms, int* last) noexcept nogil:
    cdef int t, p2, p, c, arg, lo
    cdef double result
    for p in range(K + 1):
        for c in range(K):
            alpha[0, p, c] = S[0, K, K, c] if p == K else -INFINITY
            bp[0, p, c] = K
    for t in range(1, n):
        for c in range(K):
            alpha[t, K, c] = -INFINITY
            bp[t, K, c] = K
        for p in range(K):
            for c in range(K):
                if t == 1:
                    alpha[t, p, c] = alpha[0, K, p] + S[1, K, p, c]
                    bp[t, p, c] = K
                else:
                    for p2 in range(K):
                        terms[p2] = alpha[t - 1, p2, p] + S[t, p2, p, c]
                    alpha[t, p, c] = reduce_terms(terms, K, use_max, &arg)
                    bp[t, p, c] = arg
    # Final states (p, c): p = START only for a one-word sentence.
    lo = K if n == 1 else 0
    for p in range(lo, lo + (1 if n == 1 else K)):
        for c in range(K):
            terms[(p - lo) * K + c] = alpha[n - 1, p, c]
    result = reduce_terms(terms, (1 if n == 1 else K) * K, use_max, &arg)
    last[0] = (lo + arg // K) * K + arg % K
    return result


cdef void _backtrack2(int n, int K, int last, int[:, :, ::1] bp, int[::1] tags) noexcept nogil:
    cdef int t, p = last // K, c = last % K, p2
    tags[n - 1] = c
    if n >= 2:
        tags[n - 2] = p
    for t in range(n - 1, 1, -1):
        p2 = bp[t, p, c]
        tags[t - 2] = p2
        c = p
        p = p2


cdef void _backward2(const double[:, :, :, ::1] S, int n, int K, double logz, double[:, :, ::1] alpha,
                     double[:, :, ::1] beta, double* terms, double[:, :, :, ::1] mu, bint parts=True) noexcept nogil:
    """beta[t, p, c] = log-sum-exp over continuations of words t+1..n-1 given (y[t-1], y[t]) = (p, c);
    then the part marginals mu (unless `parts` is false)."""
    cdef int t, p2, p, c, arg, lo, hi
    for p in range(K + 1):
        for c in range(K):
            beta[n - 1, p, c] = 0.0
    for t in range(n - 2, -1, -1):
        # States at t: y[t-1] = p2 (START iff t == 0), y[t] = p; successors y[t+1] = c.
        lo = K if t == 0 else 0
        hi = K + 1 if t == 0 else K
        for p2 in range(lo, hi):
            for p in range(K):
                for c in range(K):
                    terms[c] = S[t + 1, p2, p, c] + beta[t + 1, p, c]
                beta[t, p2, p] = reduce_terms(terms, K, False, &arg)
    if not parts:
        return
    for c in range(K):
        mu[0, K, K, c] = _prob(S[0, K, K, c] + beta[0, K, c], logz)
    if n >= 2:
        for p in range(K):
            for c in range(K):
                mu[1, K, p, c] = _prob(alpha[0, K, p] + S[1, K, p, c] + beta[1, p, c], logz)
    for t in range(2, n):
        for p2 in range(K):
            for p in range(K):
                for c in range(K):
                    mu[t, p2, p, c] = _prob(alpha[t - 1, p2, p] + S[t, p2, p, c] + beta[t, p, c], logz)


cdef void _tags2(int n, int K, double logz, double[:, :, ::1] alpha, double[:, :, ::1] beta,
                 double[:, ::1] marg) noexcept nogil:
    """Tag marginals of order 2 from the states' alpha and beta (`_backward2` fills beta):
    marg[t, c] = sum over p of exp(alpha[t, p, c] + beta[t, p, c] - log Z)."""
    cdef int t, p, c
    for t in range(n):
        for c in range(K):
            marg[t, c] = 0.0
            for p in range(K + 1):
                marg[t, c] += _prob(alpha[t, p, c] + beta[t, p, c], logz)


# -- Python entry points ------------------------------------------------------

def chain_shape(int n, int n_tags, int order):
    """The part array shape of an n-word sentence with n_tags tags."""
    if order == 1:
        return (n, n_tags + 1, n_tags)
    if order == 2:
        return (n, n_tags + 1, n_tags + 1, n_tags)
    raise ValueError(f"chain order must be 1 or 2, got {order}")


def valid_parts(int n, int n_tags, int order):
    """Boolean mask of the valid parts (see the module doc)."""
    K = n_tags
    mask = numpy.zeros(chain_shape(n, K, order), dtype=bool)
    if n == 0:
        return mask
    if order == 1:
        mask[0, K, :] = True
        mask[1:, :K, :] = True
    else:
        mask[0, K, K, :] = True
        if n > 1:
            mask[1, K, :K, :] = True
        mask[2:, :K, :K, :] = True
    return mask


def _check_scores(scores):
    S = numpy.ascontiguousarray(scores, dtype=numpy.float64)
    if S.ndim == 3:
        order = 1
    elif S.ndim == 4:
        order = 2
    else:
        raise ValueError(f"chain scores must be (n, K+1, K) or (n, K+1, K+1, K), got shape {S.shape}")
    K = S.shape[S.ndim - 1]
    if K < 1 or S.shape != chain_shape(S.shape[0], K, order):
        raise ValueError(f"order-{order} chain scores must have shape {chain_shape(S.shape[0], max(K, 1), order)} "
                         f"(n, then K+1 per previous tag, K tags), got {S.shape}")
    return S, order, S.shape[0], K


def _no_sequence():
    return ValueError("no tag sequence has a finite score (every sequence uses a forbidden part)")


def chain_argmax(scores):
    """Highest-scoring tag sequence: tags (int32, n; tag ids 0..K-1) and its score.

    Order 1 for scores of shape (n, K+1, K), order 2 for (n, K+1, K+1, K)."""
    cdef int order, n, K
    S, order, n, K = _check_scores(scores)
    tags_arr = numpy.zeros(n, dtype=numpy.int32)
    if n == 0:
        return tags_arr, 0.0
    cdef int[::1] tags = tags_arr
    cdef double[::1] terms = numpy.empty((K + 1) * (K + 1))
    cdef int last = 0
    cdef double best
    cdef double[:, ::1] alpha1
    cdef int[:, ::1] bp1
    cdef double[:, :, ::1] alpha2
    cdef int[:, :, ::1] bp2
    cdef const double[:, :, ::1] S1
    cdef const double[:, :, :, ::1] S2
    if order == 1:
        S1 = S
        alpha1 = numpy.empty((n, K))
        bp1 = numpy.zeros((n, K), dtype=numpy.intc)
        with nogil:
            best = _forward1(S1, n, K, True, alpha1, bp1, &terms[0], &last)
            if best > -INFINITY:
                _backtrack1(n, last, bp1, tags)
    else:
        S2 = S
        alpha2 = numpy.empty((n, K + 1, K))
        bp2 = numpy.zeros((n, K + 1, K), dtype=numpy.intc)
        with nogil:
            best = _forward2(S2, n, K, True, alpha2, bp2, &terms[0], &last)
            if best > -INFINITY:
                _backtrack2(n, K, last, bp2, tags)
    if best == -INFINITY:
        raise _no_sequence()
    return tags_arr, best


def chain_log_z(scores):
    """log Z = log-sum-exp over all tag sequences of their scores."""
    cdef int order, n, K
    S, order, n, K = _check_scores(scores)
    if n == 0:
        return 0.0
    cdef double[::1] terms = numpy.empty((K + 1) * (K + 1))
    cdef int last = 0
    cdef double logz
    cdef const double[:, :, ::1] S1
    cdef const double[:, :, :, ::1] S2
    if order == 1:
        S1 = S
        logz = _forward1(S1, n, K, False, numpy.empty((n, K)), numpy.zeros((n, K), dtype=numpy.intc),
                         &terms[0], &last)
    else:
        S2 = S
        logz = _forward2(S2, n, K, False, numpy.empty((n, K + 1, K)), numpy.zeros((n, K + 1, K), dtype=numpy.intc),
                         &terms[0], &last)
    return logz


def chain_marginals(scores):
    """Part marginals mu (the scores' shape; 0 on invalid parts) and log Z, by forward-backward."""
    cdef int order, n, K
    S, order, n, K = _check_scores(scores)
    return _forward_backward(S, order, n, K, True)


def chain_tag_marginals(scores):
    """Tag marginals (n, K): P(y[t] = c) for every word t and tag c, and log Z, by
    forward-backward without the part marginals (what the probabilities of a tagger's
    predictions need: cheaper than summing `chain_marginals`' parts)."""
    cdef int order, n, K
    S, order, n, K = _check_scores(scores)
    return _forward_backward(S, order, n, K, False)


def _forward_backward(S, int order, int n, int K, bint parts):
    """(the part marginals if `parts`, else the tag marginals; log Z)."""
    out = numpy.zeros(S.shape if parts else (n, K))
    if n == 0:
        return out, 0.0
    cdef double[::1] terms = numpy.empty((K + 1) * (K + 1))
    cdef int last = 0
    cdef double logz
    cdef double[:, ::1] alpha1, beta1
    cdef double[:, ::1] marg = numpy.zeros((0, 0)) if parts else out
    cdef int[:, ::1] bp1
    cdef double[:, :, ::1] alpha2, beta2
    cdef double[:, :, ::1] mu1 = out if parts and order == 1 else numpy.zeros((0, 0, 0))
    cdef double[:, :, :, ::1] mu2 = out if parts and order == 2 else numpy.zeros((0, 0, 0, 0))
    cdef int[:, :, ::1] bp2
    cdef const double[:, :, ::1] S1
    cdef const double[:, :, :, ::1] S2
    if order == 1:
        S1 = S
        alpha1 = numpy.empty((n, K))
        beta1 = numpy.empty((n, K))
        bp1 = numpy.zeros((n, K), dtype=numpy.intc)
        with nogil:
            logz = _forward1(S1, n, K, False, alpha1, bp1, &terms[0], &last)
            if logz > -INFINITY:
                _backward1(S1, n, K, logz, alpha1, beta1, &terms[0], mu1, parts)
                if not parts:
                    _tags1(n, K, logz, alpha1, beta1, marg)
    else:
        S2 = S
        alpha2 = numpy.empty((n, K + 1, K))
        beta2 = numpy.full((n, K + 1, K), -INFINITY)
        bp2 = numpy.zeros((n, K + 1, K), dtype=numpy.intc)
        with nogil:
            logz = _forward2(S2, n, K, False, alpha2, bp2, &terms[0], &last)
            if logz > -INFINITY:
                _backward2(S2, n, K, logz, alpha2, beta2, &terms[0], mu2, parts)
                if not parts:
                    _tags2(n, K, logz, alpha2, beta2, marg)
    if logz == -INFINITY:
        raise _no_sequence()
    return out, logz
