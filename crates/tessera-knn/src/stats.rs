//! The node's k-NN counters behind `_plugins/_knn/stats`: honest values only (requests by
//! kind, graphs built and walked, segments searched); the graph cache figures OpenSearch
//! reports for its native libraries stay zero (Tessera's graphs are read in place from the
//! segment's memory map: there is no cache to fill or evict).

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one process (a node).
#[derive(Default)]
pub struct KnnStats {
    pub knn_query_requests: AtomicU64,
    pub knn_query_with_filter_requests: AtomicU64,
    pub max_distance_query_requests: AtomicU64,
    pub max_distance_query_with_filter_requests: AtomicU64,
    pub min_score_query_requests: AtomicU64,
    pub min_score_query_with_filter_requests: AtomicU64,
    pub graph_query_requests: AtomicU64,
    pub graph_index_requests: AtomicU64,
    pub exact_segment_searches: AtomicU64,
    pub warmup_requests: AtomicU64,
}

/// The process's counters.
pub static STATS: KnnStats = KnnStats {
    knn_query_requests: AtomicU64::new(0),
    knn_query_with_filter_requests: AtomicU64::new(0),
    max_distance_query_requests: AtomicU64::new(0),
    max_distance_query_with_filter_requests: AtomicU64::new(0),
    min_score_query_requests: AtomicU64::new(0),
    min_score_query_with_filter_requests: AtomicU64::new(0),
    graph_query_requests: AtomicU64::new(0),
    graph_index_requests: AtomicU64::new(0),
    exact_segment_searches: AtomicU64::new(0),
    warmup_requests: AtomicU64::new(0),
};

impl KnnStats {
    /// A graph was built (flush or merge).
    pub(crate) fn graph_built(&self) {
        self.graph_index_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// A segment was searched through its graph.
    pub(crate) fn graph_searched(&self) {
        self.graph_query_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn segment_searched(&self) {
        self.exact_segment_searches.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a query by kind (`k`, `max_distance` or `min_score`), with or without filter.
    pub fn query(&self, kind: QueryKind, filtered: bool) {
        let counter = match (kind, filtered) {
            (QueryKind::TopK, false) => &self.knn_query_requests,
            (QueryKind::TopK, true) => &self.knn_query_with_filter_requests,
            (QueryKind::MaxDistance, false) => &self.max_distance_query_requests,
            (QueryKind::MaxDistance, true) => &self.max_distance_query_with_filter_requests,
            (QueryKind::MinScore, false) => &self.min_score_query_requests,
            (QueryKind::MinScore, true) => &self.min_score_query_with_filter_requests,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if filtered && kind == QueryKind::TopK {
            // OpenSearch counts a filtered k-NN query in both
            self.knn_query_requests.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn get(&self, counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// The kinds of k-NN queries OpenSearch counts apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    TopK,
    MaxDistance,
    MinScore,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind() {
        let stats = KnnStats::default();
        stats.query(QueryKind::TopK, true);
        stats.query(QueryKind::MinScore, false);
        assert_eq!(stats.get(&stats.knn_query_requests), 1);
        assert_eq!(stats.get(&stats.knn_query_with_filter_requests), 1);
        assert_eq!(stats.get(&stats.min_score_query_requests), 1);
    }
}
