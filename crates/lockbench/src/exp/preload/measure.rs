//! One measured run of a workload on one side: its command line filled in from the
//! workloads table, the files and the server it needs, the program run under the
//! side's preload, and its metric read by the row's parser.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::cprog::Built;
use super::parsers::Ran;
use super::workloads::{INPUT_BYTES, Settings, Workload};
use crate::exp::proc::{Background, Finished, preload, run_captured};

/// Record `lock` of the runs without the interposer.
pub const GLIBC: &str = "glibc";
/// Record `lock` of the runs with the interposer.
pub const KLOCK: &str = "klock_preload";
/// Record `lock` of the runs with the interposer and `KLOCK_LOCKDEP=1` (`--lockdep`).
pub const LOCKDEP: &str = "klock_lockdep";
/// Record `lock` of the runs of the ThreadSanitizer build (`--lockdep`, `nested`).
pub const TSAN: &str = "tsan";
/// Record `lock` of the runs under valgrind's helgrind (`--lockdep`, `nested`).
pub const HELGRIND: &str = "helgrind";

/// `TSAN_OPTIONS` of the [`TSAN`] side.
pub const TSAN_OPTIONS: &str = "detect_deadlocks=1";
/// The [`TSAN`] side does 1/`TSAN_DIV` of the work (`--nested-iters`).
pub const TSAN_DIV: u64 = 10;
/// The [`HELGRIND`] side does 1/`HELGRIND_DIV` of the work (`--nested-iters`).
pub const HELGRIND_DIV: u64 = 1000;

/// How to run one side.
pub struct Side<'a> {
    /// [`GLIBC`], [`KLOCK`], [`LOCKDEP`], [`TSAN`] or [`HELGRIND`].
    pub name: &'static str,
    /// The interposer, for the klock sides.
    pub preload: Option<&'a Path>,
    /// Part of a `--lockdep` run: `KLOCK_LOCKDEP` and `KLOCK_LOCKDEP_FILE` are
    /// removed from every other side's environment (without `--lockdep` they reach
    /// the preloaded runs as they are, like `KLOCK_MUTEX`).
    pub lockdep_run: bool,
}

impl Side<'_> {
    /// A command running `prog` on this side: preloaded for the klock sides, with
    /// `KLOCK_LOCKDEP=1` and without `KLOCK_LOCKDEP_FILE` on [`LOCKDEP`] (its reports
    /// go to stderr, where they are counted; on a `--lockdep` run the others lose
    /// both), the `TSAN_OPTIONS` of [`TSAN`], under `valgrind --tool=helgrind` on
    /// [`HELGRIND`].
    pub fn command(&self, prog: &OsStr) -> Command {
        let mut c = if self.name == HELGRIND {
            let mut c = Command::new("valgrind");
            c.arg("--tool=helgrind").arg(prog);
            c
        } else {
            Command::new(prog)
        };
        if let Some(lib) = self.preload {
            preload(&mut c, lib);
        }
        if self.name == LOCKDEP {
            c.env("KLOCK_LOCKDEP", "1").env_remove("KLOCK_LOCKDEP_FILE");
        } else if self.lockdep_run {
            c.env_remove("KLOCK_LOCKDEP")
                .env_remove("KLOCK_LOCKDEP_FILE");
        }
        if self.name == TSAN {
            c.env("TSAN_OPTIONS", TSAN_OPTIONS);
        }
        c
    }
    /// The side does 1/this of a fixed amount of work (the sanitizers, slower).
    pub fn work_div(&self) -> u64 {
        match self.name {
            TSAN => TSAN_DIV,
            HELGRIND => HELGRIND_DIV,
            _ => 1,
        }
    }
    /// How many lock-order reports the run's stderr holds: lockdep's `possible
    /// deadlock` lines, ThreadSanitizer's warnings, helgrind's error count.
    pub fn reports(&self, f: &Finished) -> usize {
        let count = |pat: &str| f.stderr.lines().filter(|l| l.contains(pat)).count();
        match self.name {
            LOCKDEP => count("possible deadlock"),
            TSAN => count("WARNING: ThreadSanitizer"),
            HELGRIND => (f.stderr.lines())
                .filter_map(|l| {
                    let rest = l.split("ERROR SUMMARY:").nth(1)?;
                    rest.split_whitespace().next()?.parse::<usize>().ok()
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }
}

/// One run's outcome: the metric and the lock-order reports in its stderr.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The workload's metric.
    pub value: f64,
    /// [`Side::reports`].
    pub reports: usize,
}

/// The values a command's placeholders stand for in one run (see [`Workload`]).
struct Fill<'a> {
    t: usize,
    secs: u64,
    per: u64,
    port: u16,
    side: &'a str,
    scratch: &'a Path,
    input: Option<PathBuf>,
    built: Option<&'a Built>,
}

