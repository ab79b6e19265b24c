//! The node: one `tessera serve` process. It owns the data directory, the open indices, the
//! cluster settings, the thread pools, the write service (`crate::write`) and the background
//! scheduler (refresh, translog sync, flush on translog size).
//!
//! A single-node cluster is the same code as a multi-node one will be: searches go through
//! [`tessera_search::ShardSearcher`] targets, which remote shards will implement too.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_cluster::MetaStore;
use tessera_common::breaker::{CircuitBreakerService, RequestBreaker};
use tessera_common::settings::Settings;
use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};
use tessera_index::aliases::{AliasMetadata, Aliases};
use tessera_index::index_service::ShardSlot;
use tessera_index::shard::{shard_not_active, SEARCH_IDLE_AFTER_MILLIS};
use tessera_index::translog::write_atomic;
use tessera_index::{IndexMetadata, IndexService, NodeResources};
use tessera_mapping::Mapping;
use tessera_search::concurrent::{ConcurrencySettings, SliceExecutor};
use tessera_search::reader_context::DEFAULT_KEEP_ALIVE;
use tessera_search::{
    LocalShard, LoopbackShard, ReaderContexts, ShardGroup, ShardSearcher, ShardServices,
    UnavailableShard,
};

use crate::aliases::{AliasTable, IndexScope, IndexView};
use crate::cluster_settings::ClusterSettings;
use crate::cluster_state::ClusterService;
use crate::coordination::Coordination;
use crate::health::{Health, HealthWait, IndexHealth, PrimaryState, ReplicaCounts, Status};
use crate::indexing_pressure::IndexingPressure;
use crate::preference::{self, Preference};
use crate::process_stats::{cores, CpuSampler};
use crate::resolve::{resolve_names, select, validate_index_name, AliasNames, ResolveOptions};
use crate::search_service::SearchService;
use crate::write::WriteService;
use tessera_cluster::adaptive_selection::TrackedShard;

/// How a node is started.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub name: String,
    pub cluster_name: String,
    pub data_path: PathBuf,
    pub host: String,
    pub port: u16,
    /// `http.max_content_length`, bytes.
    pub max_content_length: usize,
    /// `indices.query.bool.max_clause_count`, a static node setting (opensearch.yml).
    pub max_clause_count: usize,
    /// `script.painless.regex.enabled`, a static node setting: `false` refuses regexes in
    /// scripts (`true` and OpenSearch's default `limited` allow them).
    pub painless_regex_enabled: bool,
    pub resources: NodeResources,
    /// `indexing_pressure.memory.limit`, bytes (`indexing_pressure` module).
    pub indexing_pressure_limit: u64,
    /// `thread_pool.search.queue_size` and `thread_pool.write.queue_size`.
    pub search_queue_size: usize,
    pub write_queue_size: usize,
    /// `http.max_in_flight_requests`: requests handled at once before the REST layer answers
    /// 429 (Tessera's own bound; OpenSearch has none besides its pools' queues).
    pub max_in_flight_requests: usize,
    /// `transport.shard_requests`: how the coordinator reaches this node's shards.
    pub shard_transport: ShardTransport,
    /// `cluster.coordination.etcd`: the etcd endpoints of the cluster this node joins; empty
    /// for a single-node cluster that needs no other service.
    pub etcd: Vec<String>,
    /// `transport.host` / `transport.port`: where other nodes reach this one.
    pub transport_host: String,
    pub transport_port: u16,
    /// How long the node's lease outlives its last keep-alive: how soon the cluster sees a
    /// dead node leave (and a dead manager replaced).
    pub lease_ttl: Duration,
    /// Dynamic cluster settings given in the node's configuration: what the node uses when
    /// neither a persistent nor a transient value is set (as `opensearch.yml` does).
    pub cluster_setting_defaults: tessera_common::settings::Settings,
    /// `node.roles`: what this node does in a cluster. Without `data` it holds no shards;
    /// without `cluster_manager` it never stands for manager; with neither (`[]`) it is a
    /// coordinating-only node, which takes requests and sends their shard requests on.
    pub roles: Vec<String>,
    /// `path.repo`: the directories snapshot repositories of type `fs` may use (a relative
    /// `location` is under the first).
    pub path_repo: Vec<PathBuf>,
}

/// The roles of a node that `node.roles` does not restrict.
pub const DEFAULT_ROLES: [&str; 4] = ["cluster_manager", "data", "ingest", "remote_cluster_client"];

/// The roles `node.roles` may name.
pub const KNOWN_ROLES: [&str; 5] = [
    "cluster_manager",
    "data",
    "ingest",
    "remote_cluster_client",
    "search",
];

/// How the coordinator reaches the shards of its own node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardTransport {
    /// A direct call, sharing the parsed request (the default).
    #[default]
    Local,
    /// Every shard request and answer through the wire encoding, as a remote shard would get
    /// them (Tessera's tests run the suites both ways).
    Loopback,
}

impl ShardTransport {
    pub fn parse(text: &str) -> Option<ShardTransport> {
        match text {
            "local" => Some(ShardTransport::Local),
            "loopback" => Some(ShardTransport::Loopback),
            _ => None,
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            name: "tessera-node".to_string(),
            cluster_name: "tessera".to_string(),
            data_path: PathBuf::from("data"),
            host: "127.0.0.1".to_string(),
            port: 9200,
            max_content_length: 100 << 20,
            max_clause_count: tessera_query::compile::DEFAULT_MAX_CLAUSE_COUNT,
            painless_regex_enabled: true,
            resources: NodeResources::default(),
            indexing_pressure_limit: crate::indexing_pressure::default_limit(),
            search_queue_size: 1000,
            write_queue_size: 10_000,
            max_in_flight_requests: 4096,
            shard_transport: ShardTransport::Local,
            etcd: Vec::new(),
            transport_host: "127.0.0.1".to_string(),
            transport_port: 9300,
            roles: DEFAULT_ROLES.map(String::from).to_vec(),
            path_repo: Vec::new(),
            lease_ttl: Duration::from_secs(5),
            cluster_setting_defaults: tessera_common::settings::Settings::new(),
        }
    }
}

/// The node's thread pools.
pub struct ThreadPools {
    pub search: ThreadPool,
    pub write: ThreadPool,
    pub index_searcher: ThreadPool,
    pub management: ThreadPool,
}

impl ThreadPools {
    fn new(config: &NodeConfig) -> ThreadPools {
        let cores = cores();
        ThreadPools {
            search: ThreadPool::new("search", cores * 3 / 2 + 1, config.search_queue_size),
            write: ThreadPool::new("write", cores, config.write_queue_size),
            index_searcher: ThreadPool::new("index_searcher", cores * 2, 1000),
            management: ThreadPool::new("management", 2.max(cores / 2), 1000),
        }
    }

    pub fn all(&self) -> [&ThreadPool; 4] {
        [
            &self.index_searcher,
            &self.management,
            &self.search,
            &self.write,
        ]
    }
}

pub struct Node {
    pub config: NodeConfig,
    pub node_id: String,
    pub started_millis: i64,
    pub pools: ThreadPools,
    /// Runs shard requests' slices on the `index_searcher` pool.
    pub slice_executor: Arc<SliceExecutor>,
    /// What this node's shards run their requests with (pools, reader contexts, breaker).
    pub shard_services: Arc<ShardServices>,
    pub cluster_settings: ClusterSettings,
    /// The cluster state and the metadata store it is written through.
    pub(crate) cluster: ClusterMode,
    /// The ingest pipelines of the cluster state, compiled (`crate::ingest`).
    pub(crate) pipelines: crate::ingest::PipelineCache,
    pub cpu: Arc<CpuSampler>,
    /// Bytes of write requests in flight, bounded by `indexing_pressure.memory.limit`.
    pub indexing_pressure: IndexingPressure,
    /// The request circuit breaker and its parent (`tessera_common::breaker`).
    breakers: Arc<CircuitBreakerService>,
    /// Document writes, from parsed operations to per-item results (`crate::write`).
    write: Arc<WriteService>,
    indices: RwLock<BTreeMap<String, Arc<IndexService>>>,
    pub(crate) create_lock: Mutex<()>,
    shutdown: AtomicBool,
    /// The node-local reports (`Node::run_report`), installed by the REST layer.
    report_hook: RwLock<Option<ReportHook>>,
    /// Turns the started copies of a shard in round robin: each search starts on the next.
    search_rotation: AtomicUsize,
    /// What this node knows of the nodes it sends shard requests to, for adaptive replica
    /// selection (`_nodes/stats/adaptive_selection`).
    pub response_collector: Arc<tessera_cluster::adaptive_selection::ResponseCollector>,
    /// This node, for what must outlive a call (a search waiting for a promoted primary).
    me: Weak<Node>,
    /// The long-running requests this node coordinates (`_tasks`).
    pub tasks: Arc<crate::tasks::TaskManager>,
}

