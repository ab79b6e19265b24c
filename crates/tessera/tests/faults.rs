//! Fault injection on real nodes: a full disk, corrupted and truncated translog and segment
//! files, mapping changes followed by `kill -9`, one broken index among healthy ones. Every
//! acknowledged write survives, and a broken shard fails alone, with its reason, while the
//! node serves everything else.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{index_uuid, Node};
use serde_json::{json, Value};

/// A tmpfs mounted on a directory for one test, unmounted (lazily) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` where mounting is not allowed (not root, no mount namespace rights).
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| Tmpfs(dir.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount the tmpfs with {size}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn create_index(node: &Node, name: &str, extra: Value) {
    let mut body = json!({
        "settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}
    });
    if let (Some(target), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            match (target.get_mut(key), value) {
                (Some(Value::Object(settings)), Value::Object(more)) => {
                    settings.extend(more.clone());
                }
                _ => {
                    target.insert(key.clone(), value.clone());
                }
            }
        }
    }
    node.put(&format!("/{name}"), &body).expect(200);
}

fn shard_dir(node: &Node, uuid: &str) -> PathBuf {
    node.data_dir().join("indices").join(uuid).join("0")
}

/// The files of `dir` whose names end with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

/// `_cat/shards` rows of `index` as JSON, with the unassigned columns.
fn cat_shards(node: &Node, index: &str) -> Vec<Value> {
    let rows = node
        .get(&format!(
            "/_cat/shards/{index}?format=json&h=index,shard,prirep,state,unassigned.reason,unassigned.details"
        ))
        .expect(200)
        .json();
    rows.as_array().unwrap().clone()
}

