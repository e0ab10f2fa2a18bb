/* Reader-writer locks: readers really share (all readers hold the lock at
 * once, or the program hangs), a writer excludes readers and writers, the
 * try variants return EBUSY on conflict, a thread may re-take a read lock
 * while a writer is queued (glibc's default reader-preferring kind), writers
 * get in while readers keep coming (default kind and the writer-preferring
 * kind), and several readers never see a torn multi-word value written by
 * several writers. */
#include "common.h"
#include <stdatomic.h>

/* ---- 1. readers share -------------------------------------------------- */

#define SHARE_READERS 4
static pthread_rwlock_t share_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t share_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t share_c = PTHREAD_COND_INITIALIZER;
static int share_inside, share_round;

static void *share_reader(void *arg) {
    (void)arg;
    for (int r = 0; r < 20; r++) {
        OK(pthread_rwlock_rdlock(&share_rw));
        /* Wait, holding the read lock, until every reader holds it. */
        OK(pthread_mutex_lock(&share_m));
        int my_round = share_round;
        if (++share_inside == SHARE_READERS) {
            share_inside = 0;
            share_round++;
            OK(pthread_cond_broadcast(&share_c));
        } else {
            while (share_round == my_round)
                OK(pthread_cond_wait(&share_c, &share_m));
        }
        OK(pthread_mutex_unlock(&share_m));
        /* While the readers are all in, a writer cannot get in. */
        EXPECT_RC(pthread_rwlock_trywrlock(&share_rw), EBUSY);
        OK(pthread_rwlock_unlock(&share_rw));
    }
    return NULL;
}

static void test_share(void) {
    phase("readers share");
    pthread_t t[SHARE_READERS];
    for (int i = 0; i < SHARE_READERS; i++)
        t[i] = spawn(share_reader, NULL);
    for (int i = 0; i < SHARE_READERS; i++)
        join(t[i]);
    CHECK(share_round == 20, "rounds %d", share_round);
}

/* ---- 2. writer excludes; try variants ---------------------------------- */

struct tryres {
    pthread_rwlock_t *rw;
    int rd, wr;
};

static void *try_both(void *arg) {
    struct tryres *r = arg;
    r->rd = pthread_rwlock_tryrdlock(r->rw);
    if (r->rd == 0)
        OK(pthread_rwlock_unlock(r->rw));
    r->wr = pthread_rwlock_trywrlock(r->rw);
    if (r->wr == 0)
        OK(pthread_rwlock_unlock(r->rw));
    return NULL;
}

static struct tryres try_from_other(pthread_rwlock_t *rw) {
    struct tryres r = {rw, -1, -1};
    join(spawn(try_both, &r));
    return r;
}

static void check_try(pthread_rwlock_t *rw) {
    struct tryres r;
    r = try_from_other(rw);
    CHECK(r.rd == 0 && r.wr == 0, "free lock: tryrd %s trywr %s", errname(r.rd),
          errname(r.wr));

    OK(pthread_rwlock_wrlock(rw));
    r = try_from_other(rw);
    CHECK(r.rd == EBUSY && r.wr == EBUSY, "write-held: tryrd %s trywr %s",
          errname(r.rd), errname(r.wr));
    OK(pthread_rwlock_unlock(rw));

    OK(pthread_rwlock_rdlock(rw));
    r = try_from_other(rw);
    CHECK(r.rd == 0 && r.wr == EBUSY, "read-held: tryrd %s trywr %s",
          errname(r.rd), errname(r.wr));
    OK(pthread_rwlock_tryrdlock(rw)); /* second read hold by this thread */
    OK(pthread_rwlock_unlock(rw));
    r = try_from_other(rw);
    CHECK(r.wr == EBUSY, "still read-held: trywr %s", errname(r.wr));
    OK(pthread_rwlock_unlock(rw));

    OK(pthread_rwlock_trywrlock(rw));
    r = try_from_other(rw);
    CHECK(r.rd == EBUSY && r.wr == EBUSY, "trywr-held: tryrd %s trywr %s",
          errname(r.rd), errname(r.wr));
    OK(pthread_rwlock_unlock(rw));
    r = try_from_other(rw);
    CHECK(r.rd == 0 && r.wr == 0, "released: tryrd %s trywr %s", errname(r.rd),
          errname(r.wr));
}

