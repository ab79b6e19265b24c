//! The write coordinator: the node that received a write routes each operation to its shard
//! (auto-creating indices as `action.auto_create_index` allows; deletes never create), groups
//! them by shard, sends each group to its primary as one [`ShardWriteRequest`] on the `write`
//! pool (or, in a cluster, to the node holding the primary over the transport), and puts the
//! answers back in the request's order. A bad item fails alone. A primary that is moving (its
//! node left or is unreachable, a replica is being promoted) gets its groups again once the
//! cluster state names the new one, until the request's timeout; one that cannot be reached by
//! then fails its items with the reason, never a lost acknowledgement.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_cluster::DiscoveryNode;
use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};
use tessera_index::{Conditions, DocWrite, IndexService, WriteOutcome};

use super::operation::{
    missing_index, ActiveShards, ItemResponse, ItemResult, Operation, Refresh, ShardInfo,
    WriteOptions,
};
use super::primary::{self, ShardWriteRequest, ShardWriteResponse};
use crate::coordination::actions::WRITE_SHARDS;
use crate::node::{Node, PrimaryTarget, Redirect};

/// The operations of a request bound for one shard, with their positions in the request.
pub(super) struct ShardGroup {
    pub positions: Vec<usize>,
    pub request: ShardWriteRequest,
}

impl ShardGroup {
    /// A new group, with `remaining` operations of the request still to come: room for all of
    /// them when the index has one shard (a bulk load's usual case), so lists of thousands of
    /// writes never regrow.
    fn new(
        index: &IndexService,
        shard_id: u32,
        options: WriteOptions,
        remaining: usize,
    ) -> ShardGroup {
        let capacity = if index.shards().len() == 1 {
            remaining
        } else {
            0
        };
        let meta = index.metadata();
        ShardGroup {
            positions: Vec::with_capacity(capacity),
            request: ShardWriteRequest {
                // the index's own name: the operations may have named it through an alias
                index: meta.name.clone(),
                index_uuid: meta.uuid.clone(),
                shard_id,
                refresh: options.refresh,
                active_shards: options.active_shards,
                timeout_millis: options.timeout_millis,
                operations: Vec::with_capacity(capacity),
            },
        }
    }

    fn push(&mut self, position: usize, write: DocWrite) {
        self.positions.push(position);
        self.request.operations.push(write);
    }

    /// The group to send again after its primary moved. A document whose id this node
    /// generated is written as an index rather than a create: the first attempt may have
    /// reached the old primary and its replicas before the answer was lost, and the id is ours
    /// alone (OpenSearch's `isRetry` of auto-generated ids), so what is there is our own.
    fn again(mut self) -> ShardGroup {
        for write in &mut self.request.operations {
            if let DocWrite::Index {
                auto_generated_id: true,
                conditions,
                ..
            } = write
            {
                conditions.create_only = false;
            }
        }
        self
    }
}

/// The index an operation goes to: the index it names, or the write index of the alias or
/// data stream it names (with how the write is redirected), created if it is missing and
/// allowed (a name that a data stream template matches makes a data stream).
fn index_for(node: &Node, operation: &Operation) -> Result<(Arc<IndexService>, Option<Redirect>)> {
    if let Some(index) = node.index(&operation.index) {
        return Ok((index, None));
    }
    if let Some((index, redirect)) = node.write_target(&operation.index)? {
        return Ok((index, Some(redirect)));
    }
    if let DocWrite::Delete { .. } = &operation.write {
        // a delete never creates an index
        return Err(missing_index(&operation.index));
    }
    if node.auto_create_data_stream(&operation.index)? {
        if let Some((index, redirect)) = node.write_target(&operation.index)? {
            return Ok((index, Some(redirect)));
        }
    }
    Ok((node.index_or_create(&operation.index)?, None))
}

/// Applies what a redirect asks of an operation: an alias's index routing; a data stream's
/// rules (creates only, with a timestamp).
fn redirected(operation: &mut Operation, redirect: &Redirect) -> Result<()> {
    match redirect {
        Redirect::Alias(alias) => {
            let routing =
                crate::aliases::index_routing(&operation.index, alias, operation.write.routing())?;
            operation.write.set_routing(routing);
            Ok(())
        }
        Redirect::DataStream => match &operation.write {
            DocWrite::Index {
                source, conditions, ..
            } if conditions.create_only => crate::data_streams::check_timestamp(source),
            _ => Err(crate::data_streams::create_only()),
        },
    }
}

