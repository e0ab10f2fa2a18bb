/* MUST REPORT (one report per family, 6 in all): the trylock and timed-lock
 * rules across the lock families, and the condvar retake after a timeout.
 *
 * Each family has its own locks, and three or two phases:
 *   rwlock:   R timedwrlock, M (edge R(write) -> M); then M, R trywrlock and
 *             M, R tryrdlock (successful tries: no edge); then M, R
 *             clockrdlock (a timed read: M -> R(read), closes the cycle).
 *   spin:     A, B; then B, trylock A (no edge); then B, lock A (closes).
 *   c11:      mtx_timedlock A, mtx_timedlock B; then B, mtx_trylock A (no
 *             edge); then B, mtx_lock A (closes).
 *   cond timedwait / cond clockwait / cnd_timedwait: M, O (edge M -> O);
 *             then M, O, and a timed condvar wait on M that times out: the
 *             retake of M while holding O is O -> M (closes).
 * Only the closing phases ("... (closes the cycle)") may report. */
#include "ld.h"

#include <threads.h>

#define TOK(expr)                                                             \
    do {                                                                      \
        int r_ = (expr);                                                      \
        if (r_ != thrd_success)                                               \
            FAIL("%s returned %d, expected thrd_success", #expr, r_);         \
    } while (0)

/* ---- rwlock ------------------------------------------------------------ */

static pthread_rwlock_t fam_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t fam_rw_m = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *rw_timedwr_then_m(void *arg) {
    (void)arg;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20000);
    OK(pthread_rwlock_timedwrlock(&fam_rw, &dl));
    OK(pthread_mutex_lock(&fam_rw_m));
    OK(pthread_mutex_unlock(&fam_rw_m));
    OK(pthread_rwlock_unlock(&fam_rw));
    return NULL;
}

__attribute__((noinline)) static void *rw_m_then_tries(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&fam_rw_m));
    OK(pthread_rwlock_trywrlock(&fam_rw));
    OK(pthread_rwlock_unlock(&fam_rw));
    OK(pthread_rwlock_tryrdlock(&fam_rw));
    OK(pthread_rwlock_unlock(&fam_rw));
    OK(pthread_mutex_unlock(&fam_rw_m));
    return NULL;
}

__attribute__((noinline)) static void *rw_m_then_clockrd(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&fam_rw_m));
    struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 20000);
    OK(pthread_rwlock_clockrdlock(&fam_rw, CLOCK_MONOTONIC, &dl));
    OK(pthread_rwlock_unlock(&fam_rw));
    OK(pthread_mutex_unlock(&fam_rw_m));
    return NULL;
}

/* ---- spin -------------------------------------------------------------- */

static pthread_spinlock_t fam_sa, fam_sb;

__attribute__((noinline)) static void *spin_a_b(void *arg) {
    (void)arg;
    OK(pthread_spin_lock(&fam_sa));
    OK(pthread_spin_lock(&fam_sb));
    OK(pthread_spin_unlock(&fam_sb));
    OK(pthread_spin_unlock(&fam_sa));
    return NULL;
}

__attribute__((noinline)) static void *spin_b_try_a(void *arg) {
    (void)arg;
    OK(pthread_spin_lock(&fam_sb));
    OK(pthread_spin_trylock(&fam_sa));
    OK(pthread_spin_unlock(&fam_sa));
    OK(pthread_spin_unlock(&fam_sb));
    return NULL;
}

__attribute__((noinline)) static void *spin_b_a(void *arg) {
    (void)arg;
    OK(pthread_spin_lock(&fam_sb));
    OK(pthread_spin_lock(&fam_sa));
    OK(pthread_spin_unlock(&fam_sa));
    OK(pthread_spin_unlock(&fam_sb));
    return NULL;
}

/* ---- C11 mtx ------------------------------------------------------------ */

static mtx_t fam_ca, fam_cb;

static struct timespec c11_deadline(long ms) {
    struct timespec ts;
    CHECK(timespec_get(&ts, TIME_UTC) == TIME_UTC, "timespec_get");
    return ts_add_ms(ts, ms);
}

__attribute__((noinline)) static void *c11_timed_a_b(void *arg) {
    (void)arg;
    struct timespec dl = c11_deadline(20000);
    TOK(mtx_timedlock(&fam_ca, &dl));
    TOK(mtx_timedlock(&fam_cb, &dl));
    TOK(mtx_unlock(&fam_cb));
    TOK(mtx_unlock(&fam_ca));
    return NULL;
}

__attribute__((noinline)) static void *c11_b_try_a(void *arg) {
    (void)arg;
    TOK(mtx_lock(&fam_cb));
    TOK(mtx_trylock(&fam_ca));
    TOK(mtx_unlock(&fam_ca));
    TOK(mtx_unlock(&fam_cb));
    return NULL;
}

__attribute__((noinline)) static void *c11_b_a(void *arg) {
    (void)arg;
    TOK(mtx_lock(&fam_cb));
    TOK(mtx_lock(&fam_ca));
    TOK(mtx_unlock(&fam_ca));
    TOK(mtx_unlock(&fam_cb));
    return NULL;
}

/* ---- condvar waits that time out ---------------------------------------- */

