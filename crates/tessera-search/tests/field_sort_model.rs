//! Sorting by one numeric field (the path that skips documents which cannot enter the top-k
//! before building their keys) against a model: for random corpora and layouts, random
//! filters, both orders and several page sizes, the sort values of the returned hits are,
//! position by position, the best values of the matching documents, with `mode: none` and with
//! slices. A second sort field, where ties on the first decide nothing, is checked the same
//! way on the pair of values.
//!
//! A `match_all` sorted by a numeric field whose every live document has a value visits only
//! the documents whose value can make the top (see `SegmentSortKeys::top_candidates`): checked
//! against the model, and hit for hit (ids included, so ties keep index order) against the
//! same request with a `post_filter`, which takes the visit-everything path, and so is the
//! next page from a hit's sort values (`search_after`).
//!
//! Reproduce a failure with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test
//! field_sort_model`.

mod common;

use common::{mode_none, seeds, sliced_modes, Doc, Engine, Filter, Rng, TestIndex};
use serde_json::{json, Value};

/// The value of a sortable numeric field as the engine reads it.
fn value(doc: &Doc, field: &str) -> Option<f64> {
    match field {
        "n" => doc.n.map(|v| v as f64),
        "x" => doc.x,
        "price" => doc.price_field_value(),
        "ts" => doc.ts.map(|v| v as f64),
        other => panic!("not a sort field of the model: {other}"),
    }
}

