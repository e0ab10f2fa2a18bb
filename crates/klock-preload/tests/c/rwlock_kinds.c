/* Rwlock kinds (pthread_rwlockattr_setkind_np(3)) seen by a new reader while
 * the lock is read-held and a writer waits for it.
 *
 * The scene: the main thread holds a read lock; writer W blocks in
 * pthread_rwlock_wrlock (checked: asleep in the kernel, not inside); then
 * another thread T asks for a read lock with tryrdlock, timedrdlock or
 * clockrdlock.
 *
 * - Reader-preferring kinds (glibc's default, i.e. the all-zero
 *   PTHREAD_RWLOCK_INITIALIZER and pthread_rwlock_init with no attribute;
 *   PTHREAD_RWLOCK_PREFER_READER_NP; PTHREAD_RWLOCK_PREFER_WRITER_NP, which
 *   glibc treats the same way): T gets the read lock at once, so tryrdlock
 *   returns 0 and the timed calls return 0 well before their deadline.
 * - PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP (by attribute and by the
 *   static PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP): a new reader
 *   waits behind the writer, so tryrdlock is EBUSY and the timed calls
 *   ETIMEDOUT.
 *
 * Afterwards the main thread unlocks and W must get the lock.
 *
 * Optional arguments: one part to run (static, init, reader, writer,
 * nonrecursive, nonrecursive-static), then one operation (0 tryrdlock,
 * 1 timedrdlock, 2 clockrdlock on CLOCK_MONOTONIC, 3 on CLOCK_REALTIME);
 * default all. */
#include "common.h"
#include <stdatomic.h>

#define GRANT_MS 3000 /* deadline of timed calls that must succeed */
#define DENY_MS 100   /* deadline of timed calls that must time out */

enum op { OP_TRY, OP_TIMED, OP_CLOCK_MONO, OP_CLOCK_REAL };
static const char *op_name[] = {"tryrdlock", "timedrdlock",
                                "clockrdlock(CLOCK_MONOTONIC)",
                                "clockrdlock(CLOCK_REALTIME)"};

struct scene {
    pthread_rwlock_t *rw;
    enum op op;
    int granted; /* expected: 1 = reader admitted, 0 = refused */
    int rc;
    atomic_int w_tid, w_state; /* W: 1 = about to block, 2 = got the lock */
};

static void *writer_w(void *arg) {
    struct scene *s = arg;
    atomic_store(&s->w_tid, (int)gettid());
    atomic_store(&s->w_state, 1);
    OK(pthread_rwlock_wrlock(s->rw));
    atomic_store(&s->w_state, 2);
    OK(pthread_rwlock_unlock(s->rw));
    return NULL;
}

static void *reader_t(void *arg) {
    struct scene *s = arg;
    long ms = s->granted ? GRANT_MS : DENY_MS;
    struct timespec d;
    switch (s->op) {
    case OP_TRY:
        s->rc = pthread_rwlock_tryrdlock(s->rw);
        break;
    case OP_TIMED:
        d = deadline_ms(CLOCK_REALTIME, ms);
        s->rc = pthread_rwlock_timedrdlock(s->rw, &d);
        if (s->rc == ETIMEDOUT)
            CHECK_NOT_EARLY(CLOCK_REALTIME, d, "timedrdlock");
        break;
    case OP_CLOCK_MONO:
        d = deadline_ms(CLOCK_MONOTONIC, ms);
        s->rc = pthread_rwlock_clockrdlock(s->rw, CLOCK_MONOTONIC, &d);
        if (s->rc == ETIMEDOUT)
            CHECK_NOT_EARLY(CLOCK_MONOTONIC, d, "clockrdlock");
        break;
    case OP_CLOCK_REAL:
        d = deadline_ms(CLOCK_REALTIME, ms);
        s->rc = pthread_rwlock_clockrdlock(s->rw, CLOCK_REALTIME, &d);
        if (s->rc == ETIMEDOUT)
            CHECK_NOT_EARLY(CLOCK_REALTIME, d, "clockrdlock");
        break;
    }
    if (s->rc == 0) {
        CHECK(atomic_load(&s->w_state) == 1, "writer inside with a reader");
        OK(pthread_rwlock_unlock(s->rw));
    }
    return NULL;
}

