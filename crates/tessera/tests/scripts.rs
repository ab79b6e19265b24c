//! Stored scripts are cluster metadata: they survive a restart and searches find them by id.

mod common;

use common::{hit_ids, Node};
use serde_json::json;

#[test]
fn stored_scripts_survive_a_restart_and_serve_searches() {
    let mut node = Node::start();
    node.put(
        "/_scripts/twice",
        &json!({"script": {"lang": "painless", "source": "doc['n'].value * params.f"}}),
    )
    .expect(200);
    node.put(
        "/scores",
        &json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    )
    .expect(200);
    for (id, n) in [("a", 1), ("b", 5), ("c", 3)] {
        node.put(&format!("/scores/_doc/{id}?refresh=true"), &json!({"n": n}))
            .expect(201);
    }
    let search = json!({"query": {"script_score": {
        "query": {"match_all": {}},
        "script": {"id": "twice", "params": {"f": 2}}
    }}});
    let found = node.post("/scores/_search", &search).expect(200).json();
    assert_eq!(hit_ids(&found), vec!["b", "c", "a"], "{found}");
    assert_eq!(found["hits"]["hits"][0]["_score"], 10.0, "{found}");

    node.restart();
    let got = node.get("/_scripts/twice").expect(200).json();
    assert_eq!(
        got,
        json!({"_id": "twice", "found": true, "script": {"lang": "painless", "source": "doc['n'].value * params.f"}})
    );
    let found = node.post("/scores/_search", &search).expect(200).json();
    assert_eq!(hit_ids(&found), vec!["b", "c", "a"], "{found}");

    node.delete("/_scripts/twice").expect(200);
    node.restart();
    node.get("/_scripts/twice").expect(404);
    let missing = node.post("/scores/_search", &search).json();
    assert_eq!(
        missing["error"]["root_cause"][0]["reason"],
        "unable to find script [twice] in cluster state",
        "{missing}"
    );
}

/// A `script_score` scores the documents each slice collects, and only those: any slicing
/// of the segments gives the same hits, and a failure on a document that only one slice
/// reaches still fails the search.
#[test]
fn script_scores_do_not_depend_on_the_slicing() {
    let node = Node::start();
    node.put(
        "/sliced",
        &json!({"settings": {"number_of_shards": 1}, "mappings": {"properties": {"n": {"type": "long"}, "d": {"type": "double"}, "x": {"type": "double"}}}}),
    )
    .expect(200);
    for batch in 0..3 {
        let mut bulk = String::new();
        for i in 0..700 {
            let n = batch * 700 + i;
            bulk.push_str(&format!(
                "{{\"index\":{{\"_id\":\"{n}\"}}}}\n{{\"n\":{n},\"x\":{n}.0,\"d\":{}}}\n",
                (n * 37 % 101) as f64 / 4.0
            ));
        }
        node.bulk("/sliced/_bulk?refresh=true", &bulk).expect(200);
    }
    // deleted documents are skipped in every block
    for id in (150..2100).step_by(97) {
        node.delete(&format!("/sliced/_doc/{id}")).expect(200);
    }
    node.post("/sliced/_refresh", &json!({})).expect(200);
    let search = |source: &str| {
        json!({"size": 25, "query": {"script_score": {
            "query": {"range": {"n": {"gte": 100}}},
            "script": {"source": source}
        }}})
    };
    // double arithmetic (scored in blocks) and statements (the interpreter)
    let fast = search("doc['d'].value / (doc['x'].value + 1)");
    let interpreted = search("double x = doc['d'].value; return x * x + doc['n'].value % 7");
    let mut answers = Vec::new();
    for slices in [1, 2, 5] {
        node.put(
            "/_cluster/settings",
            &json!({"transient": {"search.concurrent.max_slice_count": slices, "search.concurrent_segment_search.mode": "all"}}),
        )
        .expect(200);
        let mut runs = Vec::new();
        for body in [&fast, &interpreted] {
            let found = node.post("/sliced/_search", body).expect(200).json();
            assert_eq!(found["hits"]["total"]["value"], 1979, "{found}");
            runs.push((hit_ids(&found), found["hits"]["hits"][0]["_score"].clone()));
        }
        answers.push(runs);
        // the one document that fails is the last one: whichever slice reaches it fails the
        // shard
        let failing = search("1 / (doc['n'].value - 2099) + 1");
        let err = node.post("/sliced/_search", &failing).json();
        assert_eq!(err["status"], 400, "{err}");
        assert_eq!(
            err["error"]["root_cause"][0]["type"], "script_exception",
            "{err}"
        );
        // the same on the fast path: only the last document scores below zero
        let negative = search("2098.5 - doc['x'].value");
        let err = node.post("/sliced/_search", &negative).json();
        assert_eq!(err["status"], 400, "{err}");
        let reason = err["error"]["root_cause"][0]["reason"]
            .as_str()
            .unwrap_or_default();
        assert!(reason.contains("Must be a non-negative score!"), "{err}");
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
}

/// `script.painless.regex.enabled: false` refuses regex literals when a script compiles, with
/// OpenSearch's message; by default (OpenSearch's `limited`) they run.
#[test]
fn regexes_can_be_turned_off_in_the_node_config() {
    let execute = json!({"script": {"source": "'abc' =~ /b/"}});
    let node = Node::start();
    let found = node
        .post("/_scripts/painless/_execute", &execute)
        .expect(200)
        .json();
    assert_eq!(found["result"], "true", "{found}");
    let node = Node::start_with_config_text("script.painless.regex.enabled: false\n");
    let refused = node.post("/_scripts/painless/_execute", &execute).json();
    assert_eq!(refused["status"], 400, "{refused}");
    let cause = &refused["error"]["caused_by"];
    assert_eq!(cause["type"], "illegal_state_exception", "{refused}");
    assert!(cause["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("Regexes are disabled. Set [script.painless.regex.enabled] to [true]"));
}
