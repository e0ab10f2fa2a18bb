/* MUST NOT REPORT: the trylock back-off pattern.
 *
 * The lock order is A -> B -> C. A thread that holds B and wants A does not
 * block on A: it tries it. A successful trylock creates no wait edge (B -> A
 * is not an order), though A then counts as held (taking C blocking after
 * it adds A -> C, consistent with the order). A failed trylock backs off:
 * release B, then take A and B in order.
 *
 * Phase 1: A, B, C blocking (the order).
 * Phase 2: B, trylock(A) succeeds, C; released; then A, B in order.
 * Phase 3: main holds A; the thread takes B, trylock(A) fails with EBUSY,
 *          releases B, and takes A (blocks until main releases it), then B.
 * Neighbour: trylock_neighbour.c, the same with a blocking lock of A. */
#include "ld.h"

#include <stdatomic.h>

static pthread_mutex_t try_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t try_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t try_c = PTHREAD_MUTEX_INITIALIZER;

static atomic_int backed_off;

static void take_in_order(void) {
    OK(pthread_mutex_lock(&try_a));
    OK(pthread_mutex_lock(&try_b));
    OK(pthread_mutex_unlock(&try_b));
    OK(pthread_mutex_unlock(&try_a));
}

__attribute__((noinline)) static void *order_a_b_c(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&try_a));
    OK(pthread_mutex_lock(&try_b));
    OK(pthread_mutex_lock(&try_c));
    OK(pthread_mutex_unlock(&try_c));
    OK(pthread_mutex_unlock(&try_b));
    OK(pthread_mutex_unlock(&try_a));
    return NULL;
}

__attribute__((noinline)) static void *b_then_trylock_a_succeeds(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&try_b));
    OK(pthread_mutex_trylock(&try_a)); /* nobody holds A: succeeds */
    OK(pthread_mutex_lock(&try_c));
    OK(pthread_mutex_unlock(&try_c));
    OK(pthread_mutex_unlock(&try_a));
    OK(pthread_mutex_unlock(&try_b));
    take_in_order();
    return NULL;
}

__attribute__((noinline)) static void *b_then_trylock_a_fails(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&try_b));
    EXPECT_RC(pthread_mutex_trylock(&try_a), EBUSY); /* main holds A */
    OK(pthread_mutex_unlock(&try_b));
    atomic_store(&backed_off, 1);
    take_in_order(); /* blocks on A until main releases it */
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("order A, B, C");
    run_thread(order_a_b_c, NULL);

    ld_phase("B, trylock A (succeeds), C; then A, B");
    run_thread(b_then_trylock_a_succeeds, NULL);

    ld_phase("main holds A; B, trylock A (fails), back off, A, B");
    OK(pthread_mutex_lock(&try_a));
    pthread_t t = spawn(b_then_trylock_a_fails, NULL);
    while (!atomic_load(&backed_off))
        sleep_ms(1);
    OK(pthread_mutex_unlock(&try_a));
    join(t);

    ld_phase("done");
    pass("trylock_backoff: B then trylock(A) only, A -> B -> C otherwise");
    return 0;
}
