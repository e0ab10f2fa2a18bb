//! `klockrun`: run a program with klock's pthread locks (like `mutrace prog`).
//!
//! ```text
//! klockrun [--stats[=1|2]] [--stats-file FILE] [--lockdep[=report|abort]] [--lockdep-file FILE]
//!          [--mutex V] [--rwlock V] [--spin V] [--] PROG [ARGS...]
//! ```
//!
//! Finds `libklock_preload.so` next to its own executable or in its `deps/` (the
//! same cargo target directory; the newer of the two), or in `../lib`, or at
//! `$KLOCK_PRELOAD_LIB`; prepends it to
//! `LD_PRELOAD` (keeping what is there); sets `KLOCK_STATS`, `KLOCK_STATS_FILE`,
//! `KLOCK_LOCKDEP`, `KLOCK_LOCKDEP_FILE`,
//! `KLOCK_MUTEX`, `KLOCK_RWLOCK`, `KLOCK_SPIN` from the flags given (unset flags leave
//! the environment alone); then `exec`s PROG, so its exit status and signals pass
//! through unchanged.
//!
//! Exit status: 2 for a usage error, 127 if PROG is not found, 126 if it cannot be
//! executed, else PROG's own.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The preload library's file name.
const LIB: &str = "libklock_preload.so";

/// Allowed `--mutex`/`--rwlock` values (`KLOCK_MUTEX`, `KLOCK_RWLOCK`).
const SLEEP_VALUES: &[&str] = &["klock", "nospin"];
/// Allowed `--spin` values (`KLOCK_SPIN`).
const SPIN_VALUES: &[&str] = &["tas", "unfair", "pv", "pvbase", "native"];

const USAGE: &str = "\
usage: klockrun [OPTIONS] [--] PROG [ARGS...]

Runs PROG with klock's pthread locks (LD_PRELOAD=libklock_preload.so).

options:
  --stats[=1|2]        print a lock contention report at exit (2: with the call
                       stack of each listed lock's first contention) on the
                       stderr PROG started with, even if PROG closes it (xz,
                       sort); if that fails, in $TMPDIR/klock-stats-PID.txt
  --stats-file FILE    write the report to FILE (truncated first; %p = pid)
                       instead of stderr; implies --stats if not given. Use it
                       to keep the report apart from PROG's own stderr.
  --lockdep[=report|abort]
                       lock-order validation: report each lock-order cycle (a
                       possible deadlock) on stderr when first seen; abort: and
                       abort the program at the first (docs/lockdep.md)
  --lockdep-file FILE  append the lock-order reports to FILE (%p = pid) instead
                       of stderr; implies --lockdep if not given
  --mutex V            mutexes and condvars: klock (default), nospin
  --rwlock V           rwlocks: klock (default), nospin
  --spin V             spinlocks: tas (default), unfair, pv, pvbase, native
  -h, --help           this help

environment: KLOCK_PRELOAD_LIB=PATH overrides where the library is found.
exit status: PROG's own; 2 usage error; 126 PROG not executable; 127 PROG not found.
";

/// What the command line asked for.
#[derive(Debug, Default, PartialEq)]
struct Opts {
    stats: Option<u8>,
    stats_file: Option<OsString>,
    lockdep: Option<&'static str>,
    lockdep_file: Option<OsString>,
    mutex: Option<String>,
    rwlock: Option<String>,
    spin: Option<String>,
    prog: Vec<OsString>,
    help: bool,
}

fn check_value(flag: &str, v: &str, allowed: &[&str]) -> Result<String, String> {
    if allowed.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(format!(
            "bad value '{v}' for {flag}: allowed are {}",
            allowed.join(", ")
        ))
    }
}

