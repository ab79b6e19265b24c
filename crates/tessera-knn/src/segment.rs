//! A segment's vectors: the `knn` file each segment carries, written by a tantivy
//! [`SegmentPlugin`] at every flush and merge, and read in place from the memory map.
//!
//! Why a plugin: tantivy 0.27 has no vector type, but its plugin API lets a component write its
//! own file next to the segment's postings and columns and merge it with the segment, so the
//! vectors live and die with the documents (refresh, merge, delete, replication copy the files
//! as any other segment file). A `knn_vector` field is a *custom* schema field (type name
//! [`KNN_VECTOR_TYPE`], params `{"dimension": d}`) whose value is the vector's `f32`s, little
//! endian; tantivy's built-ins ignore it and this plugin collects it.
//!
//! The file, one per segment, all little endian, each section aligned to 8 bytes so that the
//! memory map can be read as `f32`/`u32` without copying:
//!
//! ```text
//! per field: vectors  count × dim f32   (ordinal order: dense, 0..count)
//!            docs     count u32          (ordinal → doc id, strictly increasing)
//!            graph    graph_len bytes    (the HNSW graph, `hnsw::format`; empty when the
//!                                         segment is below the build threshold)
//! table:     per field 48 bytes: field u32, dim u32, count u32, 0 u32,
//!            vectors_offset u64, docs_offset u64, graph_offset u64, graph_len u64
//! footer:    table_offset u64, field_count u32, MAGIC u32
//! ```
//!
//! Not every document has the field, so ordinals are dense and `docs` maps them to doc ids;
//! the reverse is a binary search. A merge streams the surviving vectors of its sources in the
//! merged doc order, which tantivy gives only through a crate-private mapping: it is rebuilt
//! from the readers' alive docs in segment order (what tantivy does without index sorting),
//! and a shuffled merge (index sorting) fails closed.

use std::any::Any;
use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use tantivy::directory::WritePtr;
use tantivy::directory::{OwnedBytes, TerminatingWrite};
use tantivy::index::{SegmentComponent, SegmentReader};
use tantivy::indexer::doc_id_mapping::{DocIdMapping, MappingType};
use tantivy::plugin::{PluginMergeContext, PluginWriter, PluginWriterContext, SegmentPlugin};
use tantivy::schema::document::{ErasedDocument, ErasedValue, ReferenceValueLeaf};
use tantivy::schema::{Field, FieldType, Schema};
use tantivy::{DocId, Segment, TantivyError};

use crate::hnsw::{build_graph, HnswGraph, SliceStore, VectorStore};
use crate::per_segment::{PerSegment, PerSegmentCell, SegmentFile};
use crate::segment_graph::{
    builds_graph, graph_settings, merge_graph, MergeSource, DEFAULT_APPROXIMATE_THRESHOLD,
};

/// The custom field type name of `knn_vector` fields in a shard's tantivy schema.
pub const KNN_VECTOR_TYPE: &str = "knn_vector";
/// The segment file's extension (`<segment>.knn`).
pub const EXTENSION: &str = "knn";
const MAGIC: u32 = 0x314E_4B54; // "TKN1"
const ENTRY_LEN: usize = 48;
const FOOTER_LEN: usize = 16;

fn component() -> SegmentComponent {
    SegmentComponent::Custom(EXTENSION.to_string())
}

/// The `knn_vector` fields of `schema` and their dimensions.
pub fn knn_fields(schema: &Schema) -> Vec<(Field, usize)> {
    schema
        .fields()
        .filter_map(|(field, entry)| match entry.field_type() {
            FieldType::Custom(options) if options.type_name() == KNN_VECTOR_TYPE => {
                let dim = options.params()["dimension"].as_u64().unwrap_or(0) as usize;
                Some((field, dim))
            }
            _ => None,
        })
        .collect()
}

/// A vector as a custom field's value.
pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn decode_into(bytes: &[u8], out: &mut Vec<f32>) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

fn corrupt(what: impl Into<String>) -> TantivyError {
    TantivyError::InternalError(format!("knn vectors: {}", what.into()))
}

/// The plugin every shard registers: writes and merges each segment's `knn` file, with a graph
/// for segments at or above the shard's `index.knn.advanced.approximate_threshold` (shared with
/// the shard, which updates it when the dynamic setting changes).
pub struct KnnPlugin {
    threshold: Arc<AtomicI64>,
}

