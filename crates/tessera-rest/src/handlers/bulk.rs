//! `_bulk`: the NDJSON body parsed into operations, and the bulk response rendered from their
//! results; the write service (`tessera_node::write`) runs them. Also the write response body
//! every document API shares. A bad item fails alone.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tessera_common::ids::index_id_problems;
use tessera_common::{Error, Result};
use tessera_index::index_service::UpdateRequest;
use tessera_index::update_script::UpdateScript;
use tessera_index::{Conditions, DocWrite};
use tessera_node::ingest::Ingested;
use tessera_node::write::{ItemResponse, ItemResult, Operation, ShardInfo};
use tessera_node::WriteService;
use tessera_script::ScriptSpec;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// The response fields of a successful write, serialised directly (a bulk response holds
/// thousands of them).
#[derive(Serialize)]
pub struct WriteBody<'a> {
    pub _index: &'a str,
    pub _id: &'a str,
    /// -1 for a scripted upsert that created nothing.
    pub _version: i64,
    pub result: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forced_refresh: bool,
    pub _shards: ShardInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _seq_no: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _primary_term: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl<'a> WriteBody<'a> {
    pub fn new(item: &'a ItemResponse) -> WriteBody<'a> {
        let result = &item.result;
        let version = &result.written.version;
        let found = !result.missing;
        WriteBody {
            _index: &item.index,
            _id: &result.id,
            _version: if found { version.version as i64 } else { -1 },
            result: result.written.outcome.as_str(),
            forced_refresh: result.forced_refresh,
            _shards: item.shards,
            _seq_no: found.then_some(version.seq_no),
            _primary_term: found.then_some(version.primary_term),
            status: None,
        }
    }
}

/// The response fields of a successful write as a JSON object.
pub fn write_json(item: &ItemResponse) -> Map<String, Value> {
    match serde_json::to_value(WriteBody::new(item)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// One item of a bulk response: `{"index": {...}}`.
struct BulkItem<'a> {
    kind: &'static str,
    body: BulkItemBody<'a>,
}

enum BulkItemBody<'a> {
    Written(WriteBody<'a>),
    /// A failed or dropped item.
    Other(Value),
}

impl Serialize for BulkItem<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        match &self.body {
            BulkItemBody::Written(body) => map.serialize_entry(self.kind, body)?,
            BulkItemBody::Other(body) => map.serialize_entry(self.kind, body)?,
        }
        map.end()
    }
}

#[derive(Serialize)]
struct BulkResponse<'a> {
    took: u64,
    /// Present when pipelines ran (or were asked for), as in OpenSearch.
    #[serde(skip_serializing_if = "Option::is_none")]
    ingest_took: Option<u64>,
    errors: bool,
    items: Vec<BulkItem<'a>>,
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

/// What an action line asks for.
struct Action {
    kind: &'static str,
    index: Option<String>,
    id: Option<String>,
    routing: Option<String>,
    conditions: Conditions,
    /// The item's `pipeline`.
    pipeline: Option<String>,
    require_alias: Option<bool>,
}

/// The common action line (`{"index": {"_index": "i", "_id": "1"}}`: one action, string
/// `_index`, `_id` and `routing` at most) read into a typed struct, without building a `Value`;
/// `None` for anything else (other metadata, numbers, odd shapes, errors), which
/// [`general_action`] reads.
fn simple_action(
    line: &[u8],
    default_index: Option<&str>,
    default_routing: Option<&str>,
) -> Option<Action> {
    let (kind, meta) = match serde_json::from_slice(line).ok()? {
        SimpleAction::Index(meta) => ("index", meta),
        SimpleAction::Create(meta) => ("create", meta),
        SimpleAction::Update(meta) => ("update", meta),
        SimpleAction::Delete(meta) => ("delete", meta),
    };
    Some(Action {
        kind,
        index: meta.index.or_else(|| default_index.map(String::from)),
        id: meta.id,
        routing: meta.routing.or_else(|| default_routing.map(String::from)),
        conditions: Conditions {
            create_only: kind == "create",
            ..Conditions::default()
        },
        pipeline: meta.pipeline,
        require_alias: None,
    })
}

