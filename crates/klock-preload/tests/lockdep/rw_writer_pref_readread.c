/* MUST REPORT (one report): a read-read inversion on a writer-preferring
 * (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) rwlock.
 *
 * Thread 1 read-locks R, then locks M; thread 2 locks M, then read-locks R.
 * On this kind a reader waits behind a waiting writer, so thread 1 holding
 * R(read) and waiting for M, thread 2 holding M and waiting for R(read)
 * behind a third thread's queued wrlock deadlocks: a cycle. (Its neighbour,
 * the same orders on reader-preferring kinds, is in recursive.c: no report.) */
#include "ld.h"

static pthread_rwlock_t wp_r;
static pthread_mutex_t wp_m = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *read_r_then_m(void *arg) {
    (void)arg;
    OK(pthread_rwlock_rdlock(&wp_r));
    OK(pthread_mutex_lock(&wp_m));
    OK(pthread_mutex_unlock(&wp_m));
    OK(pthread_rwlock_unlock(&wp_r));
    return NULL;
}

__attribute__((noinline)) static void *m_then_read_r(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&wp_m));
    OK(pthread_rwlock_rdlock(&wp_r));
    OK(pthread_rwlock_unlock(&wp_r));
    OK(pthread_mutex_unlock(&wp_m));
    return NULL;
}

int main(void) {
    watchdog(30);
    pthread_rwlockattr_t a;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
    OK(pthread_rwlock_init(&wp_r, &a));
    OK(pthread_rwlockattr_destroy(&a));

    ld_phase("R read then M");
    run_thread(read_r_then_m, NULL);
    ld_phase("M then R read (closes the cycle on this kind)");
    run_thread(m_then_read_r, NULL);
    ld_phase("done");
    OK(pthread_rwlock_destroy(&wp_r));
    pass("rw_writer_pref_readread: R(read)->M and M->R(read) on a "
         "PREFER_WRITER_NONRECURSIVE_NP rwlock");
    return 0;
}
