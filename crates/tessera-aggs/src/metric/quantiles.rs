//! The state behind `percentiles` and `percentile_ranks`: a sorted multiset of values that is
//! exact up to a number of distinct values set by `compression`, then quantised on a fixed grid.
//!
//! Why not a t-digest: OpenSearch 2.19 keeps an `AVLTreeDigest` (t-digest 3.2), whose centroids
//! depend on the order values arrive in and on how partial digests are merged, so a t-digest
//! cannot give the same answer for one slice and for eight. This sketch can:
//!
//! * Each value maps to an order-preserving 64-bit key (its IEEE bits, with negative numbers
//!   mirrored). At level 0 the key *is* the value; at level `L` the low `L` bits of the
//!   magnitude are dropped, so a key stands for a bucket of relative width at most `2^(L-52)`.
//! * The state is the sorted `(key, count)` list at the lowest level at which it has at most
//!   `capacity` entries (`capacity = 50 × compression`, so 5000 distinct values by default).
//!   Merging two states coarsens both to the higher level, adds counts, and coarsens further
//!   while over capacity. Because the number of distinct keys of a union only shrinks with the
//!   level and is at least that of each part, the result is the state of the whole multiset,
//!   whatever the grouping: slices and shards cannot change the answer.
//!
//! Quantiles and ranks are read with the interpolation of OpenSearch's `AVLTreeDigest` applied
//! to every value as its own centroid (a bucket stands for its count of copies of its midpoint).
//! While the data fits (up to 5000 distinct values by default) this is the exact answer, equal
//! to what OpenSearch returns as long as its digest still holds single values (about 200 values
//! with the default compression). Beyond that OpenSearch merges values into centroids and its
//! answers move away from the exact ones by its own approximation error, while this sketch stays
//! exact or within half a bucket (relative error below `2^(L-53)`) of the exact answer.

use serde::{Deserialize, Serialize};

/// Values buffered per bucket before they are sorted into the state.
const BUFFER: usize = 2048;

/// The order-preserving key of a value at level 0 (`-0.0` counts as `0.0`).
#[inline]
pub fn key_of(value: f64) -> i64 {
    let value = if value == 0.0 { 0.0 } else { value };
    let bits = value.to_bits();
    if bits >> 63 == 0 {
        bits as i64
    } else {
        !((bits & !(1u64 << 63)) as i64)
    }
}

/// The value a key stands for at `level`: the value itself at level 0, else the midpoint of
/// the bucket's range.
fn value_of(key: i64, level: u8) -> f64 {
    let negative = key < 0;
    let magnitude = if negative { !key } else { key } as u64;
    const INFINITY_BITS: u64 = 0x7ff0_0000_0000_0000;
    let value = if level == 0 {
        f64::from_bits(magnitude.min(INFINITY_BITS))
    } else {
        let shifted = |m: u64| {
            m.checked_shl(level as u32)
                .filter(|s| s >> level == m)
                .unwrap_or(INFINITY_BITS)
        };
        let low = shifted(magnitude).min(INFINITY_BITS);
        let high = shifted(magnitude.saturating_add(1))
            .saturating_sub(1)
            .min(INFINITY_BITS);
        let (low, high) = (f64::from_bits(low), f64::from_bits(high));
        if high.is_infinite() {
            low
        } else {
            low + (high - low) / 2.0
        }
    };
    if negative {
        -value
    } else {
        value
    }
}