/// The primary of `index`'s shard 0 in the published cluster state, once its state is `state`
/// (the routing follows the shard within a recovery round).
fn routed_primary(node: &Node, index: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = node
            .get(&format!("/_cluster/state/routing_table/{index}"))
            .expect(200)
            .json();
        let primary = body["routing_table"]["indices"][index]["shards"]["0"][0].clone();
        if primary["state"] == state {
            return primary;
        }
        assert!(
            Instant::now() < deadline,
            "[{index}] is not {state} in the cluster state: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that `index`'s only shard is failed with an error of `kind`, and that the node
/// reports and answers accordingly.
fn assert_failed_alone(node: &Node, index: &str, kind: &str) {
    let routed = routed_primary(node, index, "UNASSIGNED");
    assert_eq!(routed["node"], Value::Null, "{routed}");
    assert_eq!(
        routed["unassigned_info"]["reason"], "ALLOCATION_FAILED",
        "{routed}"
    );
    let details = routed["unassigned_info"]["details"]
        .as_str()
        .unwrap_or_default();
    assert!(details.contains(kind), "{routed}");
    let rows = cat_shards(node, index);
    assert_eq!(rows[0]["state"], "UNASSIGNED", "{rows:?}");
    assert_eq!(
        rows[0]["unassigned.reason"], "ALLOCATION_FAILED",
        "{rows:?}"
    );
    let details = rows[0]["unassigned.details"].as_str().unwrap_or_default();
    assert!(details.contains(kind), "{details}");
    let health = node
        .get(&format!("/_cluster/health/{index}"))
        .expect(200)
        .json();
    assert_eq!(health["status"], "red", "{health}");
    assert_eq!(health["unassigned_shards"], 1, "{health}");
    let explained = node
        .post(
            "/_cluster/allocation/explain",
            &json!({"index": index, "shard": 0, "primary": true}),
        )
        .expect(200)
        .json();
    assert_eq!(explained["current_state"], "unassigned", "{explained}");
    assert_eq!(explained["unassigned_info"]["reason"], "ALLOCATION_FAILED");
    let details = explained["unassigned_info"]["details"].as_str().unwrap();
    assert!(details.contains(kind), "{explained}");
    assert_eq!(
        explained["can_allocate"], "no",
        "damaged files are not retried"
    );
    // searches and writes answer OpenSearch errors; the node stays up
    let search = node.post(&format!("/{index}/_search"), &json!({}));
    assert_eq!(search.status, 503, "{}", search.body);
    search.expect_error(503, "search_phase_execution_exception");
    node.put(&format!("/{index}/_doc/new"), &json!({"n": 1}))
        .expect_error(503, "unavailable_shards_exception");
    node.get("/").expect(200);
}

#[test]
fn a_full_disk_loses_no_acknowledged_write() {
    let mut tmpfs = None;
    let mut node = Node::start_with_data_dir(|data| tmpfs = Tmpfs::mount(data, "24m"));
    let Some(tmpfs) = tmpfs else {
        eprintln!("SKIPPED a_full_disk_loses_no_acknowledged_write: cannot mount a tmpfs here");
        return;
    };
    node.put(
        "/full",
        &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0,
                             "refresh_interval": "200ms"},
                "mappings": {"properties": {"body": {"type": "text"}, "n": {"type": "long"}}}}),
    )
    .expect(200);

    // bulk-load documents that compress poorly until writes fail for a while
    let mut acked = BTreeSet::new();
    let mut failing_rounds = 0;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..1500 {
        let mut ndjson = String::new();
        for i in 0..100 {
            let id = format!("d{round}-{i}");
            let words: Vec<String> = (0..64)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    format!("{seed:016x}")
                })
                .collect();
            ndjson.push_str(&format!(
                "{{\"index\":{{\"_index\":\"full\",\"_id\":\"{id}\"}}}}\n"
            ));
            ndjson.push_str(&json!({"n": round, "body": words.join(" ")}).to_string());
            ndjson.push('\n');
        }
        let response = node.bulk("/_bulk", &ndjson);
        let mut failed = !response.is_success();
        if response.is_success() {
            for item in response.json()["items"].as_array().unwrap() {
                let status = item["index"]["status"].as_u64().unwrap();
                if status == 201 || status == 200 {
                    acked.insert(item["index"]["_id"].as_str().unwrap().to_string());
                } else {
                    failed = true;
                    let error = &item["index"]["error"];
                    assert!(
                        error["type"].is_string() && error["reason"].is_string(),
                        "{item}"
                    );
                }
            }
        } else {
            common::assert_error_body(&response.json(), response.status);
        }
        failing_rounds = if failed { failing_rounds + 1 } else { 0 };
        if failing_rounds >= 10 {
            break;
        }
    }
    assert!(
        failing_rounds >= 10,
        "the disk never filled: {} documents acknowledged",
        acked.len()
    );
    assert!(!acked.is_empty());

    // space returns: the shard recovers by itself and holds every acknowledged document
    tmpfs.resize("512m");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = node.get("/_cluster/health/full").json();
        if health["status"] == "green" && node.post_empty("/full/_refresh").is_success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the shard did not recover: {health}\n{}",
            node.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // the cluster state saw the shard come back, under the allocation id it always had
    let routed = routed_primary(&node, "full", "STARTED");
    let state = node.get("/_cluster/state/metadata/full").expect(200).json();
    let in_sync = &state["metadata"]["indices"]["full"]["in_sync_allocations"]["0"];
    assert_eq!(in_sync, &json!([routed["allocation_id"]["id"]]), "{state}");
    let assert_all_acked = |node: &Node| {
        let ids: Vec<&String> = acked.iter().collect();
        for chunk in ids.chunks(2000) {
            let docs = node
                .post("/full/_mget", &json!({"ids": chunk}))
                .expect(200)
                .json();
            for doc in docs["docs"].as_array().unwrap() {
                assert_eq!(doc["found"], true, "acknowledged {} is lost", doc["_id"]);
            }
        }
        assert!(node.count("full") >= acked.len() as u64);
    };
    assert_all_acked(&node);

    // and writes work and stay durable again
    node.put("/full/_doc/after", &json!({"n": -1, "body": "after"}))
        .expect(201);
    node.kill_9();
    node.start_again();
    node.get("/full/_doc/after").expect(200);
    node.refresh("full");
    assert_all_acked(&node);
}

