// MUST REPORT (one report): std::shared_mutex (a pthread rwlock) taken
// shared, then a std::mutex; later the std::mutex, then the shared_mutex
// exclusively: a read -> write cycle, which deadlocks on any rwlock kind.
#include "ld.h"

#include <mutex>
#include <shared_mutex>
#include <thread>

std::shared_mutex cxx_rw;
std::mutex cxx_mx;

__attribute__((noinline)) static void shared_then_mutex() {
    std::shared_lock<std::shared_mutex> s(cxx_rw);
    std::lock_guard<std::mutex> m(cxx_mx);
}

__attribute__((noinline)) static void mutex_then_exclusive() {
    std::lock_guard<std::mutex> m(cxx_mx);
    std::unique_lock<std::shared_mutex> x(cxx_rw);
}

int main() {
    watchdog(30);
    ld_phase("shared rw, then mutex");
    std::thread(shared_then_mutex).join();
    ld_phase("mutex, then exclusive rw (closes the cycle)");
    std::thread(mutex_then_exclusive).join();
    ld_phase("done");
    pass("cxx_shared_cycle: shared(rw) -> mx, then mx -> exclusive(rw)");
    return 0;
}
