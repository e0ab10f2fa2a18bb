//! Shared harness for the klock-preload integration tests (`preload.rs`,
//! `programs.rs`): locating and building the interposer, running a program
//! plain or under `LD_PRELOAD` with a watchdog, and the load-check contract.
//!
//! # Load-check contract (implemented by the interposer)
//!
//! When the environment variable `KLOCK_PRELOAD_CHECK=1` is set,
//! `libklock_preload.so` writes the line
//!
//! ```text
//! klock-preload: active
//! ```
//!
//! to stderr (fd 2) once, when it is loaded (from its constructor). Every
//! preloaded run sets the variable and fails unless that line appears, so an
//! interposer that silently did not load (wrong path, wrong ELF class,
//! missing constructor) cannot make the tests pass against plain glibc.
//! Plain runs must not print it.
//!
//! # Lock-order validation (`Mode::Lockdep`)
//!
//! [`Mode::Lockdep`] is a preloaded run with `KLOCK_LOCKDEP=1`: the
//! interposer validates the program's lock order and prints a report whose
//! first line contains `possible deadlock` for each lock-order cycle (see
//! docs/lockdep.md). [`check_clean_exit`] fails a lockdep run that printed
//! such a report, so a program documented as free of inversions stays so.
//! The other modes leave `KLOCK_LOCKDEP` as the command has it.
//!
//! # Environment
//!
//! - `KLOCK_PRELOAD_SO=/path/to/lib.so`: use this interposer instead of
//!   building `target/<profile>/libklock_preload.so`.
//! - `CI` (any non-empty value): a missing external program (sysbench,
//!   pigz, ...) is a failure instead of a printed skip.

#![allow(dead_code)] // each test crate uses a different subset

use std::env;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Environment variable that asks the interposer to announce itself.
pub const CHECK_ENV: &str = "KLOCK_PRELOAD_CHECK";
/// The line the interposer prints to stderr at load when `CHECK_ENV=1`.
pub const ACTIVE_LINE: &str = "klock-preload: active";
/// Turns on the interposer's lock-order validation ([`Mode::Lockdep`]).
pub const LOCKDEP_ENV: &str = "KLOCK_LOCKDEP";
/// Every line lockdep prints starts with this.
pub const LOCKDEP_PREFIX: &str = "klock lockdep";
/// A cycle report's first line contains this.
pub const LOCKDEP_REPORT: &str = "possible deadlock";

/// Default watchdog for one program run.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn geteuid() -> u32;
}

/// Sends `sig` to the process (or, with a negative id, process group) `pid`.
pub fn send_signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        kill(pid, sig);
    }
}

pub fn sigterm(pid: i32) {
    send_signal(pid, SIGTERM);
}

pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and has no preconditions.
    unsafe { geteuid() == 0 }
}

/// Scratch space for compiled programs, logs and data files.
pub fn tmp_root() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("klock-preload");
    fs::create_dir_all(&dir).expect("create the tmp dir");
    dir
}

pub fn tmp_subdir(name: &str) -> PathBuf {
    let dir = tmp_root().join(name);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// Whether the run is plain glibc, under the interposer, or under the
/// interposer with lock-order validation on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Preload,
    /// Preloaded with `KLOCK_LOCKDEP=1`.
    Lockdep,
}

