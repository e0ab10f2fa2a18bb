/* Condition variables with a robust mutex (PTHREAD_MUTEX_ROBUST,
 * error-checking): served by glibc, the condvar by klock. The workout of
 * cond_pair.h must pass, and the owner-died protocol must reach a condvar
 * waiter as it does with glibc (POSIX, pthread_cond_wait: "[EOWNERDEAD] The
 * mutex is a robust mutex and ... the previous owning thread terminated
 * while holding the mutex lock. The mutex lock shall be acquired by the
 * calling thread"):
 *
 *  - a thread takes the mutex while another waits on the condvar, signals,
 *    and exits still holding it: the waiter's pthread_cond_wait (then
 *    _timedwait) returns EOWNERDEAD with the mutex held;
 *    pthread_mutex_consistent then makes the mutex usable again;
 *  - two waiters, a broadcast, the owner dies: one waiter gets EOWNERDEAD
 *    and unlocks without making the mutex consistent, the other gets
 *    ENOTRECOVERABLE (the mutex is permanently unusable, not held). */
#include "cond_pair.h"

static pthread_mutex_t m;
static pthread_cond_t c;
static int waiting, flag;

struct waiter {
    int timed;
    int rc;          /* the wait's result */
    int unlock_rc;   /* after EOWNERDEAD: unlock (consistent first, or not) */
    int consistent;  /* make the mutex consistent after EOWNERDEAD */
};

static void *waiter(void *arg) {
    struct waiter *w = arg;
    OK(pthread_mutex_lock(&m));
    waiting++;
    int rc = 0;
    while (!flag && rc == 0) {
        if (w->timed) {
            struct timespec dl = deadline_ms(CLOCK_REALTIME, 20000);
            rc = pthread_cond_timedwait(&c, &m, &dl);
        } else {
            rc = pthread_cond_wait(&c, &m);
        }
    }
    w->rc = rc;
    if (rc == EOWNERDEAD) {
        if (w->consistent)
            OK(pthread_mutex_consistent(&m));
        w->unlock_rc = pthread_mutex_unlock(&m);
    } else if (rc == 0) {
        w->unlock_rc = pthread_mutex_unlock(&m);
    }
    return NULL;
}

/* Takes the mutex once `n` waiters wait, sets the flag, broadcasts and
 * exits holding the mutex. */
static void *dier(void *arg) {
    int n = (int)(intptr_t)arg;
    for (;;) {
        int rc = pthread_mutex_lock(&m);
        CHECK(rc == 0, "dier lock: %s", errname(rc));
        if (waiting == n)
            break;
        OK(pthread_mutex_unlock(&m));
        sleep_ms(1);
    }
    sleep_ms(5); /* the waiters are asleep on the condvar (they released m) */
    flag = 1;
    OK(pthread_cond_broadcast(&c));
    return NULL; /* exits holding m */
}

static void init_robust(pthread_mutex_t *mx) {
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST));
    OK(pthread_mutex_init(mx, &ma));
    OK(pthread_mutexattr_destroy(&ma));
}

static void owner_dies_during_wait(int timed) {
    phase(timed ? "owner dies: timedwait gets EOWNERDEAD"
                : "owner dies: wait gets EOWNERDEAD");
    init_robust(&m);
    OK(pthread_cond_init(&c, NULL));
    waiting = flag = 0;
    struct waiter w = {timed, -1, -1, 1};
    pthread_t tw = spawn(waiter, &w);
    pthread_t td = spawn(dier, (void *)(intptr_t)1);
    join(td);
    join(tw);
    EXPECT_RC(w.rc, EOWNERDEAD);
    EXPECT_RC(w.unlock_rc, 0); /* it held the mutex, now consistent */
    OK(pthread_mutex_lock(&m));  /* usable again */
    OK(pthread_mutex_unlock(&m));
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

static void not_recoverable(void) {
    phase("owner dies, not made consistent: ENOTRECOVERABLE");
    init_robust(&m);
    OK(pthread_cond_init(&c, NULL));
    waiting = flag = 0;
    struct waiter w[2] = {{0, -1, -1, 0}, {1, -1, -1, 0}};
    pthread_t tw[2] = {spawn(waiter, &w[0]), spawn(waiter, &w[1])};
    pthread_t td = spawn(dier, (void *)(intptr_t)2);
    join(td);
    join(tw[0]);
    join(tw[1]);
    int owner_dead = 0, unrecoverable = 0;
    for (int i = 0; i < 2; i++) {
        if (w[i].rc == EOWNERDEAD) {
            owner_dead++;
            EXPECT_RC(w[i].unlock_rc, 0); /* held, unlocked inconsistent */
        } else if (w[i].rc == ENOTRECOVERABLE) {
            unrecoverable++;
        } else {
            FAIL("waiter %d: %s, expected EOWNERDEAD or ENOTRECOVERABLE", i,
                 errname(w[i].rc));
        }
    }
    CHECK(owner_dead == 1 && unrecoverable == 1,
          "%d EOWNERDEAD and %d ENOTRECOVERABLE, expected one each", owner_dead,
          unrecoverable);
    EXPECT_RC(pthread_mutex_lock(&m), ENOTRECOVERABLE);
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

int main(void) {
    watchdog(50);
    pthread_mutex_t rm;
    init_robust(&rm);
    exercise_pair(&rm, NULL, "robust mutex, default condvar");
    OK(pthread_mutex_destroy(&rm));

    owner_dies_during_wait(0);
    owner_dies_during_wait(1);
    not_recoverable();
    pass("condvars with a robust mutex, owner death included");
    return 0;
}
