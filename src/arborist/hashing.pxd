# Feature-key mixing shared by every feature extractor (arcs, tags).
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #define ARBORIST_GOLDEN 0x9E3779B97F4A7C15ULL
    """
    const uint64_t GOLDEN "ARBORIST_GOLDEN"  # 2^64 / golden ratio, odd: a multiplicative mixer


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # splitmix64 finalizer: a full-avalanche 64-bit mixer, much cheaper than murmur.
    x ^= x >> 30
    x *= 0xBF58476D1CE4E5B9ULL
    x ^= x >> 27
    x *= 0x94D049BB133111EBULL
    x ^= x >> 31
    return x


cdef inline uint64_t combine(uint64_t seed, uint64_t value) noexcept nogil:
    return mix64(seed ^ (value + GOLDEN + (seed << 6) + (seed >> 2)))
