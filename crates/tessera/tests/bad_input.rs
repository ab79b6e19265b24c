//! Bad input gets a 4xx with an OpenSearch error body (`error.type`, `error.reason`, `status`):
//! never a 5xx, a dropped connection, a hang or a crash.

mod common;

use std::time::Duration;

use common::{raw_http, raw_status, Node, Resp};
use serde_json::json;

/// A node with a small `http.max_content_length`, so that 413 is cheap to provoke.
fn small_limit_node() -> Node {
    Node::start_with_config_text("# test config\nhttp.max_content_length: 1kb\n")
}

fn create_strict_index(node: &Node) {
    node.put(
        "/strict",
        &json!({
            "settings": {"number_of_shards": 2, "number_of_replicas": 0},
            "mappings": {"dynamic": "strict", "properties": {
                "title": {"type": "text"},
                "n": {"type": "integer"},
                "tag": {"type": "keyword"}
            }}
        }),
    )
    .expect(200);
    node.put(
        "/strict/_doc/1",
        &json!({"title": "hello", "n": 1, "tag": "a"}),
    )
    .expect(201);
}

/// Asserts a 4xx OpenSearch error (any type) and returns it.
#[track_caller]
fn client_error(resp: &Resp, status: u16) -> serde_json::Value {
    assert_eq!(resp.status, status, "body: {}", resp.body);
    let body = resp.json();
    common::assert_error_body(&body, status);
    assert!(
        body["error"]["type"]
            .as_str()
            .unwrap()
            .ends_with("_exception"),
        "{body}"
    );
    body
}

/// The node is alive and well: the process runs, `GET /` answers, and it never panicked.
#[track_caller]
fn assert_healthy(node: &mut Node) {
    assert!(node.is_running(), "the node process died");
    let root = node.get("/").expect(200).json();
    assert_eq!(root["version"]["distribution"], "tessera");
    let log = node.log();
    assert!(!log.contains("panicked"), "the node panicked:\n{log}");
}

#[test]
fn malformed_json_is_a_400() {
    let mut node = Node::start();
    create_strict_index(&node);

    for body in [
        &b"{\"query\":{"[..],
        b"{\"query\": {\"match_all\": {}}",
        b"not json at all",
        b"{\"query\":{\"match_all\":{}}}}",
        b"\xff\xfe\x00garbage",
    ] {
        let resp = node.send_raw("POST", "/strict/_search", body, "application/json");
        client_error(&resp, 400);
    }
    // _count parses the same way
    let resp = node.send_raw(
        "POST",
        "/strict/_count",
        b"{\"query\":{",
        "application/json",
    );
    client_error(&resp, 400);

    // a document that is not JSON, or not an object
    for body in [
        &b"{\"title\": \"x\","[..],
        b"[1, 2]",
        b"\"a string\"",
        b"{\"n\" 1}",
    ] {
        let resp = node.send_raw("PUT", "/strict/_doc/2", body, "application/json");
        let error = client_error(&resp, 400);
        assert_eq!(
            error["error"]["type"], "mapper_parsing_exception",
            "{error}"
        );
    }
    node.get("/strict/_doc/2").expect(404);

    // a body that is required but missing
    client_error(&node.post_empty("/strict/_doc"), 400);

    // an index creation body that is not an object
    let resp = node.send_raw("PUT", "/other", b"[1]", "application/json");
    client_error(&resp, 400);
    node.get("/other")
        .expect_error(404, "index_not_found_exception");

    // a body with a Content-Type that is not JSON
    let resp = node.send_raw("POST", "/strict/_search", b"{}", "text/plain");
    assert_eq!(resp.status, 406, "{}", resp.body);
    assert!(resp.json()["error"].is_string(), "{}", resp.body);

    assert_healthy(&mut node);
}

