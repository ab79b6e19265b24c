//! The node's membership of the cluster: its `nodes/<id>` key under a lease it keeps alive, and
//! its candidacy in the cluster-manager election under the same lease. When the node dies or
//! stalls past the lease's ttl, etcd deletes both: the other nodes see it leave, and the next
//! candidate leads.
//!
//! `lease_alive` is what writes lean on while etcd cannot be reached: a write that needs no
//! metadata change goes on only while the last successful keep-alive is younger than the ttl,
//! that is while the rest of the cluster still counts this node in.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tessera_cluster::layout::{cluster_uuid_of, node_key, CLUSTER_KEY, ELECTION};
use tessera_cluster::meta_store::LeaderKey;
use tessera_cluster::{DiscoveryNode, Expect, LeaseId, MetaError, MetaStore};
use tessera_common::{Error, Result};

struct Lease {
    id: LeaseId,
    /// When etcd last confirmed the lease (a keep-alive or the grant).
    confirmed: Instant,
}

/// See the module documentation.
pub struct Membership {
    store: Arc<dyn MetaStore>,
    local: DiscoveryNode,
    ttl: Duration,
    lease: Mutex<Lease>,
    leader: Mutex<Option<LeaderKey>>,
}

impl Membership {
    /// Registers the node: a new lease, and the node's key under it.
    pub fn join(
        store: Arc<dyn MetaStore>,
        local: DiscoveryNode,
        ttl: Duration,
    ) -> Result<Membership> {
        let started = Instant::now();
        let id = store.grant(ttl)?;
        register(store.as_ref(), &local, id)?;
        Ok(Membership {
            store,
            local,
            ttl,
            lease: Mutex::new(Lease {
                id,
                confirmed: started,
            }),
            leader: Mutex::new(None),
        })
    }

    pub fn local(&self) -> &DiscoveryNode {
        &self.local
    }

