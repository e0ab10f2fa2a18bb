//! Secure-execution safety of the interposer (docs/preload.md, "Security").
//!
//! - `setuid_program_ignores_klock_variables`: the interposer installed the
//!   way a system-wide install would make set-user-ID programs load it (a
//!   set-user-ID library in a trusted system directory, preloaded by bare
//!   name) and a set-user-ID-root probe (`tests/setuid/probe.c`) run by
//!   `nobody` with `KLOCK_STATS=2`, `KLOCK_STATS_FILE=<root-only dir>/x`,
//!   `KLOCK_PRELOAD_CHECK=1` and invalid variant names. The probe checks that
//!   it runs with `AT_SECURE` and that the interposer serves its locks; the
//!   test checks that nothing was created in the root-only directory and that
//!   nothing klock-related reached stderr (no load-check line, no warnings).
//!   Needs root (it installs into the system library directory and makes a
//!   set-user-ID-root program) and `setpriv` or `runuser`; without them it
//!   prints why it could not run, and fails when `KLOCK_CI=1` (set by
//!   `.ci/run`). Installed files are removed whatever happens.
//! - `stats_file_symlink_is_refused`, `stats_file_mode_follows_umask`: an
//!   ordinary (non-secure) run: a symbolic link as `KLOCK_STATS_FILE` is not
//!   followed (its target stays unchanged, one line on stderr says why), and
//!   a new report file gets no more than `0666 & !umask`.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;

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
    let mut cleanup = Cleanup::default();
    let base = match make_setuid_probe(&mut cleanup) {
        Ok(b) => b,
        Err(e) => return unavailable(&e),
    };
    let (lib_name, installed) = install_setuid_interposer(&lib_dir, &mut cleanup);
    let root_only = base.join("root-only");
    let report = root_only.join("x");
    let o = run_probe_as_nobody(&drop_to_nobody, &lib_name, &base, &report);
    let what = format!(
        "set-user-ID-root probe run by nobody with LD_PRELOAD={lib_name} (installed in {}) \
         KLOCK_STATS=2 KLOCK_STATS_FILE={} KLOCK_PRELOAD_CHECK=1 KLOCK_MUTEX=bogus ...",
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

/// A fresh directory anyone can traverse, holding the set-user-ID-root probe
/// (`probe`) and a directory only root can write to (`root-only`); returns the
/// directory, or why the probe could not be made set-user-ID there.
fn make_setuid_probe(cleanup: &mut Cleanup) -> Result<PathBuf, String> {
    let base = std::env::temp_dir().join(format!("klock-securetest-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    fs::create_dir(&base).unwrap_or_else(|e| panic!("mkdir {}: {e}", base.display()));
    cleanup.dirs.push(base.clone());
    set_mode(&base, 0o755);
    if mounted_nosuid(&base) {
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
    Ok(base)
}

/// The interposer as a set-user-ID library in the trusted directory `lib_dir`:
/// the only way the loader preloads into a secure-mode program by LD_PRELOAD (a
/// bare name, searched in the system directories only). Returns that name and
/// the installed path.
fn install_setuid_interposer(lib_dir: &Path, cleanup: &mut Cleanup) -> (String, PathBuf) {
    let lib_name = format!("libklock_preload_securetest_{}.so", std::process::id());
    let installed = lib_dir.join(&lib_name);
    cleanup.files.push(installed.clone());
    fs::copy(common::preload_so(), &installed)
        .unwrap_or_else(|e| panic!("copy the interposer to {}: {e}", installed.display()));
    std::os::unix::fs::chown(&installed, Some(0), Some(0)).unwrap();
    set_mode(&installed, 0o4755);
    (lib_name, installed)
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
        .args([
            "KLOCK_PRELOAD_CHECK=1",
            "KLOCK_MUTEX=bogus",
            "KLOCK_RWLOCK=bogus",
            "KLOCK_SPIN=bogus",
            "KLOCK_STATS_TOP=bogus",
            "KLOCK_SPIN_NS=bogus",
            "KLOCK_MUTEX_SPIN_NS=bogus",
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
