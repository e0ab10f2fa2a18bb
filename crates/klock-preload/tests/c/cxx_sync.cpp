// C++17 standard library synchronisation on top of pthreads (libstdc++):
// std::mutex, std::recursive_mutex, std::timed_mutex (try_lock_for /
// try_lock_until -> pthread_mutex_clocklock), std::recursive_timed_mutex,
// std::condition_variable (wait, wait_for and wait_until with steady_clock
// -> pthread_cond_clockwait(CLOCK_MONOTONIC), wait_until with system_clock),
// std::condition_variable_any, std::shared_mutex and std::shared_timed_mutex
// (try_lock_shared_for -> pthread_rwlock_clockrdlock), with threads and
// result checks.
#include "common.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using sys = std::chrono::system_clock;

// A timed call that reported a timeout must not have returned early.
template <class Clock>
static void check_not_early(typename Clock::time_point deadline, const char *what) {
    if (Clock::now() < deadline)
        FAIL("%s timed out before its deadline", what);
}

template <class F> static auto on_other_thread(F f) {
    decltype(f()) result{};
    std::thread t([&] { result = f(); });
    t.join();
    return result;
}

static void test_mutex() {
    phase("std::mutex counter");
    std::mutex m;
    long counter = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 100000; k++) {
                if (k % 4 == 0) {
                    while (!m.try_lock())
                        std::this_thread::yield();
                    std::lock_guard<std::mutex> g(m, std::adopt_lock);
                    counter++;
                } else {
                    std::lock_guard<std::mutex> g(m);
                    counter++;
                }
            }
        });
    for (auto &t : ts)
        t.join();
    CHECK(counter == 400000, "counter %ld", counter);
    m.lock();
    CHECK(!on_other_thread([&] {
              bool ok = m.try_lock();
              if (ok)
                  m.unlock();
              return ok;
          }),
          "try_lock succeeded on a held std::mutex");
    m.unlock();
}

static void test_recursive() {
    phase("std::recursive_mutex");
    std::recursive_mutex m;
    m.lock();
    m.lock();
    CHECK(m.try_lock(), "owner try_lock failed");
    auto other_try = [&] {
        bool ok = m.try_lock();
        if (ok)
            m.unlock();
        return ok;
    };
    CHECK(!on_other_thread(other_try), "other thread got a held recursive_mutex");
    m.unlock();
    m.unlock();
    CHECK(!on_other_thread(other_try), "released too early");
    m.unlock();
    CHECK(on_other_thread(other_try), "not released after the last unlock");

    long counter = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 50000; k++) {
                std::lock_guard<std::recursive_mutex> a(m);
                std::lock_guard<std::recursive_mutex> b(m);
                counter++;
            }
        });
    for (auto &t : ts)
        t.join();
    CHECK(counter == 150000, "counter %ld", counter);
}

template <class TM> static void check_timed(const char *name) {
    phase(name);
    TM m;
    std::atomic<int> state{0};
    std::thread holder([&] {
        m.lock();
        state = 1;
        while (state != 2)
            std::this_thread::sleep_for(1ms);
        m.unlock();
    });
    while (state != 1)
        std::this_thread::yield();
    auto d1 = steady::now() + 50ms;
    CHECK(!m.try_lock_for(50ms), "try_lock_for got a held mutex");
    check_not_early<steady>(d1, "try_lock_for");
    auto d2 = steady::now() + 40ms;
    CHECK(!m.try_lock_until(d2), "try_lock_until(steady) got a held mutex");
    check_not_early<steady>(d2, "try_lock_until(steady_clock)");
    auto d3 = sys::now() + 40ms;
    CHECK(!m.try_lock_until(d3), "try_lock_until(system) got a held mutex");
    check_not_early<sys>(d3, "try_lock_until(system_clock)");
    state = 2;
    CHECK(m.try_lock_for(30s), "try_lock_for did not get a released mutex");
    m.unlock();
    holder.join();

    long counter = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 20000; k++) {
                if (k & 1) {
                    CHECK(m.try_lock_for(30s), "try_lock_for failed");
                } else {
                    m.lock();
                }
                counter++;
                m.unlock();
            }
        });
    for (auto &t : ts)
        t.join();
    CHECK(counter == 60000, "counter %ld", counter);
}

