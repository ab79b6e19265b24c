//! A node's life: it starts, serves an index, stops gracefully and comes back with everything
//! it had (index, mapping, settings, documents).

mod common;

use common::{hit_ids, total_hits, Node};
use serde_json::{json, Value};

fn create_books(node: &Node) {
    let resp = node
        .put(
            "/books",
            &json!({
                "settings": {"number_of_shards": 3, "number_of_replicas": 0},
                "mappings": {
                    "dynamic": "strict",
                    "properties": {
                        "title": {"type": "text"},
                        "author": {"type": "keyword"},
                        "year": {"type": "integer"},
                        "price": {"type": "double"}
                    }
                }
            }),
        )
        .expect(200)
        .json();
    assert_eq!(resp["acknowledged"], true, "{resp}");
    assert_eq!(resp["index"], "books", "{resp}");
}

const BOOKS: &[(&str, &str, &str, i64, f64)] = &[
    ("1", "The Rust Programming Language", "klabnik", 2018, 39.95),
    ("2", "Programming Rust", "blandy", 2017, 49.99),
    ("3", "Rust in Action", "mcnamara", 2021, 44.0),
    ("4", "Zero To Production In Rust", "palmieri", 2022, 35.5),
    ("5", "The Go Programming Language", "donovan", 2015, 34.0),
    (
        "6",
        "Designing Data-Intensive Applications",
        "kleppmann",
        2017,
        42.0,
    ),
];

fn book(id: &str) -> Value {
    let (_, title, author, year, price) = *BOOKS.iter().find(|b| b.0 == id).unwrap();
    json!({"title": title, "author": author, "year": year, "price": price})
}

/// Mapping, settings, documents, search and counts as they must be before and after a restart.
fn check_books(node: &Node) {
    // mapping
    let mapping = node.get("/books/_mapping").expect(200).json();
    let mapping = &mapping["books"]["mappings"];
    assert_eq!(mapping["dynamic"], "strict", "{mapping}");
    assert_eq!(mapping["properties"]["title"]["type"], "text", "{mapping}");
    assert_eq!(mapping["properties"]["author"]["type"], "keyword");
    assert_eq!(mapping["properties"]["year"]["type"], "integer");
    assert_eq!(mapping["properties"]["price"]["type"], "double");

    // settings (OpenSearch renders them as strings)
    let settings = node.get("/books/_settings").expect(200).json();
    let index = &settings["books"]["settings"]["index"];
    assert_eq!(index["number_of_shards"], "3", "{settings}");
    assert_eq!(index["number_of_replicas"], "0", "{settings}");
    assert!(index["uuid"].as_str().is_some_and(|u| !u.is_empty()));

    // every document, through the realtime get
    for (id, ..) in BOOKS {
        let doc = node.get(&format!("/books/_doc/{id}")).expect(200).json();
        assert_eq!(doc["found"], true, "{doc}");
        assert_eq!(doc["_id"], *id);
        assert_eq!(doc["_source"], book(id), "{doc}");
    }
    assert_eq!(
        node.get("/books/_doc/404").expect(404).json()["found"],
        false
    );

    // search
    let resp = node.search(
        "books",
        &json!({"query": {"match": {"title": "rust"}}, "size": 10}),
    );
    let mut ids = hit_ids(&resp);
    ids.sort();
    assert_eq!(ids, ["1", "2", "3", "4"], "{resp}");
    assert_eq!(total_hits(&resp), 4);
    assert_eq!(resp["_shards"]["total"], 3, "{resp}");
    assert_eq!(resp["_shards"]["successful"], 3, "{resp}");

    let resp = node.search(
        "books",
        &json!({"query": {"term": {"author": "kleppmann"}}}),
    );
    assert_eq!(hit_ids(&resp), ["6"], "{resp}");

    let resp = node.search(
        "books",
        &json!({"query": {"range": {"year": {"gte": 2018}}}, "sort": [{"year": "desc"}]}),
    );
    assert_eq!(hit_ids(&resp), ["4", "3", "1"], "{resp}");

    // counts
    assert_eq!(node.count("books"), BOOKS.len() as u64);
    let count = node
        .post(
            "/books/_count",
            &json!({"query": {"match": {"title": "programming"}}}),
        )
        .expect(200)
        .json();
    assert_eq!(count["count"], 3, "{count}");

    // _cat/indices
    let cat = node.get("/_cat/indices?format=json").expect(200).json();
    let rows = cat.as_array().expect("an array of rows");
    let row = rows
        .iter()
        .find(|r| r["index"] == "books")
        .unwrap_or_else(|| panic!("books missing from _cat/indices: {cat}"));
    assert_eq!(row["docs.count"], BOOKS.len().to_string(), "{row}");
    assert_eq!(row["pri"], "3", "{row}");
    assert_eq!(row["health"], "green", "{row}");
}

