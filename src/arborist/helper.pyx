"""A second thread for kernels that split one sentence's work in two (the second-order
parser's part features): `post` hands it a C function and its argument, the calling thread
does its own share, and `wait` returns once the helper is done. Both sides stay without the
GIL, and a hand-off costs a store and a load (a thread pool's futures cost tens of
microseconds, as much as a sentence's share of the work).

The helper spins while idle (pausing, then yielding the core), so it lives only for the
span of a training epoch (`arborist.structure.scoring_threads`) and is closed after it.
A task posted to a helper that has no thread (closed, or in a process forked from the one
that started it) runs in the posting thread: the same results, in one thread."""
import os
import threading
import weakref

cdef extern from *:
    """
    #include <sched.h>
    static inline int arborist_load(int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void arborist_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int arborist_claim(int* p, int from, int to) {
        return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
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
    int arborist_claim(int* p, int expected, int desired) noexcept nogil
    void arborist_pause() noexcept nogil
    int sched_yield() noexcept nogil

cdef enum:
    IDLE = 0
    CLAIMED = 1  # a poster is writing the task
    POSTED = 2
    STOP = 3
    # pauses before yielding the core (the idle gaps between a visit's tasks are a few
    # hundred microseconds)
    SPINS_BEFORE_YIELD = 4096

_live = weakref.WeakSet()  # the helpers with a thread, to stop in a forked child


def _forked():
    for helper in list(_live):
        (<Helper>helper).state = STOP  # the child has no helper thread
        (<Helper>helper).thread = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


cdef class Helper:
    def __init__(self):
        self.state = IDLE
        self.thread = threading.Thread(target=self._serve, name="arborist-helper", daemon=True)
        _live.add(self)
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
            else:
                spins = _idle(spins)

    cdef void post(self, task_function task, void* argument) noexcept nogil:
        """Run task(argument) in the helper's thread, once it is done with the task before
        (or in this thread if the helper has none)."""
        cdef int spins = 0
        while not arborist_claim(&self.state, IDLE, CLAIMED):
            if arborist_load(&self.state) == STOP:
                task(argument)
                return
            spins = _idle(spins)
        self.task = task
        self.argument = argument
        arborist_store(&self.state, POSTED)

    cdef void wait(self) noexcept nogil:
        """Until the helper is done with the tasks posted."""
        cdef int state, spins = 0
        while True:
            state = arborist_load(&self.state)
            if state == IDLE or state == STOP:
                return
            spins = _idle(spins)

    def close(self):
        """Stop the thread (after any posted task) and join it."""
        cdef int spins = 0
        if self.thread is None:
            return
        with nogil:
            while not arborist_claim(&self.state, IDLE, STOP):
                spins = _idle(spins)
        self.thread.join()
        self.thread = None
        _live.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        raise TypeError("a Helper is a thread of this process: it cannot be pickled or copied")


cdef inline int _idle(int spins) noexcept nogil:
    """One wait step: a pause, or past SPINS_BEFORE_YIELD of them, the core to another thread."""
    if spins < SPINS_BEFORE_YIELD:
        arborist_pause()
        return spins + 1
    sched_yield()
    return spins
