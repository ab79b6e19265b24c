//! The serialized graph, read in place: a segment's graph file is memory-mapped and searched
//! without copying it or allocating per node.
//!
//! Layout (little-endian; every section starts on an 8-byte boundary of the file):
//!
//! ```text
//! header (64 bytes): magic "TSHNSW\0\0", version u32, space u32, m u32, m0 u32, len u32, dim u32,
//!                    entry u32, max_level u32, ef_construction u32, upper_words u32, 16 zero bytes
//! levels        len × u8                      each node's top level
//! layer0        len × (1 + m0) × u32          count, then m0 neighbour slots (fixed width)
//! upper_start   len × u32                     where a node's upper blocks start in `upper`
//! upper         upper_words × u32             per node with level L > 0: L blocks of (1 + m) u32,
//!                                             levels 1..=L, each a count then m slots
//! ```
//!
//! Opening checks the header and every section's length in O(1), so a truncated or corrupt file
//! is an `Err`, never a panic; neighbour ids and upper blocks are bounds-checked when walked,
//! so a graph whose lists are garbage still only gives bad answers. The u32 sections are
//! borrowed when the bytes are 4-byte aligned (a memory map is) and copied once when they are
//! not.

use std::borrow::Cow;

use super::Layers;
use crate::distance::Space;

const MAGIC: [u8; 8] = *b"TSHNSW\0\0";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 64;
/// Levels are stored as bytes; hnswlib's level distribution never comes near this.
pub(crate) const MAX_LEVEL: usize = 32;

/// A graph read in place from bytes (e.g. a memory map): no copy, no per-node allocation.
#[derive(Clone, Debug)]
pub struct HnswGraph<'a> {
    space: Space,
    m: u32,
    m0: u32,
    len: u32,
    dim: u32,
    entry: u32,
    max_level: u32,
    ef_construction: u32,
    levels: &'a [u8],
    layer0: Cow<'a, [u32]>,
    upper_start: Cow<'a, [u32]>,
    upper: Cow<'a, [u32]>,
}

/// The parts of a graph, as the builder holds them, to write out.
pub(crate) struct GraphParts<'p> {
    pub(crate) space: Space,
    pub(crate) m: u32,
    pub(crate) m0: u32,
    pub(crate) dim: u32,
    pub(crate) ef_construction: u32,
    pub(crate) entry: Option<u32>,
    pub(crate) max_level: u32,
    pub(crate) levels: &'p [u8],
    /// len × (1 + m0).
    pub(crate) layer0: &'p [u32],
    /// Per node: level × (1 + m).
    pub(crate) upper: &'p [Vec<u32>],
}

fn pad8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

fn push_words(out: &mut Vec<u8>, words: &[u32]) {
    out.reserve(words.len() * 4);
    for word in words {
        out.extend_from_slice(&word.to_le_bytes());
    }
    pad8(out);
}

/// The bytes of a graph.
pub(crate) fn write(parts: &GraphParts<'_>) -> Vec<u8> {
    let len = parts.levels.len();
    let mut upper_start = Vec::with_capacity(len);
    let mut words = 0usize;
    for blocks in parts.upper {
        upper_start.push(words as u32);
        words += blocks.len();
    }
    let mut out = Vec::with_capacity(HEADER_LEN + len * (9 + 4 * parts.m0 as usize) + words * 4);
    out.extend_from_slice(&MAGIC);
    for word in [
        VERSION,
        parts.space.code(),
        parts.m,
        parts.m0,
        len as u32,
        parts.dim,
        parts.entry.unwrap_or(u32::MAX),
        parts.max_level,
        parts.ef_construction,
        words as u32,
    ] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.resize(HEADER_LEN, 0);
    out.extend_from_slice(parts.levels);
    pad8(&mut out);
    push_words(&mut out, parts.layer0);
    push_words(&mut out, &upper_start);
    for blocks in parts.upper {
        for word in blocks {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
    pad8(&mut out);
    out
}

/// `count` u32 words at `bytes`: borrowed when aligned on a little-endian machine, else copied.
fn words(bytes: &[u8]) -> Cow<'_, [u32]> {
    if cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid u32; `align_to` only yields an aligned middle.
        let (head, middle, tail) = unsafe { bytes.align_to::<u32>() };
        if head.is_empty() && tail.is_empty() {
            return Cow::Borrowed(middle);
        }
    }
    Cow::Owned(
        bytes
            .chunks_exact(4)
            .map(|chunk| u32::from_le_bytes(chunk.try_into().expect("4 bytes")))
            .collect(),
    )
}

