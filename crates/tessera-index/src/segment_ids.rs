//! The `ids` file: each segment's `_id`s in doc order, read in place by the fetch phase.
//!
//! A hit that does not return its source (`_source: false`, every k-NN benchmark) still shows
//! its `_id`. The document store holds it, but reading one hit there decompresses a 16 KiB
//! block and deserializes the whole document; a string column would do it in a dictionary
//! lookup that scans half an sstable block (≈ 1,000 entries for short ids). On 100 k-NN hits
//! the first cost 2 ms, the second 1.9 ms, more than the vector search itself. This file answers
//! with one small block: 64 ids, LZ4-compressed (auto-generated ids share most of their bytes
//! with their neighbours', so the file stays a fraction of their raw size). It is written by a
//! tantivy [`SegmentPlugin`] at every flush and merge, like the `knn` file, so it lives and dies
//! with the segment (replication and snapshots copy it as any other segment file). Shards
//! created before it existed have none and read the store.
//!
//! The file, little endian:
//!
//! ```text
//! blocks   per 64 docs (the last may hold fewer), an LZ4 block, its size prepended, of
//!          n u16 id lengths then the n ids (a document without one, a nested child: 0)
//! starts   (block_count + 1) u64, block b being bytes[starts[b]..starts[b + 1]]
//! footer   max_doc u32, MAGIC u32
//! ```

use std::any::Any;
use std::io::Write;

use tantivy::directory::{OwnedBytes, TerminatingWrite};
use tantivy::index::{SegmentComponent, SegmentReader};
use tantivy::indexer::doc_id_mapping::{DocIdMapping, MappingType};
use tantivy::plugin::{PluginMergeContext, PluginWriter, PluginWriterContext, SegmentPlugin};
use tantivy::schema::document::{ErasedDocument, ErasedValue, ReferenceValueLeaf};
use tantivy::schema::{Field, Schema, Value};
use tantivy::{DocId, Segment, TantivyDocument, TantivyError};
use tessera_knn::per_segment::{PerSegment, PerSegmentCell, SegmentFile};
use tessera_mapping::field_table::ID_FIELD;

use crate::index_queue::QueuedDoc;

/// The segment file's extension (`<segment>.ids`).
pub const EXTENSION: &str = "ids";
const MAGIC: u32 = 0x3244_4954; // "TID2"
const FOOTER_LEN: usize = 8;
/// Documents per compressed block.
const BLOCK_DOCS: usize = 64;
/// The longest id a block holds: OpenSearch's limit, which the REST layer enforces. A longer
/// one (a script can set any `_id`) is left to the document store, so that it never fails a
/// flush; the reader refuses a block claiming more, and never allocates beyond this bound.
const MAX_ID_LEN: usize = tessera_common::ids::MAX_ID_BYTES;

fn component() -> SegmentComponent {
    SegmentComponent::Custom(EXTENSION.to_string())
}

fn corrupt(what: impl Into<String>) -> TantivyError {
    TantivyError::InternalError(format!("segment ids: {}", what.into()))
}

/// The plugin every shard created since the `ids` file exists registers.
#[derive(Default)]
pub struct IdsPlugin;

impl SegmentPlugin for IdsPlugin {
    fn extensions(&self) -> &[&str] {
        &[EXTENSION]
    }

    fn create_writer(&self, ctx: &PluginWriterContext) -> tantivy::Result<Box<dyn PluginWriter>> {
        Ok(Box::new(IdsWriter {
            field: ctx.segment.schema().get_field(ID_FIELD).ok(),
            ids: IdsBuffer::default(),
        }))
    }

