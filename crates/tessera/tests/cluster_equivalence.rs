//! The search and aggregation equivalence properties, across real processes: a 3-node cluster
//! (`common::cluster::Cluster`: its own etcd, three `tessera serve` processes) holding the
//! shards of an index spread over its nodes must answer every search exactly as one node
//! (`common::Node`) holding the same shards does, whichever node coordinates.
//!
//! Both sides get the same seeded random corpus (the property tests' `Doc`s: keyword, long,
//! double, scaled_float, date, boolean and text fields, some missing, some multi-valued) with
//! explicit `_id`s, so each shard holds the same documents on both sides, written by the same
//! `_bulk` batches (index, delete, full and partial updates; through different cluster nodes)
//! with a `_refresh` after each, so each shard has the same segments too (`refresh_interval:
//! -1`, fewer refreshes than the merge policy merges from). Then a seeded random catalog of
//! requests (the property tests' query, sort and aggregation generators, plus prefix,
//! query_string, from/size, search_after, track_total_hits, `_source` filtering,
//! docvalue_fields and fields, versions, highlights, explanations, timeouts, `?routing=` (one
//! shard: its query and fetch in one call) and `_count`) goes to the single node and to each
//! of the three cluster nodes: the answers must be the same text, less `took`, floats included
//! (a hit's `_node`, rendered with `explain`, must name the node holding its shard).
//! `"profile": true` answers are compared less their timings and the node in each shard's id
//! (which must name the node holding the shard), and terms aggregations whose error bounds
//! depend on how documents are spread over shards are compared on their own.
//!
//! Each seed (two by default) writes an index of its own to the same cluster.
//!
//! Reproduce a failure with `TESSERA_PROP_SEED=<seed> cargo test -p tessera --test
//! cluster_equivalence`; the message names the seed, the layout and the request.

mod common;
#[path = "../../tessera-search/tests/common/mod.rs"]
mod prop;

use std::collections::{BTreeMap, BTreeSet};

use common::cluster::{eventually, Cluster};
use common::{Node, Resp};
use prop::{
    first_diff, mapping, random_aggs, random_query, random_sort, seeds, Doc, Filter, Rng, COLORS,
    FIELDS, VOCAB,
};
use serde_json::{json, Map, Value};

/// Random searches per seed (each sent to the single node and to the three cluster nodes).
const SEARCHES: usize = 110;
/// `_count` requests per seed.
const COUNTS: usize = 15;
/// Profiled searches per seed.
const PROFILES: usize = 8;
/// Explained searches per seed.
const EXPLAINS: usize = 6;

/// The live documents of one index, as both sides hold them.
struct Corpus {
    index: String,
    shards: u32,
    users: u64,
    live: BTreeMap<String, Doc>,
    /// Per batch: (documents written, deletes and updates).
    batches: Vec<(usize, usize)>,
}

impl Corpus {
    fn describe(&self) -> String {
        format!(
            "index {} with {} shards, {} live docs, batches (writes, churn) {:?}",
            self.index,
            self.shards,
            self.live.len(),
            self.batches
        )
    }
}

fn action(kind: &str, index: &str, id: &str) -> String {
    json!({ kind: {"_index": index, "_id": id} }).to_string()
}

