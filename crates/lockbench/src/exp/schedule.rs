//! The one interleaved loop every experiment runs its points through ([`interleave`]):
//! repetitions round-robin over the points, the idle gate before each run, noise
//! threads, a [`Window`] for foreign CPU use and steal, and klock's event counters
//! around each run; how it repeats and gates is a [`Schedule`].

use std::time::Duration;

use crate::gate::{GateConfig, Window, wait_idle};
use crate::noise::Noise;
use crate::progress::Progress;

/// How [`interleave`] repeats and gates runs.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Repetitions of the whole list of points.
    pub runs: usize,
    /// The idle gate: wait for quiet before each run.
    pub gate: GateConfig,
    /// Discard and retry a run the gate finds polluted (at most `gate.max_retries`
    /// times, within the gate's budget); without it such a run is only marked.
    pub retry: bool,
    /// On odd repetitions run each adjacent pair of points in reverse order (two sides
    /// of a comparison, so that neither always goes second).
    pub swap_pairs: bool,
}

impl Schedule {
    /// `runs` repetitions behind `gate`, no retry, in list order.
    pub fn new(runs: usize, gate: GateConfig) -> Schedule {
        Schedule {
            runs,
            gate,
            retry: false,
            swap_pairs: false,
        }
    }
}

/// What [`interleave`] needs to know about a point: its progress label, planned
/// progress units and noise threads.
pub struct Step {
    /// Progress label (`fio klock_rwsem T=8`).
    pub label: String,
    /// Planned progress units of one run ([`crate::progress::run_units`]).
    pub units: u64,
    /// CPU-hog threads running during the run.
    pub noise: usize,
}

/// One kept run, in the order the runs happened.
#[derive(Clone, Debug)]
pub struct Done<R> {
    /// Index of the point.
    pub point: usize,
    /// What the run returned.
    pub out: R,
    /// The idle gate reached quiet before the run.
    pub quiet: bool,
    /// Foreign CPU use during the run exceeded the gate's threshold (gate enabled).
    pub polluted: bool,
    /// Steal time during the run, ns.
    pub steal_ns: u64,
    /// Polluted runs of this point discarded (and retried) before this one.
    pub discarded: usize,
    /// klock's event-counter delta around the run (process-wide; all zero unless built
    /// with `--features stats`).
    pub events: klock::stat::Snapshot,
}

/// The one interleaved loop: `s.runs` repetitions over `points` (A B C A B C …), each
/// run behind the idle gate, with its noise threads, timed by a [`Window`] for foreign
/// CPU use and steal, between two snapshots of klock's counters; progress on `prog`.
/// Returns every kept run in the order they ran.
pub fn interleave<P, R>(
    points: &[P],
    s: &Schedule,
    prog: &Progress,
    step: impl Fn(&P) -> Step,
    mut run: impl FnMut(usize, &P) -> R,
) -> Vec<Done<R>> {
    let runs = s.runs.max(1);
    let mut done = Vec::with_capacity(points.len() * runs);
    for rep in 0..runs {
        for i in 0..points.len() {
            let i = if s.swap_pairs && rep % 2 == 1 && (i ^ 1) < points.len() {
                i ^ 1
            } else {
                i
            };
            let st = step(&points[i]);
            let msg = format!("{} run {}/{runs}", st.label, rep + 1);
            prog.message(&msg);
            let mut discarded = 0;
            loop {
                let quiet = wait_idle(&s.gate);
                let noise = Noise::start(st.noise);
                let w = Window::begin();
                let ev0 = klock::stat::snapshot();
                let out = run(i, &points[i]);
                let events = klock::stat::snapshot().delta(&ev0);
                let wr = w.end();
                noise.stop();
                let polluted = s.gate.enabled && wr.polluted(&s.gate);
                if polluted
                    && s.retry
                    && discarded < s.gate.max_retries as usize
                    && crate::gate::budget_left(&s.gate)
                {
                    crate::gate::charge(Duration::from_nanos(wr.elapsed_ns));
                    discarded += 1;
                    continue;
                }
                done.push(Done {
                    point: i,
                    out,
                    quiet,
                    polluted,
                    steal_ns: wr.steal_ns,
                    discarded,
                    events,
                });
                break;
            }
            let note = if discarded > 0 {
                format!(" ({discarded} discarded)")
            } else {
                String::new()
            };
            prog.inc(st.units, &format!("{msg} done{note}"));
        }
    }
    done
}
