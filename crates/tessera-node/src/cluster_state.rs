//! The node's side of the cluster state (`tessera_cluster`): it opens the node's
//! [`FileMetaStore`], writes index metadata and shard routing through it, and publishes the
//! [`ClusterState`] each change makes (its version is the store's revision of the change).
//!
//! The keys are those of a cluster (`tessera_cluster::layout`): `cluster` (the cluster uuid,
//! chosen once), `indices/<name>` (the index metadata, as its `_state.json`), `routing/<name>`
//! (the index's [`IndexRouting`] and uuid), `nodes/<id>` (the node, bound to its lease) and the
//! `cluster_manager` election. A member of a cluster uses `crate::coordination` instead.
//!
//! A data directory written before the store existed opens unchanged: indices found only on
//! disk are imported. When the store and an index's `_state.json` disagree (a crash between
//! the two writes), the copy with the higher `(mapping_version, settings_version, aliases_version)` wins, the
//! store's on a tie; an index whose uuid differs from the store's is the one on disk (its data
//! is there), and a stored index with no directory is dropped from the store.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tessera_cluster::layout::{
    custom_key, index_key, node_key, pipeline_key, routing_key, StoredRouting, CLUSTER_KEY, CUSTOM,
    ELECTION, INDICES, INGEST, ROUTING,
};
use tessera_cluster::meta_store::{LeaderKey, TxnOp};
use tessera_cluster::{
    ClusterState, ClusterStateHolder, DiscoveryNode, Expect, FileMetaStore, IndexRouting,
    IndexState, LeaseId, MetaError, MetaStore, Revision, ShardState,
};
use tessera_common::{Error, Result};
use tessera_index::index_service::ShardSlot;
use tessera_index::{IndexMetadata, IndexService};

use crate::pending_tasks::{PendingTasks, Priority};

/// A node's lease: its `nodes/<id>` key and its leadership end this long after its last
/// keep-alive.
const LEASE_TTL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(3);

struct Membership {
    lease: LeaseId,
    leader: Option<LeaderKey>,
    last_keep_alive: Instant,
}

/// See the module documentation.
pub struct ClusterService {
    store: Arc<dyn MetaStore>,
    holder: ClusterStateHolder,
    local: DiscoveryNode,
    /// One writer at a time: a store write and the state it publishes go together, so
    /// versions are published in order.
    write: Mutex<()>,
    /// The updates waiting for (or holding) `write`.
    pub pending: PendingTasks,
    membership: Mutex<Membership>,
}

fn metadata_bytes(meta: &IndexMetadata) -> Vec<u8> {
    meta.to_json().to_string().into_bytes()
}

fn parse_metadata(bytes: &[u8]) -> Result<IndexMetadata> {
    tessera_cluster::state::metadata_from_json(bytes)
}

/// The state of each primary, from the node's shard slots, with why a failed one failed (in
/// allocation explain's words).
fn primary_states(index: &IndexService, node_id: &str) -> Vec<(ShardState, Option<String>)> {
    index
        .shard_slots()
        .iter()
        .map(|slot| match slot {
            ShardSlot::Started(_) => (ShardState::Started, None),
            ShardSlot::Initializing => (ShardState::Initializing, None),
            ShardSlot::Unallocated => (ShardState::Unassigned, None),
            ShardSlot::Failed(failure) => {
                let details = format!(
                    "failed shard on node [{node_id}]: {}[{}]",
                    failure.error.kind(),
                    failure.error.reason()
                );
                (ShardState::Unassigned, Some(details))
            }
        })
        .collect()
}

impl ClusterService {
    /// Opens the node's store under `data/_state/meta`, brings it in line with the indices
    /// found on disk (see the module documentation), registers the node and wins the
    /// single node's election.
    pub fn open(
        data: &Path,
        local: DiscoveryNode,
        cluster_name: &str,
        indices: &BTreeMap<String, Arc<IndexService>>,
    ) -> Result<ClusterService> {
        let store = FileMetaStore::open(&data.join("_state").join("meta"))?;
        Self::with_store(Arc::new(store), local, cluster_name, indices)
    }

