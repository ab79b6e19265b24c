//! Rewriting data as a client lives it: a `_delete_by_query` started with
//! `wait_for_completion=false`, followed in `_tasks` and cancelled between batches; a document
//! changed after the request read it is a version conflict (`conflicts=proceed` counts it,
//! `abort` fails with it); scripts rewrite documents; and on a 3-node cluster any node coordinates a
//! reindex over shards held elsewhere, while any other node lists, gets and cancels its task.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{eventually, Cluster};
use common::Node;
use serde_json::{json, Value};

/// `count` documents `{"n": i}` in `index`, ids `0..count`, refreshed.
fn write_docs(node: &Node, index: &str, count: usize) {
    let mut ndjson = String::new();
    for i in 0..count {
        ndjson.push_str(&json!({"index": {"_index": index, "_id": i.to_string()}}).to_string());
        ndjson.push('\n');
        ndjson.push_str(&json!({"n": i}).to_string());
        ndjson.push('\n');
    }
    let bulk = node.bulk("/_bulk?refresh=true", &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{bulk}");
}

/// A node holding `count` documents in the one-shard index `docs`.
fn node_with_docs(count: usize) -> Node {
    let node = Node::start();
    node.put(
        "/docs",
        &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}}),
    )
    .ok();
    write_docs(&node, "docs", count);
    node
}

/// Starts a by-query request over every document with `wait_for_completion=false` (in `path`);
/// its task id.
fn start_task(node: &Node, path: &str) -> String {
    let started = node
        .post(path, &json!({"query": {"match_all": {}}}))
        .expect(200)
        .json();
    started["task"].as_str().unwrap().to_string()
}

