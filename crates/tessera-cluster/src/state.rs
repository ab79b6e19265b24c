//! `ClusterState`: the immutable snapshot of what every node must agree on: the nodes, each
//! index's metadata (settings, mapping and their versions) and each shard's routing (which node
//! holds which copy, allocation ids, primary term, in-sync set). A change never edits a state:
//! [`ClusterStateBuilder`] starts from the previous one and builds the next, with a higher
//! `version` (the `MetaStore` revision of the change it reflects).
//!
//! It is plain data (serde) because it crosses the wire and goes to etcd: index metadata, whose
//! mapping is a JSON tree, travels as JSON text so non-self-describing formats (postcard) carry
//! it too.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_index::IndexMetadata;

/// One node of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryNode {
    pub id: String,
    pub name: String,
    /// Differs each time the node process starts.
    pub ephemeral_id: String,
    pub transport_address: String,
    pub http_address: String,
    /// OpenSearch's role names: `cluster_manager`, `data`, `ingest`, …
    pub roles: Vec<String>,
}

/// The state of one copy of a shard, as OpenSearch's `ShardRoutingState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShardState {
    Unassigned,
    Initializing,
    Started,
    Relocating,
}

impl ShardState {
    pub fn as_str(self) -> &'static str {
        match self {
            ShardState::Unassigned => "UNASSIGNED",
            ShardState::Initializing => "INITIALIZING",
            ShardState::Started => "STARTED",
            ShardState::Relocating => "RELOCATING",
        }
    }
}

/// Why a copy is unassigned, and since when (OpenSearch's `UnassignedInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnassignedInfo {
    /// `INDEX_CREATED`, `ALLOCATION_FAILED`, `NODE_LEFT`, …
    pub reason: String,
    pub at_millis: i64,
    pub details: Option<String>,
    /// The node that held the copy last (OpenSearch's `last_allocated_node`): a primary whose
    /// only data is there goes back to it when it returns.
    #[serde(default)]
    pub last_node: Option<String>,
}

/// One copy of a shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRouting {
    pub shard: u32,
    pub primary: bool,
    pub state: ShardState,
    /// The node holding the copy; `None` when unassigned.
    pub node_id: Option<String>,
    /// The copy's allocation id; `None` when unassigned.
    pub allocation_id: Option<String>,
    pub unassigned: Option<UnassignedInfo>,
}

impl ShardRouting {
    pub fn is_active(&self) -> bool {
        matches!(self.state, ShardState::Started | ShardState::Relocating)
    }
}

/// Every copy of one shard, with the shard's primary term and in-sync set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardTable {
    pub shard: u32,
    /// Incremented each time a new primary is chosen.
    pub primary_term: u64,
    /// Allocation ids of the copies known to hold every acknowledged write.
    pub in_sync: Vec<String>,
    /// The primary first, then the replicas.
    pub copies: Vec<ShardRouting>,
}

impl ShardTable {
    pub fn primary(&self) -> Option<&ShardRouting> {
        self.copies.iter().find(|copy| copy.primary)
    }

    pub fn replicas(&self) -> impl Iterator<Item = &ShardRouting> {
        self.copies.iter().filter(|copy| !copy.primary)
    }
}

/// The routing of an index: its shards by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexRouting {
    pub shards: Vec<ShardTable>,
}

impl IndexRouting {
    /// A new index's routing on a single node: each primary initializing on `node_id` with a
    /// fresh allocation id (in sync from the start, as a new primary is), primary term 1, and
    /// `replicas` unassigned copies per shard (a replica never shares a node with its primary).
    pub fn single_node(shards: u32, replicas: u32, node_id: &str, now_millis: i64) -> Self {
        IndexRouting {
            shards: (0..shards)
                .map(|shard| {
                    let allocation_id = tessera_common::ids::random_uuid();
                    let mut copies = vec![ShardRouting {
                        shard,
                        primary: true,
                        state: ShardState::Initializing,
                        node_id: Some(node_id.to_string()),
                        allocation_id: Some(allocation_id.clone()),
                        unassigned: None,
                    }];
                    copies.extend((0..replicas).map(|_| ShardRouting {
                        shard,
                        primary: false,
                        state: ShardState::Unassigned,
                        node_id: None,
                        allocation_id: None,
                        unassigned: Some(UnassignedInfo {
                            reason: "INDEX_CREATED".to_string(),
                            at_millis: now_millis,
                            details: None,
                            last_node: None,
                        }),
                    }));
                    ShardTable {
                        shard,
                        primary_term: 1,
                        in_sync: vec![allocation_id],
                        copies,
                    }
                })
                .collect(),
        }
    }