enum wait_kind { TIMEDWAIT, CLOCKWAIT, CND_TIMEDWAIT };

struct retake {
    enum wait_kind kind;
    pthread_mutex_t m, o;
    pthread_cond_t cv;
    mtx_t cm, co;
    cnd_t cnd;
};

__attribute__((noinline)) static void *retake_m_then_o(void *arg) {
    struct retake *r = arg;
    if (r->kind == CND_TIMEDWAIT) {
        TOK(mtx_lock(&r->cm));
        TOK(mtx_lock(&r->co));
        TOK(mtx_unlock(&r->co));
        TOK(mtx_unlock(&r->cm));
    } else {
        OK(pthread_mutex_lock(&r->m));
        OK(pthread_mutex_lock(&r->o));
        OK(pthread_mutex_unlock(&r->o));
        OK(pthread_mutex_unlock(&r->m));
    }
    return NULL;
}

__attribute__((noinline)) static void *retake_timed_wait_holding_o(void *arg) {
    struct retake *r = arg;
    int rc;
    switch (r->kind) {
    case TIMEDWAIT: {
        OK(pthread_mutex_lock(&r->m));
        OK(pthread_mutex_lock(&r->o));
        struct timespec dl = deadline_ms(CLOCK_REALTIME, 10);
        while ((rc = pthread_cond_timedwait(&r->cv, &r->m, &dl)) == 0) {
        }
        EXPECT_RC(rc, ETIMEDOUT);
        OK(pthread_mutex_unlock(&r->m));
        OK(pthread_mutex_unlock(&r->o));
        break;
    }
    case CLOCKWAIT: {
        OK(pthread_mutex_lock(&r->m));
        OK(pthread_mutex_lock(&r->o));
        struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 10);
        while ((rc = pthread_cond_clockwait(&r->cv, &r->m, CLOCK_MONOTONIC, &dl)) == 0) {
        }
        EXPECT_RC(rc, ETIMEDOUT);
        OK(pthread_mutex_unlock(&r->m));
        OK(pthread_mutex_unlock(&r->o));
        break;
    }
    case CND_TIMEDWAIT: {
        TOK(mtx_lock(&r->cm));
        TOK(mtx_lock(&r->co));
        struct timespec dl = c11_deadline(10);
        while ((rc = cnd_timedwait(&r->cnd, &r->cm, &dl)) == thrd_success) {
        }
        CHECK(rc == thrd_timedout, "cnd_timedwait returned %d", rc);
        TOK(mtx_unlock(&r->cm));
        TOK(mtx_unlock(&r->co));
        break;
    }
    }
    return NULL;
}

static struct retake retakes[3];
static const char *const wait_name[] = {"cond timedwait", "cond clockwait",
                                        "cnd_timedwait"};

static void family(const char *name, const char *order, void *(*first)(void *),
                   const char *tries, void *(*try_fn)(void *), const char *close,
                   void *(*close_fn)(void *), void *arg) {
    char what[160];
    snprintf(what, sizeof what, "%s: %s", name, order);
    ld_phase(what);
    run_thread(first, arg);
    if (try_fn) {
        snprintf(what, sizeof what, "%s: %s (no edge)", name, tries);
        ld_phase(what);
        run_thread(try_fn, arg);
    }
    snprintf(what, sizeof what, "%s: %s (closes the cycle)", name, close);
    ld_phase(what);
    run_thread(close_fn, arg);
}

int main(void) {
    watchdog(30);
    OK(pthread_spin_init(&fam_sa, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_spin_init(&fam_sb, PTHREAD_PROCESS_PRIVATE));
    TOK(mtx_init(&fam_ca, mtx_timed));
    TOK(mtx_init(&fam_cb, mtx_timed));
    for (int k = 0; k < 3; k++) {
        struct retake *r = &retakes[k];
        r->kind = (enum wait_kind)k;
        OK(pthread_mutex_init(&r->m, NULL));
        OK(pthread_mutex_init(&r->o, NULL));
        OK(pthread_cond_init(&r->cv, NULL));
        TOK(mtx_init(&r->cm, mtx_timed));
        TOK(mtx_init(&r->co, mtx_plain));
        TOK(cnd_init(&r->cnd));
    }

    family("rwlock", "R timedwrlock, M", rw_timedwr_then_m,
           "M, R trywrlock; M, R tryrdlock", rw_m_then_tries, "M, R clockrdlock",
           rw_m_then_clockrd, NULL);
    family("spin", "A, B", spin_a_b, "B, trylock A", spin_b_try_a, "B, lock A",
           spin_b_a, NULL);
    family("c11", "timedlock A, timedlock B", c11_timed_a_b, "B, mtx_trylock A",
           c11_b_try_a, "B, mtx_lock A", c11_b_a, NULL);
    for (int k = 0; k < 3; k++)
        family(wait_name[k], "M, O", retake_m_then_o, NULL, NULL,
               "M, O, timed wait on M timing out, retake of M holding O",
               retake_timed_wait_holding_o, &retakes[k]);

    ld_phase("done");
    pass("try_timed_families: tries add no edge, timed locks and retakes do");
    return 0;
}
