//! Markdown report and charts from a results file, in the form of the concurrent segment search
//! posts: per client count a "P90 latency" table with one column per slice setting and
//! `% improvement` against the baseline column, a system metrics table (p90 CPU, memory, max
//! active `index_searcher` threads), the "% improvement vs % additional CPU" table for the focus
//! operation, the across-setups table, side-by-side tables when several engines were measured,
//! and per-cell details (all percentiles, service time, throughput, errors, what the responses
//! said). The load generator's own CPU share is stated so a reader can tell it was not the
//! bottleneck.

use crate::chart::{self, Series};
use crate::metrics::{change_pct, improvement_pct};
use crate::results::{BenchResult, Cell, OpResult};
use std::fmt::Write as _;

/// A rendered report: Markdown plus SVG files (name relative to the report, content).
pub struct Report {
    pub markdown: String,
    pub charts: Vec<(String, String)>,
}

pub fn fmt_ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("–".into(), fmt_ms)
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}%"))
}

fn signed_pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:+.0}%"))
}

fn bytes(v: Option<f64>) -> String {
    match v {
        Some(b) if b >= 1024.0 * 1024.0 * 1024.0 => {
            format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
        }
        Some(b) => format!("{:.0} MiB", b / (1024.0 * 1024.0)),
        None => "–".into(),
    }
}

fn count(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}"))
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn clients_label(n: usize) -> String {
    format!("{n} client{}", if n == 1 { "" } else { "s" })
}

/// A table builder.
struct Table {
    rows: Vec<Vec<String>>,
    /// Columns (besides the first) aligned left: text rather than numbers.
    left: Vec<usize>,
}

impl Table {
    fn new(header: Vec<String>) -> Table {
        Table {
            rows: vec![header],
            left: Vec::new(),
        }
    }

    fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }

    fn render(&self, out: &mut String) {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
                    .max(3)
            })
            .collect();
        for (i, r) in self.rows.iter().enumerate() {
            out.push('|');
            for (c, w) in widths.iter().enumerate() {
                let cell = r.get(c).map_or("", String::as_str);
                let pad = w - cell.chars().count();
                if c == 0 || self.left.contains(&c) {
                    let _ = write!(out, " {cell}{} |", " ".repeat(pad));
                } else {
                    let _ = write!(out, " {}{cell} |", " ".repeat(pad));
                }
            }
            out.push('\n');
            if i == 0 {
                out.push('|');
                for (c, w) in widths.iter().enumerate() {
                    let dashes = "-".repeat(*w);
                    if c == 0 || self.left.contains(&c) {
                        let _ = write!(out, " {dashes} |");
                    } else {
                        let _ = write!(out, " {}: |", &dashes[1..]);
                    }
                }
                out.push('\n');
            }
        }
        out.push('\n');
    }
}

fn op<'a>(cell: &'a Cell, name: &str) -> Option<&'a OpResult> {
    cell.operations.iter().find(|o| o.name == name)
}

/// p90 CPU for one operation: its own readings when there are enough, else the cell's.
fn op_cpu(cell: &Cell, name: &str) -> (Option<f64>, bool) {
    match op(cell, name) {
        Some(o) if o.system.cpu_readings >= 3 && o.system.cpu_p90_pct.is_some() => {
            (o.system.cpu_p90_pct, true)
        }
        _ => (cell.system.cpu_p90_pct, false),
    }
}

/// A short description of what a response said.
pub fn response_summary(v: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    if let Some(n) = v["hits_total"].as_u64() {
        let rel = if v["hits_relation"] == "gte" {
            "≥"
        } else {
            ""
        };
        parts.push(format!("hits {rel}{n}"));
    }
    if let Some(aggs) = v["aggregations"].as_object() {
        for (name, a) in aggs {
            if let Some(b) = a["buckets"].as_u64() {
                parts.push(format!("{name}: {b} buckets, {} docs", a["doc_count"]));
            } else if let Some(o) = a.as_object() {
                let vals: Vec<String> = o
                    .iter()
                    .map(|(k, v)| format!("{k} {}", fmt_value(v)))
                    .collect();
                parts.push(format!("{name}: {}", vals.join(", ")));
            }
        }
    }
    parts.join("; ")
}

fn fmt_value(v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() != 0.0 => format!("{f:.3}"),
        _ => v.to_string(),
    }
}

