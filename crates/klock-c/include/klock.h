/*
 * klock.h - the Linux kernel's lock designs in user space, for C and C++.
 *
 * A mutex (optimistic spinning, FIFO sleepers, hand-off), a reader-writer
 * lock (the kernel's rwsem), a spinlock (queued spinlock; variant chosen by
 * KLOCK_SPIN) and a condition variable, with pthread's semantics and error
 * codes. Link with libklock_c (pkg-config: klock). Full reference and
 * examples: docs/c.md.
 *
 * Conventions (every function):
 *   - returns 0 or an errno value (<errno.h>); never sets errno;
 *   - a NULL (or misaligned) object pointer, or a NULL abstime, is EINVAL;
 *   - timed calls take an absolute time (struct timespec, like pthread's
 *     abstime). Its tv_nsec must be in [0, 1e9), else EINVAL (a negative
 *     tv_sec is a time in the past: ETIMEDOUT); as in glibc, a lock call
 *     checks the time only when it would block (a free lock is taken even
 *     with a bad time), a condvar wait always. The clock of
 *     timed*lock is CLOCK_REALTIME; clock*lock and clockwait take
 *     CLOCK_REALTIME or CLOCK_MONOTONIC (else EINVAL, checked first). The
 *     deadline is converted once to the monotonic clock when the call
 *     starts to wait: a later step of the realtime clock does not move it.
 *   - no call is a pthread cancellation point; none unwinds or longjmps.
 *     An object neither initialised nor zeroed is undefined behaviour, as
 *     with pthread's; a mutex of an invalid kind is EINVAL (as in glibc),
 *     and a lock word naming waiters that do not exist aborts the process
 *     after one line on stderr ("klock: corrupted queue tail ...").
 *
 * Objects are opaque; sizes and alignments below are those of the Rust
 * types (64-bit Linux) and are part of the ABI. Every object may be
 * initialised statically (all-zero initialisers, except the kind of a
 * recursive or error-checking mutex) or by its init function. Objects may
 * not be copied or moved while in use.
 */
#ifndef KLOCK_H
#define KLOCK_H

#include <sys/types.h> /* clockid_t (also under strict -std=c11) */
#include <time.h>      /* struct timespec */

struct timespec; /* declared by <time.h> from C11 or POSIX on; named here for C99 */

#define KLOCK_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__SIZEOF_POINTER__) || __SIZEOF_POINTER__ != 8
#error "klock.h: the klock C library supports 64-bit targets only"
#endif

/* Mutex: 20 bytes, alignment 4. Bytes 16-19 hold the kind (an int). */
typedef struct klock_mutex {
    unsigned int opaque[5];
} klock_mutex_t;

/* Reader-writer lock: 20 bytes, alignment 4. */
typedef struct klock_rwlock {
    unsigned int opaque[5];
} klock_rwlock_t;

/* Spinlock: 16 bytes, alignment 4 (the KLOCK_SPIN-selected lock, 8 bytes,
 * plus the holder and the unlock's wake-up token). */
typedef struct klock_spinlock {
    unsigned int opaque[4];
} klock_spinlock_t;

/* Condition variable: 24 bytes, alignment 8. Bytes 16-19 hold the clock of
 * timed waits (0 = CLOCK_REALTIME). */
typedef struct klock_cond {
    unsigned long long opaque[3];
} klock_cond_t;

#if defined(__cplusplus) && __cplusplus >= 201103L
#define KLOCK_STATIC_ASSERT_ static_assert
#define KLOCK_ALIGNOF_ alignof
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define KLOCK_STATIC_ASSERT_ _Static_assert
#define KLOCK_ALIGNOF_ _Alignof
#endif
#ifdef KLOCK_STATIC_ASSERT_
KLOCK_STATIC_ASSERT_(sizeof(klock_mutex_t) == 20 && KLOCK_ALIGNOF_(klock_mutex_t) == 4,
                     "klock_mutex_t: 20 bytes, align 4");
KLOCK_STATIC_ASSERT_(sizeof(klock_rwlock_t) == 20 && KLOCK_ALIGNOF_(klock_rwlock_t) == 4,
                     "klock_rwlock_t: 20 bytes, align 4");