#[derive(Deserialize)]
enum SimpleAction {
    #[serde(rename = "index")]
    Index(SimpleMeta),
    #[serde(rename = "create")]
    Create(SimpleMeta),
    #[serde(rename = "update")]
    Update(SimpleMeta),
    #[serde(rename = "delete")]
    Delete(SimpleMeta),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimpleMeta {
    #[serde(rename = "_index", default, deserialize_with = "only_string")]
    index: Option<String>,
    #[serde(rename = "_id", default, deserialize_with = "only_string")]
    id: Option<String>,
    #[serde(default, deserialize_with = "only_string")]
    routing: Option<String>,
    #[serde(default, deserialize_with = "only_string")]
    pipeline: Option<String>,
}

/// A string; null and numbers fail (the general path reads them).
fn only_string<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
}

/// Any action line, with OpenSearch's errors.
fn general_action(
    number: usize,
    line: &[u8],
    default_index: Option<&str>,
    default_routing: Option<&str>,
) -> Result<Action> {
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
    let mut pipeline = None;
    let mut require_alias = None;
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
            "pipeline" => pipeline = Some(string_meta(number, key, value)?),
            "require_alias" => {
                require_alias = Some(
                    value
                        .as_bool()
                        .unwrap_or_else(|| value.as_str() == Some("true")),
                )
            }
            "retry_on_conflict" | "_source" | "version_type" | "version" | "dynamic_templates" => {}
            other => {
                return Err(Error::illegal_argument(format!(
                    "Action/metadata line [{number}] contains an unknown parameter [{other}]"
                )))
            }
        }
    }
    conditions.create_only |= op_type_create;
    Ok(Action {
        kind,
        index,
        id,
        routing,
        conditions,
        pipeline,
        require_alias,
    })
}

/// One parsed bulk item.
#[derive(Debug)]
pub struct ParsedItem {
    pub index: String,
    /// The write, or why the item could not be read (which fails that item alone).
    pub write: Result<DocWrite>,
    /// The action's name (`index`, `create`, `update`, `delete`).
    pub kind: &'static str,
    /// The id, for the item's answer when it fails.
    pub id: Option<String>,
    pub pipeline: Option<String>,
    /// The item's `require_alias` (the request's when unset).
    pub require_alias: Option<bool>,
}

/// Parses a bulk body into items (or per-item parse errors, which fail only their item).
pub fn parse_bulk(
    body: &Bytes,
    default_index: Option<&str>,
    default_routing: Option<&str>,
    scripts: ScriptResolver<'_>,
) -> Result<Vec<ParsedItem>> {
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
    // newlines are found with memchr: splitting a byte at a time was half of this parse; the
    // body ends with a newline, so every line ends with one
    let mut start = 0;
    let mut lines = memchr::memchr_iter(b'\n', body)
        .map(|end| {
            let line = &body[start..end];
            start = end + 1;
            line
        })
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .peekable();
    // an item is one or two lines: sized for the larger count, the list never regrows (its
    // entries are large, and regrowing a list of thousands cost a third of this parse)
    let mut items = Vec::with_capacity(memchr::memchr_iter(b'\n', body).count());
    while let Some((number, line)) = lines.next() {
        let number = number + 1;
        let Action {
            kind,
            index,
            id,
            routing,
            conditions,
            pipeline,
            require_alias,
        } = match simple_action(line, default_index, default_routing) {
            Some(action) => action,
            None => general_action(number, line, default_index, default_routing)?,
        };
        let index =
            index.ok_or_else(|| Error::action_request_validation(&["index is missing".into()]))?;
        // an item that fails to parse (an update whose script is missing) still names its id
        let action_id = id.clone();
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
                    Some(id) => parse_update(id, routing, conditions, source, scripts),
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
                    // shares the request body rather than copying the document out of it
                    source: body.slice_ref(source),
                    routing,
                    conditions,
                })
            }
        };
        let id_for_error = match &write {
            Ok(w) => w.id().map(String::from),
            Err(_) => action_id,
        };
        items.push(ParsedItem {
            index,
            write,
            kind,
            id: id_for_error,
            pipeline,
            require_alias,
        });
    }
    if items.is_empty() {
        return Err(Error::action_request_validation(&[
            "no requests added".into()
        ]));
    }
    Ok(items)
}