impl KnnPlugin {
    pub fn new(threshold: Arc<AtomicI64>) -> KnnPlugin {
        KnnPlugin { threshold }
    }

    /// A plugin with a fixed threshold (tests, tools).
    pub fn with_threshold(threshold: i64) -> KnnPlugin {
        KnnPlugin::new(Arc::new(AtomicI64::new(threshold)))
    }
}

impl Default for KnnPlugin {
    /// OpenSearch's default threshold.
    fn default() -> Self {
        KnnPlugin::with_threshold(DEFAULT_APPROXIMATE_THRESHOLD)
    }
}

impl SegmentPlugin for KnnPlugin {
    fn extensions(&self) -> &[&str] {
        &[EXTENSION]
    }

    fn create_writer(&self, ctx: &PluginWriterContext) -> tantivy::Result<Box<dyn PluginWriter>> {
        let fields = knn_fields(&ctx.segment.schema())
            .into_iter()
            .map(|(field, dim)| FieldBuffer {
                field,
                dim,
                vectors: Vec::new(),
                docs: Vec::new(),
            })
            .collect();
        Ok(Box::new(KnnWriter {
            fields,
            threshold: self.threshold.load(Ordering::Relaxed),
        }))
    }

    fn merge(&self, ctx: PluginMergeContext) -> tantivy::Result<()> {
        if ctx.doc_id_mapping.mapping_type() == MappingType::Shuffled {
            return Err(corrupt(
                "a merge that reorders documents (index sorting) is not supported",
            ));
        }
        // the merged doc ids: the sources' alive docs, stacked in reader order
        let mut old_to_new: Vec<Vec<Option<DocId>>> = Vec::with_capacity(ctx.readers.len());
        let mut next: DocId = 0;
        for reader in ctx.readers {
            let alive = reader.alive_bitset();
            let map = (0..reader.max_doc())
                .map(|doc| {
                    alive.is_none_or(|a| a.is_alive(doc)).then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect();
            old_to_new.push(map);
        }
        let sources: Vec<Option<SegmentVectors>> = ctx
            .readers
            .iter()
            .map(SegmentVectors::open)
            .collect::<tantivy::Result<_>>()?;
        let threshold = self.threshold.load(Ordering::Relaxed);
        let mut out = FileWriter::new(ctx.target_segment.open_write(component())?);
        for (field, dim) in knn_fields(ctx.schema) {
            let vectors_offset = out.align()?;
            let mut docs = Vec::new();
            // kept in memory only when a graph will be built over them
            let settings = graph_settings(ctx.schema, field);
            let mut merged: Vec<f32> = Vec::new();
            let mut graph_sources = Vec::new();
            let surviving: usize = sources
                .iter()
                .zip(&old_to_new)
                .filter_map(|(source, map)| {
                    let vectors = source.as_ref()?.field(field)?;
                    Some(
                        (0..vectors.len())
                            .filter(|&ord| {
                                map.get(vectors.doc(ord) as usize)
                                    .copied()
                                    .flatten()
                                    .is_some()
                            })
                            .count(),
                    )
                })
                .sum();
            let build = settings.is_some() && builds_graph(threshold, surviving);
            for ((source, map), reader) in sources.iter().zip(&old_to_new).zip(ctx.readers) {
                let Some(vectors) = source.as_ref().and_then(|s| s.field(field)) else {
                    continue;
                };
                if vectors.dim() != dim {
                    return Err(corrupt(format!(
                        "field {} has dimension {} in a source segment, {dim} in the schema",
                        field.field_id(),
                        vectors.dim()
                    )));
                }
                let start = docs.len() as u32;
                for ord in 0..vectors.len() {
                    let old = vectors.doc(ord);
                    if let Some(new) = map.get(old as usize).copied().flatten() {
                        out.write_f32s(vectors.vector(ord))?;
                        if build {
                            merged.extend_from_slice(vectors.vector(ord));
                        }
                        docs.push(new);
                    }
                }
                if build {
                    // a source's graph is reusable only if every one of its nodes survives
                    let graph = match vectors.graph()? {
                        Some(graph) if reader.alive_bitset().is_none() => Some(graph),
                        _ => None,
                    };
                    graph_sources.push(MergeSource {
                        start,
                        len: docs.len() as u32 - start,
                        graph,
                    });
                }
            }
            let docs_offset = out.align()?;
            out.write_u32s(&docs)?;
            let graph_offset = out.align()?;
            let mut graph_len = 0;
            if let (true, Some((space, params))) = (build && dim > 0, settings) {
                let graph = merge_graph(space, &params, &merged, dim, &graph_sources);
                drop(graph_sources);
                out.bytes(&graph)?;
                graph_len = graph.len() as u64;
                crate::stats::STATS.graph_built();
            }
            out.entries.push(Entry {
                field: field.field_id(),
                dim: dim as u32,
                count: docs.len() as u32,
                vectors_offset,
                docs_offset,
                graph_offset,
                graph_len,
            });
        }
        out.finish()
    }
}

struct FieldBuffer {
    field: Field,
    dim: usize,
    vectors: Vec<f32>,
    docs: Vec<DocId>,
}

/// Collects a segment's vectors while it is indexed.
struct KnnWriter {
    fields: Vec<FieldBuffer>,
    /// `index.knn.advanced.approximate_threshold` when the segment started.
    threshold: i64,
}

impl PluginWriter for KnnWriter {
    fn add_document(
        &mut self,
        doc_id: DocId,
        doc: &dyn ErasedDocument,
        _schema: &Schema,
    ) -> tantivy::Result<()> {
        if self.fields.is_empty() {
            return Ok(());
        }
        // walked through the erased fields: the shard's writer indexes its own document type
        for (field, value) in doc.erased_fields() {
            let ErasedValue::Leaf(ReferenceValueLeaf::Custom(bytes)) = value else {
                continue;
            };
            let Some(buffer) = self.fields.iter_mut().find(|b| b.field == field) else {
                continue;
            };
            if buffer.docs.last() == Some(&doc_id) {
                continue; // one vector per document
            }
            if bytes.len() != buffer.dim * 4 {
                return Err(corrupt(format!(
                    "a vector of {} bytes for a field of dimension {}",
                    bytes.len(),
                    buffer.dim
                )));
            }
            decode_into(bytes, &mut buffer.vectors);
            buffer.docs.push(doc_id);
        }
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
        let schema = segment.schema();
        let mut out = FileWriter::new(segment.open_write(component())?);
        for buffer in &self.fields {
            let vectors_offset = out.align()?;
            out.write_f32s(&buffer.vectors)?;
            let docs_offset = out.align()?;
            out.write_u32s(&buffer.docs)?;
            let graph_offset = out.align()?;
            let mut graph_len = 0;
            if let Some((space, params)) = graph_settings(&schema, buffer.field) {
                if buffer.dim > 0 && builds_graph(self.threshold, buffer.docs.len()) {
                    let store = SliceStore::new(&buffer.vectors, buffer.dim);
                    let graph = build_graph(space, &store, &params);
                    out.bytes(&graph)?;
                    graph_len = graph.len() as u64;
                    crate::stats::STATS.graph_built();
                }
            }
            out.entries.push(Entry {
                field: buffer.field.field_id(),
                dim: buffer.dim as u32,
                count: buffer.docs.len() as u32,
                vectors_offset,
                docs_offset,
                graph_offset,
                graph_len,
            });
        }
        out.finish()
    }

    fn mem_usage(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.vectors.capacity() * 4 + f.docs.capacity() * 4)
            .sum()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    field: u32,
    dim: u32,
    count: u32,
    vectors_offset: u64,
    docs_offset: u64,
    graph_offset: u64,
    graph_len: u64,
}

struct FileWriter {
    write: WritePtr,
    written: u64,
    entries: Vec<Entry>,
}

impl FileWriter {
    fn new(write: WritePtr) -> FileWriter {
        FileWriter {
            write,
            written: 0,
            entries: Vec::new(),
        }
    }

    fn bytes(&mut self, bytes: &[u8]) -> tantivy::Result<()> {
        self.write.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Pads to a multiple of 8 and returns the offset reached.
    fn align(&mut self) -> tantivy::Result<u64> {
        let pad = (8 - self.written % 8) % 8;
        self.bytes(&[0u8; 8][..pad as usize])?;
        Ok(self.written)
    }

    fn write_f32s(&mut self, values: &[f32]) -> tantivy::Result<()> {
        for chunk in values.chunks(1024) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.bytes(&bytes)?;
        }
        Ok(())
    }

    fn write_u32s(&mut self, values: &[u32]) -> tantivy::Result<()> {
        for chunk in values.chunks(1024) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.bytes(&bytes)?;
        }
        Ok(())
    }

    fn finish(mut self) -> tantivy::Result<()> {
        let table_offset = self.align()?;
        let entries = std::mem::take(&mut self.entries);
        for e in &entries {
            let mut row = Vec::with_capacity(ENTRY_LEN);
            for v in [e.field, e.dim, e.count, 0] {
                row.extend_from_slice(&v.to_le_bytes());
            }
            for v in [e.vectors_offset, e.docs_offset, e.graph_offset, e.graph_len] {
                row.extend_from_slice(&v.to_le_bytes());
            }
            self.bytes(&row)?;
        }
        let mut footer = Vec::with_capacity(FOOTER_LEN);
        footer.extend_from_slice(&table_offset.to_le_bytes());
        footer.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        footer.extend_from_slice(&MAGIC.to_le_bytes());
        self.bytes(&footer)?;
        self.write.terminate()?;
        Ok(())
    }
}

/// The `knn` files of a searcher's segments, opened once (see [`crate::per_segment`]).
pub type ShardVectors = PerSegment<SegmentVectors>;

/// A shard snapshot's [`ShardVectors`], opened by its first k-NN search.
pub type ShardVectorsCell = PerSegmentCell<SegmentVectors>;

impl SegmentFile for SegmentVectors {
    fn open_in(reader: &SegmentReader) -> tantivy::Result<Option<SegmentVectors>> {
        SegmentVectors::open(reader)
    }
}

/// A segment's `knn` file, opened on its bytes (the memory map).
pub struct SegmentVectors {
    bytes: OwnedBytes,
    entries: Vec<Entry>,
}

impl SegmentVectors {
    /// The segment's vectors; `None` for a segment without a `knn` file (a shard created before
    /// k-NN existed).
    pub fn open(reader: &SegmentReader) -> tantivy::Result<Option<SegmentVectors>> {
        let Ok(slice) = reader.open_read(component()) else {
            return Ok(None);
        };
        SegmentVectors::from_bytes(slice.read_bytes()?).map(Some)
    }