/// Routes every operation to its shard (murmur3 of `routing`, or of the id; a missing id
/// becomes a generated one, create-only) and groups them by (index, shard), in the order
/// their primaries are called. Operations that cannot be routed (a missing index that may not
/// be created) get their error in `results` at once.
pub(super) fn group_by_shard(
    node: &Node,
    operations: Vec<Operation>,
    options: WriteOptions,
    results: &mut [Option<ItemResult>],
) -> Vec<ShardGroup> {
    // keyed by (index, shard); the index key is the service's address (unique while held)
    let mut groups: BTreeMap<(usize, u32), (Arc<IndexService>, ShardGroup)> = BTreeMap::new();
    let mut last: Option<(String, Arc<IndexService>, Option<Redirect>)> = None;
    let count = operations.len();
    for (position, mut operation) in operations.into_iter().enumerate() {
        let remaining = count - position;
        let (index, redirect) = match &last {
            Some((name, index, redirect)) if *name == operation.index => {
                (index.clone(), redirect.clone())
            }
            _ => match index_for(node, &operation) {
                Ok((index, redirect)) => {
                    last = Some((operation.index.clone(), index.clone(), redirect.clone()));
                    (index, redirect)
                }
                Err(e) => {
                    results[position] = Some(Err(e));
                    continue;
                }
            },
        };
        if let Some(redirect) = &redirect {
            if let Err(e) = redirected(&mut operation, redirect) {
                results[position] = Some(Err(e));
                continue;
            }
        }
        let write = operation.write;
        let (shard, write) = match write.id() {
            Some(id) => (index.shard_for(id, write.routing()), write),
            // generated ids spread over shards like OpenSearch's: by a hash of the id we make
            None => {
                let id = tessera_common::ids::time_based_id();
                let shard = index.shard_for(&id, write.routing());
                let write = match write {
                    DocWrite::Index {
                        source,
                        routing,
                        conditions,
                        ..
                    } => DocWrite::Index {
                        id: Some(id),
                        auto_generated_id: true,
                        source,
                        routing,
                        conditions: Conditions {
                            create_only: true,
                            ..conditions
                        },
                    },
                    other => other,
                };
                (shard, write)
            }
        };
        let key = (Arc::as_ptr(&index) as usize, shard);
        groups
            .entry(key)
            .or_insert_with(|| {
                let group = ShardGroup::new(&index, shard, options, remaining);
                (index.clone(), group)
            })
            .1
            .push(position, write);
    }
    groups.into_values().map(|(_, group)| group).collect()
}

type WriteFuture = Pin<Box<dyn Future<Output = Result<ShardWriteResponse>> + Send>>;
type NodeWriteFuture =
    Pin<Box<dyn Future<Output = Result<Vec<Result<ShardWriteResponse>>>> + Send>>;

/// Writes on their way: a shard group on this node's `write` pool (or refused at once), or the
/// shard groups bound for one other node, in one transport call (kept, to be sent again if
/// the node turns out not to hold their primaries any more).
enum Pending {
    Group {
        index: Arc<str>,
        positions: Vec<usize>,
        outcome: WriteFuture,
    },
    Node {
        groups: Vec<ShardGroup>,
        outcome: NodeWriteFuture,
    },
}

