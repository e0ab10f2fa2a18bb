/* MUST NOT REPORT: many threads nesting many mutexes, always in increasing
 * index order.
 *
 * 16 mutexes, 8 threads running concurrently; each iteration takes a random
 * increasing-index subset of 2 to 4 of them (blocking), bumps a counter
 * under each, and releases them (in reverse, or in a random other order:
 * the release order does not make an order). Every edge goes from a lower to
 * a higher index: the lock graph is acyclic. Self-check: the counters add up. */
#include "ld.h"

#define NLOCKS 16
#define NTHREADS 8
#define ITERS 20000

static pthread_mutex_t nest[NLOCKS];
static unsigned long counts[NLOCKS]; /* counts[i] under nest[i] */
static unsigned long taken[NTHREADS][NLOCKS];

__attribute__((noinline)) static void *nest_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 1);
    for (int it = 0; it < ITERS; it++) {
        int depth = 2 + (int)(rng_next(&rng) % 3);
        /* A random subset of `depth` distinct indices, in increasing order. */
        int pick[4], n = 0;
        unsigned mask = 0;
        while (n < depth) {
            int i = (int)(rng_next(&rng) % NLOCKS);
            if (!(mask & (1u << i))) {
                mask |= 1u << i;
                n++;
            }
        }
        n = 0;
        for (int i = 0; i < NLOCKS; i++)
            if (mask & (1u << i))
                pick[n++] = i;
        for (int k = 0; k < n; k++) {
            OK(pthread_mutex_lock(&nest[pick[k]]));
            counts[pick[k]]++;
            taken[id][pick[k]]++;
        }
        if (rng_next(&rng) & 1) {
            for (int k = n - 1; k >= 0; k--)
                OK(pthread_mutex_unlock(&nest[pick[k]]));
        } else {
            for (int k = 0; k < n; k++)
                OK(pthread_mutex_unlock(&nest[pick[k]]));
        }
    }
    return NULL;
}

int main(void) {
    watchdog(50);
    for (int i = 0; i < NLOCKS; i++)
        OK(pthread_mutex_init(&nest[i], NULL));
    ld_phase("8 threads nesting 2-4 of 16 mutexes in index order");
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        t[i] = spawn(nest_worker, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        join(t[i]);
    unsigned long total = 0;
    for (int i = 0; i < NLOCKS; i++) {
        unsigned long want = 0;
        for (int th = 0; th < NTHREADS; th++)
            want += taken[th][i];
        CHECK(counts[i] == want, "lock %d: counter %lu, acquisitions %lu", i,
              counts[i], want);
        total += counts[i];
        OK(pthread_mutex_destroy(&nest[i]));
    }
    ld_phase("done");
    printf("acquisitions: %lu\n", total);
    pass("nested_consistent: counters match, every nesting in index order");
    return 0;
}