    fn from_bytes(bytes: OwnedBytes) -> tantivy::Result<SegmentVectors> {
        let data = bytes.as_slice();
        if data.len() < FOOTER_LEN {
            return Err(corrupt("file too short"));
        }
        let footer = &data[data.len() - FOOTER_LEN..];
        let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if u32_at(footer, 12) != MAGIC {
            return Err(corrupt("bad magic number"));
        }
        let table_offset = u64_at(footer, 0) as usize;
        let count = u32_at(footer, 8) as usize;
        let table_end = table_offset + count * ENTRY_LEN;
        if table_end != data.len() - FOOTER_LEN {
            return Err(corrupt("bad field table"));
        }
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let row = &data[table_offset + i * ENTRY_LEN..][..ENTRY_LEN];
            let e = Entry {
                field: u32_at(row, 0),
                dim: u32_at(row, 4),
                count: u32_at(row, 8),
                vectors_offset: u64_at(row, 16),
                docs_offset: u64_at(row, 24),
                graph_offset: u64_at(row, 32),
                graph_len: u64_at(row, 40),
            };
            let vectors_end = e.vectors_offset + e.count as u64 * e.dim as u64 * 4;
            let docs_end = e.docs_offset + e.count as u64 * 4;
            if vectors_end > table_offset as u64
                || docs_end > table_offset as u64
                || e.graph_offset + e.graph_len > table_offset as u64
                || !e.vectors_offset.is_multiple_of(4)
                || !e.docs_offset.is_multiple_of(4)
            {
                return Err(corrupt("a section lies outside the file"));
            }
            entries.push(e);
        }
        Ok(SegmentVectors { bytes, entries })
    }

