//! The `lockbench` binary; see the library's `cli` module.

fn main() {
    std::process::exit(lockbench::cli::main());
}
