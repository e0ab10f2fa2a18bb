/* Condition variables with a priority-protect mutex (PTHREAD_PRIO_PROTECT,
 * error-checking, ceiling = the lowest SCHED_FIFO priority): served by
 * glibc, the condvar by klock; the workout of cond_pair.h must pass.
 *
 * Locking a priority-protect mutex raises the locking thread to the
 * ceiling, a SCHED_FIFO priority, which glibc refuses (EINVAL) to a
 * SCHED_OTHER thread. The program therefore first tries the lock as it is;
 * on EINVAL it makes itself SCHED_FIFO at the lowest priority (its threads
 * inherit it), which needs privilege (root, or CAP_SYS_NICE). Without it
 * the program says so and passes: that is the environment, not the pair. */
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
    int rc = pthread_mutex_lock(&m);
    if (rc == EINVAL) {
        struct sched_param sp = {.sched_priority = ceiling};
        rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (rc == 0)
            rc = pthread_mutex_lock(&m);
    }
    if (rc == 0)
        OK(pthread_mutex_unlock(&m));
    if (rc == EPERM || rc == EINVAL) {
        printf("PASS: priority-protect mutexes unavailable here (%s): skipped\n",
               errname(rc));
        return 0;
    }
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
