//! `klockrun`: exit status pass-through, usage errors, the environment it sets, and
//! (through the interposer) the KLOCK_STATS report of small C programs: to stderr,
//! to KLOCK_STATS_FILE, after `_exit`; when the program closes stderr or reuses fd
//! 2 (also xz and sort, which close it) or closes every descriptor (a file in
//! TMPDIR); static locks named; condvar waits apart from lock waits.

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
    let h = text(&o.stdout);
    assert!(h.contains("--stats-file FILE"), "{h}");
    assert!(
        h.contains("even if PROG closes it") && h.contains("$TMPDIR/klock-stats-PID.txt"),
        "where the report goes when stderr is closed: {h}"
    );
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
    compile_c(dir, "contended", PROG, &[])
}

/// Compiles the C source `text` into `dir/name` with `extra` flags; `None` (test
/// skipped, said on stderr) without a C compiler.
fn compile_c(dir: &Path, name: &str, text: &str, extra: &[&str]) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap();
    let exe = dir.join(name);
    match Command::new("cc")
        .args(["-O1", "-pthread"])
        .args(extra)
        .arg("-o")
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
    // The hot lock is PROG's `static pthread_mutex_t m`: named, not an address.
    let row = r
        .lines()
        .find(|l| l.trim_start().starts_with("1  m "))
        .unwrap_or_else(|| panic!("no lock row named m: {r}"));
    assert!(row.contains("mutex"), "{row}");
    // The hot mutex: main 1, contender 1, hammers 4 x 20,000.
    assert!(row.contains("80,002"), "{row}");
    if level2 {
        assert!(r.contains("klock-stats: #1 m (0x"), "{r}");
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

/// A program with locks of every placement and an idle condvar: `named_lock`
/// (static: in `.symtab` only), `global_lock` (global: also in `.dynsym` with
/// `-rdynamic`), `wrapped.inner` (8 bytes into a static struct), a heap mutex
/// (its address printed as `heap 0x...`), and `idle_cv`, on which a thread waits
/// by design for at least 300 ms while no lock is contended for long. Then, by
/// `argv[1]`: `close` closes stderr (as xz and sort do at exit); `reuse FILE`
/// closes fd 2 and opens FILE, which gets fd 2, for its data; `closeall` closes
/// every descriptor from 1 up; anything else: nothing. Exits with `exit(0)`.
const REPORT_PROG: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { long pad; pthread_mutex_t inner; } wrapped = { 0, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static atomic_int waiting, woken;
static void *idler(void *arg) {
    (void)arg;
    pthread_mutex_lock(&cv_lock);
    atomic_store(&waiting, 1);
    while (!atomic_load(&woken)) pthread_cond_wait(&idle_cv, &cv_lock);
    pthread_mutex_unlock(&cv_lock);
    return NULL;
}
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t t;
    pthread_create(&t, NULL, idler, NULL);
    while (!atomic_load(&waiting)) usleep(1000);
    pthread_mutex_lock(&cv_lock); /* the idler is in its wait now */
    pthread_mutex_unlock(&cv_lock);
    usleep(300000);
    pthread_mutex_lock(&cv_lock);
    atomic_store(&woken, 1);
    pthread_cond_signal(&idle_cv);
    pthread_mutex_unlock(&cv_lock);
    pthread_join(t, NULL);
    pthread_mutex_t *heap_lock = malloc(sizeof *heap_lock);
    pthread_mutex_init(heap_lock, NULL);
    pthread_mutex_t *locks[] = { &named_lock, &global_lock, &wrapped.inner, heap_lock };
    for (int i = 0; i < 4; i++)
        for (int k = 0; k <= i; k++) {
            pthread_mutex_lock(locks[i]);
            pthread_mutex_unlock(locks[i]);
        }
    printf("heap %p\n", (void *)heap_lock);
    fflush(stdout);
    if (strcmp(mode, "close") == 0) {
        fclose(stderr);
    } else if (strcmp(mode, "reuse") == 0 && argc > 2) {
        close(2);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != 2) return 4;
        if (write(fd, "DATA\n", 5) != 5) return 5;
    } else if (strcmp(mode, "closeall") == 0) {
        for (int fd = 1; fd < 65536; fd++) close(fd);
    }
    exit(0);
}
"#;