KLOCK_STATIC_ASSERT_(sizeof(klock_spinlock_t) == 16 && KLOCK_ALIGNOF_(klock_spinlock_t) == 4,
                     "klock_spinlock_t: 16 bytes, align 4");
KLOCK_STATIC_ASSERT_(sizeof(klock_cond_t) == 24 && KLOCK_ALIGNOF_(klock_cond_t) == 8,
                     "klock_cond_t: 24 bytes, align 8");
#undef KLOCK_STATIC_ASSERT_
#undef KLOCK_ALIGNOF_
#endif

/* Mutex kinds (klock_mutex_init; the values of PTHREAD_MUTEX_NORMAL,
 * _RECURSIVE and _ERRORCHECK in glibc). */
#define KLOCK_MUTEX_NORMAL 0
#define KLOCK_MUTEX_RECURSIVE 1
#define KLOCK_MUTEX_ERRORCHECK 2

/* Static initialisers. All zero, except that the recursive and
 * error-checking mutex initialisers store their kind (1, 2) at offset 16. */
#define KLOCK_MUTEX_INITIALIZER { { 0, 0, 0, 0, 0 } }
#define KLOCK_RECURSIVE_MUTEX_INITIALIZER { { 0, 0, 0, 0, KLOCK_MUTEX_RECURSIVE } }
#define KLOCK_ERRORCHECK_MUTEX_INITIALIZER { { 0, 0, 0, 0, KLOCK_MUTEX_ERRORCHECK } }
#define KLOCK_RWLOCK_INITIALIZER { { 0, 0, 0, 0, 0 } }
#define KLOCK_SPINLOCK_INITIALIZER { { 0, 0, 0, 0 } }
/* A condvar whose timed waits use CLOCK_REALTIME. */
#define KLOCK_COND_INITIALIZER { { 0, 0, 0 } }

/* The library's version, "MAJOR.MINOR.PATCH" (equals KLOCK_VERSION). */
const char *klock_version(void);

/* ---- mutex ----------------------------------------------------------------
 * NORMAL: relocking by the holder deadlocks; any thread may unlock a locked
 *   mutex (as glibc allows: a binary semaphore).
 * RECURSIVE: the holder relocks (EAGAIN after 2^32-1 levels); unlock by
 *   another thread is EPERM.
 * ERRORCHECK: relock by the holder is EDEADLK (trylock: EBUSY); unlock by
 *   another thread, or of an unlocked mutex, is EPERM.
 * Every kind: unlock of an unlocked mutex is EPERM; after destroy every call
 *   but init is EINVAL. */

/* kind: KLOCK_MUTEX_NORMAL, _RECURSIVE or _ERRORCHECK, else EINVAL. */
int klock_mutex_init(klock_mutex_t *m, int kind);
/* 0, EDEADLK (error-checking holder), EAGAIN (recursion depth), EINVAL. */
int klock_mutex_lock(klock_mutex_t *m);
/* 0, EBUSY (held; a recursive holder relocks instead), EINVAL. */
int klock_mutex_trylock(klock_mutex_t *m);
/* As lock, plus ETIMEDOUT when abstime (CLOCK_REALTIME) passes. */
int klock_mutex_timedlock(klock_mutex_t *m, const struct timespec *abstime);
/* As timedlock, on clock (CLOCK_REALTIME or CLOCK_MONOTONIC). */
int klock_mutex_clocklock(klock_mutex_t *m, clockid_t clock, const struct timespec *abstime);
/* 0, EPERM (unlocked; recursive/error-checking: not the holder), EINVAL. */
int klock_mutex_unlock(klock_mutex_t *m);
/* 0, EBUSY (locked), EINVAL (already destroyed). */
int klock_mutex_destroy(klock_mutex_t *m);

/* ---- reader-writer lock ---------------------------------------------------
 * Writers do not starve: new readers queue behind a waiting writer, except
 * that a thread already holding a read lock may take more (recursive read
 * locks, as glibc's default rwlock allows). rdlock or wrlock by the write
 * holder is EDEADLK (try*: EBUSY). One unlock for both sides. */

