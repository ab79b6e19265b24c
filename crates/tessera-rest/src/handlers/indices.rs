//! Index APIs: create, get, exists, delete, mappings, settings, refresh, flush, force merge.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::Aliases;
use tessera_index::blocks::BlockLevel;
use tessera_index::index_service::render_index;
use tessera_index::IndexService;
use tessera_mapping::Mapping;
use tessera_node::Node;

use super::{resolve_options, ActiveShards};
use crate::request::RestRequest;
use crate::response::RestResponse;

fn index_expression(request: &RestRequest) -> &str {
    request
        .path_params
        .get("index")
        .map(String::as_str)
        .unwrap_or("_all")
}

/// `PUT /{index}`.
pub async fn create(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let name = request.path_param("index").to_string();
    let body = request.json_body()?.unwrap_or_else(|| json!({}));
    let Value::Object(body) = body else {
        return Err(Error::parsing("request body must be an object"));
    };
    let mut settings = Settings::new();
    let mut mapping = Mapping::default();
    let mut aliases = Aliases::new();
    for (key, value) in &body {
        match key.as_str() {
            "settings" => settings = Settings::from_json(value)?.with_prefix("index."),
            "mappings" => {
                mapping = Mapping::parse(value).map_err(|e| {
                    let wrap = matches!(
                        e.kind(),
                        "mapper_parsing_exception" | "illegal_argument_exception"
                    ) && !e.reason().starts_with("Failed to parse mapping");
                    if wrap {
                        Error::mapper_parsing(format!(
                            "Failed to parse mapping [_doc]: {}",
                            e.reason()
                        ))
                        .caused_by(e)
                    } else {
                        e
                    }
                })?
            }
            "aliases" => aliases = tessera_index::aliases::parse_aliases(value)?,
            other => {
                return Err(Error::new(
                    "parse_exception",
                    400,
                    format!("unknown key [{other}] for create index"),
                ));
            }
        }
    }
    // `wait_for_active_shards` (else the index's `index.write.wait_for_active_shards`): the
    // copies of every shard to wait for, up to `timeout`, before `shards_acknowledged`
    let wanted = match request.param("wait_for_active_shards") {
        Some(text) => ActiveShards::parse(text)?,
        None => settings
            .get_str("index.write.wait_for_active_shards")
            .map(ActiveShards::parse)
            .transpose()?
            .unwrap_or(ActiveShards::Count(1)),
    };
    let replicas: u32 = settings
        .get_str("index.number_of_replicas")
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    if let ActiveShards::Count(count) = wanted {
        if count > 1 + replicas {
            return Err(Error::illegal_argument(format!(
                "invalid wait_for_active_shards[{count}]: cannot be greater than number of shard copies [{}]",
                1 + replicas
            )));
        }
    }
    let timeout = request
        .param_time("timeout")?
        .unwrap_or(std::time::Duration::from_secs(30));
    let created = node.clone();
    let index = node
        .pools
        .management
        .run(move || created.create_index_with(&name, settings, mapping, aliases))
        .await?;
    let shards_acknowledged = wait_for_active_copies(&node, &index, wanted, timeout).await;
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "shards_acknowledged": shards_acknowledged,
        "index": index.name()
    })))
}

/// Whether every shard of `index` has the active copies `wanted` asks for within `timeout`.
pub(super) async fn wait_for_active_copies(
    node: &Node,
    index: &IndexService,
    wanted: ActiveShards,
    timeout: std::time::Duration,
) -> bool {
    let meta = index.metadata();
    let needed = wanted.needed(meta.number_of_replicas());
    let deadline = std::time::Instant::now() + timeout;
    tessera_node::poll::until(deadline, std::time::Duration::from_millis(50), || {
        (0..meta.number_of_shards)
            .all(|shard| node.active_copies(&meta.name, &meta.uuid, shard) >= needed)
    })
    .await
}

/// `GET /{index}`.
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = index_expression(&request);
    if !expression.contains('*') && !expression.contains(',') && expression != "_all" {
        tessera_node::resolve::validate_index_name(expression).map_err(|e| {
            if expression.starts_with('_') {
                Error::invalid_index_name(expression, "must not start with '_'.")
            } else {
                e
            }
        })?;
    }
    let flat = request.param_bool("flat_settings", false)?;
    let indices = node.resolve(expression, &resolve_options(&request, true)?)?;
    let mut body = Map::new();
    for index in indices {
        let meta = index.metadata();
        body.insert(meta.name.clone(), render_index(&meta, flat));
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `HEAD /{index}`: 200 or 404 without a body.
pub async fn exists(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    match node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    ) {
        Ok(indices) if !indices.is_empty() => Ok(RestResponse::status_only(200)),
        Ok(_) => Ok(RestResponse::status_only(404)),
        Err(e) => Err(e),
    }
}