    /// Sets the primary of `shard` to `state`: an unassigned primary leaves its node (its
    /// allocation id stays in the in-sync set), an assigned one comes back to `node_id` under
    /// its in-sync allocation id. Returns whether anything changed.
    pub fn set_primary_state(
        &mut self,
        shard: u32,
        state: ShardState,
        node_id: &str,
        reason: Option<(&str, &str, i64)>,
    ) -> bool {
        let Some(table) = self.shards.get_mut(shard as usize) else {
            return false;
        };
        let allocation_id = table.in_sync.first().cloned();
        let Some(primary) = table.copies.iter_mut().find(|copy| copy.primary) else {
            return false;
        };
        let next = if state == ShardState::Unassigned {
            ShardRouting {
                state,
                node_id: None,
                allocation_id: None,
                unassigned: reason.map(|(reason, details, at_millis)| UnassignedInfo {
                    reason: reason.to_string(),
                    at_millis,
                    details: Some(details.to_string()),
                    last_node: primary.node_id.clone(),
                }),
                ..primary.clone()
            }
        } else {
            ShardRouting {
                state,
                node_id: Some(node_id.to_string()),
                allocation_id: primary.allocation_id.clone().or(allocation_id),
                unassigned: None,
                ..primary.clone()
            }
        };
        // a failure's time and text change with each attempt; only the state is news
        let changed = next.state != primary.state || next.node_id != primary.node_id;
        if changed {
            *primary = next;
        }
        changed
    }

    /// Replicas made to match `replicas` (a settings update): missing ones added unassigned,
    /// extra ones dropped. Returns whether anything changed.
    pub fn set_replica_count(&mut self, replicas: u32, now_millis: i64) -> bool {
        let mut changed = false;
        for table in &mut self.shards {
            // a relocating replica is on its way out: its target takes its place
            let have = table
                .replicas()
                .filter(|copy| copy.state != ShardState::Relocating)
                .count() as u32;
            if have < replicas {
                for _ in have..replicas {
                    table.copies.push(ShardRouting {
                        shard: table.shard,
                        primary: false,
                        state: ShardState::Unassigned,
                        node_id: None,
                        allocation_id: None,
                        unassigned: Some(UnassignedInfo {
                            reason: "REPLICA_ADDED".to_string(),
                            at_millis: now_millis,
                            details: None,
                            last_node: None,
                        }),
                    });
                }
                changed = true;
            } else if have > replicas {
                // the replicas that serve the least go first: unassigned, then recovering
                let mut drop = have - replicas;
                let mut dropped = Vec::new();
                for state in [
                    ShardState::Unassigned,
                    ShardState::Initializing,
                    ShardState::Started,
                ] {
                    table.copies.retain(|copy| {
                        let goes = drop > 0 && !copy.primary && copy.state == state;
                        drop -= u32::from(goes);
                        if goes {
                            dropped.extend(copy.allocation_id.clone());
                        }
                        !goes
                    });
                }
                table.in_sync.retain(|id| !dropped.contains(id));
                changed = true;
            }
        }
        changed
    }
}

/// An index in the cluster state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndexState {
    #[serde(with = "metadata_as_json")]
    pub metadata: Arc<IndexMetadata>,
    pub routing: IndexRouting,
}

impl PartialEq for IndexState {
    fn eq(&self, other: &Self) -> bool {
        self.metadata.to_json() == other.metadata.to_json() && self.routing == other.routing
    }
}

/// Reads index metadata from its JSON form; a mapping may nest deeper than serde_json's
/// default recursion limit (the index's own `_state.json` is read the same way).
pub fn metadata_from_json(bytes: &[u8]) -> tessera_common::Result<IndexMetadata> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.disable_recursion_limit();
    let value = serde_json::Value::deserialize(&mut deserializer)
        .map_err(|e| tessera_common::Error::internal("parse index metadata", e))?;
    IndexMetadata::from_json(&value)
}

mod metadata_as_json {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use tessera_index::IndexMetadata;

