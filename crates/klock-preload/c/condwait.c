/* The cancellable sleep of the interposer's condition-variable wait.
 *
 * pthread_cond_wait, _timedwait and _clockwait are cancellation points, and
 * POSIX wants the mutex re-locked before the thread's cleanup handlers run.
 * The wait is klock's three-step wait (begin: queue and unlock; sleep on a
 * futex word while the waiter is not yet notified; end: re-lock), written
 * in Rust.  Only the sleep is here, in C, compiled with -fexceptions so that
 * pthread_cleanup_push registers an unwinding cleanup:
 *
 *   testcancel; begin; cleanup_push(handler);
 *   loop { word = sleep_word(); if none: break;
 *          [async cancellation on] futex_wait(word) [restored] }
 *   cleanup_pop(0); end(give_up)
 *
 * Asynchronous cancellation is enabled only around the raw futex syscall (a
 * thread blocked in a plain futex syscall in deferred mode is not woken by
 * pthread_cancel), so the only frames between a cancellation and the
 * handler are this function's and libc's syscall(): no Rust frame is
 * unwound before the handler has re-locked the mutex.  The handler calls
 * end(give_up = 1): it leaves the condvar (or, if a notify won the race,
 * waits for the mutex as the notify arranged) and re-locks the mutex.
 *
 * The Rust side passes its functions in a table (no exported symbols), and
 * the wait ticket lives in this frame as opaque storage (at most 32 bytes,
 * 8-aligned; klock-c's core asserts both). A klock condvar with a
 * glibc-served mutex (robust, PI, PP, pshared) uses the same sleep with
 * another table: begin registers on the condvar's fallback word and calls
 * the real pthread_mutex_unlock, end leaves it and calls the real
 * pthread_mutex_lock (so the handler re-locks that way too). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Must match `WaitOps` in src/cond.rs. */
struct kp_wait_ops {
    /* Queue on the condvar and unlock the mutex: 0, or an errno value (then
     * nothing changed and end must not be called). */
    int (*begin)(void *cond, void *mutex, void *ticket);
    /* The futex word to sleep on and its expected value, or NULL once a
     * notify has reached the waiter. */
    const uint32_t *(*sleep_word)(void *cond, const void *ticket, uint32_t *value);
    /* Re-lock the mutex; returns 0 or ETIMEDOUT. Called exactly once per
     * successful begin. */
    int (*end)(void *cond, void *mutex, void *ticket, int give_up);
    /* klock's deadline clock (CLOCK_MONOTONIC nanoseconds). */
    uint64_t (*now_ns)(void);
};

/* Opaque storage for the Rust wait ticket. */
typedef union {
    unsigned char bytes[32];
    uint64_t align;
} kp_ticket;

struct kp_cleanup {
    const struct kp_wait_ops *ops;
    void *cond;
    void *mutex;
    kp_ticket *ticket;
};

/* Cancellation while asleep: re-lock the mutex before the program's own
 * cleanup handlers run. */
static void kp_cond_cancelled(void *arg) {
    struct kp_cleanup *c = arg;
    (void)c->ops->end(c->cond, c->mutex, c->ticket, 1);
}

#define KP_NS_PER_S 1000000000ull

/* The asynchronous-cancellation window, in a function of its own: a
 * cancellation can hit any instruction in here, and the unwinder then sees
 * the caller's frame stopped exactly at this call, inside its cleanup
 * region. (Were the window inlined, a cancellation between
 * pthread_setcanceltype and the syscall would stop the caller at a
 * non-call instruction, which the cleanup's call-site table need not
 * cover.) Nothing here needs cleaning up. FUTEX_WAIT's timeout is relative,
 * on CLOCK_MONOTONIC (the clock of now_ns); EINTR, EAGAIN and ETIMEDOUT all
 * lead back to sleep_word and the deadline check. */
static __attribute__((noinline)) void kp_sleep(const uint32_t *word, uint32_t value,
                                               const struct timespec *rel) {
    int old_type;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old_type);
    (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, rel, NULL, 0);
    pthread_setcanceltype(old_type, NULL);
}

