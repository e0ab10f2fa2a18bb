/* klock.h on its own, under strict compilers: built as
 *   cc  -std=c11   -Wall -Wextra -Werror -pedantic
 *   g++ -std=c++17 -Wall -Wextra -Werror -x c++
 * (and like every program, against the shared and the static library).
 * klock.h comes first, with no feature macros: it must be self-contained.
 * Checks the documented sizes, alignments and initialiser layout, that
 * every function is declared with the expected type, and that the static
 * initialisers give working objects. */
#include <klock.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
#define ALIGNOF(t) alignof(t)
#define STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define ALIGNOF(t) _Alignof(t)
#define STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* The sizes and alignments docs/c.md and klock.h state. */
STATIC_ASSERT(sizeof(klock_mutex_t) == 20, "klock_mutex_t is 20 bytes");
STATIC_ASSERT(ALIGNOF(klock_mutex_t) == 4, "klock_mutex_t has alignment 4");
STATIC_ASSERT(sizeof(klock_rwlock_t) == 20, "klock_rwlock_t is 20 bytes");
STATIC_ASSERT(ALIGNOF(klock_rwlock_t) == 4, "klock_rwlock_t has alignment 4");
STATIC_ASSERT(sizeof(klock_spinlock_t) == 16, "klock_spinlock_t is 16 bytes");
STATIC_ASSERT(ALIGNOF(klock_spinlock_t) == 4, "klock_spinlock_t has alignment 4");
STATIC_ASSERT(sizeof(klock_cond_t) == 24, "klock_cond_t is 24 bytes");
STATIC_ASSERT(ALIGNOF(klock_cond_t) == 8, "klock_cond_t has alignment 8");
STATIC_ASSERT(KLOCK_MUTEX_NORMAL == 0 && KLOCK_MUTEX_RECURSIVE == 1 &&
                  KLOCK_MUTEX_ERRORCHECK == 2,
              "mutex kinds");

/* Every function, with the type the documentation gives it. */
static const char *(*const f_version)(void) = klock_version;
static const char *(*const f_spin_variant)(void) = klock_spinlock_variant;
static int (*const f_mutex_init)(klock_mutex_t *, int) = klock_mutex_init;
static int (*const f_mutex_1[])(klock_mutex_t *) = {
    klock_mutex_lock, klock_mutex_trylock, klock_mutex_unlock, klock_mutex_destroy};
static int (*const f_mutex_timed)(klock_mutex_t *, const struct timespec *) =
    klock_mutex_timedlock;
static int (*const f_mutex_clock)(klock_mutex_t *, clockid_t, const struct timespec *) =
    klock_mutex_clocklock;
static int (*const f_rwlock_1[])(klock_rwlock_t *) = {
    klock_rwlock_init,   klock_rwlock_rdlock, klock_rwlock_tryrdlock, klock_rwlock_wrlock,
    klock_rwlock_trywrlock, klock_rwlock_unlock, klock_rwlock_destroy};
static int (*const f_rwlock_timed[])(klock_rwlock_t *, const struct timespec *) = {
    klock_rwlock_timedrdlock, klock_rwlock_timedwrlock};
static int (*const f_rwlock_clock[])(klock_rwlock_t *, clockid_t, const struct timespec *) = {
    klock_rwlock_clockrdlock, klock_rwlock_clockwrlock};
static int (*const f_spin[])(klock_spinlock_t *) = {
    klock_spinlock_init, klock_spinlock_lock, klock_spinlock_trylock, klock_spinlock_unlock,
    klock_spinlock_destroy};
static int (*const f_cond_init)(klock_cond_t *, clockid_t) = klock_cond_init;
static int (*const f_cond_wait)(klock_cond_t *, klock_mutex_t *) = klock_cond_wait;
static int (*const f_cond_timed)(klock_cond_t *, klock_mutex_t *, const struct timespec *) =
    klock_cond_timedwait;
static int (*const f_cond_clock)(klock_cond_t *, klock_mutex_t *, clockid_t,
                                 const struct timespec *) = klock_cond_clockwait;
static int (*const f_cond_1[])(klock_cond_t *) = {klock_cond_signal, klock_cond_broadcast,
                                                  klock_cond_destroy};