    /// The vectors of `field`, if the segment has the field.
    pub fn field(&self, field: Field) -> Option<FieldVectors<'_>> {
        let e = self.entries.iter().find(|e| e.field == field.field_id())?;
        let data = self.bytes.as_slice();
        let vectors = &data[e.vectors_offset as usize..][..e.count as usize * e.dim as usize * 4];
        let docs = &data[e.docs_offset as usize..][..e.count as usize * 4];
        let graph =
            (e.graph_len > 0).then(|| &data[e.graph_offset as usize..][..e.graph_len as usize]);
        Some(FieldVectors {
            dim: e.dim as usize,
            vectors: cast_f32(vectors),
            docs: cast_u32(docs),
            graph_bytes: graph,
        })
    }

    /// Bytes of the file (for stats and warm-up).
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Reads every page of the file, so the first queries do not fault them in; returns a
    /// checksum-like value so the reads cannot be optimised away.
    pub fn touch(&self) -> u64 {
        self.bytes
            .as_slice()
            .iter()
            .step_by(4096)
            .fold(0u64, |acc, b| acc.wrapping_add(*b as u64))
    }
}

// The memory map is page aligned and sections are 8-aligned, so the casts borrow; a buffer that
// happens not to be aligned (or a big-endian machine) gets a copy.
fn cast_f32(bytes: &[u8]) -> Cow<'_, [f32]> {
    if cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid f32; align_to only yields the aligned middle
        let (head, mid, tail) = unsafe { bytes.align_to::<f32>() };
        if head.is_empty() && tail.is_empty() {
            return Cow::Borrowed(mid);
        }
    }
    let mut out = Vec::with_capacity(bytes.len() / 4);
    decode_into(bytes, &mut out);
    Cow::Owned(out)
}

