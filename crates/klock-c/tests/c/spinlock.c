/* klock_spinlock_*: every function, every error code, the static
 * initialiser, unlock by another thread, and a threaded counter with more
 * threads than CPUs (so waiters queue, sleep and are kicked at unlock).
 * tests/c_api.rs runs it once per KLOCK_SPIN variant. */
#include "common.h"
#include <string.h>

static klock_spinlock_t st_spin = KLOCK_SPINLOCK_INITIALIZER;

static void *expect_busy(void *s) {
    EXPECT(klock_spinlock_trylock(s), EBUSY);
    return NULL;
}

static void *unlock_it(void *s) {
    EXPECT(klock_spinlock_unlock(s), 0);
    return NULL;
}

static void errors(klock_spinlock_t *s) {
    PHASE("errors");
    EXPECT(klock_spinlock_unlock(s), EPERM);
    EXPECT(klock_spinlock_lock(s), 0);
    EXPECT(klock_spinlock_lock(s), EDEADLK);
    EXPECT(klock_spinlock_trylock(s), EBUSY);
    on_other_thread(expect_busy, s);
    EXPECT(klock_spinlock_destroy(s), EBUSY);
    EXPECT(klock_spinlock_unlock(s), 0);
    EXPECT(klock_spinlock_unlock(s), EPERM);
    EXPECT(klock_spinlock_trylock(s), 0);
    on_other_thread(unlock_it, s); /* any thread may unlock it */
    EXPECT(klock_spinlock_unlock(s), EPERM);
    EXPECT(klock_spinlock_trylock(s), 0);
    EXPECT(klock_spinlock_unlock(s), 0);
    EXPECT(klock_spinlock_destroy(s), 0);
}

#define THREADS 6
#define ITERS 20000
static klock_spinlock_t counter_s;
static volatile long counter;

static pthread_barrier_t start;

static void *count(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start); /* all at once: contention */
    for (int i = 0; i < ITERS; i++) {
        if (i % 2) {
            int r;
            while ((r = klock_spinlock_trylock(&counter_s)) == EBUSY)
                sched_yield();
            EXPECT(r, 0);
        } else {
            EXPECT(klock_spinlock_lock(&counter_s), 0);
        }
        long c = counter;
        if ((i + id) % 16 == 0)
            sched_yield(); /* get preempted inside, now and then */
        counter = c + 1;
        EXPECT(klock_spinlock_unlock(&counter_s), 0);
    }
    return NULL;
}

int main(void) {
    watchdog(60);
    const char *variant = getenv("KLOCK_SPIN");
    klock_spinlock_t s;

    PHASE("null pointers");
    EXPECT(klock_spinlock_init(NULL), EINVAL);
    EXPECT(klock_spinlock_lock(NULL), EINVAL);
    EXPECT(klock_spinlock_trylock(NULL), EINVAL);
    EXPECT(klock_spinlock_unlock(NULL), EINVAL);
    EXPECT(klock_spinlock_destroy(NULL), EINVAL);

    EXPECT(klock_spinlock_init(&s), 0);
    errors(&s);
    errors(&st_spin);

    PHASE("threaded counter");
    pthread_t t[THREADS];
    EXPECT(klock_spinlock_init(&counter_s), 0);
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        t[i] = spawn(count, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    if (counter != (long)THREADS * ITERS)
        FAIL("counter %ld, expected %ld (lost updates)", counter, (long)THREADS * ITERS);
    EXPECT(klock_spinlock_destroy(&counter_s), 0);

    /* The library must have run the variant KLOCK_SPIN asked for (the
     * default is the queued unfair lock). */
    const char *ran = klock_spinlock_variant();
    if (strcmp(ran, variant ? variant : "unfair") != 0)
        FAIL("KLOCK_SPIN=%s but the library ran the %s variant", variant ? variant : "(unset)", ran);
    printf("PASS spinlock (KLOCK_SPIN=%s, ran %s)\n", variant ? variant : "default", ran);
    return 0;
}
