//! `_cluster/allocation/explain`: why a shard copy is where it is, or why it is unassigned. On a
//! single node a primary is unassigned only when it failed (it could not open, or its engine
//! failed): the explanation carries the failure, whether it is retried (a full disk heals, a
//! corrupt file does not) and how often it was. Replicas cannot be assigned on the node that
//! holds their primary.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::{Error, Result};
use tessera_index::index_service::{ShardFailure, ShardSlot};
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// Which copy the request asks about.
struct Target {
    index: String,
    shard: u32,
    primary: bool,
}

fn parse_target(body: &Value) -> Result<Option<Target>> {
    let Some(object) = body.as_object() else {
        return Err(Error::parsing("request body must be an object"));
    };
    for key in object.keys() {
        if !["index", "shard", "primary", "current_node"].contains(&key.as_str()) {
            return Err(Error::new(
                "x_content_parse_exception",
                400,
                format!("[cluster/allocation/explain] unknown field [{key}]"),
            ));
        }
    }
    let index = object.get("index").and_then(Value::as_str);
    let shard = object.get("shard").and_then(Value::as_u64);
    let primary = object.get("primary").and_then(Value::as_bool);
    match (index, shard, primary) {
        (None, None, None) => Ok(None),
        (Some(index), Some(shard), Some(primary)) => Ok(Some(Target {
            index: index.to_string(),
            shard: shard as u32,
            primary,
        })),
        // OpenSearch's validation: every missing field named
        _ => {
            let missing: Vec<String> = [
                ("index", index.is_none()),
                ("shard", shard.is_none()),
                ("primary", primary.is_none()),
            ]
            .iter()
            .filter(|(_, missing)| *missing)
            .map(|(name, _)| format!("{name} must be specified"))
            .collect();
            Err(Error::action_request_validation(&missing))
        }
    }
}

fn node_json(node: &Node) -> Value {
    json!({
        "id": node.node_id,
        "name": node.config.name,
        "transport_address": node.local_node().transport_address,
    })
}

fn iso_time(millis: i64) -> String {
    tessera_date::DateFormat::default_format().format_millis(millis, None)
}

/// The explanation of a failed primary.
fn failed_primary(node: &Node, index: &str, shard: u32, failure: &ShardFailure) -> Value {
    let details = format!(
        "failed shard on node [{}]: {}[{}]",
        node.node_id,
        failure.error.kind(),
        failure.error.reason()
    );
    let (can_allocate, explanation) = if failure.retryable() {
        (
            "yes",
            "the shard is opened again with a backoff until the cause of its failure is gone",
        )
    } else {
        (
            "no",
            "cannot allocate because the shard's files on this node are corrupted; restore the index from a snapshot or reindex it",
        )
    };
    json!({
        "index": index,
        "shard": shard,
        "primary": true,
        "current_state": "unassigned",
        "unassigned_info": {
            "reason": "ALLOCATION_FAILED",
            "at": iso_time(failure.at_millis),
            "failed_allocation_attempts": failure.attempts + 1,
            "details": details,
            "last_allocation_status": "no"
        },
        "can_allocate": can_allocate,
        "allocate_explanation": explanation,
        "node_allocation_decisions": [{
            "node_id": node.node_id,
            "node_name": node.config.name,
            "transport_address": node.local_node().transport_address,
            "node_decision": can_allocate,
            "deciders": [{
                "decider": "max_retry",
                "decision": if failure.retryable() { "YES" } else { "NO" },
                "explanation": details
            }]
        }]
    })
}

fn unassigned_replica(node: &Node, index: &str, shard: u32, created: i64) -> Value {
    json!({
        "index": index,
        "shard": shard,
        "primary": false,
        "current_state": "unassigned",
        "unassigned_info": {
            "reason": "INDEX_CREATED",
            "at": iso_time(created),
            "last_allocation_status": "no_attempt"
        },
        "can_allocate": "no",
        "allocate_explanation": "cannot allocate because allocation is not permitted to any of the nodes",
        "node_allocation_decisions": [{
            "node_id": node.node_id,
            "node_name": node.config.name,
            "transport_address": node.local_node().transport_address,
            "node_decision": "no",
            "weight_ranking": 1,
            "deciders": [{
                "decider": "same_shard",
                "decision": "NO",
                "explanation": format!(
                    "a copy of this shard is already allocated to this node [[{index}][{shard}], node[{}], [P], s[STARTED]]",
                    node.node_id
                )
            }]
        }]
    })
}

