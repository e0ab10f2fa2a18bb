/* Condition variables: signal wakes waiters one token at a time, broadcast
 * wakes every waiter (many rounds, many waiters), a bounded-buffer
 * producer/consumer with counts and per-producer order verified, a strict
 * ping-pong, waits with errorcheck and recursive mutexes, and the EPERM of a
 * wait on an errorcheck mutex the caller does not own. */
#include "common.h"

/* ---- 1. signal: one token per signal, every waiter gets exactly one ---- */

#define SIG_WAITERS 8
static pthread_mutex_t sig_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sig_c = PTHREAD_COND_INITIALIZER;
static int sig_tokens, sig_waiting, sig_consumed;
static int sig_got[SIG_WAITERS];

static void *sig_waiter(void *arg) {
    int id = (int)(intptr_t)arg;
    OK(pthread_mutex_lock(&sig_m));
    sig_waiting++;
    while (sig_tokens == 0)
        OK(pthread_cond_wait(&sig_c, &sig_m));
    sig_tokens--;
    sig_consumed++;
    sig_got[id]++;
    OK(pthread_mutex_unlock(&sig_m));
    return NULL;
}

static void test_signal(void) {
    phase("signal");
    for (int round = 0; round < 50; round++) {
        pthread_t t[SIG_WAITERS];
        sig_tokens = sig_waiting = sig_consumed = 0;
        memset(sig_got, 0, sizeof sig_got);
        for (int i = 0; i < SIG_WAITERS; i++)
            t[i] = spawn(sig_waiter, (void *)(intptr_t)i);
        /* Hand out one token per signal, some while waiters are still
         * arriving. */
        for (int i = 0; i < SIG_WAITERS; i++) {
            OK(pthread_mutex_lock(&sig_m));
            sig_tokens++;
            OK(pthread_cond_signal(&sig_c));
            OK(pthread_mutex_unlock(&sig_m));
            if (i % 3 == 0)
                sched_yield();
        }
        for (int i = 0; i < SIG_WAITERS; i++)
            join(t[i]);
        CHECK(sig_tokens == 0, "tokens left: %d", sig_tokens);
        CHECK(sig_consumed == SIG_WAITERS, "consumed %d", sig_consumed);
        for (int i = 0; i < SIG_WAITERS; i++)
            CHECK(sig_got[i] == 1, "waiter %d got %d tokens", i, sig_got[i]);
    }
    /* Signal and broadcast with nobody waiting are no-ops. */
    OK(pthread_cond_signal(&sig_c));
    OK(pthread_cond_broadcast(&sig_c));
}

/* ---- 2. broadcast wakes all waiters, every round ---------------------- */

#define BC_WAITERS 16
#define BC_ROUNDS 200
static pthread_mutex_t bc_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bc_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t bc_back = PTHREAD_COND_INITIALIZER;
static int bc_generation, bc_waiting, bc_woken;
static int bc_seen[BC_WAITERS];

static void *bc_waiter(void *arg) {
    int id = (int)(intptr_t)arg;
    OK(pthread_mutex_lock(&bc_m));
    for (int r = 0; r < BC_ROUNDS; r++) {
        int gen = bc_generation;
        bc_waiting++;
        if (bc_waiting == BC_WAITERS)
            OK(pthread_cond_signal(&bc_back));
        while (bc_generation == gen)
            OK(pthread_cond_wait(&bc_go, &bc_m));
        CHECK(bc_generation == gen + 1, "generation skipped: %d -> %d", gen,
              bc_generation);
        bc_seen[id]++;
        bc_woken++;
        if (bc_woken == BC_WAITERS)
            OK(pthread_cond_signal(&bc_back));
        /* Wait until main has collected this round before re-arming. */
        while (bc_woken != 0)
            OK(pthread_cond_wait(&bc_go, &bc_m));
    }
    OK(pthread_mutex_unlock(&bc_m));
    return NULL;
}

