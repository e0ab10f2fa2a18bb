//! Report rendering: the report's text (the header lines, the table of the top
//! locks, the table of the condvars that threads waited on longest, at level 2
//! each listed lock's first-contention stack), formatted with `core::fmt` into a
//! caller-provided byte buffer ([`Buf`]): no allocation, no std I/O. Where the
//! stacks come from and how a frame or a lock is named is the caller's
//! ([`StackSource`]); the numbers come from a table snapshot ([`LockStat`],
//! [`Totals`]). Lock waits and condvar waits are reported apart: a thread waiting
//! on a condvar is idle by design, not held up by contention.

use core::fmt::{self, Write as _};

use crate::stats::table::{FRAMES, KIND_COND, KIND_RWLOCK, LockStat, PROBE_LIMIT, Totals};
pub use klock::internal::symbolize::Buf;

/// A count with thousands separators.
struct Count(u64);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut digits = [0u8; 26];
        let mut n = self.0;
        let mut i = digits.len();
        let mut k = 0;
        loop {
            if k > 0 && k % 3 == 0 {
                i -= 1;
                digits[i] = b',';
            }
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            k += 1;
            if n == 0 {
                break;
            }
        }
        // The bytes are ASCII digits and commas.
        f.pad(core::str::from_utf8(&digits[i..]).unwrap_or("?"))
    }
}

/// A duration in ns, in a readable unit (`850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`).
struct Ns(u64);

impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = [0u8; 32];
        let mut w = Buf::new(&mut b);
        let n = self.0;
        let x = n as f64;
        let _ = if n < 1_000 {
            write!(w, "{n} ns")
        } else if n < 1_000_000 {
            write!(w, "{:.1} us", x / 1e3)
        } else if n < 1_000_000_000 {
            write!(w, "{:.2} ms", x / 1e6)
        } else {
            write!(w, "{:.2} s", x / 1e9)
        };
        f.pad(core::str::from_utf8(w.bytes()).unwrap_or("?"))
    }
}

/// The family column: `mutex`, `rwlock`, ... joined with `+` when an address was
/// used as several (memory reuse).
struct Kinds(u8);

impl fmt::Display for Kinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = [0u8; 32];
        let mut w = Buf::new(&mut b);
        for (k, name) in KIND_NAMES.iter().enumerate() {
            if self.0 & (1 << k) != 0 {
                if !w.bytes().is_empty() {
                    w.push_bytes(b"+");
                }
                w.push_bytes(name.as_bytes());
            }
        }
        if w.bytes().is_empty() {
            w.push_bytes(b"?");
        }
        f.pad(core::str::from_utf8(w.bytes()).unwrap_or("?"))
    }
}

const KIND_NAMES: [&str; 4] = ["mutex", "rwlock", "spin", "cond"];

/// What the report says about the process.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// Program name (bytes of `program_invocation_name`).
    pub program: &'a [u8],
    /// This process.
    pub pid: i32,
    /// The parent's pid when this process was forked under the interposer (its
    /// counters started at the fork), else 0.
    pub forked_from: i32,
    /// Time since [`init`] (or the fork), ns.
    ///
    /// [`init`]: crate::stats::init
    pub runtime_ns: u64,
    /// 1 or 2.
    pub level: u8,
}

/// Where the report's stacks and names come from: the live process (at exit) or a
/// test's fake.
pub trait StackSource {
    /// Copies lock `s`'s first-contention stack into `out`; returns the frame count.
    fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize;
    /// Whether `addr` is in the interposer itself (its leading frames are dropped).
    fn is_own(&mut self, addr: usize) -> bool;
    /// Writes frame `addr`'s description (`function+0xoff  (object)`).
    fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>);
    /// Writes the name of the static variable holding the lock at `addr` (`name`,
    /// or `name+0xoff` inside a larger one) and returns true; writes nothing and
    /// returns false for a lock on the heap, a stack, or without a symbol.
    fn lock_name(&mut self, addr: usize, out: &mut Buf<'_>) -> bool;
}

/// Narrowest and widest lock column (a longer name overflows its row).
const LABEL_MIN: usize = 18;
const LABEL_MAX: usize = 48;