    fn with_store(
        store: Arc<dyn MetaStore>,
        local: DiscoveryNode,
        cluster_name: &str,
        indices: &BTreeMap<String, Arc<IndexService>>,
    ) -> Result<ClusterService> {
        let cluster_uuid = cluster_uuid(store.as_ref(), &local.id)?;
        let mut states = BTreeMap::new();
        for (name, service) in indices {
            let meta = import_index(store.as_ref(), service)?;
            let routing = import_routing(store.as_ref(), &meta, &local.id)?;
            states.insert(
                name.clone(),
                IndexState {
                    metadata: meta,
                    routing,
                },
            );
        }
        // what the store holds of indices that are not on disk any more
        for prefix in [INDICES, ROUTING] {
            for kv in store.list(prefix)?.kvs {
                let name = &kv.key[prefix.len()..];
                if !indices.contains_key(name) {
                    eprintln!("[{name}] is in the metadata store but not on disk: dropping it");
                    store.delete(&kv.key, Expect::ModRevision(kv.mod_revision))?;
                }
            }
        }
        let lease = store.grant(LEASE_TTL)?;
        let leader = register(store.as_ref(), &local, lease)?;
        let mut state = ClusterState::empty(cluster_name, &cluster_uuid)
            .builder()
            .put_node(local.clone())
            .cluster_manager(Some(local.id.clone()));
        for index in states.into_values() {
            state = state.put_index(index);
        }
        for kv in store.list(CUSTOM)?.kvs {
            let key = &kv.key[CUSTOM.len()..];
            match serde_json::from_slice(&kv.value) {
                Ok(doc) => state = state.put_custom(key, Some(doc)),
                Err(e) => eprintln!("cannot read [{key}] in the metadata store: {e}"),
            }
        }
        for kv in store.list(INGEST)?.kvs {
            match String::from_utf8(kv.value) {
                Ok(definition) => state = state.put_pipeline(&kv.key[INGEST.len()..], definition),
                Err(_) => eprintln!(
                    "cannot read the pipeline [{}] in the metadata store",
                    kv.key
                ),
            }
        }
        let revision = store.list(INDICES)?.revision;
        let state = state.version(revision.max(1)).build();
        Ok(ClusterService {
            store,
            holder: ClusterStateHolder::new(state),
            local,
            write: Mutex::new(()),
            pending: PendingTasks::default(),
            membership: Mutex::new(Membership {
                lease,
                leader: Some(leader),
                last_keep_alive: Instant::now(),
            }),
        })
    }

    /// The cluster state now.
    pub fn state(&self) -> Arc<ClusterState> {
        self.holder.current()
    }

    pub fn holder(&self) -> &ClusterStateHolder {
        &self.holder
    }

    pub fn store(&self) -> &Arc<dyn MetaStore> {
        &self.store
    }

    /// Publishes the next state with the version of the store write it reflects.
    fn publish(
        &self,
        revision: Revision,
        change: impl FnOnce(&ClusterState) -> tessera_cluster::state::ClusterStateBuilder,
    ) -> Result<()> {
        self.holder.update(|current| {
            // a change that wrote nothing (a key already gone) still gets a newer version
            let version = revision.max(current.version + 1);
            Ok(Some(change(current).version(version).build()))
        })?;
        Ok(())
    }

    /// A new index: its metadata and routing go to the store, then into the state.
    pub fn index_created(&self, index: &IndexService) -> Result<()> {
        let _write = self.pending.take_turn(
            &self.write,
            format!("create-index [{}], cause [api]", index.metadata().name),
            Priority::Urgent,
        );
        let meta = index.metadata();
        self.store.compare_and_set(
            &index_key(&meta.name),
            Expect::Absent,
            &metadata_bytes(&meta),
            0,
        )?;
        let mut routing = IndexRouting::single_node(
            meta.number_of_shards,
            meta.number_of_replicas(),
            &self.local.id,
            meta.creation_date,
        );
        apply_slots(&mut routing, index, &self.local.id);
        let revision = match put_routing(self.store.as_ref(), &meta, &routing) {
            Ok(revision) => revision,
            Err(e) => {
                // the index is not created: its name must stay free
                let _ = self.store.delete(&index_key(&meta.name), Expect::Any);
                return Err(e);
            }
        };
        self.publish(revision, |current| {
            current.builder().put_index(IndexState {
                metadata: meta.clone(),
                routing,
            })
        })
    }

