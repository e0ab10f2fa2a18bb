/* MUST REPORT (one report): the neighbour of trylock_backoff.c.
 *
 * The same first two phases, but the thread that holds B takes A with a
 * blocking pthread_mutex_lock instead of a trylock: B -> A is then a wait
 * edge, and with the order A -> B it closes a cycle. */
#include "ld.h"

static pthread_mutex_t try_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t try_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t try_c = PTHREAD_MUTEX_INITIALIZER;

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

__attribute__((noinline)) static void *b_then_lock_a(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&try_b));
    OK(pthread_mutex_lock(&try_a)); /* blocking: B -> A closes the cycle */
    OK(pthread_mutex_lock(&try_c));
    OK(pthread_mutex_unlock(&try_c));
    OK(pthread_mutex_unlock(&try_a));
    OK(pthread_mutex_unlock(&try_b));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("order A, B, C");
    run_thread(order_a_b_c, NULL);
    ld_phase("B, lock A (blocking: closes the cycle), C");
    run_thread(b_then_lock_a, NULL);
    ld_phase("done");
    pass("trylock_neighbour: A -> B, then B -> A with a blocking lock");
    return 0;
}
