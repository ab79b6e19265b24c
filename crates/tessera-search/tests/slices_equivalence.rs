//! Concurrent segment search must not change answers: for random corpora laid out in random
//! segments (refresh points, deletes, updates, force merges, 1 or 3 shards), every request of a
//! random catalog gives the same JSON response (less `took`) with `mode: none` as with
//! `mode: all` and `max_slice_count` 1..=8 and 0 (Lucene's heuristic), and with `auto`.
//!
//! The catalog: match_all, term(s), ranges, exists, bool combinations, scored `match`
//! queries, field sorts (every type, both orders, missing first/last/value, multi-value
//! modes, `_score`, `_doc`), from/size, search_after, track_total_hits (false, true, numbers
//! and exactly the match count), post_filter, min_score, track_scores, and aggregation trees
//! of every implemented type with sub-aggregations and orders by sub-aggregations.
//!
//! `terminate_after` is not in the catalog: as in OpenSearch, it applies to each slice of a
//! concurrent search ("each segment slice on the shard collects up to the specified number of
//! documents"), so totals and `terminated_early` legitimately depend on slicing.
//! [`terminate_after_bounds`] checks the invariants that hold for every slice count instead.
//!
//! Reproduce a failure with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test
//! slices_equivalence`; the message names the seed, the layout on disk and the request.

mod common;

use common::{
    first_diff, mode_none, random_aggs, random_query, random_sort, seeds, sliced_modes, Engine,
    Filter, LayoutPlan, Rng, TestIndex, COLORS, VOCAB,
};
use serde_json::{json, Value};

/// Seeds per run (each builds an index and runs ~60 requests × 11 settings).
const CASES: usize = 6;