fn cast_u32(bytes: &[u8]) -> Cow<'_, [u32]> {
    if cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid u32; align_to only yields the aligned middle
        let (head, mid, tail) = unsafe { bytes.align_to::<u32>() };
        if head.is_empty() && tail.is_empty() {
            return Cow::Borrowed(mid);
        }
    }
    Cow::Owned(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// One field's vectors in one segment: dense ordinals, their doc ids, and the field's graph
/// when the segment has one.
pub struct FieldVectors<'a> {
    dim: usize,
    vectors: Cow<'a, [f32]>,
    docs: Cow<'a, [u32]>,
    graph_bytes: Option<&'a [u8]>,
}

impl<'a> FieldVectors<'a> {
    /// Whether the segment has a graph for the field.
    pub fn has_graph(&self) -> bool {
        self.graph_bytes.is_some()
    }

    /// The field's graph, read in place from the file; `None` for a segment searched exactly.
    /// A graph that does not open, or is not over these vectors, is a corrupt file.
    pub fn graph(&self) -> tantivy::Result<Option<HnswGraph<'a>>> {
        let Some(bytes) = self.graph_bytes else {
            return Ok(None);
        };
        let graph = HnswGraph::open(bytes).map_err(corrupt)?;
        if graph.len() as usize != self.docs.len() || graph.dim() != self.dim {
            return Err(corrupt(format!(
                "a graph of {} vectors of dimension {} beside {} vectors of dimension {}",
                graph.len(),
                graph.dim(),
                self.docs.len(),
                self.dim
            )));
        }
        Ok(Some(graph))
    }

    /// The doc id of ordinal `ord`.
    pub fn doc(&self, ord: u32) -> DocId {
        self.docs[ord as usize]
    }

    /// The ordinal of `doc`'s vector, if it has one.
    pub fn ord(&self, doc: DocId) -> Option<u32> {
        self.docs.binary_search(&doc).ok().map(|i| i as u32)
    }
}

