//! Applying the cluster state: every node lists the store once, then follows one watch of the
//! whole cluster's keys in revision order ([`StateFold`]); each change builds the next state,
//! which the node applies to itself (its indices and shard copies) before publishing it, so
//! whoever sees a state version finds the node's indices as that state says. A watch that ends
//! (etcd compacted its history, or went away) starts over with a new listing; while the store
//! cannot be read the node keeps serving with the last state it applied.
//!
//! Applying a state to the node:
//! - the cluster settings are the state's (`PUT _cluster/settings` on any node goes through the
//!   manager);
//! - every index of the state is open on every node (its metadata, for coordinating searches
//!   and writes), with the copies the routing allocates to this node open (a replica recovers
//!   from its primary: `replication`), the others unallocated; newer metadata is installed;
//! - an index the state no longer holds is deleted here;
//! - a local index directory the state does not name (the index was deleted while this node
//!   was away, or the store was replaced) is left on disk untouched, reported as dangling.

use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Weak};
use std::thread;
use std::time::{Duration, Instant};

use tessera_cluster::allocation::{primary_belongs_to, AllocationEnable};
use tessera_cluster::layout::{StateFold, SETTINGS_KEY};
use tessera_cluster::ClusterState;
use tessera_index::index_service::ShardSlot;

use super::Coordination;
use crate::node::Node;

/// How often the last state is applied again (to retry what failed, and to report shard
/// states that changed without a state change: a failed shard that recovered).
const REAPPLY_EVERY: Duration = Duration::from_secs(1);

/// The applier's thread: runs until the node stops.
pub(crate) fn run(node: Weak<Node>, coordination: Arc<Coordination>) {
    let mut unavailable_since: Option<Instant> = None;
    loop {
        if stopped(&node) {
            return;
        }
        let listing = match coordination.store.list("") {
            Ok(listing) => listing,
            Err(e) => {
                if unavailable_since.is_none() {
                    eprintln!("cannot read the cluster state ({e}): serving with the last one");
                    unavailable_since = Some(Instant::now());
                }
                thread::sleep(Duration::from_millis(250));
                continue;
            }
        };
        if unavailable_since.take().is_some() {
            eprintln!("the cluster state can be read again");
        }
        let mut fold = StateFold::new(&coordination.cluster_name, listing);
        apply(&node, &coordination, &mut fold);
        let watch = match coordination.store.watch("", fold.revision() + 1) {
            Ok(watch) => watch,
            Err(e) => {
                eprintln!("cannot watch the cluster state: {e}");
                thread::sleep(Duration::from_millis(250));
                continue;
            }
        };
        let mut applied = Instant::now();
        loop {
            match watch.next_batch(Duration::from_millis(200)) {
                Ok(batch) => {
                    // whole revisions only: a state never holds half a transaction
                    batch.into_iter().for_each(|event| fold.apply(event));
                    while let Some(batch) = watch.try_next_batch() {
                        batch.into_iter().for_each(|event| fold.apply(event));
                    }
                    apply(&node, &coordination, &mut fold);
                    applied = Instant::now();
                }
                Err(RecvTimeoutError::Timeout) => {
                    if stopped(&node) {
                        return;
                    }
                    if applied.elapsed() >= REAPPLY_EVERY {
                        if let Some(node) = node.upgrade() {
                            reconcile(&node, &coordination, &coordination.holder.current());
                        }
                        applied = Instant::now();
                    }
                }
                // compacted or broken: list again
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }
}

fn stopped(node: &Weak<Node>) -> bool {
    node.upgrade().is_none_or(|node| node.is_shutting_down())
}

/// Applies the state the keys in `fold` make to the node (its indices and copies, and the
/// cluster settings), then publishes it (when it is newer than the one published).
fn apply(node: &Weak<Node>, coordination: &Arc<Coordination>, fold: &mut StateFold) {
    let Some(node) = node.upgrade() else {
        return;
    };
    let state = fold.build();
    if !state.cluster_uuid.is_empty() {
        let data = &node.config.data_path;
        if let Err(e) = super::membership::record_cluster_uuid(data, &state.cluster_uuid) {
            eprintln!("cannot record the cluster uuid: {e}");
        }
    }
    let settings = fold.key(SETTINGS_KEY).map(|kv| kv.value.as_slice());
    if let Err(e) = node.cluster_settings.apply_stored(settings) {
        eprintln!("cannot apply the cluster settings: {e}");
    }
    let enable = node
        .cluster_settings
        .get("cluster.routing.allocation.enable");
    coordination
        .manager
        .set_allocation_enable(AllocationEnable::parse(&enable));
    reconcile(&node, coordination, &state);
    // adaptive replica selection forgets the nodes that left
    node.response_collector
        .retain(|id| state.nodes.contains_key(id));
    let published = coordination
        .holder
        .update(|current| Ok((state.version > current.version).then_some(state)));
    if let Err(e) = published {
        eprintln!("cannot publish the cluster state: {e}");
    }
    coordination.state_changed();
}

/// Brings the node's indices and shard copies in line with `state` (module documentation).
fn reconcile(node: &Arc<Node>, coordination: &Arc<Coordination>, state: &ClusterState) {
    let me = coordination.membership.local().id.clone();
    for (name, index) in &state.indices {
        let meta = &index.metadata;
        let service = match node.index(name) {
            Some(service) if service.metadata().uuid == meta.uuid => {
                let current = service.metadata();
                let newer = meta.versions() > current.versions();
                // an update of this node's own holds the mapping lock while the manager decides
                // it: it installs what the manager decided, and the next round catches up
                if newer {
                    if let Err(e) = service.try_apply_metadata((**meta).clone()) {
                        eprintln!("[{name}] cannot install the cluster's metadata: {e}");
                    }
                }
                service
            }
            stale => {
                if stale.is_some() {
                    node.drop_local_index(name);
                }
                match node.open_cluster_index(meta) {
                    Ok(service) => service,
                    Err(e) => {
                        eprintln!("[{name}] cannot open the index here: {e}");
                        continue;
                    }
                }
            }
        };
        for (shard, slot) in service.shard_slots().into_iter().enumerate() {
            let shard = shard as u32;
            // every copy knows the shard's primary term: a replica refuses older operations
            if let (ShardSlot::Started(copy), Some(table)) =
                (&slot, index.routing.shards.get(shard as usize))
            {
                if table.primary_term > copy.primary_term() {
                    copy.set_primary_term(table.primary_term);
                }
            }
            if primary_belongs_to(&index.routing, shard, &me) {
                match slot {
                    ShardSlot::Unallocated => coordination.open_shard(node, service.clone(), shard),
                    // a replica here that the routing made the primary (a failover) is opened
                    // again as one: its translog replays what its last copied commit lacks
                    ShardSlot::Started(copy) if copy.is_replica() => {
                        service.release_shard(shard);
                        coordination.open_shard(node, service.clone(), shard);
                    }
                    slot => coordination.report_if_changed(state, &service, shard, &slot),
                }
            } else if !coordination.reconcile_replica(node, state, &service, shard, &slot)
                && !matches!(slot, ShardSlot::Unallocated)
            {
                service.release_shard(shard);
            }
        }
    }
    for name in node.index_names() {
        if !state.indices.contains_key(&name) {
            node.drop_local_index(&name);
        }
    }
}
