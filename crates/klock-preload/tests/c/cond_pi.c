/* Condition variables with a priority-inheritance mutex
 * (PTHREAD_PRIO_INHERIT, error-checking): the interposer serves the mutex
 * with glibc and the condvar with klock; glibc accepts the pair, so the
 * whole workout of cond_pair.h must pass, with the condvar on
 * CLOCK_REALTIME (default) and on CLOCK_MONOTONIC. */
#include "cond_pair.h"

int main(void) {
    watchdog(50);
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT));
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, &ma));

    exercise_pair(&m, NULL, "PI mutex, default condvar");

    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
    exercise_pair(&m, &ca, "PI mutex, CLOCK_MONOTONIC condvar");

    OK(pthread_condattr_destroy(&ca));
    OK(pthread_mutex_destroy(&m));
    OK(pthread_mutexattr_destroy(&ma));
    pass("condvars with a priority-inheritance mutex");
    return 0;
}
