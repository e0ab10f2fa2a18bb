/* Mutex protocols and sharing an interposer must honour (or pass through to
 * glibc): robust mutexes (EOWNERDEAD after the owner thread exits,
 * pthread_mutex_consistent, ENOTRECOVERABLE when not made consistent),
 * priority-inheritance mutexes under contention, and process-shared mutex,
 * condvar and rwlock in a MAP_SHARED mapping used by a parent and a forked
 * child. */
#include "common.h"
#include <sys/mman.h>
#include <sys/wait.h>

static void wait_child_ok(pid_t pid, const char *what) {
    int st;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    CHECK(r == pid, "waitpid: %s", strerror(errno));
    if (WIFSIGNALED(st))
        FAIL("%s: child killed by signal %d", what, WTERMSIG(st));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child exit status %d",
          what, WEXITSTATUS(st));
}

/* ---- robust ------------------------------------------------------------ */

static pthread_mutex_t robust;

static void *die_holding(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&robust));
    return NULL; /* exits with the mutex locked */
}

static void test_robust(void) {
    phase("robust mutex: owner died");
    pthread_mutexattr_t a;
    int r = -1;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
    OK(pthread_mutexattr_getrobust(&a, &r));
    CHECK(r == PTHREAD_MUTEX_ROBUST, "robust attr %d", r);
    OK(pthread_mutex_init(&robust, &a));
    OK(pthread_mutexattr_destroy(&a));

    join(spawn(die_holding, NULL));
    EXPECT_RC(pthread_mutex_lock(&robust), EOWNERDEAD);
    OK(pthread_mutex_consistent(&robust));
    OK(pthread_mutex_unlock(&robust));
    OK(pthread_mutex_lock(&robust));
    OK(pthread_mutex_unlock(&robust));

    phase("robust mutex: not made consistent");
    join(spawn(die_holding, NULL));
    EXPECT_RC(pthread_mutex_trylock(&robust), EOWNERDEAD);
    OK(pthread_mutex_unlock(&robust)); /* without pthread_mutex_consistent */
    EXPECT_RC(pthread_mutex_lock(&robust), ENOTRECOVERABLE);
    OK(pthread_mutex_destroy(&robust));
}

/* ---- priority inheritance ---------------------------------------------- */

static pthread_mutex_t pi;
static long pi_counter;

static void *pi_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        if (i & 1) {
            int rc;
            while ((rc = pthread_mutex_trylock(&pi)) == EBUSY)
                sched_yield();
            OK(rc);
        } else {
            OK(pthread_mutex_lock(&pi));
        }
        pi_counter++;
        OK(pthread_mutex_unlock(&pi));
    }
    return NULL;
}

static void test_pi(void) {
    phase("priority-inheritance mutex");
    pthread_mutexattr_t a;
    int proto = -1;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutexattr_getprotocol(&a, &proto));
    CHECK(proto == PTHREAD_PRIO_INHERIT, "protocol %d", proto);
    OK(pthread_mutex_init(&pi, &a));
    OK(pthread_mutexattr_destroy(&a));
    OK(pthread_mutex_lock(&pi));
    EXPECT_RC(pthread_mutex_lock(&pi), EDEADLK);
    OK(pthread_mutex_unlock(&pi));
    EXPECT_RC(pthread_mutex_unlock(&pi), EPERM);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        t[i] = spawn(pi_worker, NULL);
    for (int i = 0; i < 3; i++)
        join(t[i]);
    CHECK(pi_counter == 60000, "counter %ld", pi_counter);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 30000);
    OK(pthread_mutex_timedlock(&pi, &dl));
    OK(pthread_mutex_unlock(&pi));
    OK(pthread_mutex_destroy(&pi));
}

/* ---- process-shared ------------------------------------------------------ */

#define PS_ROUNDS 2000
struct pshared {
    pthread_mutex_t m;
    pthread_cond_t c;
    pthread_rwlock_t rw;
    int turn; /* 0: parent, 1: child */
    long moves;
    long rw_value;
};

static void ps_player(struct pshared *s, int me) {
    for (int i = 0; i < PS_ROUNDS; i++) {
        OK(pthread_mutex_lock(&s->m));
        while (s->turn != me)
            OK(pthread_cond_wait(&s->c, &s->m));
        s->moves++;
        s->turn = 1 - me;
        OK(pthread_cond_signal(&s->c));
        OK(pthread_mutex_unlock(&s->m));
        OK(pthread_rwlock_wrlock(&s->rw));
        s->rw_value++;
        OK(pthread_rwlock_unlock(&s->rw));
        OK(pthread_rwlock_rdlock(&s->rw));
        OK(pthread_rwlock_unlock(&s->rw));
    }
}

static void test_pshared(void) {
    phase("process-shared mutex, condvar and rwlock");
    struct pshared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED, "mmap: %s", strerror(errno));
    int ps = -1;
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutexattr_getpshared(&ma, &ps));
    CHECK(ps == PTHREAD_PROCESS_SHARED, "mutex pshared %d", ps);
    OK(pthread_mutex_init(&s->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED));
    OK(pthread_cond_init(&s->c, &ca));
    OK(pthread_condattr_destroy(&ca));
    pthread_rwlockattr_t ra;
    OK(pthread_rwlockattr_init(&ra));
    OK(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED));
    OK(pthread_rwlock_init(&s->rw, &ra));
    OK(pthread_rwlockattr_destroy(&ra));

    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        ps_player(s, 1);
        _exit(0);
    }
    ps_player(s, 0);
    wait_child_ok(pid, "process-shared ping-pong");
    CHECK(s->moves == 2 * PS_ROUNDS, "moves %ld", s->moves);
    CHECK(s->rw_value == 2 * PS_ROUNDS, "rwlock counter %ld", s->rw_value);

    phase("process-shared mutex: child locks, parent sees it held");
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        OK(pthread_mutex_lock(&s->m));
        s->turn = 7;
        OK(pthread_mutex_unlock(&s->m));
        OK(pthread_rwlock_wrlock(&s->rw));
        _exit(0); /* leaves the rwlock write-locked */
    }
    wait_child_ok(pid, "child locking");
    OK(pthread_mutex_lock(&s->m));
    CHECK(s->turn == 7, "turn %d", s->turn);
    OK(pthread_mutex_unlock(&s->m));
    EXPECT_RC(pthread_rwlock_tryrdlock(&s->rw), EBUSY);
    EXPECT_RC(pthread_rwlock_trywrlock(&s->rw), EBUSY);

    OK(pthread_cond_destroy(&s->c));
    OK(pthread_mutex_destroy(&s->m));
    munmap(s, sizeof *s);
}

int main(void) {
    watchdog(30);
    test_robust();
    test_pi();
    test_pshared();
    pass("mutex_attrs");
    return 0;
}