// Two producers and two consumers through a queue of at most 16 (one consumer
// waits with a predicate, the other with wait_for): every item taken once.
static void condvar_producer_consumer(std::mutex &m,
                                      std::condition_variable &not_empty) {
    phase("std::condition_variable producer/consumer");
    std::condition_variable not_full;
    std::deque<int> q;
    bool done = false;
    long long sum = 0;
    long taken = 0;
    const int per_producer = 20000, producers = 2;
    std::vector<std::thread> ts;
    for (int p = 0; p < producers; p++)
        ts.emplace_back([&, p] {
            for (int i = 0; i < per_producer; i++) {
                std::unique_lock<std::mutex> l(m);
                not_full.wait(l, [&] { return q.size() < 16; });
                q.push_back(p * per_producer + i);
                not_empty.notify_one();
            }
        });
    std::vector<std::thread> cs;
    for (int c = 0; c < 2; c++)
        cs.emplace_back([&, c] {
            for (;;) {
                std::unique_lock<std::mutex> l(m);
                if (c == 0) {
                    not_empty.wait(l, [&] { return !q.empty() || done; });
                } else {
                    // wait_for with steady_clock: pthread_cond_clockwait
                    while (q.empty() && !done)
                        not_empty.wait_for(l, 2ms);
                }
                if (q.empty())
                    return;
                sum += q.front();
                q.pop_front();
                taken++;
                not_full.notify_one();
            }
        });
    for (auto &t : ts)
        t.join();
    {
        std::lock_guard<std::mutex> l(m);
        done = true;
    }
    not_empty.notify_all();
    for (auto &t : cs)
        t.join();
    long long n = (long long)producers * per_producer;
    CHECK(taken == n, "taken %ld", taken);
    CHECK(sum == n * (n - 1) / 2, "sum %lld", sum);
}

// Timed waits nobody notifies, on every clock: not early, lock held after.
static void condvar_timeouts(std::mutex &m, std::condition_variable &not_empty) {
    phase("std::condition_variable timeouts");
    {
        std::unique_lock<std::mutex> l(m);
        auto d = steady::now() + 40ms;
        CHECK(!not_empty.wait_until(l, d, [] { return false; }),
              "wait_until(steady) predicate");
        check_not_early<steady>(d, "wait_until(steady_clock)");
        CHECK(l.owns_lock(), "lock lost");
        auto d2 = steady::now() + 40ms;
        CHECK(!not_empty.wait_for(l, 40ms, [] { return false; }), "wait_for");
        check_not_early<steady>(d2, "wait_for");
        std::cv_status st;
        auto d3 = sys::now() + 40ms;
        do
            st = not_empty.wait_until(l, d3);
        while (st == std::cv_status::no_timeout);
        check_not_early<sys>(d3, "wait_until(system_clock)");
    }
    // The mutex was given back after the timeouts.
    CHECK(on_other_thread([&] {
              bool ok = m.try_lock();
              if (ok)
                  m.unlock();
              return ok;
          }),
          "mutex still held after timed waits");
}

// notify_all wakes every waiter, also those in a wait_until far from its
// deadline.
static void condvar_notify_all(std::mutex &m) {
    phase("std::condition_variable notify_all / wait_until wakes early");
    int waiting = 0, go = 0, woke = 0;
    std::condition_variable cv;
    std::vector<std::thread> ws;
    for (int i = 0; i < 8; i++)
        ws.emplace_back([&, i] {
            std::unique_lock<std::mutex> l(m);
            waiting++;
            cv.notify_all();
            auto dl = steady::now() + 30s;
            if (i & 1) {
                CHECK(cv.wait_until(l, dl, [&] { return go != 0; }),
                      "wait_until timed out although notified");
            } else {
                cv.wait(l, [&] { return go != 0; });
            }
            woke++;
        });
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return waiting == 8; });
        go = 1;
    }
    cv.notify_all();
    for (auto &t : ws)
        t.join();
    CHECK(woke == 8, "woke %d", woke);
}

// The timeouts reuse the producer/consumer phase's mutex and condvar.
static void test_condvar() {
    std::mutex m;
    std::condition_variable not_empty;
    condvar_producer_consumer(m, not_empty);
    condvar_timeouts(m, not_empty);
    condvar_notify_all(m);
}

static void test_condvar_any() {
    phase("std::condition_variable_any with std::timed_mutex");
    std::timed_mutex m;
    std::condition_variable_any cv;
    int turn = 0;
    const int rounds = 5000;
    auto player = [&](int me) {
        for (int i = 0; i < rounds; i++) {
            std::unique_lock<std::timed_mutex> l(m);
            cv.wait(l, [&] { return turn == me; });
            turn = 1 - me;
            cv.notify_all();
        }
    };
    std::thread a(player, 0), b(player, 1);
    a.join();
    b.join();
    CHECK(turn == 0, "turn %d", turn);
}

