//! System metrics of the target, sampled from `_nodes/stats` on a background thread while
//! operations run (CPU, memory, `index_searcher` activity), and the load generator's own CPU
//! time from `/proc/self/stat`.
//!
//! Why sampled: OpenSearch exposes CPU and thread-pool activity only as point-in-time values, so
//! the p90 CPU and "max active index_searcher threads" of the reference posts come from a series
//! of samples; Tessera exposes the same fields. Only what the target offers is recorded: memory is
//! `process.mem.resident_in_bytes` when present, else the JVM's heap + non-heap, and the source is
//! named in the results. The load generator measures its own CPU so a report can show that it was
//! not the bottleneck.

use crate::client::Client;
use crate::metrics::quantile;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One `_nodes/stats` sample, aggregated over the nodes (CPU: mean; memory, threads: sum).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the run's origin.
    pub t: f64,
    /// `process.timestamp` (ms): OpenSearch refreshes process stats about once a second, so
    /// samples with the same timestamp repeat one CPU reading.
    pub process_ts: Option<f64>,
    pub cpu_pct: Option<f64>,
    pub cpu_total_ms: Option<f64>,
    pub os_cpu_pct: Option<f64>,
    pub resident_bytes: Option<f64>,
    pub heap_used_bytes: Option<f64>,
    pub non_heap_used_bytes: Option<f64>,
    pub heap_used_pct: Option<f64>,
    pub searcher_active: Option<f64>,
    pub searcher_queue: Option<f64>,
    pub search_active: Option<f64>,
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_f64()
}

/// Parses a `_nodes/stats` response.
pub fn parse_sample(t: f64, stats: &Value) -> Option<Sample> {
    let nodes = stats.get("nodes")?.as_object()?;
    if nodes.is_empty() {
        return None;
    }
    let collect =
        |path: &[&str]| -> Vec<f64> { nodes.values().filter_map(|n| num(n, path)).collect() };
    let mean = |path: &[&str]| {
        let v = collect(path);
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let sum = |path: &[&str]| {
        let v = collect(path);
        (!v.is_empty()).then(|| v.iter().sum::<f64>())
    };
    let max = |path: &[&str]| collect(path).into_iter().reduce(f64::max);
    Some(Sample {
        t,
        process_ts: max(&["process", "timestamp"]),
        cpu_pct: mean(&["process", "cpu", "percent"]),
        cpu_total_ms: sum(&["process", "cpu", "total_in_millis"]),
        os_cpu_pct: mean(&["os", "cpu", "percent"]),
        resident_bytes: sum(&["process", "mem", "resident_in_bytes"]),
        heap_used_bytes: sum(&["jvm", "mem", "heap_used_in_bytes"]),
        non_heap_used_bytes: sum(&["jvm", "mem", "non_heap_used_in_bytes"]),
        heap_used_pct: mean(&["jvm", "mem", "heap_used_percent"]),
        searcher_active: sum(&["thread_pool", "index_searcher", "active"]),
        searcher_queue: sum(&["thread_pool", "index_searcher", "queue"]),
        search_active: sum(&["thread_pool", "search", "active"]),
    })
}

/// Samples `_nodes/stats` every `interval` until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    error: Arc<Mutex<Option<String>>>,
    handle: Option<JoinHandle<()>>,
}

const STATS_PATHS: [&str; 2] = ["/_nodes/stats/process,jvm,os,thread_pool", "/_nodes/stats"];

impl Sampler {
    pub fn start(client: &Client, interval: Duration, origin: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let error = Arc::new(Mutex::new(None));
        let client = client.with_timeout(client.timeout().min(Duration::from_secs(10)));
        let (s, out, err) = (stop.clone(), samples.clone(), error.clone());
        let handle = std::thread::Builder::new()
            .name("bench-sampler".into())
            .spawn(move || {
                let mut path = 0;
                let mut failures = 0;
                while !s.load(Ordering::Relaxed) {
                    let next = Instant::now() + interval;
                    let t = origin.elapsed().as_secs_f64();
                    match client.request("GET", STATS_PATHS[path], None) {
                        Ok(r) if r.is_success() => {
                            failures = 0;
                            if let Some(sample) = r.json().ok().and_then(|v| parse_sample(t, &v)) {
                                out.lock().expect("samples").push(sample);
                            }
                        }
                        Ok(r) if path + 1 < STATS_PATHS.len() => {
                            // An engine without the metric filter: ask for everything.
                            let _ = r;
                            path += 1;
                            continue;
                        }
                        Ok(r) => {
                            *err.lock().expect("error") =
                                Some(format!("_nodes/stats refused: {}", r.error_summary()));
                            return;
                        }
                        Err(e) => {
                            failures += 1;
                            if failures >= 5 {
                                *err.lock().expect("error") = Some(format!("_nodes/stats: {e:#}"));
                                return;
                            }
                        }
                    }
                    while !s.load(Ordering::Relaxed) && Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(10).min(interval));
                    }
                }
            })
            .expect("spawn sampler thread");
        Sampler {
            stop,
            samples,
            error,
            handle: Some(handle),
        }
    }

    /// The samples so far.
    pub fn snapshot(&self) -> Vec<Sample> {
        self.samples.lock().expect("samples").clone()
    }

    /// Stops sampling (waiting at most a couple of seconds) and returns all samples and the
    /// error that stopped sampling early, if any.
    pub fn stop(mut self) -> (Vec<Sample>, Option<String>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let deadline = Instant::now() + Duration::from_secs(3);
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
        let err = self.error.lock().expect("error").clone();
        (self.snapshot(), err)
    }
}

