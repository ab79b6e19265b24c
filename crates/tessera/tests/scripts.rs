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