/* 0, EINVAL. */
int klock_rwlock_init(klock_rwlock_t *l);
/* 0, EDEADLK (write-held by the caller), EINVAL. */
int klock_rwlock_rdlock(klock_rwlock_t *l);
/* 0, EBUSY, EINVAL. */
int klock_rwlock_tryrdlock(klock_rwlock_t *l);
/* As rdlock, plus ETIMEDOUT (CLOCK_REALTIME). */
int klock_rwlock_timedrdlock(klock_rwlock_t *l, const struct timespec *abstime);
/* As timedrdlock, on clock. */
int klock_rwlock_clockrdlock(klock_rwlock_t *l, clockid_t clock, const struct timespec *abstime);
/* 0, EDEADLK (write-held by the caller), EINVAL. */
int klock_rwlock_wrlock(klock_rwlock_t *l);
/* 0, EBUSY, EINVAL. */
int klock_rwlock_trywrlock(klock_rwlock_t *l);
/* As wrlock, plus ETIMEDOUT (CLOCK_REALTIME). */
int klock_rwlock_timedwrlock(klock_rwlock_t *l, const struct timespec *abstime);
/* As timedwrlock, on clock. */
int klock_rwlock_clockwrlock(klock_rwlock_t *l, clockid_t clock, const struct timespec *abstime);
/* Releases the caller's read or write lock: 0, EPERM (not locked), EINVAL. */
int klock_rwlock_unlock(klock_rwlock_t *l);
/* 0, EBUSY (locked), EINVAL (already destroyed). */
int klock_rwlock_destroy(klock_rwlock_t *l);

/* ---- spinlock -------------------------------------------------------------
 * The variant is chosen once per process by KLOCK_SPIN (default: the
 * queued unfair lock, which spins and then sleeps). Any thread may unlock a
 * locked spinlock. */

/* 0, EINVAL. */
int klock_spinlock_init(klock_spinlock_t *s);
/* 0, EDEADLK (held by the caller), EINVAL. */
int klock_spinlock_lock(klock_spinlock_t *s);
/* 0, EBUSY, EINVAL. */
int klock_spinlock_trylock(klock_spinlock_t *s);
/* 0, EPERM (not locked), EINVAL. */
int klock_spinlock_unlock(klock_spinlock_t *s);
/* 0, EBUSY (locked), EINVAL. */
int klock_spinlock_destroy(klock_spinlock_t *s);
/* The KLOCK_SPIN variant in effect: "unfair", "pv", "pvbase", "native",
 * "ticket", "pvticket" or "tas" (static storage). */
const char *klock_spinlock_variant(void);

/* ---- condition variable ---------------------------------------------------
 * Waits take a klock_mutex_t the caller holds (else EPERM; a recursive
 * mutex is released and restored whole). Waits return with the mutex
 * locked, also on ETIMEDOUT; spurious wake-ups are possible (wait in a
 * loop). Waiting concurrently with two different mutexes is EINVAL. */

/* clock of timedwait: CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL. */
int klock_cond_init(klock_cond_t *c, clockid_t clock);
/* 0, EPERM (mutex not held by the caller), EINVAL. */
int klock_cond_wait(klock_cond_t *c, klock_mutex_t *m);
/* As wait, plus ETIMEDOUT; abstime on the condvar's clock; a bad abstime
 * is EINVAL before anything is released. */
int klock_cond_timedwait(klock_cond_t *c, klock_mutex_t *m, const struct timespec *abstime);
/* As timedwait, on clock. */
int klock_cond_clockwait(klock_cond_t *c, klock_mutex_t *m, clockid_t clock,
                         const struct timespec *abstime);
/* Wake one waiter: 0, EINVAL. */
int klock_cond_signal(klock_cond_t *c);
/* Wake all waiters: 0, EINVAL. The condvar may be destroyed right after. */
int klock_cond_broadcast(klock_cond_t *c);
/* 0, EBUSY (threads wait on it), EINVAL. */
int klock_cond_destroy(klock_cond_t *c);

#ifdef __cplusplus
}
#endif

#endif /* KLOCK_H */
