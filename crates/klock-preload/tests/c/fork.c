/* fork() in a multithreaded process.
 *  1. A mutex is held by another thread at fork time: the child leaves it
 *     alone and uses only fresh locks (mutex, condvar, rwlock, with new
 *     threads); the parent's holder then releases it normally.
 *  2. A mutex that other threads used but that is unlocked at fork time can
 *     be locked and unlocked in the child, also from the child's threads.
 *  3. fork() repeatedly while threads hammer mutexes, a condvar and an
 *     rwlock; every child works with fresh locks and exits 0 (through exit()
 *     or _exit()); the parent's counters stay exact.
 *  4. fork() from a non-main thread. */
#include "common.h"
#include <stdatomic.h>
#include <sys/wait.h>

static void wait_child_ok(pid_t pid, const char *what) {
    int st;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    CHECK(r == pid, "waitpid: %s", strerror(errno));
    if (WIFSIGNALED(st))
        FAIL("%s: child killed by signal %d", what, WTERMSIG(st));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "%s: child exited with status %d", what, WEXITSTATUS(st));
}

/* ---- what a child does with fresh locks -------------------------------- */

struct fresh {
    pthread_mutex_t m;
    pthread_cond_t c;
    pthread_rwlock_t rw;
    long counter;
    int turn;
};

#define FRESH_ITERS 2000

static void *fresh_worker(void *arg) {
    struct fresh *f = arg;
    for (int i = 0; i < FRESH_ITERS; i++) {
        OK(pthread_mutex_lock(&f->m));
        f->counter++;
        OK(pthread_cond_broadcast(&f->c));
        OK(pthread_mutex_unlock(&f->m));
        OK(pthread_rwlock_wrlock(&f->rw));
        OK(pthread_rwlock_unlock(&f->rw));
        OK(pthread_rwlock_rdlock(&f->rw));
        OK(pthread_rwlock_unlock(&f->rw));
    }
    return NULL;
}

/* Runs in a child: fresh locks, two new threads, a condvar wait. */
static void child_fresh_locks(void) {
    struct fresh *f = calloc(1, sizeof *f); /* malloc after fork works too */
    CHECK(f != NULL, "calloc");
    OK(pthread_mutex_init(&f->m, NULL));
    OK(pthread_cond_init(&f->c, NULL));
    OK(pthread_rwlock_init(&f->rw, NULL));
    pthread_t a = spawn(fresh_worker, f), b = spawn(fresh_worker, f);
    OK(pthread_mutex_lock(&f->m));
    while (f->counter < 2 * FRESH_ITERS)
        OK(pthread_cond_wait(&f->c, &f->m));
    OK(pthread_mutex_unlock(&f->m));
    join(a);
    join(b);
    CHECK(f->counter == 2 * FRESH_ITERS, "child counter %ld", f->counter);
    OK(pthread_rwlock_destroy(&f->rw));
    OK(pthread_cond_destroy(&f->c));
    OK(pthread_mutex_destroy(&f->m));
    free(f);
}

/* ---- 1. mutex held by another thread at fork ---------------------------- */

static pthread_mutex_t held_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ctl_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_c = PTHREAD_COND_INITIALIZER;
static int holder_has_it, holder_may_release;

static void *holder(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&held_m));
    OK(pthread_mutex_lock(&ctl_m));
    holder_has_it = 1;
    OK(pthread_cond_broadcast(&ctl_c));
    while (!holder_may_release)
        OK(pthread_cond_wait(&ctl_c, &ctl_m));
    OK(pthread_mutex_unlock(&ctl_m));
    OK(pthread_mutex_unlock(&held_m));
    return NULL;
}

static void test_held_at_fork(void) {
    phase("fork with a mutex held by another thread");
    pthread_t h = spawn(holder, NULL);
    OK(pthread_mutex_lock(&ctl_m));
    while (!holder_has_it)
        OK(pthread_cond_wait(&ctl_c, &ctl_m));
    OK(pthread_mutex_unlock(&ctl_m));

    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        phase("child of fork with a held mutex");
        child_fresh_locks();
        exit(0);
    }
    wait_child_ok(pid, "child of a fork with a held mutex");
    EXPECT_RC(pthread_mutex_trylock(&held_m), EBUSY);
    OK(pthread_mutex_lock(&ctl_m));
    holder_may_release = 1;
    OK(pthread_cond_broadcast(&ctl_c));
    OK(pthread_mutex_unlock(&ctl_m));
    join(h);
    OK(pthread_mutex_lock(&held_m));
    OK(pthread_mutex_unlock(&held_m));
}

/* ---- 2. a used-but-unlocked mutex in the child ------------------------- */

static pthread_mutex_t used_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t used_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long used_counter;

static void *use_used(void *arg) {
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        OK(pthread_mutex_lock(&used_m));
        OK(pthread_mutex_lock(&used_rec));
        OK(pthread_mutex_lock(&used_rec));
        used_counter++;
        OK(pthread_mutex_unlock(&used_rec));
        OK(pthread_mutex_unlock(&used_rec));
        OK(pthread_mutex_unlock(&used_m));
    }
    return NULL;
}