/// Renders the report.
pub fn render(r: &BenchResult) -> Report {
    let mut md = String::new();
    let mut charts = Vec::new();
    let ops = r.operation_names();
    let multi_settings = r.settings.len() > 1;
    let baseline = r
        .baseline
        .clone()
        .or_else(|| r.settings.first().cloned())
        .unwrap_or_default();

    let _ = writeln!(md, "# tessera bench: {} {}\n", r.workload, r.kind);
    if r.interrupted || r.error.is_some() {
        let why = r.error.clone().unwrap_or_else(|| "interrupted".into());
        let _ = writeln!(md, "> **Partial report** — the run stopped early: {why}\n");
    }
    let _ = writeln!(md, "- started {}, finished {}", r.started_at, r.finished_at);
    let _ = writeln!(md, "- command: `{}`", r.command.join(" "));
    let _ = writeln!(md, "- index `{}`; operations: {}", r.index, ops.join(", "));
    let sched = match (r.options.schedule.as_str(), r.options.target_throughput) {
        ("target-throughput", Some(t)) => format!("target throughput {t} ops/s per operation"),
        ("public-schedule", _) => "the public workload's target throughputs".into(),
        _ => "closed loop (benchmarking mode: each client sends its next request on the previous response)".into(),
    };
    let iters = match (r.options.warmup_iterations, r.options.iterations) {
        (None, None) => "each operation's default warm-up/iterations".to_string(),
        (w, i) => format!(
            "{} warm-up and {} measured iterations per client",
            w.map_or("default".into(), |w| w.to_string()),
            i.map_or("default".into(), |i| i.to_string())
        ),
    };
    let _ = writeln!(md, "- schedule: {sched}; {iters}");
    let _ = writeln!(
        md,
        "- latency = intended start → response; service time = send → response; system metrics sampled from `_nodes/stats` every {} ms\n",
        r.options.sample_interval_ms
    );
    let mut t = Table::new(
        [
            "target",
            "url",
            "engine",
            "processors",
            "docs",
            "corpus seed",
            "segments",
            "store",
        ]
        .map(String::from)
        .to_vec(),
    );
    t.left.extend([1, 2]);
    for ti in &r.targets {
        t.row(vec![
            ti.label.clone(),
            ti.url.clone(),
            format!(
                "{} {}",
                ti.distribution.clone().unwrap_or_else(|| "?".into()),
                ti.version.clone().unwrap_or_default()
            ),
            ti.available_processors
                .map_or("–".into(), |p| p.to_string()),
            ti.corpus.docs.map_or("–".into(), |d| d.to_string()),
            ti.corpus.seed.map_or("–".into(), |s| s.to_string()),
            ti.corpus.segments.map_or("–".into(), |s| s.to_string()),
            bytes(ti.corpus.store_size_bytes.map(|b| b as f64)),
        ]);
    }
    t.render(&mut md);

    for target in r.target_labels() {
        if multi_settings {
            for &clients in &r.clients {
                let cells: Vec<Option<&Cell>> = r
                    .settings
                    .iter()
                    .map(|s| r.cell(&target, s, clients))
                    .collect();
                if cells.iter().all(Option::is_none) {
                    continue;
                }
                let _ = writeln!(md, "## {target} — {}\n", clients_label(clients));
                let base = r.cell(&target, &baseline, clients);
                let _ = writeln!(md, "### P90 latency comparison\n");
                let mut header = vec!["Operation".to_string()];
                for s in &r.settings {
                    header.push(format!("{s} p90 (ms)"));
                    if *s != baseline {
                        header.push("% improvement".into());
                    }
                }
                let mut t = Table::new(header);
                for name in &ops {
                    let b = base.and_then(|c| op(c, name)).and_then(OpResult::p90);
                    let mut row = vec![name.clone()];
                    for (s, c) in r.settings.iter().zip(&cells) {
                        let v = c.and_then(|c| op(c, name)).and_then(OpResult::p90);
                        row.push(opt_ms(v));
                        if *s != baseline {
                            row.push(pct(b.zip(v).and_then(|(b, v)| improvement_pct(b, v))));
                        }
                    }
                    t.row(row);
                }
                t.render(&mut md);

                let _ = writeln!(md, "### System metrics\n");
                system_table(&mut md, &r.settings, &cells);

                let focus = &r.focus_operation;
                if ops.contains(focus) {
                    let _ = writeln!(md, "### % improvement vs % additional CPU: `{focus}`\n");
                    let mut t = Table::new(
                        [
                            "Comparison",
                            "% performance improvement (p90)",
                            "% additional CPU utilization (p90)",
                        ]
                        .map(String::from)
                        .to_vec(),
                    );
                    let mut fallback = false;
                    let mut cats = Vec::new();
                    let (mut imp, mut cpu) = (Vec::new(), Vec::new());
                    for (i, w) in r.settings.windows(2).enumerate() {
                        let (a, b) = (cells[i], cells[i + 1]);
                        let pa = a.and_then(|c| op(c, focus)).and_then(OpResult::p90);
                        let pb = b.and_then(|c| op(c, focus)).and_then(OpResult::p90);
                        let (ca, oa) = a.map_or((None, false), |c| op_cpu(c, focus));
                        let (cb, ob) = b.map_or((None, false), |c| op_cpu(c, focus));
                        fallback |= !(oa && ob);
                        let i_pct = pa.zip(pb).and_then(|(x, y)| improvement_pct(x, y));
                        let c_pts = ca.zip(cb).map(|(x, y)| y - x);
                        t.row(vec![
                            format!("{} to {}", w[0], w[1]),
                            pct(i_pct),
                            pct(c_pts),
                        ]);
                        cats.push(format!("{} → {}", w[0], w[1]));
                        imp.push(i_pct);
                        cpu.push(c_pts);
                    }
                    t.render(&mut md);
                    let _ = writeln!(
                        md,
                        "CPU is the p90 of `process.cpu.percent` while `{focus}` ran{}; additional CPU is in percentage points.\n",
                        if fallback { " (over the whole cell where the operation was too short to sample)" } else { "" }
                    );
                    let name = format!(
                        "charts/improvement-vs-cpu-{}-c{clients}.svg",
                        file_part(&target)
                    );
                    charts.push((
                        name.clone(),
                        chart::bar_chart(
                            &format!(
                                "{focus}: % improvement vs % additional CPU ({target}, {})",
                                clients_label(clients)
                            ),
                            "comparison",
                            "percent",
                            &cats,
                            &[
                                Series {
                                    name: "% improvement (p90)".into(),
                                    values: imp,
                                },
                                Series {
                                    name: "% additional CPU (p90)".into(),
                                    values: cpu,
                                },
                            ],
                            "%",
                        ),
                    ));
                    let _ = writeln!(md, "![% improvement vs % additional CPU]({name})\n");
                }
            }
            across_setups(&mut md, r, &target, &baseline);
            // p90 vs clients per operation.
            let _ = writeln!(md, "## {target}: p90 latency vs clients\n");
            for name in &ops {
                let x: Vec<String> = r.clients.iter().map(|c| c.to_string()).collect();
                let series: Vec<Series> = r
                    .settings
                    .iter()
                    .map(|s| Series {
                        name: s.clone(),
                        values: r
                            .clients
                            .iter()
                            .map(|&c| {
                                r.cell(&target, s, c)
                                    .and_then(|c| op(c, name))
                                    .and_then(OpResult::p90)
                            })
                            .collect(),
                    })
                    .collect();
                let file = format!("charts/p90-{}-{}.svg", file_part(&target), file_part(name));
                charts.push((
                    file.clone(),
                    chart::line_chart(
                        &format!("{name}: p90 latency ({target})"),
                        "clients",
                        "p90 latency (ms)",
                        &x,
                        &series,
                    ),
                ));
                let _ = writeln!(md, "![{name}]({file})");
            }
            md.push('\n');
        } else {
            // A single setting: the per-operation table is the headline.
            for &clients in &r.clients {
                let Some(cell) = r.cell(&target, &r.settings[0], clients) else {
                    continue;
                };
                let _ = writeln!(
                    md,
                    "## {target} — {} — slices: {}\n",
                    clients_label(clients),
                    cell.setting
                );
                detail_table(&mut md, cell);
                let _ = writeln!(md, "### System metrics\n");
                system_table(&mut md, &r.settings, &[Some(cell)]);
                let file = format!("charts/latency-{}-c{clients}.svg", file_part(&target));
                let cats: Vec<String> = cell.operations.iter().map(|o| o.name.clone()).collect();
                let pick = |f: fn(&crate::metrics::Percentiles) -> f64| -> Vec<Option<f64>> {
                    cell.operations
                        .iter()
                        .map(|o| o.latency.as_ref().map(f))
                        .collect()
                };
                charts.push((
                    file.clone(),
                    chart::bar_chart(
                        &format!(
                            "latency per operation ({target}, {})",
                            clients_label(clients)
                        ),
                        "operation",
                        "latency (ms)",
                        &cats,
                        &[
                            Series {
                                name: "p50".into(),
                                values: pick(|p| p.p50_ms),
                            },
                            Series {
                                name: "p90".into(),
                                values: pick(|p| p.p90_ms),
                            },
                            Series {
                                name: "p99".into(),
                                values: pick(|p| p.p99_ms),
                            },
                        ],
                        "",
                    ),
                ));
                let _ = writeln!(md, "![latency per operation]({file})\n");
            }
        }
    }

    if r.targets.len() > 1 {
        side_by_side(&mut md, &mut charts, r, &ops);
    }

    loadgen_section(&mut md, r);

    if multi_settings {
        let _ = writeln!(md, "## Details\n");
        for c in &r.cells {
            let _ = writeln!(
                md,
                "### {} · slices: {} · {}\n",
                c.target,
                c.setting,
                clients_label(c.clients)
            );
            detail_table(&mut md, c);
        }
    }
    Report {
        markdown: md,
        charts,
    }
}

