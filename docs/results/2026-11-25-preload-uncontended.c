/* Uncontended cost of pthread lock+unlock pairs, one working thread:
 * glibc's own locks, or klock's under LD_PRELOAD. Prints ns per pair, the
 * best of PASSES passes of N pairs each (to drop passes a noisy neighbour
 * interrupted).
 *
 * Usage: unc [N [PASSES [threaded]]]   (defaults 10000000 7; "threaded"
 * starts an idle second thread first, so that glibc leaves its
 * single-threaded fast paths, as in every multi-threaded program).
 * Build: cc -O2 2026-11-25-preload-uncontended.c -o unc -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rm;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;
static volatile long counter;
static int pipefd[2];

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *idle(void *arg) {
    char c;
    (void)arg;
    (void)!read(pipefd[0], &c, 1); /* blocks until main exits */
    return NULL;
}

#define PASS(name, lock, unlock)                                   \
    do {                                                           \
        double best = 1e18;                                        \
        for (int p = 0; p < passes; p++) {                         \
            double t0 = now_ns();                                  \
            for (long i = 0; i < n; i++) {                         \
                lock;                                              \
                counter++;                                         \
                unlock;                                            \
            }                                                      \
            double dt = (now_ns() - t0) / n;                       \
            if (dt < best) best = dt;                              \
        }                                                          \
        printf("%-9s %6.2f ns\n", name, best);                     \
    } while (0)

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    int passes = argc > 2 ? atoi(argv[2]) : 7;
    int threaded = argc > 3 && strcmp(argv[3], "threaded") == 0;
    pthread_t t;
    if (threaded) {
        if (pipe(pipefd) != 0 || pthread_create(&t, NULL, idle, NULL) != 0) {
            perror("setup");
            return 1;
        }
    }
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rm, &a);
    pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
    PASS("mutex", pthread_mutex_lock(&m), pthread_mutex_unlock(&m));
    PASS("trylock", pthread_mutex_trylock(&m), pthread_mutex_unlock(&m));
    PASS("recursive", pthread_mutex_lock(&rm), pthread_mutex_unlock(&rm));
    PASS("rdlock", pthread_rwlock_rdlock(&rw), pthread_rwlock_unlock(&rw));
    PASS("wrlock", pthread_rwlock_wrlock(&rw), pthread_rwlock_unlock(&rw));
    PASS("spin", pthread_spin_lock(&sp), pthread_spin_unlock(&sp));
    return 0;
}
