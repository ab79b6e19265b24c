//! The elected cluster manager's side: the only writer of index metadata and shard routing.
//! Every decision reads the cluster state as the store has it now (the manager first waits for
//! its own state to reach the store's revision, so a decision never builds on a stale state,
//! an earlier manager's last writes included), writes one transaction fenced by the manager's
//! election key (a node that lost the election cannot write), and waits until its own state
//! shows the write before the next decision. Decisions run one at a time.
//!
//! Other nodes send these requests over the transport (`super::actions`); on the manager
//! itself they are direct calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_cluster::allocation::AllocationEnable;
use tessera_cluster::layout::{
    custom_key, index_key, pipeline_key, routing_key, StoredRouting, CLUSTER_KEY, SETTINGS_KEY,
};
use tessera_cluster::meta_store::TxnOp;
use tessera_cluster::{allocation, ClusterState, ClusterStateHolder, Expect, MetaError, MetaStore};
use tessera_cluster::{IndexRouting, Revision};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::{IndexMetadata, IndexService};
use tessera_mapping::Mapping;

use super::membership::Membership;
use crate::pending_tasks::{PendingTasks, Priority};

/// How long a decision waits for the node's state to catch up with the store.
const CATCH_UP: Duration = Duration::from_secs(10);

/// `PUT /{index}` as the manager gets it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CreateIndex {
    pub name: String,
    /// Flat JSON settings.
    pub settings: String,
    /// The mapping's JSON.
    pub mapping: String,
    /// The aliases' JSON (`{name: definition}`).
    pub aliases: String,
    /// A restored index: where its primaries take their first commit from.
    pub restore: Option<tessera_index::snapshot_files::RestoreSource>,
}

/// `_shrink`, `_split`, `_clone` as the manager gets them (checked against the source's shard
/// count by the node that took the request).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResizeIndex {
    pub kind: crate::resize::ResizeType,
    pub source: String,
    pub source_uuid: String,
    pub target: String,
    /// The request's flat JSON settings (`index.number_of_shards` set).
    pub settings: String,
    /// The aliases' JSON.
    pub aliases: String,
}

/// A change of custom documents (templates, data streams: `crate::custom::CustomChange`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CustomUpdate {
    pub change: crate::custom::CustomChange,
}

/// `POST /_aliases`: the actions' JSON (`{"actions": [...]}`), decided as one change.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AliasesUpdate {
    pub actions: String,
}

/// A change of an index's metadata asked for by any node.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MetadataUpdate {
    pub index: String,
    pub index_uuid: String,
    pub change: MetadataChange,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum MetadataChange {
    /// A mapping (JSON) to merge into the index's: new fields are added; a conflict fails.
    Mapping(String),
    /// A settings update (flat JSON; `null` resets a key).
    Settings(String),
    /// Closes (`true`) or opens the index.
    Closed(bool),
}

/// `PUT _cluster/settings` as the manager gets it (flat JSON, validated by the node that took
/// the request).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClusterSettingsUpdate {
    pub persistent: String,
    pub transient: String,
}

/// `PUT _ingest/pipeline/{id}` as the manager gets it: the definition (JSON text) was
/// validated by the node that took the request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PutPipeline {
    pub id: String,
    pub definition: String,
}

/// A node's news about its copy of a shard.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardReport {
    pub index: String,
    pub index_uuid: String,
    pub shard: u32,
    pub node_id: String,
    /// The replica's allocation id; `None`: the copy is the primary.
    pub replica: Option<String>,
    /// Set when the primary reports a replica that missed a write: its term, which must still
    /// be the shard's (a replaced primary may not change the in-sync set).
    pub primary_term: Option<u64>,
    /// Why the copy failed; `None`: it started.
    pub failure: Option<String>,
}

/// The answer to a metadata update: the metadata the manager decided (JSON) and the revision
/// that wrote it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MetadataDecided {
    pub revision: Revision,
    pub metadata: String,
}

