//! `tessera bench ars`: the adaptive replica selection experiment of the reference post
//! (`reference/adaptive-replica-selection-benchmarks.txt`), reproduced on one machine.
//!
//! Why a command of its own: ARS only shows under a cluster with a slow node, so the benchmark
//! has to own the cluster (start it, slow one of its nodes, tear it down) as well as the load.
//! It starts etcd, `N` data nodes and one coordinating-only node ([`cluster`]), loads the
//! nyc_taxis corpus into an index with one shard per data node, and for replicas ∈ {1, all} ×
//! load ∈ {none, one slowed node ([`slow`])} × ARS ∈ {off, on} runs closed-loop clients with a
//! heavy query ([`scenario`], [`traffic`]), counting each node's completed `search` tasks
//! ([`search_tasks`]). The results ([`summary`]) become the post's tables and SVG charts
//! ([`report`]). With `--target` it measures an existing cluster instead (e.g. OpenSearch),
//! slowing the process `--slow-pid` names.

pub mod cluster;
pub mod report;
pub mod scenario;
pub mod search_tasks;
pub mod slow;
pub mod summary;
pub mod traffic;

use crate::client::Client;
use crate::load::{self, LoadOptions};
use crate::timefmt;
use crate::workload;
use anyhow::{bail, Context, Result};
use clap::Args;
use cluster::{ClusterSpec, LocalCluster};
use scenario::{Bench, SlowTarget};
use slow::SlowMethod;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;
use summary::{Ars, ArsResult, Load, Replicas, RunResult, Setup};

/// The default corpus: with 3 shards, about 67,000 documents per shard, on which the heavy query
/// takes about 10–15 ms on one core of these machines (measured: 300,000 documents in 3 shards
/// answered one client in 37 ms at the median, with 3 shard requests sharing 2 cores).
pub const DEFAULT_DOCS: u64 = 200_000;

#[derive(Args, Debug, Clone)]
pub struct ArsArgs {
    /// Measure an existing cluster through this coordinating node instead of starting one
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// With --target: the pid of the process to slow in the "with load" runs
    #[arg(long, requires = "target")]
    pub slow_pid: Option<u32>,
    /// Data nodes to start (plus one coordinating-only node)
    #[arg(long, default_value_t = 3)]
    pub data_nodes: usize,
    /// The tessera binary the nodes run [default: this executable]
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// The etcd binary
    #[arg(long, default_value = "etcd")]
    pub etcd: String,
    /// Directory for the nodes' data, configs and logs [default: a new one under the temp dir]
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the work directory after the run
    #[arg(long)]
    pub keep_work_dir: bool,
    /// Primary shards [default: one per data node]
    #[arg(long)]
    pub shards: Option<u32>,
    /// nyc_taxis documents to load
    #[arg(long, default_value_t = DEFAULT_DOCS)]
    pub docs: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The benchmark's index (replaced when it holds another corpus)
    #[arg(long, default_value = "ars_nyc_taxis")]
    pub index: String,
    /// Closed-loop clients
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Measured laps per run
    #[arg(long, default_value_t = 3)]
    pub laps: u32,
    /// Seconds per lap
    #[arg(long, default_value_t = 10.0)]
    pub lap_seconds: f64,
    /// Seconds of warm-up before the laps (ARS learns the nodes' speeds here)
    #[arg(long, default_value_t = 5.0)]
    pub warmup_seconds: f64,
    /// Replica settings to run: counts or `all` (a copy on every data node)
    #[arg(long, value_delimiter = ',', default_value = "1,all")]
    pub replicas: Vec<Replicas>,
    /// Loads to run
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none,slow")]
    pub load: Vec<Load>,
    /// ARS settings to run
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off,on")]
    pub ars: Vec<Ars>,
    /// The data node to slow, 1-based [default: the last]
    #[arg(long)]
    pub slow_node: Option<usize>,
    /// CPU the slowed node keeps, in cores (0.1 = 10% of one core)
    #[arg(long, default_value_t = 0.1)]
    pub slow_cpu: f64,
    /// How to slow it
    #[arg(long, value_enum, default_value = "auto")]
    pub slow_method: SlowMethod,
    /// Where cgroup v1's cpu controller is mounted
    #[arg(long, default_value = slow::CGROUP_CPU_ROOT)]
    pub cgroup_root: PathBuf,
    /// Timeout of every search, in seconds
    #[arg(long, default_value_t = 60.0)]
    pub request_timeout: f64,
    /// Results directory [default: bench-results/ars-<time>]
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

impl ArsArgs {
    /// Checks the options before anything starts.
    pub fn validate(&self) -> Result<()> {
        if self.clients == 0 || self.laps == 0 {
            bail!("--clients and --laps must be at least 1");
        }
        if !positive(self.lap_seconds)
            || !(positive(self.warmup_seconds) || self.warmup_seconds == 0.0)
        {
            bail!("--lap-seconds must be positive and --warmup-seconds not negative");
        }
        if self.replicas.is_empty() || self.load.is_empty() || self.ars.is_empty() {
            bail!("give at least one value of --replicas, --load and --ars");
        }
        if !positive(self.slow_cpu) {
            bail!("--slow-cpu must be positive");
        }
        if self.target.is_none() {
            if self.data_nodes < 2 {
                bail!("--data-nodes must be at least 2 (a replica needs a second node)");
            }
            if let Some(n) = self.slow_node {
                if n == 0 || n > self.data_nodes {
                    bail!("--slow-node must be between 1 and {}", self.data_nodes);
                }
            }
        } else if self.load.contains(&Load::Slow) && self.slow_pid.is_none() {
            bail!("with --target, a run with load needs --slow-pid (or pass --load none)");
        }
        Ok(())
    }

