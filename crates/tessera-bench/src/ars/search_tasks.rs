//! Completed `search` tasks per node, from `_cat/thread_pool/search`: the reference post's
//! evidence that ARS routes shard requests away from the slow node.
//!
//! Counters only grow, so a run's share of each node is the difference of two snapshots taken
//! while the load runs, at the start and the end of the measured laps. The coordinating node
//! answers for every node of the cluster (Tessera and OpenSearch alike), so the slowed node is
//! never asked directly and its slowness does not stretch the snapshot.

use crate::client::Client;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `completed` of each node's `search` pool, by node name.
pub type Snapshot = BTreeMap<String, u64>;

/// One node's completed `search` tasks during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeTasks {
    pub node: String,
    pub completed: u64,
}

const CAT_PATH: &str =
    "/_cat/thread_pool/search?format=json&h=node_name,name,active,queue,rejected,completed";

/// Reads the counters of every node of the cluster, through `client`.
pub fn snapshot(client: &Client) -> Result<Snapshot> {
    let v = client
        .get_json(CAT_PATH)
        .context("read completed search tasks per node")?;
    Ok(parse(&v))
}

/// The `search` rows of a `_cat/thread_pool?format=json` answer (numbers may come as strings).
pub fn parse(v: &Value) -> Snapshot {
    let number = |v: &Value| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    };
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["name"].as_str().is_none_or(|n| n == "search"))
        .filter_map(|row| {
            Some((
                row["node_name"].as_str()?.to_string(),
                number(&row["completed"])?,
            ))
        })
        .collect()
}

/// Each node's completed tasks between two snapshots (nodes in `after`, by name).
pub fn delta(before: &Snapshot, after: &Snapshot) -> Vec<NodeTasks> {
    after
        .iter()
        .map(|(node, &n)| NodeTasks {
            node: node.clone(),
            completed: n.saturating_sub(before.get(node).copied().unwrap_or(0)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_parse_and_subtract() {
        let before = parse(&json!([
            {"node_name": "node-1", "name": "search", "active": "0", "queue": "0", "rejected": "0", "completed": "10"},
            {"node_name": "node-2", "name": "search", "completed": 5},
            {"node_name": "node-2", "name": "write", "completed": 99},
        ]));
        assert_eq!(before.len(), 2);
        assert_eq!(before["node-2"], 5);
        let after = parse(&json!([
            {"node_name": "node-1", "name": "search", "completed": "110"},
            {"node_name": "node-2", "name": "search", "completed": "25"},
            {"node_name": "client", "name": "search", "completed": "7"},
        ]));
        assert_eq!(
            delta(&before, &after),
            vec![
                NodeTasks {
                    node: "client".into(),
                    completed: 7
                },
                NodeTasks {
                    node: "node-1".into(),
                    completed: 100
                },
                NodeTasks {
                    node: "node-2".into(),
                    completed: 20
                },
            ]
        );
        assert!(parse(&json!({"error": "x"})).is_empty());
    }
}
