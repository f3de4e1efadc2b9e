"""A second thread for kernels that split one sentence's work in two (the second-order
parser's part features): `post` hands it a C function and its argument, the calling thread
does its own share, and `wait` returns once the helper is done. Both sides stay without the
GIL, and a hand-off costs a store and a load (a thread pool's futures cost tens of
microseconds, as much as a sentence's share of the work).

The helper spins while idle (pausing, then yielding the core), so it lives only for the
span of a training epoch (`arborist.structure.scoring_threads`) and is closed after it."""
import threading

cdef extern from *:
    """
    #include <sched.h>
    static inline int arborist_load(int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void arborist_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline void arborist_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    """
    int arborist_load(int* p) noexcept nogil
    void arborist_store(int* p, int v) noexcept nogil
    void arborist_pause() noexcept nogil
    int sched_yield() noexcept nogil

cdef enum:
    IDLE = 0
    POSTED = 1
    STOP = 2
    SPINS_BEFORE_YIELD = 4096  # about 100 µs of pauses: the gap between a visit's tasks


cdef class Helper:
    def __init__(self):
        self.state = IDLE
        self.thread = threading.Thread(target=self._serve, name="arborist-helper", daemon=True)
        self.thread.start()

    def _serve(self):
        with nogil:
            self.serve()

    cdef void serve(self) noexcept nogil:
        cdef int state, spins = 0
        while True:
            state = arborist_load(&self.state)
            if state == POSTED:
                self.task(self.argument)
                arborist_store(&self.state, IDLE)
                spins = 0
            elif state == STOP:
                return
            elif spins < SPINS_BEFORE_YIELD:
                spins += 1
                arborist_pause()
            else:
                sched_yield()

    cdef void post(self, task_function task, void* argument) noexcept nogil:
        """Run task(argument) in the helper's thread, once it is done with the task before."""
        self.wait()
        self.task = task
        self.argument = argument
        arborist_store(&self.state, POSTED)

    cdef void wait(self) noexcept nogil:
        """Until the posted task is done."""
        while arborist_load(&self.state) == POSTED:
            arborist_pause()

    def close(self):
        """Stop the thread (after any posted task) and join it."""
        if self.thread is None:
            return
        with nogil:
            self.wait()
        arborist_store(&self.state, STOP)
        self.thread.join()
        self.thread = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        raise TypeError("a Helper is a thread of this process: it cannot be pickled or copied")
