//! Any grouping of partial results reduces to the same final answer. For random layouts,
//! queries, sorts and aggregation trees, each shard's segments are cut into random doc-id
//! ranges (any size, not only the 16k-doc partitions the planner makes), dealt into 1..=8
//! random slices and collected with the real slice collector; the slices' results are then
//! reduced in random trees (random group sizes and orders, some partial aggregations through
//! their binary encoding and back), finished per shard, reduced across shards in another random
//! tree and rendered. The answer must equal the sequential one (one slice of whole segments per
//! shard, reduced in order) exactly, floats included: sums are exact and the sketches
//! (cardinality, percentiles) and top_hits merge independently of the grouping.
//!
//! Reproduce with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test reduce_grouping`.

mod common;

use std::sync::Arc;

use common::{
    first_diff, random_aggs, random_query, random_sort, seeds, LayoutPlan, Rng, TestIndex,
};
use serde_json::{json, Value};
use tantivy::query::{EnableScoring, Weight};
use tessera_aggs::{
    AggContext, AggRequest, InternalAggregations, PreparedAggs, RenderContext, DEFAULT_MAX_BUCKETS,
};
use tessera_index::ShardSnapshot;
use tessera_query::{compile, parse_query, CompileContext};
use tessera_search::collapse::{CollapseField, CollapseSpec};
use tessera_search::collect::{collect_slice, CollectParams};
use tessera_search::hits::{reduce, HitSort, QueryResult};
use tessera_search::slice::{SegmentPart, Slice};
use tessera_search::sort::parse_sort;

const CASES: usize = 10;

/// Everything one shard needs to collect a request.
struct ShardRun {
    snapshot: Arc<ShardSnapshot>,
    weight: Box<dyn Weight>,
    prepared: PreparedAggs,
    collapse: Option<CollapseField>,
}

/// The collection parameters of a request on one shard: every match counted, no limits.
fn params<'a>(
    sort: &'a HitSort,
    k: usize,
    scoring: bool,
    constant_score: bool,
    shard_index: u32,
    collapse: Option<&'a CollapseField>,
) -> CollectParams<'a> {
    CollectParams {
        sort,
        k,
        total_hits_threshold: u64::MAX,
        terminate_after: None,
        deadline: None,
        cancelled: None,
        breaker: None,
        min_score: None,
        search_after: None,
        constant_score,
        scoring,
        shard_index,
        index: "test",
        post_filter: None,
        column_filter: None,
        matches_all: false,
        collapse,
    }
}

/// The whole-segment single slice a sequential search runs.
fn sequential_slice(snapshot: &ShardSnapshot) -> Slice {
    let readers = snapshot.searcher.segment_readers();
    Slice {
        parts: snapshot
            .segments_in_order
            .iter()
            .filter(|&&ord| readers[ord as usize].max_doc() > 0)
            .map(|&ord| SegmentPart {
                segment_ord: ord,
                docs: 0..readers[ord as usize].max_doc(),
            })
            .collect(),
    }
}

/// Every segment cut into 1..=4 random ranges, the ranges dealt into 1..=8 slices at random,
/// each slice's parts in index order.
fn random_slices(rng: &mut Rng, snapshot: &ShardSnapshot) -> Vec<Slice> {
    let readers = snapshot.searcher.segment_readers();
    let mut parts = Vec::new();
    for &ord in &snapshot.segments_in_order {
        let max_doc = readers[ord as usize].max_doc();
        if max_doc == 0 {
            continue;
        }
        let mut cuts: Vec<u32> = (0..rng.below(4))
            .map(|_| rng.range(1, max_doc as i64) as u32)
            .filter(|&c| c < max_doc)
            .collect();
        cuts.push(0);
        cuts.push(max_doc);
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            parts.push(SegmentPart {
                segment_ord: ord,
                docs: w[0]..w[1],
            });
        }
    }
    let count = rng.usize(1, 8.min(parts.len().max(1)));
    let mut slices: Vec<Slice> = (0..count).map(|_| Slice::default()).collect();
    for part in parts {
        slices[rng.below(count as u64) as usize].parts.push(part);
    }
    let rank = |p: &SegmentPart| snapshot.segment_ranks[p.segment_ord as usize];
    for slice in &mut slices {
        slice.parts.sort_by_key(|p| (rank(p), p.docs.start));
    }
    slices.retain(|s| !s.parts.is_empty());
    slices
}