impl Mode {
    pub const BOTH: [Mode; 2] = [Mode::Plain, Mode::Preload];
    /// Plain, preloaded, and preloaded with lock-order validation.
    pub const ALL: [Mode; 3] = [Mode::Plain, Mode::Preload, Mode::Lockdep];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Preload => "preloaded",
            Mode::Lockdep => "lockdep",
        }
    }

    /// Whether the interposer is loaded in this mode.
    pub fn preloaded(self) -> bool {
        self != Mode::Plain
    }

    /// Sets up the environment of `cmd` for this mode.
    pub fn apply(self, cmd: &mut Command) {
        match self {
            // KLOCK_LOCKDEP stays as the command has it: tests/lockdep.rs
            // sets it per run of a preloaded command.
            Mode::Plain => {
                cmd.env_remove("LD_PRELOAD").env_remove(CHECK_ENV);
            }
            Mode::Preload => {
                cmd.env("LD_PRELOAD", preload_so()).env(CHECK_ENV, "1");
            }
            Mode::Lockdep => {
                cmd.env("LD_PRELOAD", preload_so())
                    .env(CHECK_ENV, "1")
                    .env(LOCKDEP_ENV, "1");
            }
        }
    }

    /// Checks the load-check line: present exactly when preloaded.
    pub fn check_marker(self, stderr: &str) -> Result<(), String> {
        let seen = stderr.lines().any(|l| l.trim_end() == ACTIVE_LINE);
        match (self.preloaded(), seen) {
            (true, false) => Err(format!(
                "the interposer did not announce itself: no `{ACTIVE_LINE}` line on stderr \
                 with {CHECK_ENV}=1 and LD_PRELOAD={} (not loaded, or the load-check \
                 contract in tests/common/mod.rs is not implemented)",
                preload_so().display()
            )),
            (false, true) => Err(format!(
                "`{ACTIVE_LINE}` printed by a plain run (LD_PRELOAD leaking in?)"
            )),
            _ => Ok(()),
        }
    }
}

/// The interposer to preload: `$KLOCK_PRELOAD_SO`, or
/// `<target dir>/<profile>/libklock_preload.so`, built with
/// `cargo build -p klock-preload` (plus `--release` / `--profile`).
///
/// `cargo test` does not produce the cdylib, so the build runs once per test
/// binary even when the file exists: it is a quick no-op when up to date and
/// it guarantees that the tests never run a stale interposer.
pub fn preload_so() -> &'static Path {
    static SO: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match SO.get_or_init(locate_or_build_preload) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn locate_or_build_preload() -> Result<PathBuf, String> {
    if let Some(p) = env::var_os("KLOCK_PRELOAD_SO") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("KLOCK_PRELOAD_SO={} does not exist", p.display()))
        };
    }
    let exe = env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // Test binaries live in <target dir>/<profile>/deps/.
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected test binary location {}", exe.display()))?;
    let profile = profile_dir
        .file_name()
        .and_then(OsStr::to_str)
        .ok_or_else(|| format!("no profile directory above {}", exe.display()))?;
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("no target directory above {}", profile_dir.display()))?;
    let so = profile_dir.join("libklock_preload.so");

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", "klock-preload"]);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null());
    let described = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("could not run `{described}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the interposer failed: `{described}` exited with {}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if !so.is_file() {
        return Err(format!(
            "`{described}` succeeded but {} does not exist (is klock-preload a cdylib?)",
            so.display()
        ));
    }
    Ok(so)
}

/// Outcome of one program run.
pub struct RunResult {
    pub desc: String,
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl RunResult {
    /// Exited by itself with status 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    pub fn status_text(&self) -> String {
        match self.status {
            _ if self.timed_out => format!(
                "HUNG: killed by the watchdog after {:.1} s",
                self.elapsed.as_secs_f64()
            ),
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit status {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
                _ => format!("{s}"),
            },
            None => "no status".to_string(),
        }
    }

    /// A failure report: what ran, how it ended, and its output.
    pub fn report(&self, problem: &str) -> String {
        format!(
            "{problem}\n  ran: {}\n  result: {} after {:.2} s\n--- stdout (tail) ---\n{}\n--- stderr (tail) ---\n{}\n---",
            self.desc,
            self.status_text(),
            self.elapsed.as_secs_f64(),
            tail(&self.stdout, 40),
            tail(&self.stderr, 60),
        )
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        14 => " (SIGALRM)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!("[... {start} earlier lines ...]\n"));
    }
    out.push_str(&lines[start..].join("\n"));
    out
}

fn log_paths(desc: &str) -> (PathBuf, PathBuf) {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let slug: String = desc
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(60)
        .collect();
    let dir = tmp_subdir("logs");
    let base = format!("{slug}-{}-{n}", std::process::id());
    (
        dir.join(format!("{base}.out")),
        dir.join(format!("{base}.err")),
    )
}

