//! Runs operations against a target: N clients on their own threads and connections, warm-up
//! then measured iterations, closed loop (each client sends its next request when the previous
//! answered, OpenSearch Benchmark's "benchmarking mode") or at a target throughput (requests are
//! scheduled; latency counts from the scheduled time, so a slow target cannot hide its queueing).
//!
//! Latency = intended start → response; service time = send → response; both go into HDR
//! histograms per client and are merged. Errors: a target that cannot be reached stops the run at
//! once; refused requests (HTTP errors, shard failures, timed out searches) stop it too unless
//! `--on-error continue`, which counts them in the error rate. Ctrl-C stops the clients after
//! their current request; the main thread waits at most a couple of seconds for them, so a slow
//! request never holds the partial report back.

use crate::client::{Client, Response};
use crate::metrics::{self, Percentiles};
use crate::results::{Cell, OpResult};
use crate::system::{self, LoadgenClock, Sampler};
use crate::timefmt;
use crate::workload::Operation;
use anyhow::Result;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to do when the target refuses a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnError {
    /// Stop and report the refusal (the default: a benchmark of failing requests means nothing).
    Abort,
    /// Count refused requests in the error rate and go on.
    Continue,
}

impl OnError {
    pub fn name(self) -> &'static str {
        match self {
            OnError::Abort => "abort",
            OnError::Continue => "continue",
        }
    }
}

/// An operation with its schedule for this run.
#[derive(Clone, Debug)]
pub struct OpPlan {
    pub op: Operation,
    /// Per client.
    pub warmup: u32,
    /// Per client.
    pub iterations: u32,
    /// Total ops/s across clients; `None` = closed loop.
    pub target_throughput: Option<f64>,
}

/// One request as it happened (seconds from the cell's start).
#[derive(Clone, Debug)]
pub struct RawSample {
    pub op: String,
    pub client: usize,
    pub iteration: u32,
    pub measured: bool,
    pub intended_s: f64,
    pub send_s: f64,
    pub done_s: f64,
    /// HTTP status; 0 when no response came back.
    pub status: u16,
    pub ok: bool,
}

/// Everything one cell needs.
pub struct CellSpec<'a> {
    pub target_label: &'a str,
    pub client: &'a Client,
    pub index: &'a str,
    pub setting: &'a str,
    pub cluster_settings: Value,
    pub clients: usize,
    pub plans: &'a [OpPlan],
    pub sample_interval: Duration,
    pub on_error: OnError,
    pub processors: Option<u64>,
}

pub struct CellOutcome {
    pub cell: Cell,
    pub raw: Vec<RawSample>,
    /// Why the cell stopped early (refused request, unreachable target).
    pub abort: Option<String>,
}

/// Runs every planned operation with `spec.clients` clients, sampling system metrics throughout.
pub fn run_cell(spec: &CellSpec<'_>, stop: &Arc<AtomicBool>) -> CellOutcome {
    let mut run = CellRun::start(spec);
    for plan in spec.plans {
        if stop.load(Ordering::Relaxed) || !run.run(plan, stop) {
            break;
        }
    }
    run.finish(stop)
}

/// A cell in progress: its sampler and clocks run from [`CellRun::start`] to
/// [`CellRun::finish`], and operations are run one at a time, so that the cells of several
/// targets can take turns operation by operation (`--interleave`).
pub struct CellRun<'a> {
    spec: &'a CellSpec<'a>,
    origin: Instant,
    started_at: i64,
    sampler: Sampler,
    clock: LoadgenClock,
    operations: Vec<OpResult>,
    raw: Vec<RawSample>,
    abort: Option<String>,
}