/// A lock's label: its static variable's name if it has one, else its address.
struct Label {
    buf: [u8; 256],
    len: usize,
    /// Whether it is a name (not the address).
    named: bool,
}

impl Label {
    fn of(src: &mut dyn StackSource, addr: usize) -> Label {
        let mut buf = [0u8; 256];
        let (len, named) = {
            let mut w = Buf::new(&mut buf);
            let named = src.lock_name(addr, &mut w);
            if !named {
                let _ = write!(w, "{addr:#x}");
            }
            (w.bytes().len(), named)
        };
        Label { buf, len, named }
    }
    fn as_str(&self) -> &str {
        // Symbol names are bytes; a non-UTF-8 one shows as `?`.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
    }
}

/// The lock column's width for `rows`: the longest label, within
/// [`LABEL_MIN`]..=[`LABEL_MAX`].
fn label_width(src: &mut dyn StackSource, rows: &[LockStat]) -> usize {
    rows.iter()
        .map(|s| Label::of(src, s.addr).as_str().chars().count())
        .fold(LABEL_MIN, usize::max)
        .min(LABEL_MAX)
}

/// Formats the report: header lines, the table of the locks `top` (best first), the
/// table of the condvars `conds` (best first), and at level 2 each listed lock's
/// first-contention stack (a condvar's first timed-out wait) from `src`.
pub fn format_report(
    w: &mut Buf<'_>,
    h: &Header<'_>,
    t: &Totals,
    top: &[LockStat],
    conds: &[LockStat],
    src: &mut dyn StackSource,
) {
    let _ = write_report(w, h, t, top, conds, src);
    if w.truncated {
        w.end_cut(b"\nklock-stats: (report cut)\n");
    }
}

