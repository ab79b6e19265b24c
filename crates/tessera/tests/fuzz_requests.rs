//! A bounded, deterministic fuzz of the request parsers against a real node: search bodies
//! (every query type), aggregation bodies (every aggregation type), bulk bodies, mappings and
//! index settings, and URL parameters, generated from valid templates and then mutated (wrong
//! types, nulls, huge and negative numbers, deep nesting, unknown keys, dropped keys).
//!
//! Every answer must be below 500, and every 4xx an OpenSearch error body; the node must still
//! answer at the end and never have panicked. `TESSERA_FUZZ_SEED` and `TESSERA_FUZZ_CASES`
//! rerun another seed or count.
//!
//! A second test sends random raw request heads (any byte in the target, broken header lines,
//! bad lengths and codings): every answer must be an HTTP response with an OpenSearch-shaped
//! error body, never hyper's empty 400 or a dropped connection.

mod common;

use std::time::Instant;

use common::{Client, Node, Resp};
use serde_json::{json, Map, Value};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const FIELDS: &[&str] = &[
    "title",
    "tag",
    "n",
    "i",
    "d",
    "when",
    "flag",
    "ip",
    "loc",
    "price",
    "missing",
    "title.raw",
    "_id",
    "_index",
    "",
];

fn field(rng: &mut Rng) -> Value {
    json!(rng.pick(FIELDS))
}

/// A value of any type, often a hostile one.
fn any_value(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(0),
        4 => json!(i64::MAX),
        5 => json!(i64::MIN),
        6 => json!(u64::MAX),
        7 => json!(1e308),
        8 => json!(-1e308),
        9 => json!(2147483648u64),
        10 => json!("abc"),
        11 => json!(""),
        12 => json!([]),
        13 => json!({}),
        14 => json!(["a", 1, null]),
        _ => json!("2024-01-01T00:00:00Z"),
    }
}

/// A random Lucene query string made of its syntax characters, field names and words.
fn lucene_text(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "title",
        "n",
        "when",
        "tag",
        "ip",
        ":",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "\"",
        "*",
        "?",
        "~",
        "^",
        "\\",
        "/",
        "!",
        "+",
        "-",
        "&&",
        "||",
        " AND ",
        " OR ",
        " NOT ",
        " TO ",
        " ",
        ">",
        "<",
        ">=",
        "<=",
        "=",
        "fox",
        "1",
        "-1",
        "2.5",
        "1e400",
        "now-1d/d",
        "10.0.0.0/8",
        "_exists_",
        "é",
        "\u{0}",
    ];
    (0..rng.below(12)).map(|_| *rng.pick(PIECES)).collect()
}

