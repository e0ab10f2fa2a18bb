/* klock_mutex_*: every function, every error code, the three kinds, static
 * initialisers, timed locks on both clocks, and a threaded counter. */
#include "common.h"

static klock_mutex_t st_normal = KLOCK_MUTEX_INITIALIZER;
static klock_mutex_t st_recursive = KLOCK_RECURSIVE_MUTEX_INITIALIZER;
static klock_mutex_t st_errorcheck = KLOCK_ERRORCHECK_MUTEX_INITIALIZER;

static void *expect_trylock_busy(void *m) {
    EXPECT(klock_mutex_trylock(m), EBUSY);
    return NULL;
}

static void *expect_unlock_eperm(void *m) {
    EXPECT(klock_mutex_unlock(m), EPERM);
    return NULL;
}

static void *expect_unlock_ok(void *m) {
    EXPECT(klock_mutex_unlock(m), 0);
    return NULL;
}

/* Another thread: timed locks time out, and a bad abstime is EINVAL since
 * the call would block. */
static void *expect_timeouts(void *m) {
    struct timespec past_rt = in_ms(CLOCK_REALTIME, -10);
    struct timespec past_mono = in_ms(CLOCK_MONOTONIC, -10);
    struct timespec bad_hi = {1, 1000000000L}, bad_lo = {1, -1}, neg_sec = {-1, 0};
    EXPECT(klock_mutex_timedlock(m, &past_rt), ETIMEDOUT);
    EXPECT(klock_mutex_clocklock(m, CLOCK_MONOTONIC, &past_mono), ETIMEDOUT);
    EXPECT(klock_mutex_clocklock(m, CLOCK_REALTIME, &past_rt), ETIMEDOUT);
    EXPECT(klock_mutex_timedlock(m, &bad_hi), EINVAL);
    EXPECT(klock_mutex_timedlock(m, &bad_lo), EINVAL);
    EXPECT(klock_mutex_clocklock(m, CLOCK_MONOTONIC, &neg_sec), ETIMEDOUT); /* past, as glibc */
    /* A deadline in the future: it waits, then times out. */
    double t0 = now_ms();
    struct timespec soon = in_ms(CLOCK_MONOTONIC, 30);
    EXPECT(klock_mutex_clocklock(m, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    CHECK(now_ms() - t0 >= 25);
    soon = in_ms(CLOCK_REALTIME, 20);
    EXPECT(klock_mutex_timedlock(m, &soon), ETIMEDOUT);
    return NULL;
}

static void null_pointers(void) {
    PHASE("null pointers");
    struct timespec ts = {0, 0};
    klock_mutex_t m;
    EXPECT(klock_mutex_init(NULL, KLOCK_MUTEX_NORMAL), EINVAL);
    EXPECT(klock_mutex_lock(NULL), EINVAL);
    EXPECT(klock_mutex_trylock(NULL), EINVAL);
    EXPECT(klock_mutex_timedlock(NULL, &ts), EINVAL);
    EXPECT(klock_mutex_clocklock(NULL, CLOCK_MONOTONIC, &ts), EINVAL);
    EXPECT(klock_mutex_unlock(NULL), EINVAL);
    EXPECT(klock_mutex_destroy(NULL), EINVAL);
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_NORMAL), 0);
    /* A NULL abstime is EINVAL even when the lock is free. */
    EXPECT(klock_mutex_timedlock(&m, NULL), EINVAL);
    EXPECT(klock_mutex_clocklock(&m, CLOCK_REALTIME, NULL), EINVAL);
    EXPECT(klock_mutex_destroy(&m), 0);
}

