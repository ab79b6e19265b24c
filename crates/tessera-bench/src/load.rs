//! Creates a workload's index and bulk-loads its corpus with N clients, streaming documents
//! from the generator (or from a file written by `generate`), with a progress bar and docs/s,
//! then optionally force-merges to N segments.
//!
//! The index's mapping carries `_meta.tessera_bench` = {workload, docs, seed}, so later runs can
//! record which corpus they measured and `--docs` can skip loading when the index already holds
//! that corpus. Rejected bulk items (HTTP 429) are retried with back-off; any other rejected
//! document stops the load with the target's reason (e.g. a strict mapping violation).

use crate::client::Client;
use crate::generate::{bulk_body, Framing};
use crate::results::CorpusInfo;
use crate::workload::{DocGenerator, Workload};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Documents to generate (with `input`, the file's count is used instead).
    pub docs: u64,
    pub seed: u64,
    /// Whether `seed` describes the corpus (false for a file of unknown origin).
    pub record_seed: bool,
    pub clients: usize,
    pub batch_size: u64,
    /// `index.number_of_replicas` override (a single node cannot allocate replicas).
    pub replicas: Option<u32>,
    pub shards: Option<u32>,
    /// Further index settings, `(key, value)`; the value is JSON when it parses as JSON.
    pub settings: Vec<(String, String)>,
    pub force_merge: Option<u32>,
    pub force_merge_timeout: Duration,
    pub recreate: bool,
    /// Load this NDJSON file (from `generate`) instead of generating.
    pub input: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct LoadReport {
    pub docs: u64,
    pub bytes: u64,
    /// Until the last bulk request was acknowledged.
    pub seconds: f64,
    pub docs_per_s: f64,
    /// Until the refresh after the last request returned: every document searchable. An engine
    /// that acknowledges writes before indexing them (Tessera's translog makes them durable
    /// first) can still have work queued at the last acknowledgement; this counts it.
    pub searchable_seconds: f64,
    pub searchable_docs_per_s: f64,
    pub force_merge_seconds: Option<f64>,
    pub corpus: CorpusInfo,
}

/// The create-index body: the workload's, with overrides and the corpus `_meta`.
pub fn index_body(w: &Workload, opts: &LoadOptions) -> Value {
    let mut body = w.index_json();
    let settings = body["settings"]
        .as_object_mut()
        .expect("index body has settings");
    // Settings may be flat ("index.number_of_shards") or nested ({"index": {...}}).
    let nested = settings.get("index").is_some_and(Value::is_object);
    let mut set = |k: &str, v: Value| {
        if nested {
            settings["index"][k] = v;
        } else {
            settings.insert(format!("index.{k}"), v);
        }
    };
    if let Some(r) = opts.replicas {
        set("number_of_replicas", json!(r));
    }
    if let Some(s) = opts.shards {
        set("number_of_shards", json!(s));
    }
    for (key, value) in &opts.settings {
        let value = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
        set(key.strip_prefix("index.").unwrap_or(key), value);
    }
    let meta = json!({"tessera_bench": {
        "workload": w.name,
        "docs": opts.docs,
        "seed": if opts.record_seed { json!(opts.seed) } else { Value::Null },
        "source": if opts.input.is_some() { "file" } else { "generator" },
    }});
    body["mappings"]["_meta"] = meta;
    body
}

/// What the target holds under `index`: `None` when the index does not exist.
pub fn corpus_info(client: &Client, index: &str) -> Result<Option<CorpusInfo>> {
    let resp = client.request("GET", &format!("/{index}/_count"), None)?;
    if resp.status == 404 {
        return Ok(None);
    }
    if !resp.is_success() {
        bail!(
            "count documents of {index} on {}: {}",
            client.base(),
            resp.error_summary()
        );
    }
    let count = resp.json()?["count"].as_u64();
    let mut info = CorpusInfo {
        docs: count,
        ..Default::default()
    };
    if let Ok(m) = client.get_json(&format!("/{index}/_mapping")) {
        if let Some(meta) = m
            .as_object()
            .and_then(|o| o.values().next())
            .map(|i| &i["mappings"]["_meta"]["tessera_bench"])
        {
            info.generated_docs = meta["docs"].as_u64();
            info.seed = meta["seed"].as_u64();
            info.workload = meta["workload"].as_str().map(String::from);
        }
    }
    if let Ok(s) = client.get_json(&format!("/{index}/_stats/segments,store")) {
        let p = &s["_all"]["primaries"];
        info.segments = p["segments"]["count"].as_u64();
        info.store_size_bytes = p["store"]["size_in_bytes"].as_u64();
    }
    Ok(Some(info))
}

/// True when `info` is the corpus `(workload, docs, seed)`, fully loaded.
pub fn is_corpus(info: &CorpusInfo, w: &Workload, opts: &LoadOptions) -> bool {
    info.workload.as_deref() == Some(w.name)
        && info.generated_docs == Some(opts.docs)
        && info.seed == Some(opts.seed)
        && info.docs == Some(opts.docs)
}

/// Creates the index (deleting it first with `recreate`).
pub fn create_index(client: &Client, w: &Workload, index: &str, opts: &LoadOptions) -> Result<()> {
    let exists = client.request("GET", &format!("/{index}"), None)?.status == 200;
    if exists {
        if !opts.recreate {
            bail!(
                "index {index} already exists on {}; pass --recreate to delete and reload it",
                client.base()
            );
        }
        client
            .json("DELETE", &format!("/{index}"), None)
            .context("delete the old index")?;
    }
    client
        .json("PUT", &format!("/{index}"), Some(&index_body(w, opts)))
        .with_context(|| format!("create index {index}"))?;
    // Best effort: engines without cluster health still work.
    let _ = client.request(
        "GET",
        &format!("/_cluster/health/{index}?wait_for_status=yellow&timeout=60s"),
        None,
    );
    Ok(())
}

/// Where batches come from.
enum Source {
    Generator {
        gen: Box<dyn DocGenerator>,
        next: AtomicU64,
        docs: u64,
        batch: u64,
    },
    File {
        reader: Mutex<(std::io::BufReader<std::fs::File>, bool)>,
        batch: u64,
        pairs: bool,
    },
}

impl Source {
    /// Fills `buf` with the next batch (framed for `/<index>/_bulk`); returns its document count.
    fn next_batch(&self, buf: &mut Vec<u8>) -> Result<u64> {
        buf.clear();
        match self {
            Source::Generator {
                gen,
                next,
                docs,
                batch,
            } => {
                let start = next.fetch_add(*batch, Ordering::Relaxed);
                if start >= *docs {
                    return Ok(0);
                }
                let end = (start + batch).min(*docs);
                bulk_body(gen.as_ref(), start..end, Framing::Bulk, buf);
                Ok(end - start)
            }
            Source::File {
                reader,
                batch,
                pairs,
            } => {
                let mut guard = reader.lock().expect("reader");
                let (r, done) = &mut *guard;
                let mut n = 0;
                let mut line = Vec::new();
                while n < *batch && !*done {
                    line.clear();
                    if r.read_until(b'\n', &mut line)? == 0 {
                        *done = true;
                        break;
                    }
                    if line.trim_ascii().is_empty() {
                        continue;
                    }
                    if *pairs {
                        // Replace the file's action line: documents go to the index loaded now.
                        line.clear();
                        if r.read_until(b'\n', &mut line)? == 0 {
                            bail!("the corpus file ends with an action line and no document");
                        }
                    }
                    buf.extend_from_slice(b"{\"index\":{}}\n");
                    buf.extend_from_slice(line.trim_ascii_end());
                    buf.push(b'\n');
                    n += 1;
                }
                Ok(n)
            }
        }
    }
}

/// Documents in a corpus file (bulk pairs or one document per line).
fn count_docs(path: &PathBuf) -> Result<u64> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let (mut lines, mut actions) = (0u64, 0u64);
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines += 1;
        if line.starts_with(b"{\"index\"") || line.starts_with(b"{\"create\"") {
            actions += 1;
        }
    }
    Ok(lines - actions)
}