/* Wait on `cond` with `mutex` (both already validated and typed by the
 * caller through `ops`). `timed`: give up once now_ns() >= deadline_ns.
 * Returns 0, ETIMEDOUT, or begin's error. */
__attribute__((visibility("hidden"))) int
klock_preload_cond_wait(const struct kp_wait_ops *ops, void *cond, void *mutex,
                        int timed, uint64_t deadline_ns) {
    /* A cancellation already pending acts here, with the mutex still held
     * and nothing queued. */
    pthread_testcancel();
    kp_ticket ticket;
    int rc = ops->begin(cond, mutex, &ticket);
    if (rc != 0)
        return rc;
    int give_up = 0;
    struct kp_cleanup cl = {ops, cond, mutex, &ticket};
    pthread_cleanup_push(kp_cond_cancelled, &cl);
    for (;;) {
        uint32_t value;
        const uint32_t *word = ops->sleep_word(cond, &ticket, &value);
        if (word == NULL)
            break;
        struct timespec rel, *relp = NULL;
        if (timed) {
            uint64_t now = ops->now_ns();
            if (now >= deadline_ns) {
                give_up = 1;
                break;
            }
            uint64_t left = deadline_ns - now;
            rel.tv_sec = (time_t)(left / KP_NS_PER_S);
            rel.tv_nsec = (long)(left % KP_NS_PER_S);
            relp = &rel;
        }
        kp_sleep(word, value, relp);
    }
    pthread_cleanup_pop(0);
    return ops->end(cond, mutex, &ticket, give_up);
}

/* ------------------------------------------------------------------------
 * A process-shared condvar (glibc's) with a klock mutex.
 *
 * glibc's wait unlocks and re-locks the mutex it is given with its own
 * internal calls, which would treat our klock mutex as one of glibc's. So
 * glibc gets a private glibc mutex G of this frame instead:
 *
 *   testcancel; init G; lock G; snapshot = signals(cond); release(klock mutex);
 *   cleanup_push(unlock G, re-lock the klock mutex);
 *   loop { real timed/clockwait(cond, G, min(caller's deadline, now + bound)) }
 *   cleanup_pop(0); unlock G; re-lock the klock mutex
 *
 * The gap: between our release of the klock mutex and glibc's registration
 * of this waiter (inside the real wait), a thread may take the klock mutex,
 * change the predicate and signal; glibc finds no waiter and the signal is
 * lost. Such a signaller holds the klock mutex, a private one, so it runs in
 * this process, under this interposer, whose pthread_cond_signal and
 * _broadcast count every signal of a process-shared condvar before passing
 * it on (`signals`: a counter per condvar address, shared by a few
 * addresses). Every wait here is therefore bounded: when a bounded wait
 * times out, if the count moved since the snapshot, a signal may have been
 * lost in a gap and the wait returns 0 (a spurious wake-up, which POSIX
 * allows: the caller re-checks its predicate); if it did not move, no signal
 * was lost and the wait goes on (a signal sent while we were registered
 * wakes us through glibc). Signals from other processes cannot hold our
 * mutex, so they carry no no-lost-wake-up promise to miss.
 *
 * The bound, KP_GLIBC_COND_BOUND_NS = 10 ms, is the longest a signal lost
 * in the gap can be late, and the interval at which an idle waiter wakes to
 * look at the count: one futex round trip (a few microseconds) per 10 ms,
 * under 0.1% of a CPU per waiting thread. The loss itself needs a signaller
 * to take the mutex within the microsecond or so between our release and
 * glibc's registration; 10 ms is about one scheduler time slice, a delay
 * such a program already sees whenever the signalled thread is preempted.
 * The caller's own deadline is honoured exactly: once it is within a bound,
 * the last wait uses the caller's abstime and clock (pthread_cond_timedwait
 * keeps the condvar's own clock). */

