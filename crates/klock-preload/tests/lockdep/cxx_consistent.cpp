// MUST NOT REPORT: libstdc++'s locks used without a lock-order cycle.
//
//   recursive:   std::recursive_mutex RM and std::mutex I, order RM -> I; one
//                thread relocks RM while holding I (a recursive relock, no
//                edge I -> RM).
//   shared:      std::shared_mutex S (glibc's default, reader-preferring
//                rwlock) and std::mutex M: shared_lock(S) then M in one
//                thread, M then shared_lock(S) in the next: a read-read
//                order, which cannot deadlock here.
//   condvar:     std::condition_variable waits on unique_lock(M) inside an
//                outer std::mutex O (order O -> M; the retake is O -> M too),
//                notified by a thread holding only M.
//   scoped_lock: std::scoped_lock(a, b) and std::scoped_lock(b, a) from two
//                threads at once, many times: std::lock blocks on one lock
//                only, with nothing held, and try-locks the others (backing
//                off on failure): no wait edge between a and b, no deadlock.
//                Inside, a third mutex c is taken blocking (a -> c, b -> c).
#include "ld.h"

#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

static std::recursive_mutex cc_rm;
static std::mutex cc_i;

static std::shared_mutex cc_s;
static std::mutex cc_m;

static std::mutex cc_o;
static std::mutex cc_cm;
static std::condition_variable cc_cv;
static bool cc_waiting, cc_go; // under cc_cm

static std::mutex cc_a, cc_b, cc_c;
static long cc_count; // under cc_a and cc_b

__attribute__((noinline)) static void rm_then_i() {
    std::lock_guard<std::recursive_mutex> g1(cc_rm);
    std::lock_guard<std::recursive_mutex> g2(cc_rm);
    std::lock_guard<std::mutex> g3(cc_i);
}

__attribute__((noinline)) static void rm_i_relock_rm() {
    std::lock_guard<std::recursive_mutex> g1(cc_rm);
    std::lock_guard<std::mutex> g2(cc_i);
    std::lock_guard<std::recursive_mutex> g3(cc_rm);
}

__attribute__((noinline)) static void shared_then_m() {
    std::shared_lock<std::shared_mutex> s(cc_s);
    std::lock_guard<std::mutex> m(cc_m);
}

__attribute__((noinline)) static void m_then_shared() {
    std::lock_guard<std::mutex> m(cc_m);
    std::shared_lock<std::shared_mutex> s(cc_s);
}

__attribute__((noinline)) static void wait_inside_o() {
    std::lock_guard<std::mutex> o(cc_o);
    std::unique_lock<std::mutex> m(cc_cm);
    cc_waiting = true;
    cc_cv.wait(m, [] { return cc_go; });
}

__attribute__((noinline)) static void scoped(bool ab, int iters) {
    for (int i = 0; i < iters; i++) {
        if (ab) {
            std::scoped_lock both(cc_a, cc_b);
            std::lock_guard<std::mutex> c(cc_c);
            cc_count++;
        } else {
            std::scoped_lock both(cc_b, cc_a);
            std::lock_guard<std::mutex> c(cc_c);
            cc_count++;
        }
    }
}

int main() {
    watchdog(30);
    ld_phase("recursive: RM, RM, I");
    std::thread(rm_then_i).join();
    ld_phase("recursive: RM, I, RM relocked holding I");
    std::thread(rm_i_relock_rm).join();

    ld_phase("shared: shared S, M");
    std::thread(shared_then_m).join();
    ld_phase("shared: M, shared S");
    std::thread(m_then_shared).join();

    ld_phase("condvar: O, wait on M inside O");
    std::thread w(wait_inside_o);
    for (;;) {
        std::unique_lock<std::mutex> m(cc_cm);
        if (cc_waiting) {
            cc_go = true;
            cc_cv.notify_one();
            break;
        }
        m.unlock();
        sleep_ms(1);
    }
    w.join();

    ld_phase("scoped_lock: (a, b) and (b, a) at once, c inside");
    const int iters = 20000;
    std::thread t1(scoped, true, iters), t2(scoped, false, iters);
    t1.join();
    t2.join();
    CHECK(cc_count == 2L * iters, "count %ld, expected %ld", cc_count, 2L * iters);

    ld_phase("done");
    pass("cxx_consistent: recursive relock, shared read-read, condvar in O, "
         "scoped_lock both ways");
    return 0;
}
