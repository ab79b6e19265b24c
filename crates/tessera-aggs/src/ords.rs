//! Bucket ordinals: dense numbers for the buckets of one aggregation in one slice.
//!
//! As in OpenSearch, an aggregation under a bucket aggregation is one collector for all the
//! parent's buckets: its state is indexed by bucket ordinal, and a bucket is identified by its
//! parent's ordinal plus its own key. [`BucketOrds`] hands out the ordinals; when the parent
//! can only have one bucket (a top-level aggregation) the parent is left out of the key.
//!
//! New buckets are charged to the request's circuit breaker (the one the slice's thread
//! entered, `tessera_common::breaker::charge_current`) a chunk of [`CHARGE_CHUNK`] buckets at
//! a time, [`BUCKET_BYTES`] each: the ordinal map and key list, the bucket's count and a
//! share of its sub-aggregations' per-bucket state. A trip stops the slice at its next check.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast hasher for integer keys (the multiply-rotate of FxHash).
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(*byte as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64)
    }
}

pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The estimate charged per bucket (see the module documentation).
pub const BUCKET_BYTES: u64 = 96;
/// Buckets charged at once.
pub const CHARGE_CHUNK: u32 = 1024;

const RECENT_BITS: u32 = 8;
const RECENT: usize = 1 << RECENT_BITS;

/// Assigns ordinals to `(parent ordinal, key)` pairs and remembers each parent's buckets.
pub struct BucketOrds {
    single_parent: bool,
    by_key: IntMap<(u32, u64), u32>,
    keys: Vec<(u32, u64)>,
    /// Recent lookups by a hash of the key: a few dozen buckets (a histogram's, a date
    /// histogram's) then resolve without probing the map.
    recent: Box<[(u32, u64, u32); RECENT]>,
    /// Buckets grouped by parent, built on the first [`BucketOrds::buckets_of`] call (once
    /// collection is over).
    by_parent: Option<IntMap<u32, Vec<(u64, u32)>>>,
}

impl BucketOrds {
    /// `single_parent`: the parent ordinal is always 0 (top-level aggregations).
    pub fn new(single_parent: bool) -> BucketOrds {
        BucketOrds {
            single_parent,
            by_key: IntMap::default(),
            keys: Vec::new(),
            recent: Box::new([(u32::MAX, 0, 0); RECENT]),
            by_parent: None,
        }
    }

    /// The ordinal of `key` under `parent`, allocating it on first use.
    #[inline]
    pub fn ord(&mut self, parent: u32, key: u64) -> u32 {
        let parent = if self.single_parent { 0 } else { parent };
        let slot = ((key ^ (parent as u64).rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - RECENT_BITS)) as usize;
        let (p, k, ord) = self.recent[slot];
        if p == parent && k == key {
            return ord;
        }
        let next = self.keys.len() as u32;
        let ord = *self.by_key.entry((parent, key)).or_insert(next);
        if ord == next {
            if next.is_multiple_of(CHARGE_CHUNK) {
                tessera_common::breaker::charge_current(
                    CHARGE_CHUNK as u64 * BUCKET_BYTES,
                    tessera_common::breaker::REUSED_ARRAYS,
                );
            }
            self.keys.push((parent, key));
        }
        self.recent[slot] = (parent, key, ord);
        ord
    }

    /// The `(key, ordinal)` pairs of `parent`'s buckets, in allocation order. Call once
    /// collection is over.
    pub fn buckets_of(&mut self, parent: u32) -> &[(u64, u32)] {
        let parent = if self.single_parent { 0 } else { parent };
        let grouped = self.by_parent.get_or_insert_with(|| {
            let mut grouped: IntMap<u32, Vec<(u64, u32)>> = IntMap::default();
            for (ord, (p, key)) in self.keys.iter().enumerate() {
                grouped.entry(*p).or_default().push((*key, ord as u32));
            }
            grouped
        });
        grouped.get(&parent).map_or(&[], |v| v.as_slice())
    }
}

/// What [`IndexOrds::lookup`] answers for an index it has not been told about.
pub const UNSEEN: u32 = u32::MAX;
/// An ordinal value callers may store for "no bucket" (an index outside hard bounds).
pub const NO_BUCKET: u32 = u32::MAX - 1;

/// The most indexes [`IndexOrds`] keeps in its array (64K entries, 256 KiB).
const MAX_SPAN: i64 = 1 << 16;

/// Ordinals of the buckets of a single parent keyed by a small integer (a histogram's step
/// number), in an array rather than a hash map: the lookup of the hot loop of a histogram with
/// sub-aggregations becomes one bounds check and one load. [`BucketOrds`] still hands out the
/// ordinals; this only remembers them. Indexes too far from the first ones seen are not
/// remembered (the caller asks [`BucketOrds`] each time), so a sparse histogram cannot blow
/// the array up.
#[derive(Default)]
pub struct IndexOrds {
    /// The index of `ords[0]`.
    base: i64,
    ords: Vec<u32>,
}

