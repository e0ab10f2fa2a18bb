/* Destroy right after use, as POSIX allows:
 *  1. Many rounds: waiters block on a malloc'd condvar, the main thread
 *     broadcasts and never touches the object again, and the last waiter to
 *     leave destroys the condvar and mutex and frees (after poisoning) the
 *     memory at once, while the other waiters may still be on their way out
 *     of pthread_cond_wait / pthread_mutex_unlock.
 *  2. Mutex handoff: a thread blocked in pthread_mutex_lock gets the lock,
 *     unlocks, destroys and frees it while the previous owner may still be
 *     inside pthread_mutex_unlock.
 * A use-after-free in the lock implementation corrupts the next round's
 * objects (malloc hands the same chunk back), which shows up as a wrong
 * return code, a broken count or a hang. */
#include "common.h"

#define WAITERS 4
#define ROUNDS 1500

struct obj {
    pthread_mutex_t m;
    pthread_cond_t ready; /* waiters -> main: all are waiting */
    pthread_cond_t go;    /* main -> waiters: broadcast */
    int waiting, left, go_flag;
    long round;
};

/* Round distribution to persistent worker threads. */
static pthread_mutex_t g_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_c = PTHREAD_COND_INITIALIZER;
static struct obj *g_obj;
static long g_round, g_done;

static void *worker(void *arg) {
    (void)arg;
    long seen = 0;
    for (;;) {
        OK(pthread_mutex_lock(&g_m));
        while (g_round == seen)
            OK(pthread_cond_wait(&g_c, &g_m));
        seen = g_round;
        struct obj *o = g_obj;
        OK(pthread_mutex_unlock(&g_m));
        if (o == NULL)
            return NULL; /* shutdown */

        OK(pthread_mutex_lock(&o->m));
        CHECK(o->round == seen, "object of round %ld in round %ld", o->round,
              seen);
        if (++o->waiting == WAITERS)
            OK(pthread_cond_signal(&o->ready));
        while (!o->go_flag)
            OK(pthread_cond_wait(&o->go, &o->m));
        int last = --o->left == 0;
        OK(pthread_mutex_unlock(&o->m));
        if (last) {
            OK(pthread_cond_destroy(&o->go));
            OK(pthread_cond_destroy(&o->ready));
            OK(pthread_mutex_destroy(&o->m));
            memset(o, 0xA5, sizeof *o);
            free(o);
        }

        OK(pthread_mutex_lock(&g_m));
        g_done++;
        OK(pthread_cond_broadcast(&g_c));
        OK(pthread_mutex_unlock(&g_m));
    }
}

static void test_broadcast_destroy(void) {
    phase("destroy after broadcast");
    pthread_t t[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        t[i] = spawn(worker, NULL);
    for (long r = 1; r <= ROUNDS; r++) {
        struct obj *o = malloc(sizeof *o);
        CHECK(o != NULL, "malloc");
        OK(pthread_mutex_init(&o->m, NULL));
        OK(pthread_cond_init(&o->ready, NULL));
        OK(pthread_cond_init(&o->go, NULL));
        o->waiting = 0;
        o->left = WAITERS;
        o->go_flag = 0;
        o->round = r;

        OK(pthread_mutex_lock(&g_m));
        g_obj = o;
        g_round = r;
        OK(pthread_cond_broadcast(&g_c));
        OK(pthread_mutex_unlock(&g_m));

        OK(pthread_mutex_lock(&o->m));
        while (o->waiting != WAITERS)
            OK(pthread_cond_wait(&o->ready, &o->m));
        o->go_flag = 1;
        OK(pthread_cond_broadcast(&o->go));
        OK(pthread_mutex_unlock(&o->m));
        /* o may be freed from here on. */

        OK(pthread_mutex_lock(&g_m));
        while (g_done != r * WAITERS)
            OK(pthread_cond_wait(&g_c, &g_m));
        OK(pthread_mutex_unlock(&g_m));
    }
    OK(pthread_mutex_lock(&g_m));
    g_obj = NULL;
    g_round++;
    OK(pthread_cond_broadcast(&g_c));
    OK(pthread_mutex_unlock(&g_m));
    for (int i = 0; i < WAITERS; i++)
        join(t[i]);
}

/* ---- mutex handoff, then destroy and free ------------------------------ */

struct mobj {
    pthread_mutex_t m;
    volatile int value;
};

static void *handoff_taker(void *arg) {
    struct mobj *o = arg;
    OK(pthread_mutex_lock(&o->m)); /* blocks until main unlocks */
    CHECK(o->value == 42, "value %d", o->value);
    OK(pthread_mutex_unlock(&o->m));
    OK(pthread_mutex_destroy(&o->m));
    memset(o, 0x5A, sizeof *o);
    free(o);
    return NULL;
}

static void test_handoff_destroy(void) {
    phase("destroy after mutex handoff");
    for (int r = 0; r < ROUNDS; r++) {
        struct mobj *o = malloc(sizeof *o);
        CHECK(o != NULL, "malloc");
        OK(pthread_mutex_init(&o->m, NULL));
        o->value = 0;
        OK(pthread_mutex_lock(&o->m));
        pthread_t t = spawn(handoff_taker, o);
        if (r & 1)
            sched_yield(); /* sometimes let the taker block first */
        o->value = 42;
        OK(pthread_mutex_unlock(&o->m));
        /* o may be freed from here on. */
        join(t);
    }
}

int main(void) {
    watchdog(40);
    test_broadcast_destroy();
    test_handoff_destroy();
    pass("destroy_after_broadcast");
    return 0;
}
