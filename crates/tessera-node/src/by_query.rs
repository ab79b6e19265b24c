//! `_delete_by_query` and `_update_by_query` as [`BulkByScroll`] requests: the body is a
//! search (its `query`, `_source`, …) plus `conflicts` and `max_docs`; each hit becomes a
//! delete, or an index of its own `_source` (a re-index in place, which bumps the version and
//! picks up mapping changes such as new multi-fields), conditioned on the `_seq_no` and
//! `_primary_term` it was read with, so a document changed meanwhile is a version conflict.
//!
//! An update-by-query's `script` (`crate::hit_script`) runs on each hit first: it may change
//! the source, skip the hit (`ctx.op = "noop"`, counted in `noops`) or delete it (`deleted`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_index::{Conditions, DocWrite};
use tessera_search::coordinator::Hit;

use crate::bulk_by_scroll::{BulkByScroll, Conflicts, Kind, Options, ToWrite};
use crate::hit_script::{HitOp, HitScript};
use crate::search_service::SearchTarget;
use crate::write::Operation;
use crate::Node;

/// The error of a request that carries a script.
pub fn scripts_unsupported(api: &str) -> Error {
    Error::illegal_argument(format!(
        "scripts are not supported by Tessera yet: [{api}] runs without a script only"
    ))
}

/// Takes `conflicts` and `max_docs` out of a by-query body (they override the URL's), and
/// refuses a `script` where the API takes none.
fn take_request_keys(
    body: &mut Map<String, Value>,
    options: &mut Options,
    api: &str,
) -> Result<()> {
    if api != "_update_by_query" && body.contains_key("script") {
        return Err(scripts_unsupported(api));
    }
    if let Some(conflicts) = body.remove("conflicts") {
        let text = conflicts
            .as_str()
            .map_or(conflicts.to_string(), String::from);
        options.conflicts = Conflicts::parse(&text)?;
    }
    if let Some(max_docs) = body.remove("max_docs") {
        options.max_docs = Some(parse_max_docs(&max_docs)?);
    }
    // the search's `size` is the batch size, as in OpenSearch
    if let Some(size) = body.remove("size") {
        options.batch_size = parse_batch_size(&size)?;
    }
    Ok(())
}

/// A batch size (`size` of a by-query body, `scroll_size`): positive, and `0` is OpenSearch's
/// validation error of a scroll.
pub fn parse_batch_size(value: &Value) -> Result<u64> {
    let number = value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()));
    match number {
        Some(0) => Err(Error::action_request_validation(&[
            "[size] cannot be [0] in a scroll context".to_string(),
        ])),
        Some(n) if n > 0 => Ok(n as u64),
        _ => Err(Error::illegal_argument(format!(
            "[size] must be a positive number, found [{value}]"
        ))),
    }
}

/// `max_docs` as OpenSearch checks it.
pub fn parse_max_docs(value: &Value) -> Result<u64> {
    let number = value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| {
            Error::illegal_argument(format!("[max_docs] must be a number, found [{value}]"))
        })?;
    if number < 0 {
        return Err(Error::illegal_argument(format!(
            "[max_docs] parameter cannot be negative, found [{number}]"
        )));
    }
    Ok(number as u64)
}

/// The hit's `_seq_no`/`_primary_term` as the write's conditions.
fn read_as(hit: &Hit) -> Conditions {
    Conditions {
        create_only: false,
        if_seq_no: hit._seq_no,
        if_primary_term: hit._primary_term,
    }
}

fn hit_id(hit: &Hit) -> Result<String> {
    hit._id
        .clone()
        .ok_or_else(|| Error::illegal_state("a hit without an _id"))
}

/// `POST /{index}/_delete_by_query` over the `resolved` source indices.
pub fn delete_by_query(
    _node: &Node,
    source: SearchTarget,
    mut body: Map<String, Value>,
    search_params: BTreeMap<String, String>,
    mut options: Options,
    resolved: Vec<String>,
) -> Result<BulkByScroll> {
    take_request_keys(&mut body, &mut options, "_delete_by_query")?;
    if !body.contains_key("query") && !search_params.contains_key("q") {
        return Err(Error::action_request_validation(&[
            "query is missing".to_string()
        ]));
    }
    let to_write: ToWrite = Arc::new(|hit: &Hit| {
        Ok(Some(Operation {
            index: hit._index.clone(),
            write: DocWrite::Delete {
                id: hit_id(hit)?,
                routing: hit._routing.clone(),
                conditions: read_as(hit),
            },
        }))
    });
    Ok(BulkByScroll {
        kind: Kind::DeleteByQuery,
        description: format!("delete-by-query [{}]", resolved.join(", ")),
        source,
        search: body,
        search_params,
        options,
        refresh_targets: resolved,
        written_to: Default::default(),
        to_write,
    })
}