static void test_broadcast(void) {
    phase("broadcast");
    pthread_t t[BC_WAITERS];
    for (int i = 0; i < BC_WAITERS; i++)
        t[i] = spawn(bc_waiter, (void *)(intptr_t)i);
    OK(pthread_mutex_lock(&bc_m));
    for (int r = 0; r < BC_ROUNDS; r++) {
        while (bc_waiting != BC_WAITERS)
            OK(pthread_cond_wait(&bc_back, &bc_m));
        bc_waiting = 0;
        bc_generation++;
        OK(pthread_cond_broadcast(&bc_go));
        /* Every waiter must come back: a lost wake-up hangs here. */
        while (bc_woken != BC_WAITERS)
            OK(pthread_cond_wait(&bc_back, &bc_m));
        bc_woken = 0;
        OK(pthread_cond_broadcast(&bc_go));
    }
    OK(pthread_mutex_unlock(&bc_m));
    for (int i = 0; i < BC_WAITERS; i++)
        join(t[i]);
    for (int i = 0; i < BC_WAITERS; i++)
        CHECK(bc_seen[i] == BC_ROUNDS, "waiter %d woke %d times, expected %d",
              i, bc_seen[i], BC_ROUNDS);
}

/* ---- 3. bounded buffer, 3 producers x 3 consumers --------------------- */

#define PC_PRODUCERS 3
#define PC_CONSUMERS 3
#define PC_ITEMS 20000 /* per producer */
#define PC_CAP 8
static pthread_mutex_t pc_m;
static pthread_cond_t pc_not_full, pc_not_empty;
static long pc_buf[PC_CAP];
static int pc_head, pc_count, pc_producers_left;
static long long pc_sum[PC_CONSUMERS];
static long pc_items[PC_CONSUMERS];

static void *producer(void *arg) {
    long id = (long)(intptr_t)arg;
    for (long i = 0; i < PC_ITEMS; i++) {
        OK(pthread_mutex_lock(&pc_m));
        while (pc_count == PC_CAP)
            OK(pthread_cond_wait(&pc_not_full, &pc_m));
        pc_buf[(pc_head + pc_count) % PC_CAP] = id * 1000000 + i;
        pc_count++;
        OK(pthread_cond_signal(&pc_not_empty));
        OK(pthread_mutex_unlock(&pc_m));
    }
    OK(pthread_mutex_lock(&pc_m));
    if (--pc_producers_left == 0)
        OK(pthread_cond_broadcast(&pc_not_empty));
    OK(pthread_mutex_unlock(&pc_m));
    return NULL;
}

static void *consumer(void *arg) {
    int id = (int)(intptr_t)arg;
    long last[PC_PRODUCERS];
    for (int p = 0; p < PC_PRODUCERS; p++)
        last[p] = -1;
    for (;;) {
        OK(pthread_mutex_lock(&pc_m));
        while (pc_count == 0 && pc_producers_left > 0)
            OK(pthread_cond_wait(&pc_not_empty, &pc_m));
        if (pc_count == 0) {
            OK(pthread_mutex_unlock(&pc_m));
            break;
        }
        long v = pc_buf[pc_head];
        pc_head = (pc_head + 1) % PC_CAP;
        pc_count--;
        OK(pthread_cond_signal(&pc_not_full));
        OK(pthread_mutex_unlock(&pc_m));
        long p = v / 1000000, seq = v % 1000000;
        CHECK(p >= 0 && p < PC_PRODUCERS, "bad item %ld", v);
        CHECK(seq > last[p], "consumer %d saw producer %ld's item %ld after %ld",
              id, p, seq, last[p]);
        last[p] = seq;
        pc_sum[id] += v;
        pc_items[id]++;
    }
    return NULL;
}

static void test_producer_consumer(void) {
    phase("producer/consumer");
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutex_init(&pc_m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_cond_init(&pc_not_full, &ca));
    OK(pthread_cond_init(&pc_not_empty, NULL));
    OK(pthread_condattr_destroy(&ca));
    pc_producers_left = PC_PRODUCERS;
    pthread_t pt[PC_PRODUCERS], ct[PC_CONSUMERS];
    for (int i = 0; i < PC_CONSUMERS; i++)
        ct[i] = spawn(consumer, (void *)(intptr_t)i);
    for (int i = 0; i < PC_PRODUCERS; i++)
        pt[i] = spawn(producer, (void *)(intptr_t)i);
    for (int i = 0; i < PC_PRODUCERS; i++)
        join(pt[i]);
    for (int i = 0; i < PC_CONSUMERS; i++)
        join(ct[i]);
    long long sum = 0, expect = 0;
    long items = 0;
    for (int i = 0; i < PC_CONSUMERS; i++) {
        sum += pc_sum[i];
        items += pc_items[i];
    }
    for (long p = 0; p < PC_PRODUCERS; p++)
        for (long i = 0; i < PC_ITEMS; i++)
            expect += p * 1000000 + i;
    CHECK(items == (long)PC_PRODUCERS * PC_ITEMS, "consumed %ld items", items);
    CHECK(sum == expect, "sum %lld, expected %lld", sum, expect);
    CHECK(pc_count == 0, "buffer not empty: %d", pc_count);
    OK(pthread_cond_destroy(&pc_not_full));
    OK(pthread_cond_destroy(&pc_not_empty));
    OK(pthread_mutex_destroy(&pc_m));
}

