//! A real cluster on loopback for tests: an etcd of its own (Debian's `etcd`, installed by
//! `scripts/system-deps`) and `tessera serve` processes joined to it. Each test starts its own
//! small cluster ([`Cluster::start`]) with a short lease, so that a killed node leaves (and a
//! killed manager is replaced) within seconds.

use std::time::{Duration, Instant};

use serde_json::Value;
use tessera_cluster::EtcdProcess;

use super::{free_port, Node};

/// An etcd and the nodes of one cluster.
pub struct Cluster {
    pub etcd: EtcdProcess,
    pub nodes: Vec<Node>,
}

impl Cluster {
    pub fn start(size: usize) -> Cluster {
        let etcd = EtcdProcess::start().expect("start etcd (scripts/system-deps installs it)");
        let mut cluster = Cluster {
            etcd,
            nodes: Vec::new(),
        };
        for i in 0..size {
            cluster.add_node(i);
        }
        cluster.wait_for_nodes(size);
        cluster
    }

    pub fn add_node(&mut self, i: usize) {
        self.add_node_with(i, "");
    }

    /// A node with more configuration lines (`node.roles: []`, …).
    pub fn add_node_with(&mut self, i: usize, extra: &str) {
        let config = format!(
            "cluster.name: test-cluster\nnode.name: node-{i}\ncluster.coordination.etcd: {}\ntransport.port: {}\ncluster.coordination.lease_ttl: 2s\n{extra}",
            self.etcd.endpoint(),
            free_port()
        );
        self.nodes.push(Node::start_with_config_text(&config));
    }

    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// Waits until node 0 sees `count` nodes and an elected manager.
    pub fn wait_for_nodes(&self, count: usize) {
        self.wait_for_nodes_on(0, count);
    }

    pub fn wait_for_nodes_on(&self, i: usize, count: usize) {
        let health = self
            .node(i)
            .get(&format!(
                "/_cluster/health?wait_for_nodes={count}&timeout=30s"
            ))
            .json();
        assert_eq!(health["number_of_nodes"], count, "{health}");
        assert_eq!(health["discovered_cluster_manager"], true, "{health}");
    }

    pub fn state(&self, i: usize) -> Value {
        self.node(i).get("/_cluster/state").expect(200).json()
    }

    /// The node ids holding the primaries of `index`, by shard.
    pub fn primaries(&self, i: usize, index: &str) -> Vec<Option<String>> {
        let state = self.state(i);
        let shards = state["routing_table"]["indices"][index]["shards"]
            .as_object()
            .unwrap_or_else(|| panic!("no routing for {index}: {state}"))
            .clone();
        (0..shards.len())
            .map(|shard| {
                shards[&shard.to_string()]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|copy| copy["primary"] == true)
                    .and_then(|copy| copy["node"].as_str().map(String::from))
            })
            .collect()
    }

    /// The position in `nodes` of the elected manager, as node `i` sees it.
    pub fn manager(&self, i: usize) -> usize {
        let state = self.state(i);
        let id = state["cluster_manager_node"]
            .as_str()
            .or_else(|| state["master_node"].as_str())
            .unwrap_or_else(|| panic!("no manager in {state}"))
            .to_string();
        let name = state["nodes"][&id]["name"].as_str().unwrap().to_string();
        name.trim_start_matches("node-").parse().unwrap()
    }
}

/// Waits (up to 30 s) until `check` holds.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
