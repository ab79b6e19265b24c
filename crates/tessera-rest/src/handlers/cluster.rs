//! `_cluster/health`, `_cluster/settings` and `_cluster/state`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tessera_cluster::{ClusterState, IndexState, ShardRouting, ShardState};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_node::cluster_settings::{render_update, ClusterSettings};
use tessera_node::health::{HealthWait, Status};
use tessera_node::resolve::resolve_names;
use tessera_node::{Node, ResolveOptions};

use crate::request::RestRequest;
use crate::response::RestResponse;

pub async fn health(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let wait_for = match request.param("wait_for_status") {
        None => None,
        Some(text) => Some(Status::parse(text).ok_or_else(|| {
            Error::illegal_argument(format!("unknown cluster health status [{text}]"))
        })?),
    };
    let level = request.param("level").unwrap_or("cluster");
    if !["cluster", "indices", "shards"].contains(&level) {
        return Err(Error::illegal_argument(format!(
            "level [{level}] is not supported"
        )));
    }
    let expression = request.path_params.get("index").map(String::as_str);
    let timeout = request
        .param_time("timeout")?
        .unwrap_or(Duration::from_secs(30));
    // an index that does not exist yet is awaited until the timeout, as OpenSearch does
    let waits = wait_for.is_some()
        || request.param("wait_for_no_relocating_shards").is_some()
        || request.param("wait_for_no_initializing_shards").is_some();
    let wait = if waits || expression.is_some() {
        timeout
    } else {
        Duration::ZERO
    };
    let nodes_wanted = match request.param("wait_for_nodes") {
        None => None,
        Some(text) => Some(parse_node_count(text)?),
    };
    let started = std::time::Instant::now();
    let mut nodes_timed_out = false;
    if let Some(wanted) = nodes_wanted {
        while !wanted(node.cluster_state().nodes.len()) {
            if started.elapsed() >= timeout {
                nodes_timed_out = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let wait = wait.saturating_sub(started.elapsed());
    let wanted = HealthWait {
        status: wait_for,
        no_relocating: request.param_bool("wait_for_no_relocating_shards", false)?,
        no_initializing: request.param_bool("wait_for_no_initializing_shards", false)?,
    };
    let (health, timed_out) = node.wait_for_health(expression, wanted, wait).await?;
    let timed_out = timed_out || nodes_timed_out;
    let body = health.to_json(&node.config.cluster_name, timed_out, level);
    Ok(RestResponse::json(if timed_out { 408 } else { 200 }, body))
}

/// `wait_for_nodes`: `N`, `>=N`, `<=N`, `>N`, `<N` (also `ge(N)`, `le(N)`, `gt(N)`, `lt(N)`).
fn parse_node_count(text: &str) -> Result<Box<dyn Fn(usize) -> bool + Send>> {
    let text = text.trim();
    let (op, number) = [">=", "<=", ">", "<", "ge(", "le(", "gt(", "lt("]
        .iter()
        .find_map(|op| {
            text.strip_prefix(op)
                .map(|rest| (*op, rest.trim_end_matches(')')))
        })
        .unwrap_or(("", text));
    let n: usize = number
        .trim()
        .parse()
        .map_err(|_| Error::illegal_argument(format!("cannot parse wait_for_nodes [{text}]")))?;
    Ok(match op {
        ">=" | "ge(" => Box::new(move |count| count >= n),
        "<=" | "le(" => Box::new(move |count| count <= n),
        ">" | "gt(" => Box::new(move |count| count > n),
        "<" | "lt(" => Box::new(move |count| count < n),
        _ => Box::new(move |count| count == n),
    })
}

pub async fn get_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let flat = request.param_bool("flat_settings", false)?;
    let defaults = request.param_bool("include_defaults", false)?;
    Ok(RestResponse::ok(
        node.cluster_settings.render(flat, defaults),
    ))
}

pub async fn put_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.required_json_body()?;
    let section = |name: &str| -> Result<Settings> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(Settings::new()),
            Some(value) => Settings::from_json(value),
        }
    };
    if let Some(object) = body.as_object() {
        if let Some(key) = object
            .keys()
            .find(|k| *k != "persistent" && *k != "transient")
        {
            return Err(Error::illegal_argument(format!(
                "request body contains unknown key [{key}]"
            )));
        }
    }
    let persistent = section("persistent")?;
    let transient = section("transient")?;
    if persistent.is_empty() && transient.is_empty() {
        return Err(Error::action_request_validation(&[
            "no settings to update".into()
        ]));
    }
    for settings in [&persistent, &transient] {
        if let Some(value) = settings.get_str("cluster.routing.allocation.enable") {
            if !["all", "primaries", "new_primaries", "none"]
                .contains(&value.to_ascii_lowercase().as_str())
            {
                return Err(Error::illegal_argument(format!(
                    "Illegal allocation.enable value [{}]",
                    value.to_uppercase()
                )));
            }
        }
    }
    let (persistent, transient) = match node.coordination() {
        Some(coordination) => {
            ClusterSettings::validate(&persistent, &transient)?;
            let coordination = coordination.clone();
            let applied = (persistent.clone(), transient.clone());
            node.pools
                .management
                .run(move || coordination.update_cluster_settings(&persistent, &transient))
                .await?;
            applied
        }
        None => node.cluster_settings.update(&persistent, &transient)?,
    };
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "persistent": render_update(&persistent),
        "transient": render_update(&transient),
    })))
}

