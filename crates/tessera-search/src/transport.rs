//! The loopback transport: a shard copy reached through the wire encoding without a network.
//! Every request is encoded, decoded on the "receiving" side, run there, and its answer (result
//! or error) encoded and decoded back, exactly what a remote transport will do around a socket.
//! Running the whole suite through it proves that nothing the coordinator and a shard exchange
//! depends on sharing a process; it also keeps the codec honest for the gRPC transport.
//!
//! The receiving side makes its own cancel flag, set when the caller drops the call (the way a
//! cancelled RPC stream would tell the remote node).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_common::Result;

use crate::fetch::FetchedDoc;
use crate::messages::{
    decode, encode, QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest,
};
use crate::shard::{ShardFuture, ShardSearcher};

/// A shard copy behind the loopback transport.
pub struct LoopbackShard {
    remote: Arc<dyn ShardSearcher>,
}

impl LoopbackShard {
    pub fn new(remote: Arc<dyn ShardSearcher>) -> LoopbackShard {
        LoopbackShard { remote }
    }
}

/// Sets the receiving side's cancel flag when the caller's future is dropped.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// One round trip: the request crosses as bytes, the answer comes back as bytes.
fn round_trip<Req, Resp>(
    request: &Req,
    call: impl FnOnce(Req) -> ShardFuture<Resp>,
) -> ShardFuture<Resp>
where
    Req: Serialize + for<'de> Deserialize<'de>,
    Resp: Serialize + for<'de> Deserialize<'de> + Send + 'static,
{
    let received = encode(request).and_then(|bytes| decode::<Req>(&bytes));
    let answer = received.map(call);
    Box::pin(async move {
        let answer: Result<Resp> = match answer {
            Ok(future) => future.await,
            Err(e) => Err(e),
        };
        decode::<Result<Resp>>(&encode(&answer)?)?
    })
}

/// A round trip of a search request: the receiving side gives it a cancel flag of its own,
/// set when the caller drops the call.
fn search_round_trip<Resp>(
    remote: &Arc<dyn ShardSearcher>,
    request: &ShardSearchRequest,
    call: fn(&dyn ShardSearcher, ShardSearchRequest) -> ShardFuture<Resp>,
) -> ShardFuture<Resp>
where
    Resp: Serialize + for<'de> Deserialize<'de> + Send + 'static,
{
    let remote = remote.clone();
    round_trip(request, move |received| {
        let flag = Arc::new(AtomicBool::new(false));
        let received = ShardSearchRequest {
            cancelled: Some(flag.clone()),
            ..received
        };
        let answer = call(remote.as_ref(), received);
        let guard = CancelOnDrop(flag);
        Box::pin(async move {
            let _guard = guard;
            answer.await
        })
    })
}

impl ShardSearcher for LoopbackShard {
    fn index_name(&self) -> String {
        self.remote.index_name()
    }

    fn index_uuid(&self) -> String {
        self.remote.index_uuid()
    }

    fn shard_id(&self) -> u32 {
        self.remote.shard_id()
    }

    fn node_id(&self) -> String {
        self.remote.node_id()
    }

    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        search_round_trip(&self.remote, &request, |shard, r| shard.can_match(r))
    }

    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        search_round_trip(&self.remote, &request, |shard, r| shard.query(r))
    }

    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        let remote = self.remote.clone();
        round_trip(&request, move |received| remote.fetch(received))
    }

    fn fetch_with_query(&self) -> bool {
        true
    }

    fn free_context(&self, id: ReaderContextId) {
        // a free that cannot cross is lost, as on a network: the context expires by itself
        if let Ok(id) = encode(&id).and_then(|bytes| decode::<ReaderContextId>(&bytes)) {
            self.remote.free_context(id);
        }
    }
}