/// `DELETE /{index}`.
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = index_expression(&request).to_string();
    let options = resolve_options(&request, true)?;
    check_blocks(&node.resolve(&expression, &options)?, BlockLevel::Delete)?;
    let deleting = node.clone();
    node.pools
        .management
        .run(move || deleting.delete_indices(&expression, &options))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET /{index}/_mapping`.
pub async fn get_mapping(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    check_blocks(&indices, BlockLevel::MetadataRead)?;
    let mut body = Map::new();
    for index in indices {
        let meta = index.metadata();
        body.insert(
            meta.name.clone(),
            json!({"mappings": meta.mapping.to_json()}),
        );
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `GET /{index}/_mapping/field/{fields}`.
pub async fn get_field_mapping(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let patterns: Vec<String> = request
        .path_param("fields")
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let mut body = Map::new();
    for index in indices {
        let meta = index.metadata();
        let mut mappings = Map::new();
        let leaves = meta.mapping.leaves();
        for pattern in &patterns {
            for (path, field) in &leaves {
                if tessera_mapping::dynamic::simple_match(pattern, path) {
                    let leaf = path.rsplit('.').next().unwrap_or(path).to_string();
                    let mut definition = Map::new();
                    definition.insert(leaf, field.to_json());
                    mappings.insert(
                        path.clone(),
                        json!({"full_name": path, "mapping": Value::Object(definition)}),
                    );
                }
            }
        }
        body.insert(
            meta.name.clone(),
            json!({"mappings": Value::Object(mappings)}),
        );
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `PUT /{index}/_mapping`.
pub async fn put_mapping(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.required_json_body()?;
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, false)?,
    )?;
    // every index is checked before any changes
    check_blocks(&indices, BlockLevel::MetadataWrite)?;
    change_each(&node, indices, move |index| index.put_mapping(&body)).await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET /{index}/_settings[/{name}]`.
pub async fn get_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let flat = request.param_bool("flat_settings", false)?;
    let include_defaults = request.param_bool("include_defaults", false)?;
    let names: Vec<String> = request
        .path_params
        .get("name")
        .map(|n| n.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    check_blocks(&indices, BlockLevel::MetadataRead)?;
    let mut body = Map::new();
    for index in indices {
        let meta = index.metadata();
        let mut settings = meta.rendered_settings();
        if !names.is_empty() {
            let keep: Vec<String> = settings
                .keys()
                .filter(|k| {
                    names.iter().any(|n| {
                        tessera_mapping::dynamic::simple_match(n, k)
                            || tessera_mapping::dynamic::simple_match(&format!("index.{n}"), k)
                    })
                })
                .map(String::from)
                .collect();
            let mut filtered = Settings::new();
            for key in keep {
                filtered.set_value(key.clone(), settings.get(&key).cloned());
            }
            settings = filtered;
            if settings.is_empty() {
                continue;
            }
        }
        let render = |s: &Settings| {
            if flat {
                s.to_flat_json()
            } else {
                s.to_nested_json()
            }
        };
        let mut entry = json!({"settings": render(&settings)});
        if include_defaults {
            let mut defaults = Settings::new();
            for def in tessera_index::index_settings::REGISTRY.defs() {
                if !settings.contains(def.key) && !def.default.is_empty() {
                    defaults.set(def.key, def.default);
                }
            }
            entry["defaults"] = render(&defaults);
        }
        body.insert(meta.name.clone(), entry);
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `PUT /{index}/_block/{block}`: sets `index.blocks.{block}` on every index the expression
/// names (a change of metadata: refused under a metadata block).
pub async fn add_block(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let block = request
        .path_params
        .get("block")
        .cloned()
        .unwrap_or_default();
    if !["metadata", "read", "read_only", "write"].contains(&block.as_str()) {
        return Err(Error::illegal_argument(format!(
            "No block found with name {block}"
        )));
    }
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, false)?,
    )?;
    check_blocks(&indices, BlockLevel::MetadataWrite)?;
    let update = Settings::from_json(&json!({ format!("index.blocks.{block}"): true }))?;
    let names: Vec<Value> = indices
        .iter()
        .map(|index| json!({"name": index.metadata().name, "blocked": true}))
        .collect();
    change_each(&node, indices, move |index| index.update_settings(&update)).await?;
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "shards_acknowledged": true,
        "indices": names,
    })))
}

/// Runs `change` on each index in turn, on the management pool (a change waits for the
/// cluster manager in a cluster).
async fn change_each(
    node: &Arc<Node>,
    indices: Vec<Arc<IndexService>>,
    change: impl Fn(&IndexService) -> Result<()> + Send + 'static,
) -> Result<()> {
    node.pools
        .management
        .run(move || indices.iter().try_for_each(|index| change(index)))
        .await
}

