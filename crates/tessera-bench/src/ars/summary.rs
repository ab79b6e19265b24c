//! The ARS benchmark's results (the JSON written to `results.json`) and the comparisons the
//! reference post draws from them: per (replicas, load) case, ARS off vs on with the change in
//! percent of each figure, and the on/off ratios the ARS issue sets its targets in.
//!
//! Kept apart from the rendering so that the numbers a report shows can be tested without
//! parsing Markdown, and re-rendered from a results file.

use super::search_tasks::NodeTasks;
use super::traffic::{Figures, Measured};
use crate::metrics::change_pct;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "tessera-bench-ars/1";

/// Replicas per shard in a scenario: a count, or one copy on every data node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replicas {
    Count(u32),
    All,
}

impl std::str::FromStr for Replicas {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Replicas, String> {
        match s.trim() {
            "all" => Ok(Replicas::All),
            n => n
                .parse()
                .map(Replicas::Count)
                .map_err(|_| format!("expected a replica count or `all`, got [{s}]")),
        }
    }
}

impl Replicas {
    /// `number_of_replicas` on a cluster of `data_nodes` data nodes.
    pub fn count(self, data_nodes: usize) -> u32 {
        match self {
            Replicas::Count(n) => n,
            Replicas::All => data_nodes.saturating_sub(1) as u32,
        }
    }

    pub fn label(self) -> String {
        match self {
            Replicas::Count(1) => "1 replica".into(),
            Replicas::Count(n) => format!("{n} replicas"),
            Replicas::All => "replicas on all nodes".into(),
        }
    }
}

/// The load of a scenario: none besides the benchmark, or one data node slowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// No node slowed
    None,
    /// One data node held to a fraction of a core
    Slow,
}

impl Load {
    pub fn label(self) -> &'static str {
        match self {
            Load::None => "no load",
            Load::Slow => "with load",
        }
    }
}

/// `cluster.routing.use_adaptive_replica_selection` during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ars {
    /// Round robin over the copies of each shard
    Off,
    /// Adaptive replica selection
    On,
    /// Leave the setting as the cluster has it (for engines without it)
    Default,
}

impl Ars {
    pub fn label(self) -> &'static str {
        match self {
            Ars::Off => "No ARS",
            Ars::On => "ARS",
            Ars::Default => "routing as configured",
        }
    }
}

/// How the runs were set up.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Setup {
    /// The coordinating node the clients talk to.
    pub target: String,
    /// The cluster in words (started by the benchmark, or an existing one).
    pub cluster: String,
    pub data_nodes: usize,
    pub shards: u32,
    pub index: String,
    pub docs: u64,
    pub seed: u64,
    pub query: Value,
    pub clients: usize,
    pub laps: u32,
    pub lap_seconds: f64,
    pub warmup_seconds: f64,
    /// The node slowed in the "with load" runs and its CPU share (cores).
    pub slow_node: Option<String>,
    pub slow_cpu: f64,
    /// Cores of the machine running the benchmark.
    pub cores: usize,
    /// Whether the cluster reports `_nodes/stats/adaptive_selection` (an engine without it may
    /// accept the setting and still route in round robin).
    #[serde(default)]
    pub reports_adaptive_selection: bool,
}

/// One run: a scenario measured over its laps.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub replicas: Replicas,
    /// `number_of_replicas` it resolved to.
    pub number_of_replicas: u32,
    pub load: Load,
    pub ars: Ars,
    /// How the node was slowed (with load only).
    pub slow_method: Option<String>,
    pub measured: Measured,
    /// Completed `search` tasks per node during the laps.
    pub search_tasks: Vec<NodeTasks>,
    /// `_nodes/stats/adaptive_selection` at the end of the laps, where reported: each
    /// coordinating node's view, `{node name: {node name: stats}}`.
    #[serde(default)]
    pub adaptive_selection: Option<Value>,
}

impl RunResult {
    /// "1 replica, with load, ARS".
    pub fn label(&self) -> String {
        format!(
            "{}, {}, {}",
            self.replicas.label(),
            self.load.label(),
            self.ars.label()
        )
    }
}

/// The results file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArsResult {
    pub schema: String,
    pub tool_version: String,
    pub command: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
    pub setup: Setup,
    pub runs: Vec<RunResult>,
    pub interrupted: bool,
    pub error: Option<String>,
}

impl ArsResult {
    pub fn save(&self, dir: &Path) -> Result<PathBuf> {
        crate::results::save_json(dir, self)
    }

    pub fn load(path: &Path) -> Result<ArsResult> {
        crate::results::load_json(path, SCHEMA, "tessera bench ars")
    }

