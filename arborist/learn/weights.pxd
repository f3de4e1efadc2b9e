from libc.stdint cimport uint64_t


cdef class Weights:
    cdef readonly int bits
    cdef readonly uint64_t mask
    cdef readonly bint averaged
    cdef readonly object array         # numpy float64 (2**bits,): the current weights
    cdef readonly object accumulator   # numpy float64: sum of step * delta, for averaging
    cdef double[::1] w
    cdef double[::1] u
    cdef public double step            # examples seen so far (the averaging clock)

    cdef inline void add(self, uint64_t index, double value) noexcept nogil:
        self.w[index] += value
        if self.averaged:
            self.u[index] += self.step * value
