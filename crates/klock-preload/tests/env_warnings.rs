//! The interposer's warnings about `KLOCK_*` variables, as a user of
//! `LD_PRELOAD` sees them: one line per bad value, with the one list of
//! `KLOCK_SPIN` names (klock's), and one line per unknown name, naming the
//! closest known one. Before, `KLOCK_SPIN=foo` printed two warnings with two
//! different lists (the interposer's and klock's tunables'), and a misspelt
//! name printed nothing.

mod common;

use common::{Mode, RUN_TIMEOUT, check_clean_exit, run};
use std::process::Command;

/// Run `/bin/true` under the interposer with `env` (and no other `KLOCK_*`
/// variable but the load check); its stderr lines other than the load
/// check's.
fn warnings(env: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = Command::new("/bin/true");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("KLOCK_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let r = run(&mut cmd, Mode::Preload, RUN_TIMEOUT);
    check_clean_exit(Mode::Preload, &r).unwrap_or_else(|e| panic!("{e}"));
    r.stderr
        .lines()
        .filter(|l| l.trim_end() != common::ACTIVE_LINE)
        .map(str::to_string)
        .collect()
}

#[test]
fn a_bad_spin_name_gets_one_warning_with_the_one_list() {
    let w = warnings(&[("KLOCK_SPIN", "foo")]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("KLOCK_SPIN=\"foo\""), "{w:?}");
    for k in klock::tune::SpinKind::ALL {
        assert!(w[0].contains(k.name()), "{w:?} lacks {}", k.name());
    }
}

#[test]
fn a_ticket_spinlock_gets_one_warning_and_a_good_name_none() {
    let w = warnings(&[("KLOCK_SPIN", "ticket")]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("do not fit"), "{w:?}");
    assert_eq!(warnings(&[("KLOCK_SPIN", "pv")]), Vec::<String>::new());
}

#[test]
fn a_misspelt_name_gets_one_warning_naming_the_closest() {
    let w = warnings(&[("KLOCK_MUTX_SPIN_NS", "5"), ("KLOCK_STATS_TOPP", "3")]);
    assert_eq!(
        w,
        [
            "klock: unknown variable KLOCK_MUTX_SPIN_NS (did you mean KLOCK_MUTEX_SPIN_NS?)",
            "klock: unknown variable KLOCK_STATS_TOPP (did you mean KLOCK_STATS_TOP?)",
        ]
    );
}

#[test]
fn a_bad_stats_level_gets_one_warning() {
    // klock's tunables own KLOCK_STATS; the interposer's statistics turn
    // off without a second line of their own.
    let w = warnings(&[("KLOCK_STATS", "foo")]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("KLOCK_STATS=\"foo\""), "{w:?}");
}
