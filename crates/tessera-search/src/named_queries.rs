//! Named queries (`_name`): the names of the request's queries that each returned hit matches,
//! shown as the hit's `matched_queries`, as OpenSearch's fetch phase shows them.
//!
//! The names are read from the request's `query` and `post_filter` bodies when the request is
//! parsed (the query tree itself carries no names: a named query matches and scores exactly as
//! the same query without a name). A fetched hit is tested against each named query with a
//! non-scoring weight on its own segment, so only the page's hits pay for it.
//!
//! OpenSearch lists the names in the iteration order of the Java `HashMap` it keeps them in:
//! by bucket of the name's `String.hashCode`, then in the order the names were registered
//! (a query's own name after those of the queries inside it; the query before the
//! `post_filter`). [`java_hash_map_order`] reproduces that order.

use serde_json::Value;
use tantivy::query::Weight;
use tantivy::{DocId, DocSet, SegmentReader};
use tessera_common::Result;
use tessera_query::ast::QueryAst;
use tessera_query::dsl::parse_query;

/// A query of the request with a `_name`.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedQuery {
    pub name: String,
    pub query: QueryAst,
}

/// The named queries inside the query body `query` (`{"type": {...}}`), appended to `out` in
/// OpenSearch's registration order.
pub fn collect(query: &Value, out: &mut Vec<NamedQuery>) -> Result<()> {
    let Some((kind, body)) = query.as_object().and_then(|q| q.iter().next()) else {
        return Ok(());
    };
    let child = |key: &str| body.get(key).into_iter().flat_map(clauses);
    let children: Vec<&Value> = match kind.as_str() {
        "bool" => ["must", "must_not", "should", "filter"]
            .into_iter()
            .flat_map(child)
            .collect(),
        "constant_score" => child("filter").collect(),
        "dis_max" => child("queries").collect(),
        "boosting" => ["positive", "negative"]
            .into_iter()
            .flat_map(child)
            .collect(),
        _ => Vec::new(),
    };
    for inner in children {
        collect(inner, out)?;
    }
    if let Some(name) = name_of(body) {
        out.push(NamedQuery {
            name: name.to_string(),
            query: parse_query(query)?,
        });
    }
    Ok(())
}

/// A clause position's queries: one query or a list of them.
fn clauses(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

/// A query body's `_name`: at its top (`bool`, `terms`, `geo_distance`, ...) or in its
/// field's object (`{"match": {"title": {"query": ..., "_name": ...}}}`).
fn name_of(body: &Value) -> Option<&str> {
    let object = body.as_object()?;
    if let Some(name) = object.get("_name") {
        return name.as_str();
    }
    object
        .values()
        .filter_map(|v| v.as_object()?.get("_name")?.as_str())
        .next()
}

/// Whether the document `doc` of `segment` matches `weight`.
pub fn matches(weight: &dyn Weight, segment: &SegmentReader, doc: DocId) -> Result<bool> {
    let mut scorer = weight
        .scorer(segment, 1.0)
        .map_err(|e| tessera_common::Error::internal("create a named query's scorer", e))?;
    let current = scorer.doc();
    Ok(current == doc || (current < doc && scorer.seek(doc) == doc))
}

/// `names` (in registration order, repeats allowed) in the order a Java `HashMap` built by
/// putting them one by one iterates its keys.
pub fn java_hash_map_order(names: &[&str]) -> Vec<String> {
    let mut unique: Vec<&str> = Vec::new();
    for name in names {
        if !unique.contains(name) {
            unique.push(name);
        }
    }
    tessera_common::java_hash::hash_map_order(&unique)
        .into_iter()
        .map(|i| unique[i].to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_found_in_clauses_and_field_objects_children_first() {
        let mut out = Vec::new();
        collect(
            &json!({"bool": {"_name": "outer", "should": [
                {"match": {"t": {"query": "quick", "_name": "zeta"}}},
                {"term": {"k": {"value": "fox", "_name": "alpha"}}},
                {"constant_score": {"filter": {"terms": {"k": ["a"], "_name": "beta"}}}},
                {"match_all": {}}
            ]}}),
            &mut out,
        )
        .unwrap();
        let names: Vec<&str> = out.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "beta", "outer"]);
        assert!(matches!(out[0].query, QueryAst::Match(_)));
        assert!(matches!(out[3].query, QueryAst::Bool(_)));
        let mut none = Vec::new();
        collect(&json!({"match": {"t": "quick"}}), &mut none).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn names_come_in_java_hash_map_order() {
        // recorded from OpenSearch 2.19.6 for a hit matching all five
        assert_eq!(
            java_hash_map_order(&["zeta", "alpha", "mid", "beta", "pf"]),
            ["zeta", "pf", "alpha", "mid", "beta"]
        );
        assert_eq!(tessera_common::java_hash::string_hash("alpha"), 92_909_918);
        assert_eq!(java_hash_map_order(&["b", "a", "b"]), ["a", "b"]);
        // thirteen names need a table of 32
        let many: Vec<String> = (0..13).map(|i| format!("q{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(java_hash_map_order(&refs).len(), 13);
    }
}
