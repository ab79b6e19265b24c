//! Data stream APIs (`PUT|GET|DELETE /_data_stream[/{name}]`, `GET /_data_stream[/{name}]/_stats`)
//! and rollover (`POST /{target}/_rollover[/{new_index}]`), over `tessera_node::data_streams`
//! and `tessera_node::rollover`.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::Result;
use tessera_index::IndexService;
use tessera_node::data_streams::{self, DataStream};
use tessera_node::rollover::RolloverRequest;
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

fn acknowledged() -> RestResponse {
    RestResponse::ok(json!({"acknowledged": true}))
}

/// `PUT /_data_stream/{name}`.
pub async fn create(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let name = request.path_param("name").to_string();
    let creating = node.clone();
    node.pools
        .management
        .run(move || creating.create_data_stream(&name))
        .await?;
    Ok(acknowledged())
}

/// `DELETE /_data_stream/{name}`.
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let names = request.path_param("name").to_string();
    let deleting = node.clone();
    node.pools
        .management
        .run(move || deleting.delete_data_streams(&names))
        .await?;
    Ok(acknowledged())
}

fn selected(node: &Node, request: &RestRequest) -> Result<Vec<DataStream>> {
    let names = request.path_params.get("name").map(String::as_str);
    data_streams::select(&node.cluster_state(), names)
}

/// The backing indices of `stream` this node knows.
fn backing_indices(node: &Node, stream: &DataStream) -> Vec<Arc<IndexService>> {
    stream
        .indices
        .iter()
        .filter_map(|b| node.index(&b.index_name))
        .collect()
}

/// `GET /_data_stream[/{name}]`, each stream with the health of its backing indices.
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let streams = selected(&node, &request)?;
    let rendered: Vec<Value> = streams
        .iter()
        .map(|stream| {
            let indices = backing_indices(&node, stream);
            let status = node.health(Some(&indices)).status.as_str().to_uppercase();
            stream.to_json(&status)
        })
        .collect();
    Ok(RestResponse::ok(json!({ "data_streams": rendered })))
}

/// `GET /_data_stream[/{name}]/_stats`: backing indices, store sizes and the newest
/// timestamp of each stream.
pub async fn stats(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let streams = selected(&node, &request)?;
    let mut rendered = Vec::new();
    let (mut shards, mut total_bytes, mut backing) = (0u64, 0u64, 0u64);
    for stream in &streams {
        let indices = backing_indices(&node, stream);
        let counts = node.shard_counts(indices).await?;
        let bytes: u64 = counts.values().map(|c| c.store_bytes).sum();
        shards += counts.len() as u64;
        total_bytes += bytes;
        backing += stream.indices.len() as u64;
        rendered.push(json!({
            "data_stream": stream.name,
            "backing_indices": stream.indices.len(),
            "store_size_bytes": bytes,
            "maximum_timestamp": maximum_timestamp(&node, &stream.name).await?,
        }));
    }
    Ok(RestResponse::ok(json!({
        "_shards": {"total": shards, "successful": shards, "failed": 0},
        "data_stream_count": streams.len(),
        "backing_indices": backing,
        "total_store_size_bytes": total_bytes,
        "data_streams": rendered,
    })))
}

/// The newest `@timestamp` of a stream (0 when it has no documents), by a `max` aggregation.
async fn maximum_timestamp(node: &Arc<Node>, stream: &str) -> Result<i64> {
    let service = node.search_service();
    let body = json!({
        "size": 0,
        "track_total_hits": false,
        "aggs": {"newest": {"max": {"field": data_streams::TIMESTAMP_FIELD}}}
    })
    .to_string();
    let source = service.source(Some(body), Default::default());
    let search = service.prepare(source, None, |e| e)?;
    let target = tessera_node::SearchTarget {
        expression: stream.to_string(),
        options: tessera_node::ResolveOptions::default(),
        routing: None,
        preference: tessera_node::preference::Preference::none(),
    };
    let response = service.search(&target, search, Default::default()).await?;
    let rendered = serde_json::to_value(&response).unwrap_or_default();
    Ok(rendered["aggregations"]["newest"]["value"]
        .as_f64()
        .map(|v| v as i64)
        .unwrap_or(0))
}

/// `POST /{target}/_rollover[/{new_index}]`.
pub async fn rollover(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.json_body()?;
    let parsed = RolloverRequest::parse(body.as_ref())?;
    let answer = node
        .rollover(
            request.path_param("index"),
            request.path_params.get("new_index").map(String::as_str),
            parsed,
            request.param_bool("dry_run", false)?,
        )
        .await?;
    Ok(RestResponse::ok(answer))
}
