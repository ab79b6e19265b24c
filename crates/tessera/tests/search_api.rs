//! Search and document APIs as a client sees them: sorting, paging (from/size and
//! search_after), total hits tracking, refresh visibility, bulk item failures, upserts, mget,
//! msearch.

mod common;

use common::{hit_ids, total_hits, Node};
use serde_json::{json, Value};

const DOCS: usize = 30;

/// `n` has ties (values 0..7) so that the `k` tiebreaker matters; `cat` splits the docs in two.
fn doc(i: usize) -> Value {
    json!({
        "n": (i * 7) % 8,
        "k": format!("k{i:02}"),
        "cat": if i.is_multiple_of(3) { "fizz" } else { "plain" },
        "text": format!("document number {i}")
    })
}

/// A 3-shard index with [`DOCS`] documents, no automatic refresh.
fn setup() -> Node {
    let node = Node::start();
    node.put(
        "/items",
        &json!({
            "settings": {"number_of_shards": 3, "number_of_replicas": 0, "refresh_interval": "-1"},
            "mappings": {"properties": {
                "n": {"type": "integer"},
                "k": {"type": "keyword"},
                "cat": {"type": "keyword"},
                "text": {"type": "text"}
            }}
        }),
    )
    .expect(200);
    let mut ndjson = String::new();
    for i in 0..DOCS {
        ndjson.push_str(&format!("{{\"index\":{{\"_id\":\"{i}\"}}}}\n{}\n", doc(i)));
    }
    let resp = node.bulk("/items/_bulk", &ndjson).expect(200).json();
    assert_eq!(resp["errors"], false, "{resp}");
    node
}

/// Ids sorted by `n` ascending, then `k` descending: the order the engine must produce.
fn expected_order() -> Vec<String> {
    let mut docs: Vec<(u64, String, usize)> = (0..DOCS)
        .map(|i| {
            let d = doc(i);
            (
                d["n"].as_u64().unwrap(),
                d["k"].as_str().unwrap().to_string(),
                i,
            )
        })
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    docs.into_iter().map(|(_, _, i)| i.to_string()).collect()
}

fn sort_spec() -> Value {
    json!([{"n": "asc"}, {"k": {"order": "desc"}}])
}

#[test]
fn refresh_controls_visibility_but_get_is_realtime() {
    let node = setup();
    // not refreshed yet: search sees nothing, the realtime get sees everything
    let resp = node.search("items", &json!({"size": 0}));
    assert_eq!(total_hits(&resp), 0, "{resp}");
    let got = node.get("/items/_doc/7").expect(200).json();
    assert_eq!(got["_source"], doc(7), "{got}");
    let got = node.get("/items/_doc/7?realtime=false").json();
    assert_eq!(
        got["found"], false,
        "a non-realtime get reads the last refresh: {got}"
    );

    node.refresh("items");
    let resp = node.search("items", &json!({"size": 0}));
    assert_eq!(total_hits(&resp), DOCS as u64, "{resp}");
    assert_eq!(hit_ids(&resp).len(), 0, "size 0 returns no hits");
    assert_eq!(node.count("items"), DOCS as u64);

    // ?refresh=true makes a single write visible at once
    let resp = node
        .put(
            "/items/_doc/extra?refresh=true",
            &json!({"n": 100, "k": "zz"}),
        )
        .expect(201)
        .json();
    assert_eq!(resp["forced_refresh"], true, "{resp}");
    assert_eq!(node.count("items"), DOCS as u64 + 1);
    // ?refresh=wait_for returns once the write is visible
    node.put("/items/_doc/extra2?refresh=wait_for", &json!({"n": 101}))
        .expect(201);
    assert_eq!(node.count("items"), DOCS as u64 + 2);
}

