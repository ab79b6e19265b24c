//! The harness of the property tests checked on its own: random layouts are what they claim
//! (the model of live documents agrees with the index, document by document), and the layouts
//! vary (segment counts, deletes, force merges). Also a force merge racing a background merge.

mod common;

use std::collections::BTreeSet;

use common::{seeds, LayoutPlan, Rng, TestIndex};
use tessera_index::index_service::parse_source;

#[test]
fn the_model_matches_the_index() {
    let mut segment_counts = BTreeSet::new();
    let mut with_deletes = 0;
    for seed in seeds(0x1A7_0075, 8) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(100, 600);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let context = format!("seed {seed}: {}", t.describe());
        assert_eq!(
            t.index.doc_counts().0,
            t.live.len() as u64,
            "live docs, {context}"
        );
        for (id, doc) in &t.live {
            let stored = t
                .index
                .get(id, None, false)
                .expect("get")
                .unwrap_or_else(|| panic!("{id} is live in the model but not found, {context}"));
            let mut source =
                parse_source(stored.source.as_deref().expect("a source")).expect("json");
            // partial updates write `null` for fields they remove: the same as missing
            if let Some(object) = source.as_object_mut() {
                object.retain(|_, v| !v.is_null());
            }
            assert_eq!(source, doc.source(), "{id}, {context}");
        }
        for i in 0..docs {
            let id = format!("d{i}");
            if !t.live.contains_key(&id) {
                assert!(
                    t.index.get(&id, None, false).expect("get").is_none(),
                    "{id} was deleted in the model, {context}"
                );
            }
        }
        for shard in t.index.shards() {
            let snapshot = shard.snapshot();
            segment_counts.insert(snapshot.searcher.segment_readers().len());
            if snapshot
                .searcher
                .segment_readers()
                .iter()
                .any(|r| r.num_deleted_docs() > 0)
            {
                with_deletes += 1;
            }
        }
    }
    eprintln!("segment counts seen {segment_counts:?}, {with_deletes} shards with deletes");
    assert!(
        segment_counts.len() >= 3,
        "layouts hardly vary: {segment_counts:?}"
    );
    assert!(with_deletes > 0, "no layout has deleted docs");
}

/// A layout whose eighth refresh starts a background merge (the merge policy merges from 8
/// segments on).
fn eight_refreshes(trial: u64) -> TestIndex {
    let mut rng = Rng::new(trial);
    let plan = LayoutPlan {
        docs: 200,
        shards: 1,
        refreshes: 8,
        churn: 0.0,
        force_merge: None,
        churn_after_merge: false,
    };
    TestIndex::build(&mut rng, plan)
}

/// `_forcemerge` right after a refresh that started a background merge must still succeed.
#[test]
fn force_merge_right_after_the_eighth_refresh() {
    let mut failures = Vec::new();
    for trial in 0..5u64 {
        let t = eight_refreshes(trial);
        if let Err(e) = t.index.force_merge(1) {
            failures.push(format!("trial {trial}: {}", e.reason()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Once `_forcemerge` to one segment has returned, searches see one segment.
#[test]
fn force_merge_is_visible_to_searches() {
    let mut failures = Vec::new();
    for trial in 0..5u64 {
        let t = eight_refreshes(trial);
        t.index.force_merge(1).expect("force merge");
        t.index.refresh().expect("refresh");
        let segments = t
            .index
            .shard(0)
            .unwrap()
            .snapshot()
            .searcher
            .segment_readers()
            .len();
        if segments != 1 {
            failures.push(format!(
                "trial {trial}: {segments} segments after force_merge(1) and a refresh: {}",
                t.describe()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
