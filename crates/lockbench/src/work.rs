//! Calibrated busy work, the critical-section and outside payloads: a dependent
//! multiply-add chain made opaque to the optimiser (an empty `asm!` on x86_64/aarch64,
//! `black_box` elsewhere), calibrated once per process ([`calibration`]); see
//! `docs/lockbench.md`, "Workloads".

use std::sync::OnceLock;
use std::time::Instant;

/// Runs `iters` iterations of the opaque dependent arithmetic chain and returns its value.
#[inline(always)]
pub fn spin_work(iters: u64) -> u64 {
    spin_work_from(0x9E37_79B9_7F4A_7C15, iters)
}

/// Like [`spin_work`], but the chain starts from `seed`. Feeding one call's result into
/// the next makes consecutive work blocks one dependency chain, so out-of-order
/// execution cannot overlap them (the runner chains NCS → CS → NCS this way).
///
/// ```
/// let a = lockbench::work::spin_work_from(1, 5);
/// assert_eq!(a, lockbench::work::spin_work_from(1, 5));
/// ```
#[inline(always)]
pub fn spin_work_from(seed: u64, iters: u64) -> u64 {
    let mut x = seed;
    for _ in 0..iters {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        opaque(&mut x);
    }
    x
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn opaque(x: &mut u64) {
    // SAFETY: an empty asm block that only claims to read and write a register; it
    // touches no memory and has no other effect.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(reg) * x,
            options(nomem, nostack, preserves_flags)
        )
    };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn opaque(x: &mut u64) {
    *x = std::hint::black_box(*x);
}

/// Result of the once-per-process calibration of [`spin_work`].
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Calibration {
    /// Nanoseconds per iteration of the work loop (best of several trials).
    pub ns_per_iter: f64,
}

impl Calibration {
    /// Iterations needed for about `ns` nanoseconds of work (0 for 0).
    pub fn iters_for(&self, ns: f64) -> u64 {
        if ns <= 0.0 {
            0
        } else {
            (ns / self.ns_per_iter).round().max(1.0) as u64
        }
    }
    /// Nanoseconds that `iters` iterations take.
    pub fn ns_for(&self, iters: u64) -> f64 {
        iters as f64 * self.ns_per_iter
    }
}

/// The process-wide calibration, measured on first use (~20 ms).
pub fn calibration() -> Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    *CAL.get_or_init(|| {
        const N: u64 = 200_000;
        let mut best = f64::INFINITY;
        // Warm up, then take the fastest of several trials (the least disturbed one).
        let mut acc = std::hint::black_box(spin_work(N));
        for _ in 0..9 {
            let t = Instant::now();
            acc = std::hint::black_box(spin_work_from(acc, std::hint::black_box(N)));
            let ns = t.elapsed().as_nanos() as f64 / N as f64;
            if ns < best {
                best = ns;
            }
        }
        Calibration {
            ns_per_iter: best.max(0.01),
        }
    })
}
