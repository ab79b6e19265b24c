//! A search over gRPC answers as the same search over local shards: node B holds a real
//! three-shard index and serves it with `register_search_handlers` on a `TransportServer`;
//! the coordinator on node A reaches it only through `RemoteShard`s (real sockets on
//! 127.0.0.1), running the real coordinator (`tessera_search::search`). Hits, totals,
//! aggregations, paging, sorting, can_match skips and fetch-with-query must be identical to the
//! search run on node B's `LocalShard`s directly, and node B must not keep reader contexts
//! once the search answered. A copy on a node that cannot be reached fails over to the next.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_cluster::transport::{
    register_search_handlers, Handlers, ReceivingRuns, RemoteShard, ServerHandle, ShardLookup,
    TransportClient, TransportServer,
};
use tessera_common::settings::Settings;
use tessera_common::threadpool::ThreadPool;
use tessera_common::Error;
use tessera_index::{Conditions, DocWrite, IndexService, NodeResources};
use tessera_mapping::Mapping;
use tessera_search::concurrent::SliceExecutor;
use tessera_search::reader_context::DEFAULT_KEEP_ALIVE;
use tessera_search::{
    LocalShard, ReaderContexts, ResponseOptions, Search, SearchSource, ShardGroup, ShardSearcher,
    ShardServices,
};

const SHARDS: u32 = 3;
const COLORS: [&str; 4] = ["red", "green", "blue", "black"];

/// Node B: the index, its shard services, and the transport serving them.
struct DataNode {
    _dir: tempfile::TempDir,
    index: Arc<IndexService>,
    services: Arc<ShardServices>,
    pools: Vec<ThreadPool>,
    address: String,
    _server: ServerHandle,
}

impl DataNode {
    fn start() -> DataNode {
        let dir = tempfile::tempdir().unwrap();
        let settings = json!({
            "number_of_shards": SHARDS,
            "number_of_replicas": 0,
            "refresh_interval": "-1",
            "translog": {"durability": "async"}
        });
        let mapping = json!({"properties": {
            "color": {"type": "keyword"},
            "n": {"type": "long"},
            "price": {"type": "double"},
            "body": {"type": "text"}
        }});
        let index = Arc::new(
            IndexService::create(
                &dir.path().join("logs"),
                "logs",
                "logs-uuid",
                Settings::from_json(&settings)
                    .unwrap()
                    .with_prefix("index."),
                Mapping::parse(&mapping).unwrap(),
                &NodeResources {
                    indexing_threads: 1,
                    indexing_buffer_bytes: 64 << 20,
                    merge_threads: 1,
                    scripts: Default::default(),
                },
            )
            .unwrap(),
        );
        let mut per_shard: Vec<Vec<DocWrite>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for i in 0..90u32 {
            let id = format!("doc-{i}");
            let source = json!({
                "color": COLORS[(i % 4) as usize],
                "n": i,
                "price": f64::from(i * 7 % 50) + 0.25,
                "body": format!("the quick {} fox number {i}", if i % 3 == 0 { "brown" } else { "red" }),
            });
            per_shard[index.shard_for(&id, None) as usize].push(DocWrite::Index {
                id: Some(id),
                auto_generated_id: false,
                source: serde_json::to_vec(&source).unwrap().into(),
                routing: None,
                conditions: Conditions::default(),
            });
        }
        for (shard, writes) in per_shard.into_iter().enumerate() {
            for result in index.write_shard(shard as u32, writes, false).unwrap() {
                result.unwrap();
            }
        }
        index.refresh().unwrap();

        let search_pool = ThreadPool::new("search", 3, 1000);
        let index_searcher = ThreadPool::new("index_searcher", 2, 1000);
        let services = Arc::new(ShardServices {
            executor: Arc::new(SliceExecutor::new(
                index_searcher.clone(),
                search_pool.clone(),
                4,
                Arc::new(|| 0.0),
            )),
            pool: search_pool.clone(),
            contexts: Arc::new(ReaderContexts::new(DEFAULT_KEEP_ALIVE)),
            load: Arc::new(tessera_search::search_load::SearchLoad::new(4)),
            breaker: None,
        });

        let (held, held_services) = (index.clone(), services.clone());
        let lookup: ShardLookup = Arc::new(move |uuid: &str, shard: u32| {
            if uuid != held.metadata().uuid || shard >= SHARDS {
                return Err(Error::new(
                    "shard_not_found_exception",
                    404,
                    format!("no such shard [{uuid}][{shard}]"),
                ));
            }
            Ok(Arc::new(LocalShard::new(
                held.clone(),
                shard,
                "node-b",
                held_services.clone(),
            )) as Arc<dyn ShardSearcher>)
        });
        let mut handlers = Handlers::new();
        register_search_handlers(&mut handlers, lookup, ReceivingRuns::new(1));
        let (address, server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(handlers)).unwrap();
        DataNode {
            _dir: dir,
            index,
            services,
            pools: vec![search_pool, index_searcher],
            address: address.to_string(),
            _server: server,
        }
    }

