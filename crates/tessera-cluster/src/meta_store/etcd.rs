//! `EtcdMetaStore`: the cluster's [`MetaStore`] over etcd's v3 API, so that every node reads
//! and writes one cluster state that survives any of them.
//!
//! - **Namespace.** Every key lives under the store's namespace (`/tessera/<cluster>/`) and
//!   is handed back without it (listings, watch events, leader keys), so several clusters
//!   share one etcd and the rest of the code sees the same keys as with the file store.
//! - **Sync over async.** The trait is synchronous and is called from plain threads, some of
//!   them inside another tokio runtime's context (a `spawn_blocking` thread), where
//!   `block_on` panics. So the store owns a small runtime of its own (threads `etcd-client`):
//!   each call is spawned onto it and the caller waits on a std channel. Every call has the
//!   store's timeout; a call that times out or cannot reach etcd is `Unavailable`. The
//!   client's channel reconnects by itself, so calls work again once etcd is back.
//! - **Writes** are etcd transactions: the expectation is a `Compare` (`mod_revision`, or
//!   `create_revision == 0` for absent), the else branch reads the key so a `Conflict` says
//!   what the key is now; `commit` puts every compare (and the fence: the leader key's
//!   `create_revision`) in one transaction.
//! - **Watches** are etcd watches with a `start_revision`, forwarded in order into the std
//!   channel of [`Watch`] by a task on the store's runtime. When etcd cancels the watch
//!   (compaction) or the stream breaks, the channel closes and the consumer re-lists; a
//!   dropped receiver ends the etcd watch at the next event (a std channel tells its sender
//!   only then). A start revision already compacted is `Compacted` from `watch` itself.
//! - **Election** is etcd's `v3election` service: candidate keys `<name>/<lease in hex>`,
//!   the lowest `create_revision` leads, as the file store's.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType, GetOptions, PutOptions,
    ResignOptions, Txn, TxnOpResponse, TxnResponse, WatchOptions,
};

use super::{
    check_commit, election_prefix, Expect, KeyValue, LeaderKey, LeaseId, Listing, MetaError,
    MetaResult, MetaStore, Revision, TxnOp, Watch, WatchEvent,
};

/// Worker threads of the store's runtime: the calls only wait on the network.
const WORKERS: usize = 2;
/// HTTP/2 pings on idle connections find a dead etcd under a watch (etcd refuses pings more
/// often than every 5 s).
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// The etcd-backed [`MetaStore`]; see the module documentation.
pub struct EtcdMetaStore {
    client: Client,
    namespace: String,
    timeout: Duration,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
}

fn unavailable(e: impl std::fmt::Display) -> MetaError {
    MetaError::Unavailable(format!("etcd: {e}"))
}

/// The gRPC message of an etcd error (etcd's own error text), if it is one.
fn status_message(e: &etcd_client::Error) -> Option<&str> {
    match e {
        etcd_client::Error::GRpcStatus(status) => Some(status.message()),
        _ => None,
    }
}

fn is_lease_not_found(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::LeaseKeepAliveError(why) => why.contains("lease not found"),
        _ => status_message(e).is_some_and(|m| m.contains("lease not found")),
    }
}

fn is_compacted(e: &etcd_client::Error) -> bool {
    status_message(e).is_some_and(|m| m.contains("required revision has been compacted"))
}

/// An etcd error as the trait's: a missing lease is `LeaseNotFound(lease)`, anything else
/// (no connection, no raft leader, a refused request) `Unavailable`.
fn meta_error(e: etcd_client::Error, lease: LeaseId) -> MetaError {
    if is_lease_not_found(&e) {
        MetaError::LeaseNotFound(lease)
    } else {
        unavailable(e)
    }
}

fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> MetaResult<Revision> {
    header
        .map(|h| h.revision().max(0) as Revision)
        .ok_or_else(|| unavailable("a response without a header"))
}

