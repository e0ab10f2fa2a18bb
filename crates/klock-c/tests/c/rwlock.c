/* klock_rwlock_*: every function, every error code, recursive read locks
 * past a waiting writer, timed locks on both clocks, the static
 * initialiser, and a torn-read check with concurrent readers and writers. */
#include "common.h"

static klock_rwlock_t st_rw = KLOCK_RWLOCK_INITIALIZER;

static void null_pointers(void) {
    PHASE("null pointers");
    struct timespec ts = {0, 0};
    klock_rwlock_t l;
    EXPECT(klock_rwlock_init(NULL), EINVAL);
    EXPECT(klock_rwlock_rdlock(NULL), EINVAL);
    EXPECT(klock_rwlock_tryrdlock(NULL), EINVAL);
    EXPECT(klock_rwlock_timedrdlock(NULL, &ts), EINVAL);
    EXPECT(klock_rwlock_clockrdlock(NULL, CLOCK_MONOTONIC, &ts), EINVAL);
    EXPECT(klock_rwlock_wrlock(NULL), EINVAL);
    EXPECT(klock_rwlock_trywrlock(NULL), EINVAL);
    EXPECT(klock_rwlock_timedwrlock(NULL, &ts), EINVAL);
    EXPECT(klock_rwlock_clockwrlock(NULL, CLOCK_MONOTONIC, &ts), EINVAL);
    EXPECT(klock_rwlock_unlock(NULL), EINVAL);
    EXPECT(klock_rwlock_destroy(NULL), EINVAL);
    EXPECT(klock_rwlock_init(&l), 0);
    EXPECT(klock_rwlock_timedrdlock(&l, NULL), EINVAL);
    EXPECT(klock_rwlock_clockrdlock(&l, CLOCK_REALTIME, NULL), EINVAL);
    EXPECT(klock_rwlock_timedwrlock(&l, NULL), EINVAL);
    EXPECT(klock_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, NULL), EINVAL);
    /* Bad clocks: EINVAL before the lock is tried. */
    EXPECT(klock_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    EXPECT(klock_rwlock_clockwrlock(&l, 12345, &ts), EINVAL);
    EXPECT(klock_rwlock_destroy(&l), 0);
}

