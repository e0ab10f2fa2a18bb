/* Timed waits.  Mutex: pthread_mutex_timedlock (ETIMEDOUT, EINVAL for a bad
 * tv_nsec while the lock is held, success when released in time),
 * pthread_mutex_clocklock on CLOCK_REALTIME and CLOCK_MONOTONIC (and EINVAL
 * for an unsupported clock).  Condvar: pthread_cond_timedwait with the
 * default clock and with a CLOCK_MONOTONIC condattr, pthread_cond_clockwait
 * on both clocks; each times out with the mutex re-acquired, and each wakes
 * early when signalled.  Rwlock: timedrdlock, timedwrlock, clockrdlock,
 * clockwrlock time out against a conflicting holder.
 *
 * The only timing property checked is that a call that reported ETIMEDOUT
 * did not return before its deadline on the clock it was given. */
#include "common.h"

#define SHORT_MS 60   /* timeouts expected to expire */
#define LONG_MS 30000 /* timeouts that must not expire */

/* ---- a helper thread that holds a lock until told to let go ----------- */

enum hold_kind { HOLD_MUTEX, HOLD_RDLOCK, HOLD_WRLOCK };
struct holder {
    enum hold_kind kind;
    void *lock;
    long release_after_ms; /* < 0: release when `release` is set */
    pthread_mutex_t m;
    pthread_cond_t c;
    int held, release;
};

static void *holder_fn(void *arg) {
    struct holder *h = arg;
    if (h->kind == HOLD_MUTEX)
        OK(pthread_mutex_lock(h->lock));
    else if (h->kind == HOLD_RDLOCK)
        OK(pthread_rwlock_rdlock(h->lock));
    else
        OK(pthread_rwlock_wrlock(h->lock));
    OK(pthread_mutex_lock(&h->m));
    h->held = 1;
    OK(pthread_cond_broadcast(&h->c));
    if (h->release_after_ms >= 0) {
        OK(pthread_mutex_unlock(&h->m));
        sleep_ms(h->release_after_ms);
    } else {
        while (!h->release)
            OK(pthread_cond_wait(&h->c, &h->m));
        OK(pthread_mutex_unlock(&h->m));
    }
    if (h->kind == HOLD_MUTEX)
        OK(pthread_mutex_unlock(h->lock));
    else
        OK(pthread_rwlock_unlock(h->lock));
    return NULL;
}

static pthread_t hold(struct holder *h, enum hold_kind kind, void *lock,
                      long release_after_ms) {
    memset(h, 0, sizeof *h);
    h->kind = kind;
    h->lock = lock;
    h->release_after_ms = release_after_ms;
    OK(pthread_mutex_init(&h->m, NULL));
    OK(pthread_cond_init(&h->c, NULL));
    pthread_t t = spawn(holder_fn, h);
    OK(pthread_mutex_lock(&h->m));
    while (!h->held)
        OK(pthread_cond_wait(&h->c, &h->m));
    OK(pthread_mutex_unlock(&h->m));
    return t;
}

/* Join a holder that releases by itself (release_after_ms >= 0). */
static void finish(struct holder *h, pthread_t t) {
    join(t);
    OK(pthread_cond_destroy(&h->c));
    OK(pthread_mutex_destroy(&h->m));
}

static void release(struct holder *h, pthread_t t) {
    OK(pthread_mutex_lock(&h->m));
    h->release = 1;
    OK(pthread_cond_broadcast(&h->c));
    OK(pthread_mutex_unlock(&h->m));
    finish(h, t);
}

/* ---- mutex ------------------------------------------------------------- */

/* No other holder: each timed variant just locks. */
static void mutex_uncontended(pthread_mutex_t *m) {
    struct timespec dl;
    phase("mutex_timedlock: uncontended");
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_mutex_timedlock(m, &dl));
    OK(pthread_mutex_unlock(m));
    dl = deadline_ms(CLOCK_MONOTONIC, LONG_MS);
    OK(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl));
    OK(pthread_mutex_unlock(m));
}

/* Another thread holds *m: each timed variant times out (not early) or rejects
 * its arguments, and none takes the mutex from the holder. */
