//! A shard copy on another node, searched over the transport: both sides of the four search
//! actions. [`RemoteShard`] is the caller's `ShardSearcher` (the coordinator cannot tell it
//! from a local shard); [`register_search_handlers`] is what the node holding the copy
//! installs to answer it. Together they do what `tessera_search::LoopbackShard` models in
//! process: encode, cross, decode, run, and a cancel flag of the receiving side's own, set
//! when the caller gives up.
//!
//! The fetch and free-context messages name only a reader context; on the wire they also carry
//! the shard they are for, so the receiving node finds the copy the same way for every action.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tessera_common::Result;
use tessera_search::fetch::FetchedDoc;
use tessera_search::messages::{
    decode, encode, QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest,
};
use tessera_search::shard::{ShardFuture, ShardSearcher};

use super::actions::{SEARCH_CAN_MATCH, SEARCH_FETCH_ID, SEARCH_FREE_CONTEXT, SEARCH_QUERY};
use super::client::TransportClient;
use super::server::Handlers;

/// How long past a search's own deadline the caller still waits for the shard's answer: a
/// shard that runs out of time answers with what it collected (`timed_out`), and that answer
/// needs time to be reduced, encoded and sent. The transport deadline only catches a node that
/// never answers.
pub const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// Finds a shard copy held by this node: `(index uuid, shard id)`. A copy that is not here
/// answers the lookup's error (e.g. `shard_not_found_exception`), which the caller sees.
pub type ShardLookup = Arc<dyn Fn(&str, u32) -> Result<Arc<dyn ShardSearcher>> + Send + Sync>;

/// A message for one shard copy (fetch and free carry no shard of their own).
#[derive(Serialize, Deserialize)]
struct ForShard<T> {
    index_uuid: String,
    shard_id: u32,
    message: T,
}

/// A shard copy held by the node at `address`.
pub struct RemoteShard {
    index_name: String,
    index_uuid: String,
    shard_id: u32,
    node_id: String,
    address: String,
    client: TransportClient,
}

impl RemoteShard {
    pub fn new(
        index_name: impl Into<String>,
        index_uuid: impl Into<String>,
        shard_id: u32,
        node_id: impl Into<String>,
        address: impl Into<String>,
        client: TransportClient,
    ) -> RemoteShard {
        RemoteShard {
            index_name: index_name.into(),
            index_uuid: index_uuid.into(),
            shard_id,
            node_id: node_id.into(),
            address: address.into(),
            client,
        }
    }

    /// The node's transport address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// One round trip: the request encoded, the answer decoded.
    fn call<Req, Resp>(
        &self,
        action: &'static str,
        request: &Req,
        deadline: Option<Instant>,
    ) -> ShardFuture<Resp>
    where
        Req: Serialize,
        Resp: DeserializeOwned + Send + 'static,
    {
        let call = encode(request).map(|body| {
            self.client.call(
                &self.address,
                action,
                body,
                deadline.map(|d| d + ANSWER_GRACE),
            )
        });
        Box::pin(async move { decode::<Resp>(&call?.await?) })
    }

    fn for_shard<T>(&self, message: T) -> ForShard<T> {
        ForShard {
            index_uuid: self.index_uuid.clone(),
            shard_id: self.shard_id,
            message,
        }
    }
}

impl ShardSearcher for RemoteShard {
    fn index_name(&self) -> String {
        self.index_name.clone()
    }

    fn index_uuid(&self) -> String {
        self.index_uuid.clone()
    }

    fn shard_id(&self) -> u32 {
        self.shard_id
    }

    fn node_id(&self) -> String {
        self.node_id.clone()
    }

    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        let deadline = request.deadline;
        self.call(SEARCH_CAN_MATCH, &request, deadline)
    }

    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        let deadline = request.deadline;
        self.call(SEARCH_QUERY, &request, deadline)
    }

    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        self.call(SEARCH_FETCH_ID, &self.for_shard(request), None)
    }

    fn fetch_with_query(&self) -> bool {
        true
    }

    fn free_context(&self, id: ReaderContextId) {
        // fire and forget: a free that does not arrive is not an error, the context expires
        // on its node by itself; without a runtime to send it on, that is what happens
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(body) = encode(&self.for_shard(id)) else {
            return;
        };
        let call = self
            .client
            .call(&self.address, SEARCH_FREE_CONTEXT, body, None);
        runtime.spawn(async move {
            let _ = call.await;
        });
    }
}