/// `klockrun --stats [extra...] exe args...` with TMPDIR set to `tmp`; stdout and
/// stderr captured.
fn run_report_prog(exe: &Path, args: &[&str], tmp: &Path) -> Output {
    klockrun()
        .arg("--stats")
        .arg(exe)
        .args(args)
        .env_remove("LD_PRELOAD")
        .env_remove("KLOCK_STATS")
        .env_remove("KLOCK_STATS_FILE")
        .env_remove("KLOCK_PRELOAD_LIB")
        .env("TMPDIR", tmp)
        .output()
        .expect("klockrun runs")
}

/// A duration as the report prints it (`850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`),
/// in ns.
fn parse_ns(s: &str) -> Option<f64> {
    let (v, unit) = s.trim().split_once(' ')?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(v.parse::<f64>().ok()? * scale)
}

/// The duration after `key` in `line` (`... lock wait 12.3 us | ...`), in ns.
fn ns_after(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    let mut words = rest.split_whitespace();
    parse_ns(&format!("{} {}", words.next()?, words.next()?))
}

/// The report's table row (locks' or condvars') whose label is `label`.
fn row_of<'a>(r: &'a str, label: &str) -> Option<&'a str> {
    r.lines().find(|l| {
        let mut w = l.split_whitespace();
        w.next().is_some_and(|n| n.parse::<u32>().is_ok()) && w.next() == Some(label)
    })
}

