/* C11 <threads.h>: mtx_init with mtx_plain, mtx_recursive, mtx_timed and
 * mtx_timed | mtx_recursive; mtx_lock / trylock (thrd_busy) / timedlock
 * (thrd_timedout, TIME_UTC deadlines) / unlock; cnd_wait, cnd_timedwait,
 * cnd_signal, cnd_broadcast; counters and a bounded buffer with thrd_create
 * threads.  glibc's mtx_* and cnd_* are separate entry points, so an
 * interposer must replace them as well. */
#include "common.h"
#include <threads.h>

#define C11_OK(expr)                                                          \
    do {                                                                      \
        int r_ = (expr);                                                      \
        if (r_ != thrd_success)                                               \
            FAIL("%s returned %d, expected thrd_success", #expr, r_);         \
    } while (0)
#define C11_EXPECT(expr, want)                                                \
    do {                                                                      \
        int r_ = (expr);                                                      \
        if (r_ != (want))                                                     \
            FAIL("%s returned %d, expected %s (%d)", #expr, r_, #want,        \
                 (int)(want));                                                \
    } while (0)

static struct timespec utc_deadline_ms(long ms) {
    struct timespec ts;
    CHECK(timespec_get(&ts, TIME_UTC) == TIME_UTC, "timespec_get");
    return ts_add_ms(ts, ms);
}

/* ---- run something on another C11 thread ------------------------------ */

struct remote {
    mtx_t *m;
    int timed;
    int rc;
};

static int remote_try(void *arg) {
    struct remote *r = arg;
    if (r->timed) {
        struct timespec dl = utc_deadline_ms(50);
        r->rc = mtx_timedlock(r->m, &dl);
        if (r->rc == thrd_timedout)
            CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "mtx_timedlock");
    } else {
        r->rc = mtx_trylock(r->m);
    }
    if (r->rc == thrd_success)
        C11_OK(mtx_unlock(r->m));
    return 7;
}

static int try_other(mtx_t *m, int timed) {
    struct remote r = {m, timed, -1};
    thrd_t t;
    C11_OK(thrd_create(&t, remote_try, &r));
    int res = 0;
    C11_OK(thrd_join(t, &res));
    CHECK(res == 7, "thread result %d", res);
    return r.rc;
}

/* ---- mutex kinds --------------------------------------------------------- */

static void test_kinds(void) {
    mtx_t m;

    phase("mtx_plain");
    C11_OK(mtx_init(&m, mtx_plain));
    C11_OK(mtx_lock(&m));
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    C11_OK(try_other(&m, 0));
    C11_OK(mtx_trylock(&m));
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    mtx_destroy(&m);

    phase("mtx_recursive");
    C11_OK(mtx_init(&m, mtx_plain | mtx_recursive));
    C11_OK(mtx_lock(&m));
    C11_OK(mtx_lock(&m));
    C11_OK(mtx_trylock(&m));
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    C11_OK(mtx_unlock(&m));
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    C11_OK(try_other(&m, 0));
    mtx_destroy(&m);

    phase("mtx_timed");
    C11_OK(mtx_init(&m, mtx_timed));
    struct timespec dl = utc_deadline_ms(30000);
    C11_OK(mtx_timedlock(&m, &dl));
    C11_EXPECT(try_other(&m, 1), thrd_timedout);
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    C11_OK(try_other(&m, 1));
    mtx_destroy(&m);

    phase("mtx_timed | mtx_recursive");
    C11_OK(mtx_init(&m, mtx_timed | mtx_recursive));
    dl = utc_deadline_ms(30000);
    C11_OK(mtx_timedlock(&m, &dl));
    C11_OK(mtx_timedlock(&m, &dl));
    C11_OK(mtx_lock(&m));
    C11_EXPECT(try_other(&m, 1), thrd_timedout);
    C11_OK(mtx_unlock(&m));
    C11_OK(mtx_unlock(&m));
    C11_EXPECT(try_other(&m, 0), thrd_busy);
    C11_OK(mtx_unlock(&m));
    C11_OK(try_other(&m, 1));
    mtx_destroy(&m);
}

