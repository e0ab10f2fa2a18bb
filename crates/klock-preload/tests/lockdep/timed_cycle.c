/* MUST REPORT (one report): timed locks are blocking acquisitions.
 *
 * Thread 1 takes A and then B with pthread_mutex_timedlock (a deadline far
 * enough away never to expire): edge A -> B. Thread 2 locks B, then A with
 * pthread_mutex_lock: B -> A closes the cycle. */
#include "ld.h"

static pthread_mutex_t timed_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t timed_b = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *timedlock_a_then_b(void *arg) {
    (void)arg;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20000);
    OK(pthread_mutex_timedlock(&timed_a, &dl));
    OK(pthread_mutex_timedlock(&timed_b, &dl));
    OK(pthread_mutex_unlock(&timed_b));
    OK(pthread_mutex_unlock(&timed_a));
    return NULL;
}

__attribute__((noinline)) static void *lock_b_then_a(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&timed_b));
    OK(pthread_mutex_lock(&timed_a));
    OK(pthread_mutex_unlock(&timed_a));
    OK(pthread_mutex_unlock(&timed_b));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("timedlock A, timedlock B");
    run_thread(timedlock_a_then_b, NULL);
    ld_phase("lock B, lock A (closes the cycle)");
    run_thread(lock_b_then_a, NULL);
    ld_phase("done");
    pass("timed_cycle: A -> B by timedlock, B -> A by lock");
    return 0;
}
