//! Cluster and index health, as `_cluster/health` and `_cat/health` report it.
//!
//! A single node holds every primary; replicas cannot be assigned to the node that holds their
//! primary, so an index with replicas is yellow (as in OpenSearch) and one without is green. In
//! a cluster, an index is green once every replica is started.

use serde_json::{json, Map, Value};
use tessera_index::IndexMetadata;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Green,
    Yellow,
    Red,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Green => "green",
            Status::Yellow => "yellow",
            Status::Red => "red",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "green" => Some(Status::Green),
            "yellow" => Some(Status::Yellow),
            "red" => Some(Status::Red),
            _ => None,
        }
    }
}

/// What `_cluster/health` waits for (besides its nodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HealthWait {
    /// `wait_for_status`: this status or better.
    pub status: Option<Status>,
    /// `wait_for_no_relocating_shards`.
    pub no_relocating: bool,
    /// `wait_for_no_initializing_shards`.
    pub no_initializing: bool,
}

/// Shard counts of one index.
/// Where a primary shard stands on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimaryState {
    Active,
    /// Opening (replaying its translog) after the node started.
    Initializing,
    /// Failed: it could not open, or its engine failed.
    Unassigned,
}

#[derive(Clone, Debug)]
pub struct IndexHealth {
    pub name: String,
    pub status: Status,
    pub number_of_shards: u32,
    pub number_of_replicas: u32,
    pub active_primary_shards: u32,
    pub active_shards: u32,
    pub initializing_shards: u32,
    pub unassigned_shards: u32,
    pub relocating_shards: u32,
    /// Each primary's state, by shard id.
    pub primaries: Vec<PrimaryState>,
    /// Each shard's assigned replicas, by shard id (empty: none anywhere).
    pub replicas: Vec<ReplicaCounts>,
}

/// How many replicas of one shard are started, and how many recovering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaCounts {
    pub active: u32,
    pub initializing: u32,
    /// Active replicas on their way to another node (counted in `active` too).
    pub relocating: u32,
}

impl IndexHealth {
    /// The health of an index whose primaries are in `primaries`: red while one is not active
    /// (initializing or failed), as OpenSearch is red while a primary is not assigned and
    /// started; yellow with unassigned replicas (a single node cannot hold them).
    pub fn of(meta: &IndexMetadata, primaries: Vec<PrimaryState>) -> IndexHealth {
        Self::with_replicas(meta, primaries, Vec::new())
    }

    /// [`IndexHealth::of`] with some replicas assigned, by shard (see [`ReplicaCounts`]); the
    /// others are unassigned (yellow until none is, nor recovering).
    pub fn with_replicas(
        meta: &IndexMetadata,
        primaries: Vec<PrimaryState>,
        replicas: Vec<ReplicaCounts>,
    ) -> IndexHealth {
        let active_replicas: u32 = replicas.iter().map(|r| r.active).sum();
        let relocating: u32 = replicas.iter().map(|r| r.relocating).sum();
        let initializing_replicas: u32 = replicas.iter().map(|r| r.initializing).sum();
        let per_shard = meta.number_of_replicas();
        let count = |state| primaries.iter().filter(|&&p| p == state).count() as u32;
        let active = count(PrimaryState::Active);
        let initializing = count(PrimaryState::Initializing);
        let failed = count(PrimaryState::Unassigned);
        let unassigned = (meta.number_of_shards * per_shard)
            .saturating_sub(active_replicas + initializing_replicas)
            + failed;
        IndexHealth {
            name: meta.name.clone(),
            status: if failed + initializing > 0 {
                Status::Red
            } else if unassigned + initializing_replicas > 0 {
                Status::Yellow
            } else {
                Status::Green
            },
            number_of_shards: meta.number_of_shards,
            number_of_replicas: per_shard,
            active_primary_shards: active,
            active_shards: active + active_replicas,
            initializing_shards: initializing + initializing_replicas,
            unassigned_shards: unassigned,
            relocating_shards: relocating,
            primaries,
            replicas,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "status": self.status.as_str(),
            "number_of_shards": self.number_of_shards,
            "number_of_replicas": self.number_of_replicas,
            "active_primary_shards": self.active_primary_shards,
            "active_shards": self.active_shards,
            "relocating_shards": self.relocating_shards,
            "initializing_shards": self.initializing_shards,
            "unassigned_shards": self.unassigned_shards,
        })
    }
}

/// The health of a set of indices.
#[derive(Clone, Debug)]
pub struct Health {
    pub status: Status,
    pub relocating_shards: u32,
    pub active_primary_shards: u32,
    pub active_shards: u32,
    pub initializing_shards: u32,
    pub unassigned_shards: u32,
    pub indices: Vec<IndexHealth>,
    pub number_of_nodes: usize,
    pub number_of_data_nodes: usize,
    /// Whether a cluster manager is elected.
    pub discovered_cluster_manager: bool,
}

