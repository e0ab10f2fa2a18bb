/* lockbench uncontended --preload: the uncontended cost of pthread
 * lock+unlock pairs in one working thread, run once with glibc's locks and
 * once under LD_PRELOAD=libklock_preload.so. One pass per process: after a
 * warm-up of N/10 pairs, N pairs of each operation are timed and printed as
 * "OP NS" (ns per pair); lockbench interleaves the processes and takes the
 * median over passes. The first line, "impl PATH", names the object that
 * provides pthread_mutex_lock (the interposer or libc).
 *
 * Usage: prog N [threaded]   ("threaded" first starts an idle second thread,
 * so that glibc leaves its single-threaded fast paths, as in every
 * multi-threaded program). Derived from
 * docs/results/2026-11-25-preload-uncontended.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
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
        for (long i = 0; i < n / 10; i++) {                        \
            lock;                                                  \
            counter++;                                             \
            unlock;                                                \
        }                                                          \
        double t0 = now_ns();                                      \
        for (long i = 0; i < n; i++) {                             \
            lock;                                                  \
            counter++;                                             \
            unlock;                                                \
        }                                                          \
        printf("%s %.3f\n", name, (now_ns() - t0) / n);            \
    } while (0)

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    int threaded = argc > 2 && strcmp(argv[2], "threaded") == 0;
    pthread_t t;
    Dl_info info;
    if (n < 1) n = 1;
    if (threaded) {
        if (pipe(pipefd) != 0 || pthread_create(&t, NULL, idle, NULL) != 0) {
            perror("setup");
            return 1;
        }
    }
    if (dladdr((void *)pthread_mutex_lock, &info) && info.dli_fname)
        printf("impl %s\n", info.dli_fname);
    else
        printf("impl unknown\n");
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
