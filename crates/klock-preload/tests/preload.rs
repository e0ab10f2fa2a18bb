//! The C/C++ test programs in `tests/c/` under the interposer.
//!
//! Every `*.c` / `*.cpp` file there is a self-checking program: it exits 0
//! and prints a `PASS` line on stdout on success, and exits non-zero with a
//! `FAIL ...` message on stderr otherwise. Each test here compiles one of
//! them (`gcc`/`g++ -O2 -Wall -Wextra -Werror -pthread`, C++ with
//! `-std=c++17`; binaries under `CARGO_TARGET_TMPDIR`) and runs it twice
//! under a 60 s watchdog: plain (glibc's own locks, which validates the
//! program itself) and with `LD_PRELOAD=<target>/<profile>/libklock_preload.so`.
//!
//! Load-check contract (see `tests/common/mod.rs`): preloaded runs set
//! `KLOCK_PRELOAD_CHECK=1`, and the interposer must then print the line
//! `klock-preload: active` to stderr when it is loaded. A preloaded run
//! without that line fails, so a silently not-loaded interposer cannot pass.
//!
//! The programs that leave through `_exit` or through `exit` with threads
//! blocked (`STATS_PROGRAMS`) get a third, preloaded run with
//! `KLOCK_STATS=1` and `KLOCK_STATS_FILE`, and must leave a statistics
//! report (docs/preload.md, "Statistics").
//!
//! Other interposer variables (`KLOCK_MUTEX`, `KLOCK_RWLOCK`, `KLOCK_SPIN`)
//! are passed through from the environment, so the whole suite can be run
//! against a variant, e.g. `KLOCK_MUTEX=nospin cargo test -p klock-preload`.
//!
//! A program that cannot run its test in this environment (e.g. `cond_pp.c`
//! without the privilege for SCHED_FIFO) prints a `SKIP: <why>` line and exits
//! with status 77 (`skip_test` in `tests/c/common.h`). The test then prints a
//! visible SKIPPED note and passes, except under `.ci/run` (`KLOCK_CI=1`) or
//! with `CI` set, where a skip is a failure like every other skip in these
//! tests. Both runs must skip alike: a program that skips in one mode only
//! fails.
//!
//! A missing gcc/g++ is a failure (CI installs them; see `tests/packages.txt`).

mod common;

use common::{Mode, RUN_TIMEOUT};
use std::path::{Path, PathBuf};
use std::process::Command;

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("c")
}

fn is_program(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "cpp"))
}

/// Exit status of a program that could not run its test here (`SKIP_EXIT`
/// in `tests/c/common.h`); it prints a `SKIP: <why>` line instead of PASS.
const SKIP_EXIT: i32 = 77;

/// The `SKIP:` line of a run that ended with [`SKIP_EXIT`], if it did.
fn skip_reason(r: &common::RunResult) -> Option<String> {
    if r.timed_out || r.status.and_then(|s| s.code()) != Some(SKIP_EXIT) {
        return None;
    }
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix("SKIP:"))
        .map(|why| why.trim().to_string())
}

