//! Latency percentiles (HDR histograms, microsecond resolution, 3 significant digits) and
//! throughput (completions per one-second window), as OpenSearch Benchmark reports them.
//!
//! Why HDR: exact enough at every percentile up to p99.9 and max with a fixed, small memory
//! footprint, and histograms from several clients merge without losing precision.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest trackable latency: one hour, in microseconds.
const MAX_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds")
}

/// Records a duration (saturating at the histogram's bounds).
pub fn record(h: &mut Histogram<u64>, d: std::time::Duration) {
    let us = (d.as_micros() as u64).clamp(1, MAX_US);
    h.record(us).expect("value within bounds");
}

/// Percentiles of one distribution, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(Percentiles {
            count: h.len(),
            min_ms: ms(h.min()),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p99_9_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        })
    }

    /// A named percentile (`p50`, `p90`, `p99`, `p99.9`, `max`, `mean`).
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "p50" => self.p50_ms,
            "p90" => self.p90_ms,
            "p99" => self.p99_ms,
            "p99.9" | "p99_9" => self.p99_9_ms,
            "max" => self.max_ms,
            "min" => self.min_ms,
            "mean" => self.mean_ms,
            _ => return None,
        })
    }
}

/// The histogram's recorded values as `[microseconds, count]` pairs (raw, for re-analysis).
pub fn buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect()
}

/// Throughput in operations per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// All completed operations over the whole measured period.
    pub mean: f64,
}

/// Throughput of operations completing at `done` seconds (relative to any origin) in a
/// measured period starting at `start`: one sample per full `window`-second window; a period
/// shorter than two windows gives one sample, the overall rate.
pub fn throughput(start: f64, done: &[f64], window: f64) -> Option<Throughput> {
    if done.is_empty() {
        return None;
    }
    let mut done = done.to_vec();
    done.sort_by(|a, b| a.total_cmp(b));
    let end = *done.last().expect("non-empty");
    let span = (end - start).max(1e-6);
    let mean = done.len() as f64 / span;
    if span < 2.0 * window {
        return Some(Throughput {
            min: mean,
            median: mean,
            max: mean,
            mean,
        });
    }
    let windows = (span / window).floor() as usize;
    let mut counts = vec![0u64; windows];
    for t in &done {
        let w = ((t - start) / window).floor();
        if w >= 0.0 && (w as usize) < windows {
            counts[w as usize] += 1;
        }
    }
    let mut rates: Vec<f64> = counts.iter().map(|&c| c as f64 / window).collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    let median = if rates.len() % 2 == 1 {
        rates[rates.len() / 2]
    } else {
        (rates[rates.len() / 2 - 1] + rates[rates.len() / 2]) / 2.0
    };
    Some(Throughput {
        min: rates[0],
        median,
        max: rates[rates.len() - 1],
        mean,
    })
}

/// The `q`-quantile (0..=1) of `values` by nearest rank; `None` when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Relative change from `base` to `new` in percent (positive = `new` is larger).
pub fn change_pct(base: f64, new: f64) -> Option<f64> {
    (base > 0.0 && base.is_finite() && new.is_finite()).then(|| (new - base) / base * 100.0)
}

