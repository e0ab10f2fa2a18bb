//! The report of a cycle: text built into a fixed buffer (no allocation) and
//! written with raw `write(2)` to stderr or to `KLOCK_LOCKDEP_FILE`.
//!
//! ```text
//! klock lockdep: possible deadlock (lock-order cycle of 2 locks) in pid 1234 (/path/prog)
//!   L1  0x5580a0c0 lock_a, first taken nested at take_b_then_a+0x2c  (/path/prog)
//!   L2  0x5580a100 lock_b, first taken nested at take_a_then_b+0x2c  (/path/prog)
//!   L1 -> L2: thread 1235 took L2 (exclusive) while holding L1 (exclusive), first at:
//!       #0 take_a_then_b+0x2c  (/path/prog)
//!       #1 start_thread+0x9c  (/lib/x86_64-linux-gnu/libc.so.6)
//!   L2 -> L1: ...
//! klock lockdep: end of report
//! ```

use core::fmt::Write as _;
use core::sync::atomic::Ordering::Relaxed;

use super::edges::{Edge, Key, edge};
use super::graph::Cycle;
use super::ids;
use super::region::Region;
use crate::symbolize::{Buf, Symbolizer, self_exe};
use crate::textout::{expand_pid, open_report, write_all};

/// Report text buffer (a longer report is cut and says so).
const REPORT_BYTES: usize = 1 << 16;
static TEXT: Region<u8, REPORT_BYTES> = Region::new();

/// Symbol prefixes of frames inside the locks themselves, dropped from the
/// top of a stack when klock is linked into the program (Rust): klock, its
/// lock_api front, its parking_lot crate, its C core.
const OWN_PREFIXES: [&[u8]; 4] = [
    b"_ZN5klock",
    b"_ZN8lock_api",
    b"_ZN11parking_lot",
    b"_ZN7klock_c",
];

fn label(out: &mut Buf<'_>, locks: &[u32], id: u32) {
    let n = locks.iter().position(|&l| l == id).map_or(0, |p| p + 1);
    let _ = write!(out, "L{n}");
}

fn mode_name(read: bool) -> &'static str {
    if read { "read" } else { "exclusive" }
}

/// Formats the report of `cycle` (built under the graph lock: the edges it
/// names are complete) into the report buffer and returns the text.
pub(super) fn format(cycle: &Cycle) -> Option<&'static [u8]> {
    let text = TEXT.get()?;
    // SAFETY: the buffer is only written under the graph lock, which the
    // caller holds, and read by the same caller before it releases it.
    let bytes = unsafe { core::slice::from_raw_parts_mut(text.as_ptr().cast_mut(), REPORT_BYTES) };
    let mut out = Buf::new(bytes);
    let mut exe_buf = [0u8; 512];
    let mut sym = Symbolizer::live(format as *const () as usize, &mut exe_buf);
    if sym.own_base == sym.main_base {
        // klock is linked into the program (Rust): its frames are told
        // apart by their symbols (`OWN_PREFIXES`), not by their object.
        sym.own_base = 0;
    }
    // The locks in cycle order: each edge's `from`.
    let mut locks = [0u32; super::graph::MAX_CYCLE];
    for (l, &e) in locks.iter_mut().zip(&cycle.edges[..cycle.len]) {
        *l = Key::of(edge(e).key.load(Relaxed)).from;
    }
    let locks = &locks[..cycle.len];
    let mut exe = [0u8; 512];
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let _ = write!(
        out,
        "klock lockdep: possible deadlock (lock-order cycle of {} locks) in pid {pid} (",
        cycle.len + cycle.more
    );
    out.push_bytes(self_exe(&mut exe));
    out.push_bytes(b")\n");
    for &id in locks {
        let r = ids::rec(id);
        let addr = r.addr.load(Relaxed);
        out.push_bytes(b"  ");
        label(&mut out, locks, id);
        let _ = write!(out, "  {addr:#x}");
        out.push_bytes(b" ");
        if !sym.lock_name(addr, &mut out) {
            out.push_bytes(b"(heap or stack object)");
        }
        let site = r.site.load(Relaxed);
        if site != 0 {
            out.push_bytes(b", first taken nested at ");
            frames(&sym, edge(site as u32), &mut out, 1);
        } else {
            out.push_bytes(b"\n");
        }
    }
    for &e in &cycle.edges[..cycle.len] {
        let ed = edge(e);
        let k = Key::of(ed.key.load(Relaxed));
        out.push_bytes(b"  ");
        label(&mut out, locks, k.from);
        out.push_bytes(b" -> ");
        label(&mut out, locks, k.to);
        let _ = write!(out, ": thread {} took ", ed.tid.load(Relaxed));
        label(&mut out, locks, k.to);
        let _ = write!(out, " ({}) while holding ", mode_name(k.to_read));
        label(&mut out, locks, k.from);
        let _ = writeln!(out, " ({}), first at:", mode_name(k.from_read));
        frames(&sym, ed, &mut out, usize::MAX);
    }
    if cycle.more > 0 {
        let _ = writeln!(out, "  ... and {} more edges back to L1", cycle.more);
    }
    out.push_bytes(b"klock lockdep: end of report\n");
    if out.truncated {
        out.end_cut(b"\nklock lockdep: (report cut)\n");
    }
    let n = out.bytes().len();
    Some(&text_bytes(text)[..n])
}

fn text_bytes(text: &'static [u8; REPORT_BYTES]) -> &'static [u8] {
    text
}

/// An edge's stack, the locks' own frames at its top dropped: at most `max`
/// frames, each on its own indented line (one frame: inline, no number).
fn frames(sym: &Symbolizer<'_>, ed: &Edge, out: &mut Buf<'_>, max: usize) {
    let n = ed.frames_n.load(Relaxed) as usize;
    let mut shown = 0;
    let mut line = [0u8; 512];
    for f in &ed.frames[..n] {
        let addr = f.load(Relaxed);
        if shown == 0 && sym.is_own(addr) {
            continue;
        }
        let mut l = Buf::new(&mut line);
        sym.frame(addr, &mut l);
        if shown == 0 && OWN_PREFIXES.iter().any(|p| l.bytes().starts_with(p)) {
            continue;
        }
        if max > 1 {
            let _ = write!(out, "      #{shown} ");
        }
        out.push_bytes(l.bytes());
        out.push_bytes(b"\n");
        shown += 1;
        if shown == max {
            return;
        }
    }
    if shown == 0 {
        out.push_bytes(b"      (no stack)\n");
    }
}

/// Writes `text` to `KLOCK_LOCKDEP_FILE` (appended; `%p` is the pid; opened
/// as the statistics file is: a symbolic link as the last component is
/// refused, a new file gets mode 0644 under the umask) or, without it, to
/// fd 2. Never fails loudly: a report that cannot go to the file goes to
/// fd 2 after a line saying why.
pub(super) fn write_out(text: &[u8], file: Option<&[u8]>) {
    let Some(path) = file else {
        let _ = write_all(2, text);
        return;
    };
    let mut p = [0u8; 4096 + 16];
    let mut w = Buf::new(&mut p);
    let fd = if expand_pid(path, &mut w) {
        open_report(w.bytes(), libc::O_APPEND, 0o644)
    } else {
        -1
    };
    if fd < 0 {
        let _ = write_all(
            2,
            b"klock lockdep: cannot open KLOCK_LOCKDEP_FILE (a symbolic link is not \
              followed); the report follows\n",
        );
        let _ = write_all(2, text);
        return;
    }
    let _ = write_all(fd, text);
    // SAFETY: our own fd.
    unsafe { libc::close(fd) };
}
