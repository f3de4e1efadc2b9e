"""Hashed weight vector with the averaging trick.

Averaged perceptron (Collins 2002; Daume's trick): keep w and u = sum_t t * delta_t,
where t is the number of examples seen before the update. After T examples the
average of the T weight vectors w_1..w_T is w - u / T, computed in O(d) once.

With a `scale` S (positive, one per slot: a diagonal metric), adds are changes of a
vector u while the array holds S u, and `sq_norm_change` sums the change of u.S u.
EG solves the M3N dual with a diagonal covariance this way (Laplace MaxEnDNet,
seeds/003 eq. 9): scoring reads S u, the posterior mean up to 1/C, and the dual's
1/2 eta^T S eta is the reweighted norm. S = 1 gives the unscaled vector bit for bit.
"""
import numpy

CACHE_LINE = 64


def cache_aligned(array):
    """`array` (1-D float64) itself when its data starts on a 64-byte boundary, else a copy
    that does. The parser's coarse distance features put a feature pair in one 8-slot group,
    which is one cache line only when the array is aligned; numpy's large arrays start 16
    bytes into a line and np.load's 32 (a memory map starts 128 bytes into a page: aligned)."""
    if array.ctypes.data % CACHE_LINE == 0:
        return array
    out = aligned_empty(array.shape[0])
    out[...] = array
    return out


def aligned_empty(Py_ssize_t n, bint zeros=False):
    """A float64 array of n slots (uninitialized, or zeros: numpy's lazily zeroed pages)
    whose data starts on a 64-byte boundary."""
    buffer = (numpy.zeros if zeros else numpy.empty)(n + CACHE_LINE // 8, dtype=numpy.float64)
    start = (-buffer.ctypes.data % CACHE_LINE) // 8
    return buffer[start:start + n]


cdef class Weights:
    def __init__(self, int bits=22, bint averaged=False, array=None, scale=None):
        if not 1 <= bits <= 32:
            raise ValueError(f"hash bits must be in 1..32, got {bits}")
        self.bits = bits
        self.mask = (<uint64_t>1 << bits) - 1
        self.averaged = averaged
        if array is None:
            array = aligned_empty(1 << bits, zeros=True)
        elif array.shape != (1 << bits,) or array.dtype != numpy.float64:
            raise ValueError(f"weight array must be float64 of size 2**{bits}, got {array.dtype} {array.shape}")
        self.array = numpy.ascontiguousarray(array)
        self.w = self.array
        self.accumulator = numpy.zeros_like(self.array) if averaged else numpy.zeros(1)
        self.u = self.accumulator
        self.step = 0
        self.sq_norm_change = 0.0
        self.scaled = scale is not None
        if scale is None:
            self.scale = None
            self.s = numpy.ones(1)
        else:
            if scale.shape != self.array.shape or scale.dtype != numpy.float64:
                raise ValueError(f"scale must be float64 of size 2**{bits}, got {scale.dtype} {scale.shape}")
            if not (scale > 0).all():
                raise ValueError("scale must be positive")
            self.scale = numpy.ascontiguousarray(scale)
            self.s = self.scale

    def sq_norm(self):
        """||w||^2, or u.S u = (S u).(S u / S) with a scale (the array is S u)."""
        if self.scale is None:
            return float(self.array @ self.array)
        return float(self.array @ (self.array / self.scale))

    def tick(self, int n=1):
        """Advance the averaging clock by n examples."""
        self.step += n

    def add_sparse(self, indices, values, double scale=1.0):
        """w[indices] += scale * values (repeated indices accumulate)."""
        cdef const uint64_t[:] idx = numpy.ascontiguousarray(indices, dtype=numpy.uint64)
        cdef const double[:] val = numpy.ascontiguousarray(values, dtype=numpy.float64)
        cdef Py_ssize_t i
        with nogil:
            for i in range(idx.shape[0]):
                self.add(idx[i] & self.mask, scale * val[i])

    def averaged_array(self):
        """The average of the weight vectors after each example seen so far."""
        if not self.averaged or self.step == 0:
            return self.array.copy()
        return self.array - self.accumulator / self.step

    def nonzero(self):
        return int(numpy.count_nonzero(self.array))