    fn merge(&self, ctx: PluginMergeContext) -> tantivy::Result<()> {
        if ctx.doc_id_mapping.mapping_type() == MappingType::Shuffled {
            return Err(corrupt(
                "a merge that reorders documents (index sorting) is not supported",
            ));
        }
        // the merged doc ids: the sources' alive docs, stacked in reader order (what tantivy
        // does without index sorting; its own mapping is crate-private)
        let mut ids = IdsBuffer::default();
        for reader in ctx.readers {
            let source = SegmentIds::open(reader)?
                .ok_or_else(|| corrupt("a merged segment has no ids file"))?;
            let alive = reader.alive_bitset();
            let mut block = Block::default();
            for doc in 0..reader.max_doc() {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    let index = doc as usize / BLOCK_DOCS;
                    if block.index != Some(index) {
                        block = source.block(index)?;
                    }
                    ids.push(block.id(doc as usize % BLOCK_DOCS));
                }
            }
        }
        ids.write(ctx.target_segment)
    }
}

/// The ids of a segment being written or merged: the compressed blocks so far and the one
/// being filled.
struct IdsBuffer {
    docs: usize,
    blocks: Vec<u8>,
    starts: Vec<u64>,
    lengths: Vec<u16>,
    pending: Vec<u8>,
}

impl Default for IdsBuffer {
    fn default() -> Self {
        IdsBuffer {
            docs: 0,
            blocks: Vec::new(),
            starts: vec![0],
            lengths: Vec::with_capacity(BLOCK_DOCS),
            pending: Vec::new(),
        }
    }
}

impl IdsBuffer {
    /// Appends the next document's id (empty: none here, the store has it).
    fn push(&mut self, id: &[u8]) {
        let id = if id.len() > MAX_ID_LEN { &[] } else { id };
        self.lengths.push(id.len() as u16);
        self.pending.extend_from_slice(id);
        self.docs += 1;
        if self.lengths.len() == BLOCK_DOCS {
            self.flush_block();
        }
    }

    fn flush_block(&mut self) {
        if self.lengths.is_empty() {
            return;
        }
        let mut raw = Vec::with_capacity(self.lengths.len() * 2 + self.pending.len());
        for length in &self.lengths {
            raw.extend_from_slice(&length.to_le_bytes());
        }
        raw.extend_from_slice(&self.pending);
        self.blocks
            .extend_from_slice(&lz4_flex::block::compress_prepend_size(&raw));
        self.starts.push(self.blocks.len() as u64);
        self.lengths.clear();
        self.pending.clear();
    }

    /// The file's bytes.
    fn finish(mut self) -> Vec<u8> {
        self.flush_block();
        let mut file = self.blocks;
        file.extend(self.starts.iter().flat_map(|v| v.to_le_bytes()));
        file.extend_from_slice(&(self.docs as u32).to_le_bytes());
        file.extend_from_slice(&MAGIC.to_le_bytes());
        file
    }

    fn write(self, segment: &Segment) -> tantivy::Result<()> {
        let mut out = segment.open_write(component())?;
        out.write_all(&self.finish())?;
        out.terminate()?;
        Ok(())
    }
}

/// Collects a segment's ids while it is indexed.
struct IdsWriter {
    /// `None` in a schema without `_id` (tests of other components): every id is empty.
    field: Option<Field>,
    ids: IdsBuffer,
}

impl IdsWriter {
    /// The `_id` of a document: read directly from the shard's own document types, walked
    /// through the erased fields of any other.
    fn id_of<'a>(&self, doc: &'a dyn ErasedDocument) -> Option<&'a str> {
        let id_field = self.field?;
        let any = doc.as_any();
        let tantivy_doc = any
            .downcast_ref::<QueuedDoc>()
            .map(QueuedDoc::document)
            .or_else(|| any.downcast_ref::<TantivyDocument>());
        if let Some(tantivy_doc) = tantivy_doc {
            return tantivy_doc.get_first(id_field).and_then(|v| v.as_str());
        }
        doc.erased_fields().find_map(|(field, value)| match value {
            ErasedValue::Leaf(ReferenceValueLeaf::Str(id)) if field == id_field => Some(id),
            _ => None,
        })
    }
}