#[test]
fn node_serves_an_index_and_keeps_it_across_a_graceful_restart() {
    let mut node = Node::start();

    let root = node.get("/").expect(200).json();
    assert_eq!(root["version"]["distribution"], "tessera", "{root}");
    assert_eq!(root["name"], "test-node", "{root}");
    assert!(root["version"]["number"].is_string(), "{root}");
    let cluster_uuid = root["cluster_uuid"].clone();

    let health = node.get("/_cluster/health").expect(200).json();
    assert!(
        health["status"] == "green" || health["status"] == "yellow",
        "{health}"
    );
    assert_eq!(health["number_of_nodes"], 1, "{health}");

    create_books(&node);
    assert_eq!(node.head("/books").status, 200);
    assert_eq!(node.head("/no-such-index").status, 404);

    for (id, ..) in BOOKS {
        let resp = node
            .put(&format!("/books/_doc/{id}"), &book(id))
            .expect(201)
            .json();
        assert_eq!(resp["result"], "created", "{resp}");
        assert_eq!(resp["_version"], 1, "{resp}");
    }
    // an overwrite is an update with a new version, not a new document
    let resp = node.put("/books/_doc/1", &book("1")).expect(200).json();
    assert_eq!(resp["result"], "updated", "{resp}");
    assert_eq!(resp["_version"], 2, "{resp}");
    // a document that is deleted must stay deleted after the restart
    node.put(
        "/books/_doc/gone",
        &json!({"title": "Deleted Rust Book", "author": "x", "year": 2000, "price": 1.0}),
    )
    .expect(201);
    node.delete("/books/_doc/gone").expect(200);

    node.refresh("books");
    // all primaries of a zero-replica index are assigned: green
    let health = node.get("/_cluster/health/books").expect(200).json();
    assert_eq!(health["status"], "green", "{health}");
    assert_eq!(health["active_primary_shards"], 3, "{health}");
    check_books(&node);

    node.restart();

    let root = node.get("/").expect(200).json();
    assert_eq!(root["cluster_uuid"], cluster_uuid, "node identity survives");
    check_books(&node);
    assert_eq!(
        node.get("/books/_doc/gone").expect(404).json()["found"],
        false
    );
    assert_eq!(
        node.get("/books/_doc/1").expect(200).json()["_version"],
        2,
        "versions survive a restart"
    );

    // the node is fully usable after the restart: writes, refresh, search
    node.put(
        "/books/_doc/7",
        &json!({"title": "Rust Atomics and Locks", "author": "bos", "year": 2023, "price": 40.0}),
    )
    .expect(201);
    node.refresh("books");
    assert_eq!(node.count("books"), BOOKS.len() as u64 + 1);

    // and a second restart after flush + force merge keeps it all too
    node.post_empty("/books/_flush").ok();
    node.post_empty("/books/_forcemerge?max_num_segments=1")
        .ok();
    node.restart();
    assert_eq!(node.count("books"), BOOKS.len() as u64 + 1);
    assert_eq!(
        node.get("/books/_doc/7").expect(200).json()["_source"]["author"],
        "bos"
    );

    // deleting the index removes it for good, also across restarts
    node.delete("/books").expect(200);
    node.get("/books")
        .expect_error(404, "index_not_found_exception");
    node.restart();
    node.get("/books")
        .expect_error(404, "index_not_found_exception");
    let cat = node.get("/_cat/indices?format=json").expect(200).json();
    assert!(
        !cat.as_array()
            .unwrap()
            .iter()
            .any(|r| r["index"] == "books"),
        "{cat}"
    );
}

