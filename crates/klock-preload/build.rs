//! Build script: compiles the C part of the interposer (added later).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
