/* MUST REPORT (one report, a cycle of 3 locks): three threads, one after
 * another, lock A -> B, then B -> C, then C -> A. No two-lock inversion
 * exists; only the third order closes the cycle A -> B -> C -> A. */
#include "ld.h"

static pthread_mutex_t cyc_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cyc_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cyc_c = PTHREAD_MUTEX_INITIALIZER;

struct pair {
    pthread_mutex_t *outer, *inner;
};

__attribute__((noinline)) static void *take_pair(void *arg) {
    struct pair *p = arg;
    OK(pthread_mutex_lock(p->outer));
    OK(pthread_mutex_lock(p->inner));
    OK(pthread_mutex_unlock(p->inner));
    OK(pthread_mutex_unlock(p->outer));
    return NULL;
}

int main(void) {
    watchdog(30);
    struct pair ab = {&cyc_a, &cyc_b}, bc = {&cyc_b, &cyc_c}, ca = {&cyc_c, &cyc_a};
    ld_phase("a then b");
    run_thread(take_pair, &ab);
    ld_phase("b then c");
    run_thread(take_pair, &bc);
    ld_phase("c then a (closes the cycle)");
    run_thread(take_pair, &ca);
    ld_phase("done");
    pass("three_cycle: A->B, B->C, C->A ran one after another");
    return 0;
}
