//! `_stats`: index statistics (`/_stats`, `/{index}/_stats`, optionally filtered by metric), the
//! same sections `_nodes/stats` reports under `indices`, per index and for all of them.
//!
//! Every node sends the sections of the copies it holds (`reports::INDEX_STATS`), of its
//! primaries and of all its copies, summed here into `primaries` and `total`; with
//! `level=shards` also each copy's own, listed under `indices.<name>.shards`, and with
//! `level=cluster` only the sums over all indices are shown.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_index::IndexService;
use tessera_node::Node;

use super::nodes::indices_stats;
use super::reports::{self, add_json};
use super::resolve_options;
use crate::request::RestRequest;
use crate::response::RestResponse;

/// Metric names `_stats` accepts, and the section each selects.
const METRICS: &[(&str, &str)] = &[
    ("docs", "docs"),
    ("store", "store"),
    ("indexing", "indexing"),
    ("search", "search"),
    ("refresh", "refresh"),
    ("merge", "merges"),
    ("segments", "segments"),
    ("get", "get"),
    ("flush", "flush"),
    ("warmer", "warmer"),
    ("query_cache", "query_cache"),
    ("fielddata", "fielddata"),
    ("completion", "completion"),
    ("translog", "translog"),
    ("request_cache", "request_cache"),
    ("recovery", "recovery"),
];

/// The sections selected by the `{metric}` path parameter (all when absent or `_all`).
fn sections(request: &RestRequest) -> Result<Option<Vec<&'static str>>> {
    let Some(metric) = request.path_params.get("metric") else {
        return Ok(None);
    };
    let mut wanted = Vec::new();
    for name in metric.split(',').map(str::trim) {
        if name == "_all" {
            return Ok(None);
        }
        match METRICS.iter().find(|(m, _)| *m == name) {
            Some((_, section)) => wanted.push(*section),
            None => {
                return Err(Error::illegal_argument(format!(
                    "request [{}] contains unrecognized metric: [{name}]",
                    request.path
                )))
            }
        }
    }
    Ok(Some(wanted))
}

fn filtered(stats: Value, sections: &Option<Vec<&'static str>>) -> Value {
    match (stats, sections) {
        (Value::Object(all), Some(wanted)) => Value::Object(
            all.into_iter()
                .filter(|(k, _)| wanted.contains(&k.as_str()))
                .collect::<Map<String, Value>>(),
        ),
        (stats, _) => stats,
    }
}

/// How much `_stats` details (`level`): the sums for all indices only, per index too
/// (the default), or per shard copy as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Cluster,
    Indices,
    Shards,
}

impl Level {
    fn parse(request: &RestRequest) -> Result<Level> {
        match request.param("level") {
            None | Some("indices") => Ok(Level::Indices),
            Some("cluster") => Ok(Level::Cluster),
            Some("shards") => Ok(Level::Shards),
            Some(other) => Err(Error::illegal_argument(format!(
                "level parameter must be one of [cluster] or [indices] or [shards] but was [{other}]"
            ))),
        }
    }
}

