/* wait_thread_blocked: shared by the C test programs of klock-c
 * (tests/c/common.h) and klock-preload (its tests/c/common.h includes this
 * file by a relative path). The including header defines FAIL(...) and
 * sleep_ms() first. */
#ifndef KLOCK_TEST_BLOCKED_H
#define KLOCK_TEST_BLOCKED_H
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* Wait until thread `tid` (gettid()) sleeps in the kernel: its state in
 * /proc/self/task/<tid>/stat is 'S' (or 'D').  Used to know that a thread
 * that announced it is about to block in a lock call really is blocked there
 * (queued), not still on its way in.  Fails after `max_ms`. */
__attribute__((unused)) static void wait_thread_blocked(pid_t tid, long max_ms) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    for (long waited = 0;; waited++) {
        FILE *f = fopen(path, "r");
        if (!f)
            FAIL("open %s: %s", path, strerror(errno));
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        /* "pid (comm) S ...": the state follows the last ") ". */
        char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D'))
            return;
        if (waited >= max_ms)
            FAIL("thread %d never blocked (stat: %s)", (int)tid, buf);
        sleep_ms(1);
    }
}

#endif