impl Fill<'_> {
    /// The program of `command` and its arguments, filled in.
    fn command(&self, command: &str, side: Option<&Side>) -> Command {
        let mut words = command.split_whitespace();
        let word = words.next().unwrap_or_default();
        let prog: OsString = match (word.strip_prefix('@'), self.built) {
            (Some(name), Some(b)) => b.path(name, side.is_some_and(|s| s.name == TSAN)).into(),
            _ => word.into(),
        };
        let mut c = side.map_or_else(|| Command::new(&prog), |s| s.command(&prog));
        c.args(words.flat_map(|w| self.arg(w)));
        c
    }
    /// One argument filled in: none, one or (`{root}`) two.
    fn arg(&self, word: &str) -> Vec<OsString> {
        if let Some(name) = word.strip_prefix("{scratch}/") {
            return vec![self.scratch.join(self.text(name)).into()];
        }
        match word {
            "{input}" => self.input.iter().map(|p| p.into()).collect(),
            // SAFETY: getuid has no preconditions.
            "{root}" if unsafe { libc::getuid() } == 0 => vec!["-u".into(), "root".into()],
            "{root}" => Vec::new(),
            _ => vec![self.text(word).into()],
        }
    }
    /// `word` with its number and name placeholders filled in.
    fn text(&self, word: &str) -> String {
        (word.replace("{t}", &self.t.to_string()))
            .replace("{secs}", &self.secs.to_string())
            .replace("{per}", &self.per.to_string())
            .replace("{port}", &self.port.to_string())
            .replace("{side}", self.side)
            .replace("{pid}", &std::process::id().to_string())
    }
    /// The files of the run in the scratch directory that `command` names.
    fn scratch_files(&self, command: &str) -> Vec<PathBuf> {
        (command.split_whitespace())
            .filter_map(|w| w.strip_prefix("{scratch}/"))
            .map(|name| self.scratch.join(self.text(name)))
            .collect()
    }
}

/// Runs `w` once with `t` threads on `side`; `scratch` holds its files, `built`
/// lockbench's C programs (the `@` ones).
pub fn measure(
    w: &Workload,
    t: usize,
    side: &Side,
    s: &Settings,
    scratch: &Path,
    built: Option<&Built>,
) -> Result<Measured, String> {
    let (per, total) = w.work.split(&s.scaled(side.work_div()), t);
    let mut fill = Fill {
        t,
        secs: s.duration.ceil().max(1.0) as u64,
        per,
        port: 0,
        side: side.name,
        scratch,
        input: None,
        built,
    };
    if w.command.contains("{input}") {
        fill.input = Some(input_file(scratch)?);
    }
    let written = fill.input.as_ref().map(|p| p.with_extension("txt.gz"));
    let files: Vec<PathBuf> = fill
        .scratch_files(w.command)
        .into_iter()
        .chain(written.clone())
        .collect();
    remove(&files);
    let mut server = w
        .server
        .map(|cmd| start_server(cmd, side, &mut fill))
        .transpose()?;
    let c = fill.command(w.command, server.is_none().then_some(side));
    let timeout = if w.fixed_work() {
        Duration::from_secs(300)
    } else {
        Duration::from_secs_f64(s.duration * 4.0 + 60.0)
    };
    let t0 = Instant::now();
    let f = run_captured(c, Some(timeout));
    let secs = t0.elapsed().as_secs_f64();
    let written_len = written
        .as_ref()
        .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0));
    remove(&files);
    if let Some(died) = server.as_mut().and_then(|sv| stop_server(w, sv)) {
        return Err(died);
    }
    if !f.ok {
        return Err(f.error(w.label));
    }
    let value = w.parser.read(&Ran {
        out: &f,
        label: w.label,
        total,
        secs,
        written: written.as_deref().zip(written_len),
    })?;
    Ok(Measured {
        value,
        reports: side.reports(&f),
    })
}

