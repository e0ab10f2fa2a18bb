//! Lock-order validation (`KLOCK_LOCKDEP`) of the interposer, against the
//! programs in `tests/lockdep/`.
//!
//! Each program runs one lock-order pattern, conflicting orders one thread
//! after another (joined in between), so none of them can really deadlock:
//! each prints `PASS: ...` and exits 0 in every run. A program either must
//! report a possible deadlock (a lock-order cycle) or must not; the list
//! below says which, and how many reports (lines containing
//! `possible deadlock`) its stderr must hold. The report format checked
//! here (the lockdep contract):
//!
//! ```text
//! klock lockdep: possible deadlock (lock-order cycle of 2 locks) in pid 1234 (./prog)
//!   <one line per lock: its address, its static symbol if any>
//!   L1 -> L2: thread 1235 took L2 (<mode>) while holding L1 (<mode>), first at:
//!       <symbolized frames, one per line>
//!   L2 -> L1: ...
//! klock lockdep: end of report
//! ```
//!
//! Every program is compiled like `tests/c` (`common::compile`: gcc/g++
//! `-O2 -g -Wall -Wextra -Werror -pthread`, C++17), and run three times under
//! a watchdog:
//! 1. plain (glibc's locks): validates the program itself;
//! 2. under the interposer without `KLOCK_LOCKDEP`: no report, ever;
//! 3. under the interposer with `KLOCK_LOCKDEP=1`: exactly the expected
//!    number of reports, each complete (an `end of report` line), naming the
//!    cycle's length, and (for the must-report programs) printed in the
//!    phase that closes the cycle: the programs mark their phases on stderr
//!    with `lockdep-test: <phase>` lines (`tests/lockdep/ld.h`).
//!
//! `ab_ba.c` gets more: the report names the static mutexes (`lock_a`,
//! `lock_b`) with their addresses, the threads (their ids, printed by the
//! program), and the thread functions in symbolized frames; `KLOCK_LOCKDEP=abort`
//! ends it with SIGABRT after the report; `KLOCK_LOCKDEP_FILE` moves the
//! report into a file (`%p` expanded to the pid); `KLOCK_LOCKDEP=0` is off;
//! `klockrun --lockdep` / `--lockdep=abort` set the variable. `recursive.c`
//! runs once more under `KLOCK_RWLOCK_POLICY=fair`, where its read-read
//! orders must report (the variable is otherwise not inherited).
//!
//! Failures print the runs' stderr tails (with the phase markers and reports).

mod common;

use common::{Mode, RUN_TIMEOUT, RunResult};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first line of every report contains this; reports are counted by it.
const REPORT: &str = "possible deadlock";
/// The last line of every report.
const END_OF_REPORT: &str = "klock lockdep: end of report";
/// The programs' phase markers on stderr (`ld_phase` in `tests/lockdep/ld.h`).
const PHASE: &str = "lockdep-test: ";

const SIGABRT: i32 = 6;

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("lockdep")
}

fn is_program(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "cpp"))
}

/// Compiles `tests/lockdep/<file>` to a binary of its own (`tag` keeps the
/// tests that build the same program apart).
fn build(file: &str, tag: &str) -> PathBuf {
    let src = source_dir().join(file);
    assert!(src.is_file(), "{} is missing", src.display());
    let stem = Path::new(file).file_stem().unwrap().to_string_lossy();
    let bin =
        common::tmp_subdir("lockdep-bin").join(format!("{stem}-{tag}-{}", std::process::id()));
    if let Err(e) = common::compile(&src, &bin, &[]) {
        panic!("{file}: {e}");
    }
    bin
}

