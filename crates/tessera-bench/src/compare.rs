//! Compares two results files (a baseline and a contender) operation by operation: latency
//! percentiles, service time, throughput, error rate and system metrics, with the change in
//! percent, as a Markdown table and a bar chart.
//!
//! Cells are matched by (slice setting, clients) and, when both files measured the same engines,
//! by target; two single-cell files (two `run`s, e.g. before/after a change or Tessera vs
//! OpenSearch) are compared directly whatever their labels.

use crate::chart::{self, Series};
use crate::metrics::change_pct;
use crate::report::{fmt_ms, Report};
use crate::results::{BenchResult, Cell, OpResult};
use anyhow::{bail, Result};
use std::fmt::Write as _;

fn pairs<'a>(a: &'a BenchResult, b: &'a BenchResult) -> Vec<(&'a Cell, &'a Cell)> {
    if a.cells.len() == 1 && b.cells.len() == 1 {
        return vec![(&a.cells[0], &b.cells[0])];
    }
    let mut out = Vec::new();
    let same_targets = a.target_labels() == b.target_labels();
    for ca in &a.cells {
        let found = b.cells.iter().find(|cb| {
            cb.setting == ca.setting
                && cb.clients == ca.clients
                && (!same_targets || cb.target == ca.target)
        });
        if let Some(cb) = found {
            if !out
                .iter()
                .any(|(_, x): &(&Cell, &Cell)| std::ptr::eq(*x, cb))
            {
                out.push((ca, cb));
            }
        }
    }
    out
}

/// A number read from a cell.
type CellMetric = fn(&Cell) -> Option<f64>;

fn find<'c>(c: &'c Cell, name: &str) -> Option<&'c OpResult> {
    c.operations.iter().find(|o| o.name == name)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), fmt_ms)
}

fn change(a: Option<f64>, b: Option<f64>) -> String {
    a.zip(b)
        .and_then(|(a, b)| change_pct(a, b))
        .map_or("–".into(), |c| format!("{c:+.1}%"))
}

fn label(r: &BenchResult, c: &Cell) -> String {
    let t = r.target(&c.target);
    let docs = t
        .and_then(|t| t.corpus.docs)
        .map_or(String::new(), |d| format!(", {d} docs"));
    format!("{} ({}{docs})", c.target, r.started_at)
}

