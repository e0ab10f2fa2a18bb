/* MUST NOT REPORT: lock identity is the instance, not the address.
 *
 * Each variant puts two mutexes (a, b) in a heap block, locks a then b in a
 * thread, ends the block's life, allocates a block of the same size again
 * (glibc's tcache normally hands back the same memory: whether it did is
 * printed, "reused=yes/no"), makes new mutexes there, and locks b then a.
 * The second life's mutexes are new locks, so there is no cycle.
 *
 *   init:    pthread_mutex_init / pthread_mutex_destroy / free, malloc, init
 *   memset:  no destroy: free, malloc, memset to 0 (never pthread_mutex_init)
 *   calloc:  no destroy: free, calloc (zeroed, never pthread_mutex_init)
 *   assign:  no destroy: free, malloc, a = b = PTHREAD_MUTEX_INITIALIZER
 *   pi:      priority-inheriting mutexes (left to glibc; identity by address):
 *            init / destroy / free, malloc, init
 *   spin:    pthread spinlocks (identity by address): pthread_spin_init /
 *            pthread_spin_destroy / free, malloc, pthread_spin_init
 *
 * The block sizes differ per variant, so each variant's second allocation
 * meets its own first block in the tcache. calloc does not take blocks from
 * the tcache, so for that variant the tcache bin is filled first (7 blocks
 * freed before the first life's block), and the block goes to a bin calloc
 * does look in; a guard block keeps it from merging into the top chunk. */
#include "ld.h"

struct pair {
    pthread_mutex_t a, b;
};

/* A block: the pair, then padding (the size picks a tcache bin). */
#define BLOCK(pad) (sizeof(struct pair) + (pad))

/* memset through a volatile pointer: gcc would otherwise fold malloc+memset
 * into calloc, and this variant would test calloc twice. */
static void *(*volatile memset_v)(void *, int, size_t) = memset;

__attribute__((noinline)) static void *lock_a_then_b(void *arg) {
    struct pair *p = arg;
    OK(pthread_mutex_lock(&p->a));
    OK(pthread_mutex_lock(&p->b));
    OK(pthread_mutex_unlock(&p->b));
    OK(pthread_mutex_unlock(&p->a));
    return NULL;
}

__attribute__((noinline)) static void *lock_b_then_a(void *arg) {
    struct pair *p = arg;
    OK(pthread_mutex_lock(&p->b));
    OK(pthread_mutex_lock(&p->a));
    OK(pthread_mutex_unlock(&p->a));
    OK(pthread_mutex_unlock(&p->b));
    return NULL;
}

enum how { INIT, MEMSET, CALLOC, ASSIGN, PI };
static const char *const how_name[] = {"init", "memset", "calloc", "assign", "pi"};

/* A new block with fresh mutexes, made the variant's way. */
static struct pair *make(enum how how, size_t size) {
    struct pair *p = how == CALLOC ? calloc(1, size) : malloc(size);
    CHECK(p != NULL, "allocating %zu bytes", size);
    switch (how) {
    case INIT:
        OK(pthread_mutex_init(&p->a, NULL));
        OK(pthread_mutex_init(&p->b, NULL));
        break;
    case MEMSET:
        memset_v(p, 0, size);
        break;
    case CALLOC:
        break;
    case ASSIGN:
        p->a = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        p->b = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        break;
    case PI: {
        pthread_mutexattr_t ma;
        OK(pthread_mutexattr_init(&ma));
        OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT));
        OK(pthread_mutex_init(&p->a, &ma));
        OK(pthread_mutex_init(&p->b, &ma));
        OK(pthread_mutexattr_destroy(&ma));
        break;
    }
    }
    return p;
}

static void end(enum how how, struct pair *p) {
    if (how == INIT || how == PI) {
        OK(pthread_mutex_destroy(&p->a));
        OK(pthread_mutex_destroy(&p->b));
    }
    free(p);
}

#define TCACHE_FILL 7 /* glibc's default tcache bin capacity */

static void variant(enum how how, size_t pad) {
    char what[96];
    size_t size = BLOCK(pad);
    void *fill[TCACHE_FILL] = {0}, *guard = NULL;
    if (how == CALLOC)
        for (int i = 0; i < TCACHE_FILL; i++)
            fill[i] = malloc(size);
    snprintf(what, sizeof what, "%s: first life, a then b", how_name[how]);
    ld_phase(what);
    struct pair *p = make(how, size);
    uintptr_t first = (uintptr_t)p;
    if (how == CALLOC)
        guard = malloc(size);
    run_thread(lock_a_then_b, p);
    for (int i = 0; i < TCACHE_FILL; i++)
        free(fill[i]);
    end(how, p);

    p = make(how, size);
    printf("%s: first %#lx second %#lx reused=%s\n", how_name[how],
           (unsigned long)first, (unsigned long)(uintptr_t)p,
           (uintptr_t)p == first ? "yes" : "no");
    fflush(stdout);
    snprintf(what, sizeof what, "%s: second life (reused=%s), b then a",
             how_name[how], (uintptr_t)p == first ? "yes" : "no");
    ld_phase(what);
    run_thread(lock_b_then_a, p);
    end(how, p);
    free(guard);
}

struct spin_pair {
    pthread_spinlock_t a, b;
};

__attribute__((noinline)) static void *spin_a_then_b(void *arg) {
    struct spin_pair *p = arg;
    OK(pthread_spin_lock(&p->a));
    OK(pthread_spin_lock(&p->b));
    OK(pthread_spin_unlock(&p->b));
    OK(pthread_spin_unlock(&p->a));
    return NULL;
}

__attribute__((noinline)) static void *spin_b_then_a(void *arg) {
    struct spin_pair *p = arg;
    OK(pthread_spin_lock(&p->b));
    OK(pthread_spin_lock(&p->a));
    OK(pthread_spin_unlock(&p->a));
    OK(pthread_spin_unlock(&p->b));
    return NULL;
}

static struct spin_pair *make_spin(void) {
    struct spin_pair *p = malloc(sizeof *p);
    CHECK(p != NULL, "allocating a spin pair");
    OK(pthread_spin_init(&p->a, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_spin_init(&p->b, PTHREAD_PROCESS_PRIVATE));
    return p;
}

static void end_spin(struct spin_pair *p) {
    OK(pthread_spin_destroy(&p->a));
    OK(pthread_spin_destroy(&p->b));
    free(p);
}

static void spin_variant(void) {
    ld_phase("spin: first life, a then b");
    struct spin_pair *p = make_spin();
    uintptr_t first = (uintptr_t)p;
    run_thread(spin_a_then_b, p);
    end_spin(p);
    p = make_spin();
    int reused = (uintptr_t)p == first;
    printf("spin: first %#lx second %#lx reused=%s\n", (unsigned long)first,
           (unsigned long)(uintptr_t)p, reused ? "yes" : "no");
    fflush(stdout);
    ld_phase(reused ? "spin: second life (reused=yes), b then a"
                    : "spin: second life (reused=no), b then a");
    run_thread(spin_b_then_a, p);
    end_spin(p);
}

int main(void) {
    watchdog(30);
    variant(INIT, 0);
    variant(MEMSET, 64);
    variant(CALLOC, 128);
    variant(ASSIGN, 192);
    variant(PI, 256);
    spin_variant();
    ld_phase("done");
    pass("reuse_freed: a -> b, then b -> a on new mutexes in reused memory");
    return 0;
}
