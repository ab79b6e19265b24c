//! The ARS benchmark's load: `C` closed-loop clients, each on its own connection, sending the
//! heavy query to the coordinating node as fast as it answers, through a warm-up and `L` laps of
//! a fixed duration, as the reference post's Rally clients did.
//!
//! The clients run without pause from the warm-up to the end of the last lap; a request belongs
//! to the lap in which it completed, so the laps are slices of one steady run (no ramp-up per
//! lap). A request is an error when no response came back, the status is not 2xx, or
//! `_shards.failed > 0` (a search that lost a shard is not a full answer). Latency is recorded
//! for every request, errors included, as Rally does. Callbacks at the measured period's start
//! and end let the caller snapshot the nodes' thread pools while the load is running.

use crate::client::Client;
use crate::metrics::{self, Percentiles, Throughput};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    pub clients: usize,
    pub warmup: Duration,
    pub laps: u32,
    pub lap: Duration,
    /// `POST <path>` with `body` (e.g. `/index/_search`).
    pub path: String,
    pub body: Vec<u8>,
}

/// One completed request.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Seconds from the start of the run (warm-up included) to the response.
    pub done: f64,
    pub latency: Duration,
    pub ok: bool,
}

/// One lap's (or a whole run's) figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Figures {
    pub requests: u64,
    pub errors: u64,
    pub error_rate_pct: f64,
    /// Completions per one-second window: min, median, max, mean.
    pub throughput: Option<Throughput>,
    pub latency: Option<Percentiles>,
}

/// The measured laps and their union.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Measured {
    pub laps: Vec<Figures>,
    pub total: Figures,
    /// The first error message seen, if any, to say what went wrong.
    pub first_error: Option<String>,
}

/// Whether a search response body reports failed shards.
pub fn shards_failed(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Shards {
        #[serde(default)]
        failed: u64,
    }
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "_shards")]
        shards: Option<Shards>,
    }
    match serde_json::from_slice::<Head>(body) {
        Ok(h) => h.shards.is_some_and(|s| s.failed > 0),
        Err(_) => true,
    }
}

/// The figures of the samples that completed in `[from, to)` seconds.
pub fn figures(samples: &[Sample], from: f64, to: f64) -> Figures {
    let mut h = metrics::histogram();
    let mut done = Vec::new();
    let mut errors = 0;
    for s in samples.iter().filter(|s| s.done >= from && s.done < to) {
        metrics::record(&mut h, s.latency);
        done.push(s.done);
        errors += u64::from(!s.ok);
    }
    let requests = done.len() as u64;
    Figures {
        requests,
        errors,
        error_rate_pct: if requests == 0 {
            0.0
        } else {
            errors as f64 * 100.0 / requests as f64
        },
        throughput: period_throughput(&done, from, to),
        latency: Percentiles::of(&h),
    }
}

/// Completions per one-second window of `[from, to)`; a period shorter than two windows gives
/// one sample, its overall rate.
fn period_throughput(done: &[f64], from: f64, to: f64) -> Option<Throughput> {
    if done.is_empty() {
        return None;
    }
    let mean = done.len() as f64 / (to - from).max(1e-6);
    // The end of the period bounds the last window (the marker is no completion).
    let mut marked = done.to_vec();
    marked.push(to);
    let mut t = metrics::throughput(from, &marked, 1.0)?;
    if to - from < 2.0 {
        (t.min, t.median, t.max) = (mean, mean, mean);
    }
    t.mean = mean;
    Some(t)
}

/// Splits the samples into laps after the warm-up; a run stopped at `until` seconds (Ctrl-C)
/// ends its last lap there, and laps not begun are left out.
pub fn measure(samples: &[Sample], plan: &Plan, until: f64) -> Measured {
    let start = plan.warmup.as_secs_f64();
    let lap = plan.lap.as_secs_f64();
    let end = (start + plan.laps as f64 * lap).min(until);
    let laps = (0..plan.laps)
        .map(|i| {
            (
                start + i as f64 * lap,
                (start + (i + 1) as f64 * lap).min(end),
            )
        })
        .take_while(|(from, to)| from < to)
        .map(|(from, to)| figures(samples, from, to))
        .collect();
    Measured {
        laps,
        total: figures(samples, start, end.max(start)),
        first_error: None,
    }
}