/// Parses the arguments after the program name.
fn parse(args: &[OsString]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let s = a.to_string_lossy();
        if s == "--" {
            o.prog = args[i + 1..].to_vec();
            break;
        }
        if !s.starts_with('-') || s == "-" {
            o.prog = args[i..].to_vec();
            break;
        }
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (s.to_string(), None),
        };
        // The value of a flag that takes one: inline (`--x=v`) or the next argument.
        let value = |i: &mut usize| -> Result<OsString, String> {
            if let Some(v) = &inline {
                return Ok(OsString::from(v));
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "-h" | "--help" => {
                o.help = true;
                return Ok(o);
            }
            "--stats" => {
                o.stats = Some(match inline.as_deref() {
                    None | Some("1") => 1,
                    Some("2") => 2,
                    Some(v) => {
                        return Err(format!("bad value '{v}' for --stats: allowed are 1, 2"));
                    }
                });
            }
            "--stats-file" => {
                let v = value(&mut i)?;
                if v.is_empty() {
                    return Err("--stats-file needs a non-empty file name".into());
                }
                o.stats_file = Some(v);
            }
            "--lockdep" => {
                o.lockdep = Some(match inline.as_deref() {
                    None | Some("report") | Some("1") => "1",
                    Some("abort") => "abort",
                    Some(v) => {
                        return Err(format!(
                            "bad value '{v}' for --lockdep: allowed are report, abort"
                        ));
                    }
                });
            }
            "--lockdep-file" => {
                let v = value(&mut i)?;
                if v.is_empty() {
                    return Err("--lockdep-file needs a non-empty file name".into());
                }
                o.lockdep_file = Some(v);
            }
            "--mutex" | "--rwlock" | "--spin" => {
                let v = value(&mut i)?;
                let v = v.to_string_lossy();
                let allowed = if name == "--spin" {
                    SPIN_VALUES
                } else {
                    SLEEP_VALUES
                };
                let v = check_value(&name, &v, allowed)?;
                match name.as_str() {
                    "--mutex" => o.mutex = Some(v),
                    "--rwlock" => o.rwlock = Some(v),
                    _ => o.spin = Some(v),
                }
            }
            _ => {
                return Err(format!(
                    "unknown option '{s}': allowed are --stats[=1|2], --stats-file FILE, \
                     --lockdep[=report|abort], --lockdep-file FILE, --mutex {}, --rwlock {}, --spin {}, --help, and -- before PROG",
                    SLEEP_VALUES.join("|"),
                    SLEEP_VALUES.join("|"),
                    SPIN_VALUES.join("|")
                ));
            }
        }
        i += 1;
    }
    if o.prog.is_empty() {
        return Err("no program given".into());
    }
    Ok(o)
}

/// The newest existing file among `cands` (by modification time).
fn newest(cands: &[PathBuf]) -> Option<PathBuf> {
    cands
        .iter()
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p.clone())
}

/// Where the preload library is: `$KLOCK_PRELOAD_LIB`; else next to `exe` or in
/// its `deps/` (the newer of the two: when cargo builds the library only as a
/// dependency, e.g. for `cargo test`, the fresh copy is in `deps/` and the one next
/// to the binaries may be stale or missing); else in `exe`'s `../lib`.
fn find_lib(exe: Option<&Path>, env: Option<OsString>) -> Result<PathBuf, String> {
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(std::fs::canonicalize(&p).unwrap_or(p))
        } else {
            Err(format!(
                "KLOCK_PRELOAD_LIB={} is not a file",
                p.to_string_lossy()
            ))
        };
    }
    let mut tried = Vec::new();
    if let Some(dir) = exe.and_then(Path::parent) {
        let near = [dir.join(LIB), dir.join("deps").join(LIB)];
        let installed = dir.join("../lib").join(LIB);
        let found = newest(&near).or_else(|| installed.is_file().then(|| installed.clone()));
        if let Some(p) = found {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
        tried.extend(
            near.iter()
                .chain([&installed])
                .map(|p| p.to_string_lossy().into_owned()),
        );
    }
    Err(format!(
        "cannot find {LIB} (tried: {}); build it with `cargo build --release -p klock-preload` \
         or set KLOCK_PRELOAD_LIB",
        if tried.is_empty() {
            "nothing: own path unknown".to_string()
        } else {
            tried.join(", ")
        }
    ))
}

/// `lib` prepended to an existing `LD_PRELOAD` (which may separate entries with
/// spaces or colons); not added twice.
fn preload_value(lib: &Path, existing: Option<&OsStr>) -> OsString {
    let lib = lib.as_os_str();
    let mut v = OsString::from(lib);
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        let already = e
            .as_bytes()
            .split(|&b| b == b':' || b == b' ')
            .any(|p| p == lib.as_bytes());
        if already {
            return e.to_os_string();
        }
        v.push(":");
        v.push(e);
    }
    v
}

fn usage_error(msg: &str) -> i32 {
    eprintln!("klockrun: {msg}\n\n{USAGE}");
    2
}

fn run() -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    if o.help {
        print!("{USAGE}");
        return 0;
    }
    let exe = std::env::current_exe().ok();
    let lib = match find_lib(exe.as_deref(), std::env::var_os("KLOCK_PRELOAD_LIB")) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("klockrun: {e}");
            return 127;
        }
    };
    let mut cmd = Command::new(&o.prog[0]);
    cmd.args(&o.prog[1..]);
    cmd.env(
        "LD_PRELOAD",
        preload_value(&lib, std::env::var_os("LD_PRELOAD").as_deref()),
    );
    let mut stats = o.stats;
    if let Some(f) = &o.stats_file {
        // Absolute, since PROG may change directory; truncated now, appended to by
        // every process of the run (the library appends).
        let p = PathBuf::from(f);
        let p = if p.is_absolute() {
            p
        } else {
            std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
        };
        if !p.as_os_str().as_bytes().windows(2).any(|w| w == b"%p")
            && let Err(e) = std::fs::File::create(&p)
        {
            eprintln!("klockrun: cannot create {}: {e}", p.to_string_lossy());
            return 2;
        }
        cmd.env("KLOCK_STATS_FILE", &p);
        stats.get_or_insert(1);
    }
    if let Some(l) = stats {
        cmd.env("KLOCK_STATS", l.to_string());
    }
    let mut lockdep = o.lockdep;
    if let Some(f) = &o.lockdep_file {
        // Absolute, since PROG may change directory; appended to.
        let p = PathBuf::from(f);
        let p = if p.is_absolute() {
            p
        } else {
            std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
        };
        cmd.env("KLOCK_LOCKDEP_FILE", &p);
        lockdep.get_or_insert("1");
    }
    if let Some(l) = lockdep {
        cmd.env("KLOCK_LOCKDEP", l);
    }
    for (var, v) in [
        ("KLOCK_MUTEX", &o.mutex),
        ("KLOCK_RWLOCK", &o.rwlock),
        ("KLOCK_SPIN", &o.spin),
    ] {
        if let Some(v) = v {
            cmd.env(var, v);
        }
    }
    let err = cmd.exec();
    let prog = o.prog[0].to_string_lossy();
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            eprintln!("klockrun: {prog}: command not found");
            127
        }
        _ => {
            eprintln!("klockrun: cannot execute {prog}: {err}");
            126
        }
    }
}