#[test]
fn default_index_with_replicas_is_yellow_on_one_node() {
    let node = Node::start();
    node.put("/logs", &json!({})).expect(200);
    let health = node.get("/_cluster/health").expect(200).json();
    // one node cannot hold the replica: the primaries are active, the replicas unassigned
    assert_eq!(health["status"], "yellow", "{health}");
    assert!(
        health["unassigned_shards"].as_u64().unwrap() > 0,
        "{health}"
    );
    assert_eq!(
        health["active_primary_shards"], health["active_shards"],
        "{health}"
    );
    let nodes = node.get("/_nodes/stats").expect(200).json();
    assert!(
        nodes["nodes"].as_object().is_some_and(|n| n.len() == 1),
        "{nodes}"
    );
}

/// The benchmark workloads' index bodies load unchanged and come back identical after a
/// restart: big5's `"host": {"type": "object"}` once made the saved mapping unreadable (the
/// index was lost on restart), big5 has `_data_stream_timestamp` and Lucene tuning settings,
/// noaa has `double_range` fields.
#[test]
fn workload_index_bodies_survive_a_restart() {
    let mut node = Node::start();
    let bodies = [
        (
            "big5",
            include_str!("../../tessera-bench/workloads/big5/index.json"),
        ),
        (
            "noaa",
            include_str!("../../tessera-bench/workloads/noaa/index.json"),
        ),
        (
            "nyc_taxis",
            include_str!("../../tessera-bench/workloads/nyc_taxis/index.json"),
        ),
    ];
    for (name, body) in bodies {
        let body: Value = serde_json::from_str(body).unwrap();
        node.put(&format!("/{name}"), &body).expect(200);
    }
    node.put(
        "/big5/_doc/1",
        &json!({"@timestamp": "2023-01-01T10:00:00Z", "message": "kernel: monkey",
                "process": {"name": "kernel"}, "host": {"name": "ip-10-0-0-1"}}),
    )
    .expect(201);
    // big5 requires exactly one @timestamp per document
    node.put("/big5/_doc/2", &json!({"message": "no timestamp"}))
        .expect_error(400, "mapper_parsing_exception");
    node.put(
        "/noaa/_doc/1",
        &json!({"date": "2016-01-01T00:00:00", "TMAX": 20.5,
                "TRANGE": {"gte": 10.1, "lte": 20.5},
                "station": {"id": "US1", "location": {"lat": 40.0, "lon": -100.0}}}),
    )
    .expect(201);
    node.put(
        "/nyc_taxis/_doc/1",
        &json!({"total_amount": 6.3, "pickup_datetime": "2015-01-01 00:34:42"}),
    )
    .expect(201);
    for (name, _) in bodies {
        node.refresh(name);
    }
    let mappings = node.get("/_mapping").expect(200).json();
    assert_eq!(
        mappings["big5"]["mappings"]["properties"]["host"],
        json!({"properties": {"name": {"type": "keyword", "ignore_above": 1024}}}),
        "{mappings}"
    );
    assert_eq!(
        mappings["big5"]["mappings"]["_data_stream_timestamp"],
        json!({"enabled": true})
    );
    let settings = node.get("/_settings").expect(200).json();
    assert_eq!(
        settings["big5"]["settings"]["index"]["codec"],
        "best_compression"
    );

    node.restart();

    assert_eq!(node.get("/_mapping").expect(200).json(), mappings);
    assert_eq!(node.get("/_settings").expect(200).json(), settings);
    for (name, _) in bodies {
        assert_eq!(node.count(name), 1, "{name}");
    }
    // the range field is searchable after the restart
    let term = node.search("noaa", &json!({"query": {"term": {"TRANGE": 15}}}));
    assert_eq!(total_hits(&term), 1, "{term}");
    let within = node.search(
        "noaa",
        &json!({"query": {"range": {"TRANGE": {"gte": 0, "lte": 15, "relation": "within"}}}}),
    );
    assert_eq!(total_hits(&within), 0, "{within}");
}
