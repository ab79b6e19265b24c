//! Aggregations equal an independent computation over the same documents: the test keeps a
//! model of the live documents (after deletes, full and partial updates) and computes every
//! expected bucket and metric itself — terms counts (sizes large enough to be exact),
//! histogram and date_histogram buckets (day and month, with and without empty buckets),
//! range counts, min/max/sum/avg/stats/value_count, filter/filters/missing/global counts and
//! metrics inside buckets — for 1 and 3 shards, random segment layouts, under random query
//! filters, sequentially and sliced. Counts are exact; float sums and averages agree to 1e-9
//! relative (the engine and the model add the same values in different orders). `hits.total`
//! is checked against the model too.
//!
//! Reproduce with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test aggs_oracle`.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{
    iso_millis, mode_all, mode_none, month_start, next_month, seeds, subset_diff_approx, Doc,
    Engine, Filter, LayoutPlan, Rng, TestIndex, DAY_MS, FLOAT_REL,
};
use serde_json::{json, Map, Value};
use tessera_search::concurrent::ConcurrencySettings;

const CASES: usize = 6;

/// The aggregations of every request, by name. `by_color` (metrics under a multi-valued
/// parent) only with `multi_valued_parent`.
fn aggs(multi_valued_parent: bool) -> Value {
    let mut aggs: Value = serde_json::from_str(
        r#"{
        "colors": {"terms": {"field": "color", "size": 100}},
        "users": {"terms": {"field": "user", "size": 10000}},
        "ns": {"terms": {"field": "n", "size": 5000}},
        "flags": {"terms": {"field": "flag"}},
        "nums_terms": {"terms": {"field": "nums", "size": 100}},
        "n_hist": {"histogram": {"field": "n", "interval": 100, "min_doc_count": 1}},
        "n_hist_filled": {"histogram": {"field": "n", "interval": 250}},
        "x_hist": {"histogram": {"field": "x", "interval": 1000, "min_doc_count": 1}},
        "nums_hist": {"histogram": {"field": "nums", "interval": 10, "min_doc_count": 1}},
        "price_hist": {"histogram": {"field": "price", "interval": 250, "min_doc_count": 1}},
        "days": {"date_histogram": {"field": "ts", "calendar_interval": "day", "min_doc_count": 1}},
        "days_filled": {"date_histogram": {"field": "ts", "calendar_interval": "1d"}},
        "months": {"date_histogram": {"field": "ts", "calendar_interval": "month"}},
        "n_ranges": {"range": {"field": "n", "ranges": [
            {"to": -500}, {"from": -500, "to": 0}, {"from": 0, "to": 500}, {"from": 500},
            {"from": -100, "to": 100}
        ]}},
        "x_ranges": {"range": {"field": "x", "ranges": [{"to": -2500.5}, {"from": -2500.5, "to": 7000}]}},
        "n_min": {"min": {"field": "n"}},
        "n_max": {"max": {"field": "n"}},
        "n_sum": {"sum": {"field": "n"}},
        "n_avg": {"avg": {"field": "n"}},
        "n_stats": {"stats": {"field": "n"}},
        "n_count": {"value_count": {"field": "n"}},
        "x_stats": {"stats": {"field": "x"}},
        "x_sum": {"sum": {"field": "x"}},
        "x_avg": {"avg": {"field": "x"}},
        "price_stats": {"stats": {"field": "price"}},
        "nums_stats": {"stats": {"field": "nums"}},
        "nums_count": {"value_count": {"field": "nums"}},
        "color_count": {"value_count": {"field": "color"}},
        "user_count": {"value_count": {"field": "user"}},
        "ts_min": {"min": {"field": "ts"}},
        "ts_max": {"max": {"field": "ts"}},
        "red": {"filter": {"term": {"color": "red"}}, "aggs": {
            "x_sum": {"sum": {"field": "x"}}, "price_avg": {"avg": {"field": "price"}}
        }},
        "no_user": {"missing": {"field": "user"}, "aggs": {"n_stats": {"stats": {"field": "n"}}}},
        "no_price": {"missing": {"field": "price"}},
        "everything": {"global": {}, "aggs": {
            "n_avg": {"avg": {"field": "n"}}, "x_count": {"value_count": {"field": "x"}}
        }},
        "parts": {"filters": {"filters": {
            "flagged": {"term": {"flag": true}}, "priced": {"exists": {"field": "price"}}
        }, "other_bucket": true}},
        "by_flag": {"terms": {"field": "flag"}, "aggs": {
            "x_avg": {"avg": {"field": "x"}},
            "price_sum": {"sum": {"field": "price"}},
            "n_stats": {"stats": {"field": "n"}},
            "nums_count": {"value_count": {"field": "nums"}}
        }},
        "by_color": {"terms": {"field": "color", "size": 100}, "aggs": {
            "x_avg": {"avg": {"field": "x"}},
            "price_sum": {"sum": {"field": "price"}},
            "n_stats": {"stats": {"field": "n"}},
            "nums_count": {"value_count": {"field": "nums"}}
        }},
        "by_month": {"date_histogram": {"field": "ts", "calendar_interval": "month"}, "aggs": {
            "colors": {"terms": {"field": "color", "size": 100}}
        }}
    }"#,
    )
    .expect("the aggregations are JSON");
    if !multi_valued_parent {
        aggs.as_object_mut().expect("an object").remove("by_color");
    }
    aggs
}