/// Cuts the file into sections, each checked against what is left.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], String> {
        let padded = len.div_ceil(8) * 8;
        let left = (self.bytes.len() - self.at) as u64;
        if padded > left {
            return Err(format!(
                "hnsw graph truncated: {what} needs {padded} bytes at offset {}, {left} left",
                self.at
            ));
        }
        let section = &self.bytes[self.at..self.at + len as usize];
        self.at += padded as usize;
        Ok(section)
    }
}

impl<'a> HnswGraph<'a> {
    /// Reads a graph from its bytes; Err on a corrupt or truncated file (never panics).
    pub fn open(bytes: &'a [u8]) -> Result<Self, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!(
                "hnsw graph truncated: {} bytes, the header alone is {HEADER_LEN}",
                bytes.len()
            ));
        }
        if bytes[..8] != MAGIC {
            return Err("not an hnsw graph: bad magic".to_string());
        }
        let word = |i: usize| {
            let at = 8 + 4 * i;
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let version = word(0);
        if version != VERSION {
            return Err(format!(
                "hnsw graph version {version} is not supported (expected {VERSION})"
            ));
        }
        let space = Space::from_code(word(1))
            .ok_or_else(|| format!("hnsw graph has an unknown space code {}", word(1)))?;
        let (m, m0, len, dim) = (word(2), word(3), word(4), word(5));
        let (entry, max_level, ef_construction, upper_words) = (word(6), word(7), word(8), word(9));
        if m == 0 || m0 < m || m0 > 1 << 16 {
            return Err(format!("hnsw graph has bad link widths m {m}, m0 {m0}"));
        }
        if max_level as usize > MAX_LEVEL {
            return Err(format!("hnsw graph has a bad top level {max_level}"));
        }
        if len > 0 && entry >= len {
            return Err(format!(
                "hnsw graph's entry point {entry} is not below its {len} nodes"
            ));
        }
        let mut cursor = Cursor {
            bytes,
            at: HEADER_LEN,
        };
        let n = len as u64;
        let levels = cursor.take(n, "levels")?;
        let layer0 = words(cursor.take(n * (1 + m0 as u64) * 4, "layer 0")?);
        let upper_start = words(cursor.take(n * 4, "upper layer offsets")?);
        let upper = words(cursor.take(upper_words as u64 * 4, "upper layers")?);
        if cursor.at != bytes.len() {
            return Err(format!(
                "hnsw graph has {} bytes after its last section",
                bytes.len() - cursor.at
            ));
        }
        // Nodes' levels and upper blocks are not checked here, which would cost a pass over every
        // node each time a segment's graph is opened (once per query): `neighbors` bounds-checks
        // what it reads instead.
        if len > 0 && levels[entry as usize] as u32 != max_level {
            return Err("hnsw graph's entry point is not on the top level".to_string());
        }
        Ok(HnswGraph {
            space,
            m,
            m0,
            len,
            dim,
            entry,
            max_level,
            ef_construction,
            levels,
            layer0,
            upper_start,
            upper,
        })
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn space(&self) -> Space {
        self.space
    }

    /// The dimension of the vectors it was built over.
    pub fn dim(&self) -> usize {
        self.dim as usize
    }

    /// Neighbours per node on the upper layers (twice that on layer 0).
    pub fn m(&self) -> usize {
        self.m as usize
    }

    pub fn ef_construction(&self) -> usize {
        self.ef_construction as usize
    }

    /// Where every search starts (a node on the top level); meaningless when empty.
    pub fn entry(&self) -> u32 {
        self.entry
    }

    pub fn max_level(&self) -> usize {
        self.max_level as usize
    }

    /// A node's top level.
    pub fn level(&self, node: u32) -> usize {
        self.levels[node as usize] as usize
    }

    /// A node's neighbours on a level (empty above its top level).
    pub fn neighbors_of(&self, node: u32, level: usize) -> &[u32] {
        Layers::neighbors(self, node, level)
    }
}

