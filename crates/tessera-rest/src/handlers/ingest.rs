//! `_ingest`: pipelines stored, read and deleted (`tessera_node::ingest` keeps them in the
//! cluster metadata), `_simulate` (a stored or inline pipeline on sample documents, with
//! `verbose` processor traces) and `GET _ingest/processor/grok` (the pattern bank). Writes
//! run pipelines in `bulk` and `documents`.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_ingest::pipeline::{error_body, render_document, render_trace_entry, Outcome};
use tessera_ingest::{IngestDocument, Pipeline};
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// `PUT _ingest/pipeline/{id}`.
pub async fn put(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    if !request.has_body() {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body or source parameter is required",
        ));
    }
    let body = crate::request::parse_json(&request.body)?;
    let id = request.path_param("id").to_string();
    let runner = node.clone();
    node.pools
        .management
        .run(move || runner.put_pipeline(&id, &body))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET _ingest/pipeline[/{id}]`: the pipelines an id or pattern names (all without one);
/// none: `{}` with 404, as in OpenSearch.
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let id = request.path_params.get("id").cloned();
    let found = node.pipeline_definitions(id.as_deref());
    let status = if found.is_empty() { 404 } else { 200 };
    let body: Map<String, Value> = found.into_iter().collect();
    Ok(RestResponse::json(status, Value::Object(body)))
}

/// `DELETE _ingest/pipeline/{id}` (wildcards allowed).
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let id = request.path_param("id").to_string();
    let runner = node.clone();
    node.pools
        .management
        .run(move || runner.delete_pipelines(&id))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

fn missing_property(name: &str) -> Error {
    Error::new(
        "parse_exception",
        400,
        format!("[{name}] required property is missing"),
    )
    .with_meta("property_name", name)
}

/// One `_simulate` document: `_index`, `_id`, `_routing` and `_source`.
fn simulate_document(value: &Value, timestamp: &str) -> Result<IngestDocument> {
    let Value::Object(map) = value else {
        return Err(Error::new(
            "parse_exception",
            400,
            "[docs] entries must be objects",
        ));
    };
    let Some(Value::Object(source)) = map.get("_source") else {
        return Err(missing_property("_source"));
    };
    let meta = |key: &str, default: Option<&str>| match map.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => default.map(String::from),
    };
    let index = meta("_index", Some("_index")).unwrap_or_default();
    let id = meta("_id", Some("_id"));
    let routing = meta("_routing", None);
    Ok(IngestDocument::new(
        source.clone(),
        &index,
        id.as_deref(),
        routing.as_deref(),
        timestamp.to_string(),
    ))
}

/// `POST _ingest/pipeline[/{id}]/_simulate`.
pub async fn simulate(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let verbose = request.param_bool("verbose", false)?;
    let body = if request.has_body() {
        crate::request::parse_json(&request.body)?
    } else {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body or source parameter is required",
        ));
    };
    let id = request.path_params.get("id").cloned();
    let runner = node.clone();
    node.pools
        .management
        .run(move || simulate_here(&runner, id.as_deref(), &body, verbose))
        .await
        .map(RestResponse::ok)
}

fn simulate_here(node: &Node, id: Option<&str>, body: &Value, verbose: bool) -> Result<Value> {
    let pipeline: Arc<Pipeline> = match id {
        Some(id) => node
            .pipeline(id)?
            .ok_or_else(|| Error::illegal_argument(format!("pipeline [{id}] does not exist")))?,
        None => {
            let definition = body
                .get("pipeline")
                .filter(|v| !v.is_null())
                .ok_or_else(|| missing_property("pipeline"))?;
            Arc::new(Pipeline::parse("_simulate_pipeline", definition)?)
        }
    };
    let docs = match body.get("docs") {
        None | Some(Value::Null) => return Err(missing_property("docs")),
        Some(Value::Array(docs)) => docs,
        Some(_) => {
            return Err(
                Error::new("parse_exception", 400, "[docs] property isn't a list")
                    .with_meta("property_name", "docs"),
            )
        }
    };
    if docs.is_empty() {
        return Err(Error::illegal_argument(
            "must specify at least one document in [docs]",
        ));
    }
    let timestamp = tessera_date::DateFormat::default_format()
        .format_millis(tessera_common::time::now_millis(), None);
    let docs = docs
        .iter()
        .map(|doc| simulate_document(doc, &timestamp))
        .collect::<Result<Vec<_>>>()?;
    let lookup = node.pipeline_lookup();
    let results: Vec<Value> = docs
        .into_iter()
        .map(|doc| {
            if verbose {
                let trace = pipeline.execute_verbose(doc, &lookup);
                let results: Vec<Value> = trace.iter().map(render_trace_entry).collect();
                json!({ "processor_results": results })
            } else {
                match pipeline.execute(doc, &lookup) {
                    Ok(Outcome::Indexed(doc)) => json!({ "doc": render_document(&doc) }),
                    Ok(Outcome::Dropped) => Value::Null,
                    Err(error) => json!({ "error": error_body(&error) }),
                }
            }
        })
        .collect();
    Ok(json!({ "docs": results }))
}

/// `GET _ingest/processor/grok`: the pattern bank (sorted by name).
pub async fn grok_patterns(_node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    if let Some(ecs) = request.param("ecs_compatibility") {
        if ecs != "disabled" {
            return Err(Error::illegal_argument(format!(
                "unsupported ECS compatibility mode [{ecs}]: Tessera has only the [disabled] (legacy) pattern bank"
            )));
        }
    }
    let patterns: Map<String, Value> = tessera_ingest::grok::bank()
        .iter()
        .map(|(name, definition)| (name.clone(), Value::String(definition.clone())))
        .collect();
    Ok(RestResponse::ok(json!({ "patterns": patterns })))
}
