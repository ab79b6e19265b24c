//! Exact sums: the same total whatever order values arrive in and however partial sums are
//! grouped, so that 1 slice and 8 slices (and 1 shard and 3) give bit-identical aggregations.
//!
//! Fields stored as integers (long, date, boolean, scaled_float) sum their raw integers in an
//! `i128`, which is exact; the value is divided by the scaling factor once, at the end. Doubles
//! keep Shewchuk's non-overlapping partials (the algorithm of Python's `math.fsum`): the
//! partials represent the exact sum, and the final value is that sum correctly rounded.

use serde::{Deserialize, Serialize};

/// An exact running sum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ExactSum {
    /// A sum of raw integers; the value is `raw / factor`.
    Int { raw: i128, factor: f64 },
    /// Non-overlapping partials, smallest magnitude first.
    Float(Vec<f64>),
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum::Int {
            raw: 0,
            factor: 1.0,
        }
    }
}

impl ExactSum {
    /// A sum of values stored as integers scaled by `factor` (1 for longs and dates).
    pub fn integers(factor: f64) -> ExactSum {
        ExactSum::Int { raw: 0, factor }
    }

    /// A sum of doubles.
    pub fn floats() -> ExactSum {
        ExactSum::Float(Vec::new())
    }

    /// Adds a raw integer (only for integer sums).
    #[inline]
    pub fn add_raw(&mut self, value: i64) {
        match self {
            ExactSum::Int { raw, .. } => *raw += value as i128,
            ExactSum::Float(partials) => add_float(partials, value as f64),
        }
    }

    /// Adds a double.
    #[inline]
    pub fn add(&mut self, value: f64) {
        match self {
            ExactSum::Float(partials) => add_float(partials, value),
            ExactSum::Int { raw, factor } => {
                // a double in an integer sum (a `missing` value, or a mix of field types):
                // switch to partials, which hold the integer sum exactly
                let mut partials = int_partials(*raw, *factor);
                add_float(&mut partials, value);
                *self = ExactSum::Float(partials);
            }
        }
    }

    /// Adds another sum, exactly.
    pub fn merge(&mut self, other: &ExactSum) {
        match (&mut *self, other) {
            (ExactSum::Int { raw, factor }, ExactSum::Int { raw: r, factor: f }) if factor == f => {
                *raw += r
            }
            (ExactSum::Int { raw: 0, .. }, other) => *self = other.clone(),
            (_, ExactSum::Int { raw: 0, .. }) => {}
            _ => {
                let mut partials = self.to_partials();
                for p in other.to_partials() {
                    add_float(&mut partials, p);
                }
                *self = ExactSum::Float(partials);
            }
        }
    }

    fn to_partials(&self) -> Vec<f64> {
        match self {
            ExactSum::Int { raw, factor } => int_partials(*raw, *factor),
            ExactSum::Float(partials) => partials.clone(),
        }
    }

    /// The sum, correctly rounded (integer sums: the integer rounded, then divided).
    pub fn value(&self) -> f64 {
        match self {
            ExactSum::Int { raw, factor } => {
                if *factor == 1.0 {
                    *raw as f64
                } else {
                    *raw as f64 / factor
                }
            }
            ExactSum::Float(partials) => round_partials(partials),
        }
    }
}

/// An integer sum as exact partials (a scaled sum is only exact up to the division, which the
/// integer form also does once).
fn int_partials(raw: i128, factor: f64) -> Vec<f64> {
    if factor != 1.0 {
        return vec![raw as f64 / factor];
    }
    // split so that every part is exactly representable
    let high = (raw >> 64) as i64 as f64 * 18_446_744_073_709_551_616.0;
    let low_hi = ((raw as u64) >> 32) as f64 * 4_294_967_296.0;
    let low_lo = (raw as u64 & 0xffff_ffff) as f64;
    let mut partials = Vec::new();
    for part in [high, low_hi, low_lo] {
        add_float(&mut partials, part);
    }
    partials
}

