/* Condition variables with a priority-protect mutex (PTHREAD_PRIO_PROTECT,
 * error-checking, ceiling = the lowest SCHED_FIFO priority): served by
 * glibc, the condvar by klock; the workout of cond_pair.h must pass.
 *
 * Locking a priority-protect mutex raises the locking thread to the
 * ceiling, a SCHED_FIFO priority, which glibc refuses (EINVAL) to a
 * SCHED_OTHER thread. The program therefore first tries the lock as it is;
 * on EINVAL it makes itself SCHED_FIFO at the lowest priority (its threads
 * inherit it), which needs privilege (root, CAP_SYS_NICE, or an
 * RLIMIT_RTPRIO above 0). Without it the program cannot test the pair: it
 * says so with skip_test() (a SKIP line, exit status SKIP_EXIT), never with
 * PASS, so that tests/preload.rs reports it as SKIPPED, and fails it under
 * .ci/run (KLOCK_CI=1) or with CI set. */
#include "cond_pair.h"
#include <sched.h>

int main(void) {
    watchdog(50);
    int ceiling = sched_get_priority_min(SCHED_FIFO);
    CHECK(ceiling >= 0, "sched_get_priority_min: %s", strerror(errno));
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT));
    OK(pthread_mutexattr_setprioceiling(&ma, ceiling));
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, &ma));
    const char *step = "pthread_mutex_lock as SCHED_OTHER";
    int rc = pthread_mutex_lock(&m);
    if (rc == EINVAL) {
        struct sched_param sp = {.sched_priority = ceiling};
        step = "pthread_setschedparam(SCHED_FIFO)";
        rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (rc == 0) {
            step = "pthread_mutex_lock as SCHED_FIFO";
            rc = pthread_mutex_lock(&m);
        }
    }
    if (rc == 0)
        OK(pthread_mutex_unlock(&m));
    if (rc == EPERM || rc == EINVAL)
        skip_test("priority-protect mutexes unavailable here: %s returned %s "
                  "(needs root, CAP_SYS_NICE or RLIMIT_RTPRIO > 0)",
                  step, errname(rc));
    OK(rc);
    int got = -1;
    OK(pthread_mutex_getprioceiling(&m, &got));
    CHECK(got == ceiling, "ceiling %d, expected %d", got, ceiling);

    exercise_pair(&m, NULL, "PP mutex, default condvar");

    OK(pthread_mutex_destroy(&m));
    OK(pthread_mutexattr_destroy(&ma));
    pass("condvars with a priority-protect mutex");
    return 0;
}