/// The sections of `_cluster/state`, in OpenSearch's order.
const STATE_METRICS: [&str; 8] = [
    "version",
    "master_node",
    "cluster_manager_node",
    "blocks",
    "nodes",
    "metadata",
    "routing_table",
    "routing_nodes",
];

/// `GET /_cluster/state[/{metric}[/{index}]]`: the published cluster state in OpenSearch's
/// shape. Unknown metrics select nothing and an index expression names existing indices
/// only, as OpenSearch's lenient options do.
pub async fn state(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    let metrics: Vec<&str> = match request.path_params.get("metric") {
        None => STATE_METRICS.to_vec(),
        Some(list) => {
            let asked: Vec<&str> = list.split(',').map(str::trim).collect();
            if asked.contains(&"_all") {
                STATE_METRICS.to_vec()
            } else {
                STATE_METRICS
                    .into_iter()
                    .filter(|m| asked.contains(m))
                    .collect()
            }
        }
    };
    let names: Vec<String> = state.indices.keys().cloned().collect();
    let selected = match request.path_params.get("index") {
        None => names,
        Some(expression) => resolve_names(
            expression,
            &names,
            &ResolveOptions {
                ignore_unavailable: true,
                allow_no_indices: true,
                document_api: false,
            },
        )?,
    };
    let flat = request.param_bool("flat_settings", false)?;
    let indices: Vec<&IndexState> = selected
        .iter()
        .filter_map(|name| state.indices.get(name))
        .collect();
    let manager = state.cluster_manager.clone();
    let mut body = Map::new();
    body.insert("cluster_name".into(), json!(state.cluster_name));
    body.insert("cluster_uuid".into(), json!(state.cluster_uuid));
    for metric in metrics {
        match metric {
            "version" => {
                body.insert("version".into(), json!(state.version));
                body.insert("state_uuid".into(), json!(state.state_uuid));
            }
            "master_node" | "cluster_manager_node" => {
                body.insert(metric.into(), json!(manager));
            }
            "blocks" => {
                body.insert("blocks".into(), render_blocks(&indices));
            }
            "nodes" => {
                let nodes: Map<String, Value> = state
                    .nodes
                    .values()
                    .map(|n| {
                        let rendered = json!({
                            "name": n.name,
                            "ephemeral_id": n.ephemeral_id,
                            "transport_address": n.transport_address,
                            "attributes": {"shard_indexing_pressure_enabled": "true"},
                        });
                        (n.id.clone(), rendered)
                    })
                    .collect();
                body.insert("nodes".into(), Value::Object(nodes));
            }
            "metadata" => {
                body.insert("metadata".into(), render_metadata(&state, &indices, flat));
            }
            "routing_table" => {
                let tables: Map<String, Value> = indices
                    .iter()
                    .map(|index| {
                        let shards: Map<String, Value> = index
                            .routing
                            .shards
                            .iter()
                            .map(|table| {
                                let copies = table
                                    .copies
                                    .iter()
                                    .map(|copy| render_copy(&index.metadata.name, copy))
                                    .collect();
                                (table.shard.to_string(), Value::Array(copies))
                            })
                            .collect();
                        (index.metadata.name.clone(), json!({ "shards": shards }))
                    })
                    .collect();
                body.insert(
                    "routing_table".into(),
                    json!({ "indices": Value::Object(tables) }),
                );
            }
            "routing_nodes" => {
                let mut unassigned = Vec::new();
                let mut by_node: Map<String, Value> = state
                    .nodes
                    .keys()
                    .map(|id| (id.clone(), json!([])))
                    .collect();
                for index in &indices {
                    let name = &index.metadata.name;
                    for copy in index.routing.shards.iter().flat_map(|t| &t.copies) {
                        match copy.node_id.as_ref().and_then(|id| by_node.get_mut(id)) {
                            Some(Value::Array(list)) => list.push(render_copy(name, copy)),
                            _ => unassigned.push(render_copy(name, copy)),
                        }
                    }
                }
                body.insert(
                    "routing_nodes".into(),
                    json!({ "unassigned": unassigned, "nodes": by_node }),
                );
            }
            _ => {}
        }
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

fn iso_time(millis: i64) -> String {
    tessera_date::DateFormat::default_format().format_millis(millis, None)
}

/// One shard copy of the routing table.
fn render_copy(index: &str, copy: &ShardRouting) -> Value {
    let mut out = Map::new();
    out.insert("state".into(), json!(copy.state.as_str()));
    out.insert("primary".into(), json!(copy.primary));
    out.insert("node".into(), json!(copy.node_id));
    out.insert("relocating_node".into(), Value::Null);
    out.insert("shard".into(), json!(copy.shard));
    out.insert("index".into(), json!(index));
    if matches!(
        copy.state,
        ShardState::Initializing | ShardState::Unassigned
    ) {
        let source = if copy.primary {
            "EXISTING_STORE"
        } else {
            "PEER"
        };
        out.insert("recovery_source".into(), json!({ "type": source }));
    }
    if let Some(id) = &copy.allocation_id {
        out.insert("allocation_id".into(), json!({ "id": id }));
    }
    if let Some(info) = &copy.unassigned {
        let mut rendered = Map::new();
        rendered.insert("reason".into(), json!(info.reason));
        rendered.insert("at".into(), json!(iso_time(info.at_millis)));
        rendered.insert("delayed".into(), json!(false));
        if let Some(details) = &info.details {
            rendered.insert("details".into(), json!(details));
        }
        let status = if info.details.is_some() {
            "deciders_no"
        } else {
            "no_attempt"
        };
        rendered.insert("allocation_status".into(), json!(status));
        out.insert("unassigned_info".into(), Value::Object(rendered));
    }
    Value::Object(out)
}

/// The index blocks the block settings set (OpenSearch's ids and texts).
fn render_blocks(indices: &[&IndexState]) -> Value {
    let mut blocked = Map::new();
    for index in indices {
        let meta = &index.metadata;
        let mut blocks = Map::new();
        let mut block = |setting: &str, id: &str, description: &str, retryable: bool| {
            if meta.setting(setting) == "true" {
                let levels = if setting == "index.blocks.write" {
                    json!(["write"])
                } else {
                    json!(["write", "metadata_write"])
                };
                blocks.insert(
                    id.into(),
                    json!({"description": description, "retryable": retryable, "levels": levels}),
                );
            }
        };
        block(
            "index.blocks.read_only",
            "5",
            "index read-only (api)",
            false,
        );
        block("index.blocks.write", "8", "index write (api)", false);
        block(
            "index.blocks.read_only_allow_delete",
            "12",
            "disk usage exceeded flood-stage watermark, index has read-only-allow-delete block",
            true,
        );
        if !blocks.is_empty() {
            blocked.insert(meta.name.clone(), Value::Object(blocks));
        }
    }
    if blocked.is_empty() {
        json!({})
    } else {
        json!({ "indices": blocked })
    }
}

/// The `metadata` section: the cluster's and each selected index's.
fn render_metadata(state: &ClusterState, indices: &[&IndexState], flat: bool) -> Value {
    let voters: Vec<&String> = state.cluster_manager.iter().collect();
    let rendered: Map<String, Value> = indices
        .iter()
        .map(|index| {
            let meta = &index.metadata;
            let settings = meta.rendered_settings();
            let settings = if flat {
                settings.to_flat_json()
            } else {
                settings.to_nested_json()
            };
            let mapping = meta.mapping.to_json();
            let mappings = if mapping.as_object().is_some_and(|m| m.is_empty()) {
                json!({})
            } else {
                json!({ "_doc": mapping })
            };
            let shards = &index.routing.shards;
            let terms: Map<String, Value> = shards
                .iter()
                .map(|t| (t.shard.to_string(), json!(t.primary_term)))
                .collect();
            let in_sync: Map<String, Value> = shards
                .iter()
                .map(|t| (t.shard.to_string(), json!(t.in_sync)))
                .collect();
            let body = json!({
                "version": meta.mapping_version + meta.settings_version + meta.aliases_version - 2,
                "mapping_version": meta.mapping_version,
                "settings_version": meta.settings_version,
                "aliases_version": meta.aliases_version,
                "routing_num_shards": meta.routing_shards,
                "state": if meta.closed { "close" } else { "open" },
                "settings": settings,
                "mappings": mappings,
                "aliases": meta.aliases.keys().collect::<Vec<_>>(),
                "primary_terms": terms,
                "in_sync_allocations": in_sync,
                "rollover_info": {},
                "system": false,
            });
            (meta.name.clone(), body)
        })
        .collect();
    let mut metadata = json!({
        "cluster_uuid": state.cluster_uuid,
        "cluster_uuid_committed": true,
        "cluster_coordination": {
            "term": 1,
            "last_committed_config": voters,
            "last_accepted_config": voters,
            "voting_config_exclusions": [],
        },
        "templates": {},
        "indices": rendered,
        "index-graveyard": {"tombstones": []},
    });
    // the ingest pipelines, as OpenSearch's `ingest` custom metadata (present once there are any)
    if !state.pipelines.is_empty() {
        let pipelines: Vec<Value> = state
            .pipelines
            .iter()
            .filter_map(|(id, definition)| {
                let config: Value = serde_json::from_str(definition).ok()?;
                Some(json!({"id": id, "config": config}))
            })
            .collect();
        metadata["ingest"] = json!({ "pipeline": pipelines });
    }
    metadata
}
