//! The one subprocess harness: run a program in its own process group with its output
//! captured and a timeout, and kill the whole group afterwards (so nothing it forked
//! outlives the run); keep a server running in the background beside it; find the
//! programs, the repository, cargo and klock's interposer (`LD_PRELOAD`). Used by
//! `preload` (the programs it measures, memcached), `uncontended --preload`,
//! `realcrate` (cargo and its workload) and `report` (its child `lockbench` runs).

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::CliError;

/// What one child run produced.
#[derive(Debug)]
pub struct Finished {
    /// Exited with status 0 in time.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// `exit 0`, `exit 3`, `killed by signal 9`, `timed out after 60 s`, ...
    pub status: String,
}

impl Finished {
    /// Why the run gave no number: `what: status (the tail of stderr)`.
    pub fn error(&self, what: &str) -> String {
        let err = if self.stderr.trim().is_empty() {
            String::new()
        } else {
            format!(" ({})", tail(&self.stderr))
        };
        format!("{what}: {}{err}", self.status)
    }
}

/// The last three lines of `s`, joined with ` | `, at most 300 characters.
pub fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.trim().lines().collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    tail.chars().take(300).collect()
}

fn drain(r: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    })
}

/// Kills the process group `pgid` (the child and whatever it forked).
pub fn kill_group(pgid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions; a negative pid names the
    // group that `spawn` created for this child (process_group(0)).
    unsafe { libc::kill(-(pgid as libc::pid_t), sig) };
}

/// Runs `cmd` in its own process group with stdin closed and output captured; kills
/// the group after `timeout` (never when `None`).
pub fn run_captured(mut cmd: Command, timeout: Option<Duration>) -> Finished {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Finished {
                ok: false,
                stdout: String::new(),
                stderr: String::new(),
                status: format!("cannot start: {e}"),
            };
        }
    };
    let (o, e) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if timeout.is_none_or(|t| t0.elapsed() < t) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Ok(None) => {
                timed_out = true;
                kill_group(child.id(), libc::SIGKILL);
                break child.wait().ok();
            }
            Err(_) => break None,
        }
    };
    // Leftover children of the group (stress-ng's) must not outlive the run.
    kill_group(child.id(), libc::SIGKILL);
    let (stdout, stderr) = (o.join().unwrap_or_default(), e.join().unwrap_or_default());
    let (ok, status) = match status {
        _ if timed_out => (
            false,
            format!(
                "timed out after {:.0} s",
                timeout.unwrap_or_default().as_secs_f64()
            ),
        ),
        Some(s) if s.success() => (true, "exit 0".into()),
        Some(s) => (
            false,
            match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit {c}"),
                (_, Some(sig)) => format!("killed by signal {sig}"),
                _ => format!("{s}"),
            },
        ),
        None => (false, "lost the child".into()),
    };
    Finished {
        ok,
        stdout,
        stderr,
        status,
    }
}

/// A server kept running in the background: its own process group, stdin and stdout
/// closed, stderr kept for errors. Stop it with [`Background::stop`].
pub struct Background(Child);

impl Background {
    /// Starts `cmd`.
    pub fn spawn(mut cmd: Command) -> std::io::Result<Background> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd.spawn().map(Background)
    }
    /// Its status, if it has already exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.0.try_wait().ok().flatten()
    }
    /// Stops it (its group TERMed, then KILLed after 3 s); `Some(status)` if it had
    /// already exited on its own.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let early = self.exited();
        kill_group(self.0.id(), libc::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return early;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(self.0.id(), libc::SIGKILL);
        let _ = self.0.wait();
        early
    }
    /// The tail of its stderr (read to the end: call it once it has exited).
    pub fn stderr_tail(&mut self) -> String {
        let mut s = String::new();
        if let Some(mut e) = self.0.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        tail(&s)
    }
}

/// Whether `prog` is a file in one of the directories of the `$PATH` value `path`.
pub fn in_path(prog: &str, path: &OsStr) -> bool {
    std::env::split_paths(path).any(|d| d.join(prog).is_file())
}

/// The directory of the running lockbench binary.
pub fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
}

