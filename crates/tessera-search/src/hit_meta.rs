//! Where the fetch phase reads a hit's `_id` and `_routing` without its stored document.
//!
//! Both live in the document store, where reading one hit decompresses a whole block (16 KiB)
//! and deserializes the whole document, `_source` included. A hit that does not return its
//! source (`_source: false`, k-NN benchmarks, `_id`-only scans) needs neither: the segment's
//! `ids` file has its `_id` (see `tessera_index::segment_ids`), and a segment without any
//! `_routing` term has no routed hit to show. Segments of shards created before the `ids` file
//! keep reading the store.

use std::sync::Arc;

use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_index::segment_ids::ShardIds;
use tessera_index::ShardSnapshot;

/// A snapshot's `ids` files and which of its segments have routed documents, each looked up
/// when a hit first needs it.
pub struct HitMetas<'a> {
    snapshot: &'a ShardSnapshot,
    ids: Option<Arc<ShardIds>>,
    routed: Vec<Option<bool>>,
}

impl<'a> HitMetas<'a> {
    pub fn new(snapshot: &'a ShardSnapshot) -> HitMetas<'a> {
        HitMetas {
            snapshot,
            ids: None,
            routed: vec![None; snapshot.searcher.segment_readers().len()],
        }
    }

    /// The `_id` of a hit from its segment's `ids` file; `None` when the segment has no such
    /// file (the store has the id).
    pub fn id(&mut self, segment_ord: u32, doc: DocId) -> Result<Option<String>> {
        if self.ids.is_none() {
            let searcher = &self.snapshot.searcher;
            let opened = self
                .snapshot
                .segment_ids
                .get(searcher)
                .map_err(|e| Error::internal("open the segments' ids", e))?;
            self.ids = Some(opened);
        }
        let ids = self.ids.as_ref().expect("opened above");
        match ids.segment(segment_ord) {
            Some(segment) => segment
                .id(doc)
                .map_err(|e| Error::internal("read a hit's _id", e)),
            None => Ok(None),
        }
    }

    /// Whether a hit of segment `segment_ord` may have a `_routing`, which only its stored
    /// document holds.
    pub fn routed(&mut self, segment_ord: u32) -> Result<bool> {
        let slot = &mut self.routed[segment_ord as usize];
        if let Some(routed) = *slot {
            return Ok(routed);
        }
        let routed = self
            .snapshot
            .searcher
            .segment_reader(segment_ord)
            .inverted_index(self.snapshot.table.meta.routing)
            .map_err(|e| Error::internal("read the _routing index", e))?
            .terms()
            .num_terms()
            > 0;
        *slot = Some(routed);
        Ok(routed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::{fetch_docs, FetchSpec};
    use crate::request::{SourceSpec, StoredFields};
    use serde_json::json;
    use tantivy::{Index, TantivyDocument};
    use tessera_index::segment_ids::IdsPlugin;
    use tessera_mapping::{FieldTable, Mapping};

    /// A one-segment snapshot of `docs` (id, routing), its index with the ids plugin or not.
    fn shard_snapshot(with_ids: bool, docs: &[(&str, Option<&str>)]) -> ShardSnapshot {
        let mapping = Mapping::parse(&json!({"properties": {"k": {"type": "keyword"}}})).unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let mut builder = Index::builder().schema(table.schema().clone());
        if with_ids {
            builder = builder.register_plugin(Arc::new(IdsPlugin));
        }
        let index = builder.create_in_ram().unwrap();
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (id, routing) in docs {
            let mut doc = TantivyDocument::new();
            doc.add_text(table.meta.id, id);
            doc.add_bytes(table.meta.source, br#"{"k":"v"}"#.as_slice());
            if let Some(routing) = routing {
                doc.add_text(table.meta.routing, routing);
            }
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        ShardSnapshot::new(searcher, Arc::new(table), 1, Default::default())
    }

    fn spec(source: bool) -> FetchSpec {
        FetchSpec {
            source: SourceSpec {
                enabled: source,
                ..Default::default()
            },
            stored_fields: StoredFields::Default,
            docvalue_fields: Vec::new(),
            fields: Vec::new(),
            version: false,
            seq_no_primary_term: false,
            explain: false,
            highlight: None,
            query: None,
            nested_inner_hits: Vec::new(),
            script_fields: Vec::new(),
        }
    }

    /// (id, routing, source) of every doc of the one segment, in doc order.
    fn fetch(
        snapshot: &ShardSnapshot,
        source: bool,
    ) -> Vec<(Option<String>, Option<String>, bool)> {
        let docs: Vec<(u32, u32)> = (0..snapshot.searcher.num_docs() as u32)
            .map(|doc| (0, doc))
            .collect();
        fetch_docs(snapshot, &docs, &spec(source), None, &[], &[])
            .unwrap()
            .into_iter()
            .map(|hit| (hit.id, hit.routing, hit.source.is_some()))
            .collect()
    }

    #[test]
    fn ids_come_from_the_ids_file_or_the_store_and_routing_from_the_store() {
        let docs = [("b", None), ("a", Some("r1")), ("ü-3", None)];
        let expected = |source: bool| {
            vec![
                (Some("b".to_string()), None, source),
                (Some("a".to_string()), Some("r1".to_string()), source),
                (Some("ü-3".to_string()), None, source),
            ]
        };
        for with_ids in [true, false] {
            let snapshot = shard_snapshot(with_ids, &docs);
            let mut metas = HitMetas::new(&snapshot);
            assert_eq!(metas.id(0, 1).unwrap().is_some(), with_ids);
            assert!(metas.routed(0).unwrap());
            for source in [true, false] {
                assert_eq!(fetch(&snapshot, source), expected(source), "{with_ids}");
            }
        }
        // a segment without a routed document shows none without reading the store
        let snapshot = shard_snapshot(true, &[("x", None)]);
        assert!(!HitMetas::new(&snapshot).routed(0).unwrap());
        assert_eq!(
            fetch(&snapshot, false),
            vec![(Some("x".into()), None, false)]
        );
        // an id longer than the ids file holds (a script may set one) comes from the store
        let long = "l".repeat(600);
        let with_long = shard_snapshot(true, &[(long.as_str(), None), ("y", None)]);
        assert_eq!(
            fetch(&with_long, false),
            vec![
                (Some(long.clone()), None, false),
                (Some("y".into()), None, false)
            ]
        );
    }
}