    /// The (replicas, load) cases in run order, each once.
    pub fn cases(&self) -> Vec<(Replicas, Load)> {
        let mut cases: Vec<(Replicas, Load)> = Vec::new();
        for r in &self.runs {
            if !cases.contains(&(r.replicas, r.load)) {
                cases.push((r.replicas, r.load));
            }
        }
        cases
    }

    pub fn run(&self, replicas: Replicas, load: Load, ars: Ars) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.replicas == replicas && r.load == load && r.ars == ars)
    }
}

/// One figure, ARS off vs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub metric: &'static str,
    pub unit: &'static str,
    pub off: Option<f64>,
    pub on: Option<f64>,
    /// `(on - off) / off` in percent.
    pub change_pct: Option<f64>,
}

impl Change {
    /// `on / off`.
    pub fn ratio(&self) -> Option<f64> {
        match (self.off, self.on) {
            (Some(off), Some(on)) if off > 0.0 => Some(on / off),
            _ => None,
        }
    }
}

/// The figures a summary compares, by name and unit.
pub fn figure_values(f: &Figures) -> Vec<(&'static str, &'static str, Option<f64>)> {
    let l = f.latency.as_ref();
    vec![
        (
            "Median throughput",
            "ops/s",
            f.throughput.as_ref().map(|t| t.median),
        ),
        ("50th percentile latency", "ms", l.map(|p| p.p50_ms)),
        ("90th percentile latency", "ms", l.map(|p| p.p90_ms)),
        ("99th percentile latency", "ms", l.map(|p| p.p99_ms)),
        ("99.9th percentile latency", "ms", l.map(|p| p.p99_9_ms)),
        (
            "error rate",
            "%",
            (f.requests > 0).then_some(f.error_rate_pct),
        ),
    ]
}

/// Every figure of two runs' totals, off vs on.
pub fn changes(off: &Figures, on: &Figures) -> Vec<Change> {
    figure_values(off)
        .into_iter()
        .zip(figure_values(on))
        .map(|((metric, unit, a), (_, _, b))| Change {
            metric,
            unit,
            off: a,
            on: b,
            change_pct: match (a, b) {
                (Some(a), Some(b)) => change_pct(a, b),
                _ => None,
            },
        })
        .collect()
}

/// One (replicas, load) case measured with ARS off and on.
#[derive(Clone, Debug)]
pub struct CaseSummary {
    pub replicas: Replicas,
    pub load: Load,
    pub changes: Vec<Change>,
}

impl CaseSummary {
    /// "1 replica, with load".
    pub fn label(&self) -> String {
        format!("{}, {}", self.replicas.label(), self.load.label())
    }

    pub fn change(&self, metric: &str) -> Option<&Change> {
        self.changes.iter().find(|c| c.metric == metric)
    }
}

