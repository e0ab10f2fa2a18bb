/* MUST REPORT (one report): a lock taken by a successful trylock counts as
 * held. Thread 1 trylocks A (no edge: nothing held), then locks B blocking
 * while holding A: edge A -> B. Thread 2 locks B, then A blocking: B -> A
 * closes the cycle. (Were the trylocked A not counted as held, thread 1
 * would add no edge and there would be no cycle.) */
#include "ld.h"

static pthread_mutex_t held_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held_b = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *trylock_a_then_lock_b(void *arg) {
    (void)arg;
    OK(pthread_mutex_trylock(&held_a));
    OK(pthread_mutex_lock(&held_b));
    OK(pthread_mutex_unlock(&held_b));
    OK(pthread_mutex_unlock(&held_a));
    return NULL;
}

__attribute__((noinline)) static void *lock_b_then_a(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&held_b));
    OK(pthread_mutex_lock(&held_a));
    OK(pthread_mutex_unlock(&held_a));
    OK(pthread_mutex_unlock(&held_b));
    return NULL;
}

int main(void) {
    watchdog(30);
    ld_phase("trylock A, lock B");
    run_thread(trylock_a_then_lock_b, NULL);
    ld_phase("lock B, lock A (closes the cycle)");
    run_thread(lock_b_then_a, NULL);
    ld_phase("done");
    pass("trylock_held: trylock(A) then B, later B then A");
    return 0;
}
