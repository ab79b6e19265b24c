//! Concurrent segment search must not change results: a multi-segment shard searched
//! sequentially (`mode: none`) and sliced (`mode: all` with various slice counts, `auto`) gives
//! the same hits, in the same order, with the same scores, totals and sort values.

mod common;

use common::{hit_ids, total_hits, Node};
use serde_json::{json, Value};

const SEGMENTS: usize = 6;
const PER_SEGMENT: usize = 25;

/// One shard, [`SEGMENTS`] segments (one refresh per bulk), a few deletes spread over them.
fn setup() -> Node {
    let node = Node::start();
    node.put(
        "/cs",
        &json!({
            "settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
            "mappings": {"properties": {
                "n": {"type": "integer"},
                "k": {"type": "keyword"},
                "t": {"type": "text"}
            }}
        }),
    )
    .expect(200);
    for segment in 0..SEGMENTS {
        let mut ndjson = String::new();
        for j in 0..PER_SEGMENT {
            let i = segment * PER_SEGMENT + j;
            let words: Vec<String> = (0..=(i % 4)).map(|w| format!("w{}", (i + w) % 5)).collect();
            ndjson.push_str(&format!(
                "{{\"index\":{{\"_index\":\"cs\",\"_id\":\"{i}\"}}}}\n"
            ));
            ndjson.push_str(
                &json!({"n": i % 7, "k": format!("k{}", i % 11), "t": format!("{} common", words.join(" "))})
                    .to_string(),
            );
            ndjson.push('\n');
        }
        let resp = node.bulk("/_bulk", &ndjson).expect(200).json();
        assert_eq!(resp["errors"], false, "{resp}");
        node.refresh("cs");
    }
    // deletes in several segments: deleted docs must vanish from every slice
    for id in [0, 3, 26, 77, 101, 149] {
        node.delete(&format!("/cs/_doc/{id}")).expect(200);
    }
    node.refresh("cs");
    let segments = node.get("/_cat/segments/cs?format=json").expect(200).json();
    assert!(
        segments.as_array().unwrap().len() >= SEGMENTS,
        "expected at least {SEGMENTS} segments: {segments}"
    );
    node
}

fn queries() -> Vec<Value> {
    vec![
        json!({"size": 200}),
        json!({"size": 0}),
        json!({"size": 15, "query": {"match": {"t": "w1 w3"}}}),
        json!({"size": 200, "query": {"match": {"t": "common"}}}),
        json!({"size": 12, "query": {"bool": {"must": [{"match": {"t": "w2"}}], "filter": [{"range": {"n": {"gte": 2, "lte": 5}}}]}}}),
        json!({"size": 200, "sort": [{"n": "asc"}]}),
        json!({"size": 30, "from": 20, "sort": [{"n": "desc"}, {"k": "asc"}]}),
        json!({"size": 10, "sort": [{"k": "asc"}, {"n": "asc"}], "search_after": ["k3", 2]}),
        json!({"size": 5, "track_total_hits": 7}),
        json!({"size": 5, "track_total_hits": false, "query": {"term": {"k": "k4"}}}),
        json!({"size": 20, "query": {"match": {"t": "w0"}}, "sort": ["_score", {"n": "asc"}]}),
    ]
}

fn set_mode(node: &Node, mode: &str, max_slice_count: u32) {
    node.put(
        "/cs/_settings",
        &json!({"index": {
            "search.concurrent_segment_search.mode": mode,
            "search.concurrent.max_slice_count": max_slice_count
        }}),
    )
    .expect(200);
}

/// The response without what may legitimately differ between runs.
fn comparable(mut response: Value) -> Value {
    response.as_object_mut().unwrap().remove("took");
    response
}

#[test]
fn sliced_search_gives_the_same_results_as_sequential_search() {
    let node = setup();
    set_mode(&node, "none", 0);
    let baseline: Vec<Value> = queries()
        .iter()
        .map(|q| comparable(node.search("cs", q)))
        .collect();
    // sanity: the baseline itself is what the data says
    let live = (SEGMENTS * PER_SEGMENT - 6) as u64;
    assert_eq!(total_hits(&baseline[0]), live, "{}", baseline[0]);
    assert_eq!(hit_ids(&baseline[0]).len() as u64, live);
    assert_eq!(total_hits(&baseline[1]), live);
    assert_eq!(
        baseline[8]["hits"]["total"],
        json!({"value": 7, "relation": "gte"})
    );
    let sorted: Vec<u64> = baseline[5]["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["sort"][0].as_u64().unwrap())
        .collect();
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "{sorted:?}");

    for (mode, slices) in [("all", 0), ("all", 2), ("all", 3), ("all", 16), ("auto", 0)] {
        set_mode(&node, mode, slices);
        for (query, expected) in queries().iter().zip(&baseline) {
            let got = comparable(node.search("cs", query));
            assert_eq!(
                &got, expected,
                "mode {mode}, max_slice_count {slices}, query {query}"
            );
        }
    }

    // the cluster-level setting is honoured too, when the index does not override it
    node.put(
        "/cs/_settings",
        &json!({"index": {
            "search.concurrent_segment_search.mode": null,
            "search.concurrent.max_slice_count": null
        }}),
    )
    .expect(200);
    node.put(
        "/_cluster/settings",
        &json!({"transient": {"search.concurrent_segment_search.mode": "all", "search.concurrent.max_slice_count": 4}}),
    )
    .expect(200);
    for (query, expected) in queries().iter().zip(&baseline) {
        let got = comparable(node.search("cs", query));
        assert_eq!(&got, expected, "cluster mode all, query {query}");
    }
}

/// `completed` of the node's `index_searcher` thread pool.
fn index_searcher_completed(node: &Node) -> u64 {
    let stats = node.get("/_nodes/stats/thread_pool").expect(200).json();
    let (_, stats) = stats["nodes"].as_object().unwrap().iter().next().unwrap();
    stats["thread_pool"]["index_searcher"]["completed"]
        .as_u64()
        .unwrap_or_else(|| panic!("no index_searcher stats: {stats}"))
}

#[test]
fn mode_all_runs_slices_on_the_index_searcher_pool() {
    let node = setup();
    set_mode(&node, "none", 0);
    let before = index_searcher_completed(&node);
    node.search("cs", &json!({"query": {"match": {"t": "common"}}}));
    assert_eq!(
        index_searcher_completed(&node),
        before,
        "sequential search must not use the index_searcher pool"
    );

    set_mode(&node, "all", 3);
    let before = index_searcher_completed(&node);
    node.search("cs", &json!({"query": {"match": {"t": "common"}}}));
    let after = index_searcher_completed(&node);
    assert!(
        after >= before + 2,
        "a search over {SEGMENTS} segments with max_slice_count 3 should run several slices on \
         the index_searcher pool; completed went from {before} to {after}"
    );
}
