//! Allocation: which node holds which shard copy. Plain functions of the cluster state, run by
//! the elected cluster manager, whose answers it writes to the store.
//!
//! The rules:
//! - a new index's primaries go to the data nodes holding the fewest copies, one at a time, so
//!   an index spreads over the nodes and the nodes stay balanced by shard count;
//! - a copy on a node that left becomes unassigned (`NODE_LEFT`), remembering the node: its data
//!   is only there, so it goes back to that node when the node returns, and never elsewhere
//!   (an empty primary created on another node would lose every acknowledged write);
//! - a primary that never started anywhere (`INDEX_CREATED`) may go to any data node;
//! - a primary that failed on its node (`ALLOCATION_FAILED`) stays with that node, which retries
//!   opening it (a full disk heals; a corrupt shard waits for an operator);
//! - replicas are allocated once their primary has started (they recover from it), each on the
//!   least loaded data node holding no other copy of the shard (the node that held it last
//!   first: its files need less copying); more replicas than such nodes stay unassigned; a
//!   replica whose node left, or that failed, is unassigned and allocated again (a failed one
//!   elsewhere when it can be).

use std::collections::BTreeMap;

use crate::state::{
    ClusterState, IndexRouting, ShardRouting, ShardState, ShardTable, UnassignedInfo,
};

/// The role a node needs to hold shards.
pub const DATA_ROLE: &str = "data";

/// `cluster.routing.allocation.enable`: which copies may be allocated (copies already on a
/// node stay there whatever it says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllocationEnable {
    #[default]
    All,
    /// Primaries only, no replica.
    Primaries,
    /// Only the primaries of new indices.
    NewPrimaries,
    /// Nothing.
    None,
}

impl AllocationEnable {
    /// The setting's value (`all` for anything else: the setting is validated where it is set).
    pub fn parse(value: &str) -> AllocationEnable {
        match value {
            "primaries" => AllocationEnable::Primaries,
            "new_primaries" => AllocationEnable::NewPrimaries,
            "none" => AllocationEnable::None,
            _ => AllocationEnable::All,
        }
    }

    fn primaries(self, new_index: bool) -> bool {
        match self {
            AllocationEnable::All | AllocationEnable::Primaries => true,
            AllocationEnable::NewPrimaries => new_index,
            AllocationEnable::None => false,
        }
    }
}

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
    new_index_with(state, shards, replicas, now_millis, AllocationEnable::All)
}

