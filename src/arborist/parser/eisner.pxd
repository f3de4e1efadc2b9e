# The Eisner chart recursion and its back-tracking, for kernels that parse without the GIL
# (`features.ArcFeatures.parse_many`).
cdef double _fill(const double[:, ::1] S, int n, bint single_root, bint use_max,
                  double[:, ::1] Ir, double[:, ::1] Il, double[:, ::1] Cr, double[:, ::1] Cl,
                  double[:, ::1] B, int[:, ::1] bp_b, int[:, ::1] bp_cr, int[:, ::1] bp_cl,
                  double* terms, int* root_arg) noexcept nogil

cdef void _backtrack(int n, bint single_root, int root_child, int[:, ::1] bp_b, int[:, ::1] bp_cr,
                     int[:, ::1] bp_cl, int[::1] heads, int* stack) noexcept nogil

cdef void _outside(const double[:, ::1] S, int n, bint single_root, double logz,
                   double[:, ::1] Ir, double[:, ::1] Il, double[:, ::1] Cr, double[:, ::1] Cl,
                   double[:, ::1] B, double[:, ::1] gIr, double[:, ::1] gIl, double[:, ::1] gCr,
                   double[:, ::1] gCl, double[:, ::1] mu) noexcept nogil
