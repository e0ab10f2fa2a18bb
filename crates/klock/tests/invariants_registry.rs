//! The registry of invariant and policy tags (`docs/invariants.md`) against
//! the tags the workspace cites.
//!
//! Code and docs cite a rule by its tag: `INV-` or `POLICY-` followed by
//! capitals, digits and hyphens. Every such tag must be defined in
//! `docs/invariants.md` by a heading that is exactly the tag (`### TAG`),
//! once; and every defined tag must be cited somewhere outside that page
//! (a rule nobody relies on is stale). Scanned: every `.rs` and `.md` file
//! under `crates/` and `docs/` (except `docs/results/`, published
//! measurements that keep the names of their day) and `README.md`; build
//! directories (`target`) and hidden directories are skipped.
//!
//! On failure, define the tag in `docs/invariants.md` (statement, why, the
//! module that owns it, what checks it) or correct the citation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Tag prefixes, each followed by `-` and the tag's name. (Spelled without
/// the hyphen here so that this file does not cite a tag itself.)
const PREFIXES: [&str; 2] = ["INV", "POLICY"];

/// The page that defines the tags, relative to the workspace root.
const REGISTRY: &str = "docs/invariants.md";

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(
        root.join(REGISTRY).is_file() && root.join("crates").is_dir(),
        "workspace root with {REGISTRY} not found from {}",
        root.display()
    );
    root
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'-'
}

/// Every tag in `line`: a prefix not preceded by an identifier character,
/// then `-`, then at least one capital or digit; trailing hyphens dropped.
fn tags_in_line(line: &str) -> Vec<String> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    for p in PREFIXES {
        let mut from = 0;
        while let Some(i) = line[from..].find(p).map(|i| i + from) {
            from = i + p.len();
            let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            let j = i + p.len();
            if !before_ok || b.get(j) != Some(&b'-') {
                continue;
            }
            let mut k = j + 1;
            while k < b.len() && is_name_char(b[k]) {
                k += 1;
            }
            let tag = line[i..k].trim_end_matches('-');
            if tag.len() > j + 1 - i {
                out.push(tag.to_string());
            }
        }
    }
    out
}

/// The `.rs` and `.md` files to scan, relative to `root`.
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') && rel != Path::new("docs/results") {
                    walk(root, &rel, out);
                }
            } else if name.ends_with(".rs") || name.ends_with(".md") {
                out.push(rel);
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(root, Path::new("crates"), &mut out);
    walk(root, Path::new("docs"), &mut out);
    out
}

/// Each file's citations: (file, line number, tag).
fn citations(root: &Path) -> Vec<(PathBuf, usize, String)> {
    let mut out = Vec::new();
    for rel in scanned_files(root) {
        let bytes = std::fs::read(root.join(&rel)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            for tag in tags_in_line(line) {
                out.push((rel.clone(), n + 1, tag));
            }
        }
    }
    out
}

/// The registry's definitions: each heading `### TAG` (any level from `##`),
/// tag -> the line numbers that define it.
fn definitions(root: &Path) -> BTreeMap<String, Vec<usize>> {
    let text = std::fs::read_to_string(root.join(REGISTRY)).unwrap();
    let mut defs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let Some(title) = line.strip_prefix("##").map(|t| t.trim_start_matches('#')) else {
            continue;
        };
        let title = title.trim();
        if tags_in_line(title).first().map(String::as_str) == Some(title) {
            defs.entry(title.to_string()).or_default().push(n + 1);
        }
    }
    defs
}

#[test]
fn tag_scanner_finds_exactly_the_tags() {
    let t = |s: &str| tags_in_line(s);
    let inv = |name: &str| format!("{}-{name}", PREFIXES[0]);
    let policy = |name: &str| format!("{}-{name}", PREFIXES[1]);
    assert_eq!(
        t(&format!(
            "see {}, and ({}).",
            inv("WAKE-ADDR"),
            policy("QUEUE-FIRST")
        )),
        [inv("WAKE-ADDR"), policy("QUEUE-FIRST")]
    );
    assert_eq!(t(&format!("**{}**:", inv("RT-NOSPIN"))), [inv("RT-NOSPIN")]);
    assert_eq!(t(&format!("{}-style", inv("X1"))), [inv("X1")]);
    assert!(t(&format!("{}- tags, {}-lower", PREFIXES[0], PREFIXES[0])).is_empty());
    assert!(t(&format!("X{}", inv("A"))).is_empty());
}

#[test]
fn every_cited_tag_is_defined_in_the_registry() {
    let root = workspace_root();
    let defs = definitions(&root);
    assert!(
        defs.len() >= 8,
        "{REGISTRY} defines only {} tags: {defs:?}",
        defs.len()
    );
    let cites = citations(&root);
    assert!(
        cites.len() >= 50,
        "only {} citations found: is the scan looking at the workspace?",
        cites.len()
    );
    let undefined: Vec<String> = cites
        .iter()
        .filter(|(_, _, tag)| !defs.contains_key(tag))
        .map(|(f, n, tag)| format!("{}:{n}: {tag}", f.display()))
        .collect();
    assert!(
        undefined.is_empty(),
        "tags cited but not defined by a `### TAG` heading in {REGISTRY}:\n  {}",
        undefined.join("\n  ")
    );
}

#[test]
fn every_defined_tag_is_defined_once_and_cited() {
    let root = workspace_root();
    let defs = definitions(&root);
    let twice: Vec<String> = defs
        .iter()
        .filter(|(_, lines)| lines.len() > 1)
        .map(|(tag, lines)| format!("{tag} (lines {lines:?})"))
        .collect();
    assert!(
        twice.is_empty(),
        "tags defined more than once in {REGISTRY}: {}",
        twice.join(", ")
    );
    let cites = citations(&root);
    let uncited: Vec<&String> = defs
        .keys()
        .filter(|tag| {
            !cites
                .iter()
                .any(|(f, _, t)| t == *tag && f != Path::new(REGISTRY))
        })
        .collect();
    assert!(
        uncited.is_empty(),
        "tags defined in {REGISTRY} but cited nowhere else (remove them or cite them where the code relies on them): {uncited:?}"
    );
}