/// `GET /_stats`, `/_stats/{metric}`, `/{index}/_stats`, `/{index}/_stats/{metric}`.
pub async fn stats(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let sections = sections(&request)?;
    let level = Level::parse(&request)?;
    let expression = request
        .path_params
        .get("index")
        .cloned()
        .unwrap_or_else(|| "_all".to_string());
    let indices = node.resolve(&expression, &resolve_options(&request, true)?)?;
    let uuids: Vec<String> = indices.iter().map(|i| i.metadata().uuid.clone()).collect();
    // every node's sections of the copies it holds, summed by index
    let params = json!({ "index_uuids": uuids, "shards": level == Level::Shards });
    let answers = node.fan_out(reports::INDEX_STATS, params).await;
    let mut by_uuid: Map<String, Value> = Map::new();
    let mut copies = CopiesByIndex::new();
    let mut answered = Vec::new();
    for (target, answer) in answers {
        match answer {
            Ok(Value::Object(stats)) => {
                answered.push(target.id.clone());
                for (uuid, mut stats) in stats {
                    if let Some(Value::Object(shards)) =
                        stats.as_object_mut().and_then(|s| s.remove("shards"))
                    {
                        let of_index = copies.entry(uuid.clone()).or_default();
                        for (shard, list) in shards {
                            let id = shard.parse::<u32>().unwrap_or(u32::MAX);
                            let list = list.as_array().cloned().unwrap_or_default();
                            of_index.entry(id).or_default().extend(list);
                        }
                    }
                    match by_uuid.get_mut(&uuid) {
                        Some(sum) => add_json(sum, &stats),
                        None => {
                            by_uuid.insert(uuid, stats);
                        }
                    }
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!(
                "node [{}] did not send its index statistics: {e}",
                target.id
            ),
        }
    }
    let shards = shard_totals(&node, &indices, &answered);
    let mut body = render(&indices, &by_uuid, &sections, shards);
    match level {
        Level::Cluster => {
            if let Some(body) = body.as_object_mut() {
                body.remove("indices");
            }
        }
        Level::Indices => {}
        Level::Shards => add_copies(&mut body, &indices, copies, &sections),
    }
    Ok(RestResponse::ok(body))
}

/// Each index's copies' sections, by index uuid and shard id (in shard order).
type CopiesByIndex = BTreeMap<String, BTreeMap<u32, Vec<Value>>>;

/// `level=shards`: `indices.<name>.shards.<id>` lists the sections of every copy of the shard
/// (its `routing` first), as OpenSearch shows them.
fn add_copies(
    body: &mut Value,
    indices: &[Arc<IndexService>],
    mut copies: CopiesByIndex,
    sections: &Option<Vec<&'static str>>,
) {
    for index in indices {
        let meta = index.metadata();
        let mut shards = Map::new();
        for (id, list) in copies.remove(&meta.uuid).unwrap_or_default() {
            let list: Vec<Value> = list
                .into_iter()
                .map(|copy| {
                    let routing = copy["routing"].clone();
                    let mut out = Map::new();
                    out.insert("routing".to_string(), routing);
                    if let Value::Object(kept) = filtered(copy, sections) {
                        out.extend(kept.into_iter().filter(|(k, _)| k != "routing"));
                    }
                    Value::Object(out)
                })
                .collect();
            shards.insert(id.to_string(), Value::Array(list));
        }
        body["indices"][&meta.name]["shards"] = Value::Object(shards);
    }
}

/// `_shards` as OpenSearch counts it: every copy in the routing (replicas included), and the
/// started ones whose node answered.
fn shard_totals(node: &Node, indices: &[Arc<IndexService>], answered: &[String]) -> (u64, u64) {
    let state = node.cluster_state();
    let (mut total, mut successful) = (0, 0);
    for index in indices {
        let meta = index.metadata();
        let Some(routed) = state
            .index(&meta.name)
            .filter(|i| i.metadata.uuid == meta.uuid)
        else {
            continue;
        };
        for copy in routed.routing.shards.iter().flat_map(|t| &t.copies) {
            total += 1;
            if copy.state == tessera_cluster::ShardState::Started
                && copy
                    .node_id
                    .as_ref()
                    .is_some_and(|id| answered.contains(id))
            {
                successful += 1;
            }
        }
    }
    (total, successful)
}

fn render(
    indices: &[Arc<IndexService>],
    by_uuid: &Map<String, Value>,
    sections: &Option<Vec<&'static str>>,
    (total, successful): (u64, u64),
) -> Value {
    // an index no node holds a copy of counts nothing
    let empty = indices_stats(&[]);
    let (mut all_primaries, mut all_total) = (empty.clone(), empty.clone());
    let mut per_index = Map::new();
    for index in indices {
        let meta = index.metadata();
        let held = by_uuid.get(&meta.uuid);
        let primaries = held.map_or(&empty, |held| &held["primaries"]);
        let copies = held.map_or(&empty, |held| &held["total"]);
        add_json(&mut all_primaries, primaries);
        add_json(&mut all_total, copies);
        per_index.insert(
            meta.name.clone(),
            json!({
                "uuid": meta.uuid,
                "primaries": filtered(primaries.clone(), sections),
                "total": filtered(copies.clone(), sections),
            }),
        );
    }
    json!({
        "_shards": {"total": total, "successful": successful, "failed": 0},
        "_all": {
            "primaries": filtered(all_primaries, sections),
            "total": filtered(all_total, sections),
        },
        "indices": per_index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_filters_select_sections() {
        let stats = json!({"docs": {"count": 1}, "store": {}, "merges": {}, "segments": {}});
        let out = filtered(stats.clone(), &Some(vec!["docs", "merges"]));
        assert_eq!(out, json!({"docs": {"count": 1}, "merges": {}}));
        assert_eq!(filtered(stats.clone(), &None), stats);
    }

    #[test]
    fn level_is_cluster_indices_or_shards() {
        let request = |query: &str| RestRequest {
            method: axum::http::Method::GET,
            path: "/_stats".into(),
            path_params: Default::default(),
            params: crate::request::parse_query_string(Some(query)).unwrap(),
            body: Default::default(),
        };
        assert_eq!(Level::parse(&request("")).unwrap(), Level::Indices);
        assert_eq!(
            Level::parse(&request("level=cluster")).unwrap(),
            Level::Cluster
        );
        assert_eq!(
            Level::parse(&request("level=shards")).unwrap(),
            Level::Shards
        );
        assert_eq!(
            Level::parse(&request("level=node")).unwrap_err().reason(),
            "level parameter must be one of [cluster] or [indices] or [shards] but was [node]"
        );
    }
}
