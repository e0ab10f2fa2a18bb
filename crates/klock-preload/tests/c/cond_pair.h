/* One condition-variable workout for a given mutex and condvar attribute,
 * shared by the programs that pair condvars with mutexes of every protocol
 * (cond_pi.c, cond_pp.c, cond_robust.c, cond_pshared.c).  From POSIX's
 * pthread_cond_wait / _timedwait / _signal / _broadcast pages:
 *
 *  - a bounded-buffer producer/consumer (signal per item, broadcast at the
 *    end), results checked item by item;
 *  - strict ping-pong between two threads (every turn a signal the other
 *    waits for: a lost wake-up hangs it);
 *  - a timed wait that times out (ETIMEDOUT, not early, mutex held), on the
 *    condvar's clock and with pthread_cond_clockwait(CLOCK_MONOTONIC);
 *  - a timed wait that is signalled (0);
 *  - broadcast wakes every waiter; the condvar destroyed right after a
 *    broadcast (POSIX: safe once no thread is blocked on it);
 *  - a waiter cancelled in each wait kind: its cleanup handler finds the
 *    mutex locked by its own thread (POSIX);
 *  - EPERM for a wait on an error-checking mutex the caller does not hold.
 *
 * Waits loop on their predicate: POSIX allows spurious wake-ups.  The mutex
 * must be of type PTHREAD_MUTEX_ERRORCHECK (unlock by a non-owner is EPERM,
 * which the checks use to prove who holds it). */
#ifndef KLOCK_PRELOAD_TEST_COND_PAIR_H
#define KLOCK_PRELOAD_TEST_COND_PAIR_H

#include "common.h"

struct pair {
    pthread_mutex_t *m;
    pthread_cond_t *c;   /* "not empty" / "your turn" / the test's condvar */
    pthread_cond_t *c2;  /* "not full" */
    clockid_t clock;     /* the condvars' clock (for timedwait deadlines) */
    /* state, under *m */
    int buf[4];
    int head, count, done;
    long consumed_sum;
    int consumed_n;
    int turn;
    int flag, ready, waiting;
    int next_producer;
};

enum { PC_ITEMS = 2000, PC_PRODUCERS = 2, PC_CONSUMERS = 2, PING_ROUNDS = 1000 };

static void *pc_producer(void *arg) {
    struct pair *p = arg;
    OK(pthread_mutex_lock(p->m));
    int base = p->next_producer++ * PC_ITEMS;
    OK(pthread_mutex_unlock(p->m));
    for (int i = 1; i <= PC_ITEMS; i++) {
        OK(pthread_mutex_lock(p->m));
        while (p->count == 4)
            OK(pthread_cond_wait(p->c2, p->m));
        p->buf[(p->head + p->count) % 4] = base + i;
        p->count++;
        OK(pthread_cond_signal(p->c));
        OK(pthread_mutex_unlock(p->m));
    }
    return NULL;
}

static void *pc_consumer(void *arg) {
    struct pair *p = arg;
    for (;;) {
        OK(pthread_mutex_lock(p->m));
        while (p->count == 0 && !p->done)
            OK(pthread_cond_wait(p->c, p->m));
        if (p->count == 0) {
            OK(pthread_mutex_unlock(p->m));
            return NULL;
        }
        int v = p->buf[p->head];
        p->head = (p->head + 1) % 4;
        p->count--;
        p->consumed_sum += v;
        p->consumed_n++;
        OK(pthread_cond_signal(p->c2));
        OK(pthread_mutex_unlock(p->m));
    }
}

static void producer_consumer(struct pair *p) {
    phase("producer/consumer");
    p->head = p->count = p->done = 0;
    p->consumed_sum = 0;
    p->consumed_n = 0;
    p->next_producer = 0;
    pthread_t pr[PC_PRODUCERS], co[PC_CONSUMERS];
    for (int i = 0; i < PC_CONSUMERS; i++)
        co[i] = spawn(pc_consumer, p);
    for (int i = 0; i < PC_PRODUCERS; i++)
        pr[i] = spawn(pc_producer, p);
    for (int i = 0; i < PC_PRODUCERS; i++)
        join(pr[i]);
    OK(pthread_mutex_lock(p->m));
    p->done = 1;
    OK(pthread_cond_broadcast(p->c));
    OK(pthread_mutex_unlock(p->m));
    for (int i = 0; i < PC_CONSUMERS; i++)
        join(co[i]);
    /* Producer k sends k*PC_ITEMS + 1 ..= (k+1)*PC_ITEMS. */
    long n = (long)PC_PRODUCERS * PC_ITEMS;
    long want = n * (n + 1) / 2;
    CHECK(p->consumed_n == n && p->consumed_sum == want,
          "consumed %d items summing to %ld, expected %ld summing to %ld",
          p->consumed_n, p->consumed_sum, n, want);
}

