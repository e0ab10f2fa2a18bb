/* A reader that holds a read lock waits for another reader (glibc's
 * reader-preferring rwlock kinds; pthread_rwlockattr_setkind_np(3)).
 *
 * Thread A takes a read lock and waits on a condvar for a signal.  Writer W
 * then blocks in pthread_rwlock_wrlock (the program checks that W is asleep
 * in the kernel and has not got the lock).  Thread B then takes a read lock
 * too, signals A, and unlocks.  glibc's default kind (the all-zero
 * PTHREAD_RWLOCK_INITIALIZER, pthread_rwlock_init with no attribute, and
 * PTHREAD_RWLOCK_PREFER_READER_NP) admits B while the lock is read-held even
 * though W waits; so does PTHREAD_RWLOCK_PREFER_WRITER_NP, which glibc
 * treats like PREFER_READER_NP.  A lock that queued B behind W would hang:
 * A waits for B, B for W, W for A.  The watchdog turns a hang into FAIL.
 *
 * Optional argument: the name of one lock to test (static, init, reader,
 * writer); default all. */
#include "common.h"
#include <stdatomic.h>

struct scene {
    pthread_rwlock_t *rw;
    pthread_mutex_t m;
    pthread_cond_t c;
    int a_waiting; /* A holds the read lock and waits (under m) */
    int signalled; /* B has signalled (under m) */
    atomic_int w_tid, w_state; /* W: 1 = about to block, 2 = got the lock */
};

static void *reader_a(void *arg) {
    struct scene *s = arg;
    OK(pthread_rwlock_rdlock(s->rw));
    OK(pthread_mutex_lock(&s->m));
    s->a_waiting = 1;
    OK(pthread_cond_broadcast(&s->c));
    while (!s->signalled)
        OK(pthread_cond_wait(&s->c, &s->m));
    OK(pthread_mutex_unlock(&s->m));
    CHECK(atomic_load(&s->w_state) == 1, "writer inside with reader A");
    OK(pthread_rwlock_unlock(s->rw));
    return NULL;
}

static void *writer_w(void *arg) {
    struct scene *s = arg;
    atomic_store(&s->w_tid, (int)gettid());
    atomic_store(&s->w_state, 1);
    OK(pthread_rwlock_wrlock(s->rw));
    atomic_store(&s->w_state, 2);
    OK(pthread_rwlock_unlock(s->rw));
    return NULL;
}

static void *reader_b(void *arg) {
    struct scene *s = arg;
    OK(pthread_rwlock_rdlock(s->rw));
    CHECK(atomic_load(&s->w_state) == 1, "writer inside with reader B");
    OK(pthread_mutex_lock(&s->m));
    s->signalled = 1;
    OK(pthread_cond_broadcast(&s->c));
    OK(pthread_mutex_unlock(&s->m));
    OK(pthread_rwlock_unlock(s->rw));
    return NULL;
}

static void scene(pthread_rwlock_t *rw, const char *what) {
    struct scene s;
    memset(&s, 0, sizeof s);
    s.rw = rw;
    OK(pthread_mutex_init(&s.m, NULL));
    OK(pthread_cond_init(&s.c, NULL));

    phase(what);
    pthread_t a = spawn(reader_a, &s);
    OK(pthread_mutex_lock(&s.m));
    while (!s.a_waiting)
        OK(pthread_cond_wait(&s.c, &s.m));
    OK(pthread_mutex_unlock(&s.m));

    pthread_t w = spawn(writer_w, &s);
    while (atomic_load(&s.w_state) == 0)
        sched_yield();
    wait_thread_blocked(atomic_load(&s.w_tid));
    sleep_ms(20);
    CHECK(atomic_load(&s.w_state) == 1, "writer got in while A held a read lock");

    /* The part that hangs if B queues behind W. */
    pthread_t b = spawn(reader_b, &s);
    join(b);
    join(a);
    join(w);
    CHECK(atomic_load(&s.w_state) == 2, "writer state %d", atomic_load(&s.w_state));
    OK(pthread_cond_destroy(&s.c));
    OK(pthread_mutex_destroy(&s.m));
}

static void with_kind(int kind, const char *what) {
    pthread_rwlockattr_t a;
    pthread_rwlock_t rw;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, kind));
    OK(pthread_rwlock_init(&rw, &a));
    OK(pthread_rwlockattr_destroy(&a));
    for (int round = 0; round < 3; round++)
        scene(&rw, what);
    OK(pthread_rwlock_destroy(&rw));
}

static pthread_rwlock_t static_rw = PTHREAD_RWLOCK_INITIALIZER;

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
#define RUN(name) (!only || strcmp(only, name) == 0)
    watchdog(30);
    if (RUN("static"))
        for (int round = 0; round < 3; round++)
            scene(&static_rw, "PTHREAD_RWLOCK_INITIALIZER: B reads while A reads and W waits");
    if (RUN("init")) {
        pthread_rwlock_t rw;
        OK(pthread_rwlock_init(&rw, NULL));
        for (int round = 0; round < 3; round++)
            scene(&rw, "init(NULL): B reads while A reads and W waits");
        OK(pthread_rwlock_destroy(&rw));
    }
    if (RUN("reader"))
        with_kind(PTHREAD_RWLOCK_PREFER_READER_NP,
                  "PREFER_READER_NP: B reads while A reads and W waits");
    if (RUN("writer"))
        with_kind(PTHREAD_RWLOCK_PREFER_WRITER_NP,
                  "PREFER_WRITER_NP: B reads while A reads and W waits");
    pass("rwlock_reader_wait");
    return 0;
}
