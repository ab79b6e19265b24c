//! Building a shard of a resized index (`_shrink`, `_split`, `_clone`) from the committed
//! segments of its source index's shards.
//!
//! Why it is shaped this way: tantivy segments are immutable and self-contained, and a commit
//! (`meta.json`) is only a list of segments over one schema. A target shard is therefore a new
//! commit listing source segments whose files are hard-linked (copied across file systems)
//! from pins of the source shards' commits ([`Shard::pinned_commit`]), so nothing is indexed
//! again:
//! - clone: target shard i lists source shard i's segments;
//! - shrink: target shard i lists the segments of every source shard routed onto it;
//! - split: target shard i starts as the source shard it comes from, then deletes the
//!   documents whose routing lands on another target shard (delete files, as for any delete;
//!   merges drop them later).
//!
//! Documents keep `_id`, `_version`, `_seq_no`, `_primary_term`, `_routing` and `_source`: they
//! are fields of the segments. The commit payload carries the highest `max_seq_no` of the
//! sources, so the shard opens (with [`Shard::open`]) continuing after every seq_no it holds,
//! with a fresh translog.
//!
//! Each shard grows its schema on its own (appending fields as it meets them), so two shards of
//! one index may order the same fields differently, and segments can only share a commit under
//! one schema. A shrink's source whose schema differs from the first source's is indexed again
//! from its stored documents (`_source`, with their version, seq_no and routing), as a
//! translog replay indexes them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use tantivy::indexer::{NoMergePolicy, UserOperation};
use tantivy::schema::{Schema, Value as _};
use tantivy::{DocAddress, Index, IndexWriter, ReloadPolicy, TantivyDocument};
use tessera_common::{Error, Result};
use tessera_mapping::field_table::{
    ID_FIELD, PRIMARY_TERM_FIELD, ROUTING_FIELD, SEQ_NO_FIELD, SOURCE_FIELD, VERSION_FIELD,
};
use tessera_mapping::{FieldTable, Mapping};

use crate::replication::{commit_files, parse_meta, payload_max_seq_no, write_managed};
use crate::schema_change::grow_schema;
use crate::shard::{register_tokenizers, tantivy_err, with_meta_fields, DocVersion};
use crate::translog::{sync_dir, write_atomic};

/// A source shard's commit, pinned: the directory holding its files (hard links that no merge
/// of the source deletes) and its `meta.json`.
#[derive(Clone, Debug)]
pub struct SourceCommit {
    pub dir: PathBuf,
    pub meta_json: Vec<u8>,
}

/// Whether a target shard keeps the document with this `_id` and `_routing` (a split's target
/// keeps those the target index routes to it).
pub type Keep<'a> = &'a dyn Fn(&str, Option<&str>) -> bool;

/// The index a shard is built for: its mapping, under which documents indexed again are
/// parsed and which the commit records (as every commit does, for replicas).
pub struct TargetMapping<'a> {
    pub mapping: &'a Mapping,
    pub mapping_version: u64,
}

/// Writes the commit of a new shard at `shard_path` (which must hold no shard yet) from
/// `sources` (at least one), keeping only the documents `keep` accepts when given. The shard is
/// built beside its place and moved there once complete: a failure (or a crash) midway leaves
/// no shard that would open with part of its documents.
pub fn build_shard(
    shard_path: &Path,
    target: &TargetMapping<'_>,
    sources: &[SourceCommit],
    keep: Option<Keep<'_>>,
) -> Result<()> {
    let index_dir = shard_path.join("index");
    if index_dir.exists() {
        return Err(Error::illegal_state(format!(
            "{} already holds a shard",
            shard_path.display()
        )));
    }
    let partial = shard_path.join(PARTIAL_DIR);
    match fs::remove_dir_all(&partial) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::internal(format!("remove {}", partial.display()), e))
        }
        _ => {}
    }
    fs::create_dir_all(&partial)
        .map_err(|e| Error::internal(format!("create {}", partial.display()), e))?;
    build_in(&partial, target, sources, keep)?;
    fs::rename(&partial, &index_dir)
        .map_err(|e| Error::internal(format!("install {}", index_dir.display()), e))?;
    sync_dir(shard_path)
}

/// Where [`build_shard`] builds a shard before moving it into place.
const PARTIAL_DIR: &str = "index.resizing";

