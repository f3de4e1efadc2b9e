from libc.stdint cimport uint64_t

cdef extern from *:
    # GCC/Clang: a hint to load the cache line of addr; no fault, no effect on results.
    void __builtin_prefetch(const void* addr) noexcept nogil


cdef class Weights:
    cdef readonly int bits
    cdef readonly uint64_t mask
    cdef readonly bint averaged
    cdef readonly object array         # numpy float64 (2**bits,): the current weights
    cdef readonly object accumulator   # numpy float64: sum of step * delta, for averaging
    cdef double[::1] w
    cdef double[::1] u
    cdef readonly object scale         # numpy float64 or None: a diagonal metric S (see Weights)
    cdef double[::1] s
    cdef bint scaled
    cdef public double step            # examples seen so far (the averaging clock)
    cdef public double sq_norm_change  # sum over adds of the change in ||w||^2 (EG's dual change)

    cdef inline void add(self, uint64_t index, double value) noexcept nogil:
        self.sq_norm_change = self.add_summing(index, value, self.sq_norm_change)

    cdef inline double add_summing(self, uint64_t index, double value, double change) noexcept nogil:
        """w[index] += value; returns change plus the change of ||w||^2. `add` keeps that sum
        in sq_norm_change; a kernel making many adds starts from sq_norm_change, sums in a
        local in the same order and stores it once (the same figure), as the compiler cannot
        keep the field in a register across writes to w, which may alias it."""
        return change + add_term(&self.w[0], &self.u[0] if self.averaged else NULL,
                                 &self.s[0] if self.scaled else NULL, self.step, index, value)


cdef inline double add_term(double* w, double* u, const double* s, double step, uint64_t index,
                            double value) noexcept nogil:
    """The add of `Weights` on its arrays (u: the averaging accumulator, or NULL; s: the
    scale, or NULL): w[index] += value, and the change of ||w||^2, which the caller sums in
    the order the adds happen (kernels that hold raw pointers call it directly)."""
    cdef double old = w[index]
    cdef double stored = value
    if s != NULL:
        # The array holds S u and `value` is a change of u: S u grows by S_k value and
        # u.S u by value (2 (S u)_k + S_k value), which needs no division by S_k.
        stored = s[index] * value
    w[index] = old + stored
    if u != NULL:
        u[index] += step * stored
    # (old + v)^2 - old^2: exact even when an update touches the same hashed index many times.
    return value * (old + old + stored)

cdef inline double touch(uint64_t key, uint64_t mask, const double* w, Weights target, double value) noexcept nogil:
    """One access to a hashed weight, so that a kernel's scoring and updating enumerate
    features with the same code (the tagger's): with w, read w[key & mask]; with w = NULL,
    add value to target at key & mask. The arc, part and label kernels instead collect a
    part's indices first and `prefetch` them (below)."""
    cdef uint64_t index = key & mask
    if w != NULL:
        return w[index]
    target.add(index, value)
    return 0.0


cdef inline void prefetch(const double* w, uint64_t index) noexcept nogil:
    """Start loading w[index] into the cache. Feature kernels prefetch each weight as
    soon as its index is hashed and read the weights after hashing all of a part's
    features: the cache misses (nearly every read of a 2**24 vector) then overlap
    instead of waiting one after another (3x faster arc scoring on en_ewt)."""
    __builtin_prefetch(w + index)
