/* Uncontended cost of pthread lock+unlock pairs, one thread: glibc's own
 * locks, or klock's under LD_PRELOAD. Prints ns per pair (best of 5 passes
 * of 10M pairs each, to drop passes a noisy neighbour interrupted).
 * Build: cc -O2 2026-11-24-preload-uncontended.c -o unc -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;
static volatile long counter;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define N 10000000
#define PASS(name, lock, unlock)                                   \
    do {                                                           \
        double best = 1e18;                                        \
        for (int p = 0; p < 5; p++) {                              \
            double t0 = now_ns();                                  \
            for (int i = 0; i < N; i++) {                          \
                lock;                                              \
                counter++;                                         \
                unlock;                                            \
            }                                                      \
            double dt = (now_ns() - t0) / N;                       \
            if (dt < best) best = dt;                              \
        }                                                          \
        printf("%-8s %6.2f ns\n", name, best);                     \
    } while (0)

int main(void) {
    pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
    PASS("mutex", pthread_mutex_lock(&m), pthread_mutex_unlock(&m));
    PASS("rdlock", pthread_rwlock_rdlock(&rw), pthread_rwlock_unlock(&rw));
    PASS("wrlock", pthread_rwlock_wrlock(&rw), pthread_rwlock_unlock(&rw));
    PASS("spin", pthread_spin_lock(&sp), pthread_spin_unlock(&sp));
    return 0;
}
