//! Build script: compiles `c/condwait.c`, the cancellable sleep of the
//! condvar wait, with `-fexceptions` (so `pthread_cleanup_push` registers an
//! unwinding cleanup that runs when cancellation unwinds the frame).
fn main() {
    println!("cargo:rerun-if-changed=c/condwait.c");
    cc::Build::new()
        .file("c/condwait.c")
        .flag("-fexceptions")
        .flag("-fasynchronous-unwind-tables")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .warnings_into_errors(true)
        .compile("klock_preload_c");
}
