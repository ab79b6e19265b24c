//! The ARS benchmark's Markdown report and SVG charts, in the form of the reference post: per
//! run a lap table (throughput, latency percentiles, error rate per lap and in total), per
//! (replicas, load) case a "No ARS / ARS / Change %" summary, the conclusion table of all cases,
//! the target check (on/off ratios under load, every figure's change % without), and the
//! completed `search` tasks per node that show where the shard requests went.

use super::summary::{summarize, Ars, ArsResult, CaseSummary, Load, RunResult};
use super::traffic::Figures;
use crate::chart::{self, Series};
use crate::report::{fmt_ms, Report};
use serde_json::Value;
use std::fmt::Write as _;

fn num(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "–".into(),
        Some(v) if unit == "ms" => fmt_ms(v),
        Some(v) if unit == "%" => format!("{v:.2}"),
        Some(v) => format!("{v:.1}"),
    }
}

fn signed_pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:+.1}%"))
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2}×"))
}

/// The rows of a lap table: name, unit, value of a lap's figures.
type Row = (&'static str, &'static str, fn(&Figures) -> Option<f64>);

const LAP_ROWS: [Row; 9] = [
    ("Min Throughput", "ops/s", |f| {
        f.throughput.as_ref().map(|t| t.min)
    }),
    ("Median Throughput", "ops/s", |f| {
        f.throughput.as_ref().map(|t| t.median)
    }),
    ("Max Throughput", "ops/s", |f| {
        f.throughput.as_ref().map(|t| t.max)
    }),
    ("50th percentile latency", "ms", |f| {
        f.latency.as_ref().map(|p| p.p50_ms)
    }),
    ("90th percentile latency", "ms", |f| {
        f.latency.as_ref().map(|p| p.p90_ms)
    }),
    ("99th percentile latency", "ms", |f| {
        f.latency.as_ref().map(|p| p.p99_ms)
    }),
    ("99.9th percentile latency", "ms", |f| {
        f.latency.as_ref().map(|p| p.p99_9_ms)
    }),
    ("100th percentile latency", "ms", |f| {
        f.latency.as_ref().map(|p| p.max_ms)
    }),
    ("error rate", "%", |f| {
        (f.requests > 0).then_some(f.error_rate_pct)
    }),
];

/// A run's lap table: one column per lap, then the total.
pub fn lap_table(run: &RunResult) -> String {
    let laps = &run.measured.laps;
    let mut s = String::from("| Metric |");
    for i in 1..=laps.len() {
        let _ = write!(s, " Lap {i} |");
    }
    s.push_str(" Unit | TOTAL |\n|---|");
    s.push_str(&"---:|".repeat(laps.len()));
    s.push_str("---|---:|\n");
    for (name, unit, value) in LAP_ROWS {
        let _ = write!(s, "| {name} |");
        for lap in laps {
            let _ = write!(s, " {} |", num(value(lap), unit));
        }
        let _ = writeln!(s, " {unit} | {} |", num(value(&run.measured.total), unit));
    }
    s.push_str("| requests |");
    for lap in laps {
        let _ = write!(s, " {} |", lap.requests);
    }
    let _ = writeln!(s, " | {} |", run.measured.total.requests);
    s
}

/// A case's "No ARS / ARS / Change %" table.
pub fn summary_table(case: &CaseSummary) -> String {
    let mut s = String::from("| Metric | No ARS | ARS | Change % |\n|---|---:|---:|---:|\n");
    for c in &case.changes {
        let _ = writeln!(
            s,
            "| {} ({}) | {} | {} | {} |",
            c.metric,
            c.unit,
            num(c.off, c.unit),
            num(c.on, c.unit),
            signed_pct(c.change_pct)
        );
    }
    s
}

/// The conclusion table: one row per case.
pub fn conclusion_table(cases: &[CaseSummary]) -> String {
    let mut s = String::from(
        "| Test case | Throughput improvement % | 50th % change | 90th % change | 99th % change |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for c in cases {
        let pct = |m: &str| signed_pct(c.change(m).and_then(|c| c.change_pct));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.label(),
            pct("Median throughput"),
            pct("50th percentile latency"),
            pct("90th percentile latency"),
            pct("99th percentile latency")
        );
    }
    s
}