#[test]
fn a_corrupt_translog_fails_only_its_shard() {
    let mut node = Node::start();
    // nothing to explain while every shard is assigned
    create_index(&node, "good", json!({}));
    node.get("/_cluster/allocation/explain")
        .expect_error(400, "illegal_argument_exception");
    let started = node
        .post(
            "/_cluster/allocation/explain",
            &json!({"index": "good", "shard": 0, "primary": true}),
        )
        .expect(200)
        .json();
    assert_eq!(started["current_state"], "started", "{started}");
    node.delete("/good").expect(200);
    for index in ["good", "flipped", "truncated", "deleted"] {
        create_index(&node, index, json!({}));
        for i in 0..20 {
            node.put(
                &format!("/{index}/_doc/{i}"),
                &json!({"n": i, "pad": "x".repeat(100)}),
            )
            .expect(201);
        }
    }
    let logs: Vec<PathBuf> = ["flipped", "truncated", "deleted"]
        .iter()
        .map(|index| shard_dir(&node, &index_uuid(&node, index)).join("translog"))
        .collect();
    node.kill_9();
    let generation = |dir: &Path| files_ending(dir, ".tlog").pop().unwrap();
    // a flipped byte in the middle, a truncation in the middle, a deleted generation
    let flipped = generation(&logs[0]);
    let len = std::fs::metadata(&flipped).unwrap().len() as usize;
    flip_byte(&flipped, len / 2);
    let truncated = generation(&logs[1]);
    let len = std::fs::metadata(&truncated).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&truncated)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    std::fs::remove_file(generation(&logs[2])).unwrap();

    node.start_again();
    node.refresh("good");
    assert_eq!(node.count("good"), 20);
    for index in ["flipped", "truncated", "deleted"] {
        assert_failed_alone(&node, index, "translog_corrupted_exception");
    }
    let health = node.get("/_cluster/health").expect(200).json();
    assert_eq!(health["status"], "red");
    assert_eq!(health["active_primary_shards"], 1, "{health}");
    // the damage is never repaired silently: still failed after a restart
    node.restart();
    assert_failed_alone(&node, "flipped", "translog_corrupted_exception");
    node.refresh("good");
    assert_eq!(node.count("good"), 20);
}

#[test]
fn a_corrupt_segment_fails_only_its_shard() {
    let mut node = Node::start();
    for index in ["good", "flipped", "truncated"] {
        create_index(&node, index, json!({}));
        let mut ndjson = String::new();
        for i in 0..200 {
            ndjson.push_str(&format!(
                "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{i}\"}}}}\n"
            ));
            ndjson.push_str(&format!("{{\"n\":{i},\"body\":\"document number {i}\"}}\n"));
        }
        node.bulk("/_bulk", &ndjson).expect(200);
        node.post_empty(&format!("/{index}/_flush")).expect(200);
    }
    let dirs: Vec<PathBuf> = ["flipped", "truncated"]
        .iter()
        .map(|index| shard_dir(&node, &index_uuid(&node, index)).join("index"))
        .collect();
    node.stop();
    let store = files_ending(&dirs[0], ".store")
        .pop()
        .expect("a segment store file");
    let len = std::fs::metadata(&store).unwrap().len() as usize;
    flip_byte(&store, len / 3);
    let postings = files_ending(&dirs[1], ".idx")
        .pop()
        .expect("a segment postings file");
    let len = std::fs::metadata(&postings).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&postings)
        .unwrap()
        .set_len(len - 7)
        .unwrap();

    node.start_again();
    node.refresh("good");
    assert_eq!(node.count("good"), 200);
    for index in ["flipped", "truncated"] {
        assert_failed_alone(&node, index, "corrupt_index_exception");
    }
}

#[test]
fn mapping_changes_after_unrefreshed_writes_never_stop_a_replay() {
    let mut node = Node::start();
    let strict_off = json!({"mappings": {"dynamic": false, "properties": {"n": {"type": "long"}}}});
    create_index(&node, "flip-dynamic", strict_off.clone());
    create_index(&node, "remap", strict_off);
    create_index(
        &node,
        "deep",
        json!({"settings": {"index.mapping.depth.limit": 100}}),
    );
    for index in ["flip-dynamic", "remap"] {
        node.put(
            &format!("/{index}/_doc/1"),
            &json!({"n": 1, "extra": "abc", "obj": {"inner": "x"}}),
        )
        .expect(201);
    }
    // dynamic switched on: the logged document now has fields the mapping would add
    node.put("/flip-dynamic/_mapping", &json!({"dynamic": true}))
        .expect(200);
    // the unmapped field mapped with a type its logged value does not fit
    node.put(
        "/remap/_mapping",
        &json!({"properties": {"extra": {"type": "long"}, "obj": {"type": "long"}}}),
    )
    .expect(200);
    // a deeply nested document, its mapping as deep
    let mut deep = json!({"leaf": "bottom"});
    for level in 0..70 {
        deep = json!({ format!("l{level}"): deep });
    }
    node.put("/deep/_doc/1", &deep).expect(201);

    node.kill_9();
    node.start_again();
    for index in ["flip-dynamic", "remap", "deep"] {
        let doc = node.get(&format!("/{index}/_doc/1")).expect(200).json();
        assert_eq!(doc["found"], true, "{doc}");
        node.refresh(index);
        assert_eq!(node.count(index), 1, "{index}");
    }
    assert_eq!(node.get("/_cluster/health").json()["status"], "green");
    // a clean restart reads the deep mapping back too
    node.restart();
    node.get("/deep/_doc/1").expect(200);
    assert_eq!(node.get("/_cluster/health").json()["status"], "green");
}

