//! A searcher's per-segment plugin files (by segment ordinal), opened once.
//!
//! Opening maps a file, and tantivy keeps a map only while someone holds it: a file opened per
//! query faults in the pages the query reads and unmaps them after (for k-NN vectors that took
//! a third of a query's CPU on 150k vectors). A shard snapshot keeps each kind of file in a
//! [`PerSegmentCell`], opened by the first query that needs it. The k-NN crate is the lowest
//! that reads plugin files, so this lives here; `tessera-index`'s `ids` files use it too.

use std::sync::{Arc, OnceLock};

use tantivy::index::SegmentReader;
use tantivy::Searcher;

/// A file a segment may carry, opened from its reader.
pub trait SegmentFile: Sized + Send + Sync {
    /// The segment's file; `None` when the segment has none (a shard created before the file
    /// existed).
    fn open_in(reader: &SegmentReader) -> tantivy::Result<Option<Self>>;
}

/// The files of one searcher's segments, by segment ordinal.
pub struct PerSegment<T> {
    segments: Vec<Option<T>>,
}

impl<T: SegmentFile> PerSegment<T> {
    pub fn open(searcher: &Searcher) -> tantivy::Result<PerSegment<T>> {
        let segments = searcher
            .segment_readers()
            .iter()
            .map(T::open_in)
            .collect::<tantivy::Result<_>>()?;
        Ok(PerSegment { segments })
    }

    /// Segment `ord`'s file; `None` for a segment without one.
    pub fn segment(&self, ord: u32) -> Option<&T> {
        self.segments.get(ord as usize)?.as_ref()
    }
}

/// A shard snapshot's [`PerSegment`] files, opened by the first query that needs them and kept
/// as long as the snapshot (and so its searcher) lives.
pub struct PerSegmentCell<T>(OnceLock<Arc<PerSegment<T>>>);

impl<T> Default for PerSegmentCell<T> {
    fn default() -> Self {
        PerSegmentCell(OnceLock::new())
    }
}

impl<T: SegmentFile> PerSegmentCell<T> {
    /// The files of `searcher`, which must be the snapshot's own.
    pub fn get(&self, searcher: &Searcher) -> tantivy::Result<Arc<PerSegment<T>>> {
        if let Some(files) = self.0.get() {
            return Ok(files.clone());
        }
        let opened = Arc::new(PerSegment::open(searcher)?);
        Ok(self.0.get_or_init(|| opened).clone())
    }
}
