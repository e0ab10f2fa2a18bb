/* exit(0) from main (atexit handlers and library destructors run) while
 * other threads are blocked in pthread_mutex_lock, pthread_cond_wait,
 * pthread_rwlock_wrlock and a timed wait, and one holds a mutex.  An
 * interposer's exit-time work (statistics, cleanup) must neither deadlock on
 * these locks nor crash.  An atexit handler also takes locks. */
#include "common.h"
#include <stdatomic.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int blocked;
static atomic_int tids[5]; /* each blocker's gettid(), by arrival */

/* Count this thread as about to block and publish its id. */
static void arrive(void) {
    atomic_store(&tids[atomic_fetch_add(&blocked, 1)], (int)gettid());
}

static void *lock_blocker(void *arg) {
    (void)arg;
    arrive();
    OK(pthread_mutex_lock(&held)); /* main holds it forever */
    FAIL("got a mutex that was never released");
}

static void *cond_blocker(void *arg) {
    int timed = (int)(intptr_t)arg;
    OK(pthread_mutex_lock(&cm));
    arrive();
    for (;;) {
        if (timed) {
            struct timespec dl = deadline_ms(CLOCK_REALTIME, 3600 * 1000);
            int rc = pthread_cond_timedwait(&c, &cm, &dl);
            CHECK(rc == 0 || rc == ETIMEDOUT, "timedwait %s", errname(rc));
        } else {
            OK(pthread_cond_wait(&c, &cm));
        }
    }
}

static void *rw_blocker(void *arg) {
    (void)arg;
    arrive();
    OK(pthread_rwlock_wrlock(&rw)); /* main holds a read lock forever */
    FAIL("got a write lock while a reader holds it");
}

static pthread_mutex_t exit_m = PTHREAD_MUTEX_INITIALIZER;
static int exit_handler_ran;

static void at_exit_handler(void) {
    /* Locks still work inside atexit handlers. */
    OK(pthread_mutex_lock(&exit_m));
    exit_handler_ran = 1;
    OK(pthread_mutex_unlock(&exit_m));
    EXPECT_RC(pthread_mutex_trylock(&held), EBUSY);
    static const char msg[] = "PASS: exit_while_blocked (atexit handler ran)\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
}

int main(void) {
    watchdog(30);
    phase("exit(0) while threads are blocked in locks");
    CHECK(atexit(at_exit_handler) == 0, "atexit");
    OK(pthread_mutex_lock(&held));
    OK(pthread_rwlock_rdlock(&rw));
    int n = 0;
    for (int i = 0; i < 2; i++, n++)
        spawn(lock_blocker, NULL);
    for (int i = 0; i < 2; i++, n++)
        spawn(cond_blocker, (void *)(intptr_t)i);
    spawn(rw_blocker, NULL);
    n++;
    while (atomic_load(&blocked) < n)
        sched_yield();
    CHECK(n == 5, "tids[] holds 5 blockers, not %d", n);
    for (int i = 0; i < n; i++) {
        while (!atomic_load(&tids[i]))
            sched_yield();
        wait_thread_blocked(atomic_load(&tids[i])); /* asleep in its lock */
    }
    /* Traffic on the condvar's mutex from main, then leave. */
    for (int i = 0; i < 100; i++) {
        OK(pthread_mutex_lock(&cm));
        OK(pthread_cond_signal(&c));
        OK(pthread_mutex_unlock(&cm));
    }
    exit(0);
}
