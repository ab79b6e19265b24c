//! `tessera bench vectorsearch`: OpenSearch Benchmark's `vectorsearch` operations on a synthetic
//! corpus with exact ground truth, against one or more targets side by side.
//!
//! Why a command of its own: every query carries its own vector and is scored by recall against
//! the true neighbours, which the fixed request bodies of the other workloads cannot express.
//! The steps are OSB's: create the index (`knn_vector`, HNSW with the Lucene engine, so that an
//! OpenSearch with the k-NN plugin serves it too), bulk, refresh, force merge, warm-up, then
//! `prod-queries` (`k` nearest, `method_parameters.ef_search` passed explicitly: in 2.19 the
//! Lucene engine otherwise searches with ef = k) and the filtered variants, each reported with
//! latency percentiles, throughput, recall@k and recall@1. `--slices` repeats the queries
//! under several concurrent segment search settings.

pub mod corpus;
pub mod truth;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};

use crate::client::Client;
use crate::metrics::quantile;
use corpus::{write_vector, Corpus, RELAXED_BELOW, RESTRICTIVE_BELOW};
use truth::{ground_truth, recall, Docs, Space};

#[derive(Args, Debug, Clone)]
pub struct VectorArgs {
    /// Endpoint to measure, `[LABEL=]http://host:port`; repeat to measure several side by side
    #[arg(
        long = "target",
        short = 't',
        value_name = "[LABEL=]URL",
        default_value = "http://localhost:9200"
    )]
    pub targets: Vec<String>,
    #[arg(long, default_value = "target_index")]
    pub index: String,
    /// Documents (vectors) in the corpus
    #[arg(long, default_value_t = 150_000)]
    pub docs: u64,
    #[arg(long, default_value_t = 128)]
    pub dim: usize,
    /// Clusters the vectors are drawn around
    #[arg(long, default_value_t = 1000)]
    pub clusters: usize,
    /// l2, innerproduct or cosinesimil
    #[arg(long, default_value = "innerproduct")]
    pub space: String,
    #[arg(long, default_value_t = 16)]
    pub m: u32,
    #[arg(long, default_value_t = 100)]
    pub ef_construction: u32,
    /// `method_parameters.ef_search` of every query
    #[arg(long, default_value_t = 100)]
    pub ef_search: u32,
    /// k of every query (and its `size`)
    #[arg(long, default_value_t = 100)]
    pub k: usize,
    /// Measured queries per operation
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// Unmeasured queries before each operation
    #[arg(long, default_value_t = 100)]
    pub warmup_queries: usize,
    /// Search clients (closed loop)
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Documents per bulk request
    #[arg(long, default_value_t = 500)]
    pub batch_size: u64,
    /// Bulk clients (threads)
    #[arg(long, default_value_t = 1)]
    pub bulk_clients: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Force-merge to this many segments after loading (0: no force merge)
    #[arg(long, default_value_t = 1)]
    pub force_merge: u32,
    /// Concurrent segment search settings to query under, in turn: `default` (leave the
    /// index's), `none`, `auto`, `all` or `all:N` (N slices)
    #[arg(long = "slices", value_delimiter = ',', default_value = "default")]
    pub slices: Vec<String>,
    /// Query operations: prod-queries, filtered-relaxed, filtered-restrictive
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "prod-queries,filtered-relaxed,filtered-restrictive"
    )]
    pub ops: Vec<String>,
    /// Query the index already there (same corpus parameters) instead of loading it
    #[arg(long)]
    pub skip_load: bool,
    /// Another index setting at creation, `KEY=VALUE`; repeat for several
    #[arg(long = "setting", value_name = "KEY=VALUE", value_parser = crate::cli::parse_setting)]
    pub settings: Vec<(String, String)>,
    /// Directory for results.json and report.md
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Timeout of every HTTP request, in seconds
    #[arg(long, default_value_t = 3600.0)]
    pub request_timeout: f64,
}

/// A query operation: its name and filter.
#[derive(Clone, Copy, Debug)]
struct QueryOp {
    name: &'static str,
    below: Option<u32>,
}

const QUERY_OPS: [QueryOp; 3] = [
    QueryOp {
        name: "prod-queries",
        below: None,
    },
    QueryOp {
        name: "filtered-relaxed",
        below: Some(RELAXED_BELOW),
    },
    QueryOp {
        name: "filtered-restrictive",
        below: Some(RESTRICTIVE_BELOW),
    },
];

