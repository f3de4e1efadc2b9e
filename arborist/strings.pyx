"""64-bit string hashes, identical to spaCy's (`nlp.vocab.strings[s]`).

Token attributes reach the kernels as these hashes, so a CoNLL-U file and a spaCy
`Doc` give the feature extractors the same input.
"""
from libc.stdint cimport uint64_t
from murmurhash.mrmr cimport hash64

import numpy


cpdef uint64_t hash_string(str text):
    # spaCy's StringStore: murmurhash2 64-bit of the UTF-8 bytes, seed 1.
    cdef bytes utf8 = text.encode("utf8")
    return hash64(<char*>utf8, len(utf8), 1)


def hash_strings(strings):
    """Hash a sequence of str into a uint64 numpy array."""
    out = numpy.empty(len(strings), dtype=numpy.uint64)
    cdef uint64_t[::1] view = out
    cdef Py_ssize_t i
    for i, s in enumerate(strings):
        view[i] = hash_string(s)
    return out
