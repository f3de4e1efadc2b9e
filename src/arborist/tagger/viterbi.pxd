# Viterbi's forward pass and back-tracking, for kernels that tag without the GIL
# (`features.ChainFeatures.tag_many`).
cdef double _forward1(const double[:, :, ::1] S, int n, int K, bint use_max,
                      double[:, ::1] alpha, int[:, ::1] bp, double* terms, int* last) noexcept nogil
cdef void _backtrack1(int n, int last, int[:, ::1] bp, int[::1] tags) noexcept nogil
cdef double _forward2(const double[:, :, :, ::1] S, int n, int K, bint use_max,
                      double[:, :, ::1] alpha, int[:, :, ::1] bp, double* terms, int* last) noexcept nogil
cdef void _backtrack2(int n, int K, int last, int[:, :, ::1] bp, int[::1] tags) noexcept nogil
