/* MUST NOT REPORT (and must not hang): fork while other threads take nested
 * locks with validation on.
 *
 * Four threads keep taking nested mutexes and spinlocks in one consistent
 * order, and (their first FRESH times) a new heap mutex innermost, a new
 * lock and so a new edge each time, recorded under the validator's graph
 * lock, while the main thread forks 40 children. Each child
 * nests locks of its own (the parent's may be held by a thread that does
 * not exist in the child): new edges, so the validator's graph lock is
 * taken in the child, and must not have been left held by a thread of the
 * parent; then it _exits 0. The parent waits for every child and checks its
 * status. No order is ever inverted, so no report. */
#include "ld.h"

#include <stdatomic.h>
#include <sys/wait.h>

#define NLOCKS 8
#define NTHREADS 4
#define CHILDREN 40

static pthread_mutex_t fb_m[NLOCKS];
static pthread_spinlock_t fb_s;
static atomic_int fb_stop;

/* The children's own locks, never taken in the parent. */
static pthread_mutex_t fb_child[4] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

#define FRESH 5000

/* Takes locks lo..hi-1 in index order, then `fresh` if any, the spinlock
 * innermost. */
static void take_range(int lo, int hi, pthread_mutex_t *fresh) {
    for (int i = lo; i < hi; i++)
        OK(pthread_mutex_lock(&fb_m[i]));
    if (fresh) {
        OK(pthread_mutex_lock(fresh));
        OK(pthread_mutex_unlock(fresh));
    }
    OK(pthread_spin_lock(&fb_s));
    OK(pthread_spin_unlock(&fb_s));
    for (int i = hi - 1; i >= lo; i--)
        OK(pthread_mutex_unlock(&fb_m[i]));
}

__attribute__((noinline)) static void *fb_worker(void *arg) {
    uint64_t rng = 0xA5A5A5A5ULL * (uint64_t)((intptr_t)arg + 1);
    int fresh_left = FRESH;
    while (!atomic_load_explicit(&fb_stop, memory_order_relaxed)) {
        pthread_mutex_t *fresh = NULL;
        if (fresh_left > 0) {
            fresh_left--;
            fresh = calloc(1, sizeof *fresh); /* zeroed: a new lock */
            CHECK(fresh != NULL, "calloc");
        }
        int lo = (int)(rng_next(&rng) % (NLOCKS - 1));
        int hi = lo + 2 + (int)(rng_next(&rng) % (uint64_t)(NLOCKS - lo - 1));
        if (hi > NLOCKS)
            hi = NLOCKS;
        take_range(lo, hi, fresh);
        free(fresh);
    }
    return NULL;
}

int main(void) {
    watchdog(50);
    for (int i = 0; i < NLOCKS; i++)
        OK(pthread_mutex_init(&fb_m[i], NULL));
    OK(pthread_spin_init(&fb_s, PTHREAD_PROCESS_PRIVATE));

    ld_phase("threads nesting locks, main forking children");
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        t[i] = spawn(fb_worker, (void *)(intptr_t)i);
    for (int c = 0; c < CHILDREN; c++) {
        pid_t pid = fork();
        CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
            alarm(20); /* the child's own watchdog (inherited handler) */
            for (int i = 0; i < 4; i++)
                OK(pthread_mutex_lock(&fb_child[i]));
            for (int i = 3; i >= 0; i--)
                OK(pthread_mutex_unlock(&fb_child[i]));
            _exit(0);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "child %d of %d ended with status %#x", c, CHILDREN, st);
        sleep_ms(1);
    }
    atomic_store(&fb_stop, 1);
    for (int i = 0; i < NTHREADS; i++)
        join(t[i]);
    ld_phase("done");
    pass("fork_busy: 40 children forked while threads nested locks");
    return 0;
}
