/* Mutex types and their error codes: normal (static and attr), recursive
 * (attr and PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP), errorcheck (attr and
 * PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP), adaptive; trylock EBUSY;
 * destroy of a locked mutex (EBUSY on glibc 2.36 for every type); contended
 * counters per type; and thousands of zero-filled (== statically
 * initialised) mutexes in heap memory that is freed without destroy and
 * reused. */
#include "common.h"

/* ---- helpers that run an operation on another thread ------------------ */

enum op { OP_TRYLOCK, OP_UNLOCK, OP_LOCK_UNLOCK };
struct remote {
    pthread_mutex_t *m;
    enum op op;
    int rc;
};

static void *remote_fn(void *arg) {
    struct remote *r = arg;
    switch (r->op) {
    case OP_TRYLOCK:
        r->rc = pthread_mutex_trylock(r->m);
        if (r->rc == 0)
            OK(pthread_mutex_unlock(r->m));
        break;
    case OP_UNLOCK:
        r->rc = pthread_mutex_unlock(r->m);
        break;
    case OP_LOCK_UNLOCK:
        r->rc = pthread_mutex_lock(r->m);
        if (r->rc == 0)
            r->rc = pthread_mutex_unlock(r->m);
        break;
    }
    return NULL;
}

/* Run op on a fresh thread and return its result code. */
static int on_other_thread(pthread_mutex_t *m, enum op op) {
    struct remote r = {m, op, -1};
    join(spawn(remote_fn, &r));
    return r.rc;
}

/* ---- normal ------------------------------------------------------------ */

static pthread_mutex_t static_normal = PTHREAD_MUTEX_INITIALIZER;

static void check_normal(pthread_mutex_t *m) {
    OK(pthread_mutex_lock(m));
    EXPECT_RC(pthread_mutex_trylock(m), EBUSY); /* owner: EBUSY, no deadlock */
    EXPECT_RC(on_other_thread(m, OP_TRYLOCK), EBUSY);
    /* glibc 2.36 refuses to destroy any locked mutex (its __nusers != 0). */
    EXPECT_RC(pthread_mutex_destroy(m), EBUSY);
    /* ... and the failed destroy left it intact and still locked. */
    EXPECT_RC(on_other_thread(m, OP_TRYLOCK), EBUSY);
    OK(pthread_mutex_unlock(m));
    OK(on_other_thread(m, OP_TRYLOCK));
    OK(pthread_mutex_trylock(m));
    OK(pthread_mutex_unlock(m));
}

static void test_normal(void) {
    phase("normal (static)");
    check_normal(&static_normal);
    OK(pthread_mutex_destroy(&static_normal));
    OK(pthread_mutex_init(&static_normal, NULL)); /* re-init after destroy */
    check_normal(&static_normal);

    phase("normal (attr)");
    pthread_mutexattr_t a;
    int type = -1;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL));
    OK(pthread_mutexattr_gettype(&a, &type));
    CHECK(type == PTHREAD_MUTEX_NORMAL, "type %d", type);
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, &a));
    OK(pthread_mutexattr_destroy(&a));
    check_normal(&m);
    OK(pthread_mutex_destroy(&m));
}

/* ---- recursive -------------------------------------------------------- */

static pthread_mutex_t static_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static void check_recursive(pthread_mutex_t *m) {
    OK(pthread_mutex_lock(m));
    OK(pthread_mutex_lock(m));
    OK(pthread_mutex_trylock(m)); /* owner trylock nests too */
    OK(pthread_mutex_lock(m));    /* depth 4 */
    EXPECT_RC(on_other_thread(m, OP_TRYLOCK), EBUSY);
    EXPECT_RC(on_other_thread(m, OP_UNLOCK), EPERM);
    EXPECT_RC(pthread_mutex_destroy(m), EBUSY);
    for (int i = 0; i < 3; i++) {
        OK(pthread_mutex_unlock(m));
        /* Still held at depth 3, 2, 1. */
        EXPECT_RC(on_other_thread(m, OP_TRYLOCK), EBUSY);
    }
    OK(pthread_mutex_unlock(m));
    EXPECT_RC(pthread_mutex_unlock(m), EPERM); /* not locked */
    OK(on_other_thread(m, OP_LOCK_UNLOCK));
    EXPECT_RC(pthread_mutex_unlock(m), EPERM);
}

static void test_recursive(void) {
    phase("recursive (static initializer)");
    check_recursive(&static_recursive);

    phase("recursive (attr)");
    pthread_mutexattr_t a;
    int type = -1;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE));
    OK(pthread_mutexattr_gettype(&a, &type));
    CHECK(type == PTHREAD_MUTEX_RECURSIVE, "type %d", type);
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, &a));
    OK(pthread_mutexattr_destroy(&a));
    check_recursive(&m);
    OK(pthread_mutex_destroy(&m));
}

/* ---- errorcheck -------------------------------------------------------- */

static pthread_mutex_t static_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

static void check_errorcheck(pthread_mutex_t *m) {
    EXPECT_RC(pthread_mutex_unlock(m), EPERM); /* unlocked */
    OK(pthread_mutex_lock(m));
    EXPECT_RC(pthread_mutex_lock(m), EDEADLK);
    EXPECT_RC(pthread_mutex_trylock(m), EBUSY);
    EXPECT_RC(on_other_thread(m, OP_UNLOCK), EPERM); /* non-owner */
    EXPECT_RC(on_other_thread(m, OP_TRYLOCK), EBUSY); /* still held */
    EXPECT_RC(pthread_mutex_destroy(m), EBUSY);
    OK(pthread_mutex_unlock(m));
    EXPECT_RC(pthread_mutex_unlock(m), EPERM);
    OK(on_other_thread(m, OP_LOCK_UNLOCK));
    OK(pthread_mutex_trylock(m));
    EXPECT_RC(pthread_mutex_lock(m), EDEADLK);
    OK(pthread_mutex_unlock(m));
}