static void test_unlocked_at_fork(void) {
    phase("fork with used, unlocked mutexes");
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        t[i] = spawn(use_used, (void *)(intptr_t)20000);
    for (int i = 0; i < 3; i++)
        join(t[i]);
    CHECK(used_counter == 60000, "counter %ld", used_counter);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        phase("child using mutexes unlocked at fork");
        OK(pthread_mutex_trylock(&used_m));
        OK(pthread_mutex_unlock(&used_m));
        OK(pthread_mutex_lock(&used_rec));
        OK(pthread_mutex_trylock(&used_rec));
        OK(pthread_mutex_unlock(&used_rec));
        OK(pthread_mutex_unlock(&used_rec));
        pthread_t c[2];
        for (int i = 0; i < 2; i++)
            c[i] = spawn(use_used, (void *)(intptr_t)5000);
        for (int i = 0; i < 2; i++)
            join(c[i]);
        CHECK(used_counter == 70000, "child counter %ld", used_counter);
        _exit(0);
    }
    wait_child_ok(pid, "child using mutexes unlocked at fork");
    CHECK(used_counter == 60000, "parent counter changed: %ld", used_counter);
    OK(pthread_mutex_trylock(&used_m));
    OK(pthread_mutex_unlock(&used_m));
}

/* ---- 3. fork while threads hammer locks --------------------------------- */

#define HAMMER_THREADS 3
static pthread_mutex_t hm = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t hm_cv_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hm_cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t hrw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t hspin;
static long hm_counter, hrw_counter, hspin_counter, hm_cv_ticks;
static atomic_int hammer_stop;
static long hammer_done[HAMMER_THREADS];

static void *hammer(void *arg) {
    int id = (int)(intptr_t)arg;
    long n = 0;
    while (!atomic_load(&hammer_stop)) {
        OK(pthread_mutex_lock(&hm));
        hm_counter++;
        OK(pthread_mutex_unlock(&hm));
        OK(pthread_rwlock_wrlock(&hrw));
        hrw_counter++;
        OK(pthread_rwlock_unlock(&hrw));
        OK(pthread_rwlock_rdlock(&hrw));
        OK(pthread_rwlock_unlock(&hrw));
        OK(pthread_spin_lock(&hspin));
        hspin_counter++;
        OK(pthread_spin_unlock(&hspin));
        OK(pthread_mutex_lock(&hm_cv_m));
        hm_cv_ticks++;
        OK(pthread_cond_signal(&hm_cv));
        if ((n & 7) == 0) {
            struct timespec dl = deadline_ms(CLOCK_REALTIME, 1);
            int rc = pthread_cond_timedwait(&hm_cv, &hm_cv_m, &dl);
            CHECK(rc == 0 || rc == ETIMEDOUT, "timedwait: %s", errname(rc));
        }
        OK(pthread_mutex_unlock(&hm_cv_m));
        n++;
    }
    hammer_done[id] = n;
    return NULL;
}

static void test_fork_while_hammering(void) {
    phase("fork while threads hammer locks");
    OK(pthread_spin_init(&hspin, PTHREAD_PROCESS_PRIVATE));
    pthread_t t[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++)
        t[i] = spawn(hammer, (void *)(intptr_t)i);
    for (int i = 0; i < 20; i++) {
        sleep_ms(5);
        pid_t pid = fork();
        CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
            watchdog(20);
            phase("child forked while threads hammer locks");
            child_fresh_locks();
            /* stdio and malloc still work (glibc's own atfork handling) */
            char *p = malloc(1000);
            CHECK(p != NULL, "malloc");
            snprintf(p, 1000, "child %d", i);
            free(p);
            if (i & 1)
                exit(0);
            _exit(0);
        }
        wait_child_ok(pid, "child forked while threads hammer locks");
    }
    atomic_store(&hammer_stop, 1);
    for (int i = 0; i < HAMMER_THREADS; i++)
        join(t[i]);
    long total = 0;
    for (int i = 0; i < HAMMER_THREADS; i++)
        total += hammer_done[i];
    CHECK(hm_counter == total, "mutex counter %ld, iterations %ld", hm_counter,
          total);
    CHECK(hrw_counter == total, "rwlock counter %ld, iterations %ld",
          hrw_counter, total);
    CHECK(hspin_counter == total, "spin counter %ld, iterations %ld",
          hspin_counter, total);
    CHECK(hm_cv_ticks == total, "condvar ticks %ld, iterations %ld",
          hm_cv_ticks, total);
    OK(pthread_spin_destroy(&hspin));
}

/* ---- 4. fork from a non-main thread ------------------------------------ */

static void *forker(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&used_m));
    OK(pthread_mutex_unlock(&used_m));
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        watchdog(20);
        phase("child forked from a non-main thread");
        OK(pthread_mutex_lock(&used_m));
        OK(pthread_mutex_unlock(&used_m));
        child_fresh_locks();
        exit(0);
    }
    wait_child_ok(pid, "child forked from a non-main thread");
    return NULL;
}

static void test_fork_from_thread(void) {
    phase("fork from a non-main thread");
    join(spawn(forker, NULL));
}

int main(void) {
    watchdog(40);
    test_held_at_fork();
    test_unlocked_at_fork();
    test_fork_while_hammering();
    test_fork_from_thread();
    pass("fork");
    return 0;
}
