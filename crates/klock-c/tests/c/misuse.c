/* Misuse klock detects, as a C caller sees it: an error code and at most
 * one line in klock's words on stderr, never Rust's panic text.
 *
 * Without an argument (as tests/c_api.rs runs every program) it checks the
 * returns, and exits 0:
 *   - a mutex whose kind is garbage (memory that was never initialised, or
 *     was overwritten) is EINVAL for every call, as glibc's
 *     pthread_mutex_lock is on a mutex of an invalid type;
 *   - one condvar waited on with two mutexes at once: EINVAL for the second
 *     waiter, whose mutex stays held.
 * With an argument, one case on its own, for c_api.rs to check the stderr
 * and the exit:
 *   two-mutexes    the condvar misuse alone (exit 0);
 *   corrupt-mutex  a mutex word naming a queue of waiters that does not
 *                  exist: klock aborts with its one-line message;
 *   corrupt-rwlock the same for an rwlock;
 *   spin-variant   print klock_spinlock_variant() (reads the tunables: the
 *                  KLOCK_* warnings, if any, come out; exit 0). */
#include "common.h"

/* A mutex of every kind value klock does not serve: each call is EINVAL
 * and changes nothing. */
static void garbage_kinds(void) {
    PHASE("garbage kinds");
    const unsigned kinds[] = {4, 7, 77, 0x20, 0xdeadbeefu, 0x80000000u};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        klock_mutex_t m = KLOCK_MUTEX_INITIALIZER;
        klock_cond_t c = KLOCK_COND_INITIALIZER;
        struct timespec ts = in_ms(CLOCK_REALTIME, 10);
        m.opaque[4] = kinds[i];
        EXPECT(klock_mutex_lock(&m), EINVAL);
        EXPECT(klock_mutex_trylock(&m), EINVAL);
        EXPECT(klock_mutex_timedlock(&m, &ts), EINVAL);
        EXPECT(klock_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), EINVAL);
        EXPECT(klock_mutex_unlock(&m), EINVAL);
        EXPECT(klock_cond_wait(&c, &m), EINVAL);
        EXPECT(klock_cond_timedwait(&c, &m, &ts), EINVAL);
        EXPECT(klock_mutex_destroy(&m), EINVAL);
        CHECK(m.opaque[0] == 0 && m.opaque[4] == kinds[i]);
        /* init repairs it, as for a destroyed mutex. */
        EXPECT(klock_mutex_init(&m, KLOCK_MUTEX_NORMAL), 0);
        EXPECT(klock_mutex_lock(&m), 0);
        EXPECT(klock_mutex_unlock(&m), 0);
        EXPECT(klock_mutex_destroy(&m), 0);
    }
}

static klock_mutex_t two_m1 = KLOCK_MUTEX_INITIALIZER;
static klock_mutex_t two_m2 = KLOCK_MUTEX_INITIALIZER;
static klock_cond_t two_c = KLOCK_COND_INITIALIZER;
static int two_done;

/* The first waiter: waits on two_c with two_m1 until told. */
static void *first_waiter(void *arg) {
    (void)arg;
    EXPECT(klock_mutex_lock(&two_m1), 0);
    while (!two_done)
        EXPECT(klock_cond_wait(&two_c, &two_m1), 0);
    EXPECT(klock_mutex_unlock(&two_m1), 0);
    return NULL;
}

static void two_mutexes(void) {
    PHASE("two mutexes on one condvar");
    EXPECT(klock_mutex_lock(&two_m1), 0);
    pthread_t t = spawn(first_waiter, NULL);
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
    EXPECT(klock_mutex_lock(&two_m2), 0);
    struct timespec ts = in_ms(CLOCK_REALTIME, 60000);
    EXPECT(klock_cond_wait(&two_c, &two_m2), EINVAL);
    EXPECT(klock_cond_timedwait(&two_c, &two_m2, &ts), EINVAL);
    EXPECT(klock_mutex_trylock(&two_m2), EBUSY); /* still held */
    EXPECT(klock_mutex_unlock(&two_m2), 0);
    EXPECT(klock_mutex_lock(&two_m1), 0);
    two_done = 1;
    EXPECT(klock_cond_broadcast(&two_c), 0);
    EXPECT(klock_mutex_unlock(&two_m1), 0);
    pthread_join(t, NULL);
}

/* Owner id 5 with the WAITERS flag, and a wait-list head (0xdead....) that
 * names no queue node: the unlock that wakes the first waiter finds it. */
static void corrupt_mutex(void) {
    PHASE("corrupt mutex");
    klock_mutex_t m = KLOCK_MUTEX_INITIALIZER;
    m.opaque[0] = (5u << 5) | 1u;
    m.opaque[1] = 0xdeadbeefu;
    int r = klock_mutex_unlock(&m); /* a normal mutex: any thread may */
    FAIL("klock_mutex_unlock of a corrupted mutex returned %d (%s): expected an abort", r,
         errname(r));
}

/* A write-held rwlock (WRITER | WAITERS) whose wait-list head names no
 * queue node. */
static void corrupt_rwlock(void) {
    PHASE("corrupt rwlock");
    klock_rwlock_t l = KLOCK_RWLOCK_INITIALIZER;
    EXPECT(klock_rwlock_wrlock(&l), 0);
    l.opaque[0] |= 2u;          /* WAITERS */
    l.opaque[2] = 0xdeadbeefu;  /* the wait list's head */
    int r = klock_rwlock_unlock(&l);
    FAIL("klock_rwlock_unlock of a corrupted rwlock returned %d (%s): expected an abort", r,
         errname(r));
}

int main(int argc, char **argv) {
    watchdog(60);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "two-mutexes") == 0) {
        two_mutexes();
    } else if (strcmp(mode, "corrupt-mutex") == 0) {
        corrupt_mutex();
    } else if (strcmp(mode, "corrupt-rwlock") == 0) {
        corrupt_rwlock();
    } else if (strcmp(mode, "spin-variant") == 0) {
        printf("spinlock variant %s\n", klock_spinlock_variant());
    } else if (*mode) {
        FAIL("unknown mode %s", mode);
    } else {
        garbage_kinds();
        two_mutexes();
    }
    pass(*mode ? mode : "misuse");
    return 0;
}