impl Health {
    pub fn of(indices: Vec<IndexHealth>) -> Health {
        Health {
            status: indices
                .iter()
                .map(|i| i.status)
                .max()
                .unwrap_or(Status::Green),
            active_primary_shards: indices.iter().map(|i| i.active_primary_shards).sum(),
            active_shards: indices.iter().map(|i| i.active_shards).sum(),
            initializing_shards: indices.iter().map(|i| i.initializing_shards).sum(),
            relocating_shards: indices.iter().map(|i| i.relocating_shards).sum(),
            unassigned_shards: indices.iter().map(|i| i.unassigned_shards).sum(),
            indices,
            number_of_nodes: 1,
            number_of_data_nodes: 1,
            discovered_cluster_manager: true,
        }
    }

    pub fn active_shards_percent(&self) -> f64 {
        let total = self.active_shards + self.initializing_shards + self.unassigned_shards;
        if total == 0 {
            100.0
        } else {
            self.active_shards as f64 * 100.0 / total as f64
        }
    }

    /// The `_cluster/health` body; `level` is `cluster`, `indices` or `shards`.
    pub fn to_json(&self, cluster_name: &str, timed_out: bool, level: &str) -> Value {
        let mut body = json!({
            "cluster_name": cluster_name,
            "status": self.status.as_str(),
            "timed_out": timed_out,
            "number_of_nodes": self.number_of_nodes,
            "number_of_data_nodes": self.number_of_data_nodes,
            "discovered_master": self.discovered_cluster_manager,
            "discovered_cluster_manager": self.discovered_cluster_manager,
            "active_primary_shards": self.active_primary_shards,
            "active_shards": self.active_shards,
            "relocating_shards": self.relocating_shards,
            "initializing_shards": self.initializing_shards,
            "unassigned_shards": self.unassigned_shards,
            "delayed_unassigned_shards": 0,
            "number_of_pending_tasks": 0,
            "number_of_in_flight_fetch": 0,
            "task_max_waiting_in_queue_millis": 0,
            "active_shards_percent_as_number": self.active_shards_percent(),
        });
        if level == "indices" || level == "shards" {
            let mut indices = Map::new();
            for index in &self.indices {
                let mut entry = index.to_json();
                if level == "shards" {
                    let mut shards = Map::new();
                    for (shard, primary) in index.primaries.iter().enumerate() {
                        let replicas = index.replicas.get(shard).copied().unwrap_or_default();
                        let active = *primary == PrimaryState::Active;
                        let unassigned_replicas = index
                            .number_of_replicas
                            .saturating_sub(replicas.active + replicas.initializing);
                        let status = if !active {
                            "red"
                        } else if unassigned_replicas + replicas.initializing > 0 {
                            "yellow"
                        } else {
                            "green"
                        };
                        let failed = u32::from(*primary == PrimaryState::Unassigned);
                        let initializing = u32::from(*primary == PrimaryState::Initializing);
                        shards.insert(
                            shard.to_string(),
                            json!({
                                "status": status,
                                "primary_active": active,
                                "active_shards": u32::from(active) + replicas.active,
                                "relocating_shards": replicas.relocating,
                                "initializing_shards": initializing + replicas.initializing,
                                "unassigned_shards": unassigned_replicas + failed,
                            }),
                        );
                    }
                    entry["shards"] = Value::Object(shards);
                }
                indices.insert(index.name.clone(), entry);
            }
            body["indices"] = Value::Object(indices);
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_make_yellow() {
        let green = IndexHealth {
            name: "a".into(),
            status: Status::Green,
            number_of_shards: 2,
            number_of_replicas: 0,
            active_primary_shards: 2,
            active_shards: 2,
            initializing_shards: 0,
            unassigned_shards: 0,
            relocating_shards: 0,
            primaries: vec![PrimaryState::Active; 2],
            replicas: Vec::new(),
        };
        let yellow = IndexHealth {
            name: "b".into(),
            status: Status::Yellow,
            number_of_shards: 1,
            number_of_replicas: 1,
            active_primary_shards: 1,
            active_shards: 1,
            initializing_shards: 0,
            unassigned_shards: 1,
            relocating_shards: 0,
            primaries: vec![PrimaryState::Active],
            replicas: Vec::new(),
        };
        let health = Health::of(vec![green.clone(), yellow]);
        assert_eq!(health.status, Status::Yellow);
        assert_eq!(health.active_shards_percent(), 75.0);
        let body = health.to_json("c", false, "indices");
        assert_eq!(body["indices"]["b"]["status"], "yellow");
        assert_eq!(Health::of(vec![]).status, Status::Green);

        // a primary still opening makes the index red until it is active
        let opening = IndexHealth {
            status: Status::Red,
            active_primary_shards: 1,
            active_shards: 1,
            initializing_shards: 1,
            primaries: vec![PrimaryState::Active, PrimaryState::Initializing],
            replicas: Vec::new(),
            ..green
        };
        let health = Health::of(vec![opening]);
        assert_eq!(health.status, Status::Red);
        assert_eq!(health.active_shards_percent(), 50.0);
        let body = health.to_json("c", false, "shards");
        assert_eq!(body["initializing_shards"], 1);
        let shard = &body["indices"]["a"]["shards"]["1"];
        assert_eq!(shard["primary_active"], false);
        assert_eq!(shard["status"], "red");
        assert_eq!(shard["initializing_shards"], 1);
    }
}
