//! Replicas on a real cluster on loopback (an etcd of its own and `tessera serve` processes):
//! replicas are allocated on other nodes than their primary once it started, recover the
//! primary's segments, take each new commit (segment replication), and serve searches with
//! the same answers as the primary, byte for byte; their count follows `number_of_replicas`.

mod common;

use std::collections::BTreeSet;

use common::cluster::{eventually, Cluster};
use common::Node;
use serde_json::{json, Value};

fn docs_ndjson(index: &str, from: usize, count: usize) -> String {
    let mut lines = String::new();
    for i in from..from + count {
        lines.push_str(&json!({"index": {"_index": index, "_id": i.to_string()}}).to_string());
        lines.push('\n');
        let doc = json!({
            "n": i,
            "tag": format!("t{}", i % 7),
            "msg": format!("message number {} of the {} kind", i, if i % 3 == 0 { "third" } else { "other" }),
        });
        lines.push_str(&doc.to_string());
        lines.push('\n');
    }
    lines
}

/// Creates `index` with `shards` shards and 1 replica, answered once every copy is active
/// (`wait_for_active_shards=all`).
fn create_with_active_copies(node: &Node, index: &str, shards: u32) {
    let created = node
        .put(
            &format!("/{index}?wait_for_active_shards=all"),
            &json!({"settings": {"number_of_shards": shards, "number_of_replicas": 1}}),
        )
        .ok()
        .json();
    assert_eq!(created["shards_acknowledged"], true, "{created}");
}

/// Every copy of `index` in `_cat/shards`: (shard, p/r, state, node, docs).
fn copies(node: &Node, index: &str) -> Vec<(u64, String, String, String, Option<u64>)> {
    let rows = node
        .get(&format!("/_cat/shards/{index}?format=json"))
        .expect(200)
        .json();
    let mut copies: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["shard"].as_str().unwrap().parse().unwrap(),
                row["prirep"].as_str().unwrap().to_string(),
                row["state"].as_str().unwrap().to_string(),
                row["node"].as_str().unwrap_or("").to_string(),
                row["docs"].as_str().and_then(|d| d.parse().ok()),
            )
        })
        .collect();
    copies.sort();
    copies
}

/// Waits for `index` to be green and settled (no copy initializing or relocating).
fn green(node: &Node, index: &str) -> Value {
    let health = node
        .get(&format!(
            "/_cluster/health/{index}?wait_for_status=green&wait_for_no_relocating_shards=true&wait_for_no_initializing_shards=true&timeout=30s"
        ))
        .json();
    assert_eq!(health["status"], "green", "{health}");
    health
}

/// The parts of a search answer that must not depend on which copy answered.
fn comparable(mut response: Value) -> Value {
    let object = response.as_object_mut().unwrap();
    object.remove("took");
    response
}