/// Starts a shard group's write on this node's primary, on the `write` pool (the future is
/// the answer; the task is queued at once). In a cluster the future then forwards the logged
/// operations to the replicas and waits for them (and, for a refresh asked for, for them to
/// take its commit) without holding a pool thread: replicas' writes run on the same pools.
pub(crate) fn write_here(
    node: &Arc<Node>,
    pool: &ThreadPool,
    request: ShardWriteRequest,
) -> WriteFuture {
    let primary = node.clone();
    let (shard, refresh) = (request.shard_id, request.refresh);
    let short = copies_short(node, &request);
    let pool = pool.clone();
    let submit = move |request: ShardWriteRequest| {
        pool.submit(move || primary::write_logged_on_node(&primary, request))
    };
    // queued at once when the shard has the copies the request waits for
    let (queued, waiting) = match short {
        None => (Some(submit.clone()(request)), None),
        Some(_) => (None, Some(request)),
    };
    let node = node.clone();
    Box::pin(async move {
        let handle = match (queued, waiting) {
            (Some(handle), _) => handle,
            (None, Some(request)) => {
                wait_for_active_copies(&node, &request).await?;
                submit(request)
            }
            (None, None) => unreachable!("a write is queued or waiting"),
        };
        let (mut response, operations, index) = handle?.await?;
        let Some(coordination) = node.coordination().cloned() else {
            return Ok(response);
        };
        use crate::coordination::replication;
        // acknowledged only once every in-sync replica has the operations in its translog (or
        // was taken out of the in-sync set)
        if !operations.is_empty() {
            response.shards =
                replication::replicate_writes(&node, &coordination, &index, shard, operations)
                    .await?;
        }
        // a refresh the request asked for shows on every copy before it answers
        if refresh != Refresh::None {
            let publisher = coordination.clone();
            let publication = node
                .pools
                .management
                .run(move || Ok(replication::publish_calls(&publisher, &index, shard)))
                .await?;
            if let Some(publication) = publication {
                publication.await;
            }
        }
        Ok(response)
    })
}

/// `(wanted, have, needed)` when the shard of `request` has fewer active copies (its primary
/// counts) than the request's `wait_for_active_shards` asks (or the index's
/// `index.write.wait_for_active_shards`); `None` when it has enough, or no active primary.
fn copies_short(node: &Node, request: &ShardWriteRequest) -> Option<(ActiveShards, u32, u32)> {
    let index = node
        .index(&request.index)
        .filter(|index| index.metadata().uuid == request.index_uuid)?;
    let meta = index.metadata();
    let wanted = match request.active_shards {
        Some(wanted) => wanted,
        None => ActiveShards::parse(meta.setting("index.write.wait_for_active_shards"))
            .unwrap_or(ActiveShards::Count(1)),
    };
    let needed = wanted.needed(meta.number_of_replicas());
    let have = node.active_copies(&meta.name, &meta.uuid, request.shard_id);
    // a primary that is not active fails the write with its own reason at once
    (have > 0 && have < needed).then_some((wanted, have, needed))
}

/// Waits (up to the request's timeout) until the shard of `request` has the active copies it
/// asks for; OpenSearch's `unavailable_shards_exception` when the time is up.
async fn wait_for_active_copies(node: &Arc<Node>, request: &ShardWriteRequest) -> Result<()> {
    let deadline = Instant::now() + Duration::from_millis(request.timeout_millis);
    let enough = crate::poll::until(deadline, Duration::from_millis(50), || {
        copies_short(node, request).is_none()
    })
    .await;
    match copies_short(node, request).filter(|_| !enough) {
        None => Ok(()),
        Some((wanted, have, needed)) => Err(Error::new(
            "unavailable_shards_exception",
            503,
            format!(
                "[{}][{}] Not enough active copies to meet shard count of [{}] (have {have}, needed {needed}). Timeout: [{}]",
                request.index,
                request.shard_id,
                wanted.render(),
                tessera_common::time::format_time_value(request.timeout_millis),
            ),
        )),
    }
}

