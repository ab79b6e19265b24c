//! k-NN end to end on one node: vectors indexed through the REST API are searched with the
//! `knn` query (k per shard, filters, deletes, updates), survive translog replay after
//! `kill -9`, a force merge and a restart, and are served the same through the loopback shard
//! transport (the wire encoding of shard requests).

mod common;

use common::Node;
use serde_json::{json, Value};

fn create(node: &Node, index: &str, shards: u32) {
    node.put(
        &format!("/{index}"),
        &json!({
            "settings": {"index.knn": true, "number_of_shards": shards, "number_of_replicas": 0},
            "mappings": {"properties": {
                "v": {"type": "knn_vector", "dimension": 3,
                      "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2"}},
                "tag": {"type": "keyword"}
            }}
        }),
    )
    .expect(200);
}

/// Document `i` has the vector `[i, 0, 0]`; even ones are tagged `even`.
fn load(node: &Node, index: &str, ids: std::ops::Range<u32>) {
    let mut ndjson = String::new();
    for i in ids {
        ndjson.push_str(&format!(
            "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{i}\"}}}}\n"
        ));
        let tag = if i % 2 == 0 { "even" } else { "odd" };
        ndjson.push_str(&format!("{{\"v\":[{i},0,0],\"tag\":\"{tag}\"}}\n"));
    }
    let resp = node.bulk("/_bulk", &ndjson).expect(200).json();
    assert_eq!(resp["errors"], false, "{resp}");
}

fn knn_ids(node: &Node, index: &str, query: Value) -> Vec<String> {
    let resp = node.search(index, &json!({"size": 100, "query": query}));
    resp["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{resp}"))
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

fn nearest(node: &Node, index: &str, x: f32, k: u32) -> Vec<String> {
    knn_ids(
        node,
        index,
        json!({"knn": {"v": {"vector": [x, 0, 0], "k": k}}}),
    )
}

#[test]
fn vectors_survive_replay_merge_and_restart() {
    let mut node = Node::start();
    create(&node, "vec", 1);
    // several segments: refreshes between batches
    for batch in 0..4 {
        load(&node, "vec", batch * 25..(batch + 1) * 25);
        node.refresh("vec");
    }
    assert_eq!(nearest(&node, "vec", 10.2, 3), ["10", "11", "9"]);
    let scores = node.search(
        "vec",
        &json!({"query": {"knn": {"v": {"vector": [10, 0, 0], "k": 2}}}}),
    );
    assert_eq!(scores["hits"]["hits"][0]["_score"], 1.0, "{scores}");
    assert_eq!(scores["hits"]["hits"][1]["_score"], 0.5, "{scores}");
    // a filter: the best k among its matches
    assert_eq!(
        knn_ids(
            &node,
            "vec",
            json!({"knn": {"v": {"vector": [10.2, 0, 0], "k": 3, "filter": {"term": {"tag": "odd"}}}}})
        ),
        ["11", "9", "13"]
    );
    // a delete and an update: the old vector is gone, the new one is found
    node.delete("/vec/_doc/10").expect(200);
    node.put("/vec/_doc/11", &json!({"v": [500, 0, 0], "tag": "odd"}))
        .expect(200);
    node.refresh("vec");
    assert_eq!(nearest(&node, "vec", 10.2, 3), ["9", "12", "8"]);
    assert_eq!(nearest(&node, "vec", 499.0, 1), ["11"]);

    // acknowledged but not refreshed: replayed from the translog after kill -9
    load(&node, "vec", 1000..1001);
    node.kill_9();
    node.start_again();
    assert_eq!(nearest(&node, "vec", 999.0, 1), ["1000"]);

    // merged into one segment: the surviving vectors only, under their new doc ids
    node.post_empty("/vec/_forcemerge?max_num_segments=1")
        .expect(200);
    assert_eq!(nearest(&node, "vec", 10.2, 3), ["9", "12", "8"]);
    assert_eq!(nearest(&node, "vec", 499.0, 1), ["11"]);
    node.restart();
    assert_eq!(nearest(&node, "vec", 10.2, 3), ["9", "12", "8"]);
    assert_eq!(node.count("vec"), 100);
}