/// A command for `bin` with no lockdep variable inherited, then `env` set.
/// `KLOCK_RWLOCK_POLICY` is not inherited either: under `fair` every rwlock
/// kind queues readers behind writers, and the read-read orders that must
/// not report on glibc's reader-preferring kinds (`recursive.c`) then can
/// deadlock.
fn command(bin: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("KLOCK_LOCKDEP")
        .env_remove("KLOCK_LOCKDEP_FILE")
        .env_remove("KLOCK_RWLOCK_POLICY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `bin` under the interposer with `env` (the description names it).
fn run_preloaded(bin: &Path, env: &[(&str, &str)]) -> RunResult {
    let mut r = common::run(&mut command(bin, env), Mode::Preload, RUN_TIMEOUT);
    r.desc = with_env(&r.desc, env);
    r
}

fn with_env(desc: &str, env: &[(&str, &str)]) -> String {
    let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if vars.is_empty() {
        format!("(KLOCK_LOCKDEP unset) {desc}")
    } else {
        format!("{} {desc}", vars.join(" "))
    }
}

/// Lines containing [`REPORT`].
fn report_count(text: &str) -> usize {
    text.lines().filter(|l| l.contains(REPORT)).count()
}

/// Exited 0, printed PASS, and (preloaded) the interposer announced itself.
fn check_ran(file: &str, mode: Mode, r: &RunResult) -> Result<(), String> {
    if !r.success() {
        return Err(r.report(&format!(
            "{file}: did not run to completion ({})",
            match mode {
                Mode::Plain => "WITHOUT the interposer: the test program itself is wrong",
                Mode::Preload | Mode::Lockdep => "under the interposer",
            }
        )));
    }
    if !r.stdout.contains("PASS") {
        return Err(r.report(&format!("{file}: exited 0 without its PASS line")));
    }
    mode.check_marker(&r.stderr)
        .map_err(|e| r.report(&format!("{file}: {e}")))
}

/// What a program must produce under `KLOCK_LOCKDEP=1`.
struct Expect {
    /// Number of reports (lines containing `possible deadlock`).
    reports: usize,
    /// For a must-report program: the cycle's length (`cycle of N locks` on
    /// the report's first line) and a piece of the text of the phase marker
    /// the report must follow (the phase that closes the cycle).
    cycle: Option<(usize, &'static str)>,
    /// Further text every report must contain: each entry lists
    /// alternatives, one of which must appear.
    contains: &'static [&'static [&'static str]],
}

const NO_REPORT: Expect = Expect {
    reports: 0,
    cycle: None,
    contains: &[],
};

const fn one_report(locks: usize, phase: &'static str) -> Expect {
    Expect {
        reports: 1,
        cycle: Some((locks, phase)),
        contains: &[],
    }
}

/// The reports in `stderr`: each from its first line to its `end of report`
/// line (or to the end of the text), with the phase marker before it.
fn reports(stderr: &str) -> Vec<(Option<&str>, Vec<&str>)> {
    let mut out = Vec::new();
    let mut phase = None;
    let mut current: Option<(Option<&str>, Vec<&str>)> = None;
    for line in stderr.lines() {
        if let Some(p) = line.strip_prefix(PHASE) {
            phase = Some(p);
        }
        if line.contains(REPORT) {
            if let Some(c) = current.take() {
                out.push(c);
            }
            current = Some((phase, vec![line]));
            continue;
        }
        if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
            if line.contains(END_OF_REPORT) {
                out.push(current.take().unwrap());
            }
        }
    }
    out.extend(current);
    out
}

/// Checks the reports of a `KLOCK_LOCKDEP=1` run against `want`.
fn check_reports(file: &str, r: &RunResult, text: &str, want: &Expect) -> Result<(), String> {
    let fail = |what: String| Err(r.report(&format!("{file} (KLOCK_LOCKDEP=1): {what}")));
    let n = report_count(text);
    if n != want.reports {
        return fail(if want.reports == 0 {
            format!("expected NO lockdep report, got {n} (lines containing `{REPORT}`)")
        } else {
            format!(
                "expected exactly {} lockdep report(s), got {n} (lines containing `{REPORT}`)",
                want.reports
            )
        });
    }
    let found = reports(text);
    for (i, (phase, _)) in found.iter().enumerate() {
        if found[..i].iter().any(|(p, _)| p == phase) {
            return fail(format!(
                "two reports in phase {:?}: each cycle must be reported once, when it closes",
                phase.unwrap_or("<before any phase>")
            ));
        }
    }
    for (phase, lines) in found {
        let first = lines[0];
        if !lines.last().is_some_and(|l| l.contains(END_OF_REPORT)) {
            return fail(format!(
                "a report does not end with a `{END_OF_REPORT}` line: {first}"
            ));
        }
        if let Some((locks, want_phase)) = want.cycle {
            let cycle = format!("cycle of {locks} locks");
            if !first.contains(&cycle) {
                return fail(format!(
                    "the report's first line does not say `{cycle}`: {first}"
                ));
            }
            if !phase.is_some_and(|p| p.contains(want_phase)) {
                return fail(format!(
                    "the report came in phase {:?}, expected the phase that closes the \
                     cycle ({want_phase:?})",
                    phase.unwrap_or("<before any phase>")
                ));
            }
        }
        let body = lines.join("\n");
        for any in want.contains {
            if !any.iter().any(|s| body.contains(s)) {
                return fail(format!("the report does not mention {}", alternatives(any)));
            }
        }
    }
    Ok(())
}

/// `a`, or `a` or `b`, ... for a message.
fn alternatives(any: &[&str]) -> String {
    let quoted: Vec<String> = any.iter().map(|s| format!("`{s}`")).collect();
    quoted.join(" or ")
}

/// Compiles `file` and runs it plain, preloaded without lockdep, and
/// preloaded with `KLOCK_LOCKDEP=1`, checking `want` on the last run.
fn check_program(file: &str, want: Expect) {
    let bin = build(file, "t");
    let mut failures = Vec::new();

    let r = common::run(&mut command(&bin, &[]), Mode::Plain, RUN_TIMEOUT);
    if let Err(e) = check_ran(file, Mode::Plain, &r) {
        failures.push(e);
    }

    let r = run_preloaded(&bin, &[]);
    if let Err(e) = check_ran(file, Mode::Preload, &r) {
        failures.push(e);
    } else if report_count(&r.stderr) != 0 {
        failures.push(r.report(&format!(
            "{file}: a lockdep report WITHOUT KLOCK_LOCKDEP (lockdep must be off)"
        )));
    }

    let r = run_preloaded(&bin, &[("KLOCK_LOCKDEP", "1")]);
    if let Err(e) = check_ran(file, Mode::Preload, &r) {
        failures.push(e);
    } else if let Err(e) = check_reports(file, &r, &r.stderr, &want) {
        failures.push(e);
    }

    if let Some(last) = failures.last_mut() {
        last.push_str(&format!("\n(binary kept for debugging: {})", bin.display()));
    } else {
        let _ = std::fs::remove_file(&bin);
    }
    common::finish(file, failures);
}

macro_rules! lockdep_programs {
    ($($(#[$attr:meta])* $test:ident => $file:literal: $want:expr,)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $test() {
                check_program($file, $want);
            }
        )*

        /// Every program in tests/lockdep, as listed above.
        const LISTED: &[&str] = &[$($file),*];
    };
}

lockdep_programs! {
    // MUST REPORT, once each.
    ab_ba => "ab_ba.c": Expect {
        contains: &[&["lock_a"], &["lock_b"], &["take_a_then_b"], &["take_b_then_a"]],
        ..one_report(2, "b then a")
    },
    three_cycle => "three_cycle.c": one_report(3, "c then a"),
    rd_then_mutex => "rd_then_mutex.c": Expect {
        // The contract's example says `(write)`; `(exclusive)` says the same.
        contains: &[&["rw_r"], &["mutex_m"], &["(read)"], &["(write)", "(exclusive)"]],
        ..one_report(2, "M then R write")
    },
    cxx_lock_guard => "cxx_lock_guard.cpp": Expect {
        contains: &[&["guard_a"], &["guard_b"]],
        ..one_report(2, "b then a")
    },
    rw_writer_pref_readread => "rw_writer_pref_readread.c": Expect {
        contains: &[&["(read)"]],
        ..one_report(2, "M then R read")
    },
    trylock_neighbour => "trylock_neighbour.c": one_report(2, "B, lock A (blocking"),
    trylock_held => "trylock_held.c": one_report(2, "lock B, lock A"),
    timed_cycle => "timed_cycle.c": one_report(2, "lock B, lock A"),
    spin_cycle => "spin_cycle.c": one_report(2, "spin B then A"),
    c11_cycle => "c11_cycle.c": one_report(2, "mtx B then A"),
    condwait_retake => "condwait_retake.c": one_report(2, "the retake of M closes the cycle"),
    cxx_shared_cycle => "cxx_shared_cycle.cpp": Expect {
        contains: &[&["cxx_rw"], &["cxx_mx"], &["(read)"]],
        ..one_report(2, "exclusive rw (closes the cycle)")
    },
    // One report per mutex kind, each in that kind's closing phase.
    mutex_kinds_cycle => "mutex_kinds_cycle.c": Expect {
        reports: 5,
        ..one_report(2, "b then a (closes the cycle)")
    },
    // The trylock, timed and retake rules across the families, one report
    // per family, each when its cycle closes (never in a phase of tries).
    try_timed_families => "try_timed_families.c": Expect {
        reports: 6,
        ..one_report(2, "(closes the cycle)")
    },
    // MUST NOT REPORT.
    nested_consistent => "nested_consistent.c": NO_REPORT,
    trylock_backoff => "trylock_backoff.c": NO_REPORT,
    reuse_freed => "reuse_freed.c": NO_REPORT,
    cxx_reuse => "cxx_reuse.cpp": NO_REPORT,
    cxx_consistent => "cxx_consistent.cpp": NO_REPORT,
    condwait_outer => "condwait_outer.c": NO_REPORT,
    recursive => "recursive.c": NO_REPORT,
    fork_busy => "fork_busy.c": NO_REPORT,
    deep_nesting => "deep_nesting.c": NO_REPORT,
    thread_exit_holding => "thread_exit_holding.c": NO_REPORT,
    // A mutex unlocked by another thread than the one that locked it is no
    // longer held by the locker (it gets a new identity: docs/lockdep.md).
    nonowner_unlock => "nonowner_unlock.c": NO_REPORT,
}

/// Under `KLOCK_RWLOCK_POLICY=fair` every rwlock kind is klock's fair rwsem,
/// whose new readers queue behind a waiting writer: the read-read orders of
/// `recursive.c` (part 3, one rwlock per kind) can then deadlock, and each
/// must be reported, in its closing phase. Parts 1 and 2 (relocks) still
/// add no edge.
#[test]
fn fair_rwlock_policy_makes_read_read_orders_report() {
    let bin = build("recursive.c", "fair");
    let env = [("KLOCK_LOCKDEP", "1"), ("KLOCK_RWLOCK_POLICY", "fair")];
    let r = run_preloaded(&bin, &env);
    let want = Expect {
        reports: 3,
        contains: &[&["(read)"]],
        ..one_report(2, ": M, R read")
    };
    let checked = check_ran("recursive.c", Mode::Preload, &r).and_then(|()| {
        check_reports(
            "recursive.c (KLOCK_RWLOCK_POLICY=fair)",
            &r,
            &r.stderr,
            &want,
        )
    });
    if let Err(e) = checked {
        panic!("{e}");
    }
    let _ = std::fs::remove_file(&bin);
}

/// `ab_ba.c`'s stdout line `<key>=<value>`.
fn stdout_value<'a>(r: &'a RunResult, key: &str) -> &'a str {
    let prefix = format!("{key}=");
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{}", r.report(&format!("no `{prefix}` line on stdout"))))
        .trim()
}

/// The lines of a report's edge stacks: those after an edge's `first at:`
/// line, up to the next edge (`Lx -> Ly: ...`) or the end of the report.
fn edge_stacks<'a>(report: &'a [&'a str]) -> impl Iterator<Item = &'a str> + 'a {
    let mut in_stack = false;
    report.iter().copied().filter(move |l| {
        if l.contains("first at:") {
            in_stack = true;
            return false;
        }
        if l.contains(" -> ") || l.contains(END_OF_REPORT) {
            in_stack = false;
        }
        in_stack
    })
}

/// The report names the locks by address and static symbol, the threads by
/// id, and shows the thread functions in its frames.
#[test]
fn ab_ba_report_names_locks_threads_and_frames() {
    let bin = build("ab_ba.c", "names");
    let r = run_preloaded(&bin, &[("KLOCK_LOCKDEP", "1")]);
    if let Err(e) = check_ran("ab_ba.c", Mode::Preload, &r) {
        panic!("{e}");
    }
    let found = reports(&r.stderr);
    assert!(
        found.len() == 1,
        "{}",
        r.report(&format!("expected one report, got {}", found.len()))
    );
    let body = found[0].1.join("\n").to_lowercase();
    let mut missing = Vec::new();
    for key in ["lock_a", "lock_b"] {
        let addr = stdout_value(&r, key).to_lowercase();
        if !body.contains(&addr) {
            missing.push(format!("the address of {key} ({addr})"));
        }
        if !body.contains(key) {
            missing.push(format!("the static symbol {key}"));
        }
    }
    for func in ["take_a_then_b", "take_b_then_a"] {
        let tid = stdout_value(&r, &format!("tid {func}"));
        if !body.contains(&format!("thread {tid}")) {
            missing.push(format!("`thread {tid}` (the thread running {func})"));
        }
        if !edge_stacks(&found[0].1).any(|l| l.contains(func)) {
            missing.push(format!("a symbolized frame naming {func}"));
        }
    }
    assert!(
        missing.is_empty(),
        "{}",
        r.report(&format!("the ab_ba.c report lacks: {}", missing.join("; ")))
    );
    let _ = std::fs::remove_file(&bin);
}

/// No report without `KLOCK_LOCKDEP`, or with `KLOCK_LOCKDEP=0`.
#[test]
fn lockdep_off_reports_nothing() {
    let bin = build("ab_ba.c", "off");
    for env in [&[][..], &[("KLOCK_LOCKDEP", "0")][..]] {
        let r = run_preloaded(&bin, env);
        if let Err(e) = check_ran("ab_ba.c", Mode::Preload, &r) {
            panic!("{e}");
        }
        assert!(
            report_count(&r.stderr) == 0,
            "{}",
            r.report("ab_ba.c: a lockdep report with lockdep off")
        );
    }
    let _ = std::fs::remove_file(&bin);
}

/// `KLOCK_LOCKDEP=abort`: the report, then abort() (SIGABRT), in the phase
/// that closes the cycle: the program does not get to its end.
#[test]
fn lockdep_abort_ends_with_sigabrt_after_the_report() {
    use std::os::unix::process::ExitStatusExt;
    let bin = build("ab_ba.c", "abort");
    let r = run_preloaded(&bin, &[("KLOCK_LOCKDEP", "abort")]);
    let sig = r.status.and_then(|s| s.signal());
    assert!(
        !r.timed_out && sig == Some(SIGABRT),
        "{}",
        r.report("ab_ba.c with KLOCK_LOCKDEP=abort: expected death by SIGABRT")
    );
    let found = reports(&r.stderr);
    assert!(
        found.len() == 1
            && found[0].1.last().is_some_and(|l| l.contains(END_OF_REPORT))
            && found[0].0 == Some("b then a"),
        "{}",
        r.report(
            "ab_ba.c with KLOCK_LOCKDEP=abort: expected one complete report, in phase \
             `b then a`, before the abort"
        )
    );
    assert!(
        !r.stdout.contains("PASS"),
        "{}",
        r.report("ab_ba.c with KLOCK_LOCKDEP=abort ran to its end")
    );
    let _ = std::fs::remove_file(&bin);
}

/// `KLOCK_LOCKDEP_FILE=<dir>/ld-%p.txt`: the report goes to that file, with
/// the pid for `%p`, and not to stderr.
#[test]
fn lockdep_file_takes_the_report() {
    let bin = build("ab_ba.c", "file");
    let dir = common::tmp_subdir("lockdep-file").join(format!("run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pattern = dir.join("ld-%p.txt");
    let pattern = pattern.to_str().unwrap();
    let env = [("KLOCK_LOCKDEP", "1"), ("KLOCK_LOCKDEP_FILE", pattern)];
    let mut cmd = command(&bin, &env);
    let spawned = common::spawn(&mut cmd, Mode::Preload, None);
    let pid = spawned.pid();
    let mut r = spawned.wait_timeout(RUN_TIMEOUT);
    r.desc = with_env(&r.desc, &env);
    if let Err(e) = check_ran("ab_ba.c", Mode::Preload, &r) {
        panic!("{e}");
    }
    assert!(
        report_count(&r.stderr) == 0,
        "{}",
        r.report("ab_ba.c with KLOCK_LOCKDEP_FILE: the report went to stderr")
    );
    let listing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let want = dir.join(format!("ld-{pid}.txt"));
    let text = std::fs::read_to_string(&want).unwrap_or_else(|e| {
        panic!(
            "{}",
            r.report(&format!(
                "ab_ba.c with KLOCK_LOCKDEP_FILE={pattern}: no {} ({e}); the directory \
                 holds {listing:?}",
                want.display()
            ))
        )
    });
    assert!(
        listing.len() == 1
            && report_count(&text) == 1
            && text.contains(END_OF_REPORT)
            && text.contains("lock_a")
            && text.contains("lock_b"),
        "{}\n--- {} ---\n{text}",
        r.report(&format!(
            "ab_ba.c with KLOCK_LOCKDEP_FILE={pattern}: expected one file holding one \
             complete report naming lock_a and lock_b; the directory holds {listing:?}"
        )),
        want.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&bin);
}

/// `klockrun --lockdep PROG` turns validation on (`KLOCK_LOCKDEP=1`),
/// `--lockdep=abort` as `KLOCK_LOCKDEP=abort` (the report, then SIGABRT), and
/// `--lockdep-file FILE` puts the report in FILE.
#[test]
fn klockrun_lockdep_option() {
    use std::os::unix::process::ExitStatusExt;
    let bin = build("ab_ba.c", "klockrun");
    let so = common::preload_so().to_str().unwrap();
    for (opt, abort) in [("--lockdep", false), ("--lockdep=abort", true)] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_klockrun"));
        cmd.arg(opt)
            .arg(&bin)
            .env_remove("KLOCK_LOCKDEP")
            .env_remove("KLOCK_LOCKDEP_FILE")
            .env_remove("KLOCK_RWLOCK_POLICY")
            .env("KLOCK_PRELOAD_LIB", so);
        // klockrun sets LD_PRELOAD itself: run it "plain".
        let r = common::run(&mut cmd, Mode::Plain, RUN_TIMEOUT);
        let what = format!("klockrun {opt} ab_ba");
        let ended_right = if abort {
            !r.timed_out && r.status.and_then(|s| s.signal()) == Some(SIGABRT)
        } else {
            r.success() && r.stdout.contains("PASS")
        };
        assert!(
            ended_right,
            "{}",
            r.report(&format!(
                "{what}: expected {}",
                if abort {
                    "death by SIGABRT"
                } else {
                    "exit 0 with PASS"
                }
            ))
        );
        assert!(
            report_count(&r.stderr) == 1 && r.stderr.contains(END_OF_REPORT),
            "{}",
            r.report(&format!("{what}: expected one complete lockdep report"))
        );
    }

    // --lockdep-file FILE implies --lockdep; %p is PROG's pid, which is
    // klockrun's (it execs PROG).
    let dir = common::tmp_subdir("lockdep-file").join(format!("klockrun-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pattern = dir.join("k-%p.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_klockrun"));
    cmd.arg("--lockdep-file")
        .arg(&pattern)
        .arg(&bin)
        .env_remove("KLOCK_LOCKDEP")
        .env_remove("KLOCK_LOCKDEP_FILE")
        .env_remove("KLOCK_RWLOCK_POLICY")
        .env("KLOCK_PRELOAD_LIB", so);
    let spawned = common::spawn(&mut cmd, Mode::Plain, None);
    let pid = spawned.pid();
    let r = spawned.wait_timeout(RUN_TIMEOUT);
    let what = format!("klockrun --lockdep-file {} ab_ba", pattern.display());
    assert!(
        r.success() && r.stdout.contains("PASS") && report_count(&r.stderr) == 0,
        "{}",
        r.report(&format!(
            "{what}: expected exit 0 with PASS and no report on stderr"
        ))
    );
    let file = dir.join(format!("k-{pid}.txt"));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        report_count(&text) == 1 && text.contains(END_OF_REPORT),
        "{}\n--- {} ---\n{text}",
        r.report(&format!(
            "{what}: expected one complete report in {}",
            file.display()
        )),
        file.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&bin);
}

/// `KLOCK_LOCKDEP_FILE` naming a symbolic link: not followed (its target is
/// unchanged); the report goes to stderr with a line naming the variable.
#[test]
fn lockdep_file_symlink_is_refused() {
    let bin = build("ab_ba.c", "symlink");
    let dir = common::tmp_subdir("lockdep-file").join(format!("link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("target.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    let link = dir.join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let link_s = link.to_str().unwrap();
    let r = run_preloaded(
        &bin,
        &[("KLOCK_LOCKDEP", "1"), ("KLOCK_LOCKDEP_FILE", link_s)],
    );
    if let Err(e) = check_ran("ab_ba.c", Mode::Preload, &r) {
        panic!("{e}");
    }
    let after = std::fs::read_to_string(&target).unwrap_or_default();
    assert!(
        after == "untouched\n",
        "{}\n--- target now ---\n{after}",
        r.report("ab_ba.c with KLOCK_LOCKDEP_FILE=<symlink>: the link was followed")
    );
    assert!(
        report_count(&r.stderr) == 1
            && r.stderr.contains(END_OF_REPORT)
            && r.stderr
                .lines()
                .any(|l| l.contains("KLOCK_LOCKDEP_FILE") && !l.contains(REPORT)),
        "{}",
        r.report(
            "ab_ba.c with KLOCK_LOCKDEP_FILE=<symlink>: expected the report on stderr, \
             with a line naming KLOCK_LOCKDEP_FILE"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&bin);
}

/// A program added to tests/lockdep must also get a test above (and vice
/// versa).
#[test]
fn every_program_has_a_test() {
    let mut found: Vec<String> = std::fs::read_dir(source_dir())
        .expect("read tests/lockdep")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| is_program(p))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<String> = LISTED.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "tests/lockdep and the lockdep_programs! list in tests/lockdep.rs differ"
    );
}

/// The report parser of this driver, on a report in the engine's format
/// between phase markers.
#[test]
fn report_parser_reads_phases_reports_and_stacks() {
    let stderr = "klock-preload: active
lockdep-test: a then b
lockdep-test: b then a
klock lockdep: possible deadlock (lock-order cycle of 2 locks) in pid 7 (/x/ab_ba)
  L1  0x55d0c0 lock_a, first taken nested at take_b_then_a+0x2c  (/x/ab_ba)
  L2  0x55d100 lock_b, first taken nested at take_a_then_b+0x2c  (/x/ab_ba)
  L1 -> L2: thread 11 took L2 (exclusive) while holding L1 (exclusive), first at:
      #0 take_a_then_b+0x2c  (/x/ab_ba)
      #1 start_thread+0x9c  (/lib/libc.so.6)
  L2 -> L1: thread 12 took L1 (exclusive) while holding L2 (exclusive), first at:
      #0 take_b_then_a+0x2c  (/x/ab_ba)
klock lockdep: end of report
lockdep-test: done
";
    let found = reports(stderr);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, Some("b then a"));
    assert_eq!(found[0].1.len(), 9);
    let stack: Vec<&str> = edge_stacks(&found[0].1).map(str::trim).collect();
    assert_eq!(
        stack,
        [
            "#0 take_a_then_b+0x2c  (/x/ab_ba)",
            "#1 start_thread+0x9c  (/lib/libc.so.6)",
            "#0 take_b_then_a+0x2c  (/x/ab_ba)"
        ]
    );
    assert_eq!(report_count(stderr), 1);
    // A report cut off (no end line) still counts, and has no end line.
    let cut = reports("lockdep-test: x\nklock lockdep: possible deadlock (...)\n  L1 ...\n");
    assert_eq!(cut.len(), 1);
    assert!(!cut[0].1.last().unwrap().contains(END_OF_REPORT));
}