/* ---- 4. strict ping-pong over one condvar ----------------------------- */

#define PP_ROUNDS 20000
static pthread_mutex_t pp_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_c = PTHREAD_COND_INITIALIZER;
static int pp_turn; /* 0 or 1 */
static long pp_moves;

static void *pinger(void *arg) {
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < PP_ROUNDS; i++) {
        OK(pthread_mutex_lock(&pp_m));
        while (pp_turn != me)
            OK(pthread_cond_wait(&pp_c, &pp_m));
        CHECK(pp_moves % 2 == me, "out of turn: moves %ld, me %d", pp_moves,
              me);
        pp_moves++;
        pp_turn = 1 - me;
        OK(pthread_cond_signal(&pp_c));
        OK(pthread_mutex_unlock(&pp_m));
    }
    return NULL;
}

static void test_pingpong(void) {
    phase("ping-pong");
    pthread_t a = spawn(pinger, (void *)0), b = spawn(pinger, (void *)1);
    join(a);
    join(b);
    CHECK(pp_moves == 2 * PP_ROUNDS, "moves %ld", pp_moves);
}

/* ---- 5. waits with errorcheck / recursive mutexes --------------------- */

static pthread_mutex_t tm_m;
static pthread_cond_t tm_c = PTHREAD_COND_INITIALIZER;
static int tm_flag;

static void *tm_setter(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&tm_m));
    tm_flag = 1;
    OK(pthread_cond_signal(&tm_c));
    OK(pthread_mutex_unlock(&tm_m));
    return NULL;
}

static void wait_with_type(int type) {
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutex_init(&tm_m, &a));
    OK(pthread_mutexattr_destroy(&a));
    tm_flag = 0;
    OK(pthread_mutex_lock(&tm_m));
    pthread_t t = spawn(tm_setter, NULL);
    while (!tm_flag)
        OK(pthread_cond_wait(&tm_c, &tm_m));
    /* The wait must have given the mutex back to this thread. */
    if (type == PTHREAD_MUTEX_ERRORCHECK)
        EXPECT_RC(pthread_mutex_lock(&tm_m), EDEADLK);
    if (type == PTHREAD_MUTEX_RECURSIVE) {
        OK(pthread_mutex_lock(&tm_m)); /* depth 2 */
        OK(pthread_mutex_unlock(&tm_m));
    }
    OK(pthread_mutex_unlock(&tm_m));
    if (type != PTHREAD_MUTEX_NORMAL)
        EXPECT_RC(pthread_mutex_unlock(&tm_m), EPERM);
    join(t);
    OK(pthread_mutex_destroy(&tm_m));
}

static void test_mutex_types(void) {
    phase("wait with errorcheck mutex");
    wait_with_type(PTHREAD_MUTEX_ERRORCHECK);
    phase("wait with recursive mutex");
    wait_with_type(PTHREAD_MUTEX_RECURSIVE);
    phase("wait with normal mutex");
    wait_with_type(PTHREAD_MUTEX_NORMAL);

    phase("wait on an unowned errorcheck mutex");
    pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    EXPECT_RC(pthread_cond_wait(&c, &e), EPERM);
    /* Nothing was left behind: the condvar and mutex still work. */
    OK(pthread_mutex_lock(&e));
    OK(pthread_cond_signal(&c));
    OK(pthread_mutex_unlock(&e));
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&e));
}

int main(void) {
    watchdog(30);
    test_signal();
    test_broadcast();
    test_producer_consumer();
    test_pingpong();
    test_mutex_types();
    pass("cond_basic");
    return 0;
}
