//! Durability: every acknowledged write survives `kill -9` (it is fsynced to the translog
//! before the answer and replayed on start), with or without a refresh or flush.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{index_uuid, Client, Node};
use serde_json::{json, Value};

fn create_index(node: &Node, index: &str) {
    node.put(
        &format!("/{index}"),
        &json!({
            "settings": {"number_of_shards": 3, "number_of_replicas": 0},
            "mappings": {"properties": {
                "n": {"type": "long"},
                "body": {"type": "text"},
                "kind": {"type": "keyword"}
            }}
        }),
    )
    .expect(200);
}

#[test]
fn acknowledged_writes_survive_kill_9_without_refresh() {
    let mut node = Node::start();
    create_index(&node, "dur");

    // 200 single-document writes
    for i in 0..200 {
        let resp = node
            .put(
                &format!("/dur/_doc/s{i}"),
                &json!({"n": i, "body": format!("single doc {i}"), "kind": "single"}),
            )
            .expect(201);
        assert_eq!(resp.json()["result"], "created");
    }
    // one bulk of 500
    let mut ndjson = String::new();
    for i in 0..500 {
        ndjson.push_str(&format!(
            "{{\"index\":{{\"_index\":\"dur\",\"_id\":\"b{i}\"}}}}\n"
        ));
        ndjson.push_str(&format!(
            "{{\"n\":{i},\"body\":\"bulk doc {i}\",\"kind\":\"bulk\"}}\n"
        ));
    }
    let bulk = node.bulk("/_bulk", &ndjson).expect(200).json();
    assert_eq!(bulk["errors"], false, "{bulk}");
    let items = bulk["items"].as_array().unwrap();
    assert_eq!(items.len(), 500);
    assert!(items.iter().all(|i| i["index"]["status"] == 201), "{bulk}");

    // updates and deletes are acknowledged writes too
    node.put(
        "/dur/_doc/s0",
        &json!({"n": -1, "body": "overwritten", "kind": "single"}),
    )
    .expect(200);
    node.post("/dur/_update/s1", &json!({"doc": {"n": -2}}))
        .expect(200);
    node.delete("/dur/_doc/s2").expect(200);
    node.delete("/dur/_doc/b499").expect(200);
    let total = 200 + 500 - 2;

    node.kill_9();
    node.start_again();

    // every acknowledged document is there, through the realtime get (no refresh yet)
    for i in 3..200 {
        let doc = node.get(&format!("/dur/_doc/s{i}")).expect(200).json();
        assert_eq!(doc["_source"]["n"], i, "{doc}");
    }
    for i in 0..499 {
        let doc = node.get(&format!("/dur/_doc/b{i}")).expect(200).json();
        assert_eq!(doc["_source"]["body"], format!("bulk doc {i}"), "{doc}");
    }
    let s0 = node.get("/dur/_doc/s0").expect(200).json();
    assert_eq!(s0["_source"]["body"], "overwritten", "{s0}");
    assert_eq!(s0["_version"], 2, "{s0}");
    let s1 = node.get("/dur/_doc/s1").expect(200).json();
    assert_eq!(s1["_source"]["n"], -2, "{s1}");
    assert_eq!(
        s1["_source"]["body"], "single doc 1",
        "partial update merged: {s1}"
    );
    node.get("/dur/_doc/s2").expect(404);
    node.get("/dur/_doc/b499").expect(404);

    node.refresh("dur");
    assert_eq!(node.count("dur"), total);
    let resp = node.search(
        "dur",
        &json!({"query": {"term": {"kind": "bulk"}}, "size": 0}),
    );
    assert_eq!(common::total_hits(&resp), 499, "{resp}");

    // replay must not duplicate anything when the node restarts again (gracefully, then hard)
    node.restart();
    node.refresh("dur");
    assert_eq!(node.count("dur"), total);
    node.kill_9();
    node.start_again();
    node.refresh("dur");
    assert_eq!(node.count("dur"), total);

    // the node keeps accepting writes after recovery, and they are durable too
    node.put("/dur/_doc/after", &json!({"n": 1000, "kind": "after"}))
        .expect(201);
    node.kill_9();
    node.start_again();
    assert_eq!(
        node.get("/dur/_doc/after").expect(200).json()["_source"]["n"],
        1000
    );
    node.refresh("dur");
    assert_eq!(node.count("dur"), total + 1);
}

