//! klock-preload: an `LD_PRELOAD` interposer that swaps the pthread locks of
//! unmodified C/C++ programs for klock's (work in progress).

pub mod stats;
