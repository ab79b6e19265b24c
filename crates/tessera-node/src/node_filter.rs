//! Node filters: which nodes a `_nodes/{node_id}` expression names, resolved as OpenSearch's
//! `DiscoveryNodes.resolveNodes` resolves them. The comma-separated specifications apply in
//! order to a set that starts empty: `_local`, `_cluster_manager` (or `_master`) and `_all` add
//! those nodes; a node id adds that node; otherwise a name, host or address pattern (`*`
//! wildcards) adds the nodes it matches, and `role:true` / `role:false` add or remove the nodes
//! with that role. An empty expression names every node. A filter that matches nothing is no
//! error: the answer is empty, as in OpenSearch.

use tessera_cluster::DiscoveryNode;
use tessera_common::{Error, Result};
use tessera_mapping::dynamic::simple_match;

/// The nodes of `nodes` (the cluster state's, in its order) that `expression` names; `local`
/// and `manager` are the ids `_local` and `_cluster_manager` stand for.
pub fn resolve_nodes(
    nodes: &[DiscoveryNode],
    local: &str,
    manager: Option<&str>,
    expression: &str,
) -> Result<Vec<DiscoveryNode>> {
    let specs: Vec<&str> = expression
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if specs.is_empty() {
        return Ok(nodes.to_vec());
    }
    let mut chosen: Vec<String> = Vec::new();
    let add = |chosen: &mut Vec<String>, id: &str| {
        if nodes.iter().any(|n| n.id == id) && !chosen.iter().any(|c| c == id) {
            chosen.push(id.to_string());
        }
    };
    for spec in specs {
        match spec {
            "_local" => add(&mut chosen, local),
            "_cluster_manager" | "_master" => {
                if let Some(manager) = manager {
                    add(&mut chosen, manager);
                }
            }
            _ if nodes.iter().any(|n| n.id == spec) => add(&mut chosen, spec),
            _ => {
                for node in nodes {
                    let host = host_of(&node.transport_address);
                    if spec == "_all" || simple_match(spec, &node.name) || simple_match(spec, host)
                    {
                        add(&mut chosen, &node.id);
                    }
                }
                let role_filter = spec
                    .split_once(':')
                    .filter(|(name, _)| is_role(nodes, name));
                if let Some((name, value)) = role_filter {
                    let wanted = match value {
                        "" | "true" => true,
                        "false" => false,
                        other => {
                            return Err(Error::illegal_argument(format!(
                                "Failed to parse value [{other}] as only [true] or [false] are allowed."
                            )))
                        }
                    };
                    for node in nodes.iter().filter(|node| role_matches(node, name)) {
                        if wanted {
                            add(&mut chosen, &node.id);
                        } else {
                            chosen.retain(|id| *id != node.id);
                        }
                    }
                }
            }
        }
    }
    Ok(nodes
        .iter()
        .filter(|n| chosen.contains(&n.id))
        .cloned()
        .collect())
}

/// The roles OpenSearch knows (and `coordinating_only`), besides those the nodes declare:
/// a `name:value` filter on one of them takes `true` or `false`; on any other name it would
/// match node attributes, which Tessera's nodes do not have.
const ROLES: &[&str] = &[
    "cluster_manager",
    "master",
    "data",
    "ingest",
    "remote_cluster_client",
    "search",
    "warm",
    "coordinating_only",
];

fn is_role(nodes: &[DiscoveryNode], name: &str) -> bool {
    ROLES.contains(&name) || nodes.iter().any(|n| n.roles.iter().any(|r| r == name))
}

/// Whether `node` has the role `name` stands for in a `role:true` filter: `master` is the old
/// name of `cluster_manager`, and `coordinating_only` a node without roles.
fn role_matches(node: &DiscoveryNode, name: &str) -> bool {
    match name {
        "master" | "cluster_manager" => node
            .roles
            .iter()
            .any(|role| role == "cluster_manager" || role == "master"),
        "coordinating_only" => node.roles.is_empty(),
        other => node.roles.iter().any(|role| role == other),
    }
}

/// The host of a `host:port` address.
fn host_of(address: &str) -> &str {
    address.rsplit_once(':').map_or(address, |(host, _)| host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, name: &str, host: &str, roles: &[&str]) -> DiscoveryNode {
        DiscoveryNode {
            id: id.into(),
            name: name.into(),
            ephemeral_id: String::new(),
            transport_address: format!("{host}:9300"),
            http_address: format!("{host}:9200"),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        }
    }

    fn ids(expression: &str) -> Vec<String> {
        let nodes = [
            node("id1", "alpha-1", "127.0.0.1", &["cluster_manager", "data"]),
            node("id2", "alpha-2", "127.0.0.2", &["data", "ingest"]),
            node("id3", "beta", "127.0.0.3", &[]),
        ];
        resolve_nodes(&nodes, "id2", Some("id1"), expression)
            .unwrap()
            .into_iter()
            .map(|n| n.id)
            .collect()
    }

    #[test]
    fn filters_resolve_as_opensearch_resolves_them() {
        assert_eq!(ids(""), ["id1", "id2", "id3"]);
        assert_eq!(ids("_all"), ["id1", "id2", "id3"]);
        assert_eq!(ids("_local"), ["id2"]);
        assert_eq!(ids("_cluster_manager"), ["id1"]);
        assert_eq!(ids("_master,_local"), ["id1", "id2"]);
        assert_eq!(ids("id3"), ["id3"]);
        assert_eq!(ids("alpha-*"), ["id1", "id2"]);
        assert_eq!(ids("beta,id1"), ["id1", "id3"]);
        assert_eq!(ids("127.0.0.2"), ["id2"]);
        assert_eq!(ids("data:true"), ["id1", "id2"]);
        assert_eq!(ids("master:true"), ["id1"]);
        assert_eq!(ids("coordinating_only:true"), ["id3"]);
        // specifications apply in order: a `role:false` removes what came before it
        assert_eq!(ids("_all,ingest:false"), ["id1", "id3"]);
        assert!(ids("nope").is_empty());
        assert!(ids("rack:one").is_empty());
        let nodes = [node("id1", "a", "h", &["data"])];
        let e = resolve_nodes(&nodes, "id1", None, "data:x").unwrap_err();
        assert_eq!(e.status(), 400);
    }
}
