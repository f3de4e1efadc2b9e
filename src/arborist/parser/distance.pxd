# The arc-length bins shared by the first- and second-order feature extractors.


cdef inline int arc_distance_bin(int d) noexcept nogil:
    """1..5 each their own bin, then 6-7, 8-10, 11-14, 15-20, 21-30, over 30 (11 bins)."""
    if d <= 5:
        return d - 1
    if d <= 7:
        return 5
    if d <= 10:
        return 6
    if d <= 14:
        return 7
    if d <= 20:
        return 8
    if d <= 30:
        return 9
    return 10
