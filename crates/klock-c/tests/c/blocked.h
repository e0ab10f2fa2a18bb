/* wait_thread_blocked: shared by the C test programs of klock-c
 * (tests/c/common.h) and klock-preload (its tests/c/common.h includes this
 * file by a relative path). The including header defines FAIL(...),
 * sleep_ms() and test_phase first. */
#ifndef KLOCK_TEST_BLOCKED_H
#define KLOCK_TEST_BLOCKED_H
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* Wait until thread `tid` (gettid()) sleeps in the kernel: its state in
 * /proc/self/task/<tid>/stat is 'S' (or 'D').  Used to know that a thread
 * that announced it is about to block in a lock call really is blocked there
 * (queued), not still on its way in.  No deadline of its own: it waits for
 * that event, and a thread that never blocks is caught by the program's
 * watchdog (alarm), whose message names this wait (test_phase, defined by
 * the including header, says which thread and the phase it is part of). */
__attribute__((unused)) static void wait_thread_blocked(pid_t tid) {
    char path[64], buf[512];
    static char what[256];
    const char *outer = test_phase;
    snprintf(what, sizeof what, "waiting for thread %d to block (in phase: %s)",
             (int)tid, outer);
    test_phase = what;
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    for (;;) {
        FILE *f = fopen(path, "r");
        if (!f)
            FAIL("open %s: %s", path, strerror(errno));
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        /* "pid (comm) S ...": the state follows the last ") ". */
        char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D'))
            break;
        sleep_ms(1);
    }
    test_phase = outer;
}

#endif