/// [`new_index`] under `cluster.routing.allocation.enable` (`none`: the primaries wait).
pub fn new_index_with(
    state: &ClusterState,
    shards: u32,
    replicas: u32,
    now_millis: i64,
    enable: AllocationEnable,
) -> IndexRouting {
    let mut routing = IndexRouting::single_node(shards, replicas, "", now_millis);
    let mut load = copies_per_node(state);
    for table in &mut routing.shards {
        let node = enable
            .primaries(true)
            .then(|| take_least_loaded(&mut load))
            .flatten();
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
    reroute_with(state, now_millis, AllocationEnable::All)
}

/// [`reroute`] under `cluster.routing.allocation.enable`.
pub fn reroute_with(
    state: &ClusterState,
    now_millis: i64,
    enable: AllocationEnable,
) -> BTreeMap<String, IndexRouting> {
    let mut load = copies_per_node(state);
    let mut changed = BTreeMap::new();
    for (name, index) in &state.indices {
        let mut routing = index.routing.clone();
        let mut touched = false;
        for table in &mut routing.shards {
            if promote(state, table, now_millis) {
                touched = true;
                continue;
            }
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
                        (Some("NODE_LEFT"), Some(last))
                            if load.contains_key(&last) && enable.primaries(false) =>
                        {
                            *load.get_mut(&last).unwrap() += 1;
                            Some(last)
                        }
                        (Some("INDEX_CREATED"), None) if enable.primaries(true) => {
                            take_least_loaded(&mut load)
                        }
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
        touched |= reroute_replicas(state, &mut routing, &mut load, now_millis, enable);
        if touched {
            changed.insert(name.clone(), routing);
        }
    }
    if changed.is_empty() && enable == AllocationEnable::All {
        if let Some((name, routing)) = rebalance(state) {
            changed.insert(name, routing);
        }
    }
    changed
}

/// Moves one replica from the data node holding the most copies to the one holding the fewest
/// when they differ by two or more (a node joined, or came back after its copies were
/// recovered elsewhere): a new replica of the shard starts initializing on the emptier node
/// while the old one keeps serving as `RELOCATING`, and goes once the new one has started
/// ([`replica_started`]). Only in a settled cluster (nothing initializing or relocating), one
/// move at a time.
fn rebalance(state: &ClusterState) -> Option<(String, IndexRouting)> {
    let settled = state.indices.values().all(|index| {
        index.routing.shards.iter().all(|table| {
            table.copies.iter().all(|copy| {
                !matches!(
                    copy.state,
                    ShardState::Initializing | ShardState::Relocating
                )
            })
        })
    });
    if !settled {
        return None;
    }
    let load = copies_per_node(state);
    let (emptiest, low) = load.iter().min_by_key(|(_, count)| **count)?;
    let (fullest, high) = load.iter().max_by_key(|(_, count)| **count)?;
    if high.saturating_sub(*low) < 2 {
        return None;
    }
    for (name, index) in &state.indices {
        for (shard, table) in index.routing.shards.iter().enumerate() {
            let on_emptiest = table
                .copies
                .iter()
                .any(|copy| copy.node_id.as_deref() == Some(emptiest.as_str()));
            let source = table.copies.iter().position(|copy| {
                !copy.primary
                    && copy.state == ShardState::Started
                    && copy.node_id.as_deref() == Some(fullest.as_str())
            });
            let (Some(source), false) = (source, on_emptiest) else {
                continue;
            };
            let mut routing = index.routing.clone();
            let table = &mut routing.shards[shard];
            table.copies[source].state = ShardState::Relocating;
            table.copies.push(ShardRouting {
                shard: table.shard,
                primary: false,
                state: ShardState::Initializing,
                node_id: Some(emptiest.clone()),
                allocation_id: Some(tessera_common::ids::random_uuid()),
                unassigned: None,
            });
            return Some((name.clone(), routing));
        }
    }
    None
}

/// Fails over: when the primary of `table` is gone (its node left, or it is unassigned) and a
/// started replica on a live node is in sync (it holds every acknowledged write: segments and
/// translog), that replica becomes the primary under the next primary term, initializing while
/// its node opens it as one, and the only copy in sync. The old primary's place becomes an
/// unassigned replica remembering its node; the other replicas recover again from the new
/// primary (they may hold operations of the old one the new one never got). Returns whether it
/// promoted.
fn promote(state: &ClusterState, table: &mut ShardTable, now_millis: i64) -> bool {
    let live = |copy: &ShardRouting| {
        copy.node_id
            .as_ref()
            .is_some_and(|node| state.nodes.contains_key(node))
    };
    let Some(primary) = table.primary() else {
        return false;
    };
    if live(primary) {
        return false;
    }
    let Some(chosen) = table.copies.iter().position(|copy| {
        !copy.primary
            && matches!(copy.state, ShardState::Started | ShardState::Relocating)
            && live(copy)
            && copy
                .allocation_id
                .as_ref()
                .is_some_and(|id| table.in_sync.contains(id))
    }) else {
        return false;
    };
    let shard = table.shard;
    let mut promoted = table.copies[chosen].clone();
    promoted.primary = true;
    promoted.state = ShardState::Initializing;
    let mut copies = vec![promoted.clone()];
    for (i, copy) in table.copies.iter().enumerate() {
        if i == chosen {
            continue;
        }
        let last = copy
            .node_id
            .clone()
            .or_else(|| copy.unassigned.as_ref().and_then(|u| u.last_node.clone()));
        let reason = if copy.primary {
            "NODE_LEFT"
        } else {
            "PRIMARY_FAILED"
        };
        copies.push(unassigned_replica_after(shard, reason, last, now_millis));
    }
    table.copies = copies;
    table.primary_term += 1;
    table.in_sync = promoted.allocation_id.into_iter().collect();
    true
}

/// The replicas of `routing` whose node left become unassigned (out of the in-sync set: they
/// miss what is written meanwhile); unassigned replicas of started primaries are allocated.
/// Returns whether anything changed.
fn reroute_replicas(
    state: &ClusterState,
    routing: &mut IndexRouting,
    load: &mut BTreeMap<String, usize>,
    now_millis: i64,
    enable: AllocationEnable,
) -> bool {
    let mut touched = false;
    // the replica of shard i prefers the node of the primary of shard i + 1 among the least
    // loaded: primaries spread one per node make replicas spread one per node too (choosing
    // greedily among ties left the last replica two nodes that already held two copies)
    let primary_nodes: Vec<Option<String>> = routing
        .shards
        .iter()
        .map(|table| table.primary().and_then(|p| p.node_id.clone()))
        .collect();
    let shards = routing.shards.len();
    for (position, table) in routing.shards.iter_mut().enumerate() {
        let preferred = primary_nodes[(position + 1) % shards].as_ref();
        // a relocation's source whose node left is not replaced: its target is on its way
        let before = table.copies.len();
        table.copies.retain(|copy| {
            copy.primary
                || copy.state != ShardState::Relocating
                || copy
                    .node_id
                    .as_ref()
                    .is_some_and(|node| state.nodes.contains_key(node))
        });
        touched |= table.copies.len() != before;
        for copy in table.copies.iter_mut().filter(|copy| !copy.primary) {
            if let Some(node) = copy
                .node_id
                .clone()
                .filter(|n| !state.nodes.contains_key(n))
            {
                if let Some(id) = &copy.allocation_id {
                    table.in_sync.retain(|in_sync| in_sync != id);
                }
                *copy = unassigned_replica(copy.shard, "NODE_LEFT", &node, now_millis);
                touched = true;
            }
        }
        if enable != AllocationEnable::All
            || table.primary().map(|p| p.state) != Some(ShardState::Started)
        {
            continue;
        }
        let mut holders: Vec<String> = table
            .copies
            .iter()
            .filter_map(|copy| copy.node_id.clone())
            .collect();
        for copy in table.copies.iter_mut().filter(|copy| !copy.primary) {
            if copy.state != ShardState::Unassigned {
                continue;
            }
            let Some(node) = replica_target(copy.unassigned.as_ref(), &holders, load, preferred)
            else {
                continue;
            };
            *load.get_mut(&node).expect("a target is a data node") += 1;
            holders.push(node.clone());
            copy.state = ShardState::Initializing;
            copy.node_id = Some(node);
            copy.allocation_id = Some(tessera_common::ids::random_uuid());
            copy.unassigned = None;
            touched = true;
        }
    }
    touched
}

/// Where an unassigned replica goes: the node that held it last when it left (its files are
/// there), else the least loaded data node holding no copy of the shard (`preferred` among
/// equals), avoiding the node it failed on while another will do.
fn replica_target(
    info: Option<&UnassignedInfo>,
    holders: &[String],
    load: &BTreeMap<String, usize>,
    preferred: Option<&String>,
) -> Option<String> {
    let eligible = |node: &String| !holders.contains(node);
    let last = info.and_then(|info| info.last_node.as_ref());
    let failed_on = info
        .filter(|info| info.reason == "ALLOCATION_FAILED")
        .and_then(|info| info.last_node.as_ref());
    if let Some(last) = last.filter(|n| failed_on.is_none() && load.contains_key(*n)) {
        if eligible(last) {
            return Some(last.clone());
        }
    }
    let least = |avoid: Option<&String>| {
        load.iter()
            .filter(|(node, _)| eligible(node) && Some(*node) != avoid)
            .min_by_key(|(node, count)| (**count, Some(*node) != preferred))
            .map(|(node, _)| node.clone())
    };
    least(failed_on).or_else(|| least(None))
}

/// [`unassigned_replica`] of a copy that may have had no node.
fn unassigned_replica_after(
    shard: u32,
    reason: &str,
    last_node: Option<String>,
    now_millis: i64,
) -> ShardRouting {
    match last_node {
        Some(node) => unassigned_replica(shard, reason, &node, now_millis),
        None => ShardRouting {
            shard,
            primary: false,
            state: ShardState::Unassigned,
            node_id: None,
            allocation_id: None,
            unassigned: Some(UnassignedInfo {
                reason: reason.to_string(),
                at_millis: now_millis,
                details: None,
                last_node: None,
            }),
        },
    }
}

fn unassigned_replica(shard: u32, reason: &str, last_node: &str, now_millis: i64) -> ShardRouting {
    ShardRouting {
        shard,
        primary: false,
        state: ShardState::Unassigned,
        node_id: None,
        allocation_id: None,
        unassigned: Some(UnassignedInfo {
            reason: reason.to_string(),
            at_millis: now_millis,
            details: Some(format!("{} [{last_node}]", reason.to_lowercase())),
            last_node: Some(last_node.to_string()),
        }),
    }
}

/// The replica of `shard` with `allocation_id`, on `node_id`.
fn replica_mut<'a>(
    routing: &'a mut IndexRouting,
    shard: u32,
    node_id: &str,
    allocation_id: &str,
) -> Option<&'a mut ShardRouting> {
    routing
        .shards
        .get_mut(shard as usize)?
        .copies
        .iter_mut()
        .find(|copy| {
            !copy.primary
                && copy.node_id.as_deref() == Some(node_id)
                && copy.allocation_id.as_deref() == Some(allocation_id)
        })
}