    fn local(&self, shard: u32) -> Arc<dyn ShardSearcher> {
        Arc::new(LocalShard::new(
            self.index.clone(),
            shard,
            "node-b",
            self.services.clone(),
        ))
    }

    fn remote(
        &self,
        shard: u32,
        address: &str,
        client: &TransportClient,
    ) -> Arc<dyn ShardSearcher> {
        Arc::new(RemoteShard::new(
            "logs",
            "logs-uuid",
            shard,
            "node-b",
            address,
            client.clone(),
        ))
    }

    /// Waits for the frees sent fire-and-forget to arrive; the contexts still open then.
    async fn open_contexts_settled(&self) -> usize {
        let until = Instant::now() + Duration::from_secs(5);
        while self.services.contexts.open_count() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.services.contexts.open_count()
    }
}

impl Drop for DataNode {
    fn drop(&mut self) {
        for pool in &self.pools {
            pool.shutdown();
        }
    }
}

/// The response JSON without `took`, or the error. A body's `"params"` are URL parameters.
async fn run(coordinator: &ThreadPool, groups: Vec<ShardGroup>, body: &Value) -> Value {
    let mut body = body.clone();
    let params = body.as_object_mut().unwrap().remove("params");
    let mut source = SearchSource::from_body(&body);
    for (key, value) in params.iter().flat_map(|p| p.as_object().unwrap()) {
        source
            .params
            .insert(key.clone(), value.as_str().unwrap().to_string());
    }
    let search = Search::parse(source).expect("a valid search");
    match tessera_search::search(coordinator, groups, search, ResponseOptions::default()).await {
        Ok(response) => {
            let mut value = serde_json::to_value(&response).unwrap();
            value.as_object_mut().unwrap().remove("took");
            value
        }
        Err(e) => json!({"error": e.to_json(), "status": e.status()}),
    }
}

/// Where `actual` differs from `expected`, exactly — but for the numbers of an `_explanation`,
/// which cross the wire as JSON text and come back within a rounding step: serde_json parses
/// floats exactly only with its `float_roundtrip` feature, which the workspace does not enable
/// (the loopback transport shows the same).
fn difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            if e.keys().ne(a.keys()) {
                return Some(format!("{path}: keys {:?} != {:?}", e.keys(), a.keys()));
            }
            e.iter()
                .find_map(|(key, value)| difference(value, &a[key], &format!("{path}.{key}")))
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (e, a))| difference(e, a, &format!("{path}[{i}]"))),
        (Value::Number(e), Value::Number(a)) if path.contains("._explanation") => {
            let (e, a) = (e.as_f64().unwrap(), a.as_f64().unwrap());
            ((e - a).abs() > e.abs() * 1e-15).then(|| format!("{path}: {e} != {a}"))
        }
        _ => (expected != actual).then(|| format!("{path}: {expected} != {actual}")),
    }
}