fn system_table(md: &mut String, settings: &[String], cells: &[Option<&Cell>]) {
    let mut header = vec!["Metric".to_string()];
    header.extend(settings.iter().take(cells.len()).cloned());
    let mut t = Table::new(header);
    let row = |name: &str, f: &dyn Fn(&Cell) -> String| -> Vec<String> {
        let mut r = vec![name.to_string()];
        r.extend(cells.iter().map(|c| c.map_or("–".into(), f)));
        r
    };
    t.row(row("p90 CPU", &|c| pct(c.system.cpu_p90_pct)));
    t.row(row("mean CPU", &|c| pct(c.system.cpu_mean_pct)));
    t.row(row("p90 host CPU (`os.cpu.percent`)", &|c| {
        pct(c.system.os_cpu_p90_pct)
    }));
    let src = cells
        .iter()
        .flatten()
        .find_map(|c| c.system.memory_source.clone());
    t.row(row(
        &format!(
            "peak memory{}",
            src.map_or(String::new(), |s| format!(" (`{s}`)"))
        ),
        &|c| bytes(c.system.memory_peak_bytes),
    ));
    if cells
        .iter()
        .flatten()
        .any(|c| c.system.heap_used_p90_pct.is_some())
    {
        t.row(row("p90 JVM heap", &|c| pct(c.system.heap_used_p90_pct)));
    }
    t.row(row("max index_searcher active threads", &|c| {
        count(c.system.index_searcher_active_max)
    }));
    t.row(row("max index_searcher queue", &|c| {
        count(c.system.index_searcher_queue_max)
    }));
    t.row(row("load generator CPU (% of one core)", &|c| {
        c.loadgen
            .as_ref()
            .map_or("–".into(), |l| format!("{:.1}%", l.pct_of_one_core))
    }));
    t.render(md);
    if let Some(e) = cells.iter().flatten().find_map(|c| c.system.error.clone()) {
        let _ = writeln!(md, "System sampling stopped early: {e}\n");
    }
}