/// The ingest figures of one target.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct Ingest {
    target: String,
    bulk_s: f64,
    refresh_s: f64,
    force_merge_s: f64,
    total_s: f64,
    segments: u64,
}

/// One query operation's figures on one target under one slice setting.
#[derive(Clone, Debug, serde::Serialize)]
struct QueryRow {
    target: String,
    slices: String,
    operation: String,
    queries: usize,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    throughput: f64,
    recall_at_k: f64,
    recall_at_1: f64,
}

pub fn run(args: VectorArgs) -> Result<i32> {
    let Some(space) = Space::parse(&args.space) else {
        bail!(
            "unknown --space {:?}: l2, innerproduct or cosinesimil",
            args.space
        );
    };
    if args.k == 0 || args.dim == 0 || args.docs == 0 || args.queries == 0 {
        bail!("--k, --dim, --docs and --queries must be above 0");
    }
    let ops: Vec<QueryOp> = args
        .ops
        .iter()
        .map(|name| {
            QUERY_OPS
                .iter()
                .find(|op| op.name == name)
                .copied()
                .with_context(|| format!("unknown operation {name:?}"))
        })
        .collect::<Result<_>>()?;
    let timeout = Duration::from_secs_f64(args.request_timeout);
    let targets: Vec<(String, Client)> = args
        .targets
        .iter()
        .map(|spec| {
            let (label, url) = crate::cli::parse_target(spec);
            let client = Client::new(&url, timeout)?;
            Ok((label.unwrap_or_else(|| client.base().to_string()), client))
        })
        .collect::<Result<_>>()?;
    for (label, client) in &targets {
        client
            .get_json("/")
            .with_context(|| format!("target {label}"))?;
    }
    let corpus = Corpus::new(args.seed, args.dim, args.clusters);
    eprintln!("generating {} vectors of {} dims", args.docs, args.dim);
    let docs = Docs::generate(&corpus, args.docs);
    let total_queries = args.queries + args.warmup_queries;
    let queries: Vec<Vec<f32>> = (0..total_queries as u64)
        .map(|i| corpus.query_vector(i))
        .collect();
    let measured = &queries[args.warmup_queries..];
    let started = Instant::now();
    let truths: Vec<Vec<Vec<u64>>> = ops
        .iter()
        .map(|op| ground_truth(&docs, measured, args.k, space, op.below))
        .collect();
    eprintln!(
        "ground truth of {} operations in {:.1} s",
        ops.len(),
        started.elapsed().as_secs_f64()
    );
    let mut ingests = Vec::new();
    let mut rows = Vec::new();
    for (label, client) in &targets {
        if !args.skip_load {
            let ingest = load(&args, label, client, &docs, space)?;
            eprintln!("{label}: {ingest:?}");
            ingests.push(ingest);
        }
        warm_up(client, &args.index);
        for slices in &args.slices {
            apply_slices(client, &args.index, slices)
                .with_context(|| format!("{label}: slice setting {slices}"))?;
            for (op, truth) in ops.iter().zip(&truths) {
                let bodies: Vec<Vec<u8>> = queries
                    .iter()
                    .map(|q| query_body(&args, q, op.below))
                    .collect();
                let row = measure(&args, label, slices, client, op, &bodies, truth)?;
                eprintln!(
                    "{label} [{slices}] {}: p50 {:.2} ms, p90 {:.2} ms, {:.1} ops/s, recall@{} {:.4}, recall@1 {:.4}",
                    row.operation, row.p50_ms, row.p90_ms, row.throughput, args.k, row.recall_at_k, row.recall_at_1
                );
                rows.push(row);
            }
        }
    }
    let report = render(&args, &ingests, &rows);
    println!("{report}");
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
        let results = json!({
            "workload": "vectorsearch",
            "docs": args.docs, "dim": args.dim, "clusters": args.clusters, "space": space.name(),
            "m": args.m, "ef_construction": args.ef_construction, "ef_search": args.ef_search,
            "k": args.k, "queries": args.queries, "clients": args.clients, "seed": args.seed,
            "force_merge": args.force_merge,
            "ingest": ingests, "queries_results": rows,
        });
        std::fs::write(
            out.join("results.json"),
            serde_json::to_vec_pretty(&results)?,
        )?;
        std::fs::write(out.join("report.md"), &report)?;
    }
    Ok(0)
}