/// Creates `index` on both sides and writes the same random batches to both.
fn build_corpus(rng: &mut Rng, cluster: &Cluster, single: &Node, index: &str) -> Corpus {
    let shards = rng.range(3, 6) as u32;
    let docs = rng.usize(300, 2000);
    let users = (docs as u64 / 3).max(5);
    let body = json!({
        "settings": {
            "number_of_shards": shards,
            "number_of_replicas": 0,
            // only the test's refreshes make segments, the same on both sides
            "refresh_interval": "-1"
        },
        "mappings": mapping()
    });
    cluster
        .node(rng.usize(0, 2))
        .put(&format!("/{index}"), &body)
        .ok();
    single.put(&format!("/{index}"), &body).ok();

    // every node holds primaries, and every node routes the same way
    let primaries = cluster.primaries(0, index);
    let holders: BTreeSet<_> = primaries.iter().map(|p| p.clone().unwrap()).collect();
    assert_eq!(holders.len(), 3, "primaries not spread: {primaries:?}");
    eventually("every node to apply the routing", || {
        (0..3).all(|i| cluster.primaries(i, index) == primaries)
    });

    let mut corpus = Corpus {
        index: index.to_string(),
        shards,
        users,
        live: BTreeMap::new(),
        batches: Vec::new(),
    };
    // 1..=5 batches (a refresh after each): at most 5 segments per shard, under the 8 the
    // merge policy starts merging at, so no background merge makes the sides differ
    let batch_count = rng.usize(1, 5);
    let mut cuts: Vec<usize> = (1..docs).collect();
    rng.shuffle(&mut cuts);
    cuts.truncate(batch_count - 1);
    cuts.push(docs);
    cuts.sort_unstable();
    let mut next = 0;
    for (batch, cut) in cuts.into_iter().enumerate() {
        let mut lines = Vec::new();
        let written = cut - next;
        while next < cut {
            let id = format!("d{next}");
            let doc = Doc::random(rng, id.clone(), users);
            lines.push(action("index", index, &id));
            lines.push(doc.source().to_string());
            corpus.live.insert(id, doc);
            next += 1;
        }
        let churn = if batch > 0 && rng.chance(0.7) {
            churn(rng, &mut corpus, docs, &mut lines)
        } else {
            0
        };
        corpus.batches.push((written, churn));
        let mut ndjson = lines.join("\n");
        ndjson.push('\n');
        let via = batch % 3;
        let answer = cluster.node(via).bulk("/_bulk", &ndjson).ok().json();
        assert_eq!(
            answer["errors"], false,
            "bulk via cluster node {via}: {answer}"
        );
        let answer = single.bulk("/_bulk", &ndjson).ok().json();
        assert_eq!(answer["errors"], false, "bulk on the single node: {answer}");
        cluster
            .node((batch + 1) % 3)
            .post_empty(&format!("/{index}/_refresh"))
            .ok();
        single.post_empty(&format!("/{index}/_refresh")).ok();
    }
    for node in 0..3 {
        assert_eq!(
            cluster.node(node).count(index),
            corpus.live.len() as u64,
            "live docs seen from cluster node {node}"
        );
    }
    assert_eq!(single.count(index), corpus.live.len() as u64);
    corpus
}

/// Deletes, full updates, partial updates and re-creations of deleted ids, appended to a bulk.
/// Returns how many operations it added.
fn churn(rng: &mut Rng, corpus: &mut Corpus, docs: usize, lines: &mut Vec<String>) -> usize {
    let index = corpus.index.clone();
    let ids: Vec<String> = corpus.live.keys().cloned().collect();
    let count = rng.usize(1, (ids.len() / 10).max(1));
    let mut ops = 0;
    for id in rng.subset(&ids, count, count) {
        ops += 1;
        match rng.below(4) {
            0 => {
                lines.push(action("delete", &index, &id));
                corpus.live.remove(&id);
            }
            1 => {
                let doc = Doc::random(rng, id.clone(), corpus.users);
                lines.push(action("index", &index, &id));
                lines.push(doc.source().to_string());
                corpus.live.insert(id, doc);
            }
            _ => {
                let fresh = Doc::random(rng, id.clone(), corpus.users);
                let current = corpus.live.get_mut(&id).expect("a live doc");
                let mut partial = Map::new();
                for field in rng.subset(FIELDS, 1, 3) {
                    current.set_from(&fresh, field);
                    partial.insert(field.to_string(), fresh.field_json(field));
                }
                lines.push(action("update", &index, &id));
                lines.push(json!({ "doc": partial }).to_string());
            }
        }
    }
    if rng.chance(0.3) {
        let id = format!("d{}", rng.below(docs as u64));
        if !corpus.live.contains_key(&id) {
            let doc = Doc::random(rng, id.clone(), corpus.users);
            lines.push(action("index", &index, &id));
            lines.push(doc.source().to_string());
            corpus.live.insert(id, doc);
            ops += 1;
        }
    }
    ops
}

