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
 * 8-aligned; klock-c's core asserts both). */
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