impl IndexOrds {
    /// The ordinal remembered for `index`, or [`UNSEEN`].
    #[inline]
    pub fn lookup(&self, index: i64) -> u32 {
        let i = index.wrapping_sub(self.base) as u64;
        if i < self.ords.len() as u64 {
            self.ords[i as usize]
        } else {
            UNSEEN
        }
    }

    /// Remembers `ord` for `index` when the array can cover it.
    pub fn remember(&mut self, index: i64, ord: u32) {
        if self.ords.is_empty() {
            self.base = index;
        }
        let (low, high) = (self.base.min(index), self.top().max(index));
        if high.saturating_sub(low) >= MAX_SPAN {
            return;
        }
        if low < self.base {
            let grow = (self.base - low) as usize;
            self.ords.splice(0..0, std::iter::repeat_n(UNSEEN, grow));
            self.base = low;
        }
        let i = (index - self.base) as usize;
        if i >= self.ords.len() {
            self.ords.resize(i + 1, UNSEEN);
        }
        self.ords[i] = ord;
    }

    /// The highest index the array covers (`base` when empty).
    fn top(&self) -> i64 {
        self.base + (self.ords.len() as i64 - 1).max(0)
    }
}

/// A growable per-ordinal array of counters or states.
pub fn slot<T: Default>(values: &mut Vec<T>, ord: u32) -> &mut T {
    let i = ord as usize;
    if i >= values.len() {
        values.resize_with(i + 1, T::default);
    }
    &mut values[i]
}

/// Like [`slot`], creating missing states with `make`.
pub fn slot_with<T>(values: &mut Vec<T>, ord: u32, make: impl Fn() -> T) -> &mut T {
    let i = ord as usize;
    if i >= values.len() {
        values.resize_with(i + 1, make);
    }
    &mut values[i]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tessera_common::breaker::{enter, CircuitBreakerService};

    #[test]
    fn new_buckets_are_charged_in_chunks_to_the_current_breaker() {
        let service = Arc::new(CircuitBreakerService::new(1 << 30));
        let chunk = CHARGE_CHUNK as u64 * BUCKET_BYTES;
        service
            .set_limits(&(2 * chunk).to_string(), "100%")
            .unwrap();
        let request = service.request();
        {
            let _current = enter(Some(request.clone()));
            let mut ords = BucketOrds::new(true);
            for key in 0..2 * CHARGE_CHUNK as u64 {
                ords.ord(0, key);
                ords.ord(0, key);
            }
            assert_eq!(request.held(), 2 * chunk);
            assert!(request.tripped().is_none());
            ords.ord(0, u64::MAX);
            let e = request.tripped().expect("a third chunk passes the limit");
            assert_eq!(e.kind(), "circuit_breaking_exception");
        }
        drop(request);
        assert_eq!(service.used(), 0);
    }

    #[test]
    fn ordinals_are_dense_and_per_parent() {
        let mut ords = BucketOrds::new(false);
        assert_eq!(ords.ord(0, 10), 0);
        assert_eq!(ords.ord(0, 10), 0);
        assert_eq!(ords.ord(1, 10), 1);
        assert_eq!(ords.ord(0, 11), 2);
        assert_eq!(ords.buckets_of(0), &[(10, 0), (11, 2)]);
        assert_eq!(ords.buckets_of(1), &[(10, 1)]);
    }

    #[test]
    fn single_parent_ignores_the_parent() {
        let mut ords = BucketOrds::new(true);
        assert_eq!(ords.ord(0, 7), 0);
        assert_eq!(ords.ord(3, 7), 0);
        assert_eq!(ords.buckets_of(5), &[(7, 0)]);
    }

    #[test]
    fn index_ords_remember_within_their_span_in_both_directions() {
        let mut ords = IndexOrds::default();
        assert_eq!(ords.lookup(5), UNSEEN);
        ords.remember(5, 0);
        ords.remember(2, 1);
        ords.remember(9, NO_BUCKET);
        assert_eq!(
            (ords.lookup(2), ords.lookup(5), ords.lookup(9)),
            (1, 0, NO_BUCKET)
        );
        assert_eq!(
            (ords.lookup(3), ords.lookup(1), ords.lookup(10)),
            (UNSEEN, UNSEEN, UNSEEN)
        );
        // too far from what it covers: not remembered, the caller keeps asking BucketOrds
        ords.remember(2 + MAX_SPAN, 3);
        ords.remember(9 - MAX_SPAN, 4);
        assert_eq!(ords.lookup(2 + MAX_SPAN), UNSEEN);
        assert_eq!(ords.lookup(9 - MAX_SPAN), UNSEEN);
        ords.remember(i64::MIN, 5);
        assert_eq!(ords.lookup(i64::MIN), UNSEEN);
        assert_eq!(ords.lookup(5), 0);
    }

    #[test]
    fn slots_grow() {
        let mut counts: Vec<u64> = Vec::new();
        *slot(&mut counts, 3) += 2;
        assert_eq!(counts, vec![0, 0, 0, 2]);
    }
}