/// The source a shard report is queued under (OpenSearch's `shard-started` and `shard-failed`).
fn shard_report_source(report: &ShardReport) -> String {
    let kind = if report.failure.is_some() {
        "shard-failed"
    } else {
        "shard-started"
    };
    format!(
        "{kind} [{}][{}] on node [{}]",
        report.index, report.shard, report.node_id
    )
}

/// OpenSearch's error for a request that reached a node that does not lead.
pub fn not_cluster_manager() -> Error {
    Error::new(
        "not_cluster_manager_exception",
        503,
        "no longer the elected cluster manager",
    )
}

/// See the module documentation.
pub struct Manager {
    store: Arc<dyn MetaStore>,
    holder: Arc<ClusterStateHolder>,
    membership: Arc<Membership>,
    decide: Mutex<()>,
    /// The decisions waiting for (or holding) `decide`.
    pub pending: PendingTasks,
    /// `cluster.routing.allocation.enable`, as this node last applied the cluster settings.
    allocation: Mutex<AllocationEnable>,
}

fn parse_json(text: &str, what: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("read the {what}"), e))
}

fn put(key: String, expect: Expect, value: Vec<u8>) -> TxnOp {
    TxnOp::Put {
        key,
        expect,
        value,
        lease: 0,
    }
}

fn routing_op(name: &str, uuid: &str, routing: IndexRouting, expect: Expect) -> TxnOp {
    let stored = StoredRouting {
        index_uuid: uuid.to_string(),
        routing,
    };
    put(routing_key(name), expect, stored.to_bytes())
}

fn metadata_op(meta: &IndexMetadata, expect: Expect) -> TxnOp {
    put(
        index_key(&meta.name),
        expect,
        meta.to_json().to_string().into_bytes(),
    )
}

impl Manager {
    pub fn new(
        store: Arc<dyn MetaStore>,
        holder: Arc<ClusterStateHolder>,
        membership: Arc<Membership>,
    ) -> Manager {
        Manager {
            store,
            holder,
            membership,
            decide: Mutex::new(()),
            pending: PendingTasks::default(),
            allocation: Mutex::new(AllocationEnable::All),
        }
    }

    /// Takes `cluster.routing.allocation.enable` from the cluster settings just applied.
    pub fn set_allocation_enable(&self, enable: AllocationEnable) {
        *self.allocation.lock().unwrap() = enable;
    }

    fn allocation_enable(&self) -> AllocationEnable {
        *self.allocation.lock().unwrap()
    }

    /// Whether this node leads the cluster now.
    pub fn is_leader(&self) -> bool {
        self.membership.leader_key().is_some()
    }