// ---- the model's answers ----

/// Neumaier's compensated sum: the model's best estimate of the exact sum.
fn sum(values: &[f64]) -> f64 {
    let mut s = 0.0f64;
    let mut c = 0.0f64;
    for &v in values {
        let t = s + v;
        if s.abs() >= v.abs() {
            c += (s - t) + v;
        } else {
            c += (v - t) + s;
        }
        s = t;
    }
    s + c
}

fn number(v: f64) -> Value {
    json!(v)
}

/// `min`/`max`/`sum`/`avg`/`stats`/`value_count` over `values`.
fn metric(kind: &str, values: &[f64], date: bool) -> Value {
    let min = values.iter().cloned().reduce(f64::min);
    let max = values.iter().cloned().reduce(f64::max);
    let total = sum(values);
    let avg = (!values.is_empty()).then(|| total / values.len() as f64);
    let single = |v: Option<f64>| {
        let mut out = json!({ "value": v.map_or(Value::Null, number) });
        if let (Some(v), true) = (v, date) {
            out["value_as_string"] = json!(iso_millis(v as i64));
        }
        out
    };
    match kind {
        "min" => single(min),
        "max" => single(max),
        "sum" => json!({ "value": total }),
        "avg" => single(avg),
        "value_count" => json!({ "value": values.len() }),
        "stats" => json!({
            "count": values.len(),
            "min": min.map_or(Value::Null, number),
            "max": max.map_or(Value::Null, number),
            "avg": avg.map_or(Value::Null, number),
            "sum": total
        }),
        other => panic!("no model for {other}"),
    }
}

/// Terms buckets from `key → docs`: count desc, key asc; all buckets (sizes are large).
fn terms<K: Ord + Clone>(
    groups: &BTreeMap<K, Vec<&Doc>>,
    key_json: impl Fn(&K) -> Map<String, Value>,
    subs: impl Fn(&[&Doc]) -> Map<String, Value>,
) -> Value {
    let mut entries: Vec<(&K, &Vec<&Doc>)> = groups.iter().collect();
    entries.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let buckets: Vec<Value> = entries
        .into_iter()
        .map(|(k, docs)| {
            let mut bucket = key_json(k);
            bucket.insert("doc_count".into(), json!(docs.len()));
            bucket.extend(subs(docs));
            Value::Object(bucket)
        })
        .collect();
    json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": 0, "buckets": buckets})
}

fn no_subs(_: &[&Doc]) -> Map<String, Value> {
    Map::new()
}

/// Docs grouped by each distinct key a doc has (a doc counts once per key).
fn group<'a, K: Ord>(docs: &[&'a Doc], keys: impl Fn(&Doc) -> Vec<K>) -> BTreeMap<K, Vec<&'a Doc>> {
    let mut groups: BTreeMap<K, Vec<&'a Doc>> = BTreeMap::new();
    for doc in docs {
        let distinct: BTreeSet<K> = keys(doc).into_iter().collect();
        for k in distinct {
            groups.entry(k).or_default().push(doc);
        }
    }
    groups
}

