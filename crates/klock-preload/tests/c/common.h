/* Shared helpers for the klock-preload C test programs.
 *
 * Every program is self-checking: it exits 0 and prints a line starting with
 * "PASS" to stdout on success, and exits non-zero with a "FAIL ..." message on
 * stderr otherwise.  A program that cannot run its test in this environment
 * (e.g. no privilege for SCHED_FIFO) calls skip_test(): a "SKIP: ..." line on
 * stdout and exit status SKIP_EXIT (77), which tests/preload.rs reports as
 * SKIPPED, and as a failure under .ci/run (KLOCK_CI=1) or with CI set.  Each
 * one arms a watchdog (alarm) that names the phase it was in if it hangs.
 * All of them must pass against plain glibc as well as under
 * LD_PRELOAD=libklock_preload.so.
 *
 * Not a test program itself: tests/preload.rs compiles only *.c and *.cpp.
 */
#ifndef KLOCK_PRELOAD_TEST_COMMON_H
#define KLOCK_PRELOAD_TEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the program is doing right now; reported by the watchdog and by FAIL. */
static const char *volatile test_phase = "start";

static inline void phase(const char *p) { test_phase = p; }

static inline const char *errname(int e) {
    const char *n = strerrorname_np(e);
    return n ? n : "?";
}

__attribute__((noreturn, unused, format(printf, 3, 4))) static void
fail_at(const char *file, int line, const char *fmt, ...) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "FAIL %s:%d [phase: %s]: ", file, line,
                     test_phase);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* write(2) rather than stdio: callable from any thread, no locks. */
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
    _exit(1);
}

#define FAIL(...) fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Formats a CHECK message into a static buffer; only used on the way to
 * _exit, so sharing the buffer between threads does not matter. */
__attribute__((unused, format(printf, 1, 2))) static const char *
check_msg(const char *fmt, ...) {
    static char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return msg;
}

/* CHECK(cond, fmt, args...): fmt explains the failure. */
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond))                                                          \
            fail_at(__FILE__, __LINE__, "check `%s` failed: %s", #cond,       \
                    check_msg(__VA_ARGS__));                                  \
    } while (0)

/* expr must return exactly `want` (an errno-style code, 0 for success). */
#define EXPECT_RC(expr, want)                                                 \
    do {                                                                      \
        int rc_ = (expr);                                                     \
        int want_ = (want);                                                   \
        if (rc_ != want_)                                                     \
            FAIL("%s returned %d (%s), expected %d (%s)", #expr, rc_,         \
                 errname(rc_), want_, errname(want_));                        \
    } while (0)

#define OK(expr) EXPECT_RC(expr, 0)

__attribute__((unused)) static void watchdog_fired(int sig) {
    (void)sig;
    char buf[256];
    int n = snprintf(buf, sizeof buf,
                     "FAIL: watchdog: no progress, hung in phase: %s\n",
                     test_phase);
    if (n > 0) {
        ssize_t w = write(2, buf, (size_t)n);
        (void)w;
    }
    _exit(3);
}

/* Arm (or re-arm, e.g. in a forked child) the per-process watchdog. */
static inline void watchdog(unsigned seconds) {
    signal(SIGALRM, watchdog_fired);
    alarm(seconds);
}

static inline void pass(const char *what) {
    printf("PASS: %s\n", what);
    fflush(stdout);
}

/* Exit status of a program that could not run its test here (skip_test). */
#define SKIP_EXIT 77

/* The environment lacks what the test needs: says why on stdout and exits
 * with SKIP_EXIT. Never prints PASS, so the driver cannot mistake it for one. */
__attribute__((noreturn, unused, format(printf, 1, 2))) static void
skip_test(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("SKIP: ", stdout);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    _exit(SKIP_EXIT);
}

/* ---- time helpers ---------------------------------------------------- */

static inline struct timespec now_on(clockid_t clk) {
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
        FAIL("clock_gettime(%d): %s", (int)clk, strerror(errno));
    return ts;
}

static inline struct timespec ts_add_ms(struct timespec t, long ms) {
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec += 1;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static inline struct timespec deadline_ms(clockid_t clk, long ms) {
    return ts_add_ms(now_on(clk), ms);
}

static inline int ts_before(struct timespec a, struct timespec b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* A timed wait that reported a timeout must not have returned before its
 * deadline (a correctness property of the API, not a performance check). */
#define CHECK_NOT_EARLY(clk, deadline, what)                                  \
    do {                                                                      \
        struct timespec n_ = now_on(clk);                                     \
        if (ts_before(n_, (deadline)))                                        \
            FAIL("%s reported a timeout before its deadline "                 \
                 "(now %lld.%09ld < deadline %lld.%09ld on clock %d)",        \
                 what, (long long)n_.tv_sec, n_.tv_nsec,                      \
                 (long long)(deadline).tv_sec, (deadline).tv_nsec, (int)(clk)); \
    } while (0)

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- threads ---------------------------------------------------------- */

static inline pthread_t spawn(void *(*fn)(void *), void *arg) {
    pthread_t t;
    int rc = pthread_create(&t, NULL, fn, arg);
    if (rc != 0)
        FAIL("pthread_create: %s", errname(rc));
    return t;
}

static inline void *join(pthread_t t) {
    void *ret = NULL;
    int rc = pthread_join(t, &ret);
    if (rc != 0)
        FAIL("pthread_join: %s", errname(rc));
    return ret;
}

/* wait_thread_blocked(tid): shared with klock-c's C tests. */
#include "../../../klock-c/tests/c/blocked.h"

/* Small deterministic PRNG (xorshift64*) for per-thread randomness without
 * rand()'s hidden libc lock. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif
