//! The `percolate` query: the stored queries (of a `percolator` field) that match the given
//! documents.
//!
//! The documents are indexed, parsed with the index's mapping, into an index of their own
//! in memory (as OpenSearch does); each stored query is compiled against it and run there,
//! and matches when it finds any document; its score is its best score among them. The
//! stored queries are read from the field's bytes column, whose dictionary keeps each
//! distinct query once per segment, so a query many documents share runs once. Like `knn`,
//! the query is answered on the shard before the request's weight is built and becomes the
//! fixed set of its matches with their scores (`DocScoresQuery`).
//!
//! Which documents each hit matched (`_percolator_document_slot`) is asked again at fetch
//! time, of the few hits only ([`Percolator::matches`]).

use std::collections::HashMap;
use std::sync::Arc;

use tantivy::query::{EnableScoring, Query};
use tantivy::{DocId, DocSet, Index, IndexWriter, Searcher, TantivyDocument, TERMINATED};
use tessera_common::{Error, Result};
use tessera_knn::query::DocScoresQuery;
use tessera_mapping::field_table::LeafKind;
use tessera_mapping::{Dynamic, FieldTable, Json, Mapping, ParseOutcome};

use super::{compile, CompileContext};
use crate::ast::{PercolateQuery, QueryAst};

/// tantivy's least indexing memory for one thread: the documents are few.
const WRITER_MEMORY: usize = 15_000_000;

pub(super) fn percolate(ctx: &CompileContext, query: &PercolateQuery) -> Result<Box<dyn Query>> {
    check_field(ctx, &query.field)?;
    let Some(searcher) = ctx.searcher else {
        return Err(ctx.error(format!(
            "failed to create query: [percolate] on field [{}] cannot be searched here",
            query.field
        )));
    };
    let percolator = Percolator::new(ctx, query)?;
    let mut hits = Vec::new();
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let Some(column) = segment
            .fast_fields()
            .bytes(&query.field)
            .map_err(|e| Error::internal("open a percolator column", e))?
        else {
            continue;
        };
        // one answer per distinct stored query of the segment
        let mut answers: HashMap<u64, Option<f32>> = HashMap::new();
        let mut bytes = Vec::new();
        let alive = segment.alive_bitset();
        for doc in 0..segment.max_doc() {
            if alive.is_some_and(|alive| !alive.is_alive(doc)) {
                continue;
            }
            let Some(ord) = column.term_ords(doc).next() else {
                continue;
            };
            let score = match answers.get(&ord) {
                Some(score) => *score,
                None => {
                    bytes.clear();
                    column
                        .ord_to_bytes(ord, &mut bytes)
                        .map_err(|e| Error::internal("read a stored query", e))?;
                    let score = percolator.matches(&bytes)?.map(|(score, _)| score);
                    answers.insert(ord, score);
                    score
                }
            };
            if let Some(score) = score {
                hits.push((segment_ord as u32, doc, score));
            }
        }
    }
    // OpenSearch 2.19 parses `boost` but its percolate scores leave it out
    Ok(Box::new(DocScoresQuery::from_scores(searcher, &hits, 1.0)))
}

/// OpenSearch's check that the field holds stored queries.
fn check_field(ctx: &CompileContext, field: &str) -> Result<()> {
    match ctx.table.leaf(field) {
        Some(leaf) if matches!(leaf.kind, LeafKind::Percolator) => Ok(()),
        Some(leaf) => Err(ctx.error(format!(
            "expected field [{field}] to be of type [percolator], but is of type [{}]",
            leaf.field_type.name()
        ))),
        None => Err(ctx.error(format!("field [{field}] does not exist"))),
    }
}

/// The documents of a `percolate` query, indexed in memory, ready to run stored queries on.
pub struct Percolator {
    searcher: Searcher,
    table: FieldTable,
    /// Each document's id in the memory index (its root, when it has nested objects), by slot.
    roots: Vec<DocId>,
    index_name: String,
    default_fields: Vec<String>,
    now_millis: i64,
    max_terms_count: usize,
}

