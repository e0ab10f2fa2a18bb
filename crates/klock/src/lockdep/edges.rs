//! The recorded edges: their keys and their records, written under the
//! graph lock before a key is published and never changed after. Below
//! `graph` (which records and searches them) and `order` (which keeps them
//! sorted); the report reads them.
//!
//! ```text
//! key = from id (30 bits) << 34 | to id (30 bits) << 4 | to_read << 2 | from_read << 1 | to_passing
//! ```

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

use super::region::Region;
use super::types::Mode;

/// Distinct edges the process can record (then new orders go unchecked, said
/// once: `graph::full`).
pub(super) const MAX_EDGES: usize = 1 << 18;
/// Frames kept of the stack that first made an edge.
pub(super) const FRAMES: usize = 14;
/// An edge's key (see the module docs): `from` held in `from_mode`, `to`
/// wanted in `to_mode`.
#[inline]
pub(super) fn key(from: u32, from_mode: Mode, to: u32, to_mode: Mode) -> u64 {
    (from as u64) << 34
        | (to as u64) << 4
        | (to_mode.is_read() as u64) << 2
        | (from_mode.is_read() as u64) << 1
        | (to_mode == Mode::ReadPassing) as u64
}

/// The parts of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) from_read: bool,
    pub(super) to_read: bool,
    pub(super) to_passing: bool,
}

impl Key {
    pub(super) fn of(k: u64) -> Key {
        Key {
            from: (k >> 34) as u32,
            to: ((k >> 4) & ((1 << 30) - 1)) as u32,
            from_read: k & 2 != 0,
            to_read: k & 4 != 0,
            to_passing: k & 1 != 0,
        }
    }
}

/// One recorded edge: written under the graph lock before its key is
/// published, never changed after (Relaxed: the lock orders it).
#[derive(Default)]
pub(super) struct Edge {
    pub(super) key: AtomicU64,
    /// Next edge out of the same lock (index, 0 = none).
    pub(super) next: AtomicU32,
    /// Next edge into the same lock (index, 0 = none).
    pub(super) next_in: AtomicU32,
    /// The thread that first made it (kernel tid).
    pub(super) tid: AtomicU32,
    pub(super) frames_n: AtomicU32,
    pub(super) frames: [AtomicUsize; FRAMES],
}

pub(super) static EDGES: Region<Edge, MAX_EDGES> = Region::new();

/// The edge with index `i` (1-based). Only for indices handed out by `graph::add`.
pub(super) fn edge(i: u32) -> &'static Edge {
    &EDGES.get().expect("an index implies the edges are mapped")[i as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_round_trips() {
        let k = key(0x3fff_ffff, Mode::Read, 5, Mode::Write);
        assert_eq!(
            Key::of(k),
            Key {
                from: 0x3fff_ffff,
                to: 5,
                from_read: true,
                to_read: false,
                to_passing: false
            }
        );
        let k = Key::of(key(7, Mode::Write, 0x3fff_ffff, Mode::ReadPassing));
        assert_eq!(k.to, 0x3fff_ffff);
        assert!(k.to_passing && k.to_read && !k.from_read);
        let k = Key::of(key(7, Mode::ReadPassing, 8, Mode::Read));
        assert!(!k.to_passing && k.to_read && k.from_read);
    }
}
