//! The collection plan on real segments: which path each request shape gets, whole segments
//! and parts of them, so that a change that silently sends a cheap request down a slow path
//! (or the work estimate and the collector apart) fails here, not only in a benchmark.

mod common;

use common::{Rng, TestIndex};
use serde_json::json;
use tantivy::columnar::{Cardinality, ColumnIndex};
use tessera_query::compile::ColumnFilter;
use tessera_search::collect::CollectParams;
use tessera_search::collect_plan::{estimate_part, plan_part, AggShortcuts, PartPath};
use tessera_search::hits::HitSort;
use tessera_search::sort::parse_sort;

fn params<'a>(sort: &'a HitSort, k: usize) -> CollectParams<'a> {
    CollectParams {
        sort,
        k,
        total_hits_threshold: 10_000,
        terminate_after: None,
        deadline: None,
        cancelled: None,
        breaker: None,
        min_score: None,
        search_after: None,
        constant_score: false,
        scoring: false,
        shard_index: 0,
        index: "test",
        post_filter: None,
        column_filter: None,
        matches_all: false,
        collapse: None,
    }
}

const DOCS: PartPath = PartPath::Docs {
    first_hits_only: false,
    sorted_candidates: false,
};

#[test]
fn each_request_shape_gets_its_path() {
    let index = TestIndex::random(&mut Rng::new(11), (300, 600), &[1]);
    let shard = index.index.shard(0).unwrap();
    let snapshot = shard.snapshot();
    let readers = snapshot.searcher.segment_readers();
    assert!(!readers.is_empty());
    let by_score = HitSort::new(Vec::new());
    let histogram_on_n = AggShortcuts {
        sorted_fields: Some(vec!["n".into()]),
        dictionary_field: None,
    };
    let terms_on_user = AggShortcuts {
        sorted_fields: None,
        dictionary_field: Some("user".into()),
    };
    let other_aggs = AggShortcuts::default();
    let all = ColumnFilter::All;
    let range_on_n = ColumnFilter::Range {
        field: "n".into(),
        low: 0,
        high: 100,
    };
    let range_on_x = ColumnFilter::Range {
        field: "x".into(),
        low: 0,
        high: 100,
    };

    for reader in readers {
        // a count: whole segments are counted, parts of them visited
        let count = params(&by_score, 0);
        assert_eq!(plan_part(&count, None, reader, true), PartPath::CountOnly);
        assert_eq!(plan_part(&count, None, reader, false), DOCS);

        // aggregations that count from the sorted copy of their column
        let histogram = Some(&histogram_on_n);
        let mut sorted = params(&by_score, 0);
        sorted.column_filter = Some(&all);
        assert_eq!(
            plan_part(&sorted, histogram, reader, true),
            PartPath::SortedColumns
        );
        assert_eq!(
            plan_part(&sorted, histogram, reader, false),
            PartPath::Blocks
        );
        sorted.column_filter = Some(&range_on_n);
        assert_eq!(
            plan_part(&sorted, histogram, reader, true),
            PartPath::SortedColumns
        );
        // a range on another column than the aggregation's visits the matches
        sorted.column_filter = Some(&range_on_x);
        assert_eq!(
            plan_part(&sorted, histogram, reader, true),
            PartPath::Blocks
        );
        // so does anything that limits or scores the matches, or hits to keep
        sorted.column_filter = Some(&all);
        sorted.terminate_after = Some(10);
        assert_eq!(
            plan_part(&sorted, histogram, reader, true),
            PartPath::Blocks
        );
        sorted.terminate_after = None;
        sorted.min_score = Some(1.0);
        assert_eq!(plan_part(&sorted, histogram, reader, true), DOCS);
        sorted.min_score = None;
        sorted.k = 5;
        assert_eq!(plan_part(&sorted, histogram, reader, true), DOCS);

        // a lone terms aggregation over a match-all counts from the dictionary when the
        // segment has no deletions; the estimate also checks that the field is single-valued
        // (user is; color may not be)
        let terms = Some(&terms_on_user);
        let mut dictionary = params(&by_score, 0);
        dictionary.column_filter = Some(&all);
        let expected = if reader.num_deleted_docs() == 0 {
            PartPath::Dictionary
        } else {
            PartPath::Blocks
        };
        assert_eq!(plan_part(&dictionary, terms, reader, true), expected);
        assert_eq!(estimate_part(&dictionary, terms, reader), expected);
        let terms_on_color = AggShortcuts {
            sorted_fields: None,
            dictionary_field: Some("color".into()),
        };
        let color_terms = Some(&terms_on_color);
        let mut on_color = params(&by_score, 0);
        on_color.column_filter = Some(&all);
        let color_multi = reader
            .fast_fields()
            .str("color")
            .unwrap()
            .is_some_and(|c| c.ords().get_cardinality() == Cardinality::Multivalued);
        assert_eq!(plan_part(&on_color, color_terms, reader, true), expected);
        assert_eq!(
            estimate_part(&on_color, color_terms, reader),
            if color_multi {
                PartPath::Blocks
            } else {
                expected
            }
        );
        assert_eq!(
            PartPath::SortedColumns.fallback(&dictionary, terms, reader),
            expected
        );
        assert_eq!(
            PartPath::Dictionary.fallback(&dictionary, terms, reader),
            PartPath::Blocks
        );

        // other aggregations: blocks
        let blocks = params(&by_score, 0);
        assert_eq!(
            plan_part(&blocks, Some(&other_aggs), reader, true),
            PartPath::Blocks
        );

        // a constant-score query by score keeps its first hits and counts the rest
        let mut first = params(&by_score, 10);
        first.constant_score = true;
        let first_hits = PartPath::Docs {
            first_hits_only: true,
            sorted_candidates: false,
        };
        assert_eq!(plan_part(&first, None, reader, true), first_hits);
        assert!(plan_part(&first, None, reader, true).is_cheap());
        assert_eq!(plan_part(&first, Some(&other_aggs), reader, true), DOCS);

        // a match_all sorted by a numeric column takes candidates from its sorted copy; the
        // estimate counts on it only where every document has a value
        let by_n = HitSort::new(parse_sort(&json!([{"n": "asc"}])).unwrap());
        let mut sorted_by_n = params(&by_n, 10);
        sorted_by_n.matches_all = true;
        let candidates = |yes| PartPath::Docs {
            first_hits_only: false,
            sorted_candidates: yes,
        };
        assert_eq!(
            plan_part(&sorted_by_n, None, reader, true),
            candidates(true)
        );
        assert_eq!(
            plan_part(&sorted_by_n, None, reader, false),
            candidates(false)
        );
        // a full column narrows the sort; so does a sparse one (one value per document at
        // most) when missing values come last, as they do by default
        let n_single = matches!(
            reader
                .fast_fields()
                .column_opt::<i64>("n")
                .unwrap()
                .map(|c| c.index),
            Some(ColumnIndex::Full | ColumnIndex::Optional(_))
        );
        assert_eq!(
            estimate_part(&sorted_by_n, None, reader),
            candidates(n_single)
        );

        // scored hits: doc at a time, and not cheap
        let mut scored = params(&by_score, 10);
        scored.scoring = true;
        assert_eq!(plan_part(&scored, None, reader, true), DOCS);
        assert!(!plan_part(&scored, None, reader, true).is_cheap());
    }
}