/// `node_id` reports its replica `allocation_id` of `shard` recovered: it starts, and joins
/// the in-sync set (the primary forwarded every write to it since the commit it recovered
/// from). Returns whether the routing changed (a report about a copy the routing no longer has
/// changes nothing).
pub fn replica_started(
    routing: &mut IndexRouting,
    shard: u32,
    node_id: &str,
    allocation_id: &str,
) -> bool {
    match replica_mut(routing, shard, node_id, allocation_id) {
        Some(copy) if copy.state == ShardState::Initializing => {
            copy.state = ShardState::Started;
            let table = &mut routing.shards[shard as usize];
            if !table.in_sync.iter().any(|id| id == allocation_id) {
                table.in_sync.push(allocation_id.to_string());
            }
            // the copy it relocates (see `rebalance`) is no longer needed
            let moved: Vec<String> = table
                .copies
                .iter()
                .filter(|copy| !copy.primary && copy.state == ShardState::Relocating)
                .filter_map(|copy| copy.allocation_id.clone())
                .collect();
            table
                .copies
                .retain(|copy| copy.primary || copy.state != ShardState::Relocating);
            table.in_sync.retain(|id| !moved.contains(id));
            true
        }
        _ => false,
    }
}

/// `node_id` reports its replica `allocation_id` of `shard` failed (`details` says why): it
/// leaves the in-sync set and becomes unassigned, to be allocated again.
pub fn replica_failed(
    routing: &mut IndexRouting,
    shard: u32,
    node_id: &str,
    allocation_id: &str,
    details: &str,
    now_millis: i64,
) -> bool {
    let Some(copy) = replica_mut(routing, shard, node_id, allocation_id) else {
        return false;
    };
    let mut next = unassigned_replica(shard, "ALLOCATION_FAILED", node_id, now_millis);
    if let Some(info) = next.unassigned.as_mut() {
        info.details = Some(details.to_string());
    }
    *copy = next;
    routing.shards[shard as usize]
        .in_sync
        .retain(|id| id != allocation_id);
    true
}

