//! Secure-execution safety of the interposer (docs/preload.md, "Security").
//!
//! - `setuid_program_ignores_klock_variables`: the interposer installed the
//!   way a system-wide install would make set-user-ID programs load it (a
//!   set-user-ID library in a trusted system directory, preloaded by bare
//!   name) and a set-user-ID-root probe (`tests/setuid/probe.c`) run by
//!   `nobody` with `KLOCK_STATS=2`, `KLOCK_STATS_FILE=<root-only dir>/x`,
//!   `KLOCK_LOCKDEP=abort`, `KLOCK_LOCKDEP_FILE=<root-only dir>/ld` (the
//!   probe takes two mutexes in both orders), `KLOCK_PRELOAD_CHECK=1` and
//!   invalid variant names. The probe checks that
//!   it runs with `AT_SECURE` and that the interposer serves its locks; the
//!   test checks that nothing was created in the root-only directory and that
//!   nothing klock-related reached stderr (no load-check line, no warnings).
//!   Needs root (it installs into the system library directory and makes a
//!   set-user-ID-root program) and `setpriv` or `runuser`; without them it
//!   prints why it could not run, and fails when `KLOCK_CI=1` (set by
//!   `.ci/run`). Installed files are removed whatever happens, even when the
//!   test process is killed: a cleaner process in a session of its own
//!   (`Cleaner`) removes them when the pipe from the test closes, which the
//!   kernel does when the test dies by any means.
//! - `setuid_files_removed_when_test_is_killed`: runs the test above as a
//!   child process, holds it while the set-user-ID library is installed
//!   (`KLOCK_SECURETEST_HOLD`), sends it SIGKILL, and fails unless the
//!   library and the set-user-ID probe disappear.
//! - `stats_file_symlink_is_refused`, `stats_file_mode_follows_umask`: an
//!   ordinary (non-secure) run: a symbolic link as `KLOCK_STATS_FILE` is not
//!   followed (its target stays unchanged, one line on stderr says why), and
//!   a new report file gets no more than `0666 & !umask`.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const SIGKILL: i32 = 9;
const NOBODY: u32 = 65534;

fn probe_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/setuid/probe.c")
}

/// Removes what a test installed or created, also when it panics.
#[derive(Default)]
struct Cleanup {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = fs::remove_file(f);
        }
        for d in &self.dirs {
            let _ = fs::remove_dir_all(d);
        }
    }
}

/// Removes paths when this test process ends, however it ends (SIGKILL, a
/// CI timeout, a panic): a shell in a session and process group of its own
/// (so a `timeout` that signals the test's group does not reach it), with
/// SIGHUP, SIGINT and SIGTERM ignored, blocks reading a pipe whose only
/// writer is this process; the kernel closes the pipe when this process
/// dies, the read returns, and the shell removes the paths. Started before
/// anything set-user-ID exists, so there is no window in which a kill
/// leaves one behind.
struct Cleaner {
    pipe: Option<ChildStdin>,
    child: Child,
}

impl Cleaner {
    fn start(paths: &[&Path]) -> Result<Cleaner, String> {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("trap '' HUP INT TERM; read _ignored; rm -rf -- \"$@\"")
            .arg("klock-securetest-cleaner")
            .args(paths)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // SAFETY: setsid(2) is async-signal-safe, the only call between fork
        // and exec here.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start the cleaner (/bin/sh): {e}"))?;
        Ok(Cleaner {
            pipe: child.stdin.take(),
            child,
        })
    }
}

impl Drop for Cleaner {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.child.wait();
    }
}

/// Removes set-user-ID libraries an earlier run of this test left in
/// `lib_dir` (only possible if its cleaner was killed too): ours by name,
/// from a process that no longer exists.
fn remove_stale_installs(lib_dir: &Path) {
    let Ok(entries) = fs::read_dir(lib_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(LIB_PREFIX))
            .and_then(|n| n.strip_suffix(".so"))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            common::note(&format!("removing a stale {}", e.path().display()));
            let _ = fs::remove_file(e.path());
        }
    }
}

/// The installed interposer's name, before the test's process id.
const LIB_PREFIX: &str = "libklock_preload_securetest_";

