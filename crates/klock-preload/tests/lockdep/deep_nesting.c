/* MUST NOT REPORT: deeper nesting than the validator's held stack (48), and
 * deep recursion, leave no stale held entries behind.
 *
 * Phase 1: main nests 64 mutexes in index order and releases them in
 *          reverse; a thread does the same releasing them in index order.
 * Phase 2: main relocks a recursive mutex 100 times while holding outer,
 *          then takes inner; releases everything.
 * Phase 3: main (holding nothing now) locks probe; then a thread locks probe
 *          and then deep[60], deep[0], inner and the recursive mutex (each
 *          alone under probe). Were any of those still counted as held by
 *          main, main's probe would have recorded an edge into probe, and
 *          the thread's order would close a false cycle. */
#include "ld.h"

#define DEEP 64
#define RELOCKS 100

static pthread_mutex_t deep[DEEP];
static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t probe = PTHREAD_MUTEX_INITIALIZER;

static void nest_all(int release_in_order) {
    for (int i = 0; i < DEEP; i++)
        OK(pthread_mutex_lock(&deep[i]));
    if (release_in_order)
        for (int i = 0; i < DEEP; i++)
            OK(pthread_mutex_unlock(&deep[i]));
    else
        for (int i = DEEP - 1; i >= 0; i--)
            OK(pthread_mutex_unlock(&deep[i]));
}

__attribute__((noinline)) static void *nest_in_order_release(void *arg) {
    (void)arg;
    nest_all(1);
    return NULL;
}

__attribute__((noinline)) static void *probe_then_each(void *arg) {
    (void)arg;
    pthread_mutex_t *after[] = {&deep[60], &deep[0], &inner, &rec, &outer};
    for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
        OK(pthread_mutex_lock(&probe));
        OK(pthread_mutex_lock(after[i]));
        OK(pthread_mutex_unlock(after[i]));
        OK(pthread_mutex_unlock(&probe));
    }
    return NULL;
}

int main(void) {
    watchdog(30);
    for (int i = 0; i < DEEP; i++)
        OK(pthread_mutex_init(&deep[i], NULL));
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
    OK(pthread_mutex_init(&rec, &ma));
    OK(pthread_mutexattr_destroy(&ma));

    ld_phase("main nests 64 mutexes, releases in reverse");
    nest_all(0);
    ld_phase("a thread nests 64 mutexes, releases in order");
    run_thread(nest_in_order_release, NULL);

    ld_phase("main: outer, recursive mutex 100 times, inner");
    OK(pthread_mutex_lock(&outer));
    for (int i = 0; i < RELOCKS; i++)
        OK(pthread_mutex_lock(&rec));
    OK(pthread_mutex_lock(&inner));
    OK(pthread_mutex_unlock(&inner));
    for (int i = 0; i < RELOCKS; i++)
        OK(pthread_mutex_unlock(&rec));
    OK(pthread_mutex_unlock(&outer));

    ld_phase("main locks probe, holding nothing");
    OK(pthread_mutex_lock(&probe));
    OK(pthread_mutex_unlock(&probe));
    ld_phase("a thread: probe, then each of deep[60], deep[0], inner, rec, outer");
    run_thread(probe_then_each, NULL);

    ld_phase("done");
    pass("deep_nesting: 64-deep nesting and 100 relocks leave nothing held");
    return 0;
}