/// The replica of `shard` the routing gives `node_id` (initializing or started): its
/// allocation id and state.
pub fn replica_on(
    routing: &IndexRouting,
    shard: u32,
    node_id: &str,
) -> Option<(String, ShardState)> {
    let table = routing.shards.get(shard as usize)?;
    table
        .replicas()
        .find(|copy| {
            copy.node_id.as_deref() == Some(node_id) && copy.state != ShardState::Unassigned
        })
        .and_then(|copy| Some((copy.allocation_id.clone()?, copy.state)))
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

    fn replicas_of(routing: &IndexRouting, shard: usize) -> Vec<(Option<&str>, ShardState)> {
        routing.shards[shard]
            .replicas()
            .map(|c| (c.node_id.as_deref(), c.state))
            .collect()
    }

    #[test]
    fn replicas_follow_their_started_primary_onto_other_nodes() {
        let state = cluster(&["a", "b", "c"]);
        let mut routing = new_index(&state, 1, 3, 0);
        // no replica before the primary has started: it recovers from the primary
        let created = with_index(&state, "logs", routing.clone());
        assert!(reroute(&created, 1).is_empty());
        assert!(primary_started(&mut routing, 0, "a"));
        let started = with_index(&state, "logs", routing);
        let next = reroute(&started, 2);
        let init = ShardState::Initializing;
        let unassigned = ShardState::Unassigned;
        // one per other node; the third has nowhere to go (yellow)
        assert_eq!(
            replicas_of(&next["logs"], 0),
            [(Some("b"), init), (Some("c"), init), (None, unassigned)]
        );
        let mut routing = next["logs"].clone();
        let (b_id, _) = replica_on(&routing, 0, "b").unwrap();
        assert!(
            !replica_started(&mut routing, 0, "c", &b_id),
            "not c's copy"
        );
        assert!(replica_started(&mut routing, 0, "b", &b_id));
        assert!(
            !replica_started(&mut routing, 0, "b", &b_id),
            "already started"
        );
        assert_eq!(replica_on(&routing, 0, "b").unwrap().1, ShardState::Started);

        // c's replica fails: allocated again, and not back on c while another node will do
        let (c_id, _) = replica_on(&routing, 0, "c").unwrap();
        assert!(replica_failed(&mut routing, 0, "c", &c_id, "disk full", 3));
        assert!(replica_on(&routing, 0, "c").is_none());
        let four = cluster(&["a", "b", "c", "d"]);
        let next = reroute(&with_index(&four, "logs", routing.clone()), 4);
        let nodes: Vec<_> = replicas_of(&next["logs"], 0)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(
            nodes.contains(&Some("d")) && nodes.contains(&Some("c")),
            "{nodes:?}"
        );

        // b leaves: its replica is unassigned; with b back it goes there again
        let state = with_index(&cluster(&["a", "c"]), "logs", routing);
        let next = reroute(&state, 5);
        assert!(replica_on(&next["logs"], 0, "b").is_none());
        let routing = next["logs"].clone();
        let back = with_index(&cluster(&["a", "b", "c"]), "logs", routing);
        let next = reroute(&back, 6);
        assert_eq!(replica_on(&next["logs"], 0, "b").unwrap().1, init);
    }

    #[test]
    fn fewer_replicas_drop_the_least_useful_copies_first() {
        let state = cluster(&["a", "b"]);
        let mut routing = new_index(&state, 1, 2, 0);
        assert!(primary_started(&mut routing, 0, "a"));
        let next = reroute(&with_index(&state, "logs", routing), 1);
        let mut routing = next["logs"].clone();
        let (b_id, _) = replica_on(&routing, 0, "b").unwrap();
        assert!(replica_started(&mut routing, 0, "b", &b_id));
        assert!(routing.set_replica_count(1, 2));
        assert_eq!(replicas_of(&routing, 0), [(Some("b"), ShardState::Started)]);
        assert!(routing.set_replica_count(0, 3));
        assert!(replicas_of(&routing, 0).is_empty());
        assert!(!routing.set_replica_count(0, 4));
    }

    #[test]
    fn the_allocation_setting_holds_back_what_it_excludes() {
        let state = cluster(&["a", "b"]);
        let routing = new_index_with(&state, 1, 1, 0, AllocationEnable::None);
        assert_eq!(primaries(&routing), [(None, ShardState::Unassigned)]);
        let waiting = with_index(&state, "logs", routing);
        assert!(reroute_with(&waiting, 1, AllocationEnable::None).is_empty());
        let next = reroute_with(&waiting, 2, AllocationEnable::NewPrimaries);
        let mut routing = next["logs"].clone();
        assert!(primary_started(&mut routing, 0, "a"));
        // primaries only: the replica waits until everything is allowed again
        let started = with_index(&state, "logs", routing);
        assert!(reroute_with(&started, 3, AllocationEnable::Primaries).is_empty());
        let next = reroute_with(&started, 4, AllocationEnable::All);
        assert!(replica_on(&next["logs"], 0, "b").is_some());
        assert_eq!(
            AllocationEnable::parse("primaries"),
            AllocationEnable::Primaries
        );
        assert_eq!(AllocationEnable::parse("all"), AllocationEnable::All);
    }

    #[test]
    fn an_in_sync_replica_takes_over_from_a_primary_that_left() {
        let state = cluster(&["a", "b", "c"]);
        let mut routing = new_index(&state, 1, 2, 0);
        assert!(primary_started(&mut routing, 0, "a"));
        let next = reroute(&with_index(&state, "logs", routing), 1);
        let mut routing = next["logs"].clone();
        let (b_id, _) = replica_on(&routing, 0, "b").unwrap();
        // b in sync; c still recovering
        assert!(replica_started(&mut routing, 0, "b", &b_id));
        assert_eq!(routing.shards[0].in_sync.len(), 2);
        let term = routing.shards[0].primary_term;

        let gone = with_index(&cluster(&["b", "c"]), "logs", routing.clone());
        let next = reroute(&gone, 2);
        let table = &next["logs"].shards[0];
        let primary = table.primary().unwrap();
        assert_eq!(
            (primary.node_id.as_deref(), primary.state),
            (Some("b"), ShardState::Initializing)
        );
        assert_eq!(primary.allocation_id.as_deref(), Some(b_id.as_str()));
        assert_eq!(table.primary_term, term + 1);
        assert_eq!(table.in_sync, std::slice::from_ref(&b_id));
        assert!(std::ptr::eq(table.primary().unwrap(), &table.copies[0]));
        // the old primary's place and the recovering replica recover from the new primary
        assert_eq!(table.copies.len(), 3);
        assert!(table.replicas().all(|c| c.state == ShardState::Unassigned));
        let mut promoted = next["logs"].clone();
        assert!(primary_started(&mut promoted, 0, "b"));

        // no replica in sync: the primary waits for its node, as without replicas
        let mut routing = new_index(&state, 1, 1, 0);
        assert!(primary_started(&mut routing, 0, "a"));
        let next = reroute(&with_index(&state, "logs", routing), 3);
        let alone = with_index(&cluster(&["b", "c"]), "logs", next["logs"].clone());
        let next = reroute(&alone, 4);
        assert_eq!(
            next["logs"].shards[0].primary().unwrap().state,
            ShardState::Unassigned
        );
        assert_eq!(next["logs"].shards[0].primary_term, 1);
    }

    /// Starts every initializing copy of `routing` (primaries and replicas), as their nodes
    /// would report.
    fn start_all(routing: &mut IndexRouting) {
        for shard in 0..routing.shards.len() as u32 {
            let copies = routing.shards[shard as usize].copies.clone();
            for copy in copies
                .iter()
                .filter(|c| c.state == ShardState::Initializing)
            {
                let node = copy.node_id.clone().unwrap();
                if copy.primary {
                    primary_started(routing, shard, &node);
                } else {
                    replica_started(routing, shard, &node, copy.allocation_id.as_ref().unwrap());
                }
            }
        }
    }

    #[test]
    fn a_joining_node_takes_replicas_one_move_at_a_time() {
        let two = cluster(&["a", "b"]);
        let mut routing = new_index(&two, 3, 1, 0);
        start_all(&mut routing);
        let mut state = with_index(&two, "logs", routing);
        let next = reroute(&state, 1);
        let mut routing = next["logs"].clone();
        start_all(&mut routing);
        state = with_index(&two, "logs", routing);
        assert!(reroute(&state, 2).is_empty(), "balanced: 3 copies each");

        // c joins: a replica of the fullest node moves, the old copy serving until the new starts
        let three = state.builder().put_node(node("c")).build();
        let mut state = three;
        let mut moves = 0;
        loop {
            let next = reroute(&state, 3);
            let Some(routing) = next.get("logs") else {
                break;
            };
            let mut routing = routing.clone();
            let relocating: Vec<_> = routing
                .shards
                .iter()
                .flat_map(|t| &t.copies)
                .filter(|c| c.state == ShardState::Relocating)
                .collect();
            assert_eq!(relocating.len(), 1, "one move at a time");
            assert!(
                reroute(&with_index(&state, "logs", routing.clone()), 4).is_empty(),
                "nothing else while it moves"
            );
            start_all(&mut routing);
            assert!(routing
                .shards
                .iter()
                .all(|t| t.copies.len() == 2 && t.in_sync.len() == 2));
            state = with_index(&state, "logs", routing);
            moves += 1;
            assert!(moves < 5);
        }
        let load = copies_per_node(&state);
        assert_eq!(
            load.values().copied().collect::<Vec<_>>(),
            [2, 2, 2],
            "{load:?}"
        );
        assert_eq!(moves, 2);
    }

    #[test]
    fn replicas_of_an_index_spread_one_per_node_as_its_primaries_start() {
        for order in [[0u32, 1, 2], [2, 1, 0], [1, 0, 2]] {
            let state = cluster(&["a", "b", "c"]);
            let mut routing = new_index(&state, 3, 1, 0);
            let mut state = with_index(&state, "logs", routing.clone());
            // the primaries start one at a time, the manager rerouting after each
            for shard in order {
                let node = routing.shards[shard as usize]
                    .primary()
                    .unwrap()
                    .node_id
                    .clone()
                    .unwrap();
                assert!(primary_started(&mut routing, shard, &node));
                state = with_index(&state, "logs", routing.clone());
                if let Some(next) = reroute(&state, 1).remove("logs") {
                    routing = next;
                    state = with_index(&state, "logs", routing.clone());
                }
            }
            let load = copies_per_node(&state);
            assert_eq!(
                load.values().copied().collect::<Vec<_>>(),
                [2, 2, 2],
                "{order:?}"
            );
        }
    }
}