impl VectorStore for FieldVectors<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> u32 {
        self.docs.len() as u32
    }

    fn vector(&self, ord: u32) -> &[f32] {
        &self.vectors[ord as usize * self.dim..][..self.dim]
    }

    fn contiguous(&self) -> Option<&[f32]> {
        Some(&self.vectors)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tantivy::indexer::NoMergePolicy;
    use tantivy::schema::{Schema, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    use super::*;

    fn index() -> (Index, Field, Field) {
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING);
        let v = builder.add_custom_field("v", KNN_VECTOR_TYPE, json!({"dimension": 2}));
        let index = Index::builder()
            .schema(builder.build())
            .register_plugin(Arc::new(KnnPlugin::default()))
            .create_in_ram()
            .unwrap();
        (index, id, v)
    }

    fn add(writer: &mut IndexWriter, id: Field, v: Field, name: &str, vector: Option<[f32; 2]>) {
        let mut doc = TantivyDocument::new();
        doc.add_text(id, name);
        if let Some(vector) = vector {
            doc.add_custom(v, &encode_vector(&vector));
        }
        writer.add_document(doc).unwrap();
    }

    /// (doc's name, vector) of every live doc with a vector, in doc order per segment.
    fn contents(index: &Index, v: Field, id: Field) -> Vec<Vec<(String, Vec<f32>)>> {
        let searcher = index.reader().unwrap().searcher();
        let mut out = Vec::new();
        for reader in searcher.segment_readers() {
            let vectors = SegmentVectors::open(reader).unwrap().unwrap();
            let field = vectors.field(v).unwrap();
            let ids = reader.inverted_index(id).unwrap();
            let mut names = vec![String::new(); reader.max_doc() as usize];
            let mut terms = ids.terms().stream().unwrap();
            while terms.advance() {
                let name = String::from_utf8(terms.key().to_vec()).unwrap();
                let term = Term::from_field_text(id, &name);
                let mut postings = ids
                    .read_postings(&term, tantivy::schema::IndexRecordOption::Basic)
                    .unwrap()
                    .unwrap();
                use tantivy::DocSet;
                while postings.doc() != tantivy::TERMINATED {
                    names[postings.doc() as usize] = name.clone();
                    postings.advance();
                }
            }
            let mut segment = Vec::new();
            for ord in 0..field.len() {
                let doc = field.doc(ord);
                assert_eq!(field.ord(doc), Some(ord));
                if reader.alive_bitset().is_none_or(|a| a.is_alive(doc)) {
                    segment.push((names[doc as usize].clone(), field.vector(ord).to_vec()));
                }
            }
            out.push(segment);
        }
        out
    }

    #[test]
    fn writes_reads_and_merges_vectors_respecting_deletes() {
        let (index, id, v) = index();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        add(&mut writer, id, v, "a", Some([1.0, 2.0]));
        add(&mut writer, id, v, "b", None);
        add(&mut writer, id, v, "c", Some([3.0, 4.0]));
        writer.commit().unwrap();
        add(&mut writer, id, v, "d", Some([5.0, 6.0]));
        add(&mut writer, id, v, "e", Some([7.0, 8.0]));
        writer.commit().unwrap();
        let mut segments = contents(&index, v, id);
        segments.sort_by(|a, b| a[0].0.cmp(&b[0].0));
        assert_eq!(
            segments,
            vec![
                vec![("a".into(), vec![1.0, 2.0]), ("c".into(), vec![3.0, 4.0])],
                vec![("d".into(), vec![5.0, 6.0]), ("e".into(), vec![7.0, 8.0])],
            ]
        );
        writer.delete_term(Term::from_field_text(id, "a"));
        writer.delete_term(Term::from_field_text(id, "d"));
        writer.commit().unwrap();
        let ids = index.searchable_segment_ids().unwrap();
        writer.merge(&ids).wait().unwrap();
        let merged = contents(&index, v, id);
        assert_eq!(merged.len(), 1);
        let mut merged = merged.into_iter().next().unwrap();
        merged.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            merged,
            vec![("c".into(), vec![3.0, 4.0]), ("e".into(), vec![7.0, 8.0])]
        );
        // and the merged segment's doc ids are those of the merged segment's documents
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers()[0].num_docs(), 3);
    }

    #[test]
    fn a_segment_without_the_field_has_no_vectors_for_it() {
        let (index, id, v) = index();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        add(&mut writer, id, v, "a", None);
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let vectors = SegmentVectors::open(&searcher.segment_readers()[0])
            .unwrap()
            .unwrap();
        assert_eq!(vectors.field(v).unwrap().len(), 0);
        assert!(vectors.field(Field::from_field_id(99)).is_none());
    }

    #[test]
    fn shard_vectors_are_opened_once_per_snapshot_and_found_by_segment_ordinal() {
        let dir = tempfile::tempdir().unwrap();
        let (index, id, v) = graph_index(dir.path(), 100);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        add_many(&mut writer, id, v, 0, 120);
        writer.commit().unwrap();
        add_many(&mut writer, id, v, 120, 130);
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let cell = ShardVectorsCell::default();
        let first = cell.get(&searcher).unwrap();
        assert!(Arc::ptr_eq(&first, &cell.get(&searcher).unwrap()));
        let mut lens: Vec<u32> = (0..2)
            .map(|ord| first.segment(ord).unwrap().field(v).unwrap().len())
            .collect();
        lens.sort();
        assert_eq!(lens, vec![10, 120]);
        assert!(first.segment(2).is_none());
    }

    /// An index on disk whose field gets graphs (m 8) under `threshold`.
    fn graph_index(dir: &std::path::Path, threshold: i64) -> (Index, Field, Field) {
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING);
        let v = builder.add_custom_field(
            "v",
            KNN_VECTOR_TYPE,
            crate::segment_graph::field_params(4, crate::Space::L2, 8, 40),
        );
        let index = Index::builder()
            .schema(builder.build())
            .register_plugin(Arc::new(KnnPlugin::with_threshold(threshold)))
            .create_in_dir(dir)
            .unwrap();
        (index, id, v)
    }

    fn add_many(writer: &mut IndexWriter, id: Field, v: Field, from: usize, to: usize) {
        let data = crate::hnsw::test_data::clustered(to, 4, 5, 11);
        for i in from..to {
            let mut doc = TantivyDocument::new();
            doc.add_text(id, i.to_string());
            doc.add_custom(v, &encode_vector(&data[i * 4..(i + 1) * 4]));
            writer.add_document(doc).unwrap();
        }
    }

    /// Per segment (largest first): vector count and graph node count (0: no graph).
    fn graphs(index: &Index, v: Field) -> Vec<(u32, u32)> {
        let searcher = index.reader().unwrap().searcher();
        let mut out: Vec<(u32, u32)> = searcher
            .segment_readers()
            .iter()
            .map(|reader| {
                let segment = SegmentVectors::open(reader).unwrap().unwrap();
                let field = segment.field(v).unwrap();
                let nodes = field.graph().unwrap().map_or(0, |g| g.len());
                (field.len(), nodes)
            })
            .collect();
        out.sort_by(|a, b| b.cmp(a));
        out
    }

    #[test]
    fn segments_at_the_threshold_get_a_graph_at_flush_and_merge_and_keep_it_on_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (index, id, v) = graph_index(dir.path(), 100);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        add_many(&mut writer, id, v, 0, 300);
        writer.commit().unwrap();
        add_many(&mut writer, id, v, 300, 350);
        writer.commit().unwrap();
        // below the threshold: exact only
        assert_eq!(graphs(&index, v), vec![(300, 300), (50, 0)]);
        // a merge of a graph without deletes and one without graph reuses the first
        let ids = index.searchable_segment_ids().unwrap();
        writer.merge(&ids).wait().unwrap();
        assert_eq!(graphs(&index, v), vec![(350, 350)]);
        // deletes: the merged graph is built afresh over the survivors
        writer.delete_term(Term::from_field_text(id, "7"));
        add_many(&mut writer, id, v, 350, 360);
        writer.commit().unwrap();
        let ids = index.searchable_segment_ids().unwrap();
        writer.merge(&ids).wait().unwrap();
        assert_eq!(graphs(&index, v), vec![(359, 359)]);
        drop(writer);
        drop(index);
        // reopened from disk: the graph is read in place and walks to each vector
        let mut index = Index::open_in_dir(dir.path()).unwrap();
        index.register_plugin(Arc::new(KnnPlugin::default()));
        assert_eq!(graphs(&index, v), vec![(359, 359)]);
        let searcher = index.reader().unwrap().searcher();
        let segment = SegmentVectors::open(&searcher.segment_readers()[0])
            .unwrap()
            .unwrap();
        let field = segment.field(v).unwrap();
        let graph = field.graph().unwrap().unwrap();
        for ord in [0u32, 100, 358] {
            let request = crate::hnsw::SearchRequest::new(field.vector(ord), 1, 32);
            assert_eq!(graph.search(&field, &request).hits[0].0, ord);
        }
    }

    #[test]
    fn a_threshold_of_minus_one_never_builds() {
        let dir = tempfile::tempdir().unwrap();
        let (index, id, v) = graph_index(dir.path(), -1);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        add_many(&mut writer, id, v, 0, 200);
        writer.commit().unwrap();
        assert_eq!(graphs(&index, v), vec![(200, 0)]);
    }

    #[test]
    fn rejects_a_truncated_file() {
        assert!(SegmentVectors::from_bytes(OwnedBytes::new(vec![0u8; 4])).is_err());
        let mut bytes = vec![0u8; 16];
        bytes[12..].copy_from_slice(&MAGIC.to_le_bytes());
        bytes[0..8].copy_from_slice(&100u64.to_le_bytes());
        assert!(SegmentVectors::from_bytes(OwnedBytes::new(bytes)).is_err());
    }
}
