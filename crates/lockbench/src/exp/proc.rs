//! The one subprocess harness: run a program in its own process group with its output
//! captured and a timeout, and kill the whole group afterwards (so nothing it forked
//! outlives the run). Used by `preload` (the programs it measures, memcached) and by
//! `report` (its child `lockbench` runs).

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