static void test_try(void) {
    phase("try variants (static)");
    pthread_rwlock_t s = PTHREAD_RWLOCK_INITIALIZER;
    check_try(&s);
    OK(pthread_rwlock_destroy(&s));

    phase("try variants (attr, writer-preferring)");
    pthread_rwlockattr_t a;
    int kind = -1;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
    OK(pthread_rwlockattr_getkind_np(&a, &kind));
    CHECK(kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, "kind %d", kind);
    pthread_rwlock_t w;
    OK(pthread_rwlock_init(&w, &a));
    OK(pthread_rwlockattr_destroy(&a));
    check_try(&w);
    OK(pthread_rwlock_destroy(&w));
}

/* ---- 3. recursive read while a writer waits ---------------------------- */

static pthread_rwlock_t rec_rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int rec_writer_state; /* 1 = about to block, 2 = got it */
static atomic_int rec_writer_tid;

static void *rec_writer(void *arg) {
    (void)arg;
    atomic_store(&rec_writer_tid, (int)gettid());
    atomic_store(&rec_writer_state, 1);
    OK(pthread_rwlock_wrlock(&rec_rw));
    atomic_store(&rec_writer_state, 2);
    OK(pthread_rwlock_unlock(&rec_rw));
    return NULL;
}

static void test_recursive_read(void) {
    for (int round = 0; round < 5; round++) {
        phase("recursive read lock while a writer waits");
        atomic_store(&rec_writer_state, 0);
        OK(pthread_rwlock_rdlock(&rec_rw));
        pthread_t w = spawn(rec_writer, NULL);
        while (atomic_load(&rec_writer_state) == 0)
            sched_yield();
        wait_thread_blocked(atomic_load(&rec_writer_tid)); /* queued, asleep */
        CHECK(atomic_load(&rec_writer_state) == 1,
              "writer got in while a reader held the lock");
        /* Default kind: this must not deadlock behind the queued writer. */
        OK(pthread_rwlock_rdlock(&rec_rw));
        CHECK(atomic_load(&rec_writer_state) == 1,
              "writer got in while a reader held the lock");
        OK(pthread_rwlock_unlock(&rec_rw));
        CHECK(atomic_load(&rec_writer_state) == 1,
              "writer got in while a reader held the lock");
        phase("writer after the recursive reader left");
        OK(pthread_rwlock_unlock(&rec_rw));
        join(w);
        CHECK(atomic_load(&rec_writer_state) == 2, "writer state %d",
              atomic_load(&rec_writer_state));
    }
}

/* ---- 4. writers get in while readers keep coming ----------------------- */

#define WE_READERS 3
#define WE_WRITES 200
struct we {
    pthread_rwlock_t rw;
    int reader_pause; /* readers sleep a little between read locks */
    atomic_int readers_in, writer_in, stop;
    atomic_long reads;
};

static void *we_reader(void *arg) {
    struct we *s = arg;
    uint64_t seed = (uint64_t)(uintptr_t)&seed | 1;
    while (!atomic_load(&s->stop)) {
        OK(pthread_rwlock_rdlock(&s->rw));
        atomic_fetch_add(&s->readers_in, 1);
        CHECK(atomic_load(&s->writer_in) == 0, "reader inside with a writer");
        for (volatile int k = (int)(rng_next(&seed) % 200); k > 0; k--) {
        }
        atomic_fetch_add(&s->reads, 1);
        atomic_fetch_sub(&s->readers_in, 1);
        OK(pthread_rwlock_unlock(&s->rw));
        if (s->reader_pause) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void *we_writer(void *arg) {
    struct we *s = arg;
    for (int i = 0; i < WE_WRITES; i++) {
        OK(pthread_rwlock_wrlock(&s->rw));
        CHECK(atomic_fetch_add(&s->writer_in, 1) == 0, "two writers inside");
        CHECK(atomic_load(&s->readers_in) == 0, "writer inside with %d readers",
              atomic_load(&s->readers_in));
        atomic_fetch_sub(&s->writer_in, 1);
        OK(pthread_rwlock_unlock(&s->rw));
        if (i % 16 == 0)
            sched_yield();
    }
    return NULL;
}

static void writers_get_in(int kind, int reader_pause) {
    struct we s;
    memset(&s, 0, sizeof s);
    s.reader_pause = reader_pause;
    pthread_rwlockattr_t a;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, kind));
    OK(pthread_rwlock_init(&s.rw, &a));
    OK(pthread_rwlockattr_destroy(&a));
    pthread_t r[WE_READERS], w[2];
    for (int i = 0; i < WE_READERS; i++)
        r[i] = spawn(we_reader, &s);
    /* Let the readers get going before the writers arrive. */
    while (atomic_load(&s.reads) < 200)
        sched_yield();
    for (int i = 0; i < 2; i++)
        w[i] = spawn(we_writer, &s);
    for (int i = 0; i < 2; i++)
        join(w[i]); /* the writers finishing is the test */
    atomic_store(&s.stop, 1);
    for (int i = 0; i < WE_READERS; i++)
        join(r[i]);
    OK(pthread_rwlock_destroy(&s.rw));
}

