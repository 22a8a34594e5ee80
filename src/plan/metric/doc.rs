//! The table of metrics for people: the list an SLO hint gives, and docs/metrics.md's table.

use super::METRICS;
#[cfg(test)]
use super::{Better, Change};
use crate::plan::stat::Stat;
#[cfg(test)]
use std::fmt::Write as _;

/// The metrics as an SLO hint lists them: `ttft tpot … (stats …), request_throughput …`.
pub fn hint_list() -> String {
    let dist: Vec<&str> = METRICS.iter().filter(|d| d.distribution).map(|d| d.name).collect();
    let plain: Vec<String> = METRICS
        .iter()
        .filter(|d| !d.distribution)
        .map(|d| match d.needs {
            Some(n) => format!("{} ({n})", d.name),
            None => d.name.to_string(),
        })
        .collect();
    format!("{} (stats {}), {}", dist.join(" "), Stat::ALL.map(Stat::name).join(" "), plain.join(" "))
}

/// docs/metrics.md's table of metrics, drawn from [`METRICS`] (a test keeps the doc equal).
#[cfg(test)]
pub fn markdown() -> String {
    let mut out = String::from(
        "| metric | unit | better | gates (default tolerance; * = gated by default) | per class | per turn | what |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for d in METRICS {
        let mut name = format!("`{}`", d.name);
        if d.distribution {
            name.push_str(".*stat*");
        }
        for a in d.aliases {
            let _ = write!(name, " (or `{a}`)");
        }
        let gates: Vec<String> = d
            .gates
            .iter()
            .map(|g| {
                let tol = match d.change {
                    Change::Relative => format!("{:.0}%", g.tolerance * 100.0),
                    Change::Points => format!("{:.0}pt", g.tolerance * 100.0),
                };
                let star = if g.default { "*" } else { "" };
                match g.stat {
                    Some(s) => format!("{}{star} {tol}", s.name()),
                    None => format!("yes{star} {tol}"),
                }
            })
            .collect();
        let gates = if gates.is_empty() { "—".to_string() } else { gates.join(", ") };
        let yes = |b: bool| if b { "yes" } else { "—" };
        let better = match d.better {
            Better::Lower => "lower",
            Better::Higher => "higher",
        };
        let mut about = d.about.to_string();
        if d.stream_only {
            about.push_str("; streamed rows only");
        }
        if let Some(n) = d.needs {
            let _ = write!(about, "; on {n}");
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {better} | {gates} | {} | {} | {about} |",
            d.unit.name(),
            yes(d.per_class),
            yes(d.per_turn)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_metrics_md_lists_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md");
        let doc = std::fs::read_to_string(path).expect("docs/metrics.md");
        assert!(
            doc.contains(&markdown()),
            "docs/metrics.md's table of metrics is not the table in src/plan/metric/mod.rs; paste:\n{}",
            markdown()
        );
        // Only the table: nothing pasted under it before the next heading (a test's panic
        // output once was).
        let table = markdown();
        let at = doc.find(&table).expect("checked") + table.len();
        let after = doc[at..].split("\n## ").next().unwrap_or_default();
        assert!(
            after.trim().is_empty(),
            "docs/metrics.md has text between its table and the next heading:\n{after}"
        );
    }
}