static void test_errorcheck(void) {
    phase("errorcheck (static initializer)");
    check_errorcheck(&static_errorcheck);

    phase("errorcheck (attr)");
    pthread_mutexattr_t a;
    int type = -1;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_gettype(&a, &type));
    CHECK(type == PTHREAD_MUTEX_ERRORCHECK, "type %d", type);
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, &a));
    OK(pthread_mutexattr_destroy(&a));
    check_errorcheck(&m);
    OK(pthread_mutex_destroy(&m));
}

/* ---- contended counters, one per type ---------------------------------- */

#define CT_THREADS 4
#define CT_ITERS 200000
struct counter {
    pthread_mutex_t *m;
    int depth; /* lock this many times per iteration (recursive) */
    int use_trylock;
    volatile long value;
    volatile int inside;
};

static void *counter_fn(void *arg) {
    struct counter *c = arg;
    for (int i = 0; i < CT_ITERS; i++) {
        if (c->use_trylock && (i & 1)) {
            int rc;
            while ((rc = pthread_mutex_trylock(c->m)) == EBUSY)
                sched_yield();
            OK(rc);
        } else {
            OK(pthread_mutex_lock(c->m));
        }
        for (int d = 1; d < c->depth; d++)
            OK(pthread_mutex_lock(c->m));
        CHECK(c->inside == 0, "two threads inside the critical section");
        c->inside = 1;
        c->value = c->value + 1;
        c->inside = 0;
        for (int d = 0; d < c->depth; d++)
            OK(pthread_mutex_unlock(c->m));
    }
    return NULL;
}

static void run_counter(const char *name, pthread_mutex_t *m, int depth,
                        int use_trylock) {
    phase(name);
    struct counter c = {m, depth, use_trylock, 0, 0};
    pthread_t t[CT_THREADS];
    for (int i = 0; i < CT_THREADS; i++)
        t[i] = spawn(counter_fn, &c);
    for (int i = 0; i < CT_THREADS; i++)
        join(t[i]);
    CHECK(c.value == (long)CT_THREADS * CT_ITERS, "%s: counter %ld, expected %ld",
          name, c.value, (long)CT_THREADS * CT_ITERS);
}

static pthread_mutex_t static_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

static void test_counters(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    run_counter("counter: normal", &m, 1, 0);
    run_counter("counter: normal + trylock", &m, 1, 1);
    run_counter("counter: recursive, depth 3", &static_recursive, 3, 0);
    run_counter("counter: recursive + trylock", &static_recursive, 2, 1);
    run_counter("counter: errorcheck", &static_errorcheck, 1, 1);
    run_counter("counter: adaptive (static)", &static_adaptive, 1, 1);
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP));
    pthread_mutex_t am;
    OK(pthread_mutex_init(&am, &a));
    OK(pthread_mutexattr_destroy(&a));
    run_counter("counter: adaptive (attr)", &am, 1, 0);
    OK(pthread_mutex_destroy(&am));
}

/* ---- many zero-filled mutexes, freed without destroy, memory reused ---- */

#define MANY 4096
#define MANY_THREADS 4
#define MANY_OPS 40000
struct slot {
    pthread_mutex_t m;
    long count;
};
static struct slot *slots;

static void *many_fn(void *arg) {
    uint64_t seed = 0x9E3779B97F4A7C15ULL * (uint64_t)((intptr_t)arg + 1);
    for (int i = 0; i < MANY_OPS; i++) {
        /* Skewed choice: half the operations hit the first 4 slots. */
        uint64_t r = rng_next(&seed);
        size_t k = (r & 1) ? (size_t)((r >> 1) % 4) : (size_t)((r >> 1) % MANY);
        OK(pthread_mutex_lock(&slots[k].m));
        slots[k].count++;
        OK(pthread_mutex_unlock(&slots[k].m));
    }
    return NULL;
}

static void test_many(void) {
    for (int round = 0; round < 3; round++) {
        phase("many zero-filled mutexes");
        /* All-zero bytes are PTHREAD_MUTEX_INITIALIZER; round 0 uses calloc,
         * later rounds reuse freed memory that is zeroed by hand (previous
         * contents: old mutexes that were never destroyed). */
        if (round == 0) {
            slots = calloc(MANY, sizeof *slots);
            CHECK(slots != NULL, "calloc");
        } else {
            slots = malloc(MANY * sizeof *slots);
            CHECK(slots != NULL, "malloc");
            memset(slots, 0, MANY * sizeof *slots);
        }
        pthread_t t[MANY_THREADS];
        for (int i = 0; i < MANY_THREADS; i++)
            t[i] = spawn(many_fn, (void *)(intptr_t)(i + round * 16));
        for (int i = 0; i < MANY_THREADS; i++)
            join(t[i]);
        long total = 0;
        for (size_t k = 0; k < MANY; k++) {
            OK(pthread_mutex_trylock(&slots[k].m)); /* all released */
            OK(pthread_mutex_unlock(&slots[k].m));
            total += slots[k].count;
        }
        CHECK(total == (long)MANY_THREADS * MANY_OPS, "total %ld", total);
        /* Deliberately no pthread_mutex_destroy. */
        free(slots);
        slots = NULL;
    }
}

int main(void) {
    watchdog(30);
    test_normal();
    test_recursive();
    test_errorcheck();
    test_counters();
    test_many();
    pass("mutex_types");
    return 0;
}
