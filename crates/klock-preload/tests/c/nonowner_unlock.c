/* Default (normal) mutexes used as binary semaphores, ptsematest-style:
 * thread A locks, thread B unlocks, and A's relock of a mutex it "owns"
 * blocks until another thread unlocks it.  POSIX leaves this undefined, but
 * glibc's normal and adaptive mutexes allow it and programs (rt-tests'
 * ptsematest) rely on it. */
#include "common.h"
#include <stdatomic.h>

#define ROUNDS 5000

/* ---- 1. the simplest case ---------------------------------------------- */

static pthread_mutex_t simple = PTHREAD_MUTEX_INITIALIZER;
static atomic_int simple_state;

static void *simple_unlocker(void *arg) {
    (void)arg;
    OK(pthread_mutex_unlock(&simple)); /* locked by main */
    return NULL;
}

static void *simple_late_unlocker(void *arg) {
    (void)arg;
    while (atomic_load(&simple_state) == 0)
        sched_yield();
    sleep_ms(20); /* main is (most likely) blocked in its relock now */
    atomic_store(&simple_state, 2);
    OK(pthread_mutex_unlock(&simple));
    return NULL;
}

static void test_simple(void) {
    phase("lock in A, unlock in B, relock in A");
    OK(pthread_mutex_lock(&simple));
    join(spawn(simple_unlocker, NULL));
    OK(pthread_mutex_trylock(&simple)); /* B's unlock released it */
    /* Now a self-blocking relock: main holds it and locks again; only the
     * other thread's unlock lets it through. */
    pthread_t t = spawn(simple_late_unlocker, NULL);
    atomic_store(&simple_state, 1);
    OK(pthread_mutex_lock(&simple));
    CHECK(atomic_load(&simple_state) == 2,
          "relock returned before the other thread unlocked");
    join(t);
    OK(pthread_mutex_unlock(&simple));
    OK(pthread_mutex_trylock(&simple));
    OK(pthread_mutex_unlock(&simple));
}

/* ---- 2. ping-pong through two "semaphores" ----------------------------- */

struct pingpong {
    pthread_mutex_t sem[2]; /* sem[i] "taken" = locked */
    atomic_int turn;
    long moves[2];
};

struct side {
    struct pingpong *p;
    int me;
};

static void *side_fn(void *arg) {
    struct side *s = arg;
    struct pingpong *p = s->p;
    int me = s->me, other = 1 - me;
    for (int i = 0; i < ROUNDS; i++) {
        /* From the second round on this thread already "owns" sem[me]
         * (it locked it last round and never unlocked it): the relock
         * blocks until the other side unlocks it. */
        OK(pthread_mutex_lock(&p->sem[me]));
        CHECK(atomic_load(&p->turn) == me, "side %d ran out of turn", me);
        p->moves[me]++;
        atomic_store(&p->turn, other);
        OK(pthread_mutex_unlock(&p->sem[other])); /* locked by someone else */
    }
    return NULL;
}

static void pingpong(const char *name, const pthread_mutexattr_t *attr,
                     int use_static) {
    phase(name);
    struct pingpong p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < 2; i++) {
        if (use_static) {
            pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
            p.sem[i] = init;
        } else {
            OK(pthread_mutex_init(&p.sem[i], attr));
        }
        OK(pthread_mutex_lock(&p.sem[i])); /* both taken by main */
    }
    atomic_store(&p.turn, 0);
    struct side a = {&p, 0}, b = {&p, 1};
    pthread_t ta = spawn(side_fn, &a), tb = spawn(side_fn, &b);
    OK(pthread_mutex_unlock(&p.sem[0])); /* start: let side 0 go */
    join(ta);
    join(tb);
    CHECK(p.moves[0] == ROUNDS && p.moves[1] == ROUNDS, "moves %ld / %ld",
          p.moves[0], p.moves[1]);
    /* sem[0]: locked 1 + ROUNDS times, unlocked 1 + ROUNDS times -> free.
     * sem[1]: locked 1 + ROUNDS times, unlocked ROUNDS times -> taken. */
    OK(pthread_mutex_trylock(&p.sem[0]));
    EXPECT_RC(pthread_mutex_trylock(&p.sem[1]), EBUSY);
    OK(pthread_mutex_unlock(&p.sem[0]));
    OK(pthread_mutex_unlock(&p.sem[1]));
    for (int i = 0; i < 2; i++)
        OK(pthread_mutex_destroy(&p.sem[i]));
}

/* ---- 3. one semaphore, a releaser and several blocked acquirers -------- */

#define ACQUIRERS 3
#define HANDOFFS 3000
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static atomic_long passed;
static atomic_int gate_open_count;

static void *acquirer(void *arg) {
    (void)arg;
    for (;;) {
        OK(pthread_mutex_lock(&gate)); /* "down"; the releaser does "up" */
        long n = atomic_fetch_add(&passed, 1) + 1;
        CHECK(atomic_fetch_sub(&gate_open_count, 1) == 1,
              "two threads passed one opening");
        if (n >= HANDOFFS) {
            /* Let the others out: open once per remaining acquirer. */
            if (n == HANDOFFS) {
                for (int i = 0; i < ACQUIRERS - 1; i++) {
                    atomic_fetch_add(&gate_open_count, 1);
                    OK(pthread_mutex_unlock(&gate));
                    while (atomic_load(&gate_open_count) != 0)
                        sched_yield();
                }
            }
            return NULL;
        }
    }
}

static void test_gate(void) {
    phase("binary semaphore with several blocked acquirers");
    OK(pthread_mutex_lock(&gate)); /* closed */
    pthread_t t[ACQUIRERS];
    for (int i = 0; i < ACQUIRERS; i++)
        t[i] = spawn(acquirer, NULL);
    for (long i = 0; i < HANDOFFS; i++) {
        /* Open once; wait until exactly one acquirer went through. */
        atomic_fetch_add(&gate_open_count, 1);
        OK(pthread_mutex_unlock(&gate)); /* non-owner "up" */
        while (atomic_load(&gate_open_count) != 0)
            sched_yield();
    }
    for (int i = 0; i < ACQUIRERS; i++)
        join(t[i]);
    CHECK(atomic_load(&passed) == HANDOFFS + ACQUIRERS - 1, "passed %ld",
          atomic_load(&passed));
    /* The last opening was consumed: the gate is closed again. */
    EXPECT_RC(pthread_mutex_trylock(&gate), EBUSY);
    OK(pthread_mutex_unlock(&gate));
}

int main(void) {
    watchdog(30);
    test_simple();
    pingpong("ping-pong: static PTHREAD_MUTEX_INITIALIZER", NULL, 1);
    pingpong("ping-pong: default attr", NULL, 0);
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL));
    pingpong("ping-pong: PTHREAD_MUTEX_NORMAL", &a, 0);
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP));
    pingpong("ping-pong: PTHREAD_MUTEX_ADAPTIVE_NP", &a, 0);
    OK(pthread_mutexattr_destroy(&a));
    test_gate();
    pass("nonowner_unlock");
    return 0;
}
