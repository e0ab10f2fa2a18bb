//! The C library as a C user gets it: runs the documented install step
//! (`install.sh PREFIX`, into a temporary prefix under the target dir,
//! building with this test's own cargo profile and target dir), then
//! compiles every `tests/c/*.c` with `cc ... $(pkg-config --cflags --libs
//! klock)` against the shared library and once more statically (`pkg-config
//! --static`, the `.a`), and runs each program under a watchdog: it must
//! exit 0. `header_check.c` is also compiled as strict C11 and as C++17.
//!
//! Needs `cc`, `c++` and `pkg-config` (override with CC, CXX, PKG_CONFIG);
//! a missing tool fails the test with a message saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

/// How long one C program may run before the watchdog kills it.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// How long the install step (a cargo build) may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// `KLOCK_SPIN` variants `spinlock.c` runs under.
const SPIN_VARIANTS: [&str; 7] = [
    "unfair", "pv", "pvbase", "native", "ticket", "pvticket", "tas",
];

/// The installed library: the prefix, and where test programs go.
struct Installed {
    prefix: PathBuf,
    bin: PathBuf,
}

impl Installed {
    fn pkg_config_path(&self) -> PathBuf {
        self.prefix.join("lib/pkgconfig")
    }

    fn lib_dir(&self) -> PathBuf {
        self.prefix.join("lib")
    }
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tool(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

/// Run `cmd` to completion under a watchdog; kill it after `timeout`.
fn run(mut cmd: Command, timeout: Duration) -> Output {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "cannot run {what}: {:?} is not installed (the C API tests need a C compiler, \
             a C++ compiler and pkg-config: apt-get install build-essential pkg-config)",
            cmd.get_program()
        ),
        Err(e) => panic!("cannot run {what}: {e}"),
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        Err(_) => {
            // SAFETY: kill(2) on the pid of our own child, which has not been
            // reaped (the waiting thread is still blocked in wait).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let out = rx.recv().ok().and_then(Result::ok);
            panic!(
                "watchdog: {what} did not finish within {timeout:?}; killed it.\n{}",
                out.map(|o| describe(&o)).unwrap_or_default()
            );
        }
    }
}

fn describe(o: &Output) -> String {
    format!(
        "status: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run `cmd`; panic with its output unless it exits 0.
fn run_ok(cmd: Command, timeout: Duration, what: &str) -> Output {
    let shown = format!("{cmd:?}");
    let out = run(cmd, timeout);
    assert!(
        out.status.success(),
        "{what} failed: {shown}\n{}",
        describe(&out)
    );
    out
}

/// The cargo profile this test binary was built with (its directory under
/// the target dir: target/<dir>/deps/c_api-*), as `install.sh` names it.
fn own_profile() -> String {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|s| s.to_str())
        .expect("test binary lives in target/<profile>/deps");
    match dir {
        "debug" => "dev".to_string(),
        other => other.to_string(),
    }
}

/// Run `install.sh prefix` with this test's profile and target dir, and
/// `debug` as KLOCK_INSTALL_DEBUG (None: unset).
fn install(prefix: &Path, debug: Option<&str>) {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target_dir = tmp.parent().expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    let mut cmd = Command::new("sh");
    cmd.arg(crate_dir().join("install.sh"))
        .arg(prefix)
        .env("KLOCK_PROFILE", own_profile())
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("KLOCK_INSTALL_DEBUG");
    if let Some(d) = debug {
        cmd.env("KLOCK_INSTALL_DEBUG", d);
    }
    if std::env::var_os("CARGO").is_none() {
        cmd.env("CARGO", env!("CARGO"));
    }
    run_ok(
        cmd,
        INSTALL_TIMEOUT,
        "install.sh (the documented install step)",
    );
    for f in [
        "include/klock.h",
        "lib/libklock_c.so",
        "lib/libklock_c.a",
        "lib/pkgconfig/klock.pc",
    ] {
        assert!(prefix.join(f).is_file(), "install.sh did not install {f}");
    }
}

/// Install once per test process (tests share it).
fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("klock-c-api");
        let prefix = root.join("prefix");
        let bin = root.join("bin");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&bin).expect("create the test dir");
        install(&prefix, None);
        Installed { prefix, bin }
    })
}

/// The section names of the 64-bit little-endian ELF file `path`.
fn elf_sections(path: &Path) -> Vec<String> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        b.starts_with(b"\x7fELF\x02\x01"),
        "{}: not ELF64 LE",
        path.display()
    );
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(header(shstrndx) + 0x18);
    (0..shnum)
        .map(|i| {
            let name = &b[strtab + u32_at(header(i))..];
            let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            String::from_utf8_lossy(&name[..end]).into_owned()
        })
        .collect()
}