/// The cases that have both an ARS-off and an ARS-on run.
pub fn summarize(r: &ArsResult) -> Vec<CaseSummary> {
    r.cases()
        .into_iter()
        .filter_map(|(replicas, load)| {
            let off = r.run(replicas, load, Ars::Off)?;
            let on = r.run(replicas, load, Ars::On)?;
            Some(CaseSummary {
                replicas,
                load,
                changes: changes(&off.measured.total, &on.measured.total),
            })
        })
        .collect()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::metrics::{Percentiles, Throughput};

    pub fn figures(tput: f64, p50: f64, p90: f64, p99: f64, errors: u64) -> Figures {
        Figures {
            requests: 1000,
            errors,
            error_rate_pct: errors as f64 / 10.0,
            throughput: Some(Throughput {
                min: tput * 0.9,
                median: tput,
                max: tput * 1.1,
                mean: tput,
            }),
            latency: Some(Percentiles {
                count: 1000,
                min_ms: 1.0,
                mean_ms: p50,
                p50_ms: p50,
                p90_ms: p90,
                p99_ms: p99,
                p99_9_ms: p99 * 1.2,
                max_ms: p99 * 1.5,
            }),
        }
    }

    pub fn run(replicas: Replicas, load: Load, ars: Ars, f: Figures) -> RunResult {
        RunResult {
            replicas,
            number_of_replicas: replicas.count(3),
            load,
            ars,
            slow_method: (load == Load::Slow).then(|| "cgroup v1 cpu quota".into()),
            measured: Measured {
                laps: vec![f.clone(), f.clone()],
                total: f,
                first_error: None,
            },
            search_tasks: vec![
                NodeTasks {
                    node: "node-1".into(),
                    completed: 100,
                },
                NodeTasks {
                    node: "node-3".into(),
                    completed: if ars == Ars::On { 10 } else { 100 },
                },
            ],
            adaptive_selection: (ars == Ars::On).then(|| {
                serde_json::json!({"client": {"node-3": {"outgoing_searches": 0, "avg_queue_size": 4, "rank": "1.5"}}})
            }),
        }
    }

    /// The reference post's 1 replica figures (with and without load).
    pub fn sample() -> ArsResult {
        ArsResult {
            schema: SCHEMA.into(),
            tool_version: "0".into(),
            command: vec!["tessera".into(), "bench".into(), "ars".into()],
            started_at: "2026-11-26T09:00:00.000Z".into(),
            finished_at: "2026-11-26T09:10:00.000Z".into(),
            setup: Setup {
                target: "http://127.0.0.1:1".into(),
                cluster: "local".into(),
                data_nodes: 3,
                shards: 3,
                index: "ars_nyc_taxis".into(),
                docs: 1000,
                seed: 1,
                query: serde_json::json!({"size": 10}),
                clients: 16,
                laps: 2,
                lap_seconds: 10.0,
                warmup_seconds: 5.0,
                slow_node: Some("node-3".into()),
                slow_cpu: 0.1,
                cores: 2,
                reports_adaptive_selection: true,
            },
            runs: vec![
                run(
                    Replicas::Count(1),
                    Load::None,
                    Ars::Off,
                    figures(95.7866, 1003.29, 1339.69, 1648.34, 0),
                ),
                run(
                    Replicas::Count(1),
                    Load::None,
                    Ars::On,
                    figures(97.6061, 985.724, 1346.43, 1670.29, 0),
                ),
                run(
                    Replicas::Count(1),
                    Load::Slow,
                    Ars::Off,
                    figures(41.1558, 411.721, 5215.34, 6181.48, 10),
                ),
                run(
                    Replicas::Count(1),
                    Load::Slow,
                    Ars::On,
                    figures(88.8048, 943.221, 1962.73, 2648.86, 0),
                ),
                run(
                    Replicas::All,
                    Load::Slow,
                    Ars::Off,
                    figures(50.0, 100.0, 200.0, 300.0, 0),
                ),
            ],
            interrupted: false,
            error: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn change_is_computed_as_in_the_reference_post() {
        let s = summarize(&sample());
        assert_eq!(s.len(), 2, "the all-replicas case lacks its ARS run");
        let loaded = &s[1];
        assert_eq!(loaded.label(), "1 replica, with load");
        let t = loaded.change("Median throughput").unwrap();
        assert!(close(t.change_pct.unwrap(), 115.77712), "{t:?}");
        assert!(close(t.ratio().unwrap(), 88.8048 / 41.1558));
        let p50 = loaded.change("50th percentile latency").unwrap();
        assert!(close(p50.change_pct.unwrap(), 129.09227), "{p50:?}");
        let p90 = loaded.change("90th percentile latency").unwrap();
        assert!(close(p90.change_pct.unwrap(), -62.366212), "{p90:?}");
        let p99 = loaded.change("99th percentile latency").unwrap();
        assert!(close(p99.change_pct.unwrap(), -57.148450), "{p99:?}");
        let errors = loaded.change("error rate").unwrap();
        assert_eq!((errors.off, errors.on), (Some(1.0), Some(0.0)));
        let unloaded = &s[0];
        let t = unloaded.change("Median throughput").unwrap();
        assert!(close(t.change_pct.unwrap(), 1.8995350), "{t:?}");
        assert_eq!(
            unloaded.change("error rate").unwrap().change_pct,
            None,
            "0 → 0"
        );
    }

    #[test]
    fn replica_settings_parse_and_resolve() {
        assert_eq!("all".parse::<Replicas>(), Ok(Replicas::All));
        assert_eq!("2".parse::<Replicas>(), Ok(Replicas::Count(2)));
        assert!("many".parse::<Replicas>().is_err());
        assert_eq!(Replicas::All.count(5), 4);
        assert_eq!(Replicas::Count(1).count(5), 1);
        assert_eq!(Replicas::All.label(), "replicas on all nodes");
    }

    #[test]
    fn results_round_trip_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample();
        r.save(dir.path()).unwrap();
        let back = ArsResult::load(dir.path()).unwrap();
        assert_eq!(back.runs.len(), r.runs.len());
        assert_eq!(back.runs[4].replicas, Replicas::All);
        assert_eq!(back.setup.slow_node.as_deref(), Some("node-3"));
        let file = dir.path().join(crate::results::RESULTS_FILE);
        std::fs::write(file, r#"{"schema":"x"}"#).unwrap();
        assert!(ArsResult::load(dir.path()).is_err());
    }
}