/// When set (to a file path), `setuid_program_ignores_klock_variables`
/// writes the installed library's path and the probe directory there, one
/// per line, once both exist, then waits to be killed: the state a kill
/// mid-probe finds. Used by `setuid_files_removed_when_test_is_killed`.
const HOLD_ENV: &str = "KLOCK_SECURETEST_HOLD";

struct Output {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

impl Output {
    fn describe(&self, what: &str) -> String {
        format!(
            "{what}\n  status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n---",
            match self.status {
                Some(s) => format!("{s}"),
                None => "HUNG (killed after 60 s)".to_string(),
            },
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `cmd` (stdin from /dev/null, outputs captured) under a 60 s watchdog.
fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {cmd:?}: {e}"));
    let pid = child.id() as i32;
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut e = String::new();
        let _ = err.read_to_string(&mut e);
        let _ = tx.send(e);
    });
    let mut stdout = String::new();
    let _ = out.read_to_string(&mut stdout);
    let (status, stderr) = match rx.recv_timeout(common::RUN_TIMEOUT) {
        Ok(e) => (child.wait().ok(), e),
        Err(_) => {
            common::send_signal(pid, SIGKILL);
            let _ = child.wait();
            (None, rx.recv().unwrap_or_default())
        }
    };
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Could not run the set-user-ID check here: a visible note, or a failure
/// under `KLOCK_CI=1`.
fn unavailable(why: &str) {
    let msg = format!(
        "setuid_program_ignores_klock_variables: NOT RUN: {why}. It needs root, \
         `setpriv` (util-linux) or `runuser`, a kernel/mount that honours the \
         set-user-ID bit, and a system library directory from `ld.so --help`."
    );
    if common::in_ci() {
        panic!("{msg} (under .ci/run, KLOCK_CI=1, or CI: this is a failure)");
    }
    common::note(&format!("{msg} (with KLOCK_CI=1 this is a failure)"));
}

/// The dynamic loader of this (dynamically linked) test binary.
fn dynamic_loader() -> Option<PathBuf> {
    let maps = fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = Path::new(p).file_name().and_then(|n| n.to_str());
            name.is_some_and(|n| n.starts_with("ld-") && n.contains(".so"))
        })
        .map(PathBuf::from)
}

/// The first existing "system search path" directory `ld.so --help` lists:
/// where a set-user-ID library may be preloaded from in secure mode.
fn system_lib_dir() -> Result<PathBuf, String> {
    let ldso = dynamic_loader().ok_or("no ld-*.so in /proc/self/maps")?;
    let out = Command::new(&ldso)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {} --help: {e}", ldso.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.trim().strip_suffix("(system search path)"))
        .map(|d| PathBuf::from(d.trim()))
        .find(|d| d.is_dir())
        .ok_or_else(|| format!("`{} --help` lists no system search path", ldso.display()))
}

fn no_new_privs() -> bool {
    fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("NoNewPrivs:") && l.trim_end().ends_with('1'))
    })
}

fn mounted_nosuid(p: &Path) -> bool {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: an all-zero statvfs is a valid out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a writable statvfs.
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_flag & libc::ST_NOSUID != 0
}

fn set_mode(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", p.display()));
}

