//! The `tessera bench` command line: argument definitions (a clap `Subcommand` the `tessera`
//! binary embeds) and the orchestration of each command.
//!
//! Every command checks its input before doing work (unknown workload or operation, unreachable
//! target, missing index) and fails with one clear message; `run` and `matrix` always leave a
//! results directory behind (`results.json`, `report.md`, `charts/*.svg`, `raw/*.csv`), also
//! when stopped by Ctrl-C (exit 130) or by a refused request (non-zero exit).

use crate::client::Client;
use crate::compare;
use crate::generate::{self, Framing};
use crate::load::{self, LoadOptions};
use crate::matrix::{self, SliceSetting, Sweep, Target};
use crate::report::{self, Report};
use crate::results::{BenchResult, RunOptions, TargetInfo, SCHEMA};
use crate::runner::{OnError, OpPlan};
use crate::timefmt;
use crate::workload::{self, Workload};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Subcommand, Debug, Clone)]
pub enum BenchCommand {
    /// Write a workload's synthetic corpus as bulk NDJSON (deterministic: same seed, same bytes)
    Generate(GenerateArgs),
    /// Create the workload's index and bulk-load its corpus (streamed from the generator)
    Load(LoadArgs),
    /// Run a workload's operations and report latency, service time, throughput and system metrics
    Run(RunArgs),
    /// Sweep clients × concurrent segment search settings, as in the reference posts' tables
    Matrix(MatrixArgs),
    /// Compare two results files (baseline, contender) with the change in percent
    Compare(CompareArgs),
    /// Render the Markdown report and SVG charts of a results file
    Report(ReportArgs),
    /// List the built-in workloads and their operations
    Workloads,
    /// Adaptive replica selection: start a cluster, slow one data node, and compare ARS off vs on
    Ars(crate::ars::ArsArgs),
    /// k-NN: load synthetic clustered vectors, query them (plain and filtered) and report latency,
    /// throughput and recall against exact ground truth
    Vectorsearch(crate::vectorsearch::VectorArgs),
}

#[derive(Args, Debug, Clone)]
pub struct GenerateArgs {
    /// nyc_taxis, big5 or noaa
    pub workload: String,
    /// Number of documents [default: the workload's, 1,000,000]
    #[arg(long)]
    pub docs: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file [default: standard output]
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Index name in the action lines [default: the workload's]
    #[arg(long)]
    pub index: Option<String>,
    /// One document per line, without bulk action lines
    #[arg(long)]
    pub docs_only: bool,
    /// Generator threads [default: all cores]
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// Endpoint to measure, `[LABEL=]http://host:port`; repeat to measure several engines side by side
    #[arg(
        long = "target",
        short = 't',
        value_name = "[LABEL=]URL",
        default_value = "http://localhost:9200"
    )]
    pub targets: Vec<String>,
    /// Index name [default: the workload's]
    #[arg(long)]
    pub index: Option<String>,
    /// Timeout of every HTTP request, in seconds
    #[arg(long, default_value_t = 120.0)]
    pub request_timeout: f64,
}