// ---------------------------------------------------------------------------------------------
// the catalog

/// The property tests' queries, and query types they do not write.
fn query(rng: &mut Rng, users: u64) -> Value {
    match rng.below(10) {
        0 => json!({"prefix": {"user": format!("u{:03}", rng.below((users / 100).max(1)))}}),
        1 => json!({"prefix": {"color": &rng.pick(COLORS)[..rng.usize(1, 3)]}}),
        2 => {
            let words = [rng.pick(VOCAB), rng.pick(VOCAB)];
            let text = match rng.below(3) {
                0 => format!("{} OR {}", words[0], words[1]),
                1 => format!("body:{} AND color:{}", words[0], rng.pick(COLORS)),
                _ => format!("{} -{}", words[0], words[1]),
            };
            json!({"query_string": {"query": text, "default_field": "body"}})
        }
        3 => json!({"match": {"body": {
            "query": format!("{} {}", rng.pick(VOCAB), rng.pick(VOCAB)),
            "operator": "and"
        }}}),
        4 => json!({"bool": {
            "must": [{"match": {"body": rng.pick(VOCAB)}}],
            "filter": [{"terms": {"nums": [rng.range(0, 59), rng.range(0, 59)]}}],
            "must_not": [{"exists": {"field": "flag"}}]
        }}),
        _ => random_query(rng, users),
    }
}

/// One random search of the catalog (the shape of `slices_equivalence`'s requests, widened).
fn random_search(rng: &mut Rng, users: u64) -> Value {
    let mut body = json!({ "query": query(rng, users) });
    if rng.chance(0.4) {
        body["aggs"] = random_aggs(rng, users, 2);
        body["size"] = json!(*rng.pick(&[0, 0, 3, 10]));
    } else {
        body["size"] = json!(*rng.pick(&[0, 1, 5, 10, 25]));
    }
    if rng.chance(0.5) {
        body["sort"] = random_sort(rng);
        if rng.chance(0.3) {
            body["track_scores"] = json!(true);
        }
    }
    if rng.chance(0.3) {
        body["from"] = json!(rng.range(0, 30));
    }
    match rng.below(6) {
        0 => body["track_total_hits"] = json!(true),
        1 => body["track_total_hits"] = json!(false),
        2 => body["track_total_hits"] = json!(*rng.pick(&[1, 5, 50, 500])),
        _ => {}
    }
    if rng.chance(0.15) {
        body["post_filter"] = json!({"term": {"color": rng.pick(COLORS)}});
    }
    if rng.chance(0.1) {
        body["query"] = json!({"match": {"body": rng.pick(VOCAB)}});
        body["min_score"] = json!(rng.range(1, 30) as f64 / 10.0);
    }
    match rng.below(8) {
        0 => body["_source"] = json!(["n", "color"]),
        1 => body["_source"] = json!(false),
        2 => body["_source"] = json!({"includes": ["x", "p*", "ts"], "excludes": ["price"]}),
        _ => {}
    }
    let fetched = ["x", "price", "n", "nums", "ts", "flag", "color"];
    if rng.chance(0.2) {
        body["docvalue_fields"] = json!(rng.subset(&fetched, 1, 3));
    }
    if rng.chance(0.1) {
        body["fields"] = json!(rng.subset(&fetched, 1, 3));
    }
    if rng.chance(0.1) {
        body["version"] = json!(true);
        body["seq_no_primary_term"] = json!(true);
    }
    if rng.chance(0.1) {
        body["highlight"] = json!({"fields": {"body": {}}});
        body["query"] = json!({"match": {"body": rng.pick(VOCAB)}});
    }
    if rng.chance(0.15) {
        body["timeout"] = json!(*rng.pick(&["30s", "1m", "5000ms"]));
    }
    body
}

// ---------------------------------------------------------------------------------------------
// comparing answers