/// Sets the receiving side's cancel flag when the handler's future is dropped: the caller
/// went away (its stream was reset) or the call ended.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How many of the transport's threads may run a shard request themselves at once, instead of
/// handing it to the `search` pool and waiting (see `ShardSearchRequest::run_on_receiving_thread`):
/// fewer than the transport runtime has workers, so that a long request run in place never
/// leaves the node's transport without a thread to read and answer other calls.
#[derive(Clone)]
pub struct ReceivingRuns {
    running: Arc<AtomicUsize>,
    limit: usize,
}

impl ReceivingRuns {
    /// At most `limit` at once (0: every request goes to the pool).
    pub fn new(limit: usize) -> ReceivingRuns {
        ReceivingRuns {
            running: Arc::default(),
            limit,
        }
    }

    /// A place to run one request on this thread, held until the guard drops; none when
    /// `limit` requests already run in place.
    fn take(&self) -> Option<ReceivingRun> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < self.limit).then_some(running + 1)
            })
            .ok()
            .map(|_| ReceivingRun(self.running.clone()))
    }
}

/// One place taken from [`ReceivingRuns`].
struct ReceivingRun(Arc<AtomicUsize>);

impl Drop for ReceivingRun {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs a search request on the copy it names, with a cancel flag of this side's own; on this
/// thread when a place in `runs` is free.
async fn run_search<Resp: Serialize>(
    shards: &ShardLookup,
    runs: &ReceivingRuns,
    body: Vec<u8>,
    from_node: Option<String>,
    call: fn(&dyn ShardSearcher, ShardSearchRequest) -> ShardFuture<Resp>,
) -> Result<Vec<u8>> {
    let request: ShardSearchRequest = decode(&body)?;
    drop(body);
    let shard = shards(&request.index_uuid, request.shard_id)?;
    let flag = Arc::new(AtomicBool::new(false));
    let _cancel = CancelOnDrop(flag.clone());
    let run_here = runs.take();
    let request = ShardSearchRequest {
        cancelled: Some(flag),
        coordinator: from_node,
        run_on_receiving_thread: run_here.is_some(),
        ..request
    };
    // held to the end: a copy that is still opening runs the request later, when polled
    let answer = call(shard.as_ref(), request).await;
    drop(run_here);
    encode(&answer?)
}

/// Installs the receiving side of the four search actions over the copies `shards` finds;
/// `runs` bounds the requests the transport's threads run themselves.
pub fn register_search_handlers(handlers: &mut Handlers, shards: ShardLookup, runs: ReceivingRuns) {
    let lookup = shards.clone();
    let can_match_runs = runs.clone();
    handlers.register(SEARCH_CAN_MATCH, move |body, context| {
        let shards = lookup.clone();
        let runs = can_match_runs.clone();
        async move {
            let from = context.from_node;
            run_search(&shards, &runs, body, from, |shard, r| shard.can_match(r)).await
        }
    });
    let lookup = shards.clone();
    handlers.register(SEARCH_QUERY, move |body, context| {
        let shards = lookup.clone();
        let runs = runs.clone();
        async move {
            let from = context.from_node;
            run_search(&shards, &runs, body, from, |shard, r| shard.query(r)).await
        }
    });
    let lookup = shards.clone();
    handlers.register(SEARCH_FETCH_ID, move |body, _| {
        let shards = lookup.clone();
        async move {
            let request: ForShard<ShardFetchRequest> = decode(&body)?;
            let shard = shards(&request.index_uuid, request.shard_id)?;
            encode(&shard.fetch(request.message).await?)
        }
    });
    handlers.register(SEARCH_FREE_CONTEXT, move |body, _| {
        let shards = shards.clone();
        async move {
            let request: ForShard<ReaderContextId> = decode(&body)?;
            shards(&request.index_uuid, request.shard_id)?.free_context(request.message);
            Ok(Vec::new())
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::server::TransportServer;
    use std::sync::Mutex;
    use tessera_common::Error;
    use tessera_search::hits::QueryResult;
    use tessera_search::SearchSource;
    use tokio::sync::mpsc;

    /// A shard that answers from the request alone and reports what reached it.
    struct Recording {
        events: mpsc::UnboundedSender<String>,
        freed: Mutex<Vec<ReaderContextId>>,
        /// Each query's `run_on_receiving_thread`, in arrival order.
        run_here: Mutex<Vec<bool>>,
    }

    impl ShardSearcher for Recording {
        fn index_name(&self) -> String {
            "logs".into()
        }
        fn index_uuid(&self) -> String {
            "logs-uuid".into()
        }
        fn shard_id(&self) -> u32 {
            1
        }
        fn node_id(&self) -> String {
            "node-b".into()
        }
        fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
            Box::pin(async move { Ok(request.shard_index == 4) })
        }
        fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
            let events = self.events.clone();
            self.run_here
                .lock()
                .unwrap()
                .push(request.run_on_receiving_thread);
            Box::pin(async move {
                let flag = request
                    .cancelled
                    .clone()
                    .expect("the receiving side sets one");
                if request.source.body.as_deref() == Some("wait") {
                    let _ = events.send("started".into());
                    // watch the flag from outside this future, which is about to be dropped
                    tokio::spawn(async move {
                        while !flag.load(Ordering::Relaxed) {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        let _ = events.send("cancelled".into());
                    });
                    std::future::pending::<()>().await;
                }
                let deadline_left = request
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now()).as_secs());
                Ok(QuerySearchResult {
                    result: QueryResult {
                        total: u64::from(request.total_shards) * 10 + deadline_left.unwrap_or(0),
                        ..QueryResult::default()
                    },
                    aggregations: None,
                    sort_formats: vec![tessera_search::sort::SortFormat::Number],
                    profile: None,
                    context_id: Some(ReaderContextId { session: 9, id: 7 }),
                    fetched: None,
                    load: None,
                    pinned: None,
                    suggest: None,
                    dfs: None,
                })
            })
        }
        fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
            Box::pin(async move { Err(Error::search_context_missing(request.context_id.id)) })
        }
        fn free_context(&self, id: ReaderContextId) {
            self.freed.lock().unwrap().push(id);
            let _ = self.events.send(format!("freed {}", id.id));
        }
    }

