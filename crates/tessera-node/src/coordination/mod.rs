//! The node as a member of a cluster coordinated through a shared `MetaStore` (etcd, with
//! `--etcd`): what a single node does by itself (`crate::cluster_state`), a cluster decides
//! through its elected cluster manager and applies on every node.
//!
//! - [`membership`]: the node's key under its lease, and its candidacy for cluster manager;
//! - [`applier`]: the state followed from the store, applied to the node's indices and shards;
//! - [`manager`]: the elected manager's decisions (index creation and deletion, metadata
//!   updates, allocation), written fenced by its election;
//! - [`actions`]: the node-to-node calls over the transport, and their handlers.
//!
//! Any node accepts any request: what needs a decision goes to the manager (directly when this
//! node leads), and the node answers once its own state shows the decision.

pub mod actions;
pub mod applier;
pub mod manager;
pub mod membership;
pub mod recovery_state;
pub mod replication;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tessera_cluster::allocation::primary_belongs_to;
use tessera_cluster::transport::TransportClient;
use tessera_cluster::{
    ClusterState, ClusterStateHolder, DiscoveryNode, MetaStore, Revision, ShardState,
};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::{aliases_json, Aliases};
use tessera_index::index_service::ShardSlot;
use tessera_index::{IndexMetadata, IndexService};
use tessera_mapping::Mapping;

use crate::node::Node;
use manager::{CreateIndex, Manager, MetadataChange, MetadataDecided, MetadataUpdate, ShardReport};
use membership::Membership;

/// How long a request that needs the manager waits for one to be elected (or to answer).
const MANAGER_WAIT: Duration = Duration::from_secs(30);
/// How long a node waits for its state to show a decision the manager made.
const APPLY_WAIT: Duration = Duration::from_secs(30);

/// Shard copies a node holds, as `(index name, shard)`.
type Copies = Vec<(String, u32)>;
/// The answer of one node to a fanned-out call.
type Answer<T> = std::pin::Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// See the module documentation.
pub struct Coordination {
    pub cluster_name: String,
    pub store: Arc<dyn MetaStore>,
    pub holder: Arc<ClusterStateHolder>,
    pub membership: Arc<Membership>,
    pub manager: Manager,
    pub transport: TransportClient,
    /// The transport's runtime: its server, its connections, and the calls of threads that
    /// are not on a runtime. Always `Some` until dropped (see `Drop`).
    runtime: Option<tokio::runtime::Runtime>,
    /// The node's transport server (dropping it stops the server).
    _server: tessera_cluster::transport::ServerHandle,
    /// Bumped with every state applied; the coordination thread waits on it.
    changes: (Mutex<u64>, Condvar),
    /// Shard reports on their way to the manager, by (index uuid, shard).
    reporting: Mutex<HashSet<(String, u32)>>,
    /// Segment copies between this node's shards and their other copies.
    pub(crate) replication: replication::Replication,
}

impl Coordination {
    /// Joins the cluster: registers the node under a lease with `ttl`.
    pub fn join(
        cluster_name: &str,
        store: Arc<dyn MetaStore>,
        local: DiscoveryNode,
        ttl: Duration,
        runtime: tokio::runtime::Runtime,
        server: tessera_cluster::transport::ServerHandle,
    ) -> Result<Coordination> {
        let state = ClusterState::empty(cluster_name, "");
        let holder = Arc::new(ClusterStateHolder::new(state));
        let membership = Arc::new(Membership::join(store.clone(), local, ttl)?);
        let manager = Manager::new(store.clone(), holder.clone(), membership.clone());
        let transport = {
            // its channels live on the transport's runtime
            let _runtime = runtime.enter();
            TransportClient::new(membership.local().id.clone())
        };
        Ok(Coordination {
            cluster_name: cluster_name.to_string(),
            store,
            holder,
            membership,
            manager,
            transport,
            runtime: Some(runtime),
            _server: server,
            changes: (Mutex::new(0), Condvar::new()),
            reporting: Mutex::new(HashSet::new()),
            replication: replication::Replication::default(),
        })
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime
            .as_ref()
            .expect("the transport runtime lives as long as the coordination")
    }

    pub fn local(&self) -> &DiscoveryNode {
        self.membership.local()
    }

    /// Called by the applier after each state it applies.
    fn state_changed(&self) {
        let (count, changed) = &self.changes;
        *count.lock().unwrap() += 1;
        changed.notify_all();
    }