/// One client's loop until `stop` or `end`.
fn client_loop(
    client: &Client,
    plan: &Plan,
    origin: Instant,
    end: Instant,
    stop: &AtomicBool,
) -> (Vec<Sample>, Option<String>) {
    let mut samples = Vec::new();
    let mut first_error = None;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let r = client.request("POST", &plan.path, Some((&plan.body, "application/json")));
        let latency = t.elapsed();
        let ok = match &r {
            Ok(resp) if resp.is_success() && !shards_failed(&resp.body) => true,
            Ok(resp) if resp.is_success() => {
                first_error.get_or_insert_with(|| {
                    format!(
                        "shard failures: {}",
                        String::from_utf8_lossy(&resp.body[..resp.body.len().min(400)])
                    )
                });
                false
            }
            Ok(resp) => {
                first_error.get_or_insert_with(|| resp.error_summary());
                false
            }
            Err(e) => {
                first_error.get_or_insert_with(|| format!("{e:#}"));
                // A refused connection returns at once: do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        };
        samples.push(Sample {
            done: origin.elapsed().as_secs_f64(),
            latency,
            ok,
        });
    }
    (samples, first_error)
}

/// Runs the plan against `client`; `at_start` is called when the first lap begins and `at_end`
/// when the last one ends (while the clients are still busy). `stop` (Ctrl-C) ends the run
/// early: the laps then hold what completed.
pub fn run(
    client: &Client,
    plan: &Plan,
    stop: &AtomicBool,
    at_start: impl FnOnce(),
    at_end: impl FnOnce(),
) -> Measured {
    let origin = Instant::now();
    let measured_from = origin + plan.warmup;
    let end = measured_from + plan.lap * plan.laps;
    let (samples, first_error) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.clients)
            .map(|_| {
                let c = client.fresh();
                s.spawn(move || client_loop(&c, plan, origin, end, stop))
            })
            .collect();
        sleep_until(measured_from, stop);
        at_start();
        sleep_until(end, stop);
        at_end();
        let mut all = Vec::new();
        let mut first = None;
        for h in handles {
            let (samples, err) = h.join().expect("client thread");
            all.extend(samples);
            first = first.or(err);
        }
        (all, first)
    });
    Measured {
        first_error,
        ..measure(&samples, plan, origin.elapsed().as_secs_f64())
    }
}

fn sleep_until(t: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(done: f64, ms: u64, ok: bool) -> Sample {
        Sample {
            done,
            latency: Duration::from_millis(ms),
            ok,
        }
    }

    #[test]
    fn failed_shards_are_errors() {
        assert!(!shards_failed(
            br#"{"took":3,"_shards":{"total":3,"successful":3,"skipped":0,"failed":0},"hits":{}}"#
        ));
        assert!(shards_failed(
            br#"{"_shards":{"total":3,"successful":2,"failed":1,"failures":[{}]}}"#
        ));
        assert!(
            !shards_failed(br#"{"hits":{}}"#),
            "no _shards: nothing failed"
        );
        assert!(shards_failed(b"not json"));
    }

    #[test]
    fn samples_fall_into_laps_after_the_warm_up() {
        let plan = Plan {
            clients: 1,
            warmup: Duration::from_secs(1),
            laps: 2,
            lap: Duration::from_secs(2),
            path: "/i/_search".into(),
            body: Vec::new(),
        };
        let mut samples = vec![sample(0.5, 100, false)]; // warm-up: not counted
                                                         // Lap 1 (1..3 s): 10 per second, one error; lap 2 (3..5 s): 5 per second.
        samples.extend((0..20).map(|i| sample(1.05 + i as f64 * 0.1, 10, i != 7)));
        samples.extend((0..10).map(|i| sample(3.1 + i as f64 * 0.2, 30, true)));
        samples.push(sample(5.5, 1, true)); // after the last lap: not counted
        let m = measure(&samples, &plan, 10.0);
        assert_eq!(m.laps.len(), 2);
        assert_eq!((m.laps[0].requests, m.laps[0].errors), (20, 1));
        assert!((m.laps[0].error_rate_pct - 5.0).abs() < 1e-9);
        assert_eq!(m.laps[0].throughput.as_ref().unwrap().median, 10.0);
        assert_eq!(m.laps[1].throughput.as_ref().unwrap().median, 5.0);
        assert!((m.laps[1].latency.as_ref().unwrap().p50_ms - 30.0).abs() < 0.1);
        assert_eq!((m.total.requests, m.total.errors), (30, 1));
        let t = m.total.throughput.as_ref().unwrap();
        assert_eq!((t.min, t.max), (5.0, 10.0));
        assert!((t.mean - 7.5).abs() < 1e-9);
        assert!(figures(&samples, 10.0, 11.0).throughput.is_none());
        // Stopped in the middle of lap 2: it ends there.
        let m = measure(&samples, &plan, 4.0);
        assert_eq!(m.laps.len(), 2);
        assert_eq!(m.laps[1].requests, 5);
        assert_eq!(m.laps[1].throughput.as_ref().unwrap().median, 5.0);
        assert_eq!(measure(&samples, &plan, 2.0).laps.len(), 1);
    }
}