    fn request(body: &str, deadline: Option<Instant>) -> ShardSearchRequest {
        ShardSearchRequest {
            source: Arc::new(SearchSource {
                body: Some(body.into()),
                ..SearchSource::default()
            }),
            index_uuid: "logs-uuid".into(),
            shard_id: 1,
            shard_index: 4,
            total_shards: 6,
            now_millis: 0,
            deadline,
            fetch_page: None,
            parsed: None,
            cancelled: None,
            coordinator: None,
            run_on_receiving_thread: false,
            reader: None,
            alias_filter: None,
            index_boost: 1.0,
            dfs: None,
        }
    }

    async fn serve() -> (RemoteShard, Arc<Recording>, mpsc::UnboundedReceiver<String>) {
        let (events, seen) = mpsc::unbounded_channel();
        let shard = Arc::new(Recording {
            events,
            freed: Mutex::new(Vec::new()),
            run_here: Mutex::new(Vec::new()),
        });
        let held = shard.clone();
        let mut handlers = Handlers::new();
        register_search_handlers(
            &mut handlers,
            Arc::new(move |uuid: &str, id: u32| {
                if (uuid, id) == ("logs-uuid", 1) {
                    Ok(held.clone() as Arc<dyn ShardSearcher>)
                } else {
                    Err(Error::new(
                        "shard_not_found_exception",
                        404,
                        format!("no such shard [{uuid}][{id}]"),
                    ))
                }
            }),
            ReceivingRuns::new(1),
        );
        let (address, server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(handlers)).unwrap();
        // the server runs until the test's runtime ends
        std::mem::forget(server);
        let remote = RemoteShard::new(
            "logs",
            "logs-uuid",
            1,
            "node-b",
            address.to_string(),
            TransportClient::new("node-a"),
        );
        (remote, shard, seen)
    }