fn detail_table(md: &mut String, c: &Cell) {
    let mut t = Table::new(
        [
            "Operation",
            "requests",
            "error rate",
            "p50 (ms)",
            "p90 (ms)",
            "p99 (ms)",
            "p99.9 (ms)",
            "max (ms)",
            "service p50",
            "service p90",
            "service p99",
            "took p90",
            "throughput min/median/max (ops/s)",
            "p90 CPU",
            "response",
        ]
        .map(String::from)
        .to_vec(),
    );
    t.left.push(14);
    for o in &c.operations {
        let l = o.latency.as_ref();
        let s = o.service_time.as_ref();
        t.row(vec![
            o.name.clone(),
            o.requests.to_string(),
            format!("{:.1}%", o.error_rate * 100.0),
            opt_ms(l.map(|p| p.p50_ms)),
            opt_ms(l.map(|p| p.p90_ms)),
            opt_ms(l.map(|p| p.p99_ms)),
            opt_ms(l.map(|p| p.p99_9_ms)),
            opt_ms(l.map(|p| p.max_ms)),
            opt_ms(s.map(|p| p.p50_ms)),
            opt_ms(s.map(|p| p.p90_ms)),
            opt_ms(s.map(|p| p.p99_ms)),
            opt_ms(o.took.as_ref().map(|p| p.p90_ms)),
            o.throughput.as_ref().map_or("–".into(), |t| {
                format!(
                    "{} / {} / {}",
                    chart::fmt_num(t.min),
                    chart::fmt_num(t.median),
                    chart::fmt_num(t.max)
                )
            }),
            pct(o.system.cpu_p90_pct),
            response_summary(&o.response),
        ]);
    }
    t.render(md);
    for o in &c.operations {
        if let Some(e) = &o.first_error {
            let _ = writeln!(md, "- `{}` error: {e}", o.name);
        }
    }
    if c.operations.iter().any(|o| o.first_error.is_some()) {
        md.push('\n');
    }
}

