//! A shard group walks its copies: a copy failing with an error another copy may not share
//! (unavailable, rejected, an engine failure) hands the shard over to the next copy, and the
//! answer is the one a single healthy copy gives; a failure of the request itself (a bad
//! query) is not retried. A fetch whose reader context is gone fails with
//! `search_context_missing_exception`, as in OpenSearch.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{first_diff, mode_none, Engine, Rng, TestIndex};
use serde_json::json;
use tessera_common::Error;
use tessera_search::fetch::FetchedDoc;
use tessera_search::messages::{
    QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest,
};
use tessera_search::shard::ShardFuture;
use tessera_search::{ShardGroup, ShardSearcher};

/// A copy that fails every query with `error`, counting the calls.
struct FailingCopy {
    like: Arc<dyn ShardSearcher>,
    error: Error,
    calls: AtomicUsize,
}

impl ShardSearcher for FailingCopy {
    fn index_name(&self) -> String {
        self.like.index_name()
    }
    fn index_uuid(&self) -> String {
        self.like.index_uuid()
    }
    fn shard_id(&self) -> u32 {
        self.like.shard_id()
    }
    fn node_id(&self) -> String {
        "failing-node".into()
    }
    fn can_match(&self, _: ShardSearchRequest) -> ShardFuture<bool> {
        Box::pin(async { Ok(true) })
    }
    fn query(&self, _: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let error = self.error.clone();
        Box::pin(async move { Err(error) })
    }
    fn fetch(&self, _: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        Box::pin(async { Err(Error::illegal_state("never asked")) })
    }
    fn free_context(&self, _: ReaderContextId) {}
}

/// A healthy copy whose reader context is freed right after its query (as if it expired).
struct ForgetfulCopy(Arc<dyn ShardSearcher>);

impl ShardSearcher for ForgetfulCopy {
    fn index_name(&self) -> String {
        self.0.index_name()
    }
    fn index_uuid(&self) -> String {
        self.0.index_uuid()
    }
    fn shard_id(&self) -> u32 {
        self.0.shard_id()
    }
    fn node_id(&self) -> String {
        self.0.node_id()
    }
    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        self.0.can_match(request)
    }
    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        let copy = self.0.clone();
        let answer = self.0.query(request);
        Box::pin(async move {
            let result = answer.await?;
            if let Some(id) = result.context_id {
                copy.free_context(id);
            }
            Ok(result)
        })
    }
    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        self.0.fetch(request)
    }
    fn free_context(&self, id: ReaderContextId) {
        self.0.free_context(id)
    }
}

fn failing(like: &Arc<dyn ShardSearcher>, error: Error) -> Arc<FailingCopy> {
    Arc::new(FailingCopy {
        like: like.clone(),
        error,
        calls: AtomicUsize::new(0),
    })
}

#[test]
fn a_failing_copy_hands_its_shard_to_the_next() {
    let engine = Engine::new();
    let index = TestIndex::random(&mut Rng::new(7), (60, 120), &[3]);
    let copies = engine.targets(&index.index);
    let body = json!({"query": {"match_all": {}}, "size": 7, "sort": [{"n": "asc"}]});
    let expected = engine.search(&copies, &body, mode_none());

    for error in [
        Error::new("unavailable_shards_exception", 503, "the copy is closing"),
        Error::new("rejected_execution_exception", 429, "queue full"),
        Error::internal("read a segment", "io error"),
    ] {
        let broken = failing(&copies[1], error);
        let groups = copies
            .iter()
            .enumerate()
            .map(|(i, copy)| {
                if i == 1 {
                    ShardGroup::of(vec![broken.clone() as Arc<dyn ShardSearcher>, copy.clone()])
                } else {
                    ShardGroup::single(copy.clone())
                }
            })
            .collect();
        let actual = engine.search_groups(groups, &body, mode_none());
        assert_eq!(broken.calls.load(Ordering::Relaxed), 1);
        assert_eq!(first_diff(&expected, &actual), None);
    }
}

#[test]
fn a_failure_of_the_request_itself_is_not_retried() {
    let engine = Engine::new();
    let index = TestIndex::random(&mut Rng::new(8), (30, 60), &[1]);
    let copies = engine.targets(&index.index);
    let broken = failing(&copies[0], Error::parsing("bad query"));
    let groups = vec![ShardGroup::of(vec![
        broken.clone() as Arc<dyn ShardSearcher>,
        copies[0].clone(),
    ])];
    let answer = engine.search_groups(groups, &json!({"size": 1}), mode_none());
    assert_eq!(broken.calls.load(Ordering::Relaxed), 1);
    assert_eq!(answer["status"], 400);
    assert_eq!(answer["error"]["type"], "search_phase_execution_exception");
    assert_eq!(answer["error"]["reason"], "all shards failed");
}

#[test]
fn a_fetch_from_a_forgotten_reader_context_is_search_context_missing() {
    let engine = Engine::new();
    let index = TestIndex::random(&mut Rng::new(9), (30, 60), &[2]);
    let groups = engine
        .targets(&index.index)
        .into_iter()
        .map(|copy| ShardGroup::single(Arc::new(ForgetfulCopy(copy))))
        .collect();
    let answer = engine.search_groups(groups, &json!({"size": 5}), mode_none());
    assert_eq!(answer["status"], 404);
    assert_eq!(answer["error"]["type"], "search_context_missing_exception");
}