#[test]
fn index_created_just_before_kill_9_survives() {
    let mut node = Node::start();
    create_index(&node, "fresh");
    node.put(
        "/fresh/_mapping",
        &json!({"properties": {"added": {"type": "keyword"}}}),
    )
    .expect(200);
    node.kill_9();
    node.start_again();
    let mapping = node.get("/fresh/_mapping").expect(200).json();
    let properties = &mapping["fresh"]["mappings"]["properties"];
    assert_eq!(properties["n"]["type"], "long", "{mapping}");
    assert_eq!(properties["added"]["type"], "keyword", "{mapping}");
    let settings = node.get("/fresh/_settings").expect(200).json();
    assert_eq!(
        settings["fresh"]["settings"]["index"]["number_of_shards"], "3",
        "{settings}"
    );
    node.put("/fresh/_doc/1", &json!({"added": "x"}))
        .expect(201);
    node.refresh("fresh");
    assert_eq!(node.count("fresh"), 1);
}

/// A writer thread that PUTs single documents and small bulks until the node goes away,
/// recording every id whose write was acknowledged with a 2xx.
fn writer(prefix: &str, client: Client, stop: Arc<AtomicBool>) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if i % 5 == 4 {
            // a bulk of 10
            let mut ndjson = String::new();
            let batch: Vec<String> = (0..10).map(|j| format!("{prefix}{i}-{j}")).collect();
            for id in &batch {
                ndjson.push_str(&format!(
                    "{{\"index\":{{\"_index\":\"race\",\"_id\":\"{id}\"}}}}\n"
                ));
                ndjson.push_str(&format!("{{\"n\":{i},\"kind\":\"bulk\"}}\n"));
            }
            match client.try_request(
                "POST",
                "/_bulk",
                Some((ndjson.as_bytes(), "application/x-ndjson")),
            ) {
                Ok(resp) if resp.is_success() => {
                    let body = resp.json();
                    for (item, id) in body["items"].as_array().unwrap().iter().zip(&batch) {
                        let status = item["index"]["status"].as_u64().unwrap();
                        if (200..300).contains(&status) {
                            ids.insert(id.clone());
                        }
                    }
                }
                Ok(resp) => panic!("bulk failed while the node was up: {resp:?}"),
                Err(_) => break, // the node was killed
            }
        } else {
            let id = format!("{prefix}{i}");
            let body = serde_json::to_vec(&json!({"n": i, "kind": "single"})).unwrap();
            match client.try_request(
                "PUT",
                &format!("/race/_doc/{id}"),
                Some((&body, "application/json")),
            ) {
                Ok(resp) if resp.is_success() => {
                    ids.insert(id);
                }
                Ok(resp) => panic!("write failed while the node was up: {resp:?}"),
                Err(_) => break,
            }
        }
        i += 1;
    }
    ids
}

/// Runs two writer threads (and, when `maintenance` is set, a thread that keeps flushing,
/// refreshing and force-merging) against `race`, then stops the node with `stop_node` while
/// they are busy. Returns every id acknowledged before the stop.
fn write_until_stopped(
    node: &mut Node,
    maintenance: bool,
    stop_node: impl FnOnce(&mut Node),
) -> BTreeSet<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let client = node.client();
            let stop = stop.clone();
            thread::Builder::new()
                .name(format!("writer-{prefix}"))
                .spawn(move || writer(prefix, client, stop))
                .unwrap()
        })
        .collect();
    if maintenance {
        let client = node.client();
        let stop = stop.clone();
        writers.push(
            thread::Builder::new()
                .name("maintenance".into())
                .spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let path = match i % 3 {
                            0 => "/race/_flush",
                            1 => "/race/_refresh",
                            _ => "/race/_forcemerge?max_num_segments=1",
                        };
                        match client.try_request("POST", path, None) {
                            Ok(resp) => assert!(resp.is_success(), "{path}: {resp:?}"),
                            Err(_) => break,
                        }
                        i += 1;
                        thread::sleep(Duration::from_millis(20));
                    }
                    BTreeSet::new()
                })
                .unwrap(),
        );
    }
    // let the writers run for a while, then stop the node mid-stream
    thread::sleep(Duration::from_millis(1500));
    stop_node(node);
    // writers stop on their own once the node is gone; the flag is a safety net
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let mut all: BTreeSet<String> = BTreeSet::new();
    for handle in writers {
        all.extend(handle.join().expect("writer thread panicked"));
    }
    assert!(
        all.len() > 20,
        "the writers should have made progress before the stop, got {} acks",
        all.len()
    );
    eprintln!("{} writes acknowledged before the stop", all.len());
    all
}