fn query(rng: &mut Rng, depth: usize) -> Value {
    let f = field(rng);
    let f = f.as_str().unwrap().to_string();
    let leaf = rng.below(24);
    if depth > 3 && leaf < 8 {
        return json!({"match_all": {}});
    }
    match leaf {
        0 => json!({"bool": {
            "must": [query(rng, depth + 1)],
            "should": [query(rng, depth + 1), query(rng, depth + 1)],
            "must_not": query(rng, depth + 1),
            "filter": [query(rng, depth + 1)],
            "minimum_should_match": rng.pick(&[json!(1), json!("50%"), json!("-1"), json!(-3), json!("2<75%")]).clone(),
        }}),
        1 => json!({"constant_score": {"filter": query(rng, depth + 1), "boost": 2}}),
        2 => {
            json!({"dis_max": {"queries": [query(rng, depth + 1), query(rng, depth + 1)], "tie_breaker": 0.3}})
        }
        3 => {
            json!({"boosting": {"positive": query(rng, depth + 1), "negative": query(rng, depth + 1), "negative_boost": 0.5}})
        }
        4 => json!({"function_score": {"query": query(rng, depth + 1)}}),
        5 => json!({"nested": {"path": f, "query": query(rng, depth + 1)}}),
        8 => {
            json!({"match": {f: {"query": "quick fox", "operator": "and", "fuzziness": "AUTO", "minimum_should_match": "2"}}})
        }
        9 => json!({"match_phrase": {f: {"query": "quick brown", "slop": 2}}}),
        10 => json!({"match_phrase_prefix": {f: {"query": "quick br", "max_expansions": 10}}}),
        11 => {
            json!({"multi_match": {"query": "fox 1", "fields": [f, "title^2"], "type": rng.pick(&["best_fields", "most_fields", "phrase", "cross_fields", "bool_prefix", "nope"])}})
        }
        12 => json!({"term": {f: {"value": any_value(rng), "boost": 1.5}}}),
        13 => json!({"terms": {f: [any_value(rng), "a", 1]}}),
        14 => {
            json!({"range": {f: {"gte": any_value(rng), "lt": any_value(rng), "format": "yyyy-MM-dd", "time_zone": "+01:00"}}})
        }
        15 => json!({"exists": {"field": f}}),
        16 => json!({"prefix": {f: {"value": "qu", "case_insensitive": true}}}),
        17 => json!({"wildcard": {f: {"value": "q*k?"}}}),
        18 => {
            json!({"regexp": {f: {"value": "q.*[a-", "flags": "ALL", "max_determinized_states": 10}}})
        }
        19 => {
            json!({"fuzzy": {f: {"value": "quikc", "fuzziness": rng.pick(&[json!(2), json!("AUTO:1,4"), json!(-1), json!("x")]).clone()}}})
        }
        20 => json!({"ids": {"values": ["1", "2", any_value(rng)]}}),
        21 if rng.chance(50) => {
            json!({"query_string": {"query": lucene_text(rng), "default_field": f}})
        }
        22 if rng.chance(50) => {
            json!({"simple_query_string": {"query": lucene_text(rng), "fields": [f]}})
        }
        21 => {
            json!({"query_string": {"query": rng.pick(&["title:(quick OR fox) AND n:[1 TO 5]", "price:>10", "a AND (", "when:[now-1d TO *}", "\"unterminated", "/re[gex/", "title:fox~3^2", "n:>=abc", "*:*"]).to_string(), "default_field": f}})
        }
        22 => {
            json!({"simple_query_string": {"query": "fox + -(quick | \"brown", "fields": [f], "flags": "ALL"}})
        }
        _ => json!({rng.pick(&["geo_distance", "geo_bounding_box"]).to_string(): {
            "distance": rng.pick(&[json!("10km"), json!("-1km"), json!("abc"), json!(1e300)]).clone(),
            f: rng.pick(&[json!({"lat": 40, "lon": -70}), json!([200, 100]), json!("drm3btev3e86"), json!({"top_left": [0, 10], "bottom_right": [10, 0]}), json!(null)]).clone(),
        }}),
    }
}

fn aggregation(rng: &mut Rng, depth: usize) -> Value {
    let f = field(rng);
    let mut agg = match rng.below(20) {
        0 => {
            json!({"terms": {"field": f, "size": any_value(rng), "order": {"_count": "asc"}, "min_doc_count": 0, "missing": "m"}})
        }
        1 => json!({"significant_terms": {"field": f, "size": 3}}),
        2 => json!({"multi_terms": {"terms": [{"field": f}, {"field": "tag"}], "size": 2}}),
        3 => {
            json!({"composite": {"size": any_value(rng), "sources": [{"a": {"terms": {"field": f}}}, {"h": {"histogram": {"field": "n", "interval": 5}}}], "after": {"a": "x"}}})
        }
        4 => {
            json!({"histogram": {"field": f, "interval": any_value(rng), "offset": any_value(rng), "extended_bounds": {"min": -1e18, "max": 1e18}, "min_doc_count": 0}})
        }
        5 => {
            json!({"date_histogram": {"field": f, rng.pick(&["calendar_interval", "fixed_interval", "interval"]).to_string(): rng.pick(&[json!("1d"), json!("month"), json!("1ms"), json!("0s"), json!("-1h"), json!("abc"), json!(1)]).clone(), "time_zone": rng.pick(&["UTC", "Europe/Paris", "+25:00", "nope"]).to_string(), "extended_bounds": {"min": "1970-01-01", "max": "2500-01-01"}, "min_doc_count": 0}})
        }
        6 => json!({"auto_date_histogram": {"field": f, "buckets": any_value(rng)}}),
        7 => {
            json!({"range": {"field": f, "ranges": [{"to": any_value(rng)}, {"from": 1, "to": 0}, {"from": any_value(rng)}], "keyed": true}})
        }
        8 => {
            json!({"date_range": {"field": f, "ranges": [{"to": "now-1d/d"}, {"from": any_value(rng)}], "format": "yyyy"}})
        }
        9 => json!({"filter": query(rng, 2)}),
        10 => {
            json!({"filters": {"filters": {"a": query(rng, 2), "b": any_value(rng)}, "other_bucket": true}})
        }
        11 => json!({"missing": {"field": f}}),
        12 => json!({"global": {}}),
        13 => {
            json!({rng.pick(&["min", "max", "sum", "avg", "stats", "value_count"]).to_string(): {"field": f, "missing": any_value(rng)}})
        }
        14 => json!({"extended_stats": {"field": f, "sigma": any_value(rng)}}),
        15 => json!({"weighted_avg": {"value": {"field": f}, "weight": {"field": "n"}}}),
        16 => json!({"cardinality": {"field": f, "precision_threshold": any_value(rng)}}),
        17 => {
            json!({"percentiles": {"field": f, "percents": [any_value(rng), 50, 99.9], "tdigest": {"compression": any_value(rng)}}})
        }
        18 => json!({"percentile_ranks": {"field": f, "values": [any_value(rng), 5]}}),
        _ => {
            json!({"top_hits": {"size": any_value(rng), "from": any_value(rng), "sort": [{f.as_str().unwrap_or("n"): "desc"}], "_source": ["title"]}})
        }
    };
    if depth < 2 && rng.chance(30) {
        agg["aggs"] = json!({"sub": aggregation(rng, depth + 1)});
    }
    agg
}