/// A child in its own process group, killed (the whole group) on drop unless
/// it was reaped: no stray processes when a test panics.
pub struct Spawned {
    pub child: Child,
    pub desc: String,
    pub stdout_path: Option<PathBuf>,
    pub stderr_path: PathBuf,
    started: Instant,
    reaped: bool,
}

impl Spawned {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits up to `timeout`; on expiry kills the process group.
    pub fn wait_timeout(mut self, timeout: Duration) -> RunResult {
        let deadline = self.started + timeout;
        let mut timed_out = false;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) => {}
                Err(e) => panic!("waiting for {}: {e}", self.desc),
            }
            if Instant::now() >= deadline {
                timed_out = true;
                send_signal(-self.pid(), SIGKILL);
                break self.child.wait().ok();
            }
            thread::sleep(Duration::from_millis(10));
        };
        self.reaped = true;
        let elapsed = self.started.elapsed();
        // The logs are read into the result (and printed on failure), so
        // the files themselves are not kept.
        let stdout = match self.stdout_path.as_deref() {
            Some(p) => {
                let s = read_lossy(p);
                let _ = fs::remove_file(p);
                s
            }
            None => String::new(),
        };
        let stderr = read_lossy(&self.stderr_path);
        let _ = fs::remove_file(&self.stderr_path);
        RunResult {
            desc: self.desc.clone(),
            status,
            timed_out,
            elapsed,
            stdout,
            stderr,
        }
    }

    /// Whether the process already exited. (std keeps the status, so
    /// `wait_timeout` still reports it.)
    pub fn has_exited(&mut self) -> bool {
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        if exited {
            // Reaped: its process-group id may be reused, never signal it.
            self.reaped = true;
        }
        exited
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if !self.reaped {
            send_signal(-self.pid(), SIGKILL);
            let _ = self.child.wait();
        }
    }
}

