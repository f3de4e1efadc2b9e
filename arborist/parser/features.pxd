from libc.stdint cimport uint64_t

cdef uint64_t mix64(uint64_t x) noexcept nogil