fn search_body(rng: &mut Rng) -> Value {
    let mut body = json!({"query": query(rng, 0)});
    if rng.chance(40) {
        body["aggs"] = json!({"a": aggregation(rng, 0)});
    }
    for (key, value) in [
        ("size", any_value(rng)),
        ("from", any_value(rng)),
        (
            "sort",
            json!([{rng.pick(FIELDS).to_string(): {"order": rng.pick(&["asc", "desc", "up"]).to_string(), "missing": "_last"}}, "_score"]),
        ),
        (
            "_source",
            rng.pick(&[json!(false), json!(["t*"]), json!({"includes": 1})])
                .clone(),
        ),
        ("track_total_hits", any_value(rng)),
        ("min_score", any_value(rng)),
        ("post_filter", query(rng, 2)),
        ("search_after", json!([any_value(rng), "x"])),
        (
            "highlight",
            json!({"fields": {"title": {"number_of_fragments": any_value(rng)}}}),
        ),
        (
            "docvalue_fields",
            json!([rng.pick(FIELDS).to_string(), {"field": "when", "format": "epoch_millis"}]),
        ),
        ("terminate_after", any_value(rng)),
        ("timeout", any_value(rng)),
        ("explain", any_value(rng)),
        ("stored_fields", any_value(rng)),
    ] {
        if rng.chance(15) {
            body[key] = value;
        }
    }
    body
}

fn mapping(rng: &mut Rng) -> Value {
    let types = [
        "text",
        "keyword",
        "long",
        "integer",
        "short",
        "byte",
        "double",
        "float",
        "half_float",
        "scaled_float",
        "date",
        "date_nanos",
        "boolean",
        "ip",
        "geo_point",
        "object",
        "nested",
        "flat_object",
        "unsigned_long",
        "knn_vector",
        "nope",
    ];
    let mut properties = Map::new();
    for i in 0..rng.below(4) + 1 {
        let mut def = json!({"type": rng.pick(&types).to_string()});
        for (key, value) in [
            ("format", json!("yyyy-MM-dd||epoch_millis")),
            ("scaling_factor", any_value(rng)),
            ("ignore_above", any_value(rng)),
            ("index", any_value(rng)),
            ("doc_values", any_value(rng)),
            (
                "analyzer",
                json!(rng.pick(&["standard", "whitespace", "nope"]).to_string()),
            ),
            ("fields", json!({"raw": {"type": "keyword"}})),
            ("properties", json!({"inner": {"type": "long"}})),
            ("null_value", any_value(rng)),
            ("coerce", any_value(rng)),
        ] {
            if rng.chance(20) {
                def[key] = value;
            }
        }
        properties.insert(format!("f{i}"), def);
    }
    let mut m = json!({"properties": properties});
    if rng.chance(30) {
        m["dynamic"] = rng
            .pick(&[json!("strict"), json!(false), json!("runtime"), json!(3)])
            .clone();
    }
    if rng.chance(20) {
        m["dynamic_templates"] =
            json!([{"t": {"match": "*_s", "mapping": {"type": any_value(rng)}}}]);
    }
    m
}