/// `POST /{index}/_update_by_query`: every matching document indexed again from its own
/// `_source`, or from what the `script` made of it.
pub fn update_by_query(
    node: &Node,
    source: SearchTarget,
    mut body: Map<String, Value>,
    search_params: BTreeMap<String, String>,
    mut options: Options,
    resolved: Vec<String>,
) -> Result<BulkByScroll> {
    take_request_keys(&mut body, &mut options, "_update_by_query")?;
    let script = match body.remove("script") {
        Some(value) => Some(HitScript::new(node, "update_by_query", &value)?),
        None => None,
    };
    // the documents are written back whole: a source filter of the body does not apply
    body.remove("_source");
    let to_write: ToWrite = Arc::new(move |hit: &Hit| {
        let id = hit_id(hit)?;
        let Some(script) = &script else {
            let source = hit._source.as_ref().ok_or_else(|| {
                Error::illegal_argument(format!("[{id}] has no _source to update by query with"))
            })?;
            return Ok(Some(reindex_in_place(
                hit,
                id,
                Bytes::copy_from_slice(source.get().as_bytes()),
            )));
        };
        let applied = script.apply(hit)?;
        for (key, changed) in [
            ("_index", &applied.index),
            ("_id", &applied.id),
            ("_routing", &applied.routing),
        ] {
            if changed.is_some() {
                return Err(Error::illegal_argument(format!(
                    "Modifying [{key}] not allowed"
                )));
            }
        }
        Ok(match applied.op {
            HitOp::Noop => None,
            HitOp::Delete => Some(Operation {
                index: hit._index.clone(),
                write: DocWrite::Delete {
                    id,
                    routing: hit._routing.clone(),
                    conditions: read_as(hit),
                },
            }),
            HitOp::Index => {
                let source = serde_json::to_vec(&applied.source)
                    .map_err(|e| Error::internal("write a document", e))?;
                Some(reindex_in_place(hit, id, source.into()))
            }
        })
    });
    Ok(BulkByScroll {
        kind: Kind::UpdateByQuery,
        description: format!("update-by-query [{}]", resolved.join(", ")),
        source,
        search: body,
        search_params,
        options,
        refresh_targets: resolved,
        written_to: Default::default(),
        to_write,
    })
}

/// The hit indexed again under its id and routing, conditioned on the version it was read at.
fn reindex_in_place(hit: &Hit, id: String, source: Bytes) -> Operation {
    Operation {
        index: hit._index.clone(),
        write: DocWrite::Index {
            id: Some(id),
            auto_generated_id: false,
            source,
            routing: hit._routing.clone(),
            conditions: read_as(hit),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ResolveOptions;

    fn target() -> SearchTarget {
        SearchTarget {
            expression: "i".into(),
            options: ResolveOptions::default(),
            routing: None,
            preference: crate::preference::Preference::none(),
        }
    }

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn node() -> (tempfile::TempDir, Arc<Node>) {
        let dir = tempfile::tempdir().unwrap();
        let node = crate::write::tests::start(dir.path());
        (dir, node)
    }

    #[test]
    fn a_delete_by_query_needs_a_query() {
        let (_dir, node) = node();
        let e = delete_by_query(
            &node,
            target(),
            Map::new(),
            BTreeMap::new(),
            Options::default(),
            vec![],
        )
        .err()
        .unwrap();
        assert_eq!(e.reason(), "Validation Failed: 1: query is missing;");
        let q = BTreeMap::from([("q".to_string(), "a:1".to_string())]);
        assert!(
            delete_by_query(&node, target(), Map::new(), q, Options::default(), vec![]).is_ok()
        );
    }

    #[test]
    fn body_keys_override_the_url_and_leave_the_search() {
        let (_dir, node) = node();
        let request = delete_by_query(
            &node,
            target(),
            body(json!({"query": {"match_all": {}}, "conflicts": "proceed", "max_docs": 3})),
            BTreeMap::new(),
            Options::default(),
            vec!["i".into()],
        )
        .ok()
        .unwrap();
        assert_eq!(request.options.conflicts, Conflicts::Proceed);
        assert_eq!(request.options.max_docs, Some(3));
        let sized = update_by_query(
            &node,
            target(),
            body(json!({"size": 2})),
            BTreeMap::new(),
            Options::default(),
            vec![],
        )
        .ok()
        .unwrap();
        assert_eq!(sized.options.batch_size, 2);
        assert!(sized.search.is_empty());
        assert_eq!(
            parse_batch_size(&json!(0)).unwrap_err().reason(),
            "Validation Failed: 1: [size] cannot be [0] in a scroll context;"
        );
        assert_eq!(request.search.keys().collect::<Vec<_>>(), ["query"]);
        assert_eq!(request.description, "delete-by-query [i]");
        let e = parse_max_docs(&json!(-1)).unwrap_err();
        assert_eq!(
            e.reason(),
            "[max_docs] parameter cannot be negative, found [-1]"
        );
    }

    #[test]
    fn scripts_are_compiled_when_the_request_is_parsed() {
        let (_dir, node) = node();
        let parse = |script: Value| {
            update_by_query(
                &node,
                target(),
                body(json!({ "script": script })),
                BTreeMap::new(),
                Options::default(),
                vec![],
            )
        };
        let request = parse(json!({"source": "ctx._source.a++"})).ok().unwrap();
        assert!(!request.search.contains_key("script"));
        let e = parse(json!({"source": "ctx._source.a +"})).err().unwrap();
        assert_eq!(e.kind(), "script_exception");
        assert_eq!(e.status(), 400);
        let e = parse(json!({"id": "missing"})).err().unwrap();
        assert_eq!(e.kind(), "resource_not_found_exception");
        let e = delete_by_query(
            &node,
            target(),
            body(json!({"query": {"match_all": {}}, "script": "ctx.op = 'delete'"})),
            BTreeMap::new(),
            Options::default(),
            vec![],
        )
        .err()
        .unwrap();
        assert_eq!(e.status(), 400);
    }
}
