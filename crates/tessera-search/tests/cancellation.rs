//! A request whose client has gone away stops the slices that are already running, not only
//! those not yet started: the slice collector observes the request's cancellation flag where
//! it checks the deadline, every few thousand documents. Deterministic: the flag is set before
//! the slice runs (as if the client left a moment after it started) and the documents the
//! aggregations were fed are counted.

mod common;

use std::sync::atomic::AtomicBool;

use common::{LayoutPlan, Rng, TestIndex};
use serde_json::json;
use tantivy::query::EnableScoring;
use tessera_aggs::{AggContext, PreparedAggs, RenderContext, DEFAULT_MAX_BUCKETS};
use tessera_query::{compile, parse_query, CompileContext};
use tessera_search::collect::{collect_slice, CollectParams};
use tessera_search::hits::HitSort;
use tessera_search::slice::{SegmentPart, Slice};

const DOCS: usize = 30_000;

#[test]
fn a_cancelled_request_stops_its_running_slice() {
    let mut rng = Rng::new(11);
    let t = TestIndex::build(
        &mut rng,
        LayoutPlan {
            docs: DOCS,
            shards: 1,
            refreshes: 1,
            churn: 0.0,
            force_merge: Some(1),
            churn_after_merge: false,
        },
    );
    let meta = t.index.metadata();
    let snapshot = t.index.shards()[0].snapshot();
    let readers = snapshot.searcher.segment_readers();
    let slice = Slice {
        parts: snapshot
            .segments_in_order
            .iter()
            .map(|&ord| SegmentPart {
                segment_ord: ord,
                docs: 0..readers[ord as usize].max_doc(),
            })
            .collect(),
    };
    let ctx = CompileContext {
        searcher: None,
        table: &snapshot.table,
        index: &meta.name,
        default_fields: &[],
        now_millis: 0,
        max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
        clauses: Default::default(),
        knn: Default::default(),
        nested_scope: Default::default(),
        deadline: None,
        failures: None,
        mapping: None,
        legacy_bm25: true,
        shard_id: 0,
    };
    let query = compile(&parse_query(&json!({"match_all": {}})).unwrap(), &ctx).unwrap();
    let weight = query
        .weight(EnableScoring::disabled_from_searcher(&snapshot.searcher))
        .unwrap();
    // a terms aggregation with a sub-aggregation (fed document by document), and a count of
    // the documents the aggregations saw
    let aggs = tessera_aggs::parse_aggregations(&json!({
        "seen": {"filter": {"match_all": {}}},
        "users": {"terms": {"field": "user"}, "aggs": {"x": {"max": {"field": "x"}}}}
    }))
    .unwrap();
    let prepared = PreparedAggs::prepare(
        &aggs,
        &AggContext {
            table: &snapshot.table,
            index: &meta.name,
            default_fields: &[],
            now_millis: 0,
            max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
            searcher: &snapshot.searcher,
            shard_index: 0,
            max_inner_result_window: 100,
            constant_score: None,
            script_failures: Default::default(),
        },
    )
    .unwrap();
    let sort = HitSort::new(Vec::new());
    for k in [0, 10] {
        let run = |cancelled: &AtomicBool| {
            let params = CollectParams {
                sort: &sort,
                k,
                total_hits_threshold: u64::MAX,
                terminate_after: None,
                deadline: None,
                cancelled: Some(cancelled),
                breaker: None,
                min_score: None,
                search_after: None,
                constant_score: true,
                scoring: false,
                shard_index: 0,
                index: "test",
                post_filter: None,
                column_filter: None,
                matches_all: false,
                collapse: None,
            };
            let mut aggregator = prepared.slice_aggregator().unwrap();
            let outcome = collect_slice(
                &snapshot,
                weight.as_ref(),
                &slice,
                &params,
                Some(&mut aggregator),
            );
            let rendered = aggregator
                .build()
                .unwrap()
                .render(&aggs, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
                .unwrap();
            (outcome, rendered["seen"]["doc_count"].as_u64().unwrap())
        };
        let (outcome, seen) = run(&AtomicBool::new(false));
        assert_eq!(outcome.unwrap().total, DOCS as u64, "k {k}");
        assert_eq!(seen, DOCS as u64, "k {k}");
        let (outcome, seen) = run(&AtomicBool::new(true));
        let e = outcome.expect_err("a cancelled slice fails");
        assert_eq!(e.kind(), "task_cancelled_exception");
        // stopped at the first check, a few thousand documents in
        assert!(seen > 0 && seen <= 8192, "k {k}: {seen} documents seen");
    }
}
