//! `inner_hits` of `nested` queries: for each hit of the page, the nested objects of its block
//! that match the nested query, found at fetch time on the shard that holds the block.
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
use tessera_query::nested_identity::nested_identity;
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
}

/// The order of inner hits.
#[derive(Clone, Debug, PartialEq)]
pub enum InnerSort {
    /// Best score first, then document order (the default).
    Score,
    /// Document order (`_doc`), the order of the objects in the source.
    Doc,
}

/// The `inner_hits` of the `nested` queries in `query` (those at the top level of the query
/// tree; one inside another `nested` query is refused).
pub fn collect(query: &QueryAst) -> Result<Vec<NestedInnerHits>> {
    let mut out = Vec::new();
    walk(query, false, &mut out)?;
    Ok(out)
}

fn walk(query: &QueryAst, inside_nested: bool, out: &mut Vec<NestedInnerHits>) -> Result<()> {
    match query {
        QueryAst::Nested(nested) => {
            if let Some(spec) = &nested.inner_hits {
                if inside_nested {
                    return Err(Error::not_supported(
                        "[inner_hits] of a [nested] query inside another [nested] query",
                    ));
                }
                let parsed = parse(nested, spec)?;
                if out.iter().any(|o| o.name == parsed.name) {
                    return Err(Error::illegal_argument(format!(
                        "[inner_hits] already contains an entry for key [{}]",
                        parsed.name
                    )));
                }
                out.push(parsed);
            }
            walk(&nested.query, true, out)
        }
        QueryAst::Bool(b) => {
            for clause in b
                .must
                .iter()
                .chain(&b.should)
                .chain(&b.filter)
                .chain(&b.must_not)
            {
                walk(clause, inside_nested, out)?;
            }
            Ok(())
        }
        QueryAst::ConstantScore { filter, .. } => walk(filter, inside_nested, out),
        QueryAst::DisMax { queries, .. } => {
            for q in queries {
                walk(q, inside_nested, out)?;
            }
            Ok(())
        }
        QueryAst::Boosting {
            positive, negative, ..
        } => {
            walk(positive, inside_nested, out)?;
            walk(negative, inside_nested, out)
        }
        QueryAst::FunctionScore(f) => walk(&f.query, inside_nested, out),
        _ => Ok(()),
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
    let mut out = Map::new();
    let reader = snapshot.searcher.segment_reader(address.segment_ord);
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
    for spec in specs {
        let (Some(markers), Some(_)) = (table.meta.nested, table.nested_path(&spec.path)) else {
            continue;
        };
        let internal = |e: tantivy::TantivyError| Error::internal("find nested inner hits", e);
        let roots = level_bits(reader, markers, &Level::Root).map_err(internal)?;
        let children =
            level_bits(reader, markers, &Level::Path(spec.path.clone())).map_err(internal)?;
        let start = roots.prev_set(address.doc_id).map_or(0, |d| d + 1);
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
        while doc != TERMINATED && doc < address.doc_id {
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
        let doc_base: u64 = snapshot.searcher.segment_readers()[..address.segment_ord as usize]
            .iter()
            .map(|r| r.max_doc() as u64)
            .sum();
        let mut hits = Vec::new();
        for &(doc, score) in matches.iter().skip(spec.from).take(spec.size) {
            let identity = nested_identity(table, reader, doc, &spec.path)?;
            let mut hit = Map::new();
            hit.insert("_index".into(), json!(index_name));
            hit.insert("_id".into(), json!(id));
            hit.insert("_nested".into(), identity.render());
            if by_doc {
                hit.insert("_score".into(), Value::Null);
                hit.insert("sort".into(), json!([doc_base + doc as u64]));
            } else {
                hit.insert("_score".into(), score_json(score));
            }
            if spec.source.enabled {
                let filter = tessera_mapping::SourceFilter::new(
                    spec.source.includes.clone(),
                    spec.source.excludes.clone(),
                );
                if let Some(object) = source
                    .as_ref()
                    .and_then(|s| identity.filtered_object(s, &spec.path, &filter))
                {
                    hit.insert("_source".into(), object);
                }
            }
            hits.push(Value::Object(hit));
        }
        out.insert(
            spec.name.clone(),
            json!({"hits": {
                "total": {"value": total, "relation": "eq"},
                "max_score": if total == 0 || by_doc { Value::Null } else { score_json(max_score) },
                "hits": hits,
            }}),
        );
    }
    Ok(out)
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