static void mutex_held_elsewhere(pthread_mutex_t *m) {
    struct holder h;
    struct timespec dl;
    pthread_t t = hold(&h, HOLD_MUTEX, m, -1);

    phase("mutex_timedlock: times out (CLOCK_REALTIME)");
    for (int i = 0; i < 3; i++) {
        dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
        EXPECT_RC(pthread_mutex_timedlock(m, &dl), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_mutex_timedlock");
    }
    phase("mutex_timedlock: deadline in the past");
    dl = now_on(CLOCK_REALTIME);
    dl.tv_sec -= 10;
    EXPECT_RC(pthread_mutex_timedlock(m, &dl), ETIMEDOUT);
    dl.tv_sec = -1;
    dl.tv_nsec = 0;
    EXPECT_RC(pthread_mutex_timedlock(m, &dl), ETIMEDOUT);

    phase("mutex_timedlock: invalid tv_nsec while held");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    dl.tv_nsec = 1000000000L;
    EXPECT_RC(pthread_mutex_timedlock(m, &dl), EINVAL);
    dl.tv_nsec = -1;
    EXPECT_RC(pthread_mutex_timedlock(m, &dl), EINVAL);
    dl.tv_nsec = 1000000000L;
    EXPECT_RC(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl), EINVAL);

    phase("mutex_clocklock: times out (CLOCK_REALTIME)");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_mutex_clocklock(m, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_mutex_clocklock(REALTIME)");

    phase("mutex_clocklock: times out (CLOCK_MONOTONIC)");
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_MONOTONIC, dl, "pthread_mutex_clocklock(MONOTONIC)");

    phase("mutex_clocklock: unsupported clock");
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);

    /* The failed attempts left the mutex held by the holder. */
    EXPECT_RC(pthread_mutex_trylock(m), EBUSY);
    release(&h, t);
}

/* The holder lets go 30 ms in: each timed variant gets the mutex. */
static void mutex_released_in_time(pthread_mutex_t *m) {
    struct holder h;
    struct timespec dl;
    phase("mutex_timedlock: acquired when released before the deadline");
    pthread_t t = hold(&h, HOLD_MUTEX, m, 30);
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_mutex_timedlock(m, &dl));
    OK(pthread_mutex_unlock(m));
    finish(&h, t);
    t = hold(&h, HOLD_MUTEX, m, 30);
    dl = deadline_ms(CLOCK_MONOTONIC, LONG_MS);
    OK(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl));
    OK(pthread_mutex_unlock(m));
    finish(&h, t);
    t = hold(&h, HOLD_MUTEX, m, 30);
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_mutex_clocklock(m, CLOCK_REALTIME, &dl));
    OK(pthread_mutex_unlock(m));
    finish(&h, t);
}

/* The owner's own timed lock: EDEADLK on an errorcheck mutex, one more level
 * on a recursive one. */
static void mutex_timed_by_owner(void) {
    struct timespec dl;
    phase("mutex_timedlock: errorcheck and recursive owners");
    pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    OK(pthread_mutex_lock(&e));
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_mutex_timedlock(&e, &dl), EDEADLK);
    OK(pthread_mutex_unlock(&e));
    OK(pthread_mutex_lock(&r));
    OK(pthread_mutex_timedlock(&r, &dl));
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    OK(pthread_mutex_clocklock(&r, CLOCK_MONOTONIC, &dl));
    OK(pthread_mutex_unlock(&r));
    OK(pthread_mutex_unlock(&r));
    OK(pthread_mutex_unlock(&r));
    EXPECT_RC(pthread_mutex_unlock(&r), EPERM);
}

static void test_mutex_timedlock(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    mutex_uncontended(&m);
    mutex_held_elsewhere(&m);
    mutex_released_in_time(&m);
    mutex_timed_by_owner();
}

/* ---- condvar ----------------------------------------------------------- */

struct cv {
    pthread_mutex_t m; /* errorcheck, so ownership can be checked */
    pthread_cond_t c;
    int flag;
    long delay_ms;
};

static void cv_init(struct cv *v, clockid_t attr_clock) {
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutex_init(&v->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    pthread_condattr_t ca;
    clockid_t got = -1;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setclock(&ca, attr_clock));
    OK(pthread_condattr_getclock(&ca, &got));
    CHECK(got == attr_clock, "condattr clock %d, set %d", (int)got, (int)attr_clock);
    OK(pthread_cond_init(&v->c, &ca));
    OK(pthread_condattr_destroy(&ca));
    v->flag = 0;
}

static void cv_destroy(struct cv *v) {
    OK(pthread_cond_destroy(&v->c));
    OK(pthread_mutex_destroy(&v->m));
}

/* After a timed wait returned, this thread must own the errorcheck mutex. */
static void expect_owned(struct cv *v) {
    EXPECT_RC(pthread_mutex_lock(&v->m), EDEADLK);
}

