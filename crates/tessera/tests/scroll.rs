//! Scroll and point in time as a client uses them: every document read exactly once, in the
//! request's order, over a reader that later writes and deletes do not change; `_shard_doc`
//! tie-breaks; keep-alives that expire and are bounded; the per-node limit of open scrolls.

mod common;

use std::collections::BTreeSet;

use common::{hit_ids, Node};
use serde_json::{json, Value};

const DOCS: usize = 230;

/// A 3-shard index of [`DOCS`] documents in several segments; `n` has many ties.
fn setup() -> Node {
    let node = Node::start();
    node.put(
        "/docs",
        &json!({
            "settings": {"number_of_shards": 3, "refresh_interval": "-1"},
            "mappings": {"properties": {"n": {"type": "integer"}, "text": {"type": "text"}}}
        }),
    )
    .expect(200);
    for batch in 0..3 {
        let mut ndjson = String::new();
        for i in (batch * DOCS / 3)..((batch + 1) * DOCS / 3) {
            let words = if i % 4 == 0 { "red fox" } else { "red" };
            ndjson.push_str(&format!(
                "{{\"index\":{{\"_id\":\"{i}\"}}}}\n{{\"n\":{},\"text\":\"{words} {i}\"}}\n",
                i % 9
            ));
        }
        let answer = node
            .bulk("/docs/_bulk?refresh=true", &ndjson)
            .expect(200)
            .json();
        assert_eq!(answer["errors"], false, "{answer}");
    }
    node
}

/// Reads a scroll to its end; the hits of every page.
fn read_scroll(node: &Node, first: Value) -> Vec<Value> {
    let mut hits: Vec<Value> = first["hits"]["hits"].as_array().unwrap().clone();
    let mut id = first["_scroll_id"].as_str().unwrap().to_string();
    loop {
        let page = node
            .post("/_search/scroll", &json!({"scroll": "1m", "scroll_id": id}))
            .expect(200)
            .json();
        assert_eq!(page["_shards"]["failed"], 0, "{page}");
        // every page reports the first page's total
        assert_eq!(page["hits"]["total"], first["hits"]["total"], "{page}");
        let page_hits = page["hits"]["hits"].as_array().unwrap();
        if page_hits.is_empty() {
            break;
        }
        hits.extend(page_hits.iter().cloned());
        id = page["_scroll_id"].as_str().unwrap().to_string();
    }
    node.delete("/_search/scroll/_all").expect(200);
    hits
}