fn open_file(path: &PathBuf, batch: u64) -> Result<(Source, u64)> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let first = r.fill_buf()?;
    let pairs = first.starts_with(b"{\"index\"") || first.starts_with(b"{\"create\"");
    Ok((
        Source::File {
            reader: Mutex::new((r, false)),
            batch,
            pairs,
        },
        size,
    ))
}

/// The `errors` flag of a bulk response, read without building its items: a response to 5,000
/// documents is a megabyte of JSON, and turning every item into a `Value` cost the load
/// generator more CPU than it spent sending the documents (CPU the engine under test shares).
fn bulk_has_errors(body: &[u8]) -> Result<bool> {
    #[derive(serde::Deserialize)]
    struct Flag {
        errors: bool,
    }
    let flag: Flag = serde_json::from_slice(body).context("bulk response")?;
    Ok(flag.errors)
}

/// Checks a bulk response; returns the positions (within the batch) of items to retry.
fn bulk_failures(resp: &Value) -> Result<Vec<usize>> {
    if resp["errors"].as_bool() != Some(true) {
        return Ok(Vec::new());
    }
    let mut retry = Vec::new();
    for (i, item) in resp["items"].as_array().into_iter().flatten().enumerate() {
        let r = item
            .as_object()
            .and_then(|o| o.values().next())
            .unwrap_or(&Value::Null);
        let status = r["status"].as_u64().unwrap_or(0);
        if status == 429 {
            retry.push(i);
        } else if status >= 300 || !r["error"].is_null() {
            let e = &r["error"];
            bail!(
                "the target rejected a document (HTTP {status}): {}: {}",
                e["type"].as_str().unwrap_or("error"),
                e["reason"].as_str().unwrap_or(&e.to_string())
            );
        }
    }
    Ok(retry)
}

