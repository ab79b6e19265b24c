//! Queries that name an indexed document — a `terms` lookup, a `percolate` of an indexed
//! document, a `more_like_this` item — resolved by the coordinator before any shard sees the
//! request, as OpenSearch's query rewrite resolves them.
//!
//! The request body travels to the shards as JSON, so the rewrite is a JSON one: [`doc_refs`]
//! lists the documents a body names, the node reads them where their primaries are, and
//! [`resolve`] writes what was read into the body (the values at the lookup's path; the
//! document to percolate; a liked document's `_source`, `null` when it is missing). A shard, local or remote, then parses a request that names no
//! document; one that still does fails to compile rather than answer wrongly.
//!
//! Lookups are found by shape: a `terms` object whose one field holds an object (a terms
//! query lists its values in an array; a terms aggregation has several keys), and a
//! `percolate` object with a `field` and an `id`, a `more_like_this` item with an `_id` and
//! no `_source` yet. The documents given to a `percolate` or `more_like_this` query and a
//! script's `params` are data and are not searched. A `more_like_this` item without an
//! `_index` names the searched index, `default_index` (an empty name where the search has
//! several).

use std::collections::HashMap;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::ast::{DocRef, QueryAst};
use crate::dsl::{percolate, terms};

/// A document as the coordinator read it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadDoc {
    /// Its `_source` (none where the index keeps none).
    pub source: Option<Value>,
    pub version: u64,
    /// Where it lives, for a version conflict's error.
    pub index: String,
    pub shard: u32,
}

/// What the coordinator read for each document the body names (`None`: not found).
pub type ReadDocs = HashMap<DocRef, Option<ReadDoc>>;

/// The documents `body` names, each once.
pub fn doc_refs(body: &Value, default_index: Option<&str>) -> Result<Vec<DocRef>> {
    Ok(named(body, default_index)?
        .into_iter()
        .map(|(doc, _)| doc)
        .collect())
}

/// The documents only `more_like_this` items name: a missing index reads as a missing
/// document for them, as in OpenSearch, where it fails a lookup.
pub fn optional_refs(body: &Value, default_index: Option<&str>) -> Result<Vec<DocRef>> {
    let all = named(body, default_index)?;
    Ok(all
        .iter()
        .filter(|(doc, site)| {
            *site == Site::MoreLikeThis
                && !all
                    .iter()
                    .any(|(d, s)| d == doc && *s != Site::MoreLikeThis)
        })
        .map(|(doc, _)| doc.clone())
        .collect())
}

fn named(body: &Value, default_index: Option<&str>) -> Result<Vec<(DocRef, Site)>> {
    let mut found: Vec<(DocRef, Site)> = Vec::new();
    let mut copy = body.clone();
    walk(&mut copy, &mut |site, value| {
        let docs = match site {
            Site::Terms => vec![terms_lookup(value)?.1],
            Site::Percolate => vec![indexed_document(value)?],
            Site::MoreLikeThis => {
                let mut docs = Vec::new();
                for item in liked_items(value) {
                    docs.push(liked_document(item, default_index)?);
                }
                docs
            }
        };
        for doc in docs {
            if !found.iter().any(|(d, s)| *d == doc && *s == site) {
                found.push((doc, site));
            }
        }
        Ok(())
    })?;
    Ok(found)
}

/// The unread indexed documents of a `more_like_this` object's `like` and `unlike`.
fn liked_items(value: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    let map = value.as_object_mut();
    map.into_iter()
        .flat_map(|map| map.iter_mut())
        .filter(|(key, _)| *key == "like" || *key == "unlike")
        .flat_map(|(_, items)| match items {
            Value::Array(items) => items.iter_mut().collect::<Vec<_>>(),
            item => vec![item],
        })
        .filter_map(Value::as_object_mut)
        .filter(|item| {
            (item.contains_key("_id") || item.contains_key("id")) && !item.contains_key("_source")
        })
}

