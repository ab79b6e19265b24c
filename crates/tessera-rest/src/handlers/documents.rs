//! Single-document APIs: index, create, get, exists, `_source`, delete, update, mget. The
//! writes (index, create, update, delete) go through the node's write service, as `_bulk`'s do.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::ids::index_id_problems;
use tessera_common::{Error, Result};
use tessera_index::{Conditions, DocWrite, IndexService, StoredDoc, WriteOutcome};
use tessera_mapping::SourceFilter;
use tessera_node::ingest::Ingested;
use tessera_node::read::{get_document, GetRequest};
use tessera_node::write::{missing_index, Operation};
use tessera_node::{Node, WriteService};
use tessera_script::ScriptSpec;
use tessera_search::request::{parse_source_spec, SourceSpec};

use super::bulk::{parse_update, write_json};
use super::refresh_param;
use crate::request::RestRequest;
use crate::response::RestResponse;

fn conditions(request: &RestRequest, create_only: bool) -> Result<Conditions> {
    super::check_write_params(request)?;
    if let Some(version) = request.param("version") {
        if version.parse::<i64>().is_err() {
            return Err(Error::illegal_argument(format!(
                "Failed to parse long parameter [version] with value [{version}]"
            ))
            .caused_by(Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{version}\""),
            )));
        }
        let version_type = request.param("version_type").unwrap_or("internal");
        if version_type == "internal" {
            return Err(Error::action_request_validation(&[
                "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead".into(),
            ]));
        }
        return Err(Error::not_supported(&format!(
            "[version_type={version_type}]"
        )));
    }
    let create_only = create_only
        || match request.param("op_type") {
            None | Some("index") => false,
            Some("create") => true,
            Some(other) => {
                return Err(Error::illegal_argument(format!(
                    "opType must be 'create' or 'index', found: [{other}]"
                )))
            }
        };
    let if_seq_no = match request.param_i64("if_seq_no")? {
        Some(n) if n < 0 => {
            return Err(Error::illegal_argument(format!(
                "sequence numbers must be non negative. got [{n}]."
            )))
        }
        other => other.map(|n| n as u64),
    };
    let if_primary_term = request
        .param_i64("if_primary_term")?
        .map(|n| n.max(0) as u64);
    if if_seq_no.is_some() != if_primary_term.is_some() && if_seq_no.is_some() {
        return Err(Error::action_request_validation(&[
            "ifSeqNo is set, but primary term is [0]".into(),
        ]));
    }
    Ok(Conditions {
        create_only,
        if_seq_no,
        if_primary_term,
    })
}

async fn write_one(
    service: Arc<WriteService>,
    request: &RestRequest,
    write: DocWrite,
    index: String,
) -> Result<RestResponse> {
    let options = super::write_options(request)?;
    let item = service
        .execute_one(Operation { index, write }, options)
        .await?;
    Ok(RestResponse::json(
        item.status(),
        Value::Object(write_json(&item)),
    ))
}

/// `PUT|POST /{index}/_doc/{id}`, `POST /{index}/_doc`, `PUT|POST /{index}/_create/{id}`.
pub async fn index(service: Arc<WriteService>, request: RestRequest) -> Result<RestResponse> {
    let create_only = request.path.contains("/_create/");
    let id = request.path_params.get("id").cloned();
    let problems = id.as_deref().map(index_id_problems).unwrap_or_default();
    if !problems.is_empty() {
        return Err(Error::action_request_validation(&problems));
    }
    if !request.has_body() {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body is required",
        ));
    }
    // a document without an id is a create, as OpenSearch makes it (which is what a data stream
    // takes, and what the version of a dropped one says)
    let create = create_only || id.is_none();
    let write = DocWrite::Index {
        id,
        auto_generated_id: false,
        source: request.body.clone(),
        routing: request
            .param("routing")
            .filter(|r| !r.is_empty())
            .map(String::from),
        conditions: conditions(&request, create)?,
    };
    let index_name = request.path_param("index").to_string();
    check_require_alias(&service, &request, &index_name)?;
    let operation = Operation {
        index: index_name,
        write,
    };
    let requested = request.param("pipeline").map(String::from);
    match service.ingest(operation, requested).await? {
        Ingested::Write(Operation { index, write }) => {
            write_one(service, &request, write, index).await
        }
        Ingested::Dropped { index, id, .. } => Ok(RestResponse::ok(Value::Object(
            super::bulk::dropped_json(&index, id.as_deref(), create),
        ))),
    }
}

