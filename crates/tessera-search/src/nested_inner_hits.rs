//! `inner_hits` of `nested` queries: for each hit of the page, the nested objects of its block
//! that match the nested query, found at fetch time on the shard that holds the block. A
//! `nested` query inside another one with `inner_hits` gives each of the outer inner hits
//! inner hits of its own, from that object's nested objects.
//!
//! A hit's block is the documents between the previous root document and the hit (see
//! `tessera_query::nested`): the child query is run there, restricted to the children of the
//! path, scored, sorted, paged (`from`, `size`), and each inner hit shows its `_nested`
//! identity (the field and the object's offset in its array, per nested level) and the nested
//! object itself as its `_source` (`tessera_query::nested_identity`), as OpenSearch renders
//! them.

use serde_json::{json, Map, Value};
use tantivy::query::{EnableScoring, Query};
use tantivy::schema::Value as _;
use tantivy::{DocAddress, DocId, DocSet, TantivyDocument, TERMINATED};
use tessera_common::{Error, Result};
use tessera_query::ast::NestedQueryAst;
use tessera_query::nested::{level_bits, Level};
use tessera_query::nested_identity::{nested_identity, NestedLevels};
use tessera_query::{compile, CompileContext, QueryAst};

use crate::request::{parse_source_spec, SourceSpec};
use tessera_index::ShardSnapshot;

/// One `inner_hits` of a `nested` query.
#[derive(Clone, Debug)]
pub struct NestedInnerHits {
    pub name: String,
    pub path: String,
    pub query: QueryAst,
    pub from: usize,
    pub size: usize,
    pub sort: InnerSort,
    pub source: SourceSpec,
    /// The `inner_hits` of the `nested` queries inside this one's query: each inner hit
    /// shows its own, from its own nested objects.
    pub children: Vec<NestedInnerHits>,
}

/// The order of inner hits.
#[derive(Clone, Debug, PartialEq)]
pub enum InnerSort {
    /// Best score first, then document order (the default).
    Score,
    /// Document order (`_doc`), the order of the objects in the source.
    Doc,
}

/// The `inner_hits` of the `nested` queries in `query`. As in OpenSearch, a `nested` query
/// inside another one contributes its `inner_hits` to those of the enclosing query's inner
/// hits, and none when the enclosing query asks for none.
pub fn collect(query: &QueryAst) -> Result<Vec<NestedInnerHits>> {
    let mut out = Vec::new();
    walk(query, &mut out)?;
    Ok(out)
}

fn walk(query: &QueryAst, out: &mut Vec<NestedInnerHits>) -> Result<()> {
    match query {
        QueryAst::Nested(nested) => {
            let Some(spec) = &nested.inner_hits else {
                return Ok(());
            };
            let mut parsed = parse(nested, spec)?;
            if out.iter().any(|o| o.name == parsed.name) {
                return Err(Error::illegal_argument(format!(
                    "[inner_hits] already contains an entry for key [{}]",
                    parsed.name
                )));
            }
            walk(&nested.query, &mut parsed.children)?;
            out.push(parsed);
            Ok(())
        }
        compound => {
            for q in compound.children() {
                walk(q, out)?;
            }
            Ok(())
        }
    }
}

fn parse(nested: &NestedQueryAst, spec: &Value) -> Result<NestedInnerHits> {
    let mut hits = NestedInnerHits {
        name: nested.path.clone(),
        path: nested.path.clone(),
        query: nested.query.clone(),
        from: 0,
        size: 3,
        sort: InnerSort::Score,
        source: SourceSpec::default(),
        children: Vec::new(),
    };
    let Value::Object(options) = spec else {
        return Err(Error::parsing("[inner_hits] must be an object"));
    };
    let count = |key: &str, value: &Value| {
        value
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| Error::parsing(format!("[inner_hits] failed to parse field [{key}]")))
    };
    for (key, value) in options {
        match key.as_str() {
            "name" => {
                hits.name = value
                    .as_str()
                    .ok_or_else(|| Error::parsing("[inner_hits] failed to parse field [name]"))?
                    .to_string()
            }
            "from" => hits.from = count(key, value)?,
            "size" => hits.size = count(key, value)?,
            "_source" => hits.source = parse_source_spec(value)?,
            "sort" => hits.sort = parse_sort(value)?,
            "ignore_unmapped" => {}
            other => {
                return Err(Error::not_supported(&format!(
                    "[{other}] in the [inner_hits] of a [nested] query"
                )))
            }
        }
    }
    if hits.from + hits.size > MAX_INNER_RESULT_WINDOW {
        return Err(Error::illegal_argument(format!(
            "Inner result window is too large, the inner hit definition's [{}]'s from + size must be less than or equal to: [{MAX_INNER_RESULT_WINDOW}] but was [{}]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
            hits.name,
            hits.from + hits.size
        )));
    }
    Ok(hits)
}