#[test]
fn sort_from_size_and_search_after() {
    let node = setup();
    node.refresh("items");
    let expected = expected_order();

    // one page with everything, in the right order, with sort values
    let resp = node.search("items", &json!({"size": 100, "sort": sort_spec()}));
    assert_eq!(hit_ids(&resp), expected, "{resp}");
    let first = &resp["hits"]["hits"][0];
    assert_eq!(
        first["sort"],
        json!([
            doc(first["_id"].as_str().unwrap().parse().unwrap())["n"],
            first["_source"]["k"]
        ]),
        "{first}"
    );
    assert!(
        first["_score"].is_null(),
        "a field sort does not score: {first}"
    );

    // descending is the exact reverse (no ties on the pair)
    let resp = node.search(
        "items",
        &json!({"size": 100, "sort": [{"n": "desc"}, {"k": "asc"}]}),
    );
    let mut reversed = expected.clone();
    reversed.reverse();
    assert_eq!(hit_ids(&resp), reversed, "{resp}");

    // from/size pages concatenate to the full order (pages cross shard boundaries)
    let mut paged = Vec::new();
    for from in (0..DOCS + 7).step_by(7) {
        let resp = node.search(
            "items",
            &json!({"from": from, "size": 7, "sort": sort_spec()}),
        );
        assert_eq!(total_hits(&resp), DOCS as u64, "{resp}");
        paged.extend(hit_ids(&resp));
    }
    assert_eq!(paged, expected);
    // from beyond the end is an empty page, not an error
    let resp = node.search(
        "items",
        &json!({"from": 500, "size": 10, "sort": sort_spec()}),
    );
    assert!(hit_ids(&resp).is_empty(), "{resp}");

    // search_after walks the same order without duplicates or gaps
    let mut walked = Vec::new();
    let mut after: Option<Value> = None;
    loop {
        let mut body = json!({"size": 4, "sort": sort_spec()});
        if let Some(after) = &after {
            body["search_after"] = after.clone();
        }
        let resp = node.search("items", &body);
        let hits = resp["hits"]["hits"].as_array().unwrap().clone();
        if hits.is_empty() {
            break;
        }
        walked.extend(hit_ids(&resp));
        after = Some(hits.last().unwrap()["sort"].clone());
        assert!(
            walked.len() <= DOCS,
            "search_after does not terminate: {walked:?}"
        );
    }
    assert_eq!(walked, expected);

    // the same with a query: only the matching docs, still in order
    let resp = node.search(
        "items",
        &json!({"size": 100, "sort": sort_spec(), "query": {"term": {"cat": "fizz"}}}),
    );
    let fizz: Vec<String> = expected
        .iter()
        .filter(|id| id.parse::<usize>().unwrap().is_multiple_of(3))
        .cloned()
        .collect();
    assert_eq!(hit_ids(&resp), fizz, "{resp}");

    // the size default is 10; sort on the URL works too
    let resp = node
        .post_empty("/items/_search?sort=n:asc,k:desc")
        .expect(200)
        .json();
    assert_eq!(hit_ids(&resp), expected[..10], "{resp}");
    let resp = node
        .post_empty("/items/_search?size=3&from=2&sort=n:asc,k:desc")
        .expect(200)
        .json();
    assert_eq!(hit_ids(&resp), expected[2..5], "{resp}");
}

/// A `post_filter` without aggregations is part of the query: a `match_all` sorted by a number
/// (which may visit only the documents whose values can make the top) must still apply it.
#[test]
fn a_post_filter_limits_a_match_all_sorted_by_a_number() {
    let node = setup();
    node.refresh("items");
    for order in ["asc", "desc"] {
        let resp = node.search(
            "items",
            &json!({"size": 3, "sort": [{"n": order}], "post_filter": {"term": {"cat": "fizz"}}}),
        );
        assert_eq!(resp["hits"]["total"]["value"], (DOCS / 3) as u64, "{resp}");
        for hit in resp["hits"]["hits"].as_array().unwrap() {
            assert_eq!(hit["_source"]["cat"], "fizz", "{resp}");
        }
    }
}

