//! The cluster APIs answered for the whole cluster from any node: `_cat/nodes`, `_nodes` and
//! `_nodes/stats` (and their node filters), `_cat/shards`, `_cat/indices`, `_stats` (and
//! `level=shards`), `_cat/allocation`,
//! `_cat/cluster_manager` and `_cluster/allocation/explain`, asked of a node that is not the
//! cluster manager, on a 3-node cluster (`common::cluster::Cluster`).

mod common;

use common::cluster::{eventually, Cluster};
use serde_json::{json, Value};

const DOCS: usize = 60;

fn write_docs(cluster: &Cluster, from: usize, index: &str) {
    let mut ndjson = String::new();
    for i in 0..DOCS {
        ndjson.push_str(&json!({"index": {"_index": index, "_id": i.to_string()}}).to_string());
        ndjson.push('\n');
        ndjson.push_str(&json!({"n": i}).to_string());
        ndjson.push('\n');
    }
    let bulk = cluster.node(from).bulk("/_bulk", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{bulk}");
    cluster
        .node(from)
        .post_empty(&format!("/{index}/_refresh"))
        .ok();
}

fn cat(cluster: &Cluster, i: usize, path: &str) -> Vec<Value> {
    let separator = if path.contains('?') { '&' } else { '?' };
    let rows = cluster
        .node(i)
        .get(&format!("{path}{separator}format=json"))
        .ok()
        .json();
    rows.as_array()
        .unwrap_or_else(|| panic!("{path}: {rows}"))
        .clone()
}

fn number(cell: &Value) -> u64 {
    cell.as_str()
        .and_then(|s| s.parse().ok())
        .or(cell.as_u64())
        .unwrap_or_else(|| panic!("not a number: {cell}"))
}

#[test]
fn a_non_manager_node_answers_the_cluster_apis_for_every_node() {
    let cluster = Cluster::start(3);
    let manager = cluster.manager(0);
    let asked = (manager + 1) % 3;
    let state = cluster.state(asked);
    let manager_id = state["cluster_manager_node"].as_str().unwrap().to_string();
    cluster
        .node(asked)
        .put(
            "/spread",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
        )
        .ok();
    write_docs(&cluster, asked, "spread");
    let primaries = cluster.primaries(asked, "spread");

    // _cat/nodes: every node once, the manager alone marked
    let rows = cat(
        &cluster,
        asked,
        "/_cat/nodes?h=id,name,cluster_manager,port,ip,heap.percent",
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    let marked: Vec<&Value> = rows
        .iter()
        .filter(|r| r["cluster_manager"] == "*")
        .collect();
    assert_eq!(marked.len(), 1, "{rows:?}");
    assert_eq!(marked[0]["id"], manager_id.as_str(), "{rows:?}");
    assert_eq!(
        rows.iter().filter(|r| r["cluster_manager"] == "-").count(),
        2,
        "{rows:?}"
    );
    for row in &rows {
        let id = row["id"].as_str().unwrap();
        let address = state["nodes"][id]["transport_address"].as_str().unwrap();
        assert_eq!(
            address.rsplit_once(':').unwrap().1,
            row["port"].as_str().unwrap(),
            "{row}"
        );
        // each node sent its own figures
        number(&row["heap.percent"]);
    }

    // _nodes/stats and _nodes: three nodes, each with its real transport address
    let stats = cluster.node(asked).get("/_nodes/stats").ok().json();
    assert_eq!(
        stats["_nodes"],
        json!({"total": 3, "successful": 3, "failed": 0}),
        "{stats}"
    );
    assert_eq!(stats["nodes"].as_object().unwrap().len(), 3);
    let docs_on_nodes: u64 = stats["nodes"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n["indices"]["docs"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(docs_on_nodes, DOCS as u64, "{stats}");
    let info = cluster.node(asked).get("/_nodes").ok().json();
    assert_eq!(info["_nodes"]["total"], 3, "{info}");
    for (id, node) in state["nodes"].as_object().unwrap() {
        assert_eq!(
            info["nodes"][id]["transport_address"], node["transport_address"],
            "{info}"
        );
    }

    // node filters: `_local` is the node asked, `_cluster_manager` the manager, a name its
    // node, a role every node holding it; each asked node sends its own jvm section
    let filtered = |path: &str| -> Vec<String> {
        let answer = cluster.node(asked).get(path).ok().json();
        let nodes = answer["nodes"].as_object().unwrap();
        assert_eq!(answer["_nodes"]["total"], nodes.len(), "{answer}");
        nodes.keys().cloned().collect()
    };
    let asked_id = state["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["name"] == format!("node-{asked}"))
        .map(|(id, _)| id.clone())
        .unwrap();
    assert_eq!(filtered("/_nodes/_local"), [asked_id.as_str()]);
    assert_eq!(filtered("/_nodes/_local/stats/jvm"), [asked_id.as_str()]);
    assert_eq!(
        filtered("/_nodes/_cluster_manager/stats"),
        [manager_id.as_str()]
    );
    assert_eq!(
        filtered(&format!("/_nodes/node-{manager}/os")),
        [manager_id.as_str()]
    );
    assert_eq!(filtered("/_nodes/_all").len(), 3);
    assert_eq!(filtered("/_nodes/data:true/stats/os").len(), 3);
    assert!(filtered("/_nodes/no-such-node/stats").is_empty());
    let jvm = cluster.node(asked).get("/_nodes/stats/jvm").ok().json();
    for node in jvm["nodes"].as_object().unwrap().values() {
        assert!(
            node["jvm"]["mem"]["heap_used_in_bytes"].as_u64().unwrap() > 0,
            "{jvm}"
        );
        assert_eq!(
            node["jvm"]["gc"]["collectors"]["old"]["collection_count"], 0,
            "{jvm}"
        );
    }

    // the documents, counted over every node's copies
    let shards = cat(&cluster, asked, "/_cat/shards/spread");
    assert_eq!(shards.len(), 3, "{shards:?}");
    let on_shards: u64 = shards.iter().map(|r| number(&r["docs"])).sum();
    assert_eq!(on_shards, DOCS as u64, "{shards:?}");
    let indices = cat(&cluster, asked, "/_cat/indices/spread");
    assert_eq!(
        number(&indices[0]["docs.count"]),
        DOCS as u64,
        "{indices:?}"
    );
    let index_stats = cluster.node(asked).get("/spread/_stats").ok().json();
    assert_eq!(
        index_stats["_all"]["primaries"]["docs"]["count"], DOCS,
        "{index_stats}"
    );
    assert_eq!(
        index_stats["indices"]["spread"]["total"]["docs"]["count"], DOCS,
        "{index_stats}"
    );
    // level=shards: each shard's copy from the node holding it, where the routing puts it
    let by_shard = cluster
        .node(asked)
        .get("/spread/_stats/docs?level=shards")
        .ok()
        .json();
    let shards_stats = by_shard["indices"]["spread"]["shards"].as_object().unwrap();
    assert_eq!(shards_stats.len(), 3, "{by_shard}");
    let mut on_copies = 0;
    for (shard, copies) in shards_stats {
        let copy = &copies.as_array().unwrap()[0];
        let holder = primaries[shard.parse::<usize>().unwrap()].clone().unwrap();
        assert_eq!(copy["routing"]["node"], holder.as_str(), "{by_shard}");
        assert_eq!(copy["routing"]["primary"], true, "{by_shard}");
        on_copies += copy["docs"]["count"].as_u64().unwrap();
    }
    assert_eq!(on_copies, DOCS as u64, "{by_shard}");
    let segments = cat(&cluster, asked, "/_cat/segments/spread");
    let in_segments: u64 = segments.iter().map(|r| number(&r["docs.count"])).sum();
    assert_eq!(in_segments, DOCS as u64, "{segments:?}");

    // _cat/allocation: one row per node, their shards the index's primaries
    let allocation = cat(&cluster, asked, "/_cat/allocation");
    assert_eq!(allocation.len(), 3, "{allocation:?}");
    let allocated: u64 = allocation.iter().map(|r| number(&r["shards"])).sum();
    assert_eq!(allocated, 3, "{allocation:?}");
    assert!(
        allocation.iter().all(|r| r["disk.total"].is_string()),
        "{allocation:?}"
    );

    // _cat/cluster_manager and _cat/master name the manager
    for path in ["/_cat/cluster_manager", "/_cat/master"] {
        let rows = cat(&cluster, asked, path);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["id"], manager_id.as_str(), "{rows:?}");
    }

    // explain: a primary on another node is where the routing puts it
    let asked_id = Some(asked_id);
    let (elsewhere, holder) = primaries
        .iter()
        .enumerate()
        .find_map(|(shard, holder)| {
            holder
                .clone()
                .filter(|h| Some(h) != asked_id.as_ref())
                .map(|h| (shard, h))
        })
        .expect("a primary on another node");
    let explained = cluster
        .node(asked)
        .post(
            "/_cluster/allocation/explain",
            &json!({"index": "spread", "shard": elsewhere, "primary": true}),
        )
        .ok()
        .json();
    assert_eq!(explained["current_state"], "started", "{explained}");
    assert_eq!(
        explained["current_node"]["id"],
        holder.as_str(),
        "{explained}"
    );
}

#[test]
fn nodes_report_the_nodes_left_after_one_is_killed() {
    let mut cluster = Cluster::start(3);
    let manager = cluster.manager(0);
    let victim = (manager + 1) % 3;
    let asked = (manager + 2) % 3;
    cluster
        .node(asked)
        .put(
            "/spread",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
        )
        .ok();
    let victim_state = cluster.state(asked);
    let victim_id = victim_state["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["name"] == format!("node-{victim}"))
        .map(|(id, _)| id.clone())
        .unwrap();
    cluster.nodes[victim].kill_9();
    eventually("the cluster to count the node out", || {
        cluster.state(asked)["nodes"].as_object().unwrap().len() == 2
    });
    let info = cluster.node(asked).get("/_nodes").ok().json();
    assert_eq!(
        info["_nodes"],
        json!({"total": 2, "successful": 2, "failed": 0}),
        "{info}"
    );
    assert!(info["nodes"].get(&victim_id).is_none(), "{info}");
    let rows = cat(&cluster, asked, "/_cat/nodes");
    assert_eq!(rows.len(), 2, "{rows:?}");
    // its primary waits for it: an UNASSIGNED row (once the manager has rerouted, a change
    // after the one that counted the node out), and an explanation of why
    eventually("the manager to unassign the lost primary", || {
        cat(&cluster, asked, "/_cat/allocation")
            .iter()
            .any(|r| r["node"] == "UNASSIGNED")
    });
    let allocation = cat(&cluster, asked, "/_cat/allocation");
    let unassigned: Vec<&Value> = allocation
        .iter()
        .filter(|r| r["node"] == "UNASSIGNED")
        .collect();
    assert_eq!(unassigned.len(), 1, "{allocation:?}");
    assert_eq!(number(&unassigned[0]["shards"]), 1, "{allocation:?}");
    let explained = cluster
        .node(asked)
        .get("/_cluster/allocation/explain")
        .ok()
        .json();
    assert_eq!(explained["current_state"], "unassigned", "{explained}");
    assert_eq!(
        explained["unassigned_info"]["reason"], "NODE_LEFT",
        "{explained}"
    );
    assert_eq!(
        explained["can_allocate"], "no_valid_shard_copy",
        "{explained}"
    );
}

/// Ingest pipelines are cluster metadata: one put through a node that is not the manager (it
/// forwards to the manager) is seen by every node, and runs on a bulk another node coordinates,
/// where it changes the documents and sends them to another index.
#[test]
fn a_pipeline_put_on_one_node_runs_on_a_bulk_coordinated_by_another() {
    let cluster = Cluster::start(3);
    let manager = cluster.manager(0);
    let putter = (manager + 1) % 3;
    let coordinator = (manager + 2) % 3;
    let pipeline = json!({"processors": [
        {"uppercase": {"field": "s"}},
        {"set": {"field": "_index", "value": "routed"}}]});
    cluster
        .node(putter)
        .put("/_ingest/pipeline/up", &pipeline)
        .ok();
    for i in 0..3 {
        let got = cluster
            .node(i)
            .get("/_ingest/pipeline/up")
            .expect(200)
            .json();
        assert_eq!(got["up"], pipeline, "node {i}");
    }
    cluster
        .node(coordinator)
        .put(
            "/routed",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
        )
        .ok();
    let mut ndjson = String::new();
    for i in 0..12 {
        ndjson.push_str(&json!({"index": {"_index": "logs", "_id": i.to_string()}}).to_string());
        ndjson.push('\n');
        ndjson.push_str(&json!({"s": format!("v{i}")}).to_string());
        ndjson.push('\n');
    }
    let bulk = cluster
        .node(coordinator)
        .bulk("/_bulk?pipeline=up&refresh=true", &ndjson)
        .ok()
        .json();
    assert_eq!(bulk["errors"], false, "{bulk}");
    assert!(bulk["ingest_took"].is_u64(), "{bulk}");
    for item in bulk["items"].as_array().unwrap() {
        assert_eq!(item["index"]["_index"], "routed", "{item}");
    }
    let doc = cluster
        .node(putter)
        .get("/routed/_doc/7")
        .expect(200)
        .json();
    assert_eq!(doc["_source"], json!({"s": "V7"}));
    cluster.node(putter).get("/logs").expect(404);

    cluster
        .node(coordinator)
        .delete("/_ingest/pipeline/up")
        .ok();
    eventually("every node forgets the pipeline", || {
        (0..3).all(|i| cluster.node(i).get("/_ingest/pipeline/up").status == 404)
    });
    let missing = cluster
        .node(putter)
        .put("/routed/_doc/x?pipeline=up", &json!({"s": "a"}));
    missing.expect_error(400, "illegal_argument_exception");
}