static void *ping_thread(void *arg) {
    struct pair *p = arg;
    for (int i = 0; i < PING_ROUNDS; i++) {
        OK(pthread_mutex_lock(p->m));
        while (p->turn != 1)
            OK(pthread_cond_wait(p->c, p->m));
        p->turn = 0;
        OK(pthread_cond_signal(p->c));
        OK(pthread_mutex_unlock(p->m));
    }
    return NULL;
}

static void ping_pong(struct pair *p) {
    phase("ping-pong");
    p->turn = 0;
    pthread_t t = spawn(ping_thread, p);
    for (int i = 0; i < PING_ROUNDS; i++) {
        OK(pthread_mutex_lock(p->m));
        while (p->turn != 0)
            OK(pthread_cond_wait(p->c, p->m));
        p->turn = 1;
        OK(pthread_cond_signal(p->c));
        OK(pthread_mutex_unlock(p->m));
    }
    OK(pthread_mutex_lock(p->m));
    while (p->turn != 0)
        OK(pthread_cond_wait(p->c, p->m));
    OK(pthread_mutex_unlock(p->m));
    join(t);
}

/* A timed wait nobody signals: ETIMEDOUT, not before the deadline, with the
 * mutex held by us (unlock succeeds; a second unlock is EPERM). */
static void times_out(struct pair *p, int clockwait) {
    phase(clockwait ? "clockwait(MONOTONIC) times out" : "timedwait times out");
    clockid_t clk = clockwait ? CLOCK_MONOTONIC : p->clock;
    /* 35 ms: several of the interposer's 10 ms slices for a
     * process-shared condvar with a klock mutex. */
    struct timespec dl = deadline_ms(clk, 35);
    OK(pthread_mutex_lock(p->m));
    int rc;
    do /* spurious wake-ups (0) are allowed: wait again until the deadline */
        rc = clockwait ? pthread_cond_clockwait(p->c, p->m, CLOCK_MONOTONIC, &dl)
                       : pthread_cond_timedwait(p->c, p->m, &dl);
    while (rc == 0);
    EXPECT_RC(rc, ETIMEDOUT);
    CHECK_NOT_EARLY(clk, dl, "the timed wait");
    OK(pthread_mutex_unlock(p->m));
    EXPECT_RC(pthread_mutex_unlock(p->m), EPERM);
}

static void *signalled_waiter(void *arg) {
    struct pair *p = arg;
    struct timespec dl = deadline_ms(p->clock, 20000);
    OK(pthread_mutex_lock(p->m));
    p->ready = 1;
    OK(pthread_cond_broadcast(p->c2));
    while (!p->flag)
        OK(pthread_cond_timedwait(p->c, p->m, &dl)); /* 0: signalled */
    OK(pthread_mutex_unlock(p->m));
    return NULL;
}

static void signalled_timedwait(struct pair *p) {
    phase("timedwait is signalled");
    p->flag = p->ready = 0;
    pthread_t t = spawn(signalled_waiter, p);
    OK(pthread_mutex_lock(p->m));
    while (!p->ready)
        OK(pthread_cond_wait(p->c2, p->m));
    OK(pthread_mutex_unlock(p->m));
    sleep_ms(15); /* let it sleep (past a 10 ms slice, too) */
    OK(pthread_mutex_lock(p->m));
    p->flag = 1;
    OK(pthread_cond_signal(p->c));
    OK(pthread_mutex_unlock(p->m));
    join(t);
}

enum { BC_WAITERS = 3 };

static void *bc_waiter(void *arg) {
    struct pair *p = arg;
    OK(pthread_mutex_lock(p->m));
    p->waiting++;
    OK(pthread_cond_broadcast(p->c2));
    while (!p->flag)
        OK(pthread_cond_wait(p->c, p->m));
    p->waiting--;
    OK(pthread_mutex_unlock(p->m));
    return NULL;
}

/* Broadcast wakes all; then, with a condvar of its own, destroy right after
 * the broadcast. */
static void broadcast_all(struct pair *p, const pthread_condattr_t *ca) {
    phase("broadcast wakes every waiter");
    pthread_cond_t *saved = p->c;
    for (int round = 0; round < 2; round++) {
        pthread_cond_t own;
        if (round == 1) {
            phase("destroy right after broadcast");
            OK(pthread_cond_init(&own, ca));
            p->c = &own;
        }
        p->flag = p->waiting = 0;
        pthread_t t[BC_WAITERS];
        for (int i = 0; i < BC_WAITERS; i++)
            t[i] = spawn(bc_waiter, p);
        OK(pthread_mutex_lock(p->m));
        while (p->waiting < BC_WAITERS)
            OK(pthread_cond_wait(p->c2, p->m));
        p->flag = 1;
        OK(pthread_cond_broadcast(p->c));
        if (round == 1)
            OK(pthread_cond_destroy(&own));
        OK(pthread_mutex_unlock(p->m));
        for (int i = 0; i < BC_WAITERS; i++)
            join(t[i]);
        CHECK(p->waiting == 0, "%d waiters left", p->waiting);
        p->c = saved;
    }
}

