/* Shared helpers for the lockdep test programs (tests/lockdep.rs).
 *
 * Each program exercises one lock-order pattern of the lockdep contract
 * (KLOCK_LOCKDEP; tests/lockdep.rs checks the reports). The conflicting orders
 * are never taken concurrently: each pattern runs in its own thread, joined
 * before the next starts, so the programs cannot really deadlock and run to
 * completion with or without the interposer, with or without KLOCK_LOCKDEP.
 * They print "PASS: ..." on stdout and exit 0 at the end; the driver checks
 * stderr for the lockdep reports (or their absence).
 *
 * Phase markers ("lockdep-test: <phase>") go to stderr, unbuffered, so a
 * report in the captured stderr sits right after the phase that caused it.
 *
 * Not a test program itself: tests/lockdep.rs compiles only *.c and *.cpp.
 */
#ifndef KLOCK_LOCKDEP_TEST_LD_H
#define KLOCK_LOCKDEP_TEST_LD_H

#include "../c/common.h"

#include <sys/types.h>

/* Names the phase for the watchdog and marks it on stderr. */
__attribute__((unused)) static void ld_phase(const char *p) {
    phase(p);
    fprintf(stderr, "lockdep-test: %s\n", p);
}

/* Runs fn(arg) in a new thread and waits for it: one lock order at a time. */
__attribute__((unused)) static void *run_thread(void *(*fn)(void *), void *arg) {
    return join(spawn(fn, arg));
}

#endif
