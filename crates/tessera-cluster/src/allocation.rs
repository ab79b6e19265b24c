//! Allocation: which node holds which shard copy. Plain functions of the cluster state, run by
//! the elected cluster manager, whose answers it writes to the store.
//!
//! The rules (primaries only; replicas stay unassigned until replication exists):
//! - a new index's primaries go to the data nodes holding the fewest copies, one at a time, so
//!   an index spreads over the nodes and the nodes stay balanced by shard count;
//! - a copy on a node that left becomes unassigned (`NODE_LEFT`), remembering the node: its data
//!   is only there, so it goes back to that node when the node returns, and never elsewhere
//!   (an empty primary created on another node would lose every acknowledged write);
//! - a primary that never started anywhere (`INDEX_CREATED`) may go to any data node;
//! - a copy that failed on its node (`ALLOCATION_FAILED`) stays with that node, which retries
//!   opening it (a full disk heals; a corrupt shard waits for an operator).

use std::collections::BTreeMap;

use crate::state::{ClusterState, IndexRouting, ShardState, UnassignedInfo};

/// The role a node needs to hold shards.
pub const DATA_ROLE: &str = "data";

/// The data nodes' ids with how many copies each holds, nodes without copies included.
fn copies_per_node(state: &ClusterState) -> BTreeMap<String, usize> {
    let mut load: BTreeMap<String, usize> = state
        .nodes
        .values()
        .filter(|node| node.roles.iter().any(|role| role == DATA_ROLE))
        .map(|node| (node.id.clone(), 0))
        .collect();
    for index in state.indices.values() {
        for table in &index.routing.shards {
            for copy in &table.copies {
                if let Some(count) = copy.node_id.as_ref().and_then(|id| load.get_mut(id)) {
                    *count += 1;
                }
            }
        }
    }
    load
}

/// The least loaded data node (ties to the lowest id, so every run decides alike), counted as
/// holding one more copy.
fn take_least_loaded(load: &mut BTreeMap<String, usize>) -> Option<String> {
    let (id, count) = load.iter_mut().min_by_key(|(_, count)| **count)?;
    *count += 1;
    Some(id.clone())
}

/// The routing of a new index in `state`: its primaries spread over the data nodes (initializing
/// there), unassigned when there is none; `replicas` unassigned copies per shard.
pub fn new_index(
    state: &ClusterState,
    shards: u32,
    replicas: u32,
    now_millis: i64,
) -> IndexRouting {
    let mut routing = IndexRouting::single_node(shards, replicas, "", now_millis);
    let mut load = copies_per_node(state);
    for table in &mut routing.shards {
        let node = take_least_loaded(&mut load);
        let primary = table
            .copies
            .iter_mut()
            .find(|copy| copy.primary)
            .expect("a new shard has a primary");
        match node {
            Some(node) => primary.node_id = Some(node),
            None => {
                primary.state = ShardState::Unassigned;
                primary.node_id = None;
                primary.allocation_id = None;
                primary.unassigned = Some(UnassignedInfo {
                    reason: "INDEX_CREATED".to_string(),
                    at_millis: now_millis,
                    details: None,
                    last_node: None,
                });
            }
        }
    }
    routing
}

