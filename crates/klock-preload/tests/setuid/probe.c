/* Probe for tests/secure.rs: run under LD_PRELOAD of the interposer, it
 * checks that the interposer is loaded and serves pthread_mutex_lock, that
 * the secure-execution flag (AT_SECURE) is what the test expects, and then
 * uses mutexes, a condvar and an rwlock from two threads, so that lock
 * statistics (if the interposer were collecting any) would have something to
 * report at exit, and takes two mutexes in both orders (one after the
 * other), so that lock-order validation (if it were on) would report, or
 * with KLOCK_LOCKDEP=abort end the probe.
 *
 * Usage: probe secure | probe plain
 *
 * Success: exit 0 and one line on stdout,
 *   PASS at_secure=<0|1> pthread_mutex_lock from <file that defines it>
 * Failure: exit 1 and a "FAIL ..." line on stderr. Nothing else is printed,
 * so any other stderr output comes from the interposer or the loader.
 *
 * Not in tests/c/: those programs are run plain and preloaded by preload.rs;
 * this one only makes sense under the interposer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#define ROUNDS 20000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long counter;
static int turn; /* condvar ping-pong: 0 = main's turn, 1 = the thread's */

static void fail(const char *what)
{
    fprintf(stderr, "FAIL %s\n", what);
    exit(1);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
        pthread_rwlock_rdlock(&rw);
        pthread_rwlock_unlock(&rw);
    }
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        while (turn != 1)
            pthread_cond_wait(&cv, &m);
        turn = 0;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "secure") && strcmp(argv[1], "plain")))
        fail("usage: probe secure|plain");
    unsigned long want_secure = strcmp(argv[1], "secure") == 0;
    unsigned long at_secure = getauxval(AT_SECURE);
    if ((at_secure != 0) != want_secure)
        fail(want_secure ? "AT_SECURE is 0: not in secure-execution mode "
                           "(is the program set-user-ID root and run by another user?)"
                         : "AT_SECURE is set in a plain run");

    /* The interposer exports klock-c's API as well as the pthread calls. */
    if (!dlsym(RTLD_DEFAULT, "klock_mutex_lock"))
        fail("the interposer is not loaded (no klock_mutex_lock in the process)");
    void *lock = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
    Dl_info info;
    if (!lock || !dladdr(lock, &info) || !info.dli_fname)
        fail("cannot tell which object defines pthread_mutex_lock");

    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL))
        fail("pthread_create");
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
        pthread_rwlock_wrlock(&rw);
        pthread_rwlock_unlock(&rw);
    }
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        turn = 1;
        pthread_cond_signal(&cv);
        while (turn != 0)
            pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
    }
    if (pthread_join(t, NULL))
        fail("pthread_join");
    if (counter != 2L * ROUNDS)
        fail("lost updates under the mutex");
    static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&a);
    pthread_mutex_lock(&b);
    pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
    pthread_mutex_lock(&b);
    pthread_mutex_lock(&a);
    pthread_mutex_unlock(&a);
    pthread_mutex_unlock(&b);

    printf("PASS at_secure=%lu pthread_mutex_lock from %s\n", at_secure, info.dli_fname);
    return 0;
}
