//! lockbench's own C programs of the `preload` experiment (`@NAME` in the workloads
//! table): `nested` (nested locking in one consistent order) and `held_cost` (an
//! uncontended lock+unlock with 0, 1, 3 other locks held), built with `$CC` (default
//! `cc`) `-O2` next to lockbench; `nested` also with `-fsanitize=thread` for
//! `--lockdep`'s ThreadSanitizer side.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::exp::CliError;
use crate::exp::proc::run_captured;

/// The programs' sources, by name.
pub const SOURCES: [(&str, &str); 2] = [
    ("nested", include_str!("../c/nested.c")),
    ("held_cost", include_str!("../c/held_cost.c")),
];

/// The file name of the ThreadSanitizer build of `name`.
pub fn tsan_name(name: &str) -> String {
    format!("{name}_tsan")
}

/// The built programs: where they are.
#[derive(Clone, Debug, Default)]
pub struct Built {
    /// The directory they were built in.
    pub dir: PathBuf,
}

impl Built {
    /// The path of the program `name` (a plain build), or its ThreadSanitizer build.
    pub fn path(&self, name: &str, tsan: bool) -> PathBuf {
        if tsan {
            self.dir.join(tsan_name(name))
        } else {
            self.dir.join(name)
        }
    }
}

/// The C compiler: `$CC`, else `cc`.
fn cc() -> std::ffi::OsString {
    std::env::var_os("CC")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "cc".into())
}

/// Builds program `name` into `dir` (`-O2`, plus `extra` flags) as `out`.
fn build_one(dir: &Path, name: &str, out: &str, extra: &[&str]) -> Result<PathBuf, String> {
    let source = (SOURCES.iter().find(|s| s.0 == name))
        .ok_or_else(|| format!("no C program named {name}"))?
        .1;
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let bin = dir.join(out);
    let cc = cc();
    let mut c = Command::new(&cc);
    c.arg("-O2")
        .args(extra)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg("-lpthread");
    let f = run_captured(c, Some(Duration::from_secs(120)));
    if !f.ok {
        return Err(format!(
            "cannot build {} with {} {}: {}",
            src.display(),
            cc.to_string_lossy(),
            extra.join(" "),
            f.error("cc")
        ));
    }
    Ok(bin)
}

/// Builds the plain programs `names` into `dir`.
pub fn build(dir: &Path, names: &[&str]) -> Result<Built, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    for n in names {
        build_one(dir, n, n, &[]).map_err(|e| CliError(format!("{e} (set CC to a C compiler)")))?;
    }
    Ok(Built {
        dir: dir.to_path_buf(),
    })
}

/// Builds the ThreadSanitizer version of `name` into `built.dir`
/// (`-O2 -fsanitize=thread`), checking that it runs; why not, when it cannot be
/// built or run (no libtsan, or a kernel whose address layout TSan rejects).
pub fn build_tsan(built: &Built, name: &str) -> Result<PathBuf, String> {
    let bin = build_one(&built.dir, name, &tsan_name(name), &["-fsanitize=thread"])?;
    let mut c = Command::new(&bin);
    c.args(["1", "1"]);
    let f = run_captured(c, Some(Duration::from_secs(60)));
    if !f.ok {
        return Err(f.error(&format!("{} (a trial run)", bin.display())));
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let b = Built {
            dir: PathBuf::from("/b"),
        };
        assert_eq!(b.path("nested", false), PathBuf::from("/b/nested"));
        assert_eq!(b.path("nested", true), PathBuf::from("/b/nested_tsan"));
        assert!(SOURCES.iter().all(|s| s.1.contains("int main")));
    }
}