fn read_lossy(p: &Path) -> String {
    fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Describes a command line for reports.
pub fn describe(cmd: &Command, mode: Mode) -> String {
    let mut s = String::new();
    if mode == Mode::Lockdep {
        s.push_str(&format!("{LOCKDEP_ENV}=1 "));
    }
    if mode.preloaded() {
        s.push_str(&format!(
            "{CHECK_ENV}=1 LD_PRELOAD={} ",
            preload_so().display()
        ));
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Starts `cmd` in `mode`, in its own process group, stdin from /dev/null,
/// stderr (and stdout, unless `stdout_to` names a file for it) captured in
/// log files under the tmp dir.
pub fn spawn(cmd: &mut Command, mode: Mode, stdout_to: Option<&Path>) -> Spawned {
    mode.apply(cmd);
    let desc = describe(cmd, mode);
    let (out_log, err_log) = log_paths(&desc);
    let stdout_path = match stdout_to {
        Some(p) => p.to_path_buf(),
        None => out_log,
    };
    let stdout = File::create(&stdout_path)
        .unwrap_or_else(|e| panic!("create {}: {e}", stdout_path.display()));
    let stderr =
        File::create(&err_log).unwrap_or_else(|e| panic!("create {}: {e}", err_log.display()));
    cmd.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    let started = Instant::now();
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("could not start `{desc}`: {e}"));
    Spawned {
        child,
        desc,
        stdout_path: if stdout_to.is_some() {
            None
        } else {
            Some(stdout_path)
        },
        stderr_path: err_log,
        started,
        reaped: false,
    }
}

/// Runs `cmd` in `mode` to completion under the watchdog.
pub fn run(cmd: &mut Command, mode: Mode, timeout: Duration) -> RunResult {
    spawn(cmd, mode, None).wait_timeout(timeout)
}

/// Like `run`, with stdout written to `stdout_to` (binary output).
pub fn run_to_file(
    cmd: &mut Command,
    mode: Mode,
    timeout: Duration,
    stdout_to: &Path,
) -> RunResult {
    spawn(cmd, mode, Some(stdout_to)).wait_timeout(timeout)
}

/// Standard checks for a run: clean exit 0, the load-check line exactly
/// when preloaded, and under [`Mode::Lockdep`] no lock-order cycle report
/// ([`check_no_lockdep_report`]).
pub fn check_clean_exit(mode: Mode, r: &RunResult) -> Result<(), String> {
    if !r.success() {
        return Err(r.report(&format!("did not exit cleanly ({})", mode.name())));
    }
    mode.check_marker(&r.stderr).map_err(|e| r.report(&e))?;
    check_no_lockdep_report(mode, r)
}

/// Under [`Mode::Lockdep`]: fails if lockdep reported a lock-order cycle (a
/// line containing `possible deadlock`), with every lockdep line (the
/// reports' locks and stacks) in the message.
pub fn check_no_lockdep_report(mode: Mode, r: &RunResult) -> Result<(), String> {
    if mode != Mode::Lockdep {
        return Ok(());
    }
    let reports = r
        .stderr
        .lines()
        .filter(|l| l.contains(LOCKDEP_REPORT))
        .count();
    if reports == 0 {
        return Ok(());
    }
    Err(format!(
        "{}\n--- lockdep output ---\n{}",
        r.report(&format!(
            "lockdep reported {reports} lock-order cycle(s) (`{LOCKDEP_REPORT}`) in a program \
             documented as free of them (docs/results/2026-11-29-lockdep/real-programs.md): \
             a new inversion in the program, or a false positive of the validator"
        )),
        report_blocks(&r.stderr)
    ))
}

/// Every lockdep report in `stderr` in full: from each `possible deadlock`
/// line to its `end of report` line (its indented lock and frame lines).
fn report_blocks(stderr: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in stderr.lines() {
        if l.contains(LOCKDEP_REPORT) {
            inside = true;
        }
        if inside {
            out.push_str(l);
            out.push('\n');
        }
        if l.starts_with(LOCKDEP_PREFIX) && l.contains("end of report") {
            inside = false;
        }
    }
    out
}

/// Searches `PATH` for an executable.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether a skipped test is a failure: under `.ci/run` (which exports
/// `KLOCK_CI=1`) or a CI service (`CI` set), whoever calls it.
pub fn in_ci() -> bool {
    let set = |v: &str| env::var_os(v).is_some_and(|v| !v.is_empty());
    set("CI") || set("KLOCK_CI")
}

/// Prints a note that bypasses the test harness's output capture, so skips
/// are visible in a normal `cargo test` run.
pub fn note(msg: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{msg}");
}

/// Finds `program` on PATH. When missing: panics under CI ([`in_ci`]), or
/// prints a visible SKIPPED note and returns `None`.
pub fn require_program(test: &str, program: &str, package: &str) -> Option<PathBuf> {
    if let Some(p) = find_on_path(program) {
        return Some(p);
    }
    if in_ci() {
        panic!(
            "{test}: `{program}` not found on PATH: install the Debian package `{package}` \
             (apt-get install {package}; see tests/packages.txt)"
        );
    }
    note(&format!(
        "SKIPPED {test}: `{program}` not found on PATH (install the Debian package \
         `{package}`; under .ci/run or with CI set this is a failure)"
    ));
    None
}

/// Compiles a C or C++ source (by extension) with the suite's flags.
/// Errors carry the compiler output; a missing compiler is reported as such.
pub fn compile(src: &Path, out: &Path, extra_args: &[&str]) -> Result<(), String> {
    let is_cxx = matches!(
        src.extension().and_then(OsStr::to_str),
        Some("cpp" | "cc" | "cxx")
    );
    let (compiler, package) = if is_cxx {
        ("g++", "g++")
    } else {
        ("gcc", "gcc")
    };
    let mut cmd = Command::new(compiler);
    if is_cxx {
        cmd.arg("-std=c++17");
    }
    cmd.args(["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(src)
        .arg("-o")
        .arg(out)
        .args(extra_args)
        .stdin(Stdio::null());
    let described = format!("{cmd:?}");
    match cmd.output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "`{compiler}` not found: install the Debian package `{package}` \
             (it builds the test programs)"
        )),
        Err(e) => Err(format!("could not run {described}: {e}")),
        Ok(o) if !o.status.success() => Err(format!(
            "compiling {} failed: {described} exited with {}\n{}{}",
            src.display(),
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Ok(_) => Ok(()),
    }
}

/// Fails the test with every collected failure.
pub fn finish(test: &str, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{test}: {} failure(s)\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}
