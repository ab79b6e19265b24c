//! `_bulk`, and the write path every document API shares: items are grouped by shard, each
//! shard's group runs on the `write` pool (one fsync per group), and the answers come back in
//! the order of the request. A bad item fails alone.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};
use tessera_cluster::Node;
use tessera_common::ids::index_id_problems;
use tessera_common::{Error, Result};
use tessera_index::index_service::UpdateRequest;
use tessera_index::{Conditions, DocWrite, DocWriteResult, IndexService, WriteOutcome};

use super::{refresh_param, Refresh};
use crate::request::RestRequest;
use crate::response::RestResponse;

/// One write addressed to an index by name.
pub struct Item {
    pub index: String,
    pub write: DocWrite,
}

/// The outcome of one item.
pub type ItemResult = Result<(Arc<IndexService>, DocWriteResult)>;

/// Adds the index uuid that OpenSearch puts on shard-level document errors.
fn with_uuid(error: Error, index: &IndexService) -> Error {
    match error.kind() {
        "version_conflict_engine_exception" | "document_missing_exception"
            if error.meta("index_uuid").is_none() =>
        {
            error.with_meta("index_uuid", index.metadata().uuid.clone())
        }
        _ => error,
    }
}

/// Runs writes (any indices, any shards) and returns their results in order.
pub async fn execute(node: &Arc<Node>, items: Vec<Item>, refresh: Refresh) -> Vec<ItemResult> {
    let mut results: Vec<Option<ItemResult>> = (0..items.len()).map(|_| None).collect();
    let mut groups: BTreeMap<(String, u32), (Arc<IndexService>, Vec<(usize, DocWrite)>)> =
        BTreeMap::new();
    for (position, item) in items.into_iter().enumerate() {
        let lookup = match item.write {
            // a delete never creates an index
            DocWrite::Delete { .. } => node
                .index(&item.index)
                .ok_or_else(|| missing_index(&item.index)),
            _ => node.index_or_create(&item.index),
        };
        let index = match lookup {
            Ok(index) => index,
            Err(e) => {
                results[position] = Some(Err(e));
                continue;
            }
        };
        let shard = match item.write.id() {
            Some(id) => index.shard_for(id, item.write.routing()),
            // generated ids spread over shards like OpenSearch's: by a hash of the id we make
            None => {
                let id = tessera_common::ids::time_based_id();
                let shard = index.shard_for(&id, item.write.routing());
                let write = match item.write {
                    DocWrite::Index {
                        source,
                        routing,
                        conditions,
                        ..
                    } => DocWrite::Index {
                        id: Some(id),
                        auto_generated_id: true,
                        source,
                        routing,
                        conditions: Conditions {
                            create_only: true,
                            ..conditions
                        },
                    },
                    other => other,
                };
                let key = (index.metadata().uuid.clone(), shard);
                groups
                    .entry(key)
                    .or_insert_with(|| (index.clone(), Vec::new()))
                    .1
                    .push((position, write));
                continue;
            }
        };
        let key = (index.metadata().uuid.clone(), shard);
        groups
            .entry(key)
            .or_insert_with(|| (index.clone(), Vec::new()))
            .1
            .push((position, item.write));
    }
    let mut pending = Vec::new();
    for ((_, shard), (index, writes)) in groups {
        let positions: Vec<usize> = writes.iter().map(|(p, _)| *p).collect();
        let writes: Vec<DocWrite> = writes.into_iter().map(|(_, w)| w).collect();
        let task_index = index.clone();
        let immediate = refresh != Refresh::None;
        let handle = node
            .pools
            .write
            .submit(move || task_index.write_shard(shard, writes, immediate));
        pending.push((index, positions, handle));
    }
    for (index, positions, handle) in pending {
        let outcome = match handle {
            Ok(handle) => handle.await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(shard_results) => {
                for (position, result) in positions.into_iter().zip(shard_results) {
                    let result = result.map(|mut r| {
                        // `wait_for` waits for a refresh rather than forcing one, and says so
                        r.forced_refresh &= refresh == Refresh::Immediate;
                        (index.clone(), r)
                    });
                    results[position] = Some(result.map_err(|e| with_uuid(e, &index)));
                }
            }
            Err(error) => {
                for position in positions {
                    results[position] = Some(Err(error.clone()));
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::illegal_state("a bulk item got no answer"))))
        .collect()
}

/// `index_not_found_exception` as document APIs report it.
pub fn missing_index(index: &str) -> Error {
    Error::new(
        "index_not_found_exception",
        404,
        format!("no such index [{index}]"),
    )
    .with_meta("index", index.to_string())
    .with_meta("resource.id", index.to_string())
    .with_meta("resource.type", "index_expression")
    .with_meta("index_uuid", "_na_")
}

/// HTTP status of a write outcome.
pub fn status_of(outcome: WriteOutcome) -> u16 {
    match outcome {
        WriteOutcome::Created => 201,
        WriteOutcome::NotFound => 404,
        _ => 200,
    }
}

/// The response fields of a successful write.
pub fn write_json(index: &IndexService, result: &DocWriteResult) -> Map<String, Value> {
    let meta = index.metadata();
    let mut out = Map::new();
    out.insert("_index".into(), json!(meta.name));
    out.insert("_id".into(), json!(result.id));
    out.insert("_version".into(), json!(result.written.version.version));
    out.insert("result".into(), json!(result.written.outcome.as_str()));
    if result.forced_refresh {
        out.insert("forced_refresh".into(), json!(true));
    }
    let shards = if result.written.outcome == WriteOutcome::Noop {
        json!({"total": 0, "successful": 0, "failed": 0})
    } else {
        json!({"total": 1 + meta.number_of_replicas(), "successful": 1, "failed": 0})
    };
    out.insert("_shards".into(), shards);
    out.insert("_seq_no".into(), json!(result.written.version.seq_no));
    out.insert(
        "_primary_term".into(),
        json!(result.written.version.primary_term),
    );
    out
}

fn action_error(line: usize, what: String) -> Error {
    Error::illegal_argument(format!("Malformed action/metadata line [{line}], {what}"))
}

fn string_meta(line: usize, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(action_error(
            line,
            format!(
                "expected a simple value for field [{key}] but found [{}]",
                if value.is_object() {
                    "START_OBJECT"
                } else {
                    "START_ARRAY"
                }
            ),
        )),
    }
}