/// `DELETE /{index}/_doc/{id}`.
pub async fn delete(service: Arc<WriteService>, request: RestRequest) -> Result<RestResponse> {
    let index_name = request.path_param("index").to_string();
    if !service.index_exists(&index_name) {
        return Err(missing_index(&index_name));
    }
    let write = DocWrite::Delete {
        id: request.path_param("id").to_string(),
        routing: request
            .param("routing")
            .filter(|r| !r.is_empty())
            .map(String::from),
        conditions: conditions(&request, false)?,
    };
    write_one(service, &request, write, index_name).await
}

/// `require_alias=true`: the target must be an alias.
fn check_require_alias(service: &WriteService, request: &RestRequest, name: &str) -> Result<()> {
    if request.param_bool("require_alias", false)? && !service.is_alias(name) {
        return Err(super::bulk::not_an_alias(name));
    }
    Ok(())
}

/// `POST /{index}/_update/{id}`.
pub async fn update(service: Arc<WriteService>, request: RestRequest) -> Result<RestResponse> {
    let index_name = request.path_param("index").to_string();
    check_require_alias(&service, &request, &index_name)?;
    let body = if request.has_body() {
        request.body.clone()
    } else {
        return Err(Error::action_request_validation(&[
            "script or doc is missing".into(),
        ]));
    };
    let mut conditions = conditions(&request, false)?;
    conditions.create_only = false;
    // checked, not used: an update reads and writes its document under the shard's write lock,
    // so there is no version conflict between the two to retry
    request.param_i64("retry_on_conflict")?;
    let write = parse_update(
        request.path_param("id").to_string(),
        request
            .param("routing")
            .filter(|r| !r.is_empty())
            .map(String::from),
        conditions,
        &body,
        &|spec: &ScriptSpec| service.update_script(spec),
    )?;
    let source_spec = update_source_spec(&request, &body)?;
    let options = super::write_options(&request)?;
    let item = service
        .execute_one(
            Operation {
                index: index_name,
                write,
            },
            options,
        )
        .await?;
    let mut out = write_json(&item);
    let result = &item.result;
    let deleted = result.written.outcome == WriteOutcome::Deleted;
    if result.missing {
        // a scripted upsert the script turned into a noop: OpenSearch shows the missing get
        out.insert("get".into(), json!({"found": false}));
    } else if let Some(spec) = source_spec.filter(|_| result.source.is_some() || deleted) {
        let mut get = Map::new();
        get.insert("_seq_no".into(), json!(result.written.version.seq_no));
        get.insert(
            "_primary_term".into(),
            json!(result.written.version.primary_term),
        );
        get.insert("found".into(), json!(true));
        // a document a script deleted is shown without a source, as OpenSearch shows it
        if let Some(source) = &result.source {
            if let Some(rendered) = render_source(source, &spec)? {
                get.insert("_source".into(), rendered);
            }
        }
        out.insert("get".into(), Value::Object(get));
    }
    Ok(RestResponse::json(item.status(), Value::Object(out)))
}

fn update_source_spec(request: &RestRequest, body: &[u8]) -> Result<Option<SourceSpec>> {
    if let Some(spec) = url_source_spec(request)? {
        return Ok(Some(spec));
    }
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match value.get("_source") {
        Some(spec) => {
            let spec = parse_source_spec(spec)?;
            Ok(spec.enabled.then_some(spec))
        }
        None => Ok(None),
    }
}