static void *cv_setter(void *arg) {
    struct cv *v = arg;
    sleep_ms(v->delay_ms);
    OK(pthread_mutex_lock(&v->m));
    v->flag = 1;
    OK(pthread_cond_signal(&v->c));
    OK(pthread_mutex_unlock(&v->m));
    return NULL;
}

/* mode: 0 = pthread_cond_timedwait (uses the condattr clock),
 *       1 = pthread_cond_clockwait(clk). */
static int cv_wait(struct cv *v, int mode, clockid_t clk,
                   const struct timespec *dl) {
    return mode == 0 ? pthread_cond_timedwait(&v->c, &v->m, dl)
                     : pthread_cond_clockwait(&v->c, &v->m, clk, dl);
}

static void cv_case(const char *name, clockid_t attr_clock, int mode,
                    clockid_t clk) {
    struct cv v;
    struct timespec dl;
    cv_init(&v, attr_clock);

    phase(name);
    /* 1. Nobody signals: times out, not early, mutex re-acquired. */
    OK(pthread_mutex_lock(&v.m));
    for (int i = 0; i < 2; i++) {
        dl = deadline_ms(clk, SHORT_MS);
        int rc;
        do
            rc = cv_wait(&v, mode, clk, &dl);
        while (rc == 0); /* a spurious wake-up is allowed */
        EXPECT_RC(rc, ETIMEDOUT);
        CHECK_NOT_EARLY(clk, dl, name);
        expect_owned(&v);
    }
    /* 2. Deadline already passed. */
    dl = now_on(clk);
    dl.tv_sec -= 1;
    EXPECT_RC(cv_wait(&v, mode, clk, &dl), ETIMEDOUT);
    expect_owned(&v);
    /* 3. Invalid tv_nsec. */
    dl = deadline_ms(clk, SHORT_MS);
    dl.tv_nsec = 1000000000L;
    EXPECT_RC(cv_wait(&v, mode, clk, &dl), EINVAL);
    expect_owned(&v);
    OK(pthread_mutex_unlock(&v.m));

    /* 4. Signalled well before a long deadline: returns 0 with the flag. */
    for (int i = 0; i < 3; i++) {
        v.flag = 0;
        v.delay_ms = i * 10;
        OK(pthread_mutex_lock(&v.m));
        pthread_t t = spawn(cv_setter, &v);
        dl = deadline_ms(clk, LONG_MS);
        while (!v.flag)
            OK(cv_wait(&v, mode, clk, &dl));
        expect_owned(&v);
        OK(pthread_mutex_unlock(&v.m));
        join(t);
    }
    cv_destroy(&v);
}

static void test_cond(void) {
    cv_case("cond_timedwait, default (REALTIME) condattr", CLOCK_REALTIME, 0,
            CLOCK_REALTIME);
    cv_case("cond_timedwait, CLOCK_MONOTONIC condattr", CLOCK_MONOTONIC, 0,
            CLOCK_MONOTONIC);
    cv_case("cond_clockwait(CLOCK_REALTIME)", CLOCK_REALTIME, 1, CLOCK_REALTIME);
    cv_case("cond_clockwait(CLOCK_MONOTONIC)", CLOCK_REALTIME, 1,
            CLOCK_MONOTONIC);
    /* clockwait's clock overrides the condattr clock. */
    cv_case("cond_clockwait(CLOCK_REALTIME) on a MONOTONIC condvar",
            CLOCK_MONOTONIC, 1, CLOCK_REALTIME);

    phase("cond_clockwait: unsupported clock");
    struct cv v;
    cv_init(&v, CLOCK_REALTIME);
    OK(pthread_mutex_lock(&v.m));
    struct timespec dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_cond_clockwait(&v.c, &v.m, CLOCK_PROCESS_CPUTIME_ID, &dl),
              EINVAL);
    expect_owned(&v);
    OK(pthread_mutex_unlock(&v.m));
    cv_destroy(&v);

    phase("cond_timedwait on a static condvar");
    pthread_cond_t sc = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t sm = PTHREAD_MUTEX_INITIALIZER;
    OK(pthread_mutex_lock(&sm));
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    int rc;
    do
        rc = pthread_cond_timedwait(&sc, &sm, &dl);
    while (rc == 0);
    EXPECT_RC(rc, ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "cond_timedwait (static condvar)");
    EXPECT_RC(pthread_mutex_trylock(&sm), EBUSY);
    OK(pthread_mutex_unlock(&sm));
}

/* ---- rwlock ------------------------------------------------------------ */

