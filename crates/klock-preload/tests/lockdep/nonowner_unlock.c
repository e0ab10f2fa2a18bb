/* MUST NOT REPORT: a default mutex used as a binary semaphore (locked by one
 * thread, unlocked by another: undefined by POSIX, allowed by glibc's normal
 * mutexes, relied on by rt-tests' ptsematest, and supported by the
 * interposer: tests/c/nonowner_unlock.c).
 *
 * Phase 1: main locks sem; another thread unlocks it. Main holds nothing now.
 * Phase 2: main locks lock_x (nothing held, so no edge sem -> lock_x).
 * Phase 3: a thread locks lock_x, then sem: lock_x -> sem, the only order.
 * Phase 4: 100 more rounds of main locking sem and a thread unlocking it.
 * A validator that still counts sem as held by main after the other
 * thread's unlock records sem -> lock_x in phase 2 and reports a cycle in
 * phase 3 that cannot deadlock. */
#include "ld.h"

static pthread_mutex_t sem = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_x = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *unlock_sem(void *arg) {
    (void)arg;
    OK(pthread_mutex_unlock(&sem)); /* locked by main */
    return NULL;
}

__attribute__((noinline)) static void *x_then_sem(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&lock_x));
    OK(pthread_mutex_lock(&sem));
    OK(pthread_mutex_unlock(&sem));
    OK(pthread_mutex_unlock(&lock_x));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("main locks sem, another thread unlocks it");
    OK(pthread_mutex_lock(&sem));
    run_thread(unlock_sem, NULL);
    ld_phase("main locks lock_x, holding nothing");
    OK(pthread_mutex_lock(&lock_x));
    OK(pthread_mutex_unlock(&lock_x));
    ld_phase("a thread: lock_x, then sem");
    run_thread(x_then_sem, NULL);
    ld_phase("100 rounds: main locks sem, a thread unlocks it");
    for (int i = 0; i < 100; i++) {
        OK(pthread_mutex_lock(&sem));
        run_thread(unlock_sem, NULL);
    }
    ld_phase("main locks lock_x again");
    OK(pthread_mutex_lock(&lock_x));
    OK(pthread_mutex_unlock(&lock_x));
    ld_phase("done");
    pass("nonowner_unlock: a mutex as a semaphore, no lock held across");
    return 0;
}