/// System metrics over a time window, in the reference posts' terms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemMetrics {
    /// `_nodes/stats` samples in the window.
    pub samples: usize,
    /// Distinct `process.cpu.percent` readings among them (OpenSearch refreshes it once a second).
    #[serde(default)]
    pub cpu_readings: usize,
    /// p90 of `process.cpu.percent` (percent of the whole machine, as OpenSearch reports it).
    pub cpu_p90_pct: Option<f64>,
    pub cpu_max_pct: Option<f64>,
    /// From `process.cpu.total_in_millis` over the window, as percent of the machine.
    pub cpu_mean_pct: Option<f64>,
    /// CPU seconds the target spent in the window (`process.cpu.total_in_millis`).
    pub target_cpu_seconds: Option<f64>,
    /// p90 of `os.cpu.percent` (the whole host, load generator included when co-located).
    pub os_cpu_p90_pct: Option<f64>,
    pub memory_peak_bytes: Option<f64>,
    /// Which fields `memory_peak_bytes` comes from.
    pub memory_source: Option<String>,
    /// p90 of `jvm.mem.heap_used_percent` (the posts' "p90 JVM").
    pub heap_used_p90_pct: Option<f64>,
    pub index_searcher_active_max: Option<f64>,
    pub index_searcher_queue_max: Option<f64>,
    pub search_active_max: Option<f64>,
    /// Why sampling stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn max_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.flatten().reduce(f64::max)
}

/// Summarises the samples taken in `[from, to]` seconds; `processors` (the target's available
/// processors) turns CPU time into a share of the machine.
pub fn summarize(all: &[Sample], from: f64, to: f64, processors: Option<u64>) -> SystemMetrics {
    let w: Vec<&Sample> = all.iter().filter(|s| s.t >= from && s.t <= to).collect();
    // One CPU reading per process-stats refresh.
    let mut cpu = Vec::new();
    let mut last_ts = None;
    for s in &w {
        if let Some(c) = s.cpu_pct {
            if s.process_ts.is_none() || s.process_ts != last_ts {
                cpu.push(c);
            }
            last_ts = s.process_ts;
        }
    }
    let os_cpu: Vec<f64> = w.iter().filter_map(|s| s.os_cpu_pct).collect();
    let heap_pct: Vec<f64> = w.iter().filter_map(|s| s.heap_used_pct).collect();

    // CPU time between the first and last distinct process readings in the window.
    let timed: Vec<(f64, f64)> = w
        .iter()
        .filter_map(|s| Some((s.process_ts.unwrap_or(s.t * 1000.0), s.cpu_total_ms?)))
        .collect();
    let (target_cpu_seconds, cpu_mean_pct) = match (timed.first(), timed.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => {
            let cpu_s = (b.1 - a.1) / 1000.0;
            let wall_s = (b.0 - a.0) / 1000.0;
            (
                Some(cpu_s),
                processors.map(|p| cpu_s / wall_s / p as f64 * 100.0),
            )
        }
        _ => (None, None),
    };

    let resident = max_of(w.iter().map(|s| s.resident_bytes));
    let (memory_peak_bytes, memory_source) = if resident.is_some() {
        (resident, Some("process.mem.resident_in_bytes".to_string()))
    } else {
        let jvm = max_of(
            w.iter()
                .map(|s| match (s.heap_used_bytes, s.non_heap_used_bytes) {
                    (Some(h), Some(n)) => Some(h + n),
                    (h, n) => h.or(n),
                }),
        );
        let src =
            jvm.map(|_| "jvm.mem.heap_used_in_bytes + jvm.mem.non_heap_used_in_bytes".to_string());
        (jvm, src)
    };

    SystemMetrics {
        samples: w.len(),
        cpu_readings: cpu.len(),
        cpu_p90_pct: quantile(&cpu, 0.9),
        cpu_max_pct: cpu.iter().copied().reduce(f64::max),
        cpu_mean_pct,
        target_cpu_seconds,
        os_cpu_p90_pct: quantile(&os_cpu, 0.9),
        memory_peak_bytes,
        memory_source,
        heap_used_p90_pct: quantile(&heap_pct, 0.9),
        index_searcher_active_max: max_of(w.iter().map(|s| s.searcher_active)),
        index_searcher_queue_max: max_of(w.iter().map(|s| s.searcher_queue)),
        search_active_max: max_of(w.iter().map(|s| s.search_active)),
        error: None,
    }
}