impl<'a> CellRun<'a> {
    pub fn start(spec: &'a CellSpec<'a>) -> CellRun<'a> {
        let origin = Instant::now();
        CellRun {
            spec,
            origin,
            started_at: timefmt::now_millis(),
            sampler: Sampler::start(spec.client, spec.sample_interval, origin),
            clock: LoadgenClock::start(),
            operations: Vec::new(),
            raw: Vec::new(),
            abort: None,
        }
    }

    /// Runs one operation; false when the cell must stop (a refused request, an unreachable
    /// target: see [`CellOutcome::abort`]).
    pub fn run(&mut self, plan: &OpPlan, stop: &Arc<AtomicBool>) -> bool {
        let spec = self.spec;
        let mut out = run_operation(spec, plan, self.origin, stop);
        let snapshot = self.sampler.snapshot();
        out.result.system = system::summarize(
            &snapshot,
            out.result.started_s,
            out.result.started_s + out.result.measured_s + spec.sample_interval.as_secs_f64(),
            spec.processors,
        );
        eprintln!("    {}", op_line(&out.result));
        self.operations.push(out.result);
        self.raw.extend(out.raw);
        self.abort = out.abort;
        self.abort.is_none()
    }

    /// Stops the sampler and makes the cell.
    pub fn finish(self, stop: &Arc<AtomicBool>) -> CellOutcome {
        let spec = self.spec;
        let (samples, sampler_error) = self.sampler.stop();
        let end = self.origin.elapsed().as_secs_f64();
        let mut system = system::summarize(&samples, 0.0, end, spec.processors);
        system.error = sampler_error;
        let loadgen = self.clock.finish(system.target_cpu_seconds);
        let cell = Cell {
            target: spec.target_label.to_string(),
            setting: spec.setting.to_string(),
            cluster_settings: spec.cluster_settings.clone(),
            clients: spec.clients,
            started_at: timefmt::rfc3339_millis(self.started_at),
            finished_at: timefmt::rfc3339_millis(timefmt::now_millis()),
            duration_s: end,
            interrupted: stop.load(Ordering::Relaxed),
            operations: self.operations,
            system,
            loadgen,
        };
        CellOutcome {
            cell,
            raw: self.raw,
            abort: self.abort,
        }
    }
}

/// One line about a finished operation, for the console.
pub fn op_line(r: &OpResult) -> String {
    let ms = |p: &Option<Percentiles>, f: fn(&Percentiles) -> f64| {
        p.as_ref()
            .map_or("-".to_string(), |p| format!("{:.1}", f(p)))
    };
    format!(
        "{:<36} p50 {:>9} ms  p90 {:>9} ms  p99 {:>9} ms  {:>8} ops/s  errors {}/{}",
        r.name,
        ms(&r.latency, |p| p.p50_ms),
        ms(&r.latency, |p| p.p90_ms),
        ms(&r.latency, |p| p.p99_ms),
        r.throughput
            .as_ref()
            .map_or("-".into(), |t| format!("{:.2}", t.median)),
        r.errors,
        r.requests,
    )
}

struct ClientLog {
    latency: Histogram<u64>,
    service: Histogram<u64>,
    took: Histogram<u64>,
    done: Vec<f64>,
    measured_from: Option<f64>,
    requests: u64,
    errors: u64,
    first_error: Option<String>,
    response: Option<Value>,
    raw: Vec<RawSample>,
}

impl ClientLog {
    fn new() -> ClientLog {
        ClientLog {
            latency: metrics::histogram(),
            service: metrics::histogram(),
            took: metrics::histogram(),
            done: Vec::new(),
            measured_from: None,
            requests: 0,
            errors: 0,
            first_error: None,
            response: None,
            raw: Vec::new(),
        }
    }
}

/// The failure of one request.
enum Failure {
    /// No HTTP response (refused connection, timeout): the run cannot go on.
    Transport(String),
    /// The target answered with an error or a partial failure.
    Refused(String),
}

#[derive(Deserialize)]
struct Shards {
    #[serde(default)]
    failed: u64,
    #[serde(default)]
    total: u64,
}

#[derive(Deserialize)]
struct Minimal {
    took: Option<u64>,
    #[serde(default)]
    timed_out: bool,
    _shards: Option<Shards>,
}

/// Checks a search response; returns the engine's `took`.
fn check(resp: &Response) -> Result<Option<u64>, Failure> {
    if !resp.is_success() {
        return Err(Failure::Refused(resp.error_summary()));
    }
    let m: Minimal = serde_json::from_slice(&resp.body)
        .map_err(|e| Failure::Refused(format!("response is not a search response: {e}")))?;
    if let Some(s) = &m._shards {
        if s.failed > 0 {
            let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
            let f = &v["_shards"]["failures"][0]["reason"];
            let why = match (f["type"].as_str(), f["reason"].as_str()) {
                (Some(t), Some(r)) => format!(": {t}: {r}"),
                _ => String::new(),
            };
            return Err(Failure::Refused(format!(
                "{} of {} shards failed{why}",
                s.failed, s.total
            )));
        }
    }
    if m.timed_out {
        return Err(Failure::Refused("the search timed out".into()));
    }
    Ok(m.took)
}

