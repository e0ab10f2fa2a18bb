/* MUST NOT REPORT: a thread that exits holding locks leaves no held entries
 * to the threads that come after it (which may reuse its slot).
 *
 * Phase 1: a thread locks a robust mutex and a normal mutex, and exits
 *          holding both. Main recovers the robust one (EOWNERDEAD,
 *          pthread_mutex_consistent, unlock); the normal one stays locked.
 * Phase 2: four new threads, one after another, each take lock_x alone.
 * Phase 3: a thread takes lock_x, then the robust mutex (blocking), then
 *          tries the normal one with pthread_mutex_timedlock (a blocking
 *          acquisition that times out: it stays locked by the dead thread).
 * Were the dead thread's holds inherited by a phase-2 thread, its lock_x
 * would have recorded robust -> lock_x and normal -> lock_x, and phase 3
 * would close false cycles. */
#include "ld.h"

static pthread_mutex_t dead_robust;
static pthread_mutex_t dead_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_x = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *lock_both_and_exit(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&dead_robust));
    OK(pthread_mutex_lock(&dead_normal));
    return NULL; /* exits holding both */
}

__attribute__((noinline)) static void *take_x(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&lock_x));
    OK(pthread_mutex_unlock(&lock_x));
    return NULL;
}

__attribute__((noinline)) static void *x_then_dead_ones(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&lock_x));
    OK(pthread_mutex_lock(&dead_robust));
    OK(pthread_mutex_unlock(&dead_robust));
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    EXPECT_RC(pthread_mutex_timedlock(&dead_normal, &dl), ETIMEDOUT);
    OK(pthread_mutex_unlock(&lock_x));
    return NULL;
}

int main(void) {
    watchdog(30);
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST));
    OK(pthread_mutex_init(&dead_robust, &ma));
    OK(pthread_mutexattr_destroy(&ma));

    ld_phase("a thread locks a robust and a normal mutex and exits");
    run_thread(lock_both_and_exit, NULL);
    EXPECT_RC(pthread_mutex_lock(&dead_robust), EOWNERDEAD);
    OK(pthread_mutex_consistent(&dead_robust));
    OK(pthread_mutex_unlock(&dead_robust));

    ld_phase("new threads take lock_x alone");
    for (int i = 0; i < 4; i++)
        run_thread(take_x, NULL);

    ld_phase("a thread: lock_x, robust, timedlock normal (times out)");
    run_thread(x_then_dead_ones, NULL);

    ld_phase("done");
    pass("thread_exit_holding: nothing inherited from a thread that exited "
         "holding locks");
    return 0;
}
