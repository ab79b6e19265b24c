//! `more_like_this`, parsed with OpenSearch's errors. Items naming an indexed document are
//! read by the coordinator before the shards see the request (`lookup`), which writes the
//! document's `_source` into the item (`null` when it was not found).

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use super::{as_f32, as_string, parse_minimum_should_match};
use crate::ast::{DocRef, MinimumShouldMatch, MltItem, MoreLikeThisQuery, QueryAst};

const NAME: &str = "more_like_this";

pub fn parse(body: &Value) -> Result<QueryAst> {
    let map = super::object(NAME, body)?;
    let mut query = MoreLikeThisQuery {
        fields: None,
        like: Vec::new(),
        unlike: Vec::new(),
        max_query_terms: 25,
        min_term_freq: 2,
        min_doc_freq: 5,
        max_doc_freq: i32::MAX as u64,
        min_word_length: 0,
        max_word_length: 0,
        stop_words: Vec::new(),
        analyzer: None,
        minimum_should_match: MinimumShouldMatch::Percent(30),
        boost_terms: 0.0,
        include: false,
        fail_on_unsupported_field: true,
        boost: 1.0,
    };
    let mut liked = false;
    let count = |key: &str, value: &Value| -> Result<u64> {
        let n = as_f32(NAME, key, value)?;
        Ok(if n <= 0.0 { 0 } else { n as u64 })
    };
    for (key, value) in map {
        match key.as_str() {
            "fields" => {
                let names = strings(key, value)?;
                if names.is_empty() {
                    return Err(Error::parsing(format!(
                        "{NAME} requires 'fields' to be non-empty"
                    )));
                }
                query.fields = Some(names);
            }
            "like" => {
                liked = true;
                query.like = items(value)?;
            }
            "unlike" => query.unlike = items(value)?,
            "max_query_terms" => {
                let n = as_f32(NAME, key, value)?;
                if n <= 0.0 {
                    return Err(Error::illegal_argument(
                        "requires 'maxQueryTerms' to be greater than 0",
                    ));
                }
                query.max_query_terms = n as usize;
            }
            "min_term_freq" => query.min_term_freq = count(key, value)?,
            "min_doc_freq" => query.min_doc_freq = count(key, value)?,
            "max_doc_freq" => query.max_doc_freq = count(key, value)?,
            "min_word_length" | "min_word_len" => {
                query.min_word_length = count(key, value)? as usize
            }
            "max_word_length" | "max_word_len" => {
                query.max_word_length = count(key, value)? as usize
            }
            "stop_words" => query.stop_words = strings(key, value)?,
            "analyzer" => query.analyzer = Some(as_string(NAME, key, value)?),
            "minimum_should_match" => {
                query.minimum_should_match = parse_minimum_should_match(value)?
            }
            "boost_terms" => query.boost_terms = as_f32(NAME, key, value)?,
            "include" => query.include = boolean(key, value)?,
            "fail_on_unsupported_field" => query.fail_on_unsupported_field = boolean(key, value)?,
            "boost" => query.boost = as_f32(NAME, key, value)?,
            "_name" => {}
            other => {
                return Err(Error::parsing(format!(
                    "[mlt] query does not support [{other}]"
                )))
            }
        }
    }
    if !liked {
        return Err(Error::parsing(format!(
            "{NAME} requires 'like' to be specified"
        )));
    }
    Ok(QueryAst::MoreLikeThis(Box::new(query)))
}

fn strings(key: &str, value: &Value) -> Result<Vec<String>> {
    match value {
        Value::Array(items) => items.iter().map(|v| as_string(NAME, key, v)).collect(),
        other => Ok(vec![as_string(NAME, key, other)?]),
    }
}

fn boolean(key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        _ => Err(Error::parsing(format!(
            "[{NAME}] failed to parse field [{key}]"
        ))),
    }
}

/// `like` or `unlike`: a text, an item, or an array of them.
fn items(value: &Value) -> Result<Vec<MltItem>> {
    match value {
        Value::Array(values) => values.iter().map(item).collect(),
        other => Ok(vec![item(other)?]),
    }
}

fn item_error(reason: &str) -> Error {
    Error::new(
        "parse_exception",
        400,
        format!("failed to parse More Like This item. {reason}"),
    )
}

