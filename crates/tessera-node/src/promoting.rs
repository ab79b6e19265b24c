//! A shard in the middle of a failover. Once the manager promotes a replica, the routing names
//! it the primary, initializing, while its node reopens it as one (replaying its translog): for
//! that moment no copy of the shard is active. A search that comes then waits for the new
//! primary (briefly, [`PROMOTION_WAIT`]) instead of reporting the shard failed, so a client
//! sees no failed search across a failover. Two places wait:
//! - a coordinating node whose state shows the promotion ([`AwaitedShard::promoted_primary`]);
//! - the promoted copy's node, reached by a coordinating node that does not see the promotion
//!   yet and still takes the copy for a started replica, or coordinating the search itself
//!   before it publishes the state it is applying ([`AwaitedShard::opening_here`]).

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

/// What a wait for a copy sees each time it looks: the copy, not yet, or an error to report.
type Resolve = dyn Fn() -> Result<Option<Arc<dyn ShardSearcher>>> + Send + Sync;

/// See the module documentation: the copy a search of the shard reaches once it is active.
pub struct AwaitedShard {
    index: Arc<IndexService>,
    shard: u32,
    resolve: Arc<Resolve>,
    /// The copy the query went to, which its fetch and free go to as well.
    resolved: Arc<OnceLock<Arc<dyn ShardSearcher>>>,
}

impl AwaitedShard {
    /// On a coordinating node whose routing shows the promotion: the copy the node's state
    /// routes the search to once the promoted primary is active.
    pub fn promoted_primary(node: Weak<Node>, index: Arc<IndexService>, shard: u32) -> Self {
        Self::new(node, index, shard, move |node, index| {
            let copy = node.search_copies(index, shard).into_iter().next();
            Ok(copy.filter(|copy| copy.node_id() != PROMOTING))
        })
    }

    /// On the node that reopens its replica as the primary: this node's copy once it has
    /// opened. Once the node's routing no longer gives it the copy, the shard's own error
    /// (not found, failed) is the answer.
    pub fn opening_here(node: Weak<Node>, index: Arc<IndexService>, shard: u32) -> Self {
        Self::new(node, index, shard, move |node, index| {
            node.search_copy_here(index, shard)
        })
    }

    /// Waits for what `resolve` finds, asked of the node while it runs.
    fn new(
        node: Weak<Node>,
        index: Arc<IndexService>,
        shard: u32,
        resolve: impl Fn(&Node, &Arc<IndexService>) -> Result<Option<Arc<dyn ShardSearcher>>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        let target = index.clone();
        let resolve = move || {
            let node = node
                .upgrade()
                .ok_or_else(|| Error::illegal_state("the node has stopped"))?;
            resolve(&node, &target)
        };
        AwaitedShard {
            index,
            shard,
            resolve: Arc::new(resolve),
            resolved: Arc::default(),
        }
    }

    /// The copy, once there is one (polling).
    fn copy(&self) -> impl std::future::Future<Output = Result<Arc<dyn ShardSearcher>>> {
        let (resolve, resolved) = (self.resolve.clone(), self.resolved.clone());
        let (index, shard) = (self.index.name(), self.shard);
        async move {
            let deadline = Instant::now() + PROMOTION_WAIT;
            loop {
                if let Some(copy) = resolved.get() {
                    return Ok(copy.clone());
                }
                if let Some(copy) = resolve()? {
                    return Ok(resolved.get_or_init(|| copy).clone());
                }
                if Instant::now() >= deadline {
                    return Err(no_primary(&index, shard));
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    }
}

/// The node id a [`AwaitedShard`] reports until its copy is known (a shard failure names it).
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

impl ShardSearcher for AwaitedShard {
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