/// Reduces `parts` in a random tree: random groups of 2..=4, in random order, some of them
/// through the binary encoding first.
fn random_reduce(
    rng: &mut Rng,
    mut parts: Vec<InternalAggregations>,
    requests: &[AggRequest],
) -> InternalAggregations {
    if parts.is_empty() {
        return InternalAggregations::reduce(parts, requests).expect("reduce nothing");
    }
    while parts.len() > 1 {
        rng.shuffle(&mut parts);
        let take = rng.usize(2, 4.min(parts.len()));
        let mut group: Vec<InternalAggregations> = parts.drain(..take).collect();
        for partial in &mut group {
            if rng.chance(0.3) {
                let bytes = partial.encode().expect("encode");
                *partial = InternalAggregations::decode(&bytes).expect("decode");
            }
        }
        let merged = InternalAggregations::reduce(group, requests).expect("reduce a group");
        let at = rng.usize(0, parts.len());
        parts.insert(at, merged);
    }
    parts.pop().expect("one left")
}

/// Hits reduced in a random tree.
fn random_reduce_hits(
    rng: &mut Rng,
    mut parts: Vec<QueryResult>,
    sort: &HitSort,
    k: usize,
) -> QueryResult {
    while parts.len() > 1 {
        rng.shuffle(&mut parts);
        let take = rng.usize(2, 4.min(parts.len()));
        let group: Vec<QueryResult> = parts.drain(..take).collect();
        let at = rng.usize(0, parts.len());
        parts.insert(at, reduce(group, sort, k));
    }
    reduce(parts, sort, k)
}

fn render(aggs: InternalAggregations, requests: &[AggRequest]) -> Value {
    match aggs.render(requests, &mut RenderContext::new(DEFAULT_MAX_BUCKETS)) {
        Ok(map) => Value::Object(map),
        Err(e) => json!({"error": e.to_json()}),
    }
}

