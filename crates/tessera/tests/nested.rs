//! Nested documents on a real node: each nested object is a hidden child document of its
//! block, so everything a user sees of the index (hits, counts, aggregations, deletes by id,
//! updates) must stay about root documents, through refreshes, merges and a restart, while the
//! `nested` query and aggregations reach into the blocks.

mod common;

use common::{total_hits, Node};
use serde_json::{json, Value};

fn create(node: &Node) {
    node.put(
        "/blog",
        &json!({
            "settings": {"number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {
                "title": {"type": "keyword"},
                "comments": {"type": "nested", "properties": {
                    "who": {"type": "keyword"},
                    "stars": {"type": "integer"},
                    "text": {"type": "text"}
                }}
            }}
        }),
    )
    .ok();
}

fn post(node: &Node, id: u32, title: &str, comments: Value) {
    node.put(
        &format!("/blog/_doc/{id}"),
        &json!({"title": title, "comments": comments}),
    )
    .ok();
}

fn nested_ids(node: &Node, query: Value) -> Vec<String> {
    let found = node.search(
        "blog",
        &json!({"query": {"nested": {"path": "comments", "query": query}}, "sort": ["title"]}),
    );
    hit_titles_as_ids(&found)
}

/// What the index must show however its blocks were written, merged or reopened.
fn check_visible(node: &Node) {
    let all = node.search("blog", &json!({"size": 100}));
    assert_eq!(total_hits(&all), 3, "only root documents are hits: {all}");
    assert_eq!(node.count("blog"), 3);
    let terms = node.search(
        "blog",
        &json!({"size": 0, "aggs": {"t": {"terms": {"field": "title"}}}}),
    );
    assert_eq!(total_hits(&terms), 3);
    let buckets: Vec<(String, u64)> = terms["aggregations"]["t"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        buckets,
        [
            ("a".to_string(), 1),
            ("b".to_string(), 1),
            ("c".to_string(), 1)
        ]
    );
    // the nested fields are not fields of the root documents
    let top_level = node.search("blog", &json!({"query": {"term": {"comments.who": "ann"}}}));
    assert_eq!(total_hits(&top_level), 0);
    // one comment must match both conditions: ann gave 5 stars only on "a"
    let both = json!({"bool": {"must": [{"term": {"comments.who": "ann"}}, {"term": {"comments.stars": 5}}]}});
    assert_eq!(nested_ids(node, both), ["a-id"]);
    assert_eq!(
        nested_ids(node, json!({"term": {"comments.who": "ann"}})),
        ["a-id", "b-id"]
    );
    // the nested aggregation counts comments, reverse_nested their posts
    let aggs = node.search(
        "blog",
        &json!({"size": 0, "aggs": {"c": {"nested": {"path": "comments"}, "aggs": {
            "who": {"terms": {"field": "comments.who"}, "aggs": {"posts": {"reverse_nested": {}}}},
            "stars": {"sum": {"field": "comments.stars"}}
        }}}}),
    );
    let c = &aggs["aggregations"]["c"];
    // ann 5 and bob 1 on "a", ann 2 on "b"
    assert_eq!(c["doc_count"], 3, "{aggs}");
    assert_eq!(c["stars"]["value"], 8.0);
    assert_eq!(c["who"]["buckets"][0]["key"], "ann");
    assert_eq!(c["who"]["buckets"][0]["doc_count"], 2);
    assert_eq!(c["who"]["buckets"][0]["posts"]["doc_count"], 2);
}

fn load(node: &Node) {
    create(node);
    post(
        node,
        1,
        "a",
        json!([{"who": "ann", "stars": 5}, {"who": "bob", "stars": 1}]),
    );
    post(node, 2, "b", json!({"who": "ann", "stars": 2}));
    post(node, 3, "c", json!([]));
}

