#include <pthread.h>
/* A/A control: glibc's spinlock protocol and layout, preloaded. */
int pthread_spin_lock(pthread_spinlock_t *l) {
    if (__builtin_expect(__atomic_sub_fetch(l, 1, __ATOMIC_ACQUIRE) == 0, 1))
        return 0;
    for (;;) {
        do { __builtin_ia32_pause(); } while (__atomic_load_n(l, __ATOMIC_RELAXED) <= 0);
        if (__atomic_sub_fetch(l, 1, __ATOMIC_ACQUIRE) == 0) return 0;
    }
}
int pthread_spin_unlock(pthread_spinlock_t *l) { __atomic_store_n(l, 1, __ATOMIC_RELEASE); return 0; }