/// The number of distinct values kept for a `compression`.
pub fn capacity_for(compression: f64) -> u32 {
    let capacity = (compression * 50.0).round();
    if capacity.is_nan() {
        return 5000;
    }
    capacity.clamp(16.0, 4_000_000.0) as u32
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantileSketch {
    /// Low magnitude bits dropped from every key (0: exact values).
    pub level: u8,
    /// `(key, count)`, sorted by key, keys distinct.
    pub entries: Vec<(i64, u64)>,
    pub count: u64,
    pub min: f64,
    pub max: f64,
    /// The most entries kept.
    pub capacity: u32,
}

impl QuantileSketch {
    pub fn new(capacity: u32) -> QuantileSketch {
        QuantileSketch {
            level: 0,
            entries: Vec::new(),
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            capacity: capacity.max(2),
        }
    }

    fn coarsen_to(&mut self, level: u8) {
        if level <= self.level {
            return;
        }
        let shift = (level - self.level) as u32;
        let mut out: Vec<(i64, u64)> = Vec::with_capacity(self.entries.len());
        for &(key, count) in &self.entries {
            // an arithmetic shift keeps negative and positive buckets apart and in order
            let key = key
                .checked_shr(shift)
                .unwrap_or(if key < 0 { -1 } else { 0 });
            match out.last_mut() {
                Some((last, c)) if *last == key => *c += count,
                _ => out.push((key, count)),
            }
        }
        self.entries = out;
        self.level = level;
    }

    fn fit(&mut self) {
        while self.entries.len() > self.capacity as usize && self.level < 63 {
            self.coarsen_to(self.level + 1);
        }
    }

    /// Adds sorted `(level-0 key, count)` runs with their min and max.
    fn merge_sorted(&mut self, level: u8, other: &[(i64, u64)], count: u64, min: f64, max: f64) {
        if count == 0 {
            return;
        }
        let target = self.level.max(level);
        self.coarsen_to(target);
        let shift = (target - level) as u32;
        let mut merged = Vec::with_capacity(self.entries.len() + other.len());
        let mut mine = self.entries.iter().peekable();
        let mut theirs = other
            .iter()
            .map(|&(k, c)| {
                (
                    k.checked_shr(shift).unwrap_or(if k < 0 { -1 } else { 0 }),
                    c,
                )
            })
            .peekable();
        let mut push = |key: i64, c: u64| match merged.last_mut() {
            Some((last, n)) if *last == key => *n += c,
            _ => merged.push((key, c)),
        };
        loop {
            match (mine.peek(), theirs.peek()) {
                (Some(&&(a, ca)), Some(&(b, cb))) => {
                    if a <= b {
                        push(a, ca);
                        mine.next();
                    } else {
                        push(b, cb);
                        theirs.next();
                    }
                }
                (Some(&&(a, ca)), None) => {
                    push(a, ca);
                    mine.next();
                }
                (None, Some(&(b, cb))) => {
                    push(b, cb);
                    theirs.next();
                }
                (None, None) => break,
            }
        }
        self.entries = merged;
        self.count += count;
        self.min = self.min.min(min);
        self.max = self.max.max(max);
        self.fit();
    }

    /// Adds another state (exactly: the result depends only on the values of both).
    pub fn merge(&mut self, other: &QuantileSketch) {
        self.merge_sorted(
            other.level,
            &other.entries,
            other.count,
            other.min,
            other.max,
        );
    }

    /// Adds raw values (in any order).
    pub fn add_all(&mut self, values: &mut [f64]) {
        if values.is_empty() {
            return;
        }
        let mut keys: Vec<i64> = Vec::with_capacity(values.len());
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        let mut count = 0;
        for &v in values.iter() {
            if v.is_nan() {
                continue;
            }
            keys.push(key_of(v));
            min = min.min(v);
            max = max.max(v);
            count += 1;
        }
        keys.sort_unstable();
        let mut runs: Vec<(i64, u64)> = Vec::new();
        for key in keys {
            match runs.last_mut() {
                Some((last, c)) if *last == key => *c += 1,
                _ => runs.push((key, 1)),
            }
        }
        self.merge_sorted(0, &runs, count, min, max);
    }

    /// Adds `(value, count)` pairs in any order (NaN values and zero counts are skipped).
    pub fn add_weighted(&mut self, values: &[(f64, u64)]) {
        let mut keys: Vec<(i64, u64)> = Vec::with_capacity(values.len());
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        let mut count = 0;
        for &(v, c) in values {
            if v.is_nan() || c == 0 {
                continue;
            }
            keys.push((key_of(v), c));
            min = min.min(v);
            max = max.max(v);
            count += c;
        }
        keys.sort_unstable_by_key(|&(key, _)| key);
        let mut runs: Vec<(i64, u64)> = Vec::with_capacity(keys.len());
        for (key, c) in keys {
            match runs.last_mut() {
                Some((last, n)) if *last == key => *n += c,
                _ => runs.push((key, c)),
            }
        }
        self.merge_sorted(0, &runs, count, min, max);
    }

    /// The runs of equal values, as `(value, count)`, in increasing order.
    pub(crate) fn runs(&self) -> Vec<(f64, u64)> {
        let mut runs: Vec<(f64, u64)> = Vec::with_capacity(self.entries.len());
        for &(key, count) in self.entries.iter().filter(|(_, count)| *count > 0) {
            let value = value_of(key, self.level);
            // min/max bound every value (unless a malformed remote state says otherwise)
            let value = if self.min <= self.max {
                value.clamp(self.min, self.max)
            } else {
                value
            };
            match runs.last_mut() {
                Some((v, c)) if *v == value => *c += count,
                _ => runs.push((value, count)),
            }
        }
        runs
    }

    /// A reader for quantiles and ranks.
    pub fn reader(&self) -> SketchReader {
        let runs = self.runs();
        let mut ends = Vec::with_capacity(runs.len());
        let mut total = 0u64;
        for (_, c) in &runs {
            total += c;
            ends.push(total);
        }
        SketchReader {
            runs,
            ends,
            count: total,
            min: self.min,
            max: self.max,
        }
    }
}

/// `AbstractTDigest.weightedAverage` of t-digest 3.2.
fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let sorted = |x1: f64, w1: f64, x2: f64, w2: f64| {
        let x = (x1 * w1 + x2 * w2) / (w1 + w2);
        x1.max(x.min(x2))
    };
    if x1 <= x2 {
        sorted(x1, w1, x2, w2)
    } else {
        sorted(x2, w2, x1, w1)
    }
}

