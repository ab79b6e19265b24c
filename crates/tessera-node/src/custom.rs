//! Custom documents of the cluster state: the cluster-wide metadata that is not an index
//! (templates, data streams, snapshot repositories and snapshots in progress, stored
//! scripts), each kind owned by its module. A change is one enum value that
//! travels to the cluster manager, which decides it against the state it holds (so checks
//! such as "this template's components exist" see every change before it) and writes the
//! documents in one transaction; a single node decides it the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_cluster::ClusterState;
use tessera_common::Result;

use crate::data_streams::DataStreamChange;
use crate::scripts::ScriptChange;
use crate::snapshots::SnapshotChange;
use crate::templates::TemplateChange;

/// A change of custom documents.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum CustomChange {
    Templates(TemplateChange),
    DataStreams(DataStreamChange),
    Snapshots(SnapshotChange),
    Scripts(ScriptChange),
}

impl CustomChange {
    /// The documents to write (`Some`) or delete (`None`), by key, given `state`.
    pub fn decide(&self, state: &ClusterState) -> Result<Vec<(String, Option<Value>)>> {
        match self {
            CustomChange::Templates(change) => change.decide(state),
            CustomChange::DataStreams(change) => change.decide(state),
            CustomChange::Snapshots(change) => change.decide(state),
            CustomChange::Scripts(change) => change.decide(state),
        }
    }
}
