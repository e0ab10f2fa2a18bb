// MUST NOT REPORT: C++ lock objects whose storage is reused are new locks.
//
// libstdc++'s std::mutex and std::shared_mutex are zero-initialised by
// constexpr constructors and have trivial destructors: neither
// pthread_mutex_init nor pthread_mutex_destroy (nor the rwlock ones) is ever
// called. Each variant makes a pair (a, b), locks a then b in a thread, ends
// the pair's life, makes a new pair in the same storage, and locks b then a:
//
//   heap:      new Pair / delete / new Pair (the same block from glibc's
//              tcache, normally: printed as reused=yes/no)
//   placement: placement new into one static buffer, ~Pair(), placement new
//              into the same buffer (the same address, forced)
//   shared:    the placement variant with std::shared_mutex, exclusive locks
#include "ld.h"

#include <mutex>
#include <new>
#include <shared_mutex>
#include <thread>

template <class M> struct Pair {
    M a, b;
};

template <class M> __attribute__((noinline)) static void lock_a_then_b(Pair<M> *p) {
    std::lock_guard<M> ga(p->a);
    std::lock_guard<M> gb(p->b);
}

template <class M> __attribute__((noinline)) static void lock_b_then_a(Pair<M> *p) {
    std::lock_guard<M> gb(p->b);
    std::lock_guard<M> ga(p->a);
}

static void heap_variant() {
    ld_phase("heap: first life, a then b");
    auto *p = new Pair<std::mutex>;
    auto first = reinterpret_cast<uintptr_t>(p);
    std::thread(lock_a_then_b<std::mutex>, p).join();
    delete p;
    p = new Pair<std::mutex>;
    bool reused = reinterpret_cast<uintptr_t>(p) == first;
    printf("heap: first %#lx second %#lx reused=%s\n", (unsigned long)first,
           (unsigned long)reinterpret_cast<uintptr_t>(p), reused ? "yes" : "no");
    fflush(stdout);
    ld_phase(reused ? "heap: second life (reused=yes), b then a"
                    : "heap: second life (reused=no), b then a");
    std::thread(lock_b_then_a<std::mutex>, p).join();
    delete p;
}

template <class M> static void placement_variant(const char *name) {
    alignas(Pair<M>) static unsigned char buf[sizeof(Pair<M>)];
    char what[96];
    snprintf(what, sizeof what, "%s: first life, a then b", name);
    ld_phase(what);
    auto *p = new (buf) Pair<M>;
    std::thread(lock_a_then_b<M>, p).join();
    p->~Pair<M>();
    auto *q = new (buf) Pair<M>;
    CHECK(static_cast<void *>(q) == static_cast<void *>(p), "placement new moved");
    snprintf(what, sizeof what, "%s: second life (same buffer), b then a", name);
    ld_phase(what);
    std::thread(lock_b_then_a<M>, q).join();
    q->~Pair<M>();
}

int main() {
    watchdog(30);
    heap_variant();
    placement_variant<std::mutex>("placement");
    placement_variant<std::shared_mutex>("shared");
    ld_phase("done");
    pass("cxx_reuse: a -> b, then b -> a on new lock objects in reused storage");
    return 0;
}