/// A search answer less `took`, as text: `{"took":N,` is where every answer starts.
fn without_took(resp: &Resp) -> String {
    let body = resp.body.trim();
    if let Some(rest) = body.strip_prefix("{\"took\":") {
        if let Some(comma) = rest.find(',') {
            return format!("{{{}", &rest[comma + 1..]);
        }
    }
    body.to_string()
}

/// The answer's text with the node of every hit (`"_node"`, rendered with `explain`) masked:
/// it names the node holding the shard, which legitimately differs.
fn mask_hit_nodes(text: &str) -> String {
    const KEY: &str = "\"_node\":\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        let (head, tail) = rest.split_at(at + KEY.len());
        out.push_str(head);
        out.push('*');
        rest = &tail[tail.find('"').unwrap_or(tail.len())..];
    }
    out.push_str(rest);
    out
}

/// Where a hit says it comes from (`"_shard": "[index][n]"`, `"_node"`) must be where the
/// shard is: `holders` by shard number. Returns a complaint.
fn misplaced_hit(answer: &str, holders: &[String]) -> Option<String> {
    let answer: Value = serde_json::from_str(answer).ok()?;
    for hit in answer["hits"]["hits"].as_array()? {
        let (Some(shard), Some(node)) = (hit["_shard"].as_str(), hit["_node"].as_str()) else {
            continue;
        };
        let number: usize = shard
            .rsplit('[')
            .next()?
            .trim_end_matches(']')
            .parse()
            .ok()?;
        if holders.get(number).map(String::as_str) != Some(node) {
            return Some(format!(
                "hit {} of shard {shard} says it is on node {node}; the shards are on {holders:?}",
                hit["_id"]
            ));
        }
    }
    None
}

/// What one request answered on the single node and on the cluster nodes; failures as text.
struct Check<'a> {
    cluster: &'a Cluster,
    single: &'a Node,
    /// The cluster node holding each shard (by shard number).
    holders: &'a [String],
    failures: Vec<String>,
    errors: usize,
    requests: usize,
}

impl Check<'_> {
    /// Sends `body` to `path` on every side; records a difference. Returns the single node's
    /// answer.
    fn same(&mut self, path: &str, body: &Value) -> Resp {
        self.requests += 1;
        let expected = self.single.post(path, body);
        if !expected.is_success() {
            self.errors += 1;
            // a bad request is fine in a random catalog (the same on every side), a server
            // error is not, but for the limit on buckets (503, as in OpenSearch)
            let limit = expected
                .body
                .contains("\"type\":\"too_many_buckets_exception\"");
            if expected.status >= 500 && !limit {
                self.failures.push(format!(
                    "POST {path} {body}\n  the single node failed: {} {}",
                    expected.status, expected.body
                ));
            }
        }
        let expected_text = mask_hit_nodes(&without_took(&expected));
        for node in 0..3 {
            let got = self.cluster.node(node).post(path, body);
            if let Some(complaint) = misplaced_hit(&got.body, self.holders) {
                self.failures.push(format!(
                    "POST {path} {body}\n  cluster node {node}: {complaint}"
                ));
            }
            let got_text = mask_hit_nodes(&without_took(&got));
            if got.status == expected.status && got_text == expected_text {
                continue;
            }
            let diff = match (
                serde_json::from_str::<Value>(&expected_text),
                serde_json::from_str::<Value>(&got_text),
            ) {
                (Ok(e), Ok(g)) => {
                    first_diff(&e, &g).unwrap_or_else(|| text_diff(&expected_text, &got_text))
                }
                _ => "not JSON".into(),
            };
            self.failures.push(format!(
                "POST {path} {body}\n  cluster node {node} ({}) vs the single node ({}): {diff}\n  single: {}\n  node {node}: {}",
                got.status,
                expected.status,
                truncate(&expected_text, 1500),
                truncate(&got_text, 1500)
            ));
            break;
        }
        expected
    }
}

