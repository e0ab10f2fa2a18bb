//! `klockrun`: exit status pass-through, usage errors, the environment it sets, and
//! (through the interposer) the KLOCK_STATS report of a small contended C program,
//! to stderr, to KLOCK_STATS_FILE, and after `_exit`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn klockrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_klockrun"))
}

fn run(args: &[&str]) -> Output {
    klockrun()
        .args(args)
        .env_remove("LD_PRELOAD")
        .env_remove("KLOCK_STATS")
        .env_remove("KLOCK_STATS_FILE")
        .env_remove("KLOCK_PRELOAD_LIB")
        .output()
        .expect("klockrun runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh scratch directory under the system temp dir.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("klockrun-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn exit_status_passes_through() {
    assert_eq!(run(&["sh", "-c", "exit 7"]).status.code(), Some(7));
    assert_eq!(run(&["--", "sh", "-c", "exit 0"]).status.code(), Some(0));
    assert_eq!(run(&["true"]).status.code(), Some(0));
    // A signal death stays a signal death (exec, not a child).
    let o = run(&["sh", "-c", "kill -TERM $$"]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{o:?}");
}

#[test]
fn usage_errors_exit_2_and_list_what_is_allowed() {
    let o = run(&["--bogus", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("unknown option '--bogus'") && e.contains("usage: klockrun"),
        "{e}"
    );
    let o = run(&["--mutex", "mcs", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("allowed are klock, nospin"));
    let o = run(&["--spin=ticket", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("tas, unfair, pv, pvbase, native"));
    let o = run(&["--stats=9", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--stats"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no program given"));
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("--stats-file FILE"));
}

#[test]
fn missing_program_exits_127() {
    let o = run(&["/nonexistent/klock-no-such-program"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(text(&o.stderr).contains("command not found"));
    let o = klockrun()
        .env("KLOCK_PRELOAD_LIB", "/nonexistent/lib.so")
        .arg("true")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert!(text(&o.stderr).contains("KLOCK_PRELOAD_LIB"));
}

#[test]
fn sets_ld_preload_and_the_klock_variables() {
    let o = run(&["sh", "-c", "echo $LD_PRELOAD"]);
    assert!(o.status.success(), "{o:?}");
    let lib = text(&o.stdout).trim().to_string();
    assert!(lib.ends_with("/libklock_preload.so"), "{lib}");
    assert!(Path::new(&lib).is_file(), "{lib}");
    // An existing LD_PRELOAD is kept, after ours.
    let o = klockrun()
        .env("LD_PRELOAD", &lib)
        .args(["sh", "-c", "echo $LD_PRELOAD"])
        .output()
        .unwrap();
    assert_eq!(text(&o.stdout).trim(), lib, "not added twice");
    let o = run(&[
        "--stats=2",
        "--mutex",
        "nospin",
        "--rwlock=klock",
        "--spin",
        "pv",
        "sh",
        "-c",
        "echo $KLOCK_STATS $KLOCK_MUTEX $KLOCK_RWLOCK $KLOCK_SPIN",
    ]);
    assert_eq!(text(&o.stdout).trim(), "2 nospin klock pv");
    // KLOCK_PRELOAD_LIB wins over the library next to klockrun.
    let d = scratch("lib");
    let copy = d.join("libklock_preload.so");
    std::fs::copy(&lib, &copy).unwrap();
    let o = klockrun()
        .env("KLOCK_PRELOAD_LIB", &copy)
        .env_remove("LD_PRELOAD")
        .args(["sh", "-c", "echo $LD_PRELOAD"])
        .output()
        .unwrap();
    assert_eq!(text(&o.stdout).trim(), copy.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&d);
}

/// A tiny pthread program: a forced contention (main holds the mutex while a
/// `contender` thread tries it), then four `hammer` threads; exits with `exit` or,
/// given the argument `_exit`, with `_exit`; given `vfork`, first runs a `vfork`
/// child that leaves through `_exit` (it shares the parent's counters).
const PROG: &str = r#"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int ready;
static long counter;
static void *contender(void *arg) {
    (void)arg;
    atomic_store(&ready, 1);
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    return NULL;
}
static void *hammer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t t[4];
    pthread_mutex_lock(&m);
    pthread_create(&t[0], NULL, contender, NULL);
    while (!atomic_load(&ready)) usleep(1000);
    usleep(30000);
    pthread_mutex_unlock(&m);
    pthread_join(t[0], NULL);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, hammer, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    if (counter != 80001) return 3;
    if (argc > 1 && strcmp(argv[1], "_exit") == 0) _exit(0);
    if (argc > 1 && strcmp(argv[1], "vfork") == 0) {
        pid_t p = vfork();
        if (p == 0) _exit(0);
        int st;
        waitpid(p, &st, 0);
    }
    exit(0);
}
"#;

/// Compiles PROG into `dir`; `None` (test skipped, said on stderr) without a C compiler.
fn compile(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("contended.c");
    std::fs::write(&src, PROG).unwrap();
    let exe = dir.join("contended");
    match Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(exe),
        Ok(s) => panic!("cc failed: {s}"),
        Err(e) => {
            // Under .ci/run (KLOCK_CI=1) or a CI service a skip is a failure.
            assert!(!common::in_ci(), "no C compiler ({e}): install gcc");
            eprintln!("SKIPPED: no C compiler ({e}); under .ci/run this is a failure");
            None
        }
    }
}

/// Checks one report of PROG.
fn check_report(r: &str, level2: bool) {
    assert_eq!(r.matches("locks seen").count(), 1, "one report: {r}");
    let head = r.lines().next().unwrap();
    assert!(
        head.starts_with("klock-stats: ") && head.contains("contended"),
        "{r}"
    );
    assert!(
        head.contains("80,0") || head.contains(" acquisitions"),
        "{r}"
    );
    assert!(r.contains("top "), "{r}");
    let row = r
        .lines()
        .find(|l| l.trim_start().starts_with("1  0x"))
        .unwrap_or_else(|| panic!("no lock row: {r}"));
    assert!(row.contains("mutex"), "{row}");
    // The hot mutex: main 1, contender 1, hammers 4 x 20,000.
    assert!(row.contains("80,002"), "{row}");
    if level2 {
        assert!(r.contains("first contended at:"), "{r}");
        assert!(
            r.contains("contender+") || r.contains("hammer+"),
            "the first contention's function: {r}"
        );
    } else {
        assert!(!r.contains("first contended at:"), "{r}");
    }
}

#[test]
fn stats_report_to_stderr_file_and_after_exit() {
    let d = scratch("stats");
    let Some(exe) = compile(&d) else { return };
    let exe = exe.to_str().unwrap();
    // Level 1 to stderr.
    let o = run(&["--stats", exe]);
    assert!(o.status.success(), "{o:?}");
    check_report(&text(&o.stderr), false);
    // Level 2 to a file (stderr stays clean).
    let f = d.join("report.txt");
    let fs = f.to_str().unwrap();
    let o = run(&["--stats=2", "--stats-file", fs, exe]);
    assert!(o.status.success(), "{o:?}");
    assert!(!text(&o.stderr).contains("klock-stats"), "{o:?}");
    check_report(&std::fs::read_to_string(&f).unwrap(), true);
    // After _exit (the interposer's _exit wrapper flushes); the file is truncated by
    // klockrun, so exactly one report.
    let o = run(&["--stats-file", fs, exe, "_exit"]);
    assert!(o.status.success(), "{o:?}");
    check_report(&std::fs::read_to_string(&f).unwrap(), false);
    // A vfork child's _exit reports nothing (it would report the parent's counters
    // and mark them flushed); the parent's report follows at exit.
    let child = klockrun()
        .args(["--stats-file", fs, exe, "vfork"])
        .env_remove("LD_PRELOAD")
        .env_remove("KLOCK_STATS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id(); // klockrun execs: the program keeps this pid
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let r = std::fs::read_to_string(&f).unwrap();
    check_report(&r, false);
    assert!(
        r.contains(&format!("(pid {pid})")),
        "the parent's report: {r}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