/// `index.max_inner_result_window`'s default.
const MAX_INNER_RESULT_WINDOW: usize = 100;

fn parse_sort(value: &Value) -> Result<InnerSort> {
    let items = match value {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let mut sort = None;
    for item in &items {
        let (name, order) = match item {
            Value::String(s) => (s.clone(), None),
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one entry");
                let order = match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(opts) => {
                        opts.get("order").and_then(Value::as_str).map(String::from)
                    }
                    _ => None,
                };
                (k.clone(), order)
            }
            _ => return Err(Error::parsing("[inner_hits] malformed [sort]")),
        };
        let this = match (name.as_str(), order.as_deref()) {
            ("_score", None | Some("desc")) => InnerSort::Score,
            ("_doc", None | Some("asc")) => InnerSort::Doc,
            _ => {
                return Err(Error::not_supported(&format!(
                    "[sort] on [{name}] in the [inner_hits] of a [nested] query"
                )))
            }
        };
        // the first key decides; a later `_doc` only breaks ties, as it does anyway
        sort.get_or_insert(this);
    }
    Ok(sort.unwrap_or(InnerSort::Score))
}

/// The inner hits of the hit at `address` (a root document), rendered by name.
pub fn inner_hits(
    snapshot: &ShardSnapshot,
    ctx: &CompileContext,
    index_name: &str,
    address: DocAddress,
    specs: &[NestedInnerHits],
) -> Result<Map<String, Value>> {
    let table = &snapshot.table;
    let stored: TantivyDocument = snapshot
        .searcher
        .doc(address)
        .map_err(|e| Error::internal("read a stored document", e))?;
    let id = stored
        .get_first(table.meta.id)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let source: Option<Value> = stored
        .get_first(table.meta.source)
        .and_then(|v| v.as_bytes())
        .map(serde_json::from_slice)
        .transpose()
        .map_err(|e| Error::internal("parse _source", e))?;
    let root = Root {
        snapshot,
        ctx,
        index_name,
        segment_ord: address.segment_ord,
        id,
        source,
    };
    root.inner_hits_of(specs, None, address.doc_id)
}

/// The root document whose block the inner hits come from.
struct Root<'a> {
    snapshot: &'a ShardSnapshot,
    ctx: &'a CompileContext<'a>,
    index_name: &'a str,
    segment_ord: u32,
    id: String,
    source: Option<Value>,
}