fn across_setups(md: &mut String, r: &BenchResult, target: &str, _baseline: &str) {
    let focus = &r.focus_operation;
    if r.settings.len() < 2 || r.clients.len() < 2 {
        return;
    }
    let _ = writeln!(md, "## {target}: across setups, `{focus}`\n");
    let mut header = vec!["Clients".to_string()];
    for w in r.settings.windows(2) {
        header.push(format!("% perf improvement {} → {}", w[0], w[1]));
        header.push("% additional CPU".into());
    }
    let mut t = Table::new(header);
    for &clients in &r.clients {
        let mut row = vec![clients_label(clients)];
        for w in r.settings.windows(2) {
            let a = r.cell(target, &w[0], clients);
            let b = r.cell(target, &w[1], clients);
            let pa = a.and_then(|c| op(c, focus)).and_then(OpResult::p90);
            let pb = b.and_then(|c| op(c, focus)).and_then(OpResult::p90);
            row.push(pct(pa.zip(pb).and_then(|(x, y)| improvement_pct(x, y))));
            let ca = a.and_then(|c| op_cpu(c, focus).0);
            let cb = b.and_then(|c| op_cpu(c, focus).0);
            row.push(pct(ca.zip(cb).map(|(x, y)| y - x)));
        }
        t.row(row);
    }
    t.render(md);
}

fn side_by_side(
    md: &mut String,
    charts: &mut Vec<(String, String)>,
    r: &BenchResult,
    ops: &[String],
) {
    let labels = r.target_labels();
    let first = &labels[0];
    let _ = writeln!(
        md,
        "## Engines side by side (p90 latency, ms; change vs {first}, negative = faster)\n"
    );
    for s in &r.settings {
        for &clients in &r.clients {
            let cells: Vec<Option<&Cell>> = labels.iter().map(|l| r.cell(l, s, clients)).collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let _ = writeln!(md, "### slices: {s} — {}\n", clients_label(clients));
            let mut header = vec!["Operation".to_string()];
            for (i, l) in labels.iter().enumerate() {
                header.push(format!("{l} p90"));
                if i > 0 {
                    header.push(format!("{l} vs {first}"));
                }
            }
            let mut t = Table::new(header);
            let mut series: Vec<Series> = labels
                .iter()
                .map(|l| Series {
                    name: l.clone(),
                    values: Vec::new(),
                })
                .collect();
            for name in ops {
                let mut row = vec![name.clone()];
                let base = cells[0].and_then(|c| op(c, name)).and_then(OpResult::p90);
                for (i, c) in cells.iter().enumerate() {
                    let v = c.and_then(|c| op(c, name)).and_then(OpResult::p90);
                    series[i].values.push(v);
                    row.push(opt_ms(v));
                    if i > 0 {
                        row.push(signed_pct(base.zip(v).and_then(|(b, v)| change_pct(b, v))));
                    }
                }
                t.row(row);
            }
            let mut row = vec!["p90 CPU".to_string()];
            for (i, c) in cells.iter().enumerate() {
                row.push(pct(c.and_then(|c| c.system.cpu_p90_pct)));
                if i > 0 {
                    row.push(String::new());
                }
            }
            t.row(row);
            t.render(md);
            let file = format!("charts/engines-{}-c{clients}.svg", file_part(s));
            charts.push((
                file.clone(),
                chart::bar_chart(
                    &format!(
                        "p90 latency by engine (slices: {s}, {})",
                        clients_label(clients)
                    ),
                    "operation",
                    "p90 latency (ms)",
                    ops,
                    &series,
                    "",
                ),
            ));
            let _ = writeln!(md, "![engines side by side]({file})\n");
        }
    }
}

