//! The HNSW graph (Malkov & Yashunin; hnswlib's algorithm and defaults, with Lucene's denser
//! layer 0): a random level per node, greedy descent through the upper layers, an ef-bounded
//! best-first search on layer 0, and the neighbour-selection heuristic when linking.
//!
//! One file per responsibility: `build` inserts nodes into an in-memory graph, `format` writes it
//! and reads it back in place ([`HnswGraph`]), `search` walks either of them, `exact` is the
//! brute-force answer (small segments, fallbacks, and the tests' ground truth), `bound` shares a
//! k-th best distance between the searches of other segments (to drop hits that cannot win), `scratch` holds the per-thread
//! visited marks and heaps that a search reuses instead of allocating.

mod bound;
mod build;
mod exact;
mod format;
mod scratch;
mod search;

pub use bound::SharedBound;
pub use build::{build_graph, build_graph_from};
pub use exact::exact_search;
pub use format::HnswGraph;
pub use search::{SearchOutcome, SearchRequest};

/// Random access to a segment's vectors by ordinal 0..len (the storage side implements this over
/// a memory map; ordinals are dense).
pub trait VectorStore: Sync {
    fn dim(&self) -> usize;
    fn len(&self) -> u32;
    fn vector(&self, ord: u32) -> &[f32];
    /// Every vector at once, ordinal-major (`len * dim` floats), where the store holds them so:
    /// the graph then reads them without a virtual call per distance. None by default.
    fn contiguous(&self) -> Option<&[f32]> {
        None
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A store over one ordinal-major slice of floats (tests, benchmarks, small in-memory segments).
#[derive(Clone, Copy, Debug)]
pub struct SliceStore<'a> {
    data: &'a [f32],
    dim: usize,
}

impl<'a> SliceStore<'a> {
    /// `data.len()` must be a multiple of `dim` (a trailing partial vector is ignored).
    pub fn new(data: &'a [f32], dim: usize) -> Self {
        assert!(dim > 0, "a vector store needs a dimension above 0");
        let whole = data.len() / dim * dim;
        SliceStore {
            data: &data[..whole],
            dim,
        }
    }
}

impl VectorStore for SliceStore<'_> {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> u32 {
        (self.data.len() / self.dim) as u32
    }
    fn vector(&self, ord: u32) -> &[f32] {
        let start = ord as usize * self.dim;
        &self.data[start..start + self.dim]
    }
    fn contiguous(&self) -> Option<&[f32]> {
        Some(self.data)
    }
}

/// How a graph is built: `m` neighbours per node on the upper layers (2·m on layer 0) and the
/// breadth of the search that finds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HnswParams {
    pub m: usize,
    pub ef_construction: usize,
    pub seed: u64,
}

impl Default for HnswParams {
    /// OpenSearch's defaults: m 16, ef_construction 100.
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 100,
            seed: 42,
        }
    }
}

/// The neighbour lists of a graph, in memory while building or in place in a file.
pub(crate) trait Layers {
    /// The neighbours of `node` on `level` (the node must have that level).
    fn neighbors(&self, node: u32, level: usize) -> &[u32];
    /// Hints the CPU to start loading a node's layer-0 list, about to be expanded.
    #[inline]
    fn prefetch_links(&self, node: u32) {
        let _ = node;
    }
}

/// Prefetches the cache lines of `words` (a layer-0 block: 1 + 2·M words).
#[inline]
pub(crate) fn prefetch_words(words: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = words.len() * 4;
        let mut line = 0;
        while line < bytes {
            // SAFETY: prefetching reads nothing and cannot fault; the address is in the slice.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>((words.as_ptr() as *const i8).add(line));
            }
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = words;
}

/// The vectors a graph walk reads: a flat slice when the store has one, else virtual calls.
pub(crate) trait Vectors {
    fn get(&self, ord: u32) -> &[f32];
    /// Hints the CPU to start loading a vector that is about to be read.
    #[inline]
    fn prefetch(&self, ord: u32) {
        let _ = ord;
    }
}

/// A store's vectors as one ordinal-major slice.
#[derive(Clone, Copy)]
pub(crate) struct Flat<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) dim: usize,
}

impl Vectors for Flat<'_> {
    #[inline]
    fn get(&self, ord: u32) -> &[f32] {
        let start = ord as usize * self.dim;
        &self.data[start..start + self.dim]
    }

    #[inline]
    fn prefetch(&self, ord: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let start = ord as usize * self.dim;
            if start < self.data.len() {
                // SAFETY: prefetching reads nothing and cannot fault; the address is in bounds.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    let pointer = self.data.as_ptr().add(start) as *const i8;
                    let bytes = self.dim * 4;
                    let mut line = 0;
                    while line < bytes {
                        _mm_prefetch::<_MM_HINT_T0>(pointer.add(line));
                        line += 64;
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = ord;
    }
}

/// A store reached through its trait object.
#[derive(Clone, Copy)]
pub(crate) struct Dyn<'a>(pub(crate) &'a dyn VectorStore);

impl Vectors for Dyn<'_> {
    #[inline]
    fn get(&self, ord: u32) -> &[f32] {
        self.0.vector(ord)
    }
}

/// Evaluates `$body` with `$v` bound to the fastest view of `$store`'s vectors: the flat slice
/// when the store has one covering every ordinal, else the trait object (monomorphized for each).
macro_rules! with_vectors {
    ($store:expr, |$v:ident| $body:expr) => {{
        let store: &dyn $crate::hnsw::VectorStore = $store;
        let needed = store.len() as usize * store.dim();
        match store.contiguous() {
            Some(data) if data.len() >= needed => {
                let $v = $crate::hnsw::Flat {
                    data,
                    dim: store.dim(),
                };
                $body
            }
            _ => {
                let $v = $crate::hnsw::Dyn(store);
                $body
            }
        }
    }};
}
pub(crate) use with_vectors;

#[cfg(test)]
pub(crate) mod test_data {
    //! Clustered random vectors for the tests of every module.

    pub struct Rng(u64);

    impl Rng {
        pub fn new(seed: u64) -> Self {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        pub fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Uniform in [-1, 1).
        pub fn next_f32(&mut self) -> f32 {
            (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
    }

    /// `n` vectors of `dim` around `clusters` random centres (ordinal-major).
    pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let centres: Vec<f32> = (0..clusters * dim).map(|_| rng.next_f32()).collect();
        let mut out = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let c = (rng.next_u64() % clusters as u64) as usize;
            for d in 0..dim {
                out.push(centres[c * dim + d] + 0.35 * rng.next_f32());
            }
        }
        out
    }

    /// The share of the exact top-k (over the accepted ordinals) that the graph finds, averaged
    /// over the queries.
    pub fn recall(
        graph: &super::HnswGraph<'_>,
        store: &dyn super::VectorStore,
        queries: &[f32],
        k: usize,
        ef: usize,
        filter: Option<&dyn Fn(u32) -> bool>,
    ) -> f64 {
        let dim = store.dim();
        let mut found = 0;
        let mut wanted = 0;
        for query in queries.chunks_exact(dim) {
            let exact = super::exact_search(graph.space(), store, query, k, filter);
            let mut request = super::SearchRequest::new(query, k, ef);
            request.filter = filter;
            let outcome = graph.search(store, &request);
            wanted += exact.len();
            found += exact
                .iter()
                .filter(|(ord, _)| outcome.hits.iter().any(|(hit, _)| hit == ord))
                .count();
        }
        found as f64 / wanted.max(1) as f64
    }
}
