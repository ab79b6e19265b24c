//! A shard copy whose query results feed the coordinator's [`ResponseCollector`]: it counts
//! the request in flight from the moment the copy is chosen (so the ranking of the search's
//! next shard already sees it) until its answer, and records the answer's statistics. The
//! chosen copy may carry a probe of a lagging copy (see the parent module): its query is sent
//! to that copy as well, and the probe's answer is measured and dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tessera_search::fetch::FetchedDoc;
use tessera_search::messages::{
    QuerySearchResult, ReaderContextId, ShardFetchRequest, ShardSearchRequest,
};
use tessera_search::shard::{ShardFuture, ShardSearcher};

use super::ResponseCollector;

/// See the module documentation.
pub struct TrackedShard {
    copy: Arc<dyn ShardSearcher>,
    node: String,
    collector: Arc<ResponseCollector>,
    /// Counted in flight since it was chosen, and not sent yet.
    reserved: AtomicBool,
    /// A lagging copy to send this copy's query to as well, once.
    probe: Mutex<Option<Box<TrackedShard>>>,
}

impl TrackedShard {
    /// The copy a ranking chose first: counted in flight now.
    pub fn chosen(copy: Arc<dyn ShardSearcher>, collector: Arc<ResponseCollector>) -> Self {
        let node = copy.node_id();
        collector.begin(&node);
        Self::claimed(copy, collector)
    }

    /// A copy a ranking counted in flight already (a probe, [`super::Ranking::probe`]).
    pub fn claimed(copy: Arc<dyn ShardSearcher>, collector: Arc<ResponseCollector>) -> Self {
        TrackedShard {
            node: copy.node_id(),
            copy,
            collector,
            reserved: AtomicBool::new(true),
            probe: Mutex::new(None),
        }
    }

    /// This copy, sending its query to `probe` as well.
    pub fn with_probe(self, probe: TrackedShard) -> Self {
        *self.probe.lock().unwrap() = Some(Box::new(probe));
        self
    }

    /// A copy tried only if the ones before it fail: counted once it is sent a request.
    pub fn fallback(copy: Arc<dyn ShardSearcher>, collector: Arc<ResponseCollector>) -> Self {
        TrackedShard {
            node: copy.node_id(),
            copy,
            collector,
            reserved: AtomicBool::new(false),
            probe: Mutex::new(None),
        }
    }

    /// Sends `request` to the probe, if this copy carries one: the answer is measured (by the
    /// probe's own `query`) and dropped, its reader context freed. It runs on the current
    /// runtime (the transport's calls need one); without one, the probe is released unsent
    /// and a later search probes the node.
    fn send_probe(&self, request: &ShardSearchRequest) {
        // a pinned reader (scroll, point in time) lives on the copy that has it
        if request.reader.is_some() {
            return;
        }
        let Some(probe) = self.probe.lock().unwrap().take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // the search's own end does not cancel it: a probe that never answers never
        // measures, and a lagging node on this node would stay set aside
        let request = ShardSearchRequest {
            cancelled: None,
            ..request.clone()
        };
        let answer = probe.query(request);
        runtime.spawn(async move {
            if let Ok(QuerySearchResult {
                context_id: Some(id),
                ..
            }) = answer.await
            {
                probe.free_context(id);
            }
        });
    }
}

/// One request in flight to a node, until dropped.
struct InFlight {
    node: String,
    collector: Arc<ResponseCollector>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.collector.end(&self.node);
    }
}

impl Drop for TrackedShard {
    fn drop(&mut self) {
        // chosen but never sent (the search skipped the shard, or failed first)
        if self.reserved.load(Ordering::Acquire) {
            self.collector.end(&self.node);
        }
    }
}

impl ShardSearcher for TrackedShard {
    fn index_name(&self) -> String {
        self.copy.index_name()
    }

    fn index_uuid(&self) -> String {
        self.copy.index_uuid()
    }

    fn shard_id(&self) -> u32 {
        self.copy.shard_id()
    }