#[test]
fn track_total_hits() {
    let node = setup();
    node.refresh("items");

    // default: exact below 10,000
    let resp = node.search("items", &json!({"size": 1}));
    assert_eq!(
        resp["hits"]["total"],
        json!({"value": DOCS, "relation": "eq"}),
        "{resp}"
    );
    let resp = node.search("items", &json!({"size": 1, "track_total_hits": true}));
    assert_eq!(
        resp["hits"]["total"],
        json!({"value": DOCS, "relation": "eq"}),
        "{resp}"
    );
    // a threshold under the match count: a lower bound
    let resp = node.search("items", &json!({"size": 1, "track_total_hits": 5}));
    assert_eq!(
        resp["hits"]["total"],
        json!({"value": 5, "relation": "gte"}),
        "{resp}"
    );
    // a threshold above the match count: exact
    let resp = node.search("items", &json!({"size": 1, "track_total_hits": 1000}));
    assert_eq!(
        resp["hits"]["total"],
        json!({"value": DOCS, "relation": "eq"}),
        "{resp}"
    );
    // off: no total at all, hits still returned
    let resp = node.search("items", &json!({"size": 2, "track_total_hits": false}));
    assert!(resp["hits"].get("total").is_none(), "{resp}");
    assert_eq!(hit_ids(&resp).len(), 2, "{resp}");
    // as an integer when asked to
    let resp = node
        .post(
            "/items/_search?rest_total_hits_as_int=true",
            &json!({"size": 0}),
        )
        .expect(200)
        .json();
    assert_eq!(resp["hits"]["total"], DOCS, "{resp}");
    // on a filtered query, exact count of the matches
    let resp = node.search(
        "items",
        &json!({"size": 0, "query": {"term": {"cat": "fizz"}}}),
    );
    assert_eq!(total_hits(&resp), DOCS.div_ceil(3) as u64, "{resp}");
    let count = node
        .post(
            "/items/_count",
            &json!({"query": {"term": {"cat": "fizz"}}}),
        )
        .expect(200)
        .json();
    assert_eq!(count["count"], DOCS.div_ceil(3), "{count}");
}

#[test]
fn a_bad_bulk_item_fails_alone() {
    let node = setup();
    let ndjson = [
        r#"{"index":{"_index":"items","_id":"b1"}}"#,
        r#"{"n":1,"k":"b1"}"#,
        r#"{"index":{"_index":"items","_id":"b2"}}"#,
        r#"{"n":"not a number"}"#,
        r#"{"create":{"_index":"items","_id":"b3"}}"#,
        r#"{"n":3}"#,
        r#"{"create":{"_index":"items","_id":"0"}}"#,
        r#"{"n":3}"#,
        r#"{"delete":{"_index":"items","_id":"1"}}"#,
        r#"{"update":{"_index":"items","_id":"2"}}"#,
        r#"{"doc":{"k":"updated"}}"#,
        r#"{"update":{"_index":"items","_id":"nope"}}"#,
        r#"{"doc":{"k":"x"}}"#,
        r#"{"index":{"_index":"items","_id":"b4"}}"#,
        r#"{"n":4}"#,
        "",
    ]
    .join("\n");
    let resp = node.bulk("/_bulk", &ndjson).expect(200).json();
    assert_eq!(resp["errors"], true, "{resp}");
    let items = resp["items"].as_array().unwrap();
    assert_eq!(items.len(), 8, "{resp}");
    let status = |i: usize, action: &str| items[i][action]["status"].as_u64().unwrap();

    assert_eq!(status(0, "index"), 201, "{resp}");
    assert_eq!(status(1, "index"), 400, "{resp}");
    assert_eq!(
        items[1]["index"]["error"]["type"],
        "mapper_parsing_exception"
    );
    assert!(items[1]["index"]["error"]["reason"].is_string());
    assert_eq!(status(2, "create"), 201, "{resp}");
    assert_eq!(status(3, "create"), 409, "{resp}");
    assert_eq!(
        items[3]["create"]["error"]["type"],
        "version_conflict_engine_exception"
    );
    assert_eq!(status(4, "delete"), 200, "{resp}");
    assert_eq!(items[4]["delete"]["result"], "deleted");
    assert_eq!(status(5, "update"), 200, "{resp}");
    assert_eq!(status(6, "update"), 404, "{resp}");
    assert_eq!(
        items[6]["update"]["error"]["type"],
        "document_missing_exception"
    );
    assert_eq!(status(7, "index"), 201, "{resp}");

    // the effects are exactly those of the successful items
    for id in ["b1", "b3", "b4"] {
        node.get(&format!("/items/_doc/{id}")).expect(200);
    }
    for id in ["b2", "1", "nope"] {
        node.get(&format!("/items/_doc/{id}")).expect(404);
    }
    assert_eq!(
        node.get("/items/_doc/0").expect(200).json()["_source"],
        doc(0)
    );
    let two = node.get("/items/_doc/2").expect(200).json();
    assert_eq!(two["_source"]["k"], "updated", "{two}");
    assert_eq!(
        two["_source"]["n"],
        doc(2)["n"],
        "partial update keeps other fields"
    );
    node.refresh("items");
    assert_eq!(node.count("items"), DOCS as u64 + 3 - 1);
}

