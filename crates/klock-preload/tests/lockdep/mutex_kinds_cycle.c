/* MUST REPORT (one report per kind, 5 in all): the AB-BA inversion on each
 * mutex kind other than the default (ab_ba.c): PTHREAD_MUTEX_ERRORCHECK,
 * PTHREAD_MUTEX_RECURSIVE (no relock here: two different locks),
 * PTHREAD_MUTEX_ADAPTIVE_NP, and the kinds the interposer leaves to glibc,
 * robust (PTHREAD_MUTEX_ROBUST) and priority-inheriting
 * (PTHREAD_PRIO_INHERIT). Each kind has its own pair, so each closes its own
 * cycle, in its own "... b then a (closes the cycle)" phase. */
#include "ld.h"

struct kind {
    const char *name;
    int type;     /* pthread_mutexattr_settype */
    int robust;   /* pthread_mutexattr_setrobust */
    int protocol; /* pthread_mutexattr_setprotocol */
    pthread_mutex_t a, b;
};

static struct kind kinds[] = {
    {"errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE,
     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {"recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE,
     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {"adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE,
     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {"robust", PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ROBUST, PTHREAD_PRIO_NONE,
     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {"pi", PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_INHERIT,
     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

__attribute__((noinline)) static void *kind_a_then_b(void *arg) {
    struct kind *k = arg;
    OK(pthread_mutex_lock(&k->a));
    OK(pthread_mutex_lock(&k->b));
    OK(pthread_mutex_unlock(&k->b));
    OK(pthread_mutex_unlock(&k->a));
    return NULL;
}

__attribute__((noinline)) static void *kind_b_then_a(void *arg) {
    struct kind *k = arg;
    OK(pthread_mutex_lock(&k->b));
    OK(pthread_mutex_lock(&k->a));
    OK(pthread_mutex_unlock(&k->a));
    OK(pthread_mutex_unlock(&k->b));
    return NULL;
}

int main(void) {
    watchdog(30);
    for (int i = 0; i < NKINDS; i++) {
        struct kind *k = &kinds[i];
        pthread_mutexattr_t ma;
        OK(pthread_mutexattr_init(&ma));
        OK(pthread_mutexattr_settype(&ma, k->type));
        OK(pthread_mutexattr_setrobust(&ma, k->robust));
        OK(pthread_mutexattr_setprotocol(&ma, k->protocol));
        OK(pthread_mutex_init(&k->a, &ma));
        OK(pthread_mutex_init(&k->b, &ma));
        OK(pthread_mutexattr_destroy(&ma));

        char what[96];
        snprintf(what, sizeof what, "%s: a then b", k->name);
        ld_phase(what);
        run_thread(kind_a_then_b, k);
        snprintf(what, sizeof what, "%s: b then a (closes the cycle)", k->name);
        ld_phase(what);
        run_thread(kind_b_then_a, k);

        OK(pthread_mutex_destroy(&k->a));
        OK(pthread_mutex_destroy(&k->b));
    }
    ld_phase("done");
    pass("mutex_kinds_cycle: AB-BA on errorcheck, recursive, adaptive, robust "
         "and PI mutexes");
    return 0;
}