/// One random request of the catalog.
fn random_request(rng: &mut Rng, users: u64) -> Value {
    let mut body = json!({ "query": random_query(rng, users) });
    let with_aggs = rng.chance(0.4);
    if with_aggs {
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
    if rng.chance(0.2) {
        body["post_filter"] = json!({"term": {"color": rng.pick(COLORS)}});
    }
    if rng.chance(0.1) {
        body["query"] = json!({"match": {"body": rng.pick(VOCAB)}});
        body["min_score"] = json!(rng.range(1, 30) as f64 / 10.0);
    }
    if rng.chance(0.3) {
        body["_source"] = json!(["n", "color"]);
    }
    body
}

struct Failures {
    seed: u64,
    layout: String,
    items: Vec<String>,
}

impl Failures {
    fn check(&mut self, engine: &Engine, t: &TestIndex, body: &Value) -> Value {
        let targets = engine.targets(&t.index);
        let baseline = engine.search(&targets, body, mode_none());
        for (name, settings) in sliced_modes() {
            let sliced = engine.search(&targets, body, settings);
            if let Some(diff) = first_diff(&baseline, &sliced) {
                self.items.push(format!(
                    "request {body}\n  mode none vs {name}: {diff}\n  mode none response: {}",
                    truncate(&baseline.to_string(), 1500)
                ));
                break;
            }
        }
        baseline
    }
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

fn report(failures: Vec<Failures>, test: &str) {
    let failing: Vec<&Failures> = failures.iter().filter(|f| !f.items.is_empty()).collect();
    if failing.is_empty() {
        return;
    }
    let mut message = String::new();
    for f in &failing {
        message.push_str(&format!(
            "\n=== seed {} ({} failing requests) — {}\nreproduce: TESSERA_PROP_SEED={} cargo test -p tessera-search --test slices_equivalence {test}\n",
            f.seed,
            f.items.len(),
            f.layout,
            f.seed
        ));
        for item in f.items.iter().take(4) {
            message.push_str(item);
            message.push('\n');
        }
    }
    panic!(
        "{} of {} seeds gave different answers with slicing:{message}",
        failing.len(),
        failures.len()
    );
}

/// The design's promise taken literally: sliced and sequential answers are the same JSON,
/// floats included (sums are exact, sketches grouping-independent).
#[test]
fn sliced_search_is_bit_identical() {
    let test = "sliced_search_is_bit_identical";
    let engine = Engine::new();
    let mut all = Vec::new();
    let mut errors = 0;
    let mut requests = 0;
    for seed in seeds(0x511CE5, CASES) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (300, 2000), &[1, 1, 3]);
        let mut failures = Failures {
            seed,
            layout: t.describe(),
            items: Vec::new(),
        };
        for _ in 0..50 {
            let body = random_request(&mut rng, t.users);
            let baseline = failures.check(&engine, &t, &body);
            requests += 1;
            if baseline.get("error").is_some() {
                errors += 1;
                // a bad request is fine in a random catalog, a server error (a panic) is not
                if baseline["status"].as_u64().is_none_or(|s| s >= 500) {
                    failures
                        .items
                        .push(format!("request {body}\n  failed: {baseline}"));
                }
                eprintln!("seed {seed}: request {body} failed: {baseline}");
                continue;
            }
            // search_after from the last hit of a sorted page
            if let Some(sort) = body.get("sort").filter(|_| body.get("from").is_none()) {
                let last = baseline["hits"]["hits"]
                    .as_array()
                    .and_then(|h| h.last())
                    .and_then(|h| h.get("sort"))
                    .cloned();
                if let Some(after) = last {
                    let next = json!({
                        "query": body["query"], "sort": sort, "size": rng.range(1, 20),
                        "search_after": after, "track_total_hits": false
                    });
                    failures.check(&engine, &t, &next);
                    requests += 1;
                }
            }
        }
        // track_total_hits just below and above the number of matches
        for _ in 0..6 {
            let query = random_query(&mut rng, t.users);
            for body in threshold_requests(&engine, &t, &query, &[-1, 1]) {
                failures.check(&engine, &t, &body);
                requests += 1;
            }
        }
        // filters only (constant-score): the early-terminating collection path
        for _ in 0..6 {
            let filter = Filter::random(&mut rng, t.users, 2);
            let body = json!({
                "query": {"constant_score": {"filter": filter.to_json()}},
                "size": rng.range(0, 15), "track_total_hits": *rng.pick(&[json!(true), json!(10), json!(100)])
            });
            failures.check(&engine, &t, &body);
            requests += 1;
        }
        all.push(failures);
    }
    eprintln!("{requests} requests, {errors} answered with an error");
    assert!(
        errors * 10 <= requests,
        "too many requests of the catalog fail ({errors} of {requests}): the catalog is wrong"
    );
    report(all, test);
}

/// Requests with `track_total_hits` set to the query's match count plus each of `offsets`
/// (sizes 0 and 3), the count taken from a sequential search.
fn threshold_requests(
    engine: &Engine,
    t: &TestIndex,
    query: &Value,
    offsets: &[i64],
) -> Vec<Value> {
    let count = engine.search(
        &engine.targets(&t.index),
        &json!({"query": query, "size": 0, "track_total_hits": true}),
        mode_none(),
    );
    let Some(n) = count["hits"]["total"]["value"].as_i64() else {
        return Vec::new();
    };
    let mut bodies = Vec::new();
    for offset in offsets {
        let threshold = n + offset;
        if threshold < 1 {
            continue;
        }
        for size in [0, 3] {
            bodies.push(json!({"query": query, "size": size, "track_total_hits": threshold}));
        }
    }
    bodies
}