/* ---- counters ------------------------------------------------------------ */

#define CT_THREADS 4
#define CT_ITERS 100000
struct counter {
    mtx_t m;
    int recursive, timed;
    long value;
};

static int count_fn(void *arg) {
    struct counter *c = arg;
    for (int i = 0; i < CT_ITERS; i++) {
        if (c->timed && (i & 1)) {
            struct timespec dl = utc_deadline_ms(30000);
            C11_OK(mtx_timedlock(&c->m, &dl));
        } else if (i % 3 == 0) {
            int rc;
            while ((rc = mtx_trylock(&c->m)) == thrd_busy)
                thrd_yield();
            C11_OK(rc);
        } else {
            C11_OK(mtx_lock(&c->m));
        }
        if (c->recursive)
            C11_OK(mtx_lock(&c->m));
        c->value++;
        if (c->recursive)
            C11_OK(mtx_unlock(&c->m));
        C11_OK(mtx_unlock(&c->m));
    }
    return 0;
}

static void run_counter(const char *name, int type) {
    phase(name);
    struct counter c = {.recursive = !!(type & mtx_recursive),
                        .timed = !!(type & mtx_timed)};
    C11_OK(mtx_init(&c.m, type));
    thrd_t t[CT_THREADS];
    for (int i = 0; i < CT_THREADS; i++)
        C11_OK(thrd_create(&t[i], count_fn, &c));
    for (int i = 0; i < CT_THREADS; i++)
        C11_OK(thrd_join(t[i], NULL));
    CHECK(c.value == (long)CT_THREADS * CT_ITERS, "%s: counter %ld", name,
          c.value);
    mtx_destroy(&c.m);
}

/* ---- condition variables ------------------------------------------------- */

#define Q_CAP 4
#define Q_ITEMS 20000
#define Q_PRODUCERS 2
#define Q_CONSUMERS 2
static mtx_t q_m;
static cnd_t q_not_full, q_not_empty;
static int q_buf[Q_CAP], q_head, q_count, q_producers_left;
static long long q_sum;
static long q_taken;

static int q_producer(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < Q_ITEMS; i++) {
        C11_OK(mtx_lock(&q_m));
        while (q_count == Q_CAP)
            C11_OK(cnd_wait(&q_not_full, &q_m));
        q_buf[(q_head + q_count++) % Q_CAP] = id * Q_ITEMS + i;
        C11_OK(cnd_signal(&q_not_empty));
        C11_OK(mtx_unlock(&q_m));
    }
    C11_OK(mtx_lock(&q_m));
    if (--q_producers_left == 0)
        C11_OK(cnd_broadcast(&q_not_empty));
    C11_OK(mtx_unlock(&q_m));
    return 0;
}

static int q_consumer(void *arg) {
    int timed = (int)(intptr_t)arg;
    for (;;) {
        C11_OK(mtx_lock(&q_m));
        while (q_count == 0 && q_producers_left > 0) {
            if (timed) {
                struct timespec dl = utc_deadline_ms(5);
                int rc = cnd_timedwait(&q_not_empty, &q_m, &dl);
                CHECK(rc == thrd_success || rc == thrd_timedout,
                      "cnd_timedwait returned %d", rc);
            } else {
                C11_OK(cnd_wait(&q_not_empty, &q_m));
            }
        }
        if (q_count == 0) {
            C11_OK(mtx_unlock(&q_m));
            return 0;
        }
        int v = q_buf[q_head];
        q_head = (q_head + 1) % Q_CAP;
        q_count--;
        q_sum += v;
        q_taken++;
        C11_OK(cnd_signal(&q_not_full));
        C11_OK(mtx_unlock(&q_m));
    }
}

