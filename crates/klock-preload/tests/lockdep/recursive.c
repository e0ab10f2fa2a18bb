/* MUST NOT REPORT: relocks that are no acquisitions, and read-read orders
 * that cannot deadlock.
 *
 * Part 1, recursive mutex RM (PTHREAD_MUTEX_RECURSIVE), order O -> RM -> I:
 *   thread 1: O, RM, RM again, I.
 *   thread 2: RM, I, RM again while holding I. The relock is no acquisition
 *             (it cannot block): no edge I -> RM, so no cycle with RM -> I.
 * Part 2, default rwlock R (reader-preferring) and mutex M:
 *   thread 1: R write, then M (edge R(write) -> M).
 *   thread 2: R read, M, R read again while holding M (recursive read of a
 *             held read lock: no edge M -> R, which would close a
 *             write->read cycle with thread 1's order), then unlocks.
 * Part 3, a read-read "inversion" on each reader-preferring kind (the
 *   default initializer, PTHREAD_RWLOCK_PREFER_READER_NP and
 *   PTHREAD_RWLOCK_PREFER_WRITER_NP, which glibc treats as reader-preferring),
 *   each with its own rwlock and mutex:
 *   thread 1: R read, then M.  thread 2: M, then R read.
 *   A reader is admitted whenever the lock is read-held, so this cannot
 *   deadlock. (Its neighbour on PREFER_WRITER_NONRECURSIVE_NP is
 *   rw_writer_pref_readread.c: must report.) */
#include "ld.h"

static pthread_mutex_t rec_o = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec_rm;
static pthread_mutex_t rec_i = PTHREAD_MUTEX_INITIALIZER;

static pthread_rwlock_t rrw_r = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t rrw_m = PTHREAD_MUTEX_INITIALIZER;

struct rr {
    pthread_rwlock_t r;
    pthread_mutex_t m;
};

__attribute__((noinline)) static void *o_rm_rm_i(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&rec_o));
    OK(pthread_mutex_lock(&rec_rm));
    OK(pthread_mutex_lock(&rec_rm));
    OK(pthread_mutex_lock(&rec_i));
    OK(pthread_mutex_unlock(&rec_i));
    OK(pthread_mutex_unlock(&rec_rm));
    OK(pthread_mutex_unlock(&rec_rm));
    OK(pthread_mutex_unlock(&rec_o));
    return NULL;
}

__attribute__((noinline)) static void *rm_i_relock_rm(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&rec_rm));
    OK(pthread_mutex_lock(&rec_i));
    OK(pthread_mutex_lock(&rec_rm)); /* recursive relock holding I */
    OK(pthread_mutex_unlock(&rec_rm));
    OK(pthread_mutex_unlock(&rec_i));
    OK(pthread_mutex_unlock(&rec_rm));
    return NULL;
}

__attribute__((noinline)) static void *write_r_then_m(void *arg) {
    (void)arg;
    OK(pthread_rwlock_wrlock(&rrw_r));
    OK(pthread_mutex_lock(&rrw_m));
    OK(pthread_mutex_unlock(&rrw_m));
    OK(pthread_rwlock_unlock(&rrw_r));
    return NULL;
}

__attribute__((noinline)) static void *read_r_m_read_r(void *arg) {
    (void)arg;
    OK(pthread_rwlock_rdlock(&rrw_r));
    OK(pthread_mutex_lock(&rrw_m));
    OK(pthread_rwlock_rdlock(&rrw_r)); /* recursive read holding M */
    OK(pthread_rwlock_unlock(&rrw_r));
    OK(pthread_mutex_unlock(&rrw_m));
    OK(pthread_rwlock_unlock(&rrw_r));
    return NULL;
}

__attribute__((noinline)) static void *read_then_m(void *arg) {
    struct rr *x = arg;
    OK(pthread_rwlock_rdlock(&x->r));
    OK(pthread_mutex_lock(&x->m));
    OK(pthread_mutex_unlock(&x->m));
    OK(pthread_rwlock_unlock(&x->r));
    return NULL;
}

__attribute__((noinline)) static void *m_then_read(void *arg) {
    struct rr *x = arg;
    OK(pthread_mutex_lock(&x->m));
    OK(pthread_rwlock_rdlock(&x->r));
    OK(pthread_rwlock_unlock(&x->r));
    OK(pthread_mutex_unlock(&x->m));
    return NULL;
}

static struct rr kinds[3] = {
    {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
    {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_MUTEX_INITIALIZER},
};

int main(void) {
    watchdog(30);
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
    OK(pthread_mutex_init(&rec_rm, &ma));
    OK(pthread_mutexattr_destroy(&ma));

    ld_phase("recursive: O, RM, RM, I");
    run_thread(o_rm_rm_i, NULL);
    ld_phase("recursive: RM, I, RM relocked holding I");
    run_thread(rm_i_relock_rm, NULL);
    ld_phase("recursive: O, RM, RM, I again");
    run_thread(o_rm_rm_i, NULL);

    ld_phase("rwlock: R write, M");
    run_thread(write_r_then_m, NULL);
    ld_phase("rwlock: R read, M, R read again holding M");
    run_thread(read_r_m_read_r, NULL);

    static const struct {
        int kind; /* -1: the default initializer, no attribute */
        const char *name;
    } kind_list[3] = {
        {-1, "default"},
        {PTHREAD_RWLOCK_PREFER_READER_NP, "PREFER_READER_NP"},
        {PTHREAD_RWLOCK_PREFER_WRITER_NP, "PREFER_WRITER_NP"},
    };
    for (int k = 0; k < 3; k++) {
        if (kind_list[k].kind >= 0) {
            pthread_rwlockattr_t ra;
            OK(pthread_rwlockattr_init(&ra));
            OK(pthread_rwlockattr_setkind_np(&ra, kind_list[k].kind));
            OK(pthread_rwlock_init(&kinds[k].r, &ra));
            OK(pthread_rwlockattr_destroy(&ra));
        }
        char what[96];
        snprintf(what, sizeof what, "read-read %s: R read, M", kind_list[k].name);
        ld_phase(what);
        run_thread(read_then_m, &kinds[k]);
        snprintf(what, sizeof what, "read-read %s: M, R read", kind_list[k].name);
        ld_phase(what);
        run_thread(m_then_read, &kinds[k]);
    }

    ld_phase("done");
    OK(pthread_mutex_destroy(&rec_rm));
    pass("recursive: relocks and read-read orders, no cycle");
    return 0;
}