fn liked_document(item: &Map<String, Value>, default_index: Option<&str>) -> Result<DocRef> {
    let text = |keys: [&str; 2]| {
        keys.iter().find_map(|k| item.get(*k)).map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
    };
    Ok(DocRef {
        index: text(["_index", "index"])
            .or_else(|| default_index.map(str::to_string))
            .unwrap_or_default(),
        id: text(["_id", "id"]).unwrap_or_default(),
        routing: text(["routing", "_routing"]),
        version: None,
    })
}

/// Writes the documents read into `body`: each lookup becomes the values at its path (none
/// where the document is missing, as in OpenSearch), each `percolate` of an indexed
/// document percolates the document itself.
pub fn resolve(body: &mut Value, read: &ReadDocs, default_index: Option<&str>) -> Result<()> {
    walk(body, &mut |site, value| {
        if let Site::MoreLikeThis = site {
            for item in liked_items(value) {
                let doc = liked_document(item, default_index)?;
                let source = read
                    .get(&doc)
                    .and_then(|d| d.as_ref()?.source.clone())
                    .unwrap_or(Value::Null);
                item.remove("index");
                item.insert("_index".into(), Value::String(doc.index));
                item.insert("_source".into(), source);
            }
            return Ok(());
        }
        let map = value
            .as_object_mut()
            .ok_or_else(|| Error::illegal_state("a lookup site is an object"))?;
        match site {
            Site::Terms => {
                let (field, doc, path) = terms_lookup(&Value::Object(map.clone()))?;
                let source = read.get(&doc).and_then(|d| d.as_ref()?.source.as_ref());
                let mut values = Vec::new();
                if let Some(source) = source {
                    let parts: Vec<&str> = path.split('.').collect();
                    extract(source, &parts, &mut values);
                }
                map.insert(field, Value::Array(values));
            }
            Site::MoreLikeThis => {}
            Site::Percolate => {
                let doc = indexed_document(&Value::Object(map.clone()))?;
                let read = read
                    .get(&doc)
                    .and_then(Option::as_ref)
                    .ok_or_else(|| not_found(&doc))?;
                if let Some(version) = doc.version {
                    if version != read.version as i64 {
                        return Err(Error::version_conflict(
                            &read.index,
                            read.shard,
                            &doc.id,
                            &format!(
                                "current version [{}] is different than the one provided [{version}]",
                                read.version
                            ),
                        ));
                    }
                }
                let source = read.source.clone().ok_or_else(|| {
                    Error::illegal_argument(format!(
                        "indexed document [{}/{}] source disabled",
                        doc.index, doc.id
                    ))
                })?;
                for key in ["index", "id", "routing", "preference", "version"] {
                    map.remove(key);
                }
                map.insert("document".to_string(), source);
            }
        }
        Ok(())
    })
}

fn not_found(doc: &DocRef) -> Error {
    Error::new(
        "resource_not_found_exception",
        404,
        format!(
            "indexed document [{}/{}] couldn't be found",
            doc.index, doc.id
        ),
    )
}

/// Where a document is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    Terms,
    Percolate,
    MoreLikeThis,
}

fn walk(value: &mut Value, visit: &mut dyn FnMut(Site, &mut Value) -> Result<()>) -> Result<()> {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match key.as_str() {
                    "document" | "documents" | "params" => {}
                    "terms" if is_terms_lookup(child) => visit(Site::Terms, child)?,
                    "percolate" if is_indexed_percolate(child) => visit(Site::Percolate, child)?,
                    "more_like_this" | "mlt" if child.is_object() => {
                        visit(Site::MoreLikeThis, child)?
                    }
                    _ => walk(child, visit)?,
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, visit)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// A `terms` query whose one field holds a lookup: an object naming `index`, `id` and
/// `path` (the search request was parsed already, so a lookup lacking one was refused; a
/// terms aggregation's lone `script` names no `path`).
fn is_terms_lookup(value: &Value) -> bool {
    let Some(map) = value.as_object() else {
        return false;
    };
    let mut fields = map.iter().filter(|(k, _)| *k != "boost" && *k != "_name");
    match (fields.next(), fields.next()) {
        (Some((_, Value::Object(lookup))), None) => ["index", "id", "path"]
            .iter()
            .all(|key| lookup.contains_key(*key)),
        _ => false,
    }
}

fn is_indexed_percolate(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| map.contains_key("field") && map.contains_key("id"))
}