    #[tokio::test]
    async fn the_search_actions_cross_with_their_messages() {
        let (remote, _shard, _seen) = serve().await;
        assert_eq!(
            (
                remote.index_name(),
                remote.index_uuid(),
                remote.shard_id(),
                remote.node_id()
            ),
            ("logs".into(), "logs-uuid".into(), 1, "node-b".into())
        );
        assert!(remote.can_match(request("{}", None)).await.unwrap());
        let deadline = Instant::now() + Duration::from_secs(30);
        let answer = remote.query(request("{}", Some(deadline))).await.unwrap();
        // 6 shards * 10, plus the ~29 s left that the shard saw of its own deadline (the
        // search's, not the transport's grace)
        assert!(
            (60 + 28..=60 + 30).contains(&answer.result.total),
            "{}",
            answer.result.total
        );
        assert_eq!(
            answer.context_id,
            Some(ReaderContextId { session: 9, id: 7 })
        );
        let error = remote
            .fetch(ShardFetchRequest {
                context_id: ReaderContextId { session: 9, id: 7 },
                docs: vec![(0, 1)],
            })
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "search_context_missing_exception");
        assert_eq!(error.status(), 404);
    }

    #[tokio::test]
    async fn a_free_reaches_the_copy_without_anyone_waiting() {
        let (remote, shard, mut seen) = serve().await;
        remote.free_context(ReaderContextId { session: 9, id: 3 });
        let event = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(event.unwrap().as_deref(), Some("freed 3"));
        assert_eq!(
            *shard.freed.lock().unwrap(),
            vec![ReaderContextId { session: 9, id: 3 }]
        );
    }

    #[tokio::test]
    async fn a_copy_that_is_not_there_answers_the_lookups_error() {
        let (remote, _shard, _seen) = serve().await;
        let mut elsewhere = request("{}", None);
        elsewhere.shard_id = 5;
        let error = remote.query(elsewhere).await.err().expect("an error");
        assert_eq!(error.kind(), "shard_not_found_exception");
        assert_eq!(error.status(), 404);
        assert_eq!(error.reason(), "no such shard [logs-uuid][5]");
        assert!(error.is_retryable_on_another_copy());
    }

    #[tokio::test]
    async fn dropping_a_query_sets_the_remote_cancel_flag() {
        let (remote, _shard, mut seen) = serve().await;
        let query = tokio::spawn(remote.query(request("wait", None)));
        // let the call reach the shard, then give up on it
        let event = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(event.unwrap().as_deref(), Some("started"));
        query.abort();
        let event = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(
            event.expect("the remote flag was never set").as_deref(),
            Some("cancelled")
        );
    }

    #[tokio::test]
    async fn one_query_at_a_time_runs_on_the_receiving_thread() {
        let (remote, shard, mut seen) = serve().await;
        // a query that never ends holds the only place
        let waiting = tokio::spawn(remote.query(request("wait", None)));
        let event = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(event.unwrap().as_deref(), Some("started"));
        remote.query(request("{}", None)).await.unwrap();
        assert_eq!(*shard.run_here.lock().unwrap(), [true, false]);
        // given up, it frees the place for the next one
        waiting.abort();
        let event = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(event.unwrap().as_deref(), Some("cancelled"));
        remote.query(request("{}", None)).await.unwrap();
        assert_eq!(*shard.run_here.lock().unwrap(), [true, false, true]);
    }

    #[test]
    fn receiving_runs_are_bounded_and_given_back() {
        let runs = ReceivingRuns::new(2);
        let (a, b) = (runs.take(), runs.take());
        assert!(a.is_some() && b.is_some() && runs.take().is_none());
        drop(a);
        assert!(runs.take().is_some());
        assert!(ReceivingRuns::new(0).take().is_none());
    }
}