impl EtcdMetaStore {
    /// Connects to etcd at `endpoints` (`http://host:port`), keeping every key under
    /// `namespace`; every call waits at most `timeout`. Fails with `Unavailable` unless etcd
    /// answers a read within the timeout.
    pub fn connect(
        endpoints: &[String],
        namespace: &str,
        timeout: Duration,
    ) -> MetaResult<EtcdMetaStore> {
        if endpoints.is_empty() {
            return Err(unavailable("no endpoints"));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("etcd-client")
            .enable_all()
            .build()
            .map_err(|e| unavailable(format!("start the client's runtime: {e}")))?;
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_keep_alive(KEEP_ALIVE_INTERVAL, timeout)
            .with_keep_alive_while_idle(true)
            // a member cut off from its cluster refuses calls (and ends watches) rather than
            // serve what may be stale
            .with_require_leader(true);
        let endpoints = endpoints.to_vec();
        let connected = run_on(runtime.handle(), timeout, async move {
            Client::connect(endpoints, Some(options))
                .await
                .map_err(unavailable)
        });
        let client = match connected {
            Ok(client) => client,
            Err(e) => {
                // not a plain drop, which panics inside another runtime's context
                runtime.shutdown_background();
                return Err(match e {
                    MetaError::Timeout => unavailable(format!("no connection within {timeout:?}")),
                    e => e,
                });
            }
        };
        let store = EtcdMetaStore {
            client,
            namespace: namespace.to_string(),
            timeout,
            runtime: Some(runtime),
        };
        // the client connects lazily: make sure etcd is there
        store.ping()?;
        Ok(store)
    }

    /// One read (a count of the namespace's keys): `Unavailable` unless etcd answers within
    /// the timeout.
    fn ping(&self) -> MetaResult<()> {
        let mut kv = self.client.kv_client();
        let key = self.namespace.clone();
        self.run(async move {
            kv.get(key, Some(GetOptions::new().with_prefix().with_count_only()))
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }

    /// The namespace every key is stored under.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.namespace)
    }

    /// Runs `future` on the store's runtime, waiting at most the store's timeout: etcd that
    /// does not answer in time is `Unavailable`.
    fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = MetaResult<T>> + Send + 'static,
    ) -> MetaResult<T> {
        let timeout = self.timeout;
        self.run_for(timeout, future).map_err(|e| match e {
            MetaError::Timeout => {
                MetaError::Unavailable(format!("etcd did not answer within {timeout:?}"))
            }
            e => e,
        })
    }

    fn run_for<T: Send + 'static>(
        &self,
        limit: Duration,
        future: impl Future<Output = MetaResult<T>> + Send + 'static,
    ) -> MetaResult<T> {
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the store");
        run_on(runtime.handle(), limit, future)
    }
}

/// Spawns `future` on `handle` and waits for it on a std channel (not `block_on`, which
/// panics on a thread inside another runtime); past `limit` it is `Timeout` (the future is
/// dropped, which cancels its request).
fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    limit: Duration,
    future: impl Future<Output = MetaResult<T>> + Send + 'static,
) -> MetaResult<T> {
    let (sender, receiver) = mpsc::sync_channel(1);
    handle.spawn(async move {
        let result = match tokio::time::timeout(limit, future).await {
            Ok(result) => result,
            Err(_) => Err(MetaError::Timeout),
        };
        let _ = sender.send(result);
    });
    receiver
        .recv()
        .unwrap_or_else(|_| Err(unavailable("the client's runtime stopped")))
}