fn item(value: &Value) -> Result<MltItem> {
    let map: &Map<String, Value> = match value {
        Value::Object(map) => map,
        Value::String(text) => return Ok(MltItem::Text(text.clone())),
        Value::Number(n) => return Ok(MltItem::Text(n.to_string())),
        Value::Bool(b) => return Ok(MltItem::Text(b.to_string())),
        _ => return Err(item_error("an item must be a text or an object")),
    };
    let mut index = None;
    let mut id = None;
    let mut doc = None;
    let mut fields = None;
    let mut per_field_analyzer = Vec::new();
    let mut routing = None;
    let mut source = None;
    for (key, value) in map {
        let text = |value: &Value| {
            as_string(NAME, key, value).map_err(|_| item_error(&format!("failed to parse [{key}]")))
        };
        match key.as_str() {
            "_index" | "index" => index = Some(text(value)?),
            "_id" | "id" => id = Some(text(value)?),
            "doc" => {
                if !value.is_object() {
                    return Err(item_error("[doc] must be an object"));
                }
                doc = Some(value.clone())
            }
            "fields" => fields = Some(strings(key, value)?),
            "per_field_analyzer" => {
                let Value::Object(analyzers) = value else {
                    return Err(item_error("[per_field_analyzer] must be an object"));
                };
                for (field, analyzer) in analyzers {
                    per_field_analyzer.push((field.clone(), text(analyzer)?));
                }
            }
            "routing" | "_routing" => routing = Some(text(value)?),
            "version" | "_version" | "version_type" | "_version_type" => {}
            // what the coordinator read of an indexed document
            "_source" => source = Some((!value.is_null()).then(|| value.clone())),
            other => return Err(item_error(&format!("unknown field [{other}]"))),
        }
    }
    match (id, doc) {
        (Some(_), Some(_)) => Err(item_error(
            "either [id] or [doc] can be specified, but not both!",
        )),
        (None, None) => Err(item_error("neither [id] nor [doc] is specified!")),
        (None, Some(doc)) => Ok(MltItem::Artificial {
            doc,
            fields,
            per_field_analyzer,
        }),
        (Some(id), None) => Ok(MltItem::Indexed {
            doc: DocRef {
                index: index.unwrap_or_default(),
                id,
                routing,
                version: None,
            },
            fields,
            per_field_analyzer,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> MoreLikeThisQuery {
        match parse(&body).unwrap() {
            QueryAst::MoreLikeThis(query) => *query,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_texts_items_and_options() {
        let query = parsed(json!({
            "fields": ["title", "body"],
            "like": ["some text", {"_index": "i", "_id": "1", "routing": "r"}, {"doc": {"title": "x"}}],
            "unlike": "other",
            "min_term_freq": 1, "max_query_terms": 12, "minimum_should_match": "50%",
            "include": true, "boost_terms": 1.5, "stop_words": ["the"], "_name": "m"
        }));
        assert_eq!(
            query.fields.as_deref(),
            Some(&["title".to_string(), "body".to_string()][..])
        );
        assert_eq!(query.like.len(), 3);
        assert_eq!(query.like[0], MltItem::Text("some text".into()));
        let MltItem::Indexed { doc, source, .. } = &query.like[1] else {
            panic!("an indexed document")
        };
        assert_eq!((doc.index.as_str(), doc.id.as_str()), ("i", "1"));
        assert_eq!(doc.routing.as_deref(), Some("r"));
        assert_eq!(*source, None);
        assert!(matches!(query.like[2], MltItem::Artificial { .. }));
        assert_eq!(query.unlike, vec![MltItem::Text("other".into())]);
        assert_eq!((query.min_term_freq, query.min_doc_freq), (1, 5));
        assert_eq!(query.max_query_terms, 12);
        assert_eq!(query.minimum_should_match, MinimumShouldMatch::Percent(50));
        assert!(query.include);
        assert_eq!(query.boost_terms, 1.5);
    }

    #[test]
    fn refuses_as_opensearch_does() {
        let reason = |body: Value| parse(&body).unwrap_err().reason().to_string();
        assert_eq!(
            reason(json!({"fields": ["t"]})),
            "more_like_this requires 'like' to be specified"
        );
        assert_eq!(
            reason(json!({"fields": [], "like": "x"})),
            "more_like_this requires 'fields' to be non-empty"
        );
        assert_eq!(
            reason(json!({"like": "x", "foo": 1})),
            "[mlt] query does not support [foo]"
        );
        assert_eq!(
            reason(json!({"like": "x", "max_query_terms": 0})),
            "requires 'maxQueryTerms' to be greater than 0"
        );
        assert_eq!(
            reason(json!({"like": [{"_id": "1", "doc": {}}]})),
            "failed to parse More Like This item. either [id] or [doc] can be specified, but not both!"
        );
        assert_eq!(
            reason(json!({"like": [{"_index": "i"}]})),
            "failed to parse More Like This item. neither [id] nor [doc] is specified!"
        );
        assert_eq!(
            reason(json!({"like": [{"_id": "1", "foo": 2}]})),
            "failed to parse More Like This item. unknown field [foo]"
        );
    }
}
