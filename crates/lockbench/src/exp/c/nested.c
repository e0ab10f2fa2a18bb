/* lockbench preload --lockdep: nested locking in a consistent order.
 *
 * 64 pthread mutexes, T threads (default 8). Each thread, for its share of the
 * iterations, picks a random nesting depth 2..4 and that many distinct mutexes,
 * takes them in increasing index order (the same order everywhere, so there is
 * no lock-order cycle for a validator to report), increments each one's
 * counter, and releases them in reverse order.
 *
 * Usage: nested [THREADS [ITERS_PER_THREAD [SEED]]]   (default 8 250000 1)
 * Prints one line:
 *   nested threads=T iters=I locks=L elapsed=S ops/s=X
 * I = total iterations, L = total lock acquisitions, S = seconds from the
 * first thread's start to the last join (process start-up and, under
 * valgrind, its start-up are outside), X = L / S. Exits 1 if the counters
 * do not add up to L. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NLOCKS 64
#define MAXDEPTH 4

static pthread_mutex_t locks[NLOCKS];
static unsigned long counters[NLOCKS];
static long iters_per_thread = 250000;
static unsigned long seed = 1;
static pthread_barrier_t start;

struct result {
    unsigned long taken;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *worker(void *arg) {
    struct result *r = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (seed * 0x100000001B3ull) ^ ((uintptr_t)arg * 2654435761u);
    int idx[MAXDEPTH];
    unsigned long taken = 0;
    if (x == 0)
        x = 1;
    pthread_barrier_wait(&start);
    for (long i = 0; i < iters_per_thread; i++) {
        uint64_t v = xorshift(&x);
        int depth = 2 + (int)(v % 3);
        /* depth distinct indices, sorted ascending (insertion sort) */
        int n = 0;
        while (n < depth) {
            int c = (int)(xorshift(&x) % NLOCKS), j, dup = 0;
            for (j = 0; j < n; j++)
                dup |= idx[j] == c;
            if (dup)
                continue;
            for (j = n; j > 0 && idx[j - 1] > c; j--)
                idx[j] = idx[j - 1];
            idx[j] = c;
            n++;
        }
        for (int k = 0; k < depth; k++) {
            pthread_mutex_lock(&locks[idx[k]]);
            counters[idx[k]]++;
        }
        for (int k = depth - 1; k >= 0; k--)
            pthread_mutex_unlock(&locks[idx[k]]);
        taken += depth;
    }
    r->taken = taken;
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    if (argc > 2)
        iters_per_thread = atol(argv[2]);
    if (argc > 3)
        seed = strtoul(argv[3], NULL, 10);
    if (threads < 1 || threads > 1024 || iters_per_thread < 1) {
        fprintf(stderr, "usage: nested [THREADS 1..1024 [ITERS_PER_THREAD >= 1 [SEED]]]\n");
        return 2;
    }
    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    pthread_t *t = calloc(threads, sizeof *t);
    struct result *r = calloc(threads, sizeof *r);
    if (!t || !r)
        return 2;
    pthread_barrier_init(&start, NULL, threads + 1);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, &r[i]) != 0) {
            perror("pthread_create");
            return 2;
        }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    unsigned long taken = 0, sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        taken += r[i].taken;
    }
    double secs = now_s() - t0;
    for (int i = 0; i < NLOCKS; i++) {
        pthread_mutex_destroy(&locks[i]);
        sum += counters[i];
    }
    if (sum != taken) {
        fprintf(stderr, "nested: counters add up to %lu, want %lu\n", sum, taken);
        return 1;
    }
    printf("nested threads=%d iters=%ld locks=%lu elapsed=%.6f ops/s=%.1f\n", threads,
           iters_per_thread * threads, taken, secs, taken / secs);
    return 0;
}
