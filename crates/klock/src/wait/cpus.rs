//! CPUs: [`effective_cpus`], the least of the online CPUs, the affinity
//! mask and the cgroup's CPU quota (v1 `cpu.cfs_quota_us` or v2
//! `cpu.max`), computed once; [`quota_limited`].

/// Parse a cgroup v2 `cpu.max` file ("quota period" or "max period") into a CPU
/// count (quota / period rounded up). `None` = no limit or unparsable.
///
/// ```
/// use klock::internal::wait::parse_cpu_max;
/// assert_eq!(parse_cpu_max("150000 100000\n"), Some(2));
/// assert_eq!(parse_cpu_max("max 100000"), None);
/// ```
pub fn parse_cpu_max(s: &str) -> Option<usize> {
    cpu_max_ratio(s).map(round_up_cpus)
}

/// Parse cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` contents into a CPU
/// count (rounded up). A quota of -1 means no limit (`None`).
///
/// ```
/// use klock::internal::wait::parse_cfs_quota;
/// assert_eq!(parse_cfs_quota("50000\n", "100000\n"), Some(1));
/// assert_eq!(parse_cfs_quota("-1", "100000"), None);
/// ```
pub fn parse_cfs_quota(quota: &str, period: &str) -> Option<usize> {
    quota_ratio(quota, period).map(round_up_cpus)
}

/// A v2 `cpu.max` ("quota period", "max period") as a fraction of CPUs.
fn cpu_max_ratio(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    quota_ratio(quota, it.next().unwrap_or("100000"))
}

/// quota / period in CPUs; `None` for "max", -1, 0 or garbage.
fn quota_ratio(quota: &str, period: &str) -> Option<f64> {
    let q: f64 = quota.trim().parse().ok()?;
    let p: f64 = period.trim().parse().ok()?;
    (q > 0.0 && p > 0.0).then_some(q / p)
}

/// Half a CPU of quota still runs one thread at a time.
fn round_up_cpus(cpus: f64) -> usize {
    (cpus.ceil() as usize).max(1)
}

/// Find this process's cgroup v2 path in `/proc/self/cgroup` contents ("0::/path").
#[cfg(not(loom))]
fn cgroup_v2_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

/// This process's cgroup CPU quota in CPUs (quota / period, not rounded),
/// read now: the smallest over its own group and every ancestor, cgroup v2
/// (`cpu.max`, the `0::` line of `/proc/self/cgroup`) and v1 (`cpu.cfs_quota_us`
/// under the `cpu` controller's mount, the process's own `cpu` group path).
/// `None` when no quota applies or none can be read.
///
/// ```
/// if let Some(q) = klock::internal::wait::cgroup_quota() {
///     assert!(q > 0.0);
/// }
/// ```
#[cfg(not(loom))]
pub fn cgroup_quota() -> Option<f64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut best: Option<f64> = None;
    let mut consider = |v: Option<f64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    // Every directory from `path` up to the hierarchy's root.
    let ancestors = |path: &str| {
        let mut out = Vec::new();
        let mut p = path.trim().trim_end_matches('/').to_string();
        loop {
            out.push(p.clone());
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => break,
            }
        }
        out
    };
    let pc = read("/proc/self/cgroup").unwrap_or_default();
    // cgroup v2: our own group and every ancestor up to the mount root.
    if let Some(path) = cgroup_v2_path(&pc) {
        for p in ancestors(path) {
            consider(read(&format!("/sys/fs/cgroup{p}/cpu.max")).and_then(|s| cpu_max_ratio(&s)));
        }
    }
    // cgroup v1: the `cpu` controller's group ("N:cpu,cpuacct:/path").
    let v1 = pc.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',').any(|c| c == "cpu").then_some(path)
    });
    for dir in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
        for p in ancestors(v1.unwrap_or("/")) {
            if let (Some(q), Some(per)) = (
                read(&format!("{dir}{p}/cpu.cfs_quota_us")),
                read(&format!("{dir}{p}/cpu.cfs_period_us")),
            ) {
                consider(quota_ratio(&q, &per));
            }
        }
    }
    best
}

