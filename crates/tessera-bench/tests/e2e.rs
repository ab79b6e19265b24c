//! End-to-end: load a small corpus, run operations, sweep a small matrix, compare two runs and
//! render the report, against a real node.
//!
//! The node is `$TESSERA_BENCH_TARGET` (any OpenSearch-compatible endpoint, e.g. a reference
//! OpenSearch), else a `tessera` started from `$TESSERA_BIN` as
//! `$TESSERA_BIN serve --port <free port> --data <temp dir> -c <the repository's
//! tests/test-node.yml>`; with neither set the test prints why and passes (CI sets one of them).

use clap::Parser;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tessera_bench::client::Client;
use tessera_bench::results::BenchResult;
use tessera_bench::BenchCommand;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: BenchCommand,
}

struct Node {
    url: String,
    child: Option<Child>,
    _data: Option<tempfile::TempDir>,
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `$TESSERA_BIN serve` and waits until it answers `GET /`.
fn start_tessera(bin: &str) -> Node {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    // the settings every test node starts with (the repository's tests/test-node.yml)
    let config = data.path().join("tessera.yml");
    std::fs::write(&config, include_str!("../../../tests/test-node.yml")).unwrap();
    let child = Command::new(bin)
        .args(["serve", "--port", &port.to_string(), "--data"])
        .arg(data.path().join("data"))
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {bin}: {e}"));
    let mut node = Node {
        url: format!("http://127.0.0.1:{port}"),
        child: Some(child),
        _data: Some(data),
    };
    let client = Client::new(&node.url, Duration::from_secs(2)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.get_json("/").is_ok() {
            return node;
        }
        if let Some(status) = node.child.as_mut().unwrap().try_wait().unwrap() {
            panic!("{bin} serve exited with {status} before answering on port {port}");
        }
        assert!(
            Instant::now() < deadline,
            "{bin} serve did not answer on port {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn node() -> Option<Node> {
    if let Ok(url) = std::env::var("TESSERA_BENCH_TARGET") {
        return Some(Node {
            url,
            child: None,
            _data: None,
        });
    }
    if let Ok(bin) = std::env::var("TESSERA_BIN") {
        return Some(start_tessera(&bin));
    }
    None
}

fn bench(args: &[&str]) -> i32 {
    let mut argv = vec!["tessera-bench"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).expect("valid command line");
    tessera_bench::run(cli.cmd)
        .unwrap_or_else(|e| panic!("tessera bench {}: {e:#}", args.join(" ")))
}

fn load_result(dir: &Path) -> BenchResult {
    BenchResult::load(dir).unwrap()
}

#[test]
fn small_end_to_end_run() {
    let Some(node) = node() else {
        eprintln!(
            "skipping the end-to-end bench test: set TESSERA_BENCH_TARGET=http://host:port \
             (any OpenSearch-compatible node) or TESSERA_BIN=/path/to/tessera"
        );
        return;
    };
    let url = node.url.as_str();
    let client = Client::new(url, Duration::from_secs(30)).unwrap();
    let index = format!("tessera_bench_e2e_{}", std::process::id());
    let out = tempfile::tempdir().unwrap();
    let dir = |n: &str| out.path().join(n).to_string_lossy().into_owned();
    let settings_before = client.get_json("/_cluster/settings").unwrap()["persistent"].clone();

    // Load.
    let docs = 3000;
    assert_eq!(
        bench(&[
            "load",
            "nyc_taxis",
            "-t",
            url,
            "--index",
            &index,
            "--docs",
            "3000",
            "--batch-size",
            "700",
            "--recreate"
        ]),
        0
    );
    let count = client.get_json(&format!("/{index}/_count")).unwrap();
    assert_eq!(count["count"], docs);

    // Run, twice (for compare).
    let ops =
        "default,range,distance_amount_agg,autohisto_agg,date_histogram_agg,terms_payment_type";
    for run in ["run1", "run2"] {
        let code = bench(&[
            "run",
            "nyc_taxis",
            "-t",
            url,
            "--index",
            &index,
            "--ops",
            ops,
            "--warmup",
            "2",
            "--iterations",
            "5",
            "--out",
            &dir(run),
        ]);
        assert_eq!(code, 0);
    }
    let r = load_result(Path::new(&dir("run1")));
    assert_eq!(r.cells.len(), 1);
    let cell = &r.cells[0];
    assert_eq!(cell.operations.len(), 6);
    for o in &cell.operations {
        assert_eq!(o.requests, 5, "{}", o.name);
        assert_eq!(o.errors, 0, "{}: {:?}", o.name, o.first_error);
        let l = o.latency.as_ref().expect("latency");
        assert!(
            l.p50_ms > 0.0 && l.p50_ms <= l.p90_ms && l.p90_ms <= l.max_ms,
            "{}: {l:?}",
            o.name
        );
        assert!(o.throughput.as_ref().is_some_and(|t| t.median > 0.0));
    }
    assert_eq!(r.targets[0].corpus.docs, Some(docs));
    assert_eq!(r.targets[0].corpus.seed, Some(1));
    let op = |name: &str| cell.operations.iter().find(|o| o.name == name).unwrap();
    let histo = &op("distance_amount_agg").response["aggregations"]["distance_histo"];
    let in_histo = histo["doc_count"].as_u64().unwrap();
    assert!(in_histo > docs * 99 / 100 && in_histo <= docs, "{histo}");
    let days = &op("date_histogram_agg").response["aggregations"]["dropoffs_over_time"];
    assert_eq!(days["buckets"], 21, "{days}");
    let in_range = days["doc_count"].as_u64().unwrap();
    assert!(
        (docs * 4 / 100..docs * 8 / 100).contains(&in_range),
        "{days}"
    );
    let terms = &op("terms_payment_type").response["aggregations"]["payment_types"];
    assert_eq!(terms["doc_count"].as_u64(), Some(docs), "{terms}");

    // Two targets taking turns operation by operation: both cells hold every operation, and
    // they ran over the same span of time (one after the other they could not overlap).
    let a = format!("a={url}");
    let b = format!("b={url}");
    let code = bench(&[
        "run",
        "nyc_taxis",
        "-t",
        &a,
        "-t",
        &b,
        "--interleave",
        "--index",
        &index,
        "--ops",
        "default,range,terms_payment_type",
        "--warmup",
        "1",
        "--iterations",
        "3",
        "--out",
        &dir("interleaved"),
    ]);
    assert_eq!(code, 0);
    let r = load_result(Path::new(&dir("interleaved")));
    assert_eq!(r.cells.len(), 2);
    for cell in &r.cells {
        let names: Vec<&str> = cell.operations.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["default", "range", "terms_payment_type"],
            "{}",
            cell.target
        );
        assert!(cell
            .operations
            .iter()
            .all(|o| o.requests == 3 && o.errors == 0));
    }
    let (first, second) = (&r.cells[0], &r.cells[1]);
    assert_eq!((first.target.as_str(), second.target.as_str()), ("a", "b"));
    assert!(
        first.started_at <= second.started_at && second.started_at < first.finished_at,
        "{} {} {} {}",
        first.started_at,
        first.finished_at,
        second.started_at,
        second.finished_at
    );

    // Matrix: 2 settings × 2 client counts, settings restored afterwards.
    let code = bench(&[
        "matrix",
        "nyc_taxis",
        "-t",
        url,
        "--index",
        &index,
        "--ops",
        "range,distance_amount_agg",
        "--clients",
        "1,2",
        "--settings",
        "none,all",
        "--warmup",
        "1",
        "--iterations",
        "3",
        "--focus",
        "distance_amount_agg",
        "--out",
        &dir("matrix"),
    ]);
    assert_eq!(code, 0);
    let m = load_result(Path::new(&dir("matrix")));
    assert_eq!(m.cells.len(), 4);
    assert!(m.cells.iter().all(|c| c
        .operations
        .iter()
        .all(|o| o.errors == 0 && o.requests == 3 * c.clients as u64)));
    assert_eq!(
        client.get_json("/_cluster/settings").unwrap()["persistent"],
        settings_before
    );
    let report = std::fs::read_to_string(out.path().join("matrix/report.md")).unwrap();
    assert!(
        report.contains("P90 latency comparison") && report.contains("% improvement"),
        "{report}"
    );
    assert!(out.path().join("matrix/charts").read_dir().unwrap().count() >= 3);

    // Compare and report.
    assert_eq!(
        bench(&["compare", &dir("run1"), &dir("run2"), "--out", &dir("cmp")]),
        0
    );
    let cmp = std::fs::read_to_string(out.path().join("cmp/compare.md")).unwrap();
    assert!(cmp.contains("| range | p90 latency (ms) |"), "{cmp}");
    assert_eq!(bench(&["report", &dir("run1")]), 0);
    let svg = std::fs::read_dir(out.path().join("run1/charts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(std::fs::read_to_string(svg).unwrap().starts_with("<svg"));

    // A refused request stops the run with the target's reason.
    let cli = Cli::try_parse_from([
        "x",
        "run",
        "big5",
        "-t",
        url,
        "--index",
        &index,
        "--ops",
        "desc_sort_timestamp",
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--out",
        &dir("refused"),
    ])
    .unwrap();
    let e = format!("{:#}", tessera_bench::run(cli.cmd).unwrap_err());
    assert!(e.contains("desc_sort_timestamp"), "{e}");
    assert!(load_result(Path::new(&dir("refused"))).error.is_some());

    let _ = client.json("DELETE", &format!("/{index}"), None::<&Value>);
}