/// Histogram buckets (`floor(v / interval) * interval`), filled with empty buckets between
/// the first and last when `filled`.
fn histogram(docs: &[&Doc], field: &str, interval: f64, filled: bool) -> Value {
    let groups = group(docs, |d| {
        d.numbers(field)
            .iter()
            .map(|v| (v / interval).floor() as i64)
            .collect()
    });
    let mut counts: BTreeMap<i64, usize> = groups.iter().map(|(k, v)| (*k, v.len())).collect();
    if filled {
        if let (Some(&first), Some(&last)) = (counts.keys().next(), counts.keys().last()) {
            for k in first..=last {
                counts.entry(k).or_insert(0);
            }
        }
    }
    let buckets: Vec<Value> = counts
        .into_iter()
        .map(|(k, c)| json!({"key": k as f64 * interval, "doc_count": c}))
        .collect();
    json!({ "buckets": buckets })
}

/// Date histogram buckets by `round` (bucket start of a date) and `next` (the next start).
fn date_histogram(
    docs: &[&Doc],
    round: impl Fn(i64) -> i64,
    next: impl Fn(i64) -> i64,
    filled: bool,
    subs: impl Fn(&[&Doc]) -> Map<String, Value>,
) -> Value {
    let mut groups = group(docs, |d| d.ts.map(&round).into_iter().collect());
    if filled {
        if let (Some(&first), Some(&last)) = (groups.keys().next(), groups.keys().last()) {
            let mut k = first;
            while k < last {
                groups.entry(k).or_default();
                k = next(k);
            }
        }
    }
    let buckets: Vec<Value> = groups
        .iter()
        .map(|(k, docs)| {
            let mut bucket = Map::new();
            bucket.insert("key_as_string".into(), json!(iso_millis(*k)));
            bucket.insert("key".into(), json!(k));
            bucket.insert("doc_count".into(), json!(docs.len()));
            bucket.extend(subs(docs));
            Value::Object(bucket)
        })
        .collect();
    json!({ "buckets": buckets })
}

/// Range buckets, in (from, to) order as OpenSearch sorts them.
fn ranges(docs: &[&Doc], field: &str, bounds: &[(Option<f64>, Option<f64>)]) -> Value {
    let mut sorted = bounds.to_vec();
    let lo = |b: &(Option<f64>, Option<f64>)| b.0.unwrap_or(f64::NEG_INFINITY);
    let hi = |b: &(Option<f64>, Option<f64>)| b.1.unwrap_or(f64::INFINITY);
    sorted.sort_by(|a, b| lo(a).total_cmp(&lo(b)).then(hi(a).total_cmp(&hi(b))));
    let buckets: Vec<Value> = sorted
        .iter()
        .map(|b| {
            let count = docs
                .iter()
                .filter(|d| d.numbers(field).iter().any(|&v| lo(b) <= v && v < hi(b)))
                .count();
            let mut bucket = Map::new();
            if let Some(from) = b.0 {
                bucket.insert("from".into(), json!(from));
            }
            if let Some(to) = b.1 {
                bucket.insert("to".into(), json!(to));
            }
            bucket.insert("doc_count".into(), json!(count));
            Value::Object(bucket)
        })
        .collect();
    json!({ "buckets": buckets })
}

fn values(docs: &[&Doc], field: &str) -> Vec<f64> {
    docs.iter().flat_map(|d| d.numbers(field)).collect()
}

fn keyword_values(docs: &[&Doc], field: &str) -> usize {
    docs.iter().map(|d| d.keywords(field).len()).sum()
}