#[cfg(not(loom))]
fn cgroup_cpus() -> Option<usize> {
    cgroup_quota().map(round_up_cpus)
}

#[cfg(not(loom))]
fn compute_effective_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let mut n = if online > 0 { online as usize } else { 1 };
    // SAFETY: `set` is a properly sized, zeroed cpu_set_t owned by this frame.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let c = libc::CPU_COUNT(&set);
            if c > 0 {
                n = n.min(c as usize);
            }
        }
    }
    if let Some(c) = cgroup_cpus() {
        n = n.min(c);
    }
    n.max(1)
}

/// At a fork: finish both once-computed values (see `crate::fork`).
#[cfg(not(loom))]
static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    finish: || {
        let _ = effective_cpus();
        let _ = quota_limited();
    },
    ..crate::fork::Hooks::NONE
};

/// Effective CPUs = min(online CPUs, CPUs in the affinity mask, cgroup v2
/// `cpu.max` quota/period rounded up (own group and ancestors), cgroup v1 CFS
/// quota). Computed once per process. Under loom: 2.
///
/// ```
/// assert!(klock::internal::wait::effective_cpus() >= 1);
/// ```
pub fn effective_cpus() -> usize {
    #[cfg(not(loom))]
    {
        static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        if let Some(&n) = CPUS.get() {
            return n;
        }
        // Fork hooks first, and outside the initialiser (see crate::fork).
        crate::fork::install(crate::fork::Slot::Cpus, &FORK_HOOKS);
        *CPUS.get_or_init(compute_effective_cpus)
    }
    #[cfg(loom)]
    {
        2
    }
}

/// Does a cgroup CPU quota limit this process below its CPUs (online and in
/// its affinity mask)? Computed once, like [`effective_cpus`]. Under a quota
/// a thread that yields or spins spends the group's bandwidth, which the
/// lock holder then lacks (the reason .NET proposes to stop spin-waiting
/// under a quota). Under loom: `false`.
///
/// ```
/// let _limited: bool = klock::internal::wait::quota_limited();
/// ```
pub fn quota_limited() -> bool {
    #[cfg(not(loom))]
    {
        static LIMITED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if let Some(&l) = LIMITED.get() {
            return l;
        }
        // Fork hooks first, and outside the initialiser (see crate::fork), so
        // a child never inherits it half done (every mutex slow path asks).
        crate::fork::install(crate::fork::Slot::Cpus, &FORK_HOOKS);
        *LIMITED.get_or_init(|| {
            // SAFETY: sysconf has no memory-safety preconditions.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64;
            cgroup_quota().is_some_and(|q| q < online)
        })
    }
    #[cfg(loom)]
    {
        false
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_parser() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("max"), None);
        assert_eq!(parse_cpu_max("100000 100000"), Some(1));
        assert_eq!(parse_cpu_max("200000 100000"), Some(2));
        assert_eq!(parse_cpu_max("250000 100000"), Some(3));
        assert_eq!(parse_cpu_max("1000 100000"), Some(1));
        assert_eq!(parse_cpu_max("50000"), Some(1));
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(parse_cpu_max("abc 100000"), None);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max("100000 0"), None);
    }

    #[test]
    fn cfs_parser() {
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_quota("400000", "100000"), Some(4));
        assert_eq!(parse_cfs_quota("150000", "100000"), Some(2));
        assert_eq!(parse_cfs_quota("x", "100000"), None);
        assert_eq!(parse_cfs_quota("100000", "0"), None);
    }

    #[test]
    fn cgroup_path() {
        let s = "12:cpu,cpuacct:/x\n0::/user.slice/a.scope\n";
        assert_eq!(cgroup_v2_path(s), Some("/user.slice/a.scope"));
        assert_eq!(cgroup_v2_path("1:name=systemd:/\n"), None);
    }

    #[test]
    fn effective_cpus_bounded_by_online() {
        let online = std::thread::available_parallelism().map_or(1, |n| n.get());
        let e = effective_cpus();
        assert!(e >= 1 && e <= online.max(1) * 2, "{e} vs {online}");
        assert_eq!(e, effective_cpus());
    }
}
