/* MUST REPORT (one report): two pthread spinlocks in both orders, one
 * thread after the other. */
#include "ld.h"

static pthread_spinlock_t spin_a;
static pthread_spinlock_t spin_b;

__attribute__((noinline)) static void *spin_a_then_b(void *arg) {
    (void)arg;
    OK(pthread_spin_lock(&spin_a));
    OK(pthread_spin_lock(&spin_b));
    OK(pthread_spin_unlock(&spin_b));
    OK(pthread_spin_unlock(&spin_a));
    return NULL;
}

__attribute__((noinline)) static void *spin_b_then_a(void *arg) {
    (void)arg;
    OK(pthread_spin_lock(&spin_b));
    OK(pthread_spin_lock(&spin_a));
    OK(pthread_spin_unlock(&spin_a));
    OK(pthread_spin_unlock(&spin_b));
    return NULL;
}

int main(void) {
    watchdog(30);
    OK(pthread_spin_init(&spin_a, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_spin_init(&spin_b, PTHREAD_PROCESS_PRIVATE));
    ld_phase("spin A then B");
    run_thread(spin_a_then_b, NULL);
    ld_phase("spin B then A (closes the cycle)");
    run_thread(spin_b_then_a, NULL);
    ld_phase("done");
    OK(pthread_spin_destroy(&spin_a));
    OK(pthread_spin_destroy(&spin_b));
    pass("spin_cycle: both orders ran, one after the other");
    return 0;
}
