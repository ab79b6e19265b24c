//! The k-NN rewrite's slices: a `knn` query searches its segments before the request's weight
//! is built (see `tessera_knn::search`), so it runs them on the shard's concurrent segment
//! search itself: the same mode and `max_slice_count` as the query phase, the same
//! `index_searcher` pool, and for `auto` its own cost (a graph walk ≈ ef·M·log n distance
//! computations, exact ≈ n, each times dim) instead of the documents a scorer visits.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tessera_knn::search::{ShardHit, SliceRunner, SliceTask};

use crate::concurrent::{ConcurrentMode, SliceExecutor, Work};

/// Vector-element operations (multiply-adds of a distance) per unit of `auto`'s work, whose
/// unit is a document visited by a scorer: both take a few nanoseconds.
pub const VECTOR_OPS_PER_DOC: u64 = 16;

/// A shard request's slices, lent to its `knn` rewrite.
pub struct KnnSlices {
    pub executor: Arc<SliceExecutor>,
    pub mode: ConcurrentMode,
    /// `max_slice_count` (0: none).
    pub cap: usize,
    pub cancelled: Arc<AtomicBool>,
}

impl SliceRunner for KnnSlices {
    fn slice_count(&self, total_cost: u64) -> usize {
        match self.mode {
            ConcurrentMode::None => 1,
            // Lucene's heuristic has no meaning for per-segment graph walks: one slice per core
            ConcurrentMode::All if self.cap == 0 => self.executor.cores(),
            ConcurrentMode::All => self.cap,
            ConcurrentMode::Auto => self
                .executor
                .auto_slices(Work::Docs(total_cost / VECTOR_OPS_PER_DOC), self.cap),
        }
    }

    fn run(&self, tasks: Vec<SliceTask>) -> tantivy::Result<Vec<Vec<ShardHit>>> {
        let tasks: Vec<_> = tasks
            .into_iter()
            .map(|task| {
                move || {
                    task().map_err(|e| tessera_common::Error::internal("search a k-NN slice", e))
                }
            })
            .collect();
        // carried as text, so that the query's compile gives back the same error (a cancelled
        // request stays a `task_cancelled_exception`)
        self.executor
            .run(tasks, &self.cancelled)
            .map_err(|e| tantivy::TantivyError::InternalError(e.to_carried_text()))
    }
}