/// The ARS issue's target check: under load the on/off ratios of throughput and latency; without
/// load every figure's change %.
pub fn target_check(cases: &[CaseSummary]) -> String {
    let mut s = String::new();
    let loaded: Vec<&CaseSummary> = cases.iter().filter(|c| c.load == Load::Slow).collect();
    if !loaded.is_empty() {
        s.push_str(
            "With load, ARS on / off (throughput: higher is better; latency: lower is better):\n\n\
             | Test case | median throughput | p50 latency | p90 latency | p99 latency |\n\
             |---|---:|---:|---:|---:|\n",
        );
        for c in loaded {
            let r = |m: &str| ratio(c.change(m).and_then(|c| c.ratio()));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                c.label(),
                r("Median throughput"),
                r("50th percentile latency"),
                r("90th percentile latency"),
                r("99th percentile latency")
            );
        }
        s.push('\n');
    }
    let unloaded: Vec<&CaseSummary> = cases.iter().filter(|c| c.load == Load::None).collect();
    if !unloaded.is_empty() {
        s.push_str("Without load, change % of every figure (ARS on vs off):\n\n| Test case |");
        for c in &unloaded[0].changes {
            let _ = write!(s, " {} |", c.metric);
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(unloaded[0].changes.len()));
        s.push('\n');
        for c in unloaded {
            let _ = write!(s, "| {} |", c.label());
            for ch in &c.changes {
                let _ = write!(s, " {} |", signed_pct(ch.change_pct));
            }
            s.push('\n');
        }
    }
    s
}

/// Completed `search` tasks per node (rows) and run (columns).
pub fn search_tasks_table(runs: &[RunResult]) -> String {
    let mut nodes: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.search_tasks.iter().map(|t| t.node.as_str()))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut s = String::from("| node_name |");
    for r in runs {
        let _ = write!(s, " {} |", r.label());
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(runs.len()));
    s.push('\n');
    for node in nodes {
        let _ = write!(s, "| {node} |");
        for r in runs {
            let n = r.search_tasks.iter().find(|t| t.node == node);
            let _ = write!(
                s,
                " {} |",
                n.map_or("–".into(), |t| t.completed.to_string())
            );
        }
        s.push('\n');
    }
    s
}