fn index_settings(rng: &mut Rng) -> Value {
    let mut settings = Map::new();
    for (key, value) in [
        ("number_of_shards", any_value(rng)),
        ("number_of_replicas", any_value(rng)),
        (
            "refresh_interval",
            rng.pick(&[json!("1s"), json!("-1"), json!("abc"), json!(-5)])
                .clone(),
        ),
        ("max_result_window", any_value(rng)),
        (
            "index.translog.durability",
            rng.pick(&[json!("async"), json!("x")]).clone(),
        ),
        (
            "analysis",
            json!({"analyzer": {"a": {"type": "custom", "tokenizer": any_value(rng)}}}),
        ),
        (
            "index.search.concurrent_segment_search.mode",
            any_value(rng),
        ),
        ("index.bogus", any_value(rng)),
    ] {
        if rng.chance(35) {
            settings.insert(key.to_string(), value);
        }
    }
    Value::Object(settings)
}

/// Random damage to a JSON tree: replace, drop or add a member, wrap deeply.
fn mutate(rng: &mut Rng, value: &mut Value, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(6) {
                0 => {
                    *budget -= 1;
                    map.insert(key, any_value(rng));
                }
                1 => {
                    *budget -= 1;
                    map.remove(&key);
                }
                2 => {
                    *budget -= 1;
                    map.insert("bogus_key".into(), any_value(rng));
                }
                _ => mutate(rng, map.get_mut(&key).unwrap(), budget),
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            if rng.chance(30) {
                *budget -= 1;
                items[i] = any_value(rng);
            } else {
                mutate(rng, &mut items[i], budget);
            }
        }
        _ => {
            *budget -= 1;
            *value = if rng.chance(10) {
                // deep nesting, past serde_json's and the parsers' recursion limits
                let mut deep = any_value(rng);
                for _ in 0..rng.below(300) {
                    deep = if rng.chance(50) {
                        json!([deep])
                    } else {
                        json!({"bool": {"must": deep}})
                    };
                }
                deep
            } else {
                any_value(rng)
            };
        }
    }
}

fn mutated(rng: &mut Rng, mut value: Value) -> Value {
    let mut budget = rng.below(4);
    for _ in 0..budget + 1 {
        mutate(rng, &mut value, &mut budget);
    }
    value
}

fn bulk_body(rng: &mut Rng) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(6) + 1 {
        let action = *rng.pick(&["index", "create", "update", "delete", "bogus"]);
        let mut meta =
            json!({"_index": rng.pick(&["fz", "fz", "fz-auto", "_bad", ""]).to_string()});
        if rng.chance(70) {
            meta["_id"] = json!(format!("{}", rng.below(30)));
        }
        for (key, value) in [
            ("routing", any_value(rng)),
            ("if_seq_no", any_value(rng)),
            ("if_primary_term", any_value(rng)),
            ("version", any_value(rng)),
            ("version_type", json!("external")),
            ("retry_on_conflict", any_value(rng)),
            ("_id", any_value(rng)),
            ("pipeline", any_value(rng)),
        ] {
            if rng.chance(8) {
                meta[key] = value;
            }
        }
        let line = match rng.below(12) {
            0 => "{\"index\":".to_string(),
            1 => "not json".to_string(),
            2 => "[]".to_string(),
            3 => json!({action: meta, "index": {}}).to_string(),
            _ => json!({action: meta}).to_string(),
        };
        out.push_str(&line);
        out.push('\n');
        if action != "delete" || rng.chance(10) {
            let n = rng.below(100);
            let doc = mutated(
                rng,
                json!({"title": "quick fox", "n": n, "when": "2024-01-02", "ip": "10.0.0.1", "loc": [1.5, 2.5], "flag": true, "price": 9.5}),
            );
            let source = match (action, rng.below(10)) {
                (_, 0) => "{\"title\": ".to_string(),
                (_, 1) => String::new(),
                ("update", _) => json!({rng.pick(&["doc", "upsert", "doc_as_upsert", "script"]).to_string(): doc}).to_string(),
                _ => doc.to_string(),
            };
            out.push_str(&source);
            out.push('\n');
        }
    }
    if rng.chance(20) {
        out.pop();
    }
    out
}