impl Root<'_> {
    /// The inner hits of `specs` under `parent` (the root document when `parent_path` is
    /// `None`, else a nested object of that path), rendered by name.
    fn inner_hits_of(
        &self,
        specs: &[NestedInnerHits],
        parent_path: Option<&str>,
        parent: DocId,
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for spec in specs {
            if let Some(rendered) = self.spec_hits(spec, parent_path, parent)? {
                out.insert(spec.name.clone(), rendered);
            }
        }
        Ok(out)
    }

    /// The first document of `parent`'s own nested objects: the one after the last document
    /// before it on its level or a level above (nested objects come before their parent).
    fn block_start(&self, parent_path: Option<&str>, parent: DocId) -> Result<DocId> {
        let reader = self.snapshot.searcher.segment_reader(self.segment_ord);
        NestedLevels::of(&self.snapshot.table, parent_path)?.first_child(reader, parent)
    }

    /// The rendered inner hits of one spec under `parent`; `None` when the index has no such
    /// nested path.
    fn spec_hits(
        &self,
        spec: &NestedInnerHits,
        parent_path: Option<&str>,
        parent: DocId,
    ) -> Result<Option<Value>> {
        let (snapshot, ctx) = (self.snapshot, self.ctx);
        let table = &snapshot.table;
        let reader = snapshot.searcher.segment_reader(self.segment_ord);
        let (Some(markers), Some(_)) = (table.meta.nested, table.nested_path(&spec.path)) else {
            return Ok(None);
        };
        let internal = |e: tantivy::TantivyError| Error::internal("find nested inner hits", e);
        let children =
            level_bits(reader, markers, &Level::Path(spec.path.clone())).map_err(internal)?;
        let start = self.block_start(parent_path, parent)?;
        let previous = ctx.nested_scope_replace(Some(spec.path.clone()));
        let child_query = compile(&spec.query, ctx);
        ctx.nested_scope_replace(previous);
        let weight = child_query?
            .weight(EnableScoring::enabled_from_searcher(&snapshot.searcher))
            .map_err(|e| Error::internal("create the inner hits weight", e))?;
        let mut scorer = weight
            .scorer(reader, 1.0)
            .map_err(|e| Error::internal("create the inner hits scorer", e))?;
        let mut matches: Vec<(DocId, f32)> = Vec::new();
        let mut doc = if scorer.doc() < start {
            scorer.seek(start)
        } else {
            scorer.doc()
        };
        while doc != TERMINATED && doc < parent {
            if children.contains(doc) {
                matches.push((doc, scorer.score()));
            }
            doc = scorer.advance();
        }
        let total = matches.len();
        let max_score = matches
            .iter()
            .map(|m| m.1)
            .fold(f32::NEG_INFINITY, f32::max);
        if spec.sort == InnerSort::Score {
            matches.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        // sorted by `_doc`, inner hits show no score and their shard-wide doc id as sort value
        let by_doc = spec.sort == InnerSort::Doc;
        let doc_base: u64 = snapshot.searcher.segment_readers()[..self.segment_ord as usize]
            .iter()
            .map(|r| r.max_doc() as u64)
            .sum();
        let filter = tessera_mapping::SourceFilter::new(
            spec.source.includes.clone(),
            spec.source.excludes.clone(),
        );
        let mut hits = Vec::new();
        for &(doc, score) in matches.iter().skip(spec.from).take(spec.size) {
            let identity = nested_identity(table, reader, doc, &spec.path)?;
            let mut hit = Map::new();
            hit.insert("_index".into(), json!(self.index_name));
            hit.insert("_id".into(), json!(self.id));
            hit.insert("_nested".into(), identity.render());
            if by_doc {
                hit.insert("_score".into(), Value::Null);
                hit.insert("sort".into(), json!([doc_base + doc as u64]));
            } else {
                hit.insert("_score".into(), score_json(score));
            }
            if spec.source.enabled {
                if let Some(object) = self
                    .source
                    .as_ref()
                    .and_then(|s| identity.filtered_object(s, &spec.path, &filter))
                {
                    hit.insert("_source".into(), object);
                }
            }
            if !spec.children.is_empty() {
                let inner = self.inner_hits_of(&spec.children, Some(&spec.path), doc)?;
                hit.insert("inner_hits".into(), Value::Object(inner));
            }
            hits.push(Value::Object(hit));
        }
        Ok(Some(json!({"hits": {
            "total": {"value": total, "relation": "eq"},
            "max_score": if total == 0 || by_doc { Value::Null } else { score_json(max_score) },
            "hits": hits,
        }})))
    }
}

fn score_json(score: f32) -> Value {
    crate::source_fields::float_value(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_hits_options() {
        let query = tessera_query::parse_query(&json!({"nested": {"path": "c",
            "query": {"match_all": {}}, "inner_hits": {"name": "n", "size": 1, "sort": ["_doc"]}}}))
        .unwrap();
        let found = collect(&query).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].name.as_str(), found[0].size, &found[0].sort),
            ("n", 1, &InnerSort::Doc)
        );
        let bad = tessera_query::parse_query(&json!({"nested": {"path": "c",
            "query": {"match_all": {}}, "inner_hits": {"highlight": {}}}}))
        .unwrap();
        assert!(collect(&bad).is_err());
    }
}