    /// An index deleted: gone from the store, then from the state. Deleting is how a full
    /// disk gets room again, so a store that cannot be written does not stop it: the index
    /// leaves the state, and its stored entry, which then names no directory, is dropped when
    /// the node next starts.
    pub fn index_deleted(&self, name: &str) -> Result<()> {
        let _write = self.pending.take_turn(
            &self.write,
            format!("delete-index [{name}]"),
            Priority::Urgent,
        );
        let deleted = self
            .store
            .delete(&index_key(name), Expect::Any)
            .and_then(|_| self.store.delete(&routing_key(name), Expect::Any));
        let revision = deleted.unwrap_or_else(|e| {
            eprintln!("[{name}] could not be deleted from the metadata store ({e}): it is dropped from there when the node next starts");
            0
        });
        self.publish(revision, |current| current.builder().remove_index(name))
    }

    /// `PUT _ingest/pipeline/{id}`: the definition (JSON text, validated) to the store, then
    /// into the state.
    pub fn put_pipeline(&self, id: &str, definition: String) -> Result<()> {
        let _write =
            self.pending
                .take_turn(&self.write, format!("put-pipeline-{id}"), Priority::Normal);
        let revision =
            self.store
                .compare_and_set(&pipeline_key(id), Expect::Any, definition.as_bytes(), 0)?;
        self.publish(revision, |current| {
            current.builder().put_pipeline(id, definition)
        })
    }

    /// `DELETE _ingest/pipeline/{id}`: gone from the store, then from the state.
    pub fn delete_pipelines(&self, ids: &[String]) -> Result<()> {
        let _write = self.pending.take_turn(
            &self.write,
            format!("delete-pipeline-{}", ids.join(",")),
            Priority::Normal,
        );
        let mut revision = 0;
        for id in ids {
            revision = self.store.delete(&pipeline_key(id), Expect::Any)?;
        }
        self.publish(revision, |current| {
            ids.iter()
                .fold(current.builder(), |builder, id| builder.remove_pipeline(id))
        })
    }

    /// An index's next metadata (a mapping or settings update), before the index installs
    /// it: written to the store (an error fails the update), then published.
    pub fn metadata_changed(&self, next: &IndexMetadata) -> Result<()> {
        let _write = self.pending.take_turn(
            &self.write,
            format!("update-index-metadata [{}]", next.name),
            Priority::High,
        );
        let key = index_key(&next.name);
        let expect = match self.store.get(&key)? {
            Some(kv) => Expect::ModRevision(kv.mod_revision),
            None => Expect::Absent,
        };
        let mut revision = self
            .store
            .compare_and_set(&key, expect, &metadata_bytes(next), 0)?;
        let meta = Arc::new(next.clone());
        let current = self.holder.current();
        let routing = match current.index(&next.name) {
            Some(index) => {
                let mut routing = index.routing.clone();
                let now = tessera_common::time::now_millis();
                if routing.set_replica_count(next.number_of_replicas(), now) {
                    revision = put_routing(self.store.as_ref(), next, &routing)?;
                }
                routing
            }
            None => return Ok(()),
        };
        self.publish(revision, |current| {
            current.builder().put_index(IndexState {
                metadata: meta,
                routing,
            })
        })
    }

