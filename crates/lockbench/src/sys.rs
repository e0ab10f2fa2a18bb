//! System probes: rusage, /proc/stat, the machine description, TTY detection.

use serde::{Deserialize, Serialize};

/// CPU time and context switches from `getrusage`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User + system CPU time, nanoseconds.
    pub cpu_ns: u64,
    /// Voluntary context switches.
    pub nvcsw: u64,
    /// Involuntary context switches.
    pub nivcsw: u64,
}

impl Usage {
    /// `self - earlier`, saturating.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            nvcsw: self.nvcsw.saturating_sub(earlier.nvcsw),
            nivcsw: self.nivcsw.saturating_sub(earlier.nivcsw),
        }
    }
}

fn rusage(who: libc::c_int) -> Usage {
    // SAFETY: zeroed rusage is a valid out-parameter; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage struct.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Usage {
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
    }
}

/// Usage of the calling thread (`RUSAGE_THREAD`).
pub fn thread_usage() -> Usage {
    rusage(libc::RUSAGE_THREAD)
}

/// Usage of the whole process (`RUSAGE_SELF`).
pub fn process_usage() -> Usage {
    rusage(libc::RUSAGE_SELF)
}

/// Aggregate CPU counters from the first line of /proc/stat, in USER_HZ ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcStat {
    /// user + nice + system + irq + softirq (time any process or the kernel was running).
    pub busy: u64,
    /// steal (time the hypervisor ran something else while we were runnable).
    pub steal: u64,
}

/// Reads /proc/stat (zeros if unavailable).
pub fn proc_stat() -> ProcStat {
    let Ok(s) = std::fs::read_to_string("/proc/stat") else {
        return ProcStat::default();
    };
    let Some(line) = s.lines().next() else {
        return ProcStat::default();
    };
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let g = |i: usize| f.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal guest guest_nice
    ProcStat {
        busy: g(0) + g(1) + g(2) + g(5) + g(6),
        steal: g(7),
    }
}

/// Nanoseconds per USER_HZ tick.
pub fn tick_ns() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}

/// Online CPUs (`_SC_NPROCESSORS_ONLN`).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as usize } else { 1 }
}

/// CPUs in this thread's affinity mask.
pub fn affinity_cpus() -> Option<usize> {
    // SAFETY: zeroed cpu_set_t is a valid empty set; the kernel writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            Some(libc::CPU_COUNT(&set) as usize)
        } else {
            None
        }
    }
}

/// Description of the machine a report was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: usize,
    /// CPUs in the affinity mask (null if unknown).
    pub affinity_cpus: Option<usize>,
    /// cgroup CPU quota in CPUs (null if none).
    pub cgroup_quota_cpus: Option<f64>,
    /// min(online, affinity, ceil(quota)): CPUs this process can really use.
    pub effective_cpus: usize,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Whether /proc/cpuinfo lists the `hypervisor` flag (running in a VM).
    pub hypervisor: bool,
    /// Steal time since boot at report start, milliseconds.
    pub steal_ms_at_start: u64,
    /// Steal time accumulated during the measured runs, milliseconds.
    pub steal_ms_during: u64,
    /// Calibrated nanoseconds per iteration of the work loop.
    pub work_ns_per_iter: f64,
    /// lockbench version.
    pub lockbench_version: String,
    /// UTC time the report was started (RFC 3339, from the system clock).
    pub date_utc: String,
    /// The machine's costs measured at the start ([`crate::costs`]); `null` in
    /// reports written before they were measured, and from experiments that do
    /// not measure them.
    #[serde(default)]
    pub costs: Option<crate::costs::Costs>,
}

impl Machine {
    /// Probes the current machine.
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let hypervisor = cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
        let online = online_cpus();
        let aff = affinity_cpus();
        // v2 `cpu.max` or v1 `cpu.cfs_quota_us`, own group and ancestors.
        let quota = klock::internal::wait::cgroup_quota();
        let mut eff = online;
        if let Some(a) = aff {
            eff = eff.min(a);
        }
        if let Some(q) = quota {
            eff = eff.min(q.ceil().max(1.0) as usize);
        }
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            cpu_model,
            online_cpus: online,
            affinity_cpus: aff,
            cgroup_quota_cpus: quota,
            effective_cpus: eff.max(1),
            kernel,
            hypervisor,
            steal_ms_at_start: proc_stat().steal * tick_ns() / 1_000_000,
            steal_ms_during: 0,
            work_ns_per_iter: crate::work::calibration().ns_per_iter,
            lockbench_version: env!("CARGO_PKG_VERSION").into(),
            date_utc: utc_now(),
            costs: None,
        }
    }

    /// [`Machine::probe`] plus the machine's costs ([`crate::costs::measure`],
    /// about 0.1 s).
    pub fn probe_with_costs() -> Machine {
        Machine {
            costs: Some(crate::costs::measure()),
            ..Machine::probe()
        }
    }
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Whether stderr is a terminal.
pub fn stderr_is_tty() -> bool {
    // SAFETY: isatty has no memory-safety preconditions.
    unsafe { libc::isatty(2) == 1 }
}

/// Makes the process multi-threaded (spawn + join once) so glibc leaves its
/// single-threaded fast paths and measurements reflect a real multi-threaded program.
pub fn leave_single_threaded_mode() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = std::thread::spawn(|| {}).join();
    });
}

/// A cheap monotonic tick for timing every operation: the TSC on x86_64 (about 10 ns
/// against `Instant::now`'s 20-60 ns in a VM), elsewhere `Instant` in ns. Convert
/// with a [`TickScale`] measured over the same span.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions; it reads the time-stamp counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// Ticks to nanoseconds, from an `Instant` and a [`ticks`] read at both ends of a span.
#[derive(Clone, Copy, Debug)]
pub struct TickScale {
    t0: std::time::Instant,
    k0: u64,
}

impl TickScale {
    /// Starts the span.
    pub fn start() -> TickScale {
        TickScale {
            t0: std::time::Instant::now(),
            k0: ticks(),
        }
    }
    /// Nanoseconds per tick over the span so far (1 if it was too short to tell).
    pub fn ns_per_tick(&self) -> f64 {
        let k = ticks().wrapping_sub(self.k0);
        let ns = self.t0.elapsed().as_nanos() as f64;
        if k == 0 || ns <= 0.0 {
            1.0
        } else {
            ns / k as f64
        }
    }
}