static void scene(pthread_rwlock_t *rw, enum op op, int granted) {
    struct scene s;
    memset(&s, 0, sizeof s);
    s.rw = rw;
    s.op = op;
    s.granted = granted;
    s.rc = -1;

    OK(pthread_rwlock_rdlock(rw));
    pthread_t w = spawn(writer_w, &s);
    while (atomic_load(&s.w_state) == 0)
        sched_yield();
    wait_thread_blocked(atomic_load(&s.w_tid));
    sleep_ms(10);
    CHECK(atomic_load(&s.w_state) == 1, "writer got in while a reader held the lock");

    join(spawn(reader_t, &s));
    if (granted)
        CHECK(s.rc == 0, "%s by a new reader while read-held with a writer waiting: "
              "got %s, expected 0 (reader-preferring kind)", op_name[op], errname(s.rc));
    else
        CHECK(s.rc == (op == OP_TRY ? EBUSY : ETIMEDOUT),
              "%s by a new reader while read-held with a writer waiting: got %s, "
              "expected %s (PREFER_WRITER_NONRECURSIVE_NP)", op_name[op],
              errname(s.rc), op == OP_TRY ? "EBUSY" : "ETIMEDOUT");

    CHECK(atomic_load(&s.w_state) == 1, "writer got in while a reader held the lock");
    OK(pthread_rwlock_unlock(rw));
    join(w);
    CHECK(atomic_load(&s.w_state) == 2, "writer state %d", atomic_load(&s.w_state));
}

static int only_op = -1; /* second argument: one operation (0-3) */

static void every_op(pthread_rwlock_t *rw, int granted) {
    for (enum op op = OP_TRY; op <= OP_CLOCK_REAL; op++)
        if (only_op < 0 || (int)op == only_op)
            scene(rw, op, granted);
}

static void with_kind(int kind, int granted) {
    pthread_rwlockattr_t a;
    pthread_rwlock_t rw;
    int got = -1;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, kind));
    OK(pthread_rwlockattr_getkind_np(&a, &got));
    CHECK(got == kind, "kind %d, set %d", got, kind);
    OK(pthread_rwlock_init(&rw, &a));
    OK(pthread_rwlockattr_destroy(&a));
    every_op(&rw, granted);
    OK(pthread_rwlock_destroy(&rw));
    /* Re-initialised without an attribute: the default kind again. */
    OK(pthread_rwlock_init(&rw, NULL));
    every_op(&rw, 1);
    OK(pthread_rwlock_destroy(&rw));
}

static pthread_rwlock_t static_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t static_wnr = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
#define RUN(name) (!only || strcmp(only, name) == 0)
    if (argc > 2)
        only_op = atoi(argv[2]);
    watchdog(60);
    if (RUN("static")) {
        phase("PTHREAD_RWLOCK_INITIALIZER (default kind)");
        every_op(&static_rw, 1);
    }
    if (RUN("init")) {
        phase("pthread_rwlock_init(NULL) (default kind)");
        pthread_rwlock_t rw;
        OK(pthread_rwlock_init(&rw, NULL));
        every_op(&rw, 1);
        OK(pthread_rwlock_destroy(&rw));
    }
    if (RUN("reader")) {
        phase("PTHREAD_RWLOCK_PREFER_READER_NP");
        with_kind(PTHREAD_RWLOCK_PREFER_READER_NP, 1);
    }
    if (RUN("writer")) {
        phase("PTHREAD_RWLOCK_PREFER_WRITER_NP (reader-preferring in glibc)");
        with_kind(PTHREAD_RWLOCK_PREFER_WRITER_NP, 1);
    }
    if (RUN("nonrecursive")) {
        phase("PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP (attribute)");
        with_kind(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, 0);
    }
    if (RUN("nonrecursive-static")) {
        phase("PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP");
        every_op(&static_wnr, 0);
    }
    pass("rwlock_kinds");
    return 0;
}