/* From another thread while `l` is write-locked: nothing can be had. */
static void *blocked_by_writer(void *l) {
    struct timespec past = in_ms(CLOCK_REALTIME, -1), bad = {1, 1000000000L};
    EXPECT(klock_rwlock_tryrdlock(l), EBUSY);
    EXPECT(klock_rwlock_trywrlock(l), EBUSY);
    EXPECT(klock_rwlock_timedrdlock(l, &past), ETIMEDOUT);
    EXPECT(klock_rwlock_timedwrlock(l, &past), ETIMEDOUT);
    struct timespec soon = in_ms(CLOCK_MONOTONIC, 20);
    EXPECT(klock_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    soon = in_ms(CLOCK_MONOTONIC, 20);
    EXPECT(klock_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    EXPECT(klock_rwlock_timedrdlock(l, &bad), EINVAL);
    EXPECT(klock_rwlock_timedwrlock(l, &bad), EINVAL);
    return NULL;
}

/* From another thread while `l` is read-locked: more readers, no writer. */
static void *blocked_by_reader(void *l) {
    struct timespec past = in_ms(CLOCK_MONOTONIC, -1), bad = {1, -5};
    EXPECT(klock_rwlock_tryrdlock(l), 0);
    EXPECT(klock_rwlock_unlock(l), 0);
    EXPECT(klock_rwlock_trywrlock(l), EBUSY);
    EXPECT(klock_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &past), ETIMEDOUT);
    struct timespec soon = in_ms(CLOCK_REALTIME, 20);
    EXPECT(klock_rwlock_timedwrlock(l, &soon), ETIMEDOUT);
    EXPECT(klock_rwlock_clockwrlock(l, CLOCK_REALTIME, &bad), EINVAL);
    /* A read lock is free to take: a bad time is not even looked at. */
    EXPECT(klock_rwlock_timedrdlock(l, &bad), 0);
    EXPECT(klock_rwlock_unlock(l), 0);
    return NULL;
}

static void single_thread(klock_rwlock_t *l) {
    PHASE("single thread");
    struct timespec later = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_rwlock_unlock(l), EPERM);
    EXPECT(klock_rwlock_wrlock(l), 0);
    EXPECT(klock_rwlock_rdlock(l), EDEADLK);
    EXPECT(klock_rwlock_wrlock(l), EDEADLK);
    EXPECT(klock_rwlock_timedrdlock(l, &later), EDEADLK);
    EXPECT(klock_rwlock_timedwrlock(l, &later), EDEADLK);
    EXPECT(klock_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &later), EDEADLK);
    EXPECT(klock_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &later), EDEADLK);
    EXPECT(klock_rwlock_tryrdlock(l), EBUSY);
    EXPECT(klock_rwlock_trywrlock(l), EBUSY);
    EXPECT(klock_rwlock_destroy(l), EBUSY);
    on_other_thread(blocked_by_writer, l);
    EXPECT(klock_rwlock_unlock(l), 0);
    EXPECT(klock_rwlock_unlock(l), EPERM);

    EXPECT(klock_rwlock_rdlock(l), 0);
    EXPECT(klock_rwlock_tryrdlock(l), 0);
    later = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(klock_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &later), 0);
    later = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_rwlock_timedrdlock(l, &later), 0);
    EXPECT(klock_rwlock_trywrlock(l), EBUSY);
    EXPECT(klock_rwlock_destroy(l), EBUSY);
    on_other_thread(blocked_by_reader, l);
    for (int i = 0; i < 4; i++)
        EXPECT(klock_rwlock_unlock(l), 0);
    EXPECT(klock_rwlock_unlock(l), EPERM);

    later = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(klock_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &later), 0);
    EXPECT(klock_rwlock_unlock(l), 0);
    later = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(klock_rwlock_timedwrlock(l, &later), 0);
    EXPECT(klock_rwlock_unlock(l), 0);
    EXPECT(klock_rwlock_trywrlock(l), 0);
    EXPECT(klock_rwlock_unlock(l), 0);
}

static void destroyed(void) {
    PHASE("destroyed");
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    klock_rwlock_t l;
    EXPECT(klock_rwlock_init(&l), 0);
    EXPECT(klock_rwlock_destroy(&l), 0);
    EXPECT(klock_rwlock_rdlock(&l), EINVAL);
    EXPECT(klock_rwlock_tryrdlock(&l), EINVAL);
    EXPECT(klock_rwlock_timedrdlock(&l, &ts), EINVAL);
    EXPECT(klock_rwlock_clockrdlock(&l, CLOCK_REALTIME, &ts), EINVAL);
    EXPECT(klock_rwlock_wrlock(&l), EINVAL);
    EXPECT(klock_rwlock_trywrlock(&l), EINVAL);
    EXPECT(klock_rwlock_timedwrlock(&l, &ts), EINVAL);
    EXPECT(klock_rwlock_clockwrlock(&l, CLOCK_REALTIME, &ts), EINVAL);
    EXPECT(klock_rwlock_unlock(&l), EINVAL);
    EXPECT(klock_rwlock_destroy(&l), EINVAL);
    EXPECT(klock_rwlock_init(&l), 0);
    EXPECT(klock_rwlock_wrlock(&l), 0);
    EXPECT(klock_rwlock_unlock(&l), 0);
    EXPECT(klock_rwlock_destroy(&l), 0);
}

/* A reader that holds the lock takes it again while a writer waits. */
static klock_rwlock_t rec_l = KLOCK_RWLOCK_INITIALIZER;
static volatile int writer_in;
static volatile pid_t writer_tid;
static void *writer(void *arg) {
    (void)arg;
    writer_tid = gettid();
    EXPECT(klock_rwlock_wrlock(&rec_l), 0);
    writer_in = 1;
    EXPECT(klock_rwlock_unlock(&rec_l), 0);
    return NULL;
}

