/* The _exit path: after real lock traffic (mutex, condvar, rwlock, spin) a
 * worker thread calls _exit(0) while other threads still hammer locks, one
 * holds a mutex and one is blocked in pthread_cond_wait.  No atexit
 * handlers or destructors run; the process must still exit with status 0.
 * (An interposer that keeps statistics has to flush them on this path too;
 * the harness only checks the exit status and the PASS line.) */
#include "common.h"
#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static atomic_long traffic;
static atomic_int holder_ready, sleeper_ready;
static long counter;

static void *hammer(void *arg) {
    (void)arg;
    for (;;) {
        OK(pthread_mutex_lock(&m));
        counter++;
        OK(pthread_cond_signal(&c));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_rwlock_rdlock(&rw));
        OK(pthread_rwlock_unlock(&rw));
        OK(pthread_rwlock_wrlock(&rw));
        OK(pthread_rwlock_unlock(&rw));
        OK(pthread_spin_lock(&spin));
        OK(pthread_spin_unlock(&spin));
        atomic_fetch_add(&traffic, 1);
    }
    return NULL;
}

static void *holder(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&held)); /* never released */
    atomic_store(&holder_ready, 1);
    for (;;)
        pause();
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    pthread_cond_t never = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t mm = PTHREAD_MUTEX_INITIALIZER;
    OK(pthread_mutex_lock(&mm));
    atomic_store(&sleeper_ready, 1);
    for (;;)
        OK(pthread_cond_wait(&never, &mm));
    return NULL;
}

static void *exiter(void *arg) {
    (void)arg;
    while (atomic_load(&traffic) < 20000)
        sched_yield();
    while (!atomic_load(&holder_ready) || !atomic_load(&sleeper_ready))
        sched_yield();
    /* Some lock traffic on this thread too, then leave. */
    for (int i = 0; i < 1000; i++) {
        OK(pthread_mutex_lock(&m));
        counter++;
        OK(pthread_mutex_unlock(&m));
    }
    EXPECT_RC(pthread_mutex_trylock(&held), EBUSY);
    static const char msg[] = "PASS: exit_from_thread (calling _exit(0) from a worker thread)\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(0);
}

int main(void) {
    watchdog(30);
    phase("lock traffic, then _exit(0) from a thread");
    OK(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));
    spawn(holder, NULL);
    spawn(sleeper, NULL);
    for (int i = 0; i < 3; i++)
        spawn(hammer, NULL);
    spawn(exiter, NULL);
    /* Main waits in a condvar as well; it never wakes up for good. */
    OK(pthread_mutex_lock(&m));
    for (;;)
        OK(pthread_cond_wait(&c, &m));
}