    /// Writes (`Some`) or deletes (`None`) custom documents (templates, …), then publishes
    /// them.
    pub fn custom_changed(&self, docs: Vec<(String, Option<serde_json::Value>)>) -> Result<()> {
        let _write =
            self.pending
                .take_turn(&self.write, "update-custom-metadata", Priority::Urgent);
        let ops: Vec<TxnOp> = docs
            .iter()
            .map(|(key, doc)| match doc {
                Some(doc) => TxnOp::Put {
                    key: custom_key(key),
                    expect: Expect::Any,
                    value: doc.to_string().into_bytes(),
                    lease: 0,
                },
                None => TxnOp::Delete {
                    key: custom_key(key),
                    expect: Expect::Any,
                },
            })
            .collect();
        let revision = self.store.commit(None, &ops)?;
        self.publish(revision, |current| {
            docs.into_iter()
                .fold(current.builder(), |builder, (key, doc)| {
                    builder.put_custom(&key, doc)
                })
        })
    }

    /// Brings the routing of `index` in line with its shards on this node (a shard started,
    /// failed or recovered); writes and publishes only when something changed.
    pub fn sync_shards(&self, index: &IndexService) -> Result<()> {
        let _write = self.pending.take_turn(
            &self.write,
            format!("shard-started [{}]", index.metadata().name),
            Priority::Urgent,
        );
        let current = self.holder.current();
        let meta = index.metadata();
        let Some(state) = current.index(&meta.name) else {
            return Ok(());
        };
        if state.metadata.uuid != meta.uuid {
            return Ok(());
        }
        let mut routing = state.routing.clone();
        if !apply_slots(&mut routing, index, &self.local.id) {
            return Ok(());
        }
        // the routing of a shard that fails because its disk is full cannot be written either:
        // the state follows the shard all the same (once, not at every round), and the store
        // catches up with the next change; a start derives the states from the shards anyway
        let revision = put_routing(self.store.as_ref(), &meta, &routing).unwrap_or_else(|e| {
            eprintln!(
                "[{}] could not write the shard routing to the metadata store: {e}",
                meta.name
            );
            0
        });
        let name = meta.name.clone();
        self.publish(revision, |current| {
            current.builder().put_routing(&name, routing)
        })
    }

