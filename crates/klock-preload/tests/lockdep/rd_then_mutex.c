/* MUST REPORT (one report): a read lock and a mutex in both orders, the
 * second with the rwlock write-locked.
 *
 * Thread 1 read-locks rw_r, then locks mutex_m (edge R(read) -> M). Thread 2
 * locks mutex_m, then write-locks rw_r (edge M -> R(write)). A writer waiting
 * for the reader while the reader waits for the mutex deadlocks on every
 * rwlock kind, so this is a cycle. */
#include "ld.h"

static pthread_rwlock_t rw_r = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t mutex_m = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *read_r_then_m(void *arg) {
    (void)arg;
    OK(pthread_rwlock_rdlock(&rw_r));
    OK(pthread_mutex_lock(&mutex_m));
    OK(pthread_mutex_unlock(&mutex_m));
    OK(pthread_rwlock_unlock(&rw_r));
    return NULL;
}

__attribute__((noinline)) static void *m_then_write_r(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&mutex_m));
    OK(pthread_rwlock_wrlock(&rw_r));
    OK(pthread_rwlock_unlock(&rw_r));
    OK(pthread_mutex_unlock(&mutex_m));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("R read then M");
    run_thread(read_r_then_m, NULL);
    ld_phase("M then R write (closes the cycle)");
    run_thread(m_then_write_r, NULL);
    ld_phase("done");
    pass("rd_then_mutex: R(read)->M and M->R(write) ran one after another");
    return 0;
}
