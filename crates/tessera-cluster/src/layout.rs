//! Where the cluster state lives in the `MetaStore`, and how a node rebuilds the state from it.
//!
//! Keys: `cluster` (the cluster uuid, chosen once), `settings` (the cluster settings),
//! `nodes/<id>` (a node, bound to its lease:
//! it vanishes when the node dies), `cluster_manager/…` (the election's candidates, the lowest
//! create revision leading), `indices/<name>` (an index's metadata, as its `_state.json`) and
//! `routing/<name>` (its [`IndexRouting`] tied to its uuid), `ingest/<id>` (an ingest
//! pipeline's definition, JSON) and `custom/<kind>/<name>` (a custom metadata document: an index
//! template, a data stream, …). An index's two keys are written in one transaction, so a state
//! built at any revision sees both or neither.
//!
//! [`StateFold`] holds the keys a node has seen (a listing, then its watch's events) and builds
//! the [`ClusterState`] at the revision of the last event: every node builds the same state
//! from the same revision, which is the state's version.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::meta_store::{election_prefix, KeyValue, Listing, Revision, WatchEvent};
use crate::state::{metadata_from_json, ClusterState, DiscoveryNode, IndexRouting, IndexState};
use tessera_index::IndexMetadata;

pub const CLUSTER_KEY: &str = "cluster";
pub const INDICES: &str = "indices/";
pub const ROUTING: &str = "routing/";
pub const NODES: &str = "nodes/";
/// The cluster-manager election.
pub const ELECTION: &str = "cluster_manager";
/// The cluster settings (`PUT _cluster/settings`), persistent and transient.
pub const SETTINGS_KEY: &str = "settings";
/// Custom metadata documents: `custom/<kind>/<name>` (see [`ClusterState::custom`]).
pub const CUSTOM: &str = "custom/";

pub fn custom_key(key: &str) -> String {
    format!("{CUSTOM}{key}")
}

/// Ingest pipelines, one key each.
pub const INGEST: &str = "ingest/";

pub fn pipeline_key(id: &str) -> String {
    format!("{INGEST}{id}")
}

pub fn index_key(name: &str) -> String {
    format!("{INDICES}{name}")
}

pub fn routing_key(name: &str) -> String {
    format!("{ROUTING}{name}")
}

pub fn node_key(id: &str) -> String {
    format!("{NODES}{id}")
}

/// What `routing/<name>` holds: the routing of one index, tied to its uuid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredRouting {
    pub index_uuid: String,
    pub routing: IndexRouting,
}

impl StoredRouting {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("routing serialises")
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<StoredRouting> {
        serde_json::from_slice(bytes).ok()
    }
}

/// The cluster uuid stored under [`CLUSTER_KEY`].
pub fn cluster_uuid_of(value: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(value).ok()?;
    value["cluster_uuid"].as_str().map(String::from)
}

/// The keys of the store a node has seen; see the module documentation.
pub struct StateFold {
    cluster_name: String,
    keys: BTreeMap<String, KeyValue>,
    revision: Revision,
    /// Index metadata already parsed, by key, with the revision it was parsed at: a state is
    /// built after every change, and most changes touch no metadata (routing, nodes).
    parsed: BTreeMap<String, (Revision, Arc<IndexMetadata>)>,
}

impl StateFold {
    /// Starts from a listing of the whole store.
    pub fn new(cluster_name: &str, listing: Listing) -> StateFold {
        StateFold {
            cluster_name: cluster_name.to_string(),
            keys: listing
                .kvs
                .into_iter()
                .map(|kv| (kv.key.clone(), kv))
                .collect(),
            revision: listing.revision,
            parsed: BTreeMap::new(),
        }
    }

