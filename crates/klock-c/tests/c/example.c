/* The example program of docs/c.md (keep the two identical): a job queue
 * with a mutex and a condvar, a settings table under a rwlock, and a
 * statistics counter under a spinlock.
 *
 *   PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig \
 *     cc example.c -o example $(pkg-config --cflags --libs klock) -pthread
 *   LD_LIBRARY_PATH=$HOME/.local/lib ./example
 */
#define _GNU_SOURCE
#include <klock.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JOBS 1000
#define WORKERS 4

static klock_mutex_t queue_lock = KLOCK_MUTEX_INITIALIZER;
static klock_cond_t queue_cond; /* klock_cond_init: timed waits on CLOCK_MONOTONIC */
static int queue[JOBS], queued, taken, closed;

static klock_rwlock_t settings_lock = KLOCK_RWLOCK_INITIALIZER;
static int multiplier = 1;

static klock_spinlock_t stats_lock = KLOCK_SPINLOCK_INITIALIZER;
static long total;

static int check(int err, const char *what) {
    if (err != 0) {
        fprintf(stderr, "%s: %s\n", what, strerror(err));
        _exit(1);
    }
    return err;
}

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        check(klock_mutex_lock(&queue_lock), "lock");
        while (taken == queued && !closed) {
            struct timespec deadline;
            clock_gettime(CLOCK_MONOTONIC, &deadline);
            deadline.tv_sec += 5;
            int err = klock_cond_timedwait(&queue_cond, &queue_lock, &deadline);
            if (err == ETIMEDOUT) {
                fprintf(stderr, "no job for 5 s\n");
                _exit(1);
            }
            check(err, "timedwait");
        }
        if (taken == queued) { /* closed and drained */
            check(klock_mutex_unlock(&queue_lock), "unlock");
            return NULL;
        }
        int job = queue[taken++];
        check(klock_mutex_unlock(&queue_lock), "unlock");

        check(klock_rwlock_rdlock(&settings_lock), "rdlock");
        long result = (long)job * multiplier;
        check(klock_rwlock_unlock(&settings_lock), "rwlock unlock");

        check(klock_spinlock_lock(&stats_lock), "spin lock");
        total += result;
        check(klock_spinlock_unlock(&stats_lock), "spin unlock");
    }
}

int main(void) {
    pthread_t t[WORKERS];
    printf("klock %s\n", klock_version());
    check(klock_cond_init(&queue_cond, CLOCK_MONOTONIC), "cond init");

    check(klock_rwlock_wrlock(&settings_lock), "wrlock");
    multiplier = 2;
    check(klock_rwlock_unlock(&settings_lock), "rwlock unlock");

    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 1; i <= JOBS; i++) {
        check(klock_mutex_lock(&queue_lock), "lock");
        queue[queued++] = i;
        check(klock_cond_signal(&queue_cond), "signal");
        check(klock_mutex_unlock(&queue_lock), "unlock");
    }
    check(klock_mutex_lock(&queue_lock), "lock");
    closed = 1;
    check(klock_cond_broadcast(&queue_cond), "broadcast");
    check(klock_mutex_unlock(&queue_lock), "unlock");
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);

    check(klock_cond_destroy(&queue_cond), "cond destroy");
    check(klock_mutex_destroy(&queue_lock), "mutex destroy");
    printf("total %ld (expected %ld)\n", total, (long)JOBS * (JOBS + 1));
    return total == (long)JOBS * (JOBS + 1) ? 0 : 1;
}
