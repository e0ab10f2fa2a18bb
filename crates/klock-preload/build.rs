//! Build script: compiles `c/condwait.c`, the cancellable sleep of the
//! condvar wait, with `-fexceptions` (so `pthread_cleanup_push` registers an
//! unwinding cleanup that runs when cancellation unwinds the frame).
fn main() {
    println!("cargo:rerun-if-changed=c/condwait.c");
    // `pthread_spin_lock`/`unlock` as GNU indirect functions (`spin::entry`):
    // x86-64 Linux with glibc, whose loader runs the resolvers.
    println!("cargo:rustc-check-cfg=cfg(ifunc_entry)");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
    {
        println!("cargo:rustc-cfg=ifunc_entry");
    }
    cc::Build::new()
        .file("c/condwait.c")
        .flag("-fexceptions")
        .flag("-fasynchronous-unwind-tables")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .warnings_into_errors(true)
        .compile("klock_preload_c");
}
