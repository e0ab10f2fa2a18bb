/* Spinlocks: a counter under pthread_spin_lock from several threads,
 * pthread_spin_trylock EBUSY; a PTHREAD_PROCESS_SHARED spinlock in a
 * MAP_SHARED mapping locked in the parent and unlocked in a forked child and
 * the other way round, and a counter shared by two processes. */
#include "common.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define THREADS 4
#define ITERS 500000

static pthread_spinlock_t lock;
static volatile long counter;
static volatile int inside;

static void *counter_fn(void *arg) {
    int use_try = (int)(intptr_t)arg;
    for (int i = 0; i < ITERS; i++) {
        if (use_try && (i & 1)) {
            int rc;
            while ((rc = pthread_spin_trylock(&lock)) == EBUSY)
                ;
            OK(rc);
        } else {
            OK(pthread_spin_lock(&lock));
        }
        CHECK(!inside, "two threads inside the spinlock");
        inside = 1;
        counter = counter + 1;
        inside = 0;
        OK(pthread_spin_unlock(&lock));
    }
    return NULL;
}

static void *try_fn(void *arg) {
    pthread_spinlock_t *s = (pthread_spinlock_t *)arg;
    int rc = pthread_spin_trylock(s);
    if (rc == 0)
        OK(pthread_spin_unlock(s));
    return (void *)(intptr_t)rc;
}

static int trylock_other_thread(pthread_spinlock_t *s) {
    return (int)(intptr_t)join(spawn(try_fn, (void *)s));
}

static void test_threads(void) {
    phase("spin: trylock");
    OK(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_spin_trylock(&lock));
    EXPECT_RC(trylock_other_thread(&lock), EBUSY);
    OK(pthread_spin_unlock(&lock));
    OK(trylock_other_thread(&lock));

    phase("spin: counter");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        t[i] = spawn(counter_fn, (void *)(intptr_t)(i & 1));
    for (int i = 0; i < THREADS; i++)
        join(t[i]);
    CHECK(counter == (long)THREADS * ITERS, "counter %ld, expected %ld", counter,
          (long)THREADS * ITERS);
    OK(pthread_spin_destroy(&lock));
}

/* ---- process-shared ---------------------------------------------------- */

struct shared {
    pthread_spinlock_t lock;
    volatile long counter;
    volatile int inside;
};

static void wait_child_ok(pid_t pid, const char *what) {
    int st;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    CHECK(r == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "%s: child exited with status 0x%x", what, st);
}

static void shared_counter(struct shared *sh, long n) {
    for (long i = 0; i < n; i++) {
        OK(pthread_spin_lock(&sh->lock));
        CHECK(!sh->inside, "two processes inside the spinlock");
        sh->inside = 1;
        sh->counter = sh->counter + 1;
        sh->inside = 0;
        OK(pthread_spin_unlock(&sh->lock));
    }
}

static void test_pshared(void) {
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED, "mmap: %s", strerror(errno));
    OK(pthread_spin_init(&sh->lock, PTHREAD_PROCESS_SHARED));

    phase("pshared: parent locks, child unlocks");
    OK(pthread_spin_lock(&sh->lock));
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        EXPECT_RC(pthread_spin_trylock(&sh->lock), EBUSY);
        OK(pthread_spin_unlock(&sh->lock)); /* release the parent's lock */
        _exit(0);
    }
    wait_child_ok(pid, "child unlocking the parent's spinlock");
    OK(pthread_spin_trylock(&sh->lock)); /* the child released it */
    OK(pthread_spin_unlock(&sh->lock));

    phase("pshared: child locks, parent unlocks");
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        OK(pthread_spin_lock(&sh->lock));
        _exit(0); /* exits holding it */
    }
    wait_child_ok(pid, "child locking the spinlock");
    EXPECT_RC(pthread_spin_trylock(&sh->lock), EBUSY);
    EXPECT_RC(trylock_other_thread(&sh->lock), EBUSY);
    OK(pthread_spin_unlock(&sh->lock));
    OK(pthread_spin_lock(&sh->lock));
    OK(pthread_spin_unlock(&sh->lock));

    phase("pshared: counter across two processes");
    const long n = 500000;
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        shared_counter(sh, n);
        _exit(0);
    }
    shared_counter(sh, n);
    wait_child_ok(pid, "child counting");
    CHECK(sh->counter == 2 * n, "shared counter %ld, expected %ld", sh->counter,
          2 * n);
    OK(pthread_spin_destroy(&sh->lock));
    munmap(sh, sizeof *sh);
}

int main(void) {
    watchdog(30);
    test_threads();
    test_pshared();
    pass("spin");
    return 0;
}