/// Parses a bulk body into items (or per-item parse errors, which fail only their item).
pub fn parse_bulk(
    body: &[u8],
    default_index: Option<&str>,
    default_routing: Option<&str>,
) -> Result<Vec<(String, Result<DocWrite>, &'static str, Option<String>)>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body is required",
        ));
    }
    if body.last() != Some(&b'\n') {
        return Err(Error::illegal_argument(
            "The bulk request must be terminated by a newline [\\n]",
        ));
    }
    let mut lines = body
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .peekable();
    let mut items = Vec::new();
    while let Some((number, line)) = lines.next() {
        let number = number + 1;
        let action: Value = serde_json::from_slice(line)
            .or_else(|_| {
                // OpenSearch accepts an action line missing its last `}`
                let mut patched = line.to_vec();
                patched.push(b'}');
                serde_json::from_slice(&patched)
            })
            .map_err(|_| match crate::request::parse_json(line) {
                Err(json_error) => json_error,
                Ok(_) => action_error(
                    number,
                    "expected START_OBJECT but found [VALUE_STRING]".into(),
                ),
            })?;
        let Value::Object(action) = action else {
            let found = match action {
                Value::Array(_) => "START_ARRAY",
                _ => "VALUE_STRING",
            };
            return Err(action_error(
                number,
                format!("expected START_OBJECT but found [{found}]"),
            ));
        };
        let Some((kind, meta)) = action.iter().next() else {
            return Err(action_error(
                number,
                "expected FIELD_NAME but found [END_OBJECT]".into(),
            ));
        };
        let kind: &'static str = match kind.as_str() {
            "index" => "index",
            "create" => "create",
            "update" => "update",
            "delete" => "delete",
            other => {
                return Err(action_error(
                    number,
                    format!("expected one of [create, delete, index, update] but found [{other}]"),
                ))
            }
        };
        let Value::Object(meta) = meta else {
            return Err(action_error(number, "expected START_OBJECT".into()));
        };
        let mut index = default_index.map(String::from);
        let mut id = None;
        let mut routing = default_routing.map(String::from);
        let mut conditions = Conditions {
            create_only: kind == "create",
            ..Conditions::default()
        };
        let mut op_type_create = false;
        for (key, value) in meta {
            match key.as_str() {
                "_index" => index = Some(string_meta(number, key, value)?),
                "_id" => id = Some(string_meta(number, key, value)?),
                "routing" | "_routing" => routing = Some(string_meta(number, key, value)?),
                "if_seq_no" => {
                    conditions.if_seq_no = value
                        .as_u64()
                        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                }
                "if_primary_term" => {
                    conditions.if_primary_term = value
                        .as_u64()
                        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                }
                "op_type" => op_type_create = value.as_str() == Some("create"),
                "retry_on_conflict" | "require_alias" | "pipeline" | "_source" | "version_type"
                | "version" | "dynamic_templates" => {}
                other => {
                    return Err(Error::illegal_argument(format!(
                        "Action/metadata line [{number}] contains an unknown parameter [{other}]"
                    )))
                }
            }
        }
        conditions.create_only |= op_type_create;
        let index =
            index.ok_or_else(|| Error::action_request_validation(&["index is missing".into()]))?;
        let write = if kind == "delete" {
            match id {
                Some(id) => Ok(DocWrite::Delete {
                    id,
                    routing,
                    conditions,
                }),
                None => Err(Error::action_request_validation(&["id is missing".into()])),
            }
        } else {
            let Some((_, source)) = lines.next() else {
                return Err(Error::action_request_validation(&[
                    "no requests added".into()
                ]));
            };
            if kind == "update" {
                match id {
                    Some(id) => parse_update(id, routing, conditions, source),
                    None => Err(Error::action_request_validation(&["id is missing".into()])),
                }
            } else {
                let problems = id.as_deref().map(index_id_problems).unwrap_or_default();
                if !problems.is_empty() {
                    return Err(Error::action_request_validation(&problems));
                }
                Ok(DocWrite::Index {
                    id: id.clone(),
                    auto_generated_id: false,
                    source: Arc::from(source),
                    routing,
                    conditions,
                })
            }
        };
        let id_for_error = match &write {
            Ok(w) => w.id().map(String::from),
            Err(_) => None,
        };
        items.push((index, write, kind, id_for_error));
    }
    if items.is_empty() {
        return Err(Error::action_request_validation(&[
            "no requests added".into()
        ]));
    }
    Ok(items)
}