/// Quantiles and ranks of a sketch, every value a centroid of weight one (runs of equal values
/// are walked in one step).
pub struct SketchReader {
    runs: Vec<(f64, u64)>,
    /// `ends[k]`: the number of values in runs `0..=k`.
    ends: Vec<u64>,
    count: u64,
    min: f64,
    max: f64,
}

impl SketchReader {
    /// The value at position `i` of the sorted values.
    fn at(&self, i: u64) -> f64 {
        let run = self.ends.partition_point(|&end| end <= i);
        self.runs[run.min(self.runs.len() - 1)].0
    }

    /// `AVLTreeDigest.quantile(q)` over single-value centroids; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        let n = self.count;
        if n == 0 {
            return f64::NAN;
        }
        if n == 1 {
            return self.runs[0].0;
        }
        let index = q * n as f64;
        let first = self.runs[0].0;
        if index < 0.5 {
            return (self.min * index + first * (0.5 - index)) / 0.5;
        }
        // the first i (0 ≤ i ≤ n-2) with (i + 0.5) + 1 > index
        let reaches = |i: u64| (i as f64 + 0.5) + 1.0 > index;
        let mut i = if index - 1.5 < 0.0 {
            0
        } else {
            ((index - 1.5).floor() as u64).saturating_add(1)
        };
        while i > 0 && reaches(i - 1) {
            i -= 1;
        }
        while i <= n - 2 && !reaches(i) {
            i += 1;
        }
        if i > n - 2 {
            let left = (n - 1) as f64 + 0.5;
            let left_weight = index - left;
            let right_weight = 1.0 / 2.0 - left_weight;
            return weighted_average(self.at(n - 1), right_weight, self.max, left_weight);
        }
        let left = i as f64 + 0.5;
        weighted_average(
            self.at(i),
            (left + 1.0) - index,
            self.at(i + 1),
            index - left,
        )
    }

    /// `AVLTreeDigest.cdf(x)` over single-value centroids; NaN when empty.
    pub fn cdf(&self, x: f64) -> f64 {
        let n = self.count;
        if n == 0 {
            return f64::NAN;
        }
        if n == 1 {
            return if x < self.runs[0].0 { 0.0 } else { 1.0 };
        }
        let interpolate = |x: f64, x0: f64, x1: f64| (x - x0) / (x1 - x0);
        let mut start = 0u64;
        for (k, &(v, c)) in self.runs.iter().enumerate() {
            let end = start + c - 1; // position of the run's last value
            let next = self.runs.get(k + 1).map(|r| r.0);
            // the centroid j where OpenSearch stops, if it is in this run
            let found = if c >= 2 && x < v {
                Some(start)
            } else if end <= n - 2 {
                let right = next.map_or(0.0, |next| (next - v) / 2.0);
                (x < v + right).then_some(end)
            } else {
                None
            };
            if let Some(j) = found {
                let right = if j < end {
                    0.0
                } else {
                    next.map_or(0.0, |next| (next - v) / 2.0)
                };
                let left = if j == 0 {
                    // the first centroid's left half-width is its right one
                    if c >= 2 {
                        0.0
                    } else {
                        right
                    }
                } else if j == start {
                    (v - self.runs[k - 1].0) / 2.0
                } else {
                    0.0
                };
                let value = (j as f64 + interpolate(x, v - left, v + right)) / n as f64;
                return if j + 2 < n {
                    if value > 0.0 {
                        value
                    } else {
                        0.0
                    }
                } else {
                    value
                };
            }
            if end >= n - 2 {
                return 1.0;
            }
            start = end + 1;
        }
        1.0
    }
}