/// Creates the index and loads the corpus: bulk, refresh, force merge, each timed.
fn load(
    args: &VectorArgs,
    label: &str,
    client: &Client,
    docs: &Docs,
    space: Space,
) -> Result<Ingest> {
    let index = &args.index;
    let _ = client.request("DELETE", &format!("/{index}"), None);
    let mut settings = json!({
        "index.number_of_shards": 1,
        "index.number_of_replicas": 0,
        "index.knn": true,
    });
    for (key, value) in &args.settings {
        settings[key] = json!(value);
    }
    let body = json!({
        "settings": settings,
        "mappings": {"properties": {
            "v": {
                "type": "knn_vector",
                "dimension": args.dim,
                "method": {
                    "name": "hnsw",
                    "engine": "lucene",
                    "space_type": space.name(),
                    "parameters": {"m": args.m, "ef_construction": args.ef_construction}
                }
            },
            "attr": {"type": "integer"}
        }}
    });
    client
        .json("PUT", &format!("/{index}"), Some(&body))
        .with_context(|| format!("{label}: create index"))?;
    let started = Instant::now();
    let batches = args.docs.div_ceil(args.batch_size.max(1));
    let next = AtomicU64::new(0);
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..args.bulk_clients.max(1))
            .map(|_| {
                let client = client.fresh();
                let next = &next;
                scope.spawn(move || -> Result<()> {
                    let mut body = Vec::new();
                    loop {
                        let batch = next.fetch_add(1, Ordering::Relaxed);
                        if batch >= batches {
                            return Ok(());
                        }
                        body.clear();
                        let from = batch * args.batch_size;
                        let to = (from + args.batch_size).min(args.docs);
                        for i in from..to {
                            let _ =
                                writeln!(body, r#"{{"index":{{"_index":"{index}","_id":"{i}"}}}}"#);
                            body.extend_from_slice(br#"{"v":"#);
                            write_vector(
                                &mut body,
                                &docs.vectors[i as usize * docs.dim..][..docs.dim],
                            );
                            let _ = writeln!(body, r#","attr":{}}}"#, docs.attrs[i as usize]);
                        }
                        let response = client.request(
                            "POST",
                            "/_bulk",
                            Some((&body, "application/x-ndjson")),
                        )?;
                        if !response.is_success() {
                            bail!("bulk refused: {}", response.error_summary());
                        }
                        let answer = response.json()?;
                        if answer["errors"].as_bool() == Some(true) {
                            bail!("bulk item failed: {}", first_bulk_error(&answer));
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("bulk thread")?;
        }
        Ok(())
    })
    .with_context(|| format!("{label}: bulk"))?;
    let bulk_s = started.elapsed().as_secs_f64();
    let at = Instant::now();
    client
        .json("POST", &format!("/{index}/_refresh"), None)
        .with_context(|| format!("{label}: refresh"))?;
    let refresh_s = at.elapsed().as_secs_f64();
    let at = Instant::now();
    if args.force_merge > 0 {
        client
            .json(
                "POST",
                &format!("/{index}/_forcemerge?max_num_segments={}", args.force_merge),
                None,
            )
            .with_context(|| format!("{label}: force merge"))?;
        client.json("POST", &format!("/{index}/_refresh"), None)?;
    }
    let force_merge_s = at.elapsed().as_secs_f64();
    let segments = client
        .get_json(&format!("/_cat/segments/{index}?format=json"))
        .map(|v| v.as_array().map_or(0, |a| a.len() as u64))
        .unwrap_or(0);
    Ok(Ingest {
        target: label.to_string(),
        bulk_s,
        refresh_s,
        force_merge_s,
        total_s: started.elapsed().as_secs_f64(),
        segments,
    })
}

fn first_bulk_error(answer: &Value) -> String {
    answer["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|item| {
            let action = item.as_object()?.values().next()?;
            action.get("error").map(|e| e.to_string())
        })
        .unwrap_or_default()
}

/// OSB's warm-up operation: the k-NN plugin's warm-up API (loads graphs where an engine has
/// any to load; not every engine accepts it, so a refusal is not an error).
fn warm_up(client: &Client, index: &str) {
    let _ = client.request("GET", &format!("/_plugins/_knn/warmup/{index}"), None);
}

/// Sets the index's concurrent segment search for the next queries.
fn apply_slices(client: &Client, index: &str, slices: &str) -> Result<()> {
    let settings = match slices.split_once(':') {
        _ if slices == "default" => return Ok(()),
        Some(("all", n)) => json!({
            "index.search.concurrent_segment_search.mode": "all",
            "index.search.concurrent.max_slice_count": n.parse::<u32>().context("slice count")?,
        }),
        None if matches!(slices, "none" | "auto" | "all") => json!({
            "index.search.concurrent_segment_search.mode": slices,
            "index.search.concurrent.max_slice_count": null,
        }),
        _ => bail!("unknown slice setting {slices:?}: default, none, auto, all or all:N"),
    };
    client.json("PUT", &format!("/{index}/_settings"), Some(&settings))?;
    Ok(())
}

fn query_body(args: &VectorArgs, vector: &[f32], below: Option<u32>) -> Vec<u8> {
    let mut knn = json!({
        "vector": vector,
        "k": args.k,
        "method_parameters": {"ef_search": args.ef_search},
    });
    if let Some(below) = below {
        knn["filter"] = json!({"range": {"attr": {"lt": below}}});
    }
    serde_json::to_vec(&json!({
        "size": args.k,
        "_source": false,
        "query": {"knn": {"v": knn}},
    }))
    .expect("serialise a query")
}

/// Runs the warm-up queries, then the measured ones with `clients` closed-loop clients.
fn measure(
    args: &VectorArgs,
    label: &str,
    slices: &str,
    client: &Client,
    op: &QueryOp,
    bodies: &[Vec<u8>],
    truth: &[Vec<u64>],
) -> Result<QueryRow> {
    let path = format!("/{}/_search", args.index);
    let search = |client: &Client, body: &[u8]| -> Result<Vec<u64>> {
        let response = client.request("POST", &path, Some((body, "application/json")))?;
        if !response.is_success() {
            bail!("{label} {}: {}", op.name, response.error_summary());
        }
        let answer = response.json()?;
        Ok(answer["hits"]["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|hit| hit["_id"].as_str()?.parse().ok())
            .collect())
    };
    for body in &bodies[..args.warmup_queries] {
        search(client, body)?;
    }
    let measured = &bodies[args.warmup_queries..];
    let clients = args.clients.max(1);
    let next = AtomicU64::new(0);
    let started = Instant::now();
    let results: Vec<Vec<(usize, f64, Vec<u64>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..clients)
            .map(|_| {
                let client = client.fresh();
                let next = &next;
                let search = &search;
                scope.spawn(move || -> Result<Vec<(usize, f64, Vec<u64>)>> {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        if i >= measured.len() {
                            return Ok(out);
                        }
                        let at = Instant::now();
                        let ids = search(&client, &measured[i])?;
                        out.push((i, at.elapsed().as_secs_f64() * 1000.0, ids));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("search thread"))
            .collect::<Result<Vec<_>>>()
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies = Vec::with_capacity(measured.len());
    let mut found = vec![Vec::new(); measured.len()];
    for (i, latency, ids) in results.into_iter().flatten() {
        latencies.push(latency);
        found[i] = ids;
    }
    let (recall_k, recall_1) = recall(truth, &found, args.k);
    Ok(QueryRow {
        target: label.to_string(),
        slices: slices.to_string(),
        operation: op.name.to_string(),
        queries: measured.len(),
        p50_ms: quantile(&latencies, 0.5).unwrap_or(0.0),
        p90_ms: quantile(&latencies, 0.9).unwrap_or(0.0),
        p99_ms: quantile(&latencies, 0.99).unwrap_or(0.0),
        throughput: measured.len() as f64 / elapsed,
        recall_at_k: recall_k,
        recall_at_1: recall_1,
    })
}

fn render(args: &VectorArgs, ingests: &[Ingest], rows: &[QueryRow]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "## vectorsearch: {} vectors × {} dims ({}), m {}, ef_construction {}, ef_search {}, k = size = {}, {} client(s), force merge {}\n\n",
        args.docs, args.dim, args.space, args.m, args.ef_construction, args.ef_search, args.k,
        args.clients,
        if args.force_merge > 0 { format!("to {}", args.force_merge) } else { "none".to_string() }
    ));
    if !ingests.is_empty() {
        out.push_str("| target | bulk s | refresh s | force merge s | total s | segments |\n|---|---:|---:|---:|---:|---:|\n");
        for i in ingests {
            out.push_str(&format!(
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |\n",
                i.target, i.bulk_s, i.refresh_s, i.force_merge_s, i.total_s, i.segments
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "| target | slices | operation | p50 ms | p90 ms | p99 ms | ops/s | recall@{} | recall@1 |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n",
        args.k
    ));
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.4} | {:.4} |\n",
            r.target,
            r.slices,
            r.operation,
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            r.throughput,
            r.recall_at_k,
            r.recall_at_1
        ));
    }
    out
}