    /// The runs in order: replicas outermost (changing replicas moves data), ARS innermost.
    pub fn runs(&self) -> Vec<(Replicas, Load, Ars)> {
        let mut runs = Vec::new();
        for &r in &self.replicas {
            for &l in &self.load {
                for &a in &self.ars {
                    runs.push((r, l, a));
                }
            }
        }
        runs
    }
}

fn positive(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

/// Where the benchmark's searches go: a cluster it started or an existing one.
struct Site {
    client: Client,
    data_nodes: usize,
    description: String,
    slow: Option<(String, u32)>,
    /// Held for its Drop: stops the processes.
    _cluster: Option<LocalCluster>,
}

fn start_site(a: &ArsArgs) -> Result<Site> {
    let timeout = Duration::from_secs_f64(a.request_timeout.max(1.0));
    if let Some(url) = &a.target {
        let client = Client::new(url, timeout)?;
        let health = client.get_json("/_cluster/health")?;
        let data_nodes = health["number_of_data_nodes"].as_u64().unwrap_or(1) as usize;
        return Ok(Site {
            client,
            data_nodes,
            description: format!("existing cluster at {url}, {data_nodes} data nodes"),
            slow: a.slow_pid.map(|p| (format!("pid {p}"), p)),
            _cluster: None,
        });
    }
    let binary = match &a.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("find the tessera binary (pass --binary)")?,
    };
    let etcd = cluster::find_program(&a.etcd).with_context(|| {
        format!(
            "{} is not on PATH (scripts/system-deps installs etcd)",
            a.etcd
        )
    })?;
    let work_dir = a.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tessera-ars-bench-{}", std::process::id()))
    });
    eprintln!(
        "starting etcd, {} data nodes and a coordinating node (work dir {})",
        a.data_nodes,
        work_dir.display()
    );
    let local = LocalCluster::start(&ClusterSpec {
        binary,
        etcd,
        data_nodes: a.data_nodes,
        work_dir,
        keep_work_dir: a.keep_work_dir,
    })?;
    let slow_index = a.slow_node.unwrap_or(a.data_nodes) - 1;
    let slow_node = &local.data_nodes[slow_index];
    Ok(Site {
        client: Client::new(local.coordinator_url(), timeout)?,
        data_nodes: a.data_nodes,
        description: format!(
            "{} data nodes and 1 coordinating-only node started by the benchmark (tessera {})",
            a.data_nodes,
            env!("CARGO_PKG_VERSION")
        ),
        slow: Some((slow_node.process.name.clone(), slow_node.process.pid())),
        _cluster: Some(local),
    })
}

