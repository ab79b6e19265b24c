//! Bounded work: one request must not take the node down. A real node answers requests that
//! would need too much with OpenSearch's errors and keeps serving: the request circuit breaker
//! (`indices.breaker.request.limit`, a dynamic cluster setting) with 429
//! `circuit_breaking_exception`, empty-bucket fills beyond `search.max_buckets` with
//! `too_many_buckets_exception`, and `indices.query.bool.max_clause_count` (a static node
//! setting in the config file) with 400 `query_shard_exception` / `too_many_clauses`.

mod common;

use common::Node;
use serde_json::{json, Value};

fn load_distinct_terms(node: &Node, docs: usize) {
    node.put(
        "/many",
        &json!({
            "settings": {"number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {"k": {"type": "keyword"}, "x": {"type": "double"}}}
        }),
    )
    .expect(200);
    let mut ndjson = String::new();
    for i in 0..docs {
        ndjson.push_str("{\"index\":{}}\n");
        ndjson.push_str(&format!(
            "{{\"k\":\"term-{i}\",\"x\":{}}}\n",
            i as f64 * 0.5
        ));
    }
    node.bulk("/many/_bulk?refresh=true", &ndjson).ok();
}

fn request_breaker(node: &Node) -> Value {
    let stats = node.get("/_nodes/stats/breaker").ok().json();
    let nodes = stats["nodes"].as_object().expect("nodes");
    nodes.values().next().expect("one node")["breakers"].clone()
}

#[test]
fn a_big_aggregation_trips_the_request_breaker_and_the_node_keeps_serving() {
    let node = Node::start();
    load_distinct_terms(&node, 20_000);
    let terms = json!({"size": 0, "aggs": {"k": {"terms": {"field": "k", "size": 20000}}}});
    // within the default limit
    let ok = node.post("/many/_search", &terms).ok().json();
    assert_eq!(
        ok["aggregations"]["k"]["buckets"].as_array().unwrap().len(),
        20_000
    );

    node.put(
        "/_cluster/settings",
        &json!({"transient": {"indices.breaker.request.limit": "200kb"}}),
    )
    .ok();
    let breakers = request_breaker(&node);
    assert_eq!(
        breakers["request"]["limit_size_in_bytes"],
        json!(200 * 1024)
    );
    assert_eq!(breakers["request"]["limit_size"], json!("200kb"));

    let body = node
        .post("/many/_search", &terms)
        .expect_error(429, "search_phase_execution_exception");
    let root = &body["error"]["root_cause"][0];
    assert_eq!(root["type"], "circuit_breaking_exception", "{body}");
    let reason = root["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("[request] Data too large, data for [<reused_arrays>] would be [")
            && reason.ends_with("which is larger than the limit of [204800/200kb]"),
        "{reason}"
    );
    assert_eq!(root["bytes_limit"], json!(204800));
    assert!(root["bytes_wanted"].as_u64().unwrap() > 204800);
    assert_eq!(root["durability"], "TRANSIENT");
    // so does a histogram with a bucket per document
    let histogram =
        json!({"size": 0, "aggs": {"h": {"histogram": {"field": "x", "interval": 0.5}}}});
    let body = node
        .post("/many/_search", &histogram)
        .expect_error(429, "search_phase_execution_exception");
    assert_eq!(
        body["error"]["root_cause"][0]["type"],
        "circuit_breaking_exception"
    );

    // everything was given back (pool threads drop their part of a request just after they
    // answer, so give them a moment), the trips were counted, and small requests still pass
    let mut breakers = request_breaker(&node);
    for _ in 0..50 {
        if breakers["request"]["estimated_size_in_bytes"] == json!(0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        breakers = request_breaker(&node);
    }
    assert_eq!(
        breakers["request"]["estimated_size_in_bytes"],
        json!(0),
        "{breakers}"
    );
    assert!(
        breakers["request"]["tripped"].as_u64().unwrap() >= 2,
        "{breakers}"
    );
    assert!(breakers["parent"]["limit_size_in_bytes"].as_u64().unwrap() > 0);
    let small = json!({"size": 3, "query": {"range": {"x": {"lt": 10}}},
        "aggs": {"k": {"terms": {"field": "k", "size": 5}}}});
    let answer = node.post("/many/_search", &small).ok().json();
    assert_eq!(answer["hits"]["hits"].as_array().unwrap().len(), 3);
    assert_eq!(
        answer["aggregations"]["k"]["buckets"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    // a bad limit is refused
    node.put(
        "/_cluster/settings",
        &json!({"transient": {"indices.breaker.request.limit": "120%"}}),
    )
    .expect(400);
    // back to the default: the big aggregation passes again
    node.put(
        "/_cluster/settings",
        &json!({"transient": {"indices.breaker.request.limit": null}}),
    )
    .ok();
    node.post("/many/_search", &terms).ok();
}

#[test]
fn empty_bucket_fills_beyond_any_count_fail_at_once() {
    let node = Node::start();
    load_distinct_terms(&node, 100);
    for body in [
        json!({"size": 0, "aggs": {"h": {"histogram": {"field": "x", "interval": 1e-300, "min_doc_count": 0}}}}),
        json!({"size": 0, "aggs": {"h": {"histogram": {"field": "x", "interval": 1,
            "extended_bounds": {"min": -1e300, "max": 1e300}}}}}),
    ] {
        let body = node.post("/many/_search", &body).json();
        assert_eq!(
            body["error"]["root_cause"][0]["type"], "too_many_buckets_exception",
            "{body}"
        );
    }
    node.get("/many/_count").ok();
}

#[test]
fn max_clause_count_is_a_node_setting() {
    let node = Node::start_with_config_text("indices.query.bool.max_clause_count: 100\n");
    load_distinct_terms(&node, 10);
    let should = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"term": {"k": format!("term-{i}")}}))
            .collect()
    };
    let answer = node
        .post(
            "/many/_search",
            &json!({"query": {"bool": {"should": should(100)}}}),
        )
        .ok()
        .json();
    assert_eq!(answer["hits"]["total"]["value"], json!(10));
    let body = node
        .post(
            "/many/_search",
            &json!({"query": {"bool": {"should": should(101)}}}),
        )
        .expect_error(400, "search_phase_execution_exception");
    let failure = &body["error"]["failed_shards"][0]["reason"];
    assert_eq!(failure["type"], "query_shard_exception", "{body}");
    assert_eq!(
        failure["reason"],
        "failed to create query: maxClauseCount is set to 100"
    );
    assert_eq!(failure["caused_by"]["type"], "too_many_clauses");
}