/// Shewchuk's grow-expansion step: adds `x` keeping the partials non-overlapping.
fn add_float(partials: &mut Vec<f64>, mut x: f64) {
    if !x.is_finite() {
        // infinities and NaN are not exact: keep them as a partial of their own
        partials.push(x);
        return;
    }
    let mut i = 0;
    for j in 0..partials.len() {
        let mut y = partials[j];
        if !y.is_finite() {
            partials[i] = y;
            i += 1;
            continue;
        }
        if x.abs() < y.abs() {
            std::mem::swap(&mut x, &mut y);
        }
        let hi = x + y;
        let lo = y - (hi - x);
        if lo != 0.0 {
            partials[i] = lo;
            i += 1;
        }
        x = hi;
    }
    partials.truncate(i);
    partials.push(x);
}

/// The correctly rounded value of non-overlapping partials (Python's `fsum` final step).
fn round_partials(partials: &[f64]) -> f64 {
    if partials.iter().any(|p| !p.is_finite()) {
        // infinities dominate (and inf + -inf is NaN), as with plain addition
        return partials.iter().sum();
    }
    let mut n = partials.len();
    if n == 0 {
        return 0.0;
    }
    n -= 1;
    let mut hi = partials[n];
    let mut lo = 0.0;
    while n > 0 {
        let x = hi;
        n -= 1;
        let y = partials[n];
        hi = x + y;
        let yr = hi - x;
        lo = y - yr;
        if lo != 0.0 {
            break;
        }
    }
    // half-way cases: round according to the sign of the next partial
    if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
        let y = lo * 2.0;
        let x = hi + y;
        let yr = x - hi;
        if y == yr {
            hi = x;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (splitmix64).
    fn values(seed: u64, n: usize) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                let magnitude = 10f64.powi((z % 12) as i32 - 4);
                ((z >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * magnitude
            })
            .collect()
    }

    #[test]
    fn float_sums_do_not_depend_on_order_or_grouping() {
        for seed in 0..20 {
            let xs = values(seed, 500);
            let mut whole = ExactSum::floats();
            xs.iter().for_each(|x| whole.add(*x));
            let mut reversed = ExactSum::floats();
            xs.iter().rev().for_each(|x| reversed.add(*x));
            assert_eq!(whole.value(), reversed.value(), "seed {seed}");
            let mut grouped = ExactSum::floats();
            for chunk in xs.chunks(7 + seed as usize) {
                let mut part = ExactSum::floats();
                chunk.iter().for_each(|x| part.add(*x));
                grouped.merge(&part);
            }
            assert_eq!(whole.value(), grouped.value(), "seed {seed}");
        }
        let mut tenths = ExactSum::floats();
        (0..10).for_each(|_| tenths.add(0.1));
        assert_eq!(tenths.value(), 1.0);
        let mut cancel = ExactSum::floats();
        for x in [1e100, 1.0, -1e100] {
            cancel.add(x);
        }
        assert_eq!(cancel.value(), 1.0);
    }

    #[test]
    fn integer_sums_are_exact_and_scaled_once() {
        let mut a = ExactSum::integers(100.0);
        for raw in [630, 1, 2, 3] {
            a.add_raw(raw);
        }
        assert_eq!(a.value(), 6.36);
        let mut b = ExactSum::integers(100.0);
        b.add_raw(4);
        let mut merged = ExactSum::default();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.value(), 6.4);
        let mut big = ExactSum::integers(1.0);
        big.add_raw(i64::MAX);
        big.add_raw(i64::MAX);
        assert_eq!(big.value(), 2.0 * i64::MAX as f64);
        // a double in an integer sum switches to partials and stays exact
        let mut mixed = ExactSum::integers(1.0);
        mixed.add_raw(3);
        mixed.add(0.5);
        assert_eq!(mixed.value(), 3.5);
    }
}