fn main() {
    std::process::exit(run());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Opts, String> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_flags_and_program() {
        let o = p(&["--stats=2", "--mutex", "nospin", "--spin=pv", "ls", "-l"]).unwrap();
        assert_eq!(o.stats, Some(2));
        assert_eq!(o.mutex.as_deref(), Some("nospin"));
        assert_eq!(o.spin.as_deref(), Some("pv"));
        assert_eq!(o.prog, vec![OsString::from("ls"), OsString::from("-l")]);
        let o = p(&["--stats", "--", "--weird-prog"]).unwrap();
        assert_eq!(o.stats, Some(1));
        assert_eq!(o.prog, vec![OsString::from("--weird-prog")]);
        let o = p(&["--stats-file", "x.txt", "true"]).unwrap();
        assert_eq!(o.stats_file, Some(OsString::from("x.txt")));
        assert!(p(&["--help"]).unwrap().help);
        assert_eq!(p(&["--lockdep", "ls"]).unwrap().lockdep, Some("1"));
        assert_eq!(
            p(&["--lockdep=abort", "ls"]).unwrap().lockdep,
            Some("abort")
        );
        let o = p(&["--lockdep-file", "ld.txt", "ls"]).unwrap();
        assert_eq!(o.lockdep_file, Some(OsString::from("ld.txt")));
        let e = p(&["--lockdep=loud", "ls"]).unwrap_err();
        assert!(e.contains("allowed are report, abort"), "{e}");
    }

    #[test]
    fn rejects_bad_usage() {
        let e = p(&["--bogus", "ls"]).unwrap_err();
        assert!(
            e.contains("unknown option '--bogus'") && e.contains("--stats"),
            "{e}"
        );
        let e = p(&["--mutex", "mcs", "ls"]).unwrap_err();
        assert!(e.contains("klock, nospin"), "{e}");
        let e = p(&["--spin=ticket", "ls"]).unwrap_err();
        assert!(e.contains("tas, unfair, pv, pvbase, native"), "{e}");
        let e = p(&["--stats=3", "ls"]).unwrap_err();
        assert!(e.contains("1, 2"), "{e}");
        assert!(p(&["--stats"]).unwrap_err().contains("no program"));
        assert!(p(&["--mutex"]).unwrap_err().contains("needs a value"));
    }

    #[test]
    fn preload_is_prepended_once() {
        let lib = Path::new("/x/libklock_preload.so");
        assert_eq!(
            preload_value(lib, None),
            OsString::from("/x/libklock_preload.so")
        );
        assert_eq!(
            preload_value(lib, Some(OsStr::new("/a.so /b.so"))),
            OsString::from("/x/libklock_preload.so:/a.so /b.so")
        );
        assert_eq!(
            preload_value(lib, Some(OsStr::new("/a.so:/x/libklock_preload.so"))),
            OsString::from("/a.so:/x/libklock_preload.so")
        );
    }

    #[test]
    fn library_lookup_prefers_the_newest_build() {
        let d = std::env::temp_dir().join(format!("klockrun-lookup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("deps")).unwrap();
        let exe = d.join("klockrun");
        std::fs::write(d.join("deps").join(LIB), b"new").unwrap();
        let old = std::fs::File::create(d.join(LIB)).unwrap();
        old.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        let got = find_lib(Some(&exe), None).unwrap();
        assert!(got.ends_with(format!("deps/{LIB}")), "{}", got.display());
        std::fs::remove_file(d.join("deps").join(LIB)).unwrap();
        assert!(find_lib(Some(&exe), None).unwrap().ends_with(LIB));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn library_lookup() {
        let e = find_lib(Some(Path::new("/nonexistent/bin/klockrun")), None).unwrap_err();
        assert!(e.contains("/nonexistent/bin/libklock_preload.so"), "{e}");
        let e = find_lib(None, Some(OsString::from("/nonexistent.so"))).unwrap_err();
        assert!(e.contains("KLOCK_PRELOAD_LIB"), "{e}");
    }
}
