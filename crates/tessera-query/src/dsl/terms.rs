//! `terms`: any of several exact values, given or read from a document (a lookup, which
//! the coordinator resolves before the shards see the query: [`crate::lookup`]).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_scalar, object};
use crate::ast::{DocRef, QueryAst, TermsLookup};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut boost = 1.0;
    let mut found: Option<(String, Vec<Value>)> = None;
    let mut lookup: Option<(String, DocRef, String)> = None;
    for (key, value) in object("terms", body)? {
        match key.as_str() {
            "boost" => boost = as_f32("terms", key, value)?,
            "_name" => {}
            field => {
                if let Some(first) = found
                    .as_ref()
                    .map(|f| &f.0)
                    .or(lookup.as_ref().map(|l| &l.0))
                {
                    return Err(Error::parsing(format!(
                        "[terms] query does not support multiple fields, found [{first}] and [{field}]"
                    )));
                }
                let items = match value {
                    Value::Array(items) => items,
                    Value::Object(map) => {
                        let (doc, path) = parse_lookup(map)?;
                        lookup = Some((field.to_string(), doc, path));
                        continue;
                    }
                    _ => {
                        return Err(Error::parsing(format!(
                            "[terms] query does not support [{field}]"
                        )))
                    }
                };
                let values = items
                    .iter()
                    .map(|v| as_scalar("terms", field, v))
                    .collect::<Result<Vec<_>>>()?;
                found = Some((field.to_string(), values));
            }
        }
    }
    if let Some((field, doc, path)) = lookup {
        return Ok(QueryAst::TermsLookup(Box::new(TermsLookup {
            field,
            doc,
            path,
            boost,
        })));
    }
    let (field, values) = found
        .ok_or_else(|| Error::parsing("[terms] query requires a field with an array of values"))?;
    Ok(QueryAst::Terms {
        field,
        values,
        boost,
    })
}

/// A lookup object: the document (`index`, `id`, `routing`) and the `path` of its values.
fn parse_lookup(map: &serde_json::Map<String, Value>) -> Result<(DocRef, String)> {
    let text = |key: &str, value: &Value| match value {
        Value::String(text) => Ok(text.clone()),
        other => Err(Error::x_content_parse(format!(
            "[terms_lookup] {key} doesn't support values of type: {}",
            tessera_common::error::json_token(other)
        ))),
    };
    let (mut index, mut id, mut path, mut routing) = (None, None, None, None);
    for (key, value) in map {
        match key.as_str() {
            "index" => index = Some(text(key, value)?),
            "id" => id = Some(text(key, value)?),
            "path" => path = Some(text(key, value)?),
            "routing" => routing = Some(text(key, value)?),
            "store" if value == &Value::Bool(false) => {}
            "store" => {
                return Err(Error::not_supported(
                    "[terms] lookup of stored fields ([store]); the values are read from _source",
                ))
            }
            other => {
                return Err(Error::x_content_parse(format!(
                    "[terms_lookup] unknown field [{other}]"
                )))
            }
        }
    }
    let required = |name: &str| Error::illegal_argument(format!("Required [{name}]"));
    let doc = DocRef {
        index: index.ok_or_else(|| required("index"))?,
        id: id.ok_or_else(|| required("id"))?,
        routing,
        version: None,
    };
    Ok((doc, path.ok_or_else(|| required("path"))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_values_and_lookups() {
        let q = parse(&json!({"tags": ["a", "b"], "boost": 2})).unwrap();
        assert_eq!(
            q,
            QueryAst::Terms {
                field: "tags".into(),
                values: vec![json!("a"), json!("b")],
                boost: 2.0
            }
        );
        let q = parse(&json!({"tags": {"index": "x", "id": "1", "path": "p", "routing": "r"}}))
            .unwrap();
        let QueryAst::TermsLookup(lookup) = q else {
            panic!("a lookup: {q:?}")
        };
        assert_eq!(
            (
                lookup.doc.index.as_str(),
                lookup.doc.id.as_str(),
                lookup.path.as_str()
            ),
            ("x", "1", "p")
        );
        assert_eq!(lookup.doc.routing.as_deref(), Some("r"));
        let e = parse(&json!({"tags": {"index": "x", "id": "1"}})).unwrap_err();
        assert_eq!(e.reason(), "Required [path]");
        let e = parse(&json!({"tags": {"index": "x", "id": 1, "path": "p"}})).unwrap_err();
        assert_eq!(
            e.reason(),
            "[terms_lookup] id doesn't support values of type: VALUE_NUMBER"
        );
        let e = parse(&json!({"tags": {"bogus": 1}})).unwrap_err();
        assert_eq!(e.reason(), "[terms_lookup] unknown field [bogus]");
        assert!(parse(&json!({"a": ["x"], "b": ["y"]})).is_err());
        assert!(parse(&json!({})).is_err());
    }
}