#[test]
fn k_is_per_shard_through_the_loopback_transport() {
    let node = Node::start_with_config_text("transport.shard_requests: loopback\n");
    create(&node, "multi", 3);
    load(&node, "multi", 0..60);
    node.refresh("multi");
    // every shard returns its own top 2: up to 6 hits, the best of them first
    let ids = nearest(&node, "multi", 30.0, 2);
    assert!(ids.len() > 2 && ids.len() <= 6, "{ids:?}");
    assert_eq!(ids[0], "30");
    let resp = node.search(
        "multi",
        &json!({"size": 1, "query": {"knn": {"v": {"vector": [30, 0, 0], "k": 2}}},
                "aggs": {"tags": {"terms": {"field": "tag"}}}}),
    );
    assert_eq!(resp["hits"]["hits"].as_array().unwrap().len(), 1, "{resp}");
    let total = resp["hits"]["total"]["value"].as_u64().unwrap();
    let counted: u64 = resp["aggregations"]["tags"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["doc_count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, counted, "{resp}");
    let stats = node.get("/_plugins/_knn/stats").expect(200).json();
    let mine = stats["nodes"].as_object().unwrap().values().next().unwrap();
    assert!(mine["knn_query_requests"].as_u64().unwrap() >= 2, "{stats}");
    let warm = node.get("/_plugins/_knn/warmup/multi").expect(200).json();
    assert_eq!(warm["_shards"]["successful"], 3, "{warm}");
}

#[test]
fn graphs_are_built_at_refresh_walked_and_sliced() {
    let node = Node::start();
    node.put(
        "/g",
        &json!({
            "settings": {"index.knn": true, "number_of_shards": 1, "number_of_replicas": 0,
                         "index.knn.algo_param.ef_search": 50},
            "mappings": {"properties": {
                "v": {"type": "knn_vector", "dimension": 3,
                      "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2",
                                 "parameters": {"m": 8, "ef_construction": 64}}},
                "tag": {"type": "keyword"}
            }}
        }),
    )
    .expect(200);
    let stats = |node: &Node| {
        let stats = node.get("/_plugins/_knn/stats").expect(200).json();
        stats["nodes"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone()
    };
    let built_before = stats(&node)["graph_index_requests"].as_u64().unwrap();
    for batch in 0..4 {
        load(&node, "g", batch * 300..(batch + 1) * 300);
        node.refresh("g");
    }
    // the default threshold (0) gives every flushed segment its graph
    let built = stats(&node)["graph_index_requests"].as_u64().unwrap() - built_before;
    assert!(built >= 4, "{built}");
    let walked_before = stats(&node)["graph_query_requests"].as_u64().unwrap();
    let expected = ["450", "451", "449", "452", "448"];
    for (mode, slices) in [("none", 1), ("all", 2), ("all", 3), ("auto", 0)] {
        let mut settings = json!({"index.search.concurrent_segment_search.mode": mode});
        if slices > 0 {
            settings["index.search.concurrent.max_slice_count"] = json!(slices);
        }
        node.put("/g/_settings", &settings).expect(200);
        assert_eq!(nearest(&node, "g", 450.3, 5), expected, "{mode} {slices}");
        assert_eq!(
            knn_ids(
                &node,
                "g",
                json!({"knn": {"v": {"vector": [450.3, 0, 0], "k": 3,
                                     "method_parameters": {"ef_search": 10},
                                     "filter": {"term": {"tag": "odd"}}}}})
            ),
            ["451", "449", "453"],
            "{mode} {slices}"
        );
    }
    assert!(stats(&node)["graph_query_requests"].as_u64().unwrap() > walked_before);
    // -1: merged segments get no graph, and are searched exactly
    node.put(
        "/g/_settings",
        &json!({"index.knn.advanced.approximate_threshold": -1}),
    )
    .expect(200);
    let built_before = stats(&node)["graph_index_requests"].as_u64().unwrap();
    node.post_empty("/g/_forcemerge?max_num_segments=1")
        .expect(200);
    assert_eq!(
        stats(&node)["graph_index_requests"].as_u64().unwrap(),
        built_before
    );
    assert_eq!(nearest(&node, "g", 450.3, 5), expected);
}
