ctypedef void (*task_function)(void* argument) noexcept nogil


cdef class Helper:
    cdef int state  # IDLE, CLAIMED, POSTED or STOP; read and written atomically
    cdef object __weakref__
    cdef task_function task
    cdef void* argument
    cdef readonly object thread
    cdef void post(self, task_function task, void* argument) noexcept nogil
    cdef void wait(self) noexcept nogil
    cdef void serve(self) noexcept nogil