    pub fn serialize<S: Serializer>(meta: &Arc<IndexMetadata>, s: S) -> Result<S::Ok, S::Error> {
        meta.to_json().to_string().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<IndexMetadata>, D::Error> {
        let text = String::deserialize(d)?;
        super::metadata_from_json(text.as_bytes())
            .map(Arc::new)
            .map_err(|e| serde::de::Error::custom(e.reason().to_string()))
    }
}

/// The cluster state; see the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterState {
    /// Increases with every change (the metadata store's revision of the change).
    pub version: u64,
    /// Differs for every state built, even at the same version on different nodes.
    pub state_uuid: String,
    pub cluster_name: String,
    /// Chosen once, when the cluster first formed, and persisted.
    pub cluster_uuid: String,
    /// The elected cluster manager's node id.
    pub cluster_manager: Option<String>,
    pub nodes: BTreeMap<String, DiscoveryNode>,
    pub indices: BTreeMap<String, IndexState>,
    /// The ingest pipelines: id → definition (the JSON text `PUT _ingest/pipeline/{id}` was
    /// given, validated by the node that took it; nodes compile it when they use it).
    #[serde(default)]
    pub pipelines: BTreeMap<String, String>,
    /// Cluster-wide metadata documents other than indices (index templates, component
    /// templates, …), by key (`index_template/<name>`, …): JSON, each read by the module that
    /// owns its kind.
    pub custom: BTreeMap<String, JsonDoc>,
}

/// A JSON document of the cluster state; JSON text on the wire (postcard cannot carry a
/// `serde_json::Value`).
#[derive(Clone, Debug, PartialEq)]
pub struct JsonDoc(pub Arc<serde_json::Value>);

impl Serialize for JsonDoc {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.to_string())
    }
}

impl<'de> Deserialize<'de> for JsonDoc {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        serde_json::from_str(&text)
            .map(|value| JsonDoc(Arc::new(value)))
            .map_err(serde::de::Error::custom)
    }
}

impl ClusterState {
    /// The state before anything happened: version 0, no nodes, no indices.
    pub fn empty(cluster_name: &str, cluster_uuid: &str) -> ClusterState {
        ClusterState {
            version: 0,
            state_uuid: tessera_common::ids::random_uuid(),
            cluster_name: cluster_name.to_string(),
            cluster_uuid: cluster_uuid.to_string(),
            cluster_manager: None,
            nodes: BTreeMap::new(),
            indices: BTreeMap::new(),
            custom: BTreeMap::new(),
            pipelines: BTreeMap::new(),
        }
    }

    /// The custom documents whose keys start with `prefix`, by the rest of their key.
    pub fn custom_under<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a serde_json::Value)> {
        self.custom
            .range(prefix.to_string()..)
            .take_while(move |(key, _)| key.starts_with(prefix))
            .map(move |(key, doc)| (&key[prefix.len()..], doc.0.as_ref()))
    }

    /// A builder of the next state, starting from this one.
    pub fn builder(&self) -> ClusterStateBuilder {
        ClusterStateBuilder {
            previous_version: self.version,
            version: None,
            next: self.clone(),
        }
    }

    pub fn index(&self, name: &str) -> Option<&IndexState> {
        self.indices.get(name)
    }

    /// The routing of one shard.
    pub fn shard(&self, index: &str, shard: u32) -> Option<&ShardTable> {
        self.indices.get(index)?.routing.shards.get(shard as usize)
    }

    /// The routing of one shard of the index `index` while it is the incarnation `uuid` (an
    /// index deleted and created again under the same name is another index).
    pub fn shard_of(&self, index: &str, uuid: &str, shard: u32) -> Option<&ShardTable> {
        let index = self
            .indices
            .get(index)
            .filter(|i| i.metadata.uuid == uuid)?;
        index.routing.shards.get(shard as usize)
    }

    /// Every copy on `node_id`, in index then shard order.
    pub fn copies_on<'a>(&'a self, node_id: &'a str) -> impl Iterator<Item = &'a ShardRouting> {
        self.indices
            .values()
            .flat_map(|index| &index.routing.shards)
            .flat_map(|table| &table.copies)
            .filter(move |copy| copy.node_id.as_deref() == Some(node_id))
    }
}

/// Builds the next [`ClusterState`] from the previous one.
pub struct ClusterStateBuilder {
    previous_version: u64,
    version: Option<u64>,
    next: ClusterState,
}

