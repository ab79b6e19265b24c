//! The results file (`results.json`): everything a run measured, machine-readable, so reports
//! and comparisons can be rebuilt later and runs on different engines or days can be compared.
//!
//! One format for `run` and `matrix`: a run is a matrix with one cell. A cell is one
//! (target, slice setting, clients) combination with its per-operation metrics, the target's
//! system metrics and the load generator's CPU share.

use crate::metrics::{Percentiles, Throughput};
use crate::system::{LoadgenCpu, SystemMetrics};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "tessera-bench/1";
pub const RESULTS_FILE: &str = "results.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchResult {
    pub schema: String,
    /// `run` or `matrix`.
    pub kind: String,
    pub tool_version: String,
    /// The command line that produced this file.
    pub command: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
    pub workload: String,
    pub index: String,
    pub options: RunOptions,
    /// Slice settings in sweep order (labels as in [`Cell::setting`]).
    pub settings: Vec<String>,
    /// The setting that `% improvement` columns compare against.
    pub baseline: Option<String>,
    pub clients: Vec<usize>,
    /// The operation the "% improvement vs % additional CPU" tables follow.
    pub focus_operation: String,
    pub targets: Vec<TargetInfo>,
    pub cells: Vec<Cell>,
    /// True when the run was stopped (Ctrl-C) before it finished.
    pub interrupted: bool,
    /// Why the run stopped early, if it did.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunOptions {
    /// `closed-loop`, `target-throughput` or `public-schedule`.
    pub schedule: String,
    pub target_throughput: Option<f64>,
    /// Overrides of the operations' defaults, if given.
    pub warmup_iterations: Option<u32>,
    pub iterations: Option<u32>,
    pub request_timeout_s: f64,
    pub sample_interval_ms: u64,
    pub on_error: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TargetInfo {
    pub label: String,
    pub url: String,
    /// `GET /` as the target answered it.
    pub engine: Value,
    pub distribution: Option<String>,
    pub version: Option<String>,
    pub available_processors: Option<u64>,
    pub corpus: CorpusInfo,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CorpusInfo {
    /// Documents in the index (`_count`).
    pub docs: Option<u64>,
    /// What `load` recorded in the mapping's `_meta.tessera_bench`, when present.
    pub generated_docs: Option<u64>,
    pub seed: Option<u64>,
    pub workload: Option<String>,
    pub segments: Option<u64>,
    pub store_size_bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    pub target: String,
    pub setting: String,
    /// The cluster settings body sent before this cell (null when settings were left alone).
    pub cluster_settings: Value,
    pub clients: usize,
    pub started_at: String,
    pub finished_at: String,
    pub duration_s: f64,
    pub interrupted: bool,
    pub operations: Vec<OpResult>,
    /// The target's system metrics over the whole cell.
    pub system: SystemMetrics,
    pub loadgen: Option<LoadgenCpu>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpResult {
    pub name: String,
    pub clients: usize,
    /// Per client.
    pub warmup_iterations: u32,
    /// Per client.
    pub iterations: u32,
    /// `closed-loop` or `target-throughput`.
    pub schedule: String,
    pub target_throughput: Option<f64>,
    /// Seconds from the cell's start.
    pub started_s: f64,
    pub measured_s: f64,
    /// Measured requests (warm-up excluded).
    pub requests: u64,
    pub errors: u64,
    pub error_rate: f64,
    pub first_error: Option<String>,
    /// From intended start (the scheduled time under a target throughput) to response.
    pub latency: Option<Percentiles>,
    /// From sending the request to the response.
    pub service_time: Option<Percentiles>,
    /// The engine's own `took` (ms).
    pub took: Option<Percentiles>,
    pub throughput: Option<Throughput>,
    pub system: SystemMetrics,
    /// What the first successful response said (hit count, buckets per aggregation).
    pub response: Value,
    /// Raw latency histogram: `[microseconds, count]` pairs.
    pub latency_histogram_us: Vec<[u64; 2]>,
}

impl BenchResult {
    pub fn target(&self, label: &str) -> Option<&TargetInfo> {
        self.targets.iter().find(|t| t.label == label)
    }

    pub fn cell(&self, target: &str, setting: &str, clients: usize) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.target == target && c.setting == setting && c.clients == clients)
    }

    pub fn target_labels(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.label.clone()).collect()
    }

    /// Operation names in the order they ran.
    pub fn operation_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for c in &self.cells {
            for o in &c.operations {
                if !names.contains(&o.name) {
                    names.push(o.name.clone());
                }
            }
        }
        names
    }

    /// Writes `results.json` into `dir`.
    pub fn save(&self, dir: &Path) -> Result<PathBuf> {
        save_json(dir, self)
    }

    /// Reads a results file, or `results.json` in a directory.
    pub fn load(path: &Path) -> Result<BenchResult> {
        load_json(path, SCHEMA, "tessera bench")
    }
}