/// Latency improvement from `base` to `new` in percent (positive = `new` is faster), as in the
/// concurrent segment search posts.
pub fn improvement_pct(base: f64, new: f64) -> Option<f64> {
    change_pct(base, new).map(|c| -c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn uniform_distribution_percentiles() {
        let mut h = histogram();
        for us in 1..=100_000u64 {
            h.record(us).unwrap();
        }
        let p = Percentiles::of(&h).unwrap();
        assert_eq!(p.count, 100_000);
        assert!(close(p.p50_ms, 50.0, 0.001), "{p:?}");
        assert!(close(p.p90_ms, 90.0, 0.001), "{p:?}");
        assert!(close(p.p99_ms, 99.0, 0.001), "{p:?}");
        assert!(close(p.p99_9_ms, 99.9, 0.001), "{p:?}");
        assert!(close(p.max_ms, 100.0, 0.001), "{p:?}");
        assert!(close(p.mean_ms, 50.0, 0.001), "{p:?}");
        assert!(p.min_ms <= 0.001 + 1e-9);
    }

    #[test]
    fn exponential_distribution_percentiles() {
        // Values at the exact quantiles of an exponential with mean 20 ms.
        let n = 200_000;
        let mean_us = 20_000.0;
        let mut h = histogram();
        for i in 0..n {
            let q = (i as f64 + 0.5) / n as f64;
            h.record((-mean_us * (1.0 - q).ln()).round().max(1.0) as u64)
                .unwrap();
        }
        let p = Percentiles::of(&h).unwrap();
        let expect = |q: f64| -20.0 * (1.0 - q).ln();
        assert!(close(p.p50_ms, expect(0.5), 0.002), "p50 {}", p.p50_ms);
        assert!(close(p.p90_ms, expect(0.9), 0.002), "p90 {}", p.p90_ms);
        assert!(close(p.p99_ms, expect(0.99), 0.002), "p99 {}", p.p99_ms);
        assert!(
            close(p.p99_9_ms, expect(0.999), 0.002),
            "p99.9 {}",
            p.p99_9_ms
        );
        assert!(close(p.mean_ms, 20.0, 0.01), "mean {}", p.mean_ms);
    }

    #[test]
    fn constant_and_bimodal() {
        let mut h = histogram();
        for _ in 0..1000 {
            record(&mut h, Duration::from_millis(5));
        }
        let p = Percentiles::of(&h).unwrap();
        assert!(close(p.p50_ms, 5.0, 0.001) && close(p.max_ms, 5.0, 0.001));
        // 95% fast, 5% slow: p90 is fast, p99 is slow.
        let mut h = histogram();
        for i in 0..1000 {
            record(
                &mut h,
                Duration::from_millis(if i % 20 == 0 { 500 } else { 10 }),
            );
        }
        let p = Percentiles::of(&h).unwrap();
        assert!(close(p.p90_ms, 10.0, 0.001), "{p:?}");
        assert!(close(p.p99_ms, 500.0, 0.001), "{p:?}");
        assert!(Percentiles::of(&histogram()).is_none());
        let total: u64 = buckets(&h).iter().map(|b| b[1]).sum();
        assert_eq!(total, 1000);
    }

    #[test]
    fn throughput_windows() {
        // 10 ops/s for 5 s, then 20 ops/s for 5 s.
        let mut done: Vec<f64> = (0..50).map(|i| 0.05 + i as f64 * 0.1).collect();
        done.extend((0..100).map(|i| 5.025 + i as f64 * 0.05));
        done.push(10.0); // the end of the period, in a window of its own (not counted)
        let t = throughput(0.0, &done, 1.0).unwrap();
        assert!(close(t.min, 10.0, 1e-9), "{t:?}");
        assert!(close(t.max, 20.0, 1e-9), "{t:?}");
        assert!(close(t.median, 15.0, 1e-9), "{t:?}");
        assert!(close(t.mean, 151.0 / 10.0, 1e-6), "{t:?}");
        // Short runs: one sample.
        let t = throughput(0.0, &[0.1, 0.2, 0.4], 1.0).unwrap();
        assert!(close(t.median, 7.5, 1e-9) && t.min == t.max);
        assert!(throughput(0.0, &[], 1.0).is_none());
    }

    #[test]
    fn quantiles_and_changes() {
        let v: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        assert_eq!(quantile(&v, 0.9), Some(9.0));
        assert_eq!(quantile(&v, 1.0), Some(10.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(improvement_pct(200.0, 50.0), Some(75.0));
        assert_eq!(change_pct(100.0, 110.0), Some(10.0));
        assert_eq!(change_pct(0.0, 1.0), None);
    }
}