/// Loads the corpus unless the index already holds it with `shards` primaries.
fn ensure_corpus(client: &Client, a: &ArsArgs, shards: u32) -> Result<()> {
    let w = workload::get("nyc_taxis")?;
    let opts = LoadOptions {
        docs: a.docs,
        seed: a.seed,
        record_seed: true,
        clients: 2,
        batch_size: 5000,
        replicas: Some(0),
        shards: Some(shards),
        settings: Vec::new(),
        force_merge: Some(1),
        force_merge_timeout: Duration::from_secs(3600),
        recreate: true,
        input: None,
    };
    if let Some(info) = load::corpus_info(client, &a.index)? {
        let primaries = client
            .get_json(&format!("/{}/_settings", a.index))
            .ok()
            .and_then(|s| index_shards(&s));
        if load::is_corpus(&info, &w, &opts) && primaries == Some(shards) {
            eprintln!(
                "{} already holds {} documents in {shards} shards",
                a.index, a.docs
            );
            return Ok(());
        }
    }
    eprintln!(
        "loading {} nyc_taxis documents into {} ({shards} shards)",
        a.docs, a.index
    );
    let stop = crate::interrupt::flag();
    let r = load::load(client, &w, &a.index, &opts, &stop)?;
    eprintln!(
        "loaded in {:.1}s, force-merged in {:.1}s",
        r.searchable_seconds,
        r.force_merge_seconds.unwrap_or(0.0)
    );
    Ok(())
}

/// `number_of_shards` from a `GET /<index>/_settings` answer.
fn index_shards(settings: &serde_json::Value) -> Option<u32> {
    let index = &settings.as_object()?.values().next()?["settings"]["index"];
    let n = &index["number_of_shards"];
    n.as_u64()
        .or_else(|| n.as_str()?.parse().ok())
        .map(|n| n as u32)
}

fn new_result(a: &ArsArgs, site: &Site, shards: u32) -> ArsResult {
    let now = timefmt::rfc3339_millis(timefmt::now_millis());
    ArsResult {
        schema: summary::SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command: std::env::args().collect(),
        started_at: now.clone(),
        finished_at: now,
        setup: Setup {
            target: site.client.base().to_string(),
            cluster: site.description.clone(),
            data_nodes: site.data_nodes,
            shards,
            index: a.index.clone(),
            docs: a.docs,
            seed: a.seed,
            query: scenario::heavy_query(),
            clients: a.clients,
            laps: a.laps,
            lap_seconds: a.lap_seconds,
            warmup_seconds: a.warmup_seconds,
            slow_node: a
                .load
                .contains(&Load::Slow)
                .then(|| site.slow.as_ref().map(|s| s.0.clone()))
                .flatten(),
            slow_cpu: a.slow_cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            reports_adaptive_selection: scenario::adaptive_selection(&site.client).is_some(),
        },
        runs: Vec::new(),
        interrupted: false,
        error: None,
    }
}

/// Runs the matrix, appending each finished run to `result` (saved after each).
fn run_matrix(a: &ArsArgs, bench: &Bench<'_>, result: &mut ArsResult, out: &Path) -> Result<()> {
    let mut replicas_now = None;
    for (replicas, load, ars) in a.runs() {
        if bench.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let n = replicas.count(bench.data_nodes);
        if n + 1 > bench.data_nodes as u32 {
            bail!(
                "{n} replicas need {} data nodes, the cluster has {}",
                n + 1,
                bench.data_nodes
            );
        }
        if replicas_now != Some(n) {
            eprintln!("setting {} to {n} replicas", bench.index);
            scenario::set_replicas(bench.client, bench.index, n)?;
            replicas_now = Some(n);
        }
        let run: RunResult = bench.run(replicas, load, ars)?;
        eprintln!("{}: {}", run.label(), run_line(&run));
        result.runs.push(run);
        result.save(out)?;
        // A slowed node may have fallen behind (e.g. on segment copies): let it settle.
        scenario::wait_green(bench.client, bench.index)?;
    }
    Ok(())
}

/// A run's totals on one line, for progress.
fn run_line(run: &RunResult) -> String {
    let t = &run.measured.total;
    let p = t.latency.clone().unwrap_or_default();
    format!(
        "{} requests, median {:.1} ops/s, p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, errors {:.2}%",
        t.requests,
        t.throughput.as_ref().map_or(0.0, |t| t.median),
        p.p50_ms,
        p.p90_ms,
        p.p99_ms,
        t.error_rate_pct
    )
}