/// `_source`, `_source_includes`, `_source_excludes` URL parameters.
pub fn url_source_spec(request: &RestRequest) -> Result<Option<SourceSpec>> {
    tessera_search::url_params::source_spec(&request.params)
}

fn render_source(bytes: &[u8], spec: &SourceSpec) -> Result<Option<Value>> {
    if !spec.enabled {
        return Ok(None);
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| Error::internal("read _source", e))?;
    let filter = SourceFilter::new(spec.includes.clone(), spec.excludes.clone());
    Ok(Some(if filter.is_noop() {
        value
    } else {
        filter.apply(&value)
    }))
}

/// How a get reads: `refresh` first, and `realtime` (unrefreshed writes visible).
struct ReadOptions {
    refresh: bool,
    realtime: bool,
    routing: Option<String>,
}

impl ReadOptions {
    fn of(request: &RestRequest) -> Result<ReadOptions> {
        Ok(ReadOptions {
            refresh: refresh_param(request)? != super::Refresh::None,
            realtime: request.param_bool("realtime", true)?,
            routing: request
                .param("routing")
                .filter(|r| !r.is_empty())
                .map(String::from),
        })
    }
}

/// Reads one document on the `search` pool.
async fn load(
    node: &Arc<Node>,
    index_name: &str,
    id: &str,
    options: ReadOptions,
) -> Result<(Arc<IndexService>, Option<StoredDoc>)> {
    let (index, routing) = node
        .read_target(index_name, options.routing.as_deref())?
        .ok_or_else(|| missing_index(index_name))?;
    let meta = index.metadata();
    let request = GetRequest {
        index: meta.name.clone(),
        index_uuid: meta.uuid.clone(),
        id: id.to_string(),
        routing,
        realtime: options.realtime,
        refresh: options.refresh,
    };
    let doc = get_document(node, &index, request).await?;
    Ok((index, doc))
}

fn get_json(
    index: &IndexService,
    id: &str,
    doc: Option<&StoredDoc>,
    spec: &SourceSpec,
    stored_fields_none: bool,
) -> Result<Value> {
    let mut out = Map::new();
    out.insert("_index".into(), json!(index.metadata().name));
    out.insert("_id".into(), json!(id));
    match doc {
        Some(doc) => {
            out.insert("_version".into(), json!(doc.version.version));
            out.insert("_seq_no".into(), json!(doc.version.seq_no));
            out.insert("_primary_term".into(), json!(doc.version.primary_term));
            out.insert("found".into(), json!(true));
            if let Some(routing) = &doc.routing {
                out.insert("_routing".into(), json!(routing));
            }
            if !stored_fields_none {
                if let Some(source) = &doc.source {
                    if let Some(rendered) = render_source(source, spec)? {
                        out.insert("_source".into(), rendered);
                    }
                }
            }
        }
        None => {
            out.insert("found".into(), json!(false));
        }
    }
    Ok(Value::Object(out))
}

/// `GET /{index}/_doc/{id}`.
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let index_name = request.path_param("index");
    let id = request.path_param("id");
    let spec = url_source_spec(&request)?.unwrap_or_default();
    let stored_none = request.param("stored_fields") == Some("_none_");
    let (index, doc) = load(&node, index_name, id, ReadOptions::of(&request)?).await?;
    let body = get_json(&index, id, doc.as_ref(), &spec, stored_none)?;
    Ok(RestResponse::json(
        if doc.is_some() { 200 } else { 404 },
        body,
    ))
}

/// `HEAD /{index}/_doc/{id}`.
pub async fn exists(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (_, doc) = load(
        &node,
        request.path_param("index"),
        request.path_param("id"),
        ReadOptions::of(&request)?,
    )
    .await?;
    Ok(RestResponse::status_only(if doc.is_some() {
        200
    } else {
        404
    }))
}