    /// Starts the node's coordination threads: the applier; the one that renews the lease (on
    /// its own, so that nothing slow delays it); and the one that stands for election and,
    /// while this node leads, reroutes after every change.
    pub(crate) fn start_threads(self: &Arc<Self>, node: Weak<Node>) -> Result<()> {
        let applier = (node.clone(), self.clone());
        thread::Builder::new()
            .name("cluster_applier".into())
            .spawn(move || applier::run(applier.0, applier.1))
            .map_err(|e| Error::internal("start the cluster state applier", e))?;
        let (lease_node, membership) = (node.clone(), self.membership.clone());
        thread::Builder::new()
            .name("cluster_lease".into())
            .spawn(move || renew_lease(lease_node, membership))
            .map_err(|e| Error::internal("start the lease renewal", e))?;
        let this = self.clone();
        thread::Builder::new()
            .name("cluster_coordination".into())
            .spawn(move || this.coordinate(node))
            .map_err(|e| Error::internal("start the cluster coordination", e))?;
        Ok(())
    }

    fn coordinate(&self, node: Weak<Node>) {
        let mut rerouted_at = None;
        let mut seen = 0;
        loop {
            let Some(eligible) = node
                .upgrade()
                .filter(|node| !node.is_shutting_down())
                .map(|node| node.config.roles.iter().any(|r| r == "cluster_manager"))
            else {
                return;
            };
            if !eligible {
                // a node without the cluster_manager role never stands for manager
                thread::sleep(Duration::from_millis(300));
                continue;
            }
            let leads = match self.membership.campaign(Duration::from_millis(300)) {
                Ok(leads) => leads,
                Err(e) => {
                    eprintln!("cannot stand for cluster manager: {e}");
                    thread::sleep(Duration::from_millis(300));
                    false
                }
            };
            if !leads {
                rerouted_at = None;
                continue;
            }
            if rerouted_at.is_none() {
                self.choose_cluster_uuid();
            }
            let version = self.holder.current().version;
            if rerouted_at != Some(version) {
                match self.manager.reroute() {
                    Ok(_) => rerouted_at = Some(self.holder.current().version),
                    Err(e) => eprintln!("cannot reroute: {e}"),
                }
            }
            // wait for the next change (or look again in a while)
            let (count, changed) = &self.changes;
            let guard = count.lock().unwrap();
            if *guard == seen {
                let (guard, _) = changed
                    .wait_timeout(guard, Duration::from_millis(500))
                    .unwrap();
                seen = *guard;
            } else {
                seen = *guard;
            }
        }
    }

    /// Chooses the cluster's uuid once, when the first manager is elected.
    fn choose_cluster_uuid(&self) {
        let value = serde_json::json!({ "cluster_uuid": tessera_common::ids::random_uuid() });
        let chosen = self.store.compare_and_set(
            tessera_cluster::layout::CLUSTER_KEY,
            tessera_cluster::Expect::Absent,
            value.to_string().as_bytes(),
            0,
        );
        match chosen {
            Ok(_) | Err(tessera_cluster::MetaError::Conflict { .. }) => {}
            Err(e) => eprintln!("cannot record the cluster uuid: {e}"),
        }
    }

    /// Waits until the node's state has caught up with the store's revision now.
    pub fn catch_up(&self) -> Result<Arc<ClusterState>> {
        let head = self
            .store
            .list(tessera_cluster::layout::CLUSTER_KEY)?
            .revision;
        self.wait_for_revision(head)
    }

    /// Waits until this node and every other node of the cluster applied `revision` (what
    /// OpenSearch's `acknowledged` means for a cluster state change): returns whether all did
    /// within [`APPLY_WAIT`]. A node that does not answer is not waited for again.
    pub fn wait_acknowledged(&self, revision: Revision) -> bool {
        let here = self.wait_for_revision(revision).is_ok();
        let state = self.holder.current();
        let me = self.local().id.clone();
        // a node applies within APPLY_WAIT or says it could not; one that hangs is given up on
        let deadline = Some(Instant::now() + APPLY_WAIT + Duration::from_secs(1));
        let calls: Vec<_> = state
            .nodes
            .values()
            .filter(|other| other.id != me)
            .map(|other| {
                self.send_until::<_, ()>(other, actions::STATE_APPLIED, &revision, deadline)
            })
            .collect();
        let everywhere = self.block_on(async move {
            let mut all = true;
            for call in calls {
                all &= call.await.is_ok();
            }
            all
        });
        here && everywhere.unwrap_or(false)
    }

