//! Progress on stderr: an [indicatif](https://docs.rs/indicatif) bar with elapsed
//! time and ETA, drawn only when stderr is a terminal and progress is wanted (not
//! `--quiet`). Otherwise nothing is printed.
//!
//! Units are planned milliseconds of measurement (a run of a 0.3 s window counts 300
//! plus a small fixed overhead), so the ETA tracks wall time even when the phases'
//! windows differ. A suite such as `report` opens one [`Progress::suite`] bar for all
//! its phases; a [`Progress`] created while it is open ticks that bar instead of
//! drawing its own.

use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Fixed cost per run added to its window, ms (thread start-up, drain, idle gate).
pub const RUN_OVERHEAD_MS: u64 = 25;

/// Planned units of one run with window `d`.
pub fn run_units(d: Duration) -> u64 {
    d.as_millis() as u64 + RUN_OVERHEAD_MS
}

static SUITE: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn suite_bar() -> Option<ProgressBar> {
    SUITE.lock().ok().and_then(|g| g.clone())
}

fn new_bar(total: u64, on: bool) -> Option<ProgressBar> {
    if !on || !crate::sys::stderr_is_tty() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total.max(1)), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar:.cyan/blue} {percent:>3}% ETA {eta:<4} {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

/// A progress handle for one batch of runs, or for a whole suite of them
/// ([`Progress::suite`]); its bar is cleared when it is dropped.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The bar is this handle's (not an open suite's).
    owned: bool,
    /// This handle is the open suite's.
    suite: bool,
}

impl Progress {
    /// A bar of `total` units, drawn if `on` and stderr is a terminal; while a
    /// suite is open, the suite's bar is ticked instead.
    pub fn new(total: u64, on: bool) -> Progress {
        if let Some(b) = suite_bar() {
            return Progress {
                bar: on.then_some(b),
                owned: false,
                suite: false,
            };
        }
        Progress {
            bar: new_bar(total, on),
            owned: true,
            suite: false,
        }
    }
    /// Opens a bar over a whole suite of `total` planned units (see [`run_units`]):
    /// the handles created until it is dropped tick it.
    pub fn suite(total: u64, on: bool) -> Progress {
        let bar = new_bar(total, on);
        if let (Some(b), Ok(mut g)) = (&bar, SUITE.lock()) {
            *g = Some(b.clone());
        }
        Progress {
            bar,
            owned: true,
            suite: true,
        }
    }
    /// A handle that never draws.
    pub fn hidden() -> Progress {
        Progress::new(0, false)
    }
    /// Whether anything is drawn.
    pub fn visible(&self) -> bool {
        self.bar.is_some()
    }
    /// Advances by `units` and shows `msg` (what just finished or runs next).
    pub fn inc(&self, units: u64, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
            b.inc(units);
        }
    }
    /// Prints a line on stderr above the bar (or plainly, without one).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }
    /// Shows `msg` without advancing.
    pub fn message(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
        }
    }
    /// Removes the bar (a suite's bar stays until the suite ends).
    pub fn finish(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.suite
            && let Ok(mut g) = SUITE.lock()
        {
            *g = None;
        }
        if let Some(b) = &self.bar
            && self.owned
        {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_or_not_a_terminal_draws_nothing() {
        // Tests run with stderr captured or piped, or `on` is false: never a bar.
        assert!(!Progress::new(10, false).visible());
        let s = Progress::suite(10, false);
        assert!(!s.visible());
        assert!(!Progress::new(10, true).visible() || crate::sys::stderr_is_tty());
        drop(s);
        assert_eq!(run_units(Duration::from_millis(300)), 300 + RUN_OVERHEAD_MS);
    }
}