static void test_queue(void) {
    phase("cnd_wait / cnd_timedwait bounded buffer");
    C11_OK(mtx_init(&q_m, mtx_plain));
    C11_OK(cnd_init(&q_not_full));
    C11_OK(cnd_init(&q_not_empty));
    q_producers_left = Q_PRODUCERS;
    thrd_t p[Q_PRODUCERS], c[Q_CONSUMERS];
    for (int i = 0; i < Q_CONSUMERS; i++)
        C11_OK(thrd_create(&c[i], q_consumer, (void *)(intptr_t)(i & 1)));
    for (int i = 0; i < Q_PRODUCERS; i++)
        C11_OK(thrd_create(&p[i], q_producer, (void *)(intptr_t)i));
    for (int i = 0; i < Q_PRODUCERS; i++)
        C11_OK(thrd_join(p[i], NULL));
    for (int i = 0; i < Q_CONSUMERS; i++)
        C11_OK(thrd_join(c[i], NULL));
    long long n = (long long)Q_PRODUCERS * Q_ITEMS;
    CHECK(q_taken == n, "taken %ld", q_taken);
    CHECK(q_sum == n * (n - 1) / 2, "sum %lld, expected %lld", q_sum,
          n * (n - 1) / 2);
    cnd_destroy(&q_not_full);
    cnd_destroy(&q_not_empty);
    mtx_destroy(&q_m);
}

#define BC_WAITERS 8
static mtx_t bc_m;
static cnd_t bc_c;
static int bc_waiting, bc_go, bc_woke;

static int bc_waiter(void *arg) {
    (void)arg;
    C11_OK(mtx_lock(&bc_m));
    bc_waiting++;
    C11_OK(cnd_broadcast(&bc_c)); /* tell main */
    while (!bc_go)
        C11_OK(cnd_wait(&bc_c, &bc_m));
    bc_woke++;
    C11_OK(mtx_unlock(&bc_m));
    return 0;
}

static void test_broadcast_and_timeout(void) {
    phase("cnd_broadcast");
    C11_OK(mtx_init(&bc_m, mtx_plain | mtx_recursive));
    C11_OK(cnd_init(&bc_c));
    for (int round = 0; round < 20; round++) {
        thrd_t t[BC_WAITERS];
        bc_waiting = bc_go = bc_woke = 0;
        for (int i = 0; i < BC_WAITERS; i++)
            C11_OK(thrd_create(&t[i], bc_waiter, NULL));
        C11_OK(mtx_lock(&bc_m));
        while (bc_waiting != BC_WAITERS)
            C11_OK(cnd_wait(&bc_c, &bc_m));
        bc_go = 1;
        C11_OK(cnd_broadcast(&bc_c));
        C11_OK(mtx_unlock(&bc_m));
        for (int i = 0; i < BC_WAITERS; i++)
            C11_OK(thrd_join(t[i], NULL));
        CHECK(bc_woke == BC_WAITERS, "woke %d", bc_woke);
    }

    phase("cnd_timedwait timeout");
    C11_OK(mtx_lock(&bc_m));
    struct timespec dl = utc_deadline_ms(50);
    int rc;
    do
        rc = cnd_timedwait(&bc_c, &bc_m, &dl);
    while (rc == thrd_success);
    C11_EXPECT(rc, thrd_timedout);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "cnd_timedwait");
    /* The mutex was re-acquired: another thread cannot take it. */
    C11_EXPECT(try_other(&bc_m, 0), thrd_busy);
    C11_OK(mtx_unlock(&bc_m));
    C11_OK(try_other(&bc_m, 0));
    C11_OK(cnd_signal(&bc_c)); /* no waiters: no-op */
    cnd_destroy(&bc_c);
    mtx_destroy(&bc_m);
}

int main(void) {
    watchdog(30);
    test_kinds();
    run_counter("counter: mtx_plain", mtx_plain);
    run_counter("counter: mtx_recursive", mtx_plain | mtx_recursive);
    run_counter("counter: mtx_timed", mtx_timed);
    run_counter("counter: mtx_timed | mtx_recursive", mtx_timed | mtx_recursive);
    test_queue();
    test_broadcast_and_timeout();
    pass("c11_threads");
    return 0;
}
