//! A real cluster on loopback (`common::cluster::Cluster`: an etcd of its own and `tessera
//! serve` processes joined to it): formation, allocation, answers equal to one node's, index
//! changes from any node, manager failover, a node leaving and coming back, an etcd outage.

mod common;

use common::cluster::{eventually, Cluster};
use common::{hit_ids, total_hits, Node};
use serde_json::{json, Value};

fn docs_ndjson(index: &str, count: usize) -> String {
    let mut lines = String::new();
    for i in 0..count {
        lines.push_str(&json!({"index": {"_index": index, "_id": i.to_string()}}).to_string());
        lines.push('\n');
        let doc = json!({
            "n": i,
            "tag": format!("t{}", i % 7),
            "price": (i * 37 % 101) as f64 / 3.0,
            "msg": format!("message number {} of the {} kind", i, if i % 2 == 0 { "even" } else { "odd" }),
        });
        lines.push_str(&doc.to_string());
        lines.push('\n');
    }
    lines
}

const INDEX_BODY: &str = r#"{"settings": {"number_of_shards": 3, "number_of_replicas": 0},
    "mappings": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"},
    "price": {"type": "double"}, "msg": {"type": "text"}}}}"#;

/// The parts of a search answer that must not depend on where the shards are.
fn comparable(mut response: Value) -> Value {
    let object = response.as_object_mut().unwrap();
    object.remove("took");
    response
}

