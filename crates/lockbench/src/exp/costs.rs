//! `lockbench costs`: the machine's costs alone (the report header's line, then
//! each cost's distribution), for a developer's quick look.

use crate::costs::{Costs, Dist};
use crate::table::Table;

use super::CliError;

/// Arguments of `lockbench costs`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CostsArgs {
    /// Also write the costs as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

/// Measures and prints the costs; writes `--json`.
pub fn run(args: &CostsArgs) -> Result<i32, CliError> {
    let c = crate::costs::measure();
    super::out(&text(&c));
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(&c)
            .map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
        super::write_file(p, &json)?;
    }
    Ok(0)
}

/// The header line, then a table of every cost's distribution and how it was
/// measured, then how long the measurement took.
pub fn text(c: &Costs) -> String {
    let mut t = Table::new(
        "The machine's costs (ns)",
        &[
            "cost",
            "median",
            "p25",
            "p75",
            "min",
            "max",
            "n",
            "measured as",
        ],
    );
    let rows: [(&str, &Option<Dist>, &str); 6] = [
        (
            "cache-line transfer",
            &c.transfer_ns,
            "round trip / 2, two pinned CPUs, batches of 100",
        ),
        (
            "futex wake-to-running",
            &c.futex_wake_ns,
            "FUTEX_WAKE stamp to the sleeper running, per wake",
        ),
        (
            "sched_yield alone",
            &c.yield_ns,
            "one thread, per call, batches of 200",
        ),
        (
            "sched_yield hand-over",
            &c.yield_switch_ns,
            "two threads on one CPU, yield + switch",
        ),
        (
            "atomic fetch_add",
            &c.rmw_ns,
            "private line, batches of 100 000",
        ),
        (
            "atomic compare_exchange",
            &c.cas_ns,
            "private line, succeeding, batches of 100 000",
        ),
    ];
    for (name, d, how) in rows {
        let f = |x: f64| format!("{x:.1}");
        let mut row = vec![name.to_string()];
        match d {
            Some(d) => row.extend([
                f(d.median),
                f(d.p25),
                f(d.p75),
                f(d.min),
                f(d.max),
                d.samples.to_string(),
            ]),
            None => row.extend([
                "n/a".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "0".into(),
            ]),
        }
        row.push(how.into());
        t.rows.push(row);
    }
    format!(
        "{}\n{}CPUs {:?}{}; measured in {:.0} ms\n",
        crate::costs::header(Some(c), " | "),
        t.to_text(),
        c.cpus,
        if c.pinned {
            ", threads pinned"
        } else {
            ", threads NOT pinned (sched_setaffinity failed)"
        },
        c.took_ms
    )
}