fn build_in(
    index_dir: &Path,
    target: &TargetMapping<'_>,
    sources: &[SourceCommit],
    keep: Option<Keep<'_>>,
) -> Result<()> {
    let metas = sources
        .iter()
        .map(|source| parse_meta(&source.meta_json))
        .collect::<Result<Vec<_>>>()?;
    let Some(base) = metas.first() else {
        return Err(Error::illegal_state(
            "a resized shard needs at least one source shard",
        ));
    };
    let mut combined = base.clone();
    combined.segments.clear();
    let mut linked = BTreeSet::new();
    let mut indexed_again = Vec::new();
    let mut max_seq_no: Option<u64> = None;
    for (source, meta) in sources.iter().zip(&metas) {
        max_seq_no = max_seq_no.max(payload_max_seq_no(meta));
        // segments link only into a shard of the same schema and segment files (a shard created
        // before the k-NN or ids plugin has segments without their files)
        if meta.schema != base.schema
            || meta.persisted_custom_extensions != base.persisted_custom_extensions
        {
            indexed_again.push(source);
            continue;
        }
        let (candidates, required) = commit_files(meta);
        for name in candidates {
            if link_file(&source.dir.join(&name), &index_dir.join(&name))? {
                linked.insert(name);
            } else if required.contains(&name) {
                return Err(Error::new(
                    "corrupt_index_exception",
                    500,
                    format!(
                        "file [{name}] of the source commit in {} is missing",
                        source.dir.display()
                    ),
                ));
            }
        }
        combined.segments.extend(meta.segments.iter().cloned());
        combined.opstamp = combined.opstamp.max(meta.opstamp);
    }
    let payload = json!({
        "generation": 1,
        "max_seq_no": max_seq_no,
        "primary_term": 1,
        "mapping": target.mapping.to_json(),
        "mapping_version": target.mapping_version,
    })
    .to_string();
    combined.payload = Some(payload.clone());
    let mut meta_json = serde_json::to_vec_pretty(&combined)
        .map_err(|e| Error::internal("serialise the resized shard's meta.json", e))?;
    meta_json.push(b'\n');
    write_managed(index_dir, linked.iter().map(String::as_str))?;
    write_atomic(&index_dir.join(META_FILE), &meta_json)?;
    sync_dir(index_dir)?;

    let (table, grew) = FieldTable::build(target.mapping, Some(&base.schema))?;
    if grew {
        grow_schema(index_dir, table.schema())?;
    }
    if keep.is_none() && indexed_again.is_empty() {
        return Ok(());
    }
    let index =
        crate::shard::open_index(index_dir).map_err(tantivy_err("open the resized shard"))?;
    register_tokenizers(&index);
    let mut writer: IndexWriter<TantivyDocument> = index
        .writer_with_num_threads(1, WRITER_BUDGET)
        .map_err(tantivy_err("open the resized shard's writer"))?;
    writer.set_merge_policy(Box::new(NoMergePolicy));
    if let Some(keep) = keep {
        let own = MetaFieldsOf::new(&index.schema())?;
        visit_live_docs(&index, &own, |doc| {
            if !keep(&doc.id, doc.routing.as_deref()) {
                for term in crate::shard::block_terms(&table, &doc.id) {
                    writer.delete_term(term);
                }
            }
            Ok(())
        })?;
    }
    for source in indexed_again {
        let index = crate::shard::open_index(&source.dir)
            .map_err(tantivy_err("open a source shard's commit"))?;
        let fields = MetaFieldsOf::new(&index.schema())?;
        visit_live_docs(&index, &fields, |doc| {
            let (nested, parsed) = match tessera_mapping::Json::parse(&doc.source) {
                Ok(json) => tessera_mapping::parse_document_for_replay(
                    target.mapping,
                    &table,
                    &doc.id,
                    &json,
                ),
                // a source that no longer parses is still the acknowledged document
                Err(_) => (Vec::new(), TantivyDocument::new()),
            };
            let tantivy_doc = with_meta_fields(
                parsed,
                &table,
                &doc.id,
                doc.version,
                doc.routing.as_deref(),
                &doc.source,
            );
            // one batch: a document and its nested children stay together in one segment
            let block: Vec<UserOperation<TantivyDocument>> = nested
                .into_iter()
                .chain(std::iter::once(tantivy_doc))
                .map(UserOperation::Add)
                .collect();
            writer
                .run(block)
                .map_err(tantivy_err("index a document of a source shard"))?;
            Ok(())
        })?;
    }
    let mut prepared = writer
        .prepare_commit()
        .map_err(tantivy_err("prepare the resized shard's commit"))?;
    prepared.set_payload(&payload);
    prepared
        .commit()
        .map_err(tantivy_err("commit the resized shard"))?;
    writer
        .wait_merging_threads()
        .map_err(tantivy_err("close the resized shard's writer"))?;
    sync_dir(index_dir)
}

const META_FILE: &str = "meta.json";

/// The indexing budget of the writer that deletes a split's foreign documents or indexes a
/// source again (tantivy's minimum is 15 MB).
const WRITER_BUDGET: usize = 32 << 20;

/// Hard-links `from` to `to` (copies it across file systems); false when `from` is missing.
fn link_file(from: &Path, to: &Path) -> Result<bool> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) => match fs::copy(from, to) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::internal(format!("copy {}", from.display()), e)),
        },
    }
}