/// Keeps only the documents at `positions` of a framed batch.
fn select_docs(batch: &[u8], positions: &[usize]) -> Vec<u8> {
    let lines: Vec<&[u8]> = batch.split(|&c| c == b'\n').collect();
    let mut out = Vec::new();
    for &p in positions {
        for l in &lines[2 * p..2 * p + 2] {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

fn post_bulk(client: &Client, path: &str, mut body: Vec<u8>, stop: &AtomicBool) -> Result<()> {
    let mut delay = Duration::from_millis(200);
    for attempt in 0.. {
        let resp = client.request("POST", path, Some((&body, "application/x-ndjson")))?;
        let retry = if resp.status == 429 {
            None
        } else if !resp.is_success() {
            bail!(
                "bulk request refused by {}: {}",
                client.base(),
                resp.error_summary()
            );
        } else {
            if !bulk_has_errors(&resp.body)? {
                return Ok(());
            }
            let v = resp.json().context("bulk response")?;
            let r = bulk_failures(&v)?;
            if r.is_empty() {
                return Ok(());
            }
            Some(r)
        };
        if attempt >= 10 || stop.load(Ordering::Relaxed) {
            bail!("the target kept rejecting bulk requests (HTTP 429) after {attempt} retries");
        }
        if let Some(positions) = retry {
            body = select_docs(&body, &positions);
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_secs(5));
    }
    unreachable!()
}

fn human(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// Renders the progress bar.
pub fn progress_line(done: u64, total: u64, elapsed: f64) -> String {
    let frac = if total > 0 {
        (done as f64 / total as f64).min(1.0)
    } else {
        0.0
    };
    let width = 30;
    let filled = (frac * width as f64).round() as usize;
    let rate = done as f64 / elapsed.max(1e-3);
    let eta = if rate > 0.0 && total > done {
        (total - done) as f64 / rate
    } else {
        0.0
    };
    format!(
        "[{}{}] {:5.1}%  {}/{} docs  {} docs/s  eta {:.0}s",
        "#".repeat(filled),
        ".".repeat(width - filled),
        frac * 100.0,
        done,
        total,
        human(rate),
        eta
    )
}

/// Creates `index` and loads the corpus; `stop` (Ctrl-C) ends the load early with an error.
pub fn load(
    client: &Client,
    w: &Workload,
    index: &str,
    opts: &LoadOptions,
    stop: &Arc<AtomicBool>,
) -> Result<LoadReport> {
    if opts.clients == 0 || opts.batch_size == 0 {
        bail!("--clients and --batch-size must be at least 1");
    }
    let mut opts = opts.clone();
    let (source, total, file_size) = match &opts.input {
        Some(p) => {
            opts.docs = count_docs(p)?;
            let (s, size) = open_file(p, opts.batch_size)?;
            (s, Some(opts.docs), Some(size))
        }
        None => (
            Source::Generator {
                gen: w.generator(opts.seed, opts.docs),
                next: AtomicU64::new(0),
                docs: opts.docs,
                batch: opts.batch_size,
            },
            Some(opts.docs),
            None,
        ),
    };
    let opts = &opts;
    create_index(client, w, index, opts)?;
    let path = format!("/{index}/_bulk");
    let done = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let failed: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let failed_flag = AtomicBool::new(false);
    let running = AtomicUsize::new(opts.clients);
    let start = Instant::now();
    let tty = std::io::stderr().is_terminal();
    std::thread::scope(|s| {
        for _ in 0..opts.clients {
            s.spawn(|| {
                let _finished = Finished(&running);
                let c = client.fresh();
                let mut buf = Vec::with_capacity(opts.batch_size as usize * 400);
                loop {
                    if stop.load(Ordering::Relaxed) || failed_flag.load(Ordering::Relaxed) {
                        return;
                    }
                    let r = source.next_batch(&mut buf).and_then(|n| {
                        if n > 0 {
                            let len = buf.len() as u64;
                            post_bulk(&c, &path, std::mem::take(&mut buf), stop)?;
                            bytes.fetch_add(len, Ordering::Relaxed);
                            done.fetch_add(n, Ordering::Relaxed);
                        }
                        Ok(n)
                    });
                    match r {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e) => {
                            failed.lock().expect("failed").get_or_insert(e);
                            failed_flag.store(true, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            });
        }
        // Progress, on this thread.
        let mut last_line = Instant::now();
        let mut finished = false;
        while !finished {
            std::thread::sleep(Duration::from_millis(100));
            finished = running.load(Ordering::Relaxed) == 0;
            let every = if tty {
                Duration::from_millis(250)
            } else {
                Duration::from_secs(5)
            };
            if last_line.elapsed() >= every || finished {
                last_line = Instant::now();
                let d = done.load(Ordering::Relaxed);
                let line = match (total, file_size) {
                    (Some(t), _) => progress_line(d, t, start.elapsed().as_secs_f64()),
                    (None, Some(size)) => {
                        let est = if bytes.load(Ordering::Relaxed) > 0 {
                            (d as f64 * size as f64 / bytes.load(Ordering::Relaxed) as f64) as u64
                        } else {
                            0
                        };
                        progress_line(d, est.max(d), start.elapsed().as_secs_f64())
                    }
                    _ => String::new(),
                };
                if tty {
                    eprint!("\r{line}   ");
                } else {
                    eprintln!("{line}");
                }
            }
        }
    });
    if tty {
        eprintln!();
    }
    if let Some(e) = failed.lock().expect("failed").take() {
        return Err(e.context(format!("load {} into {index} on {}", w.name, client.base())));
    }
    if stop.load(Ordering::Relaxed) {
        bail!(
            "interrupted: {index} on {} holds only part of the corpus",
            client.base()
        );
    }
    let seconds = start.elapsed().as_secs_f64();
    let docs = done.load(Ordering::Relaxed);
    client
        .json("POST", &format!("/{index}/_refresh"), None)
        .context("refresh after loading")?;
    let searchable_seconds = start.elapsed().as_secs_f64();

    let mut force_merge_seconds = None;
    if let Some(n) = opts.force_merge {
        eprintln!("force-merging {index} to {n} segment(s)…");
        let t = Instant::now();
        client
            .with_timeout(opts.force_merge_timeout)
            .json(
                "POST",
                &format!("/{index}/_forcemerge?max_num_segments={n}"),
                None,
            )
            .context("force merge")?;
        client
            .json("POST", &format!("/{index}/_refresh"), None)
            .context("refresh after merging")?;
        force_merge_seconds = Some(t.elapsed().as_secs_f64());
    }
    let corpus = corpus_info(client, index)?.unwrap_or_default();
    if corpus.docs.is_some_and(|c| c != docs) {
        bail!(
            "{index} on {} counts {} documents after loading {docs}",
            client.base(),
            corpus.docs.unwrap_or(0)
        );
    }
    let _ = std::io::stderr().flush();
    Ok(LoadReport {
        docs,
        bytes: bytes.load(Ordering::Relaxed),
        seconds,
        docs_per_s: docs as f64 / seconds.max(1e-9),
        searchable_seconds,
        searchable_docs_per_s: docs as f64 / searchable_seconds.max(1e-9),
        force_merge_seconds,
        corpus,
    })
}

/// Counts a client thread as finished when dropped (also on panic).
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload;

    fn opts() -> LoadOptions {
        LoadOptions {
            docs: 10,
            seed: 3,
            record_seed: true,
            clients: 1,
            batch_size: 5,
            replicas: Some(0),
            shards: Some(2),
            settings: vec![
                ("index.merge.enabled".into(), "false".into()),
                ("refresh_interval".into(), "30s".into()),
            ],
            force_merge: None,
            force_merge_timeout: Duration::from_secs(1),
            recreate: false,
            input: None,
        }
    }

    #[test]
    fn index_body_overrides_and_meta() {
        let w = workload::get("big5").unwrap();
        let b = index_body(&w, &opts());
        assert_eq!(b["settings"]["index.number_of_replicas"], 0);
        assert_eq!(b["settings"]["index.number_of_shards"], 2);
        assert_eq!(b["settings"]["index.merge.enabled"], false);
        assert_eq!(b["settings"]["index.refresh_interval"], "30s");
        assert_eq!(b["mappings"]["_meta"]["tessera_bench"]["seed"], 3);
        assert_eq!(b["mappings"]["_meta"]["tessera_bench"]["workload"], "big5");
        assert!(b["mappings"]["properties"]["message"].is_object());
    }

    #[test]
    fn the_errors_flag_is_read_without_the_items() {
        let ok = br#"{"took":3,"errors":false,"items":[{"index":{"status":201}}]}"#;
        assert!(!bulk_has_errors(ok).unwrap());
        let failed = br#"{"took":3,"items":[{"index":{"status":429}}],"errors":true}"#;
        assert!(bulk_has_errors(failed).unwrap());
        assert!(bulk_has_errors(br#"{"took":3}"#).is_err());
        assert!(bulk_has_errors(b"<html>").is_err());
    }

    #[test]
    fn bulk_failures_are_classified() {
        let ok = json!({"errors": false, "items": []});
        assert!(bulk_failures(&ok).unwrap().is_empty());
        let busy = json!({"errors": true, "items": [
            {"index": {"status": 201}}, {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}}
        ]});
        assert_eq!(bulk_failures(&busy).unwrap(), vec![1]);
        let bad = json!({"errors": true, "items": [
            {"index": {"status": 400, "error": {"type": "strict_dynamic_mapping_exception", "reason": "mapping set to strict"}}}
        ]});
        let e = bulk_failures(&bad).unwrap_err().to_string();
        assert!(
            e.contains("strict_dynamic_mapping_exception: mapping set to strict"),
            "{e}"
        );
        let batch = b"{\"index\":{}}\n{\"a\":1}\n{\"index\":{}}\n{\"a\":2}\n";
        assert_eq!(select_docs(batch, &[1]), b"{\"index\":{}}\n{\"a\":2}\n");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.ndjson");
        std::fs::write(&f, batch).unwrap();
        assert_eq!(count_docs(&f).unwrap(), 2);
        std::fs::write(&f, b"{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n").unwrap();
        assert_eq!(count_docs(&f).unwrap(), 3);
    }

    #[test]
    fn progress_bar() {
        let l = progress_line(50, 100, 2.0);
        assert!(
            l.starts_with("[###############...............]  50.0%"),
            "{l}"
        );
        assert!(l.contains("25 docs/s") && l.contains("eta 2s"), "{l}");
    }
}