fn started_primary(node: &Node, index: &str, shard: u32) -> Value {
    let mut current = node_json(node);
    current["weight_ranking"] = json!(1);
    json!({
        "index": index,
        "shard": shard,
        "primary": true,
        "current_state": "started",
        "current_node": current,
        "can_remain_on_current_node": "yes",
        "can_rebalance_cluster": "no",
        "can_rebalance_to_other_node": "no",
        "rebalance_explanation": "cannot rebalance as no target node exists that can both allocate this shard and improve the cluster balance"
    })
}

/// A node as the explanations name it.
fn discovery_json(node: &tessera_cluster::DiscoveryNode) -> Value {
    json!({
        "id": node.id,
        "name": node.name,
        "transport_address": node.transport_address,
    })
}

/// The explanation of a primary of a cluster that this node does not hold, from the routing in
/// the cluster state: where it is, or why it is unassigned. `None` for a primary held here (its
/// slot explains it) or one the state does not know.
fn explain_routed_primary(node: &Node, index: &str, shard: u32) -> Option<Value> {
    let state = node.cluster_state();
    let routing = state.index(index)?;
    let copy = routing.routing.shards.get(shard as usize)?.primary()?;
    if copy.node_id.as_deref() == Some(node.node_id.as_str())
        && copy.state != tessera_cluster::ShardState::Unassigned
    {
        return None;
    }
    let holder = copy
        .node_id
        .as_ref()
        .and_then(|id| state.nodes.get(id))
        .filter(|_| copy.state != tessera_cluster::ShardState::Unassigned);
    if let Some(holder) = holder {
        let mut current = discovery_json(holder);
        if copy.state == tessera_cluster::ShardState::Started {
            current["weight_ranking"] = json!(1);
            return Some(json!({
                "index": index,
                "shard": shard,
                "primary": true,
                "current_state": "started",
                "current_node": current,
                "can_remain_on_current_node": "yes",
                "can_rebalance_cluster": "no",
                "can_rebalance_to_other_node": "no",
                "rebalance_explanation": "cannot rebalance as no target node exists that can both allocate this shard and improve the cluster balance"
            }));
        }
        return Some(json!({
            "index": index,
            "shard": shard,
            "primary": true,
            "current_state": "initializing",
            "current_node": current,
            "explanation": "the shard is opening on its node"
        }));
    }
    Some(unassigned_routed_primary(&state, index, shard, copy))
}

/// OpenSearch 2.19's explanation of an unassigned primary: one whose node left holds its only
/// data (`no_valid_shard_copy`, until that node comes back); one that failed waits for a retry.
fn unassigned_routed_primary(
    state: &tessera_cluster::ClusterState,
    index: &str,
    shard: u32,
    copy: &tessera_cluster::ShardRouting,
) -> Value {
    let info = copy.unassigned.as_ref();
    let reason = info.map_or("INDEX_CREATED", |i| i.reason.as_str());
    let at = info.map_or(0, |i| i.at_millis);
    let mut unassigned_info = json!({
        "reason": reason,
        "at": iso_time(at),
    });
    if let Some(details) = info.and_then(|i| i.details.as_ref()) {
        unassigned_info["details"] = json!(details);
    }
    let (status, can_allocate, explanation) = if reason == "ALLOCATION_FAILED" {
        (
            "no",
            "yes",
            "the shard is opened again on its node until the cause of its failure is gone",
        )
    } else {
        (
            "no_valid_shard_copy",
            "no_valid_shard_copy",
            "cannot allocate because a previous copy of the primary shard existed but can no longer be found on the nodes in the cluster",
        )
    };
    unassigned_info["last_allocation_status"] = json!(status);
    let decisions: Vec<Value> = state
        .nodes
        .values()
        .map(|n| {
            json!({
                "node_id": n.id,
                "node_name": n.name,
                "transport_address": n.transport_address,
                "node_attributes": {},
                "node_decision": "no",
                "store": {"found": false}
            })
        })
        .collect();
    json!({
        "index": index,
        "shard": shard,
        "primary": true,
        "current_state": "unassigned",
        "unassigned_info": unassigned_info,
        "can_allocate": can_allocate,
        "allocate_explanation": explanation,
        "node_allocation_decisions": decisions
    })
}

