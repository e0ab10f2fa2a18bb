//! Unit tests of `tune`.

use super::*;

/// The module docs' tables list every tunable exactly once (grouped by
/// lock), so that the table a user reads cannot drift from the code.
#[test]
fn doc_tables_list_every_tunable_once() {
    let src = include_str!("mod.rs");
    let listed: Vec<&str> = src
        .lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .filter_map(|l| l.split('`').next())
        .filter(|e| e.starts_with("KLOCK_"))
        .collect();
    // `KLOCK_SPIN` (the spinlock variant) is the one tunable that is
    // not a number and has no `VARS` entry.
    let all: Vec<&str> = VARS.iter().map(|v| v.env).chain(["KLOCK_SPIN"]).collect();
    for v in &all {
        let n = listed.iter().filter(|&&e| e == *v).count();
        assert_eq!(n, 1, "{v} is listed {n} times in the tune.rs tables");
    }
    for e in &listed {
        assert!(
            all.contains(e),
            "the tune.rs tables list {e}, which is no tunable"
        );
    }
}

#[test]
fn good_values_accepted() {
    assert_eq!(parse_value("KLOCK_SPIN_NS", "0"), Ok(0));
    assert_eq!(parse_value("KLOCK_SPIN_NS", "10000000"), Ok(10_000_000));
    assert_eq!(parse_value("KLOCK_NODE_SLOTS", " 16383\n"), Ok(16383));
    assert_eq!(parse_value("KLOCK_MUTEX_SPIN", "1"), Ok(1));
    assert_eq!(parse_value("KLOCK_SPIN", "pvticket"), Ok(5));
    for k in SpinKind::ALL {
        assert_eq!(k.name().parse::<SpinKind>(), Ok(k));
    }
}

#[test]
fn bad_values_rejected_with_message() {
    for (var, raw) in [
        ("KLOCK_SPIN_NS", ""),
        ("KLOCK_SPIN_NS", "   "),
        ("KLOCK_SPIN_NS", "abc"),
        ("KLOCK_SPIN_NS", "-1"),
        ("KLOCK_SPIN_NS", "+5"),
        ("KLOCK_SPIN_NS", "1e3"),
        ("KLOCK_SPIN_NS", "10000001"),
        ("KLOCK_SPIN_NS", "99999999999999999999999"),
        ("KLOCK_NODE_SLOTS", "0"),
        ("KLOCK_NODE_SLOTS", "16384"),
        ("KLOCK_MUTEX_SPIN", "2"),
        ("KLOCK_KICK_AHEAD", "_4"),
    ] {
        let e = parse_value(var, raw).expect_err(raw);
        let msg = e.to_string();
        assert!(msg.contains(var), "{msg}");
        assert!(msg.contains("..="), "{msg}");
    }
    let e = parse_value("KLOCK_SPIN", "fastest").unwrap_err();
    assert!(e.to_string().contains("KLOCK_SPIN"));
    assert!(e.to_string().contains("unfair"));
    assert!(parse_value("KLOCK_NOPE", "1").is_err());
}

#[test]
fn from_lookup_warns_once_per_bad_variable_and_keeps_default() {
    let env = |v: &str| match v {
        "KLOCK_SPIN_NS" => Some("5000".to_string()),
        "KLOCK_KICK_AHEAD" => Some("many".to_string()),
        "KLOCK_SPIN" => Some("ticket".to_string()),
        "KLOCK_NODE_SLOTS" => Some("0".to_string()),
        _ => None,
    };
    let mut warnings = Vec::new();
    let t = Tunables::from_lookup(env, |e| warnings.push(e));
    assert_eq!(t.spin_ns, 5000);
    assert_eq!(t.kick_ahead, Tunables::DEFAULT.kick_ahead);
    assert_eq!(t.node_slots, Tunables::DEFAULT.node_slots);
    assert_eq!(t.spin_kind, SpinKind::Ticket);
    assert_eq!(warnings.len(), 2);
    assert_eq!(warnings[0].var, "KLOCK_KICK_AHEAD");
    assert_eq!(warnings[1].var, "KLOCK_NODE_SLOTS");
}

#[test]
fn a_bad_spin_value_gets_one_warning_with_every_variant() {
    let mut warnings = Vec::new();
    let t = Tunables::from_lookup(
        |v| (v == "KLOCK_SPIN").then(|| "foo".to_string()),
        |e| warnings.push(e.to_string()),
    );
    assert_eq!(t.spin_kind, Tunables::DEFAULT.spin_kind);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    for k in SpinKind::ALL {
        assert!(warnings[0].contains(k.name()), "{}", warnings[0]);
    }
    assert_eq!(SpinKind::from_name(b" pv"), None, "exact names only");
}

#[test]
fn closest_known_names_a_misspelling_only() {
    for (typo, want) in [
        ("KLOCK_MUTX_SPIN_NS", "KLOCK_MUTEX_SPIN_NS"),
        ("KLOCK_SPN", "KLOCK_SPIN"),
        ("KLOCK_spin", "KLOCK_SPIN"),
        ("KLOCK_STAT", "KLOCK_STATS"),
        ("KLOCK_STATS_FIEL", "KLOCK_STATS_FILE"),
        ("KLOCK_RWSEM_HANDOF_NS", "KLOCK_RWSEM_HANDOFF_NS"),
        ("KLOCK_PRELOAD_CHEK", "KLOCK_PRELOAD_CHECK"),
        ("KLOCK_MUTEX_POLL_GRACE_NS", "KLOCK_MUTEX_POLL_MAX_NS"),
    ] {
        assert_eq!(closest_known(typo), Some(want), "{typo}");
    }
    for far in ["KLOCK_FOO", "KLOCK_", "KLOCK_XYZZY_PLUGH"] {
        assert_eq!(closest_known(far), None, "{far}");
    }
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("abc", "abc"), 0);
}

