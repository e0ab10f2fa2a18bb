/* Cancellation inside pthread_cond_wait / timedwait / clockwait.  POSIX: when
 * a thread is cancelled in a condvar wait, the mutex is re-acquired before
 * the cleanup handlers run.  The handler therefore finds the mutex locked by
 * its own thread: on an errorcheck mutex its trylock returns EBUSY, its lock
 * returns EDEADLK and its unlock returns 0.  The joiner gets PTHREAD_CANCELED,
 * and the mutex and condvar keep working, including for other waiters that
 * were blocked on the same condvar during the cancellation. */
#include "common.h"

enum wait_kind { W_WAIT, W_TIMEDWAIT, W_CLOCKWAIT };
static const char *const wait_names[] = {"pthread_cond_wait",
                                         "pthread_cond_timedwait",
                                         "pthread_cond_clockwait(MONOTONIC)"};

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    int type;      /* mutex type */
    int waiting;   /* waiters inside the wait loop */
    int go;        /* predicate; never set for the victims */
    int woke;      /* survivors that returned normally */
    enum wait_kind kind;
    clockid_t attr_clock; /* the condvar's clock, for timedwait deadlines */
};

struct waiter {
    struct shared *s;
    int handler_ran;
    int trylock_rc, lock_rc, extra_unlock_rc, unlock_rc, unlock_again_rc;
};

static void cleanup(void *arg) {
    struct waiter *w = arg;
    struct shared *s = w->s;
    w->handler_ran = 1;
    /* errorcheck/normal: EBUSY (held); recursive: 0 (held by us, depth 2) */
    w->trylock_rc = pthread_mutex_trylock(&s->m);
    if (s->type == PTHREAD_MUTEX_ERRORCHECK)
        w->lock_rc = pthread_mutex_lock(&s->m);
    if (s->type == PTHREAD_MUTEX_RECURSIVE && w->trylock_rc == 0)
        w->extra_unlock_rc = pthread_mutex_unlock(&s->m);
    s->waiting--; /* we hold the mutex (checked by the main thread) */
    w->unlock_rc = pthread_mutex_unlock(&s->m);
    if (s->type != PTHREAD_MUTEX_NORMAL)
        w->unlock_again_rc = pthread_mutex_unlock(&s->m); /* now unlocked */
}

static int do_wait(struct shared *s) {
    struct timespec dl;
    switch (s->kind) {
    case W_WAIT:
        return pthread_cond_wait(&s->c, &s->m);
    case W_TIMEDWAIT:
        dl = deadline_ms(s->attr_clock, 60000);
        return pthread_cond_timedwait(&s->c, &s->m, &dl);
    case W_CLOCKWAIT:
        dl = deadline_ms(CLOCK_MONOTONIC, 60000);
        return pthread_cond_clockwait(&s->c, &s->m, CLOCK_MONOTONIC, &dl);
    }
    return -1;
}

static void *victim(void *arg) {
    struct waiter *w = arg;
    struct shared *s = w->s;
    pthread_cleanup_push(cleanup, w);
    OK(pthread_mutex_lock(&s->m));
    s->waiting++;
    OK(pthread_cond_broadcast(&s->c)); /* tell main we are in */
    for (;;) /* never satisfied: only cancellation gets us out */
        OK(do_wait(s));
    pthread_cleanup_pop(0);
    return NULL;
}

static void *survivor(void *arg) {
    struct shared *s = arg;
    OK(pthread_mutex_lock(&s->m));
    s->waiting++;
    OK(pthread_cond_broadcast(&s->c));
    while (!s->go)
        OK(do_wait(s));
    s->waiting--;
    s->woke++;
    OK(pthread_mutex_unlock(&s->m));
    return NULL;
}

