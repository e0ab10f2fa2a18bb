/* Mixed process-sharing: a process-shared mutex with a private condvar,
 * and a private mutex with a process-shared condvar, used by the threads of
 * one process. glibc accepts both pairs (POSIX ties neither attribute to
 * the other); under the interposer each pair has one object served by
 * glibc and the other by klock. The workout of cond_pair.h must pass for
 * both, with condvars on CLOCK_REALTIME and CLOCK_MONOTONIC; and a
 * recursive private mutex (locked once: glibc's wait releases one level)
 * with a process-shared condvar. */
#include "cond_pair.h"

static pthread_mutex_t rec;
static pthread_cond_t pc;
static int rec_flag;

static void *rec_signaller(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&rec)); /* only possible once the wait released it */
    rec_flag = 1;
    OK(pthread_cond_signal(&pc));
    OK(pthread_mutex_unlock(&rec));
    return NULL;
}

static void recursive_private_mutex(const pthread_condattr_t *ca) {
    phase("recursive private mutex, process-shared condvar");
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
    OK(pthread_mutex_init(&rec, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    OK(pthread_cond_init(&pc, ca));
    OK(pthread_mutex_lock(&rec));
    pthread_t t = spawn(rec_signaller, NULL);
    while (!rec_flag)
        OK(pthread_cond_wait(&pc, &rec));
    join(t);
    OK(pthread_mutex_lock(&rec)); /* held by us: a second level */
    OK(pthread_mutex_unlock(&rec));
    OK(pthread_mutex_unlock(&rec));
    EXPECT_RC(pthread_mutex_unlock(&rec), EPERM);
    OK(pthread_cond_destroy(&pc));
    OK(pthread_mutex_destroy(&rec));
}

int main(void) {
    watchdog(50);
    pthread_mutexattr_t shared_ma, private_ma;
    OK(pthread_mutexattr_init(&shared_ma));
    OK(pthread_mutexattr_settype(&shared_ma, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_setpshared(&shared_ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutexattr_init(&private_ma));
    OK(pthread_mutexattr_settype(&private_ma, PTHREAD_MUTEX_ERRORCHECK));
    pthread_condattr_t private_ca, shared_ca, shared_mono_ca;
    OK(pthread_condattr_init(&private_ca));
    OK(pthread_condattr_init(&shared_ca));
    OK(pthread_condattr_setpshared(&shared_ca, PTHREAD_PROCESS_SHARED));
    OK(pthread_condattr_init(&shared_mono_ca));
    OK(pthread_condattr_setpshared(&shared_mono_ca, PTHREAD_PROCESS_SHARED));
    OK(pthread_condattr_setclock(&shared_mono_ca, CLOCK_MONOTONIC));

    pthread_mutex_t sm, pm;
    OK(pthread_mutex_init(&sm, &shared_ma));
    OK(pthread_mutex_init(&pm, &private_ma));

    exercise_pair(&sm, &private_ca, "process-shared mutex, private condvar");
    exercise_pair(&pm, &shared_ca, "private mutex, process-shared condvar");
    exercise_pair(&pm, &shared_mono_ca,
                  "private mutex, process-shared CLOCK_MONOTONIC condvar");
    recursive_private_mutex(&shared_ca);

    OK(pthread_mutex_destroy(&sm));
    OK(pthread_mutex_destroy(&pm));
    pass("mixed process-shared mutex and condvar pairs");
    return 0;
}