/// One node's `_nodes/stats/adaptive_selection` view: one row per node, one column per statistic.
pub fn adaptive_selection_table(stats: &Value) -> Option<String> {
    let nodes = stats.as_object().filter(|o| !o.is_empty())?;
    let mut keys: Vec<&str> = Vec::new();
    for v in nodes.values() {
        for k in v.as_object().into_iter().flat_map(|o| o.keys()) {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let mut s = String::from("| node |");
    for k in &keys {
        let _ = write!(s, " {k} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(keys.len()));
    s.push('\n');
    for (id, v) in nodes {
        let _ = write!(s, "| {id} |");
        for k in &keys {
            let cell = match &v[*k] {
                Value::Null => "–".to_string(),
                Value::String(x) => x.clone(),
                x => x.to_string(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    Some(s)
}

fn setup_section(r: &ArsResult) -> String {
    let st = &r.setup;
    let mut s = String::new();
    if !st.reports_adaptive_selection && r.runs.iter().any(|r| r.ars == Ars::On) {
        s.push_str(
            "**Note:** the cluster does not report `_nodes/stats/adaptive_selection`: it may accept \
             `cluster.routing.use_adaptive_replica_selection` and still route in round robin, in \
             which case \"ARS\" and \"No ARS\" measure the same routing.\n\n",
        );
    }
    let _ = writeln!(
        s,
        "Cluster: {}; coordinating node {}. Index `{}`: {} shards, {} nyc_taxis documents (seed {}), \
         force-merged to one segment.\n",
        st.cluster, st.target, st.index, st.shards, st.docs, st.seed
    );
    let _ = writeln!(
        s,
        "Load: {} closed-loop clients sending the query below to the coordinating node; {} s warm-up, \
         then {} laps of {} s. Machine: {} cores (shared by the nodes and the load generator). \
         Errors: no response, a non-2xx status or `_shards.failed > 0`.\n",
        st.clients, st.warmup_seconds, st.laps, st.lap_seconds, st.cores
    );
    if let Some(node) = &st.slow_node {
        let methods: Vec<&str> = r
            .runs
            .iter()
            .filter_map(|r| r.slow_method.as_deref())
            .collect();
        let method = methods.first().copied().unwrap_or("not used in these runs");
        let _ = writeln!(
            s,
            "\"With load\": {node} slowed to {} (of one core with a cgroup quota, of the wall clock \
             with a duty cycle); method: {method}.\n",
            st.slow_cpu
        );
    }
    let _ = writeln!(
        s,
        "```json\n{}\n```\n",
        serde_json::to_string(&st.query).unwrap_or_default()
    );
    s
}

/// Latency percentiles off vs on for one case.
fn latency_chart(r: &ArsResult, case: &CaseSummary) -> Option<(String, String)> {
    let off = r.run(case.replicas, case.load, Ars::Off)?;
    let on = r.run(case.replicas, case.load, Ars::On)?;
    let cats: Vec<String> = ["p50", "p90", "p99", "p99.9"].map(String::from).to_vec();
    let series = [off, on]
        .iter()
        .map(|run| Series {
            name: run.ars.label().to_string(),
            values: cats
                .iter()
                .map(|c| run.measured.total.latency.as_ref().and_then(|p| p.get(c)))
                .collect(),
        })
        .collect::<Vec<_>>();
    let svg = chart::bar_chart(
        &format!("Latency, {}: ARS off vs on", case.label()),
        "percentile",
        "latency (ms)",
        &cats,
        &series,
        " ms",
    );
    Some((format!("charts/latency-{}.svg", slug(&case.label())), svg))
}

/// Completed search tasks per node, off vs on, for one case.
fn tasks_chart(r: &ArsResult, case: &CaseSummary) -> Option<(String, String)> {
    let off = r.run(case.replicas, case.load, Ars::Off)?;
    let on = r.run(case.replicas, case.load, Ars::On)?;
    let mut nodes: Vec<String> = off.search_tasks.iter().map(|t| t.node.clone()).collect();
    nodes.extend(on.search_tasks.iter().map(|t| t.node.clone()));
    nodes.sort();
    nodes.dedup();
    let series = [off, on]
        .iter()
        .map(|run| Series {
            name: run.ars.label().to_string(),
            values: nodes
                .iter()
                .map(|n| {
                    let t = run.search_tasks.iter().find(|t| &t.node == n);
                    t.map(|t| t.completed as f64)
                })
                .collect(),
        })
        .collect::<Vec<_>>();
    let svg = chart::bar_chart(
        &format!("Completed search tasks per node, {}", case.label()),
        "node",
        "completed search tasks",
        &nodes,
        &series,
        "",
    );
    Some((
        format!("charts/search-tasks-{}.svg", slug(&case.label())),
        svg,
    ))
}

/// Median throughput of every case, off vs on.
fn throughput_chart(r: &ArsResult, cases: &[CaseSummary]) -> (String, String) {
    let cats: Vec<String> = cases.iter().map(CaseSummary::label).collect();
    let series = [Ars::Off, Ars::On]
        .iter()
        .map(|&ars| Series {
            name: ars.label().to_string(),
            values: cases
                .iter()
                .map(|c| {
                    r.run(c.replicas, c.load, ars)
                        .and_then(|run| run.measured.total.throughput.as_ref())
                        .map(|t| t.median)
                })
                .collect(),
        })
        .collect::<Vec<_>>();
    let svg = chart::bar_chart(
        "Median throughput: ARS off vs on",
        "test case",
        "ops/s",
        &cats,
        &series,
        "",
    );
    ("charts/throughput.svg".into(), svg)
}

fn slug(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The whole report.
pub fn render(r: &ArsResult) -> Report {
    let cases = summarize(r);
    let mut md = String::from("# Adaptive replica selection benchmark\n\n");
    md.push_str(&setup_section(r));
    if let Some(e) = &r.error {
        let _ = writeln!(md, "**The run stopped early:** {e}\n");
    }
    for run in &r.runs {
        let _ = writeln!(md, "## {}\n\n{}", run.label(), lap_table(run));
        if let Some(e) = &run.measured.first_error {
            let _ = writeln!(md, "First error: {e}\n");
        }
        let views = run.adaptive_selection.as_ref().and_then(Value::as_object);
        for (reporter, view) in views.into_iter().flatten() {
            if let Some(t) = adaptive_selection_table(view) {
                let _ = writeln!(
                    md,
                    "`_nodes/stats/adaptive_selection` of {reporter} at the end of the laps:\n\n{t}"
                );
            }
        }
    }
    let mut charts = Vec::new();
    if !cases.is_empty() {
        md.push_str("## Summary: ARS off vs on\n\n");
        for c in &cases {
            let _ = writeln!(md, "### {}\n\n{}", c.label(), summary_table(c));
            charts.extend(latency_chart(r, c));
            charts.extend(tasks_chart(r, c));
        }
        let _ = writeln!(md, "## Conclusion\n\n{}", conclusion_table(&cases));
        let _ = writeln!(md, "## Target check\n\n{}", target_check(&cases));
        charts.push(throughput_chart(r, &cases));
    }
    let _ = writeln!(
        md,
        "## Completed search tasks per node\n\nEach node's completed `search` tasks during the laps \
         (from `_cat/thread_pool/search`; the coordinating node counts its own work too).\n\n{}",
        search_tasks_table(&r.runs)
    );
    if !charts.is_empty() {
        md.push_str("## Charts\n\n");
        for (file, _) in &charts {
            let _ = writeln!(md, "![{file}]({file})");
        }
        md.push('\n');
    }
    Report {
        markdown: md,
        charts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ars::summary::tests::sample;

    #[test]
    fn summary_rows_read_like_the_reference_post() {
        let r = sample();
        let cases = summarize(&r);
        let t = summary_table(&cases[1]);
        assert!(
            t.starts_with("| Metric | No ARS | ARS | Change % |\n"),
            "{t}"
        );
        assert!(
            t.contains("| Median throughput (ops/s) | 41.2 | 88.8 | +115.8% |"),
            "{t}"
        );
        assert!(
            t.contains("| 90th percentile latency (ms) | 5215 | 1963 | -62.4% |"),
            "{t}"
        );
        let c = conclusion_table(&cases);
        assert!(
            c.contains("| 1 replica, with load | +115.8% | +129.1% | -62.4% | -57.1% |"),
            "{c}"
        );
        assert!(
            c.contains("| 1 replica, no load | +1.9% | -1.8% | +0.5% | +1.3% |"),
            "{c}"
        );
    }

    #[test]
    fn target_check_gives_ratios_under_load_and_changes_without() {
        let cases = summarize(&sample());
        let t = target_check(&cases);
        assert!(
            t.contains("| 1 replica, with load | 2.16× | 2.29× | 0.38× | 0.43× |"),
            "{t}"
        );
        assert!(
            t.contains("| 1 replica, no load | +1.9% | -1.8% | +0.5% | +1.3% |"),
            "{t}"
        );
    }

    #[test]
    fn lap_and_task_tables() {
        let r = sample();
        let t = lap_table(&r.runs[0]);
        assert!(
            t.starts_with("| Metric | Lap 1 | Lap 2 | Unit | TOTAL |\n|---|---:|---:|---|---:|\n"),
            "{t}"
        );
        assert!(
            t.contains("| Median Throughput | 95.8 | 95.8 | ops/s | 95.8 |"),
            "{t}"
        );
        assert!(t.contains("| requests | 1000 | 1000 | | 1000 |"), "{t}");
        let n = search_tasks_table(&r.runs[2..4]);
        assert!(n.contains("| node-3 | 100 | 10 |"), "{n}");
        assert!(
            n.starts_with(
                "| node_name | 1 replica, with load, No ARS | 1 replica, with load, ARS |"
            ),
            "{n}"
        );
    }

    #[test]
    fn report_has_every_section_and_chart() {
        let rep = render(&sample());
        for section in [
            "## Summary: ARS off vs on",
            "## Conclusion",
            "## Target check",
            "## Completed search tasks per node",
            "cgroup v1 cpu quota",
        ] {
            assert!(rep.markdown.contains(section), "{section}");
        }
        assert!(rep.markdown.contains("of client at the end of the laps"));
        assert!(rep.markdown.contains("| node-3 | 0 | 4 | 1.5 |"));
        assert!(!rep.markdown.contains("**Note:**"));
        let mut r = sample();
        r.setup.reports_adaptive_selection = false;
        assert!(render(&r).markdown.contains("may accept"));
        let files: Vec<&str> = rep.charts.iter().map(|(f, _)| f.as_str()).collect();
        assert!(
            files.contains(&"charts/latency-1-replica-with-load.svg"),
            "{files:?}"
        );
        assert!(files.contains(&"charts/throughput.svg"), "{files:?}");
        assert!(rep.charts.iter().all(|(_, svg)| svg.starts_with("<svg")));
    }
}