/// `track_total_hits` equal to the number of matches: the count is exact, so the relation is
/// `eq` (Lucene's collectors switch to GREATER_THAN_OR_EQUAL_TO only once the count exceeds
/// the threshold), whatever the slicing.
#[test]
fn track_total_hits_at_the_exact_count() {
    let engine = Engine::new();
    let mut all = Vec::new();
    for seed in seeds(0x70741, CASES) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (300, 2000), &[1, 1, 3]);
        let mut failures = Failures {
            seed,
            layout: t.describe(),
            items: Vec::new(),
        };
        for _ in 0..10 {
            let query = if rng.chance(0.5) {
                json!({"constant_score": {"filter": Filter::random(&mut rng, t.users, 2).to_json()}})
            } else {
                random_query(&mut rng, t.users)
            };
            for body in threshold_requests(&engine, &t, &query, &[0]) {
                let response = failures.check(&engine, &t, &body);
                let want = json!({"value": body["track_total_hits"], "relation": "eq"});
                if response["hits"]["total"] != want {
                    failures.items.push(format!(
                        "request {body}\n  mode none: hits.total {} instead of {want}",
                        response["hits"]["total"]
                    ));
                }
            }
        }
        all.push(failures);
    }
    report(all, "track_total_hits_at_the_exact_count");
}

/// `terms` with `min_doc_count: 0` under a parent bucket: the zero-count buckets hold every
/// key of the shard's field, whatever the slicing (OpenSearch adds, for each parent bucket, the
/// keys of all the shard's segments).
#[test]
fn terms_min_doc_count_0_under_a_parent() {
    let engine = Engine::new();
    let mut all = Vec::new();
    for seed in seeds(0x3E60, CASES) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (300, 2000), &[1, 1, 3]);
        let mut failures = Failures {
            seed,
            layout: t.describe(),
            items: Vec::new(),
        };
        for _ in 0..6 {
            let parent = *rng.pick(&["ts", "user", "color", "n"]);
            let sub = *rng.pick(&["n", "nums", "user", "color"]);
            let body = json!({
                "query": Filter::random(&mut rng, t.users, 1).to_json(), "size": 0,
                "aggs": {"p": {"terms": {"field": parent, "size": 500}, "aggs": {"z": {"terms": {
                    "field": sub, "size": 50, "order": {"_key": "desc"}, "min_doc_count": 0
                }}}}}
            });
            failures.check(&engine, &t, &body);
        }
        all.push(failures);
    }
    report(all, "terms_min_doc_count_0_under_a_parent");
}