/// Fails with the first index's block at `level` (OpenSearch checks every index before it
/// acts on any).
fn check_blocks(indices: &[Arc<IndexService>], level: BlockLevel) -> Result<()> {
    for index in indices {
        tessera_index::blocks::check(&index.metadata(), level)?;
    }
    Ok(())
}

/// `PUT /{index}/_settings`.
pub async fn put_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.required_json_body()?;
    let body = body.get("settings").cloned().unwrap_or(body);
    let update = Settings::from_json(&body)?.with_prefix("index.");
    if update.is_empty() {
        return Err(Error::action_request_validation(&[
            "no settings to update".into()
        ]));
    }
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, false)?,
    )?;
    // every index is checked before any changes; changing only blocks lifts them
    if !tessera_index::blocks::only_blocks(&update) {
        check_blocks(&indices, BlockLevel::MetadataWrite)?;
    }
    change_each(&node, indices, move |index| index.update_settings(&update)).await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

fn shards_summary(indices: &[Arc<IndexService>]) -> Value {
    let mut total = 0;
    let mut successful = 0;
    for index in indices {
        let meta = index.metadata();
        total += meta.number_of_shards * (1 + meta.number_of_replicas());
        successful += meta.number_of_shards;
    }
    json!({"total": total, "successful": successful, "failed": 0})
}

/// A broadcast's answer: `_shards` with the copies it failed on (OpenSearch's shape: each
/// failure's index, shard, status name and reason); 200 unless every copy failed, then the
/// first failure's status, as OpenSearch's `BroadcastResponse`.
fn broadcast_response(summary: Value, failures: Vec<(String, u32, Error)>) -> RestResponse {
    let status = match failures.first() {
        Some((_, _, error)) if summary["successful"].as_u64() <= Some(failures.len() as u64) => {
            error.status()
        }
        _ => 200,
    };
    RestResponse::json(status, json!({"_shards": with_failures(summary, failures)}))
}

fn with_failures(mut summary: Value, failures: Vec<(String, u32, Error)>) -> Value {
    if failures.is_empty() {
        return summary;
    }
    let failed = failures.len() as u64;
    summary["successful"] = json!(summary["successful"]
        .as_u64()
        .unwrap_or(0)
        .saturating_sub(failed));
    summary["failed"] = json!(failed);
    summary["failures"] = failures
        .into_iter()
        .map(|(index, shard, error)| {
            json!({"shard": shard, "index": index, "status": status_name(error.status()), "reason": error.to_json()})
        })
        .collect();
    summary
}

/// OpenSearch's name of an HTTP status (its `RestStatus`), as shard failures carry it.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "BAD_REQUEST",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        409 => "CONFLICT",
        429 => "TOO_MANY_REQUESTS",
        503 => "SERVICE_UNAVAILABLE",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

pub async fn refresh(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let summary = shards_summary(&indices);
    let failures = node.refresh_indices(indices).await?;
    Ok(broadcast_response(summary, failures))
}

/// `POST /{index}/_close`: `indices` names those that were open (and are closed now).
pub async fn close(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = index_expression(&request).to_string();
    let options = resolve_options(&request, true)?;
    let closing = node.clone();
    let closed = node
        .pools
        .management
        .run(move || closing.set_closed(&expression, &options, true))
        .await?;
    let indices: Map<String, Value> = closed
        .iter()
        .map(|name| (name.clone(), json!({"closed": true})))
        .collect();
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "shards_acknowledged": !closed.is_empty(),
        "indices": indices,
    })))
}

/// `POST /{index}/_open`.
pub async fn open(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = index_expression(&request).to_string();
    let options = resolve_options(&request, true)?;
    let opening = node.clone();
    node.pools
        .management
        .run(move || opening.set_closed(&expression, &options, false))
        .await?;
    Ok(RestResponse::ok(
        json!({"acknowledged": true, "shards_acknowledged": true}),
    ))
}

/// `POST [/{index}]/_cache/clear`: Tessera keeps no query, request or fielddata cache (a
/// search reads the segments' own columns and postings), so there is nothing to clear; the
/// answer names the copies, as OpenSearch's does.
pub async fn clear_cache(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    Ok(broadcast_response(shards_summary(&indices), Vec::new()))
}

pub async fn flush(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let summary = shards_summary(&indices);
    let failures = node.flush_indices(indices).await?;
    Ok(broadcast_response(summary, failures))
}

pub async fn force_merge(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let max_segments = match request.param_i64("max_num_segments")? {
        Some(n) if n < 1 => {
            return Err(Error::action_request_validation(&[
                "max_num_segments must be greater than 0".into(),
            ]))
        }
        Some(n) => n as usize,
        None => 1,
    };
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let summary = shards_summary(&indices);
    let failures = node.force_merge_indices(indices, max_segments).await?;
    Ok(broadcast_response(summary, failures))
}