    /// Renews the lease. A lease etcd no longer knows (the node stalled past its ttl, or etcd
    /// lost it) is replaced and the node registered again; the leadership it carried is gone.
    pub fn renew(&self) -> Result<()> {
        let mut lease = self.lease.lock().unwrap();
        let asked = Instant::now();
        match self.store.keep_alive(lease.id) {
            Ok(_) => {
                lease.confirmed = asked;
                Ok(())
            }
            Err(MetaError::LeaseNotFound(_)) => {
                eprintln!("the node's lease expired: joining the cluster again");
                *self.leader.lock().unwrap() = None;
                let id = self.store.grant(self.ttl)?;
                register(self.store.as_ref(), &self.local, id)?;
                *lease = Lease {
                    id,
                    confirmed: asked,
                };
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the lease is certainly still alive: etcd confirmed it less than a ttl ago (the
    /// renewal that confirmed it was sent after that instant).
    pub fn lease_alive(&self) -> bool {
        self.lease.lock().unwrap().confirmed.elapsed() < self.ttl
    }

    /// Stands in the election for up to `wait`; returns whether this node leads now.
    pub fn campaign(&self, wait: Duration) -> Result<bool> {
        if self.leader.lock().unwrap().is_some() {
            return Ok(true);
        }
        let lease = self.lease.lock().unwrap().id;
        match self
            .store
            .campaign(ELECTION, self.local.id.as_bytes(), lease, wait)
        {
            Ok(key) => {
                // a lease replaced meanwhile makes this leadership worthless
                if self.lease.lock().unwrap().id != key.lease {
                    let _ = self.store.resign(&key);
                    return Ok(false);
                }
                eprintln!("[{}] elected cluster manager", self.local.name);
                *self.leader.lock().unwrap() = Some(key);
                Ok(true)
            }
            Err(MetaError::Timeout) => Ok(false),
            Err(MetaError::LeaseNotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The key that proves this node's leadership (the fence of its writes), if it leads.
    pub fn leader_key(&self) -> Option<LeaderKey> {
        self.leader.lock().unwrap().clone()
    }

    /// Forgets a leadership the store says is gone (a fenced write failed).
    pub fn lost_leadership(&self) {
        if self.leader.lock().unwrap().take().is_some() {
            eprintln!("[{}] is no longer the cluster manager", self.local.name);
        }
    }

    /// Leaves cleanly: resigns, and ends the lease (its keys go with it).
    pub fn leave(&self) {
        if let Some(key) = self.leader.lock().unwrap().take() {
            let _ = self.store.resign(&key);
        }
        let lease = self.lease.lock().unwrap().id;
        let _ = self.store.revoke(lease);
    }
}

/// Where a node remembers the cluster it belongs to (beside its node id).
fn node_file(data: &Path) -> PathBuf {
    data.join("_state").join("node.json")
}

/// Refuses to join a cluster other than the one this node's data belongs to (OpenSearch's
/// check: a node's shards are only meaningful in their own cluster, and an etcd that was
/// replaced or a wrong `--etcd` must not silently pair them with another cluster's state).
pub fn check_cluster_uuid(data: &Path, store: &dyn MetaStore) -> Result<()> {
    let remembered = std::fs::read(node_file(data))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|value| value["cluster_uuid"].as_str().map(String::from));
    let stored = store
        .get(CLUSTER_KEY)?
        .and_then(|kv| cluster_uuid_of(&kv.value));
    match (remembered, stored) {
        (Some(mine), Some(theirs)) if mine != theirs => Err(Error::illegal_state(format!(
            "This node previously joined a cluster with UUID [{mine}] and is now trying to join a different cluster with UUID [{theirs}]. This is forbidden and usually indicates an incorrect discovery or cluster bootstrapping configuration. Note that the cluster UUID persists across restarts and can only be changed by deleting the contents of the node's data path [{}]",
            data.display()
        ))),
        _ => Ok(()),
    }
}

/// Remembers the cluster this node belongs to, once it is known.
pub fn record_cluster_uuid(data: &Path, uuid: &str) -> Result<()> {
    let path = node_file(data);
    let mut value: serde_json::Value = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    if value["cluster_uuid"].as_str() == Some(uuid) {
        return Ok(());
    }
    value["cluster_uuid"] = serde_json::Value::from(uuid);
    tessera_index::translog::write_atomic(&path, value.to_string().as_bytes())
}

fn register(store: &dyn MetaStore, local: &DiscoveryNode, lease: LeaseId) -> Result<()> {
    let value = serde_json::to_vec(local).map_err(|e| Error::internal("serialise the node", e))?;
    store.compare_and_set(&node_key(&local.id), Expect::Any, &value, lease)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cluster::FileMetaStore;

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.to_string(),
            name: id.to_string(),
            ephemeral_id: "e".to_string(),
            transport_address: String::new(),
            http_address: String::new(),
            roles: vec!["data".to_string()],
        }
    }

    #[test]
    fn one_member_leads_and_the_next_takes_over_when_it_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn MetaStore> = Arc::new(FileMetaStore::open(dir.path()).unwrap());
        let ttl = Duration::from_secs(10);
        let a = Membership::join(store.clone(), node("a"), ttl).unwrap();
        let b = Membership::join(store.clone(), node("b"), ttl).unwrap();
        assert!(store.get("nodes/a").unwrap().is_some());
        assert!(a.campaign(Duration::from_millis(100)).unwrap());
        assert!(!b.campaign(Duration::from_millis(100)).unwrap());
        assert!(a.leader_key().is_some() && b.leader_key().is_none());
        assert!(a.lease_alive());
        a.renew().unwrap();
        a.leave();
        assert!(
            store.get("nodes/a").unwrap().is_none(),
            "its key went with its lease"
        );
        assert!(b.campaign(Duration::from_millis(500)).unwrap());
    }

    #[test]
    fn a_node_refuses_another_cluster_than_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("_state")).unwrap();
        let store = FileMetaStore::open(&dir.path().join("store")).unwrap();
        // nothing known on either side, or only one side: fine
        check_cluster_uuid(&data, &store).unwrap();
        record_cluster_uuid(&data, "first").unwrap();
        check_cluster_uuid(&data, &store).unwrap();
        store
            .compare_and_set(
                CLUSTER_KEY,
                Expect::Absent,
                br#"{"cluster_uuid":"first"}"#,
                0,
            )
            .unwrap();
        check_cluster_uuid(&data, &store).unwrap();
        let other = FileMetaStore::open(&dir.path().join("other")).unwrap();
        other
            .compare_and_set(
                CLUSTER_KEY,
                Expect::Absent,
                br#"{"cluster_uuid":"second"}"#,
                0,
            )
            .unwrap();
        let refused = check_cluster_uuid(&data, &other).unwrap_err();
        assert!(refused.reason().contains("[first]") && refused.reason().contains("[second]"));
    }
}