/// After a restart: every acknowledged id is there (realtime get, then search count).
fn assert_all_present(node: &Node, acked: &BTreeSet<String>) {
    let client = node.client();
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| client.get(&format!("/race/_doc/{id}")).status != 200)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged documents lost: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(20)]
    );
    node.refresh("race");
    let count = node.count("race");
    // unacknowledged in-flight writes may or may not have made it; acknowledged ones must have
    assert!(
        count >= acked.len() as u64,
        "count {count} < acknowledged {}",
        acked.len()
    );
    // and nothing that was never written appears: at most one in-flight write per writer,
    // a single doc or a bulk of 10
    assert!(
        count <= acked.len() as u64 + 20,
        "count {count} is far above the {} acknowledged writes",
        acked.len()
    );
}

#[test]
fn acknowledged_writes_survive_kill_9_during_concurrent_writes() {
    let mut node = Node::start();
    create_index(&node, "race");
    let acked = write_until_stopped(&mut node, false, Node::kill_9);
    node.start_again();
    assert_all_present(&node, &acked);
}

#[test]
fn acknowledged_writes_survive_kill_9_during_flush_and_merge() {
    let mut node = Node::start();
    create_index(&node, "race");
    let acked = write_until_stopped(&mut node, true, Node::kill_9);
    node.start_again();
    assert_all_present(&node, &acked);
    // a second crash right after recovery loses nothing either
    node.kill_9();
    node.start_again();
    assert_all_present(&node, &acked);
}

#[test]
fn acknowledged_writes_survive_a_graceful_stop_during_concurrent_writes() {
    let mut node = Node::start();
    create_index(&node, "race");
    let acked = write_until_stopped(&mut node, false, |node| {
        let status = node.stop();
        assert!(status.success(), "exit status after SIGTERM: {status}");
    });
    node.start_again();
    assert_all_present(&node, &acked);
}