/// Where two texts that parse to the same JSON differ (a float's last digits).
fn text_diff(expected: &str, actual: &str) -> String {
    let at = expected
        .bytes()
        .zip(actual.bytes())
        .position(|(e, a)| e != a)
        .unwrap_or(expected.len().min(actual.len()));
    let window = |text: &str| {
        let mut start = at.saturating_sub(80);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 30).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        text[start..end].to_string()
    };
    format!(
        "equal as parsed JSON, different as text at byte {at}: expected …{}… vs actual …{}…",
        window(expected),
        window(actual)
    )
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A profiled answer less what legitimately differs: `took`, every timing, and the node in each
/// shard's id (`[node][index][shard]` → `[index][shard]`). Returns it with the node ids by shard
/// number.
fn profile_shape(mut answer: Value) -> (Value, BTreeMap<u64, String>) {
    fn zero_timings(value: &mut Value, in_breakdown: bool) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    let timing = key.contains("time")
                        || key.ends_with("_nanos")
                        || (in_breakdown && !key.ends_with("_count"));
                    if timing && v.is_number() {
                        *v = json!(0);
                    } else {
                        zero_timings(v, key == "breakdown");
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| zero_timings(v, false)),
            _ => {}
        }
    }
    answer.as_object_mut().unwrap().remove("took");
    let mut nodes = BTreeMap::new();
    if let Some(shards) = answer["profile"]["shards"].as_array_mut() {
        for shard in shards {
            let id = shard["id"].as_str().unwrap_or_default().to_string();
            // [node][index][shard]
            let parts: Vec<&str> = id
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split("][")
                .collect();
            if let [node, index, number] = parts[..] {
                nodes.insert(number.parse().unwrap_or(u64::MAX), node.to_string());
                shard["id"] = json!(format!("[{index}][{number}]"));
            }
        }
    }
    zero_timings(&mut answer, false);
    (answer, nodes)
}

// ---------------------------------------------------------------------------------------------
// the test