/// `GET /{index}/_source/{id}`.
pub async fn source(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let index_name = request.path_param("index");
    let id = request.path_param("id");
    let (_, doc) = load(&node, index_name, id, ReadOptions::of(&request)?).await?;
    let spec = url_source_spec(&request)?.unwrap_or_default();
    match doc.as_ref().and_then(|d| d.source.as_ref()) {
        Some(source) => Ok(RestResponse::ok(
            render_source(
                source,
                &SourceSpec {
                    enabled: true,
                    ..spec
                },
            )?
            .unwrap_or(Value::Null),
        )),
        None => Err(Error::new(
            "resource_not_found_exception",
            404,
            format!("Document not found [{index_name}]/[{id}]"),
        )),
    }
}

/// `GET|POST /_mget`, `/{index}/_mget`.
pub async fn mget(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.json_body()?.ok_or_else(|| {
        Error::new(
            "parse_exception",
            400,
            "request body or source parameter is required",
        )
    })?;
    let default_index = request.path_params.get("index").cloned();
    let default_spec = url_source_spec(&request)?.unwrap_or_default();
    let mut wanted: Vec<(Option<String>, String, Option<String>, SourceSpec)> = Vec::new();
    if let Some(docs) = body.get("docs") {
        let Value::Array(docs) = docs else {
            return Err(Error::parsing("[docs] must be an array"));
        };
        for doc in docs {
            let id = match doc.get("_id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => {
                    return Err(Error::action_request_validation(&[
                        "id is missing for doc 0".into(),
                    ]))
                }
            };
            let index = doc
                .get("_index")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| default_index.clone());
            let routing = doc
                .get("routing")
                .or_else(|| doc.get("_routing"))
                .and_then(Value::as_str)
                .map(String::from);
            let spec = match doc.get("_source") {
                Some(spec) => parse_source_spec(spec)?,
                None => default_spec.clone(),
            };
            wanted.push((index, id, routing, spec));
        }
    }
    // `docs` and `ids` add up, as in OpenSearch
    if let Some(ids) = body.get("ids") {
        let Value::Array(ids) = ids else {
            return Err(Error::parsing("[ids] must be an array"));
        };
        for id in ids {
            let id = id
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| id.to_string());
            wanted.push((default_index.clone(), id, None, default_spec.clone()));
        }
    }
    if wanted.is_empty() {
        return Err(Error::action_request_validation(&[
            "no documents to get".into()
        ]));
    }
    let mut docs = Vec::with_capacity(wanted.len());
    for (index_name, id, routing, spec) in wanted {
        let Some(index_name) = index_name else {
            return Err(Error::action_request_validation(&[
                "index is missing for doc 0".into(),
            ]));
        };
        match node.read_target(&index_name, routing.as_deref()) {
            Err(e) => docs.push(json!({"_index": index_name, "_id": id, "error": e.to_json()})),
            Ok(None) => docs.push(json!({"_index": index_name, "_id": id, "error": missing_index(&index_name).to_json()})),
            Ok(Some((index, routing))) => {
                let meta = index.metadata();
                let read = GetRequest {
                    index: meta.name.clone(),
                    index_uuid: meta.uuid.clone(),
                    id: id.clone(),
                    routing,
                    realtime: request.param_bool("realtime", true)?,
                    refresh: false,
                };
                match get_document(&node, &index, read).await {
                    Ok(doc) => docs.push(get_json(&index, &id, doc.as_ref(), &spec, false)?),
                    // a shard that cannot be read, or an index whose reads are blocked,
                    // fails its documents alone
                    Err(e) if e.status() >= 500 || e.kind() == "cluster_block_exception" => docs.push(
                        json!({"_index": index_name, "_id": id, "error": e.to_json()}),
                    ),
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(RestResponse::ok(json!({ "docs": docs })))
}