const URL_CASES: &[(&str, &str, &[&str])] = &[
    (
        "GET",
        "/fz/_search",
        &[
            "size",
            "from",
            "q",
            "df",
            "default_operator",
            "analyzer",
            "sort",
            "_source",
            "track_total_hits",
            "timeout",
            "terminate_after",
            "routing",
            "preference",
            "search_type",
            "pre_filter_shard_size",
            "allow_no_indices",
            "ignore_unavailable",
            "expand_wildcards",
            "rest_total_hits_as_int",
            "version",
            "seq_no_primary_term",
            "stored_fields",
            "docvalue_fields",
            "explain",
            "track_scores",
            "lenient",
            "pretty",
        ],
    ),
    (
        "GET",
        "/fz/_count",
        &[
            "q",
            "routing",
            "min_score",
            "terminate_after",
            "df",
            "ignore_unavailable",
        ],
    ),
    (
        "PUT",
        "/fz/_doc/7",
        &[
            "routing",
            "refresh",
            "version",
            "version_type",
            "if_seq_no",
            "if_primary_term",
            "op_type",
            "timeout",
            "wait_for_active_shards",
            "pipeline",
            "require_alias",
        ],
    ),
    (
        "GET",
        "/fz/_doc/7",
        &[
            "routing",
            "realtime",
            "refresh",
            "_source",
            "_source_includes",
            "_source_excludes",
            "stored_fields",
            "version",
            "preference",
        ],
    ),
    (
        "DELETE",
        "/fz/_doc/8",
        &[
            "routing",
            "refresh",
            "if_seq_no",
            "if_primary_term",
            "version",
            "timeout",
        ],
    ),
    (
        "POST",
        "/fz/_update/7",
        &[
            "routing",
            "refresh",
            "retry_on_conflict",
            "if_seq_no",
            "if_primary_term",
            "_source",
            "timeout",
        ],
    ),
    (
        "POST",
        "/_bulk",
        &[
            "routing",
            "refresh",
            "timeout",
            "wait_for_active_shards",
            "pipeline",
            "_source",
            "require_alias",
        ],
    ),
    (
        "GET",
        "/fz/_mget",
        &[
            "routing",
            "realtime",
            "refresh",
            "_source",
            "stored_fields",
            "preference",
        ],
    ),
    (
        "GET",
        "/_cluster/health",
        &[
            "wait_for_status",
            "timeout",
            "level",
            "wait_for_active_shards",
            "wait_for_nodes",
            "local",
        ],
    ),
    (
        "GET",
        "/_cat/indices",
        &["h", "s", "v", "bytes", "format", "help", "health", "pri"],
    ),
    ("GET", "/_cat/shards", &["h", "s", "v", "bytes", "format"]),
    ("GET", "/_nodes/stats", &["level", "human"]),
    ("GET", "/fz/_stats", &["level", "human"]),
    ("GET", "/fz/_mapping", &["local", "include_defaults"]),
    (
        "GET",
        "/fz/_settings",
        &["include_defaults", "flat_settings", "local"],
    ),
    (
        "POST",
        "/fz/_refresh",
        &["ignore_unavailable", "allow_no_indices"],
    ),
];

const GARBAGE: &[&str] = &[
    "",
    "abc",
    "-1",
    "0",
    "1",
    "true",
    "false",
    "99999999999999999999",
    "-9223372036854775808",
    "1e400",
    "1.5",
    ",,",
    "_all",
    "*",
    "%00",
    "%zz",
    "wait_for",
    "1s",
    "-5s",
    "0s",
    "nope",
    "_none_",
    "a,b",
    "yellow",
    "shards",
    "title:",
    ":",
    "%3E",
];

/// The body every mutated update/mget/doc request carries.
fn doc_body(rng: &mut Rng) -> Value {
    mutated(
        rng,
        json!({"doc": {"title": "x", "n": 1}, "ids": ["1", "7"], "title": "t", "n": 3}),
    )
}

/// 5xx answers that OpenSearch itself gives for these requests, with the same type and status:
/// too many buckets (503) and `significant_terms` on a floating-point field (500,
/// `unsupported_operation_exception`).
fn opensearch_5xx(resp: &Resp) -> bool {
    let Ok(body) = serde_json::from_str::<Value>(&resp.body) else {
        return false;
    };
    let root = &body["error"]["root_cause"][0];
    (resp.status == 503 && root["type"] == "too_many_buckets_exception")
        || (resp.status == 500
            && root["type"] == "unsupported_operation_exception"
            && root["reason"] == "No support for examining floating point numerics")
}