/// The expected `aggregations` for the live docs matching `filter`.
fn expected(t: &TestIndex, filter: &Filter) -> Map<String, Value> {
    let docs: Vec<&Doc> = t.matching(filter).collect();
    let all: Vec<&Doc> = t.live.values().collect();
    let key = |k: &String| {
        let mut m = Map::new();
        m.insert("key".into(), json!(k));
        m
    };
    let int_key = |k: &i64| {
        let mut m = Map::new();
        m.insert("key".into(), json!(k));
        m
    };
    let mut out = Map::new();
    out.insert(
        "colors".into(),
        terms(&group(&docs, |d| d.color.clone()), key, no_subs),
    );
    out.insert(
        "users".into(),
        terms(&group(&docs, |d| d.keywords("user")), key, no_subs),
    );
    out.insert(
        "ns".into(),
        terms(
            &group(&docs, |d| d.n.into_iter().collect()),
            int_key,
            no_subs,
        ),
    );
    out.insert(
        "flags".into(),
        terms(
            &group(&docs, |d| d.flag.map(|b| b as i64).into_iter().collect()),
            |k| {
                let mut m = Map::new();
                m.insert("key".into(), json!(k));
                m.insert(
                    "key_as_string".into(),
                    json!(if *k == 1 { "true" } else { "false" }),
                );
                m
            },
            no_subs,
        ),
    );
    out.insert(
        "nums_terms".into(),
        terms(&group(&docs, |d| d.nums.clone()), int_key, no_subs),
    );
    out.insert("n_hist".into(), histogram(&docs, "n", 100.0, false));
    out.insert("n_hist_filled".into(), histogram(&docs, "n", 250.0, true));
    out.insert("x_hist".into(), histogram(&docs, "x", 1000.0, false));
    out.insert("nums_hist".into(), histogram(&docs, "nums", 10.0, false));
    out.insert("price_hist".into(), histogram(&docs, "price", 250.0, false));
    let day = |t: i64| t.div_euclid(DAY_MS) * DAY_MS;
    out.insert(
        "days".into(),
        date_histogram(&docs, day, |k| k + DAY_MS, false, no_subs),
    );
    out.insert(
        "days_filled".into(),
        date_histogram(&docs, day, |k| k + DAY_MS, true, no_subs),
    );
    out.insert(
        "months".into(),
        date_histogram(&docs, month_start, next_month, true, no_subs),
    );
    out.insert(
        "n_ranges".into(),
        ranges(
            &docs,
            "n",
            &[
                (None, Some(-500.0)),
                (Some(-500.0), Some(0.0)),
                (Some(0.0), Some(500.0)),
                (Some(500.0), None),
                (Some(-100.0), Some(100.0)),
            ],
        ),
    );
    out.insert(
        "x_ranges".into(),
        ranges(
            &docs,
            "x",
            &[(None, Some(-2500.5)), (Some(-2500.5), Some(7000.0))],
        ),
    );
    for (name, kind, field) in [
        ("n_min", "min", "n"),
        ("n_max", "max", "n"),
        ("n_sum", "sum", "n"),
        ("n_avg", "avg", "n"),
        ("n_stats", "stats", "n"),
        ("n_count", "value_count", "n"),
        ("x_stats", "stats", "x"),
        ("x_sum", "sum", "x"),
        ("x_avg", "avg", "x"),
        ("price_stats", "stats", "price"),
        ("nums_stats", "stats", "nums"),
        ("nums_count", "value_count", "nums"),
        ("ts_min", "min", "ts"),
        ("ts_max", "max", "ts"),
    ] {
        out.insert(
            name.into(),
            metric(kind, &values(&docs, field), field == "ts"),
        );
    }
    out.insert(
        "color_count".into(),
        json!({"value": keyword_values(&docs, "color")}),
    );
    out.insert(
        "user_count".into(),
        json!({"value": keyword_values(&docs, "user")}),
    );
    let red: Vec<&Doc> = docs
        .iter()
        .copied()
        .filter(|d| d.color.iter().any(|c| c == "red"))
        .collect();
    out.insert(
        "red".into(),
        json!({
            "doc_count": red.len(),
            "x_sum": metric("sum", &values(&red, "x"), false),
            "price_avg": metric("avg", &values(&red, "price"), false)
        }),
    );
    let no_user: Vec<&Doc> = docs.iter().copied().filter(|d| d.user.is_none()).collect();
    out.insert(
        "no_user".into(),
        json!({"doc_count": no_user.len(), "n_stats": metric("stats", &values(&no_user, "n"), false)}),
    );
    out.insert(
        "no_price".into(),
        json!({"doc_count": docs.iter().filter(|d| d.price.is_none()).count()}),
    );
    out.insert(
        "everything".into(),
        json!({
            "doc_count": all.len(),
            "n_avg": metric("avg", &values(&all, "n"), false),
            "x_count": metric("value_count", &values(&all, "x"), false)
        }),
    );
    let flagged = |d: &&&Doc| d.flag == Some(true);
    let priced = |d: &&&Doc| d.price.is_some();
    out.insert(
        "parts".into(),
        json!({"buckets": {
            "flagged": {"doc_count": docs.iter().filter(flagged).count()},
            "priced": {"doc_count": docs.iter().filter(priced).count()},
            "_other_": {"doc_count": docs.iter().filter(|d| !flagged(d) && !priced(d)).count()}
        }}),
    );
    let bucket_metrics = |bucket: &[&Doc]| {
        let mut m = Map::new();
        m.insert("x_avg".into(), metric("avg", &values(bucket, "x"), false));
        m.insert(
            "price_sum".into(),
            metric("sum", &values(bucket, "price"), false),
        );
        m.insert(
            "n_stats".into(),
            metric("stats", &values(bucket, "n"), false),
        );
        m.insert(
            "nums_count".into(),
            metric("value_count", &values(bucket, "nums"), false),
        );
        m
    };
    out.insert(
        "by_flag".into(),
        terms(
            &group(&docs, |d| d.flag.map(|b| b as i64).into_iter().collect()),
            int_key,
            bucket_metrics,
        ),
    );
    out.insert(
        "by_color".into(),
        terms(&group(&docs, |d| d.color.clone()), key, bucket_metrics),
    );
    out.insert(
        "by_month".into(),
        date_histogram(&docs, month_start, next_month, true, |bucket| {
            let mut m = Map::new();
            m.insert(
                "colors".into(),
                terms(&group(bucket, |d| d.color.clone()), key, no_subs),
            );
            m
        }),
    );
    out
}

