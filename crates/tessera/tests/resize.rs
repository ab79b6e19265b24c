//! `_split`, `_shrink` and `_clone` on real nodes: thousands of documents (some updated, some
//! deleted, some with a custom routing) resized from 1, 2 and 4 shards; every document is found
//! by id in the target with its `_version`, `_seq_no` and `_source`, counts and aggregations
//! equal the source's, and the target takes new writes once its copied write block is lifted.
//! A 3-node cluster resizes where the source shards' copies lie.

mod common;

use common::cluster::Cluster;
use common::Node;
use serde_json::{json, Value};

const DOCS: usize = 3000;

/// Creates `index` with `shards` shards and loads it: `DOCS` documents (every 7th routed),
/// every 10th updated, every 31st deleted; refreshed.
fn load(node: &Node, index: &str, shards: u32) {
    node.put(
        &format!("/{index}"),
        &json!({
            "settings": {"number_of_shards": shards, "number_of_replicas": 0},
            "mappings": {"properties": {"tag": {"type": "keyword"}, "n": {"type": "long"}}}
        }),
    )
    .ok();
    let mut ndjson = String::new();
    for i in 0..DOCS {
        let mut meta = json!({"index": {"_index": index, "_id": format!("d{i}")}});
        if i % 7 == 0 {
            meta["index"]["routing"] = json!(format!("r{}", i % 5));
        }
        ndjson.push_str(&format!(
            "{meta}\n{}\n",
            json!({"tag": format!("t{}", i % 13), "n": i})
        ));
    }
    for i in (0..DOCS).step_by(10) {
        let mut meta = json!({"index": {"_index": index, "_id": format!("d{i}")}});
        if i % 7 == 0 {
            meta["index"]["routing"] = json!(format!("r{}", i % 5));
        }
        ndjson.push_str(&format!(
            "{meta}\n{}\n",
            json!({"tag": "updated", "n": i, "extra": i})
        ));
    }
    for i in (0..DOCS).step_by(31) {
        let mut meta = json!({"delete": {"_index": index, "_id": format!("d{i}")}});
        if i % 7 == 0 {
            meta["delete"]["routing"] = json!(format!("r{}", i % 5));
        }
        ndjson.push_str(&format!("{meta}\n"));
    }
    let bulk = node.bulk("/_bulk?refresh=true", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{}", bulk["items"][0]);
}

fn block_writes(node: &Node, index: &str, blocked: bool) {
    node.put(
        &format!("/{index}/_settings"),
        &json!({"index.blocks.write": blocked}),
    )
    .ok();
}

/// `_mget` of every document id (with its routing) in `index`: each `found`, `_version`,
/// `_seq_no`, `_source`.
fn every_doc(node: &Node, index: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for chunk in (0..DOCS).collect::<Vec<_>>().chunks(500) {
        let docs: Vec<Value> = chunk
            .iter()
            .map(|i| {
                let mut doc = json!({"_id": format!("d{i}")});
                if i % 7 == 0 {
                    doc["routing"] = json!(format!("r{}", i % 5));
                }
                doc
            })
            .collect();
        let answer = node
            .post(&format!("/{index}/_mget"), &json!({ "docs": docs }))
            .ok()
            .json();
        for doc in answer["docs"].as_array().unwrap() {
            found.push(json!({
                "_id": doc["_id"],
                "found": doc["found"],
                "_version": doc["_version"],
                "_seq_no": doc["_seq_no"],
                "_routing": doc["_routing"],
                "_source": doc["_source"],
            }));
        }
    }
    found
}

/// Counts and aggregations of `index`.
fn summary(node: &Node, index: &str) -> Value {
    let answer = node.search(
        index,
        &json!({
            "size": 0,
            "track_total_hits": true,
            "aggs": {
                "tags": {"terms": {"field": "tag", "size": 50}},
                "sum": {"sum": {"field": "n"}},
                "extra": {"stats": {"field": "extra"}}
            }
        }),
    );
    json!({"total": answer["hits"]["total"], "aggregations": answer["aggregations"]})
}

/// Resizes `source` into `target` and checks that the target holds exactly the source's
/// documents.
fn resize_and_compare(node: &Node, kind: &str, source: &str, target: &str, shards: u32) {
    let answer = node
        .post(
            &format!("/{source}/_{kind}/{target}"),
            &json!({"settings": {"index.number_of_shards": shards, "index.number_of_replicas": 0}}),
        )
        .ok()
        .json();
    assert_eq!(
        answer,
        json!({"acknowledged": true, "shards_acknowledged": true, "index": target})
    );
    let settings = node
        .get(&format!("/{target}/_settings?flat_settings=true"))
        .ok()
        .json();
    let settings = &settings[target]["settings"];
    assert_eq!(settings["index.number_of_shards"], shards.to_string());
    assert_eq!(settings["index.resize.source.name"], source);
    let expected = every_doc(node, source);
    assert_eq!(
        expected.iter().filter(|d| d["found"] == true).count(),
        DOCS - DOCS.div_ceil(31)
    );
    assert_eq!(
        every_doc(node, target),
        expected,
        "{kind} {source} -> {target}"
    );
    assert_eq!(summary(node, target), summary(node, source));
    assert_eq!(node.count(target), node.count(source));
}

/// The target takes writes once its block is lifted, routed as the target routes them.
fn write_to(node: &Node, target: &str) {
    block_writes(node, target, false);
    let mut ndjson = String::new();
    for i in 0..200 {
        ndjson.push_str(&format!(
            "{}\n{}\n",
            json!({"index": {"_index": target, "_id": format!("new{i}")}}),
            json!({"tag": "new", "n": i})
        ));
    }
    let bulk = node.bulk("/_bulk?refresh=true", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{}", bulk["items"][0]);
    for i in (0..200).step_by(17) {
        let doc = node.get(&format!("/{target}/_doc/new{i}")).ok().json();
        assert_eq!(doc["found"], true, "{doc}");
    }
    // an overwrite of a resized document finds the old version where the target routes it
    let doc = node
        .put(
            &format!("/{target}/_doc/d1"),
            &json!({"tag": "again", "n": 1}),
        )
        .ok()
        .json();
    assert_eq!(doc["result"], "updated", "{doc}");
    assert_eq!(doc["_version"], 2);
    let answer = node.search(target, &json!({"query": {"term": {"tag": "new"}}}));
    assert_eq!(answer["hits"]["total"]["value"], 200);
}

#[test]
fn split_shrink_and_clone_keep_every_document_on_one_node() {
    let node = Node::start();
    load(&node, "one", 1);
    load(&node, "two", 2);
    load(&node, "four", 4);
    for index in ["one", "two", "four"] {
        block_writes(&node, index, true);
    }
    resize_and_compare(&node, "split", "one", "one-split-4", 4);
    resize_and_compare(&node, "split", "two", "two-split-4", 4);
    resize_and_compare(&node, "shrink", "four", "four-shrink-2", 2);
    resize_and_compare(&node, "shrink", "four", "four-shrink-1", 1);
    resize_and_compare(&node, "clone", "two", "two-clone", 2);
    // a target of a target
    block_writes(&node, "four-shrink-2", true);
    resize_and_compare(&node, "split", "four-shrink-2", "four-shrink-2-split-8", 8);
    for target in ["one-split-4", "two-split-4", "four-shrink-1", "two-clone"] {
        write_to(&node, target);
    }
    // the source still refuses writes, and answers as before
    node.put("/two/_doc/x", &json!({"n": 1}))
        .expect_error(403, "cluster_block_exception");
    // everything survives a restart
    let mut node = node;
    node.restart();
    node.get("/_cluster/health?wait_for_status=green&timeout=30s")
        .ok();
    assert_eq!(every_doc(&node, "four-shrink-2"), every_doc(&node, "four"));
    assert_eq!(node.count("one-split-4"), node.count("one") + 200);
}

#[test]
fn bad_resizes_are_refused_and_create_nothing() {
    let node = Node::start();
    load(&node, "src", 2);
    node.post(
        "/src/_split/t",
        &json!({"settings": {"index.number_of_shards": 4}}),
    )
    .expect_error(500, "illegal_state_exception");
    block_writes(&node, "src", true);
    node.post(
        "/src/_split/t",
        &json!({"settings": {"index.number_of_shards": 3}}),
    )
    .expect_error(400, "illegal_argument_exception");
    node.post(
        "/src/_shrink/t",
        &json!({"settings": {"index.number_of_shards": 4}}),
    )
    .expect_error(400, "illegal_argument_exception");
    node.post("/src/_clone/src", &json!({}))
        .expect_error(400, "resource_already_exists_exception");
    node.post("/src/_clone/t", &json!({"settings": {"index.foo": 1}}))
        .expect_error(400, "illegal_argument_exception");
    node.post("/missing/_clone/t", &json!({}))
        .expect_error(404, "index_not_found_exception");
    node.get("/t")
        .expect_error(404, "index_not_found_exception");
    let answer = node.get("/_cluster/pending_tasks").ok().json();
    assert_eq!(answer, json!({"tasks": []}));
}

#[test]
fn a_cluster_resizes_where_the_source_copies_lie() {
    let cluster = Cluster::start(3);
    let node = cluster.node(0);
    load(node, "src", 1);
    block_writes(node, "src", true);
    let other = cluster.node(1);
    resize_and_compare(other, "split", "src", "src-split", 2);
    resize_and_compare(other, "clone", "src", "src-clone", 1);
    let primaries = cluster.primaries(0, "src");
    for target in ["src-split", "src-clone"] {
        assert!(
            cluster
                .primaries(0, target)
                .iter()
                .all(|p| p == &primaries[0]),
            "{target} is not where its source is"
        );
    }
    write_to(cluster.node(2), "src-split");
    // a target's replicas recover from its primary as any replica does
    let answer = other
        .post(
            "/src/_split/src-split-replicated",
            &json!({"settings": {"index.number_of_shards": 4, "index.number_of_replicas": 1}}),
        )
        .ok()
        .json();
    assert_eq!(answer["acknowledged"], true, "{answer}");
    let health = other
        .get("/_cluster/health/src-split-replicated?wait_for_status=green&timeout=30s")
        .ok()
        .json();
    assert_eq!(health["status"], "green", "{health}");
    assert_eq!(
        every_doc(cluster.node(2), "src-split-replicated"),
        every_doc(node, "src")
    );
    let on_replicas = other
        .post(
            "/src-split-replicated/_search?preference=_replica",
            &json!({"size": 0, "track_total_hits": true, "aggs": {"sum": {"sum": {"field": "n"}}}}),
        )
        .ok()
        .json();
    let on_source = summary(node, "src");
    assert_eq!(on_replicas["hits"]["total"], on_source["total"]);
    assert_eq!(
        on_replicas["aggregations"]["sum"],
        on_source["aggregations"]["sum"]
    );
    let pending = cluster.node(2).get("/_cluster/pending_tasks").ok().json();
    assert!(pending["tasks"].is_array(), "{pending}");
}