/// The field, document and path of a lookup object.
fn terms_lookup(value: &Value) -> Result<(String, DocRef, String)> {
    match terms::parse(value)? {
        QueryAst::TermsLookup(lookup) => Ok((lookup.field, lookup.doc, lookup.path)),
        _ => Err(Error::illegal_state(
            "a terms lookup parsed as another query",
        )),
    }
}

fn indexed_document(value: &Value) -> Result<DocRef> {
    match percolate::parse(value)? {
        QueryAst::Percolate(query) => query
            .indexed
            .ok_or_else(|| Error::illegal_state("a percolate of an indexed document names none")),
        _ => Err(Error::illegal_state(
            "a percolate query parsed as another query",
        )),
    }
}

/// The scalar values at the dotted `path` of a document's `_source`, as OpenSearch's
/// `extractRawValues` collects them (see [`extract`]).
pub fn extract_raw_values(source: &Value, path: &str) -> Vec<Value> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    extract(source, &parts, &mut out);
    out
}

/// The values at `path` in `value`, as OpenSearch's `extractRawValues` collects them: objects
/// are descended (a key may itself hold dots), arrays at any level contribute each of their
/// elements, and only scalars are kept.
pub(crate) fn extract(value: &Value, path: &[&str], out: &mut Vec<Value>) {
    match value {
        Value::Array(items) => {
            for item in items {
                extract(item, path, out);
            }
        }
        Value::Object(map) if !path.is_empty() => descend(map, path, out),
        Value::Object(_) | Value::Null => {}
        scalar if path.is_empty() => out.push(scalar.clone()),
        _ => {}
    }
}

