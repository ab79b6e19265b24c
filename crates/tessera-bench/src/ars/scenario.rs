//! One run of the ARS matrix: set the index's replicas and the ARS setting, slow the chosen
//! node (with load), drive the closed-loop clients through warm-up and laps, and count each
//! node's completed `search` tasks during the laps.
//!
//! The heavy query lives here too: a search that does real work on every shard, so that the
//! copy chosen for each shard decides how long the search takes.

use super::search_tasks::{self, Snapshot};
use super::slow::{SlowMethod, Slowdown};
use super::summary::{Ars, Load, Replicas, RunResult};
use super::traffic::{self, Plan};
use crate::client::Client;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// The heavy query: a range filter matching nearly every trip and three aggregations read from
/// doc values (a histogram of trip distance with the stats of the total amount in each bucket,
/// the payment types with their average tip, and a monthly date histogram), `size: 10`.
///
/// Why this one: its cost grows with the shard's document count and is all CPU (doc values in
/// the page cache, no I/O), so a node held to a fraction of a core answers slower in proportion
/// and the choice of copy matters; it matches the reference post's "complex query" in kind. The
/// hits (`size: 10`) add a fetch phase and keep the response out of request caches, which store
/// only `size: 0` searches.
pub fn heavy_query() -> Value {
    json!({
        "size": 10,
        "query": {"bool": {"filter": [
            {"range": {"trip_distance": {"gte": 0, "lt": 50}}}
        ]}},
        "aggs": {
            "distance_histo": {
                "histogram": {"field": "trip_distance", "interval": 1},
                "aggs": {"total_amount_stats": {"stats": {"field": "total_amount"}}}
            },
            "payment_types": {
                "terms": {"field": "payment_type"},
                "aggs": {"avg_tip": {"avg": {"field": "tip_amount"}}}
            },
            "per_month": {
                "date_histogram": {"field": "pickup_datetime", "calendar_interval": "month"}
            }
        }
    })
}

/// What every run shares.
pub struct Bench<'a> {
    /// The coordinating node.
    pub client: &'a Client,
    pub index: &'a str,
    pub data_nodes: usize,
    pub plan: Plan,
    pub slow: Option<SlowTarget>,
    pub stop: &'a AtomicBool,
}

/// The process slowed in the "with load" runs, and how.
#[derive(Clone, Debug)]
pub struct SlowTarget {
    pub pid: u32,
    pub cpu: f64,
    pub method: SlowMethod,
    pub cgroup_root: PathBuf,
}

/// Sets `number_of_replicas` and waits until every copy is started.
pub fn set_replicas(client: &Client, index: &str, replicas: u32) -> Result<()> {
    client
        .json(
            "PUT",
            &format!("/{index}/_settings"),
            Some(&json!({"index": {"number_of_replicas": replicas}})),
        )
        .with_context(|| format!("set {index}'s number_of_replicas to {replicas}"))?;
    wait_green(client, index)
}

/// Waits for the index to be green (all copies started).
pub fn wait_green(client: &Client, index: &str) -> Result<()> {
    let path = format!("/_cluster/health/{index}?wait_for_status=green&timeout=120s");
    let h = client
        .with_timeout(std::time::Duration::from_secs(150))
        .get_json(&path)
        .with_context(|| format!("wait for {index} to be green"))?;
    if h["status"] != "green" {
        bail!("{index} did not become green within 120 s: {h}");
    }
    Ok(())
}

/// Turns adaptive replica selection on or off (off: round robin over the copies); `default`
/// leaves the setting alone.
pub fn set_ars(client: &Client, ars: Ars) -> Result<()> {
    if ars == Ars::Default {
        return Ok(());
    }
    let body = json!({"persistent": {
        "cluster.routing.use_adaptive_replica_selection": ars == Ars::On
    }});
    client
        .json("PUT", "/_cluster/settings", Some(&body))
        .with_context(|| {
            format!(
                "turn adaptive replica selection {} (cluster.routing.use_adaptive_replica_selection)",
                if ars == Ars::On { "on" } else { "off" }
            )
        })?;
    Ok(())
}