fn loadgen_section(md: &mut String, r: &BenchResult) {
    let lg: Vec<_> = r
        .cells
        .iter()
        .filter_map(|c| c.loadgen.as_ref().map(|l| (c, l)))
        .collect();
    if lg.is_empty() {
        return;
    }
    let max_core = lg
        .iter()
        .map(|(_, l)| l.pct_of_one_core)
        .fold(0.0, f64::max);
    let max_machine = lg.iter().map(|(_, l)| l.pct_of_machine).fold(0.0, f64::max);
    let max_vs_target = lg
        .iter()
        .filter_map(|(_, l)| l.pct_of_target_cpu)
        .reduce(f64::max);
    let cores = lg[0].1.cores;
    let _ = writeln!(md, "## Load generator\n");
    let _ = writeln!(
        md,
        "The load generator (this process, measured from `/proc/self/stat`) used at most {max_core:.1}% of one core, \
         {max_machine:.1}% of this machine's {cores} cores{}.",
        max_vs_target.map_or(String::new(), |v| format!(", and at most {v:.1}% of the CPU time the target spent"))
    );
    let verdict = if max_core < 25.0 {
        "It was not a bottleneck."
    } else if max_core < 60.0 {
        "Its share is noticeable; on a co-located target it competes for CPU."
    } else {
        "**Warning:** it used a large share of CPU and may have limited the measured throughput."
    };
    let _ = writeln!(md, "{verdict}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_result;

    #[test]
    fn matrix_report_has_the_reference_tables() {
        let r = sample_result(1.0);
        let rep = render(&r);
        let md = &rep.markdown;
        assert!(md.contains("## opensearch-2.19.6 — 1 client"), "{md}");
        assert!(
            md.contains("| Operation")
                && md.contains("none p90 (ms)")
                && md.contains("2 slices p90 (ms)")
        );
        assert!(md.contains("% improvement"));
        // distance_amount_agg: 1000 ms → 1000/1.8 = 556 ms → 44% improvement.
        let line = md
            .lines()
            .find(|l| l.starts_with("| distance_amount_agg"))
            .unwrap();
        assert!(
            line.contains(" 1000 |") && line.contains(" 556 |") && line.contains(" 44% |"),
            "{line}"
        );
        assert!(md.contains("% improvement vs % additional CPU: `distance_amount_agg`"));
        let cmp = md
            .lines()
            .find(|l| l.starts_with("| none to 2 slices"))
            .unwrap();
        assert!(cmp.contains("44%") && cmp.contains("20%"), "{cmp}");
        assert!(md.contains("across setups"));
        assert!(md.contains("max index_searcher active threads"));
        assert!(md.contains("## Load generator") && md.contains("not a bottleneck"));
        assert!(rep.charts.iter().any(|(n, _)| n.starts_with("charts/p90-")));
        assert!(rep
            .charts
            .iter()
            .any(|(n, _)| n.starts_with("charts/improvement-vs-cpu-")));
    }

    #[test]
    fn single_run_report_and_partial_notice() {
        let mut r = sample_result(1.0);
        r.settings = vec!["none".into()];
        r.clients = vec![1];
        r.cells.retain(|c| c.setting == "none" && c.clients == 1);
        r.interrupted = true;
        let md = render(&r).markdown;
        assert!(md.contains("**Partial report**"));
        assert!(md.contains("p99.9 (ms)") && md.contains("throughput min/median/max"));
        assert!(md.contains("hits 5"));
    }

    #[test]
    fn side_by_side_engines() {
        let mut r = sample_result(1.0);
        let mut other = r.cells.clone();
        for c in &mut other {
            c.target = "tessera".into();
        }
        r.cells.extend(other);
        let mut t = r.targets[0].clone();
        t.label = "tessera".into();
        r.targets.push(t);
        let rep = render(&r);
        assert!(rep.markdown.contains("Engines side by side"));
        assert!(rep.markdown.contains("tessera vs opensearch-2.19.6"));
        assert!(rep
            .charts
            .iter()
            .any(|(n, _)| n.starts_with("charts/engines-")));
    }

    #[test]
    fn tables_are_aligned_markdown() {
        let mut t = Table::new(vec!["a".into(), "bb".into()]);
        t.row(vec!["long name".into(), "1".into()]);
        let mut s = String::new();
        t.render(&mut s);
        assert_eq!(
            s,
            "| a         |  bb |\n| --------- | --: |\n| long name |   1 |\n\n"
        );
    }
}