/// Runs `tessera bench ars`; returns the exit status (130 when stopped by Ctrl-C).
pub fn run(a: ArsArgs) -> Result<i32> {
    a.validate()?;
    let stop = crate::interrupt::flag();
    let site = start_site(&a)?;
    let shards = a.shards.unwrap_or(site.data_nodes as u32).max(1);
    ensure_corpus(&site.client, &a, shards)?;
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("bench-results").join(format!(
            "ars-{}",
            timefmt::compact_stamp(timefmt::now_millis())
        ))
    });
    let mut result = new_result(&a, &site, shards);
    eprintln!("results: {}", out.display());
    result.save(&out)?;
    let bench = Bench {
        client: &site.client,
        index: &a.index,
        data_nodes: site.data_nodes,
        plan: traffic::Plan {
            clients: a.clients,
            warmup: Duration::from_secs_f64(a.warmup_seconds),
            laps: a.laps,
            lap: Duration::from_secs_f64(a.lap_seconds),
            path: format!("/{}/_search", a.index),
            body: serde_json::to_vec(&scenario::heavy_query()).expect("serialise the query"),
        },
        slow: site.slow.as_ref().map(|(_, pid)| SlowTarget {
            pid: *pid,
            cpu: a.slow_cpu,
            method: a.slow_method,
            cgroup_root: a.cgroup_root.clone(),
        }),
        stop: &stop,
    };
    let outcome = run_matrix(&a, &bench, &mut result, &out);
    let interrupted = stop.load(Ordering::Relaxed);
    result.interrupted = interrupted;
    result.error = match &outcome {
        Err(e) => Some(format!("{e:#}")),
        Ok(()) => interrupted.then(|| "interrupted (Ctrl-C)".to_string()),
    };
    result.finished_at = timefmt::rfc3339_millis(timefmt::now_millis());
    result.save(&out)?;
    let rep = report::render(&result);
    crate::cli::write_report(&out, "report.md", &rep)?;
    println!("{}", rep.markdown);
    eprintln!("results, report and charts: {}", out.display());
    drop(site);
    outcome.with_context(|| format!("partial results in {}", out.display()))?;
    Ok(if interrupted { 130 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        a: ArsArgs,
    }

    fn parse(args: &[&str]) -> Result<ArsArgs, clap::Error> {
        let mut v = vec!["ars"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).map(|c| c.a)
    }

    #[test]
    fn defaults_run_the_whole_matrix() {
        let a = parse(&[]).unwrap();
        a.validate().unwrap();
        assert_eq!((a.data_nodes, a.clients, a.laps), (3, 16, 3));
        assert_eq!(a.cgroup_root, PathBuf::from("/sys/fs/cgroup/cpu"));
        let runs = a.runs();
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[0], (Replicas::Count(1), Load::None, Ars::Off));
        assert_eq!(runs[1], (Replicas::Count(1), Load::None, Ars::On));
        assert_eq!(runs[7], (Replicas::All, Load::Slow, Ars::On));
    }

    #[test]
    fn subsets_parse() {
        let a = parse(&[
            "--replicas",
            "1",
            "--load",
            "slow",
            "--ars",
            "on,off",
            "--slow-cpu",
            "0.25",
            "--slow-method",
            "signals",
            "--lap-seconds",
            "2",
            "--data-nodes",
            "2",
            "--slow-node",
            "1",
        ])
        .unwrap();
        a.validate().unwrap();
        assert_eq!(
            a.runs(),
            vec![
                (Replicas::Count(1), Load::Slow, Ars::On),
                (Replicas::Count(1), Load::Slow, Ars::Off)
            ]
        );
        assert_eq!(a.slow_method, SlowMethod::Signals);
        assert_eq!(a.slow_cpu, 0.25);
        assert!(parse(&["--load", "heavy"]).is_err());
        assert!(parse(&["--replicas", "some"]).is_err());
        assert!(
            parse(&["--slow-pid", "12"]).is_err(),
            "--slow-pid needs --target"
        );
    }

    #[test]
    fn inconsistent_options_are_refused() {
        let bad = |args: &[&str]| parse(args).unwrap().validate().unwrap_err().to_string();
        assert!(bad(&["--data-nodes", "1"]).contains("at least 2"));
        assert!(bad(&["--slow-node", "4"]).contains("between 1 and 3"));
        assert!(bad(&["--clients", "0"]).contains("at least 1"));
        assert!(bad(&["--target", "http://127.0.0.1:9200"]).contains("--slow-pid"));
        parse(&["--target", "http://127.0.0.1:9200", "--load", "none"])
            .unwrap()
            .validate()
            .unwrap();
    }

    #[test]
    fn shard_count_is_read_from_settings() {
        let s = serde_json::json!({"i": {"settings": {"index": {"number_of_shards": "3"}}}});
        assert_eq!(index_shards(&s), Some(3));
        assert_eq!(index_shards(&serde_json::json!({})), None);
    }
}
