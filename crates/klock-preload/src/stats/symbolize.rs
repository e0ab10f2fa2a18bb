//! The statistics report's [`StackSource`] in the running process: the table's
//! stacks, named by klock's symbolizer ([`Symbolizer`]).

use klock::internal::symbolize::{Buf, Symbolizer};

use crate::stats::format::StackSource;
use crate::stats::table::{FRAMES, LockStat, Table};

/// The table's stacks, symbolized from the running process.
pub(super) struct LiveStacks<'a> {
    pub(super) table: &'a Table,
    pub(super) sym: Symbolizer<'a>,
}

impl StackSource for LiveStacks<'_> {
    fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize {
        self.table.stack_of(s.slot, out)
    }
    fn is_own(&mut self, addr: usize) -> bool {
        self.sym.is_own(addr)
    }
    fn lock_name(&mut self, addr: usize, out: &mut Buf<'_>) -> bool {
        self.sym.lock_name(addr, out)
    }
    fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>) {
        self.sym.frame(addr, out)
    }
}