#[test]
fn unknown_names_get_one_warning_each_and_known_ones_none() {
    let env = [
        "KLOCK_MUTX_SPIN_NS",
        "KLOCK_MUTX_SPIN_NS",
        "KLOCK_FOO",
        "PATH",
        "XKLOCK_SPIN",
    ]
    .into_iter()
    .chain(known_vars())
    .map(String::from);
    assert_eq!(
        unknown_var_warnings(env),
        [
            "klock: unknown variable KLOCK_FOO (ignored)",
            "klock: unknown variable KLOCK_MUTX_SPIN_NS (did you mean KLOCK_MUTEX_SPIN_NS?)",
        ]
    );
}

#[test]
fn the_registry_has_each_name_once() {
    let mut all: Vec<&str> = known_vars().collect();
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "a name is registered twice");
    assert!(all.iter().all(|v| v.starts_with("KLOCK_")));
}

/// Names the workspace's tests use on purpose as unknown variables.
const DELIBERATELY_UNKNOWN: &[&str] = &[
    "KLOCK_NO_SUCH_VARIABLE",
    "KLOCK_NO_SUCH_VARIABLE_AT_ALL",
    "KLOCK_MUTX_SPIN_NS",
    "KLOCK_NOPE",
    "KLOCK_FOO",
    "KLOCK_XYZZY_PLUGH",
];

/// Every `KLOCK_*` variable the workspace reads (or sets for a child
/// that reads it) is in the registry: the names in string literals and
/// shell expansions next to an environment access, in every source file
/// of `crates/` and `.ci/` (comments skipped).
#[test]
fn every_klock_variable_the_workspace_reads_is_registered() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates", ".ci"] {
        source_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut missing = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for name in env_reads(&text) {
            let deliberate =
                DELIBERATELY_UNKNOWN.contains(&name) || name.starts_with("KLOCK_EXAMPLE_");
            if !known_vars().any(|k| k == name) && !deliberate {
                missing.push(format!("{name} ({})", f.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "read but not in tune::OTHER_VARS: {missing:?}"
    );
}

fn source_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() && name != "target" && !name.starts_with('.') {
            source_files(&p, out);
        } else if p.is_file() {
            let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
            if ["rs", "sh", "c", "h", "py", ""].contains(&ext) {
                out.push(p);
            }
        }
    }
}

/// The `KLOCK_*` names `text` reads from the environment: in a string
/// literal right after an environment access (`env(`, `getenv(`,
/// `var(`, `var_os(`, `env_u64(`, `.env(`, `env_remove(`, `set(`, a
/// `_ENV` constant, a list of names), or in a shell `export KLOCK_`,
/// `$KLOCK_` or `${KLOCK_`.
fn env_reads(text: &str) -> Vec<&str> {
    const MARKERS: [&str; 14] = [
        "env(\"",
        "env(c\"",
        "var(\"",
        "var_os(\"",
        "env_u64(\"",
        "getenv(c\"",
        "env_remove(\"",
        "set(\"",
        "ENV: &str = \"",
        "[\"KLOCK_",
        "\", \"KLOCK_",
        "export KLOCK_",
        "$KLOCK_",
        "${KLOCK_",
    ];
    let mut names = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") || t.starts_with('#') || t.starts_with('*') {
            continue;
        }
        for m in MARKERS {
            for (at, _) in line.match_indices(m) {
                let rest = &line[at + m.len()..];
                let rest = if m.ends_with("KLOCK_") {
                    // The marker ends with the name's start: back up.
                    &line[at + m.len() - "KLOCK_".len()..]
                } else {
                    rest
                };
                let end = rest
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(rest.len());
                let name = &rest[..end];
                if name.starts_with("KLOCK_") && name.len() > "KLOCK_".len() {
                    names.push(name);
                }
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

#[test]
fn env_reads_finds_the_accesses() {
    let src = "let a = std::env::var(\"KLOCK_EXAMPLE_A\");\n\
               // env(\"KLOCK_EXAMPLE_COMMENTED\")\n\
               x=${KLOCK_EXAMPLE_B:-1} $KLOCK_EXAMPLE_C\n\
               getenv(c\"KLOCK_EXAMPLE_D\") .env(\"KLOCK_EXAMPLE_E\", v) \"KLOCK_EXAMPLE_F\"\n";
    let want = ["A", "B", "C", "D", "E"].map(|x| format!("KLOCK_EXAMPLE_{x}"));
    assert_eq!(env_reads(src), want);
}

#[test]
fn defaults_within_ranges() {
    for v in VARS {
        assert!(v.min <= v.default && v.default <= v.max, "{}", v.env);
        assert!(v.env.starts_with("KLOCK_"));
        assert!(!v.doc.is_empty());
    }
}
