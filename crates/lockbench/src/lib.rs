//! lockbench: side-by-side lock benchmarks for klock and its competitors.
//!
//! Layers (each reusable by new experiments under [`exp`]):
//! * [`work`] calibrated busy work; [`adapter`] the one lock trait; [`runner`] the
//!   generic contended runner over it; [`locks`] the registry (entries instantiate the
//!   runner per lock type);
//! * [`gate`] idle gate; [`noise`] CPU-hog threads; [`sys`] rusage, /proc, machine;
//! * [`stats`] statistics; [`record`] the JSON/CSV record; [`table`] terminal tables;
//!   [`html`] the HTML report, [`chart`] its plotters charts; [`verdict`] klock's
//!   defaults against the best peer; [`compare`] two reports side by side;
//!   [`progress`] the progress bar; [`exp`] experiments (mutex, rwlock, uncontended,
//!   spin, fserver, rwsem, fio, preload, report); [`cli`] the command line.

pub mod adapter;
pub mod chart;
pub mod cli;
pub mod compare;
pub mod exp;
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
pub mod table;
pub mod verdict;
pub mod work;