#[test]
fn deleting_an_index_under_bulks_and_force_merges_is_clean() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut node = Node::start();
    let stop = Arc::new(AtomicBool::new(false));
    let check = |status: u16, body: &str| {
        assert!(
            status < 500,
            "a 5xx during the delete race: {status} {body}"
        );
        if status >= 400 {
            let body: Value = serde_json::from_str(body).unwrap();
            common::assert_error_body(&body, status);
        }
    };
    let workers: Vec<_> = (0..3)
        .map(|worker| {
            let client = node.client();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let response = if worker == 2 {
                        client.request("POST", "/race/_forcemerge?max_num_segments=1", None)
                    } else {
                        let mut ndjson = String::new();
                        for i in 0..200 {
                            ndjson.push_str(&format!(
                                "{{\"index\":{{\"_index\":\"race\",\"_id\":\"{worker}-{round}-{i}\"}}}}\n{{\"n\":{i}}}\n"
                            ));
                        }
                        client.bulk("/_bulk?refresh=true", &ndjson)
                    };
                    check(response.status, &response.body);
                    if response.status == 200 {
                        let body = response.json();
                        for item in body["items"].as_array().into_iter().flatten() {
                            let status = item["index"]["status"].as_u64().unwrap_or(0) as u16;
                            assert!(status < 500, "a 5xx bulk item during the delete race: {item}");
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let response = node.delete("/race");
        check(response.status, &response.body);
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let response = node.delete("/race");
    check(response.status, &response.body);
    // no orphaned directory comes back as an index
    node.restart();
    let indices = node.get("/_cat/indices?format=json").expect(200).json();
    assert_eq!(indices, json!([]), "{indices}");
    let left: Vec<_> = std::fs::read_dir(node.data_dir().join("indices"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "index directories left behind: {left:?}");
}

#[test]
fn the_flood_stage_blocks_writes_until_the_disk_has_room_again() {
    let node = Node::start();
    create_index(&node, "flood", json!({}));
    node.put("/flood/_doc/1", &json!({"n": 1})).expect(201);
    let watermarks = |value: Value| {
        json!({"persistent": {
            "cluster.routing.allocation.disk.watermark.low": value,
            "cluster.routing.allocation.disk.watermark.high": value,
            "cluster.routing.allocation.disk.watermark.flood_stage": value
        }})
    };
    // more space must stay free than any disk has: the disk is past the flood stage
    node.put("/_cluster/settings", &watermarks(json!("1000000tb")))
        .expect(200);
    let wait_for = |wanted: fn(u16) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let response = node.put("/flood/_doc/2", &json!({"n": 2}));
            if wanted(response.status) {
                return response;
            }
            assert!(
                Instant::now() < deadline,
                "still {}: {}",
                response.status,
                response.body
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let blocked = wait_for(|status| status == 429);
    let error = blocked.expect_error(429, "cluster_block_exception");
    assert!(
        error["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("flood-stage watermark"),
        "{error}"
    );
    let settings = node.get("/flood/_settings").expect(200).json();
    assert_eq!(
        settings["flood"]["settings"]["index"]["blocks"]["read_only_allow_delete"],
        "true"
    );
    // reads go on (the writes before the block took effect are there too)
    node.get("/flood/_doc/1").expect(200);
    node.refresh("flood");
    assert!(node.count("flood") >= 1);
    // one free byte is room enough: the block lifts whatever the machine's disk holds (the
    // default watermarks would keep it on a disk more than 90% full)
    node.put("/_cluster/settings", &watermarks(json!("1b")))
        .expect(200);
    wait_for(|status| status == 200 || status == 201);
}