#[test]
fn update_with_doc_as_upsert() {
    let node = setup();

    // upsert creates a missing document from the partial doc
    let resp = node
        .post(
            "/items/_update/u1",
            &json!({"doc": {"n": 5, "k": "u1"}, "doc_as_upsert": true}),
        )
        .expect(201)
        .json();
    assert_eq!(resp["result"], "created", "{resp}");
    assert_eq!(resp["_version"], 1, "{resp}");
    // then merges into it
    let resp = node
        .post(
            "/items/_update/u1",
            &json!({"doc": {"cat": "new"}, "doc_as_upsert": true}),
        )
        .expect(200)
        .json();
    assert_eq!(resp["result"], "updated", "{resp}");
    assert_eq!(resp["_version"], 2, "{resp}");
    let got = node.get("/items/_doc/u1").expect(200).json();
    assert_eq!(
        got["_source"],
        json!({"n": 5, "k": "u1", "cat": "new"}),
        "{got}"
    );
    // an update that changes nothing is a noop, and the version stays
    let resp = node
        .post(
            "/items/_update/u1",
            &json!({"doc": {"n": 5}, "doc_as_upsert": true}),
        )
        .expect(200)
        .json();
    assert_eq!(resp["result"], "noop", "{resp}");
    assert_eq!(node.get("/items/_doc/u1").json()["_version"], 2);
    // without doc_as_upsert, a missing doc is a 404, and nothing is created
    node.post("/items/_update/u2", &json!({"doc": {"n": 1}}))
        .expect_error(404, "document_missing_exception");
    node.get("/items/_doc/u2").expect(404);
    // an explicit upsert document is used when the doc is missing
    let resp = node
        .post(
            "/items/_update/u3",
            &json!({"doc": {"n": 1}, "upsert": {"n": 0, "k": "from-upsert"}}),
        )
        .expect(201)
        .json();
    assert_eq!(resp["result"], "created", "{resp}");
    assert_eq!(
        node.get("/items/_doc/u3").json()["_source"],
        json!({"n": 0, "k": "from-upsert"})
    );
    // the upserted docs are searchable after a refresh
    node.refresh("items");
    let resp = node.search("items", &json!({"query": {"term": {"cat": "new"}}}));
    assert_eq!(hit_ids(&resp), ["u1"], "{resp}");
}

