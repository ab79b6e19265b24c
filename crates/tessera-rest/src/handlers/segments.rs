//! `GET [/{index}]/_segments`: every started copy's segments, from each node's
//! `COPY_SEGMENTS` report, in OpenSearch's shape (a tantivy segment is both committed and
//! searched once a refresh publishes it; Tessera keeps no separate commit-only segments).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::Result;
use tessera_node::Node;

use super::reports;
use crate::request::RestRequest;
use crate::response::RestResponse;

pub async fn segments(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (names, answers) = reports::ask(&node, &request, reports::COPY_SEGMENTS).await?;
    let name_of: BTreeMap<&str, &str> = names
        .iter()
        .map(|(uuid, name)| (uuid.as_str(), name.as_str()))
        .collect();
    let indices = node.resolve(
        request
            .path_params
            .get("index")
            .map(String::as_str)
            .unwrap_or("_all"),
        &super::resolve_options(&request, true)?,
    )?;
    let total: u64 = indices
        .iter()
        .map(|index| {
            let meta = index.metadata();
            (meta.number_of_shards * (1 + meta.number_of_replicas())) as u64
        })
        .sum();
    // index name -> shard -> copies
    let mut out: BTreeMap<String, BTreeMap<u64, Vec<Value>>> = BTreeMap::new();
    for (_, name) in &names {
        out.entry(name.clone()).or_default();
    }
    let mut successful = 0u64;
    for (target, answer) in answers {
        for copy in answer.as_array().into_iter().flatten() {
            let Some(name) = copy["index_uuid"].as_str().and_then(|u| name_of.get(u)) else {
                continue;
            };
            successful += 1;
            let segments: Map<String, Value> = copy["segments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    (
                        s["name"].as_str().unwrap_or_default().to_string(),
                        json!({
                            "generation": s["generation"],
                            "num_docs": s["docs"],
                            "deleted_docs": s["deleted"],
                            "size_in_bytes": s["size"],
                            "memory_in_bytes": 0,
                            "committed": true,
                            "search": true,
                            "version": "tantivy-0.27",
                            "compound": false,
                            "attributes": {},
                        }),
                    )
                })
                .collect();
            let count = segments.len();
            out.entry(name.to_string())
                .or_default()
                .entry(copy["shard"].as_u64().unwrap_or(0))
                .or_default()
                .push(json!({
                    "routing": {"state": "STARTED", "primary": copy["primary"], "node": target.id},
                    "num_committed_segments": count,
                    "num_search_segments": count,
                    "segments": segments,
                }));
        }
    }
    let indices: Map<String, Value> = out
        .into_iter()
        .map(|(name, shards)| {
            let shards: Map<String, Value> = shards
                .into_iter()
                .map(|(shard, copies)| (shard.to_string(), Value::Array(copies)))
                .collect();
            (name, json!({ "shards": shards }))
        })
        .collect();
    Ok(RestResponse::ok(json!({
        "_shards": {"total": total, "successful": successful, "failed": 0},
        "indices": indices,
    })))
}
