# The one reduction behind every dynamic program (Eisner, Viterbi): max-plus with
# its argmax, or log-sum-exp. Inline, so kernels cimport it at no call cost.
from libc.math cimport exp, log, INFINITY


cdef inline double reduce_terms(double* terms, int k, bint use_max, int* arg) noexcept nogil:
    """(+) over terms[0..k): max (with its first argmax) or log-sum-exp."""
    cdef int i, best_i = 0
    cdef double best = terms[0], total = 0.0
    for i in range(1, k):
        if terms[i] > best:
            best = terms[i]
            best_i = i
    arg[0] = best_i
    if use_max or best == -INFINITY:
        return best
    for i in range(k):
        total += exp(terms[i] - best)
    return best + log(total)