impl Percolator {
    /// Indexes the query's documents with the index's mapping.
    pub fn new(ctx: &CompileContext, query: &PercolateQuery) -> Result<Percolator> {
        let mapping = ctx.mapping.ok_or_else(|| {
            ctx.error("failed to create query: [percolate] needs the index's mapping here")
        })?;
        // fields the mapping lacks are left in the document's source: no stored query can
        // name them, as each was checked against the mapping when it was indexed
        let mut mapping: Mapping = mapping.clone();
        mapping.dynamic = Dynamic::False;
        let (table, index) = memory_index(&mapping)?;
        let mut writer: IndexWriter<TantivyDocument> = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .map_err(|e| Error::internal("index the percolated documents", e))?;
        let mut roots = Vec::with_capacity(query.documents.len());
        let mut next: DocId = 0;
        for document in &query.documents {
            let value: serde_json::Value = serde_json::from_str(document)
                .map_err(|e| Error::internal("read a percolated document", e))?;
            let parsed = tessera_mapping::parse_json_document(
                &mapping,
                &table,
                "_temp_id",
                &Json::from_value(&value),
            )
            .map_err(|e| {
                ctx.error(format!("failed to create query: {}", e.reason()))
                    .caused_by(e)
            })?;
            let block = match parsed {
                ParseOutcome::Document(doc) => vec![doc],
                ParseOutcome::Block { mut nested, doc } => {
                    nested.push(doc);
                    nested
                }
                ParseOutcome::MappingUpdate(_) => {
                    let (mut nested, doc) = tessera_mapping::parse_document_for_replay(
                        &mapping,
                        &table,
                        "_temp_id",
                        &Json::from_value(&value),
                    );
                    nested.push(doc);
                    nested
                }
            };
            next += block.len() as DocId;
            roots.push(next - 1);
            // one indexing thread keeps the documents in order, each block contiguous
            for doc in block {
                writer
                    .add_document(doc)
                    .map_err(|e| Error::internal("index a percolated document", e))?;
            }
        }
        writer
            .commit()
            .map_err(|e| Error::internal("index the percolated documents", e))?;
        let searcher = index
            .reader()
            .map_err(|e| Error::internal("read the percolated documents", e))?
            .searcher();
        Ok(Percolator {
            searcher,
            table,
            roots,
            index_name: ctx.index.to_string(),
            default_fields: ctx.default_fields.to_vec(),
            now_millis: ctx.now_millis,
            max_terms_count: ctx.max_terms_count,
        })
    }

    /// Runs one stored query (its JSON) on the documents: `None` when it matches none, else
    /// its best score and the slots of the documents it matches.
    pub fn matches(&self, stored: &[u8]) -> Result<Option<(f32, Vec<usize>)>> {
        let json: serde_json::Value = serde_json::from_slice(stored)
            .map_err(|e| Error::internal("read a stored query", e))?;
        let ast = crate::dsl::parse_query(&json)?;
        let ctx = CompileContext {
            table: &self.table,
            index: &self.index_name,
            default_fields: &self.default_fields,
            now_millis: self.now_millis,
            max_terms_count: self.max_terms_count,
            searcher: Some(&self.searcher),
            clauses: Default::default(),
            knn: Default::default(),
            nested_scope: Default::default(),
            deadline: None,
            failures: None,
            mapping: None,
            legacy_bm25: false,
            shard_id: 0,
        };
        let mut query = compile(&ast, &ctx)?;
        if let Some(markers) = self.table.meta.nested {
            query = Box::new(crate::nested::RootDocsQuery::new(query, markers));
        }
        let weight = query
            .weight(EnableScoring::enabled_from_searcher(&self.searcher))
            .map_err(|e| Error::internal("run a stored query", e))?;
        let mut best: Option<f32> = None;
        let mut slots = Vec::new();
        for segment in self.searcher.segment_readers() {
            let mut scorer = weight
                .scorer(segment, 1.0)
                .map_err(|e| Error::internal("run a stored query", e))?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                if let Ok(slot) = self.roots.binary_search(&doc) {
                    let score = scorer.score();
                    best = Some(best.map_or(score, |b: f32| b.max(score)));
                    slots.push(slot);
                }
                doc = scorer.advance();
            }
        }
        Ok(best.map(|score| (score, slots)))
    }
}

/// An empty index in memory with `mapping`'s fields, analyzers and plugins, as a shard has.
fn memory_index(mapping: &Mapping) -> Result<(FieldTable, Index)> {
    let (table, _) = FieldTable::build(mapping, None)?;
    let index = Index::builder()
        .schema(table.schema().clone())
        .register_plugin(Arc::new(tessera_knn::segment::KnnPlugin::default()))
        .create_in_ram()
        .map_err(|e| Error::internal("create an index in memory", e))?;
    tessera_mapping::analysis::register_tokenizers(&index);
    Ok((table, index))
}

/// Checks a query about to be stored in a percolator field: it must parse and compile
/// against the index's mapping (on an empty index of it), as OpenSearch checks it.
pub fn check_stored_query(
    mapping: &Mapping,
    index_name: &str,
    query: &serde_json::Value,
) -> Result<()> {
    let ast: QueryAst = crate::dsl::parse_query(query)?;
    let (table, index) = memory_index(mapping)?;
    let mut fields = Vec::new();
    named_fields(query, &mut fields);
    for field in fields {
        let known =
            table.leaf(field).is_some() || mapping.field(field).is_some() || field.contains('*');
        if !known {
            return Err(Error::query_shard(
                index_name,
                format!("No field mapping can be found for the field with name [{field}]"),
            ));
        }
    }
    let searcher = index
        .reader()
        .map_err(|e| Error::internal("check a stored query", e))?
        .searcher();
    let ctx = CompileContext {
        table: &table,
        index: index_name,
        default_fields: &[],
        now_millis: tessera_common::time::now_millis(),
        max_terms_count: super::DEFAULT_MAX_TERMS_COUNT,
        searcher: Some(&searcher),
        clauses: Default::default(),
        knn: Default::default(),
        nested_scope: Default::default(),
        deadline: None,
        failures: None,
        mapping: Some(mapping),
        legacy_bm25: true,
        shard_id: 0,
    };
    compile(&ast, &ctx).map(|_| ())
}

