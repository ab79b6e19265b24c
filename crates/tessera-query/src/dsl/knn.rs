//! `knn`: the k nearest vectors of a `knn_vector` field (or those within `max_distance` /
//! above `min_score`), optionally among a filter's matches.
//!
//! The checks OpenSearch's `KNNQueryBuilder` makes while parsing are made here with its words;
//! those that need the field (its dimension, its space) are made when the query is compiled on
//! a shard (`compile::knn`).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, object, parse_query};
use crate::ast::{KnnQuery, QueryAst};

/// OpenSearch's largest `k`.
pub const MAX_K: i64 = 10_000;

fn field_error(key: &str, cause: String) -> Error {
    Error::x_content_parse(format!("[knn] failed to parse field [{key}]"))
        .caused_by(Error::illegal_argument(cause))
        .at_body_key(key)
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let map = object("knn", body)?;
    let mut entries = map.iter();
    let Some((field, spec)) = entries.next() else {
        return Err(Error::illegal_argument("[knn] requires query vector"));
    };
    if let Some((other, _)) = entries.next() {
        return Err(Error::parsing(format!(
            "[knn] query doesn't support multiple fields, found [{field}] and [{other}]"
        )));
    }
    let mut query = KnnQuery {
        field: field.clone(),
        vector: Vec::new(),
        k: None,
        max_distance: None,
        min_score: None,
        filter: None,
        ef_search: None,
        boost: 1.0,
    };
    let mut has_vector = false;
    if let Value::Object(options) = spec {
        for (key, value) in options {
            match key.as_str() {
                "vector" => {
                    query.vector = parse_vector(value)?;
                    has_vector = true;
                }
                "k" => {
                    let k = match value {
                        Value::Number(n) => n.as_i64(),
                        Value::String(s) => s.trim().parse().ok(),
                        _ => None,
                    };
                    query.k = Some(k.ok_or_else(|| {
                        field_error(key, format!("For input string: \"{}\"", plain(value)))
                    })?);
                }
                "max_distance" => query.max_distance = Some(as_f32("knn", key, value)?),
                "min_score" => query.min_score = Some(as_f32("knn", key, value)?),
                "filter" => query.filter = Some(Box::new(parse_query(value)?)),
                "method_parameters" => query.ef_search = parse_method_parameters(value)?,
                "boost" => query.boost = as_f32("knn", key, value)?,
                "_name" => {}
                _ => {
                    return Err(
                        Error::x_content_parse(format!("[knn] unknown field [{key}]"))
                            .at_body_key(key.as_str()),
                    )
                }
            }
        }
    }
    let set = [
        query.k.is_some(),
        query.max_distance.is_some(),
        query.min_score.is_some(),
    ]
    .iter()
    .filter(|s| **s)
    .count();
    if set != 1 {
        return Err(Error::illegal_argument(
            "[knn] requires exactly one of k, distance or score to be set",
        ));
    }
    if !has_vector {
        return Err(Error::illegal_argument("[knn] requires query vector"));
    }
    if let Some(k) = query.k {
        if k <= 0 || k > MAX_K {
            return Err(Error::illegal_argument(format!(
                "[knn] requires k to be in the range (0, {MAX_K}]"
            )));
        }
    }
    if query.min_score.is_some_and(|s| s <= 0.0) {
        return Err(Error::illegal_argument(
            "[knn] requires minScore to be greater than 0",
        ));
    }
    Ok(QueryAst::Knn(Box::new(query)))
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_vector(value: &Value) -> Result<Vec<f32>> {
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) | Value::Null => {
            return Err(field_error(
                "vector",
                "[knn] field 'vector' requires to be non-null and non-empty".into(),
            ))
        }
        other => {
            return Err(field_error(
                "vector",
                format!("For input string: \"{}\"", plain(other)),
            ))
        }
    };
    items
        .iter()
        .map(|item| {
            tessera_mapping::knn::number(item).ok_or_else(|| {
                field_error("vector", format!("For input string: \"{}\"", plain(item)))
            })
        })
        .collect()
}

fn parse_method_parameters(value: &Value) -> Result<Option<u32>> {
    let Value::Object(params) = value else {
        return Err(field_error(
            "method_parameters",
            "[knn] method_parameters must be an object".into(),
        ));
    };
    let mut ef_search = None;
    for (key, value) in params {
        if key != "ef_search" {
            return Err(
                Error::x_content_parse("[knn] failed to parse field [method_parameters]")
                    .caused_by(Error::parsing(format!(
                        "[knn] unknown method parameter found [{key}]"
                    )))
                    .at_body_key("method_parameters"),
            );
        }
        let n = value.as_i64().unwrap_or(0);
        if n <= 0 {
            return Err(Error::illegal_argument(
                "[knn] errors in method parameter [Validation Failed: 1: Validation Failed: 1: ef_search should be greater than 0;;]",
            ));
        }
        ef_search = Some(n.min(u32::MAX as i64) as u32);
    }
    Ok(ef_search)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn reason(v: Value) -> String {
        parse(&v).unwrap_err().reason().to_string()
    }

    #[test]
    fn parses_every_option() {
        let q = parse(
            &json!({"v": {"vector": [1, "2", 3.5], "k": 3, "filter": {"term": {"n": "a"}},
            "method_parameters": {"ef_search": 50}, "boost": 2, "_name": "x"}}),
        )
        .unwrap();
        let QueryAst::Knn(q) = q else { panic!() };
        assert_eq!(q.vector, vec![1.0, 2.0, 3.5]);
        assert_eq!((q.k, q.ef_search, q.boost), (Some(3), Some(50), 2.0));
        assert!(q.filter.is_some());
    }

    #[test]
    fn refuses_as_opensearch() {
        assert_eq!(
            reason(json!({"v": {"vector": [1], "k": 0}})),
            "[knn] requires k to be in the range (0, 10000]"
        );
        assert_eq!(
            reason(json!({"v": {"vector": [1], "k": 10001}})),
            "[knn] requires k to be in the range (0, 10000]"
        );
        assert!(parse(&json!({"v": {"vector": [1], "k": 10000}})).is_ok());
        for v in [
            json!({"v": {"vector": [1]}}),
            json!({"v": {"vector": [1], "k": 1, "max_distance": 2}}),
            json!({"v": [1, 2]}),
        ] {
            assert_eq!(
                reason(v),
                "[knn] requires exactly one of k, distance or score to be set"
            );
        }
        assert_eq!(
            reason(json!({"v": {"k": 2}})),
            "[knn] requires query vector"
        );
        assert_eq!(
            reason(json!({"v": {"vector": [1], "min_score": 0}})),
            "[knn] requires minScore to be greater than 0"
        );
        assert_eq!(
            reason(json!({"v": {"vector": [1], "k": 1, "foo": 1}})),
            "[knn] unknown field [foo]"
        );
        assert_eq!(
            reason(json!({"v": {"vector": [], "k": 1}})),
            "[knn] failed to parse field [vector]"
        );
        assert_eq!(
            reason(json!({"v": {"vector": [1], "k": 1}, "w": {}})),
            "[knn] query doesn't support multiple fields, found [v] and [w]"
        );
        assert!(reason(
            json!({"v": {"vector": [1], "k": 1, "method_parameters": {"ef_search": 0}}})
        )
        .contains("ef_search should be greater than 0"));
    }
}