#[test]
fn metadata_and_versions_survive_kill_9() {
    let mut node = Node::start();
    node.put(
        "/meta",
        &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
    )
    .expect(200);
    // dynamic mapping: fields introduced by documents
    node.put("/meta/_doc/1", &json!({"x": 1, "word": "hello"}))
        .expect(201);
    // dynamic index settings and persistent cluster settings
    node.put(
        "/meta/_settings",
        &json!({"index": {"refresh_interval": "-1"}}),
    )
    .expect(200);
    node.put(
        "/_cluster/settings",
        &json!({"persistent": {"search.concurrent_segment_search.mode": "all"}}),
    )
    .expect(200);
    // a document flushed to a commit, then deleted only in the translog
    node.put("/meta/_doc/2", &json!({"x": 2})).expect(201);
    node.post_empty("/meta/_flush").ok();
    node.delete("/meta/_doc/2").expect(200);
    let last = node
        .put("/meta/_doc/1", &json!({"x": 3, "word": "again"}))
        .expect(200)
        .json();
    assert_eq!(last["_version"], 2, "{last}");
    // an index deleted and created again with the same name
    node.put("/recreated", &json!({})).expect(200);
    node.put("/recreated/_doc/old", &json!({"old": true}))
        .expect(201);
    node.delete("/recreated").expect(200);
    node.put(
        "/recreated",
        &json!({"mappings": {"properties": {"new": {"type": "keyword"}}}}),
    )
    .expect(200);
    node.put("/recreated/_doc/new", &json!({"new": "yes"}))
        .expect(201);
    // aliases: one from the create body, two from an `_aliases` change, one of them removed
    node.put("/aliased", &json!({"aliases": {"first": {}}}))
        .expect(200);
    node.post(
        "/_aliases",
        &json!({"actions": [
            {"add": {"index": "aliased", "alias": "even", "filter": {"term": {"even": true}}}},
            {"add": {"indices": ["aliased", "meta"], "alias": "both", "is_write_index": false}},
            {"remove": {"index": "aliased", "alias": "first"}}
        ]}),
    )
    .expect(200);
    node.put(
        "/_index_template/kept",
        &json!({"index_patterns": ["kept-*"], "template": {"settings": {"number_of_shards": 3}}}),
    )
    .expect(200);

    node.kill_9();
    node.start_again();

    // the template is still there, and still applies
    node.put("/kept-1", &json!({})).expect(200);
    let kept = node.get("/kept-1/_settings").expect(200).json();
    assert_eq!(
        kept["kept-1"]["settings"]["index"]["number_of_shards"], "3",
        "{kept}"
    );
    let aliases = node.get("/_alias").expect(200).json();
    assert_eq!(
        aliases["aliased"]["aliases"],
        json!({"both": {"is_write_index": false}, "even": {"filter": {"term": {"even": true}}}}),
        "{aliases}"
    );
    assert_eq!(
        aliases["meta"]["aliases"],
        json!({"both": {"is_write_index": false}}),
        "{aliases}"
    );

    let mapping = node.get("/meta/_mapping").expect(200).json();
    let properties = &mapping["meta"]["mappings"]["properties"];
    assert_eq!(properties["x"]["type"], "long", "{mapping}");
    assert_eq!(properties["word"]["type"], "text", "{mapping}");
    let settings = node.get("/meta/_settings").expect(200).json();
    assert_eq!(
        settings["meta"]["settings"]["index"]["refresh_interval"], "-1",
        "{settings}"
    );
    let cluster = node.get("/_cluster/settings").expect(200).json();
    assert_eq!(
        cluster["persistent"]["search"]["concurrent_segment_search"]["mode"], "all",
        "{cluster}"
    );
    let one = node.get("/meta/_doc/1").expect(200).json();
    assert_eq!(one["_source"], json!({"x": 3, "word": "again"}), "{one}");
    assert_eq!(one["_version"], 2, "{one}");
    node.get("/meta/_doc/2").expect(404);
    node.refresh("meta");
    assert_eq!(node.count("meta"), 1);
    let resp = node.search("meta", &json!({"query": {"match": {"word": "again"}}}));
    assert_eq!(common::hit_ids(&resp), ["1"], "{resp}");

    // versions and sequence numbers continue after recovery, they do not start over
    let next = node
        .put("/meta/_doc/1", &json!({"x": 4}))
        .expect(200)
        .json();
    assert_eq!(next["_version"], 3, "{next}");
    assert!(
        next["_seq_no"].as_u64().unwrap() > last["_seq_no"].as_u64().unwrap(),
        "seq_no went backwards: before {last}, after {next}"
    );
    // optimistic concurrency against the recovered state
    node.put(
        &format!(
            "/meta/_doc/1?if_seq_no={}&if_primary_term={}",
            last["_seq_no"], last["_primary_term"]
        ),
        &json!({"x": 5}),
    )
    .expect_error(409, "version_conflict_engine_exception");

    // the re-created index has only its own data and mapping
    node.get("/recreated/_doc/old").expect(404);
    node.get("/recreated/_doc/new").expect(200);
    node.refresh("recreated");
    assert_eq!(node.count("recreated"), 1);
    let mapping = node.get("/recreated/_mapping").expect(200).json();
    assert!(
        mapping["recreated"]["mappings"]["properties"]
            .get("old")
            .is_none(),
        "{mapping}"
    );
}

/// The newest `translog-N.tlog` of shard 0 of the index with `uuid` (read from disk, so it works
/// while the node is down).
fn newest_translog_generation(node: &Node, uuid: &str) -> std::path::PathBuf {
    let dir = node
        .data_dir()
        .join("indices")
        .join(uuid)
        .join("0")
        .join("translog");
    let newest = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("translog-")?
                .strip_suffix(".tlog")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or_else(|| panic!("no translog generation in {}", dir.display()));
    dir.join(format!("translog-{newest}.tlog"))
}