/// Leaf queries whose body is `{field: …}`, besides their options.
const FIELD_KEYED: &[&str] = &[
    "term",
    "terms",
    "range",
    "prefix",
    "wildcard",
    "regexp",
    "fuzzy",
    "match",
    "match_phrase",
    "match_phrase_prefix",
    "match_bool_prefix",
    "geo_distance",
    "geo_bounding_box",
    "geo_polygon",
];
/// Options of those bodies that are not field names.
const OPTIONS: &[&str] = &[
    "boost",
    "_name",
    "distance",
    "distance_type",
    "validation_method",
    "ignore_unmapped",
    "type",
];

/// The fields a stored query names in its leaf queries (OpenSearch refuses a stored query on
/// a field the mapping lacks, where a search would match nothing).
fn named_fields<'q>(query: &'q serde_json::Value, out: &mut Vec<&'q str>) {
    let Some(map) = query.as_object() else {
        return;
    };
    for (kind, body) in map {
        match (kind.as_str(), body) {
            (kind, serde_json::Value::Object(body)) if FIELD_KEYED.contains(&kind) => out.extend(
                body.keys()
                    .map(String::as_str)
                    .filter(|key| !OPTIONS.contains(key)),
            ),
            ("exists", body) => out.extend(body.get("field").and_then(|f| f.as_str())),
            ("bool", serde_json::Value::Object(body)) => {
                for clause in ["must", "should", "filter", "must_not"] {
                    match body.get(clause) {
                        Some(serde_json::Value::Array(items)) => {
                            items.iter().for_each(|q| named_fields(q, out))
                        }
                        Some(single) => named_fields(single, out),
                        None => {}
                    }
                }
            }
            ("constant_score", body) => {
                if let Some(filter) = body.get("filter") {
                    named_fields(filter, out);
                }
            }
            ("dis_max", body) => {
                if let Some(serde_json::Value::Array(items)) = body.get("queries") {
                    items.iter().for_each(|q| named_fields(q, out));
                }
            }
            ("boosting", body) => {
                for key in ["positive", "negative"] {
                    if let Some(q) = body.get(key) {
                        named_fields(q, out);
                    }
                }
            }
            ("function_score", body) => {
                if let Some(q) = body.get("query") {
                    named_fields(q, out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_query_may_only_name_mapped_fields() {
        let mapping = Mapping::parse(&json!({"properties": {
            "message": {"type": "text"}, "n": {"type": "long"}, "q": {"type": "percolator"}
        }}))
        .unwrap();
        let check = |query: serde_json::Value| check_stored_query(&mapping, "i", &query);
        assert!(check(json!({"match": {"message": "bonsai"}})).is_ok());
        assert!(check(json!({"bool": {"filter": [{"range": {"n": {"gte": 5}}}]}})).is_ok());
        let e = check(json!({"bool": {"must": {"term": {"nope": {"value": 1}}}}})).unwrap_err();
        assert_eq!(
            e.reason(),
            "No field mapping can be found for the field with name [nope]"
        );
        assert_eq!(
            check(json!({"bogus": {}})).unwrap_err().reason(),
            "unknown query [bogus]"
        );
    }

    #[test]
    fn stored_queries_run_on_the_documents_with_lucenes_bm25() {
        let mapping = Mapping::parse(&json!({"properties": {
            "message": {"type": "text"}, "n": {"type": "long"}, "q": {"type": "percolator"}
        }}))
        .unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let ctx = CompileContext {
            table: &table,
            index: "i",
            default_fields: &[],
            now_millis: 0,
            max_terms_count: super::super::DEFAULT_MAX_TERMS_COUNT,
            searcher: None,
            clauses: Default::default(),
            knn: Default::default(),
            nested_scope: Default::default(),
            deadline: None,
            failures: None,
            mapping: Some(&mapping),
            legacy_bm25: true,
            shard_id: 0,
        };
        let query = PercolateQuery {
            field: "q".into(),
            documents: vec![
                json!({"message": "A new bonsai tree in the office", "n": 7}).to_string(),
                json!({"n": 1, "unmapped": "ignored"}).to_string(),
            ],
            indexed: None,
            name: None,
            boost: 1.0,
        };
        let percolator = Percolator::new(&ctx, &query).unwrap();
        let run = |stored: serde_json::Value| percolator.matches(stored.to_string().as_bytes());
        let (score, slots) = run(json!({"range": {"n": {"gte": 5}}})).unwrap().unwrap();
        assert_eq!((score, slots), (1.0, vec![0]));
        assert_eq!(
            run(json!({"range": {"n": {"lte": 7}}})).unwrap().unwrap().1,
            [0, 1]
        );
        assert_eq!(run(json!({"match": {"message": "cactus"}})).unwrap(), None);
        // OpenSearch's memory index scores without the legacy `1 + k1` factor: 0.26152915 (the
        // statistics count the one document with a message)
        let (score, _) = run(json!({"match": {"message": "bonsai tree"}}))
            .unwrap()
            .unwrap();
        assert!((score - 0.261_529_15).abs() < 1e-6, "{score}");
    }
}
