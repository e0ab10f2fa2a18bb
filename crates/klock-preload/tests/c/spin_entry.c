/* The bound pthread_spin_lock/unlock (GNU indirect functions on x86-64
 * glibc: the interposer picks an entry point once per process) keep mutual
 * exclusion whatever KLOCK_SPIN says: threads count under a private
 * spinlock, and a thread that finds another inside fails. tests/preload.rs
 * also builds it with -z now (the resolvers run at start-up, before the C
 * library can getenv) and runs it under every KLOCK_SPIN variant. */
#include "common.h"

#define THREADS 4
#define ITERS 200000

static pthread_spinlock_t lock;
static volatile long counter;
static volatile int inside;

static void *count(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        OK(pthread_spin_lock(&lock));
        CHECK(!inside, "two threads inside the spinlock");
        inside = 1;
        counter = counter + 1;
        inside = 0;
        OK(pthread_spin_unlock(&lock));
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    OK(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE));
    for (int i = 0; i < THREADS; i++)
        OK(pthread_create(&t[i], NULL, count, NULL));
    for (int i = 0; i < THREADS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK(counter == (long)THREADS * ITERS, "lost increments");
    OK(pthread_spin_destroy(&lock));
    printf("PASS spin_entry\n");
    return 0;
}