fn has_debug_info(path: &Path) -> bool {
    elf_sections(path).iter().any(|s| s.starts_with(".debug_"))
}

/// `pkg-config <args> klock`, split into arguments.
fn pkg_config(inst: &Installed, args: &[&str]) -> Vec<String> {
    let mut cmd = Command::new(tool("PKG_CONFIG", "pkg-config"));
    cmd.args(args)
        .arg("klock")
        .env("PKG_CONFIG_PATH", inst.pkg_config_path());
    let out = run_ok(cmd, Duration::from_secs(30), "pkg-config");
    String::from_utf8(out.stdout)
        .expect("pkg-config prints UTF-8")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The C programs (every tests/c/*.c), sorted.
fn programs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("tests/c"))
        .expect("tests/c")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    v.sort();
    assert!(v.len() >= 6, "expected the C test programs in tests/c");
    v
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// How a program is linked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Link {
    /// `$(pkg-config --cflags --libs klock)`; run with LD_LIBRARY_PATH.
    Shared,
    /// As Shared plus `-Wl,-rpath,<libdir>`; run without LD_LIBRARY_PATH.
    Rpath,
    /// The `.a`: `-Wl,-Bstatic -lklock_c -Wl,-Bdynamic $(pkg-config
    /// --static --libs klock)`; run without LD_LIBRARY_PATH.
    Static,
}

/// Compile `src` (with `compiler` and `flags`) linked as `link`; returns
/// the executable.
fn compile(inst: &Installed, src: &Path, compiler: &str, flags: &[&str], link: Link) -> PathBuf {
    let std = flags
        .iter()
        .find_map(|f| f.strip_prefix("-std="))
        .unwrap_or("default");
    let exe = inst.bin.join(format!("{}-{std}-{link:?}", stem(src)));
    compile_to(inst, src, compiler, flags, link, exe)
}

/// [`compile`] into `exe` (tests that run in parallel compile to names of
/// their own: writing an executable another test runs fails its exec with
/// ETXTBSY).
fn compile_to(
    inst: &Installed,
    src: &Path,
    compiler: &str,
    flags: &[&str],
    link: Link,
    exe: PathBuf,
) -> PathBuf {
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg(src);
    if flags.contains(&"c++") {
        // `-x c++` applies to the files after it, up to this.
        cmd.arg("-x").arg("none");
    }
    cmd.arg("-o")
        .arg(&exe)
        .arg("-pthread")
        .args(pkg_config(inst, &["--cflags"]));
    match link {
        Link::Shared => {
            cmd.args(pkg_config(inst, &["--libs"]));
        }
        Link::Rpath => {
            cmd.args(pkg_config(inst, &["--libs"]))
                .arg(format!("-Wl,-rpath,{}", inst.lib_dir().display()));
        }
        Link::Static => {
            // -Bstatic makes -lklock_c pick the .a; --as-needed keeps the
            // -lklock_c that pkg-config --static repeats (the .so, now
            // unused) out of the binary's needed libraries.
            cmd.args([
                "-Wl,--as-needed",
                "-Wl,-Bstatic",
                "-lklock_c",
                "-Wl,-Bdynamic",
            ])
            .args(pkg_config(inst, &["--static", "--libs"]));
        }
    }
    run_ok(
        cmd,
        Duration::from_secs(120),
        &format!("compiling {}", src.display()),
    );
    exe
}

/// Run a test program with `args` under the watchdog, with no `KLOCK_*`
/// variables but `env`, and `RUST_BACKTRACE=1` (so that Rust panic text, if
/// any got out, would come with its backtrace); returns its output,
/// whatever the exit. Its stderr must hold no Rust panic text.
fn run_with(
    inst: &Installed,
    exe: &Path,
    link: Link,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("KLOCK_") {
            cmd.env_remove(k);
        }
    }
    if link == Link::Shared {
        cmd.env("LD_LIBRARY_PATH", inst.lib_dir());
    }
    cmd.env("RUST_BACKTRACE", "1").envs(env.iter().copied());
    let out = run(cmd, RUN_TIMEOUT);
    let err = String::from_utf8_lossy(&out.stderr);
    for rust in [
        "panicked",
        "stack backtrace",
        "RUST_BACKTRACE",
        "rustc",
        "core::",
    ] {
        assert!(
            !err.contains(rust),
            "{} {args:?} ({link:?} link, env {env:?}) printed Rust panic text ({rust:?}):\n{}",
            exe.display(),
            describe(&out)
        );
    }
    out
}

/// Run a test program under the watchdog, with `env`; it must exit 0 (and
/// print no Rust panic text: [`run_with`]).
fn run_program(inst: &Installed, exe: &Path, link: Link, env: &[(&str, &str)]) -> String {
    let out = run_with(inst, exe, link, &[], env);
    assert!(
        out.status.success(),
        "{} ({link:?} link, env {env:?}) failed\n{}",
        exe.display(),
        describe(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `tests/c/misuse.c` linked as `link` (Shared or Static), compiled once per
/// test process for the tests that run it with an argument.
fn misuse(link: Link) -> PathBuf {
    static EXES: OnceLock<[PathBuf; 2]> = OnceLock::new();
    let exes = EXES.get_or_init(|| {
        let inst = installed();
        let src = crate_dir().join("tests/c/misuse.c");
        [Link::Shared, Link::Static].map(|l| {
            let exe = inst.bin.join(format!("misuse-cases-{l:?}"));
            compile_to(inst, &src, &tool("CC", "cc"), &C_FLAGS, l, exe)
        })
    });
    match link {
        Link::Static => exes[1].clone(),
        _ => exes[0].clone(),
    }
}

/// stderr's lines.
fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The gnu11 flags every program is built with.
const C_FLAGS: [&str; 6] = ["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"];

fn compile_and_run_all(link: Link) {
    let inst = installed();
    let cc = tool("CC", "cc");
    for src in programs() {
        let exe = compile(inst, &src, &cc, &C_FLAGS, link);
        if stem(&src) == "spinlock" {
            for v in SPIN_VARIANTS {
                let out = run_program(inst, &exe, link, &[("KLOCK_SPIN", v)]);
                // The program itself checks that klock_spinlock_variant()
                // names `v`; this checks it printed what it ran.
                assert!(out.contains(&format!("KLOCK_SPIN={v}, ran {v})")), "{out}");
            }
        } else {
            let out = run_program(inst, &exe, link, &[]);
            print!("{link:?}: {out}");
        }
    }
}

#[test]
fn c_programs_pass_against_the_shared_library() {
    compile_and_run_all(Link::Shared);
}

#[test]
fn c_programs_pass_against_the_static_library() {
    compile_and_run_all(Link::Static);
}

#[test]
fn an_rpath_link_runs_without_ld_library_path() {
    let inst = installed();
    let src = crate_dir().join("tests/c/example.c");
    let exe = compile(inst, &src, &tool("CC", "cc"), &C_FLAGS, Link::Rpath);
    let out = run_program(inst, &exe, Link::Rpath, &[]);
    assert!(out.contains("klock 0."), "{out}");
}

#[test]
fn the_header_compiles_as_strict_c11_and_cxx17() {
    let inst = installed();
    let src = crate_dir().join("tests/c/header_check.c");
    let strict_c = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"];
    let exe = compile(inst, &src, &tool("CC", "cc"), &strict_c, Link::Shared);
    assert!(run_program(inst, &exe, Link::Shared, &[]).contains("PASS header_check (C)"));
    let cxx = [
        "-std=c++17",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-x",
        "c++",
    ];
    let exe = compile(inst, &src, &tool("CXX", "c++"), &cxx, Link::Shared);
    assert!(run_program(inst, &exe, Link::Shared, &[]).contains("PASS header_check (C++)"));
}

#[test]
fn the_pkg_config_file_is_as_documented() {
    let inst = installed();
    let pc = std::fs::read_to_string(inst.pkg_config_path().join("klock.pc")).unwrap();
    for line in [
        "Name: klock",
        "Cflags: -I${includedir}",
        "Libs: -L${libdir} -lklock_c",
        &format!("Version: {}", env!("CARGO_PKG_VERSION")),
        &format!("prefix={}", inst.prefix.display()),
    ] {
        assert!(
            pc.lines().any(|l| l == line),
            "klock.pc lacks {line:?}:\n{pc}"
        );
    }
    let private = pc
        .lines()
        .find_map(|l| l.strip_prefix("Libs.private: "))
        .expect("Libs.private");
    assert!(
        private.contains("-lpthread") || private.contains("-lc"),
        "{private}"
    );
    let libs = pkg_config(inst, &["--static", "--libs"]);
    assert!(libs.iter().any(|a| a == "-lklock_c"), "{libs:?}");
    let cflags = pkg_config(inst, &["--cflags"]);
    assert_eq!(
        cflags,
        [format!("-I{}", inst.prefix.join("include").display())]
    );
}

#[test]
fn the_docs_example_is_the_tested_example() {
    let docs = std::fs::read_to_string(crate_dir().join("../../docs/c.md")).unwrap();
    let block = docs
        .split("```c\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("docs/c.md has a ```c example");
    let example = std::fs::read_to_string(crate_dir().join("tests/c/example.c")).unwrap();
    let body = example
        .split_once("*/\n")
        .map(|(_, b)| b)
        .expect("example.c opens with a comment");
    assert_eq!(
        block, body,
        "docs/c.md's example differs from tests/c/example.c"
    );
}

/// The documented EINVAL of a condvar waited on with two mutexes reaches the
/// C caller with one line of klock's own on stderr, and no Rust panic text
/// (it used to print `thread '<unnamed>' panicked at ...` and, under
/// RUST_BACKTRACE=1, a backtrace).
#[test]
fn a_second_mutex_is_einval_with_one_line_and_no_panic_text() {
    for link in [Link::Shared, Link::Static] {
        let exe = misuse(link);
        let out = run_with(installed(), &exe, link, &["two-mutexes"], &[]);
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(
            stderr_lines(&out),
            [
                "klock: a condvar was waited on with two different mutexes at once; \
                 the second wait returns EINVAL (printed once)"
            ],
            "{link:?}"
        );
    }
}

/// A lock klock finds corrupted aborts the process (SIGABRT) with klock's
/// one-line message first on stderr, and nothing of Rust's: no panic
/// message, no "panic in a function that cannot unwind", no backtrace.
#[test]
fn a_corrupted_lock_aborts_with_one_line_first() {
    for link in [Link::Shared, Link::Static] {
        let exe = misuse(link);
        for mode in ["corrupt-mutex", "corrupt-rwlock"] {
            let out = run_with(installed(), &exe, link, &[mode], &[]);
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{mode} ({link:?}): {}",
                describe(&out)
            );
            let lines = stderr_lines(&out);
            assert_eq!(lines.len(), 1, "{mode} ({link:?}): {}", describe(&out));
            assert!(
                lines[0].starts_with("klock: corrupted queue tail 0x")
                    && lines[0].ends_with("; aborting"),
                "{mode} ({link:?}): {}",
                lines[0]
            );
        }
    }
}

