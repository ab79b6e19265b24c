//! Slice planning: which segments (or doc-id ranges of segments) each slice searches.
//!
//! A plain function of segment sizes, so tests can call it directly (as Lucene's `slices()`).
//! `max_slice_count = 0` is Lucene's heuristic (largest segments first, at most 250,000 docs or
//! 5 segments per slice); a fixed count assigns each part to the slice with the fewest docs,
//! splitting segments larger than an even share into doc-id ranges so that even a force-merged
//! single-segment shard can be searched in parallel.

use std::ops::Range;

/// Lucene's default limits for the slice heuristic.
pub const MAX_DOCS_PER_SLICE: u64 = 250_000;
pub const MAX_SEGMENTS_PER_SLICE: usize = 5;
/// Ranges smaller than this are not worth a task of their own.
pub const MIN_PARTITION_DOCS: u32 = 16_384;

/// A doc-id range of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentPart {
    pub segment_ord: u32,
    pub docs: Range<u32>,
}

impl SegmentPart {
    pub fn len(&self) -> u32 {
        self.docs.end - self.docs.start
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// The parts one task searches, in (segment, doc) order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    pub parts: Vec<SegmentPart>,
}

impl Slice {
    pub fn docs(&self) -> u64 {
        self.parts.iter().map(|p| p.len() as u64).sum()
    }
}

/// Plans slices over segments of `max_docs[i]` documents each.
pub fn plan_slices(max_docs: &[u32], max_slice_count: usize) -> Vec<Slice> {
    let whole: Vec<SegmentPart> = max_docs
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(ord, &n)| SegmentPart {
            segment_ord: ord as u32,
            docs: 0..n,
        })
        .collect();
    if whole.is_empty() {
        return vec![Slice::default()];
    }
    let mut slices = match max_slice_count {
        0 => lucene_slices(whole),
        1 => vec![Slice { parts: whole }],
        n => balanced_slices(whole, n),
    };
    for slice in &mut slices {
        slice.parts.sort_by_key(|p| (p.segment_ord, p.docs.start));
    }
    slices
}

fn lucene_slices(mut parts: Vec<SegmentPart>) -> Vec<Slice> {
    parts.sort_by(|a, b| {
        b.len()
            .cmp(&a.len())
            .then(a.segment_ord.cmp(&b.segment_ord))
    });
    let mut slices = Vec::new();
    let mut current = Slice::default();
    let mut docs = 0u64;
    for part in parts {
        if part.len() as u64 > MAX_DOCS_PER_SLICE {
            slices.push(Slice { parts: vec![part] });
            continue;
        }
        docs += part.len() as u64;
        current.parts.push(part);
        if docs > MAX_DOCS_PER_SLICE || current.parts.len() >= MAX_SEGMENTS_PER_SLICE {
            slices.push(std::mem::take(&mut current));
            docs = 0;
        }
    }
    if !current.parts.is_empty() {
        slices.push(current);
    }
    slices
}

fn balanced_slices(parts: Vec<SegmentPart>, count: usize) -> Vec<Slice> {
    let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
    let share = total.div_ceil(count as u64).max(1);
    // split segments larger than an even share into ranges of about one share
    let mut pieces = Vec::new();
    for part in parts {
        let len = part.len() as u64;
        if len > share && len >= 2 * MIN_PARTITION_DOCS as u64 {
            let ranges = len
                .div_ceil(share)
                .min(len / MIN_PARTITION_DOCS as u64)
                .max(1);
            let step = len.div_ceil(ranges) as u32;
            let mut start = part.docs.start;
            while start < part.docs.end {
                let end = (start + step).min(part.docs.end);
                pieces.push(SegmentPart {
                    segment_ord: part.segment_ord,
                    docs: start..end,
                });
                start = end;
            }
        } else {
            pieces.push(part);
        }
    }
    pieces.sort_by(|a, b| {
        b.len()
            .cmp(&a.len())
            .then(a.segment_ord.cmp(&b.segment_ord))
            .then(a.docs.start.cmp(&b.docs.start))
    });
    let mut slices: Vec<Slice> = (0..count).map(|_| Slice::default()).collect();
    let mut loads = vec![0u64; count];
    for piece in pieces {
        let lightest = (0..count)
            .min_by_key(|&i| (loads[i], i))
            .expect("count >= 2");
        loads[lightest] += piece.len() as u64;
        slices[lightest].parts.push(piece);
    }
    slices.retain(|s| !s.parts.is_empty());
    slices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(slices: &[Slice], max_docs: &[u32]) -> bool {
        let mut seen: Vec<Vec<bool>> = max_docs.iter().map(|&n| vec![false; n as usize]).collect();
        for slice in slices {
            for part in &slice.parts {
                for doc in part.docs.clone() {
                    let cell = &mut seen[part.segment_ord as usize][doc as usize];
                    if *cell {
                        return false;
                    }
                    *cell = true;
                }
            }
        }
        seen.iter().all(|s| s.iter().all(|&b| b))
    }

    #[test]
    fn single_slice_holds_everything_in_order() {
        let slices = plan_slices(&[10, 0, 30], 1);
        assert_eq!(slices.len(), 1);
        assert_eq!(
            slices[0]
                .parts
                .iter()
                .map(|p| p.segment_ord)
                .collect::<Vec<_>>(),
            [0, 2]
        );
    }

    #[test]
    fn lucene_heuristic_limits_docs_and_segments() {
        let slices = plan_slices(
            &[300_000, 100_000, 100_000, 100_000, 10, 10, 10, 10, 10, 10],
            0,
        );
        assert_eq!(
            slices[0].parts.len(),
            1,
            "a segment over 250k docs is alone"
        );
        assert!(slices
            .iter()
            .all(|s| s.parts.len() <= MAX_SEGMENTS_PER_SLICE));
        assert!(covered(
            &slices,
            &[300_000, 100_000, 100_000, 100_000, 10, 10, 10, 10, 10, 10]
        ));
    }

    #[test]
    fn fixed_counts_balance_and_partition_big_segments() {
        let sizes = [1_000_000u32];
        let slices = plan_slices(&sizes, 4);
        assert_eq!(slices.len(), 4);
        assert!(covered(&slices, &sizes));
        let docs: Vec<u64> = slices.iter().map(|s| s.docs()).collect();
        assert!(docs.iter().all(|&d| d == 250_000), "{docs:?}");

        let sizes = [500_000u32, 300_000, 200_000, 100_000, 50_000];
        for count in 2..=8 {
            let slices = plan_slices(&sizes, count);
            assert!(slices.len() <= count);
            assert!(covered(&slices, &sizes), "count {count}");
            let max = slices.iter().map(|s| s.docs()).max().unwrap();
            let min = slices.iter().map(|s| s.docs()).min().unwrap();
            assert!(
                max - min <= 1_150_000 / count as u64,
                "count {count}: {min}..{max}"
            );
        }
    }

    #[test]
    fn tiny_segments_are_not_split() {
        let slices = plan_slices(&[100], 8);
        assert_eq!(slices.len(), 1);
        assert_eq!(plan_slices(&[], 4), vec![Slice::default()]);
    }
}