#[test]
fn a_torn_translog_tail_loses_only_the_unacknowledged_write() {
    let mut node = Node::start();
    node.put(
        "/torn",
        &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}),
    )
    .expect(200);
    for i in 0..20 {
        node.put(&format!("/torn/_doc/{i}"), &json!({"n": i}))
            .expect(201);
    }
    let uuid = index_uuid(&node, "torn");
    node.kill_9();

    // simulate a crash in the middle of appending a record: a header announcing 200 bytes,
    // followed by only a few of them
    let tlog = newest_translog_generation(&node, &uuid);
    let before = std::fs::metadata(&tlog).unwrap().len();
    assert!(
        before > 0,
        "the unrefreshed writes are in {}",
        tlog.display()
    );
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&tlog)
            .unwrap();
        file.write_all(&200u32.to_le_bytes()).unwrap();
        file.write_all(&0xdead_beefu32.to_le_bytes()).unwrap();
        file.write_all(b"torn!").unwrap();
    }

    node.start_again();
    for i in 0..20 {
        node.get(&format!("/torn/_doc/{i}")).expect(200);
    }
    node.refresh("torn");
    assert_eq!(node.count("torn"), 20);

    // the log stays usable: new writes after the repaired tail survive the next crash
    for i in 20..30 {
        node.put(&format!("/torn/_doc/{i}"), &json!({"n": i}))
            .expect(201);
    }
    node.kill_9();
    node.start_again();
    for i in 0..30 {
        node.get(&format!("/torn/_doc/{i}")).expect(200);
    }
    node.refresh("torn");
    assert_eq!(node.count("torn"), 30);
}

#[test]
fn racing_dynamic_mapping_updates_stay_consistent_across_kill_9() {
    let mut node = Node::start();
    node.put(
        "/dyn",
        &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
    )
    .expect(200);
    // eight writers introduce the same 20 new fields at the same time, half of them as numbers
    // and half as strings: for each field one type wins, the losers get a clean 400
    let results: Vec<(String, String, Value, u16)> = thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let client = node.client();
                scope.spawn(move || {
                    (0..20)
                        .map(|f| {
                            let field = format!("f{f}");
                            let value = if t % 2 == 0 {
                                json!(f)
                            } else {
                                json!(format!("text {f}"))
                            };
                            let id = format!("{t}-{f}");
                            let resp = client.put(
                                &format!("/dyn/_doc/{id}"),
                                &json!({ field.clone(): value.clone() }),
                            );
                            if !resp.is_success() {
                                // a string for a long field; or, when two first uses race,
                                // the losing type's mapping update (as in OpenSearch)
                                let error = resp.json();
                                common::assert_error_body(&error, 400);
                                let kind = error["error"]["type"].as_str().unwrap();
                                assert!(
                                    kind == "mapper_parsing_exception"
                                        || kind == "illegal_argument_exception",
                                    "{error}"
                                );
                            }
                            (id, field, value, resp.status)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let acked: Vec<_> = results.iter().filter(|r| r.3 < 300).collect();
    assert!(
        acked.len() >= 20 * 4,
        "at least the winners' writes: {}",
        acked.len()
    );

    let mapping = node.get("/dyn/_mapping").expect(200).json();
    let properties = mapping["dyn"]["mappings"]["properties"].clone();
    assert_eq!(properties.as_object().unwrap().len(), 20, "{mapping}");
    for (id, field, value, _) in &acked {
        let kind = properties[field]["type"].as_str().unwrap();
        assert!(
            !(kind == "long" && value.is_string()),
            "doc {id}: {value} was accepted although [{field}] is a {kind}"
        );
    }

    node.kill_9();
    node.start_again();
    let after = node.get("/dyn/_mapping").expect(200).json();
    assert_eq!(
        after["dyn"]["mappings"]["properties"], properties,
        "the dynamic mapping changed across kill -9"
    );
    for (id, field, value, _) in &acked {
        let doc = node.get(&format!("/dyn/_doc/{id}")).expect(200).json();
        assert_eq!(&doc["_source"][field], value, "{doc}");
    }
    for (id, ..) in results.iter().filter(|r| r.3 >= 300) {
        node.get(&format!("/dyn/_doc/{id}")).expect(404);
    }
    node.refresh("dyn");
    assert_eq!(node.count("dyn"), acked.len() as u64);
}
