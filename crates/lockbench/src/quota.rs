//! `--quota CPUS`: run the whole lockbench process inside a new cgroup limited to
//! `CPUS` (a container with a CPU quota, the third place klock is meant for); the
//! v1/v2 details and errors: `docs/lockbench.md`. [`QuotaGroup::enter`] must run before
//! anything reads the effective CPU count (klock computes it once per process), so
//! `main` enters the group before dispatching; dropping the guard moves the process
//! back and removes the group.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The quota this process runs under (set by [`QuotaGroup::enter`]).
static ACTIVE: OnceLock<f64> = OnceLock::new();

/// The `--quota` this process runs under, if any (recorded in each result's
/// parameters, so quota rows are told apart).
pub fn active() -> Option<f64> {
    ACTIVE.get().copied()
}

/// The CFS period used for the quota (the kernel's default, 100 ms).
const PERIOD_US: u64 = 100_000;

/// The smallest quota the kernel accepts is 1 ms per period.
const MIN_QUOTA_US: u64 = 1_000;

/// The cgroup the process runs in while it lives.
#[derive(Debug)]
pub struct QuotaGroup {
    /// The new group's directory.
    dir: PathBuf,
    /// The `cgroup.procs` of the group the process came from.
    home: PathBuf,
    /// The quota in CPUs.
    pub cpus: f64,
}

/// The cgroup interface that controls `cpu` here (v1 or v2), its mount and the
/// process's group in it.
struct Hierarchy {
    v2: bool,
    mount: PathBuf,
    group: String,
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("--quota: cannot write {value:?} to {}: {e}", path.display()))
}

fn hierarchy() -> Result<Hierarchy, String> {
    let pc = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("--quota: cannot read /proc/self/cgroup: {e}"))?;
    // v1: a line "N:cpu[,cpuacct]:/path" and the controller's mount.
    for line in pc.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrl, path) = match (f.next(), f.next(), f.next()) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => continue,
        };
        if ctrl.split(',').any(|c| c == "cpu") {
            for m in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
                if Path::new(m).join("cpu.cfs_quota_us").exists() {
                    return Ok(Hierarchy {
                        v2: false,
                        mount: m.into(),
                        group: path.trim().to_string(),
                    });
                }
            }
        }
    }
    // v2: the "0::/path" line; the mount must offer the cpu controller.
    if let Some(path) = pc.lines().find_map(|l| l.strip_prefix("0::")) {
        let mount = PathBuf::from("/sys/fs/cgroup");
        let controllers =
            std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "cpu") {
            return Ok(Hierarchy {
                v2: true,
                mount,
                group: path.trim().to_string(),
            });
        }
        return Err(format!(
            "--quota: no cgroup controls `cpu` here (cgroup v2 at /sys/fs/cgroup offers {:?}, and no v1 `cpu` controller is mounted)",
            controllers.trim()
        ));
    }
    Err("--quota: this process is in no cgroup (no /proc/self/cgroup entry for `cpu`)".into())
}

impl QuotaGroup {
    /// Creates the group, limits it to `cpus` CPUs and moves this process
    /// into it.
    pub fn enter(cpus: f64) -> Result<QuotaGroup, String> {
        if !(cpus.is_finite() && cpus > 0.0) {
            return Err(format!(
                "--quota {cpus}: expected a positive number of CPUs, e.g. 0.5"
            ));
        }
        let quota_us = ((cpus * PERIOD_US as f64).round() as u64).max(MIN_QUOTA_US);
        let name = format!("lockbench-{}", std::process::id());
        let Hierarchy { v2, mount, group } = hierarchy()?;
        let here = mount.join(group.trim_start_matches('/'));
        let (dir, home, limits) = if !v2 {
            (
                here.join(&name),
                here.join("cgroup.procs"),
                vec![
                    ("cpu.cfs_period_us", PERIOD_US.to_string()),
                    ("cpu.cfs_quota_us", quota_us.to_string()),
                ],
            )
        } else {
            // A v2 group with processes may not have children that use
            // controllers: create a sibling, under the parent, which
            // must delegate `cpu` to its children.
            let parent = here.parent().unwrap_or(&mount).to_path_buf();
            let sub = parent.join("cgroup.subtree_control");
            let on = std::fs::read_to_string(&sub).unwrap_or_default();
            if !on.split_whitespace().any(|c| c == "cpu") {
                write(&sub, "+cpu")?;
            }
            (
                parent.join(&name),
                here.join("cgroup.procs"),
                vec![("cpu.max", format!("{quota_us} {PERIOD_US}"))],
            )
        };
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "--quota: cannot create the cgroup {}: {e} (creating cgroups needs root or a delegated hierarchy)",
                dir.display()
            )
        })?;
        let g = QuotaGroup { dir, home, cpus };
        for (file, value) in limits {
            write(&g.dir.join(file), &value)?;
        }
        write(&g.dir.join("cgroup.procs"), &std::process::id().to_string())?;
        let _ = ACTIVE.set(cpus);
        Ok(g)
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        // Back home, then remove the (now empty) group; best effort.
        let _ = std::fs::write(&self.home, std::process::id().to_string());
        let _ = std::fs::remove_dir(&self.dir);
    }
}