/* No other holder: each timed variant just locks. */
static void rwlock_uncontended(pthread_rwlock_t *rw) {
    struct timespec dl;
    phase("rwlock timed: uncontended");
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_rwlock_timedrdlock(rw, &dl));
    OK(pthread_rwlock_unlock(rw));
    OK(pthread_rwlock_timedwrlock(rw, &dl));
    OK(pthread_rwlock_unlock(rw));
    dl = deadline_ms(CLOCK_MONOTONIC, LONG_MS);
    OK(pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &dl));
    OK(pthread_rwlock_unlock(rw));
    OK(pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &dl));
    OK(pthread_rwlock_unlock(rw));
}

/* Another thread write-holds *rw: each timed variant times out (not early) or
 * rejects its arguments. */
static void rwlock_write_held_elsewhere(pthread_rwlock_t *rw) {
    struct holder h;
    struct timespec dl;
    phase("rwlock timed: writer held, every variant times out");
    pthread_t t = hold(&h, HOLD_WRLOCK, rw, -1);
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_rwlock_timedrdlock(rw, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_rwlock_timedrdlock");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_rwlock_timedwrlock(rw, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_rwlock_timedwrlock");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockrdlock(rw, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_rwlock_clockrdlock(REALTIME)");
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_MONOTONIC, dl, "pthread_rwlock_clockrdlock(MONOTONIC)");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockwrlock(rw, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_rwlock_clockwrlock(REALTIME)");
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_MONOTONIC, dl, "pthread_rwlock_clockwrlock(MONOTONIC)");

    phase("rwlock timed: invalid arguments while blocked");
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    dl.tv_nsec = 1000000000L;
    EXPECT_RC(pthread_rwlock_timedrdlock(rw, &dl), EINVAL);
    EXPECT_RC(pthread_rwlock_timedwrlock(rw, &dl), EINVAL);
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockrdlock(rw, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    EXPECT_RC(pthread_rwlock_clockwrlock(rw, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    EXPECT_RC(pthread_rwlock_tryrdlock(rw), EBUSY);
    release(&h, t);
}

/* Another thread read-holds *rw: the timed write locks time out (not early),
 * the timed read locks share. */
static void rwlock_read_held_elsewhere(pthread_rwlock_t *rw) {
    struct holder h;
    struct timespec dl;
    phase("rwlock timed: reader held, writers time out, readers share");
    pthread_t t = hold(&h, HOLD_RDLOCK, rw, -1);
    dl = deadline_ms(CLOCK_REALTIME, SHORT_MS);
    EXPECT_RC(pthread_rwlock_timedwrlock(rw, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, dl, "pthread_rwlock_timedwrlock (reader held)");
    dl = deadline_ms(CLOCK_MONOTONIC, SHORT_MS);
    EXPECT_RC(pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_MONOTONIC, dl, "pthread_rwlock_clockwrlock (reader held)");
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_rwlock_timedrdlock(rw, &dl));
    OK(pthread_rwlock_unlock(rw));
    dl = deadline_ms(CLOCK_MONOTONIC, LONG_MS);
    OK(pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &dl));
    OK(pthread_rwlock_unlock(rw));
    release(&h, t);
}

/* The holder (a writer, then a reader) lets go 30 ms in: the conflicting
 * timed lock gets it. */
static void rwlock_released_in_time(pthread_rwlock_t *rw) {
    struct holder h;
    struct timespec dl;
    phase("rwlock timed: acquired when released before the deadline");
    pthread_t t = hold(&h, HOLD_WRLOCK, rw, 30);
    dl = deadline_ms(CLOCK_MONOTONIC, LONG_MS);
    OK(pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &dl));
    OK(pthread_rwlock_unlock(rw));
    finish(&h, t);
    t = hold(&h, HOLD_RDLOCK, rw, 30);
    dl = deadline_ms(CLOCK_REALTIME, LONG_MS);
    OK(pthread_rwlock_timedwrlock(rw, &dl));
    OK(pthread_rwlock_unlock(rw));
    finish(&h, t);
}

static void test_rwlock(void) {
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    rwlock_uncontended(&rw);
    rwlock_write_held_elsewhere(&rw);
    rwlock_read_held_elsewhere(&rw);
    rwlock_released_in_time(&rw);
    OK(pthread_rwlock_trywrlock(&rw));
    OK(pthread_rwlock_unlock(&rw));
    OK(pthread_rwlock_destroy(&rw));
}

int main(void) {
    watchdog(30);
    test_mutex_timedlock();
    test_cond();
    test_rwlock();
    pass("timed");
    return 0;
}