/// A bucket's state while collecting: raw values wait in a buffer, sorted in by batches.
#[derive(Clone, Debug)]
pub struct CollectingSketch {
    sketch: QuantileSketch,
    buffer: Vec<f64>,
}

impl CollectingSketch {
    pub fn new(capacity: u32) -> CollectingSketch {
        CollectingSketch {
            sketch: QuantileSketch::new(capacity),
            buffer: Vec::new(),
        }
    }

    #[inline]
    pub fn add(&mut self, value: f64) {
        self.buffer.push(value);
        if self.buffer.len() >= BUFFER {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.sketch.add_all(&mut self.buffer);
        self.buffer.clear();
    }

    pub fn finish(&mut self) -> QuantileSketch {
        self.flush();
        self.sketch.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::Rng;

    fn sketch(values: &[f64], capacity: u32) -> QuantileSketch {
        let mut s = QuantileSketch::new(capacity);
        s.add_all(&mut values.to_vec());
        s
    }

    #[test]
    fn keys_keep_order_and_values() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1e-300,
            0.0,
            1e-310,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(key_of(pair[0]) < key_of(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(value_of(key_of(v), 0), v);
        }
        assert_eq!(key_of(-0.0), key_of(0.0));
        // a coarse bucket's midpoint stays within its relative width
        let v = 123.456;
        let mid = value_of(key_of(v) >> 40, 40);
        assert!((mid - v).abs() / v < 2f64.powi(40 - 52));
        let mid = value_of(key_of(-v) >> 40, 40);
        assert!((mid + v).abs() / v < 2f64.powi(40 - 52));
    }

    /// t-digest 3.2's `AVLTreeDigest` (OpenSearch 2.19.6's `TDigestState`, compression 100)
    /// holds single values for small inputs; these are its answers.
    #[test]
    fn small_inputs_match_opensearch_exactly() {
        let r = sketch(&[1.0, 2.0, 3.0, 4.0, 5.0], 5000).reader();
        assert_eq!(r.quantile(0.01), 1.0);
        assert_eq!(r.quantile(0.5), 3.0);
        assert_eq!(r.quantile(0.99), 5.0);
        assert_eq!(r.cdf(0.0), 0.0);
        assert_eq!(r.cdf(2.5), 0.4);
        assert_eq!(r.cdf(10.0), 1.0);
        let values = [
            5.0, -3.0, 12.5, 7.0, 7.0, 7.0, 0.1, 99.0, -42.0, 3.3, 3.3, 18.0, 1e6,
        ];
        let r = sketch(&values, 5000).reader();
        // TDigestState(100) fed these 13 values, quantile(percent / 100) and cdf(x)
        let expected_q = [
            (1.0, -42.0),
            (5.0, -36.15),
            (25.0, 2.4999999999999996),
            (50.0, 7.0),
            (75.0, 13.875),
            (95.0, 850014.8499999996),
            (99.0, 1_000_000.0),
            (0.0, -42.0),
            (100.0, 1_000_000.0),
        ];
        for (percent, expected) in expected_q {
            assert_eq!(r.quantile(percent / 100.0), expected, "q {percent}");
        }
        let expected_cdf = [
            (-50.0, 0.022682445759368838),
            (-42.0, 0.038461538461538464),
            (0.0, 0.18925518925518928),
            (3.3, 0.3076923076923077),
            (7.0, 0.6153846153846154),
            (7.5, 0.6293706293706294),
            (1e6, 1.0),
            (6.99, 0.5376923076923077),
            (-3.0, 0.14818198428649734),
            (99.0, 0.8461600770352328),
            (1_000_000.5, 1.0),
        ];
        for (x, expected) in expected_cdf {
            assert_eq!(r.cdf(x), expected, "cdf {x}");
        }
    }

    #[test]
    fn malformed_remote_states_do_not_panic() {
        let sketch = QuantileSketch {
            level: 200,
            entries: vec![(-5, 0), (-1, 3), (i64::MAX, 2), (7, 1)],
            count: 1,
            min: 5.0,
            max: -5.0,
            capacity: 0,
        };
        let r = sketch.reader();
        let _ = (r.quantile(0.5), r.cdf(1.0));
        let mut other = QuantileSketch::new(16);
        other.add_all(&mut [1.0, 2.0, f64::NAN]);
        other.merge(&sketch);
        let _ = other.reader().quantile(0.99);
    }

    #[test]
    fn empty_and_single() {
        let r = sketch(&[], 100).reader();
        assert!(r.quantile(0.5).is_nan());
        assert!(r.cdf(1.0).is_nan());
        let r = sketch(&[58.611], 100).reader();
        assert_eq!(r.quantile(0.1), 58.611);
        assert_eq!(r.cdf(0.0), 0.0);
        assert_eq!(r.cdf(58.611), 1.0);
    }

    #[test]
    fn any_grouping_gives_the_same_state() {
        let mut rng = Rng::new(17);
        for round in 0..60 {
            let capacity = [16u32, 100, 5000][rng.below(3) as usize];
            let n = rng.below(4000);
            let distinct = 1 + rng.below(n + 1);
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    let i = rng.below(distinct) as f64;
                    if rng.below(4) == 0 {
                        -i * 1.7
                    } else {
                        i.powf(1.3) + 0.25
                    }
                })
                .collect();
            let whole = sketch(&values, capacity);
            let groups = 1 + rng.below(8) as usize;
            let mut parts = vec![Vec::new(); groups];
            for v in &values {
                parts[rng.below(groups as u64) as usize].push(*v);
            }
            let mut states: Vec<QuantileSketch> = parts
                .iter()
                .map(|part| {
                    let mut c = CollectingSketch::new(capacity);
                    part.iter().for_each(|v| c.add(*v));
                    c.finish()
                })
                .collect();
            rng.shuffle(&mut states);
            let mut left = QuantileSketch::new(capacity);
            let mut right = QuantileSketch::new(capacity);
            for (i, s) in states.iter().enumerate() {
                if i % 2 == 0 {
                    left.merge(s);
                } else {
                    right.merge(s);
                }
            }
            left.merge(&right);
            assert_eq!(left, whole, "round {round}");
            assert!(whole.entries.len() <= capacity as usize);
        }
    }

    #[test]
    fn coarse_states_stay_close_to_exact_quantiles() {
        let mut rng = Rng::new(23);
        let mut values: Vec<f64> = (0..50_000).map(|_| (rng.unit() * 8.0).exp()).collect();
        let r = sketch(&values, 5000).reader();
        values.sort_by(f64::total_cmp);
        let exact = sketch(&values, 100_000).reader();
        for q in [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99] {
            let (a, b) = (r.quantile(q), exact.quantile(q));
            assert!((a - b).abs() / b < 2e-3, "q {q}: {a} vs {b}");
        }
        for x in [2.0, 50.0, 1000.0] {
            assert!((r.cdf(x) - exact.cdf(x)).abs() < 1e-3);
        }
    }
}