#[test]
fn a_three_node_cluster_answers_every_search_as_one_node_holding_the_same_shards() {
    let cluster = Cluster::start(3);
    let single = Node::start();
    let mut report = String::new();
    let mut total_requests = 0;
    for (case, seed) in seeds(0xC1_05_7E_12, 2).into_iter().enumerate() {
        let mut rng = Rng::new(seed);
        let index = format!("props-{case}");
        let corpus = build_corpus(&mut rng, &cluster, &single, &index);
        let search_path = format!("/{index}/_search");
        let holders: Vec<String> = cluster
            .primaries(0, &index)
            .into_iter()
            .map(|holder| holder.expect("an assigned primary"))
            .collect();
        let mut check = Check {
            cluster: &cluster,
            single: &single,
            holders: &holders,
            failures: Vec::new(),
            errors: 0,
            requests: 0,
        };

        for _ in 0..SEARCHES {
            let body = random_search(&mut rng, corpus.users);
            // sometimes `?routing=`: one shard (queried and fetched in one call) or a few
            let path = match rng.below(10) {
                0 => format!("{search_path}?routing=d{}", rng.below(100)),
                1 => format!(
                    "{search_path}?routing=d{},d{}",
                    rng.below(100),
                    rng.below(100)
                ),
                _ => search_path.clone(),
            };
            let answer = check.same(&path, &body);
            if !answer.is_success() {
                eprintln!("seed {seed}: {body} answered {}", answer.body);
                continue;
            }
            // the next page after the last hit of a sorted one
            if let Some(sort) = body.get("sort").filter(|_| body.get("from").is_none()) {
                let last = answer.json()["hits"]["hits"]
                    .as_array()
                    .and_then(|hits| hits.last())
                    .and_then(|hit| hit.get("sort"))
                    .cloned();
                if let Some(after) = last {
                    let next = json!({
                        "query": body["query"], "sort": sort, "size": rng.range(1, 20),
                        "search_after": after, "track_total_hits": *rng.pick(&[json!(false), json!(true), json!(20)])
                    });
                    check.same(&path, &next);
                }
            }
        }

        for _ in 0..COUNTS {
            let body = json!({ "query": query(&mut rng, corpus.users) });
            check.same(&format!("/{index}/_count"), &body);
        }

        // terms whose doc_count_error_upper_bound and sum_other_doc_count come from how the
        // documents are spread over the shards: the same shards, the same figures
        // (at least 6, and on until one has a non-zero error bound, so the check bites)
        let mut bounded = 0;
        for attempt in 0..40 {
            if attempt >= 6 && bounded > 0 {
                break;
            }
            let size = rng.range(1, 4);
            let mut terms = json!({"field": *rng.pick(&["user", "user", "nums", "n"]), "size": size,
                                   "shard_size": size + rng.range(0, 2),
                                   "show_term_doc_count_error": true});
            if rng.chance(0.2) {
                terms["order"] = json!({"_count": "asc"});
            }
            let query = if rng.chance(0.5) {
                json!({"match_all": {}})
            } else {
                Filter::random(&mut rng, corpus.users, 1).to_json()
            };
            let body = json!({
                "size": 0,
                "query": query,
                "aggs": {"t": {"terms": terms, "aggs": {
                    "c": {"terms": {"field": "color", "size": 2, "shard_size": 2}}
                }}}
            });
            let answer = check.same(&search_path, &body);
            if answer.is_success() {
                let t = &answer.json()["aggregations"]["t"];
                if t["doc_count_error_upper_bound"].as_u64().unwrap_or(0) > 0
                    && t["sum_other_doc_count"].as_u64().unwrap_or(0) > 0
                {
                    bounded += 1;
                }
            }
        }
        assert!(
            bounded > 0,
            "seed {seed}: no terms aggregation had a non-zero error bound: the check tests nothing"
        );

        // "explain": true
        for _ in 0..EXPLAINS {
            let body = json!({
                "query": query(&mut rng, corpus.users), "size": rng.range(1, 5), "explain": true
            });
            check.same(&search_path, &body);
        }

        // "profile": true, less timings; a shard's id names the node holding it
        for _ in 0..PROFILES {
            let mut body = random_search(&mut rng, corpus.users);
            body["profile"] = json!(true);
            body.as_object_mut().unwrap().remove("timeout");
            check.requests += 1;
            let expected = single.post(&search_path, &body).expect(200).json();
            let (expected, _) = profile_shape(expected);
            for node in 0..3 {
                let got = cluster
                    .node(node)
                    .post(&search_path, &body)
                    .expect(200)
                    .json();
                let (got, profiled) = profile_shape(got);
                let want: BTreeMap<u64, String> = holders
                    .iter()
                    .enumerate()
                    .map(|(shard, holder)| (shard as u64, holder.clone()))
                    .collect();
                if profiled != want {
                    check.failures.push(format!(
                        "profile {body}\n  cluster node {node}: shards profiled on {profiled:?}, held by {want:?}"
                    ));
                }
                if let Some(diff) = first_diff(&expected, &got) {
                    check.failures.push(format!(
                        "profile {body}\n  cluster node {node} vs the single node: {diff}"
                    ));
                    break;
                }
            }
        }

        eprintln!(
            "seed {seed}: {}; {} requests, {} answered with an error",
            corpus.describe(),
            check.requests,
            check.errors
        );
        total_requests += check.requests;
        if !check.failures.is_empty() {
            report.push_str(&format!(
                "\n=== seed {seed} ({} differing requests) — {}\nreproduce: TESSERA_PROP_SEED={seed} cargo test -p tessera --test cluster_equivalence\n",
                check.failures.len(),
                corpus.describe()
            ));
            for failure in check.failures.iter().take(5) {
                report.push_str(failure);
                report.push('\n');
            }
        }
        assert!(
            check.errors * 4 < check.requests,
            "seed {seed}: too many requests failed ({} of {}): the catalog tests little",
            check.errors,
            check.requests
        );
    }
    assert!(
        report.is_empty(),
        "the cluster answered differently:{report}"
    );
    eprintln!("{total_requests} requests, each on 4 nodes");
}