/* Statics with every initialiser. */
static klock_mutex_t m_normal = KLOCK_MUTEX_INITIALIZER;
static klock_mutex_t m_recursive = KLOCK_RECURSIVE_MUTEX_INITIALIZER;
static klock_mutex_t m_errorcheck = KLOCK_ERRORCHECK_MUTEX_INITIALIZER;
static klock_rwlock_t rw = KLOCK_RWLOCK_INITIALIZER;
static klock_spinlock_t spin = KLOCK_SPINLOCK_INITIALIZER;
static klock_cond_t cond = KLOCK_COND_INITIALIZER;

static int all_zero(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

static int failures = 0;

static void expect(int got, int want, const char *what) {
    if (got != want) {
        fprintf(stderr, "FAIL header_check: %s returned %d, expected %d\n", what, got, want);
        failures++;
    }
}

int main(void) {
    int kind = -1;

    /* The initialisers' bytes: all zero but the kind at offset 16. */
    expect(all_zero(&m_normal, sizeof m_normal), 1, "KLOCK_MUTEX_INITIALIZER all zero");
    expect(all_zero(&rw, sizeof rw), 1, "KLOCK_RWLOCK_INITIALIZER all zero");
    expect(all_zero(&spin, sizeof spin), 1, "KLOCK_SPINLOCK_INITIALIZER all zero");
    expect(all_zero(&cond, sizeof cond), 1, "KLOCK_COND_INITIALIZER all zero");
    expect(all_zero(&m_recursive, 16), 1, "KLOCK_RECURSIVE_MUTEX_INITIALIZER bytes 0-15");
    memcpy(&kind, (const unsigned char *)&m_recursive + 16, sizeof kind);
    expect(kind, 1, "KLOCK_RECURSIVE_MUTEX_INITIALIZER kind at offset 16");
    memcpy(&kind, (const unsigned char *)&m_errorcheck + 16, sizeof kind);
    expect(kind, 2, "KLOCK_ERRORCHECK_MUTEX_INITIALIZER kind at offset 16");

    /* Each static object works. */
    expect(klock_mutex_lock(&m_normal), 0, "lock (normal)");
    expect(klock_mutex_trylock(&m_normal), EBUSY, "trylock (normal, held)");
    expect(klock_mutex_unlock(&m_normal), 0, "unlock (normal)");
    expect(klock_mutex_lock(&m_recursive), 0, "lock (recursive)");
    expect(klock_mutex_lock(&m_recursive), 0, "relock (recursive)");
    expect(klock_mutex_unlock(&m_recursive), 0, "unlock (recursive)");
    expect(klock_mutex_unlock(&m_recursive), 0, "unlock (recursive)");
    expect(klock_mutex_lock(&m_errorcheck), 0, "lock (errorcheck)");
    expect(klock_mutex_lock(&m_errorcheck), EDEADLK, "relock (errorcheck)");
    expect(klock_mutex_unlock(&m_errorcheck), 0, "unlock (errorcheck)");
    expect(klock_rwlock_rdlock(&rw), 0, "rdlock");
    expect(klock_rwlock_unlock(&rw), 0, "rwlock unlock");
    expect(klock_spinlock_lock(&spin), 0, "spinlock lock");
    expect(klock_spinlock_unlock(&spin), 0, "spinlock unlock");
    expect(klock_cond_signal(&cond), 0, "cond signal");
    expect(klock_cond_destroy(&cond), 0, "cond destroy");
    expect(strcmp(klock_version(), KLOCK_VERSION), 0, "klock_version() == KLOCK_VERSION");

    /* The declarations matched (above); mark the checks used. */
    (void)f_version, (void)f_spin_variant, (void)f_mutex_init, (void)f_mutex_1, (void)f_mutex_timed;
    (void)f_mutex_clock, (void)f_rwlock_1, (void)f_rwlock_timed, (void)f_rwlock_clock;
    (void)f_spin, (void)f_cond_init, (void)f_cond_wait, (void)f_cond_timed;
    (void)f_cond_clock, (void)f_cond_1;

    if (failures)
        return 1;
#ifdef __cplusplus
    printf("PASS header_check (C++)\n");
#else
    printf("PASS header_check (C)\n");
#endif
    return 0;
}