/// The routing changes `state` needs now (see the module documentation): the indices whose
/// routing changed, with their next routing.
pub fn reroute(state: &ClusterState, now_millis: i64) -> BTreeMap<String, IndexRouting> {
    let mut load = copies_per_node(state);
    let mut changed = BTreeMap::new();
    for (name, index) in &state.indices {
        let mut routing = index.routing.clone();
        let mut touched = false;
        for table in &mut routing.shards {
            let in_sync = table.in_sync.first().cloned();
            let Some(primary) = table.copies.iter_mut().find(|copy| copy.primary) else {
                continue;
            };
            match (&primary.node_id, primary.state) {
                (Some(node), _) if !state.nodes.contains_key(node) => {
                    primary.unassigned = Some(UnassignedInfo {
                        reason: "NODE_LEFT".to_string(),
                        at_millis: now_millis,
                        details: Some(format!("node_left [{node}]")),
                        last_node: Some(node.clone()),
                    });
                    primary.state = ShardState::Unassigned;
                    primary.node_id = None;
                    primary.allocation_id = None;
                    touched = true;
                }
                (None, ShardState::Unassigned) => {
                    let info = primary.unassigned.clone();
                    let reason = info.as_ref().map(|info| info.reason.as_str());
                    let last = info.as_ref().and_then(|info| info.last_node.clone());
                    let target = match (reason, last) {
                        (Some("NODE_LEFT"), Some(last)) if load.contains_key(&last) => {
                            *load.get_mut(&last).unwrap() += 1;
                            Some(last)
                        }
                        (Some("INDEX_CREATED"), None) => take_least_loaded(&mut load),
                        _ => None,
                    };
                    if let Some(node) = target {
                        primary.state = ShardState::Initializing;
                        primary.node_id = Some(node);
                        primary.allocation_id = in_sync.clone();
                        primary.unassigned = None;
                        touched = true;
                    }
                }
                _ => {}
            }
        }
        if touched {
            changed.insert(name.clone(), routing);
        }
    }
    changed
}

/// `node_id` reports its copy of the primary of `shard` started; returns whether the routing
/// changed (a report about a copy the routing gives another node changes nothing).
pub fn primary_started(routing: &mut IndexRouting, shard: u32, node_id: &str) -> bool {
    let Some(table) = routing.shards.get(shard as usize) else {
        return false;
    };
    let Some(primary) = table.primary() else {
        return false;
    };
    let here = primary.node_id.as_deref() == Some(node_id);
    let failed_here = primary.state == ShardState::Unassigned
        && primary.unassigned.as_ref().is_some_and(|info| {
            info.reason == "ALLOCATION_FAILED" && info.last_node.as_deref() == Some(node_id)
        });
    if (here && primary.state == ShardState::Initializing) || failed_here {
        routing.set_primary_state(shard, ShardState::Started, node_id, None)
    } else {
        false
    }
}

/// `node_id` reports its copy of the primary of `shard` failed (`details` says why).
pub fn primary_failed(
    routing: &mut IndexRouting,
    shard: u32,
    node_id: &str,
    details: &str,
    now_millis: i64,
) -> bool {
    let here = routing
        .shards
        .get(shard as usize)
        .and_then(|table| table.primary())
        .is_some_and(|primary| primary.node_id.as_deref() == Some(node_id));
    here && routing.set_primary_state(
        shard,
        ShardState::Unassigned,
        node_id,
        Some(("ALLOCATION_FAILED", details, now_millis)),
    )
}