/// The expected sort keys of the first `size` hits.
fn expected(t: &TestIndex, filter: &Filter, fields: &[(&str, bool)], size: usize) -> Vec<Value> {
    let mut keys: Vec<Vec<f64>> = t
        .live
        .values()
        .filter(|d| filter.matches(d))
        .filter_map(|d| fields.iter().map(|(f, _)| value(d, f)).collect())
        .collect();
    keys.sort_by(|a, b| {
        fields
            .iter()
            .enumerate()
            .map(|(i, (_, asc))| {
                let o = a[i].total_cmp(&b[i]);
                if *asc {
                    o
                } else {
                    o.reverse()
                }
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    keys.truncate(size);
    keys.into_iter().map(|k| json!(k)).collect()
}

fn actual(response: &Value) -> Vec<Value> {
    response["hits"]["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            let sort: Vec<f64> = h["sort"]
                .as_array()
                .expect("sort values")
                .iter()
                .map(|v| v.as_f64().expect("numeric sort value"))
                .collect();
            json!(sort)
        })
        .collect()
}

#[test]
fn numeric_field_sorts_return_the_best_values() {
    let engine = Engine::new();
    for seed in seeds(0x50_27, 4) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (50, 400), &[1, 3]);
        let layout = format!("{:?}", t.plan);
        let targets = engine.targets(&t.index);
        for _ in 0..25 {
            let filter = Filter::random(&mut rng, t.users, 2);
            let first = *rng.pick(&["n", "x", "price", "ts"]);
            let mut fields = vec![(first, rng.chance(0.5))];
            if rng.chance(0.3) {
                let second = *rng.pick(&["n", "x", "price", "ts"]);
                if second != first {
                    fields.push((second, rng.chance(0.5)));
                }
            }
            let size = *rng.pick(&[1usize, 3, 10, 40]);
            // documents without a value sort last: keep them out so keys are plain numbers
            let mut must: Vec<Value> = vec![filter.to_json()];
            must.extend(fields.iter().map(|(f, _)| json!({"exists": {"field": f}})));
            let sort: Vec<Value> = fields
                .iter()
                .map(|(f, asc)| json!({ *f: if *asc { "asc" } else { "desc" } }))
                .collect();
            let body = json!({
                "query": {"bool": {"filter": must}},
                "sort": sort,
                "size": size,
                "_source": false,
            });
            let want = expected(&t, &filter, &fields, size);
            let mut settings = vec![("none".to_string(), mode_none())];
            settings.extend(sliced_modes());
            for (name, concurrency) in settings {
                let got = actual(&engine.search(&targets, &body, concurrency));
                assert_eq!(
                    got, want,
                    "seed {seed}, {name}, layout {layout}, request {body}"
                );
            }
        }
    }
}

#[test]
fn match_all_sorts_by_a_numeric_column_visit_only_candidates() {
    let engine = Engine::new();
    for seed in seeds(0x50_28, 4) {
        let mut rng = Rng::new(seed);
        let mut t = TestIndex::random(&mut rng, (50, 400), &[1, 3]);
        let layout = format!("{:?}", t.plan);
        let field = *rng.pick(&["n", "price", "ts", "x"]);
        // every live document keeps a value (the deleted ones stay in their segments)
        t.delete_unless(|d| value(d, field).is_some());
        let targets = engine.targets(&t.index);
        for _ in 0..20 {
            let asc = rng.chance(0.5);
            let mut fields = vec![(field, asc)];
            if rng.chance(0.3) {
                let second = if field == "x" { "n" } else { "x" };
                fields.push((second, rng.chance(0.5)));
            }
            let size = *rng.pick(&[1usize, 3, 10, 40, 1000]);
            let sort: Vec<Value> = fields
                .iter()
                .map(|(f, asc)| json!({ *f: {"order": if *asc { "asc" } else { "desc" }, "missing": "_last"} }))
                .collect();
            let body = json!({"query": {"match_all": {}}, "sort": sort, "size": size});
            let mut everything = body.clone();
            everything["post_filter"] = json!({"match_all": {}});
            let sole = fields.len() == 1;
            for (name, concurrency) in [("none".to_string(), mode_none())]
                .into_iter()
                .chain(sliced_modes())
            {
                let got = engine.search(&targets, &body, concurrency);
                let reference = engine.search(&targets, &everything, concurrency);
                assert_eq!(
                    got["hits"], reference["hits"],
                    "seed {seed}, {name}, layout {layout}, request {body}"
                );
                if sole {
                    let want = expected(&t, &Filter::All, &fields, size);
                    assert_eq!(
                        actual(&got),
                        want,
                        "seed {seed}, {name}, layout {layout}, request {body}"
                    );
                }
                // the next page from a hit's sort values: the candidates start at them
                let hits = reference["hits"]["hits"].as_array().unwrap();
                if !hits.is_empty() {
                    let after = hits[rng.below(hits.len() as u64) as usize]["sort"].clone();
                    let (mut next, mut next_everything) = (body.clone(), everything.clone());
                    next["search_after"] = after.clone();
                    next_everything["search_after"] = after;
                    let got = engine.search(&targets, &next, concurrency);
                    let reference = engine.search(&targets, &next_everything, concurrency);
                    assert!(got["hits"]["hits"].is_array(), "{got}");
                    assert_eq!(
                        got["hits"], reference["hits"],
                        "seed {seed}, {name}, layout {layout}, request {next}"
                    );
                }
            }
        }
    }
}

/// A `match_all` sorted by a sparse numeric field (some live documents lack it): with
/// missing values last, the sorted copy still names the whole top when it holds k values
/// beyond the position, so the documents without a value are never visited; with `_first`
/// or a `missing` value every document is. Either way the hits are, hit for hit, those of the
/// visit-everything path (a `post_filter`), and so is the next page from a hit's sort values.
#[test]
fn match_all_sorts_by_a_sparse_numeric_column_match_visiting_everything() {
    let engine = Engine::new();
    for seed in seeds(0x50_29, 4) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (50, 400), &[1, 3]);
        let layout = format!("{:?}", t.plan);
        let targets = engine.targets(&t.index);
        for _ in 0..20 {
            let field = *rng.pick(&["n", "price", "ts", "x"]);
            let order = if rng.chance(0.5) { "asc" } else { "desc" };
            let missing = match rng.below(4) {
                0 => json!("_first"),
                1 => json!(0),
                _ => json!("_last"),
            };
            let size = *rng.pick(&[1usize, 3, 10, 40, 1000]);
            let body = json!({
                "query": {"match_all": {}},
                "sort": [{field: {"order": order, "missing": missing}}],
                "size": size,
            });
            let mut everything = body.clone();
            everything["post_filter"] = json!({"match_all": {}});
            for (name, concurrency) in [("none".to_string(), mode_none())]
                .into_iter()
                .chain(sliced_modes())
            {
                let got = engine.search(&targets, &body, concurrency);
                let reference = engine.search(&targets, &everything, concurrency);
                assert_eq!(
                    got["hits"], reference["hits"],
                    "seed {seed}, {name}, layout {layout}, request {body}"
                );
                let hits = reference["hits"]["hits"].as_array().unwrap();
                if !hits.is_empty() {
                    let after = hits[rng.below(hits.len() as u64) as usize]["sort"].clone();
                    let (mut next, mut next_everything) = (body.clone(), everything.clone());
                    next["search_after"] = after.clone();
                    next_everything["search_after"] = after;
                    let got = engine.search(&targets, &next, concurrency);
                    let reference = engine.search(&targets, &next_everything, concurrency);
                    assert_eq!(
                        got["hits"], reference["hits"],
                        "seed {seed}, {name}, layout {layout}, request {next}"
                    );
                }
            }
        }
    }
}

