#include <pthread.h>
#include <errno.h>
/* shim + null check + a gate word in .bss, as klock's fast path. */
__attribute__((visibility("hidden"))) unsigned gate = 1;
__attribute__((noinline, cold)) static int slow(pthread_spinlock_t *l) {
    for (;;) {
        do { __builtin_ia32_pause(); } while (__atomic_load_n(l, __ATOMIC_RELAXED) <= 0);
        if (__atomic_sub_fetch(l, 1, __ATOMIC_ACQUIRE) == 0) return 0;
    }
}
int pthread_spin_lock(pthread_spinlock_t *l) {
    if (!l) return EINVAL;
    if (__builtin_expect(__atomic_load_n(&gate, __ATOMIC_RELAXED) == 1, 1) && __builtin_expect(__atomic_sub_fetch(l, 1, __ATOMIC_ACQUIRE) == 0, 1))
        return 0;
    return slow(l);
}
int pthread_spin_unlock(pthread_spinlock_t *l) { if (!l) return EINVAL; if (__atomic_load_n(&gate, __ATOMIC_RELAXED) != 1) return EINVAL; __atomic_store_n(l, 1, __ATOMIC_RELEASE); return 0; }