fn remove(files: &[PathBuf]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// The generated input ([`INPUT_BYTES`] of text-like data: words, numbers,
/// punctuation from a fixed xorshift sequence; it compresses about 3.5:1, so every
/// block is real work), in `scratch` (written once per lockbench run).
fn input_file(scratch: &Path) -> Result<PathBuf, String> {
    let path = scratch.join("pigz-input.txt");
    if path.metadata().is_ok_and(|m| m.len() == INPUT_BYTES as u64) {
        return Ok(path);
    }
    const WORDS: [&str; 16] = [
        "lock", "mutex", "futex", "queue", "spin", "sleep", "wake", "owner", "waiter", "kernel",
        "thread", "reader", "writer", "the", "of", "and",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut data = String::with_capacity(INPUT_BYTES + 32);
    while data.len() < INPUT_BYTES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 16 {
            0 => data.push_str(&format!("{} ", x >> 44)),
            1 => data.push_str(".\n"),
            2 => data.push_str(", "),
            _ => {
                data.push_str(WORDS[(x >> 8) as usize % WORDS.len()]);
                data.push(' ');
            }
        }
    }
    data.truncate(INPUT_BYTES);
    std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// A free loopback TCP port (bound and released; a race with another process
/// taking it is possible and then shows as a failed run).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// The program of a command line.
fn program(command: &str) -> &str {
    command.split_whitespace().next().unwrap_or_default()
}

/// Starts the server `cmd` on `side`, on a free loopback port (into `fill`), and
/// waits until it accepts a connection (at most 5 s).
fn start_server(cmd: &str, side: &Side, fill: &mut Fill) -> Result<Background, String> {
    let prog = program(cmd);
    fill.port = free_port()?;
    let mut server = Background::spawn(fill.command(cmd, Some(side)))
        .map_err(|e| format!("cannot start {prog}: {e}"))?;
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", fill.port)).is_err() {
        if let Some(s) = server.exited() {
            return Err(format!(
                "{prog} exited at start ({s}): {}",
                server.stderr_tail()
            ));
        }
        if t0.elapsed() > Duration::from_secs(5) {
            server.stop();
            return Err(format!("{prog} did not accept connections within 5 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

/// Stops `w`'s server after the run; why the run failed if it had died during it.
fn stop_server(w: &Workload, server: &mut Background) -> Option<String> {
    let s = server.stop()?;
    Some(format!(
        "{} died during the run ({s}): {}",
        program(w.server.unwrap_or_default()),
        server.stderr_tail()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_klock_side_preloads_the_library() {
        let mut side = Side {
            name: KLOCK,
            preload: Some(Path::new("/x.so")),
            lockdep_run: false,
        };
        let c = side.command(OsStr::new("true"));
        let env: Vec<_> = c.get_envs().collect();
        assert!(env.iter().any(|(k, v)| *k == "LD_PRELOAD"
            && v.is_some_and(|v| v.to_string_lossy().starts_with("/x.so"))));
        assert!(!env.iter().any(|(k, _)| *k == "KLOCK_LOCKDEP"));
        side.lockdep_run = true;
        let c = side.command(OsStr::new("true"));
        assert!(
            c.get_envs()
                .any(|e| e == (OsStr::new("KLOCK_LOCKDEP"), None))
        );
    }

    #[test]
    fn the_lockdep_and_sanitizer_sides() {
        let lib = Path::new("/x.so");
        let env = |c: &Command, k: &str| {
            (c.get_envs().find(|e| e.0 == k))
                .and_then(|e| e.1)
                .map(|v| v.to_string_lossy().into_owned())
        };
        let side = |name| Side {
            name,
            preload: (name == LOCKDEP).then_some(lib),
            lockdep_run: true,
        };
        let c = side(LOCKDEP).command(OsStr::new("prog"));
        assert_eq!(env(&c, "KLOCK_LOCKDEP").as_deref(), Some("1"));
        assert!(env(&c, "LD_PRELOAD").is_some_and(|v| v.starts_with("/x.so")));
        let c = side(TSAN).command(OsStr::new("prog"));
        assert_eq!(env(&c, "TSAN_OPTIONS").as_deref(), Some(TSAN_OPTIONS));
        let c = side(HELGRIND).command(OsStr::new("prog"));
        assert_eq!(c.get_program(), "valgrind");
        assert_eq!(
            c.get_args().collect::<Vec<_>>(),
            ["--tool=helgrind", "prog"]
        );
        let ran = |stderr: &str| Finished {
            ok: true,
            stdout: String::new(),
            stderr: stderr.into(),
            status: "exit 0".into(),
        };
        let f = ran(
            "klock lockdep: possible deadlock (lock-order cycle of 2 locks) in pid 1\n\
                     klock lockdep: end of report\n\
                     klock lockdep: possible deadlock (lock-order cycle of 3 locks) in pid 1\n",
        );
        assert_eq!(side(LOCKDEP).reports(&f), 2);
        assert_eq!(side(KLOCK).reports(&f), 0);
        let f = ran("==12== ERROR SUMMARY: 3 errors from 1 contexts (suppressed: 0 from 0)\n");
        assert_eq!(side(HELGRIND).reports(&f), 3);
        assert_eq!(
            side(TSAN).reports(&ran("WARNING: ThreadSanitizer: lock-order-inversion\n")),
            1
        );
        assert_eq!(
            (side(TSAN).work_div(), side(GLIBC).work_div()),
            (TSAN_DIV, 1)
        );
    }

    #[test]
    fn placeholders_fill_the_command_line() {
        let fill = Fill {
            t: 4,
            secs: 2,
            per: 250,
            port: 11211,
            side: GLIBC,
            scratch: Path::new("/s"),
            input: Some(PathBuf::from("/s/in.txt")),
            built: Some(&Built {
                dir: PathBuf::from("/b"),
            }),
        };
        let line = |cmd: &str| {
            let c = fill.command(cmd, None);
            let args: Vec<_> = c
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            format!("{} {}", c.get_program().to_string_lossy(), args.join(" "))
        };
        let pid = std::process::id();
        for w in ["kc-tree", "memcached", "pigz", "sysbench-mutex", "nested"] {
            let w = Workload::parse(w).unwrap();
            let want = match w.name {
                "nested" => "/b/nested 4 250".into(),
                "kc-tree" => format!("kctreetest order -th 4 /s/kctree-{pid}-glibc.kct 250"),
                "memcached" => "memcaslap -s 127.0.0.1:11211 -T 2 -c 64 -t 2s".into(),
                "pigz" => "pigz -p 4 -b 32 -k -f -- /s/in.txt".into(),
                _ => {
                    "sysbench mutex --threads=4 --mutex-num=1 --mutex-locks=250 --mutex-loops=0 run"
                        .into()
                }
            };
            assert_eq!(line(w.command), want);
        }
        let kc = Workload::parse("kc-tree").unwrap().command;
        assert_eq!(
            fill.scratch_files(kc),
            [PathBuf::from(format!("/s/kctree-{pid}-glibc.kct"))]
        );
    }
}
