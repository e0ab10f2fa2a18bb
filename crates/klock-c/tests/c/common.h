/* Helpers for klock-c's C test programs (tests/c_api.rs compiles every C file
 * in tests/c; this header is not a program).
 *
 * Each program checks itself: it exits 0 after printing "PASS <name>", or
 * exits 1 with "FAIL file:line: ..." on stderr. A watchdog (alarm) turns a
 * hang into a failure that names the phase it hung in. */
#ifndef KLOCK_C_TEST_COMMON_H
#define KLOCK_C_TEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <klock.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the program is doing (printed by the watchdog and by failures). */
static const char *volatile test_phase = "start";
#define PHASE(p) (test_phase = (p))

static inline const char *errname(int e) {
    const char *n = strerrorname_np(e);
    return n ? n : "?";
}

#define FAIL(...)                                                            \
    do {                                                                     \
        fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, test_phase); \
        fprintf(stderr, __VA_ARGS__);                                        \
        fputc('\n', stderr);                                                 \
        exit(1);                                                             \
    } while (0)

/* Check that a call returns the error code `want` (0 = success). */
#define EXPECT(call, want)                                                   \
    do {                                                                     \
        int got_ = (call);                                                   \
        int want_ = (want);                                                  \
        if (got_ != want_)                                                   \
            FAIL("%s returned %d (%s), expected %d (%s)", #call, got_,      \
                 errname(got_), want_, errname(want_));                      \
    } while (0)

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            FAIL("check failed: %s", #cond);                                 \
    } while (0)

static inline void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "FAIL watchdog: the program hung in phase: ";
    ssize_t r = write(2, msg, sizeof msg - 1);
    const char *p = test_phase;
    r = write(2, p, strlen(p));
    r = write(2, "\n", 1);
    (void)r;
    _exit(2);
}

/* Arm the watchdog: fail after `seconds`. */
static inline void watchdog(unsigned seconds) {
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

static inline void pass(const char *name) {
    printf("PASS %s\n", name);
    fflush(stdout);
}

/* An absolute time `ms` milliseconds from now on `clock` (negative: past). */
static inline struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    long long ns = (long long)t.tv_nsec + (long long)ms * 1000000LL;
    t.tv_sec += (time_t)(ns / 1000000000LL);
    ns %= 1000000000LL;
    if (ns < 0) {
        ns += 1000000000LL;
        t.tv_sec -= 1;
    }
    t.tv_nsec = (long)ns;
    return t;
}

/* Milliseconds on CLOCK_MONOTONIC. */
static inline double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

#include "blocked.h"

/* Run f(arg) on a new thread and wait for it (for "another thread does X"). */
static inline void on_other_thread(void *(*f)(void *), void *arg) {
    pthread_t t;
    if (pthread_create(&t, NULL, f, arg) != 0)
        FAIL("pthread_create");
    pthread_join(t, NULL);
}

static inline pthread_t spawn(void *(*f)(void *), void *arg) {
    pthread_t t;
    if (pthread_create(&t, NULL, f, arg) != 0)
        FAIL("pthread_create");
    return t;
}

#endif