static void bad_kinds_and_clocks(void) {
    PHASE("bad kinds and clocks");
    klock_mutex_t m;
    struct timespec ts = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(klock_mutex_init(&m, -1), EINVAL);
    EXPECT(klock_mutex_init(&m, 3), EINVAL);
    EXPECT(klock_mutex_init(&m, 99), EINVAL);
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_NORMAL), 0);
    /* An unsupported clock is EINVAL, checked before the lock is tried. */
    EXPECT(klock_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    EXPECT(klock_mutex_clocklock(&m, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
    EXPECT(klock_mutex_clocklock(&m, 12345, &ts), EINVAL);
    EXPECT(klock_mutex_trylock(&m), 0);
    EXPECT(klock_mutex_unlock(&m), 0);
    EXPECT(klock_mutex_destroy(&m), 0);
}

static void normal(klock_mutex_t *m) {
    PHASE("normal kind");
    struct timespec bad = {0, 1000000000L};
    EXPECT(klock_mutex_lock(m), 0);
    EXPECT(klock_mutex_trylock(m), EBUSY); /* the holder too: no recursion */
    on_other_thread(expect_trylock_busy, m);
    on_other_thread(expect_timeouts, m);
    EXPECT(klock_mutex_destroy(m), EBUSY);
    EXPECT(klock_mutex_unlock(m), 0);
    EXPECT(klock_mutex_unlock(m), EPERM); /* not locked */
    /* A free lock is taken even with a bad abstime (checked only to block). */
    EXPECT(klock_mutex_timedlock(m, &bad), 0);
    /* Any thread may unlock a normal mutex. */
    on_other_thread(expect_unlock_ok, m);
    EXPECT(klock_mutex_trylock(m), 0);
    EXPECT(klock_mutex_unlock(m), 0);
    struct timespec later = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(klock_mutex_clocklock(m, CLOCK_MONOTONIC, &later), 0);
    EXPECT(klock_mutex_unlock(m), 0);
}

static void recursive(klock_mutex_t *m) {
    PHASE("recursive kind");
    struct timespec later = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_mutex_lock(m), 0);
    EXPECT(klock_mutex_lock(m), 0);
    EXPECT(klock_mutex_trylock(m), 0);
    EXPECT(klock_mutex_timedlock(m, &later), 0);
    on_other_thread(expect_trylock_busy, m);
    on_other_thread(expect_unlock_eperm, m);
    on_other_thread(expect_timeouts, m);
    EXPECT(klock_mutex_destroy(m), EBUSY);
    for (int i = 0; i < 4; i++)
        EXPECT(klock_mutex_unlock(m), 0);
    EXPECT(klock_mutex_unlock(m), EPERM);
    on_other_thread(expect_unlock_eperm, m);
}

static void errorcheck(klock_mutex_t *m) {
    PHASE("errorcheck kind");
    struct timespec later = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_mutex_unlock(m), EPERM);
    EXPECT(klock_mutex_lock(m), 0);
    EXPECT(klock_mutex_lock(m), EDEADLK);
    EXPECT(klock_mutex_trylock(m), EBUSY);
    EXPECT(klock_mutex_timedlock(m, &later), EDEADLK);
    EXPECT(klock_mutex_clocklock(m, CLOCK_MONOTONIC, &later), EDEADLK);
    on_other_thread(expect_trylock_busy, m);
    on_other_thread(expect_unlock_eperm, m);
    on_other_thread(expect_timeouts, m);
    EXPECT(klock_mutex_destroy(m), EBUSY);
    EXPECT(klock_mutex_unlock(m), 0);
    EXPECT(klock_mutex_unlock(m), EPERM);
}

static void destroyed(void) {
    PHASE("destroyed");
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    klock_mutex_t m;
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_ERRORCHECK), 0);
    EXPECT(klock_mutex_destroy(&m), 0);
    EXPECT(klock_mutex_lock(&m), EINVAL);
    EXPECT(klock_mutex_trylock(&m), EINVAL);
    EXPECT(klock_mutex_timedlock(&m, &ts), EINVAL);
    EXPECT(klock_mutex_clocklock(&m, CLOCK_REALTIME, &ts), EINVAL);
    EXPECT(klock_mutex_unlock(&m), EINVAL);
    EXPECT(klock_mutex_destroy(&m), EINVAL);
    /* init makes it usable again, with a new kind. */
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_RECURSIVE), 0);
    EXPECT(klock_mutex_lock(&m), 0);
    EXPECT(klock_mutex_lock(&m), 0);
    EXPECT(klock_mutex_unlock(&m), 0);
    EXPECT(klock_mutex_unlock(&m), 0);
    EXPECT(klock_mutex_destroy(&m), 0);
}