/// Parses an update body (`doc`, `upsert`, `doc_as_upsert`, `detect_noop`).
pub fn parse_update(
    id: String,
    routing: Option<String>,
    conditions: Conditions,
    body: &[u8],
) -> Result<DocWrite> {
    let value = crate::request::parse_json(body)?;
    let Value::Object(map) = value else {
        return Err(Error::parsing(
            "[UpdateRequest] update body must be an object",
        ));
    };
    let mut update = UpdateRequest {
        id,
        routing,
        detect_noop: true,
        conditions,
        ..Default::default()
    };
    for (key, value) in map {
        match key.as_str() {
            "doc" => update.doc = Some(value),
            "upsert" => update.upsert = Some(value),
            "doc_as_upsert" => update.doc_as_upsert = value.as_bool().unwrap_or(false),
            "detect_noop" => update.detect_noop = value.as_bool().unwrap_or(true),
            "_source" | "_source_includes" | "_source_excludes" => {}
            "script" | "scripted_upsert" => {
                return Err(Error::not_supported("[script] in updates"))
            }
            other => {
                let (line, col) = crate::request::key_position(body, other);
                return Err(Error::x_content_parse(format!(
                    "[{line}:{col}] [UpdateRequest] unknown field [{other}]"
                )));
            }
        }
    }
    if update.doc.is_none() && update.upsert.is_none() {
        return Err(Error::action_request_validation(&[
            "script or doc is missing".into(),
        ]));
    }
    Ok(DocWrite::Update(update))
}