impl HnswGraph<'_> {
    /// The same graph with node `i` renamed `new_ids[i]` (a permutation of `0..len`): a merge
    /// that reuses a source graph inserts that source's vectors first, whatever their place
    /// among the merged segment's ordinals, and renames the nodes to ordinals afterwards.
    ///
    /// Panics when `new_ids` is not as long as the graph (a caller's bug).
    pub fn relabel(&self, new_ids: &[u32]) -> Vec<u8> {
        let len = self.len as usize;
        assert_eq!(new_ids.len(), len, "a relabelling of another length");
        let m = self.m as usize;
        let m0 = self.m0 as usize;
        let rename = |old: u32| new_ids.get(old as usize).copied().unwrap_or(old);
        let mut levels = vec![0u8; len];
        let mut layer0 = vec![0u32; len * (1 + m0)];
        let mut upper: Vec<Vec<u32>> = vec![Vec::new(); len];
        for (old, &new) in new_ids.iter().enumerate() {
            let new = new as usize;
            levels[new] = self.levels[old];
            let source = &self.layer0[old * (1 + m0)..][..1 + m0];
            let target = &mut layer0[new * (1 + m0)..][..1 + m0];
            let count = (source[0] as usize).min(m0);
            target[0] = count as u32;
            for i in 0..count {
                target[1 + i] = rename(source[1 + i]);
            }
            let level = self.levels[old] as usize;
            if level > 0 {
                let start = self.upper_start[old] as usize;
                let mut blocks = self
                    .upper
                    .get(start..start + level * (1 + m))
                    .map(<[u32]>::to_vec)
                    .unwrap_or_default();
                for block in blocks.chunks_mut(1 + m) {
                    let count = (block[0] as usize).min(m);
                    for slot in &mut block[1..1 + count] {
                        *slot = rename(*slot);
                    }
                }
                upper[new] = blocks;
            }
        }
        write(&GraphParts {
            space: self.space,
            m: self.m,
            m0: self.m0,
            dim: self.dim,
            ef_construction: self.ef_construction,
            entry: (len > 0).then(|| rename(self.entry)),
            max_level: self.max_level,
            levels: &levels,
            layer0: &layer0,
            upper: &upper,
        })
    }
}

