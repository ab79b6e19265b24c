//! `percolate`: the stored queries of a `percolator` field that match given documents.
//!
//! The documents come with the query (`document`, `documents`); naming one already indexed
//! (`index` and `id`) is refused with a clear error.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_string, object};
use crate::ast::{PercolateQuery, QueryAst};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let map = object("percolate", body)?;
    let mut query = PercolateQuery {
        field: String::new(),
        documents: Vec::new(),
        name: None,
        boost: 1.0,
    };
    let mut field = None;
    let mut given = false;
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
            "index" | "id" | "routing" | "preference" | "version" => {
                return Err(Error::not_supported(
                    "[percolate] of an indexed document (index and id): pass the document itself",
                ))
            }
            other => {
                return Err(Error::parsing(format!(
                    "[percolate] query does not support [{other}]"
                )))
            }
        }
    }
    query.field = field.ok_or_else(|| Error::illegal_argument("[field] is a required argument"))?;
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
        assert!(parse(&json!({"field": "q", "index": "i", "id": "1"})).is_err());
        assert!(parse(&json!({"field": "q", "document": 5})).is_err());
    }
}