static void check_handler(struct waiter *w, const char *what) {
    CHECK(w->handler_ran, "%s: cleanup handler did not run", what);
    /* The mutex was locked by the cancelled thread when its handler ran. */
    int type = w->s->type;
    if (type == PTHREAD_MUTEX_RECURSIVE) {
        CHECK(w->trylock_rc == 0,
              "%s: handler's trylock of its recursive mutex returned %s, "
              "expected 0 (held by the cancelled thread itself)",
              what, errname(w->trylock_rc));
        CHECK(w->extra_unlock_rc == 0, "%s: handler's inner unlock returned %s",
              what, errname(w->extra_unlock_rc));
    } else {
        CHECK(w->trylock_rc == EBUSY,
              "%s: handler's trylock returned %s, expected EBUSY (mutex held "
              "by the cancelled thread)", what, errname(w->trylock_rc));
    }
    if (type == PTHREAD_MUTEX_ERRORCHECK)
        CHECK(w->lock_rc == EDEADLK,
              "%s: handler's relock returned %s, expected EDEADLK (mutex "
              "held by the cancelled thread)", what, errname(w->lock_rc));
    CHECK(w->unlock_rc == 0, "%s: handler's unlock returned %s, expected 0",
          what, errname(w->unlock_rc));
    if (type != PTHREAD_MUTEX_NORMAL)
        CHECK(w->unlock_again_rc == EPERM,
              "%s: handler's second unlock returned %s, expected EPERM", what,
              errname(w->unlock_again_rc));
}

#define VICTIMS 2
#define SURVIVORS 2

static void round_trip(int type, enum wait_kind kind, int round) {
    struct shared s;
    memset(&s, 0, sizeof s);
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutex_init(&s.m, &a));
    OK(pthread_mutexattr_destroy(&a));
    if (kind == W_TIMEDWAIT && (round & 1)) {
        pthread_condattr_t ca;
        OK(pthread_condattr_init(&ca));
        OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
        OK(pthread_cond_init(&s.c, &ca));
        OK(pthread_condattr_destroy(&ca));
        s.attr_clock = CLOCK_MONOTONIC;
    } else {
        OK(pthread_cond_init(&s.c, NULL));
        s.attr_clock = CLOCK_REALTIME;
    }
    s.type = type;
    s.kind = kind;

    struct waiter w[VICTIMS];
    pthread_t vt[VICTIMS], st[SURVIVORS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < SURVIVORS; i++)
        st[i] = spawn(survivor, &s);
    for (int i = 0; i < VICTIMS; i++) {
        w[i].s = &s;
        w[i].trylock_rc = w[i].lock_rc = w[i].extra_unlock_rc = -1;
        w[i].unlock_rc = w[i].unlock_again_rc = -1;
        vt[i] = spawn(victim, &w[i]);
    }
    /* Wait until everyone is inside the wait (they release the mutex only
     * by blocking in the condvar). */
    OK(pthread_mutex_lock(&s.m));
    while (s.waiting != VICTIMS + SURVIVORS)
        OK(pthread_cond_wait(&s.c, &s.m));
    OK(pthread_mutex_unlock(&s.m));

    for (int i = 0; i < VICTIMS; i++) {
        OK(pthread_cancel(vt[i]));
        void *ret = join(vt[i]);
        CHECK(ret == PTHREAD_CANCELED, "join of a cancelled waiter returned %p",
              ret);
        check_handler(&w[i], wait_names[kind]);
    }

    /* The mutex is free and usable; the survivors still wait and wake. */
    OK(pthread_mutex_lock(&s.m));
    CHECK(s.waiting == SURVIVORS, "waiting %d after cancellations", s.waiting);
    s.go = 1;
    OK(pthread_cond_broadcast(&s.c));
    OK(pthread_mutex_unlock(&s.m));
    for (int i = 0; i < SURVIVORS; i++)
        join(st[i]);
    CHECK(s.woke == SURVIVORS, "woke %d", s.woke);
    OK(pthread_mutex_trylock(&s.m));
    OK(pthread_mutex_unlock(&s.m));
    OK(pthread_cond_destroy(&s.c));
    OK(pthread_mutex_destroy(&s.m));
}

int main(void) {
    watchdog(30);
    const struct {
        int type;
        const char *name;
    } types[] = {{PTHREAD_MUTEX_ERRORCHECK, "errorcheck"},
                 {PTHREAD_MUTEX_NORMAL, "normal"},
                 {PTHREAD_MUTEX_RECURSIVE, "recursive"}};
    static char phase_buf[128];
    for (int t = 0; t < 3; t++) {
        for (int k = W_WAIT; k <= W_CLOCKWAIT; k++) {
            snprintf(phase_buf, sizeof phase_buf, "cancel in %s, %s mutex",
                     wait_names[k], types[t].name);
            phase(phase_buf);
            for (int round = 0; round < 10; round++)
                round_trip(types[t].type, (enum wait_kind)k, round);
        }
    }
    pass("cancel_condwait");
    return 0;
}