#[test]
fn replicas_recover_follow_their_primary_and_answer_as_it_does() {
    let cluster = Cluster::start(3);
    cluster
        .node(0)
        .put(
            "/items",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 1},
                "mappings": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"},
                "msg": {"type": "text"}}}}),
        )
        .ok();
    // documents indexed before the replicas exist come with the recovery
    let bulk = cluster
        .node(1)
        .bulk("/_bulk", &docs_ndjson("items", 0, 300))
        .ok()
        .json();
    assert_eq!(bulk["errors"], false);
    let health = green(cluster.node(2), "items");
    assert_eq!(health["active_shards"], 6, "{health}");
    assert_eq!(health["unassigned_shards"], 0, "{health}");

    // each replica on another node than its primary
    let listed = copies(cluster.node(0), "items");
    assert_eq!(listed.len(), 6, "{listed:?}");
    for shard in 0..3 {
        let holders: BTreeSet<&str> = listed
            .iter()
            .filter(|c| c.0 == shard)
            .map(|c| c.3.as_str())
            .collect();
        assert_eq!(holders.len(), 2, "shard {shard}: {listed:?}");
    }

    // writes on every node at once (each primary waits for replicas whose writes run on the
    // same pools of the other nodes): every copy takes every write
    create_with_active_copies(cluster.node(0), "busy", 3);
    assert_eq!(
        cluster.node(1).get("/_cluster/health/busy").json()["status"],
        "green"
    );
    std::thread::scope(|scope| {
        for n in 0..3 {
            let node = cluster.node(n);
            scope.spawn(move || {
                for round in 0..4 {
                    let from = n * 1000 + round * 50;
                    let bulk = node
                        .bulk(
                            "/_bulk?wait_for_active_shards=all",
                            &docs_ndjson("busy", from, 50),
                        )
                        .ok()
                        .json();
                    for item in bulk["items"].as_array().unwrap() {
                        let shards = &item["index"]["_shards"];
                        assert_eq!(
                            (shards["successful"].as_u64(), shards["failed"].as_u64()),
                            (Some(2), Some(0)),
                            "{item}"
                        );
                    }
                }
            });
        }
    });
    // a refresh asked for shows on every copy before it answers
    cluster
        .node(2)
        .bulk("/_bulk?refresh=true", &docs_ndjson("items", 300, 200))
        .ok();
    cluster.node(0).delete("/items/_doc/7?refresh=true").ok();
    cluster
        .node(1)
        .post(
            "/items/_doc/8?refresh=true",
            &json!({"n": 8, "tag": "changed", "msg": "changed"}),
        )
        .ok();
    let listed = copies(cluster.node(1), "items");
    for shard in 0..3u64 {
        let docs: BTreeSet<Option<u64>> = listed
            .iter()
            .filter(|c| c.0 == shard)
            .map(|c| c.4)
            .collect();
        assert_eq!(docs.len(), 1, "copies of shard {shard} differ: {listed:?}");
    }

    // searches turn over the copies; every copy gives the same answer, scores and ties alike
    let searches = [
        json!({"query": {"match": {"msg": "third kind"}}, "size": 10}),
        json!({"query": {"term": {"tag": "changed"}}}),
        json!({"size": 0, "aggs": {"tags": {"terms": {"field": "tag", "size": 10}}}}),
        json!({"query": {"match_all": {}}, "sort": [{"n": "desc"}], "size": 3}),
    ];
    for search in &searches {
        let first = comparable(cluster.node(0).search("items", search));
        assert_eq!(first["_shards"]["failed"], 0, "{first}");
        for round in 0..6 {
            let again = comparable(cluster.node(round % 3).search("items", search));
            assert_eq!(again, first, "round {round}: {search}");
        }
    }
    assert_eq!(cluster.node(0).count("items"), 499);

    // a merge on the primaries reaches the replicas too
    cluster
        .node(0)
        .post_empty("/items/_forcemerge?max_num_segments=1")
        .ok();
    let segments = cluster
        .node(0)
        .get("/_cat/segments/items?format=json")
        .expect(200)
        .json();
    let rows = segments.as_array().unwrap();
    assert!(rows.iter().any(|r| r["prirep"] == "r"), "{segments}");
    for shard in 0..3 {
        let per_copy: BTreeSet<(String, String)> = rows
            .iter()
            .filter(|r| r["shard"].as_str() == Some(shard.to_string().as_str()))
            .map(|r| {
                (
                    r["prirep"].as_str().unwrap().to_string(),
                    r["segment"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            per_copy.len(),
            2,
            "one segment on each copy of shard {shard}: {segments}"
        );
    }
    for round in 0..3 {
        assert_eq!(cluster.node(round).count("items"), 499);
    }
}

#[test]
fn the_replica_count_follows_the_setting() {
    let cluster = Cluster::start(3);
    cluster
        .node(0)
        .put(
            "/logs",
            &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}}),
        )
        .ok();
    cluster
        .node(0)
        .bulk("/_bulk?refresh=true", &docs_ndjson("logs", 0, 50))
        .ok();
    green(cluster.node(0), "logs");

    // two replicas: one on each other node
    cluster
        .node(1)
        .put(
            "/logs/_settings",
            &json!({"index": {"number_of_replicas": 2}}),
        )
        .ok();
    green(cluster.node(2), "logs");
    let listed = copies(cluster.node(0), "logs");
    let nodes: BTreeSet<&str> = listed.iter().map(|c| c.3.as_str()).collect();
    assert_eq!(nodes.len(), 3, "{listed:?}");
    assert!(listed.iter().all(|c| c.4 == Some(50)), "{listed:?}");

    // three replicas on three nodes: one has nowhere to go
    cluster
        .node(2)
        .put(
            "/logs/_settings",
            &json!({"index": {"number_of_replicas": 3}}),
        )
        .ok();
    eventually("yellow with one unassigned replica", || {
        let health = cluster.node(0).get("/_cluster/health/logs").json();
        health["status"] == "yellow" && health["unassigned_shards"] == 1
    });

    // none again: the replicas go
    cluster
        .node(0)
        .put(
            "/logs/_settings",
            &json!({"index": {"number_of_replicas": 0}}),
        )
        .ok();
    green(cluster.node(1), "logs");
    eventually("the replicas gone", || {
        copies(cluster.node(1), "logs").len() == 1
    });
    for i in 0..3 {
        assert_eq!(cluster.node(i).count("logs"), 50);
    }
}