struct victim {
    struct pair *p;
    int kind; /* 0 wait, 1 timedwait, 2 clockwait */
    int handler_ran, trylock_rc, unlock_rc, unlock_again_rc;
};

static void victim_cleanup(void *arg) {
    struct victim *v = arg;
    v->handler_ran = 1;
    v->trylock_rc = pthread_mutex_trylock(v->p->m); /* held by us */
    v->p->waiting--;
    v->unlock_rc = pthread_mutex_unlock(v->p->m);       /* 0: it was ours */
    v->unlock_again_rc = pthread_mutex_unlock(v->p->m); /* EPERM */
}

static void *victim_thread(void *arg) {
    struct victim *v = arg;
    struct pair *p = v->p;
    pthread_cleanup_push(victim_cleanup, v);
    OK(pthread_mutex_lock(p->m));
    p->waiting++;
    OK(pthread_cond_broadcast(p->c2));
    for (;;) { /* never satisfied: only cancellation gets us out */
        struct timespec dl;
        switch (v->kind) {
        case 0:
            OK(pthread_cond_wait(p->c, p->m));
            break;
        case 1:
            dl = deadline_ms(p->clock, 60000);
            OK(pthread_cond_timedwait(p->c, p->m, &dl));
            break;
        default:
            dl = deadline_ms(CLOCK_MONOTONIC, 60000);
            OK(pthread_cond_clockwait(p->c, p->m, CLOCK_MONOTONIC, &dl));
            break;
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancelled_waiters(struct pair *p) {
    for (int kind = 0; kind < 3; kind++) {
        phase(kind == 0 ? "cancel in wait" : kind == 1 ? "cancel in timedwait"
                                                        : "cancel in clockwait");
        struct victim v = {p, kind, 0, -1, -1, -1};
        p->waiting = 0;
        pthread_t t = spawn(victim_thread, &v);
        OK(pthread_mutex_lock(p->m));
        while (p->waiting < 1)
            OK(pthread_cond_wait(p->c2, p->m));
        OK(pthread_mutex_unlock(p->m));
        sleep_ms(15); /* into its sleep */
        OK(pthread_cancel(t));
        CHECK(join(t) == PTHREAD_CANCELED, "not cancelled");
        CHECK(v.handler_ran, "cleanup handler did not run");
        CHECK(v.trylock_rc == EBUSY || v.trylock_rc == EDEADLK,
              "trylock in the handler: %s, expected EBUSY or EDEADLK (held)",
              errname(v.trylock_rc));
        EXPECT_RC(v.unlock_rc, 0);
        EXPECT_RC(v.unlock_again_rc, EPERM);
        CHECK(p->waiting == 0, "waiting %d", p->waiting);
        /* The pair still works. */
        OK(pthread_mutex_lock(p->m));
        OK(pthread_cond_signal(p->c));
        OK(pthread_mutex_unlock(p->m));
    }
}

static void *not_holder(void *arg) {
    struct pair *p = arg;
    struct timespec dl = deadline_ms(p->clock, 1000);
    EXPECT_RC(pthread_cond_wait(p->c, p->m), EPERM);
    EXPECT_RC(pthread_cond_timedwait(p->c, p->m, &dl), EPERM);
    return NULL;
}

/* EPERM when the caller does not hold the error-checking mutex: not held at
 * all, then held by another thread. */
static void eperm(struct pair *p) {
    phase("EPERM without the mutex");
    EXPECT_RC(pthread_cond_wait(p->c, p->m), EPERM);
    OK(pthread_mutex_lock(p->m));
    join(spawn(not_holder, p));
    OK(pthread_mutex_unlock(p->m));
}

/* Everything above, on mutex `m` (errorcheck) and two condvars made from
 * `ca` (null: defaults). */
static void exercise_pair(pthread_mutex_t *m, const pthread_condattr_t *ca, const char *label) {
    static struct pair p;
    pthread_cond_t c, c2;
    memset(&p, 0, sizeof p);
    OK(pthread_cond_init(&c, ca));
    OK(pthread_cond_init(&c2, ca));
    p.m = m;
    p.c = &c;
    p.c2 = &c2;
    p.clock = CLOCK_REALTIME;
    if (ca)
        OK(pthread_condattr_getclock(ca, &p.clock));
    producer_consumer(&p);
    ping_pong(&p);
    times_out(&p, 0);
    times_out(&p, 1);
    signalled_timedwait(&p);
    broadcast_all(&p, ca);
    cancelled_waiters(&p);
    eperm(&p);
    OK(pthread_cond_destroy(&c));
    OK(pthread_cond_destroy(&c2));
    printf("ok: %s\n", label);
}

#endif