/// What each coordinating node knows of the others for ARS (`_nodes/stats/adaptive_selection`:
/// queue size, service and response time, rank per node), by node name, keeping only the nodes
/// that coordinated searches; `None` where the engine does not report it. Read at the end of the
/// laps, while the load runs.
pub fn adaptive_selection(client: &Client) -> Option<Value> {
    let stats = client.get_json("/_nodes/stats/adaptive_selection").ok()?;
    Some(views_by_name(stats["nodes"].as_object()?))
}

/// `{reporting node: {node: stats}}` from `_nodes/stats`' `nodes`, node ids replaced by names.
pub fn views_by_name(nodes: &serde_json::Map<String, Value>) -> Value {
    let name = |id: &str| {
        nodes
            .get(id)
            .and_then(|n| n["name"].as_str())
            .unwrap_or(id)
            .to_string()
    };
    let mut views = serde_json::Map::new();
    for (id, node) in nodes {
        let Some(view) = node["adaptive_selection"]
            .as_object()
            .filter(|v| !v.is_empty())
        else {
            continue;
        };
        let named = view.iter().map(|(k, v)| (name(k), v.clone())).collect();
        views.insert(name(id), Value::Object(named));
    }
    Value::Object(views)
}

fn snapshot_or_warn(client: &Client) -> Option<Snapshot> {
    match search_tasks::snapshot(client) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("warning: {e:#}");
            None
        }
    }
}

impl Bench<'_> {
    /// Measures one scenario; the index must already have `replicas`' copies started.
    pub fn run(&self, replicas: Replicas, load: Load, ars: Ars) -> Result<RunResult> {
        set_ars(self.client, ars)?;
        let slowdown = match load {
            Load::None => None,
            Load::Slow => {
                let s = self.slow.as_ref().context(
                    "a run with load needs a process to slow (--slow-pid with --target)",
                )?;
                Some(Slowdown::start(s.pid, s.cpu, s.method, &s.cgroup_root)?)
            }
        };
        let slow_method = slowdown.as_ref().map(Slowdown::describe);
        let (mut before, mut after, mut ranks) = (None, None, None);
        let measured = traffic::run(
            self.client,
            &self.plan,
            self.stop,
            || before = snapshot_or_warn(self.client),
            || {
                after = snapshot_or_warn(self.client);
                ranks = adaptive_selection(self.client);
            },
        );
        if let Some(s) = slowdown {
            s.release().context("end the slow node's slowdown")?;
        }
        let search_tasks = match (&before, &after) {
            (Some(b), Some(a)) => search_tasks::delta(b, a),
            _ => Vec::new(),
        };
        Ok(RunResult {
            replicas,
            number_of_replicas: replicas.count(self.data_nodes),
            load,
            ars,
            slow_method,
            measured,
            search_tasks,
            adaptive_selection: ranks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_selection_views_are_named() {
        let nodes = json!({
            "c1": {"name": "client", "adaptive_selection": {
                "d1": {"avg_queue_size": 1, "rank": "2.0"},
                "d9": {"avg_queue_size": 3}
            }},
            "d1": {"name": "node-1", "adaptive_selection": {}},
        });
        let v = views_by_name(nodes.as_object().unwrap());
        assert_eq!(
            v,
            json!({"client": {"node-1": {"avg_queue_size": 1, "rank": "2.0"}, "d9": {"avg_queue_size": 3}}})
        );
    }

    #[test]
    fn heavy_query_reads_workload_fields() {
        let q = heavy_query();
        assert_eq!(q["size"], 10, "hits keep the search out of request caches");
        let w = crate::workload::get("nyc_taxis").unwrap();
        let props = &w.index_json()["mappings"]["properties"];
        for field in [
            "trip_distance",
            "total_amount",
            "payment_type",
            "tip_amount",
            "pickup_datetime",
        ] {
            assert!(
                props[field].is_object(),
                "{field} is not in the nyc_taxis mapping"
            );
        }
    }
}