impl Drop for EtcdMetaStore {
    fn drop(&mut self) {
        // ends the watch tasks (closing their channels); never blocks, so a store may be
        // dropped anywhere, an async context included
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Converts an etcd key-value, taking the namespace off its key.
fn key_value(namespace: &str, kv: &etcd_client::KeyValue) -> KeyValue {
    let key = String::from_utf8_lossy(kv.key());
    KeyValue {
        key: key.strip_prefix(namespace).unwrap_or(&*key).to_string(),
        value: kv.value().to_vec(),
        create_revision: kv.create_revision().max(0) as Revision,
        mod_revision: kv.mod_revision().max(0) as Revision,
        version: kv.version().max(0) as u64,
        lease: kv.lease() as LeaseId,
    }
}

/// The compares that make `expect` hold for `key` (a full key).
fn compares(key: &str, expect: Expect) -> Vec<Compare> {
    match expect {
        Expect::Any => Vec::new(),
        Expect::Absent => vec![Compare::create_revision(key, CompareOp::Equal, 0)],
        // etcd reads a missing key's mod_revision as 0: revision 0 expects a key that exists
        Expect::ModRevision(0) => vec![
            Compare::create_revision(key, CompareOp::Greater, 0),
            Compare::mod_revision(key, CompareOp::Equal, 0),
        ],
        Expect::ModRevision(rev) => {
            vec![Compare::mod_revision(key, CompareOp::Equal, rev as i64)]
        }
    }
}

/// The key-values the `n`th op of a transaction's taken branch read.
fn range_response(response: &TxnResponse, n: usize) -> Option<Vec<etcd_client::KeyValue>> {
    match response.op_responses().into_iter().nth(n)? {
        TxnOpResponse::Get(get) => Some(get.kvs().to_vec()),
        _ => None,
    }
}

fn holds(current: Option<&etcd_client::KeyValue>, expect: Expect) -> bool {
    let current = current.map(|kv| kv.mod_revision() as Revision);
    match expect {
        Expect::Any => true,
        Expect::Absent => current.is_none(),
        Expect::ModRevision(rev) => current == Some(rev),
    }
}

impl MetaStore for EtcdMetaStore {
    fn get(&self, key: &str) -> MetaResult<Option<KeyValue>> {
        let mut kv = self.client.kv_client();
        let full = self.full_key(key);
        let namespace = self.namespace.clone();
        self.run(async move {
            let response = kv.get(full, None).await.map_err(unavailable)?;
            Ok(response.kvs().first().map(|kv| key_value(&namespace, kv)))
        })
    }

    fn list(&self, prefix: &str) -> MetaResult<Listing> {
        let mut kv = self.client.kv_client();
        let full = self.full_key(prefix);
        let namespace = self.namespace.clone();
        self.run(async move {
            let response = kv
                .get(full, Some(GetOptions::new().with_prefix()))
                .await
                .map_err(unavailable)?;
            Ok(Listing {
                kvs: response
                    .kvs()
                    .iter()
                    .map(|kv| key_value(&namespace, kv))
                    .collect(),
                revision: revision_of(response.header())?,
            })
        })
    }

    fn compare_and_set(
        &self,
        key: &str,
        expect: Expect,
        value: &[u8],
        lease: LeaseId,
    ) -> MetaResult<Revision> {
        let op = TxnOp::Put {
            key: key.to_string(),
            expect,
            value: value.to_vec(),
            lease,
        };
        self.commit(None, std::slice::from_ref(&op))
    }

    fn delete(&self, key: &str, expect: Expect) -> MetaResult<Revision> {
        let op = TxnOp::Delete {
            key: key.to_string(),
            expect,
        };
        self.commit(None, std::slice::from_ref(&op))
    }

    fn commit(&self, fence: Option<&LeaderKey>, ops: &[TxnOp]) -> MetaResult<Revision> {
        check_commit(ops)?;
        let mut when = Vec::new();
        let mut reads = Vec::new();
        if let Some(fence) = fence {
            let key = self.full_key(&fence.key);
            when.push(Compare::create_revision(
                key.as_str(),
                CompareOp::Equal,
                fence.create_revision as i64,
            ));
            reads.push(etcd_client::TxnOp::get(key, None));
        }
        let mut writes = Vec::with_capacity(ops.len());
        let mut lease_used = 0;
        for op in ops {
            let key = self.full_key(op.key());
            when.extend(compares(&key, op.expect()));
            reads.push(etcd_client::TxnOp::get(key.as_str(), None));
            writes.push(match op {
                TxnOp::Put { value, lease, .. } => {
                    if lease_used == 0 {
                        lease_used = *lease;
                    }
                    let options =
                        (*lease != 0).then(|| PutOptions::new().with_lease(*lease as i64));
                    etcd_client::TxnOp::put(key, value.clone(), options)
                }
                TxnOp::Delete { .. } => etcd_client::TxnOp::delete(key, None::<DeleteOptions>),
            });
        }
        let txn = Txn::new().when(when).and_then(writes).or_else(reads);
        let mut kv = self.client.kv_client();
        let response =
            self.run(async move { kv.txn(txn).await.map_err(|e| meta_error(e, lease_used)) })?;
        if response.succeeded() {
            return revision_of(response.header());
        }
        // the else branch read the fence and every key at the revision the compares failed
        let mut n = 0;
        if let Some(fence) = fence {
            let kvs = range_response(&response, 0).unwrap_or_default();
            if kvs.first().map(|kv| kv.create_revision() as Revision) != Some(fence.create_revision)
            {
                return Err(MetaError::NotLeader {
                    key: fence.key.clone(),
                });
            }
            n = 1;
        }
        for (i, op) in ops.iter().enumerate() {
            let kvs = range_response(&response, n + i).unwrap_or_default();
            if !holds(kvs.first(), op.expect()) {
                return Err(MetaError::Conflict {
                    key: op.key().to_string(),
                    current: kvs.first().map(|kv| kv.mod_revision() as Revision),
                });
            }
        }
        Err(unavailable(
            "a transaction failed although every compare held",
        ))
    }

    fn watch(&self, prefix: &str, from_revision: Revision) -> MetaResult<Watch> {
        let mut watch_client = self.client.watch_client();
        let mut kv = self.client.kv_client();
        let full = self.full_key(prefix);
        let namespace = self.namespace.clone();
        let (sender, events) = mpsc::channel();
        let stream = self.run(async move {
            let options = WatchOptions::new()
                .with_prefix()
                .with_start_revision(from_revision as i64);
            let mut stream = watch_client
                .watch(full.as_str(), Some(options))
                .await
                .map_err(unavailable)?;
            let created = stream
                .message()
                .await
                .map_err(unavailable)?
                .ok_or_else(|| unavailable("the watch stream ended before it was created"))?;
            if created.compact_revision() > 0 {
                return Err(MetaError::Compacted {
                    compact_revision: created.compact_revision() as Revision,
                });
            }
            if created.canceled() {
                return Err(unavailable(format!(
                    "watch refused: {}",
                    created.cancel_reason()
                )));
            }
            let mut first = Some(created);
            if from_revision > 0 {
                // etcd tells a watch its start was compacted only from its sync loop (every
                // 100 ms): a read at that revision says so at once, then wait for the answer
                // that carries the compact revision
                let probe = GetOptions::new()
                    .with_prefix()
                    .with_revision(from_revision as i64)
                    .with_count_only();
                if let Err(e) = kv.get(full.as_str(), Some(probe)).await {
                    if !is_compacted(&e) {
                        // a future revision, or the connection gone: the watch tells
                        if !status_message(&e).is_some_and(|m| m.contains("future revision")) {
                            return Err(unavailable(e));
                        }
                    } else {
                        loop {
                            let response = stream.message().await.map_err(unavailable)?;
                            let Some(response) = response else {
                                return Err(unavailable("the watch stream ended"));
                            };
                            if response.compact_revision() > 0 {
                                return Err(MetaError::Compacted {
                                    compact_revision: response.compact_revision() as Revision,
                                });
                            }
                            if !response.events().is_empty() {
                                // events: the watch itself was not compacted (cannot
                                // happen after that read, but then it is a good watch)
                                first = Some(response);
                                break;
                            }
                        }
                    }
                }
            }
            Ok((stream, first))
        })?;
        let (mut stream, first) = stream;
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the store");
        runtime.spawn(async move {
            let mut next = first;
            loop {
                let Some(response) = next.take() else {
                    match stream.message().await {
                        Ok(Some(response)) => next = Some(response),
                        // the stream ended or broke: closing the channel tells the consumer
                        Ok(None) | Err(_) => return,
                    }
                    continue;
                };
                // one batch per revision (etcd sends a revision's events in one response)
                let mut batches: Vec<Vec<WatchEvent>> = Vec::new();
                for event in response.events() {
                    let Some(kv) = event.kv() else {
                        continue;
                    };
                    let mut kv = key_value(&namespace, kv);
                    let event = match event.event_type() {
                        EventType::Put => WatchEvent::Put(kv),
                        EventType::Delete => {
                            kv.value.clear();
                            WatchEvent::Delete(kv)
                        }
                    };
                    match batches.last_mut() {
                        Some(batch) if batch[0].revision() == event.revision() => batch.push(event),
                        _ => batches.push(vec![event]),
                    }
                }
                for batch in batches {
                    if sender.send(batch).is_err() {
                        // the receiver is gone: dropping the stream ends the etcd watch
                        let _ = stream.cancel(response.watch_id()).await;
                        return;
                    }
                }
                if response.canceled() || response.compact_revision() > 0 {
                    return;
                }
            }
        });
        Ok(Watch::new(events))
    }

    fn grant(&self, ttl: Duration) -> MetaResult<LeaseId> {
        let seconds = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
        let seconds = seconds.max(1) as i64;
        let mut lease = self.client.lease_client();
        self.run(async move {
            let response = lease.grant(seconds, None).await.map_err(unavailable)?;
            if !response.error().is_empty() {
                return Err(unavailable(format!("lease grant: {}", response.error())));
            }
            Ok(response.id() as LeaseId)
        })
    }

    fn keep_alive(&self, lease: LeaseId) -> MetaResult<Duration> {
        let mut client = self.client.lease_client();
        self.run(async move {
            // the first request renews the lease (and fails on one that is gone); its answer
            // stays inside the client, so the ttl comes from a second one on the same stream
            let (mut keeper, mut stream) = client
                .keep_alive(lease as i64)
                .await
                .map_err(|e| meta_error(e, lease))?;
            keeper
                .keep_alive()
                .await
                .map_err(|e| meta_error(e, lease))?;
            match stream.message().await.map_err(|e| meta_error(e, lease))? {
                Some(response) if response.ttl() > 0 => {
                    Ok(Duration::from_secs(response.ttl() as u64))
                }
                Some(_) => Err(MetaError::LeaseNotFound(lease)),
                None => Err(unavailable("the keep-alive stream ended")),
            }
        })
    }

    fn revoke(&self, lease: LeaseId) -> MetaResult<()> {
        let mut client = self.client.lease_client();
        self.run(async move {
            client
                .revoke(lease as i64)
                .await
                .map_err(|e| meta_error(e, lease))?;
            Ok(())
        })
    }

    fn campaign(
        &self,
        name: &str,
        value: &[u8],
        lease: LeaseId,
        wait: Duration,
    ) -> MetaResult<LeaderKey> {
        if lease == 0 {
            return Err(MetaError::LeaseNotFound(0));
        }
        // an etcd that is gone is Unavailable now, not a Timeout after the whole wait
        self.ping()?;
        let mut election = self.client.election_client();
        let full_name = self.full_key(name);
        let value = value.to_vec();
        let namespace = self.namespace.clone();
        let outcome = self.run_for(wait, async move {
            let mut response = election
                .campaign(full_name, value, lease as i64)
                .await
                .map_err(|e| meta_error(e, lease))?;
            let leader = response
                .take_leader()
                .ok_or_else(|| unavailable("a campaign answer without a leader key"))?;
            let strip = |bytes: &[u8]| {
                let text = String::from_utf8_lossy(bytes);
                text.strip_prefix(namespace.as_str())
                    .unwrap_or(&*text)
                    .to_string()
            };
            Ok(LeaderKey {
                name: strip(leader.name()),
                key: strip(leader.key()),
                create_revision: leader.rev().max(0) as Revision,
                lease: leader.lease() as LeaseId,
            })
        });
        match outcome {
            Err(MetaError::Timeout) => {
                // the wait ran out (etcd's own campaign resigns when its call is cancelled,
                // but asynchronously): leave the line now, so that the next campaign with
                // this lease starts a fresh candidacy rather than meet this one's resign
                let candidate = self.full_key(&format!("{}{lease:x}", election_prefix(name)));
                let mut kv = self.client.kv_client();
                let _ = self.run(async move {
                    let txn = Txn::new()
                        .when(vec![Compare::lease(
                            candidate.as_str(),
                            CompareOp::Equal,
                            lease as i64,
                        )])
                        .and_then(vec![etcd_client::TxnOp::delete(candidate, None)]);
                    kv.txn(txn).await.map_err(unavailable)
                });
                Err(MetaError::Timeout)
            }
            other => other,
        }
    }

    fn leader(&self, name: &str) -> MetaResult<Option<KeyValue>> {
        let mut election = self.client.election_client();
        let full_name = self.full_key(name);
        let namespace = self.namespace.clone();
        self.run(async move {
            match election.leader(full_name).await {
                Ok(response) => Ok(response.kv().map(|kv| key_value(&namespace, kv))),
                Err(e) if status_message(&e).is_some_and(|m| m.contains("no leader")) => Ok(None),
                Err(e) => Err(unavailable(e)),
            }
        })
    }

    fn resign(&self, leader: &LeaderKey) -> MetaResult<()> {
        let mut election = self.client.election_client();
        let key = etcd_client::LeaderKey::new()
            .with_name(self.full_key(&leader.name))
            .with_key(self.full_key(&leader.key))
            .with_rev(leader.create_revision as i64)
            .with_lease(leader.lease as i64);
        self.run(async move {
            match election
                .resign(Some(ResignOptions::new().with_leader(key)))
                .await
            {
                Ok(_) => Ok(()),
                // no longer the leader (its lease expired): nothing to give up
                Err(e) if status_message(&e).is_some_and(|m| m.contains("not leader")) => Ok(()),
                Err(e) => Err(unavailable(e)),
            }
        })
    }
}
