"""64-bit string ids, identical to spaCy's (`nlp.vocab.strings[s]`).

Token attributes reach the kernels as these ids, so a CoNLL-U file and a spaCy
`Doc` give the feature extractors the same input. spaCy gives its built-in
symbols ("NOUN", "nsubj", "_", ...) fixed small ids and the empty string 0;
every other string is murmurhash2-64 of its UTF-8 bytes with seed 1.
"""
from libc.stdint cimport uint64_t
from murmurhash.mrmr cimport hash64

import numpy
from spacy.symbols import IDS as _SPACY_SYMBOLS

cdef dict SYMBOLS = dict(_SPACY_SYMBOLS)
SYMBOLS[""] = 0


cpdef uint64_t hash_string(str text):
    cdef object symbol = SYMBOLS.get(text)
    if symbol is not None:
        return symbol
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


def sorted_index(sorted_ids, ids):
    """The position of each of `ids` in the sorted uint64 array `sorted_ids`, -1 where absent
    (the learned tag tables of distance pruning and XPOS candidates look tags up this way)."""
    sorted_ids = numpy.asarray(sorted_ids, dtype=numpy.uint64)
    ids = numpy.asarray(ids, dtype=numpy.uint64)
    if not len(sorted_ids):
        return numpy.full(ids.shape, -1, dtype=numpy.intp)
    at = numpy.minimum(numpy.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return numpy.where(sorted_ids[at] == ids, at, -1)