#[test]
fn any_grouping_of_partial_results_reduces_to_the_same_answer() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for seed in seeds(0x6A0_0F9, CASES) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(200, 1500 * shards as usize);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let meta = t.index.metadata();
        let default_fields = meta.default_fields();
        let now_millis = tessera_common::time::now_millis();
        for _ in 0..12 {
            let query_json = random_query(&mut rng, t.users);
            let aggs_json = random_aggs(&mut rng, t.users, 2);
            let sort_json = if rng.chance(0.5) {
                random_sort(&mut rng)
            } else {
                json!([])
            };
            let k = rng.usize(0, 20);
            // a single-valued field to collapse on, now and then
            let collapse = rng.chance(0.3).then(|| CollapseSpec {
                field: ["user", "n", "x"][rng.usize(0, 2)].to_string(),
                inner_hits: Vec::new(),
            });
            let ast = parse_query(&query_json).expect("parse the query");
            let requests = tessera_aggs::parse_aggregations(&aggs_json).expect("parse aggs");
            let sort = HitSort::new(parse_sort(&sort_json).expect("parse the sort"));
            let scoring = k > 0 && (sort.is_score() || sort.fields().iter().any(|f| f.is_score()));
            let context = format!(
                "seed {seed} ({}), query {query_json}, sort {sort_json}, k {k}, aggs {aggs_json}, collapse {collapse:?}",
                t.describe()
            );
            let mut runs = Vec::new();
            for (shard_index, shard) in t.index.shards().iter().enumerate() {
                let snapshot = shard.snapshot();
                let ctx = CompileContext {
                    searcher: Some(&snapshot.searcher),
                    table: &snapshot.table,
                    index: &meta.name,
                    default_fields: &default_fields,
                    now_millis,
                    max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
                    clauses: Default::default(),
                    knn: Default::default(),
                    nested_scope: Default::default(),
                    deadline: None,
                    failures: None,
                    mapping: None,
                    legacy_bm25: true,
                    shard_id: shard_index as u32,
                };
                let query = compile(&ast, &ctx).expect("compile the query");
                let searcher = &snapshot.searcher;
                let enable = if scoring {
                    EnableScoring::enabled_from_searcher(searcher)
                } else {
                    EnableScoring::disabled_from_searcher(searcher)
                };
                let weight = query.weight(enable).expect("weight");
                let prepared = PreparedAggs::prepare(
                    &requests,
                    &AggContext {
                        table: &snapshot.table,
                        index: &meta.name,
                        default_fields: &default_fields,
                        now_millis,
                        max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
                        searcher,
                        shard_index: shard_index as u32,
                        max_inner_result_window: 100,
                        // what top_hits shows as `_score`: any value serves the comparison, as
                        // both sides use the same
                        constant_score: ast.is_constant_score().then_some(1.0),
                        script_failures: Default::default(),
                    },
                );
                let Ok(prepared) = prepared else {
                    break; // a request the shard rejects (e.g. a type mismatch): nothing to reduce
                };
                let collapse = collapse.as_ref().map(|spec| {
                    CollapseField::resolve(&snapshot.table, spec).expect("a collapse field")
                });
                runs.push(ShardRun {
                    snapshot: snapshot.clone(),
                    weight,
                    prepared,
                    collapse,
                });
            }
            if runs.len() != t.index.shards().len() {
                continue;
            }
            checked += 1;
            let collect = |run: &ShardRun, shard_index: u32, slice: &Slice| {
                let params = params(
                    &sort,
                    k,
                    scoring,
                    ast.is_constant_score(),
                    shard_index,
                    run.collapse.as_ref(),
                );
                let mut aggregator = run.prepared.slice_aggregator().expect("slice aggregator");
                let hits = collect_slice(
                    &run.snapshot,
                    run.weight.as_ref(),
                    slice,
                    &params,
                    Some(&mut aggregator),
                )
                .expect("collect a slice");
                (
                    hits,
                    aggregator.build().expect("build the slice's aggregations"),
                )
            };
            // sequential: one slice of whole segments per shard, shards reduced in order
            let mut seq_hits = Vec::new();
            let mut seq_aggs = Vec::new();
            // grouped: random slices, random trees
            let mut grouped_hits = Vec::new();
            let mut grouped_aggs = Vec::new();
            // the production path: random slices reduced at once
            let mut flat_aggs = Vec::new();
            for (i, run) in runs.iter().enumerate() {
                let (hits, aggs) = collect(run, i as u32, &sequential_slice(&run.snapshot));
                seq_hits.push(reduce(vec![hits], &sort, k));
                seq_aggs.push(
                    run.prepared
                        .shard_result(vec![aggs], runs.len())
                        .expect("finish a shard"),
                );
                let slices = random_slices(&mut rng, &run.snapshot);
                let mut slice_hits = Vec::new();
                let mut slice_aggs = Vec::new();
                for slice in &slices {
                    let (hits, aggs) = collect(run, i as u32, slice);
                    slice_hits.push(hits);
                    slice_aggs.push(aggs);
                }
                flat_aggs.push(
                    run.prepared
                        .shard_result(slice_aggs.clone(), runs.len())
                        .expect("finish a shard"),
                );
                grouped_hits.push(random_reduce_hits(&mut rng, slice_hits, &sort, k));
                let tree = random_reduce(&mut rng, slice_aggs, &requests);
                grouped_aggs.push(
                    run.prepared
                        .shard_result(vec![tree], runs.len())
                        .expect("finish a shard"),
                );
            }
            let expected_hits = reduce(seq_hits, &sort, k);
            if collapse.is_some() {
                // the model: every hit, sorted, the first of each group kept
                let mut all = Vec::new();
                for (i, run) in runs.iter().enumerate() {
                    let params = params(
                        &sort,
                        1 << 20,
                        scoring,
                        ast.is_constant_score(),
                        i as u32,
                        None,
                    );
                    let slice = sequential_slice(&run.snapshot);
                    let mut found =
                        collect_slice(&run.snapshot, run.weight.as_ref(), &slice, &params, None)
                            .expect("collect every hit");
                    let field = run.collapse.as_ref().expect("a collapse field");
                    for hit in &mut found.hits {
                        let reader = run.snapshot.searcher.segment_reader(hit.segment_ord);
                        let mut keys = field.segment_keys(reader).expect("open the column");
                        hit.collapse = Some(keys.key(hit.doc).expect("one value").clone());
                    }
                    all.push(found);
                }
                let model = reduce(all, &sort, k);
                if format!("{:?}", model.hits) != format!("{:?}", expected_hits.hits) {
                    failures.push(format!(
                        "{context}: collapsed hits differ from the model:\n  model      {:?}\n  collected  {:?}",
                        model.hits, expected_hits.hits
                    ));
                }
            }
            let actual_hits = random_reduce_hits(&mut rng, grouped_hits, &sort, k);
            // compared through Debug: scores are NaN when not computed, and NaN != NaN
            if format!("{expected_hits:?}") != format!("{actual_hits:?}") {
                failures.push(format!(
                    "{context}: hits differ:\n  sequential {expected_hits:?}\n  grouped    {actual_hits:?}"
                ));
            }
            let expected = render(
                InternalAggregations::reduce(seq_aggs, &requests).expect("reduce shards"),
                &requests,
            );
            let flat = render(
                InternalAggregations::reduce(flat_aggs, &requests).expect("reduce shards"),
                &requests,
            );
            let grouped = render(random_reduce(&mut rng, grouped_aggs, &requests), &requests);
            for (name, actual) in [("slices reduced at once", flat), ("random trees", grouped)] {
                if let Some(diff) = first_diff(&expected, &actual) {
                    failures.push(format!("{context}: {name}: {diff}"));
                }
            }
        }
    }
    eprintln!("{checked} requests checked");
    assert!(
        failures.is_empty(),
        "{} groupings gave another answer; reproduce with TESSERA_PROP_SEED=<seed>:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