/// Whether `node_id` should hold its copy of the primary of this shard open (or keep trying
/// to): the routing allocates it there, or it failed there and the node retries.
pub fn primary_belongs_to(routing: &IndexRouting, shard: u32, node_id: &str) -> bool {
    let Some(primary) = routing
        .shards
        .get(shard as usize)
        .and_then(|table| table.primary())
    else {
        return false;
    };
    match primary.state {
        ShardState::Initializing | ShardState::Started | ShardState::Relocating => {
            primary.node_id.as_deref() == Some(node_id)
        }
        ShardState::Unassigned => primary.unassigned.as_ref().is_some_and(|info| {
            info.reason == "ALLOCATION_FAILED" && info.last_node.as_deref() == Some(node_id)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::metadata;
    use crate::state::{DiscoveryNode, IndexState};

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.to_string(),
            name: id.to_string(),
            ephemeral_id: "e".to_string(),
            transport_address: String::new(),
            http_address: String::new(),
            roles: vec![DATA_ROLE.to_string()],
        }
    }

    fn cluster(nodes: &[&str]) -> ClusterState {
        let mut builder = ClusterState::empty("c", "u").builder();
        for id in nodes {
            builder = builder.put_node(node(id));
        }
        builder.build()
    }

    fn primaries(routing: &IndexRouting) -> Vec<(Option<&str>, ShardState)> {
        routing
            .shards
            .iter()
            .map(|t| {
                let p = t.primary().unwrap();
                (p.node_id.as_deref(), p.state)
            })
            .collect()
    }

    fn with_index(state: &ClusterState, name: &str, routing: IndexRouting) -> ClusterState {
        let shards = routing.shards.len() as u32;
        state
            .builder()
            .put_index(IndexState {
                metadata: metadata(name, shards),
                routing,
            })
            .build()
    }

    #[test]
    fn a_new_index_spreads_over_the_least_loaded_nodes() {
        let state = cluster(&["a", "b", "c"]);
        let routing = new_index(&state, 3, 1, 0);
        let init = ShardState::Initializing;
        assert_eq!(
            primaries(&routing),
            [(Some("a"), init), (Some("b"), init), (Some("c"), init)]
        );
        assert!(routing.shards.iter().all(|t| t.replicas().count() == 1));
        // the next index starts where the load is lowest
        let state = with_index(&state, "one", new_index(&state, 2, 0, 0));
        let routing = new_index(&state, 2, 0, 0);
        assert_eq!(primaries(&routing), [(Some("c"), init), (Some("a"), init)]);
        // no data node: unassigned, and the first node to come takes them
        let empty = cluster(&[]);
        let routing = new_index(&empty, 2, 0, 0);
        assert!(primaries(&routing)
            .iter()
            .all(|(n, s)| n.is_none() && *s == ShardState::Unassigned));
        let state = with_index(&cluster(&["z"]), "late", routing);
        let next = reroute(&state, 0);
        assert_eq!(
            primaries(&next["late"]),
            [(Some("z"), init), (Some("z"), init)]
        );
    }

    #[test]
    fn a_primary_whose_node_left_waits_for_that_node() {
        let state = cluster(&["a", "b"]);
        let mut routing = new_index(&state, 2, 0, 0);
        assert!(primary_started(&mut routing, 0, "a"));
        assert!(primary_started(&mut routing, 1, "b"));
        assert!(!primary_started(&mut routing, 1, "a"), "not a's copy");
        let state = with_index(&state, "logs", routing);
        let gone = state.builder().remove_node("b").build();
        let next = reroute(&gone, 5);
        let shard1 = next["logs"].shards[1].primary().unwrap();
        assert_eq!(shard1.state, ShardState::Unassigned);
        let info = shard1.unassigned.as_ref().unwrap();
        assert_eq!(
            (info.reason.as_str(), info.last_node.as_deref()),
            ("NODE_LEFT", Some("b"))
        );
        assert_eq!(
            next["logs"].shards[1].in_sync.len(),
            1,
            "its data stays in sync"
        );
        // a never goes empty in its place; b coming back gets it again
        let left = with_index(&gone, "logs", next["logs"].clone());
        assert!(reroute(&left, 6).is_empty());
        let back = left.builder().put_node(node("b")).build();
        let next = reroute(&back, 7);
        let shard1 = next["logs"].shards[1].primary().unwrap();
        assert_eq!(
            (shard1.node_id.as_deref(), shard1.state),
            (Some("b"), ShardState::Initializing)
        );
        assert_eq!(
            shard1.allocation_id.as_ref(),
            next["logs"].shards[1].in_sync.first()
        );
    }

    #[test]
    fn a_failed_primary_stays_with_its_node_until_it_recovers() {
        let state = cluster(&["a"]);
        let mut routing = new_index(&state, 1, 0, 0);
        assert!(primary_failed(&mut routing, 0, "a", "disk full", 1));
        assert!(!primary_failed(&mut routing, 0, "a", "disk full", 2));
        assert!(primary_belongs_to(&routing, 0, "a"));
        assert!(!primary_belongs_to(&routing, 0, "b"));
        let state = with_index(&state, "logs", routing.clone());
        assert!(reroute(&state, 3).is_empty());
        assert!(primary_started(&mut routing, 0, "a"));
        assert_eq!(primaries(&routing), [(Some("a"), ShardState::Started)]);
    }
}