/// A bad `KLOCK_SPIN` gets exactly one warning, listing every variant; a
/// misspelt `KLOCK_*` name gets one, naming the closest known one; a known
/// name with a good value gets none.
#[test]
fn tunable_warnings_are_one_line_each() {
    let exe = misuse(Link::Shared);
    let env = [
        ("KLOCK_SPIN", "foo"),
        ("KLOCK_MUTX_SPIN_NS", "5"),
        ("KLOCK_MUTEX_SPIN_NS", "5"),
    ];
    let out = run_with(installed(), &exe, Link::Shared, &["spin-variant"], &env);
    assert!(out.status.success(), "{}", describe(&out));
    let lines = stderr_lines(&out);
    let spin: Vec<&String> = lines.iter().filter(|l| l.contains("KLOCK_SPIN=")).collect();
    assert_eq!(spin.len(), 1, "{lines:?}");
    for v in SPIN_VARIANTS {
        assert!(spin[0].contains(v), "{} lacks {v}", spin[0]);
    }
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("KLOCK_MUTX_SPIN_NS"))
            .collect::<Vec<_>>(),
        ["klock: unknown variable KLOCK_MUTX_SPIN_NS (did you mean KLOCK_MUTEX_SPIN_NS?)"]
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("spinlock variant unfair"));
}