fn requests() -> Vec<Value> {
    vec![
        json!({"query": {"match_all": {}}, "size": 5, "sort": [{"n": "desc"}]}),
        json!({"query": {"match": {"body": "brown fox"}}, "size": 7}),
        json!({"query": {"term": {"color": "red"}}, "size": 4, "from": 3, "sort": [{"price": "asc"}, {"n": "asc"}]}),
        json!({"size": 0, "aggs": {
            "colors": {"terms": {"field": "color"}, "aggs": {"avg_price": {"avg": {"field": "price"}}}},
            "prices": {"histogram": {"field": "price", "interval": 10}},
            "total": {"sum": {"field": "n"}}
        }}),
        json!({"query": {"range": {"n": {"gte": 10, "lt": 40}}}, "size": 3,
               "aggs": {"max_n": {"max": {"field": "n"}}}, "track_total_hits": true}),
        // with a pre-filter round: can_match crosses too (and skips shards nothing matches)
        json!({"query": {"range": {"n": {"gte": 5, "lte": 6}}}, "size": 2,
               "params": {"pre_filter_shard_size": "1"}}),
        json!({"query": {"match": {"body": "quick"}}, "size": 2, "_source": ["color"], "explain": true}),
        json!({"query": {"term": {"color": "purple"}}, "size": 10}),
        // a bad request fails the same way on every copy
        json!({"query": {"range": {"n": {"gte": "not a number"}}}}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_over_grpc_answers_as_the_local_search() {
    let node = DataNode::start();
    let coordinator = ThreadPool::new("coordinator", 2, 100);
    let client = TransportClient::new("node-a");
    for body in requests() {
        let local: Vec<ShardGroup> = (0..SHARDS)
            .map(|s| ShardGroup::single(node.local(s)))
            .collect();
        let remote: Vec<ShardGroup> = (0..SHARDS)
            .map(|s| ShardGroup::single(node.remote(s, &node.address, &client)))
            .collect();
        let expected = run(&coordinator, local, &body).await;
        assert_eq!(node.open_contexts_settled().await, 0);
        let actual = run(&coordinator, remote, &body).await;
        assert_eq!(
            node.open_contexts_settled().await,
            0,
            "node B kept reader contexts after {body}"
        );
        if let Some(diff) = difference(&expected, &actual, "") {
            panic!("{body}: {diff}\nexpected {expected}\nactual {actual}");
        }
        assert!(
            expected.get("error").is_some() || expected["hits"]["total"]["value"].is_number(),
            "{expected}"
        );
    }
    // one search with one shard: the page is fetched with the query, over the wire too
    let body = json!({"query": {"match_all": {}}, "size": 3, "sort": [{"n": "asc"}]});
    let expected = run(&coordinator, vec![ShardGroup::single(node.local(1))], &body).await;
    let actual = run(
        &coordinator,
        vec![ShardGroup::single(node.remote(1, &node.address, &client))],
        &body,
    )
    .await;
    assert_eq!(difference(&expected, &actual, ""), None);
    assert_eq!(actual["hits"]["hits"].as_array().unwrap().len(), 3);
    assert_eq!(client.channel_count(), 1);
    coordinator.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_on_an_unreachable_node_fails_over_to_the_next() {
    let node = DataNode::start();
    let coordinator = ThreadPool::new("coordinator", 2, 100);
    let client = TransportClient::new("node-a");
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let body = json!({"query": {"match": {"body": "fox"}}, "size": 6, "sort": [{"n": "desc"}],
                      "aggs": {"colors": {"terms": {"field": "color"}}}});
    let local: Vec<ShardGroup> = (0..SHARDS)
        .map(|s| ShardGroup::single(node.local(s)))
        .collect();
    let expected = run(&coordinator, local, &body).await;
    // every shard's first copy is on a node nobody listens on; the second is node B over gRPC
    let groups: Vec<ShardGroup> = (0..SHARDS)
        .map(|s| {
            ShardGroup::of(vec![
                node.remote(s, &gone, &client),
                node.remote(s, &node.address, &client),
            ])
        })
        .collect();
    let started = Instant::now();
    let actual = run(&coordinator, groups, &body).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(actual, expected);
    assert_eq!(actual["_shards"]["failed"], 0);
    assert_eq!(node.open_contexts_settled().await, 0);

    // with no other copy, the shard fails with the transport's error, named as OpenSearch does
    let groups: Vec<ShardGroup> = (0..SHARDS)
        .map(|s| ShardGroup::single(node.remote(s, &gone, &client)))
        .collect();
    let failed = run(&coordinator, groups, &body).await;
    assert_eq!(failed["status"], 500, "{failed}");
    let failures = failed["error"]["failed_shards"].as_array().unwrap();
    assert!(!failures.is_empty(), "{failed}");
    for failure in failures {
        assert_eq!(
            failure["reason"]["type"], "connect_transport_exception",
            "{failed}"
        );
    }
    coordinator.shutdown();
}
