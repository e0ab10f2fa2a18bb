// MUST REPORT (one report): the AB-BA inversion with std::mutex and
// std::lock_guard (libstdc++ maps them onto pthread_mutex_lock/unlock).
// The mutexes are namespace-scope objects, zero-initialised (constexpr
// constructor), never passed to pthread_mutex_init.
#include "ld.h"

#include <mutex>
#include <thread>

std::mutex guard_a;
std::mutex guard_b;

__attribute__((noinline)) static void guard_a_then_b() {
    std::lock_guard<std::mutex> ga(guard_a);
    std::lock_guard<std::mutex> gb(guard_b);
}

__attribute__((noinline)) static void guard_b_then_a() {
    std::lock_guard<std::mutex> gb(guard_b);
    std::lock_guard<std::mutex> ga(guard_a);
}

int main() {
    watchdog(30);
    ld_phase("a then b");
    std::thread(guard_a_then_b).join();
    ld_phase("b then a (closes the cycle)");
    std::thread(guard_b_then_a).join();
    ld_phase("done");
    pass("cxx_lock_guard: both orders ran, one after the other");
    return 0;
}