/// Runs the aggregations under `filter` with `settings` and compares with the model. Returns
/// the problems found (none when the response hit the known aggregation panic and
/// `skip_known_bug`).
fn check(
    engine: &Engine,
    t: &TestIndex,
    filter: &Filter,
    settings: ConcurrencySettings,
    aggs: &Value,
) -> Vec<String> {
    let body = json!({
        "query": filter.to_json(), "size": 0, "track_total_hits": true, "aggs": aggs
    });
    let response = engine.search(&engine.targets(&t.index), &body, settings);
    let mut problems = Vec::new();
    if response.get("error").is_some() || response["_shards"]["failed"] != json!(0) {
        let failure = response.get("error").unwrap_or(&response["_shards"]);
        problems.push(format!("query {}: failed {failure}", body["query"]));
        return problems;
    }
    let count = t.matching(filter).count();
    if response["hits"]["total"] != json!({"value": count, "relation": "eq"}) {
        problems.push(format!(
            "query {}: hits.total {} but the model has {count} matches",
            body["query"], response["hits"]["total"]
        ));
    }
    for (name, want) in expected(t, filter) {
        let Some(request) = aggs.get(&name) else {
            continue;
        };
        let got = &response["aggregations"][&name];
        if let Some(diff) = subset_diff_approx(&want, got, FLOAT_REL) {
            problems.push(format!(
                "query {}, aggregation {name} {request}: {diff}",
                body["query"]
            ));
        }
    }
    problems
}

fn modes(rng: &mut Rng) -> Vec<(String, ConcurrencySettings)> {
    let slices = rng.usize(2, 8);
    vec![
        ("none".into(), mode_none()),
        (format!("all/{slices}"), mode_all(slices)),
        ("all/0".into(), mode_all(0)),
    ]
}