/// Runs operations (any indices, any shards) and returns their results in order: one `write`
/// pool task per shard group whose primary is here, one transport call per other node holding
/// primaries (its shard groups together: `indices:data/write/bulk[n]`), all started before any
/// is awaited. A group whose primary is moving (a failover promotes a replica, a node left) is
/// sent again once the cluster state changes, until the request's timeout, as OpenSearch's
/// replication action retries on a new cluster state.
pub(super) async fn execute(
    node: &Arc<Node>,
    pool: &ThreadPool,
    operations: Vec<Operation>,
    options: WriteOptions,
) -> Vec<ItemResult> {
    let mut results: Vec<Option<ItemResult>> = (0..operations.len()).map(|_| None).collect();
    let mut groups = group_by_shard(node, operations, options, &mut results);
    let deadline = Instant::now() + Duration::from_millis(options.timeout_millis);
    loop {
        let seen = node.coordination().map(|c| c.holder.current().version);
        let retry = send_round(node, pool, groups, &mut results).await;
        if retry.is_empty() {
            break;
        }
        let Some(seen) = seen.filter(|_| Instant::now() < deadline) else {
            for (group, error) in retry {
                let index: Arc<str> = Arc::from(group.request.index.as_str());
                fill(&mut results, &index, group.positions, Err(error));
            }
            break;
        };
        wait_for_state_after(node, seen, deadline).await;
        groups = retry.into_iter().map(|(group, _)| group.again()).collect();
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::illegal_state("a bulk item got no answer"))))
        .collect()
}

/// Sends every group to its primary once and puts the answers in `results`; the groups to
/// send again (their primary is moving), with the error they got this time.
async fn send_round(
    node: &Arc<Node>,
    pool: &ThreadPool,
    groups: Vec<ShardGroup>,
    results: &mut [Option<ItemResult>],
) -> Vec<(ShardGroup, Error)> {
    let mut retry = Vec::new();
    let mut pending = Vec::with_capacity(groups.len());
    let mut remote: BTreeMap<String, (DiscoveryNode, Vec<ShardGroup>)> = BTreeMap::new();
    for group in groups {
        let request = &group.request;
        let index: Arc<str> = Arc::from(request.index.as_str());
        match node.primary_target(&request.index, &request.index_uuid, request.shard_id) {
            PrimaryTarget::Local => pending.push(Pending::Group {
                index,
                positions: group.positions,
                outcome: write_here(node, pool, group.request),
            }),
            PrimaryTarget::Remote(target) => {
                remote
                    .entry(target.id.clone())
                    .or_insert_with(|| (target, Vec::new()))
                    .1
                    .push(group);
            }
            PrimaryTarget::Moving(error) => retry.push((group, error)),
            PrimaryTarget::Unavailable(error) => pending.push(Pending::Group {
                index,
                positions: group.positions,
                outcome: Box::pin(async move { Err(error) }),
            }),
        }
    }
    for (target, groups) in remote.into_values() {
        let requests: Vec<&ShardWriteRequest> = groups.iter().map(|g| &g.request).collect();
        let outcome: NodeWriteFuture = match node.coordination() {
            Some(coordination) => {
                Box::pin(coordination.send_while_member(&target, WRITE_SHARDS, &requests, None))
            }
            None => Box::pin(async {
                Err(Error::illegal_state(
                    "a single node has no remote primaries",
                ))
            }),
        };
        pending.push(Pending::Node { groups, outcome });
    }
    for entry in pending {
        match entry {
            Pending::Group {
                index,
                positions,
                outcome,
            } => fill(results, &index, positions, outcome.await),
            Pending::Node { groups, outcome } => match outcome.await {
                Ok(answers) if answers.len() == groups.len() => {
                    for (group, answer) in groups.into_iter().zip(answers) {
                        match answer {
                            Err(error) if primary_moved(&error) => retry.push((group, error)),
                            answer => {
                                let index: Arc<str> = Arc::from(group.request.index.as_str());
                                fill(results, &index, group.positions, answer);
                            }
                        }
                    }
                }
                Ok(_) => {
                    let error = Error::illegal_state("a node answered for other shard groups");
                    for group in groups {
                        let index: Arc<str> = Arc::from(group.request.index.as_str());
                        fill(results, &index, group.positions, Err(error.clone()));
                    }
                }
                Err(error) if primary_moved(&error) => {
                    retry.extend(groups.into_iter().map(|group| (group, error.clone())));
                }
                Err(error) => {
                    for group in groups {
                        let index: Arc<str> = Arc::from(group.request.index.as_str());
                        fill(results, &index, group.positions, Err(error.clone()));
                    }
                }
            },
        }
    }
    retry
}

