/* lockbench preload --lockdep: what an uncontended lock+unlock costs with
 * other locks held (a lock-order validator's work grows with them).
 *
 * One thread. For each case H in 0, 1, 3: H mutexes are locked (and stay
 * held), then a fresh mutex (initialised for this case, never locked before)
 * is locked and unlocked N times per timing loop; after a warm-up loop,
 * LOOPS loops are timed and their minimum and median ns per lock+unlock pair
 * printed. The "new1" case holds 1 mutex and locks+unlocks N distinct fresh
 * mutexes once each (the first acquisition of each, where a validator
 * records a new lock-order edge), timed once per loop over a new set.
 *
 * An idle second thread is started first, so the process is a threaded one
 * (glibc and the interposer leave their single-threaded shortcuts).
 *
 * Usage: held_cost [N [LOOPS [CASE]]]   (default 2000000 9, every case; new1
 * uses N/100 mutexes; CASE: held0, held1, held3 or new1 runs only that one)
 * Prints one line per case:
 *   held_cost case=held0 held=0 pairs=N loops=L min_ns=X median_ns=Y
 *   ... case=held1, case=held3, case=new1 (pairs = mutexes per loop) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];

static void *idle(void *arg) {
    char c;
    (void)arg;
    (void)!read(pipefd[0], &c, 1); /* blocks until main exits */
    return NULL;
}

static volatile unsigned long counter;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, int held, long n, int loops, double *ns) {
    qsort(ns, loops, sizeof *ns, cmp);
    printf("held_cost case=%s held=%d pairs=%ld loops=%d min_ns=%.3f median_ns=%.3f\n", name,
           held, n, loops, ns[0], ns[loops / 2]);
    fflush(stdout);
}

static void held_case(int held, long n, int loops) {
    pthread_mutex_t outer[3], m;
    double ns[64];
    char name[16];
    for (int i = 0; i < held; i++) {
        pthread_mutex_init(&outer[i], NULL);
        pthread_mutex_lock(&outer[i]);
    }
    pthread_mutex_init(&m, NULL);
    for (int l = -1; l < loops; l++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            counter++;
            pthread_mutex_unlock(&m);
        }
        if (l >= 0)
            ns[l] = (now_ns() - t0) / n;
    }
    pthread_mutex_destroy(&m);
    for (int i = held - 1; i >= 0; i--) {
        pthread_mutex_unlock(&outer[i]);
        pthread_mutex_destroy(&outer[i]);
    }
    snprintf(name, sizeof name, "held%d", held);
    report(name, held, n, loops, ns);
}

static void new_case(long n, int loops) {
    pthread_mutex_t outer;
    double ns[64];
    pthread_mutex_t *ms = calloc(n, sizeof *ms);
    if (!ms) {
        perror("calloc");
        exit(2);
    }
    pthread_mutex_init(&outer, NULL);
    pthread_mutex_lock(&outer);
    for (int l = -1; l < loops; l++) {
        for (long i = 0; i < n; i++)
            pthread_mutex_init(&ms[i], NULL);
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&ms[i]);
            counter++;
            pthread_mutex_unlock(&ms[i]);
        }
        if (l >= 0)
            ns[l] = (now_ns() - t0) / n;
        for (long i = 0; i < n; i++)
            pthread_mutex_destroy(&ms[i]);
    }
    pthread_mutex_unlock(&outer);
    pthread_mutex_destroy(&outer);
    free(ms);
    report("new1", 1, n, loops, ns);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int loops = argc > 2 ? atoi(argv[2]) : 9;
    if (n < 100 || loops < 1 || loops > 64) {
        fprintf(stderr, "usage: held_cost [N >= 100 [LOOPS 1..64]]\n");
        return 2;
    }
    pthread_t t;
    if (pipe(pipefd) != 0 || pthread_create(&t, NULL, idle, NULL) != 0) {
        perror("idle thread");
        return 2;
    }
    const char *only = argc > 3 ? argv[3] : NULL;
    int any = 0;
    static const int helds[] = {0, 1, 3};
    static const char *names[] = {"held0", "held1", "held3"};
    for (int i = 0; i < 3; i++)
        if (!only || strcmp(only, names[i]) == 0) {
            held_case(helds[i], n, loops);
            any = 1;
        }
    if (!only || strcmp(only, "new1") == 0) {
        new_case(n / 100, loops);
        any = 1;
    }
    if (!any) {
        fprintf(stderr, "held_cost: unknown case '%s'; allowed: held0, held1, held3, new1\n", only);
        return 2;
    }
    return 0;
}
