/* MUST REPORT (one report): the classic AB-BA inversion.
 *
 * Thread 1 (take_a_then_b) locks lock_a then lock_b; it is joined; thread 2
 * (take_b_then_a) locks lock_b then lock_a. The second order closes the
 * cycle lock_a -> lock_b -> lock_a. The mutexes are file-scope statics, so
 * the report can name them (lock_a, lock_b) from .symtab, and the thread
 * functions have distinctive names for the report's symbolized frames.
 *
 * stdout: the lock addresses and the two threads' ids, which the driver
 * looks for in the report. Also used for KLOCK_LOCKDEP unset (no report),
 * KLOCK_LOCKDEP=abort (SIGABRT after the report) and KLOCK_LOCKDEP_FILE. */
#include "ld.h"

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *take_a_then_b(void *arg) {
    (void)arg;
    printf("tid take_a_then_b=%d\n", (int)gettid());
    fflush(stdout);
    OK(pthread_mutex_lock(&lock_a));
    OK(pthread_mutex_lock(&lock_b));
    OK(pthread_mutex_unlock(&lock_b));
    OK(pthread_mutex_unlock(&lock_a));
    return NULL;
}

__attribute__((noinline)) static void *take_b_then_a(void *arg) {
    (void)arg;
    printf("tid take_b_then_a=%d\n", (int)gettid());
    fflush(stdout);
    OK(pthread_mutex_lock(&lock_b));
    OK(pthread_mutex_lock(&lock_a));
    OK(pthread_mutex_unlock(&lock_a));
    OK(pthread_mutex_unlock(&lock_b));
    return NULL;
}

int main(void) {
    watchdog(30);
    printf("lock_a=%p\nlock_b=%p\n", (void *)&lock_a, (void *)&lock_b);
    fflush(stdout);
    ld_phase("a then b");
    run_thread(take_a_then_b, NULL);
    ld_phase("b then a");
    run_thread(take_b_then_a, NULL);
    ld_phase("done");
    pass("ab_ba: both orders ran, one after the other");
    return 0;
}
