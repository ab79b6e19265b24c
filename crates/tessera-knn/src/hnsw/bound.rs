//! A k-th best distance shared by the searches of one shard's segments running at once.
//!
//! Once some segment has found k results within distance `d`, a hit farther than `d` from any
//! other segment ranks after those k and cannot reach the shard's top k: it is dropped where it
//! is found instead of being carried to the shard's reduce. The bound never cuts a graph walk
//! short (Lucene's `MultiLeafKnnCollector` does): a walk's result would then depend on which
//! slice finished first, and the shard's hits must be the same for any slice count.

use std::sync::atomic::{AtomicU32, Ordering};

/// The current k-th best distance across slices (an `AtomicU32` holding f32 bits, min-updated).
#[derive(Debug)]
pub struct SharedBound(AtomicU32);

impl SharedBound {
    /// No bound yet: +∞.
    pub fn new() -> Self {
        SharedBound(AtomicU32::new(f32::INFINITY.to_bits()))
    }

    pub fn get(&self) -> f32 {
        f32::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// Lowers the bound to `d` if `d` is smaller (NaN is ignored).
    pub fn offer(&self, d: f32) {
        if d.is_nan() {
            return;
        }
        let mut current = self.0.load(Ordering::Relaxed);
        while d < f32::from_bits(current) {
            match self.0.compare_exchange_weak(
                current,
                d.to_bits(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }
}

impl Default for SharedBound {
    fn default() -> Self {
        SharedBound::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_only_tightens_including_below_zero() {
        let bound = SharedBound::new();
        assert_eq!(bound.get(), f32::INFINITY);
        bound.offer(3.0);
        bound.offer(5.0);
        bound.offer(f32::NAN);
        assert_eq!(bound.get(), 3.0);
        bound.offer(-2.5);
        assert_eq!(bound.get(), -2.5);
    }

    #[test]
    fn concurrent_offers_keep_the_minimum() {
        let bound = SharedBound::new();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let bound = &bound;
                scope.spawn(move || {
                    for i in 0..1000 {
                        bound.offer((i * 4 + t) as f32 - 100.0);
                    }
                });
            }
        });
        assert_eq!(bound.get(), -100.0);
    }
}
