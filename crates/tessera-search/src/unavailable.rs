//! A shard with no active copy (its primary unassigned, or not started yet): every request to
//! it fails with OpenSearch's `no_shard_available_action_exception`, so a search over a red
//! index answers from the shards it can reach and reports this one in `_shards.failures`, as
//! OpenSearch does.

use tessera_common::Error;

use crate::fetch::FetchedDoc;
use crate::messages::{QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest};
use crate::shard::{ShardFuture, ShardSearcher};

/// See the module documentation.
pub struct UnavailableShard {
    index: String,
    index_uuid: String,
    shard_id: u32,
    error: Error,
}

impl UnavailableShard {
    pub fn new(index: &str, index_uuid: &str, shard_id: u32, why: &str) -> UnavailableShard {
        let error = Error::new(
            "no_shard_available_action_exception",
            503,
            format!("[{index}][{shard_id}] {why}"),
        )
        .with_meta("index", index.to_string())
        .with_meta("shard", shard_id.to_string());
        UnavailableShard::failing(index, index_uuid, shard_id, error)
    }

    /// A shard every request to which fails with `error` (a scroll's reader on a node that
    /// left: `search_context_missing_exception`).
    pub fn failing(index: &str, index_uuid: &str, shard_id: u32, error: Error) -> UnavailableShard {
        UnavailableShard {
            index: index.to_string(),
            index_uuid: index_uuid.to_string(),
            shard_id,
            error,
        }
    }

    fn fail<T: Send + 'static>(&self) -> ShardFuture<T> {
        let error = self.error.clone();
        Box::pin(async move { Err(error) })
    }
}

impl ShardSearcher for UnavailableShard {
    fn index_name(&self) -> String {
        self.index.clone()
    }

    fn index_uuid(&self) -> String {
        self.index_uuid.clone()
    }

    fn shard_id(&self) -> u32 {
        self.shard_id
    }

    fn node_id(&self) -> String {
        String::new()
    }

    fn can_match(&self, _request: ShardSearchRequest) -> ShardFuture<bool> {
        self.fail()
    }

    fn query(&self, _request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        self.fail()
    }

    fn fetch(&self, _request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        self.fail()
    }

    fn free_context(&self, _id: ReaderContextId) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_fails_as_no_shard_available() {
        let shard = UnavailableShard::new("logs", "u", 2, "primary shard is not active");
        let error = futures_lite_block_on(shard.fetch(ShardFetchRequest {
            context_id: ReaderContextId { session: 0, id: 0 },
            docs: vec![],
        }))
        .unwrap_err();
        assert_eq!(error.kind(), "no_shard_available_action_exception");
        assert_eq!(error.status(), 503);
        assert!(error.is_retryable_on_another_copy());
        assert_eq!(error.reason(), "[logs][2] primary shard is not active");
    }

    fn futures_lite_block_on<T>(future: ShardFuture<T>) -> tessera_common::Result<T> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }
}
