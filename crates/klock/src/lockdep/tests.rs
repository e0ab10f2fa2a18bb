//! The validator's rules, driven through its hooks by hand (one thread after
//! another, so nothing really deadlocks). Reports are counted process-wide,
//! so the tests run one at a time (`serial`).

use super::*;

/// A fresh lock per call (addresses never used by anything else).
fn fresh() -> Lock {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0x7f00_0000_0000);
    lock_at(NEXT.fetch_add(64, Ordering::Relaxed)).unwrap()
}

fn take(l: Lock, mode: Mode) {
    before_wait(l, mode, mode == Mode::ReadPassing);
    taken(l, mode, mode == Mode::ReadPassing, false);
}

fn try_take(l: Lock, mode: Mode) {
    taken(l, mode, false, true);
}

/// The tests count reports process-wide: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static S: std::sync::Mutex<()> = std::sync::Mutex::new(());
    S.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on a new thread and waits for it.
fn on_thread(f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(f).join().unwrap();
}

/// Reports made by `f` (which runs its orders on threads one after another).
fn reports_of(f: impl FnOnce()) -> u64 {
    let before = reports();
    f();
    reports() - before
}

#[test]
fn the_rules() {
    let _s = serial();
    set_enabled(true, false);
    // SAFETY: tests set a variable nobody else reads concurrently.
    unsafe { std::env::set_var("KLOCK_LOCKDEP_FILE", "/dev/null") };

    // A-B then B-A: one report, once.
    let (a, b) = (fresh(), fresh());
    let ab = move || {
        take(a, Mode::Write);
        take(b, Mode::Write);
        released(b);
        released(a);
    };
    let ba = move || {
        take(b, Mode::Write);
        take(a, Mode::Write);
        released(a);
        released(b);
    };
    assert_eq!(reports_of(|| on_thread(ab)), 0);
    assert_eq!(reports_of(|| on_thread(ba)), 1, "A-B / B-A");
    assert_eq!(reports_of(|| on_thread(ba)), 0, "once per cycle");

    // Three locks over three threads.
    let (x, y, z) = (fresh(), fresh(), fresh());
    let pair = |p: Lock, q: Lock| {
        move || {
            take(p, Mode::Write);
            take(q, Mode::Write);
            released(q);
            released(p);
        }
    };
    assert_eq!(
        reports_of(|| {
            on_thread(pair(x, y));
            on_thread(pair(y, z));
        }),
        0
    );
    assert_eq!(reports_of(|| on_thread(pair(z, x))), 1, "three-lock cycle");

    // A trylock makes no wait edge; its blocking neighbour does.
    let (p, q) = (fresh(), fresh());
    on_thread(pair(p, q));
    assert_eq!(
        reports_of(|| on_thread(move || {
            take(q, Mode::Write);
            try_take(p, Mode::Write);
            released(p);
            released(q);
        })),
        0,
        "trylock back-off"
    );
    assert_eq!(
        reports_of(|| on_thread(pair(q, p))),
        1,
        "blocking neighbour"
    );

    // A lock taken by a try still counts as held: T tried, then W waited
    // for, makes T -> W; W then T (blocking) closes it.
    let (t, w) = (fresh(), fresh());
    on_thread(move || {
        try_take(t, Mode::Write);
        take(w, Mode::Write);
        released(w);
        released(t);
    });
    assert_eq!(reports_of(|| on_thread(pair(w, t))), 1, "tried lock held");

    // Recursive relock: no edge, no report.
    let (r, m) = (fresh(), fresh());
    assert_eq!(
        reports_of(|| on_thread(move || {
            before_wait(r, Mode::Write, true);
            taken(r, Mode::Write, true, false);
            take(m, Mode::Write);
            before_wait(r, Mode::Write, true);
            taken(r, Mode::Write, true, false);
            released(r);
            released(m);
            released(r);
        })),
        0,
        "recursive relock"
    );

    // Read-read on a reader-preferring lock: no report; on a
    // writer-preferring one: a report. Read then write: a report.
    for (mode, want) in [(Mode::ReadPassing, 0), (Mode::Read, 1)] {
        let (rw, mx) = (fresh(), fresh());
        on_thread(move || {
            take(rw, mode);
            take(mx, Mode::Write);
            released(mx);
            released(rw);
        });
        let got = reports_of(|| {
            on_thread(move || {
                take(mx, Mode::Write);
                take(rw, mode);
                released(rw);
                released(mx);
            })
        });
        assert_eq!(got, want, "read-read, {mode:?}");
    }
    let (rw, mx) = (fresh(), fresh());
    on_thread(move || {
        take(rw, Mode::ReadPassing);
        take(mx, Mode::Write);
        released(mx);
        released(rw);
    });
    let got = reports_of(|| {
        on_thread(move || {
            take(mx, Mode::Write);
            take(rw, Mode::Write);
            released(rw);
            released(mx);
        })
    });
    assert_eq!(got, 1, "read then write");

    // A condvar wait releases and retakes its mutex: with M -> O known, a
    // thread holding O that retakes M closes the cycle.
    let (mm, o) = (fresh(), fresh());
    on_thread(pair(mm, o));
    let got = reports_of(|| {
        on_thread(move || {
            take(mm, Mode::Write);
            take(o, Mode::Write);
            released(mm); // the wait
            take(mm, Mode::Write); // the retake
            released(mm);
            released(o);
        })
    });
    assert_eq!(got, 1, "condvar retake");

    // A forgotten (destroyed, reused) address is a new lock: no report.
    let (c, d) = (0x7e00_0000_0000usize, 0x7e00_0000_0040usize);
    let (lc, ld) = (lock_at(c).unwrap(), lock_at(d).unwrap());
    on_thread(pair(lc, ld));
    forget(c);
    forget(d);
    let (lc2, ld2) = (lock_at(c).unwrap(), lock_at(d).unwrap());
    assert_ne!(lc, lc2);
    assert_eq!(reports_of(|| on_thread(pair(ld2, lc2))), 0, "reused memory");

    // A lock released by a thread that did not take it (a semaphore): the
    // taker's entry goes at its next hook (the releaser renews and retires
    // the identity, as the interposer does), so later orders form no cycle.
    let (sem_addr, x) = (0x7d00_0000_0000usize, fresh());
    let sem = lock_at(sem_addr).unwrap();
    let got = reports_of(|| {
        take(sem, Mode::Write);
        on_thread(move || {
            assert!(!released(sem), "not this thread's");
            forget(sem_addr);
            retire(sem);
        });
        take(x, Mode::Write); // no edge from the retired sem
        released(x);
        let sem2 = lock_at(sem_addr).unwrap();
        assert_ne!(sem, sem2);
        on_thread(move || {
            take(x, Mode::Write);
            take(sem2, Mode::Write);
            released(sem2);
            released(x);
        });
    });
    assert_eq!(got, 0, "semaphore-style release");

    // Consistent nested order over many threads: silent.
    let locks: Vec<Lock> = (0..16).map(|_| fresh()).collect();
    let got = reports_of(|| {
        let hs: Vec<_> = (0..8)
            .map(|t| {
                let locks = locks.clone();
                std::thread::spawn(move || {
                    for i in 0..500usize {
                        let mut picked: Vec<usize> =
                            (0..4).map(|k| (i * 7 + t * 3 + k * 5) % 16).collect();
                        picked.sort();
                        picked.dedup();
                        for &j in &picked {
                            take(locks[j], Mode::Write);
                        }
                        for &j in picked.iter().rev() {
                            released(locks[j]);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert_eq!(got, 0, "consistent order");
}