#[test]
fn mget() {
    let node = setup();
    node.put("/other", &json!({})).expect(200);
    node.put("/other/_doc/o1", &json!({"x": 1})).expect(201);

    let resp = node
        .post(
            "/_mget",
            &json!({"docs": [
                {"_index": "items", "_id": "3"},
                {"_index": "other", "_id": "o1"},
                {"_index": "items", "_id": "missing"},
                {"_index": "no-such-index", "_id": "1"}
            ]}),
        )
        .expect(200)
        .json();
    let docs = resp["docs"].as_array().unwrap();
    assert_eq!(docs.len(), 4, "{resp}");
    assert_eq!(docs[0]["found"], true);
    assert_eq!(docs[0]["_source"], doc(3), "mget is realtime: {resp}");
    assert_eq!(docs[1]["_index"], "other");
    assert_eq!(docs[1]["_source"], json!({"x": 1}));
    assert_eq!(docs[2]["found"], false, "{resp}");
    assert_eq!(docs[2]["_id"], "missing");
    assert_eq!(
        docs[3]["error"]["type"], "index_not_found_exception",
        "{resp}"
    );

    // the index in the path and the `ids` shorthand keep the requested order
    let resp = node
        .post("/items/_mget", &json!({"ids": ["29", "0", "nope", "15"]}))
        .expect(200)
        .json();
    let docs = resp["docs"].as_array().unwrap();
    let ids: Vec<&str> = docs.iter().map(|d| d["_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["29", "0", "nope", "15"], "{resp}");
    let found: Vec<bool> = docs.iter().map(|d| d["found"].as_bool().unwrap()).collect();
    assert_eq!(found, [true, true, false, true], "{resp}");
    assert_eq!(docs[3]["_source"], doc(15));

    // source filtering on mget
    let resp = node
        .post("/items/_mget?_source=k", &json!({"ids": ["4"]}))
        .expect(200)
        .json();
    assert_eq!(resp["docs"][0]["_source"], json!({"k": "k04"}), "{resp}");
}

#[test]
fn mget_without_documents_is_a_validation_error() {
    let node = setup();
    for body in [json!({"docs": []}), json!({"ids": []}), json!({})] {
        let error = node
            .post("/items/_mget", &body)
            .expect_error(400, "action_request_validation_exception");
        assert_eq!(
            error["error"]["reason"], "Validation Failed: 1: no documents to get;",
            "{body}"
        );
    }
    // `docs` and `ids` add up
    let resp = node
        .post(
            "/items/_mget",
            &json!({"docs": [{"_id": "1"}], "ids": ["2"]}),
        )
        .expect(200)
        .json();
    let ids: Vec<&str> = resp["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2"], "{resp}");
}

/// Each search of a multi search answers as the same `_search` would, in request order; one
/// that fails (a missing index, a bad preference) is an error item, the others unaffected,
/// whatever `max_concurrent_searches` allows at once.
#[test]
fn msearch_answers_each_search_in_order_and_fails_items_alone() {
    let node = setup();
    node.refresh("items");
    let searches = [
        json!({"query": {"term": {"cat": "fizz"}}, "sort": sort_spec(), "size": 4}),
        json!({"size": 0, "aggs": {"cats": {"terms": {"field": "cat"}}, "avg_n": {"avg": {"field": "n"}}}}),
        json!({"query": {"match": {"text": "number"}}, "from": 5, "size": 3, "sort": sort_spec()}),
    ];
    let mut ndjson = String::new();
    for (i, search) in searches.iter().enumerate() {
        ndjson.push_str("{\"index\": \"items\"}\n");
        ndjson.push_str(&format!("{search}\n"));
        if i == 0 {
            ndjson.push_str("{\"index\": \"no-such-index\"}\n{}\n");
            ndjson.push_str("{\"index\": \"items\", \"preference\": \"_bogus\"}\n{}\n");
        }
    }
    for max in ["1", "2", "10"] {
        let resp = node
            .send_raw(
                "POST",
                &format!("/_msearch?max_concurrent_searches={max}&typed_keys=true"),
                ndjson.as_bytes(),
                "application/x-ndjson",
            )
            .expect(200)
            .json();
        let items = resp["responses"].as_array().unwrap();
        assert_eq!(items.len(), 5, "{resp}");
        assert!(resp["took"].is_u64(), "{resp}");
        assert_eq!(items[1]["status"], 404, "{resp}");
        assert_eq!(items[1]["error"]["type"], "index_not_found_exception");
        assert_eq!(items[2]["status"], 400, "{resp}");
        assert_eq!(items[2]["error"]["reason"], "no Preference for [_bogus]");
        for (item, search) in [&items[0], &items[3], &items[4]].into_iter().zip(&searches) {
            let mut alone = node
                .post("/items/_search?typed_keys=true", search)
                .expect(200)
                .json();
            let mut item = item.clone();
            assert_eq!(item["status"], 200, "{item}");
            for answer in [&mut alone, &mut item] {
                let answer = answer.as_object_mut().unwrap();
                answer.remove("took");
                answer.remove("status");
            }
            assert_eq!(item, alone, "max_concurrent_searches={max}");
        }
        assert!(
            items[3]["aggregations"]["sterms#cats"]["buckets"].is_array(),
            "typed keys: {resp}"
        );
        assert!(
            items[3]["aggregations"]["avg#avg_n"]["value"].is_number(),
            "{resp}"
        );
    }
    // what is read before anything runs fails the whole request
    node.send_raw(
        "POST",
        "/_msearch",
        b"{\"index\": \"items\"}\n{}\n{\"bogus\": 1}\n{}\n",
        "application/x-ndjson",
    )
    .expect_error(400, "illegal_argument_exception");
    node.send_raw("POST", "/_msearch", b"{}\n{}", "application/x-ndjson")
        .expect_error(400, "illegal_argument_exception");
    node.send_raw("POST", "/_msearch", b"", "application/x-ndjson")
        .expect_error(400, "parse_exception");
}
