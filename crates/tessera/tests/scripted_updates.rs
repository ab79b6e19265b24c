//! Scripted updates as a client lives them: counters bumped by `_update` and by bulks of
//! scripted updates (each read, run and written under the shard's lock, so none is lost
//! between its read and its write), acknowledged before a SIGKILL and all there after the
//! restart (the translog holds them), and a scripted upsert.

mod common;

use common::Node;
use serde_json::json;

#[test]
fn scripted_counters_survive_a_crash() {
    let mut node = Node::start();
    node.put(
        "/counters",
        &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
    )
    .ok();
    let script = json!({"source": "ctx._source.n += params.by", "params": {"by": 1}});
    // ten counters created by upserts, then bumped by single updates
    for id in 0..10 {
        node.post(
            &format!("/counters/_update/{id}"),
            &json!({"script": script, "upsert": {"n": 0}}),
        )
        .expect(201);
        node.post(
            &format!("/counters/_update/{id}"),
            &json!({"script": script}),
        )
        .ok();
    }
    // a bulk of 1000 updates with one script: 100 per counter
    let mut ndjson = String::new();
    for i in 0..1000 {
        ndjson.push_str(
            &json!({"update": {"_index": "counters", "_id": (i % 10).to_string()}}).to_string(),
        );
        ndjson.push('\n');
        ndjson.push_str(&json!({"script": script}).to_string());
        ndjson.push('\n');
    }
    let bulk = node.bulk("/_bulk", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{bulk}");
    // a scripted upsert
    node.post(
        "/counters/_update/new",
        &json!({"script": {"source": "ctx._source.n += params.by", "params": {"by": 5}}, "upsert": {"n": 100}, "scripted_upsert": true}),
    )
    .expect(201);
    node.post(
        "/counters/_update/0",
        &json!({"script": {"source": "ctx._source.n += params.by", "params": {"by": 1000}}}),
    )
    .ok();

    node.kill_9();
    node.start_again();
    for id in 0..10 {
        let doc = node.get(&format!("/counters/_doc/{id}")).ok().json();
        let expected = if id == 0 { 1101 } else { 101 };
        assert_eq!(doc["_source"]["n"], expected, "{doc}");
        assert_eq!(doc["_version"], 102 + u64::from(id == 0), "{doc}");
    }
    let doc = node.get("/counters/_doc/new").ok().json();
    assert_eq!(doc["_source"], json!({"n": 105}));
}
