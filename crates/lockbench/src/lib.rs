//! lockbench: side-by-side lock benchmarks for klock and its competitors.
//!
//! Layers (each reusable by new experiments under [`exp`]); a module only uses modules
//! listed before it (no import circles):
//! * [`work`] calibrated busy work; [`costs`] the machine's costs (cache-line
//!   transfer, futex wake, `sched_yield`, atomic RMW); [`sys`] rusage, /proc, machine; [`adapter`] the one
//!   lock trait; [`runner`] the generic contended runner over it; [`locks`] the registry
//!   (entries instantiate the runner per lock type);
//! * [`gate`] idle gate; [`noise`] CPU-hog threads; [`quota`] CPU quota cgroups;
//!   [`progress`] the progress bar;
//! * [`stats`] statistics; [`record`] the JSON/CSV record; [`verdict`] klock's defaults
//!   against the best peer (data only); [`chart`] plotters charts (a leaf: it knows no
//!   locks or records); [`accounting`] the per-op accounting and worst waits of
//!   the kept runs; [`table`] terminal tables and the verdict's table; [`html`] the
//!   HTML report and its chart groups; [`explain`] `--explain`'s text;
//! * [`exp`] experiments (mutex, rwlock, uncontended, spin, fserver, rwsem, fio,
//!   preload, report) and their shared path; [`compare`] two reports side by side;
//!   [`cli`] the command line.

pub mod accounting;
pub mod adapter;
pub mod chart;
pub mod cli;
pub mod compare;
pub mod costs;
pub mod exp;
pub mod explain;
pub mod gate;
pub mod html;
pub mod locks;
pub mod noise;
pub mod progress;
pub mod quota;
pub mod record;
pub mod runner;
pub mod stats;
pub mod sys;
pub mod syscount;
pub mod table;
pub mod verdict;
pub mod work;
