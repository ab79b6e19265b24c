//! `percolate`: the stored queries of a `percolator` field that match given documents.
//!
//! The documents come with the query (`document`, `documents`) or name one already indexed
//! (`index`, `id`, `routing`, `version`), which the coordinator reads into the query before
//! the shards see it ([`crate::lookup`]).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_i64, as_string, object};
use crate::ast::{DocRef, PercolateQuery, QueryAst};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let map = object("percolate", body)?;
    let mut query = PercolateQuery {
        field: String::new(),
        documents: Vec::new(),
        indexed: None,
        name: None,
        boost: 1.0,
    };
    let mut field = None;
    let mut given = false;
    let (mut index, mut id, mut routing, mut version) = (None, None, None, None);
    let document = |value: &Value| -> Result<String> {
        match value {
            Value::Object(_) => Ok(value.to_string()),
            _ => Err(Error::parsing(
                "[percolate] query malformed, a document must be an object",
            )),
        }
    };
    for (key, value) in map {
        match key.as_str() {
            "field" => field = Some(as_string("percolate", key, value)?),
            "document" => {
                query.documents.push(document(value)?);
                given = true;
            }
            "documents" => {
                let Value::Array(items) = value else {
                    return Err(Error::parsing(
                        "[percolate] query malformed, [documents] must be an array of documents",
                    ));
                };
                for item in items {
                    query.documents.push(document(item)?);
                }
                given = true;
            }
            "name" => query.name = Some(as_string("percolate", key, value)?),
            "boost" => query.boost = as_f32("percolate", key, value)?,
            "_name" => {}
            "index" => index = Some(as_string("percolate", key, value)?),
            "id" => id = Some(as_string("percolate", key, value)?),
            "routing" => routing = Some(as_string("percolate", key, value)?),
            // the coordinator reads the document where its primary is, whatever the preference
            "preference" => {
                as_string("percolate", key, value)?;
            }
            "version" => version = Some(as_i64("percolate", key, value)?),
            other => {
                return Err(Error::parsing(format!(
                    "[percolate] query does not support [{other}]"
                )))
            }
        }
    }
    query.field = field.ok_or_else(|| Error::illegal_argument("[field] is a required argument"))?;
    if let Some(id) = id {
        if given {
            let other = match query.documents.len() {
                1 if map.contains_key("document") => "document",
                _ => "documents",
            };
            return Err(Error::illegal_argument(format!(
                "The following fields are not allowed together: [id, {other}] "
            )));
        }
        let index = index.ok_or_else(|| {
            Error::x_content_parse("Failed to build [percolate] after last required field arrived")
                .caused_by(Error::illegal_argument("[index] is a required argument"))
        })?;
        query.indexed = Some(DocRef {
            index,
            id,
            routing,
            version,
        });
        return Ok(QueryAst::Percolate(Box::new(query)));
    }
    if !given {
        return Err(Error::illegal_argument(
            "Required one of fields [document, documents, id], but none were specified. ",
        ));
    }
    if query.documents.is_empty() {
        return Err(Error::illegal_argument("No document to percolate defined"));
    }
    Ok(QueryAst::Percolate(Box::new(query)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_documents_and_refuses_what_opensearch_refuses() {
        let QueryAst::Percolate(q) = parse(&json!({
            "field": "query", "documents": [{"a": 1}, {"b": 2}], "name": "n", "boost": 2
        }))
        .unwrap() else {
            unreachable!()
        };
        assert_eq!(
            (q.documents.len(), q.name.as_deref(), q.boost),
            (2, Some("n"), 2.0)
        );
        let e = parse(&json!({"field": "query"})).unwrap_err();
        assert_eq!(
            e.reason(),
            "Required one of fields [document, documents, id], but none were specified. "
        );
        let QueryAst::Percolate(q) =
            parse(&json!({"field": "q", "index": "i", "id": "1", "routing": "r", "version": 2}))
                .unwrap()
        else {
            unreachable!()
        };
        assert_eq!(
            q.indexed,
            Some(DocRef {
                index: "i".into(),
                id: "1".into(),
                routing: Some("r".into()),
                version: Some(2)
            })
        );
        let e = parse(&json!({"field": "q", "id": "1"})).unwrap_err();
        assert_eq!(
            e.cause().unwrap().reason(),
            "[index] is a required argument"
        );
        let e = parse(&json!({"field": "q", "index": "i"})).unwrap_err();
        assert!(e.reason().starts_with("Required one of fields"));
        let e = parse(&json!({"field": "q", "index": "i", "id": "1", "document": {}})).unwrap_err();
        assert_eq!(
            e.reason(),
            "The following fields are not allowed together: [id, document] "
        );
        assert!(parse(&json!({"field": "q", "document": 5})).is_err());
    }
}