/// The repository root (lockbench's sources are in its `crates/lockbench`), from this
/// crate's manifest directory at build time.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `cargo` command: `$CARGO` (set when cargo runs lockbench), else `cargo`.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Preloads `lib` in `cmd`, ahead of whatever the environment already preloads.
pub fn preload(cmd: &mut Command, lib: &Path) {
    let mut v = lib.as_os_str().to_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    cmd.env("LD_PRELOAD", v);
}

/// The interposer's file name.
pub const LIB: &str = "libklock_preload.so";

/// Finds klock's interposer: `explicit` (`--lib`), else `$KLOCK_PRELOAD_LIB`, else
/// [`LIB`] next to lockbench (or in its `deps/`, the newer), else built with
/// `cargo build --release -p klock-preload`.
pub fn find_lib(explicit: Option<&Path>) -> Result<PathBuf, CliError> {
    let check = |p: PathBuf, what: &str| {
        if p.is_file() {
            Ok(std::fs::canonicalize(&p).unwrap_or(p))
        } else {
            Err(CliError(format!("{what} {} is not a file", p.display())))
        }
    };
    if let Some(p) = explicit {
        return check(p.to_path_buf(), "--lib");
    }
    if let Some(p) = std::env::var_os("KLOCK_PRELOAD_LIB").filter(|p| !p.is_empty()) {
        return check(PathBuf::from(p), "KLOCK_PRELOAD_LIB=");
    }
    if let Some(p) = exe_dir().and_then(|dir| newest_lib(&dir)) {
        return Ok(p);
    }
    build_lib()
}

/// [`LIB`] next to lockbench in `dir`, or in `dir/deps` when cargo built the library
/// only as a dependency (then the copy next to lockbench may be stale): the newer.
fn newest_lib(dir: &Path) -> Option<PathBuf> {
    [dir.join(LIB), dir.join("deps").join(LIB)]
        .into_iter()
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p)
}

/// Builds the interposer in the workspace lockbench was built from.
fn build_lib() -> Result<PathBuf, CliError> {
    let root = repo_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let built = target.join("release").join(LIB);
    if !root.join("crates/klock-preload/Cargo.toml").is_file() {
        return Err(CliError(format!(
            "cannot find {LIB} (not next to lockbench, no workspace at {}); build it with \
             `cargo build --release -p klock-preload` or give --lib PATH / KLOCK_PRELOAD_LIB",
            root.display()
        )));
    }
    eprintln!(
        "lockbench preload: {LIB} not found next to lockbench; building it (cargo build --release -p klock-preload)"
    );
    let st = cargo()
        .args(["build", "--release", "-p", "klock-preload"])
        .current_dir(&root)
        .status();
    match st {
        Ok(s) if s.success() && built.is_file() => Ok(built),
        Ok(s) => Err(CliError(format!(
            "`cargo build --release -p klock-preload` failed ({s}) or did not produce {}; \
             give the library with --lib PATH",
            built.display()
        ))),
        Err(e) => Err(CliError(format!(
            "cannot run cargo to build {LIB} ({e}); build it with \
             `cargo build --release -p klock-preload` or give --lib PATH"
        ))),
    }
}

/// Checks that the dynamic loader accepts the library (`LD_PRELOAD` errors are
/// otherwise only a warning on each child's stderr, and the "klock" side would
/// silently measure glibc).
pub fn check_loads(lib: &Path) -> Result<(), CliError> {
    let mut c = Command::new("sh");
    c.args(["-c", "exit 0"]).env("LD_PRELOAD", lib);
    let f = run_captured(c, Some(Duration::from_secs(30)));
    if !f.ok || f.stderr.contains("LD_PRELOAD") || f.stderr.contains("ld.so") {
        return Err(CliError(format!(
            "{} does not preload cleanly ({}): {}",
            lib.display(),
            f.status,
            tail(&f.stderr)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_runs_report_status_and_timeouts() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let f = run_captured(c, Some(Duration::from_secs(30)));
        assert!(!f.ok);
        assert_eq!(f.status, "exit 3");
        assert_eq!((f.stdout.trim(), f.stderr.trim()), ("out", "err"));
        assert_eq!(f.error("sh"), "sh: exit 3 (err)");
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30 & sleep 30"]);
        let f = run_captured(c, Some(Duration::from_millis(200)));
        assert!(!f.ok && f.status.contains("timed out"), "{f:?}");
        assert_eq!(tail("a\nb\nc\nd\n"), "b | c | d");
    }
}