/// Bulk-indexes `count` documents with ids `prefix-<n>` through `node`; returns the ids it
/// acknowledged (created) and what the others got (the answer or an item's error).
fn write_batch(node: &Node, prefix: &str, from: usize, count: usize) -> (Vec<String>, Vec<Value>) {
    let mut lines = String::new();
    for i in from..from + count {
        let id = format!("{prefix}-{i}");
        lines.push_str(&json!({"index": {"_index": "acked", "_id": id}}).to_string());
        lines.push('\n');
        lines.push_str(&json!({"n": i, "tag": prefix}).to_string());
        lines.push('\n');
    }
    let answer = node.client().bulk("/_bulk", &lines);
    if !answer.is_success() {
        return (
            Vec::new(),
            vec![json!({"status": answer.status, "body": answer.body})],
        );
    }
    let body = answer.json();
    let (acked, failed): (Vec<&Value>, Vec<&Value>) = body["items"]
        .as_array()
        .map(|items| items.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .partition(|item| item["index"]["status"] == 201 || item["index"]["status"] == 200);
    let acked = acked
        .iter()
        .filter_map(|item| item["index"]["_id"].as_str().map(String::from))
        .collect();
    (acked, failed.into_iter().cloned().collect())
}

/// A small deterministic generator for the trials' choices (`TESSERA_FAILOVER_SEED`).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The (id, version) of every document of `shard`, read from one kind of copy.
fn shard_contents(node: &Node, shard: u32, copy: &str) -> Vec<(String, u64)> {
    let answer = node
        .post(
            &format!("/acked/_search?preference=_shards:{shard}%7C{copy}"),
            &json!({"size": 10000, "version": true, "sort": [{"tag": "asc"}, {"n": "asc"}]}),
        )
        .expect(200)
        .json();
    assert_eq!(answer["_shards"]["failed"], 0, "{answer}");
    answer["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            (
                hit["_id"].as_str().unwrap().to_string(),
                hit["_version"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// One trial: writers and searchers on a 3-node cluster with 1 replica, a node killed (-9) at
/// a random moment, then restarted. Every acknowledged write must survive, searches after the
/// failover must not fail, and the copies must hold the same documents at the same versions.
/// With `kill_manager`, the victim is the elected cluster manager: a primary that fails a
/// replica on it must have the next manager mark it stale.
fn failover_trial(rng: &mut Rng, kill_manager: bool) {
    let mut cluster = Cluster::start(3);
    let (coordinator, victim) = if kill_manager {
        let manager = cluster.manager(0);
        ((manager + 1 + rng.below(2) as usize) % 3, manager)
    } else {
        let coordinator = rng.below(3) as usize;
        (coordinator, (coordinator + 1 + rng.below(2) as usize) % 3)
    };
    cluster
        .node(coordinator)
        .put(
            "/acked",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 1},
                "mappings": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"}}}}),
        )
        .ok();
    green(cluster.node(coordinator), "acked");
    let kill_after = 1 + rng.below(12) as usize;

    let victim_pid = cluster.node(victim).pid().expect("the victim runs");
    let acked = std::sync::Mutex::new(Vec::<String>::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let search_failures = std::sync::Mutex::new(Vec::<Value>::new());
    std::thread::scope(|scope| {
        // a failed assertion below must stop the searcher too, or the scope waits for it forever
        let _stop_on_unwind = StopOnDrop(&stop);
        let node = cluster.node(coordinator);
        scope.spawn(|| {
            use std::sync::atomic::Ordering::SeqCst;
            // no search fails, before, during or after the failover: a dead copy's shards are
            // searched on their other copy, and a promoted primary is waited for, both by a
            // node whose state shows the promotion and by the promoted copy's node while it
            // reopens the copy for one that does not see the promotion yet
            while !stop.load(SeqCst) {
                let answer = node.search("acked", &json!({"size": 0}));
                if answer["_shards"]["failed"] != 0 {
                    search_failures.lock().unwrap().push(answer);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let mut batch = 0;
        let mut complete_since_kill = 0;
        let mut incomplete = Vec::new();
        let started = std::time::Instant::now();
        loop {
            if batch == kill_after {
                // the nodes are shared with the searcher meanwhile: SIGKILL by pid (the
                // harness reaps it afterwards)
                let killed = std::process::Command::new("kill")
                    .args(["-9", &victim_pid.to_string()])
                    .status()
                    .expect("run kill");
                assert!(killed.success());
            }
            let (got, failed) = write_batch(node, "w", batch * 20, 20);
            let complete = got.len() == 20;
            // a write to a primary that is moving waits for the promoted one and is sent
            // again: no batch fails, not even during the failover
            if !complete {
                incomplete.push((batch, failed));
            }
            acked.lock().unwrap().extend(got);
            batch += 1;
            if batch > kill_after {
                complete_since_kill = if complete { complete_since_kill + 1 } else { 0 };
                if complete_since_kill >= 8 {
                    break;
                }
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "writes did not recover after the kill"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(
            incomplete.is_empty(),
            "write batches that failed: {incomplete:?}"
        );
    });
    cluster.nodes[victim].kill_9();
    let failed = search_failures.into_inner().unwrap();
    assert!(failed.is_empty(), "searches failed: {failed:?}");
    let acked = acked.into_inner().unwrap();

    // every acknowledged write is there
    let node = cluster.node(coordinator);
    node.post_empty("/acked/_refresh").ok();
    let docs: Vec<Value> = acked.iter().map(|id| json!({"_id": id})).collect();
    let found = node
        .post("/acked/_mget", &json!({"docs": docs}))
        .expect(200)
        .json();
    let missing: Vec<&Value> = found["docs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|doc| doc["found"] != true)
        .collect();
    assert!(missing.is_empty(), "lost acknowledged writes: {missing:?}");

    // the node comes back: its copies recover from the primaries, and the copies agree
    cluster.nodes[victim].start_again();
    green(cluster.node(coordinator), "acked");
    cluster.node(coordinator).post_empty("/acked/_refresh").ok();
    for shard in 0..3 {
        let primary = shard_contents(cluster.node(coordinator), shard, "_primary");
        let replica = shard_contents(cluster.node(coordinator), shard, "_replica");
        assert_eq!(primary, replica, "the copies of shard {shard} differ");
    }
}

#[test]
fn a_killed_node_loses_no_acknowledged_write_and_its_copies_catch_up() {
    let trials = env_number("TESSERA_FAILOVER_TRIALS", 2);
    let seed = env_number(
        "TESSERA_FAILOVER_SEED",
        0x5eed_f00d ^ std::process::id() as u64,
    );
    eprintln!("failover trials: {trials}, TESSERA_FAILOVER_SEED={seed}");
    let mut rng = Rng(seed | 1);
    for trial in 0..trials {
        // the first trial kills the manager, the others whichever node the seed picks
        eprintln!("failover trial {trial}");
        failover_trial(&mut rng, trial == 0);
    }
}

/// Sets its flag when dropped, as a scope unwinds.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Writes `count` documents one by one through `node`; the ids it acknowledged.
fn write_each(node: &Node, prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .filter_map(|i| {
            let id = format!("{prefix}-{i}");
            let answer = node
                .client()
                .put(&format!("/cut/_doc/{id}?timeout=2s"), &json!({"n": i}));
            answer.is_success().then_some(id)
        })
        .collect()
}

#[test]
fn a_primary_frozen_past_its_lease_cannot_acknowledge_a_write_the_new_primary_lacks() {
    let cluster = Cluster::start(3);
    create_with_active_copies(cluster.node(0), "cut", 1);
    let listed = copies(cluster.node(0), "cut");
    let name_of = |prirep: &str| {
        listed
            .iter()
            .find(|c| c.1 == prirep)
            .map(|c| c.3.clone())
            .unwrap()
    };
    let position = |name: String| -> usize { name.trim_start_matches("node-").parse().unwrap() };
    let (old_primary, replica) = (position(name_of("p")), position(name_of("r")));
    let other = 3 - old_primary - replica;
    let mut acked = write_each(cluster.node(other), "before", 20);
    assert_eq!(acked.len(), 20);

    // the primary's node freezes (a long pause, a partition from etcd and its peers): its
    // lease lapses and the replica takes over
    let frozen = cluster.node(old_primary).pid().unwrap().to_string();
    let signal = |sig: &str| {
        let status = std::process::Command::new("kill")
            .args([sig, &frozen])
            .status()
            .unwrap();
        assert!(status.success());
    };
    signal("-STOP");
    let mut round = 0;
    eventually("a write acknowledged by the new primary", || {
        round += 1;
        let got = write_each(cluster.node(other), &format!("during{round}"), 1);
        let done = !got.is_empty();
        acked.extend(got);
        done
    });
    // it wakes up believing it is the primary: whatever it acknowledges must be on the new one
    signal("-CONT");
    let woken = cluster.node(old_primary);
    for round in 0..30 {
        acked.extend(write_each(woken, &format!("woken{round}"), 1));
        acked.extend(write_each(
            cluster.node(other),
            &format!("meanwhile{round}"),
            1,
        ));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let docs: Vec<Value> = acked.iter().map(|id| json!({"_id": id})).collect();
    let found = cluster
        .node(other)
        .post("/cut/_mget", &json!({"docs": docs}))
        .expect(200)
        .json();
    let missing: Vec<&Value> = found["docs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|doc| doc["found"] != true)
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged writes missing: {missing:?}"
    );
    let state = cluster.state(other);
    let term = &state["metadata"]["indices"]["cut"]["primary_terms"]["0"];
    assert_eq!(term, 2, "one failover: {state}");
    // the old primary's node comes back as a replica of the new primary, and the copies agree
    green(cluster.node(other), "cut");
    cluster.node(other).post_empty("/cut/_refresh").ok();
    let contents = |copy: &str| {
        let answer = cluster
            .node(other)
            .post(
                &format!("/cut/_search?preference={copy}"),
                &json!({"size": 10000, "version": true, "query": {"match_all": {}}, "sort": [{"n": "asc"}]}),
            )
            .expect(200)
            .json();
        let mut hits: Vec<(String, u64)> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["_id"].as_str().unwrap().to_string(),
                    h["_version"].as_u64().unwrap(),
                )
            })
            .collect();
        hits.sort();
        hits
    };
    assert_eq!(contents("_primary"), contents("_replica"));
}

#[test]
fn recoveries_and_replica_lag_are_reported_by_every_node() {
    let cluster = Cluster::start(3);
    cluster
        .node(0)
        .put(
            "/recovered",
            &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
        )
        .ok();
    let bulk = cluster
        .node(1)
        .bulk("/_bulk?refresh=true", &docs_ndjson("recovered", 0, 200))
        .ok()
        .json();
    assert_eq!(bulk["errors"], false);
    // the replicas come after the documents: their recoveries copy them
    cluster
        .node(0)
        .put(
            "/recovered/_settings",
            &json!({"index": {"number_of_replicas": 1}}),
        )
        .ok();
    green(cluster.node(2), "recovered");
    let listed = copies(cluster.node(0), "recovered");
    let holder = |shard: u64, prirep: &str| -> String {
        listed
            .iter()
            .find(|c| c.0 == shard && c.1 == prirep)
            .map(|c| c.3.clone())
            .unwrap()
    };

    // every node answers for the copies it holds: a PEER recovery per replica, from the
    // primary's node, and the primaries it opened
    let recovery = cluster
        .node(1)
        .get("/recovered/_recovery")
        .expect(200)
        .json();
    let shards = recovery["recovered"]["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 4, "{recovery}");
    for shard in 0..2u64 {
        let peer = shards
            .iter()
            .find(|s| s["id"] == shard && s["primary"] == false)
            .unwrap_or_else(|| panic!("no replica of {shard}: {recovery}"));
        assert_eq!(peer["type"], "PEER", "{peer}");
        assert_eq!(peer["stage"], "DONE", "{peer}");
        assert_eq!(peer["source"]["name"], holder(shard, "p"), "{peer}");
        assert_eq!(peer["target"]["name"], holder(shard, "r"), "{peer}");
        assert!(peer["source"]["transport_address"].is_string(), "{peer}");
        let size = &peer["index"]["size"];
        assert!(size["total_in_bytes"].as_u64().unwrap() > 0, "{peer}");
        assert!(size["recovered_in_bytes"].as_u64().unwrap() > 0, "{peer}");
        assert_eq!(size["percent"], "100.0%", "{peer}");
        assert!(
            peer["index"]["files"]["recovered"].as_u64().unwrap() > 0,
            "{peer}"
        );
        assert_eq!(peer["translog"]["percent"], "100.0%", "{peer}");
        let primary = shards
            .iter()
            .find(|s| s["id"] == shard && s["primary"] == true)
            .unwrap_or_else(|| panic!("no primary of {shard}: {recovery}"));
        assert_eq!(primary["type"], "EMPTY_STORE", "{primary}");
        assert_eq!(primary["stage"], "DONE", "{primary}");
        assert_eq!(primary["source"], json!({}), "{primary}");
        assert_eq!(primary["target"]["name"], holder(shard, "p"), "{primary}");
    }
    let all = cluster.node(2).get("/_recovery").expect(200).json();
    assert_eq!(all["recovered"], recovery["recovered"]);
    let detailed = cluster
        .node(0)
        .get("/recovered/_recovery?detailed=true")
        .expect(200)
        .json();
    for shard in detailed["recovered"]["shards"].as_array().unwrap() {
        let files = &shard["index"]["files"];
        let details = files["details"].as_array().unwrap();
        assert_eq!(
            details.len() as u64,
            files["total"].as_u64().unwrap(),
            "{shard}"
        );
        let copied: u64 = details
            .iter()
            .map(|f| f["recovered_in_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(
            copied, shard["index"]["size"]["recovered_in_bytes"],
            "{shard}"
        );
    }
    let active = cluster
        .node(0)
        .get("/_recovery?active_only=true&detailed=true")
        .expect(200)
        .json();
    assert_eq!(active, json!({}));
    cluster
        .node(0)
        .get("/_recovery?nope=1")
        .expect_error(400, "illegal_argument_exception");

    // the same rows in _cat/recovery
    let rows = cluster
        .node(0)
        .get("/_cat/recovery/recovered?format=json")
        .expect(200)
        .json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for shard in shards {
        let id = shard["id"].to_string();
        let row = rows
            .iter()
            .find(|r| r["shard"] == id.as_str() && r["target_node"] == shard["target"]["name"])
            .unwrap_or_else(|| panic!("no row for {shard}: {rows:?}"));
        assert_eq!(
            row["type"],
            shard["type"].as_str().unwrap().to_lowercase(),
            "{row}"
        );
        assert_eq!(row["stage"], "done", "{row}");
        assert_eq!(
            row["bytes_total"],
            shard["index"]["size"]["total_in_bytes"].to_string(),
            "{row}"
        );
        let source = shard["source"]["name"].as_str().unwrap_or("n/a");
        assert_eq!(row["source_node"], source, "{row}");
        assert_eq!(row["repository"], "n/a", "{row}");
    }

    // after a refresh every replica holds its primary's newest checkpoint
    cluster
        .node(2)
        .bulk("/_bulk", &docs_ndjson("recovered", 200, 50))
        .ok();
    cluster.node(0).post_empty("/recovered/_refresh").ok();
    let lag = cluster
        .node(1)
        .get("/_cat/segment_replication?format=json")
        .expect(200)
        .json();
    let lag = lag.as_array().unwrap();
    assert_eq!(lag.len(), 2, "{lag:?}");
    for shard in 0..2u64 {
        let row = lag
            .iter()
            .find(|r| r["shardId"] == format!("[recovered][{shard}]"))
            .unwrap_or_else(|| panic!("no replica of {shard}: {lag:?}"));
        assert_eq!(row["target_node"], holder(shard, "r"), "{row}");
        assert_eq!(row["checkpoints_behind"], "0", "{row}");
        assert_eq!(row["bytes_behind"], "0b", "{row}");
        assert_eq!(row["current_lag"], "0s", "{row}");
        assert_eq!(row["rejected_requests"], "0", "{row}");
    }
    let text = cluster
        .node(2)
        .get("/_cat/segment_replication/recovered?v&h=shardId,checkpoints_behind")
        .expect(200)
        .body;
    assert!(text.starts_with("shardId"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn a_node_that_joins_takes_replicas_from_the_others() {
    let mut cluster = Cluster::start(2);
    create_with_active_copies(cluster.node(0), "spread", 3);
    cluster
        .node(1)
        .bulk("/_bulk?refresh=true", &docs_ndjson("spread", 0, 300))
        .ok();
    cluster.add_node(2);
    cluster.wait_for_nodes(3);
    // two moves bring 3 + 3 + 0 copies to 2 + 2 + 2, each new copy recovered before the old goes
    eventually("the copies spread over the three nodes", || {
        let listed = copies(cluster.node(0), "spread");
        let per_node = |name: &str| listed.iter().filter(|c| c.3 == name).count();
        listed.len() == 6
            && listed.iter().all(|c| c.2 == "STARTED")
            && (0..3).all(|i| per_node(&format!("node-{i}")) == 2)
    });
    green(cluster.node(2), "spread");
    let listed = copies(cluster.node(2), "spread");
    for shard in 0..3u64 {
        let docs: BTreeSet<Option<u64>> = listed
            .iter()
            .filter(|c| c.0 == shard)
            .map(|c| c.4)
            .collect();
        assert_eq!(docs.len(), 1, "copies of shard {shard} differ: {listed:?}");
    }
    for i in 0..3 {
        assert_eq!(cluster.node(i).count("spread"), 300);
    }
}