// Readers share: all three hold the shared lock at once.
template <class SM> static void shared_readers_share(SM &sm) {
    std::mutex m;
    std::condition_variable cv;
    int inside = 0;
    std::vector<std::thread> rs;
    for (int i = 0; i < 3; i++)
        rs.emplace_back([&] {
            std::shared_lock<SM> s(sm);
            std::unique_lock<std::mutex> l(m);
            inside++;
            cv.notify_all();
            cv.wait(l, [&] { return inside >= 3; });
        });
    for (auto &t : rs)
        t.join();
    CHECK(inside == 3, "inside %d", inside);
}

// A writer excludes; try variants fail on conflict.
template <class SM> static void shared_writer_excludes(SM &sm) {
    sm.lock();
    CHECK(!on_other_thread([&] {
              bool ok = sm.try_lock_shared();
              if (ok)
                  sm.unlock_shared();
              return ok;
          }),
          "try_lock_shared got a write-held lock");
    sm.unlock();
    sm.lock_shared();
    CHECK(!on_other_thread([&] {
              bool ok = sm.try_lock();
              if (ok)
                  sm.unlock();
              return ok;
          }),
          "try_lock got a read-held lock");
    CHECK(on_other_thread([&] {
              bool ok = sm.try_lock_shared();
              if (ok)
                  sm.unlock_shared();
              return ok;
          }),
          "try_lock_shared failed on a read-held lock");
    sm.unlock_shared();
}

// Torn-read check: readers never see a half-done write, no write is lost.
template <class SM> static void shared_no_torn_reads(SM &sm) {
    long data[4] = {0, 0, 0, 0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int w = 0; w < 2; w++)
        ts.emplace_back([&] {
            for (int i = 0; i < 10000; i++) {
                std::unique_lock<SM> l(sm);
                long v = data[0] + 1;
                for (long &d : data)
                    d = v;
            }
        });
    std::vector<std::thread> readers;
    for (int r = 0; r < 2; r++)
        readers.emplace_back([&] {
            int i = 0;
            while (!stop) {
                std::shared_lock<SM> l(sm);
                for (long d : data)
                    CHECK(d == data[0], "torn read");
                if ((++i & 63) == 0) {
                    l.unlock();
                    std::this_thread::sleep_for(20us);
                }
            }
        });
    for (auto &t : ts)
        t.join();
    stop = true;
    for (auto &t : readers)
        t.join();
    CHECK(data[0] == 20000 && data[3] == 20000, "lost writes: %ld", data[0]);
}

template <class SM> static void check_shared(const char *name) {
    phase(name);
    SM sm;
    shared_readers_share(sm);
    shared_writer_excludes(sm);
    shared_no_torn_reads(sm);
}

static void test_shared_timed() {
    phase("std::shared_timed_mutex timeouts");
    std::shared_timed_mutex sm;
    std::atomic<int> state{0};
    std::thread writer([&] {
        sm.lock();
        state = 1;
        while (state != 2)
            std::this_thread::sleep_for(1ms);
        sm.unlock();
    });
    while (state != 1)
        std::this_thread::yield();
    auto d = steady::now() + 50ms;
    CHECK(!sm.try_lock_shared_for(50ms), "try_lock_shared_for got a write-held lock");
    check_not_early<steady>(d, "try_lock_shared_for");
    auto d2 = steady::now() + 40ms;
    CHECK(!sm.try_lock_for(40ms), "try_lock_for got a write-held lock");
    check_not_early<steady>(d2, "shared_timed_mutex::try_lock_for");
    auto d3 = sys::now() + 40ms;
    CHECK(!sm.try_lock_shared_until(d3), "try_lock_shared_until(system)");
    check_not_early<sys>(d3, "try_lock_shared_until(system_clock)");
    state = 2;
    CHECK(sm.try_lock_shared_for(30s), "try_lock_shared_for on a released lock");
    // Read-held: another reader gets in, a writer times out.
    CHECK(on_other_thread([&] {
              bool ok = sm.try_lock_shared_for(30s);
              if (ok)
                  sm.unlock_shared();
              return ok;
          }),
          "second reader blocked");
    CHECK(!on_other_thread([&] {
              bool ok = sm.try_lock_for(30ms);
              if (ok)
                  sm.unlock();
              return ok;
          }),
          "writer got a read-held lock");
    sm.unlock_shared();
    writer.join();
    CHECK(sm.try_lock_for(30s), "try_lock_for on a free lock");
    sm.unlock();
}

int main() {
    watchdog(30);
    test_mutex();
    test_recursive();
    check_timed<std::timed_mutex>("std::timed_mutex");
    check_timed<std::recursive_timed_mutex>("std::recursive_timed_mutex");
    test_condvar();
    test_condvar_any();
    check_shared<std::shared_mutex>("std::shared_mutex");
    check_shared<std::shared_timed_mutex>("std::shared_timed_mutex");
    test_shared_timed();
    pass("cxx_sync");
    return 0;
}