    /// The revision of the last change folded in.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    pub fn apply(&mut self, event: WatchEvent) {
        self.revision = self.revision.max(event.revision());
        match event {
            WatchEvent::Put(kv) => {
                self.keys.insert(kv.key.clone(), kv);
            }
            WatchEvent::Delete(kv) => {
                self.keys.remove(&kv.key);
            }
        }
    }

    /// The key as last seen (with its revisions).
    pub fn key(&self, key: &str) -> Option<&KeyValue> {
        self.keys.get(key)
    }

    fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a KeyValue)> {
        self.keys
            .range(prefix.to_string()..)
            .take_while(move |(key, _)| key.starts_with(prefix))
            .map(move |(key, kv)| (&key[prefix.len()..], kv))
    }

    /// The state at the last revision folded in. Entries that cannot be read are left out
    /// with a message (a newer node's format, a torn write): the rest of the cluster works.
    pub fn build(&mut self) -> ClusterState {
        self.parsed.retain(|key, (revision, _)| {
            self.keys
                .get(key)
                .is_some_and(|kv| kv.mod_revision == *revision)
        });
        let cluster_uuid = self
            .key(CLUSTER_KEY)
            .and_then(|kv| cluster_uuid_of(&kv.value))
            .unwrap_or_default();
        let mut state = ClusterState::empty(&self.cluster_name, &cluster_uuid);
        state.version = self.revision;
        for (id, kv) in self.under(NODES) {
            match serde_json::from_slice::<DiscoveryNode>(&kv.value) {
                Ok(node) => {
                    state.nodes.insert(id.to_string(), node);
                }
                Err(e) => eprintln!("cannot read the node [{id}] in the metadata store: {e}"),
            }
        }
        let election = election_prefix(ELECTION);
        state.cluster_manager = self
            .under(&election)
            .min_by_key(|(_, kv)| kv.create_revision)
            .map(|(_, kv)| String::from_utf8_lossy(&kv.value).into_owned())
            // a leader whose node key is gone (its lease is ending) leads nothing
            .filter(|id| state.nodes.contains_key(id));
        let mut parsed_now = Vec::new();
        for (name, kv) in self.under(INDICES) {
            let metadata = match self.parsed.get(&kv.key) {
                Some((_, metadata)) => metadata.clone(),
                None => match metadata_from_json(&kv.value) {
                    Ok(metadata) => {
                        let metadata = Arc::new(metadata);
                        parsed_now.push((kv.key.clone(), kv.mod_revision, metadata.clone()));
                        metadata
                    }
                    Err(e) => {
                        eprintln!("cannot read the index [{name}] in the metadata store: {e}");
                        continue;
                    }
                },
            };
            let routing = self
                .key(&routing_key(name))
                .and_then(|kv| StoredRouting::from_bytes(&kv.value))
                .filter(|stored| {
                    stored.index_uuid == metadata.uuid
                        && stored.routing.shards.len() == metadata.number_of_shards as usize
                });
            match routing {
                Some(stored) => {
                    state.indices.insert(
                        name.to_string(),
                        IndexState {
                            metadata,
                            routing: stored.routing,
                        },
                    );
                }
                None => eprintln!("the index [{name}] has no routing in the metadata store"),
            }
        }
        for (key, kv) in self.under(CUSTOM) {
            match serde_json::from_slice::<serde_json::Value>(&kv.value) {
                Ok(doc) => {
                    state
                        .custom
                        .insert(key.to_string(), crate::state::JsonDoc(Arc::new(doc)));
                }
                Err(e) => eprintln!("cannot read [{key}] in the metadata store: {e}"),
            }
        }
        for (id, kv) in self.under(INGEST) {
            match std::str::from_utf8(&kv.value) {
                Ok(definition) => {
                    state
                        .pipelines
                        .insert(id.to_string(), definition.to_string());
                }
                Err(_) => eprintln!("cannot read the pipeline [{id}] in the metadata store"),
            }
        }
        for (key, revision, metadata) in parsed_now {
            self.parsed.insert(key, (revision, metadata));
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::metadata;

    fn kv(key: &str, value: Vec<u8>, revision: Revision) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value,
            create_revision: revision,
            mod_revision: revision,
            version: 1,
            lease: 0,
        }
    }

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.to_string(),
            name: format!("name-{id}"),
            ephemeral_id: "e".to_string(),
            transport_address: "127.0.0.1:9300".to_string(),
            http_address: "127.0.0.1:9200".to_string(),
            roles: vec!["data".to_string()],
        }
    }

    #[test]
    fn the_state_is_built_from_the_keys_at_a_revision() {
        let meta = metadata("logs", 2);
        let routing = IndexRouting::single_node(2, 0, "n1", 1);
        let stored = StoredRouting {
            index_uuid: meta.uuid.clone(),
            routing: routing.clone(),
        };
        let listing = Listing {
            kvs: vec![
                kv(CLUSTER_KEY, br#"{"cluster_uuid":"cu"}"#.to_vec(), 1),
                kv("nodes/n1", serde_json::to_vec(&node("n1")).unwrap(), 2),
                kv("nodes/n2", serde_json::to_vec(&node("n2")).unwrap(), 3),
                kv("cluster_manager/b", b"n2".to_vec(), 5),
                kv("cluster_manager/a", b"n1".to_vec(), 4),
                kv(
                    &index_key("logs"),
                    meta.to_json().to_string().into_bytes(),
                    6,
                ),
                kv(&routing_key("logs"), stored.to_bytes(), 6),
                kv(&pipeline_key("p1"), br#"{"processors":[]}"#.to_vec(), 6),
                // metadata without routing: not an index yet
                kv(
                    &index_key("half"),
                    metadata("half", 1).to_json().to_string().into_bytes(),
                    7,
                ),
            ],
            revision: 7,
        };
        let mut fold = StateFold::new("c", listing);
        let state = fold.build();
        assert_eq!(state.version, 7);
        assert_eq!(state.cluster_uuid, "cu");
        assert_eq!(state.cluster_manager.as_deref(), Some("n1"));
        assert_eq!(state.nodes.len(), 2);
        assert_eq!(state.indices.len(), 1);
        assert_eq!(state.index("logs").unwrap().routing, routing);
        assert_eq!(state.pipelines["p1"], r#"{"processors":[]}"#);

        // metadata is parsed once per change of its key
        let again = fold.build();
        assert!(Arc::ptr_eq(
            &state.index("logs").unwrap().metadata,
            &again.index("logs").unwrap().metadata
        ));

        // the leader's node leaves: the next candidate leads once its key is the lowest
        fold.apply(WatchEvent::Delete(kv("nodes/n1", vec![], 8)));
        assert_eq!(fold.build().cluster_manager, None);
        fold.apply(WatchEvent::Delete(kv("cluster_manager/a", vec![], 9)));
        let state = fold.build();
        assert_eq!(state.version, 9);
        assert_eq!(state.cluster_manager.as_deref(), Some("n2"));
        fold.apply(WatchEvent::Delete(kv(&routing_key("logs"), vec![], 10)));
        assert!(fold.build().indices.is_empty());
    }
}