#[test]
fn setuid_program_ignores_klock_variables() {
    if !common::is_root() {
        return unavailable("not running as root");
    }
    let Some(drop_to_nobody) = drop_to_nobody_command() else {
        return unavailable("neither `setpriv` nor `runuser` is on PATH");
    };
    if no_new_privs() {
        return unavailable("this process has no_new_privs set (set-user-ID is ignored)");
    }
    let lib_dir = match system_lib_dir() {
        Ok(d) => d,
        Err(e) => return unavailable(&e),
    };
    remove_stale_installs(&lib_dir);
    let base = std::env::temp_dir().join(format!("klock-securetest-{}", std::process::id()));
    let lib_name = format!("{LIB_PREFIX}{}.so", std::process::id());
    let installed = lib_dir.join(&lib_name);
    // Before anything set-user-ID exists.
    let cleaner = match Cleaner::start(&[&installed, &base]) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let mut cleanup = Cleanup::default();
    if let Err(e) = make_setuid_probe(&base, &mut cleanup) {
        return unavailable(&e);
    }
    install_setuid_interposer(&installed, &mut cleanup);
    if let Some(hold) = std::env::var_os(HOLD_ENV) {
        let text = format!("{}\n{}\n", installed.display(), base.display());
        fs::write(&hold, text).expect("write the hold file");
        loop {
            thread::sleep(Duration::from_secs(1));
        }
    }
    let root_only = base.join("root-only");
    let report = root_only.join("x");
    let o = run_probe_as_nobody(&drop_to_nobody, &lib_name, &base, &report);
    let what = format!(
        "set-user-ID-root probe run by nobody with LD_PRELOAD={lib_name} (installed in {}) \
         KLOCK_STATS=2 KLOCK_STATS_FILE={} KLOCK_LOCKDEP=abort KLOCK_PRELOAD_CHECK=1 \
         KLOCK_MUTEX=bogus ...",
        lib_dir.display(),
        report.display()
    );
    check_secure_run(&o, &lib_name, &root_only, &what);
    drop(cleanup);
    assert!(
        !installed.exists(),
        "{} was not removed",
        installed.display()
    );
    drop(cleaner);
}

/// Whether `p` exists with the set-user-ID bit.
fn is_setuid(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0)
}

/// Polls `done` every 20 ms; false if it is still not true after `watchdog`
/// (a bound that only catches a hang, not a timing requirement).
fn wait_for(watchdog: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > watchdog {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn setuid_files_removed_when_test_is_killed() {
    if std::env::var_os(HOLD_ENV).is_some() {
        return; // the child run: only the test it holds
    }
    if !common::is_root() {
        return unavailable("not running as root");
    }
    if common::find_on_path("setpriv").is_none() && common::find_on_path("runuser").is_none() {
        return unavailable("neither `setpriv` nor `runuser` is on PATH");
    }
    let hold = common::tmp_root().join(format!("securetest-hold-{}", std::process::id()));
    let log = hold.with_extension("log");
    let _ = fs::remove_file(&hold);
    let log_file = fs::File::create(&log).expect("create the log file");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "setuid_program_ignores_klock_variables",
            "--nocapture",
        ])
        .env(HOLD_ENV, &hold)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .expect("start the test binary");
    let held = wait_for(Duration::from_secs(120), || {
        fs::read_to_string(&hold).is_ok_and(|t| t.lines().count() == 2)
            || child.try_wait().ok().flatten().is_some()
    });
    let text = fs::read_to_string(&hold).unwrap_or_default();
    let _ = fs::remove_file(&hold);
    if !held || text.lines().count() != 2 {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "the held test run never reached the installed state ({}):\n--- its output ---\n{}",
            if held {
                "it exited"
            } else {
                "not within 120 s"
            },
            fs::read_to_string(&log).unwrap_or_default()
        );
    }
    let mut lines = text.lines();
    let installed = PathBuf::from(lines.next().unwrap());
    let probe = PathBuf::from(lines.next().unwrap()).join("probe");
    // The kill must find something to clean up, or this test proves nothing.
    assert!(
        is_setuid(&installed) && is_setuid(&probe),
        "the held run has not installed {} and {} set-user-ID",
        installed.display(),
        probe.display()
    );
    common::send_signal(child.id() as i32, SIGKILL);
    let _ = child.wait();
    let _ = fs::remove_file(&log);
    let removed = wait_for(Duration::from_secs(60), || {
        !installed.exists() && !probe.exists()
    });
    if !removed {
        // Do not leave them behind because this test failed.
        let _ = fs::remove_file(&installed);
        let _ = fs::remove_file(&probe);
    }
    assert!(
        removed,
        "SIGKILL during the set-user-ID test left {} or {} behind (removed by this test now)",
        installed.display(),
        probe.display()
    );
}

/// The command prefix that runs a program as `nobody` (`setpriv`, else
/// `runuser`), if either is on PATH; `--` ends its options, the program follows.
fn drop_to_nobody_command() -> Option<Vec<String>> {
    if let Some(p) = common::find_on_path("setpriv") {
        Some(vec![
            p.display().to_string(),
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".into(),
            "--".into(),
        ])
    } else {
        common::find_on_path("runuser").map(|p| {
            vec![
                p.display().to_string(),
                "-u".into(),
                "nobody".into(),
                "--".into(),
            ]
        })
    }
}