fn ids(hits: &[Value]) -> Vec<String> {
    hits.iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_scroll_reads_every_document_once_in_order_over_its_snapshot() {
    let node = setup();
    // sorted by a field with ties: the pages follow the one-request order exactly
    let body = json!({"size": 500, "sort": [{"n": "desc"}], "_source": false});
    let all = ids(node.search("docs", &body)["hits"]["hits"]
        .as_array()
        .unwrap());
    assert_eq!(all.len(), DOCS);
    let first = node
        .post(
            "/docs/_search?scroll=1m",
            &json!({"size": 17, "sort": [{"n": "desc"}], "_source": false}),
        )
        .expect(200)
        .json();
    // writes and deletes after the scroll opened do not change what it reads
    node.bulk(
        "/docs/_bulk?refresh=true",
        "{\"delete\":{\"_id\":\"5\"}}\n{\"index\":{\"_id\":\"new\"}}\n{\"n\":8}\n",
    )
    .expect(200);
    let scrolled = ids(&read_scroll(&node, first));
    assert_eq!(scrolled, all);

    // in index order (`_doc`, what helpers.scan asks): pages skip to their position
    let in_order = ids(node.search(
        "docs",
        &json!({"size": 500, "sort": ["_doc"], "_source": false}),
    )["hits"]["hits"]
        .as_array()
        .unwrap());
    for size in [1, 9, 64] {
        let first = node
            .post(
                &format!("/docs/_search?scroll=1m&size={size}"),
                &json!({"sort": ["_doc"], "_source": false}),
            )
            .expect(200)
            .json();
        assert_eq!(first["hits"]["total"]["value"], DOCS as u64);
        assert_eq!(ids(&read_scroll(&node, first)), in_order, "size {size}");
    }

    // by score (the default order): every match once, scores never rising
    let first = node
        .post(
            "/docs/_search?scroll=1m&size=13",
            &json!({"query": {"match": {"text": "red fox"}}}),
        )
        .expect(200)
        .json();
    let hits = read_scroll(&node, first);
    let unique: BTreeSet<String> = ids(&hits).into_iter().collect();
    assert_eq!(unique.len(), hits.len());
    // opened after the delete of "5" (the new document has no text)
    assert_eq!(hits.len(), DOCS - 1);
    let scores: Vec<f64> = hits.iter().map(|h| h["_score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[test]
fn a_point_in_time_pages_by_shard_doc() {
    let node = setup();
    let pit = node
        .post_empty("/docs/_search/point_in_time?keep_alive=1m")
        .expect(200)
        .json();
    assert_eq!(pit["_shards"]["successful"], 3, "{pit}");
    let id = pit["pit_id"].as_str().unwrap().to_string();
    node.bulk(
        "/docs/_bulk?refresh=true",
        "{\"delete\":{\"_id\":\"7\"}}\n{\"index\":{\"_id\":\"late\"}}\n{\"n\":1}\n",
    )
    .expect(200);
    let mut seen = Vec::new();
    let mut last: Option<Value> = None;
    let mut values = Vec::new();
    loop {
        let mut body = json!({"size": 40, "pit": {"id": id, "keep_alive": "1m"},
            "sort": ["_shard_doc"], "_source": false});
        if let Some(after) = &last {
            body["search_after"] = after.clone();
        }
        let page = node.post("/_search", &body).expect(200).json();
        assert_eq!(page["pit_id"], id.as_str());
        assert_eq!(page["hits"]["total"]["value"], DOCS as u64);
        let hits = page["hits"]["hits"].as_array().unwrap();
        if hits.is_empty() {
            break;
        }
        for hit in hits {
            values.push(hit["sort"][0].as_u64().unwrap());
        }
        seen.extend(hit_ids(&page));
        last = Some(hits.last().unwrap()["sort"].clone());
    }
    assert_eq!(seen.len(), DOCS);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), DOCS);
    assert!(seen.contains(&"7".to_string()) && !seen.contains(&"late".to_string()));
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    // the high 32 bits are the shard's place in the PIT: all three shards appear
    let shards: BTreeSet<u64> = values.iter().map(|v| v >> 32).collect();
    assert_eq!(shards, BTreeSet::from([0, 1, 2]));

    let without = node.post("/docs/_search", &json!({"sort": ["_shard_doc"]}));
    without.expect_error(400, "illegal_argument_exception");
    let body = json!({"pit_id": [id]}).to_string();
    let deleted = node
        .send_raw(
            "DELETE",
            "/_search/point_in_time",
            body.as_bytes(),
            "application/json",
        )
        .expect(200)
        .json();
    assert_eq!(deleted["pits"][0]["successful"], true);
}

#[test]
fn keep_alives_expire_and_are_bounded_and_scrolls_are_limited() {
    let node = setup();
    let first = node
        .post("/docs/_search?scroll=1s&size=5", &json!({}))
        .expect(200)
        .json();
    let id = first["_scroll_id"].as_str().unwrap().to_string();
    let stats = node.get("/_nodes/stats/indices").expect(200).json();
    let search =
        stats["nodes"].as_object().unwrap().values().next().unwrap()["indices"]["search"].clone();
    assert_eq!(search["scroll_current"], 3, "{search}");
    std::thread::sleep(std::time::Duration::from_millis(1600));
    let expired = node.post("/_search/scroll", &json!({"scroll": "1m", "scroll_id": id}));
    let body = expired.expect_error(404, "search_phase_execution_exception");
    assert_eq!(
        body["error"]["root_cause"][0]["type"],
        "search_context_missing_exception"
    );

    let too_long = node.post("/docs/_search?scroll=2d", &json!({}));
    let body = too_long.expect_error(400, "illegal_argument_exception");
    assert!(
        body["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("[search.max_keep_alive]"),
        "{body}"
    );

    node.put(
        "/_cluster/settings",
        &json!({"transient": {"search.max_open_scroll_context": 3}}),
    )
    .expect(200);
    node.post("/docs/_search?scroll=1m", &json!({})).expect(200);
    // three more shard readers would make six: each refused, and none left pinned
    let refused = node.post("/docs/_search?scroll=1m", &json!({}));
    let body = refused.expect_error(429, "search_phase_execution_exception");
    assert_eq!(
        body["error"]["root_cause"][0]["type"],
        "rejected_execution_exception"
    );
    let cleared = node.delete("/_search/scroll/_all").expect(200).json();
    assert_eq!(cleared["num_freed"], 3, "{cleared}");
    // the readers count as scrolls that ended: the expired one, the refused scroll's none
    let stats = node.get("/docs/_stats/search").expect(200).json();
    let search = &stats["_all"]["total"]["search"];
    assert_eq!(search["scroll_current"], 0, "{stats}");
    assert_eq!(search["scroll_total"], 6, "{stats}");
    node.put(
        "/_cluster/settings",
        &json!({"transient": {"search.max_open_scroll_context": null}}),
    )
    .expect(200);
}

#[test]
fn a_scroll_continues_on_any_node_and_loses_only_a_dead_nodes_shards() {
    let mut cluster = common::cluster::Cluster::start(3);
    cluster
        .node(0)
        .put(
            "/spread",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
        )
        .expect(200);
    let mut ndjson = String::new();
    for i in 0..60 {
        ndjson.push_str(&format!(
            "{{\"index\":{{\"_id\":\"{i}\"}}}}\n{{\"n\":{i}}}\n"
        ));
    }
    cluster
        .node(0)
        .bulk("/spread/_bulk?refresh=true", &ndjson)
        .expect(200);
    let first = cluster
        .node(0)
        .post(
            "/spread/_search?scroll=1m&size=10",
            &json!({"sort": ["_doc"]}),
        )
        .expect(200)
        .json();
    let mut seen: BTreeSet<String> = hit_ids(&first).into_iter().collect();
    let mut id = first["_scroll_id"].as_str().unwrap().to_string();
    // each page from another node
    for turn in 0..2 {
        let page = cluster
            .node(1 + turn % 2)
            .post("/_search/scroll", &json!({"scroll": "1m", "scroll_id": id}))
            .expect(200)
            .json();
        assert_eq!(page["_shards"]["failed"], 0, "{page}");
        seen.extend(hit_ids(&page));
        id = page["_scroll_id"].as_str().unwrap().to_string();
    }
    assert_eq!(seen.len(), 30);

    // a node that held some of the readers dies: its shards fail, the others go on
    let dead_node_id = cluster.state(2)["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["name"] == "node-2")
        .map(|(id, _)| id.clone())
        .unwrap();
    let lost = cluster
        .primaries(0, "spread")
        .iter()
        .filter(|p| p.as_deref() == Some(dead_node_id.as_str()))
        .count();
    // three shards over three nodes: each node holds one
    assert_eq!(lost, 1);
    cluster.nodes[2].kill_9();
    let failed = loop {
        let page = cluster
            .node(1)
            .post("/_search/scroll", &json!({"scroll": "1m", "scroll_id": id}))
            .expect(200)
            .json();
        let failed = page["_shards"]["failed"].as_u64().unwrap();
        if failed > 0 {
            let reason = &page["_shards"]["failures"][0]["reason"]["type"];
            assert!(
                reason == "search_context_missing_exception"
                    || reason == "node_disconnected_exception"
                    || reason == "connect_transport_exception",
                "{page}"
            );
        }
        let hits = hit_ids(&page);
        if hits.is_empty() {
            break failed;
        }
        seen.extend(hits);
        id = page["_scroll_id"].as_str().unwrap().to_string();
    };
    assert_eq!(failed as usize, lost);
    assert!(seen.len() < 60 && seen.len() >= 40, "{}", seen.len());
}

#[test]
fn the_slices_of_a_sliced_scroll_partition_the_documents() {
    let node = setup();
    // fewer slices than shards (whole shards), as many, and more (shards split by `_id`)
    for max in [2, 3, 7] {
        let mut seen = BTreeSet::new();
        let mut total = 0;
        for id in 0..max {
            let first = node
                .post(
                    "/docs/_search?scroll=1m&size=20",
                    &json!({"slice": {"id": id, "max": max}, "sort": ["_doc"]}),
                )
                .expect(200)
                .json();
            total += first["hits"]["total"]["value"].as_u64().unwrap();
            let hits = ids(&read_scroll(&node, first));
            assert!(!hits.is_empty(), "slice {id} of {max} is empty");
            for hit in hits {
                assert!(seen.insert(hit), "a document in two slices of {max}");
            }
        }
        assert_eq!(seen.len(), DOCS, "{max} slices");
        assert_eq!(total, DOCS as u64);
    }
    let outside = node.post("/docs/_search", &json!({"slice": {"id": 0, "max": 2}}));
    outside.expect_error(400, "search_exception");
    let bad = node.post(
        "/docs/_search?scroll=1m",
        &json!({"slice": {"id": 2, "max": 2}}),
    );
    bad.expect_error(400, "x_content_parse_exception");
}