#[test]
fn invalid_queries_and_parameters_are_400s() {
    let mut node = Node::start();
    create_strict_index(&node);

    // unknown query type
    let error = node
        .post("/strict/_search", &json!({"query": {"no_such_query": {}}}))
        .expect_error(400, "parsing_exception");
    assert!(
        error["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("no_such_query"),
        "{error}"
    );
    // unknown key at the top of the body
    node.post("/strict/_search", &json!({"no_such_key": 1}))
        .expect_error(400, "parsing_exception");
    // malformed query shapes
    node.post("/strict/_search", &json!({"query": {"match": {}}}))
        .expect_error(400, "parsing_exception");
    node.post("/strict/_search", &json!({"query": []}))
        .expect_error(400, "parsing_exception");

    // unknown URL parameter
    let error = node
        .post("/strict/_search?no_such_param=1", &json!({}))
        .expect_error(400, "illegal_argument_exception");
    assert!(
        error["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("unrecognized parameter: [no_such_param]"),
        "{error}"
    );
    node.get("/strict/_doc/1?bogus=true")
        .expect_error(400, "illegal_argument_exception");
    node.put("/strict/_doc/1?bogus=true", &json!({"n": 2}))
        .expect_error(400, "illegal_argument_exception");
    assert_eq!(
        node.get("/strict/_doc/1").expect(200).json()["_source"]["n"],
        1,
        "a rejected request must not write"
    );

    // wrong value types
    client_error(&node.post("/strict/_search", &json!({"size": "abc"})), 400);
    client_error(&node.post("/strict/_search?size=abc", &json!({})), 400);
    client_error(&node.post("/strict/_search", &json!({"size": -1})), 400);
    client_error(&node.post("/strict/_search", &json!({"from": -1})), 400);
    client_error(
        &node.post("/strict/_search", &json!({"from": 9990, "size": 100})),
        400,
    );
    client_error(
        &node.post("/strict/_search", &json!({"track_total_hits": "maybe"})),
        400,
    );
    client_error(
        &node.post("/strict/_search", &json!({"sort": [{"n": "sideways"}]})),
        400,
    );
    // queries that only fail against the mapping
    client_error(
        &node.post("/strict/_search", &json!({"query": {"term": {"n": "abc"}}})),
        400,
    );
    client_error(
        &node.post("/strict/_search", &json!({"sort": [{"title": "asc"}]})),
        400,
    );
    client_error(
        &node.post(
            "/strict/_search",
            &json!({"query": {"regexp": {"tag": "[unclosed"}}}),
        ),
        400,
    );
    client_error(&node.post_empty("/strict/_search?q=title:("), 400);
    client_error(
        &node.post(
            "/strict/_search",
            &json!({"sort": [{"n": "asc"}], "search_after": ["x"]}),
        ),
        400,
    );
    // a wrong value in a write parameter
    client_error(
        &node.put("/strict/_doc/3?refresh=sometimes", &json!({"n": 3})),
        400,
    );

    assert_healthy(&mut node);
}

#[test]
fn mapping_violations_are_400s() {
    let mut node = Node::start();
    create_strict_index(&node);

    let error = node
        .put("/strict/_doc/2", &json!({"title": "x", "unmapped": 1}))
        .expect_error(400, "strict_dynamic_mapping_exception");
    assert!(
        error["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("unmapped"),
        "{error}"
    );
    node.put("/strict/_doc/2", &json!({"n": "not a number"}))
        .expect_error(400, "mapper_parsing_exception");
    node.put("/strict/_doc/2", &json!({"tag": {"inner": 1}}))
        .expect_error(400, "mapper_parsing_exception");
    node.put("/strict/_doc/2", &json!({"_id": "x"}))
        .expect_error(400, "mapper_parsing_exception");
    node.put("/strict/_doc/2", &json!({"title": "x"}))
        .expect(201);
    // none of the rejected documents was indexed, and the strict mapping did not grow
    node.refresh("strict");
    assert_eq!(node.count("strict"), 2);
    let mapping = node.get("/strict/_mapping").expect(200).json();
    let properties = mapping["strict"]["mappings"]["properties"]
        .as_object()
        .unwrap();
    assert_eq!(properties.len(), 3, "{mapping}");

    // mapping updates that cannot be applied
    node.put(
        "/strict/_mapping",
        &json!({"properties": {"n": {"type": "keyword"}}}),
    )
    .expect_error(400, "illegal_argument_exception");
    node.put(
        "/strict/_mapping",
        &json!({"properties": {"z": {"type": "no_such_type"}}}),
    )
    .expect_error(400, "mapper_parsing_exception");
    node.put(
        "/bad",
        &json!({"mappings": {"properties": {"a": {"type": "no_such_type"}}}}),
    )
    .expect_error(400, "mapper_parsing_exception");
    node.get("/bad")
        .expect_error(404, "index_not_found_exception");

    // invalid settings and names
    node.put("/zero", &json!({"settings": {"number_of_shards": 0}}))
        .expect_error(400, "illegal_argument_exception");
    node.put("/Upper", &json!({}))
        .expect_error(400, "invalid_index_name_exception");
    node.put("/_underscore", &json!({}))
        .expect_error(400, "invalid_index_name_exception");
    node.put(
        "/strict/_settings",
        &json!({"index": {"number_of_shards": 5}}),
    )
    .expect_error(400, "illegal_argument_exception");
    node.put(
        "/strict/_settings",
        &json!({"index": {"no_such_setting": 5}}),
    )
    .expect_error(400, "illegal_argument_exception");

    // a document id over 512 bytes
    let long_id = "a".repeat(600);
    node.put(&format!("/strict/_doc/{long_id}"), &json!({"n": 1}))
        .expect_error(400, "action_request_validation_exception");

    assert_healthy(&mut node);
}

#[test]
fn missing_and_duplicate_indices() {
    let mut node = Node::start();

    for resp in [
        node.get("/missing"),
        node.get("/missing/_doc/1"),
        node.post("/missing/_search", &json!({})),
        node.get("/missing/_count"),
        node.get("/missing/_mapping"),
        node.get("/missing/_settings"),
        node.delete("/missing"),
        node.post_empty("/missing/_refresh"),
    ] {
        let error = resp.expect_error(404, "index_not_found_exception");
        assert_eq!(error["error"]["index"], "missing", "{error}");
    }
    // a failed read must not create the index
    node.get("/missing").expect(404);
    // an update of a missing document is a 404 too (as in OpenSearch, it may create the index)
    node.post("/missing/_update/1", &json!({"doc": {"a": 1}}))
        .expect_error(404, "document_missing_exception");

    node.put("/dup", &json!({"settings": {"number_of_shards": 1}}))
        .expect(200);
    let error = node
        .put("/dup", &json!({"settings": {"number_of_shards": 2}}))
        .expect_error(400, "resource_already_exists_exception");
    assert_eq!(error["error"]["index"], "dup", "{error}");
    // the first definition wins
    let settings = node.get("/dup/_settings").expect(200).json();
    assert_eq!(
        settings["dup"]["settings"]["index"]["number_of_shards"], "1",
        "{settings}"
    );

    // many clients racing to create the same index: exactly one wins, the rest get a clean 400
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let client = node.client();
                scope.spawn(move || {
                    let resp = client.put("/race", &json!({"settings": {"number_of_shards": 2}}));
                    if resp.status != 200 {
                        resp.expect_error(400, "resource_already_exists_exception");
                    }
                    resp.status
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );

    // unknown endpoints and methods
    let resp = node.get("/_no_such_endpoint/x/y");
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.json()["error"]
        .as_str()
        .unwrap()
        .contains("no handler found"));
    let resp = node.delete("/_cluster/health");
    assert_eq!(resp.status, 405, "{}", resp.body);

    assert_healthy(&mut node);
}

#[test]
fn bodies_over_the_content_length_limit_are_413() {
    let mut node = small_limit_node();
    let info = node.get("/_nodes").expect(200).json();
    let (_, info) = info["nodes"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(
        info["http"]["max_content_length_in_bytes"], 1024,
        "the config file set the limit: {info}"
    );
    node.put("/small", &json!({})).expect(200);

    let big_doc = json!({"text": "x".repeat(2000)});
    let resp = node.put("/small/_doc/1", &big_doc);
    assert_eq!(resp.status, 413, "{}", resp.body);
    let mut ndjson = String::new();
    for i in 0..40 {
        ndjson.push_str(&format!(
            "{{\"index\":{{\"_index\":\"small\",\"_id\":\"{i}\"}}}}\n{{\"n\":{i}}}\n"
        ));
    }
    assert!(ndjson.len() > 1024);
    assert_eq!(node.bulk("/_bulk", &ndjson).status, 413);
    let resp = node.post(
        "/small/_search",
        &json!({"query": {"terms": {"id": vec!["abcdefgh"; 200]}}}),
    );
    assert_eq!(resp.status, 413, "{}", resp.body);

    // a chunked body (no Content-Length) over the limit is refused too
    let chunk = format!("{{\"text\":\"{}\"}}", "y".repeat(3000));
    let request = format!(
        "PUT /small/_doc/2 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    let answer = raw_http(node.port(), request.as_bytes(), Duration::from_secs(10));
    assert_eq!(raw_status(&answer), Some(413), "{answer}");

    // nothing over the limit was written; a body under the limit still works
    node.refresh("small");
    assert_eq!(node.count("small"), 0);
    node.put("/small/_doc/3", &json!({"text": "short"}))
        .expect(201);
    node.get("/small/_doc/1").expect(404);
    node.get("/small/_doc/2").expect(404);

    assert_healthy(&mut node);
}

#[test]
fn broken_http_does_not_hurt_the_node() {
    let mut node = Node::start();
    node.put("/idx", &json!({})).expect(200);
    let port = node.port();
    let timeout = Duration::from_secs(10);

    // not HTTP at all
    let answer = raw_http(port, b"GARBAGE\r\n\r\n", timeout);
    assert_eq!(raw_status(&answer), Some(400), "{answer}");
    // an unparsable Content-Length
    let answer = raw_http(
        port,
        b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n",
        timeout,
    );
    assert_eq!(raw_status(&answer), Some(400), "{answer}");
    // a body shorter than announced, then the client goes away
    {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .write_all(b"PUT /idx/_doc/1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
            .unwrap();
    }
    // a valid chunked request is served
    let body = r#"{"a":"chunked"}"#;
    let request = format!(
        "PUT /idx/_doc/2 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let answer = raw_http(port, request.as_bytes(), timeout);
    assert_eq!(raw_status(&answer), Some(201), "{answer}");

    node.get("/idx/_doc/1").expect(404);
    assert_eq!(
        node.get("/idx/_doc/2").expect(200).json()["_source"]["a"],
        "chunked"
    );
    assert_healthy(&mut node);
}

/// The body of a raw HTTP answer as JSON.
fn raw_json(answer: &str) -> serde_json::Value {
    let (_, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("incomplete answer: {answer}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

#[test]
fn http_level_rejections_have_opensearch_bodies() {
    let mut node = Node::start();
    node.put("/idx", &json!({"settings": {"number_of_shards": 2}}))
        .expect(200);
    node.put("/idx/_doc/1?refresh=true", &json!({"price": 5}))
        .expect(201);
    let port = node.port();
    let timeout = Duration::from_secs(10);

    // bytes hyper refuses in a URI but OpenSearch reads as they are
    let answer = raw_http(
        port,
        b"GET /idx/_search?q=price:>1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        timeout,
    );
    assert_eq!(raw_status(&answer), Some(200), "{answer}");
    assert_eq!(raw_json(&answer)["hits"]["total"]["value"], 1, "{answer}");

    for (request, kind, reason) in [
        (
            b"GARBAGE\r\n\r\n".to_vec(),
            "illegal_argument_exception",
            "text is empty (possibly HTTP/0.9)".to_string(),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n".to_vec(),
            "illegal_argument_exception",
            "No colon found".to_string(),
        ),
        (
            b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n".to_vec(),
            "illegal_argument_exception",
            "Content-Length value is not a number: abc".to_string(),
        ),
        (
            format!("GET /idx/_search?q={} HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(70_000))
                .into_bytes(),
            "too_long_http_line_exception",
            "An HTTP line is larger than 4096 bytes.".to_string(),
        ),
        (
            format!("GET / HTTP/1.1\r\nHost: localhost\r\nX-A: {}\r\n\r\n", "a".repeat(20_000))
                .into_bytes(),
            "too_long_http_header_exception",
            "HTTP header is larger than 8192 bytes.".to_string(),
        ),
        (
            b"GET /idx/_search?q=abc% HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            "bad_parameter_exception",
            "java.lang.IllegalArgumentException: unterminated escape sequence at end of string: abc%"
                .to_string(),
        ),
    ] {
        let answer = raw_http(port, &request, timeout);
        assert_eq!(raw_status(&answer), Some(400), "{reason}: {answer}");
        let body = raw_json(&answer);
        common::assert_error_body(&body, 400);
        assert_eq!(body["error"]["type"], kind, "{body}");
        assert_eq!(body["error"]["reason"], reason.as_str(), "{body}");
    }
    assert_healthy(&mut node);
}

#[test]
fn empty_and_malformed_url_parameters_are_not_500s() {
    let mut node = Node::start();
    node.put("/idx", &json!({"settings": {"number_of_shards": 2}}))
        .expect(200);
    // an empty routing is no routing for documents, as in OpenSearch
    node.put("/idx/_doc/1?routing=&refresh=true", &json!({"a": 1}))
        .expect(201);
    let doc = node.get("/idx/_doc/1").expect(200).json();
    assert!(doc.get("_routing").is_none(), "{doc}");
    node.get("/idx/_doc/1?routing=").expect(200);
    // and routes a search to no shard at all
    for path in ["/idx/_search?routing=", "/idx/_search?routing=,,"] {
        let body = node.get(path).expect(200).json();
        assert_eq!(body["_shards"]["total"], 0, "{body}");
        assert_eq!(body["hits"]["total"]["value"], 0, "{body}");
    }
    let body = node.get("/idx/_count?routing=").expect(200).json();
    assert_eq!(body["count"], 0, "{body}");
    for (query, reason) in [
        ("timeout=", "failed to parse setting [timeout] with value [] as a time value: unit is missing or unrecognized"),
        ("wait_for_active_shards=abc", "cannot parse ActiveShardCount[abc]"),
        ("version_type=abc", "No version type match [abc]"),
        ("version=abc", "Failed to parse long parameter [version] with value [abc]"),
    ] {
        let resp = node.put(&format!("/idx/_doc/2?{query}"), &json!({"a": 1}));
        let body = resp.expect_error(400, "illegal_argument_exception");
        assert_eq!(body["error"]["reason"], reason);
    }
    let resp = node.bulk(
        "/_bulk?wait_for_active_shards=",
        "{\"index\":{\"_index\":\"idx\"}}\n{}\n",
    );
    resp.expect_error(400, "illegal_argument_exception");
    let resp = node.put(
        "/idx/_doc/2?if_seq_no=-1&if_primary_term=1",
        &json!({"a": 1}),
    );
    let body = resp.expect_error(400, "illegal_argument_exception");
    assert_eq!(
        body["error"]["reason"],
        "sequence numbers must be non negative. got [-1]."
    );
    assert_healthy(&mut node);
}