    /// Renews the node's lease every few seconds (called by the scheduler); a lease that
    /// was lost (the node stalled past its ttl) is replaced, the node registered and elected
    /// again.
    pub fn keep_alive(&self) -> Result<()> {
        let mut membership = self.membership.lock().unwrap();
        if membership.last_keep_alive.elapsed() < KEEP_ALIVE_EVERY {
            return Ok(());
        }
        membership.last_keep_alive = Instant::now();
        match self.store.keep_alive(membership.lease) {
            Ok(_) => Ok(()),
            Err(MetaError::LeaseNotFound(_)) => {
                eprintln!("the node's lease expired: registering again");
                membership.leader = None;
                membership.lease = self.store.grant(LEASE_TTL)?;
                membership.leader = Some(register(
                    self.store.as_ref(),
                    &self.local,
                    membership.lease,
                )?);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Leaves the cluster cleanly: resigns and ends the lease (its keys go with it).
    pub fn shutdown(&self) {
        let mut membership = self.membership.lock().unwrap();
        if let Some(leader) = membership.leader.take() {
            let _ = self.store.resign(&leader);
        }
        let _ = self.store.revoke(membership.lease);
    }
}

/// The cluster uuid, chosen by the first node that finds none: its node id, which is what
/// `GET /` reported as the cluster uuid before the store existed, so a data directory written
/// then keeps its identity.
fn cluster_uuid(store: &dyn MetaStore, first_node_id: &str) -> Result<String> {
    loop {
        if let Some(kv) = store.get(CLUSTER_KEY)? {
            let value: serde_json::Value = serde_json::from_slice(&kv.value)
                .map_err(|e| Error::internal("parse the stored cluster metadata", e))?;
            return value["cluster_uuid"]
                .as_str()
                .map(String::from)
                .ok_or_else(|| Error::internal("read the cluster metadata", "no cluster_uuid"));
        }
        let value = json!({ "cluster_uuid": first_node_id });
        match store.compare_and_set(CLUSTER_KEY, Expect::Absent, value.to_string().as_bytes(), 0) {
            Ok(_) | Err(MetaError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reconciles an index found on disk with the store's copy; returns the metadata that won.
fn import_index(store: &dyn MetaStore, service: &IndexService) -> Result<Arc<IndexMetadata>> {
    let disk = service.metadata();
    let key = index_key(&disk.name);
    let Some(kv) = store.get(&key)? else {
        store.compare_and_set(&key, Expect::Absent, &metadata_bytes(&disk), 0)?;
        return Ok(disk);
    };
    let stored = parse_metadata(&kv.value)?;
    let store_wins = stored.uuid == disk.uuid
        && stored.number_of_shards == disk.number_of_shards
        && stored.versions() >= disk.versions();
    if store_wins {
        if stored.to_json() != disk.to_json() {
            eprintln!(
                "[{}] the metadata store's copy (mapping, settings and aliases versions {:?}) replaces _state.json's ({:?})",
                disk.name, stored.versions(), disk.versions()
            );
            service.apply_metadata(stored)?;
        }
        Ok(service.metadata())
    } else {
        store.compare_and_set(
            &key,
            Expect::ModRevision(kv.mod_revision),
            &metadata_bytes(&disk),
            0,
        )?;
        Ok(disk)
    }
}

/// The routing of an index found on disk: the stored one (allocation ids, primary term and
/// in-sync set kept; its primaries initializing on this node, which opens them now), or a
/// new one.
fn import_routing(
    store: &dyn MetaStore,
    meta: &IndexMetadata,
    node_id: &str,
) -> Result<IndexRouting> {
    let stored = store
        .get(&routing_key(&meta.name))?
        .and_then(|kv| StoredRouting::from_bytes(&kv.value))
        .filter(|stored| {
            stored.index_uuid == meta.uuid
                && stored.routing.shards.len() == meta.number_of_shards as usize
        });
    let now = tessera_common::time::now_millis();
    let routing = match stored {
        Some(stored) => {
            let mut routing = stored.routing;
            for shard in 0..meta.number_of_shards {
                routing.set_primary_state(shard, ShardState::Initializing, node_id, None);
            }
            routing.set_replica_count(meta.number_of_replicas(), now);
            routing
        }
        None => IndexRouting::single_node(
            meta.number_of_shards,
            meta.number_of_replicas(),
            node_id,
            meta.creation_date,
        ),
    };
    put_routing(store, meta, &routing)?;
    Ok(routing)
}

fn put_routing(store: &dyn MetaStore, meta: &IndexMetadata, routing: &IndexRouting) -> Result<u64> {
    let value = StoredRouting {
        index_uuid: meta.uuid.clone(),
        routing: routing.clone(),
    }
    .to_bytes();
    Ok(store.compare_and_set(&routing_key(&meta.name), Expect::Any, &value, 0)?)
}

/// Sets each primary's state from the index's shard slots; returns whether any changed.
fn apply_slots(routing: &mut IndexRouting, index: &IndexService, node_id: &str) -> bool {
    let now = tessera_common::time::now_millis();
    let mut changed = false;
    for (shard, (state, failure)) in primary_states(index, node_id).into_iter().enumerate() {
        let reason = failure
            .as_deref()
            .map(|details| ("ALLOCATION_FAILED", details, now));
        changed |= routing.set_primary_state(shard as u32, state, node_id, reason);
    }
    changed
}

/// Puts the node's key under its lease and wins the election (the single node has no rival;
/// its key from an earlier process went with that process's lease).
fn register(store: &dyn MetaStore, local: &DiscoveryNode, lease: LeaseId) -> Result<LeaderKey> {
    let value = serde_json::to_vec(local).map_err(|e| Error::internal("serialise the node", e))?;
    store.compare_and_set(&node_key(&local.id), Expect::Any, &value, lease)?;
    Ok(store.campaign(
        ELECTION,
        local.id.as_bytes(),
        lease,
        Duration::from_secs(10),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Node, ResolveOptions};
    use serde_json::Value;
    use tessera_common::settings::Settings;
    use tessera_mapping::Mapping;

    fn start(dir: &Path) -> Arc<Node> {
        crate::node::test_node(dir)
    }

    /// Waits until every primary of `index` is started in the published routing.
    fn wait_started(node: &Node, index: &str) -> Arc<ClusterState> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let state = node.cluster_state();
            let started = state.index(index).is_some_and(|i| {
                i.routing
                    .shards
                    .iter()
                    .all(|t| t.primary().unwrap().state == ShardState::Started)
            });
            if started {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "[{index}] never started: {state:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn index_dir(dir: &Path, node: &Node, name: &str) -> std::path::PathBuf {
        let uuid = node.index(name).unwrap().metadata().uuid.clone();
        dir.join("indices").join(uuid)
    }

    fn stored_metadata(dir: &Path, name: &str) -> IndexMetadata {
        let store = FileMetaStore::open(&dir.join("_state").join("meta")).unwrap();
        parse_metadata(&store.get(&index_key(name)).unwrap().unwrap().value).unwrap()
    }

    #[test]
    fn changes_go_through_the_store_and_publish_a_new_version() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        let first = node.cluster_state();
        assert_eq!(
            first.cluster_manager.as_deref(),
            Some(node.node_id.as_str())
        );
        assert_eq!(first.nodes[&node.node_id].name, node.config.name);
        let index = node
            .create_index(
                "logs",
                Settings::from_json(&json!({"index.number_of_shards": 2})).unwrap(),
                Mapping::default(),
            )
            .unwrap();
        let created = wait_started(&node, "logs");
        assert!(created.version > first.version);
        let routing = &created.index("logs").unwrap().routing;
        assert_eq!(routing.shards.len(), 2);
        let primary = routing.shards[1].primary().unwrap();
        assert_eq!(primary.node_id.as_deref(), Some(node.node_id.as_str()));
        assert_eq!(
            routing.shards[1].in_sync,
            vec![primary.allocation_id.clone().unwrap()]
        );
        assert_eq!(routing.shards[1].replicas().count(), 1);

        index
            .put_mapping(&json!({"properties": {"title": {"type": "text"}}}))
            .unwrap();
        let mapped = node.cluster_state();
        assert!(mapped.version > created.version);
        let meta = &mapped.index("logs").unwrap().metadata;
        assert_eq!(meta.mapping_version, 2);
        assert!(meta.mapping.to_json().to_string().contains("title"));
        // the routing is what it was: a mapping update does not touch it
        assert_eq!(&mapped.index("logs").unwrap().routing, routing);

        let mut update = Settings::new();
        update.set("index.number_of_replicas", "0");
        index.update_settings(&update).unwrap();
        let set = node.cluster_state();
        assert!(set.version > mapped.version);
        let logs = set.index("logs").unwrap();
        assert_eq!(logs.metadata.settings_version, 2);
        assert_eq!(logs.routing.shards[0].copies.len(), 1, "the replicas went");
        // the store holds what the state shows, at the state's version
        let listing = node.metadata_store().list(INDICES).unwrap();
        assert_eq!(listing.revision, set.version);
        assert_eq!(
            parse_metadata(&listing.kvs[0].value).unwrap().to_json(),
            logs.metadata.to_json()
        );

        node.delete_indices("logs", &ResolveOptions::default())
            .unwrap();
        let deleted = node.cluster_state();
        assert!(deleted.version > set.version);
        assert!(deleted.index("logs").is_none());
        assert!(node.metadata_store().get("indices/logs").unwrap().is_none());
        assert!(node.metadata_store().get("routing/logs").unwrap().is_none());
        node.shutdown();
    }

    #[test]
    fn a_data_directory_without_a_store_opens_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let (node_id, cluster_uuid, allocation_id);
        {
            let node = start(dir.path());
            let index = node
                .create_index("old", Settings::new(), Mapping::default())
                .unwrap();
            index
                .put_mapping(&json!({"properties": {"n": {"type": "long"}}}))
                .unwrap();
            node.shutdown();
            node_id = node.node_id.clone();
            cluster_uuid = node.cluster_state().cluster_uuid.clone();
            allocation_id = node.cluster_state().shard("old", 0).unwrap().in_sync[0].clone();
            // what the code before the store wrote: no store, no settings_version
            let state_file = index_dir(dir.path(), &node, "old").join("_state.json");
            let mut meta: Value =
                serde_json::from_slice(&std::fs::read(&state_file).unwrap()).unwrap();
            meta.as_object_mut().unwrap().remove("settings_version");
            std::fs::write(&state_file, meta.to_string()).unwrap();
        }
        // the store of a restart keeps the cluster uuid and the allocation ids
        {
            let node = start(dir.path());
            let state = wait_started(&node, "old");
            assert_eq!(state.cluster_uuid, cluster_uuid);
            assert_eq!(
                state.cluster_uuid, node.node_id,
                "the identity GET / reported"
            );
            assert_eq!(state.shard("old", 0).unwrap().in_sync, vec![allocation_id]);
            node.shutdown();
        }
        std::fs::remove_dir_all(dir.path().join("_state").join("meta")).unwrap();
        let node = start(dir.path());
        assert_eq!(node.node_id, node_id);
        let state = wait_started(&node, "old");
        let meta = &state.index("old").unwrap().metadata;
        assert_eq!((meta.mapping_version, meta.settings_version), (2, 1));
        assert!(meta.mapping.to_json().to_string().contains("\"n\""));
        assert_eq!(
            stored_metadata(dir.path(), "old").to_json(),
            meta.to_json(),
            "the index was imported into the store"
        );
        assert_eq!(
            node.index("old").unwrap().metadata().mapping.to_json(),
            meta.mapping.to_json()
        );
    }

    #[test]
    fn the_newer_copy_of_index_metadata_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (old_state, path);
        {
            let node = start(dir.path());
            let index = node
                .create_index("a", Settings::new(), Mapping::default())
                .unwrap();
            path = index_dir(dir.path(), &node, "a").join("_state.json");
            old_state = std::fs::read(&path).unwrap();
            index
                .put_mapping(&json!({"properties": {"added": {"type": "keyword"}}}))
                .unwrap();
            node.shutdown();
        }
        // a crash after the store's write and before _state.json's: the store is newer
        std::fs::write(&path, &old_state).unwrap();
        {
            let node = start(dir.path());
            let meta = node.index("a").unwrap().metadata();
            assert_eq!(meta.mapping_version, 2);
            assert!(meta.mapping.to_json().to_string().contains("added"));
            assert_eq!(
                node.cluster_state()
                    .index("a")
                    .unwrap()
                    .metadata
                    .mapping_version,
                2
            );
            node.shutdown();
        }
        // and _state.json was brought up to date
        let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(on_disk["mapping_version"], 2);

        // the index's own file newer than the store (the store's copy from before an update)
        {
            let store = FileMetaStore::open(&dir.path().join("_state").join("meta")).unwrap();
            store
                .compare_and_set(&index_key("a"), Expect::Any, &old_state_json(&old_state), 0)
                .unwrap();
        }
        assert_eq!(stored_metadata(dir.path(), "a").mapping_version, 1);
        let node = start(dir.path());
        assert_eq!(node.index("a").unwrap().metadata().mapping_version, 2);
        assert_eq!(stored_metadata(dir.path(), "a").mapping_version, 2);
        // an index the store holds but the disk does not is dropped from the store
        node.shutdown();
        drop(node);
        {
            let store = FileMetaStore::open(&dir.path().join("_state").join("meta")).unwrap();
            let mut ghost = parse_metadata(&old_state_json(&old_state)).unwrap();
            ghost.name = "ghost".into();
            store
                .compare_and_set(
                    &index_key("ghost"),
                    Expect::Absent,
                    &metadata_bytes(&ghost),
                    0,
                )
                .unwrap();
        }
        let node = start(dir.path());
        assert_eq!(node.index_names(), ["a"]);
        assert!(node.cluster_state().index("ghost").is_none());
        assert!(node
            .metadata_store()
            .get("indices/ghost")
            .unwrap()
            .is_none());
    }

    /// `_state.json`'s bytes as the store keeps metadata.
    fn old_state_json(bytes: &[u8]) -> Vec<u8> {
        metadata_bytes(&IndexMetadata::from_json(&serde_json::from_slice(bytes).unwrap()).unwrap())
    }
}