impl PluginWriter for IdsWriter {
    fn add_document(
        &mut self,
        doc_id: DocId,
        doc: &dyn ErasedDocument,
        _schema: &Schema,
    ) -> tantivy::Result<()> {
        if doc_id as usize != self.ids.docs {
            return Err(corrupt(format!(
                "document {doc_id} came after {} documents",
                self.ids.docs
            )));
        }
        let id = self.id_of(doc).unwrap_or_default();
        self.ids.push(id.as_bytes());
        Ok(())
    }

    fn serialize(
        self: Box<Self>,
        segment: &Segment,
        doc_id_map: Option<&DocIdMapping>,
    ) -> tantivy::Result<()> {
        if doc_id_map.is_some() {
            return Err(corrupt("index sorting is not supported"));
        }
        self.ids.write(segment)
    }

    fn mem_usage(&self) -> usize {
        self.ids.blocks.capacity() + self.ids.starts.capacity() * 8 + self.ids.pending.capacity()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// One decompressed block: its index, the ids' lengths, then the ids.
#[derive(Default)]
struct Block {
    index: Option<usize>,
    raw: Vec<u8>,
    /// Where each id starts in `raw`, and where the last one ends.
    bounds: Vec<usize>,
}

impl Block {
    /// The id of the block's `i`th document (empty when it has none or past the block's end).
    fn id(&self, i: usize) -> &[u8] {
        match (self.bounds.get(i), self.bounds.get(i + 1)) {
            (Some(&start), Some(&end)) => &self.raw[start..end],
            _ => &[],
        }
    }
}

/// A segment's `ids` file, opened on its bytes (the memory map).
pub struct SegmentIds {
    bytes: OwnedBytes,
    max_doc: u32,
    /// Where the block starts are.
    starts_at: usize,
}

impl SegmentIds {
    /// The segment's ids; `None` for a segment without an `ids` file (a shard created before
    /// the file existed).
    pub fn open(reader: &SegmentReader) -> tantivy::Result<Option<SegmentIds>> {
        let Ok(slice) = reader.open_read(component()) else {
            return Ok(None);
        };
        let ids = SegmentIds::from_bytes(slice.read_bytes()?)?;
        if ids.max_doc != reader.max_doc() {
            return Err(corrupt(format!(
                "the file has {} documents, the segment {}",
                ids.max_doc,
                reader.max_doc()
            )));
        }
        Ok(Some(ids))
    }

    fn from_bytes(bytes: OwnedBytes) -> tantivy::Result<SegmentIds> {
        let len = bytes.len();
        if len < FOOTER_LEN {
            return Err(corrupt("file too short"));
        }
        let footer = &bytes.as_slice()[len - FOOTER_LEN..];
        let u32_at = |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap());
        if u32_at(4) != MAGIC {
            return Err(corrupt("bad magic number"));
        }
        let max_doc = u32_at(0);
        let starts_len = (max_doc as usize).div_ceil(BLOCK_DOCS) * 8 + 8;
        let Some(starts_at) = (len - FOOTER_LEN).checked_sub(starts_len) else {
            return Err(corrupt("the block table lies outside the file"));
        };
        let ids = SegmentIds {
            bytes,
            max_doc,
            starts_at,
        };
        let blocks = ids.block_count();
        if ids.start(0) != 0 || ids.start(blocks) != starts_at as u64 {
            return Err(corrupt("the blocks do not match the file's length"));
        }
        Ok(ids)
    }

    fn block_count(&self) -> usize {
        (self.max_doc as usize).div_ceil(BLOCK_DOCS)
    }

    fn start(&self, block: usize) -> u64 {
        let at = self.starts_at + block * 8;
        u64::from_le_bytes(self.bytes.as_slice()[at..at + 8].try_into().unwrap())
    }

    /// Block `index`, decompressed.
    fn block(&self, index: usize) -> tantivy::Result<Block> {
        let (start, end) = (self.start(index) as usize, self.start(index + 1) as usize);
        let compressed = match (start <= end).then(|| self.bytes.as_slice().get(start..end)) {
            Some(Some(compressed)) if compressed.len() >= 4 => compressed,
            _ => return Err(corrupt(format!("block {index} lies outside the file"))),
        };
        let docs = BLOCK_DOCS.min(self.max_doc as usize - index * BLOCK_DOCS);
        let size = u32::from_le_bytes(compressed[..4].try_into().unwrap()) as usize;
        if size > docs * (2 + MAX_ID_LEN) {
            return Err(corrupt(format!("block {index} claims {size} bytes")));
        }
        let raw = lz4_flex::block::decompress_size_prepended(compressed)
            .map_err(|e| corrupt(format!("block {index}: {e}")))?;
        let mut bounds = Vec::with_capacity(docs + 1);
        let mut at = docs * 2;
        bounds.push(at);
        for i in 0..docs {
            let length = raw
                .get(i * 2..i * 2 + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                .ok_or_else(|| corrupt(format!("block {index} is too short")))?;
            at += length;
            bounds.push(at);
        }
        if at != raw.len() {
            return Err(corrupt(format!("block {index} has a bad length")));
        }
        Ok(Block {
            index: Some(index),
            raw,
            bounds,
        })
    }

    /// The `_id` of `doc`; `None` for a document without one (a nested child) or past the
    /// segment's end.
    pub fn id(&self, doc: DocId) -> tantivy::Result<Option<String>> {
        if doc >= self.max_doc {
            return Ok(None);
        }
        let block = self.block(doc as usize / BLOCK_DOCS)?;
        let id = block.id(doc as usize % BLOCK_DOCS);
        if id.is_empty() {
            return Ok(None);
        }
        String::from_utf8(id.to_vec())
            .map(Some)
            .map_err(|_| corrupt("an id that is not UTF-8"))
    }
}

/// The `ids` files of a searcher's segments, opened once (see `tessera_knn::per_segment`).
pub type ShardIds = PerSegment<SegmentIds>;

/// A shard snapshot's [`ShardIds`], opened by its first fetch.
pub type ShardIdsCell = PerSegmentCell<SegmentIds>;

impl SegmentFile for SegmentIds {
    fn open_in(reader: &SegmentReader) -> tantivy::Result<Option<SegmentIds>> {
        SegmentIds::open(reader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tantivy::directory::RamDirectory;
    use tantivy::schema::{Schema, STORED, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    fn index(dir: RamDirectory) -> (Index, Field, Field) {
        let mut builder = Schema::builder();
        let id = builder.add_text_field(ID_FIELD, STRING | STORED);
        let other = builder.add_text_field("other", STRING);
        let index = Index::builder()
            .schema(builder.build())
            .register_plugin(Arc::new(IdsPlugin))
            .open_or_create(dir)
            .unwrap();
        (index, id, other)
    }

    /// The live ids of each segment, in doc order (`None`: a doc without an id).
    fn ids(index: &Index) -> Vec<Vec<Option<String>>> {
        let searcher = index.reader().unwrap().searcher();
        let shard = ShardIds::open(&searcher).unwrap();
        searcher
            .segment_readers()
            .iter()
            .enumerate()
            .map(|(ord, reader)| {
                let ids = shard
                    .segment(ord as u32)
                    .expect("every segment has the file");
                (0..reader.max_doc())
                    .filter(|&doc| reader.alive_bitset().is_none_or(|a| a.is_alive(doc)))
                    .map(|doc| ids.id(doc).unwrap())
                    .collect()
            })
            .collect()
    }

    fn add(writer: &mut IndexWriter, id: Field, other: Field, name: Option<&str>) {
        let mut doc = TantivyDocument::new();
        doc.add_text(other, "x");
        if let Some(name) = name {
            doc.add_text(id, name);
        }
        writer.add_document(doc).unwrap();
    }

    #[test]
    fn writes_reads_and_merges_ids_respecting_deletes() {
        let dir = RamDirectory::create();
        let (shard, id, other) = index(dir.clone());
        let mut writer: IndexWriter = shard.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for name in [Some("a"), None, Some("ü-long-id-2")] {
            add(&mut writer, id, other, name);
        }
        writer.commit().unwrap();
        for name in [Some("c"), Some("d")] {
            add(&mut writer, id, other, name);
        }
        writer.commit().unwrap();
        let mut segments = ids(&shard);
        segments.sort();
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            segments,
            vec![
                vec![some("a"), None, some("ü-long-id-2")],
                vec![some("c"), some("d")]
            ]
        );
        writer.delete_term(Term::from_field_text(id, "a"));
        writer.delete_term(Term::from_field_text(id, "d"));
        writer.commit().unwrap();
        let segment_ids = shard.searchable_segment_ids().unwrap();
        writer.merge(&segment_ids).wait().unwrap();
        writer.wait_merging_threads().unwrap();
        let merged = ids(&shard);
        assert_eq!(merged.len(), 1);
        let mut live = merged[0].clone();
        live.sort();
        assert_eq!(live, vec![None, some("c"), some("ü-long-id-2")]);
        // and they survive a reopen
        drop(shard);
        let (reopened, _, _) = index(dir);
        assert_eq!(ids(&reopened), merged);
    }

    fn file(ids: &[&str]) -> Vec<u8> {
        let mut buffer = IdsBuffer::default();
        for id in ids {
            buffer.push(str::as_bytes(id));
        }
        buffer.finish()
    }

    #[test]
    fn blocks_hold_64_ids_and_the_last_fewer() {
        let names: Vec<String> = (0..130).map(|i| format!("SGZmHqIBhNpPeSXqB-{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let bytes = file(&refs);
        assert!(
            bytes.len() < names.iter().map(String::len).sum::<usize>() / 2,
            "compressed"
        );
        let ids = SegmentIds::from_bytes(OwnedBytes::new(bytes)).unwrap();
        assert_eq!(ids.block_count(), 3);
        for (doc, name) in names.iter().enumerate() {
            assert_eq!(ids.id(doc as u32).unwrap().as_deref(), Some(name.as_str()));
        }
        assert_eq!(ids.id(130).unwrap(), None);
        let empty = SegmentIds::from_bytes(OwnedBytes::new(file(&[]))).unwrap();
        assert_eq!(empty.id(0).unwrap(), None);
    }

    #[test]
    fn rejects_corrupt_files() {
        let good = file(&["a", "bcde", ""]);
        let ids = SegmentIds::from_bytes(OwnedBytes::new(good.clone())).unwrap();
        let read: Vec<_> = (0..3).map(|doc| ids.id(doc).unwrap()).collect();
        assert_eq!(
            read,
            [Some("a".to_string()), Some("bcde".to_string()), None]
        );
        // one byte short, a bad magic number, no footer
        let mut short = good.clone();
        short.remove(0);
        assert!(SegmentIds::from_bytes(OwnedBytes::new(short)).is_err());
        let mut bad_magic = good.clone();
        let last = bad_magic.len() - 1;
        bad_magic[last] ^= 1;
        assert!(SegmentIds::from_bytes(OwnedBytes::new(bad_magic)).is_err());
        assert!(SegmentIds::from_bytes(OwnedBytes::new(vec![1, 2])).is_err());
        // a block that claims a huge size is refused before anything is allocated
        let mut huge = good.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let ids = SegmentIds::from_bytes(OwnedBytes::new(huge)).unwrap();
        assert!(ids.id(0).is_err());
        // a flipped byte inside the block: an error, never a panic
        let mut flipped = good;
        flipped[6] ^= 0xff;
        let ids = SegmentIds::from_bytes(OwnedBytes::new(flipped)).unwrap();
        let _ = ids.id(1);
        // an id longer than OpenSearch allows is left to the store, and its neighbours kept
        let long = "x".repeat(513);
        let ids = SegmentIds::from_bytes(OwnedBytes::new(file(&["a", &long, "b"]))).unwrap();
        let read: Vec<_> = (0..3).map(|doc| ids.id(doc).unwrap()).collect();
        assert_eq!(read, [Some("a".to_string()), None, Some("b".to_string())]);
    }
}