static void test_writers_get_in(void) {
    /* Writer-preferring kind: readers hammer back to back, and the writers
     * must still get through. */
    phase("writers get in (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)");
    writers_get_in(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, 0);
    /* Default (reader-preferring in glibc): back-to-back readers may starve
     * writers by design, so the readers leave gaps. */
    phase("writers get in (default kind)");
    writers_get_in(PTHREAD_RWLOCK_DEFAULT_NP, 1);
}

/* ---- 5. torn reads ----------------------------------------------------- */

#define TORN_WORDS 8
#define TORN_WRITERS 2
#define TORN_READERS 3
#define TORN_WRITES 20000
#define TORN_READS 40000 /* per reader */
static pthread_rwlock_t torn_rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile uint64_t torn_data[TORN_WORDS] = {0, 1, 2, 3, 4, 5, 6, 7};

static void *torn_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < TORN_WRITES; i++) {
        OK(pthread_rwlock_wrlock(&torn_rw));
        uint64_t v = torn_data[0] + 1;
        for (int k = 0; k < TORN_WORDS; k++) {
            torn_data[k] = v ^ (uint64_t)k;
            if (k == TORN_WORDS / 2 && (i & 255) == 0)
                sched_yield(); /* stretch some critical sections */
        }
        OK(pthread_rwlock_unlock(&torn_rw));
    }
    return NULL;
}

static void *torn_reader(void *arg) {
    long *changes = arg;
    uint64_t last = 0;
    /* A bounded number of reads, with an occasional gap so that writers get
     * in even with glibc's reader-preferring default. */
    for (int i = 0; i < TORN_READS; i++) {
        if ((i & 31) == 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        OK(pthread_rwlock_rdlock(&torn_rw));
        uint64_t v = torn_data[0];
        for (int k = 1; k < TORN_WORDS; k++)
            CHECK(torn_data[k] == (v ^ (uint64_t)k),
                  "torn read: word %d = %llu, word 0 = %llu", k,
                  (unsigned long long)torn_data[k], (unsigned long long)v);
        CHECK(v >= last, "value went backwards: %llu after %llu",
              (unsigned long long)v, (unsigned long long)last);
        OK(pthread_rwlock_unlock(&torn_rw));
        if (v != last)
            (*changes)++;
        last = v;
    }
    return NULL;
}

static void test_torn(void) {
    phase("torn reads");
    pthread_t w[TORN_WRITERS], r[TORN_READERS];
    long changes[TORN_READERS] = {0};
    for (int i = 0; i < TORN_READERS; i++)
        r[i] = spawn(torn_reader, &changes[i]);
    for (int i = 0; i < TORN_WRITERS; i++)
        w[i] = spawn(torn_writer, NULL);
    for (int i = 0; i < TORN_WRITERS; i++)
        join(w[i]);
    for (int i = 0; i < TORN_READERS; i++)
        join(r[i]);
    CHECK(torn_data[0] == (uint64_t)TORN_WRITERS * TORN_WRITES,
          "lost writes: %llu, expected %d", (unsigned long long)torn_data[0],
          TORN_WRITERS * TORN_WRITES);
}

int main(void) {
    watchdog(40);
    test_share();
    test_try();
    test_recursive_read();
    test_writers_get_in();
    test_torn();
    pass("rwlock");
    return 0;
}