/// The report must not vanish when the program closes stderr before exit (as xz
/// and sort do), nor corrupt the file a program opened on the reused fd 2: it goes
/// to the stderr the program started with.
#[test]
fn stats_report_survives_a_closed_stderr() {
    let d = scratch("closed-stderr");
    let Some(exe) = compile_c(&d, "report", REPORT_PROG, &[]) else {
        return;
    };
    let o = run_report_prog(&exe, &["close"], &d);
    assert!(o.status.success(), "{o:?}");
    let e = text(&o.stderr);
    assert_eq!(
        e.matches("locks seen").count(),
        1,
        "one report on stderr: {e}"
    );
    let data = d.join("data.txt");
    let o = run_report_prog(&exe, &["reuse", data.to_str().unwrap()], &d);
    assert!(o.status.success(), "{o:?}");
    let e = text(&o.stderr);
    assert_eq!(
        e.matches("locks seen").count(),
        1,
        "one report on stderr: {e}"
    );
    assert_eq!(
        std::fs::read_to_string(&data).unwrap(),
        "DATA\n",
        "the program's file on fd 2 holds only its data"
    );
    let files: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("klock-stats-"))
        .collect();
    assert!(
        files.is_empty(),
        "no fallback file when stderr works: {files:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// With every descriptor closed (the original stderr and its saved copy), the
/// report goes to `$TMPDIR/klock-stats-PID.txt`.
#[test]
fn stats_report_falls_back_to_a_file_in_tmpdir() {
    let d = scratch("closeall");
    let Some(exe) = compile_c(&d, "report", REPORT_PROG, &[]) else {
        return;
    };
    let child = klockrun()
        .args(["--stats"])
        .arg(&exe)
        .arg("closeall")
        .env_remove("LD_PRELOAD")
        .env_remove("KLOCK_STATS")
        .env_remove("KLOCK_STATS_FILE")
        .env_remove("KLOCK_PRELOAD_LIB")
        .env("TMPDIR", &d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id(); // klockrun execs: the program keeps this pid
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(!text(&o.stderr).contains("locks seen"), "{o:?}");
    let f = d.join(format!("klock-stats-{pid}.txt"));
    let r = std::fs::read_to_string(&f)
        .unwrap_or_else(|e| panic!("no report in {}: {e}; {o:?}", f.display()));
    assert_eq!(r.matches("locks seen").count(), 1, "{r}");
    assert!(r.contains(&format!("(pid {pid})")), "{r}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "the fallback file is private: {mode:o}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A static lock shows its variable's name (`+0xoff` inside a larger object),
/// from `.symtab`, or from `.dynsym` in a stripped `-rdynamic` program for a
/// global one; a heap lock keeps its address.
#[test]
fn stats_report_names_static_locks() {
    let d = scratch("names");
    let Some(exe) = compile_c(&d, "report", REPORT_PROG, &[]) else {
        return;
    };
    let o = run_report_prog(&exe, &[], &d);
    assert!(o.status.success(), "{o:?}");
    let r = text(&o.stderr);
    for (name, acquired) in [
        ("named_lock", " 1 "),
        ("global_lock", " 2 "),
        ("wrapped+0x8", " 3 "),
    ] {
        let row = row_of(&r, name).unwrap_or_else(|| panic!("no row {name}: {r}"));
        assert!(
            row.contains(acquired),
            "{name} acquired{acquired}times: {row}"
        );
    }
    let heap = text(&o.stdout);
    let heap = heap.trim().strip_prefix("heap ").expect("heap 0x...");
    let row = row_of(&r, heap).unwrap_or_else(|| panic!("no row {heap}: {r}"));
    assert!(row.contains(" 4 "), "{row}");
    assert!(row_of(&r, "idle_cv").is_some(), "the condvar too: {r}");
    // Stripped: only the exported global keeps its name.
    let Some(exe) = compile_c(&d, "stripped", REPORT_PROG, &["-rdynamic", "-s"]) else {
        return;
    };
    let o = run_report_prog(&exe, &[], &d);
    assert!(o.status.success(), "{o:?}");
    let r = text(&o.stderr);
    assert!(row_of(&r, "global_lock").is_some(), "from .dynsym: {r}");
    assert!(!r.contains("named_lock") && !r.contains("wrapped"), "{r}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A thread idling on a condvar (300 ms, by design) is not lock contention: the
/// header's lock wait leaves it out, a separate condvar wait and table report it.
#[test]
fn stats_report_keeps_condvar_waits_apart() {
    let d = scratch("condvar");
    let Some(exe) = compile_c(&d, "report", REPORT_PROG, &[]) else {
        return;
    };
    let o = run_report_prog(&exe, &[], &d);
    assert!(o.status.success(), "{o:?}");
    let r = text(&o.stderr);
    let head = r.lines().next().unwrap();
    let lock_wait = ns_after(head, "| lock wait ").unwrap_or_else(|| panic!("{r}"));
    let cond_wait = ns_after(head, "| condvar wait ").unwrap_or_else(|| panic!("{r}"));
    assert!(
        cond_wait >= 300e6,
        "the idle wait is a condvar wait: {head}"
    );
    // No lock is held for long: only brief hand-overs can make a lock wait.
    assert!(lock_wait < 300e6, "the idle wait is not lock wait: {head}");
    assert!(head.contains(" waits on 1 condvars: "), "{head}");
    let conds = r
        .find("condvars, by wait time")
        .unwrap_or_else(|| panic!("a condvar table: {r}"));
    let row = row_of(&r[conds..], "idle_cv").unwrap_or_else(|| panic!("{r}"));
    let tot: Vec<&str> = row.split_whitespace().collect();
    let wait_tot = parse_ns(&format!("{} {}", tot[4], tot[5])).unwrap();
    assert!(wait_tot >= 300e6, "{row}");
    let locks = &r[..conds];
    assert!(
        row_of(locks, "idle_cv").is_none(),
        "a condvar is not in the lock table: {r}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Real programs that close stderr before exit: `xz -T2` (the issue's case) and
/// `sort --parallel=2`. Their report reaches the stderr they started with.
#[test]
fn stats_report_of_xz_and_sort_which_close_stderr() {
    let d = scratch("xz-sort");
    let input = d.join("input.txt");
    let mut text_in = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..60_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text_in.push_str(&format!("{:016x} line {i} {}\n", x, x % 977));
    }
    std::fs::write(&input, &text_in).unwrap();
    let mut progs = vec![(
        "sort",
        vec!["--parallel=2".to_string(), input.to_str().unwrap().into()],
    )];
    if common::require_program("stats_report_of_xz_and_sort", "xz", "xz-utils").is_some() {
        progs.push((
            "xz",
            vec!["-T2".into(), "-c".into(), input.to_str().unwrap().into()],
        ));
    }
    for (prog, args) in progs {
        let o = klockrun()
            .arg("--stats")
            .arg(prog)
            .args(&args)
            .env_remove("LD_PRELOAD")
            .env_remove("KLOCK_STATS")
            .env_remove("KLOCK_STATS_FILE")
            .env_remove("KLOCK_PRELOAD_LIB")
            .env("TMPDIR", &d)
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{prog}: {o:?}");
        let e = text(&o.stderr);
        assert_eq!(
            e.matches("locks seen").count(),
            1,
            "{prog}: one report on stderr: {e}"
        );
        assert!(e.contains(&format!("klock-stats: {prog} (pid ")), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