#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    pub workload: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of documents [default: the workload's, 1,000,000]
    #[arg(long)]
    pub docs: Option<u64>,
    /// Corpus seed [default: 1; with --input, recorded only when given]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Bulk clients (threads)
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Documents per bulk request
    #[arg(long, default_value_t = 5000)]
    pub batch_size: u64,
    /// Force-merge to this many segments after loading
    #[arg(long, value_name = "SEGMENTS")]
    pub force_merge: Option<u32>,
    /// Seconds the force merge may take
    #[arg(long, default_value_t = 3600.0)]
    pub force_merge_timeout: f64,
    /// index.number_of_replicas (a single node cannot allocate replicas)
    #[arg(long, default_value_t = 0)]
    pub replicas: u32,
    /// index.number_of_shards [default: the workload's]
    #[arg(long)]
    pub shards: Option<u32>,
    /// Another index setting, `KEY=VALUE` (e.g. `index.merge.enabled=false` on Tessera to
    /// keep every flushed segment); repeat for several
    #[arg(long = "setting", value_name = "KEY=VALUE", value_parser = parse_setting)]
    pub settings: Vec<(String, String)>,
    /// Delete the index first if it exists
    #[arg(long)]
    pub recreate: bool,
    /// Load a file written by `generate` instead of generating
    #[arg(long)]
    pub input: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ScheduleArgs {
    /// Operations to run, comma separated [default: all of the workload's]
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Warm-up iterations per client [default: each operation's]
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Measured iterations per client [default: each operation's]
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Requests per second across all clients, for every operation [default: closed loop]
    #[arg(long, conflicts_with = "public_schedule")]
    pub target_throughput: Option<f64>,
    /// Use the public workload's target throughputs (schedules.txt) instead of a closed loop
    #[arg(long)]
    pub public_schedule: bool,
    /// What to do when the target refuses a request
    #[arg(long, value_enum, default_value = "abort")]
    pub on_error: OnError,
    /// How often to sample _nodes/stats, in milliseconds
    #[arg(long, default_value_t = 200)]
    pub sample_interval_ms: u64,
    /// Results directory [default: bench-results/<workload>-<command>-<time>]
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Operation followed by the "% improvement vs % additional CPU" tables [default: the workload's]
    #[arg(long)]
    pub focus: Option<String>,
    /// Do not write per-request CSV files
    #[arg(long)]
    pub no_raw: bool,
    /// With several targets, take turns operation by operation (which target goes first
    /// alternating) instead of running each target's operations in one block, so that drift
    /// on a shared machine falls on every target alike; each target's system metrics then span
    /// the whole run
    #[arg(long)]
    pub interleave: bool,
}

/// Load the corpus first when the index does not hold it yet (`--docs` given).
#[derive(Args, Debug, Clone)]
pub struct EnsureArgs {
    /// Make sure the index holds this many generated documents, loading them if needed
    #[arg(long)]
    pub docs: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Force-merge to this many segments after loading
    #[arg(long, value_name = "SEGMENTS")]
    pub force_merge: Option<u32>,
    /// Replace an index that holds a different corpus
    #[arg(long)]
    pub recreate: bool,
    /// Bulk clients when loading
    #[arg(long, default_value_t = 2)]
    pub bulk_clients: usize,
    /// Documents per bulk request when loading
    #[arg(long, default_value_t = 5000)]
    pub batch_size: u64,
    /// index.number_of_shards when loading [default: the workload's]
    #[arg(long)]
    pub shards: Option<u32>,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    pub workload: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Closed-loop clients (threads, each with its own connection)
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Concurrent segment search setting to apply first: none, all, auto, <n> slices, all:<n>, auto:<n>, keep
    #[arg(long, default_value = "keep")]
    pub setting: String,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    #[command(flatten)]
    pub ensure: EnsureArgs,
}

#[derive(Args, Debug, Clone)]
pub struct MatrixArgs {
    pub workload: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Client counts to sweep
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub clients: Vec<usize>,
    /// Slice settings to sweep: none, all, auto, <n> (= all with n slices), all:<n>, auto:<n>
    #[arg(long, value_delimiter = ',', default_value = "none,2,4,auto")]
    pub settings: Vec<String>,
    /// The setting `% improvement` is measured against [default: the first]
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    #[command(flatten)]
    pub ensure: EnsureArgs,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Baseline results (file or directory)
    pub baseline: PathBuf,
    /// Contender results (file or directory)
    pub contender: PathBuf,
    /// Also write compare.md and charts into this directory
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results file or directory
    pub results: PathBuf,
    /// Output directory [default: the results' directory]
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

/// Runs a `tessera bench` command; returns the process exit status.
pub fn run(cmd: BenchCommand) -> Result<i32> {
    match cmd {
        BenchCommand::Generate(a) => cmd_generate(a),
        BenchCommand::Load(a) => cmd_load(a),
        BenchCommand::Run(a) => {
            let setting: SliceSetting = a.setting.parse()?;
            execute(
                "run",
                &a.workload,
                &a.target,
                &a.schedule,
                &a.ensure,
                vec![setting],
                vec![a.clients],
                None,
            )
        }
        BenchCommand::Matrix(a) => {
            let settings = a
                .settings
                .iter()
                .map(|s| s.parse())
                .collect::<Result<Vec<SliceSetting>>>()?;
            let baseline = a
                .baseline
                .as_deref()
                .map(str::parse::<SliceSetting>)
                .transpose()?;
            execute(
                "matrix",
                &a.workload,
                &a.target,
                &a.schedule,
                &a.ensure,
                settings,
                a.clients.clone(),
                baseline,
            )
        }
        BenchCommand::Compare(a) => cmd_compare(a),
        BenchCommand::Report(a) => cmd_report(a),
        BenchCommand::Workloads => cmd_workloads(),
        BenchCommand::Ars(a) => crate::ars::run(a),
        BenchCommand::Vectorsearch(a) => crate::vectorsearch::run(a),
    }
}

fn cmd_workloads() -> Result<i32> {
    let mut out = std::io::stdout().lock();
    for w in workload::all() {
        writeln!(
            out,
            "{} (index {}, {} docs by default): {}",
            w.name, w.default_index, w.default_docs, w.description
        )?;
        for o in &w.operations {
            let tt = o
                .target_throughput
                .map_or("closed loop".to_string(), |t| format!("{t} ops/s"));
            writeln!(
                out,
                "  {:<44} {:<8} warm-up {:>3}, iterations {:>3}, public schedule: {tt}",
                o.name,
                if o.public { "public" } else { "extra" },
                o.warmup_iterations,
                o.iterations
            )?;
        }
    }
    writeln!(
        out,
        "vectorsearch (`tessera bench vectorsearch`): prod-queries, filtered-relaxed, filtered-restrictive"
    )?;
    Ok(0)
}

fn cmd_generate(a: GenerateArgs) -> Result<i32> {
    let w = workload::get(&a.workload)?;
    let docs = a.docs.unwrap_or(w.default_docs);
    let index = a
        .index
        .clone()
        .unwrap_or_else(|| w.default_index.to_string());
    let framing = if a.docs_only {
        Framing::DocsOnly
    } else {
        Framing::BulkWithIndex(&index)
    };
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let t = std::time::Instant::now();
    let result = match &a.out {
        Some(p) => {
            let f = std::fs::File::create(p).with_context(|| format!("create {}", p.display()))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
            let mut last = std::time::Instant::now();
            generate::write_corpus(&w, docs, a.seed, framing, threads, &mut out, |n| {
                if last.elapsed() >= Duration::from_millis(250) || n == docs {
                    last = std::time::Instant::now();
                    eprint!(
                        "\r{}",
                        load::progress_line(n, docs, t.elapsed().as_secs_f64())
                    );
                }
            })
        }
        None => {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            generate::write_corpus(&w, docs, a.seed, framing, threads, &mut out, |_| {})
        }
    };
    if let Err(e) = result {
        let broken_pipe = e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            return Ok(0);
        }
        return Err(e);
    }
    if let Some(p) = &a.out {
        eprintln!(
            "\nwrote {docs} {} documents (seed {}) to {} in {:.1}s",
            w.name,
            a.seed,
            p.display(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}

/// Parses `[LABEL=]URL`.
/// `KEY=VALUE` of `--setting`.
pub(crate) fn parse_setting(spec: &str) -> std::result::Result<(String, String), String> {
    match spec.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("expected KEY=VALUE, got [{spec}]")),
    }
}

pub(crate) fn parse_target(spec: &str) -> (Option<String>, String) {
    match spec.split_once('=') {
        Some((l, u)) if !l.contains("://") && !l.is_empty() => (Some(l.to_string()), u.to_string()),
        _ => (None, spec.to_string()),
    }
}

/// Connects to every target: `GET /` (engine), `_nodes/os` (processors). Labels default to
/// `<distribution>-<version>`.
fn connect(args: &TargetArgs) -> Result<Vec<Target>> {
    if args.request_timeout.is_nan() || args.request_timeout <= 0.0 {
        bail!("--request-timeout must be positive");
    }
    let timeout = Duration::from_secs_f64(args.request_timeout);
    let mut out: Vec<Target> = Vec::new();
    for spec in &args.targets {
        let (label, url) = parse_target(spec);
        let client = Client::new(&url, timeout)?;
        let engine = client
            .with_timeout(timeout.min(Duration::from_secs(15)))
            .get_json("/")
            .with_context(|| format!("connect to target {}", client.base()))?;
        let distribution = engine["version"]["distribution"]
            .as_str()
            .map(String::from)
            .or_else(|| {
                engine["tagline"]
                    .as_str()
                    .map(|t| t.split_whitespace().next().unwrap_or("").to_lowercase())
            })
            .or_else(|| engine["name"].as_str().map(String::from));
        let version = engine["version"]["number"].as_str().map(String::from);
        let processors = client.get_json("/_nodes/os").ok().and_then(|v| {
            v["nodes"].as_object().and_then(|n| {
                n.values().next().and_then(|n| {
                    n["os"]["allocated_processors"]
                        .as_u64()
                        .or(n["os"]["available_processors"].as_u64())
                })
            })
        });
        let mut label = label.unwrap_or_else(|| match (&distribution, &version) {
            (Some(d), Some(v)) => format!("{d}-{v}"),
            _ => client.base().trim_start_matches("http://").to_string(),
        });
        let base_label = label.clone();
        let mut n = 2;
        while out.iter().any(|t| t.info.label == label) {
            label = format!("{base_label}-{n}");
            n += 1;
        }
        out.push(Target {
            info: TargetInfo {
                label,
                url: client.base().to_string(),
                engine,
                distribution,
                version,
                available_processors: processors,
                corpus: Default::default(),
            },
            client,
        });
    }
    Ok(out)
}

fn cmd_load(a: LoadArgs) -> Result<i32> {
    let w = workload::get(&a.workload)?;
    let targets = connect(&a.target)?;
    let index = a
        .target
        .index
        .clone()
        .unwrap_or_else(|| w.default_index.to_string());
    let opts = LoadOptions {
        docs: a.docs.unwrap_or(w.default_docs),
        seed: a.seed.unwrap_or(1),
        record_seed: a.input.is_none() || a.seed.is_some(),
        clients: a.clients,
        batch_size: a.batch_size,
        replicas: Some(a.replicas),
        shards: a.shards,
        settings: a.settings.clone(),
        force_merge: a.force_merge,
        force_merge_timeout: Duration::from_secs_f64(a.force_merge_timeout.max(1.0)),
        recreate: a.recreate,
        input: a.input.clone(),
    };
    let stop = crate::interrupt::flag();
    for t in &targets {
        eprintln!(
            "loading {} into {index} on {} ({})",
            w.name, t.info.label, t.info.url
        );
        let r = load::load(&t.client, &w, &index, &opts, &stop)?;
        println!(
            "{}: loaded {} documents ({:.1} MB) into {index}: acknowledged in {:.1}s ({:.0} docs/s), \
             searchable in {:.1}s ({:.0} docs/s){}; segments: {}",
            t.info.label,
            r.docs,
            r.bytes as f64 / 1e6,
            r.seconds,
            r.docs_per_s,
            r.searchable_seconds,
            r.searchable_docs_per_s,
            r.force_merge_seconds.map_or(String::new(), |s| format!(", force merge {s:.1}s")),
            r.corpus.segments.map_or("?".into(), |s| s.to_string())
        );
    }
    Ok(0)
}

/// Makes sure every target has the index (loading the corpus when `--docs` asks for it) and
/// records what it holds.
fn ensure_corpus(
    w: &Workload,
    index: &str,
    targets: &mut [Target],
    e: &EnsureArgs,
    timeout: f64,
) -> Result<()> {
    let stop = crate::interrupt::flag();
    for t in targets.iter_mut() {
        let info = load::corpus_info(&t.client, index)?;
        if let Some(docs) = e.docs {
            let opts = LoadOptions {
                docs,
                seed: e.seed,
                record_seed: true,
                clients: e.bulk_clients,
                batch_size: e.batch_size,
                replicas: Some(0),
                shards: e.shards,
                settings: Vec::new(),
                force_merge: e.force_merge,
                force_merge_timeout: Duration::from_secs_f64(3600f64.max(timeout)),
                recreate: true,
                input: None,
            };
            match &info {
                Some(i) if load::is_corpus(i, w, &opts) => {
                    eprintln!("{}: {index} already holds {docs} {} documents (seed {})", t.info.label, w.name, e.seed);
                }
                Some(i) if !e.recreate => bail!(
                    "index {index} on {} holds another corpus ({} documents, workload {}, seed {}); \
                     pass --recreate to replace it with {docs} documents of seed {}",
                    t.info.label,
                    i.docs.map_or("?".into(), |d| d.to_string()),
                    i.workload.as_deref().unwrap_or("?"),
                    i.seed.map_or("?".into(), |s| s.to_string()),
                    e.seed
                ),
                _ => {
                    eprintln!("loading {docs} {} documents into {index} on {}", w.name, t.info.label);
                    let r = load::load(&t.client, w, index, &opts, &stop)?;
                    eprintln!(
                        "{}: loaded {} documents, searchable in {:.1}s ({:.0} docs/s)",
                        t.info.label, r.docs, r.searchable_seconds, r.searchable_docs_per_s
                    );
                }
            }
        } else {
            match &info {
                None => bail!(
                    "index {index} does not exist on {} ({}); load it first: tessera bench load {} --target {} \
                     (or pass --docs N to load here)",
                    t.info.label,
                    t.info.url,
                    w.name,
                    t.info.url
                ),
                Some(i) if i.docs == Some(0) => {
                    bail!("index {index} on {} is empty; load it first (or pass --docs N)", t.info.label)
                }
                Some(_) => {}
            }
        }
        t.info.corpus = load::corpus_info(&t.client, index)?.unwrap_or_default();
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn execute(
    kind: &str,
    workload_name: &str,
    target_args: &TargetArgs,
    s: &ScheduleArgs,
    ensure: &EnsureArgs,
    settings: Vec<SliceSetting>,
    clients: Vec<usize>,
    baseline: Option<SliceSetting>,
) -> Result<i32> {
    let w = workload::get(workload_name)?;
    let ops = w.select(&s.ops)?;
    if clients.is_empty() || clients.contains(&0) {
        bail!("client counts must be at least 1");
    }
    if settings.is_empty() {
        bail!("give at least one slice setting");
    }
    if let Some(t) = s.target_throughput {
        if t.is_nan() || t <= 0.0 {
            bail!("--target-throughput must be positive");
        }
    }
    let mut labels: Vec<String> = Vec::new();
    for st in &settings {
        if labels.contains(&st.label()) {
            bail!("slice setting {} is listed twice", st.label());
        }
        labels.push(st.label());
    }
    let baseline = baseline
        .map(|b| b.label())
        .unwrap_or_else(|| labels[0].clone());
    if !labels.contains(&baseline) {
        bail!(
            "the baseline {baseline} is not one of the settings ({})",
            labels.join(", ")
        );
    }
    let focus = match &s.focus {
        Some(f) => w.operation(f)?.name.to_string(),
        None if ops.iter().any(|o| o.name == w.focus_operation) => w.focus_operation.to_string(),
        None => ops[0].name.to_string(),
    };
    let plans: Vec<OpPlan> = ops
        .into_iter()
        .map(|op| OpPlan {
            warmup: s.warmup.unwrap_or(op.warmup_iterations),
            iterations: s.iterations.unwrap_or(op.iterations).max(1),
            target_throughput: s.target_throughput.or(if s.public_schedule {
                op.target_throughput
            } else {
                None
            }),
            op,
        })
        .collect();

    let mut targets = connect(target_args)?;
    let index = target_args
        .index
        .clone()
        .unwrap_or_else(|| w.default_index.to_string());
    ensure_corpus(
        &w,
        &index,
        &mut targets,
        ensure,
        target_args.request_timeout,
    )?;

    let started = timefmt::now_millis();
    let out_dir = s.out.clone().unwrap_or_else(|| {
        PathBuf::from("bench-results").join(format!(
            "{}-{kind}-{}",
            w.name,
            timefmt::compact_stamp(started)
        ))
    });
    let mut result = BenchResult {
        schema: SCHEMA.into(),
        kind: kind.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command: std::env::args().collect(),
        started_at: timefmt::rfc3339_millis(started),
        finished_at: timefmt::rfc3339_millis(started),
        workload: w.name.into(),
        index: index.clone(),
        options: RunOptions {
            schedule: if s.target_throughput.is_some() {
                "target-throughput"
            } else if s.public_schedule {
                "public-schedule"
            } else {
                "closed-loop"
            }
            .into(),
            target_throughput: s.target_throughput,
            warmup_iterations: s.warmup,
            iterations: s.iterations,
            request_timeout_s: target_args.request_timeout,
            sample_interval_ms: s.sample_interval_ms,
            on_error: s.on_error.name().into(),
        },
        settings: labels,
        baseline: Some(baseline),
        clients: clients.clone(),
        focus_operation: focus,
        targets: targets.iter().map(|t| t.info.clone()).collect(),
        cells: Vec::new(),
        interrupted: false,
        error: None,
    };
    eprintln!("results: {}", out_dir.display());
    result.save(&out_dir)?;

    let stop = crate::interrupt::flag();
    let sweep = Sweep {
        index: &index,
        targets: &targets,
        settings: &settings,
        clients: &clients,
        plans: &plans,
        sample_interval: Duration::from_millis(s.sample_interval_ms.max(10)),
        on_error: s.on_error,
        out_dir: &out_dir,
        raw: !s.no_raw,
        interleave: s.interleave,
    };
    let outcome = matrix::sweep(&sweep, &mut result, &stop);
    let interrupted = stop.load(Ordering::Relaxed);
    let failure = match outcome {
        Ok(Some(msg)) if !interrupted => Some(msg),
        Ok(_) => None,
        Err(e) => Some(format!("{e:#}")),
    };
    result.interrupted = interrupted;
    result.error = failure
        .clone()
        .or(interrupted.then(|| "interrupted (Ctrl-C)".to_string()));
    result.finished_at = timefmt::rfc3339_millis(timefmt::now_millis());
    result.save(&out_dir)?;
    let rep = report::render(&result);
    write_report(&out_dir, "report.md", &rep)?;
    println!("{}", rep.markdown);
    eprintln!("results, report and charts: {}", out_dir.display());
    if let Some(f) = failure {
        bail!("{f}\n(partial results in {})", out_dir.display());
    }
    Ok(if interrupted { 130 } else { 0 })
}

pub(crate) fn write_report(dir: &Path, name: &str, rep: &Report) -> Result<()> {
    std::fs::create_dir_all(dir.join("charts"))
        .with_context(|| format!("create {}", dir.display()))?;
    std::fs::write(dir.join(name), &rep.markdown).with_context(|| format!("write {name}"))?;
    for (file, svg) in &rep.charts {
        std::fs::write(dir.join(file), svg).with_context(|| format!("write {file}"))?;
    }
    Ok(())
}

fn cmd_report(a: ReportArgs) -> Result<i32> {
    let r = BenchResult::load(&a.results)?;
    let dir = a.out.clone().unwrap_or_else(|| {
        if a.results.is_dir() {
            a.results.clone()
        } else {
            a.results
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        }
    });
    let rep = report::render(&r);
    write_report(&dir, "report.md", &rep)?;
    println!("{}", rep.markdown);
    eprintln!(
        "report and {} charts written to {}",
        rep.charts.len(),
        dir.display()
    );
    Ok(0)
}

fn cmd_compare(a: CompareArgs) -> Result<i32> {
    let base = BenchResult::load(&a.baseline)?;
    let cont = BenchResult::load(&a.contender)?;
    let rep = compare::compare(&base, &cont)?;
    println!("{}", rep.markdown);
    if let Some(dir) = &a.out {
        write_report(dir, "compare.md", &rep)?;
        eprintln!("comparison written to {}", dir.join("compare.md").display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: BenchCommand,
    }

    #[test]
    fn load_takes_index_settings() {
        let c = Cli::try_parse_from([
            "x",
            "load",
            "nyc_taxis",
            "--setting",
            "index.merge.enabled=false",
            "--setting",
            "refresh_interval = 30s",
        ])
        .unwrap();
        let BenchCommand::Load(l) = c.cmd else {
            panic!()
        };
        assert_eq!(
            l.settings,
            vec![
                ("index.merge.enabled".to_string(), "false".to_string()),
                ("refresh_interval".to_string(), "30s".to_string())
            ]
        );
        assert!(Cli::try_parse_from(["x", "load", "nyc_taxis", "--setting", "oops"]).is_err());
    }

    #[test]
    fn command_lines_parse() {
        let c = Cli::try_parse_from([
            "x",
            "matrix",
            "nyc_taxis",
            "--target",
            "os=http://localhost:9500",
            "-t",
            "http://localhost:9200",
            "--clients",
            "1,2,4",
            "--settings",
            "none,2,4,auto",
            "--docs",
            "1000",
            "--iterations",
            "5",
        ])
        .unwrap();
        let BenchCommand::Matrix(m) = c.cmd else {
            panic!()
        };
        assert_eq!(m.clients, vec![1, 2, 4]);
        assert_eq!(m.settings, vec!["none", "2", "4", "auto"]);
        assert_eq!(m.target.targets.len(), 2);
        assert_eq!(m.ensure.docs, Some(1000));
        assert_eq!(m.schedule.iterations, Some(5));
        assert_eq!(
            parse_target("os=http://a:1"),
            (Some("os".into()), "http://a:1".into())
        );
        assert_eq!(
            parse_target("http://a:1/?x=y"),
            (None, "http://a:1/?x=y".into())
        );
        let c = Cli::try_parse_from([
            "x",
            "run",
            "big5",
            "--ops",
            "term,range",
            "--target-throughput",
            "2",
        ])
        .unwrap();
        let BenchCommand::Run(r) = c.cmd else {
            panic!()
        };
        assert_eq!(r.schedule.ops, vec!["term", "range"]);
        assert!(Cli::try_parse_from([
            "x",
            "run",
            "big5",
            "--target-throughput",
            "2",
            "--public-schedule"
        ])
        .is_err());
    }

    #[test]
    fn bad_input_fails_fast_with_clear_messages() {
        let e = run(BenchCommand::Generate(GenerateArgs {
            workload: "nope".into(),
            docs: Some(1),
            seed: 1,
            out: None,
            index: None,
            docs_only: false,
            threads: None,
        }))
        .unwrap_err();
        assert!(e.to_string().contains("unknown workload"), "{e}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cli = Cli::try_parse_from([
            "x",
            "run",
            "nyc_taxis",
            "-t",
            &format!("http://127.0.0.1:{port}"),
            "--ops",
            "range",
        ])
        .unwrap();
        let t = std::time::Instant::now();
        let e = format!("{:#}", run(cli.cmd).unwrap_err());
        assert!(e.contains("cannot reach") || e.contains("connect"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        let cli = Cli::try_parse_from(["x", "run", "nyc_taxis", "--ops", "nope"]).unwrap();
        let e = run(cli.cmd).unwrap_err().to_string();
        assert!(e.contains("unknown operation \"nope\""), "{e}");
        let cli =
            Cli::try_parse_from(["x", "matrix", "nyc_taxis", "--settings", "none,fast"]).unwrap();
        let e = run(cli.cmd).unwrap_err().to_string();
        assert!(e.contains("unknown slice setting"), "{e}");
        let cli = Cli::try_parse_from(["x", "run", "vectorsearch"]).unwrap();
        assert!(run(cli.cmd)
            .unwrap_err()
            .to_string()
            .contains("tessera bench vectorsearch"));
    }
}