fn descend(map: &Map<String, Value>, path: &[&str], out: &mut Vec<Value>) {
    for take in 1..=path.len() {
        if let Some(child) = map.get(&path[..take].join(".")) {
            extract(child, &path[take..], out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(index: &str, id: &str, routing: Option<&str>) -> DocRef {
        DocRef {
            index: index.into(),
            id: id.into(),
            routing: routing.map(String::from),
            version: None,
        }
    }

    fn read(source: Value, version: u64) -> Option<ReadDoc> {
        Some(ReadDoc {
            source: Some(source),
            version,
            index: "i".into(),
            shard: 0,
        })
    }

    #[test]
    fn lookups_are_found_in_any_query_position_and_nowhere_else() {
        let body = json!({
            "query": {"bool": {"filter": [
                {"terms": {"color": {"index": "i", "id": "1", "path": "c"}, "boost": 2}},
                {"terms": {"color": ["red"]}},
            ]}},
            "post_filter": {"percolate": {"field": "q", "index": "i", "id": "2", "routing": "r"}},
            "slice": {"id": 0, "max": 2},
            "aggs": {
                "t": {"terms": {"field": "x", "order": {"_count": "asc"}}},
                "s": {"terms": {"script": {"id": "stored-script"}}},
                "f": {"filter": {"terms": {"color": {"index": "i", "id": "1", "path": "d"}}}},
                "p": {"filter": {"percolate": {"field": "q", "document":
                    {"terms": {"x": {"index": "i", "id": "9", "path": "p"}}}}}}
            }
        });
        assert_eq!(
            doc_refs(&body, None).unwrap(),
            [doc("i", "1", None), doc("i", "2", Some("r"))]
        );
    }

    #[test]
    fn lookups_become_the_values_at_their_path() {
        let mut body = json!({"query": {"terms": {"color": {"index": "i", "id": "1",
            "path": "prefs.colors"}, "boost": 2}}});
        let source = json!({
            "prefs": [{"colors": ["red", "green"]}, {"colors": "blue"}, {"other": 1}],
            "a.b": {"c": 5}, "nested": {"x": {"y": true}}, "obj": {"k": 1}, "none": null
        });
        let docs: ReadDocs = [(doc("i", "1", None), read(source.clone(), 1))].into();
        resolve(&mut body, &docs, None).unwrap();
        assert_eq!(
            body,
            json!({"query": {"terms": {"color": ["red", "green", "blue"], "boost": 2}}})
        );
        let values = |path: &str| {
            let mut out = Vec::new();
            extract(&source, &path.split('.').collect::<Vec<_>>(), &mut out);
            out
        };
        // a key holding dots, a deep path, an object and a null give no scalar
        assert_eq!(values("a.b.c"), [json!(5)]);
        assert_eq!(values("nested.x.y"), [json!(true)]);
        assert!(values("obj").is_empty());
        assert!(values("none").is_empty());
        assert!(values("missing.path").is_empty());
        // a missing document: no values, so the query matches nothing
        let mut body = json!({"terms": {"color": {"index": "i", "id": "9", "path": "c"}}});
        resolve(&mut body, &ReadDocs::new(), None).unwrap();
        assert_eq!(body, json!({"terms": {"color": []}}));
    }

    #[test]
    fn an_indexed_document_is_percolated_as_given_or_refused_as_opensearch_refuses_it() {
        let named = json!({"percolate": {"field": "q", "index": "i", "id": "1",
            "routing": "r", "preference": "_local", "name": "n"}});
        let mut body = named.clone();
        let docs: ReadDocs = [(doc("i", "1", Some("r")), read(json!({"body": "fox"}), 3))].into();
        resolve(&mut body, &docs, None).unwrap();
        assert_eq!(
            body,
            json!({"percolate": {"field": "q", "name": "n", "document": {"body": "fox"}}})
        );
        let e = resolve(&mut named.clone(), &ReadDocs::new(), None).unwrap_err();
        assert_eq!(
            (e.status(), e.reason()),
            (404, "indexed document [i/1] couldn't be found")
        );
        let mut versioned = json!({"percolate": {"field": "q", "index": "i", "id": "1",
            "version": 2}});
        let docs: ReadDocs = [(
            DocRef {
                version: Some(2),
                ..doc("i", "1", None)
            },
            read(json!({}), 3),
        )]
        .into();
        let e = resolve(&mut versioned, &docs, None).unwrap_err();
        assert_eq!(
            (e.status(), e.reason()),
            (
                409,
                "[1]: version conflict, current version [3] is different than the one provided [2]"
            )
        );
    }

    #[test]
    fn more_like_this_items_are_read_and_written_back() {
        let mut body = json!({"query": {"bool": {"should": [
            {"more_like_this": {"fields": ["t"], "like": [
                "text", {"_id": "1"}, {"_index": "other", "_id": "2", "routing": "r"},
                {"doc": {"t": "artificial", "terms": {"f": {"index": "x", "id": "9", "path": "p"}}}}
            ], "unlike": {"_id": "3"}}}
        ]}}});
        let refs = doc_refs(&body, Some("main")).unwrap();
        assert_eq!(
            refs,
            [
                doc("main", "1", None),
                doc("other", "2", Some("r")),
                doc("main", "3", None)
            ]
        );
        // without one searched index, an item without an index names none
        assert_eq!(doc_refs(&body, None).unwrap()[0].index, "");
        assert_eq!(optional_refs(&body, Some("main")).unwrap().len(), 3);
        let mut docs = ReadDocs::new();
        docs.insert(doc("main", "1", None), read(json!({"t": "one"}), 1));
        docs.insert(doc("other", "2", Some("r")), None);
        resolve(&mut body, &docs, Some("main")).unwrap();
        let mlt = &body["query"]["bool"]["should"][0]["more_like_this"];
        assert_eq!(
            mlt["like"][1],
            json!({"_id": "1", "_index": "main", "_source": {"t": "one"}})
        );
        assert_eq!(mlt["like"][2]["_source"], Value::Null);
        assert_eq!(mlt["unlike"]["_source"], Value::Null);
        // read items are not named again
        assert!(doc_refs(&body, Some("main")).unwrap().is_empty());
        // the keys of a more_like_this item mean nothing elsewhere: a lookup under an
        // aggregation named `doc` is found
        let aggs = json!({"aggs": {"doc": {"filter": {"terms": {"f": {"index": "i", "id": "7", "path": "p"}}}}}});
        assert_eq!(doc_refs(&aggs, None).unwrap(), [doc("i", "7", None)]);
    }
}