/// `base`, a fresh directory anyone can traverse, holding the set-user-ID-root
/// probe (`probe`) and a directory only root can write to (`root-only`); or
/// why the probe could not be made set-user-ID there.
fn make_setuid_probe(base: &Path, cleanup: &mut Cleanup) -> Result<(), String> {
    let _ = fs::remove_dir_all(base);
    fs::create_dir(base).unwrap_or_else(|e| panic!("mkdir {}: {e}", base.display()));
    cleanup.dirs.push(base.to_path_buf());
    set_mode(base, 0o755);
    if mounted_nosuid(base) {
        return Err(format!("{} is on a nosuid mount", base.display()));
    }
    let root_only = base.join("root-only");
    fs::create_dir(&root_only).unwrap();
    set_mode(&root_only, 0o700);
    let probe = base.join("probe");
    if let Err(e) = common::compile(&probe_src(), &probe, &["-ldl"]) {
        panic!("{e}");
    }
    // chown before chmod: chown clears the set-user-ID bit.
    std::os::unix::fs::chown(&probe, Some(0), Some(0)).unwrap();
    set_mode(&probe, 0o4755);
    Ok(())
}

/// The interposer as a set-user-ID library at `installed`, in a trusted
/// system directory: the only way the loader preloads into a secure-mode
/// program by LD_PRELOAD (a bare name, searched in the system directories
/// only).
fn install_setuid_interposer(installed: &Path, cleanup: &mut Cleanup) {
    cleanup.files.push(installed.to_path_buf());
    fs::copy(common::preload_so(), installed)
        .unwrap_or_else(|e| panic!("copy the interposer to {}: {e}", installed.display()));
    std::os::unix::fs::chown(installed, Some(0), Some(0)).unwrap();
    set_mode(installed, 0o4755);
}

/// Runs `base`'s probe as nobody with the interposer preloaded by `lib_name`,
/// statistics written to `report` and invalid values for the other variables.
fn run_probe_as_nobody(
    drop_to_nobody: &[String],
    lib_name: &str,
    base: &Path,
    report: &Path,
) -> Output {
    // The variables are set by `env`, running as nobody, right before the
    // probe: in setpriv's own environment LD_PRELOAD would load the
    // interposer into setpriv (run by root, not secure), which would then
    // answer KLOCK_PRELOAD_CHECK and warn about the bogus values itself.
    let mut cmd = Command::new(&drop_to_nobody[0]);
    cmd.args(&drop_to_nobody[1..])
        .arg("/usr/bin/env")
        .arg(format!("LD_PRELOAD={lib_name}"))
        .arg("KLOCK_STATS=2")
        .arg(format!("KLOCK_STATS_FILE={}", report.display()))
        .arg("KLOCK_LOCKDEP=abort")
        .arg(format!(
            "KLOCK_LOCKDEP_FILE={}",
            report.with_file_name("ld").display()
        ))
        .args([
            "KLOCK_PRELOAD_CHECK=1",
            "KLOCK_MUTEX=bogus",
            "KLOCK_RWLOCK=bogus",
            "KLOCK_SPIN=bogus",
            "KLOCK_STATS_TOP=bogus",
            "KLOCK_SPIN_NS=bogus",
            "KLOCK_MUTEX_SPIN_NS=bogus",
            "KLOCK_MUTX_SPIN_NS=1", // an unknown name: no warning either
        ])
        .arg(base.join("probe"))
        .arg("secure")
        .current_dir(base)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    run(&mut cmd)
}

/// Panics with every way the secure run `o` went wrong: the probe failed or did
/// not run on the interposer's locks, a file appeared in `root_only`, or
/// something klock-related reached stderr.
fn check_secure_run(o: &Output, lib_name: &str, root_only: &Path, what: &str) {
    let mut failures = Vec::new();
    if !o.status.is_some_and(|s| s.success()) || !o.stdout.contains("PASS at_secure=") {
        failures.push("the probe failed (not secure, interposer not loaded, or broken)");
    } else if !o.stdout.contains(lib_name) {
        failures.push("pthread_mutex_lock is not the interposer's: the test proves nothing");
    }
    let created: Vec<_> = fs::read_dir(root_only)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if !created.is_empty() {
        failures.push("KLOCK_STATS_FILE was honoured: a file appeared in the root-only directory");
    }
    if o.stderr.to_ascii_lowercase().contains("klock") {
        failures.push(
            "the interposer or the klock library read KLOCK_* variables: klock output on stderr",
        );
    }
    if !failures.is_empty() {
        panic!(
            "{}\n{}\nfiles in the root-only directory: {created:?}",
            failures.join("\n"),
            o.describe(what)
        );
    }
}

