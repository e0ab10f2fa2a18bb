//! The idle gate: wait for other processes to quiet down before a run, and detect runs
//! polluted by foreign CPU use (all CPUs' busy time from /proc/stat minus our own
//! `getrusage`); bounded everywhere, so a busy machine only flags runs. How it decides
//! and its limits: `docs/lockbench.md`, "Idle gate".

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys::{ProcStat, Usage, proc_stat, process_usage, tick_ns};

/// Idle-gate settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GateConfig {
    /// Whether the gate is active at all.
    pub enabled: bool,
    /// Longest wait for quiet before a run.
    pub max_wait: Duration,
    /// Sampling window while waiting.
    pub window: Duration,
    /// Foreign CPU use counted as "noticeable", as a fraction of one CPU.
    pub busy_frac: f64,
    /// Retries of a polluted run before it is kept and flagged.
    pub max_retries: u32,
    /// Total time the gate may cost this process (waiting plus discarded runs); once
    /// spent, runs start without waiting and are never retried (only flagged).
    /// `None`: unbounded (each wait and retry count is still bounded).
    pub budget: Option<Duration>,
}

/// Time spent by the gate in this process (waits + discarded runs), ns.
static SPENT_NS: AtomicU64 = AtomicU64::new(0);

/// Charges `d` to the process-wide gate budget.
pub fn charge(d: Duration) {
    // Relaxed: a statistic; no data is published with it.
    SPENT_NS.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// Whether the gate may still spend time under `cfg`'s budget.
pub fn budget_left(cfg: &GateConfig) -> bool {
    // Relaxed: a statistic, see `charge`.
    cfg.budget
        .is_none_or(|b| SPENT_NS.load(Ordering::Relaxed) < b.as_nanos() as u64)
}

impl GateConfig {
    /// Defaults: wait up to 2 s in 100-ms windows, threshold 10% of one CPU, 3 retries.
    /// Disabled when the environment variable `LOCKBENCH_NO_IDLE_GATE` is set to
    /// anything but `0`.
    pub fn from_env() -> GateConfig {
        let off = std::env::var("LOCKBENCH_NO_IDLE_GATE").is_ok_and(|v| v != "0");
        GateConfig {
            enabled: !off,
            max_wait: Duration::from_secs(2),
            window: Duration::from_millis(100),
            busy_frac: 0.10,
            max_retries: 3,
            budget: None,
        }
    }
    /// A disabled gate.
    pub fn disabled() -> GateConfig {
        GateConfig {
            enabled: false,
            ..GateConfig::from_env()
        }
    }
}

/// A measurement window of foreign CPU use.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    t0: Instant,
    stat: ProcStat,
    own: Usage,
}

/// What a [`Window`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowReport {
    /// CPU time used by other processes, nanoseconds (tick resolution).
    pub foreign_ns: u64,
    /// Steal time during the window, nanoseconds.
    pub steal_ns: u64,
    /// Window length, nanoseconds.
    pub elapsed_ns: u64,
}

impl Window {
    /// Starts a window now.
    pub fn begin() -> Window {
        Window {
            t0: Instant::now(),
            stat: proc_stat(),
            own: process_usage(),
        }
    }
    /// Ends the window.
    pub fn end(&self) -> WindowReport {
        let st = proc_stat();
        let own = process_usage().since(&self.own);
        let tick = tick_ns();
        let busy = st.busy.saturating_sub(self.stat.busy) * tick;
        WindowReport {
            foreign_ns: busy.saturating_sub(own.cpu_ns),
            steal_ns: st.steal.saturating_sub(self.stat.steal) * tick,
            elapsed_ns: self.t0.elapsed().as_nanos() as u64,
        }
    }
}

impl WindowReport {
    /// Whether foreign CPU use in this window was noticeable under `cfg`.
    pub fn polluted(&self, cfg: &GateConfig) -> bool {
        let limit = (self.elapsed_ns as f64 * cfg.busy_frac).max(2.0 * tick_ns() as f64);
        self.foreign_ns as f64 > limit
    }
}

/// Waits (bounded by `cfg.max_wait` and the budget) until a window shows no noticeable foreign CPU use.
/// Returns `true` if quiet was reached (or the gate is disabled), `false` on timeout.
pub fn wait_idle(cfg: &GateConfig) -> bool {
    if !cfg.enabled {
        return true;
    }
    if !budget_left(cfg) {
        return false;
    }
    let t0 = Instant::now();
    let deadline = t0 + cfg.max_wait;
    let quiet = loop {
        let w = Window::begin();
        std::thread::sleep(cfg.window);
        if !w.end().polluted(cfg) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
    };
    charge(t0.elapsed());
    quiet
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> GateConfig {
        GateConfig {
            enabled: true,
            ..GateConfig::from_env()
        }
    }

    #[test]
    fn pollution_threshold_is_fraction_of_window_but_at_least_two_ticks() {
        let (tick, second) = (tick_ns(), 1_000_000_000);
        // 10% of one CPU over 1 s = 100 ms; over 10 ms the two-tick floor applies
        // (one tick of noise is not pollution).
        for (foreign_ns, elapsed_ns, polluted) in [
            (0, second, false),
            (second / 20, second, false),
            (second / 5, second, true),
            (tick, 10_000_000, false),
            (3 * tick, 10_000_000, true),
        ] {
            let rep = WindowReport {
                foreign_ns,
                steal_ns: 0,
                elapsed_ns,
            };
            assert_eq!(rep.polluted(&cfg()), polluted, "{rep:?}");
        }
    }

    #[test]
    fn disabled_gate_returns_at_once() {
        assert!(wait_idle(&GateConfig::disabled()));
    }
}
