//! The statistics settings ([`Config`]) and reading them from the environment
//! (`KLOCK_STATS`, `KLOCK_STATS_FILE`, `KLOCK_STATS_TOP`, `KLOCK_STATS_SLOTS`)
//! through the interposer's one environment accessor, which returns nothing in
//! secure-execution mode. Unknown values fall back to "off" or to the defaults,
//! with a warning on stderr.

use crate::stats::output::warn;
use crate::stats::table::DEFAULT_SLOTS;

/// Default and largest number of locks listed.
pub const DEFAULT_TOP: usize = 10;
/// Largest `KLOCK_STATS_TOP`.
pub const MAX_TOP: usize = 100;

/// The interposer's one environment accessor (nothing in secure-execution mode).
fn getenv(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    crate::config::env(name)
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |a, &c| {
        c.is_ascii_digit().then(|| a * 10 + (c - b'0') as u64)
    })
}

/// Statistics configuration (normally read from the environment by [`init`]).
///
/// [`init`]: crate::stats::init
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    /// 0 = off, 1 = report, 2 = report with stacks.
    pub level: u8,
    /// `KLOCK_STATS_FILE` (None = stderr).
    pub file: Option<&'a [u8]>,
    /// Locks listed.
    pub top: usize,
    /// Table slots.
    pub slots: usize,
}

impl Config<'static> {
    /// Reads `KLOCK_STATS`, `KLOCK_STATS_FILE`, `KLOCK_STATS_TOP`, `KLOCK_STATS_SLOTS`.
    /// Unknown values turn statistics off or fall back to the defaults, with a
    /// warning on stderr (for `KLOCK_STATS`, klock's tunables print it).
    pub fn from_env() -> Config<'static> {
        let level = match getenv(c"KLOCK_STATS") {
            None | Some(b"") | Some(b"0") => 0,
            Some(b"1") => 1,
            Some(b"2") => 2,
            // Statistics off, without a warning of our own: klock's
            // tunables own `KLOCK_STATS` and already print the one line
            // for a bad value (one warning per bad value, issue 30).
            Some(_) => 0,
        };
        let top = match getenv(c"KLOCK_STATS_TOP").map(parse_u64) {
            None => DEFAULT_TOP,
            Some(Some(n)) if (1..=MAX_TOP as u64).contains(&n) => n as usize,
            Some(_) => {
                warn(b"klock-stats: KLOCK_STATS_TOP must be 1..=100; using 10\n");
                DEFAULT_TOP
            }
        };
        let slots = match getenv(c"KLOCK_STATS_SLOTS").map(parse_u64) {
            None => DEFAULT_SLOTS,
            Some(Some(n)) if (64..=1 << 24).contains(&n) => n as usize,
            Some(_) => {
                warn(b"klock-stats: KLOCK_STATS_SLOTS must be 64..=16777216; using 65536\n");
                DEFAULT_SLOTS
            }
        };
        Config {
            level,
            file: getenv(c"KLOCK_STATS_FILE").filter(|f| !f.is_empty()),
            top,
            slots,
        }
    }
}