/// Turns an update's parsed `script` into the script the primary runs (a stored one looked up).
pub type ScriptResolver<'a> = &'a dyn Fn(&ScriptSpec) -> Result<UpdateScript>;

/// Parses an update body (`doc`, `upsert`, `doc_as_upsert`, `detect_noop`, `script`,
/// `scripted_upsert`).
pub fn parse_update(
    id: String,
    routing: Option<String>,
    conditions: Conditions,
    body: &[u8],
    scripts: ScriptResolver<'_>,
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
    let mut script = None;
    for (key, value) in map {
        match key.as_str() {
            "doc" => update.doc = Some(value),
            "upsert" => update.upsert = Some(value),
            "doc_as_upsert" => update.doc_as_upsert = value.as_bool().unwrap_or(false),
            "detect_noop" => update.detect_noop = value.as_bool().unwrap_or(true),
            "scripted_upsert" => update.scripted_upsert = value.as_bool().unwrap_or(false),
            "script" => script = Some(ScriptSpec::parse("UpdateRequest", &value)?),
            "_source" | "_source_includes" | "_source_excludes" => {}
            other => {
                let (line, col) = crate::request::key_position(body, other);
                return Err(Error::x_content_parse(format!(
                    "[{line}:{col}] [UpdateRequest] unknown field [{other}]"
                )));
            }
        }
    }
    match (&script, &update.doc) {
        (Some(_), Some(_)) => {
            return Err(Error::action_request_validation(&[
                "can't provide both script and doc".into(),
            ]))
        }
        (None, None) if update.upsert.is_none() => {
            return Err(Error::action_request_validation(&[
                "script or doc is missing".into(),
            ]))
        }
        _ => {}
    }
    if let Some(spec) = &script {
        update.script = Some(scripts(spec)?);
    }
    Ok(DocWrite::Update(Box::new(update)))
}

/// `POST /_bulk`, `POST /{index}/_bulk`.
pub async fn bulk(service: Arc<WriteService>, request: RestRequest) -> Result<RestResponse> {
    let started = Instant::now();
    super::check_write_params(&request)?;
    let options = super::write_options(&request)?;
    let default_index = request.path_params.get("index").cloned();
    let default_routing = request
        .param("routing")
        .filter(|r| !r.is_empty())
        .map(String::from);
    let default_pipeline = request.param("pipeline").map(String::from);
    let require_alias = request.param_bool("require_alias", false)?;
    let body = request.body.clone();
    let ingest = service.clone();
    service
        .bulk(
            move || {
                let scripts = |spec: &ScriptSpec| ingest.update_script(spec);
                let parsed = parse_bulk(
                    &body,
                    default_index.as_deref(),
                    default_routing.as_deref(),
                    &scripts,
                )?;
                operations(parsed, &ingest, default_pipeline.as_deref(), require_alias)
            },
            options,
            move |context, ran| render_bulk(started, context, ran),
        )
        .await
}

/// A write with `require_alias` to a name that is no alias (OpenSearch's 404).
pub fn not_an_alias(name: &str) -> Error {
    Error::new(
        "index_not_found_exception",
        404,
        format!("no such index [{name}] and [require_alias] request flag is [true] and [{name}] is not an alias"),
    )
    .with_meta("index", name)
    .with_meta("index_uuid", "_na_")
}

/// The answer of a write a `drop` processor dropped: a noop that reached no copy, with
/// OpenSearch's placeholder id and version (-4 for a create, -3 otherwise).
pub fn dropped_json(index: &str, id: Option<&str>, create: bool) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("_index".into(), json!(index));
    body.insert("_id".into(), json!(id.unwrap_or("auto-generated")));
    body.insert("_version".into(), json!(if create { -4 } else { -3 }));
    body.insert("result".into(), json!("noop"));
    body.insert(
        "_shards".into(),
        json!({"total": 0, "successful": 0, "failed": 0}),
    );
    body
}

