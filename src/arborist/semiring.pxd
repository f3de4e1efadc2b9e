# The one reduction behind every dynamic program (Eisner first and second order,
# Viterbi, the matrix-tree theorem): max-plus with its argmax, or log-sum-exp.
# An accumulator takes the terms one at a time (the second-order program visits
# them inside nested loops); `reduce_terms` and `logaddexp` are the same
# accumulator over an array and over two terms. Inline, so kernels cimport it at
# no call cost.
from libc.math cimport exp, log, INFINITY


cdef struct Acc:
    double best
    double total  # sum of exp(term - best), log-sum-exp only
    int arg


cdef inline void acc_init(Acc* acc) noexcept nogil:
    acc.best = -INFINITY
    acc.total = 0.0
    acc.arg = -2


cdef inline void acc_add(Acc* acc, double term, int index, bint use_max) noexcept nogil:
    """One term of a max-plus or (online) log-sum-exp reduction; the first of equal
    maxima is the argmax, and -inf terms are skipped."""
    if term == -INFINITY:
        return
    if term > acc.best:
        if not use_max:
            acc.total = acc.total * exp(acc.best - term) + 1.0
        acc.best = term
        acc.arg = index
    elif not use_max:
        acc.total += exp(term - acc.best)


cdef inline double acc_value(Acc* acc, bint use_max) noexcept nogil:
    if use_max or acc.best == -INFINITY:
        return acc.best
    return acc.best + log(acc.total)


cdef inline double reduce_terms(double* terms, int k, bint use_max, int* arg) noexcept nogil:
    """(+) over terms[0..k): max (with its first argmax; 0 when every term is -inf) or
    log-sum-exp."""
    cdef Acc acc
    cdef int i
    acc_init(&acc)
    for i in range(k):
        acc_add(&acc, terms[i], i, use_max)
    arg[0] = acc.arg if acc.arg >= 0 else 0
    return acc_value(&acc, use_max)


cdef inline double logaddexp(double a, double b) noexcept nogil:
    """log(exp(a) + exp(b))."""
    cdef Acc acc
    acc_init(&acc)
    acc_add(&acc, a, 0, False)
    acc_add(&acc, b, 1, False)
    return acc_value(&acc, False)
