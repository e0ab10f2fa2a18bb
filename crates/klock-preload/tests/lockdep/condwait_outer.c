/* MUST NOT REPORT: a condvar wait inside an outer lock, in the consistent
 * order O -> M.
 *
 * Phase 1: O then M.
 * Phase 2: the waiter locks O, then M, and waits on (cv, M): the retake of M
 *          while holding O is O -> M again. The main thread signals holding
 *          only M (never O: O is held by the waiter).
 * Phase 3: the same with pthread_cond_timedwait timing out (the retake after
 *          a timeout), and pthread_cond_clockwait on CLOCK_MONOTONIC.
 * Phase 4: O then M again. */
#include "ld.h"

static pthread_mutex_t out_o = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t out_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t out_cv = PTHREAD_COND_INITIALIZER;
static int waiting, go; /* under out_m */

__attribute__((noinline)) static void *o_then_m(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&out_o));
    OK(pthread_mutex_lock(&out_m));
    OK(pthread_mutex_unlock(&out_m));
    OK(pthread_mutex_unlock(&out_o));
    return NULL;
}

__attribute__((noinline)) static void *wait_inside_o(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&out_o));
    OK(pthread_mutex_lock(&out_m));
    waiting = 1;
    while (!go)
        OK(pthread_cond_wait(&out_cv, &out_m));
    OK(pthread_mutex_unlock(&out_m));
    OK(pthread_mutex_unlock(&out_o));
    return NULL;
}

__attribute__((noinline)) static void *timed_waits_inside_o(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&out_o));
    OK(pthread_mutex_lock(&out_m));
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    int rc;
    while ((rc = pthread_cond_timedwait(&out_cv, &out_m, &dl)) == 0) {
    }
    EXPECT_RC(rc, ETIMEDOUT);
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    while ((rc = pthread_cond_clockwait(&out_cv, &out_m, CLOCK_MONOTONIC, &dl)) == 0) {
    }
    EXPECT_RC(rc, ETIMEDOUT);
    OK(pthread_mutex_unlock(&out_m));
    OK(pthread_mutex_unlock(&out_o));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("O then M");
    run_thread(o_then_m, NULL);

    ld_phase("O, M, wait on (cv, M) holding O, signalled");
    pthread_t t = spawn(wait_inside_o, NULL);
    for (;;) {
        OK(pthread_mutex_lock(&out_m));
        int w = waiting;
        if (w) {
            go = 1;
            OK(pthread_cond_signal(&out_cv));
        }
        OK(pthread_mutex_unlock(&out_m));
        if (w)
            break;
        sleep_ms(1);
    }
    join(t);

    ld_phase("O, M, timed waits on (cv, M) holding O, timing out");
    run_thread(timed_waits_inside_o, NULL);

    ld_phase("O then M again");
    run_thread(o_then_m, NULL);
    ld_phase("done");
    pass("condwait_outer: O -> M, waits on M inside O");
    return 0;
}