/// What a search response said, briefly: hit count and, per aggregation, bucket count and the
/// sum of bucket doc counts (or the metric values).
pub fn summarize_response(v: &Value) -> Value {
    let mut out = Map::new();
    let total = &v["hits"]["total"];
    if let Some(n) = total["value"].as_u64().or(total.as_u64()) {
        out.insert("hits_total".into(), json!(n));
        if let Some(r) = total["relation"].as_str() {
            out.insert("hits_relation".into(), json!(r));
        }
    }
    if let Some(h) = v["hits"]["hits"].as_array() {
        out.insert("hits_returned".into(), json!(h.len()));
        if let Some(sort) = h.first().and_then(|d| d.get("sort")) {
            out.insert("first_sort".into(), sort.clone());
        }
    }
    if let Some(aggs) = v["aggregations"].as_object() {
        let mut a = Map::new();
        for (name, agg) in aggs {
            a.insert(name.clone(), summarize_agg(agg));
        }
        out.insert("aggregations".into(), Value::Object(a));
    }
    Value::Object(out)
}

fn summarize_agg(agg: &Value) -> Value {
    let buckets: Option<Vec<&Value>> = match &agg["buckets"] {
        Value::Array(b) => Some(b.iter().collect()),
        Value::Object(b) => Some(b.values().collect()),
        _ => None,
    };
    match buckets {
        Some(b) => {
            let docs: u64 = b.iter().filter_map(|x| x["doc_count"].as_u64()).sum();
            let key = |x: Option<&&Value>| {
                x.map(|x| {
                    x.get("key_as_string")
                        .or(x.get("key"))
                        .cloned()
                        .unwrap_or(Value::Null)
                })
            };
            let mut m = Map::new();
            m.insert("buckets".into(), json!(b.len()));
            m.insert("doc_count".into(), json!(docs));
            if let Some(k) = key(b.first()) {
                m.insert("first_key".into(), k);
                m.insert("last_key".into(), key(b.last()).unwrap_or(Value::Null));
            }
            if let Some(i) = agg.get("interval") {
                m.insert("interval".into(), i.clone());
            }
            Value::Object(m)
        }
        None => {
            // A metric: keep its numbers.
            let mut m = Map::new();
            if let Some(o) = agg.as_object() {
                for (k, v) in o {
                    if v.is_number() {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(m)
        }
    }
}

fn sleep_until(deadline: Instant, stop: &AtomicBool, abort: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

struct OpOutcome {
    result: OpResult,
    raw: Vec<RawSample>,
    abort: Option<String>,
}

fn run_operation(
    spec: &CellSpec<'_>,
    plan: &OpPlan,
    origin: Instant,
    stop: &Arc<AtomicBool>,
) -> OpOutcome {
    let clients = spec.clients.max(1);
    let op_start = Instant::now();
    let body: Arc<[u8]> = Arc::from(plan.op.body.as_bytes());
    let path: Arc<str> = Arc::from(format!("/{}/_search", spec.index));
    let abort_flag = Arc::new(AtomicBool::new(false));
    let abort_msg: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let completed = Arc::new(AtomicU64::new(0));
    let total = u64::from(plan.warmup + plan.iterations) * clients as u64;
    let logs: Vec<Arc<Mutex<ClientLog>>> = (0..clients)
        .map(|_| Arc::new(Mutex::new(ClientLog::new())))
        .collect();

    let handles: Vec<_> = (0..clients)
        .map(|k| {
            let client = spec.client.fresh();
            let (body, path, log) = (body.clone(), path.clone(), logs[k].clone());
            let (stop, abort_flag, abort_msg) =
                (stop.clone(), abort_flag.clone(), abort_msg.clone());
            let completed = completed.clone();
            let (warmup, iterations, rate) = (plan.warmup, plan.iterations, plan.target_throughput);
            let on_error = spec.on_error;
            let op_name = plan.op.name.to_string();
            let target = spec.target_label.to_string();
            std::thread::Builder::new()
                .name(format!("bench-client-{k}"))
                .spawn(move || {
                    for i in 0..warmup + iterations {
                        if stop.load(Ordering::Relaxed) || abort_flag.load(Ordering::Relaxed) {
                            break;
                        }
                        let intended = rate.filter(|r| *r > 0.0).map(|r| {
                            let at = (k as f64 + i as f64 * clients as f64) / r;
                            op_start + Duration::from_secs_f64(at)
                        });
                        if let Some(t) = intended {
                            sleep_until(t, &stop, &abort_flag);
                            if stop.load(Ordering::Relaxed) || abort_flag.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        let send = Instant::now();
                        let intended = intended.unwrap_or(send).min(send);
                        let resp = client.request("POST", &path, Some((&body, "application/json")));
                        let done = Instant::now();
                        let outcome = match &resp {
                            Ok(r) => check(r),
                            Err(e) => Err(Failure::Transport(format!("{e:#}"))),
                        };
                        let measured = i >= warmup;
                        let s = |t: Instant| t.duration_since(origin).as_secs_f64();
                        let mut log = log.lock().expect("client log");
                        log.raw.push(RawSample {
                            op: op_name.clone(),
                            client: k,
                            iteration: i,
                            measured,
                            intended_s: s(intended),
                            send_s: s(send),
                            done_s: s(done),
                            status: resp.as_ref().map_or(0, |r| r.status),
                            ok: outcome.is_ok(),
                        });
                        match outcome {
                            Ok(took) => {
                                if k == 0 && log.response.is_none() {
                                    if let Ok(v) = resp.as_ref().expect("response").json() {
                                        log.response = Some(summarize_response(&v));
                                    }
                                }
                                if measured {
                                    log.requests += 1;
                                    metrics::record(&mut log.latency, done - intended);
                                    metrics::record(&mut log.service, done - send);
                                    if let Some(t) = took {
                                        metrics::record(&mut log.took, Duration::from_millis(t));
                                    }
                                    log.done.push(s(done));
                                    let from = log
                                        .measured_from
                                        .map_or(s(intended), |f: f64| f.min(s(intended)));
                                    log.measured_from = Some(from);
                                }
                            }
                            Err(f) => {
                                let (fatal, msg) = match f {
                                    Failure::Transport(m) => (true, m),
                                    Failure::Refused(m) => (on_error == OnError::Abort, m),
                                };
                                let msg = format!("{op_name} on {target}: {msg}");
                                if measured {
                                    log.requests += 1;
                                    log.errors += 1;
                                }
                                if log.first_error.is_none() {
                                    log.first_error = Some(msg.clone());
                                }
                                if fatal {
                                    abort_msg.lock().expect("abort").get_or_insert(msg);
                                    abort_flag.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                        drop(log);
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .expect("spawn client thread")
        })
        .collect();

    // Wait for the clients; on Ctrl-C or abort give them a short grace period only.
    let tty = std::io::stderr().is_terminal();
    let mut last_progress = Instant::now();
    let mut grace: Option<Instant> = None;
    loop {
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
        if grace.is_none() && (stop.load(Ordering::Relaxed) || abort_flag.load(Ordering::Relaxed)) {
            grace = Some(Instant::now() + Duration::from_secs(2));
        }
        if grace.is_some_and(|g| Instant::now() >= g) {
            break;
        }
        if tty && last_progress.elapsed() >= Duration::from_millis(500) {
            last_progress = Instant::now();
            eprint!(
                "\r    {:<36} {}/{} requests ({:.0} s)   ",
                plan.op.name,
                completed.load(Ordering::Relaxed),
                total,
                op_start.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if tty {
        eprint!("\r{:80}\r", "");
    }
    for h in handles {
        if h.is_finished() {
            let _ = h.join();
        }
    }

    // Merge the clients' logs.
    let mut latency = metrics::histogram();
    let mut service = metrics::histogram();
    let mut took = metrics::histogram();
    let mut done = Vec::new();
    let mut from: Option<f64> = None;
    let (mut requests, mut errors) = (0, 0);
    let mut first_error = None;
    let mut response = None;
    let mut raw = Vec::new();
    for log in &logs {
        let mut l = log.lock().expect("client log");
        latency.add(&l.latency).expect("same bounds");
        service.add(&l.service).expect("same bounds");
        took.add(&l.took).expect("same bounds");
        done.extend_from_slice(&l.done);
        from = match (from, l.measured_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        requests += l.requests;
        errors += l.errors;
        if first_error.is_none() {
            first_error = l.first_error.clone();
        }
        if response.is_none() {
            response = l.response.take();
        }
        raw.append(&mut l.raw);
    }
    let started_s = op_start.duration_since(origin).as_secs_f64();
    let measured_from = from.unwrap_or(started_s);
    let end = done.iter().copied().fold(measured_from, f64::max);
    let abort = abort_msg.lock().expect("abort").clone();
    let result = OpResult {
        name: plan.op.name.to_string(),
        clients,
        warmup_iterations: plan.warmup,
        iterations: plan.iterations,
        schedule: if plan.target_throughput.is_some() {
            "target-throughput"
        } else {
            "closed-loop"
        }
        .into(),
        target_throughput: plan.target_throughput,
        started_s: measured_from,
        measured_s: end - measured_from,
        requests,
        errors,
        error_rate: if requests > 0 {
            errors as f64 / requests as f64
        } else {
            0.0
        },
        first_error,
        latency: Percentiles::of(&latency),
        service_time: Percentiles::of(&service),
        took: Percentiles::of(&took),
        throughput: metrics::throughput(measured_from, &done, 1.0),
        system: Default::default(),
        response: response.unwrap_or(Value::Null),
        latency_histogram_us: metrics::buckets(&latency),
    };
    OpOutcome { result, raw, abort }
}

/// Writes raw samples as CSV.
pub fn write_raw_csv(path: &std::path::Path, raw: &[RawSample]) -> Result<()> {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "operation,client,iteration,measured,intended_s,send_s,done_s,latency_ms,service_ms,status,ok")?;
    for s in raw {
        writeln!(
            f,
            "{},{},{},{},{:.6},{:.6},{:.6},{:.3},{:.3},{},{}",
            s.op,
            s.client,
            s.iteration,
            s.measured,
            s.intended_s,
            s.send_s,
            s.done_s,
            (s.done_s - s.intended_s) * 1000.0,
            (s.done_s - s.send_s) * 1000.0,
            s.status,
            s.ok
        )?;
    }
    f.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_responses_are_checked() {
        let ok = Response {
            status: 200,
            body: br#"{"took":7,"timed_out":false,"_shards":{"total":1,"failed":0},"hits":{}}"#
                .to_vec(),
        };
        assert_eq!(check(&ok).ok(), Some(Some(7)));
        let partial = Response {
            status: 200,
            body: br#"{"took":7,"timed_out":false,"_shards":{"total":2,"failed":1,"failures":[{"reason":{"type":"x_exception","reason":"boom"}}]}}"#.to_vec(),
        };
        match check(&partial) {
            Err(Failure::Refused(m)) => assert_eq!(m, "1 of 2 shards failed: x_exception: boom"),
            _ => panic!("partial failure not detected"),
        }
        let refused = Response {
            status: 400,
            body: br#"{"error":{"type":"parsing_exception","reason":"bad"}}"#.to_vec(),
        };
        assert!(
            matches!(check(&refused), Err(Failure::Refused(m)) if m.starts_with("HTTP 400 parsing_exception"))
        );
        let timed_out = Response {
            status: 200,
            body: br#"{"timed_out":true}"#.to_vec(),
        };
        assert!(matches!(check(&timed_out), Err(Failure::Refused(_))));
    }

    #[test]
    fn responses_are_summarised() {
        let v = json!({
            "hits": {"total": {"value": 10000, "relation": "gte"}, "hits": [{"sort": [1]}, {}]},
            "aggregations": {
                "h": {"buckets": [{"key": 0.0, "doc_count": 3}, {"key": 1.0, "doc_count": 4}], "interval": "1d"},
                "r": {"buckets": {"a": {"doc_count": 1}}},
                "avg": {"value": 1.5}
            }
        });
        let s = summarize_response(&v);
        assert_eq!(s["hits_total"], 10000);
        assert_eq!(s["hits_relation"], "gte");
        assert_eq!(s["hits_returned"], 2);
        assert_eq!(s["first_sort"], json!([1]));
        assert_eq!(s["aggregations"]["h"]["buckets"], 2);
        assert_eq!(s["aggregations"]["h"]["doc_count"], 7);
        assert_eq!(s["aggregations"]["h"]["last_key"], 1.0);
        assert_eq!(s["aggregations"]["h"]["interval"], "1d");
        assert_eq!(s["aggregations"]["r"]["buckets"], 1);
        assert_eq!(s["aggregations"]["avg"]["value"], 1.5);
    }
}