impl Layers for HnswGraph<'_> {
    #[inline]
    fn prefetch_links(&self, node: u32) {
        let stride = 1 + self.m0 as usize;
        let start = node as usize * stride;
        if let Some(block) = self.layer0.get(start..start + stride) {
            super::prefetch_words(block);
        }
    }

    #[inline]
    fn neighbors(&self, node: u32, level: usize) -> &[u32] {
        let node = node as usize;
        if level == 0 {
            let stride = 1 + self.m0 as usize;
            let block = &self.layer0[node * stride..(node + 1) * stride];
            let count = (block[0] as usize).min(stride - 1);
            &block[1..1 + count]
        } else {
            if level > self.levels[node] as usize {
                return &[];
            }
            let stride = 1 + self.m as usize;
            let start = self.upper_start[node] as usize + (level - 1) * stride;
            let Some(block) = self.upper.get(start..start + stride) else {
                return &[];
            };
            let count = (block[0] as usize).min(stride - 1);
            &block[1..1 + count]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hnsw::test_data::clustered;
    use crate::hnsw::{build_graph, HnswParams, SliceStore};

    fn sample() -> Vec<u8> {
        let data = clustered(300, 8, 5, 1);
        build_graph(
            Space::L2,
            &SliceStore::new(&data, 8),
            &HnswParams::default(),
        )
    }

    #[test]
    fn a_relabelled_graph_has_the_same_links_under_the_new_names() {
        let bytes = sample();
        let graph = HnswGraph::open(&bytes).unwrap();
        // a rotation by 7
        let new_ids: Vec<u32> = (0..300u32).map(|i| (i + 7) % 300).collect();
        let moved = graph.relabel(&new_ids);
        let relabelled = HnswGraph::open(&moved).unwrap();
        assert_eq!(relabelled.entry(), new_ids[graph.entry() as usize]);
        assert_eq!(relabelled.max_level(), graph.max_level());
        for old in 0..300u32 {
            let new = new_ids[old as usize];
            assert_eq!(relabelled.level(new), graph.level(old));
            for level in 0..=graph.level(old) {
                let renamed: Vec<u32> = graph
                    .neighbors_of(old, level)
                    .iter()
                    .map(|&n| new_ids[n as usize])
                    .collect();
                assert_eq!(relabelled.neighbors_of(new, level), renamed.as_slice());
            }
        }
    }

    #[test]
    fn a_built_graph_opens_with_its_header_values() {
        let bytes = sample();
        assert_eq!(bytes.len() % 8, 0);
        let graph = HnswGraph::open(&bytes).unwrap();
        assert_eq!(graph.len(), 300);
        assert_eq!(graph.space(), Space::L2);
        assert_eq!(graph.dim(), 8);
        assert_eq!(graph.m(), 16);
        assert_eq!(graph.level(graph.entry()), graph.max_level());
        for node in 0..300 {
            assert!(!graph.neighbors_of(node, 0).is_empty());
            assert!(graph.neighbors_of(node, 0).len() <= 32);
            assert!(graph
                .neighbors_of(node, 0)
                .iter()
                .all(|&n| n < 300 && n != node));
            for level in 1..=graph.level(node) {
                assert!(graph.neighbors_of(node, level).len() <= 16);
            }
        }
    }

    #[test]
    fn unaligned_bytes_open_to_the_same_graph() {
        let bytes = sample();
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        let aligned = HnswGraph::open(&bytes).unwrap();
        let unaligned = HnswGraph::open(&shifted[1..]).unwrap();
        for node in 0..300 {
            assert_eq!(
                aligned.neighbors_of(node, 0),
                unaligned.neighbors_of(node, 0)
            );
        }
    }

    #[test]
    fn an_empty_graph_round_trips() {
        let bytes = build_graph(
            Space::InnerProduct,
            &SliceStore::new(&[], 4),
            &HnswParams::default(),
        );
        let graph = HnswGraph::open(&bytes).unwrap();
        assert!(graph.is_empty());
        assert_eq!(graph.space(), Space::InnerProduct);
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let bytes = sample();
        for cut in (0..bytes.len()).step_by(7) {
            assert!(HnswGraph::open(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 8]);
        assert!(HnswGraph::open(&longer).is_err());
        let patch = |at: usize, value: u32| {
            let mut bad = bytes.clone();
            bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
            bad
        };
        let mut bad_magic = bytes.clone();
        bad_magic[0] = b'X';
        for bad in [
            bad_magic,
            patch(8, 2),         // version
            patch(12, 9),        // space
            patch(16, 0),        // m
            patch(20, 3),        // m0 < m
            patch(24, 301),      // len
            patch(24, u32::MAX), // len, overflowing sizes
            patch(32, 300),      // entry
            patch(36, 99),       // max_level
            patch(44, 1),        // upper words
            patch(44, u32::MAX), // upper words
        ] {
            assert!(HnswGraph::open(&bad).is_err());
        }
        // Flipping any byte anywhere either fails to open or opens to a graph that can be walked.
        let data = clustered(300, 8, 5, 1);
        let store = SliceStore::new(&data, 8);
        for at in (0..bytes.len()).step_by(13) {
            let mut bad = bytes.clone();
            bad[at] ^= 0xA5;
            if let Ok(graph) = HnswGraph::open(&bad) {
                if graph.len() <= 300 && graph.dim() == 8 {
                    let request = crate::hnsw::SearchRequest::new(&data[..8], 5, 20);
                    let outcome = graph.search(&store, &request);
                    assert!(outcome.hits.iter().all(|&(ord, _)| ord < 300));
                }
            }
        }
    }
}
