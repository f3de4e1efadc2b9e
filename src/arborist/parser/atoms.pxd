# A token's hash over a template's atoms at offsets, shared by the arc and part feature
# extractors (their templates read "h-1.xpos", "s+1.upos" alike).
from libc.stdint cimport uint64_t

from ..hashing cimport combine


cdef inline uint64_t offset_atoms_hash(uint64_t seed, const int[::1] atoms, const uint64_t[:, :] attrs,
                                       Py_ssize_t base, int i, int n_tokens, uint64_t bos,
                                       uint64_t eos) noexcept nogil:
    """Token i's hash of `atoms` (attribute row, offset pairs; a row < 0 ends them): the
    sentence's tokens are columns base..base+n_tokens-1 of attrs, and an offset before them
    reads `bos`, after them `eos`."""
    cdef int k, pos
    cdef uint64_t value = seed
    for k in range(0, atoms.shape[0], 2):
        if atoms[k] < 0:
            break
        pos = i + atoms[k + 1]
        value = combine(value, bos if pos < 0 else eos if pos >= n_tokens else attrs[atoms[k], base + pos])
    return value