/// The negation of a conjunction that holds a range (`must_not` of a `bool.filter` with a
/// `range` and another clause) counts what the model counts, without a server error.
#[test]
fn must_not_of_a_conjunction_with_a_range() {
    let engine = Engine::new();
    let mut problems = Vec::new();
    for seed in seeds(0xE8C1, 3) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (300, 1500), &[1, 3]);
        let targets = engine.targets(&t.index);
        for _ in 0..8 {
            let lo = rng.range(-1100, 900);
            let range = Filter::NBetween(lo, lo + rng.range(0, 1200));
            let other = match rng.below(3) {
                0 => Filter::All,
                1 => Filter::Exists("user"),
                _ => Filter::XAbove(rng.range(-12_000, 8_000) as f64),
            };
            let filter = Filter::Not(Box::new(Filter::And(vec![other, range])));
            let want = json!({"value": t.matching(&filter).count(), "relation": "eq"});
            let body = json!({"query": filter.to_json(), "size": 0, "track_total_hits": true});
            for (name, settings) in [("none", mode_none()), ("all/3", common::mode_all(3))] {
                let r = engine.search(&targets, &body, settings);
                if r["hits"]["total"] != want {
                    problems.push(format!(
                        "seed {seed} ({}), mode {name}, request {body}: expected {want}, got {}",
                        t.describe(),
                        truncate(&r.to_string(), 400)
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems; first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Segments larger than two partitions (2 × 16,384 docs) are split into doc-id ranges when a
/// slice count is forced: a force-merged shard of ~40k docs with deletes, searched with 2..8
/// slices, must answer as the sequential search does.
#[test]
fn partitioned_segment_equals_sequential_search() {
    let engine = Engine::new();
    let mut all = Vec::new();
    for seed in seeds(0xB16_5E6, 1) {
        let mut rng = Rng::new(seed);
        let plan = LayoutPlan {
            docs: rng.usize(36_000, 42_000),
            shards: 1,
            refreshes: rng.usize(1, 4),
            churn: 0.3,
            force_merge: Some(1),
            churn_after_merge: true,
        };
        let t = TestIndex::build(&mut rng, plan);
        let snapshot = t.index.shard(0).unwrap().snapshot();
        let slices = tessera_search::shard::plan_shard_slices(&snapshot, 4);
        assert!(
            slices
                .iter()
                .flat_map(|s| &s.parts)
                .any(|p| p.docs.start > 0),
            "the segment should be split into ranges: {slices:?} ({})",
            t.describe()
        );
        let mut failures = Failures {
            seed,
            layout: t.describe(),
            items: Vec::new(),
        };
        for _ in 0..25 {
            let body = random_request(&mut rng, t.users);
            failures.check(&engine, &t, &body);
        }
        all.push(failures);
    }
    report(all, "partitioned_segment_equals_sequential_search");
}

/// `terminate_after` is applied per slice (as OpenSearch documents for concurrent search), so
/// only bounds hold across slice counts: the total is between Σ min(T, matches of shard) and
/// the exact count; a search that did not terminate early counted everything; one that did
/// terminate had a shard with at least T matches; hits are matches. With one slice per shard
/// (`mode: none`) termination is exact: `terminated_early` iff some shard has ≥ T matches.
#[test]
fn terminate_after_bounds() {
    let engine = Engine::new();
    let mut problems = Vec::new();
    for seed in seeds(0x7E57_AF7E, 4) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (300, 1500), &[1, 3]);
        let targets = engine.targets(&t.index);
        for _ in 0..12 {
            let filter = Filter::random(&mut rng, t.users, 2);
            let limit = *rng.pick(&[1u64, 5, 50, 500]);
            let size = *rng.pick(&[0, 3, 10]);
            let mut per_shard = vec![0u64; t.plan.shards as usize];
            for doc in t.matching(&filter) {
                per_shard[t.shard_of(&doc.id) as usize] += 1;
            }
            let exact: u64 = per_shard.iter().sum();
            let floor: u64 = per_shard.iter().map(|&m| m.min(limit)).sum();
            let any_reaches = per_shard.iter().any(|&m| m >= limit);
            let body = json!({
                "query": filter.to_json(), "terminate_after": limit, "size": size,
                "track_total_hits": true
            });
            let mut modes = sliced_modes();
            modes.insert(0, ("none".into(), mode_none()));
            for (name, settings) in modes {
                let r = engine.search(&targets, &body, settings);
                let total = r["hits"]["total"]["value"].as_u64();
                let early = r["terminated_early"].as_bool();
                let ctx = || {
                    format!(
                        "seed {seed}, {}, mode {name}, request {body}: response {}",
                        t.describe(),
                        truncate(&r.to_string(), 800)
                    )
                };
                let (Some(total), Some(early)) = (total, early) else {
                    problems.push(format!("no total/terminated_early: {}", ctx()));
                    continue;
                };
                if total < floor || total > exact {
                    problems.push(format!(
                        "total {total} outside [{floor}, {exact}]: {}",
                        ctx()
                    ));
                }
                if !early && total != exact {
                    problems.push(format!(
                        "not terminated early but total {total} != {exact}: {}",
                        ctx()
                    ));
                }
                if early && !any_reaches {
                    problems.push(format!(
                        "terminated early though no shard has {limit} matches: {}",
                        ctx()
                    ));
                }
                if name == "none" && early != any_reaches {
                    problems.push(format!(
                        "sequential terminated_early {early}, expected {any_reaches}: {}",
                        ctx()
                    ));
                }
                for hit in r["hits"]["hits"].as_array().into_iter().flatten() {
                    let id = hit["_id"].as_str().unwrap_or_default();
                    if !t.live.get(id).is_some_and(|d| filter.matches(d)) {
                        problems.push(format!("hit {id} does not match: {}", ctx()));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems; first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(6)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