fn hit_titles_as_ids(found: &Value) -> Vec<String> {
    found["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| format!("{}-id", h["_source"]["title"].as_str().unwrap()))
        .collect()
}

#[test]
fn nested_documents_stay_whole_and_hidden_through_updates_merges_and_restarts() {
    let mut node = Node::start();
    load(&node);
    // a fourth post, deleted by id: its comments must go with it
    post(&node, 4, "d", json!([{"who": "ann", "stars": 4}]));
    node.delete("/blog/_doc/4").ok();
    // an update replaces the whole block: bob's comment on "b" is gone afterwards
    post(&node, 2, "b", json!([{"who": "bob", "stars": 3}]));
    post(&node, 2, "b", json!({"who": "ann", "stars": 2}));
    node.refresh("blog");
    let check = |node: &Node| {
        check_visible(node);
        let bob = node.search(
            "blog",
            &json!({"query": {"nested": {"path": "comments", "query": {"term": {"comments.who": "bob"}}}}}),
        );
        assert_eq!(hit_titles_as_ids(&bob), ["a-id"], "{bob}");
        // Lucene counts nested documents in the index's docs: 3 roots and 3 comments
        let cat = node.get("/_cat/indices/blog?h=docs.count").ok();
        assert_eq!(cat.body.trim(), "6");
    };
    check(&node);
    node.post_empty("/blog/_forcemerge?max_num_segments=1").ok();
    node.refresh("blog");
    check(&node);
    node.restart();
    check(&node);
}

#[test]
fn nested_query_scores_inner_hits_and_errors() {
    let node = Node::start();
    load(&node);
    node.refresh("blog");
    let search = |score_mode: &str| {
        node.search(
            "blog",
            &json!({"query": {"nested": {"path": "comments", "score_mode": score_mode,
                "query": {"function_score": {"query": {"match_all": {}},
                    "field_value_factor": {"field": "comments.stars"}, "boost_mode": "replace"}}}}}),
        )
    };
    let score_of = |found: &Value, title: &str| -> f64 {
        found["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["_source"]["title"] == title)
            .unwrap()["_score"]
            .as_f64()
            .unwrap()
    };
    for (mode, expected) in [
        ("avg", 3.0),
        ("sum", 6.0),
        ("max", 5.0),
        ("min", 1.0),
        ("none", 0.0),
    ] {
        let found = search(mode);
        assert_eq!(total_hits(&found), 2, "{mode}: {found}");
        assert_eq!(score_of(&found, "a"), expected, "{mode}");
    }
    let inner = node.search(
        "blog",
        &json!({"query": {"nested": {"path": "comments", "query": {"term": {"comments.who": "bob"}},
            "inner_hits": {}}}}),
    );
    let hits = &inner["hits"]["hits"][0]["inner_hits"]["comments"]["hits"];
    assert_eq!(hits["total"]["value"], 1, "{inner}");
    assert_eq!(hits["hits"][0]["_id"], "1");
    assert_eq!(
        hits["hits"][0]["_nested"],
        json!({"field": "comments", "offset": 1})
    );
    assert_eq!(
        hits["hits"][0]["_source"],
        json!({"who": "bob", "stars": 1})
    );

    let error = node
        .post(
            "/blog/_search",
            &json!({"query": {"nested": {"path": "title", "query": {"match_all": {}}}}}),
        )
        .expect_error(400, "search_phase_execution_exception");
    assert!(error
        .to_string()
        .contains("failed to find nested object under path [title]"));
    let ignored = node.search(
        "blog",
        &json!({"query": {"nested": {"path": "nope", "ignore_unmapped": true, "query": {"match_all": {}}}}}),
    );
    assert_eq!(total_hits(&ignored), 0);
}

#[test]
fn nested_limits() {
    let node = Node::start();
    let error = node
        .put(
            "/many",
            &json!({"settings": {"index.mapping.nested_fields.limit": 1},
                "mappings": {"properties": {"a": {"type": "nested"}, "b": {"type": "nested"}}}}),
        )
        .expect_error(400, "illegal_argument_exception");
    assert_eq!(
        error["error"]["reason"],
        "Limit of nested fields [1] has been exceeded"
    );
    node.put(
        "/few",
        &json!({"settings": {"index.mapping.nested_objects.limit": 2},
            "mappings": {"properties": {"a": {"type": "nested"}}}}),
    )
    .ok();
    let error = node
        .put("/few/_doc/1", &json!({"a": [{"x": 1}, {"x": 2}, {"x": 3}]}))
        .expect_error(400, "mapper_parsing_exception");
    assert!(error["error"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("The number of nested documents has exceeded the allowed limit of [2]."));
    // within the limit, with a field the mapping learns inside the nested object
    node.put(
        "/few/_doc/1?refresh=true",
        &json!({"a": [{"x": 1}, {"x": 2}]}),
    )
    .ok();
    let mapping = node.get("/few/_mapping").ok().json();
    assert_eq!(
        mapping["few"]["mappings"]["properties"]["a"],
        json!({"type": "nested", "properties": {"x": {"type": "long"}}})
    );
    let found = node.search(
        "few",
        &json!({"query": {"nested": {"path": "a", "query": {"term": {"a.x": 2}}}}}),
    );
    assert_eq!(total_hits(&found), 1);
}

/// A `top_hits` under a `nested` aggregation over an index with nested objects and one
/// without: the second index's bucket is empty, not a failed shard.
#[test]
fn top_hits_under_nested_over_indexes_with_and_without_nested_fields() {
    let node = Node::start();
    load(&node);
    node.put(
        "/flat",
        &json!({"settings": {"number_of_shards": 1}, "mappings": {"properties": {"title": {"type": "keyword"}}}}),
    )
    .ok();
    node.put("/flat/_doc/1?refresh=true", &json!({"title": "z"}))
        .ok();
    node.refresh("blog");
    let found = node.search(
        "blog,flat",
        &json!({"size": 0, "aggs": {"c": {"nested": {"path": "comments"},
            "aggs": {"best": {"top_hits": {"size": 1, "sort": ["_doc"]}}}}}}),
    );
    assert_eq!(found["_shards"]["failed"], 0, "{found}");
    let best = &found["aggregations"]["c"]["best"]["hits"];
    assert_eq!(best["total"]["value"], 3, "{found}");
    assert_eq!(best["hits"][0]["_nested"]["field"], "comments", "{found}");
}