/// Polls `GET _tasks/{id}` until the task is done; its answer.
fn wait_for_task(node: &Node, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = node.get(&format!("/_tasks/{id}")).ok().json();
        if answer["completed"] == true {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never completed: {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_task_is_followed_and_cancelled_between_batches() {
    let node = node_with_docs(20);
    // one document a batch, two batches a second: the task runs for ten seconds
    let id = start_task(
        &node,
        "/docs/_delete_by_query?wait_for_completion=false&scroll_size=1&requests_per_second=2",
    );
    let (node_id, number) = id.split_once(':').unwrap();

    // running: listed, and its status counts the batches done so far
    eventually("a batch done", || {
        let answer = node.get(&format!("/_tasks/{id}")).ok().json();
        answer["completed"] == false && answer["task"]["status"]["deleted"].as_u64() >= Some(1)
    });
    let listed = node
        .get("/_tasks?actions=*byquery&detailed=true")
        .ok()
        .json();
    let task = &listed["nodes"][node_id]["tasks"][&id];
    assert_eq!(task["id"], number.parse::<u64>().unwrap(), "{listed}");
    assert_eq!(task["action"], "indices:data/write/delete/byquery");
    assert_eq!(task["description"], "delete-by-query [docs]");
    assert_eq!(task["status"]["total"], 20);
    assert_eq!(task["cancellable"], true);
    let flat = node
        .get("/_tasks?actions=indices:data/write/delete/*&group_by=none")
        .ok()
        .json();
    assert_eq!(flat["tasks"].as_array().unwrap().len(), 1, "{flat}");

    // cancelled: it stops before the next batch and says so
    let cancelled = node
        .post_empty(&format!("/_tasks/{id}/_cancel"))
        .ok()
        .json();
    assert_eq!(
        cancelled["nodes"][node_id]["tasks"][&id]["cancelled"], true,
        "{cancelled}"
    );
    let done = wait_for_task(&node, &id);
    let response = &done["response"];
    assert_eq!(response["canceled"], "by user request", "{done}");
    assert_eq!(done["task"]["cancelled"], true);
    let deleted = response["deleted"].as_u64().unwrap();
    assert!((1..20).contains(&deleted), "{done}");
    node.refresh("docs");
    assert_eq!(node.count("docs"), 20 - deleted);
    // no longer running
    let listed = node.get("/_tasks?actions=*byquery").ok().json();
    assert_eq!(listed["nodes"], json!({}), "{listed}");
    // cancelling what is gone
    let again = node
        .post_empty(&format!("/_tasks/{id}/_cancel"))
        .ok()
        .json();
    assert_eq!(
        again["node_failures"][0]["caused_by"]["type"], "resource_not_found_exception",
        "{again}"
    );
    node.get(&format!("/_tasks/{node_id}:999999"))
        .expect_error(404, "resource_not_found_exception");
}

#[test]
fn a_rethrottle_applies_to_the_running_task_at_once() {
    let node = node_with_docs(20);
    // one document a second: twenty seconds, unless rethrottled
    let id = start_task(
        &node,
        "/docs/_delete_by_query?wait_for_completion=false&scroll_size=1&requests_per_second=1",
    );
    let (node_id, _) = id.split_once(':').unwrap();
    let since = Instant::now();
    let answer = node
        .post_empty(&format!(
            "/_delete_by_query/{id}/_rethrottle?requests_per_second=-1"
        ))
        .ok()
        .json();
    assert_eq!(
        answer["nodes"][node_id]["tasks"][&id]["status"]["requests_per_second"], -1.0,
        "{answer}"
    );
    let done = wait_for_task(&node, &id);
    assert_eq!(done["response"]["deleted"], 20, "{done}");
    assert!(since.elapsed() < Duration::from_secs(10), "{done}");
}

#[test]
fn a_document_changed_after_it_was_read_is_a_version_conflict() {
    let node = node_with_docs(6);
    for (conflicts, status) in [("proceed", 200), ("abort", 409)] {
        // batches of one, one a second: the last document is read (pinned) before it is
        // changed, and written after
        let id = start_task(&node, &format!("/docs/_update_by_query?wait_for_completion=false&scroll_size=1&requests_per_second=1&conflicts={conflicts}"));
        // once the documents are read (the first batch is written), document 5 changes
        eventually("a first batch", || {
            let answer = node.get(&format!("/_tasks/{id}")).ok().json();
            answer["task"]["status"]["batches"].as_u64() >= Some(1)
        });
        node.put("/docs/_doc/5?refresh=true", &json!({"n": 50}))
            .ok();
        let done = wait_for_task(&node, &id);
        let response = &done["response"];
        assert_eq!(response["version_conflicts"], 1, "{conflicts}: {done}");
        let failures = response["failures"].as_array().unwrap();
        if status == 200 {
            // every other document was updated
            assert_eq!(response["updated"], 5, "{done}");
            assert!(failures.is_empty(), "{done}");
        } else {
            // the batch of the conflict was the last
            assert_eq!(
                response["batches"].as_u64().unwrap(),
                response["updated"].as_u64().unwrap() + 1,
                "{done}"
            );
            assert_eq!(failures.len(), 1, "{done}");
            assert_eq!(failures[0]["id"], "5");
            assert_eq!(failures[0]["status"], 409);
            assert_eq!(
                failures[0]["cause"]["type"],
                "version_conflict_engine_exception"
            );
        }
        // the newer write stands
        let doc = node.get("/docs/_doc/5").ok().json();
        assert_eq!(doc["_source"]["n"], 50, "{doc}");
    }
    // the same through a waiting request: the answer's status is the conflict's
    node.post(
        "/docs/_update_by_query?conflicts=proceed",
        &json!({"query": {"match_all": {}}}),
    )
    .expect(200);
}

#[test]
fn scripts_rewrite_documents_and_the_rest_is_refused() {
    let node = Node::start();
    node.put("/docs", &json!({"settings": {"number_of_shards": 3}}))
        .ok();
    write_docs(&node, "docs", 6);
    // update by query: odd documents deleted, 0 skipped, the rest changed
    let script = json!({
        "source": "if (ctx._source.n % 2 == 1) { ctx.op = 'delete' } else if (ctx._source.n == 0) { ctx.op = 'noop' } else { ctx._source.n *= params.f }",
        "params": {"f": 10}
    });
    let answer = node
        .post(
            "/docs/_update_by_query?refresh=true",
            &json!({"script": script}),
        )
        .ok()
        .json();
    assert_eq!(
        (&answer["updated"], &answer["deleted"], &answer["noops"]),
        (&json!(2), &json!(3), &json!(1)),
        "{answer}"
    );
    let doc = node.get("/docs/_doc/4").ok().json();
    assert_eq!(doc["_source"], json!({"n": 40}));
    // reindex: each document under a new id, in an index the script chooses
    let answer = node
        .post(
            "/_reindex?refresh=true",
            &json!({"source": {"index": "docs"}, "dest": {"index": "copy"},
                    "script": {"source": "ctx._id = 'c' + ctx._id; ctx._index = ctx._source.n > 0 ? 'copy' : 'zero'"}}),
        )
        .ok()
        .json();
    assert_eq!(answer["created"], 3, "{answer}");
    assert_eq!(
        node.get("/copy/_doc/c4").ok().json()["_source"],
        json!({"n": 40})
    );
    assert_eq!(node.get("/zero/_count").ok().json()["count"], 1);
    // an id a script makes longer than 512 bytes fails the request, as OpenSearch's bulk
    // validation does, and writes nothing
    let long = node
        .post(
            "/_reindex",
            &json!({"source": {"index": "docs"}, "dest": {"index": "long"},
                    "script": {"source": "if (ctx._source.n == 40) { String s = ''; for (int i = 0; i < 600; i++) { s += 'x'; } ctx._id = s }"}}),
        )
        .expect_error(400, "action_request_validation_exception");
    let reason = long["error"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Validation Failed: 1: id [xxx"),
        "{reason}"
    );
    assert!(
        reason.ends_with("is too long, must be no longer than 512 bytes but was: 600;"),
        "{reason}"
    );
    assert_eq!(node.get("/long").status, 404);
    // a script that fails fails the request, and writes nothing
    node.post(
        "/docs/_update_by_query",
        &json!({"script": {"source": "ctx._source.n = 1 / 0"}}),
    )
    .expect_error(400, "script_exception");
    assert_eq!(
        node.get("/docs/_doc/4").ok().json()["_source"],
        json!({"n": 40})
    );
    node.post(
        "/_reindex",
        &json!({"source": {"index": "docs"}, "dest": {"index": "copy2", "pipeline": "p"}}),
    )
    .expect_error(400, "illegal_argument_exception");
    node.post(
        "/_reindex",
        &json!({"source": {"index": "docs", "remote": {"host": "http://h:9200"}}, "dest": {"index": "copy2"}}),
    )
    .expect_error(400, "illegal_argument_exception");
    // nothing was written
    assert_eq!(node.get("/copy2").status, 404);
}

#[test]
fn any_node_of_a_cluster_coordinates_and_any_node_follows_its_tasks() {
    let cluster = Cluster::start(3);
    let first = cluster.node(0);
    first
        .put(
            "/src",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
        )
        .ok();
    write_docs(first, "src", 30);

    // a reindex coordinated by node 1, reading shards held by every node
    let answer = cluster
        .node(1)
        .post(
            "/_reindex?refresh=true",
            &json!({"source": {"index": "src", "size": 7}, "dest": {"index": "dst"}}),
        )
        .expect(200)
        .json();
    assert_eq!(answer["created"], 30, "{answer}");
    assert_eq!(answer["batches"], 5, "{answer}");
    assert_eq!(cluster.node(2).count("dst"), 30);

    // a delete by query coordinated by node 2, sliced: one slice per shard
    let answer = cluster
        .node(2)
        .post(
            "/src/_delete_by_query?refresh=true&slices=auto",
            &json!({"query": {"range": {"n": {"lt": 10}}}}),
        )
        .expect(200)
        .json();
    assert_eq!(answer["deleted"], 10, "{answer}");
    assert_eq!(answer["slices"].as_array().unwrap().len(), 3, "{answer}");
    assert_eq!(cluster.node(0).count("src"), 20);

    // a slow update by query on node 1, followed and cancelled from node 0
    let id = start_task(
        cluster.node(1),
        "/src/_update_by_query?wait_for_completion=false&scroll_size=1&requests_per_second=2",
    );
    let (owner, _) = id.split_once(':').unwrap();
    let running = first.get(&format!("/_tasks/{id}")).ok().json();
    assert_eq!(running["completed"], false, "{running}");
    assert_eq!(
        running["task"]["action"], "indices:data/write/update/byquery",
        "{running}"
    );
    let listed = first.get("/_tasks?actions=*byquery").ok().json();
    assert!(
        listed["nodes"][owner]["tasks"].get(&id).is_some(),
        "{listed}"
    );
    let cancelled = first
        .post_empty("/_tasks/_cancel?actions=*byquery")
        .ok()
        .json();
    assert_eq!(
        cancelled["nodes"][owner]["tasks"][&id]["cancelled"], true,
        "{cancelled}"
    );
    let done = wait_for_task(cluster.node(2), &id);
    assert_eq!(done["response"]["canceled"], "by user request", "{done}");
    let updated = done["response"]["updated"].as_u64().unwrap();
    assert!(updated < 20, "{done}");
}