impl ClusterStateBuilder {
    /// The version of the state built (default: the previous one + 1). It must be higher than
    /// the previous state's: [`crate::holder::ClusterStateHolder::update`] refuses it otherwise.
    pub fn version(mut self, version: u64) -> Self {
        self.version = Some(version);
        self
    }

    pub fn cluster_manager(mut self, node_id: Option<String>) -> Self {
        self.next.cluster_manager = node_id;
        self
    }

    pub fn put_node(mut self, node: DiscoveryNode) -> Self {
        self.next.nodes.insert(node.id.clone(), node);
        self
    }

    pub fn remove_node(mut self, node_id: &str) -> Self {
        self.next.nodes.remove(node_id);
        self
    }

    pub fn put_index(mut self, index: IndexState) -> Self {
        self.next.indices.insert(index.metadata.name.clone(), index);
        self
    }

    /// Replaces an index's metadata, keeping its routing. An index the state does not hold
    /// is left out (its routing comes with [`Self::put_index`]).
    pub fn put_metadata(mut self, metadata: Arc<IndexMetadata>) -> Self {
        if let Some(index) = self.next.indices.get_mut(&metadata.name) {
            index.metadata = metadata;
        }
        self
    }

    /// Replaces an index's routing.
    pub fn put_routing(mut self, name: &str, routing: IndexRouting) -> Self {
        if let Some(index) = self.next.indices.get_mut(name) {
            index.routing = routing;
        }
        self
    }

    pub fn remove_index(mut self, name: &str) -> Self {
        self.next.indices.remove(name);
        self
    }

    /// Sets (`Some`) or removes (`None`) a custom document.
    pub fn put_custom(mut self, key: &str, doc: Option<serde_json::Value>) -> Self {
        match doc {
            Some(doc) => {
                self.next
                    .custom
                    .insert(key.to_string(), JsonDoc(Arc::new(doc)));
            }
            None => {
                self.next.custom.remove(key);
            }
        }
        self
    }

    /// Stores an ingest pipeline's definition (JSON text).
    pub fn put_pipeline(mut self, id: &str, definition: String) -> Self {
        self.next.pipelines.insert(id.to_string(), definition);
        self
    }

    pub fn remove_pipeline(mut self, id: &str) -> Self {
        self.next.pipelines.remove(id);
        self
    }

    pub fn build(self) -> ClusterState {
        ClusterState {
            version: self.version.unwrap_or(self.previous_version + 1),
            state_uuid: tessera_common::ids::random_uuid(),
            ..self.next
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tessera_common::settings::Settings;
    use tessera_mapping::Mapping;

    pub(crate) fn metadata(name: &str, shards: u32) -> Arc<IndexMetadata> {
        let mut settings = Settings::new();
        settings.set("index.number_of_shards", shards.to_string());
        Arc::new(IndexMetadata {
            name: name.to_string(),
            uuid: format!("{name}-uuid"),
            creation_date: 1,
            settings,
            mapping: Arc::new(
                Mapping::parse(&serde_json::json!({"properties": {"a": {"type": "keyword"}}}))
                    .unwrap(),
            ),
            mapping_version: 3,
            settings_version: 2,
            number_of_shards: shards,
            routing_shards: 1024,
            aliases: Default::default(),
            aliases_version: 1,
            closed: false,
            restore: None,
        })
    }

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.to_string(),
            name: format!("{id}-name"),
            ephemeral_id: "e".to_string(),
            transport_address: "127.0.0.1:9300".to_string(),
            http_address: "127.0.0.1:9200".to_string(),
            roles: vec!["cluster_manager".into(), "data".into()],
        }
    }

    fn sample() -> ClusterState {
        ClusterState::empty("tessera", "cluster-uuid")
            .builder()
            .put_node(node("n1"))
            .cluster_manager(Some("n1".into()))
            .put_index(IndexState {
                metadata: metadata("logs", 2),
                routing: IndexRouting::single_node(2, 1, "n1", 5),
            })
            .build()
    }

