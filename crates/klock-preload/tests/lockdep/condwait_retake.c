/* MUST REPORT (one report): a condvar wait releases its mutex and retakes
 * it, and the retake is a blocking acquisition validated against what the
 * thread holds then.
 *
 * Phase 1: a thread locks M, then O (edge M -> O).
 * Phase 2: the waiter locks M, then O (the same order, no new edge), and
 *          waits on (cv, M): the wait releases M while O stays held, and the
 *          wake-up retakes M while holding O: edge O -> M, which closes the
 *          cycle. The waiter's own lock calls are all in the M -> O order:
 *          only the retake can report. (A real deadlock: while the waiter
 *          sleeps, a thread taking M then O gets M and blocks on O; the
 *          waiter, woken, blocks on M.)
 * The main thread signals, holding only M, once the waiter is in the wait
 * (it announced it under M, and the wait released M). */
#include "ld.h"

static pthread_mutex_t cw_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cw_o = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cw_cv = PTHREAD_COND_INITIALIZER;
static int waiting, go; /* under cw_m */

__attribute__((noinline)) static void *m_then_o(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&cw_m));
    OK(pthread_mutex_lock(&cw_o));
    OK(pthread_mutex_unlock(&cw_o));
    OK(pthread_mutex_unlock(&cw_m));
    return NULL;
}

__attribute__((noinline)) static void *wait_holding_o(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&cw_m));
    OK(pthread_mutex_lock(&cw_o));
    waiting = 1;
    while (!go)
        OK(pthread_cond_wait(&cw_cv, &cw_m)); /* retakes M holding O */
    OK(pthread_mutex_unlock(&cw_m));
    OK(pthread_mutex_unlock(&cw_o));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("M then O");
    run_thread(m_then_o, NULL);

    ld_phase("M, O, wait on (cv, M) holding O; the retake of M closes the cycle");
    pthread_t t = spawn(wait_holding_o, NULL);
    for (;;) {
        OK(pthread_mutex_lock(&cw_m));
        int w = waiting;
        if (w) {
            go = 1;
            OK(pthread_cond_signal(&cw_cv));
        }
        OK(pthread_mutex_unlock(&cw_m));
        if (w)
            break;
        sleep_ms(1);
    }
    join(t);
    ld_phase("done");
    pass("condwait_retake: M -> O, then a wait on M holding O");
    return 0;
}
