/* Waiters on 16 KiB thread stacks (pthread_attr_setstacksize(16384), glibc's
 * PTHREAD_STACK_MIN): threads block in pthread_cond_wait, cond_timedwait,
 * pthread_mutex_lock, mutex_timedlock, rwlock rd/wr locks and a spinlock.
 * Catches lock slow paths with big stack frames and an interposer whose
 * static TLS makes pthread_create refuse small stacks (EINVAL).
 *
 * The small-stack threads only record results; the main thread checks and
 * reports (no printf on a 16 KiB stack). */
#include "common.h"
#include <limits.h>
#include <stdatomic.h>

#define STACK 16384
#define PER_KIND 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static int go;
static long counter;
static atomic_int started, errors;
static atomic_int first_error;

static void note(int rc, int want) {
    if (rc != want) {
        int zero = 0;
        atomic_compare_exchange_strong(&first_error, &zero, rc ? rc : -1);
        atomic_fetch_add(&errors, 1);
    }
}

static void *cond_waiter(void *arg) {
    int timed = (int)(intptr_t)arg;
    note(pthread_mutex_lock(&m), 0);
    atomic_fetch_add(&started, 1);
    while (!go) {
        if (timed) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 30;
            int rc = pthread_cond_timedwait(&c, &m, &dl);
            if (rc != 0 && rc != ETIMEDOUT)
                note(rc, 0);
        } else {
            note(pthread_cond_wait(&c, &m), 0);
        }
    }
    counter++;
    note(pthread_mutex_unlock(&m), 0);
    return NULL;
}

static void *mutex_waiter(void *arg) {
    int timed = (int)(intptr_t)arg;
    atomic_fetch_add(&started, 1);
    if (timed) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += 30;
        note(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &dl), 0);
    } else {
        note(pthread_mutex_lock(&m), 0);
    }
    counter++;
    note(pthread_mutex_unlock(&m), 0);
    return NULL;
}

static long rw_reads, rw_writes;

static void *rw_waiter(void *arg) {
    int kind = (int)(intptr_t)arg; /* 0 rd, 1 wr, 2 timed rd, 3 timed wr */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    atomic_fetch_add(&started, 1);
    switch (kind) {
    case 0:
        note(pthread_rwlock_rdlock(&rw), 0);
        break;
    case 1:
        note(pthread_rwlock_wrlock(&rw), 0);
        break;
    case 2:
        note(pthread_rwlock_timedrdlock(&rw, &dl), 0);
        break;
    default:
        note(pthread_rwlock_timedwrlock(&rw, &dl), 0);
        break;
    }
    if (kind & 1)
        rw_writes++;
    else
        __atomic_fetch_add(&rw_reads, 1, __ATOMIC_RELAXED);
    note(pthread_rwlock_unlock(&rw), 0);
    return NULL;
}

static long spin_counter;

static void *spinner(void *arg) {
    (void)arg;
    atomic_fetch_add(&started, 1);
    for (int i = 0; i < 10000; i++) {
        note(pthread_spin_lock(&spin), 0);
        spin_counter++;
        note(pthread_spin_unlock(&spin), 0);
    }
    return NULL;
}

static pthread_attr_t attr;

static pthread_t spawn_small(void *(*fn)(void *), void *arg) {
    pthread_t t;
    int rc = pthread_create(&t, &attr, fn, arg);
    if (rc != 0)
        FAIL("pthread_create with a %d-byte stack: %s%s", STACK, errname(rc),
             rc == EINVAL ? " (static TLS of the loaded libraries too big?)"
                          : "");
    return t;
}

static void wait_started(int n) {
    while (atomic_load(&started) < n)
        sched_yield();
    sleep_ms(30); /* let them block */
}

static void check_errors(const char *what) {
    int e = atomic_load(&errors);
    if (e)
        FAIL("%s: %d lock calls failed on small stacks, first: %d (%s)", what,
             e, atomic_load(&first_error), errname(atomic_load(&first_error)));
}

int main(void) {
    watchdog(30);
    long min = sysconf(_SC_THREAD_STACK_MIN);
    CHECK(min > 0 && min <= STACK, "PTHREAD_STACK_MIN is %ld", min);
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, STACK));
    size_t got = 0;
    OK(pthread_attr_getstacksize(&attr, &got));
    CHECK(got == STACK, "stack size %zu", got);
    OK(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));

    for (int round = 0; round < 5; round++) {
        pthread_t t[4 * PER_KIND];
        int n = 0;

        phase("condvar waiters on 16 KiB stacks");
        atomic_store(&started, 0);
        go = 0;
        counter = 0;
        for (int i = 0; i < 2 * PER_KIND; i++)
            t[n++] = spawn_small(cond_waiter, (void *)(intptr_t)(i & 1));
        wait_started(n);
        OK(pthread_mutex_lock(&m));
        go = 1;
        OK(pthread_cond_broadcast(&c));
        OK(pthread_mutex_unlock(&m));
        for (int i = 0; i < n; i++)
            join(t[i]);
        check_errors("condvar waiters");
        CHECK(counter == n, "counter %ld, expected %d", counter, n);

        phase("mutex waiters on 16 KiB stacks");
        atomic_store(&started, 0);
        counter = 0;
        n = 0;
        OK(pthread_mutex_lock(&m));
        for (int i = 0; i < 2 * PER_KIND; i++)
            t[n++] = spawn_small(mutex_waiter, (void *)(intptr_t)(i & 1));
        wait_started(n);
        OK(pthread_mutex_unlock(&m));
        for (int i = 0; i < n; i++)
            join(t[i]);
        check_errors("mutex waiters");
        CHECK(counter == n, "counter %ld, expected %d", counter, n);

        phase("rwlock waiters on 16 KiB stacks");
        atomic_store(&started, 0);
        rw_reads = rw_writes = 0;
        n = 0;
        OK(pthread_rwlock_wrlock(&rw));
        for (int i = 0; i < 4 * PER_KIND; i++)
            t[n++] = spawn_small(rw_waiter, (void *)(intptr_t)(i % 4));
        wait_started(n);
        OK(pthread_rwlock_unlock(&rw));
        for (int i = 0; i < n; i++)
            join(t[i]);
        check_errors("rwlock waiters");
        CHECK(rw_reads == 2 * PER_KIND && rw_writes == 2 * PER_KIND,
              "reads %ld writes %ld", rw_reads, rw_writes);

        phase("spinners on 16 KiB stacks");
        atomic_store(&started, 0);
        spin_counter = 0;
        n = 0;
        for (int i = 0; i < PER_KIND; i++)
            t[n++] = spawn_small(spinner, NULL);
        for (int i = 0; i < n; i++)
            join(t[i]);
        check_errors("spinners");
        CHECK(spin_counter == 10000L * n, "spin counter %ld", spin_counter);
    }
    OK(pthread_spin_destroy(&spin));
    OK(pthread_attr_destroy(&attr));
    pass("small_stack");
    return 0;
}