/// Writes `value` as `results.json` into `dir` (created if missing), whole or not at all: a
/// temporary file renamed over the old one. Every `tessera bench` results file is written so.
pub fn save_json(dir: &Path, value: &impl Serialize) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(RESULTS_FILE);
    let tmp = dir.join(format!("{RESULTS_FILE}.tmp"));
    let json = serde_json::to_vec_pretty(value).expect("serialise results");
    std::fs::write(&tmp, json).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}

/// Reads a results file, or `results.json` in a directory, refusing one whose `schema` is not
/// `schema` (`what` names the kind of file in the error).
pub fn load_json<T: DeserializeOwned>(path: &Path, schema: &str, what: &str) -> Result<T> {
    let file = if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).with_context(|| format!("read {}", file.display()))?;
    let v: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not JSON", file.display()))?;
    if v["schema"].as_str() != Some(schema) {
        bail!(
            "{} is not a {what} results file (schema {:?}, expected {schema:?})",
            file.display(),
            v["schema"]
        );
    }
    serde_json::from_value(v).with_context(|| format!("read results from {}", file.display()))
}

impl OpResult {
    /// The p90 latency in ms (the reference posts' headline number).
    pub fn p90(&self) -> Option<f64> {
        self.latency.as_ref().map(|p| p.p90_ms)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::metrics;

    /// A small synthetic result for report, chart and compare tests.
    pub fn sample_result(scale: f64) -> BenchResult {
        let settings = vec![
            "none".to_string(),
            "2 slices".to_string(),
            "auto".to_string(),
        ];
        let mut cells = Vec::new();
        for (si, s) in settings.iter().enumerate() {
            for clients in [1usize, 2] {
                let ops = ["range", "distance_amount_agg"]
                    .iter()
                    .enumerate()
                    .map(|(oi, name)| {
                        let base = (100.0 + 900.0 * oi as f64) * scale * clients as f64;
                        let p90 = base / (1.0 + si as f64 * 0.8);
                        let mut h = metrics::histogram();
                        h.record((p90 * 1000.0) as u64).unwrap();
                        OpResult {
                            name: name.to_string(),
                            clients,
                            iterations: 10,
                            schedule: "closed-loop".into(),
                            requests: 10,
                            latency: metrics::Percentiles::of(&h),
                            service_time: metrics::Percentiles::of(&h),
                            throughput: Some(metrics::Throughput {
                                min: 1.0,
                                median: 2.0,
                                max: 3.0,
                                mean: 2.0,
                            }),
                            system: SystemMetrics {
                                cpu_readings: 1,
                                cpu_p90_pct: Some(10.0 + 20.0 * si as f64),
                                ..Default::default()
                            },
                            response: serde_json::json!({"hits_total": 5}),
                            ..Default::default()
                        }
                    })
                    .collect();
                cells.push(Cell {
                    target: "opensearch-2.19.6".into(),
                    setting: s.clone(),
                    cluster_settings: Value::Null,
                    clients,
                    started_at: "2026-01-01T00:00:00.000Z".into(),
                    finished_at: "2026-01-01T00:01:00.000Z".into(),
                    duration_s: 60.0,
                    interrupted: false,
                    operations: ops,
                    system: SystemMetrics {
                        samples: 5,
                        cpu_p90_pct: Some(12.0 + 20.0 * si as f64),
                        memory_peak_bytes: Some(2e9),
                        memory_source: Some("jvm".into()),
                        index_searcher_active_max: Some(si as f64 * 2.0),
                        ..Default::default()
                    },
                    loadgen: Some(LoadgenCpu {
                        cpu_seconds: 1.0,
                        wall_seconds: 60.0,
                        pct_of_one_core: 1.7,
                        cores: 2,
                        pct_of_machine: 0.8,
                        pct_of_target_cpu: Some(2.0),
                    }),
                });
            }
        }
        BenchResult {
            schema: SCHEMA.into(),
            kind: "matrix".into(),
            tool_version: "0.1.0".into(),
            command: vec!["tessera".into(), "bench".into()],
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: "2026-01-01T00:10:00.000Z".into(),
            workload: "nyc_taxis".into(),
            index: "nyc_taxis".into(),
            options: RunOptions {
                schedule: "closed-loop".into(),
                ..Default::default()
            },
            settings,
            baseline: Some("none".into()),
            clients: vec![1, 2],
            focus_operation: "distance_amount_agg".into(),
            targets: vec![TargetInfo {
                label: "opensearch-2.19.6".into(),
                url: "http://localhost:9500".into(),
                corpus: CorpusInfo {
                    docs: Some(1000),
                    seed: Some(1),
                    ..Default::default()
                },
                ..Default::default()
            }],
            cells,
            interrupted: false,
            error: None,
        }
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_result(1.0);
        let path = r.save(dir.path()).unwrap();
        let back = BenchResult::load(dir.path()).unwrap();
        assert_eq!(back.cells.len(), r.cells.len());
        assert_eq!(back.operation_names(), vec!["range", "distance_amount_agg"]);
        assert!(back.cell("opensearch-2.19.6", "auto", 2).is_some());
        std::fs::write(&path, b"{\"schema\":\"other\"}").unwrap();
        let e = BenchResult::load(&path).unwrap_err().to_string();
        assert!(e.contains("not a tessera bench results file"), "{e}");
    }
}