/// install.sh installs the shared library without debug info (the release
/// build keeps line tables: 4.8 MiB of the .so's 5 MiB, and most of the
/// .a's 22 MiB), keeps it with KLOCK_INSTALL_DEBUG=1, and with
/// KLOCK_INSTALL_DEBUG=split writes it beside the stripped .so, which links
/// to it.
#[test]
fn installed_libraries_are_stripped_with_debug_info_on_request() {
    let inst = installed();
    let so = inst.lib_dir().join("libklock_c.so");
    assert!(!has_debug_info(&so), "{:?}", elf_sections(&so));
    assert!(elf_sections(&so).iter().any(|s| s == ".dynsym"));
    assert!(!inst.lib_dir().join("libklock_c.so.debug").exists());

    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("klock-c-api-debug");
    let _ = std::fs::remove_dir_all(&root);
    let (keep, split) = (root.join("keep"), root.join("split"));
    install(&keep, Some("1"));
    assert!(has_debug_info(&keep.join("lib/libklock_c.so")));
    install(&split, Some("split"));
    let lib = split.join("lib");
    assert!(!has_debug_info(&lib.join("libklock_c.so")));
    assert!(
        elf_sections(&lib.join("libklock_c.so"))
            .iter()
            .any(|s| s == ".gnu_debuglink")
    );
    assert!(has_debug_info(&lib.join("libklock_c.so.debug")));
    let size = |p: PathBuf| std::fs::metadata(p).unwrap().len();
    assert!(size(lib.join("libklock_c.a")) < size(keep.join("lib/libklock_c.a")));
    let _ = std::fs::remove_dir_all(&root);
}