/// The report, section by section; a section with nothing to say is left out, and
/// the stacks are level 2's.
fn write_report(
    w: &mut Buf<'_>,
    h: &Header<'_>,
    t: &Totals,
    top: &[LockStat],
    conds: &[LockStat],
    src: &mut dyn StackSource,
) -> fmt::Result {
    write_summary(w, h, t)?;
    write_families(w, t)?;
    write_untracked(w, t)?;
    if !top.is_empty() {
        write_table(w, t, top, src)?;
    }
    if !conds.is_empty() {
        write_cond_table(w, t, conds, src)?;
    }
    if h.level < 2 {
        return Ok(());
    }
    write_stacks(w, top, conds, src)
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The first line: the process, its run time, the locks seen and the whole
/// process's acquisitions, contention and lock wait; then, apart, the time spent
/// in condvar waits.
fn write_summary(w: &mut Buf<'_>, h: &Header<'_>, t: &Totals) -> fmt::Result {
    w.push_bytes(b"klock-stats: ");
    w.push_bytes(h.program);
    write!(w, " (pid {}", h.pid)?;
    if h.forked_from != 0 {
        write!(w, ", forked from {}", h.forked_from)?;
    }
    write!(
        w,
        ") | {:.3} s | {} locks seen | {} acquisitions, {} contended ({:.2}%) | lock wait {}",
        h.runtime_ns as f64 / 1e9,
        Count(t.locks),
        Count(t.acquisitions),
        Count(t.contended),
        pct(t.contended, t.acquisitions),
        Ns(t.wait_ns)
    )?;
    if t.cond_waits > 0 {
        write!(
            w,
            " | condvar wait {} ({} waits on {} condvars: idle time, not contention)",
            Ns(t.cond_wait_ns),
            Count(t.cond_waits),
            Count(t.condvars)
        )?;
    }
    w.push_bytes(b"\n");
    Ok(())
}

/// The second line: locks, acquisitions and contended acquisitions per family
/// seen (condvars: waits and timeouts), or that no lock was used at all.
fn write_families(w: &mut Buf<'_>, t: &Totals) -> fmt::Result {
    if t.acquisitions == 0 && t.cond_waits == 0 {
        return writeln!(w, "klock-stats: no lock acquisitions seen");
    }
    w.push_bytes(b"klock-stats: by family:");
    let mut first = true;
    for (k, row) in t.by_kind.iter().enumerate() {
        if row[0] == 0 {
            continue;
        }
        let (objects, ops, bad) = if 1 << k == KIND_COND {
            ("condvars", "waits", "timed out")
        } else {
            ("locks", "acq", "contended")
        };
        write!(
            w,
            "{} {} {} {objects}, {} {ops}, {} {bad}",
            if first { "" } else { ";" },
            KIND_NAMES[k],
            Count(row[0]),
            Count(row[1]),
            Count(row[2])
        )?;
        first = false;
    }
    w.push_bytes(b"\n");
    Ok(())
}

/// A warning line when some acquisitions found no slot in the table.
fn write_untracked(w: &mut Buf<'_>, t: &Totals) -> fmt::Result {
    if t.untracked == 0 {
        return Ok(());
    }
    writeln!(
        w,
        "klock-stats: WARNING {} acquisitions on untracked locks (no free slot within {} probes of a {}-slot table; raise KLOCK_STATS_SLOTS)",
        Count(t.untracked),
        PROBE_LIMIT,
        t.slots
    )
}

/// The table of the `top` locks: its title, the column header, one row per lock.
fn write_table(
    w: &mut Buf<'_>,
    t: &Totals,
    top: &[LockStat],
    src: &mut dyn StackSource,
) -> fmt::Result {
    writeln!(
        w,
        "klock-stats: top {} of {} locks, by contended acquisitions then wait time (avg wait: per contended acquisition; hold: exclusive holders only):",
        top.len(),
        Count(t.locks)
    )?;
    let lw = label_width(src, top);
    writeln!(
        w,
        "{:>3}  {:<lw$} {:<11} {:>13} {:>13} {:>13} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "#",
        "lock",
        "family",
        "acquired",
        "reads",
        "contended",
        "cont%",
        "wait tot",
        "wait avg",
        "wait max",
        "hold tot",
        "hold avg",
        "hold max"
    )?;
    for (n, s) in top.iter().enumerate() {
        write_row(w, n + 1, s, &Label::of(src, s.addr), lw)?;
    }
    Ok(())
}

/// Row `rank` of the table: lock `s`'s counters (reads only for a rwlock, hold
/// times only if a hold was measured), its label in a column `lw` wide.
fn write_row(w: &mut Buf<'_>, rank: usize, s: &LockStat, label: &Label, lw: usize) -> fmt::Result {
    let mut reads = [0u8; 32];
    let mut rw = Buf::new(&mut reads);
    if s.kinds & KIND_RWLOCK != 0 {
        write!(rw, "{}", Count(s.reads))?;
    } else {
        rw.push_bytes(b"-");
    }
    let reads_s = core::str::from_utf8(rw.bytes()).unwrap_or("?");
    let wait_div = if s.contended > 0 {
        s.contended
    } else {
        s.acquisitions.max(1)
    };
    write!(
        w,
        "{:>3}  {:<lw$} {:<11} {:>13} {:>13} {:>13} {:>6.2}% {:>10} {:>10} {:>10}",
        rank,
        label.as_str(),
        Kinds(s.kinds),
        Count(s.acquisitions),
        reads_s,
        Count(s.contended),
        pct(s.contended, s.acquisitions),
        Ns(s.wait_total_ns),
        Ns(s.wait_total_ns / wait_div),
        Ns(s.wait_max_ns),
    )?;
    if let Some(avg) = s.hold_total_ns.checked_div(s.hold_count) {
        writeln!(
            w,
            " {:>10} {:>10} {:>10}",
            Ns(s.hold_total_ns),
            Ns(avg),
            Ns(s.hold_max_ns)
        )
    } else {
        writeln!(w, " {:>10} {:>10} {:>10}", "-", "-", "-")
    }
}

/// The table of the condvars `conds` (most wait time first): its title, the column
/// header, one row per condvar. Kept apart from the locks: a thread waiting on a
/// condvar is idle by design (waiting for work or an event), not contending.
fn write_cond_table(
    w: &mut Buf<'_>,
    t: &Totals,
    conds: &[LockStat],
    src: &mut dyn StackSource,
) -> fmt::Result {
    writeln!(
        w,
        "klock-stats: top {} of {} condvars, by wait time (threads waiting for an event: idle by design, not contention; avg: per wait):",
        conds.len(),
        Count(t.condvars)
    )?;
    let lw = label_width(src, conds);
    writeln!(
        w,
        "{:>3}  {:<lw$} {:>13} {:>13} {:>10} {:>10} {:>10}",
        "#", "condvar", "waits", "timed out", "wait tot", "wait avg", "wait max"
    )?;
    for (n, s) in conds.iter().enumerate() {
        writeln!(
            w,
            "{:>3}  {:<lw$} {:>13} {:>13} {:>10} {:>10} {:>10}",
            n + 1,
            Label::of(src, s.addr).as_str(),
            Count(s.cond_waits),
            Count(s.cond_timeouts),
            Ns(s.cond_wait_total_ns),
            Ns(s.cond_wait_total_ns / s.cond_waits.max(1)),
            Ns(s.cond_wait_max_ns),
        )?;
    }
    Ok(())
}

/// Level 2: the first-contention stack of each listed lock that was contended, then
/// the first timed-out wait's of each listed condvar that timed out (and was not
/// also a contended lock, whose stack it would be: one stack per address).
fn write_stacks(
    w: &mut Buf<'_>,
    top: &[LockStat],
    conds: &[LockStat],
    src: &mut dyn StackSource,
) -> fmt::Result {
    for (n, s) in top.iter().enumerate() {
        if s.contended == 0 {
            continue;
        }
        write_stack(w, "", n + 1, s, "first contended", src)?;
    }
    for (n, s) in conds.iter().enumerate() {
        if s.cond_timeouts == 0 || s.contended != 0 {
            continue;
        }
        write_stack(w, "condvar ", n + 1, s, "first timed out", src)?;
    }
    Ok(())
}

/// Lock `s`'s (listed as `{table}#{rank}`) stack from `src` at its first `event`,
/// one symbolized frame per line, or "(not captured)".
fn write_stack(
    w: &mut Buf<'_>,
    table: &str,
    rank: usize,
    s: &LockStat,
    event: &str,
    src: &mut dyn StackSource,
) -> fmt::Result {
    let label = Label::of(src, s.addr);
    write!(w, "klock-stats: {table}#{rank} ")?;
    if label.named {
        write!(w, "{} ({:#x}, {})", label.as_str(), s.addr, Kinds(s.kinds))?;
    } else {
        write!(w, "{:#x} ({})", s.addr, Kinds(s.kinds))?;
    }
    write!(w, " {event} at:")?;
    let mut frames = [0usize; FRAMES];
    let nf = if s.stack_captured {
        src.frames(s, &mut frames)
    } else {
        0
    };
    if nf == 0 {
        return writeln!(w, " (not captured)");
    }
    w.push_bytes(b"\n");
    // Drop the interposer's leading frames (the hook and the wrapped pthread
    // call), unless nothing else is left.
    let skip = frames[..nf].iter().take_while(|&&f| src.is_own(f)).count();
    let skip = if skip == nf { 0 } else { skip };
    for &f in &frames[skip..nf] {
        write!(w, "    {:#018x}  ", f)?;
        src.symbolize(f, w);
        w.push_bytes(b"\n");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::table::{KIND_MUTEX, KIND_SPIN};

    struct Fake;
    impl StackSource for Fake {
        fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize {
            out[0] = 0x1111;
            out[1] = 0x2222;
            out[2] = 0x3333;
            if s.addr == 0xbeef { 3 } else { 2 }
        }
        fn is_own(&mut self, addr: usize) -> bool {
            addr == 0x1111 || addr == 0x3333
        }
        fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>) {
            let _ = write!(out, "fn_{addr:x}+0x4  (/bin/prog)");
        }
        fn lock_name(&mut self, addr: usize, out: &mut Buf<'_>) -> bool {
            match addr {
                0xcafe => out.push_bytes(b"static_rw"),
                0xf00d => out.push_bytes(b"a_rather_long_name_of_a_static_condvar+0x8"),
                _ => return false,
            }
            true
        }
    }

    fn synthetic() -> (Totals, Vec<LockStat>, Vec<LockStat>) {
        let a = LockStat {
            slot: 0,
            addr: 0xbeef,
            kinds: KIND_MUTEX,
            acquisitions: 1_234_567,
            reads: 0,
            contended: 234_567,
            wait_total_ns: 2_345_678_901,
            wait_max_ns: 4_100_000,
            hold_total_ns: 1_000_000_000,
            hold_count: 1_234_567,
            hold_max_ns: 1_200,
            stack_captured: true,
            ..LockStat::default()
        };
        let b = LockStat {
            slot: 1,
            addr: 0xcafe,
            kinds: KIND_RWLOCK | KIND_COND,
            acquisitions: 10,
            reads: 7,
            contended: 0,
            cond_waits: 1,
            cond_wait_total_ns: 1_000,
            cond_wait_max_ns: 1_000,
            ..LockStat::default()
        };
        // xz's idle condvar: most of the run spent waiting on it.
        let c = LockStat {
            slot: 2,
            addr: 0xf00d,
            kinds: KIND_COND,
            cond_waits: 13,
            cond_timeouts: 12,
            cond_wait_total_ns: 3_650_000_000,
            cond_wait_max_ns: 300_520_000,
            stack_captured: true,
            ..LockStat::default()
        };
        let mut t = Totals {
            untracked: 3,
            slots: 16,
            ..Totals::default()
        };
        t.add(&a);
        t.add(&b);
        t.add(&c);
        (t, vec![a, b], vec![c, b])
    }

    fn render(level: u8, forked: i32) -> String {
        let (t, top, conds) = synthetic();
        let mut b = vec![0u8; 1 << 16];
        let mut w = Buf::new(&mut b);
        let h = Header {
            program: b"./prog",
            pid: 42,
            forked_from: forked,
            runtime_ns: 2_013_000_000,
            level,
        };
        format_report(&mut w, &h, &t, &top, &conds, &mut Fake);
        String::from_utf8(w.bytes().to_vec()).unwrap()
    }

    #[test]
    fn report_format_level1() {
        let r = render(1, 0);
        let lines: Vec<&str> = r.lines().collect();
        assert!(
            lines[0].starts_with("klock-stats: ./prog (pid 42) | 2.013 s | 2 locks seen"),
            "{r}"
        );
        assert!(
            lines[0].contains("1,234,577 acquisitions, 234,567 contended"),
            "{r}"
        );
        // Lock wait and condvar wait apart: 3.65 s of idle condvar waits are not
        // lock wait (xz: "wait 2.03 s" in a 1.98 s run).
        assert!(lines[0].contains("| lock wait 2.35 s |"), "{r}");
        assert!(
            lines[0].ends_with(
                "| condvar wait 3.65 s (14 waits on 2 condvars: idle time, not contention)"
            ),
            "{r}"
        );
        assert!(
            lines[1].contains("mutex 1 locks, 1,234,567 acq, 234,567 contended"),
            "{r}"
        );
        assert!(
            lines[1].contains("rwlock 1 locks, 10 acq, 0 contended")
                && lines[1].contains("cond 2 condvars, 14 waits, 12 timed out"),
            "{r}"
        );
        assert!(
            r.contains("WARNING 3 acquisitions on untracked locks"),
            "{r}"
        );
        assert!(r.contains("top 2 of 2 locks"), "{r}");
        let row = lines.iter().find(|l| l.contains("0xbeef")).unwrap();
        for cell in [
            "mutex",
            "1,234,567",
            "234,567",
            "19.00%",
            "2.35 s",
            "10.0 us",
            "4.10 ms",
            "1.00 s",
            "810 ns",
            "1.2 us",
        ] {
            assert!(row.contains(cell), "missing {cell}: {row}");
        }
        // A named static lock shows its name, not its address.
        let row2 = lines.iter().find(|l| l.contains("static_rw ")).unwrap();
        assert!(
            row2.contains("rwlock+cond") && row2.contains(" 7 ") && !r.contains("0xcafe"),
            "{row2}"
        );
        assert!(row2.trim_end().ends_with("-"), "no hold times: {row2}");
        assert!(!r.contains("first contended"), "no stacks at level 1");
        // The condvars' own table, after the locks', by wait time; avg per wait.
        let locks = r.find("top 2 of 2 locks").unwrap();
        let conds = r.find("top 2 of 2 condvars, by wait time").expect(&r);
        assert!(locks < conds, "{r}");
        let c1 = lines
            .iter()
            .find(|l| l.starts_with("  1  a_rather_long_name_of_a_static_condvar+0x8"))
            .expect(&r);
        for cell in [" 13 ", " 12 ", "3.65 s", "280.77 ms", "300.52 ms"] {
            assert!(c1.contains(cell), "missing {cell}: {c1}");
        }
        // (The lock table's row 2 is the same address's rwlock side.)
        let c2 = lines
            .iter()
            .rev()
            .find(|l| l.starts_with("  2  static_rw"))
            .expect(&r);
        assert!(c2.contains("1.0 us"), "{c2}");
        // The lock column widens to the longest name: the rows stay aligned.
        let head = lines
            .iter()
            .find(|l| l.starts_with("  #  condvar"))
            .expect(&r);
        assert_eq!(
            head.find("waits").map(|i| i + 5),
            c1.find(" 13 ").map(|i| i + 3)
        );
    }

    #[test]
    fn report_format_level2_and_fork() {
        let r = render(2, 7);
        assert!(r.contains("(pid 42, forked from 7)"), "{r}");
        assert!(r.contains("#1 0xbeef (mutex) first contended at:"), "{r}");
        assert!(r.contains("fn_2222+0x4  (/bin/prog)"), "{r}");
        assert!(
            r.contains("fn_3333+0x4"),
            "only leading own frames are dropped: {r}"
        );
        assert!(
            !r.contains("fn_1111"),
            "leading own frames are dropped: {r}"
        );
        assert!(
            !r.contains("#2 static_rw"),
            "never contended: no stack section"
        );
        assert!(
            r.contains(
                "condvar #1 a_rather_long_name_of_a_static_condvar+0x8 (0xf00d, cond) first timed out at:"
            ),
            "a condvar's first timed-out wait: {r}"
        );
    }

    #[test]
    fn report_without_acquisitions_and_cut() {
        let mut b = vec![0u8; 4096];
        let mut w = Buf::new(&mut b);
        let h = Header {
            program: b"sh",
            pid: 1,
            forked_from: 0,
            runtime_ns: 0,
            level: 1,
        };
        format_report(&mut w, &h, &Totals::default(), &[], &[], &mut Fake);
        let s = String::from_utf8(w.bytes().to_vec()).unwrap();
        assert!(s.contains("no lock acquisitions seen"), "{s}");
        assert_eq!(s.lines().count(), 2, "{s}");
        // A buffer too small for the report is cut and says so.
        let (t, top, conds) = synthetic();
        let mut small = vec![0u8; 300];
        let mut w = Buf::new(&mut small);
        format_report(&mut w, &h, &t, &top, &conds, &mut Fake);
        let s = String::from_utf8_lossy(w.bytes()).into_owned();
        assert!(s.ends_with("klock-stats: (report cut)\n"), "{s}");
    }

    #[test]
    fn counts_and_durations_format() {
        let f = |x: &dyn fmt::Display| {
            let mut b = [0u8; 64];
            let mut w = Buf::new(&mut b);
            write!(w, "{x}").unwrap();
            String::from_utf8(w.bytes().to_vec()).unwrap()
        };
        assert_eq!(f(&Count(0)), "0");
        assert_eq!(f(&Count(999)), "999");
        assert_eq!(f(&Count(1000)), "1,000");
        assert_eq!(f(&Count(u64::MAX)), "18,446,744,073,709,551,615");
        assert_eq!(f(&Ns(999)), "999 ns");
        assert_eq!(f(&Ns(12_345)), "12.3 us");
        assert_eq!(f(&Ns(4_560_000)), "4.56 ms");
        assert_eq!(f(&Ns(1_230_000_000)), "1.23 s");
        assert_eq!(f(&Kinds(0)), "?");
        assert_eq!(f(&Kinds(KIND_SPIN)), "spin");
    }
}