/// Renders the comparison of `a` (baseline) and `b` (contender).
pub fn compare(a: &BenchResult, b: &BenchResult) -> Result<Report> {
    if a.workload != b.workload {
        bail!(
            "cannot compare a {} run with a {} run",
            a.workload,
            b.workload
        );
    }
    let pairs = pairs(a, b);
    if pairs.is_empty() {
        bail!("the two results have no (slice setting, clients) combination in common");
    }
    let mut md = String::new();
    let mut charts = Vec::new();
    let _ = writeln!(md, "# tessera bench compare: {}\n", a.workload);
    let _ = writeln!(
        md,
        "Change = (contender − baseline) / baseline; for latency, negative = faster.\n"
    );
    for (n, (ca, cb)) in pairs.iter().enumerate() {
        let _ = writeln!(md, "## slices: {} · {} client(s)\n", ca.setting, ca.clients);
        let _ = writeln!(md, "- baseline: {}", label(a, ca));
        let _ = writeln!(md, "- contender: {}\n", label(b, cb));
        let _ = writeln!(
            md,
            "| Operation | Metric | Baseline | Contender | Change |\n| --- | --- | ---: | ---: | ---: |"
        );
        let mut names: Vec<&str> = ca.operations.iter().map(|o| o.name.as_str()).collect();
        for o in &cb.operations {
            if !names.contains(&o.name.as_str()) {
                names.push(&o.name);
            }
        }
        let (mut base_p90, mut cont_p90) = (Vec::new(), Vec::new());
        for name in &names {
            let (oa, ob) = (find(ca, name), find(cb, name));
            let lat = |o: Option<&OpResult>, p: &str| {
                o.and_then(|o| o.latency.as_ref()).and_then(|l| l.get(p))
            };
            for p in ["p50", "p90", "p99", "p99.9", "max"] {
                let _ = writeln!(
                    md,
                    "| {name} | {p} latency (ms) | {} | {} | {} |",
                    ms(lat(oa, p)),
                    ms(lat(ob, p)),
                    change(lat(oa, p), lat(ob, p))
                );
            }
            let svc =
                |o: Option<&OpResult>| o.and_then(|o| o.service_time.as_ref()).map(|s| s.p90_ms);
            let _ = writeln!(
                md,
                "| {name} | p90 service time (ms) | {} | {} | {} |",
                ms(svc(oa)),
                ms(svc(ob)),
                change(svc(oa), svc(ob))
            );
            let thr =
                |o: Option<&OpResult>| o.and_then(|o| o.throughput.as_ref()).map(|t| t.median);
            let _ = writeln!(
                md,
                "| {name} | median throughput (ops/s) | {} | {} | {} |",
                thr(oa).map_or("–".into(), chart::fmt_num),
                thr(ob).map_or("–".into(), chart::fmt_num),
                change(thr(oa), thr(ob))
            );
            let err = |o: Option<&OpResult>| o.map(|o| o.error_rate * 100.0);
            let _ = writeln!(
                md,
                "| {name} | error rate | {} | {} | |",
                err(oa).map_or("–".into(), |e| format!("{e:.1}%")),
                err(ob).map_or("–".into(), |e| format!("{e:.1}%")),
            );
            base_p90.push(lat(oa, "p90"));
            cont_p90.push(lat(ob, "p90"));
        }
        let rows: [(&str, CellMetric); 4] = [
            ("p90 CPU (%)", |c| c.system.cpu_p90_pct),
            ("peak memory (MiB)", |c| {
                c.system.memory_peak_bytes.map(|b| b / 1048576.0)
            }),
            ("max index_searcher active threads", |c| {
                c.system.index_searcher_active_max
            }),
            ("load generator CPU (% of one core)", |c| {
                c.loadgen.as_ref().map(|l| l.pct_of_one_core)
            }),
        ];
        for (name, f) in rows {
            let (x, y) = (f(ca), f(cb));
            let _ = writeln!(
                md,
                "| (system) | {name} | {} | {} | {} |",
                x.map_or("–".into(), chart::fmt_num),
                y.map_or("–".into(), chart::fmt_num),
                change(x, y)
            );
        }
        md.push('\n');
        let file = format!("charts/compare-{n}.svg");
        let cats: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        charts.push((
            file.clone(),
            chart::bar_chart(
                &format!(
                    "p90 latency: baseline vs contender (slices: {}, {} client(s))",
                    ca.setting, ca.clients
                ),
                "operation",
                "p90 latency (ms)",
                &cats,
                &[
                    Series {
                        name: format!("baseline: {}", ca.target),
                        values: base_p90,
                    },
                    Series {
                        name: format!("contender: {}", cb.target),
                        values: cont_p90,
                    },
                ],
                "",
            ),
        ));
        let _ = writeln!(md, "![p90 baseline vs contender]({file})\n");
    }
    Ok(Report {
        markdown: md,
        charts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_result;

    #[test]
    fn compares_matching_cells_with_change_percent() {
        let a = sample_result(1.0);
        let b = sample_result(1.1);
        let rep = compare(&a, &b).unwrap();
        let md = &rep.markdown;
        assert_eq!(rep.charts.len(), a.cells.len());
        let line = md
            .lines()
            .find(|l| l.starts_with("| distance_amount_agg | p90 latency"))
            .unwrap();
        assert!(line.ends_with("| +10.0% |"), "{line}");
        assert!(md.contains("(system) | p90 CPU"));
    }

    #[test]
    fn single_runs_pair_whatever_their_labels() {
        let mut a = sample_result(1.0);
        a.cells.truncate(1);
        let mut b = sample_result(0.5);
        b.cells.truncate(1);
        b.cells[0].target = "tessera".into();
        let md = compare(&a, &b).unwrap().markdown;
        assert!(md.contains("contender: tessera"));
        assert!(md.contains("-50.0%"));
        let mut c = sample_result(1.0);
        c.workload = "big5".into();
        assert!(compare(&a, &c).is_err());
    }
}
