//! `_percolator_document_slot`: which of a `percolate` query's documents each hit matched,
//! shown in the hit's `fields` as OpenSearch shows it (with the query's `name` appended
//! when the request has several `percolate` queries).
//!
//! The query phase knows only that a stored query matched; the fetch phase asks each hit's
//! stored query again of the documents, indexed in memory once per query.

use serde_json::json;
use tantivy::DocAddress;
use tessera_common::{Error, Result};
use tessera_index::ShardSnapshot;
use tessera_query::ast::{PercolateQuery, QueryAst};
use tessera_query::compile::percolate::Percolator;
use tessera_query::compile::CompileContext;

use crate::fetch::FetchedDoc;

const SLOT_FIELD: &str = "_percolator_document_slot";

/// Adds the slots of every `percolate` query of `query` to the hits `fetched` (of `docs`).
pub fn add_slots(
    snapshot: &ShardSnapshot,
    ctx: &CompileContext,
    query: &QueryAst,
    docs: &[(u32, u32)],
    fetched: &mut [FetchedDoc],
) -> Result<()> {
    let mut queries = Vec::new();
    walk(query, &mut queries);
    let single = queries.len() == 1;
    for query in queries {
        let name = match (&query.name, single) {
            (Some(name), false) => format!("{SLOT_FIELD}_{name}"),
            _ => SLOT_FIELD.to_string(),
        };
        let percolator = Percolator::new(ctx, query)?;
        let mut bytes = Vec::new();
        for (hit, &(segment_ord, doc)) in fetched.iter_mut().zip(docs) {
            if !stored_query(
                snapshot,
                &query.field,
                DocAddress::new(segment_ord, doc),
                &mut bytes,
            )? {
                continue;
            }
            if let Some((_, slots)) = percolator.matches(&bytes)? {
                hit.fields.insert(name.clone(), json!(slots));
            }
        }
    }
    Ok(())
}

/// Reads a document's stored query into `bytes`; false when it has none.
fn stored_query(
    snapshot: &ShardSnapshot,
    field: &str,
    address: DocAddress,
    bytes: &mut Vec<u8>,
) -> Result<bool> {
    let segment = snapshot.searcher.segment_reader(address.segment_ord);
    let Some(column) = segment
        .fast_fields()
        .bytes(field)
        .map_err(|e| Error::internal("open a percolator column", e))?
    else {
        return Ok(false);
    };
    let Some(ord) = column.term_ords(address.doc_id).next() else {
        return Ok(false);
    };
    bytes.clear();
    column
        .ord_to_bytes(ord, bytes)
        .map_err(|e| Error::internal("read a stored query", e))
}

/// The `percolate` queries of a query tree, in the order they appear.
fn walk<'q>(query: &'q QueryAst, out: &mut Vec<&'q PercolateQuery>) {
    match query {
        QueryAst::Percolate(percolate) => out.push(percolate),
        // a nested query runs on the nested objects, whose stored queries are no hits
        QueryAst::Nested(_) => {}
        compound => compound.children().into_iter().for_each(|q| walk(q, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_percolate_queries_of_a_tree() {
        let query = tessera_query::dsl::parse_query(&json!({"bool": {
            "must": [{"percolate": {"field": "q", "document": {"a": 1}, "name": "one"}}],
            "filter": [{"constant_score": {"filter":
                {"percolate": {"field": "q", "document": {"a": 2}, "name": "two"}}}}],
            "must_not": [{"percolate": {"field": "q", "document": {"a": 3}}}]
        }}))
        .unwrap();
        let mut found = Vec::new();
        walk(&query, &mut found);
        let names: Vec<_> = found.iter().map(|q| q.name.as_deref()).collect();
        // a must_not clause's documents match no hit: its slots are never shown
        assert_eq!(names, [Some("one"), Some("two"), None]);
    }
}