/// CPU seconds (user + system, all threads) this process has used so far; `None` off Linux.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is fields[0]; utime is field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some((utime + stime) / ticks)
}

/// The load generator's own CPU use over a measured period.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenCpu {
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    /// CPU seconds per wall second × 100 (100% = one core busy).
    pub pct_of_one_core: f64,
    pub cores: usize,
    /// Share of the whole machine the load generator runs on.
    pub pct_of_machine: f64,
    /// Load generator CPU time relative to the target's, when the target reports it.
    pub pct_of_target_cpu: Option<f64>,
}

/// Measures the load generator's CPU between [`LoadgenClock::start`] and [`LoadgenClock::finish`].
pub struct LoadgenClock {
    cpu0: Option<f64>,
    t0: Instant,
}

impl LoadgenClock {
    pub fn start() -> LoadgenClock {
        LoadgenClock {
            cpu0: process_cpu_seconds(),
            t0: Instant::now(),
        }
    }

    pub fn finish(&self, target_cpu_seconds: Option<f64>) -> Option<LoadgenCpu> {
        let cpu = process_cpu_seconds()? - self.cpu0?;
        let wall = self.t0.elapsed().as_secs_f64().max(1e-9);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Some(LoadgenCpu {
            cpu_seconds: cpu,
            wall_seconds: wall,
            pct_of_one_core: cpu / wall * 100.0,
            cores,
            pct_of_machine: cpu / wall / cores as f64 * 100.0,
            pct_of_target_cpu: target_cpu_seconds
                .filter(|t| *t > 0.0)
                .map(|t| cpu / t * 100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stats(ts: f64, cpu: f64, total_ms: f64, active: f64) -> Value {
        json!({"nodes": {"n1": {
            "process": {"timestamp": ts, "cpu": {"percent": cpu, "total_in_millis": total_ms},
                         "mem": {"total_virtual_in_bytes": 1}},
            "jvm": {"mem": {"heap_used_in_bytes": 100, "non_heap_used_in_bytes": 20, "heap_used_percent": 40}},
            "os": {"cpu": {"percent": cpu + 5.0}},
            "thread_pool": {"index_searcher": {"active": active, "queue": 0}, "search": {"active": 1}}
        }}})
    }

    #[test]
    fn parses_and_summarises_opensearch_stats() {
        // Two readings per process refresh, like OpenSearch's 1 s cache.
        let samples: Vec<Sample> = (0..10)
            .map(|i| {
                let ts = 1000.0 * (i / 2) as f64;
                let cpu = (i / 2 * 10) as f64;
                parse_sample(
                    i as f64 * 0.5,
                    &stats(ts, cpu, 2000.0 * (i / 2) as f64, i as f64),
                )
                .unwrap()
            })
            .collect();
        let m = summarize(&samples, 0.0, 100.0, Some(4));
        assert_eq!(m.samples, 10);
        assert_eq!(m.cpu_readings, 5);
        // Distinct CPU readings 0,10,20,30,40 → p90 (nearest rank) = 40.
        assert_eq!(m.cpu_p90_pct, Some(40.0));
        assert_eq!(m.cpu_max_pct, Some(40.0));
        // 8 CPU-seconds over 4 s on 4 processors = 50%.
        assert_eq!(m.target_cpu_seconds, Some(8.0));
        assert_eq!(m.cpu_mean_pct, Some(50.0));
        assert_eq!(m.index_searcher_active_max, Some(9.0));
        assert_eq!(m.memory_peak_bytes, Some(120.0));
        assert!(m.memory_source.unwrap().starts_with("jvm.mem"));
        assert_eq!(m.heap_used_p90_pct, Some(40.0));
        let part = summarize(&samples, 1.0, 2.0, Some(4));
        assert_eq!(part.samples, 3);
        assert_eq!(summarize(&samples, 50.0, 60.0, None).cpu_p90_pct, None);
    }

    #[test]
    fn resident_memory_wins_when_offered() {
        let v = json!({"nodes": {"a": {"process": {"mem": {"resident_in_bytes": 5000}},
                                        "jvm": {"mem": {"heap_used_in_bytes": 1}}}}});
        let s = parse_sample(0.0, &v).unwrap();
        let m = summarize(&[s], 0.0, 1.0, None);
        assert_eq!(m.memory_peak_bytes, Some(5000.0));
        assert_eq!(
            m.memory_source.as_deref(),
            Some("process.mem.resident_in_bytes")
        );
        assert!(parse_sample(0.0, &json!({"nodes": {}})).is_none());
    }

    #[test]
    fn own_cpu_is_measured() {
        let clock = LoadgenClock::start();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        if let Some(c) = clock.finish(Some(1.0)) {
            // Other tests share the cores: only check that the busy loop was seen at all.
            assert!(c.cpu_seconds > 0.0, "{c:?}");
            assert!(c.pct_of_one_core < 100.0 * c.cores as f64 + 50.0, "{c:?}");
            assert!(c.pct_of_target_cpu.is_some());
        }
    }
}