/// Segments of at most 1024 live documents and metrics only under single-valued parents: the
/// configurations the known aggregation bug (see the ignored test below) leaves alone.
#[test]
fn aggregations_equal_the_model() {
    let engine = Engine::new();
    let aggs = aggs(false);
    let mut failures = Vec::new();
    let mut checks = 0;
    let mut shard_counts = BTreeSet::new();
    for seed in seeds(0xA6650, CASES) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        shard_counts.insert(shards);
        // ids route evenly: about 800 docs per shard at most
        let docs = rng.usize(300, 800 * shards as usize);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let mut filters = vec![Filter::All];
        for _ in 0..4 {
            filters.push(Filter::random(&mut rng, t.users, 2));
        }
        for filter in &filters {
            for (name, settings) in modes(&mut rng) {
                checks += 1;
                for problem in check(&engine, &t, filter, settings, &aggs) {
                    failures.push(format!(
                        "seed {seed} ({}), mode {name}: {problem}",
                        t.describe()
                    ));
                }
            }
        }
    }
    eprintln!("{checks} checks; shard counts {shard_counts:?}");
    assert!(
        failures.is_empty(),
        "{} aggregation results differ from the model; reproduce with TESSERA_PROP_SEED=<seed>:\n{}",
        failures.len(),
        failures
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The layouts of [`aggregations_equal_the_model`] with metrics under a multi-valued parent
/// (`by_color`: a doc is collected once per color), then force-merged segments of 2000+ live
/// documents (aggregations read their columns in several blocks).
#[test]
#[ignore = "bug: aggregations over optional or multi-valued fields panic with `index out of bounds` (crates/tessera-aggs/src/values.rs:176) or silently count values twice when a column is read more than once per segment. Silent: seed 197089001, query {\"bool\":{\"filter\":[{\"range\":{\"n\":{\"gte\":37,\"lte\":634}}},{\"bool\":{\"filter\":[{\"terms\":{\"user\":[\"u00146\",\"u00101\",\"u00075\",\"u00110\",\"u00190\"]}},{\"match_all\":{}},{\"term\":{\"color\":\"yellow\"}}]}}]}}: terms color > avg x gives 6052.461333333333 for the yellow bucket, the documents' average is 5988.509. Panics: any aggregation on a sparse field over a segment with more than 1024 matches (e.g. {\"aggs\":{\"a\":{\"avg\":{\"field\":\"n\"}}}} on a force-merged 2500-doc shard, seed 192295063); sub-aggregations under parents that put a doc in several buckets; numeric terms with min_doc_count 0. for_each_in_column never clears scratch.docs/scratch.rows and tantivy's row_ids_for_docs appends to them. Fixed on branches aggs-buckets (2abda45) and aggs-metrics (4ac9fa9), not on main yet"]
fn aggregations_with_multi_bucket_parents_and_big_segments_equal_the_model() {
    let engine = Engine::new();
    let aggs = aggs(true);
    let mut wrong = Vec::new();
    let mut failed = Vec::new();
    let mut record = |seed: u64, t: &TestIndex, name: &str, problems: Vec<String>| {
        for problem in problems {
            let line = format!(
                "seed {seed} ({}), mode {name}: {}",
                t.describe(),
                &problem[..problem.len().min(900)]
            );
            if problem.contains(": failed {") {
                failed.push(line);
            } else {
                wrong.push(line);
            }
        }
    };
    // the layouts of the main test
    for seed in seeds(0xA6650, CASES) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(300, 800 * shards as usize);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let mut filters = vec![Filter::All];
        for _ in 0..4 {
            filters.push(Filter::random(&mut rng, t.users, 2));
        }
        for filter in &filters {
            for (name, settings) in modes(&mut rng) {
                record(seed, &t, &name, check(&engine, &t, filter, settings, &aggs));
            }
        }
    }
    // big segments
    for seed in seeds(0xB16A66, 3) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let mut plan = LayoutPlan::random(&mut rng, 2500 * shards as usize, shards);
        plan.force_merge = Some(1);
        let t = TestIndex::build(&mut rng, plan);
        for filter in [Filter::All, Filter::random(&mut rng, t.users, 1)] {
            for (name, settings) in modes(&mut rng) {
                record(
                    seed,
                    &t,
                    &name,
                    check(&engine, &t, &filter, settings, &aggs),
                );
            }
        }
    }
    assert!(
        wrong.is_empty() && failed.is_empty(),
        "{} wrong results, {} failed searches:\n{}",
        wrong.len(),
        failed.len(),
        wrong
            .iter()
            .take(3)
            .chain(failed.iter().take(2))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