/// `POST /_bulk`, `POST /{index}/_bulk`.
pub async fn bulk(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let started = Instant::now();
    let refresh = refresh_param(&request)?;
    let default_index = request.path_params.get("index").cloned();
    let default_routing = request.param("routing").map(String::from);
    let body = request.body.clone();
    let parsed = node
        .pools
        .write
        .run(move || parse_bulk(&body, default_index.as_deref(), default_routing.as_deref()))
        .await?;
    let mut kinds = Vec::with_capacity(parsed.len());
    let mut items = Vec::with_capacity(parsed.len());
    let mut early: Vec<Option<Error>> = Vec::with_capacity(parsed.len());
    for (index, write, kind, id) in parsed {
        kinds.push((kind, index.clone(), id));
        match write {
            Ok(write) => {
                items.push(Some(Item { index, write }));
                early.push(None);
            }
            Err(e) => {
                items.push(None);
                early.push(Some(e));
            }
        }
    }
    let to_run: Vec<Item> = items.into_iter().flatten().collect();
    let mut ran = execute(&node, to_run, refresh).await.into_iter();
    let mut errors = false;
    let mut rendered = Vec::with_capacity(kinds.len());
    for ((kind, index_name, id), early_error) in kinds.into_iter().zip(early) {
        let result = match early_error {
            Some(e) => Err(e),
            None => ran
                .next()
                .unwrap_or_else(|| Err(Error::illegal_state("missing bulk result"))),
        };
        let body = match result {
            Ok((index, result)) => {
                let mut body = write_json(&index, &result);
                body.insert("status".into(), json!(status_of(result.written.outcome)));
                body
            }
            Err(error) => {
                errors = true;
                let mut body = Map::new();
                body.insert("_index".into(), json!(index_name));
                if let Some(id) = id {
                    body.insert("_id".into(), json!(id));
                }
                body.insert("status".into(), json!(error.status()));
                body.insert("error".into(), error.to_json());
                body
            }
        };
        let mut item = Map::new();
        item.insert(kind.to_string(), Value::Object(body));
        rendered.push(Value::Object(item));
    }
    Ok(RestResponse::ok(json!({
        "took": started.elapsed().as_millis() as u64,
        "errors": errors,
        "items": rendered,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mixed_actions() {
        let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"x\":1}\n{\"delete\":{\"_index\":\"a\",\"_id\":\"2\"}}\n{\"update\":{\"_id\":\"3\"}}\n{\"doc\":{\"y\":2}}\n{\"create\":{\"_index\":\"b\"}\n{\"z\":3}\n";
        let items = parse_bulk(body, Some("dflt"), None).unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].0, "a");
        assert_eq!(items[2].0, "dflt");
        assert!(matches!(items[1].1, Ok(DocWrite::Delete { .. })));
        assert!(matches!(items[2].1, Ok(DocWrite::Update(_))));
        assert!(
            matches!(&items[3].1, Ok(DocWrite::Index { id: None, conditions, .. }) if conditions.create_only)
        );
    }

    #[test]
    fn rejects_malformed_bodies() {
        assert_eq!(
            parse_bulk(b"", None, None).unwrap_err().kind(),
            "parse_exception"
        );
        assert!(
            parse_bulk(b"{\"index\":{\"_index\":\"a\"}}\n{}", None, None)
                .unwrap_err()
                .reason()
                .contains("terminated by a newline")
        );
        assert_eq!(
            parse_bulk(b"[1]\n", None, None).unwrap_err().reason(),
            "Malformed action/metadata line [1], expected START_OBJECT but found [START_ARRAY]"
        );
        assert_eq!(
            parse_bulk(b"{\"bogus\":{}}\n", None, None).unwrap_err().reason(),
            "Malformed action/metadata line [1], expected one of [create, delete, index, update] but found [bogus]"
        );
        assert!(parse_bulk(b"{\"index\":{\"_index\":\"a\"}}\n", None, None)
            .unwrap_err()
            .reason()
            .contains("no requests added"));
        let items = parse_bulk(
            b"{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"script\":\"x\"}\n",
            None,
            None,
        )
        .unwrap();
        assert!(
            items[0].1.is_err(),
            "an unsupported update fails its item only"
        );
    }
}
