/* klock_cond_*: every function, every error code, both clocks, the static
 * initialiser, producer/consumer, broadcast, a recursive mutex released and
 * restored across a wait, and waits with two different mutexes. */
#include "common.h"

static klock_cond_t st_cond = KLOCK_COND_INITIALIZER;

static void null_and_bad_args(void) {
    PHASE("null pointers and bad arguments");
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    klock_cond_t c;
    klock_mutex_t m = KLOCK_MUTEX_INITIALIZER;
    EXPECT(klock_cond_init(NULL, CLOCK_REALTIME), EINVAL);
    EXPECT(klock_cond_init(&c, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    EXPECT(klock_cond_init(&c, CLOCK_THREAD_CPUTIME_ID), EINVAL);
    EXPECT(klock_cond_init(&c, 12345), EINVAL);
    EXPECT(klock_cond_init(&c, CLOCK_REALTIME), 0);
    EXPECT(klock_cond_wait(NULL, &m), EINVAL);
    EXPECT(klock_cond_wait(&c, NULL), EINVAL);
    EXPECT(klock_cond_timedwait(NULL, &m, &ts), EINVAL);
    EXPECT(klock_cond_timedwait(&c, NULL, &ts), EINVAL);
    EXPECT(klock_cond_clockwait(NULL, &m, CLOCK_REALTIME, &ts), EINVAL);
    EXPECT(klock_cond_clockwait(&c, NULL, CLOCK_REALTIME, &ts), EINVAL);
    EXPECT(klock_cond_signal(NULL), EINVAL);
    EXPECT(klock_cond_broadcast(NULL), EINVAL);
    EXPECT(klock_cond_destroy(NULL), EINVAL);

    EXPECT(klock_mutex_lock(&m), 0);
    EXPECT(klock_cond_timedwait(&c, &m, NULL), EINVAL);
    EXPECT(klock_cond_clockwait(&c, &m, CLOCK_MONOTONIC, NULL), EINVAL);
    EXPECT(klock_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    EXPECT(klock_cond_clockwait(&c, &m, 12345, &ts), EINVAL);
    /* A bad abstime is EINVAL before the mutex is released. */
    struct timespec bad_hi = {1, 1000000000L}, bad_lo = {1, -1}, neg_sec = {-1, 0};
    EXPECT(klock_cond_timedwait(&c, &m, &bad_hi), EINVAL);
    EXPECT(klock_cond_timedwait(&c, &m, &bad_lo), EINVAL);
    EXPECT(klock_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &neg_sec), ETIMEDOUT); /* past */
    EXPECT(klock_mutex_trylock(&m), EBUSY); /* still held */
    EXPECT(klock_mutex_unlock(&m), 0);
    EXPECT(klock_cond_destroy(&c), 0);
}

static void eperm_and_destroyed_mutex(void) {
    PHASE("waits without the mutex");
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    klock_cond_t c = KLOCK_COND_INITIALIZER;
    klock_mutex_t normal = KLOCK_MUTEX_INITIALIZER;
    klock_mutex_t errck = KLOCK_ERRORCHECK_MUTEX_INITIALIZER;
    klock_mutex_t rec = KLOCK_RECURSIVE_MUTEX_INITIALIZER;
    klock_mutex_t *ms[] = {&normal, &errck, &rec};
    for (int i = 0; i < 3; i++) {
        EXPECT(klock_cond_wait(&c, ms[i]), EPERM);
        EXPECT(klock_cond_timedwait(&c, ms[i], &ts), EPERM);
        EXPECT(klock_cond_clockwait(&c, ms[i], CLOCK_MONOTONIC, &ts), EPERM);
    }
    PHASE("wait with a destroyed mutex");
    EXPECT(klock_mutex_destroy(&normal), 0);
    EXPECT(klock_cond_wait(&c, &normal), EINVAL);
    EXPECT(klock_cond_timedwait(&c, &normal, &ts), EINVAL);
    EXPECT(klock_cond_destroy(&c), 0);
}

/* A mutex held by another thread is not ours to wait with. */
static klock_mutex_t held_elsewhere = KLOCK_MUTEX_INITIALIZER;
static void *wait_on_foreign(void *c) {
    EXPECT(klock_cond_wait(c, &held_elsewhere), EPERM);
    return NULL;
}

static void timeouts(clockid_t cond_clock) {
    PHASE("timeouts");
    klock_cond_t c;
    klock_mutex_t m = KLOCK_MUTEX_INITIALIZER;
    EXPECT(klock_cond_init(&c, cond_clock), 0);
    EXPECT(klock_mutex_lock(&m), 0);
    /* timedwait uses the condvar's clock. */
    struct timespec past = in_ms(cond_clock, -5);
    EXPECT(klock_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    double t0 = now_ms();
    struct timespec soon = in_ms(cond_clock, 30);
    EXPECT(klock_cond_timedwait(&c, &m, &soon), ETIMEDOUT);
    CHECK(now_ms() - t0 >= 25);
    /* clockwait takes either clock, whatever the condvar's. */
    soon = in_ms(CLOCK_MONOTONIC, 10);
    EXPECT(klock_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    soon = in_ms(CLOCK_REALTIME, 10);
    EXPECT(klock_cond_clockwait(&c, &m, CLOCK_REALTIME, &soon), ETIMEDOUT);
    /* The mutex is held again after every timeout. */
    EXPECT(klock_mutex_trylock(&m), EBUSY);
    EXPECT(klock_mutex_unlock(&m), 0);
    EXPECT(klock_mutex_unlock(&m), EPERM);

    EXPECT(klock_mutex_lock(&held_elsewhere), 0);
    on_other_thread(wait_on_foreign, &c);
    EXPECT(klock_mutex_unlock(&held_elsewhere), 0);
    EXPECT(klock_cond_destroy(&c), 0);
}

/* Producer/consumer over a bounded ring, two condvars (one per clock). */
#define CAP 4
#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 5000 /* per producer */
static klock_mutex_t q_m = KLOCK_MUTEX_INITIALIZER;
static klock_cond_t not_empty = KLOCK_COND_INITIALIZER; /* CLOCK_REALTIME */
static klock_cond_t not_full;                            /* CLOCK_MONOTONIC (init) */
static long ring[CAP];
static int q_head, q_len, producers_left = PRODUCERS;
static long consumed_sum, consumed_count;

static void *producer(void *arg) {
    long base = (long)arg * ITEMS;
    for (long i = 1; i <= ITEMS; i++) {
        EXPECT(klock_mutex_lock(&q_m), 0);
        while (q_len == CAP) {
            if (i % 2) {
                EXPECT(klock_cond_wait(&not_full, &q_m), 0);
            } else {
                struct timespec ts = in_ms(CLOCK_MONOTONIC, 10000);
                int r = klock_cond_timedwait(&not_full, &q_m, &ts);
                if (r != 0)
                    FAIL("producer timedwait: %s", errname(r));
            }
        }
        ring[(q_head + q_len) % CAP] = base + i;
        q_len++;
        EXPECT(klock_cond_signal(&not_empty), 0);
        EXPECT(klock_mutex_unlock(&q_m), 0);
    }
    EXPECT(klock_mutex_lock(&q_m), 0);
    if (--producers_left == 0)
        EXPECT(klock_cond_broadcast(&not_empty), 0);
    EXPECT(klock_mutex_unlock(&q_m), 0);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    long sum = 0, count = 0;
    for (;;) {
        EXPECT(klock_mutex_lock(&q_m), 0);
        while (q_len == 0 && producers_left > 0) {
            struct timespec ts = in_ms(CLOCK_REALTIME, 10000);
            int r = count % 2 ? klock_cond_wait(&not_empty, &q_m)
                              : klock_cond_clockwait(&not_empty, &q_m, CLOCK_REALTIME, &ts);
            if (r != 0)
                FAIL("consumer wait: %s", errname(r));
        }
        if (q_len == 0) {
            EXPECT(klock_mutex_unlock(&q_m), 0);
            break;
        }
        sum += ring[q_head];
        q_head = (q_head + 1) % CAP;
        q_len--;
        count++;
        EXPECT(klock_cond_signal(&not_full), 0);
        EXPECT(klock_mutex_unlock(&q_m), 0);
    }
    EXPECT(klock_mutex_lock(&q_m), 0);
    consumed_sum += sum;
    consumed_count += count;
    EXPECT(klock_mutex_unlock(&q_m), 0);
    return NULL;
}

static void producer_consumer(void) {
    PHASE("producer/consumer");
    pthread_t t[PRODUCERS + CONSUMERS];
    EXPECT(klock_cond_init(&not_full, CLOCK_MONOTONIC), 0);
    for (long i = 0; i < CONSUMERS; i++)
        t[i] = spawn(consumer, NULL);
    for (long i = 0; i < PRODUCERS; i++)
        t[CONSUMERS + i] = spawn(producer, (void *)i);
    for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
        pthread_join(t[i], NULL);
    long n = (long)PRODUCERS * ITEMS;
    if (consumed_count != n || consumed_sum != n * (n + 1) / 2)
        FAIL("consumed %ld items summing to %ld, expected %ld summing to %ld", consumed_count,
             consumed_sum, n, n * (n + 1) / 2);
    EXPECT(klock_cond_destroy(&not_full), 0);
    EXPECT(klock_cond_destroy(&not_empty), 0);
}

/* A recursive mutex held twice: the wait releases both levels (the
 * signaller can lock it), and restores both. */
static klock_mutex_t rec_m = KLOCK_RECURSIVE_MUTEX_INITIALIZER;
static int rec_ready;
static void *rec_signaller(void *arg) {
    (void)arg;
    EXPECT(klock_mutex_lock(&rec_m), 0);
    rec_ready = 1;
    EXPECT(klock_cond_signal(&st_cond), 0);
    EXPECT(klock_mutex_unlock(&rec_m), 0);
    return NULL;
}

static void recursive_mutex_wait(void) {
    PHASE("recursive mutex with cond wait");
    EXPECT(klock_mutex_lock(&rec_m), 0);
    EXPECT(klock_mutex_lock(&rec_m), 0);
    EXPECT(klock_mutex_trylock(&rec_m), 0);
    pthread_t t = spawn(rec_signaller, NULL);
    while (!rec_ready)
        EXPECT(klock_cond_wait(&st_cond, &rec_m), 0);
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++)
        EXPECT(klock_mutex_unlock(&rec_m), 0);
    EXPECT(klock_mutex_unlock(&rec_m), EPERM);
}

/* Broadcast wakes every waiter; destroy is EBUSY while they wait. */
#define WAITERS 4
static klock_mutex_t b_m = KLOCK_MUTEX_INITIALIZER;
static klock_cond_t b_c = KLOCK_COND_INITIALIZER;
static int b_go, b_waiting, b_done;
static void *b_waiter(void *arg) {
    (void)arg;
    EXPECT(klock_mutex_lock(&b_m), 0);
    b_waiting++;
    while (!b_go)
        EXPECT(klock_cond_wait(&b_c, &b_m), 0);
    b_done++;
    EXPECT(klock_mutex_unlock(&b_m), 0);
    return NULL;
}

static void broadcast_and_busy(void) {
    PHASE("broadcast and destroy while waited on");
    pthread_t t[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        t[i] = spawn(b_waiter, NULL);
    /* Once all have counted themselves and released the mutex, they wait. */
    for (;;) {
        EXPECT(klock_mutex_lock(&b_m), 0);
        int n = b_waiting;
        EXPECT(klock_mutex_unlock(&b_m), 0);
        if (n == WAITERS)
            break;
        sleep_ms(1);
    }
    EXPECT(klock_mutex_lock(&b_m), 0);
    EXPECT(klock_cond_destroy(&b_c), EBUSY);
    b_go = 1;
    EXPECT(klock_cond_broadcast(&b_c), 0);
    EXPECT(klock_mutex_unlock(&b_m), 0);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(t[i], NULL);
    CHECK(b_done == WAITERS);
    EXPECT(klock_cond_destroy(&b_c), 0);
    /* Signal and broadcast with nobody waiting are fine. */
    EXPECT(klock_cond_signal(&b_c), 0);
    EXPECT(klock_cond_broadcast(&b_c), 0);
}

/* Concurrent waits on one condvar with two different mutexes: EINVAL for
 * the second (and its mutex stays held). */
static klock_mutex_t two_m1 = KLOCK_MUTEX_INITIALIZER;
static klock_mutex_t two_m2 = KLOCK_RECURSIVE_MUTEX_INITIALIZER;
static klock_cond_t two_c = KLOCK_COND_INITIALIZER;
static int two_go;
static void *two_waiter(void *arg) {
    (void)arg;
    EXPECT(klock_mutex_lock(&two_m1), 0);
    while (!two_go)
        EXPECT(klock_cond_wait(&two_c, &two_m1), 0);
    EXPECT(klock_mutex_unlock(&two_m1), 0);
    return NULL;
}

static void two_mutexes(void) {
    PHASE("two mutexes on one condvar");
    EXPECT(klock_mutex_lock(&two_m1), 0);
    pthread_t t = spawn(two_waiter, NULL);
    EXPECT(klock_mutex_unlock(&two_m1), 0);
    /* The waiter queues, then releases two_m1: wait until it is in. */
    for (;;) {
        EXPECT(klock_mutex_lock(&two_m1), 0);
        int busy = klock_cond_destroy(&two_c) == EBUSY;
        EXPECT(klock_mutex_unlock(&two_m1), 0);
        if (busy)
            break;
        sleep_ms(1);
    }
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_mutex_lock(&two_m2), 0);
    EXPECT(klock_mutex_lock(&two_m2), 0);
    fprintf(stderr, "(the next klock message about two mutexes is expected)\n");
    EXPECT(klock_cond_wait(&two_c, &two_m2), EINVAL);
    EXPECT(klock_cond_timedwait(&two_c, &two_m2, &ts), EINVAL);
    EXPECT(klock_mutex_unlock(&two_m2), 0);
    EXPECT(klock_mutex_unlock(&two_m2), 0);
    EXPECT(klock_mutex_unlock(&two_m2), EPERM);
    EXPECT(klock_mutex_lock(&two_m1), 0);
    two_go = 1;
    EXPECT(klock_cond_signal(&two_c), 0);
    EXPECT(klock_mutex_unlock(&two_m1), 0);
    pthread_join(t, NULL);
    /* With no waiters left, the condvar takes the other mutex. */
    EXPECT(klock_mutex_lock(&two_m2), 0);
    struct timespec past = in_ms(CLOCK_REALTIME, -1);
    EXPECT(klock_cond_timedwait(&two_c, &two_m2, &past), ETIMEDOUT);
    EXPECT(klock_mutex_unlock(&two_m2), 0);
}

int main(void) {
    watchdog(60);
    null_and_bad_args();
    eperm_and_destroyed_mutex();
    timeouts(CLOCK_REALTIME);
    timeouts(CLOCK_MONOTONIC);
    producer_consumer();
    recursive_mutex_wait();
    broadcast_and_busy();
    two_mutexes();
    pass("cond");
    return 0;
}