    /// One decision: see the module documentation. Returns the revision that holds it (the
    /// current one when there was nothing to write).
    fn commit(
        &self,
        (source, priority): (String, Priority),
        decide: impl FnOnce(&ClusterState) -> Result<Vec<TxnOp>>,
    ) -> Result<Revision> {
        let _one_at_a_time = self.pending.take_turn(&self.decide, source, priority);
        let fence = self
            .membership
            .leader_key()
            .ok_or_else(not_cluster_manager)?;
        let head = self.store.list(CLUSTER_KEY)?.revision;
        let state = self
            .holder
            .wait_for_version(head, CATCH_UP)
            .ok_or_else(|| catching_up(head))?;
        let ops = decide(&state)?;
        if ops.is_empty() {
            return Ok(state.version);
        }
        match self.store.commit(Some(&fence), &ops) {
            Ok(revision) => {
                self.holder
                    .wait_for_version(revision, CATCH_UP)
                    .ok_or_else(|| catching_up(revision))?;
                Ok(revision)
            }
            Err(MetaError::NotLeader { .. }) => {
                self.membership.lost_leadership();
                Err(not_cluster_manager())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates an index: its metadata, and its primaries allocated over the data nodes.
    pub fn create_index(&self, request: &CreateIndex) -> Result<Revision> {
        let settings = Settings::from_json(&parse_json(&request.settings, "settings")?)?;
        let mapping = Mapping::parse(&parse_json(&request.mapping, "mapping")?)?;
        let uuid = tessera_common::ids::random_uuid();
        let mut meta = IndexService::new_metadata(&request.name, &uuid, settings, mapping)?;
        meta.aliases =
            tessera_index::aliases::parse_aliases(&parse_json(&request.aliases, "aliases")?)?;
        meta.restore = request.restore.clone();
        let name = request.name.clone();
        let result = self.commit(
            (
                format!("create-index [{}], cause [api]", request.name),
                Priority::Urgent,
            ),
            |state| {
                if let Some(existing) = state.index(&name) {
                    return Err(Error::resource_already_exists(
                        &name,
                        &existing.metadata.uuid,
                    ));
                }
                crate::aliases::check_new_index(&name, &meta.aliases, &index_view(state))?;
                let routing = allocation::new_index_with(
                    state,
                    meta.number_of_shards,
                    meta.number_of_replicas(),
                    meta.creation_date,
                    self.allocation_enable(),
                );
                Ok(vec![
                    metadata_op(&meta, Expect::Absent),
                    routing_op(&name, &uuid, routing, Expect::Absent),
                ])
            },
        );
        match result {
            Err(e) if e.kind() == "concurrent_modification_exception" => {
                let uuid = self
                    .holder
                    .current()
                    .index(&name)
                    .map(|index| index.metadata.uuid.clone())
                    .unwrap_or_default();
                Err(Error::resource_already_exists(&name, &uuid))
            }
            other => other,
        }
    }

    /// Creates a resized index: its metadata from the source's, each primary on the node that
    /// holds the started primaries of its source shards (which builds it from them).
    pub fn resize_index(&self, request: &ResizeIndex) -> Result<Revision> {
        let settings = Settings::from_json(&parse_json(&request.settings, "settings")?)?;
        let aliases =
            tessera_index::aliases::parse_aliases(&parse_json(&request.aliases, "aliases")?)?;
        let uuid = tessera_common::ids::random_uuid();
        let resize = crate::resize::ResizeRequest {
            kind: request.kind,
            source: request.source.clone(),
            target: request.target.clone(),
            settings,
            aliases,
        };
        let target = &request.target;
        self.commit(
            (
                format!("resize-index [{}] into [{target}]", request.source),
                Priority::Urgent,
            ),
            |state| {
                let source = state
                    .index(&request.source)
                    .filter(|index| index.metadata.uuid == request.source_uuid)
                    .ok_or_else(|| Error::index_not_found(&request.source))?;
                if let Some(existing) = state.index(target) {
                    return Err(Error::resource_already_exists(
                        target,
                        &existing.metadata.uuid,
                    ));
                }
                crate::aliases::check_new_index(target, &resize.aliases, &index_view(state))?;
                crate::resize::check_source(&source.metadata)?;
                let mut meta = crate::resize::target_metadata(&source.metadata, &resize, &uuid)?;
                meta.aliases = resize.aliases.clone();
                let nodes = crate::resize::primary_nodes(
                    request.kind,
                    &source.metadata,
                    &source.routing,
                    meta.number_of_shards,
                )?;
                let mut routing = IndexRouting::single_node(
                    meta.number_of_shards,
                    meta.number_of_replicas(),
                    "",
                    meta.creation_date,
                );
                for (table, node) in routing.shards.iter_mut().zip(nodes) {
                    if let Some(primary) = table.copies.iter_mut().find(|copy| copy.primary) {
                        primary.node_id = Some(node);
                    }
                }
                Ok(vec![
                    metadata_op(&meta, Expect::Absent),
                    routing_op(target, &uuid, routing, Expect::Absent),
                ])
            },
        )
    }

    /// Deletes indices (those already gone are skipped).
    pub fn delete_indices(&self, names: &[String]) -> Result<Revision> {
        self.commit(
            (format!("delete-index {names:?}"), Priority::Urgent),
            |state| {
                Ok(names
                    .iter()
                    .filter(|name| state.index(name).is_some())
                    .flat_map(|name| {
                        [index_key(name), routing_key(name)].map(|key| TxnOp::Delete {
                            key,
                            expect: Expect::Any,
                        })
                    })
                    .collect())
            },
        )
    }

    /// Merges a mapping or applies a settings update; returns the metadata decided (the
    /// current one when nothing changes) and the revision that holds it.
    pub fn update_metadata(&self, update: &MetadataUpdate) -> Result<MetadataDecided> {
        let mut decided = None;
        let revision = self.commit(
            (
                format!("update-index-metadata [{}]", update.index),
                Priority::High,
            ),
            |state| {
                let index = state
                    .index(&update.index)
                    .filter(|index| index.metadata.uuid == update.index_uuid)
                    .ok_or_else(|| Error::index_not_found(&update.index))?;
                let current = &index.metadata;
                let next = match &update.change {
                    MetadataChange::Mapping(json) => {
                        let mut mapping = (*current.mapping).clone();
                        mapping.merge_json(&parse_json(json, "mapping")?)?;
                        current.with_mapping(mapping)?
                    }
                    MetadataChange::Settings(json) => {
                        let update = Settings::from_json(&parse_json(json, "settings")?)?;
                        current.with_settings(&update)
                    }
                    MetadataChange::Closed(closed) => current.with_closed(*closed),
                };
                let Some(next) = next else {
                    decided = Some((**current).clone());
                    return Ok(Vec::new());
                };
                let mut ops = vec![metadata_op(&next, Expect::Any)];
                let mut routing = index.routing.clone();
                let now = tessera_common::time::now_millis();
                if routing.set_replica_count(next.number_of_replicas(), now) {
                    ops.push(routing_op(&next.name, &next.uuid, routing, Expect::Any));
                }
                decided = Some(next);
                Ok(ops)
            },
        )?;
        let metadata = decided.ok_or_else(|| Error::illegal_state("no metadata decided"))?;
        Ok(MetadataDecided {
            revision,
            metadata: metadata.to_json().to_string(),
        })
    }

    /// Applies `_aliases` actions to the indices they name, in one transaction: every index
    /// whose aliases change, and those `remove_index` deletes.
    pub fn update_aliases(&self, update: &AliasesUpdate) -> Result<Revision> {
        let actions = crate::aliases::parse_actions(&parse_json(&update.actions, "actions")?)?;
        self.commit(("index-aliases".to_string(), Priority::Urgent), |state| {
            let change = crate::aliases::apply_actions(&actions, &index_view(state))?;
            let mut ops: Vec<TxnOp> = change
                .changed
                .iter()
                .map(|meta| metadata_op(meta, Expect::Any))
                .collect();
            for name in &change.removed {
                for key in [index_key(name), routing_key(name)] {
                    ops.push(TxnOp::Delete {
                        key,
                        expect: Expect::Any,
                    });
                }
            }
            Ok(ops)
        })
    }

    /// Puts or deletes custom documents of the state (templates, data streams).
    pub fn update_custom(&self, update: &CustomUpdate) -> Result<Revision> {
        self.commit(
            ("update-custom-metadata".to_string(), Priority::Urgent),
            |state| {
                Ok(update
                    .change
                    .decide(state)?
                    .into_iter()
                    .map(|(key, doc)| match doc {
                        Some(doc) => {
                            put(custom_key(&key), Expect::Any, doc.to_string().into_bytes())
                        }
                        None => TxnOp::Delete {
                            key: custom_key(&key),
                            expect: Expect::Any,
                        },
                    })
                    .collect())
            },
        )
    }

    /// Applies a cluster settings update to the stored settings.
    pub fn update_cluster_settings(&self, update: &ClusterSettingsUpdate) -> Result<Revision> {
        let persistent = Settings::from_json(&parse_json(&update.persistent, "settings")?)?;
        let transient = Settings::from_json(&parse_json(&update.transient, "settings")?)?;
        crate::cluster_settings::ClusterSettings::validate(&persistent, &transient)?;
        self.commit(
            ("cluster_update_settings".to_string(), Priority::Urgent),
            |_| {
                let current = self.store.get(SETTINGS_KEY)?;
                let next = crate::cluster_settings::ClusterSettings::merged_stored(
                    current.as_ref().map(|kv| kv.value.as_slice()),
                    &persistent,
                    &transient,
                )?;
                if current.as_ref().is_some_and(|kv| kv.value == next) {
                    return Ok(Vec::new());
                }
                let expect = match &current {
                    Some(kv) => Expect::ModRevision(kv.mod_revision),
                    None => Expect::Absent,
                };
                Ok(vec![put(SETTINGS_KEY.to_string(), expect, next)])
            },
        )
    }

    /// Stores an ingest pipeline (cluster metadata, as OpenSearch keeps pipelines).
    pub fn put_pipeline(&self, request: &PutPipeline) -> Result<Revision> {
        self.commit(
            (format!("put-pipeline-{}", request.id), Priority::Normal),
            |state| {
                if state.pipelines.get(&request.id) == Some(&request.definition) {
                    return Ok(Vec::new());
                }
                Ok(vec![put(
                    pipeline_key(&request.id),
                    Expect::Any,
                    request.definition.clone().into_bytes(),
                )])
            },
        )
    }

    /// Deletes ingest pipelines (those already gone are skipped).
    pub fn delete_pipelines(&self, ids: &[String]) -> Result<Revision> {
        self.commit(
            (
                format!("delete-pipeline-{}", ids.join(",")),
                Priority::Normal,
            ),
            |state| {
                Ok(ids
                    .iter()
                    .filter(|id| state.pipelines.contains_key(*id))
                    .map(|id| TxnOp::Delete {
                        key: pipeline_key(id),
                        expect: Expect::Any,
                    })
                    .collect())
            },
        )
    }

    /// Records a node's news about its copy of a shard.
    pub fn shard_report(&self, report: &ShardReport) -> Result<Revision> {
        self.commit((shard_report_source(report), Priority::Urgent), |state| {
            let Some(index) = state
                .index(&report.index)
                .filter(|index| index.metadata.uuid == report.index_uuid)
            else {
                return Ok(Vec::new());
            };
            let mut routing = index.routing.clone();
            if let (Some(term), Some(table)) = (
                report.primary_term,
                routing.shards.get(report.shard as usize),
            ) {
                if table.primary_term != term {
                    return Err(Error::new(
                        "shard_not_in_primary_mode_exception",
                        409,
                        format!(
                            "[{}][{}] primary term [{term}] is not the current one [{}]",
                            report.index, report.shard, table.primary_term
                        ),
                    ));
                }
            }
            let (shard, node, now) = (
                report.shard,
                &report.node_id,
                tessera_common::time::now_millis(),
            );
            let changed = match (&report.replica, &report.failure) {
                (None, None) => allocation::primary_started(&mut routing, shard, node),
                (None, Some(details)) => {
                    allocation::primary_failed(&mut routing, shard, node, details, now)
                }
                (Some(id), None) => allocation::replica_started(&mut routing, shard, node, id),
                (Some(id), Some(details)) => {
                    allocation::replica_failed(&mut routing, shard, node, id, details, now)
                }
            };
            Ok(if changed {
                vec![routing_op(
                    &report.index,
                    &report.index_uuid,
                    routing,
                    Expect::Any,
                )]
            } else {
                Vec::new()
            })
        })
    }

    /// Applies what the nodes' comings and goings call for (`allocation::reroute`).
    pub fn reroute(&self) -> Result<Revision> {
        self.commit(
            (
                "cluster_reroute(reroute after a change)".to_string(),
                Priority::High,
            ),
            |state| {
                let now = tessera_common::time::now_millis();
                Ok(
                    allocation::reroute_with(state, now, self.allocation_enable())
                        .into_iter()
                        .filter_map(|(name, routing)| {
                            let uuid = state.index(&name)?.metadata.uuid.clone();
                            Some(routing_op(&name, &uuid, routing, Expect::Any))
                        })
                        .collect(),
                )
            },
        )
    }
}

/// The indices' metadata by name, as alias decisions read them.
fn index_view(state: &ClusterState) -> crate::aliases::IndexView {
    state
        .indices
        .iter()
        .map(|(name, index)| (name.clone(), index.metadata.clone()))
        .collect()
}

fn catching_up(revision: Revision) -> Error {
    Error::new(
        "process_cluster_event_timeout_exception",
        503,
        format!("the cluster state did not reach revision [{revision}] in time"),
    )
}