/// The first unassigned primary of a cluster's routing that this node does not hold.
fn first_routed_unassigned(node: &Node) -> Option<Value> {
    let state = node.cluster_state();
    for (name, index) in &state.indices {
        for table in &index.routing.shards {
            if let Some(copy) = table.primary() {
                if copy.state == tessera_cluster::ShardState::Unassigned
                    && copy.node_id.as_deref() != Some(node.node_id.as_str())
                {
                    return Some(unassigned_routed_primary(&state, name, table.shard, copy));
                }
            }
        }
    }
    None
}

/// The explanation of one copy, or `None` when the index has no such shard.
fn explain_copy(node: &Node, target: &Target) -> Result<Value> {
    if target.primary && node.coordination().is_some() {
        if let Some(answer) = explain_routed_primary(node, &target.index, target.shard) {
            return Ok(answer);
        }
    }
    let index = node
        .index(&target.index)
        .ok_or_else(|| Error::index_not_found(&target.index))?;
    let meta = index.metadata();
    let slots = index.shard_slots();
    let Some(slot) = slots.get(target.shard as usize) else {
        return Err(Error::illegal_argument(format!(
            "No shard was specified in the explain API request: shard [{}] of index [{}] does not exist",
            target.shard, target.index
        )));
    };
    if !target.primary {
        if meta.number_of_replicas() == 0 {
            return Err(Error::illegal_argument(format!(
                "unable to find a replica shard assigned or unassigned for [{}][{}]",
                target.index, target.shard
            )));
        }
        return Ok(unassigned_replica(
            node,
            &target.index,
            target.shard,
            meta.creation_date,
        ));
    }
    Ok(match slot {
        ShardSlot::Started(_) => started_primary(node, &target.index, target.shard),
        ShardSlot::Initializing => json!({
            "index": target.index,
            "shard": target.shard,
            "primary": true,
            "current_state": "initializing",
            "current_node": node_json(node),
            "explanation": "the shard is opening on this node (replaying its translog)"
        }),
        ShardSlot::Failed(failure) => failed_primary(node, &target.index, target.shard, failure),
        ShardSlot::Unallocated => {
            return Err(Error::illegal_argument(format!(
                "the primary of [{}][{}] is not on this node: ask the node that holds it",
                target.index, target.shard
            )))
        }
    })
}

/// The first unassigned copy, failed primaries first (what OpenSearch picks without a body).
fn first_unassigned(node: &Node) -> Option<Value> {
    let mut replica = None;
    for name in node.index_names() {
        let index = node.index(&name)?;
        let meta = index.metadata();
        for (shard, slot) in index.shard_slots().iter().enumerate() {
            if let ShardSlot::Failed(failure) = slot {
                return Some(failed_primary(node, &name, shard as u32, failure));
            }
            if replica.is_none() && meta.number_of_replicas() > 0 {
                replica = Some(unassigned_replica(
                    node,
                    &name,
                    shard as u32,
                    meta.creation_date,
                ));
            }
        }
    }
    replica
}

pub async fn explain(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let target = match request.json_body()? {
        Some(body) => parse_target(&body)?,
        None => None,
    };
    let include_yes = request.param_bool("include_yes_decisions", false)?;
    let answer = match target {
        Some(target) => explain_copy(&node, &target)?,
        // a cluster's unassigned primaries elsewhere first, then this node's copies
        None => node
            .coordination()
            .and_then(|_| first_routed_unassigned(&node))
            .or_else(|| first_unassigned(&node))
            .ok_or_else(|| {
            Error::illegal_argument(format!(
                "unable to find any unassigned shards to explain [ClusterAllocationExplainRequest[useAnyUnassignedShard=true,includeYesDecisions?={include_yes}]"
            ))
        })?,
    };
    Ok(RestResponse::ok(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_names_index_shard_and_primary_or_nothing() {
        assert!(parse_target(&json!({})).unwrap().is_none());
        let target = parse_target(&json!({"index": "a", "shard": 2, "primary": false}))
            .unwrap()
            .unwrap();
        assert_eq!(
            (target.index.as_str(), target.shard, target.primary),
            ("a", 2, false)
        );
        // OpenSearch 2.19's answers, checked on the reference node
        let e = parse_target(&json!({"index": "a"})).err().unwrap();
        assert_eq!(e.kind(), "action_request_validation_exception");
        assert_eq!(
            e.reason(),
            "Validation Failed: 1: shard must be specified;2: primary must be specified;"
        );
        let e = parse_target(&json!({"index": "a", "bogus": 1}))
            .err()
            .unwrap();
        assert_eq!(e.kind(), "x_content_parse_exception");
        assert_eq!(
            e.reason(),
            "[cluster/allocation/explain] unknown field [bogus]"
        );
    }
}
