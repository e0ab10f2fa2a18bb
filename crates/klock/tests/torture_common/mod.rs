//! Pieces shared by the torture tests (`torture_*.rs`): the PRNG, a busy
//! loop for hold/think times, and reading a knob from the environment.
#![allow(dead_code)]

/// xorshift64* (no dependency; every thread seeds its own).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (`0` for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Burn `iters` loop iterations (a hold or think time the optimiser keeps).
pub fn work(iters: u64) {
    let mut x = 0u64;
    for i in 0..iters {
        x = std::hint::black_box(x.wrapping_add(i));
    }
}

/// A numeric knob from the environment, `default` when unset; a bad value
/// fails the test with the variable's name.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected a number")),
        Err(_) => default,
    }
}