/* Must match `GlibcCondOps` in src/cond.rs. */
struct kp_glibc_cond_ops {
    /* Release the klock mutex whole: 0 (its recursion depth in *depth), or
     * EPERM/EINVAL with nothing changed. */
    int (*release)(void *mutex, uint32_t *depth);
    /* Re-lock the klock mutex and restore the depth. */
    void (*reacquire)(void *mutex, uint32_t depth);
    /* The in-process signal count of `cond` (see above). */
    uint32_t (*signals)(const void *cond);
    uint64_t (*now_ns)(void);
    /* The real glibc functions. */
    int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*mutex_destroy)(pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                          const struct timespec *);
};

#define KP_GLIBC_COND_BOUND_NS 10000000ull

/* Timeout kinds (as `T_*` in src/cond.rs). */
#define KP_T_NONE 0
#define KP_T_COND_CLOCK 1
#define KP_T_CLOCK 2

struct kp_glibc_cleanup {
    const struct kp_glibc_cond_ops *ops;
    pthread_mutex_t *g;
    void *mutex;
    uint32_t depth;
};

/* Cancelled inside the real wait: glibc re-locked G first. Release G and
 * re-lock the klock mutex before the program's cleanup handlers run. */
static void kp_glibc_cond_cancelled(void *arg) {
    struct kp_glibc_cleanup *c = arg;
    (void)c->ops->mutex_unlock(c->g);
    (void)c->ops->mutex_destroy(c->g);
    c->ops->reacquire(c->mutex, c->depth);
}

/* Wait on the process-shared `cond` with the klock `mutex`. `tkind`:
 * KP_T_NONE (no deadline), KP_T_COND_CLOCK (`abstime` on the condvar's
 * clock), KP_T_CLOCK (`abstime` on `clock`); `deadline_ns` is the same
 * deadline on now_ns()'s clock (CLOCK_MONOTONIC), both already validated.
 * Returns 0, ETIMEDOUT, or an errno value (release's, or the real wait's). */
__attribute__((visibility("hidden"))) int
klock_preload_cond_wait_glibc(const struct kp_glibc_cond_ops *ops, pthread_cond_t *cond,
                              void *mutex, int tkind, clockid_t clock,
                              const struct timespec *abstime, uint64_t deadline_ns) {
    pthread_testcancel();
    pthread_mutex_t g;
    int rc = ops->mutex_init(&g, NULL);
    if (rc != 0)
        return rc;
    (void)ops->mutex_lock(&g); /* a fresh normal mutex: cannot fail */
    /* Before the release: a signal sent by a thread that takes the mutex
     * after it is counted after this snapshot. */
    uint32_t seen = ops->signals(cond);
    struct kp_glibc_cleanup cl = {ops, &g, mutex, 0};
    rc = ops->release(mutex, &cl.depth);
    if (rc != 0) {
        (void)ops->mutex_unlock(&g);
        (void)ops->mutex_destroy(&g);
        return rc;
    }
    pthread_cleanup_push(kp_glibc_cond_cancelled, &cl);
    for (;;) {
        uint64_t now = ops->now_ns();
        if (tkind != KP_T_NONE && (now >= deadline_ns || deadline_ns - now <= KP_GLIBC_COND_BOUND_NS)) {
            /* The last stretch: the caller's own deadline, exactly. */
            rc = tkind == KP_T_COND_CLOCK ? ops->cond_timedwait(cond, &g, abstime)
                                          : ops->cond_clockwait(cond, &g, clock, abstime);
            break;
        }
        uint64_t until = now + KP_GLIBC_COND_BOUND_NS;
        struct timespec b = {.tv_sec = (time_t)(until / KP_NS_PER_S),
                             .tv_nsec = (long)(until % KP_NS_PER_S)};
        rc = ops->cond_clockwait(cond, &g, CLOCK_MONOTONIC, &b);
        if (rc != ETIMEDOUT)
            break;
        if (ops->signals(cond) != seen) {
            rc = 0; /* a signal may have been lost in a gap: wake up */
            break;
        }
    }
    pthread_cleanup_pop(0);
    (void)ops->mutex_unlock(&g);
    (void)ops->mutex_destroy(&g);
    ops->reacquire(mutex, cl.depth);
    return rc;
}