/// The action name, index and id of each bulk item, for its answer.
type Kinds = Vec<(&'static str, String, Option<String>)>;

/// What became of an item before it could run.
enum Early {
    /// It runs: its result is the next of the operations'.
    Run,
    Failed(Error),
    /// A pipeline dropped it.
    Dropped {
        id: Option<String>,
        create: bool,
    },
}

/// What rendering a bulk response needs besides the operations' results.
struct BulkContext {
    kinds: Kinds,
    early: Vec<Early>,
    ingest_took: Option<u64>,
}

/// The operations to run (after their ingest pipelines), and for every item of the request
/// its action, index and id, and the error of an item that did not parse or whose pipeline
/// failed.
fn operations(
    parsed: Vec<ParsedItem>,
    service: &WriteService,
    default_pipeline: Option<&str>,
    default_require_alias: bool,
) -> Result<(Vec<Operation>, BulkContext)> {
    let mut kinds = Vec::with_capacity(parsed.len());
    let mut items = Vec::with_capacity(parsed.len());
    let mut early: Vec<Early> = Vec::with_capacity(parsed.len());
    for item in parsed {
        let ParsedItem {
            index,
            write,
            kind,
            id,
            pipeline,
            require_alias,
        } = item;
        kinds.push((kind, index.clone(), id));
        let write = match write {
            Ok(_)
                if require_alias.unwrap_or(default_require_alias) && !service.is_alias(&index) =>
            {
                Err(not_an_alias(&index))
            }
            other => other,
        };
        match write {
            Ok(write) => {
                let pipeline = pipeline.or_else(|| default_pipeline.map(String::from));
                items.push((Operation { index, write }, pipeline));
                early.push(Early::Run);
            }
            Err(e) => early.push(Early::Failed(e)),
        }
    }
    let batch = service.ingest_all(items)?;
    let mut results = batch.results.into_iter();
    let mut operations = Vec::with_capacity(early.len());
    for (slot, (kind, _, id)) in early.iter_mut().zip(&kinds) {
        if !matches!(slot, Early::Run) {
            continue;
        }
        match results.next() {
            Some(Ok(Ingested::Write(operation))) => operations.push(operation),
            Some(Ok(Ingested::Dropped { .. })) => {
                *slot = Early::Dropped {
                    id: id.clone(),
                    create: *kind == "create",
                }
            }
            Some(Err(e)) => *slot = Early::Failed(e),
            None => *slot = Early::Failed(Error::illegal_state("missing ingest result")),
        }
    }
    Ok((
        operations,
        BulkContext {
            kinds,
            early,
            ingest_took: batch.took_millis,
        },
    ))
}

/// The bulk response: one item per action line, in order.
fn render_bulk(
    started: Instant,
    context: BulkContext,
    ran: Vec<ItemResult>,
) -> Result<RestResponse> {
    let BulkContext {
        kinds,
        early,
        ingest_took,
    } = context;
    let mut ran = ran.into_iter();
    let mut results = Vec::with_capacity(kinds.len());
    for slot in early {
        results.push(match slot {
            Early::Run => ran
                .next()
                .unwrap_or_else(|| Err(Error::illegal_state("missing bulk result")))
                .map_err(Early::Failed),
            other => Err(other),
        });
    }
    let mut errors = false;
    let mut items = Vec::with_capacity(kinds.len());
    for ((kind, index_name, id), result) in kinds.iter().zip(&results) {
        let body = match result {
            Err(Early::Dropped { id, create }) => {
                let mut body = dropped_json(index_name, id.as_deref(), *create);
                body.insert("status".into(), json!(200));
                BulkItemBody::Other(Value::Object(body))
            }
            Err(Early::Run) => unreachable!("a run item has its result"),
            Ok(item) => {
                let mut body = WriteBody::new(item);
                body.status = Some(item.status());
                BulkItemBody::Written(body)
            }
            Err(Early::Failed(error)) => {
                errors = true;
                let mut body = Map::new();
                body.insert("_index".into(), json!(index_name));
                if let Some(id) = id {
                    body.insert("_id".into(), json!(id));
                }
                body.insert("status".into(), json!(error.status()));
                body.insert("error".into(), error.to_json());
                BulkItemBody::Other(Value::Object(body))
            }
        };
        items.push(BulkItem { kind, body });
    }
    let capacity = 64 + 224 * items.len();
    RestResponse::serialized_sized(
        200,
        &BulkResponse {
            took: started.elapsed().as_millis() as u64,
            ingest_took,
            errors,
            items,
        },
        capacity,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inline scripts only (the node resolves stored ones).
    fn inline_only(spec: &ScriptSpec) -> Result<UpdateScript> {
        Ok(UpdateScript {
            source: spec.source.clone().unwrap_or_default(),
            params: Some(Value::Object(spec.params.clone())),
        })
    }

    fn parse(
        body: &'static [u8],
        index: Option<&str>,
        routing: Option<&str>,
    ) -> Result<Vec<ParsedItem>> {
        parse_bulk(&Bytes::from_static(body), index, routing, &inline_only)
    }

    #[test]
    fn the_simple_action_path_reads_what_the_general_one_reads() {
        let summary = |a: &Action| {
            (
                a.kind,
                a.index.clone(),
                a.id.clone(),
                a.routing.clone(),
                a.conditions.create_only,
                a.pipeline.clone(),
            )
        };
        let simple_lines: &[&[u8]] = &[
            br#"{"index":{"_index":"a","_id":"1"}}"#,
            br#"{"create":{"_id":"x\"y"}}"#,
            br#"{"update":{"_index":"a","_id":"2","routing":"r"}}"#,
            br#"{"delete":{"_id":"3"}}"#,
            br#"{"index":{}}"#,
            br#"{"index":{"_index":"a","pipeline":"p"}}"#,
        ];
        for line in simple_lines {
            let simple = simple_action(line, Some("dflt"), Some("rt"))
                .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(line)));
            let general = general_action(1, line, Some("dflt"), Some("rt")).unwrap();
            assert_eq!(summary(&simple), summary(&general));
        }
        // numbers, null, other metadata, two routings or two actions: the general path decides
        let general_lines: &[&[u8]] = &[
            br#"{"index":{"_id":1}}"#,
            br#"{"index":{"_id":null}}"#,
            br#"{"index":{"_id":"1","if_seq_no":3}}"#,
            br#"{"index":{"routing":"a","_routing":"b"}}"#,
            br#"{"index":{},"delete":{}}"#,
            br#"{"index":{"_id":"1"}"#,
            br#"{"bogus":{}}"#,
        ];
        for line in general_lines {
            assert!(
                simple_action(line, None, None).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn parses_mixed_actions() {
        let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"x\":1}\n{\"delete\":{\"_index\":\"a\",\"_id\":\"2\"}}\n{\"update\":{\"_id\":\"3\"}}\n{\"doc\":{\"y\":2}}\n{\"create\":{\"_index\":\"b\"}\n{\"z\":3}\n";
        let items =
            parse_bulk(&Bytes::from_static(body), Some("dflt"), None, &inline_only).unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].index, "a");
        assert_eq!(items[2].index, "dflt");
        assert!(matches!(items[1].write, Ok(DocWrite::Delete { .. })));
        assert!(matches!(items[2].write, Ok(DocWrite::Update(_))));
        assert!(
            matches!(&items[3].write, Ok(DocWrite::Index { id: None, conditions, .. }) if conditions.create_only)
        );
    }

    #[test]
    fn rejects_malformed_bodies() {
        assert_eq!(
            parse(b"", None, None).unwrap_err().kind(),
            "parse_exception"
        );
        assert!(parse(b"{\"index\":{\"_index\":\"a\"}}\n{}", None, None)
            .unwrap_err()
            .reason()
            .contains("terminated by a newline"));
        assert_eq!(
            parse(b"[1]\n", None, None).unwrap_err().reason(),
            "Malformed action/metadata line [1], expected START_OBJECT but found [START_ARRAY]"
        );
        assert_eq!(
            parse(b"{\"bogus\":{}}\n", None, None).unwrap_err().reason(),
            "Malformed action/metadata line [1], expected one of [create, delete, index, update] but found [bogus]"
        );
        assert!(parse(b"{\"index\":{\"_index\":\"a\"}}\n", None, None)
            .unwrap_err()
            .reason()
            .contains("no requests added"));
        let items = parse(
            b"{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"script\":\"x\",\"doc\":{}}\n",
            None,
            None,
        )
        .unwrap();
        assert!(
            items[0].write.is_err(),
            "an update with a script and a doc fails its item only"
        );
        assert_eq!(items[0].id.as_deref(), Some("1"), "and keeps its id");
    }
}
