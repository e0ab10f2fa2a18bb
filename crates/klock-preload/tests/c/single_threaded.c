/* The moment a process stops being single-threaded: the main thread locks
 * a normal and a recursive mutex and write-locks an rwlock while alone
 * (glibc's __libc_single_threaded set), starts threads that count under
 * them, and unlocks once they are running; then every thread counts, and
 * no two are ever inside at once. Any single-threaded fast path (plain
 * loads and stores while the process has one thread, as glibc's lock
 * drops its lock prefix) must hand over correctly here; one that ignored
 * the flag hung or lost counts (docs/results/2026-11-28-spin-floor.md). */
#include "common.h"
#include <sys/single_threaded.h>

#define THREADS 4
#define ITERS 100000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rm;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile long wcount;
static volatile long counter;
static volatile int inside;
static volatile int started;

static void *count(void *arg) {
    (void)arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < ITERS; i++) {
        /* m, then rm twice (a recursive relock): one lock order. */
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_lock(&rm));
        OK(pthread_mutex_lock(&rm));
        CHECK(!inside, "two threads inside the mutexes");
        inside = 1;
        counter = counter + 1;
        inside = 0;
        OK(pthread_mutex_unlock(&rm));
        OK(pthread_mutex_unlock(&rm));
        OK(pthread_mutex_unlock(&m));
        if (i & 1) {
            OK(pthread_rwlock_wrlock(&rw));
            wcount = wcount + 1;
            OK(pthread_rwlock_unlock(&rw));
        } else {
            OK(pthread_rwlock_rdlock(&rw));
            CHECK(wcount >= 0, "read under the write lock");
            OK(pthread_rwlock_unlock(&rw));
        }
    }
    return NULL;
}

int main(void) {
    pthread_mutexattr_t a;
    pthread_t t[THREADS];
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE));
    OK(pthread_mutex_init(&rm, &a));
    CHECK(__libc_single_threaded, "a fresh process is single-threaded");
    /* Alone: lock, unlock, relock, trylock (EBUSY), recursive depth 2. */
    for (int i = 0; i < 1000; i++) {
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
    }
    OK(pthread_mutex_lock(&m));
    EXPECT_RC(pthread_mutex_trylock(&m), EBUSY);
    OK(pthread_mutex_lock(&rm));
    OK(pthread_mutex_lock(&rm));
    OK(pthread_mutex_unlock(&rm));
    OK(pthread_rwlock_rdlock(&rw));
    OK(pthread_rwlock_rdlock(&rw));
    EXPECT_RC(pthread_rwlock_trywrlock(&rw), EBUSY);
    OK(pthread_rwlock_unlock(&rw));
    OK(pthread_rwlock_unlock(&rw));
    OK(pthread_rwlock_wrlock(&rw));
    EXPECT_RC(pthread_rwlock_tryrdlock(&rw), EBUSY);
    /* Still holding m, rm (depth 1) and rw (write): start the threads. */
    for (int i = 0; i < THREADS; i++)
        OK(pthread_create(&t[i], NULL, count, NULL));
    CHECK(!__libc_single_threaded, "threads started");
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < THREADS)
        sched_yield();
    usleep(20000); /* let them queue on m and rm */
    OK(pthread_rwlock_unlock(&rw));
    OK(pthread_mutex_unlock(&rm));
    OK(pthread_mutex_unlock(&m));
    for (int i = 0; i < THREADS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK(counter == (long)THREADS * ITERS, "lost increments");
    CHECK(wcount == (long)THREADS * ITERS / 2, "lost increments under the write lock");
    OK(pthread_mutex_destroy(&rm));
    printf("PASS single_threaded\n");
    return 0;
}