    #[test]
    fn a_builder_starts_from_the_previous_state_and_bumps_the_version() {
        let first = sample();
        assert_eq!(first.version, 1);
        let second = first
            .builder()
            .put_metadata(metadata("logs", 2))
            .put_metadata(metadata("unknown", 1))
            .build();
        assert_eq!(second.version, 2);
        assert_ne!(second.state_uuid, first.state_uuid);
        assert_eq!(second.nodes, first.nodes);
        assert!(second.index("unknown").is_none());
        let third = second.builder().version(10).remove_index("logs").build();
        assert_eq!(third.version, 10);
        assert!(third.indices.is_empty());
        // the previous states are untouched
        assert_eq!(first.indices.len(), 1);
        assert_eq!(second.indices.len(), 1);
    }

    #[test]
    fn single_node_routing_has_an_in_sync_primary_and_unassigned_replicas() {
        let state = sample();
        let table = state.shard("logs", 1).unwrap();
        let uuid = &state.index("logs").unwrap().metadata.uuid;
        assert_eq!(state.shard_of("logs", uuid, 1), Some(table));
        // another incarnation of the name, or a shard it does not have
        assert_eq!(state.shard_of("logs", "another-uuid", 1), None);
        assert_eq!(state.shard_of("logs", uuid, 99), None);
        let primary = table.primary().unwrap();
        assert_eq!(primary.state, ShardState::Initializing);
        assert_eq!(primary.node_id.as_deref(), Some("n1"));
        assert_eq!(table.in_sync, vec![primary.allocation_id.clone().unwrap()]);
        assert_eq!(table.primary_term, 1);
        let replicas: Vec<_> = table.replicas().collect();
        assert_eq!(replicas.len(), 1);
        assert_eq!(replicas[0].state, ShardState::Unassigned);
        assert_eq!(
            replicas[0].unassigned.as_ref().unwrap().reason,
            "INDEX_CREATED"
        );
        assert_ne!(
            state.shard("logs", 0).unwrap().in_sync,
            table.in_sync,
            "allocation ids differ per shard"
        );
        assert_eq!(state.copies_on("n1").count(), 2);

        let mut routing = state.index("logs").unwrap().routing.clone();
        assert!(routing.set_primary_state(0, ShardState::Started, "n1", None));
        assert!(!routing.set_primary_state(0, ShardState::Started, "n1", None));
        assert!(routing.set_primary_state(
            0,
            ShardState::Unassigned,
            "n1",
            Some(("ALLOCATION_FAILED", "disk full", 7))
        ));
        let failed = routing.shards[0].primary().unwrap();
        assert_eq!(
            (failed.node_id.as_ref(), failed.allocation_id.as_ref()),
            (None, None)
        );
        // it comes back under the allocation id that is in sync
        assert!(routing.set_primary_state(0, ShardState::Started, "n1", None));
        let back = routing.shards[0].primary().unwrap();
        assert_eq!(
            back.allocation_id.as_ref(),
            routing.shards[0].in_sync.first()
        );
        assert!(routing.set_replica_count(2, 9));
        assert_eq!(routing.shards[1].replicas().count(), 2);
        assert!(routing.set_replica_count(0, 9));
        assert_eq!(routing.shards[1].copies.len(), 1);
        assert!(!routing.set_replica_count(0, 9));
    }

    #[test]
    fn a_deeply_nested_mapping_round_trips() {
        let mut properties = serde_json::json!({"leaf": {"type": "keyword"}});
        for depth in 0..100 {
            properties = serde_json::json!({format!("o{depth}"): {"properties": properties}});
        }
        let mut meta = (*metadata("deep", 1)).clone();
        meta.mapping =
            Arc::new(Mapping::parse(&serde_json::json!({"properties": properties})).unwrap());
        let state = ClusterState::empty("c", "u")
            .builder()
            .put_index(IndexState {
                metadata: Arc::new(meta),
                routing: IndexRouting::single_node(1, 0, "n", 0),
            })
            .build();
        let back: ClusterState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        assert_eq!(back, state);
        let back: ClusterState =
            postcard::from_bytes(&postcard::to_stdvec(&state).unwrap()).unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn the_state_round_trips_through_json_and_postcard() {
        let state = sample();
        let json = serde_json::to_string(&state).unwrap();
        let back: ClusterState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, state);
        let bytes = postcard::to_stdvec(&state).unwrap();
        let back: ClusterState = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, state);
        let meta = &back.index("logs").unwrap().metadata;
        assert_eq!((meta.mapping_version, meta.settings_version), (3, 2));
        assert_eq!(
            meta.mapping.to_json(),
            metadata("logs", 2).mapping.to_json()
        );
    }
}