/// Compiles `tests/c/<file>` and runs it plain and preloaded.
fn check_program(file: &str) {
    let src = source_dir().join(file);
    assert!(src.is_file(), "{} is missing", src.display());
    let stem = Path::new(file).file_stem().unwrap().to_string_lossy();
    let bin = common::tmp_subdir("bin").join(format!("{stem}-{}", std::process::id()));
    if let Err(e) = common::compile(&src, &bin, &[]) {
        panic!("{file}: {e}");
    }

    let mut failures = Vec::new();
    let mut skips = Vec::new();
    for mode in Mode::BOTH {
        let r = common::run(&mut Command::new(&bin), mode, RUN_TIMEOUT);
        if let Some(why) = skip_reason(&r) {
            skips.push((mode, why, r));
            continue;
        }
        let problem = if !r.success() {
            Some(match mode {
                Mode::Plain => "failed WITHOUT the interposer (plain glibc): the test \
                                program itself is wrong"
                    .to_string(),
                Mode::Preload | Mode::Lockdep => "failed under the interposer".to_string(),
            })
        } else if !r.stdout.contains("PASS") {
            Some(format!(
                "exited 0 without printing its PASS line ({})",
                mode.name()
            ))
        } else {
            mode.check_marker(&r.stderr).err()
        };
        if let Some(p) = problem {
            failures.push(r.report(&format!("{file}: {p}")));
        }
    }
    if skips.len() == Mode::BOTH.len() {
        let _ = std::fs::remove_file(&bin);
        let (_, why, r) = &skips[0];
        if common::in_ci() {
            panic!(
                "{}",
                r.report(&format!(
                    "{file}: skipped ({why}); under .ci/run (KLOCK_CI=1) or with CI set \
                     a skipped test is a failure"
                ))
            );
        }
        common::note(&format!(
            "SKIPPED {file}: {why} (under .ci/run or with CI set this is a failure)"
        ));
        return;
    }
    for (mode, why, r) in &skips {
        failures.push(r.report(&format!(
            "{file}: skipped in the {} run ({why}) but not in the other: the \
             two runs must agree",
            mode.name()
        )));
    }
    if STATS_PROGRAMS.contains(&file)
        && let Err(e) = check_stats_flush(file, &bin)
    {
        failures.push(e);
    }
    if let Some(last) = failures.last_mut() {
        last.push_str(&format!("\n(binary kept for debugging: {})", bin.display()));
    } else {
        let _ = std::fs::remove_file(&bin);
    }
    common::finish(file, failures);
}

/// Programs that leave through `_exit` (from a thread) or `exit` with threads
/// blocked in locks: the interposer's statistics (`KLOCK_STATS=1`, see
/// docs/preload.md) must still be written on these paths.
const STATS_PROGRAMS: &[&str] = &["exit_from_thread.c", "exit_while_blocked.c"];

/// One more preloaded run with `KLOCK_STATS=1` and `KLOCK_STATS_FILE`: the
/// program must pass as before, and a report with a positive acquisition
/// count must have been written (`klock-stats: <exe> (pid N) | ... | <n>
/// acquisitions, ...`).
fn check_stats_flush(file: &str, bin: &Path) -> Result<(), String> {
    let dir = common::tmp_subdir("stats");
    let prefix = format!(
        "{}-{}-",
        Path::new(file).file_stem().unwrap().to_string_lossy(),
        std::process::id()
    );
    let mut cmd = Command::new(bin);
    cmd.env("KLOCK_STATS", "1")
        .env("KLOCK_STATS_FILE", dir.join(format!("{prefix}%p.txt")));
    let r = common::run(&mut cmd, Mode::Preload, RUN_TIMEOUT);
    let what = format!(
        "{file} with KLOCK_STATS=1 KLOCK_STATS_FILE={}/{prefix}%p.txt",
        dir.display()
    );
    if !r.success() || !r.stdout.contains("PASS") {
        return Err(r.report(&format!("{what}: failed")));
    }
    let reports: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .map_err(|e| format!("read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            (p, text)
        })
        .collect();
    for (p, _) in &reports {
        let _ = std::fs::remove_file(p);
    }
    let acquisitions = |text: &str| -> Option<u64> {
        let first = text.lines().find(|l| l.starts_with("klock-stats:"))?;
        let before = &first[..first.find(" acquisitions")?];
        let n = before.rsplit(['|', ' ']).find(|t| !t.is_empty())?;
        n.replace(',', "").parse().ok()
    };
    match reports.as_slice() {
        [] => Err(r.report(&format!(
            "{what}: no statistics report was written (exit path not flushed?)"
        ))),
        [(p, text)] => match acquisitions(text) {
            Some(n) if n > 0 => Ok(()),
            _ => Err(r.report(&format!(
                "{what}: report {} has no positive acquisition count:\n{}",
                p.display(),
                common::tail(text, 10)
            ))),
        },
        many => Err(r.report(&format!(
            "{what}: {} reports for one process: {:?}",
            many.len(),
            many.iter().map(|(p, _)| p).collect::<Vec<_>>()
        ))),
    }
}