#[test]
fn a_cluster_spreads_an_index_over_its_nodes_and_answers_as_one_node_does() {
    let cluster = Cluster::start(3);
    let single = Node::start();
    let body: Value = serde_json::from_str(INDEX_BODY).unwrap();
    cluster.node(1).put("/items", &body).ok();
    single.put("/items", &body).ok();

    // one primary on each node, every node seeing the same routing
    let primaries = cluster.primaries(0, "items");
    let mut holders: Vec<_> = primaries.iter().map(|p| p.clone().unwrap()).collect();
    holders.sort();
    holders.dedup();
    assert_eq!(holders.len(), 3, "{primaries:?}");
    eventually("every node to apply the routing", || {
        (0..3).all(|i| cluster.primaries(i, "items") == primaries)
    });

    let ndjson = docs_ndjson("items", 500);
    let bulk = cluster.node(2).bulk("/_bulk", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{bulk}");
    single.bulk("/_bulk", &ndjson).ok();
    cluster.node(0).post_empty("/items/_refresh").ok();
    single.post_empty("/items/_refresh").ok();
    // every node's copies merge, whichever node is asked
    let merged = cluster
        .node(1)
        .post_empty("/items/_forcemerge?max_num_segments=1")
        .ok()
        .json();
    assert_eq!(merged["_shards"]["successful"], 3, "{merged}");
    single
        .post_empty("/items/_forcemerge?max_num_segments=1")
        .ok();

    let searches = [
        json!({"query": {"match_all": {}}, "sort": [{"n": "desc"}], "size": 7}),
        json!({"query": {"match": {"msg": "even kind"}}, "size": 10}),
        json!({"query": {"range": {"price": {"gte": 5, "lt": 20}}}, "sort": ["_doc"], "size": 5, "from": 3}),
        json!({"size": 0, "aggs": {
            "tags": {"terms": {"field": "tag", "size": 3}, "aggs": {"p": {"avg": {"field": "price"}}}},
            "prices": {"histogram": {"field": "price", "interval": 10}},
            "stats": {"stats": {"field": "n"}},
            "card": {"cardinality": {"field": "tag"}}
        }}),
        json!({"query": {"term": {"tag": "t3"}}, "sort": [{"price": "asc"}, {"n": "asc"}], "size": 4,
               "search_after": [10.0, 0]}),
    ];
    for (i, search) in searches.iter().enumerate() {
        let expected = comparable(single.search("items", search));
        for n in 0..3 {
            let got = comparable(cluster.node(n).search("items", search));
            assert_eq!(got, expected, "search {i} on node {n}: {search}");
        }
    }
    // the same searches in one `_msearch`, from any node, with a failing one among them
    let mut ndjson = String::from("{\"index\": \"no-such-index\"}\n{}\n");
    for search in &searches {
        ndjson.push_str(&format!("{{}}\n{search}\n"));
    }
    for n in 0..3 {
        let multi = cluster
            .node(n)
            .send_raw(
                "POST",
                "/items/_msearch",
                ndjson.as_bytes(),
                "application/x-ndjson",
            )
            .expect(200)
            .json();
        let items = multi["responses"].as_array().unwrap();
        assert_eq!(items[0]["status"], 404, "{multi}");
        for (i, search) in searches.iter().enumerate() {
            let mut got = comparable(items[i + 1].clone());
            assert_eq!(
                got.as_object_mut().unwrap().remove("status"),
                Some(json!(200))
            );
            let expected = comparable(single.search("items", search));
            assert_eq!(got, expected, "msearch item {i} on node {n}: {search}");
        }
    }
    for n in 0..3 {
        let node = cluster.node(n);
        assert_eq!(node.count("items"), 500);
        let doc = node.get("/items/_doc/42").expect(200).json();
        assert_eq!(doc["_source"]["n"], 42);
        let docs = node
            .post("/_mget", &json!({"docs": [{"_index": "items", "_id": "1"}, {"_index": "items", "_id": "nope"}]}))
            .expect(200)
            .json();
        assert_eq!(docs["docs"][0]["found"], true, "{docs}");
        assert_eq!(docs["docs"][1]["found"], false, "{docs}");
    }

    // a write from any node goes to the primary: an update, then a delete
    cluster
        .node(0)
        .post(
            "/items/_update/42?refresh=true",
            &json!({"doc": {"tag": "updated"}}),
        )
        .ok();
    let hits = cluster
        .node(1)
        .search("items", &json!({"query": {"term": {"tag": "updated"}}}));
    assert_eq!(hit_ids(&hits), ["42"]);
    cluster.node(2).delete("/items/_doc/42?refresh=true").ok();
    assert_eq!(cluster.node(0).count("items"), 499);
}

#[test]
fn indices_are_created_mapped_and_deleted_from_any_node() {
    let cluster = Cluster::start(3);
    cluster
        .node(0)
        .put(
            "/logs",
            &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
        )
        .ok();
    cluster
        .node(1)
        .put("/logs", &json!({}))
        .expect_error(400, "resource_already_exists_exception");
    // an explicit mapping on one node, a dynamic field from a write on another
    cluster
        .node(1)
        .put(
            "/logs/_mapping",
            &json!({"properties": {"level": {"type": "keyword"}}}),
        )
        .ok();
    cluster
        .node(2)
        .post(
            "/logs/_doc/1?refresh=true",
            &json!({"level": "warn", "took_ms": 12}),
        )
        .ok();
    eventually("the mapping on every node", || {
        (0..3).all(|i| {
            let mapping = cluster.node(i).get("/logs/_mapping").json();
            let properties = &mapping["logs"]["mappings"]["properties"];
            properties["level"]["type"] == "keyword" && properties["took_ms"]["type"] == "long"
        })
    });
    cluster
        .node(0)
        .put(
            "/logs/_settings",
            &json!({"index": {"refresh_interval": "5s"}}),
        )
        .ok();
    eventually("the settings on every node", || {
        (0..3).all(|i| {
            let settings = cluster.node(i).get("/logs/_settings").json();
            settings["logs"]["settings"]["index"]["refresh_interval"] == "5s"
        })
    });
    // auto-created by a write on a node that is not the manager
    let manager = cluster.manager(0);
    let other = (manager + 1) % 3;
    cluster
        .node(other)
        .post("/auto/_doc/a?refresh=true", &json!({"x": 1}))
        .ok();
    assert_eq!(cluster.node(manager).count("auto"), 1);

    cluster.node(2).delete("/logs").ok();
    eventually("the index gone everywhere", || {
        (0..3).all(|i| cluster.node(i).get("/logs").status == 404)
    });
    cluster
        .node(0)
        .get("/logs/_doc/1")
        .expect_error(404, "index_not_found_exception");

    // cluster settings are the cluster's: set on one node, in force on all
    cluster
        .node(1)
        .put(
            "/_cluster/settings",
            &json!({"persistent": {"action.auto_create_index": "false"}}),
        )
        .ok();
    for i in 0..3 {
        let settings = cluster
            .node(i)
            .get("/_cluster/settings?flat_settings=true")
            .json();
        assert_eq!(
            settings["persistent"]["action.auto_create_index"], "false",
            "node {i}: {settings}"
        );
    }
    cluster
        .node(2)
        .post("/refused/_doc/1", &json!({"x": 1}))
        .expect_error(404, "index_not_found_exception");
}

#[test]
fn a_killed_manager_is_replaced_and_a_node_that_left_gets_its_shards_back() {
    let mut cluster = Cluster::start(3);
    let body: Value = serde_json::from_str(INDEX_BODY).unwrap();
    cluster.node(0).put("/items", &body).ok();
    cluster
        .node(0)
        .bulk("/_bulk?refresh=true", &docs_ndjson("items", 90))
        .ok();

    let manager = cluster.manager(0);
    let survivor = (manager + 1) % 3;
    cluster.nodes[manager].kill_9();
    eventually("another manager", || {
        let state = cluster.state(survivor);
        let elected = state["cluster_manager_node"]
            .as_str()
            .or(state["master_node"].as_str());
        state["nodes"].as_object().unwrap().len() == 2
            && elected.is_some_and(|id| state["nodes"][id]["name"] != format!("node-{manager}"))
    });
    // the dead node's primary is unassigned: the index is red, and a search says so
    eventually("the index red", || {
        cluster.node(survivor).get("/_cluster/health/items").json()["status"] == "red"
    });
    let partial = cluster
        .node(survivor)
        .search("items", &json!({"query": {"match_all": {}}, "size": 0}));
    assert_eq!(partial["_shards"]["failed"], 1, "{partial}");
    assert!(total_hits(&partial) < 90);
    // the new manager still allocates
    cluster
        .node(survivor)
        .put(
            "/fresh",
            &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
        )
        .ok();

    // the node comes back with its data: its shard is assigned to it again
    cluster.nodes[manager].start_again();
    eventually("the index green again", || {
        cluster.node(survivor).get("/_cluster/health/items").json()["status"] == "green"
    });
    for i in 0..3 {
        assert_eq!(cluster.node(i).count("items"), 90, "node {i}");
    }
}

#[test]
fn without_etcd_searches_go_on_and_changes_wait_for_it() {
    let mut cluster = Cluster::start(2);
    let body: Value = serde_json::from_str(INDEX_BODY).unwrap();
    cluster.node(0).put("/items", &body).ok();
    cluster
        .node(1)
        .bulk("/_bulk?refresh=true", &docs_ndjson("items", 60))
        .ok();

    cluster.etcd.kill();
    // searches go on with the last routing
    for i in 0..2 {
        assert_eq!(cluster.node(i).count("items"), 60, "node {i}");
    }
    // once no node can show its membership is alive (lease ttl 2 s), writes are refused, and
    // so is anything that needs the manager: nothing is acknowledged that could be lost
    eventually("writes refused", || {
        cluster
            .node(1)
            .post("/items/_doc/late", &json!({"n": 1}))
            .status
            == 503
    });
    let refused = cluster.node(1).post("/items/_doc/late", &json!({"n": 1}));
    refused.expect_error(503, "cluster_block_exception");
    let created = cluster.node(0).put("/other", &json!({}));
    assert_eq!(created.status, 503, "{}", created.body);

    // etcd back: the cluster goes on where it was
    cluster.etcd.restart().expect("restart etcd");
    eventually("writes accepted again", || {
        cluster
            .node(1)
            .post("/items/_doc/late?refresh=true", &json!({"n": 1}))
            .is_success()
    });
    cluster.node(0).put("/other", &json!({})).ok();
    assert_eq!(cluster.node(0).count("items"), 61);
}

#[test]
fn a_bulk_to_an_unreachable_primary_fails_its_items_alone() {
    let mut cluster = Cluster::start(2);
    cluster
        .node(0)
        .put(
            "/logs",
            &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
        )
        .ok();
    let primaries = cluster.primaries(0, "logs");
    let state = cluster.state(0);
    let name_of = |id: &Option<String>| state["nodes"][id.as_ref().unwrap()]["name"].clone();
    assert_ne!(
        name_of(&primaries[0]),
        name_of(&primaries[1]),
        "{primaries:?}"
    );
    // kill node 1; before its lease runs out the routing still names it
    cluster.nodes[1].kill_9();
    let bulk = cluster
        .node(0)
        .bulk("/_bulk", &docs_ndjson("logs", 20))
        .expect(200)
        .json();
    let items = bulk["items"].as_array().unwrap();
    assert_eq!(items.len(), 20);
    let failed: Vec<&Value> = items
        .iter()
        .filter(|item| item["index"]["error"].is_object())
        .collect();
    let created = items.len() - failed.len();
    assert!(created > 0 && !failed.is_empty(), "{bulk}");
    for item in &failed {
        let status = item["index"]["status"].as_u64().unwrap();
        assert!(status >= 500, "an unreachable primary is a 5xx: {item}");
    }
    // what was acknowledged is there
    cluster.node(0).post_empty("/logs/_refresh").ok();
    let hits = cluster
        .node(0)
        .search("logs", &json!({"size": 0, "query": {"match_all": {}}}));
    assert_eq!(total_hits(&hits), created as u64, "{hits}");
}