    /// Waits (asynchronously) until this node applied `revision`, up to [`APPLY_WAIT`].
    pub async fn applied(&self, revision: Revision) -> Result<()> {
        let mut states = self.holder.subscribe();
        let deadline = tokio::time::Instant::now() + APPLY_WAIT;
        while states.borrow_and_update().version < revision {
            match tokio::time::timeout_at(deadline, states.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err(Error::new(
                        "process_cluster_event_timeout_exception",
                        503,
                        format!("this node did not apply cluster state [{revision}] in time"),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Waits until the node's state is at least `revision`.
    pub fn wait_for_revision(&self, revision: Revision) -> Result<Arc<ClusterState>> {
        self.holder
            .wait_for_version(revision, APPLY_WAIT)
            .ok_or_else(|| {
                Error::new(
                    "process_cluster_event_timeout_exception",
                    503,
                    format!("this node did not apply cluster state [{revision}] in time"),
                )
            })
    }

    /// Runs `future` on the transport's runtime and waits for it, from any thread (a thread
    /// of another runtime blocks while it waits, as a pool thread does).
    pub fn block_on<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        let (sender, receiver) = std::sync::mpsc::channel();
        self.runtime().spawn(async move {
            let _ = sender.send(future.await);
        });
        receiver
            .recv()
            .map_err(|_| Error::illegal_state("the transport runtime stopped"))
    }

    /// Calls `action` on `node` and waits for the answer.
    pub fn call_blocking<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        node: &DiscoveryNode,
        action: &str,
        request: &Req,
        timeout: Duration,
    ) -> Result<Resp> {
        let body = tessera_search::messages::encode(request)?;
        let call = self.transport.call(
            &node.transport_address,
            action,
            body,
            Some(Instant::now() + timeout),
        );
        let bytes = self.block_on(call)??;
        tessera_search::messages::decode(&bytes)
    }

    /// [`Coordination::send`], given up once `node` leaves the cluster state: a frozen or cut
    /// off node never answers, and its lease lapsing (the state drops it) comes long before the
    /// connection's keepalive gives up; what waits for it (a write) fails then, unacknowledged.
    pub fn send_while_member<Req, Resp>(
        &self,
        node: &DiscoveryNode,
        action: &str,
        request: &Req,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Resp>> + Send + 'static
    where
        Req: Serialize,
        Resp: DeserializeOwned + Send + 'static,
    {
        let call = self.send_until(node, action, request, deadline);
        let (holder, id, name) = (self.holder.clone(), node.id.clone(), node.name.clone());
        async move {
            let left = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if !holder.current().nodes.contains_key(&id) {
                        return;
                    }
                }
            };
            tokio::select! {
                answer = call => answer,
                () = left => Err(Error::new(
                    "node_not_connected_exception",
                    503,
                    format!("[{name}] left the cluster before it answered"),
                )),
            }
        }
    }

    /// Calls `action` on `node`: the call starts now, on the transport's runtime, and the
    /// future answers it.
    pub fn send<Req, Resp>(
        &self,
        node: &DiscoveryNode,
        action: &str,
        request: &Req,
    ) -> impl Future<Output = Result<Resp>> + Send + 'static
    where
        Req: Serialize,
        Resp: DeserializeOwned + Send + 'static,
    {
        self.send_until(node, action, request, None)
    }

    /// [`Coordination::send`], failing once `deadline` passes without an answer.
    pub fn send_until<Req, Resp>(
        &self,
        node: &DiscoveryNode,
        action: &str,
        request: &Req,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Resp>> + Send + 'static
    where
        Req: Serialize,
        Resp: DeserializeOwned + Send + 'static,
    {
        let call = tessera_search::messages::encode(request).map(|body| {
            self.runtime().spawn(self.transport.call(
                &node.transport_address,
                action,
                body,
                deadline,
            ))
        });
        async move {
            let bytes = call?
                .await
                .map_err(|e| Error::internal("run a transport call", e))??;
            tessera_search::messages::decode(&bytes)
        }
    }

    /// Runs `here` on this node (on the `management` pool) and `action` on every other node
    /// holding active copies of the indices with these uuids, all at once. Each answer comes
    /// with the node's id and the copies it holds, as `(index name, shard)`.
    async fn on_holders<Req, Resp>(
        &self,
        node: &Arc<Node>,
        uuids: &[String],
        action: &str,
        request: Req,
        here: fn(&Node, &Req) -> Result<Resp>,
    ) -> Vec<(String, Copies, Result<Resp>)>
    where
        Req: Serialize + Clone + Send + 'static,
        Resp: DeserializeOwned + Send + 'static,
    {
        let state = self.holder.current();
        let mut holders: BTreeMap<String, Copies> = BTreeMap::new();
        for index in state.indices.values() {
            if !uuids.contains(&index.metadata.uuid) {
                continue;
            }
            for table in &index.routing.shards {
                for copy in table.copies.iter().filter(|copy| copy.is_active()) {
                    if let Some(id) = &copy.node_id {
                        holders
                            .entry(id.clone())
                            .or_default()
                            .push((index.metadata.name.clone(), table.shard));
                    }
                }
            }
        }
        let mut calls: Vec<(String, Copies, Answer<Resp>)> = Vec::new();
        for (id, copies) in holders {
            let call: Answer<Resp> = if id == node.node_id {
                let (worker, request) = (node.clone(), request.clone());
                let local = node
                    .pools
                    .management
                    .submit(move || here(&worker, &request));
                Box::pin(async move { local?.await })
            } else {
                match state.nodes.get(&id) {
                    Some(target) => Box::pin(self.send(target, action, &request)),
                    None => {
                        let gone = Error::new(
                            "node_not_connected_exception",
                            500,
                            format!("[{id}] is not in the cluster"),
                        );
                        Box::pin(async move { Err(gone) })
                    }
                }
            };
            calls.push((id, copies, call));
        }
        let mut answers = Vec::with_capacity(calls.len());
        for (id, copies, call) in calls {
            answers.push((id, copies, call.await));
        }
        answers
    }

    /// Runs `op` (refresh, flush) on every copy of `indices` in the cluster: on each node that
    /// holds some, at once. Returns the copies it failed on, `(index, shard, why)`, as
    /// OpenSearch's broadcast actions report shard failures.
    pub async fn broadcast(
        &self,
        node: &Arc<Node>,
        op: actions::BroadcastOp,
        indices: &[Arc<IndexService>],
    ) -> Vec<(String, u32, Error)> {
        let request = actions::Broadcast {
            op,
            index_uuids: indices.iter().map(|i| i.metadata().uuid.clone()).collect(),
        };
        let uuids = request.index_uuids.clone();
        let answers = self
            .on_holders(
                node,
                &uuids,
                actions::BROADCAST,
                request,
                actions::broadcast_here,
            )
            .await;
        let mut failures = Vec::new();
        for (_, copies, answer) in answers {
            if let Err(e) = answer {
                failures.extend(
                    copies
                        .into_iter()
                        .map(|(index, shard)| (index, shard, e.clone())),
                );
            }
        }
        failures
    }

    /// The figures of every started copy of `indices` in the cluster, by (index uuid, shard,
    /// node id), asked of each node that holds some. A node that does not answer leaves its
    /// copies out.
    pub async fn shard_counts(
        &self,
        node: &Arc<Node>,
        indices: &[Arc<IndexService>],
    ) -> HashMap<(String, u32, String), actions::ShardCounts> {
        let uuids: Vec<String> = indices.iter().map(|i| i.metadata().uuid.clone()).collect();
        let answers = self
            .on_holders(
                node,
                &uuids,
                actions::SHARD_STATS,
                uuids.clone(),
                |node, uuids| Ok(actions::shard_counts_here(node, uuids)),
            )
            .await;
        let mut counts = HashMap::new();
        for (id, _, answer) in answers {
            match answer {
                Ok(answer) => {
                    for (uuid, shard, figures) in answer {
                        counts.insert((uuid, shard, id.clone()), figures);
                    }
                }
                Err(e) => eprintln!("[{id}] did not send its shard figures: {e}"),
            }
        }
        counts
    }

    /// Runs a manager request: here when this node leads, else on the elected manager; waits
    /// (up to [`MANAGER_WAIT`]) for a manager to be elected, and tries again when the one
    /// asked no longer leads or cannot be reached.
    pub fn to_manager<Req, Resp>(
        &self,
        action: &str,
        request: &Req,
        here: impl Fn(&Manager, &Req) -> Result<Resp>,
    ) -> Result<Resp>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        let deadline = Instant::now() + MANAGER_WAIT;
        loop {
            let state = self.holder.current();
            let outcome = if self.manager.is_leader() {
                here(&self.manager, request)
            } else {
                match state
                    .cluster_manager
                    .as_ref()
                    .and_then(|id| state.nodes.get(id))
                {
                    Some(manager) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        self.call_blocking(manager, action, request, left)
                    }
                    None => Err(manager_not_discovered()),
                }
            };
            match outcome {
                Err(e) if retry_on_manager(&e) && Instant::now() < deadline => {
                    // a new manager, or the same one again, shows in the next state
                    self.holder
                        .wait_for_version(state.version + 1, Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// Opens this node's copy of `shard` (allocated by the routing) on the management pool,
    /// and tells the manager how that went.
    fn open_shard(self: &Arc<Self>, node: &Arc<Node>, index: Arc<IndexService>, shard: u32) {
        let this = self.clone();
        let here = node.clone();
        let opened = node.pools.management.execute(move || {
            let opening = this.replication.recoveries.opening_primary(&index, shard);
            let meta = index.metadata();
            // a resized index's primary is built from the source's primaries held here
            let slot = match crate::resize::resize_source(&meta) {
                Some(_) => index.allocate_prepared_shard(shard, |path| {
                    crate::resize::build_allocated_shard(&here, &meta, shard, path)
                }),
                None => index.allocate_shard(shard),
            };
            this.replication
                .recoveries
                .opened(opening, this.local(), &slot);
            let state = this.holder.current();
            // under the shard's term before it takes writes (the routing starts it after this)
            if let (ShardSlot::Started(copy), Some(table)) = (
                &slot,
                state
                    .index(&index.name())
                    .and_then(|i| i.routing.shards.get(shard as usize)),
            ) {
                copy.set_primary_term(table.primary_term.max(copy.primary_term()));
            }
            this.report_if_changed(&state, &index, shard, &slot);
        });
        if let Err(e) = opened {
            eprintln!("cannot open shard [{shard}]: {e}");
        }
    }

    /// Tells the manager about this node's copy of `shard` when the routing does not say it
    /// yet (started, or failed); one report per shard at a time, sent from the management pool.
    fn report_if_changed(
        self: &Arc<Self>,
        state: &ClusterState,
        index: &Arc<IndexService>,
        shard: u32,
        slot: &ShardSlot,
    ) {
        let meta = index.metadata();
        let Some(routing) = state
            .index(&meta.name)
            .filter(|i| i.metadata.uuid == meta.uuid)
        else {
            return;
        };
        let me = &self.local().id;
        if !primary_belongs_to(&routing.routing, shard, me) {
            return;
        }
        let primary = routing.routing.shards[shard as usize].primary();
        let routed = primary.map(|p| p.state);
        let failure = match slot {
            ShardSlot::Started(_) if routed != Some(ShardState::Started) => None,
            ShardSlot::Failed(failure) if routed != Some(ShardState::Unassigned) => Some(format!(
                "failed shard on node [{me}]: {}[{}]",
                failure.error.kind(),
                failure.error.reason()
            )),
            _ => return,
        };
        let key = (meta.uuid.clone(), shard);
        if !self.reporting.lock().unwrap().insert(key.clone()) {
            return;
        }
        let report = ShardReport {
            index: meta.name.clone(),
            index_uuid: meta.uuid.clone(),
            shard,
            node_id: me.clone(),
            replica: None,
            primary_term: None,
            failure,
        };
        let this = self.clone();
        thread::spawn(move || {
            if let Err(e) = this.to_manager(actions::SHARD_REPORT, &report, |manager, report| {
                manager.shard_report(report)
            }) {
                eprintln!(
                    "[{}][{}] cannot report the shard to the cluster manager: {e}",
                    report.index, report.shard
                );
            }
            this.reporting.lock().unwrap().remove(&key);
        });
    }

    /// `PUT /{index}`: the manager creates it; returns once this node has it open, and whether
    /// its primaries started in time (`shards_acknowledged`).
    pub fn create_index(
        &self,
        node: &Node,
        name: &str,
        settings: Settings,
        mapping: Mapping,
        aliases: &Aliases,
        restore: Option<tessera_index::snapshot_files::RestoreSource>,
    ) -> Result<(Arc<IndexService>, bool)> {
        let request = CreateIndex {
            name: name.to_string(),
            settings: settings.to_flat_json().to_string(),
            mapping: mapping.to_json().to_string(),
            aliases: aliases_json(aliases).to_string(),
            restore,
        };
        let revision: Revision =
            match self.to_manager(actions::CREATE_INDEX, &request, Manager::create_index) {
                Ok(revision) => revision,
                Err(e) if e.kind() == "resource_already_exists_exception" => {
                    // created by someone else: this node must see it too (auto-create races)
                    self.catch_up()?;
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
        self.wait_acknowledged(revision);
        let index = node
            .index(name)
            .ok_or_else(|| Error::index_not_found(name))?;
        let uuid = index.metadata().uuid.clone();
        let started = self.wait_for_primaries(name, &uuid, Duration::from_secs(30));
        Ok((index, started))
    }

    /// `_shrink`, `_split`, `_clone`: the manager decides the target; returns once this node
    /// has it open (its primaries started, or 30 s passed: the REST layer waits for the copies
    /// `wait_for_active_shards` asks for).
    pub fn resize_index(
        &self,
        node: &Node,
        request: &crate::resize::ResizeRequest,
        source_uuid: &str,
    ) -> Result<Arc<IndexService>> {
        let decide = manager::ResizeIndex {
            kind: request.kind,
            source: request.source.clone(),
            source_uuid: source_uuid.to_string(),
            target: request.target.clone(),
            settings: request.settings.to_flat_json().to_string(),
            aliases: aliases_json(&request.aliases).to_string(),
        };
        let revision: Revision =
            self.to_manager(actions::RESIZE_INDEX, &decide, Manager::resize_index)?;
        self.wait_acknowledged(revision);
        let index = node
            .index(&request.target)
            .ok_or_else(|| Error::index_not_found(&request.target))?;
        let uuid = index.metadata().uuid.clone();
        self.wait_for_primaries(&request.target, &uuid, Duration::from_secs(30));
        Ok(index)
    }

    /// Waits until every primary of the index is started; returns whether they did in time.
    pub fn wait_for_primaries(&self, name: &str, uuid: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.holder.current();
            let Some(index) = state.index(name).filter(|i| i.metadata.uuid == uuid) else {
                return false;
            };
            let started = index.routing.shards.iter().all(|table| {
                table
                    .primary()
                    .is_some_and(|p| p.state == ShardState::Started)
            });
            if started {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.holder
                .wait_for_version(state.version + 1, Duration::from_millis(100));
        }
    }

    /// Deletes indices through the manager; returns once this node dropped them.
    pub fn delete_indices(&self, names: &[String]) -> Result<()> {
        let names = names.to_vec();
        let revision: Revision =
            self.to_manager(actions::DELETE_INDICES, &names, |m, n| m.delete_indices(n))?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// A change of custom documents: the manager decides it; returns once this node applied
    /// it.
    pub fn update_custom(&self, change: crate::custom::CustomChange) -> Result<()> {
        let update = manager::CustomUpdate { change };
        let revision: Revision =
            self.to_manager(actions::UPDATE_CUSTOM, &update, Manager::update_custom)?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// `POST /_aliases`: the manager decides the actions; returns once this node applied
    /// them.
    pub fn update_aliases(&self, actions: &serde_json::Value) -> Result<()> {
        let update = manager::AliasesUpdate {
            actions: actions.to_string(),
        };
        let revision: Revision =
            self.to_manager(actions::UPDATE_ALIASES, &update, Manager::update_aliases)?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// `PUT _cluster/settings`: the manager stores the update; returns once this node applied
    /// it.
    pub fn update_cluster_settings(
        &self,
        persistent: &Settings,
        transient: &Settings,
    ) -> Result<()> {
        let update = manager::ClusterSettingsUpdate {
            persistent: persistent.to_flat_json().to_string(),
            transient: transient.to_flat_json().to_string(),
        };
        let revision: Revision = self.to_manager(
            actions::UPDATE_CLUSTER_SETTINGS,
            &update,
            Manager::update_cluster_settings,
        )?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// `PUT _ingest/pipeline/{id}`: the manager stores it; returns once this node applied it
    /// (and every node acknowledged it, or the wait gave up).
    pub fn put_pipeline(&self, id: &str, definition: String) -> Result<()> {
        let request = manager::PutPipeline {
            id: id.to_string(),
            definition,
        };
        let revision: Revision =
            self.to_manager(actions::PUT_PIPELINE, &request, Manager::put_pipeline)?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// `DELETE _ingest/pipeline/{id}`: the manager deletes them; returns once this node
    /// applied it.
    pub fn delete_pipelines(&self, ids: &[String]) -> Result<()> {
        let ids = ids.to_vec();
        let revision: Revision = self.to_manager(actions::DELETE_PIPELINES, &ids, |m, ids| {
            m.delete_pipelines(ids)
        })?;
        self.wait_for_revision(revision)?;
        self.wait_acknowledged(revision);
        Ok(())
    }

    /// The metadata sink of an index in a cluster: the manager decides the update.
    pub fn decide_metadata(
        &self,
        current: &IndexMetadata,
        next: &IndexMetadata,
    ) -> Result<Option<IndexMetadata>> {
        let change = if next.mapping_version != current.mapping_version {
            MetadataChange::Mapping(next.mapping.to_json().to_string())
        } else if next.closed != current.closed {
            MetadataChange::Closed(next.closed)
        } else {
            MetadataChange::Settings(settings_delta(&current.settings, &next.settings))
        };
        let update = MetadataUpdate {
            index: current.name.clone(),
            index_uuid: current.uuid.clone(),
            change,
        };
        let decided: MetadataDecided =
            self.to_manager(actions::UPDATE_METADATA, &update, Manager::update_metadata)?;
        // every node knows the mapping before a write that needed it is acknowledged
        self.wait_acknowledged(decided.revision);
        let metadata = tessera_cluster::state::metadata_from_json(decided.metadata.as_bytes())?;
        Ok(Some(metadata))
    }

    /// Leaves the cluster cleanly.
    pub fn leave(&self) {
        self.membership.leave();
    }
}

impl Drop for Coordination {
    /// The last reference to a node may go on a runtime's thread, where dropping a runtime
    /// (which waits for its tasks) panics: the transport's runtime is let go in the background.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Renews the node's lease every 500 ms until the node stops (a lease lasts seconds: several
/// renewals may fail before it is lost).
fn renew_lease(node: Weak<Node>, membership: Arc<Membership>) {
    let mut failing = false;
    loop {
        thread::sleep(Duration::from_millis(500));
        if node.upgrade().is_none_or(|node| node.is_shutting_down()) {
            return;
        }
        match membership.renew() {
            Ok(()) if failing => {
                eprintln!("the node's lease is renewed again");
                failing = false;
            }
            Ok(()) => {}
            Err(e) if !failing => {
                eprintln!("cannot renew the node's lease: {e}");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

/// The settings update that turns `current` into `next` (flat JSON, `null` removing a key).
fn settings_delta(current: &Settings, next: &Settings) -> String {
    let mut delta = Settings::new();
    for (key, value) in next.iter() {
        if current.get(key) != value {
            delta.set_value(key, value.cloned());
        }
    }
    for key in current.keys() {
        if !next.contains(key) {
            delta.set_value(key, None);
        }
    }
    delta.to_flat_json().to_string()
}

/// OpenSearch's error while no cluster manager is elected.
pub fn manager_not_discovered() -> Error {
    Error::new(
        "cluster_manager_not_discovered_exception",
        503,
        "no cluster manager is elected",
    )
}

/// Whether a manager request may succeed when tried again (another manager, a reconnection).
/// A connection lost mid-call counts too, as in OpenSearch (whose `NodeDisconnectedException`
/// is a `ConnectTransportException`): a killed manager resets the calls in flight to it, and
/// the next manager must get them. A shard report tried twice changes nothing the first did
/// not (a replica marked stale stays stale); a create or delete the dead manager did commit
/// answers as a second create or delete would (already exists, not found), as in OpenSearch.
fn retry_on_manager(e: &Error) -> bool {
    use tessera_cluster::transport::errors::{
        CONNECT_TRANSPORT_EXCEPTION, NODE_DISCONNECTED_EXCEPTION,
    };
    matches!(
        e.kind(),
        "not_cluster_manager_exception"
            | "cluster_manager_not_discovered_exception"
            | "node_not_connected_exception"
    ) || e.kind() == CONNECT_TRANSPORT_EXCEPTION
        || e.kind() == NODE_DISCONNECTED_EXCEPTION
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeConfig, ResolveOptions};
    use serde_json::json;
    use tessera_cluster::FileMetaStore;
    use tessera_index::NodeResources;

    /// A member of a cluster held in one process: its own data directory and transport (a free
    /// port), the cluster's store shared with the other members.
    fn member(dir: &std::path::Path, name: &str, store: &Arc<dyn MetaStore>) -> Arc<Node> {
        Node::start_member(
            NodeConfig {
                name: name.to_string(),
                data_path: dir.join(name),
                transport_port: 0,
                lease_ttl: Duration::from_secs(2),
                resources: NodeResources {
                    indexing_threads: 1,
                    indexing_buffer_bytes: 32 << 20,
                    merge_threads: 1,
                    scripts: Default::default(),
                },
                cluster_setting_defaults: crate::disk::one_free_byte(),
                ..NodeConfig::default()
            },
            store.clone(),
        )
        .unwrap()
    }

    fn wait_until(what: &str, check: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn members_sharing_a_store_spread_an_index_and_agree_on_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn MetaStore> =
            Arc::new(FileMetaStore::open(&dir.path().join("store")).unwrap());
        let a = member(dir.path(), "a", &store);
        let b = member(dir.path(), "b", &store);
        wait_until("two members and a manager", || {
            let state = b.cluster_state();
            state.nodes.len() == 2 && state.cluster_manager.is_some()
        });
        let manager = a.cluster_state().cluster_manager.clone().unwrap();
        let other = if manager == a.node_id { &b } else { &a };

        // created on the member that does not lead: one primary on each node, started
        let settings = Settings::from_json(
            &json!({"index.number_of_shards": 2, "index.number_of_replicas": 0}),
        )
        .unwrap();
        let index = other
            .create_index("logs", settings, Mapping::default())
            .unwrap();
        let uuid = index.metadata().uuid.clone();
        let coordination = other.coordination().unwrap();
        assert!(coordination.wait_for_primaries("logs", &uuid, Duration::from_secs(20)));
        let state = other.cluster_state();
        let holders: HashSet<String> = state
            .index("logs")
            .unwrap()
            .routing
            .shards
            .iter()
            .map(|t| t.primary().unwrap().node_id.clone().unwrap())
            .collect();
        assert_eq!(holders.len(), 2, "{holders:?}");
        // each node holds exactly the copy the routing gives it
        for node in [&a, &b] {
            let slots = node.index("logs").unwrap().shard_slots();
            let open: Vec<bool> = slots
                .iter()
                .map(|s| matches!(s, ShardSlot::Started(_)))
                .collect();
            assert_eq!(
                open.iter().filter(|o| **o).count(),
                1,
                "{}",
                node.config.name
            );
        }

        // a mapping update on one member goes through the manager and reaches the other
        index
            .put_mapping(&json!({"properties": {"level": {"type": "keyword"}}}))
            .unwrap();
        let version = index.metadata().mapping_version;
        let seen = if std::ptr::eq(other, &a) { &b } else { &a };
        wait_until("the mapping on the other member", || {
            seen.index("logs")
                .is_some_and(|i| i.metadata().mapping_version == version)
        });
        assert!(seen
            .index("logs")
            .unwrap()
            .metadata()
            .mapping
            .to_json()
            .to_string()
            .contains("level"));

        // deleted from the manager's side: gone from both, directories included
        let deleting = if std::ptr::eq(other, &a) { &b } else { &a };
        deleting
            .delete_indices("logs", &ResolveOptions::default())
            .unwrap();
        wait_until("the index gone everywhere", || {
            a.index("logs").is_none() && b.index("logs").is_none()
        });
        for node in [&a, &b] {
            assert!(!node.config.data_path.join("indices").join(&uuid).exists());
        }
        a.shutdown();
        b.shutdown();
    }

    #[test]
    fn a_settings_delta_sets_changes_and_resets_removals() {
        let current = Settings::from_json(&serde_json::json!({"a": "1", "b": "2"})).unwrap();
        let next = Settings::from_json(&serde_json::json!({"a": "1", "c": "3"})).unwrap();
        let delta: serde_json::Value =
            serde_json::from_str(&settings_delta(&current, &next)).unwrap();
        assert_eq!(delta, serde_json::json!({"b": null, "c": "3"}));
        let mut applied = current.clone();
        applied.merge(&Settings::from_json(&delta).unwrap());
        assert_eq!(applied, next);
    }
}