/// Compiles the probe (not set-user-ID) for the non-secure tests.
fn plain_probe(dir: &Path) -> PathBuf {
    let probe = dir.join("probe");
    if let Err(e) = common::compile(&probe_src(), &probe, &["-ldl"]) {
        panic!("{e}");
    }
    probe
}

#[test]
fn stats_file_symlink_is_refused() {
    let dir = common::tmp_subdir(&format!("secure-symlink-{}", std::process::id()));
    let _cleanup = Cleanup {
        files: vec![],
        dirs: vec![dir.clone()],
    };
    let probe = plain_probe(&dir);
    let target = dir.join("target");
    fs::write(&target, "original\n").unwrap();
    let link = dir.join("link");
    symlink(&target, &link).unwrap();

    let mut cmd = Command::new(&probe);
    cmd.arg("plain")
        .env("LD_PRELOAD", common::preload_so())
        .env("KLOCK_STATS", "1")
        .env("KLOCK_STATS_FILE", &link)
        .env_remove("KLOCK_PRELOAD_CHECK");
    let o = run(&mut cmd);
    let what = format!(
        "probe with KLOCK_STATS=1 KLOCK_STATS_FILE={}",
        link.display()
    );
    assert!(
        o.status.is_some_and(|s| s.success()) && o.stdout.contains("PASS at_secure=0"),
        "{}",
        o.describe(&format!("{what}: the probe failed"))
    );
    assert_eq!(
        fs::read_to_string(&target).unwrap(),
        "original\n",
        "{}",
        o.describe(&format!("{what}: the report followed the symbolic link"))
    );
    let refusals: Vec<_> = o
        .stderr
        .lines()
        .filter(|l| l.contains("KLOCK_STATS_FILE is a symbolic link"))
        .collect();
    assert_eq!(
        refusals.len(),
        1,
        "{}",
        o.describe(&format!("{what}: expected one refusal line on stderr"))
    );
    assert!(
        !o.stderr.contains("locks seen"),
        "{}",
        o.describe(&format!("{what}: a refused file means no report at all"))
    );
}

#[test]
fn stats_file_mode_follows_umask() {
    let dir = common::tmp_subdir(&format!("secure-umask-{}", std::process::id()));
    let _cleanup = Cleanup {
        files: vec![],
        dirs: vec![dir.clone()],
    };
    let probe = plain_probe(&dir);
    for (umask, allowed) in [(0o077u32, 0o600u32), (0o022, 0o644)] {
        let report = dir.join(format!("report-{umask:03o}"));
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("umask {umask:03o} && exec \"$0\" plain"))
            .arg(&probe)
            .env("LD_PRELOAD", common::preload_so())
            .env("KLOCK_STATS", "1")
            .env("KLOCK_STATS_FILE", &report)
            .env_remove("KLOCK_PRELOAD_CHECK");
        let o = run(&mut cmd);
        let what = format!(
            "umask {umask:03o}; probe with KLOCK_STATS=1 KLOCK_STATS_FILE={}",
            report.display()
        );
        assert!(
            o.status.is_some_and(|s| s.success()),
            "{}",
            o.describe(&format!("{what}: the probe failed"))
        );
        let text = fs::read_to_string(&report)
            .unwrap_or_else(|e| panic!("{}", o.describe(&format!("{what}: no report: {e}"))));
        assert!(text.contains("locks seen"), "{what}: not a report:\n{text}");
        let mode = fs::metadata(&report).unwrap().permissions().mode() & 0o7777;
        assert_eq!(
            mode & !allowed,
            0,
            "{what}: the report has mode {mode:o}, more than 0666 & !umask = {allowed:o}"
        );
    }
}