/// A node-local report by name, with JSON parameters, answered in JSON: the REST layer
/// installs it (`Node::set_report_hook`) so that [`Node::fan_out`] can run it on every node.
pub type ReportHook = Arc<
    dyn Fn(
            &str,
            Value,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value>> + Send>>
        + Send
        + Sync,
>;

/// How long [`Node::fan_out`] waits for another node's report.
const REPORT_WAIT: Duration = Duration::from_secs(30);

fn indices_dir(data: &Path) -> PathBuf {
    data.join("indices")
}

/// How the node takes part in a cluster.
pub(crate) enum ClusterMode {
    /// A single-node cluster: the node decides, over its own files.
    Single(Arc<ClusterService>),
    /// A member of a cluster coordinated through a shared store (etcd).
    Member(Arc<Coordination>),
}

/// Where the primary of a shard is, for a write.
pub enum PrimaryTarget {
    Local,
    Remote(tessera_cluster::DiscoveryNode),
    Unavailable(Error),
    /// Not active now, but about to be: initializing (opening, or a replica being promoted)
    /// on a node of the cluster, or on a node that left and that the manager has not
    /// replaced yet. A write waits for the next cluster state rather than failing.
    Moving(Error),
}

/// Threads of a cluster member's transport runtime (node-to-node calls, both sides). One of
/// them at most runs a received shard search itself (`ReceivingRuns`), the other always
/// serves the wire.
pub(crate) const TRANSPORT_WORKERS: usize = 2;

/// How long a node started with `--etcd` waits for etcd to answer before it gives up.
const ETCD_CONNECT_WAIT: Duration = Duration::from_secs(60);

/// The suffix of an index directory being removed: such directories are never opened.
const DELETED_SUFFIX: &str = ".deleted";

/// Removes a deleted index's directory: renamed first (one atomic step, so a crash or a failed
/// removal never leaves a directory that opens again as the index), then removed; what cannot
/// be removed now is removed when the node next starts.
fn remove_index_dir(path: &Path) -> Result<()> {
    let mut doomed = path.as_os_str().to_owned();
    doomed.push(DELETED_SUFFIX);
    let doomed = PathBuf::from(doomed);
    std::fs::rename(path, &doomed)
        .map_err(|e| Error::internal(format!("delete index directory {}", path.display()), e))?;
    if let Err(e) = std::fs::remove_dir_all(&doomed) {
        eprintln!(
            "could not remove {} now, it is removed at the next start: {e}",
            doomed.display()
        );
    }
    Ok(())
}

impl Node {
    /// Opens the data directory (creating it), every index in it, and starts the scheduler;
    /// with `etcd` endpoints in the config, joins that cluster instead (see
    /// [`Node::start_member`]).
    pub fn start(config: NodeConfig) -> Result<Arc<Node>> {
        if config.etcd.is_empty() {
            return Self::start_with(config, None);
        }
        let namespace = format!("/tessera/{}/", config.cluster_name);
        // etcd may come up after the node (a whole cluster started at once): keep trying
        let deadline = Instant::now() + ETCD_CONNECT_WAIT;
        let store = loop {
            match tessera_cluster::EtcdMetaStore::connect(
                &config.etcd,
                &namespace,
                Duration::from_secs(5),
            ) {
                Ok(store) => break store,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("waiting for etcd at {}: {e}", config.etcd.join(","));
                    thread::sleep(Duration::from_millis(500));
                }
                Err(e) => {
                    return Err(Error::new(
                        "cluster_manager_not_discovered_exception",
                        503,
                        format!("cannot reach etcd at {}: {e}", config.etcd.join(",")),
                    ))
                }
            }
        };
        Self::start_with(config, Some(Arc::new(store)))
    }

    /// Starts a member of the cluster whose state `store` holds (every member shares it): the
    /// node's indices are those of the cluster state, with the copies its routing allocates
    /// here (`crate::coordination`).
    pub fn start_member(config: NodeConfig, store: Arc<dyn MetaStore>) -> Result<Arc<Node>> {
        Self::start_with(config, Some(store))
    }

    fn start_with(config: NodeConfig, store: Option<Arc<dyn MetaStore>>) -> Result<Arc<Node>> {
        let state_dir = config.data_path.join("_state");
        std::fs::create_dir_all(&state_dir).map_err(|e| {
            Error::internal(format!("create data directory {}", state_dir.display()), e)
        })?;
        std::fs::create_dir_all(indices_dir(&config.data_path))
            .map_err(|e| Error::internal("create the indices directory", e))?;
        let node_file = state_dir.join("node.json");
        let node_id = match std::fs::read(&node_file) {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["node_id"].as_str().map(String::from))
                .ok_or_else(|| Error::internal("read node.json", "missing node_id"))?,
            Err(_) => {
                let id = tessera_common::ids::random_uuid();
                write_atomic(&node_file, json!({ "node_id": id }).to_string().as_bytes())?;
                id
            }
        };
        let cluster_settings =
            ClusterSettings::open(&state_dir, config.cluster_setting_defaults.clone())?;
        // process-wide, as Lucene's IndexSearcher.maxClauseCount that OpenSearch sets here
        tessera_query::compile::set_max_clause_count(config.max_clause_count);
        tessera_script::regex::set_enabled(config.painless_regex_enabled);
        let mut indices = BTreeMap::new();
        for entry in std::fs::read_dir(indices_dir(&config.data_path))
            .map_err(|e| Error::internal("list indices", e))?
        {
            let entry = entry?;
            if entry
                .file_name()
                .to_string_lossy()
                .ends_with(DELETED_SUFFIX)
            {
                let _ = std::fs::remove_dir_all(entry.path());
                continue;
            }
            // a member opens the indices the cluster state names (`coordination::applier`)
            if store.is_some() || !entry.path().join("_state.json").exists() {
                continue;
            }
            // an index whose metadata cannot be read is left on disk, untouched, and the node
            // serves the others (a shard that cannot open fails alone, inside its index)
            match IndexService::open_deferred(&entry.path(), &config.resources) {
                Ok(service) => {
                    indices.insert(service.name(), Arc::new(service));
                }
                Err(e) => eprintln!(
                    "cannot open the index in {}, leaving it out: {e}",
                    entry.path().display()
                ),
            }
        }
        let mut local = tessera_cluster::DiscoveryNode {
            id: node_id.clone(),
            name: config.name.clone(),
            ephemeral_id: tessera_common::ids::random_uuid(),
            transport_address: format!("{}:{}", config.transport_host, config.transport_port),
            http_address: format!("{}:{}", config.host, config.port),
            roles: config.roles.clone(),
        };
        // the node a member's transport hands requests to, once it exists
        let member_node: Arc<std::sync::OnceLock<Weak<Node>>> = Arc::default();
        let cluster = match store {
            None => {
                let cluster = Arc::new(ClusterService::open(
                    &config.data_path,
                    local,
                    &config.cluster_name,
                    &indices,
                )?);
                for index in indices.values() {
                    write_metadata_through(index, &cluster);
                }
                ClusterMode::Single(cluster)
            }
            Some(store) => {
                crate::coordination::membership::check_cluster_uuid(
                    &config.data_path,
                    store.as_ref(),
                )?;
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(TRANSPORT_WORKERS)
                    .enable_all()
                    .thread_name("transport")
                    .build()
                    .map_err(|e| Error::internal("start the transport runtime", e))?;
                let (address, server) = crate::coordination::actions::bind_transport(
                    &runtime,
                    &config.transport_host,
                    config.transport_port,
                    member_node.clone(),
                )?;
                local.transport_address = address.to_string();
                let coordination = Coordination::join(
                    &config.cluster_name,
                    store,
                    local,
                    config.lease_ttl,
                    runtime,
                    server,
                )?;
                ClusterMode::Member(Arc::new(coordination))
            }
        };
        let pools = ThreadPools::new(&config);
        let indexing_pressure = IndexingPressure::new(config.indexing_pressure_limit);
        let cpu = Arc::new(CpuSampler::default());
        let sampler = cpu.clone();
        let cores_count = cores();
        // cores other processes keep busy: the host's CPU use minus this process's
        let external_load = Arc::new(move || {
            let (process, host) = sampler.sample();
            host.saturating_sub(process) as f64 / 100.0 * cores_count as f64
        });
        let slice_executor = Arc::new(SliceExecutor::new(
            pools.index_searcher.clone(),
            pools.search.clone(),
            cores_count,
            external_load,
        ));
        let write_pool = pools.write.clone();
        let node = Arc::new_cyclic(|node: &Weak<Node>| {
            let breaker_node = node.clone();
            let breakers = Arc::new(CircuitBreakerService::new(
                tessera_common::breaker::memory_base(),
            ));
            let fallback = breakers.clone();
            let shard_services = Arc::new(ShardServices {
                executor: slice_executor.clone(),
                pool: pools.search.clone(),
                contexts: Arc::new(ReaderContexts::new(DEFAULT_KEEP_ALIVE)),
                load: Arc::new(tessera_search::search_load::SearchLoad::new(
                    slice_executor.cores(),
                )),
                breaker: Some(Arc::new(move || match breaker_node.upgrade() {
                    Some(node) => node.request_breaker(),
                    None => fallback.request(),
                })),
            });
            Node {
                config,
                started_millis: tessera_common::time::now_millis(),
                pools,
                slice_executor,
                shard_services,
                cluster_settings,
                cluster,
                pipelines: Default::default(),
                cpu,
                indexing_pressure,
                breakers,
                write: Arc::new(WriteService::new(node.clone(), write_pool)),
                indices: RwLock::new(indices),
                create_lock: Mutex::new(()),
                shutdown: AtomicBool::new(false),
                report_hook: RwLock::new(None),
                search_rotation: AtomicUsize::new(0),
                response_collector: Arc::default(),
                me: node.clone(),
                tasks: crate::tasks::TaskManager::new(node_id.clone()),
                node_id,
            }
        });
        if let ClusterMode::Member(coordination) = &node.cluster {
            let _ = member_node.set(Arc::downgrade(&node));
            coordination.start_threads(Arc::downgrade(&node))?;
        }
        let recovering = Arc::downgrade(&node);
        let recovery = thread::Builder::new()
            .name("shard_recovery".into())
            .spawn(move || {
                open_shards(recovering.clone());
                recover_shards(recovering);
            })
            .map_err(|e| Error::internal("start the shard recovery", e))?;
        drop(recovery);
        let scheduler = Arc::downgrade(&node);
        thread::Builder::new()
            .name("scheduler".into())
            .spawn(move || run_scheduler(scheduler))
            .map_err(|e| Error::internal("start the scheduler", e))?;
        Ok(node)
    }

    /// Waits until every shard found at start has been opened (started or failed); for tests
    /// and tools that need the indices before they serve.
    pub fn wait_for_shards(&self) {
        let indices: Vec<Arc<IndexService>> =
            self.indices.read().unwrap().values().cloned().collect();
        for index in indices {
            // an index deleted meanwhile, or a node stopping, leaves its shards unopened
            while index.is_initializing()
                && !self.is_shutting_down()
                && self.index(&index.name()).is_some()
            {
                thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// The write service, which REST's document write handlers receive.
    pub fn write_service(&self) -> Arc<WriteService> {
        self.write.clone()
    }

    /// The health of an index: of its shard slots on a single node, of the cluster state's
    /// routing on a member.
    pub fn index_health(&self, index: &IndexService) -> IndexHealth {
        let primaries = self.primary_states(index);
        let Some(coordination) = self.coordination() else {
            return IndexHealth::of(&index.metadata(), primaries);
        };
        let meta = index.metadata();
        let state = coordination.holder.current();
        let mut counts = vec![ReplicaCounts::default(); meta.number_of_shards as usize];
        let tables = state
            .index(&meta.name)
            .filter(|i| i.metadata.uuid == meta.uuid)
            .into_iter()
            .flat_map(|i| i.routing.shards.iter());
        for table in tables {
            let Some(count) = counts.get_mut(table.shard as usize) else {
                continue;
            };
            // a relocation's target counts as its source does, active (the shard stays green)
            let relocating = table
                .replicas()
                .any(|copy| copy.state == tessera_cluster::ShardState::Relocating);
            for replica in table.replicas() {
                // a copy on a node that left is gone, whether or not the manager rerouted it
                if !replica
                    .node_id
                    .as_ref()
                    .is_some_and(|id| state.nodes.contains_key(id))
                {
                    continue;
                }
                match replica.state {
                    tessera_cluster::ShardState::Started => count.active += 1,
                    tessera_cluster::ShardState::Relocating => {
                        count.active += 1;
                        count.relocating += 1;
                    }
                    tessera_cluster::ShardState::Initializing if !relocating => {
                        count.initializing += 1
                    }
                    tessera_cluster::ShardState::Initializing
                    | tessera_cluster::ShardState::Unassigned => {}
                }
            }
        }
        IndexHealth::with_replicas(&meta, primaries, counts)
    }

    /// How many copies of a shard are active (started on a node of the cluster; its primary
    /// counts), for `wait_for_active_shards`.
    pub fn active_copies(&self, index: &str, uuid: &str, shard: u32) -> u32 {
        let Some(coordination) = self.coordination() else {
            return self
                .index(index)
                .and_then(|i| i.shard(shard).ok())
                .map_or(0, |_| 1);
        };
        let state = coordination.holder.current();
        state.shard_of(index, uuid, shard).map_or(0, |table| {
            table
                .copies
                .iter()
                .filter(|copy| copy.is_active())
                .filter(|copy| {
                    copy.node_id
                        .as_ref()
                        .is_some_and(|id| state.nodes.contains_key(id))
                })
                .count() as u32
        })
    }

    /// The health states of an index's primaries: of its shard slots on a single node, of
    /// the cluster state's routing on a member.
    pub fn primary_states(&self, index: &IndexService) -> Vec<PrimaryState> {
        if let Some(coordination) = self.coordination() {
            let meta = index.metadata();
            let state = coordination.holder.current();
            let routing = state
                .index(&meta.name)
                .filter(|i| i.metadata.uuid == meta.uuid);
            return (0..meta.number_of_shards as usize)
                .map(|shard| {
                    // a copy on a node that left is gone, whether or not the manager has
                    // rerouted it yet
                    let primary = routing
                        .and_then(|i| i.routing.shards.get(shard))
                        .and_then(|table| table.primary())
                        .filter(|p| {
                            p.node_id
                                .as_ref()
                                .is_none_or(|id| state.nodes.contains_key(id))
                        });
                    match primary.map(|p| p.state) {
                        Some(tessera_cluster::ShardState::Started)
                        | Some(tessera_cluster::ShardState::Relocating) => PrimaryState::Active,
                        Some(tessera_cluster::ShardState::Initializing) => {
                            PrimaryState::Initializing
                        }
                        _ => PrimaryState::Unassigned,
                    }
                })
                .collect();
        }
        index
            .shard_slots()
            .iter()
            .map(|slot| match slot {
                ShardSlot::Started(_) => PrimaryState::Active,
                ShardSlot::Initializing => PrimaryState::Initializing,
                ShardSlot::Failed(_) | ShardSlot::Unallocated => PrimaryState::Unassigned,
            })
            .collect()
    }

    /// A circuit breaker for one search request, under the limits the cluster settings set
    /// now (they are dynamic: read again for every request).
    pub fn request_breaker(&self) -> Arc<RequestBreaker> {
        self.update_breaker_limits();
        self.breakers.request()
    }

    /// The `breakers` section of `_nodes/stats`.
    pub fn breaker_stats(&self) -> Value {
        self.update_breaker_limits();
        self.breakers.stats()
    }

    fn update_breaker_limits(&self) {
        let request = self.cluster_settings.get("indices.breaker.request.limit");
        let total = self.cluster_settings.get("indices.breaker.total.limit");
        // values were validated when they were set; a bad one keeps the limits as they were
        let _ = self.breakers.set_limits(&request, &total);
    }

    /// The cluster-level concurrent segment search settings set explicitly.
    pub fn concurrency_settings(&self) -> ConcurrencySettings {
        let cs = &self.cluster_settings;
        ConcurrencySettings::from_values(
            cs.explicit("search.concurrent_segment_search.mode")
                .as_deref(),
            cs.explicit("search.concurrent_segment_search.enabled")
                .map(|v| v == "true"),
            cs.explicit("search.concurrent.max_slice_count")
                .and_then(|v| v.parse().ok()),
        )
    }

    pub fn index(&self, name: &str) -> Option<Arc<IndexService>> {
        self.indices.read().unwrap().get(name).cloned()
    }

    /// The index with this uuid, if the node has it open.
    pub fn index_by_uuid(&self, uuid: &str) -> Option<Arc<IndexService>> {
        self.indices
            .read()
            .unwrap()
            .values()
            .find(|index| index.metadata().uuid == uuid)
            .cloned()
    }

    /// Refreshes every copy of `indices` (in a cluster, on every node holding one); returns
    /// the copies it failed on, `(index, shard, why)`.
    pub async fn refresh_indices(
        self: &Arc<Self>,
        indices: Vec<Arc<IndexService>>,
    ) -> Result<Vec<(String, u32, Error)>> {
        self.on_every_copy(crate::coordination::actions::BroadcastOp::Refresh, indices)
            .await
    }

    /// Flushes every copy of `indices` (in a cluster, on every node holding one); returns the
    /// copies it failed on.
    pub async fn flush_indices(
        self: &Arc<Self>,
        indices: Vec<Arc<IndexService>>,
    ) -> Result<Vec<(String, u32, Error)>> {
        self.on_every_copy(crate::coordination::actions::BroadcastOp::Flush, indices)
            .await
    }

    /// Force-merges every copy of `indices` (in a cluster, on every node holding one);
    /// returns the copies it failed on.
    pub async fn force_merge_indices(
        self: &Arc<Self>,
        indices: Vec<Arc<IndexService>>,
        max_segments: usize,
    ) -> Result<Vec<(String, u32, Error)>> {
        use crate::coordination::actions::BroadcastOp;
        self.on_every_copy(BroadcastOp::ForceMerge(max_segments), indices)
            .await
    }

    async fn on_every_copy(
        self: &Arc<Self>,
        op: crate::coordination::actions::BroadcastOp,
        indices: Vec<Arc<IndexService>>,
    ) -> Result<Vec<(String, u32, Error)>> {
        match self.coordination() {
            Some(coordination) => Ok(coordination.clone().broadcast(self, op, &indices).await),
            None => {
                self.pools
                    .management
                    .run(move || {
                        for index in &indices {
                            op.run(index)?;
                        }
                        Ok(Vec::new())
                    })
                    .await
            }
        }
    }

    /// The figures of every started copy of `indices` (in a cluster, asked of the nodes that
    /// hold them), by (index uuid, shard).
    pub async fn shard_counts(
        self: &Arc<Self>,
        indices: Vec<Arc<IndexService>>,
    ) -> Result<HashMap<(String, u32, String), crate::coordination::actions::ShardCounts>> {
        if let Some(coordination) = self.coordination() {
            return Ok(coordination.clone().shard_counts(self, &indices).await);
        }
        let here = self.clone();
        self.pools
            .management
            .run(move || {
                let uuids: Vec<String> =
                    indices.iter().map(|i| i.metadata().uuid.clone()).collect();
                Ok(
                    crate::coordination::actions::shard_counts_here(&here, &uuids)
                        .into_iter()
                        .map(|(uuid, shard, counts)| ((uuid, shard, here.node_id.clone()), counts))
                        .collect(),
                )
            })
            .await
    }

    /// Installs the node-local reports [`Node::fan_out`] runs (the REST layer does, when it
    /// builds its router).
    pub fn set_report_hook(&self, hook: ReportHook) {
        *self.report_hook.write().unwrap() = Some(hook);
    }

    /// Runs the node-local report `report` here.
    pub async fn run_report(&self, report: &str, params: Value) -> Result<Value> {
        let hook = self.report_hook.read().unwrap().clone();
        match hook {
            Some(hook) => hook(report, params).await,
            None => Err(Error::illegal_state(format!(
                "this node serves no reports, [{report}] included"
            ))),
        }
    }

    /// Runs the node-local report `report` on every node of the cluster state at once (here
    /// through the hook, elsewhere over the transport, `cluster:monitor/nodes/report[n]`), and
    /// returns each node's answer, in the state's node order. A single node runs it once, here.
    pub async fn fan_out(
        self: &Arc<Self>,
        report: &str,
        params: Value,
    ) -> Vec<(tessera_cluster::DiscoveryNode, Result<Value>)> {
        self.fan_out_to(self.report_nodes(), report, params).await
    }

    /// The nodes a report goes to: those of the cluster state, and this node even when its
    /// state does not list it yet (a member that just joined still answers for itself).
    fn report_nodes(&self) -> Vec<tessera_cluster::DiscoveryNode> {
        let state = self.cluster_state();
        let mut nodes: Vec<tessera_cluster::DiscoveryNode> =
            state.nodes.values().cloned().collect();
        if !nodes.iter().any(|n| n.id == self.node_id) {
            nodes.push(self.local_node());
        }
        nodes
    }

    /// The nodes a `_nodes/{node_id}` filter names (see [`crate::node_filter`]).
    pub fn resolve_nodes(&self, expression: &str) -> Result<Vec<tessera_cluster::DiscoveryNode>> {
        let state = self.cluster_state();
        crate::node_filter::resolve_nodes(
            &self.report_nodes(),
            &self.node_id,
            state.cluster_manager.as_deref(),
            expression,
        )
    }

    /// [`fan_out`](Self::fan_out) to some of the nodes only.
    pub async fn fan_out_to(
        self: &Arc<Self>,
        nodes: Vec<tessera_cluster::DiscoveryNode>,
        report: &str,
        params: Value,
    ) -> Vec<(tessera_cluster::DiscoveryNode, Result<Value>)> {
        type Answer = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value>> + Send>>;
        let mut calls: Vec<Answer> = Vec::new();
        for target in &nodes {
            if target.id == self.node_id {
                let here = self.clone();
                let report = report.to_string();
                let params = params.clone();
                calls.push(Box::pin(
                    async move { here.run_report(&report, params).await },
                ));
            } else if let Some(coordination) = self.coordination() {
                let request = crate::coordination::actions::NodeReport {
                    report: report.to_string(),
                    params: params.to_string(),
                };
                let call = coordination.send_until::<_, String>(
                    target,
                    crate::coordination::actions::NODE_REPORT,
                    &request,
                    Some(Instant::now() + REPORT_WAIT),
                );
                calls.push(Box::pin(async move {
                    let text = call.await?;
                    serde_json::from_str(&text)
                        .map_err(|e| Error::internal("read a node's report", e))
                }));
            } else {
                calls.push(Box::pin(std::future::ready(Err(Error::illegal_state(
                    "a single node cannot reach another node",
                )))));
            }
        }
        // every call is already under way (remote ones on the transport runtime): await each
        let mut answers = Vec::with_capacity(calls.len());
        for (target, call) in nodes.into_iter().zip(calls) {
            answers.push((target, call.await));
        }
        answers
    }

    /// This node as the cluster state lists it.
    pub fn local_node(&self) -> tessera_cluster::DiscoveryNode {
        if let Some(coordination) = self.coordination() {
            return coordination.local().clone();
        }
        let state = self.cluster_state();
        state
            .nodes
            .get(&self.node_id)
            .cloned()
            .unwrap_or_else(|| tessera_cluster::DiscoveryNode {
                id: self.node_id.clone(),
                name: self.config.name.clone(),
                ephemeral_id: String::new(),
                transport_address: format!(
                    "{}:{}",
                    self.config.transport_host, self.config.transport_port
                ),
                http_address: format!("{}:{}", self.config.host, self.config.port),
                roles: self.config.roles.clone(),
            })
    }

    pub fn index_names(&self) -> Vec<String> {
        self.indices.read().unwrap().keys().cloned().collect()
    }

    /// Creates an index.
    pub fn create_index(
        &self,
        name: &str,
        settings: Settings,
        mapping: Mapping,
    ) -> Result<Arc<IndexService>> {
        self.create_index_with(name, settings, mapping, Aliases::new())
    }

    /// Creates an index with aliases, under what the templates that match its name give it
    /// (the request's settings, mappings and aliases on top).
    pub fn create_index_with(
        &self,
        name: &str,
        settings: Settings,
        mapping: Mapping,
        aliases: Aliases,
    ) -> Result<Arc<IndexService>> {
        validate_index_name(name)?;
        let state = self.cluster_state();
        if let Some(template) = crate::data_streams::template_for(name, &state) {
            return Err(Error::illegal_argument(format!(
                "cannot create index with name [{name}], because it matches with template [{template}] that creates data streams only, use create data stream api instead"
            )));
        }
        let (settings, mapping, aliases) = match crate::templates::for_new_index(name, &state) {
            Some(templates) => templates.under(settings, mapping, aliases)?,
            None => (settings, mapping, aliases),
        };
        self.create_index_exact(name, settings, mapping, aliases)
    }

    /// Creates an index with exactly these settings, mapping and aliases (no template).
    pub(crate) fn create_index_exact(
        &self,
        name: &str,
        settings: Settings,
        mapping: Mapping,
        aliases: Aliases,
    ) -> Result<Arc<IndexService>> {
        self.create_index_from(name, settings, mapping, aliases, None)
    }

    /// [`Node::create_index_exact`] for an index restored from a snapshot: its primaries take
    /// their first commit from `source` (no template applies either).
    pub(crate) fn create_index_restored(
        &self,
        name: &str,
        settings: Settings,
        mapping: Mapping,
        aliases: Aliases,
        source: tessera_index::snapshot_files::RestoreSource,
    ) -> Result<Arc<IndexService>> {
        self.create_index_from(name, settings, mapping, aliases, Some(source))
    }

    fn create_index_from(
        &self,
        name: &str,
        settings: Settings,
        mapping: Mapping,
        aliases: Aliases,
        restore: Option<tessera_index::snapshot_files::RestoreSource>,
    ) -> Result<Arc<IndexService>> {
        validate_index_name(name)?;
        let cluster = match &self.cluster {
            ClusterMode::Member(coordination) => {
                return coordination
                    .create_index(self, name, settings, mapping, &aliases, restore)
                    .map(|(index, _)| index)
            }
            ClusterMode::Single(cluster) => cluster,
        };
        let _guard = self.create_lock.lock().unwrap();
        self.create_single(
            cluster,
            name,
            &aliases,
            |uuid| {
                let mut meta = IndexService::new_metadata(name, uuid, settings, mapping)?;
                meta.restore = restore;
                Ok(meta)
            },
            |_, _| Ok(()),
        )
    }

    /// Creates an index on a single node (the create lock held): its metadata made by
    /// `metadata` for the new uuid, its directory filled by `prepare` before its shards open
    /// (a resize writes their first commits there).
    pub(crate) fn create_single(
        &self,
        cluster: &Arc<ClusterService>,
        name: &str,
        aliases: &Aliases,
        metadata: impl FnOnce(&str) -> Result<IndexMetadata>,
        prepare: impl FnOnce(&Path, &IndexMetadata) -> Result<()>,
    ) -> Result<Arc<IndexService>> {
        if let Some(existing) = self.index(name) {
            return Err(Error::resource_already_exists(
                name,
                &existing.metadata().uuid,
            ));
        }
        crate::aliases::check_new_index(name, aliases, &self.index_view())?;
        let uuid = tessera_common::ids::random_uuid();
        let path = indices_dir(&self.config.data_path).join(&uuid);
        let created = metadata(&uuid).and_then(|mut meta| {
            meta.aliases = aliases.clone();
            prepare(&path, &meta)?;
            IndexService::create_from(&path, meta, &self.config.resources)
        });
        let service = match created {
            Ok(service) => Arc::new(service),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&path);
                return Err(e);
            }
        };
        if let Err(e) = cluster.index_created(&service) {
            service.close_for_delete();
            drop(service);
            let _ = std::fs::remove_dir_all(&path);
            return Err(e);
        }
        write_metadata_through(&service, cluster);
        self.indices
            .write()
            .unwrap()
            .insert(name.to_string(), service.clone());
        Ok(service)
    }

    /// The index `name`, created with default settings if it is missing and
    /// `action.auto_create_index` allows it.
    pub fn index_or_create(&self, name: &str) -> Result<Arc<IndexService>> {
        if let Some(index) = self.index(name) {
            return Ok(index);
        }
        if !self.auto_create_allowed(name) {
            return Err(Error::index_not_found(name)
                .with_meta("resource.type", "index_expression")
                .caused_by(Error::illegal_argument(
                    "no such index and [action.auto_create_index] is [false]",
                )));
        }
        match self.create_index(name, Settings::new(), Mapping::default()) {
            Ok(index) => Ok(index),
            Err(e) if e.kind() == "resource_already_exists_exception" => {
                self.index(name).ok_or_else(|| Error::index_not_found(name))
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) fn auto_create_allowed(&self, name: &str) -> bool {
        let setting = self.cluster_settings.get("action.auto_create_index");
        match setting.as_str() {
            "true" => true,
            "false" => false,
            patterns => {
                for pattern in patterns.split(',').map(str::trim) {
                    let (allow, pattern) = match pattern.strip_prefix('-') {
                        Some(p) => (false, p),
                        None => (true, pattern.strip_prefix('+').unwrap_or(pattern)),
                    };
                    if tessera_mapping::dynamic::simple_match(pattern, name) {
                        return allow;
                    }
                }
                false
            }
        }
    }

    /// Deletes the indices an expression names.
    pub fn delete_indices(&self, expression: &str, options: &ResolveOptions) -> Result<()> {
        if self
            .cluster_settings
            .get_bool("action.destructive_requires_name")
            && (expression == "_all" || expression.contains('*'))
        {
            return Err(Error::illegal_argument(
                "Wildcard expressions or all indices are not allowed",
            ));
        }
        let aliases = self.alias_table();
        if let Some(alias) = expression.split(',').find(|part| aliases.contains(part)) {
            return Err(Error::illegal_argument(format!(
                "The provided expression [{alias}] matches an alias, specify the corresponding concrete indices instead."
            )));
        }
        let names = resolve_names(expression, &self.index_names(), options)?;
        let forget = self.backing_indices_deleted(&names)?;
        self.delete_names(&names)?;
        for change in forget {
            self.update_custom(crate::custom::CustomChange::DataStreams(change))?;
        }
        Ok(())
    }

    /// Deletes these indices (those already gone are skipped).
    pub(crate) fn delete_names(&self, names: &[String]) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let cluster = match &self.cluster {
            ClusterMode::Member(coordination) => return coordination.delete_indices(names),
            ClusterMode::Single(cluster) => cluster,
        };
        let _guard = self.create_lock.lock().unwrap();
        for name in names {
            if self.index(name).is_none() {
                continue;
            }
            cluster.index_deleted(name)?;
            let removed = self.indices.write().unwrap().remove(name);
            if let Some(index) = removed {
                index.close_for_delete();
                let path = index.path().to_path_buf();
                drop(index);
                remove_index_dir(&path)?;
            }
        }
        Ok(())
    }

    /// The search service over this node.
    pub fn search_service(self: &Arc<Self>) -> SearchService {
        SearchService::new(self.clone())
    }

    /// The indices an expression names (an alias names its indices).
    pub fn resolve(
        &self,
        expression: &str,
        options: &ResolveOptions,
    ) -> Result<Vec<Arc<IndexService>>> {
        Ok(self
            .resolve_search(expression, options, None)?
            .into_iter()
            .map(|(index, _)| index)
            .collect())
    }

    /// The indices a search of `expression` reads, each with how (the filter and routing of
    /// the aliases it was reached through, and the request's `routing`).
    pub fn resolve_search(
        &self,
        expression: &str,
        options: &ResolveOptions,
        routing: Option<&str>,
    ) -> Result<Vec<(Arc<IndexService>, IndexScope)>> {
        // the usual case, one index named itself, needs no alias or stream
        if let Some(index) = self.index(expression.trim()) {
            let scope = AliasTable::default().scope(expression.trim(), &[], routing);
            return Ok(vec![(index, scope)]);
        }
        let aliases = self.alias_table();
        let names = self.expression_names(&aliases);
        let selection = select(expression, &self.index_names(), &names, options)?;
        let indices = self.indices.read().unwrap();
        Ok(selection
            .indices
            .iter()
            .filter_map(|name| {
                let index = indices.get(name)?.clone();
                let through = selection
                    .through
                    .get(name)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                Some((index, aliases.scope(name, through, routing)))
            })
            .collect())
    }

    /// The names an index expression may use besides indices: aliases and data streams,
    /// each with its indices.
    fn expression_names(&self, aliases: &AliasTable) -> AliasNames {
        let mut names = aliases.names();
        for (name, stream) in crate::data_streams::streams(&self.cluster_state()) {
            let indices = stream.indices.into_iter().map(|b| b.index_name).collect();
            names.insert(name, indices);
        }
        names
    }

    /// Every index's metadata by name.
    pub fn index_view(&self) -> IndexView {
        self.indices
            .read()
            .unwrap()
            .iter()
            .map(|(name, index)| (name.clone(), index.metadata()))
            .collect()
    }

    /// The aliases of the node's indices.
    pub fn alias_table(&self) -> AliasTable {
        let metadata: Vec<Arc<IndexMetadata>> = self
            .indices
            .read()
            .unwrap()
            .values()
            .map(|index| index.metadata())
            .collect();
        AliasTable::of(metadata.iter().map(|meta| meta.as_ref()))
    }

    /// Where a write to `name` goes when `name` is an alias (its write index, with the
    /// alias's definition there, whose index routing applies: see
    /// [`crate::aliases::index_routing`]) or a data stream (its write index). `None` when
    /// `name` is neither.
    pub fn write_target(&self, name: &str) -> Result<Option<(Arc<IndexService>, Redirect)>> {
        let aliases = self.alias_table();
        if let Some((index, definition)) = aliases.write_index(name)? {
            let index = self
                .index(index)
                .ok_or_else(|| Error::index_not_found(index))?;
            return Ok(Some((index, Redirect::Alias(definition.clone()))));
        }
        let Some(stream) = crate::data_streams::get(&self.cluster_state(), name) else {
            return Ok(None);
        };
        let index = stream
            .write_index()
            .and_then(|backing| self.index(&backing.index_name))
            .ok_or_else(|| Error::index_not_found(name))?;
        Ok(Some((index, Redirect::DataStream)))
    }

    /// The index a single-document read of `name` reads, and with which routing: `name`
    /// itself, or the only index of the alias `name` with the alias's index routing; `None`
    /// when there is neither.
    pub fn read_target(
        &self,
        name: &str,
        routing: Option<&str>,
    ) -> Result<Option<(Arc<IndexService>, Option<String>)>> {
        if let Some(index) = self.index(name) {
            return Ok(Some((index, routing.map(String::from))));
        }
        let aliases = self.alias_table();
        let Some((index, definition)) = aliases.single_index(name)? else {
            return Ok(None);
        };
        let routing = crate::aliases::index_routing(name, definition, routing)?;
        Ok(self.index(index).map(|index| (index, routing)))
    }

    /// Whether `name` is an index or an alias.
    pub fn index_or_alias_exists(&self, name: &str) -> bool {
        self.index(name).is_some() || self.alias_table().contains(name)
    }

    /// `POST /{index}/_close` (`closed`) or `_open`: the indices the expression names; the
    /// names of those whose state changed.
    pub fn set_closed(
        &self,
        expression: &str,
        options: &ResolveOptions,
        closed: bool,
    ) -> Result<Vec<String>> {
        if closed
            && self
                .cluster_settings
                .get_bool("action.destructive_requires_name")
            && (expression == "_all" || expression.contains('*'))
        {
            return Err(Error::illegal_argument(
                "Wildcard expressions or all indices are not allowed",
            ));
        }
        let mut changed = Vec::new();
        for index in self.resolve(expression, options)? {
            if index.set_closed(closed)? {
                changed.push(index.name());
            }
        }
        Ok(changed)
    }

    /// Puts or deletes custom documents: templates, data streams (a cluster's manager
    /// decides it).
    pub fn update_custom(&self, change: crate::custom::CustomChange) -> Result<()> {
        let cluster = match &self.cluster {
            ClusterMode::Member(coordination) => return coordination.update_custom(change),
            ClusterMode::Single(cluster) => cluster,
        };
        let _guard = self.create_lock.lock().unwrap();
        let docs = change.decide(&cluster.state())?;
        cluster.custom_changed(docs)
    }

    /// `POST /_aliases` with `body`'s actions, as one change (a cluster's manager decides it).
    pub fn update_aliases(&self, body: &Value) -> Result<()> {
        let actions = crate::aliases::parse_actions(body)?;
        if let ClusterMode::Member(coordination) = &self.cluster {
            return coordination.update_aliases(body);
        }
        let change = {
            let _guard = self.create_lock.lock().unwrap();
            let change = crate::aliases::apply_actions(&actions, &self.index_view())?;
            for meta in change.changed.iter() {
                if let Some(index) = self.index(&meta.name) {
                    index.update_aliases(meta.aliases.clone())?;
                }
            }
            change
        };
        self.delete_names(&change.removed)
    }

    /// The shards of `indices` to search, in request order, each with its started copies (the
    /// first is asked first, the others when it fails); only those `routing` selects when given.
    pub fn shard_groups(
        &self,
        indices: &[(Arc<IndexService>, IndexScope)],
        preference: &Preference,
    ) -> Vec<ShardGroup> {
        let state = self
            .coordination()
            .map(|coordination| (coordination.clone(), coordination.holder.current()));
        let adaptive = preference.is_default() && self.adaptive_selection();
        let mut groups = Vec::new();
        for (index, scope) in indices {
            let shards: Vec<u32> = match &scope.routing {
                None => (0..index.metadata().number_of_shards).collect(),
                Some(values) => {
                    let mut ids: Vec<u32> = values
                        .iter()
                        .map(|r| index.shard_for("", Some(r)))
                        .collect();
                    ids.sort_unstable();
                    ids.dedup();
                    ids
                }
            };
            let turn = self.search_rotation.fetch_add(1, Ordering::Relaxed);
            for shard in shards.into_iter().filter(|&id| preference.selects(id)) {
                groups.push(ShardGroup {
                    copies: self.shard_copies(index, shard, &state, preference, turn, adaptive),
                    alias_filter: scope.filter.as_ref().map(Value::to_string),
                    index_boost: 1.0,
                });
            }
        }
        // OpenSearch orders a search's shards by ShardId: the shard number first, then the
        // index's name and uuid; the order breaks ties between hits and orders the shard
        // results every reduce meets
        groups.sort_by_cached_key(|group| {
            group
                .copies
                .first()
                .map(|c| (c.shard_id(), c.index_name(), c.index_uuid()))
        });
        groups
    }

    /// The copies of a shard a search may go to: this node's (a single node), or the started
    /// copies in the routing (a member), chosen and ordered by `preference` (by default turned
    /// by `turn`, so that searches spread over them, or ranked when `adaptive`: adaptive
    /// replica selection, for a search without a preference); an unavailable shard when there
    /// is none.
    fn shard_copies(
        &self,
        index: &Arc<IndexService>,
        shard: u32,
        state: &Option<(Arc<Coordination>, Arc<tessera_cluster::ClusterState>)>,
        preference: &Preference,
        turn: usize,
        adaptive: bool,
    ) -> Vec<Arc<dyn ShardSearcher>> {
        let local = || -> Arc<dyn ShardSearcher> {
            // a copy this node is reopening is waited for; any other error is the shard's own
            let local = match self.shard_for_search(index.clone(), shard) {
                Ok(copy) => copy,
                Err(_) => self.local_copy(index, shard),
            };
            match self.config.shard_transport {
                ShardTransport::Local => local,
                ShardTransport::Loopback => Arc::new(LoopbackShard::new(local)),
            }
        };
        let meta = index.metadata();
        let unavailable = |why: &str| -> Vec<Arc<dyn ShardSearcher>> {
            vec![Arc::new(UnavailableShard::new(
                &meta.name, &meta.uuid, shard, why,
            ))]
        };
        let Some((coordination, state)) = state else {
            let here = [preference::Copy {
                node_id: &self.node_id,
                node_name: &self.config.name,
                primary: true,
            }];
            return match preference
                .order(shard, &here, &self.node_id, turn)
                .is_empty()
            {
                true => unavailable("no copy of the shard matches the preference"),
                false => vec![Arc::new(TrackedShard::chosen(
                    local(),
                    self.response_collector.clone(),
                ))],
            };
        };
        // (node, primary) of each started copy
        let holders: Vec<(&tessera_cluster::DiscoveryNode, bool)> = state
            .shard_of(&meta.name, &meta.uuid, shard)
            .map(|table| {
                table
                    .copies
                    .iter()
                    .filter(|copy| copy.is_active())
                    .filter_map(|copy| {
                        Some((state.nodes.get(copy.node_id.as_ref()?)?, copy.primary))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if holders.is_empty() {
            if self.is_promoting(state, &meta, shard) {
                return vec![Arc::new(crate::promoting::AwaitedShard::promoted_primary(
                    self.me.clone(),
                    index.clone(),
                    shard,
                ))];
            }
            return unavailable("primary shard is not active");
        }
        let seen: Vec<preference::Copy<'_>> = holders
            .iter()
            .map(|(node, primary)| preference::Copy {
                node_id: &node.id,
                node_name: &node.name,
                primary: *primary,
            })
            .collect();
        let mut order = preference.order(shard, &seen, &self.node_id, turn);
        if order.is_empty() {
            return unavailable("no copy of the shard matches the preference");
        }
        let node_ids: Vec<&str> = holders.iter().map(|(node, _)| node.id.as_str()).collect();
        let collector = &self.response_collector;
        let mut probe = None;
        if order.len() > 1 && adaptive {
            let ranking = collector.choose(&node_ids, order);
            order = ranking.order;
            probe = ranking.probe;
            let losers: Vec<&str> = order[1..].iter().map(|&i| node_ids[i]).collect();
            collector.adjust_losers(node_ids[order[0]], &losers);
        }
        let copy_at = |position: usize| -> Arc<dyn ShardSearcher> {
            let node = holders[position].0;
            if node.id == self.node_id {
                local()
            } else {
                Arc::new(tessera_cluster::transport::RemoteShard::new(
                    meta.name.as_str(),
                    meta.uuid.as_str(),
                    shard,
                    node.id.as_str(),
                    node.transport_address.as_str(),
                    coordination.transport.clone(),
                ))
            }
        };
        let mut probe =
            probe.map(|position| TrackedShard::claimed(copy_at(position), collector.clone()));
        order
            .into_iter()
            .enumerate()
            .map(|(rank, position)| -> Arc<dyn ShardSearcher> {
                let copy = copy_at(position);
                match (rank, probe.take()) {
                    (0, Some(probe)) => {
                        Arc::new(TrackedShard::chosen(copy, collector.clone()).with_probe(probe))
                    }
                    (0, None) => Arc::new(TrackedShard::chosen(copy, collector.clone())),
                    _ => Arc::new(TrackedShard::fallback(copy, collector.clone())),
                }
            })
            .collect()
    }

    /// `cluster.routing.use_adaptive_replica_selection`: whether a search without a
    /// preference ranks a shard's copies (else it turns over them in round robin).
    fn adaptive_selection(&self) -> bool {
        self.cluster_settings
            .get_bool("cluster.routing.use_adaptive_replica_selection")
    }

    /// Whether the primary of `shard` is a replica being promoted (a failover: the routing
    /// names it initializing on a live node under a later term, and in sync) while no copy is
    /// active: a search waits for it rather than failing the shard.
    fn is_promoting(
        &self,
        state: &tessera_cluster::ClusterState,
        meta: &tessera_index::IndexMetadata,
        shard: u32,
    ) -> bool {
        state
            .shard_of(&meta.name, &meta.uuid, shard)
            .is_some_and(|table| {
                table.primary_term > 1
                    && table.primary().is_some_and(|primary| {
                        primary.state == tessera_cluster::ShardState::Initializing
                            && primary
                                .node_id
                                .as_ref()
                                .is_some_and(|id| state.nodes.contains_key(id))
                            && primary
                                .allocation_id
                                .as_ref()
                                .is_some_and(|id| table.in_sync.contains(id))
                    })
            })
    }

    /// This node's copy of `shard`, searched on its `search` pool.
    pub(crate) fn local_copy(
        &self,
        index: &Arc<IndexService>,
        shard: u32,
    ) -> Arc<dyn ShardSearcher> {
        Arc::new(LocalShard::new(
            index.clone(),
            shard,
            &self.node_id,
            self.shard_services.clone(),
        ))
    }

    /// The copy a scroll or PIT pinned a reader on: this node's, or the remote node's. A
    /// copy whose node or index is gone fails as its reader would: missing.
    pub fn pinned_copy(
        &self,
        pinned: &tessera_search::pinned::PinnedShard,
    ) -> Arc<dyn ShardSearcher> {
        let missing = || -> Arc<dyn ShardSearcher> {
            Arc::new(UnavailableShard::failing(
                &pinned.index,
                &pinned.index_uuid,
                pinned.shard_id,
                Error::search_context_missing(pinned.context.id),
            ))
        };
        if pinned.node_id == self.node_id {
            let Some(index) = self.index_by_uuid(&pinned.index_uuid) else {
                return missing();
            };
            let local = self.local_copy(&index, pinned.shard_id);
            return match self.config.shard_transport {
                ShardTransport::Local => local,
                ShardTransport::Loopback => Arc::new(LoopbackShard::new(local)),
            };
        }
        let Some(coordination) = self.coordination() else {
            return missing();
        };
        let state = coordination.holder.current();
        let Some(node) = state.nodes.get(&pinned.node_id) else {
            return missing();
        };
        Arc::new(tessera_cluster::transport::RemoteShard::new(
            pinned.index.as_str(),
            pinned.index_uuid.as_str(),
            pinned.shard_id,
            node.id.as_str(),
            node.transport_address.as_str(),
            coordination.transport.clone(),
        ))
    }

    /// Whether this node is reopening its copy of `shard`: the routing it knows gives this node
    /// a copy that is active or opening while the copy is closed or opening here. That is a
    /// promotion: the node closes the replica and opens it again as the primary before it
    /// publishes the state that says so, and a search may come in between.
    pub(crate) fn reopens_copy_here(&self, index: &IndexService, shard: u32) -> bool {
        let reopening = matches!(
            index.shard_slots().get(shard as usize),
            Some(ShardSlot::Unallocated | ShardSlot::Initializing)
        );
        let meta = index.metadata();
        reopening
            && self.coordination().is_some_and(|coordination| {
                let state = coordination.holder.current();
                let table = state.shard_of(&meta.name, &meta.uuid, shard);
                table.is_some_and(|table| {
                    table.copies.iter().any(|copy| {
                        copy.node_id.as_deref() == Some(self.node_id.as_str())
                            && (copy.is_active()
                                || (copy.primary
                                    && copy.state == tessera_cluster::ShardState::Initializing))
                    })
                })
            })
    }

    /// This node's copy of `shard` for a search; none yet while this node reopens it (a
    /// promoted replica, see [`Node::reopens_copy_here`]); else the shard's own error.
    pub(crate) fn search_copy_here(
        &self,
        index: &Arc<IndexService>,
        shard: u32,
    ) -> Result<Option<Arc<dyn ShardSearcher>>> {
        match index.shard(shard) {
            Ok(_) => Ok(Some(self.local_copy(index, shard))),
            Err(_) if self.reopens_copy_here(index, shard) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This node's copy of `shard` for a search, or, while this node reopens it, a wait for
    /// it ([`crate::promoting::AwaitedShard`]).
    pub(crate) fn shard_for_search(
        &self,
        index: Arc<IndexService>,
        shard: u32,
    ) -> Result<Arc<dyn ShardSearcher>> {
        Ok(match self.search_copy_here(&index, shard)? {
            Some(copy) => copy,
            None => Arc::new(crate::promoting::AwaitedShard::opening_here(
                self.me.clone(),
                index,
                shard,
            )),
        })
    }

    /// The copies a search of `shard` goes to now, without a preference.
    pub(crate) fn search_copies(
        &self,
        index: &Arc<IndexService>,
        shard: u32,
    ) -> Vec<Arc<dyn ShardSearcher>> {
        let state = self
            .coordination()
            .map(|coordination| (coordination.clone(), coordination.holder.current()));
        let turn = self.search_rotation.fetch_add(1, Ordering::Relaxed);
        let adaptive = self.adaptive_selection();
        self.shard_copies(index, shard, &state, &Preference::none(), turn, adaptive)
    }

    /// Health of the named indices (all when `None`).
    pub fn health(&self, indices: Option<&[Arc<IndexService>]>) -> Health {
        let all;
        let indices = match indices {
            Some(i) => i,
            None => {
                all = self
                    .indices
                    .read()
                    .unwrap()
                    .values()
                    .cloned()
                    .collect::<Vec<_>>();
                &all
            }
        };
        let mut health = Health::of(indices.iter().map(|i| self.index_health(i)).collect());
        let state = self.cluster_state();
        health.number_of_nodes = state.nodes.len();
        health.number_of_data_nodes = state
            .nodes
            .values()
            .filter(|n| {
                n.roles
                    .iter()
                    .any(|r| r == tessera_cluster::allocation::DATA_ROLE)
            })
            .count();
        health.discovered_cluster_manager = state.cluster_manager.is_some();
        health
    }

    /// Waits until the cluster (or the given indices) reach `status`, or `timeout` passes.
    /// Returns the health and whether it timed out.
    pub async fn wait_for_health(
        &self,
        expression: Option<&str>,
        wanted: HealthWait,
        timeout: Duration,
    ) -> Result<(Health, bool)> {
        let deadline = Instant::now() + timeout;
        loop {
            let resolved = match expression {
                Some(expr) => match self.resolve(expr, &ResolveOptions::default()) {
                    Ok(indices) => Some(indices),
                    Err(e) if e.status() == 404 => None,
                    Err(e) => return Err(e),
                },
                None => Some(self.indices.read().unwrap().values().cloned().collect()),
            };
            let (health, satisfied) = match &resolved {
                Some(indices) => {
                    let health = self.health(Some(indices));
                    let ok = wanted.status.is_none_or(|s| health.status <= s)
                        && !(wanted.no_relocating && health.relocating_shards > 0)
                        && !(wanted.no_initializing && health.initializing_shards > 0);
                    (health, ok)
                }
                None => {
                    let mut health = self.health(Some(&[]));
                    health.status = Status::Red;
                    (health, false)
                }
            };
            if satisfied {
                return Ok((health, false));
            }
            if Instant::now() >= deadline {
                return Ok((health, true));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The cluster state now.
    pub fn cluster_state(&self) -> Arc<tessera_cluster::ClusterState> {
        match &self.cluster {
            ClusterMode::Single(cluster) => cluster.state(),
            ClusterMode::Member(coordination) => coordination.holder.current(),
        }
    }

    /// The store the cluster state is written through.
    pub fn metadata_store(&self) -> &Arc<dyn MetaStore> {
        match &self.cluster {
            ClusterMode::Single(cluster) => cluster.store(),
            ClusterMode::Member(coordination) => &coordination.store,
        }
    }

    /// The node's part in a cluster coordinated through etcd; `None` for a single node.
    pub fn coordination(&self) -> Option<&Arc<Coordination>> {
        match &self.cluster {
            ClusterMode::Single(_) => None,
            ClusterMode::Member(coordination) => Some(coordination),
        }
    }

    /// Brings the cluster state's routing of `index` in line with its shards (a member
    /// reports its shards from the state applier instead).
    fn sync_routing(&self, index: &IndexService) {
        if let ClusterMode::Single(cluster) = &self.cluster {
            if let Err(e) = cluster.sync_shards(index) {
                eprintln!("[{}] could not update the shard routing: {e}", index.name());
            }
        }
    }

    /// A member accepts writes on its primaries only while its lease is provably alive (etcd
    /// confirmed it less than a ttl ago): past that the cluster may count it out. A single node
    /// always does.
    pub fn check_membership_for_writes(&self) -> Result<()> {
        match &self.cluster {
            ClusterMode::Member(coordination) if !coordination.membership.lease_alive() => {
                Err(Error::new(
                    "cluster_block_exception",
                    503,
                    "blocked by: [SERVICE_UNAVAILABLE/2/no cluster manager];: this node cannot reach the cluster's metadata store to renew its membership",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Where the primary of shard `shard` of the index is now, for a write.
    pub fn primary_target(&self, index: &str, uuid: &str, shard: u32) -> PrimaryTarget {
        let ClusterMode::Member(coordination) = &self.cluster else {
            return PrimaryTarget::Local;
        };
        let state = coordination.holder.current();
        let primary = state
            .shard_of(index, uuid, shard)
            .and_then(|table| table.primary().cloned());
        match primary {
            Some(copy) if copy.is_active() => {
                let node_id = copy.node_id.unwrap_or_default();
                if node_id == self.node_id {
                    PrimaryTarget::Local
                } else {
                    match state.nodes.get(&node_id) {
                        Some(node) => PrimaryTarget::Remote(node.clone()),
                        None => PrimaryTarget::Moving(shard_not_active(
                            index,
                            shard,
                            "its node left the cluster",
                        )),
                    }
                }
            }
            Some(copy) => {
                let error = shard_not_active(
                    index,
                    shard,
                    &format!("it is {}", copy.state.as_str().to_lowercase()),
                );
                match copy.state {
                    tessera_cluster::ShardState::Initializing => PrimaryTarget::Moving(error),
                    _ => PrimaryTarget::Unavailable(error),
                }
            }
            None => PrimaryTarget::Unavailable(Error::index_not_found(index)),
        }
    }

    /// Opens an index of the cluster state on this node (a member; the state applier calls
    /// it), with no copies yet.
    pub(crate) fn open_cluster_index(
        &self,
        meta: &tessera_index::IndexMetadata,
    ) -> Result<Arc<IndexService>> {
        let ClusterMode::Member(coordination) = &self.cluster else {
            return Err(Error::illegal_state("a single node opens its own indices"));
        };
        let _guard = self.create_lock.lock().unwrap();
        let path = indices_dir(&self.config.data_path).join(&meta.uuid);
        let service = Arc::new(IndexService::open_unallocated(
            &path,
            meta.clone(),
            &self.config.resources,
        )?);
        let decider = coordination.clone();
        service.set_metadata_sink(Arc::new(move |current, next| {
            decider.decide_metadata(current, next)
        }));
        let publisher = coordination.clone();
        let publishing = Arc::downgrade(&service);
        service.set_commit_listener(Arc::new(move |shard| {
            if let Some(index) = publishing.upgrade() {
                publisher.publish_later(index, shard);
            }
        }));
        self.indices
            .write()
            .unwrap()
            .insert(meta.name.clone(), service.clone());
        Ok(service)
    }

    /// Deletes an index here because the cluster state no longer holds it (a member).
    pub(crate) fn drop_local_index(&self, name: &str) {
        let _guard = self.create_lock.lock().unwrap();
        let removed = self.indices.write().unwrap().remove(name);
        if let Some(index) = removed {
            index.close_for_delete();
            let path = index.path().to_path_buf();
            drop(index);
            if let Err(e) = remove_index_dir(&path) {
                eprintln!("[{name}] cannot remove the deleted index's files: {e}");
            }
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    /// Commits every shard and stops background work.
    pub fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Relaxed);
        for index in self.indices.read().unwrap().values() {
            let _ = index.close();
        }
        for pool in self.pools.all() {
            pool.shutdown();
        }
        match &self.cluster {
            ClusterMode::Single(cluster) => cluster.shutdown(),
            ClusterMode::Member(coordination) => coordination.leave(),
        }
    }

    /// Applies the disk watermarks (see [`crate::disk`]): past the flood stage every index gets
    /// `index.blocks.read_only_allow_delete`; below the high watermark the block is lifted.
    pub fn check_disk(&self) {
        use crate::disk::{DiskUsage, Watermark, FLOOD_STAGE, HIGH, THRESHOLD_ENABLED};
        let settings = &self.cluster_settings;
        if !settings.get_bool(THRESHOLD_ENABLED) {
            return;
        }
        let Some(usage) = DiskUsage::of(&self.config.data_path) else {
            return;
        };
        let watermark = |key: &str| Watermark::parse(key, &settings.get(key)).ok();
        let (Some(flood), Some(high)) = (watermark(FLOOD_STAGE), watermark(HIGH)) else {
            return;
        };
        let block = if flood.exceeded(&usage) {
            true
        } else if !high.exceeded(&usage) {
            false
        } else {
            return;
        };
        let indices: Vec<Arc<IndexService>> =
            self.indices.read().unwrap().values().cloned().collect();
        for index in indices {
            let meta = index.metadata();
            let blocked = meta.setting("index.blocks.read_only_allow_delete") == "true";
            if blocked == block {
                continue;
            }
            let mut update = Settings::new();
            update.set("index.blocks.read_only_allow_delete", block.to_string());
            eprintln!(
                "disk {:.1}% used ({} bytes free): {} the flood-stage block of [{}]",
                usage.used_share() * 100.0,
                usage.available,
                if block { "setting" } else { "releasing" },
                meta.name
            );
            if let Err(e) = index.update_settings(&update) {
                eprintln!("could not update the block of [{}]: {e}", meta.name);
            }
        }
    }

    /// Runs one round of background work (refreshes, syncs, flushes); called by the scheduler.
    pub fn background_round(&self, last_sync: &mut HashMap<String, Instant>) {
        self.shard_services.contexts.reap_expired();
        let now = tessera_common::time::now_millis() as u64;
        let indices: Vec<Arc<IndexService>> =
            self.indices.read().unwrap().values().cloned().collect();
        for index in indices {
            let meta = index.metadata();
            let interval = meta.refresh_interval_millis();
            let explicit = meta.settings.contains("index.refresh_interval");
            let flush_threshold = tessera_common::settings::parse_byte_size(
                meta.setting("index.translog.flush_threshold_size"),
                "index.translog.flush_threshold_size",
            )
            .unwrap_or(512 << 20);
            for shard in index.shards() {
                if let Some(interval) = interval {
                    let due = now.saturating_sub(shard.last_refresh_millis()) >= interval;
                    let searched_recently =
                        now.saturating_sub(shard.last_search_millis()) < SEARCH_IDLE_AFTER_MILLIS;
                    if due && shard.has_pending_refresh() && (explicit || searched_recently) {
                        let _ = shard.refresh();
                    }
                }
                if shard.translog_size() > flush_threshold {
                    let _ = shard.flush();
                }
            }
            if meta.durability() == tessera_index::shard::Durability::Async {
                let interval = tessera_common::time::parse_time_value(
                    meta.setting("index.translog.sync_interval"),
                    "sync_interval",
                )
                .ok()
                .flatten()
                .unwrap_or(5000);
                let last = last_sync
                    .entry(meta.uuid.clone())
                    .or_insert_with(Instant::now);
                if last.elapsed() >= Duration::from_millis(interval) {
                    for shard in index.shards() {
                        let _ = shard.sync_translog();
                    }
                    *last = Instant::now();
                }
            }
        }
    }
}

/// Where a write addressed to something other than an index goes (see
/// [`Node::write_target`]).
#[derive(Clone, Debug)]
pub enum Redirect {
    /// Through an alias, with its definition on the write index.
    Alias(AliasMetadata),
    /// To a data stream's write index.
    DataStream,
}

/// Makes the index's mapping and settings updates go through the cluster state's store.
fn write_metadata_through(index: &IndexService, cluster: &Arc<ClusterService>) {
    let cluster = cluster.clone();
    index.set_metadata_sink(Arc::new(move |_, next| {
        cluster.metadata_changed(next).map(|()| None)
    }));
}

/// The indices of the node, or `None` once it is gone or shutting down.
fn live_indices(node: &std::sync::Weak<Node>) -> Option<Vec<Arc<IndexService>>> {
    let node = node.upgrade()?;
    if node.is_shutting_down() {
        return None;
    }
    let indices = node.indices.read().unwrap().values().cloned().collect();
    Some(indices)
}

/// Opens the shards of the indices found at start, after the node is up: each replays its
/// translog, which for a large one takes a while, and the node answers meanwhile (those
/// shards are initializing: health red, their requests 503, as in OpenSearch).
fn open_shards(node: std::sync::Weak<Node>) {
    let Some(indices) = live_indices(&node) else {
        return;
    };
    for index in indices {
        index.start_shards(|| node.upgrade().is_none_or(|node| node.is_shutting_down()));
        if let Some(node) = node.upgrade() {
            node.sync_routing(&index);
        }
    }
}

/// Reopens failed shards (`IndexService::recover_failed_shards`) until the node stops: on a
/// thread of its own, since opening a shard (checksums, translog replay) can take seconds that
/// the scheduler's refreshes and syncs must not wait for.
fn recover_shards(node: std::sync::Weak<Node>) {
    loop {
        thread::sleep(Duration::from_millis(200));
        let Some(indices) = live_indices(&node) else {
            return;
        };
        for index in indices {
            index.recover_failed_shards();
            // a shard that failed or recovered since the last round changes the routing
            if let Some(node) = node.upgrade() {
                node.sync_routing(&index);
            }
        }
    }
}

fn run_scheduler(node: std::sync::Weak<Node>) {
    let mut last_sync = HashMap::new();
    let mut last_disk_check = Instant::now() - DISK_CHECK_INTERVAL;
    loop {
        thread::sleep(Duration::from_millis(100));
        let Some(node) = node.upgrade() else { return };
        if node.is_shutting_down() {
            return;
        }
        if let ClusterMode::Single(cluster) = &node.cluster {
            if let Err(e) = cluster.keep_alive() {
                eprintln!("could not renew the node's lease: {e}");
            }
        }
        if last_disk_check.elapsed() >= DISK_CHECK_INTERVAL {
            node.check_disk();
            last_disk_check = Instant::now();
        }
        node.background_round(&mut last_sync);
    }
}

/// How often the disk watermarks are checked (OpenSearch: `cluster.info.update.interval`, 30 s;
/// a bulk load fills a small disk faster than that).
const DISK_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// A node on `dir` with small resources, its shards open (for unit tests).
#[cfg(test)]
pub(crate) fn test_node(dir: &Path) -> Arc<Node> {
    let node = Node::start(NodeConfig {
        data_path: dir.to_path_buf(),
        resources: NodeResources {
            indexing_threads: 1,
            indexing_buffer_bytes: 32 << 20,
            merge_threads: 1,
            scripts: Default::default(),
        },
        cluster_setting_defaults: crate::disk::one_free_byte(),
        ..NodeConfig::default()
    })
    .unwrap();
    node.wait_for_shards();
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(dir: &Path) -> Arc<Node> {
        test_node(dir)
    }

    #[test]
    fn indices_are_created_listed_reopened_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let node_id;
        {
            let node = start(dir.path());
            node_id = node.node_id.clone();
            node.create_index("logs-1", Settings::new(), Mapping::default())
                .unwrap();
            node.create_index(
                "logs-2",
                Settings::from_json(&json!({"index.number_of_replicas": 0})).unwrap(),
                Mapping::default(),
            )
            .unwrap();
            assert_eq!(
                node.create_index("logs-1", Settings::new(), Mapping::default())
                    .err()
                    .map(|e| e.status()),
                Some(400)
            );
            assert!(node
                .create_index("Bad", Settings::new(), Mapping::default())
                .is_err());
            assert_eq!(node.health(None).status, Status::Yellow);
            node.shutdown();
        }
        let node = start(dir.path());
        assert_eq!(
            node.node_id, node_id,
            "the node id is stable across restarts"
        );
        assert_eq!(node.index_names(), ["logs-1", "logs-2"]);
        assert_eq!(
            node.shard_groups(
                &node
                    .resolve_search("logs-*", &ResolveOptions::default(), None)
                    .unwrap(),
                &Preference::none(),
            )
            .len(),
            2
        );
        node.delete_indices("logs-1", &ResolveOptions::default())
            .unwrap();
        assert_eq!(node.index_names(), ["logs-2"]);
        assert_eq!(node.health(None).status, Status::Green);
        assert!(node
            .delete_indices("logs-1", &ResolveOptions::default())
            .is_err());
        let auto = node.index_or_create("auto").unwrap();
        assert_eq!(auto.metadata().number_of_shards, 1);
    }
}
