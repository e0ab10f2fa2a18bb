//! Per-thread words in the **initial-exec** TLS model: `thread_word!`
//! (exported under the hidden name `__klock_thread_word` because a
//! `macro_rules!` macro can only be exported at the crate root; use it as
//! `klock::internal::tls::thread_word!`).
//!
//! A `thread_local!` in a shared object (the C library, the interposer) is
//! a general-dynamic access, a call to `__tls_get_addr` (about 3 ns), and
//! stable Rust has no per-variable TLS model. On x86-64 Linux this macro
//! defines a 4-byte `.tbss` object with assembly and reads it with one
//! `%fs`-relative load through its `GOTTPOFF` offset. A shared object that
//! uses it is marked `STATIC_TLS`; glibc loads it at startup (preload) or
//! by `dlopen` from its static-TLS reserve, which a few words do not
//! exhaust. Static TLS stays accessible while the thread's destructors run.
//! Other targets use the `thread_local!` fallback of each user.

/// `thread_word!(mod NAME = "SYMBOL")` defines `mod NAME` with
/// `get() -> u32`, `set(u32)` and `add(u32)` (wrapping) on the calling thread's copy of a 4-byte
/// initial-exec thread-local (initially 0) named `SYMBOL` (hidden; pick a
/// name unique in the process image, with a version suffix). x86-64 Linux
/// only.
///
/// ```
/// # #[cfg(all(target_arch = "x86_64", target_os = "linux"))] {
/// klock::internal::tls::thread_word!(mod w = "klock_doc_example_word_v1");
/// assert_eq!(w::get(), 0);
/// w::set(7);
/// w::add(2);
/// w::add(1u32.wrapping_neg());
/// assert_eq!(w::get(), 8);
/// assert_eq!(std::thread::spawn(w::get).join().unwrap(), 0);
/// # }
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __klock_thread_word {
    (mod $name:ident = $sym:literal) => {
        #[allow(dead_code)]
        mod $name {
            ::std::arch::global_asm!(
                concat!(".pushsection .tbss.", $sym, ",\"awT\",@nobits"),
                ".p2align 2",
                concat!(".globl ", $sym),
                concat!(".hidden ", $sym),
                concat!(".type ", $sym, ",@object"),
                concat!(".size ", $sym, ",4"),
                concat!($sym, ":"),
                ".zero 4",
                ".popsection",
            );

            /// Read the calling thread's word.
            #[inline(always)]
            pub fn get() -> u32 {
                let v: u32;
                // SAFETY: the symbol is a 4-byte object in this image's TLS
                // block; its GOTTPOFF entry holds its offset from the thread
                // pointer, so the load reads the calling thread's copy and
                // nothing else.
                unsafe {
                    ::std::arch::asm!(
                        concat!("mov {off}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                        "mov {v:e}, dword ptr fs:[{off}]",
                        off = out(reg) _,
                        v = out(reg) v,
                        options(nostack, readonly, preserves_flags),
                    );
                }
                v
            }

            /// Add `d` to the calling thread's word (wrapping; subtract
            /// with `d.wrapping_neg()`): one instruction after the offset
            /// load.
            #[inline(always)]
            pub fn add(d: u32) {
                // SAFETY: as in `get`; changes only the calling thread's copy
                // (a plain, non-atomic add: no other thread touches it).
                unsafe {
                    ::std::arch::asm!(
                        concat!("mov {off}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                        "add dword ptr fs:[{off}], {d:e}",
                        off = out(reg) _,
                        d = in(reg) d,
                        options(nostack),
                    );
                }
            }

            /// Write the calling thread's word.
            #[inline(always)]
            pub fn set(v: u32) {
                // SAFETY: as in `get`; writes only the calling thread's copy.
                unsafe {
                    ::std::arch::asm!(
                        concat!("mov {off}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                        "mov dword ptr fs:[{off}], {v:e}",
                        off = out(reg) _,
                        v = in(reg) v,
                        options(nostack, preserves_flags),
                    );
                }
            }
        }
    };
}