/// The expected sort values of the first `size` matches sorted by a keyword field: the least
/// of a document's values ascending, the greatest descending, a document without one last (or
/// first with `_first`), rendered as `null`.
fn expected_keywords(
    t: &TestIndex,
    filter: &Filter,
    field: &str,
    asc: bool,
    missing_first: bool,
    size: usize,
) -> Vec<Value> {
    let mut keys: Vec<Option<String>> = t
        .live
        .values()
        .filter(|d| filter.matches(d))
        .map(|d| {
            let values = d.keywords(field);
            if asc {
                values.into_iter().min()
            } else {
                values.into_iter().max()
            }
        })
        .collect();
    keys.sort_by(|a, b| match (a, b) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) if missing_first => std::cmp::Ordering::Less,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) if missing_first => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(a), Some(b)) if asc => a.cmp(b),
        (Some(a), Some(b)) => b.cmp(a),
    });
    keys.truncate(size);
    keys.into_iter().map(|k| json!([k])).collect()
}

/// Sorting by a keyword field compares term ordinals within a segment and skips documents
/// that cannot beat the worst kept hit (by ordinal, or by `missing` when they have no
/// value): the sort values are the model's, position by position, and in one shard the hits
/// (ids included, so ties keep index order) are those of the same sort with `_doc` as a
/// second field, where ties with the worst kept hit are not skipped.
#[test]
fn keyword_sorts_compare_ordinals_and_return_the_best_values() {
    let engine = Engine::new();
    for seed in seeds(0x50_2a, 4) {
        let mut rng = Rng::new(seed);
        let t = TestIndex::random(&mut rng, (50, 400), &[1, 3]);
        let layout = format!("{:?}", t.plan);
        let targets = engine.targets(&t.index);
        for _ in 0..20 {
            let filter = Filter::random(&mut rng, t.users, 2);
            let field = *rng.pick(&["user", "color"]);
            let asc = rng.chance(0.5);
            let missing_first = rng.chance(0.3);
            let size = *rng.pick(&[1usize, 3, 10, 40]);
            let spec = json!({
                "order": if asc { "asc" } else { "desc" },
                "missing": if missing_first { "_first" } else { "_last" },
            });
            let body = json!({
                "query": {"bool": {"filter": [filter.to_json()]}},
                "sort": [{field: spec.clone()}],
                "size": size,
                "_source": false,
            });
            let mut with_doc = body.clone();
            with_doc["sort"] = json!([{field: spec}, "_doc"]);
            let want = expected_keywords(&t, &filter, field, asc, missing_first, size);
            let ids = |response: &Value| -> Vec<Value> {
                response["hits"]["hits"]
                    .as_array()
                    .expect("hits")
                    .iter()
                    .map(|h| h["_id"].clone())
                    .collect()
            };
            let mut settings = vec![("none".to_string(), mode_none())];
            settings.extend(sliced_modes());
            for (name, concurrency) in settings {
                let got = engine.search(&targets, &body, concurrency);
                let sorts: Vec<Value> = got["hits"]["hits"]
                    .as_array()
                    .expect("hits")
                    .iter()
                    .map(|h| h["sort"].clone())
                    .collect();
                assert_eq!(
                    sorts, want,
                    "seed {seed}, {name}, layout {layout}, request {body}"
                );
                // `_doc` orders as the hits' tie-break (shard, then index order) in one shard
                if t.plan.shards == 1 {
                    let reference = engine.search(&targets, &with_doc, concurrency);
                    assert_eq!(
                        ids(&got),
                        ids(&reference),
                        "seed {seed}, {name}, layout {layout}, request {body}"
                    );
                }
            }
        }
    }
}