fn check(resp: &Resp, what: &str, failures: &mut Vec<String>) {
    if resp.status >= 500 && !opensearch_5xx(resp) {
        failures.push(format!(
            "{what}\n  -> {} {}",
            resp.status,
            truncate(&resp.body)
        ));
        return;
    }
    if resp.status >= 400 && !resp.body.is_empty() {
        let body: Value = match serde_json::from_str(&resp.body) {
            Ok(body) => body,
            Err(_) => {
                failures.push(format!(
                    "{what}\n  -> {} non-JSON {}",
                    resp.status,
                    truncate(&resp.body)
                ));
                return;
            }
        };
        // a document that is not there answers 404 with the document's shape, as in OpenSearch
        if body.get("found") == Some(&json!(false))
            || body.get("result") == Some(&json!("not_found"))
        {
            return;
        }
        let error = &body["error"];
        let shaped = body["status"].as_u64() == Some(u64::from(resp.status))
            && error["type"].as_str().is_some_and(|t| !t.is_empty())
            && error["reason"].as_str().is_some_and(|r| !r.is_empty());
        if !shaped {
            failures.push(format!(
                "{what}\n  -> {} not an error body: {}",
                resp.status,
                truncate(&resp.body)
            ));
        }
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn truncate(text: &str) -> String {
    text.chars().take(400).collect()
}

/// Sends a request; a transport error (a hang past the harness's timeout, a dropped
/// connection) is a failure that names the request.
fn send(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    content_type: &str,
) -> Resp {
    let started = Instant::now();
    match client.try_request(method, path, body.map(|b| (b, content_type))) {
        Ok(resp) => resp,
        Err(e) => panic!(
            "{method} {path}: transport error after {:?}: {e}\nbody: {}",
            started.elapsed(),
            truncate(&String::from_utf8_lossy(body.unwrap_or_default()))
        ),
    }
}

#[test]
fn fuzzed_requests_never_answer_5xx() {
    let seed: u64 = std::env::var("TESSERA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7E55_E4A5_EED5);
    let cases: usize = std::env::var("TESSERA_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut node = Node::start();
    node.put(
        "/fz",
        &json!({
            "settings": {"number_of_shards": 2, "number_of_replicas": 0},
            "mappings": {"properties": {
                "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                "tag": {"type": "keyword"}, "n": {"type": "long"}, "i": {"type": "integer"},
                "d": {"type": "double"}, "when": {"type": "date"}, "flag": {"type": "boolean"},
                "ip": {"type": "ip"}, "loc": {"type": "geo_point"},
                "price": {"type": "scaled_float", "scaling_factor": 100}
            }}
        }),
    )
    .ok();
    let mut ndjson = String::new();
    for i in 0..60 {
        ndjson.push_str(&format!(
            "{{\"index\":{{\"_index\":\"fz\",\"_id\":\"{i}\"}}}}\n"
        ));
        ndjson.push_str(&json!({"title": format!("quick brown fox {i}"), "tag": format!("t{}", i % 5), "n": i, "i": -i, "d": i as f64 / 3.0, "when": format!("2024-01-{:02}", i % 28 + 1), "flag": i % 2 == 0, "ip": format!("10.0.0.{i}"), "loc": [i as f64 / 10.0, 45.0], "price": i as f64 * 1.25}).to_string());
        ndjson.push('\n');
    }
    node.bulk("/_bulk?refresh=true", &ndjson).ok();

    let client = node.client();
    // (filter_path is left out: it filters error bodies too, as in OpenSearch)
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut failures = Vec::new();
    let started = Instant::now();
    let mut counts = [0usize; 6];
    for case in 0..cases {
        let kind = match rng.below(100) {
            0..=34 => 0,
            35..=54 => 1,
            55..=69 => 2,
            70..=77 => 3,
            _ => 4,
        };
        counts[kind] += 1;
        match kind {
            0 => {
                let body = search_body(&mut rng);
                let body = mutated(&mut rng, body);
                let text = body.to_string();
                let path =
                    *rng.pick(&["/fz/_search", "/fz/_count", "/_search", "/fz,nope*/_search"]);
                let resp = send(
                    &client,
                    "POST",
                    path,
                    Some(text.as_bytes()),
                    "application/json",
                );
                check(
                    &resp,
                    &format!("case {case}: POST {path} {}", truncate(&text)),
                    &mut failures,
                );
            }
            1 => {
                let agg = aggregation(&mut rng, 0);
                let body = mutated(&mut rng, json!({"size": 0, "aggs": {"a": agg}}));
                let text = body.to_string();
                let resp = send(
                    &client,
                    "POST",
                    "/fz/_search",
                    Some(text.as_bytes()),
                    "application/json",
                );
                check(
                    &resp,
                    &format!("case {case}: POST /fz/_search {}", truncate(&text)),
                    &mut failures,
                );
            }
            2 => {
                let body = bulk_body(&mut rng);
                let path = *rng.pick(&["/_bulk", "/fz/_bulk", "/_bulk?refresh=true"]);
                let resp = send(
                    &client,
                    "POST",
                    path,
                    Some(body.as_bytes()),
                    "application/x-ndjson",
                );
                check(
                    &resp,
                    &format!("case {case}: POST {path} {}", truncate(&body)),
                    &mut failures,
                );
            }
            3 => {
                let (method, path, body) = match rng.below(3) {
                    0 => {
                        let name = format!("/fzm-{}", rng.below(4));
                        let settings = index_settings(&mut rng);
                        let mappings = mapping(&mut rng);
                        let body = mutated(
                            &mut rng,
                            json!({"settings": settings, "mappings": mappings}),
                        );
                        ("PUT", name, body)
                    }
                    1 => {
                        let mappings = mapping(&mut rng);
                        (
                            "PUT",
                            "/fz/_mapping".to_string(),
                            mutated(&mut rng, mappings),
                        )
                    }
                    _ => {
                        let settings = index_settings(&mut rng);
                        (
                            "PUT",
                            "/fz/_settings".to_string(),
                            mutated(&mut rng, json!({"index": settings})),
                        )
                    }
                };
                let text = body.to_string();
                let resp = send(
                    &client,
                    method,
                    &path,
                    Some(text.as_bytes()),
                    "application/json",
                );
                check(
                    &resp,
                    &format!("case {case}: {method} {path} {}", truncate(&text)),
                    &mut failures,
                );
                if path.starts_with("/fzm-") && resp.is_success() {
                    client.delete(&path);
                }
            }
            _ => {
                let (method, path, params) = *rng.pick(URL_CASES);
                let mut query = Vec::new();
                for _ in 0..rng.below(3) + 1 {
                    let param = *rng.pick(params);
                    let value = if param == "q" && rng.chance(70) {
                        percent_encode(&lucene_text(&mut rng))
                    } else {
                        rng.pick(GARBAGE).to_string()
                    };
                    query.push(format!("{param}={value}"));
                }
                let url = format!("{path}?{}", query.join("&"));
                let body = match method {
                    "POST" if path == "/_bulk" => {
                        Some(b"{\"index\":{\"_index\":\"fz\",\"_id\":\"9\"}}\n{\"n\":1}\n".to_vec())
                    }
                    "PUT" | "POST" => Some(doc_body(&mut rng).to_string().into_bytes()),
                    _ if path.ends_with("_mget") => {
                        Some(doc_body(&mut rng).to_string().into_bytes())
                    }
                    _ => None,
                };
                let content_type = if path == "/_bulk" {
                    "application/x-ndjson"
                } else {
                    "application/json"
                };
                let resp = send(&client, method, &url, body.as_deref(), content_type);
                check(
                    &resp,
                    &format!("case {case}: {method} {url}"),
                    &mut failures,
                );
            }
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "fuzz: {cases} cases (search {}, aggs {}, bulk {}, mappings/settings {}, url {}) in {elapsed:?}, seed {seed}, {} failures",
        counts[0], counts[1], counts[2], counts[3], counts[4], failures.len()
    );
    assert!(node.is_running(), "the node died");
    node.get("/").expect(200);
    let log = node.log();
    let panics: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("panicked"))
        .take(10)
        .collect();
    assert!(
        failures.is_empty() && panics.is_empty(),
        "{} failures (seed {seed}); first ones:\n{}\npanics in the log:\n{}",
        failures.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        panics.join("\n")
    );
}

/// Header lines for [`fuzzed_request_heads_get_opensearch_answers`], broken ones among them.
const HEADER_LINES: &[&[u8]] = &[
    b"Content-Type: application/json",
    b"Bad Header",
    b"X A: b",
    b": v",
    b"X-B: a\x01b",
    b"Content-Length: abc",
    b"Content-Length: 26",
    b"X-C: \xff\xfe",
    b"Transfer-Encoding: chunked",
];

/// Random request heads sent as raw bytes (methods, targets with any byte, broken header lines,
/// bad lengths): every answer is an HTTP response whose error body is OpenSearch-shaped, never
/// an empty 4xx or a closed connection.
#[test]
fn fuzzed_request_heads_get_opensearch_answers() {
    let cases: usize = std::env::var("TESSERA_FUZZ_HEAD_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let mut node = Node::start();
    node.put("/fz", &json!({})).ok();
    let mut rng = Rng(0x4EAD_5EED);
    const TARGET_BYTES: &[u8] = b"/_-fz?=&%2A>< \"{}|^`\\\x01\x7f\xc3\xa9#:,*abc019";
    let mut failures = Vec::new();
    for case in 0..cases {
        let method = *rng.pick(&[
            "GET", "POST", "PUT", "DELETE", "HEAD", "G(T", "", "get", "FOO",
        ]);
        let mut target_bytes = rng
            .pick(&["/", "/fz/_search", "/fz/_doc/1", "/_bulk", ""])
            .as_bytes()
            .to_vec();
        for _ in 0..rng.below(12) {
            target_bytes.push(*rng.pick(TARGET_BYTES));
        }
        if rng.chance(3) {
            target_bytes.extend(std::iter::repeat_n(b'a', 5000));
        }
        let version = *rng.pick(&[
            "HTTP/1.1",
            "HTTP/1.1",
            "HTTP/1.0",
            "HTTP/2.0",
            "HTTP/1.1 x",
            "",
        ]);
        let mut head = Vec::new();
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(&target_bytes);
        head.push(b' ');
        head.extend_from_slice(version.as_bytes());
        head.extend_from_slice(b"\r\nHost: localhost\r\nConnection: close\r\n");
        let body = b"{\"query\":{\"match_all\":{}}}";
        for _ in 0..rng.below(3) {
            let line = rng.pick(HEADER_LINES);
            head.extend_from_slice(line);
            head.extend_from_slice(b"\r\n");
        }
        let announced = head.windows(18).any(|w| w == b"Content-Length: 26");
        let chunked = head.windows(26).any(|w| w == b"Transfer-Encoding: chunked");
        head.extend_from_slice(b"\r\n");
        // the body the head announces (chunked wins over a length), so that no answer waits
        if chunked {
            head.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            head.extend_from_slice(body);
            head.extend_from_slice(b"\r\n0\r\n\r\n");
        } else if announced || rng.chance(50) {
            head.extend_from_slice(body);
        }
        let answer = common::raw_http(node.port(), &head, std::time::Duration::from_secs(10));
        let what = format!(
            "case {case}: {:?}",
            truncate(&String::from_utf8_lossy(&head))
        );
        let Some(status) = answer
            .strip_prefix("HTTP/1.1 ")
            .or_else(|| answer.strip_prefix("HTTP/1.0 "))
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse::<u16>().ok())
        else {
            failures.push(format!(
                "{what}\n  -> no HTTP answer: {}",
                truncate(&answer)
            ));
            continue;
        };
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        if status >= 500
            && !opensearch_5xx(&Resp {
                status,
                body: body.to_string(),
            })
        {
            failures.push(format!("{what}\n  -> {status} {}", truncate(body)));
        } else if status >= 400 && status != 413 && method != "HEAD" {
            // OpenSearch's error body, or its plain shape for routing errors (`no handler
            // found` has no status, as in OpenSearch)
            let shaped = serde_json::from_str::<Value>(body).is_ok_and(|v| {
                (v["status"].as_u64() == Some(u64::from(status))
                    && v["error"]["type"].is_string()
                    && v["error"]["reason"].is_string())
                    || v["error"].as_str().is_some_and(|e| !e.is_empty())
                    || v.get("found") == Some(&json!(false))
                    || v.get("result") == Some(&json!("not_found"))
            });
            if !shaped {
                failures.push(format!(
                    "{what}\n  -> {status} not an error body: {}",
                    truncate(&answer)
                ));
            }
        }
    }
    assert!(node.is_running(), "the node died");
    node.get("/").expect(200);
    assert!(
        failures.is_empty(),
        "{} failures; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