static void recursive_read(void) {
    PHASE("recursive read past a waiting writer");
    EXPECT(klock_rwlock_rdlock(&rec_l), 0);
    pthread_t t = spawn(writer, NULL);
    while (!writer_tid)
        sched_yield();
    wait_thread_blocked(writer_tid); /* the writer is queued, asleep */
    CHECK(!writer_in);
    EXPECT(klock_rwlock_rdlock(&rec_l), 0);
    struct timespec ts = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(klock_rwlock_clockrdlock(&rec_l, CLOCK_MONOTONIC, &ts), 0);
    CHECK(!writer_in);
    for (int i = 0; i < 3; i++)
        EXPECT(klock_rwlock_unlock(&rec_l), 0);
    pthread_join(t, NULL);
    CHECK(writer_in);
}

/* Torn reads: writers store one value in every field; readers (with each
 * read-lock flavour) must always see all fields equal. */
#define FIELDS 16
#define READERS 3
#define WRITERS 2
#define ROUNDS 4000
static klock_rwlock_t data_l = KLOCK_RWLOCK_INITIALIZER;
static volatile unsigned long data[FIELDS];

static void *tear_writer(void *arg) {
    unsigned long id = (unsigned long)arg;
    for (unsigned long i = 0; i < ROUNDS; i++) {
        if (i % 2) {
            struct timespec ts = in_ms(CLOCK_REALTIME, 10000);
            EXPECT(klock_rwlock_timedwrlock(&data_l, &ts), 0);
        } else {
            EXPECT(klock_rwlock_wrlock(&data_l), 0);
        }
        unsigned long v = i * WRITERS + id;
        for (int f = 0; f < FIELDS; f++) {
            data[f] = v;
            if (f == FIELDS / 2 && i % 97 == 0)
                sched_yield();
        }
        EXPECT(klock_rwlock_unlock(&data_l), 0);
    }
    return NULL;
}

static void *tear_reader(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        int r;
        switch (i % 3) {
        case 0:
            EXPECT(klock_rwlock_rdlock(&data_l), 0);
            break;
        case 1:
            while ((r = klock_rwlock_tryrdlock(&data_l)) == EBUSY)
                sched_yield();
            EXPECT(r, 0);
            break;
        default: {
            struct timespec ts = in_ms(CLOCK_MONOTONIC, 10000);
            EXPECT(klock_rwlock_clockrdlock(&data_l, CLOCK_MONOTONIC, &ts), 0);
        }
        }
        unsigned long v = data[0];
        for (int f = 1; f < FIELDS; f++)
            if (data[f] != v)
                FAIL("torn read: field 0 = %lu, field %d = %lu", v, f, data[f]);
        EXPECT(klock_rwlock_unlock(&data_l), 0);
    }
    return NULL;
}

static void torn_reads(void) {
    PHASE("torn-read check");
    pthread_t t[READERS + WRITERS];
    for (long i = 0; i < WRITERS; i++)
        t[i] = spawn(tear_writer, (void *)i);
    for (long i = 0; i < READERS; i++)
        t[WRITERS + i] = spawn(tear_reader, NULL);
    for (int i = 0; i < READERS + WRITERS; i++)
        pthread_join(t[i], NULL);
    EXPECT(klock_rwlock_destroy(&data_l), 0);
}

int main(void) {
    watchdog(60);
    klock_rwlock_t l;
    null_pointers();
    EXPECT(klock_rwlock_init(&l), 0);
    single_thread(&l);
    EXPECT(klock_rwlock_destroy(&l), 0);
    PHASE("static initialiser");
    single_thread(&st_rw);
    destroyed();
    recursive_read();
    torn_reads();
    pass("rwlock");
    return 0;
}
