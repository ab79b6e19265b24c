//! Exactly rounded sums of doubles, the same whatever the order of the additions.
//!
//! OpenSearch sums with Kahan compensation, which is accurate but depends (in the last bits)
//! on the order of the values, so a sum over one slice and over eight slices could differ.
//! [`ExactSum`] keeps the sum exactly as a short list of non-overlapping partials (Shewchuk's
//! algorithm, as in Python's `math.fsum`) and rounds once when read: the result is the correctly
//! rounded value of the exact sum, so any grouping of the values gives the same bits. It agrees
//! with OpenSearch's compensated sum to within an ulp or two.
//!
//! Fields stored as integers (long, date, boolean, scaled_float) add their raw integers to an
//! `i128` instead ([`ExactSum::add_raw`]), which is exact and much cheaper; that part is divided
//! by the scaling factor once, when the sum is read.
//!
//! Infinite and NaN inputs are summed on the side (the result is then that non-finite value, as
//! with plain addition). An intermediate overflow (finite values whose exact partial sum leaves
//! the double range) makes the sum infinite; only there does the order matter.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactSum {
    /// Non-overlapping partial sums in increasing order of magnitude; their exact sum is the
    /// exact sum of the finite values added.
    partials: Vec<f64>,
    /// The sum of the non-finite values added (0.0 when there were none).
    special: f64,
    /// The sum of the raw integers added; worth `raw × (1 / factor)`.
    raw: i128,
    factor: f64,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum::integers(1.0)
    }
}

impl ExactSum {
    /// A sum whose raw integers are worth `raw × (1 / factor)` (the scaling factor of scaled
    /// floats, 1 for longs and dates).
    pub fn integers(factor: f64) -> ExactSum {
        ExactSum {
            partials: Vec::new(),
            special: 0.0,
            raw: 0,
            factor,
        }
    }

    /// Adds a stored integer, exactly.
    #[inline]
    pub fn add_raw(&mut self, raw: i64) {
        self.raw += raw as i128;
    }

    /// The integer part's value, rounded once.
    fn raw_value(&self) -> f64 {
        if self.factor == 1.0 {
            self.raw as f64
        } else {
            self.raw as f64 * (1.0 / self.factor)
        }
    }

    /// Adds one value.
    #[inline]
    pub fn add(&mut self, value: f64) {
        if !value.is_finite() {
            self.special += value;
            return;
        }
        let mut x = value;
        let mut kept = 0;
        for i in 0..self.partials.len() {
            let mut y = self.partials[i];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            if !hi.is_finite() {
                // the exact sum left the double range: it is an overflow from here on
                self.special += hi;
                self.partials.truncate(kept);
                return;
            }
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Adds everything another sum holds (exactly, unless the integer parts have different
    /// scaling factors: then the other's is rounded once).
    pub fn merge(&mut self, other: &ExactSum) {
        for &partial in &other.partials {
            self.add(partial);
        }
        self.special += other.special;
        if other.raw != 0 {
            if self.raw == 0 || self.factor == other.factor {
                self.factor = other.factor;
                self.raw += other.raw;
            } else {
                self.add(other.raw_value());
            }
        }
    }

    /// The correctly rounded value of the exact sum (with the integer part rounded first).
    pub fn value(&self) -> f64 {
        if !self.special.is_finite() {
            return self.special;
        }
        if self.partials.is_empty() {
            return self.raw_value();
        }
        if self.raw != 0 {
            let mut all = self.clone();
            all.raw = 0;
            all.add(self.raw_value());
            return all.value();
        }
        let partials = &self.partials;
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
            let y_rounded = hi - x;
            lo = y - y_rounded;
            if lo != 0.0 {
                break;
            }
        }
        // round half to even correctly when the remaining partials push past a tie
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let y_rounded = x - hi;
            if y == y_rounded {
                hi = x;
            }
        }
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::Rng;

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
        // doubles and integers together
        let mut mixed = ExactSum::integers(1.0);
        mixed.add_raw(3);
        mixed.add(0.5);
        assert_eq!(mixed.value(), 3.5);
    }

    fn sum(values: &[f64]) -> f64 {
        let mut s = ExactSum::default();
        values.iter().for_each(|v| s.add(*v));
        s.value()
    }

    #[test]
    fn sums_are_exactly_rounded() {
        assert_eq!(sum(&[0.1; 10]), 1.0);
        assert_eq!(sum(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
        assert_eq!(sum(&[]), 0.0);
        assert_eq!(sum(&[1.0, f64::INFINITY]), f64::INFINITY);
        assert!(sum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(sum(&[f64::MAX, f64::MAX]), f64::INFINITY);
        // an exact tie rounds to even; a tiny remainder past the tie rounds up
        let half_ulp = 2f64.powi(-53);
        assert_eq!(sum(&[1.0, half_ulp]), 1.0);
        assert_eq!(sum(&[1.0, half_ulp, 1e-300]), 1.0000000000000002);
    }

    #[test]
    fn any_order_and_grouping_gives_the_same_bits() {
        let mut rng = Rng::new(7);
        for round in 0..200 {
            let n = 1 + rng.below(300) as usize;
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    let scale = 10f64.powi(rng.below(40) as i32 - 20);
                    (rng.unit() - 0.5) * scale
                })
                .collect();
            let expected = sum(&values);
            let mut shuffled = values.clone();
            rng.shuffle(&mut shuffled);
            // split into random groups, sum each, merge the groups in a random order
            let groups = 1 + rng.below(8) as usize;
            let mut parts = vec![ExactSum::default(); groups];
            for v in &shuffled {
                parts[rng.below(groups as u64) as usize].add(*v);
            }
            rng.shuffle(&mut parts);
            let mut total = ExactSum::default();
            for part in &parts {
                total.merge(part);
            }
            assert_eq!(total.value().to_bits(), expected.to_bits(), "round {round}");
        }
    }
}