    fn node_id(&self) -> String {
        self.node.clone()
    }

    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        self.copy.can_match(request)
    }

    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        self.send_probe(&request);
        if !self.reserved.swap(false, Ordering::AcqRel) {
            self.collector.begin(&self.node);
        }
        let in_flight = InFlight {
            node: self.node.clone(),
            collector: self.collector.clone(),
        };
        let sent = Instant::now();
        let answer = self.copy.query(request);
        Box::pin(async move {
            let result = answer.await?;
            if let Some(load) = &result.load {
                in_flight
                    .collector
                    .record(&in_flight.node, load, sent.elapsed());
            }
            drop(in_flight);
            Ok(result)
        })
    }

    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        self.copy.fetch(request)
    }

    fn free_context(&self, id: ReaderContextId) {
        self.copy.free_context(id)
    }

    fn fetch_with_query(&self) -> bool {
        self.copy.fetch_with_query()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_common::Result;

    /// A copy on `node` that answers every query with this load and a reader context, or
    /// fails; it notes the contexts freed.
    #[derive(Default)]
    struct Copy {
        node: &'static str,
        fails: bool,
        freed: Mutex<Vec<ReaderContextId>>,
    }

    fn copy(node: &'static str) -> Arc<Copy> {
        Arc::new(Copy {
            node,
            ..Copy::default()
        })
    }

    impl ShardSearcher for Copy {
        fn index_name(&self) -> String {
            "i".into()
        }
        fn index_uuid(&self) -> String {
            "u".into()
        }
        fn shard_id(&self) -> u32 {
            0
        }
        fn node_id(&self) -> String {
            self.node.into()
        }
        fn can_match(&self, _: ShardSearchRequest) -> ShardFuture<bool> {
            Box::pin(async { Ok(true) })
        }
        fn query(&self, _: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
            let fails = self.fails;
            Box::pin(async move {
                if fails {
                    return Err(tessera_common::Error::illegal_state("down"));
                }
                let result = QuerySearchResult {
                    context_id: Some(ReaderContextId { session: 1, id: 7 }),
                    load: Some(tessera_search::search_load::ShardLoad {
                        queue_size: 2,
                        service_time_nanos: 3_000_000,
                        request_service_nanos: 1_000,
                        clients: 1,
                    }),
                    ..QuerySearchResult::default()
                };
                Ok(result)
            })
        }
        fn fetch(&self, _: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn free_context(&self, id: ReaderContextId) {
            self.freed.lock().unwrap().push(id);
        }
    }

    fn request() -> ShardSearchRequest {
        ShardSearchRequest {
            source: Arc::default(),
            index_uuid: "u".into(),
            shard_id: 0,
            shard_index: 0,
            total_shards: 1,
            now_millis: 0,
            deadline: None,
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

    fn run<T>(future: ShardFuture<T>) -> Result<T> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    fn outgoing(collector: &ResponseCollector, node: &str) -> usize {
        collector
            .views()
            .iter()
            .find(|v| v.node_id == node)
            .map_or(0, |v| v.outgoing_searches)
    }

    #[test]
    fn a_chosen_copy_counts_in_flight_until_it_answers() {
        let collector = Arc::new(ResponseCollector::new());
        let copy = TrackedShard::chosen(copy("n1"), collector.clone());
        assert_eq!(outgoing(&collector, "n1"), 1);
        let answer = copy.query(request());
        assert_eq!(outgoing(&collector, "n1"), 1);
        run(answer).unwrap();
        assert_eq!(outgoing(&collector, "n1"), 0);
        let view = collector.views().pop().unwrap();
        assert_eq!(view.avg_queue_size, 2.0);
        assert_eq!(view.avg_service_time_nanos, 3_000_000);
        drop(copy);
        assert_eq!(outgoing(&collector, "n1"), 0, "released once only");
    }

    #[test]
    fn a_copy_never_sent_and_a_failed_one_are_released() {
        let collector = Arc::new(ResponseCollector::new());
        let skipped = TrackedShard::chosen(copy("n1"), collector.clone());
        drop(skipped);
        assert_eq!(outgoing(&collector, "n1"), 0);
        let failing = TrackedShard::fallback(
            Arc::new(Copy {
                node: "n2",
                fails: true,
                ..Copy::default()
            }),
            collector.clone(),
        );
        let answer = failing.query(request());
        assert_eq!(outgoing(&collector, "n2"), 1);
        assert!(run(answer).is_err());
        assert_eq!(outgoing(&collector, "n2"), 0);
        // a failure brings no statistics
        let view = collector.views().into_iter().find(|v| v.node_id == "n2");
        assert!(view.is_some_and(|v| v.rank_nanos.is_none()));
    }

    #[tokio::test]
    async fn a_probe_gets_the_query_too_and_its_answer_is_measured_and_dropped() {
        let collector = Arc::new(ResponseCollector::new());
        let lagging = copy("n2");
        // a ranking counted the probe in flight
        collector.begin("n2");
        let chosen = TrackedShard::chosen(copy("n1"), collector.clone())
            .with_probe(TrackedShard::claimed(lagging.clone(), collector.clone()));
        let answer = chosen.query(request()).await.unwrap();
        assert!(answer.load.is_some());
        for _ in 0..100 {
            if outgoing(&collector, "n2") == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(outgoing(&collector, "n2"), 0);
        let probed = collector
            .views()
            .into_iter()
            .find(|v| v.node_id == "n2")
            .unwrap();
        assert_eq!(probed.avg_service_time_nanos, 3_000_000, "measured");
        let freed = lagging.freed.lock().unwrap().clone();
        assert_eq!(
            freed,
            [ReaderContextId { session: 1, id: 7 }],
            "and dropped"
        );
        // once only
        chosen.query(request()).await.unwrap();
        tokio::task::yield_now().await;
        assert_eq!(lagging.freed.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_probe_of_a_copy_never_queried_is_released() {
        let collector = Arc::new(ResponseCollector::new());
        collector.begin("n2");
        let chosen = TrackedShard::chosen(copy("n1"), collector.clone())
            .with_probe(TrackedShard::claimed(copy("n2"), collector.clone()));
        assert_eq!(outgoing(&collector, "n2"), 1);
        drop(chosen);
        assert_eq!(outgoing(&collector, "n2"), 0);
        assert_eq!(outgoing(&collector, "n1"), 0);
    }

    #[tokio::test]
    async fn a_search_on_a_pinned_reader_sends_no_probe() {
        let collector = Arc::new(ResponseCollector::new());
        let lagging = copy("n2");
        collector.begin("n2");
        let chosen = TrackedShard::chosen(copy("n1"), collector.clone())
            .with_probe(TrackedShard::claimed(lagging.clone(), collector.clone()));
        let mut pinned = request();
        pinned.reader = Some(tessera_search::messages::ReaderUse::Pin {
            kind: tessera_search::reader_context::PinKind::Scroll,
            keep_alive_millis: 60_000,
            max_open: 10,
            pit: None,
        });
        chosen.query(pinned).await.unwrap();
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(lagging.freed.lock().unwrap().is_empty(), "not sent");
        // the probe stays claimed until the copy is dropped
        assert_eq!(outgoing(&collector, "n2"), 1);
        drop(chosen);
        assert_eq!(outgoing(&collector, "n2"), 0);
    }
}