/* A timed lock that gets the mutex when the holder releases it in time. */
static klock_mutex_t handoff_m = KLOCK_MUTEX_INITIALIZER;
static volatile pid_t timed_waiter_tid;
static void *timed_waiter(void *arg) {
    (void)arg;
    timed_waiter_tid = gettid();
    struct timespec ts = in_ms(CLOCK_MONOTONIC, 5000);
    EXPECT(klock_mutex_clocklock(&handoff_m, CLOCK_MONOTONIC, &ts), 0);
    EXPECT(klock_mutex_unlock(&handoff_m), 0);
    return NULL;
}

static void timed_success(void) {
    PHASE("timed lock succeeds when released");
    EXPECT(klock_mutex_lock(&handoff_m), 0);
    pthread_t t = spawn(timed_waiter, NULL);
    while (!timed_waiter_tid)
        sched_yield();
    wait_thread_blocked(timed_waiter_tid); /* it waits in the timed lock */
    EXPECT(klock_mutex_unlock(&handoff_m), 0);
    pthread_join(t, NULL);
}

/* Counter: THREADS threads, ITERS increments each, mixing lock, trylock
 * and timedlock; a lost update shows as a wrong total. */
#define THREADS 4
#define ITERS 20000
static klock_mutex_t counter_m;
static volatile long counter;

static pthread_barrier_t start;

static void *count(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start); /* all at once: contention */
    for (int i = 0; i < ITERS; i++) {
        int r;
        if (i % 3 == 0) {
            while ((r = klock_mutex_trylock(&counter_m)) == EBUSY)
                sched_yield();
            EXPECT(r, 0);
        } else if (i % 3 == 1) {
            struct timespec ts = in_ms(CLOCK_REALTIME, 10000);
            EXPECT(klock_mutex_timedlock(&counter_m, &ts), 0);
        } else {
            EXPECT(klock_mutex_lock(&counter_m), 0);
        }
        long c = counter;
        if ((i + id) % 64 == 0)
            sched_yield(); /* get preempted inside, now and then */
        counter = c + 1;
        EXPECT(klock_mutex_unlock(&counter_m), 0);
    }
    return NULL;
}

static void threaded_counter(int kind) {
    PHASE("threaded counter");
    pthread_t t[THREADS];
    EXPECT(klock_mutex_init(&counter_m, kind), 0);
    counter = 0;
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        t[i] = spawn(count, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    if (counter != (long)THREADS * ITERS)
        FAIL("kind %d: counter %ld, expected %ld (lost updates)", kind, counter,
             (long)THREADS * ITERS);
    EXPECT(klock_mutex_destroy(&counter_m), 0);
}

int main(void) {
    watchdog(60);
    klock_mutex_t m;

    null_pointers();
    bad_kinds_and_clocks();

    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_NORMAL), 0);
    normal(&m);
    EXPECT(klock_mutex_destroy(&m), 0);
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_RECURSIVE), 0);
    recursive(&m);
    EXPECT(klock_mutex_destroy(&m), 0);
    EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_ERRORCHECK), 0);
    errorcheck(&m);
    EXPECT(klock_mutex_destroy(&m), 0);

    PHASE("static initialisers");
    normal(&st_normal);
    recursive(&st_recursive);
    errorcheck(&st_errorcheck);

    destroyed();
    timed_success();
    threaded_counter(KLOCK_MUTEX_NORMAL);
    threaded_counter(KLOCK_MUTEX_RECURSIVE);
    threaded_counter(KLOCK_MUTEX_ERRORCHECK);

    pass("mutex");
    return 0;
}