macro_rules! c_programs {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_program($file);
            }
        )*

        /// Every program in tests/c, as listed above.
        const LISTED: &[&str] = &[$($file),*];
    };
}

c_programs! {
    c11_threads => "c11_threads.c",
    cancel_condwait => "cancel_condwait.c",
    cond_basic => "cond_basic.c",
    cond_pi => "cond_pi.c",
    cond_pp => "cond_pp.c",
    cond_pshared => "cond_pshared.c",
    cond_robust => "cond_robust.c",
    cxx_sync => "cxx_sync.cpp",
    destroy_after_broadcast => "destroy_after_broadcast.c",
    exit_from_thread => "exit_from_thread.c",
    exit_while_blocked => "exit_while_blocked.c",
    fork => "fork.c",
    mutex_attrs => "mutex_attrs.c",
    mutex_types => "mutex_types.c",
    nonowner_unlock => "nonowner_unlock.c",
    rwlock => "rwlock.c",
    rwlock_kinds => "rwlock_kinds.c",
    rwlock_reader_wait => "rwlock_reader_wait.c",
    single_threaded => "single_threaded.c",
    small_stack => "small_stack.c",
    spin => "spin.c",
    spin_entry => "spin_entry.c",
    timed => "timed.c",
}

/// `pthread_spin_lock`/`unlock` are bound once per process (`spin::entry`
/// in the interposer): the ungated pair for glibc's protocol without
/// statistics, the gated pair otherwise. Under every `KLOCK_SPIN` variant
/// and with statistics, with lazy binding and with `-z now` (the resolvers
/// then run before the C library can `getenv`, and read
/// `/proc/self/environ`), the counter stays exact and no configuration is
/// overridden by an entry point bound for another (the interposer's
/// warning "bound for tas").
#[test]
fn spin_entry_points_follow_the_configuration() {
    let src = source_dir().join("spin_entry.c");
    for (link, flags) in [("lazy", &[][..]), ("now", &["-Wl,-z,now"][..])] {
        let bin =
            common::tmp_subdir("bin").join(format!("spin_entry-{link}-{}", std::process::id()));
        if let Err(e) = common::compile(&src, &bin, flags) {
            panic!("spin_entry.c ({link}): {e}");
        }
        for env in [
            &[][..],
            &[("KLOCK_SPIN", "tas")][..],
            &[("KLOCK_SPIN", "unfair")][..],
            &[("KLOCK_SPIN", "pv")][..],
            &[("KLOCK_STATS", "1"), ("KLOCK_STATS_FILE", "/dev/null")][..],
        ] {
            let mut cmd = Command::new(&bin);
            cmd.env_remove("KLOCK_SPIN").env_remove("KLOCK_STATS");
            for (k, v) in env {
                cmd.env(k, v);
            }
            let r = common::run(&mut cmd, Mode::Preload, RUN_TIMEOUT);
            assert!(
                r.success() && r.stdout.contains("PASS"),
                "spin_entry ({link}, {env:?}): {}\n{}",
                r.desc,
                r.stderr
            );
            assert!(
                !r.stderr.contains("bound for tas"),
                "spin_entry ({link}, {env:?}): {}",
                r.stderr
            );
        }
    }
}

/// A program added to tests/c must also get a test above (and vice versa).
#[test]
fn every_program_has_a_test() {
    let mut found: Vec<String> = std::fs::read_dir(source_dir())
        .expect("read tests/c")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| is_program(p))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<String> = LISTED.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "tests/c and the c_programs! list in tests/preload.rs differ"
    );
}