/// The metadata fields of one schema, by name (shards may number them differently).
struct MetaFieldsOf {
    id: tantivy::schema::Field,
    source: tantivy::schema::Field,
    routing: tantivy::schema::Field,
}

impl MetaFieldsOf {
    fn new(schema: &Schema) -> Result<MetaFieldsOf> {
        let field = |name: &str| {
            schema.get_field(name).map_err(|_| {
                Error::illegal_state(format!("a source shard's schema has no [{name}] field"))
            })
        };
        Ok(MetaFieldsOf {
            id: field(ID_FIELD)?,
            source: field(SOURCE_FIELD)?,
            routing: field(ROUTING_FIELD)?,
        })
    }
}

/// A live document as stored.
struct LiveDoc {
    id: String,
    routing: Option<String>,
    source: Vec<u8>,
    version: DocVersion,
}

/// Calls `visit` with every live document of `index`'s last commit.
fn visit_live_docs(
    index: &Index,
    fields: &MetaFieldsOf,
    mut visit: impl FnMut(LiveDoc) -> Result<()>,
) -> Result<()> {
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(tantivy_err("open a reader of the source shard"))?;
    let searcher = reader.searcher();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let column = |name: &str| {
            segment
                .fast_fields()
                .u64(name)
                .map_err(tantivy_err(format!("read the {name} column")))
        };
        let (versions, seq_nos, terms) = (
            column(VERSION_FIELD)?,
            column(SEQ_NO_FIELD)?,
            column(PRIMARY_TERM_FIELD)?,
        );
        for doc_id in segment.doc_ids_alive() {
            let stored: TantivyDocument = searcher
                .doc(DocAddress::new(ord as u32, doc_id))
                .map_err(tantivy_err("read a stored document"))?;
            // nested child documents have no `_id`: they go and come with their root document
            let Some(id) = stored.get_first(fields.id).and_then(|v| v.as_str()) else {
                continue;
            };
            let id = id.to_string();
            let routing = stored
                .get_first(fields.routing)
                .and_then(|v| v.as_str())
                .map(String::from);
            let source = stored
                .get_first(fields.source)
                .and_then(|v| v.as_bytes())
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            let version = DocVersion {
                version: versions.first(doc_id).unwrap_or(0),
                seq_no: seq_nos.first(doc_id).unwrap_or(0),
                primary_term: terms.first(doc_id).unwrap_or(0),
            };
            visit(LiveDoc {
                id,
                routing,
                source,
                version,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{Conditions, PreparedDoc, Shard, ShardConfig};
    use bytes::Bytes;
    use serde_json::Value;
    use tantivy::Term;
    use tessera_mapping::{parse_document, ParseOutcome};

    fn mapping(fields: &[&str]) -> Mapping {
        let properties: serde_json::Map<String, Value> = fields
            .iter()
            .map(|f| (f.to_string(), json!({"type": "keyword"})))
            .collect();
        Mapping::parse(&json!({ "properties": properties })).unwrap()
    }

    fn open(dir: &Path, mapping: &Mapping, version: u64) -> Shard {
        Shard::open("idx", 0, dir, mapping, version, ShardConfig::default()).unwrap()
    }

    fn write(shard: &Shard, mapping: &Mapping, version: u64, id: &str, source: Value) {
        let table = shard.table_for(mapping, version).unwrap();
        let ParseOutcome::Document(doc) = parse_document(mapping, &table, id, &source).unwrap()
        else {
            panic!("mapping update")
        };
        let prepared = PreparedDoc {
            id: id.to_string(),
            auto_id: false,
            doc,
            nested: Vec::new(),
            source: Bytes::from(serde_json::to_vec(&source).unwrap()),
            routing: None,
        };
        let mut batch = shard.write_batch();
        batch.index(prepared, &Conditions::default()).unwrap();
        batch.finish().unwrap();
    }

    fn delete(shard: &Shard, id: &str) {
        let mut batch = shard.write_batch();
        batch.delete(id, None, &Conditions::default()).unwrap();
        batch.finish().unwrap();
    }

    fn term_count(shard: &Shard, field: &str, value: &str) -> usize {
        let snapshot = shard.snapshot();
        let field = snapshot.searcher.schema().get_field(field).unwrap();
        let query = tantivy::query::TermQuery::new(
            Term::from_field_text(field, value),
            tantivy::schema::IndexRecordOption::Basic,
        );
        snapshot
            .searcher
            .search(&query, &tantivy::collector::Count)
            .unwrap()
    }

    #[test]
    fn a_shrunk_shard_holds_every_source_document_with_its_version_and_seq_no() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping(&["tag"]);
        let a = open(&dir.path().join("a"), &m, 1);
        let b = open(&dir.path().join("b"), &m, 1);
        for i in 0..50 {
            let shard = if i % 2 == 0 { &a } else { &b };
            write(
                shard,
                &m,
                1,
                &i.to_string(),
                json!({"tag": format!("t{}", i % 3)}),
            );
        }
        write(&a, &m, 1, "0", json!({"tag": "updated"}));
        delete(&b, "1");
        a.flush().unwrap();
        b.flush().unwrap();
        let sources = [a.pinned_commit().unwrap(), b.pinned_commit().unwrap()];
        let target = dir.path().join("target");
        let mapping = TargetMapping {
            mapping: &m,
            mapping_version: 1,
        };
        build_shard(&target, &mapping, &sources, None).unwrap();
        let shrunk = open(&target, &m, 1);
        assert_eq!(shrunk.doc_counts().0, 49);
        let updated = shrunk.get("0").unwrap().unwrap();
        assert_eq!(updated.version.version, 2);
        assert_eq!(&*updated.source.unwrap(), br#"{"tag":"updated"}"#);
        assert!(shrunk.get("1").unwrap().is_none());
        let three = shrunk.get("3").unwrap().unwrap();
        assert_eq!(three.version.seq_no, 1);
        assert_eq!(term_count(&shrunk, "tag", "t2"), 16);
        // the next write continues after the highest seq_no of the sources (a: 0..=25)
        write(&shrunk, &m, 1, "new", json!({"tag": "x"}));
        assert_eq!(shrunk.get("new").unwrap().unwrap().version.seq_no, 26);
        // building over an existing shard is refused
        assert!(build_shard(&target, &mapping, &sources, None).is_err());
    }

    #[test]
    fn a_split_shard_deletes_the_documents_routed_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping(&["tag"]);
        let source = open(&dir.path().join("s"), &m, 1);
        for i in 0..100 {
            write(&source, &m, 1, &i.to_string(), json!({"tag": "x"}));
        }
        source.flush().unwrap();
        let commit = source.pinned_commit().unwrap();
        let mapping = TargetMapping {
            mapping: &m,
            mapping_version: 1,
        };
        let even = |id: &str, _: Option<&str>| id.parse::<u32>().unwrap() % 2 == 0;
        let odd = |id: &str, _: Option<&str>| id.parse::<u32>().unwrap() % 2 == 1;
        let (first, second) = (dir.path().join("t0"), dir.path().join("t1"));
        build_shard(&first, &mapping, std::slice::from_ref(&commit), Some(&even)).unwrap();
        build_shard(&second, &mapping, std::slice::from_ref(&commit), Some(&odd)).unwrap();
        let (first, second) = (open(&first, &m, 1), open(&second, &m, 1));
        assert_eq!(first.doc_counts().0, 50);
        assert_eq!(second.doc_counts().0, 50);
        assert!(first.get("4").unwrap().is_some());
        assert!(first.get("5").unwrap().is_none());
        assert_eq!(second.get("5").unwrap().unwrap().version.seq_no, 5);
        assert_eq!(term_count(&second, "tag", "x"), 50);
        // the source is untouched
        assert_eq!(source.doc_counts().0, 100);
    }

    #[test]
    fn a_source_with_another_field_order_is_indexed_again() {
        let dir = tempfile::tempdir().unwrap();
        let grown = mapping(&["a", "b"]);
        // shard x met field b first, then a; shard y met both at once: their schemas differ
        let x = open(&dir.path().join("x"), &mapping(&["b"]), 1);
        write(&x, &mapping(&["b"]), 1, "x1", json!({"b": "1"}));
        write(&x, &grown, 2, "x2", json!({"a": "2", "b": "2"}));
        let y = open(&dir.path().join("y"), &grown, 2);
        write(&y, &grown, 2, "y1", json!({"a": "2"}));
        x.flush().unwrap();
        y.flush().unwrap();
        let sources = [y.pinned_commit().unwrap(), x.pinned_commit().unwrap()];
        let y_schema = parse_meta(&sources[0].meta_json).unwrap().schema;
        let x_schema = parse_meta(&sources[1].meta_json).unwrap().schema;
        assert_ne!(x_schema, y_schema);
        let target = dir.path().join("target");
        let mapping = TargetMapping {
            mapping: &grown,
            mapping_version: 2,
        };
        build_shard(&target, &mapping, &sources, None).unwrap();
        let shrunk = open(&target, &grown, 2);
        assert_eq!(shrunk.doc_counts().0, 3);
        assert_eq!(term_count(&shrunk, "a", "2"), 2);
        assert_eq!(term_count(&shrunk, "b", "1"), 1);
        let x2 = shrunk.get("x2").unwrap().unwrap();
        assert_eq!((x2.version.version, x2.version.seq_no), (1, 1));
    }
}
