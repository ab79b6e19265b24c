//! A shard in the middle of a failover. Once the manager promotes a replica, the routing names
//! it the primary, initializing, while its node reopens it as one (replaying its translog): for
//! that moment no copy of the shard is active. A search that comes then waits for the new
//! primary (briefly, [`PROMOTION_WAIT`]) instead of reporting the shard failed, so a client
//! sees no failed search across a failover.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use tessera_common::{Error, Result};
use tessera_index::IndexService;
use tessera_search::fetch::FetchedDoc;
use tessera_search::messages::{
    QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest,
};
use tessera_search::shard::{ShardFuture, ShardSearcher};

use crate::node::Node;

/// How long a search waits for a promoted primary to open.
pub const PROMOTION_WAIT: Duration = Duration::from_secs(10);

/// See the module documentation: the copy a search of the shard reaches once it is active.
pub struct PromotingShard {
    node: Weak<Node>,
    index: Arc<IndexService>,
    shard: u32,
    /// The copy the query went to, which its fetch and free go to as well.
    resolved: Arc<OnceLock<Arc<dyn ShardSearcher>>>,
}

impl PromotingShard {
    pub fn new(node: Weak<Node>, index: Arc<IndexService>, shard: u32) -> PromotingShard {
        PromotingShard {
            node,
            index,
            shard,
            resolved: Arc::default(),
        }
    }

    /// The active copy, once there is one (polling the node's state).
    fn copy(&self) -> impl std::future::Future<Output = Result<Arc<dyn ShardSearcher>>> {
        let (node, index, shard) = (self.node.clone(), self.index.clone(), self.shard);
        let resolved = self.resolved.clone();
        async move {
            let deadline = Instant::now() + PROMOTION_WAIT;
            loop {
                if let Some(copy) = resolved.get() {
                    return Ok(copy.clone());
                }
                let node = node
                    .upgrade()
                    .ok_or_else(|| Error::illegal_state("the node has stopped"))?;
                let copies = node.search_copies(&index, shard);
                let waiting =
                    copies.is_empty() || copies.iter().any(|copy| copy.node_id() == PROMOTING);
                if !waiting || Instant::now() >= deadline {
                    let copy = copies
                        .into_iter()
                        .next()
                        .ok_or_else(|| Error::illegal_state("a shard without a copy to search"))?;
                    if copy.node_id() == PROMOTING {
                        return Err(no_primary(&index.name(), shard));
                    }
                    return Ok(resolved.get_or_init(|| copy).clone());
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    }
}

/// The node id a [`PromotingShard`] reports until its copy is known (a shard failure names it).
const PROMOTING: &str = "_promoting";

fn no_primary(index: &str, shard: u32) -> Error {
    Error::new(
        "no_shard_available_action_exception",
        503,
        format!(
            "[{index}][{shard}] primary shard is not active: its promotion did not finish in time"
        ),
    )
    .with_meta("index", index.to_string())
    .with_meta("shard", shard.to_string())
}

impl ShardSearcher for PromotingShard {
    fn index_name(&self) -> String {
        self.index.name()
    }

    fn index_uuid(&self) -> String {
        self.index.metadata().uuid.clone()
    }

    fn shard_id(&self) -> u32 {
        self.shard
    }

    fn node_id(&self) -> String {
        self.resolved
            .get()
            .map_or_else(|| PROMOTING.to_string(), |copy| copy.node_id())
    }

    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        let copy = self.copy();
        Box::pin(async move { copy.await?.can_match(request).await })
    }

    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        let copy = self.copy();
        Box::pin(async move { copy.await?.query(request).await })
    }

    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        let copy = self.copy();
        Box::pin(async move { copy.await?.fetch(request).await })
    }

    fn free_context(&self, id: ReaderContextId) {
        if let Some(copy) = self.resolved.get() {
            copy.free_context(id);
        }
    }

    fn fetch_with_query(&self) -> bool {
        // the copy is not known yet: a remote one would take its page with the query
        true
    }
}