/// Whether a shard group sent to a node failed because the node no longer holds (or cannot
/// reach) the primary — it left, it is cut off, the copy was moved or is reopening — so that
/// the group is sent again to the primary the next cluster state names.
fn primary_moved(error: &Error) -> bool {
    matches!(
        error.kind(),
        "node_not_connected_exception"
            | tessera_cluster::transport::errors::CONNECT_TRANSPORT_EXCEPTION
            | tessera_cluster::transport::errors::NODE_DISCONNECTED_EXCEPTION
            | "shard_not_found_exception"
            | "unavailable_shards_exception"
    )
}

/// Waits until this node's cluster state is newer than `seen` (a promotion, a node gone), for
/// a second at most and not past `deadline`.
async fn wait_for_state_after(node: &Node, seen: u64, deadline: Instant) {
    let until = deadline.min(Instant::now() + Duration::from_secs(1));
    crate::poll::until(until, Duration::from_millis(25), || {
        node.coordination()
            .is_none_or(|c| c.holder.current().version > seen)
    })
    .await;
}

/// Puts a shard group's answer at its operations' positions.
fn fill(
    results: &mut [Option<ItemResult>],
    index: &Arc<str>,
    positions: Vec<usize>,
    outcome: Result<ShardWriteResponse>,
) {
    match outcome {
        Ok(response) => {
            let shards = response.shards;
            for (position, result) in positions.into_iter().zip(response.results) {
                results[position] = Some(result.map(|result| ItemResponse {
                    index: index.clone(),
                    shards: if result.written.outcome == WriteOutcome::Noop {
                        ShardInfo::default()
                    } else {
                        shards
                    },
                    result,
                }));
            }
        }
        Err(error) => {
            for position in positions {
                results[position] = Some(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::write::tests::{create, index_op, start};

    #[test]
    fn a_mixed_request_is_grouped_by_shard_in_request_order() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        create(&node, "a", 3);
        create(&node, "b", 2);
        let mut operations = Vec::new();
        for i in 0..30 {
            let index = if i % 3 == 0 { "b" } else { "a" };
            operations.push(index_op(index, Some(&i.to_string()), None, json!({"i": i})));
        }
        operations.push(index_op("a", None, None, json!({})));
        operations.push(index_op("-bad-name", Some("1"), None, json!({})));
        let mut results: Vec<Option<ItemResult>> = (0..operations.len()).map(|_| None).collect();
        let expected: Vec<(String, Option<String>)> = operations
            .iter()
            .map(|o| (o.index.clone(), o.write.id().map(String::from)))
            .collect();
        let groups = group_by_shard(&node, operations, Refresh::None.into(), &mut results);
        // only the item whose index cannot be created is answered at once
        assert!(results[..31].iter().all(Option::is_none));
        assert_eq!(
            results[31].as_ref().unwrap().as_ref().unwrap_err().kind(),
            "invalid_index_name_exception"
        );
        let mut seen = Vec::new();
        let mut keys = std::collections::BTreeSet::new();
        for group in &groups {
            let request = &group.request;
            let index = node.index(&request.index).unwrap();
            assert_eq!(request.index_uuid, index.metadata().uuid);
            assert!(
                keys.insert((request.index.clone(), request.shard_id)),
                "one group per shard"
            );
            assert!(
                group.positions.windows(2).all(|w| w[0] < w[1]),
                "request order kept"
            );
            assert_eq!(group.positions.len(), request.operations.len());
            for (&position, write) in group.positions.iter().zip(&request.operations) {
                let (name, id) = &expected[position];
                assert_eq!(name, &request.index);
                let id = match (id, write) {
                    (Some(id), _) => id.clone(),
                    // a missing id is generated here, and the write is then create-only
                    (
                        None,
                        DocWrite::Index {
                            id: Some(id),
                            auto_generated_id: true,
                            conditions,
                            ..
                        },
                    ) => {
                        assert!(conditions.create_only);
                        id.clone()
                    }
                    other => panic!("{other:?}"),
                };
                assert_eq!(write.id(), Some(id.as_str()));
                assert_eq!(request.shard_id, index.shard_for(&id, None));
                seen.push(position);
            }
        }
        assert_eq!(keys.len(), 5, "3 shards of a, 2 of b: {keys:?}");
        seen.sort_unstable();
        assert_eq!(seen, (0..31).collect::<Vec<_>>());
    }
}
