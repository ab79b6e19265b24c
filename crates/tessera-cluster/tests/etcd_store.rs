//! The `MetaStore` contract, written once over `&dyn MetaStore` and run for both stores: the
//! single node's `FileMetaStore` and `EtcdMetaStore` against a real etcd (one `EtcdProcess`
//! per test, so that revisions and compactions of one test do not reach another). Then what
//! only etcd has: namespaces, an etcd that dies and comes back, compaction.

use std::collections::HashSet;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use tessera_cluster::meta_store::election_prefix;
use tessera_cluster::{
    EtcdMetaStore, EtcdProcess, Expect, FileMetaStore, LeaderKey, MetaError, MetaStore, Revision,
    TxnOp, Watch, WatchEvent,
};

const TIMEOUT: Duration = Duration::from_secs(2);

fn etcd() -> EtcdProcess {
    EtcdProcess::start().expect("start etcd (scripts/system-deps installs it)")
}

fn etcd_store(etcd: &EtcdProcess, namespace: &str) -> EtcdMetaStore {
    EtcdMetaStore::connect(&[etcd.endpoint()], namespace, TIMEOUT).expect("connect to etcd")
}

/// Runs `check` on a fresh file store and on a fresh etcd store.
fn on_both(check: fn(&dyn MetaStore)) {
    let dir = tempfile::tempdir().unwrap();
    let file = FileMetaStore::open(dir.path()).unwrap();
    check(&file);
    let etcd = etcd();
    let store = etcd_store(&etcd, "/tessera/conformance/");
    check(&store);
}

fn recv(watch: &Watch) -> WatchEvent {
    watch
        .recv_timeout(Duration::from_secs(10))
        .expect("a watch event")
}

/// `put key rev` / `delete key rev` for each event.
fn describe(event: &WatchEvent) -> String {
    match event {
        WatchEvent::Put(kv) => format!("put {} {}", kv.key, kv.mod_revision),
        WatchEvent::Delete(kv) => format!("delete {} {}", kv.key, kv.mod_revision),
    }
}

fn put(key: &str, expect: Expect, value: &[u8]) -> TxnOp {
    TxnOp::Put {
        key: key.to_string(),
        expect,
        value: value.to_vec(),
        lease: 0,
    }
}

fn conflict(key: &str, current: Option<Revision>) -> MetaError {
    MetaError::Conflict {
        key: key.to_string(),
        current,
    }
}

fn compare_and_set_and_delete(store: &dyn MetaStore) {
    let r1 = store
        .compare_and_set("k/a", Expect::Absent, b"one", 0)
        .unwrap();
    assert_eq!(
        store.compare_and_set("k/a", Expect::Absent, b"again", 0),
        Err(conflict("k/a", Some(r1)))
    );
    let r2 = store
        .compare_and_set("k/a", Expect::ModRevision(r1), b"two", 0)
        .unwrap();
    assert!(r2 > r1);
    // a lost update is refused, and says what the key is now
    assert_eq!(
        store.compare_and_set("k/a", Expect::ModRevision(r1), b"stale", 0),
        Err(conflict("k/a", Some(r2)))
    );
    assert_eq!(
        store.delete("k/a", Expect::ModRevision(r1)),
        Err(conflict("k/a", Some(r2)))
    );
    assert_eq!(
        store.compare_and_set("k/b", Expect::ModRevision(r1), b"x", 0),
        Err(conflict("k/b", None))
    );
    // revision 0 never matches (etcd reads a missing key's mod_revision as 0)
    assert_eq!(
        store.compare_and_set("k/b", Expect::ModRevision(0), b"x", 0),
        Err(conflict("k/b", None))
    );
    let kv = store.get("k/a").unwrap().unwrap();
    assert_eq!(
        (
            kv.key.as_str(),
            kv.value.as_slice(),
            kv.create_revision,
            kv.mod_revision,
            kv.version,
            kv.lease
        ),
        ("k/a", &b"two"[..], r1, r2, 2, 0)
    );
    assert_eq!(store.get("k/missing").unwrap(), None);
    // listings are in key order, whatever the order of the writes, with the last revision
    store.compare_and_set("k/c", Expect::Any, b"c", 0).unwrap();
    store.compare_and_set("l/x", Expect::Any, b"l", 0).unwrap();
    let r3 = store.compare_and_set("k/b", Expect::Any, b"b", 0).unwrap();
    let listing = store.list("k/").unwrap();
    assert_eq!(listing.revision, r3);
    let keys: Vec<&str> = listing.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["k/a", "k/b", "k/c"]);
    assert_eq!(store.list("").unwrap().kvs.len(), 4);
    assert_eq!(store.list("k/z").unwrap().kvs, []);
    // deletes: checked, at a new revision; a missing key changes nothing
    let r4 = store.delete("k/a", Expect::ModRevision(r2)).unwrap();
    assert!(r4 > r3);
    assert_eq!(store.get("k/a").unwrap(), None);
    assert_eq!(store.delete("k/a", Expect::Any), Ok(r4));
    assert_eq!(store.delete("k/a", Expect::Absent), Ok(r4));
    assert_eq!(store.list("").unwrap().revision, r4);
    // re-created, a key starts over
    let r5 = store
        .compare_and_set("k/a", Expect::Absent, b"new", 0)
        .unwrap();
    let kv = store.get("k/a").unwrap().unwrap();
    assert_eq!((kv.create_revision, kv.version), (r5, 1));
}

fn watches_deliver_changes_in_order(store: &dyn MetaStore) {
    let live = store.watch("w/", 0).unwrap();
    let r1 = store
        .compare_and_set("w/a", Expect::Absent, b"1", 0)
        .unwrap();
    store
        .compare_and_set("x/n", Expect::Absent, b"n", 0)
        .unwrap();
    let r3 = store
        .compare_and_set("w/b", Expect::Absent, b"2", 0)
        .unwrap();
    let r4 = store.compare_and_set("w/a", Expect::Any, b"3", 0).unwrap();
    let r5 = store.delete("w/b", Expect::Any).unwrap();
    // a commit: every key at one revision
    let r6 = store
        .commit(
            None,
            &[
                put("w/c", Expect::Absent, b"c"),
                TxnOp::Delete {
                    key: "w/a".into(),
                    expect: Expect::ModRevision(r4),
                },
                put("w/d", Expect::Absent, b"d"),
            ],
        )
        .unwrap();
    assert!(r6 > r5);
    let expected = [
        format!("put w/a {r1}"),
        format!("put w/b {r3}"),
        format!("put w/a {r4}"),
        format!("delete w/b {r5}"),
        format!("put w/c {r6}"),
        format!("delete w/a {r6}"),
        format!("put w/d {r6}"),
    ];
    let seen: Vec<String> = (0..expected.len())
        .map(|_| describe(&recv(&live)))
        .collect();
    assert_eq!(seen, expected);
    match recv(&store.watch("w/a", r4).unwrap()) {
        WatchEvent::Put(kv) => assert_eq!((kv.value, kv.mod_revision), (b"3".to_vec(), r4)),
        other => panic!("expected the put at {r4}, got {other:?}"),
    }
    // a commit arrives as one batch, whole, live or replayed
    let batch: Vec<String> = store
        .watch("w/", r6)
        .unwrap()
        .next_batch(Duration::from_secs(10))
        .expect("the commit's batch")
        .iter()
        .map(describe)
        .collect();
    assert_eq!(batch, expected[4..]);
    // a watch from a past revision replays from there (inclusive), then goes on live
    let replay = store.watch("w/", r3).unwrap();
    let seen: Vec<String> = (0..expected.len() - 1)
        .map(|_| describe(&recv(&replay)))
        .collect();
    assert_eq!(seen, expected[1..]);
    let r7 = store
        .compare_and_set("w/e", Expect::Absent, b"e", 0)
        .unwrap();
    assert_eq!(describe(&recv(&replay)), format!("put w/e {r7}"));
    assert_eq!(describe(&recv(&live)), format!("put w/e {r7}"));
    // nothing else came: not the other prefix, not twice
    assert_eq!(
        live.recv_timeout(Duration::from_millis(200)),
        Err(RecvTimeoutError::Timeout)
    );
}

fn commits_are_atomic_and_fenced(store: &dyn MetaStore) {
    let lease = store.grant(Duration::from_secs(60)).unwrap();
    let leader = store
        .campaign("manager", b"node-1", lease, Duration::from_secs(5))
        .unwrap();
    let ra = store
        .compare_and_set("s/a", Expect::Absent, b"a", 0)
        .unwrap();
    // one failed expect: nothing is written, the conflict names the key that failed
    assert_eq!(
        store.commit(
            Some(&leader),
            &[
                put("s/a", Expect::ModRevision(ra), b"a2"),
                put("s/b", Expect::ModRevision(ra), b"b"),
            ]
        ),
        Err(conflict("s/b", None))
    );
    assert_eq!(store.list("").unwrap().revision, ra);
    assert_eq!(store.get("s/a").unwrap().unwrap().value, b"a");
    let rev = store
        .commit(
            Some(&leader),
            &[
                put("s/a", Expect::ModRevision(ra), b"a2"),
                put("s/b", Expect::Absent, b"b"),
            ],
        )
        .unwrap();
    let listing = store.list("s/").unwrap();
    assert_eq!(listing.revision, rev);
    assert!(listing.kvs.iter().all(|kv| kv.mod_revision == rev));
    // a commit that only checks the fence changes nothing
    assert_eq!(store.commit(Some(&leader), &[]), Ok(rev));
    // once resigned, the old leader writes nothing, even with expectations that hold
    store.resign(&leader).unwrap();
    let resigned = store.list("").unwrap().revision;
    assert!(resigned > rev);
    assert_eq!(
        store.commit(Some(&leader), &[put("s/c", Expect::Absent, b"c")]),
        Err(MetaError::NotLeader {
            key: leader.key.clone()
        })
    );
    assert_eq!(store.get("s/c").unwrap(), None);
    assert_eq!(store.list("").unwrap().revision, resigned);
    // a key may be written once per commit
    assert!(matches!(
        store.commit(
            None,
            &[put("s/d", Expect::Any, b"1"), put("s/d", Expect::Any, b"2")]
        ),
        Err(MetaError::Unavailable(_))
    ));
    assert_eq!(store.get("s/d").unwrap(), None);
}

fn an_expired_lease_deletes_its_keys(store: &dyn MetaStore) {
    let watch = store.watch("n/", 0).unwrap();
    // etcd's shortest ttl is about 2 s whatever is asked
    let short = store.grant(Duration::from_millis(500)).unwrap();
    let kept = store.grant(Duration::from_secs(1)).unwrap();
    store
        .compare_and_set("n/a", Expect::Absent, b"a", short)
        .unwrap();
    store
        .compare_and_set("n/b", Expect::Absent, b"b", kept)
        .unwrap();
    store
        .compare_and_set("n/c", Expect::Absent, b"c", 0)
        .unwrap();
    assert_eq!(store.get("n/a").unwrap().unwrap().lease, short);
    for _ in 0..3 {
        recv(&watch);
    }
    let started = Instant::now();
    let expired = loop {
        assert!(store.keep_alive(kept).unwrap() >= Duration::from_secs(1));
        match watch.recv_timeout(Duration::from_millis(200)) {
            Ok(event) => break event,
            Err(RecvTimeoutError::Timeout) => {
                assert!(started.elapsed() < Duration::from_secs(10), "no expiry");
            }
            Err(e) => panic!("the watch ended: {e}"),
        }
    };
    match expired {
        WatchEvent::Delete(kv) => assert_eq!(kv.key, "n/a"),
        other => panic!("expected the delete of n/a, got {other:?}"),
    }
    assert_eq!(store.get("n/a").unwrap(), None);
    assert!(store.get("n/b").unwrap().is_some());
    assert_eq!(
        store.keep_alive(short),
        Err(MetaError::LeaseNotFound(short))
    );
    assert_eq!(
        store.compare_and_set("n/d", Expect::Absent, b"d", short),
        Err(MetaError::LeaseNotFound(short))
    );
    assert_eq!(store.get("n/d").unwrap(), None);
    store.revoke(kept).unwrap();
    assert_eq!(store.get("n/b").unwrap(), None);
    assert!(store.get("n/c").unwrap().is_some());
    assert_eq!(store.revoke(kept), Err(MetaError::LeaseNotFound(kept)));
}

fn leadership_passes_on_resign_and_on_revoke(store: &dyn MetaStore) {
    let name = "cluster_manager";
    assert_eq!(store.leader(name).unwrap(), None);
    let first = store.grant(Duration::from_secs(60)).unwrap();
    let second = store.grant(Duration::from_secs(60)).unwrap();
    let third = store.grant(Duration::from_secs(60)).unwrap();
    let leader = store
        .campaign(name, b"node-1", first, Duration::from_secs(5))
        .unwrap();
    assert_eq!((leader.name.as_str(), leader.lease), (name, first));
    assert!(leader.key.starts_with(&election_prefix(name)));
    let current = store.leader(name).unwrap().unwrap();
    assert_eq!(
        (current.key.as_str(), current.value.as_slice()),
        (leader.key.as_str(), &b"node-1"[..])
    );
    assert_eq!(current.create_revision, leader.create_revision);
    // campaigning again with the leader's lease keeps the leadership
    assert_eq!(
        store
            .campaign(name, b"node-1", first, Duration::from_secs(5))
            .unwrap(),
        leader
    );
    // a second candidate waits its turn, and gives up when told to
    let started = Instant::now();
    assert_eq!(
        store.campaign(name, b"node-2", second, Duration::from_millis(300)),
        Err(MetaError::Timeout)
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    std::thread::scope(|scope| {
        // with the same lease again, it wins once the leader resigns
        let waiting =
            scope.spawn(|| store.campaign(name, b"node-2", second, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(store.leader(name).unwrap().unwrap().value, b"node-1");
        store.resign(&leader).unwrap();
        let second_key: LeaderKey = waiting.join().unwrap().unwrap();
        assert_eq!(second_key.lease, second);
        assert_eq!(store.leader(name).unwrap().unwrap().key, second_key.key);
        assert_eq!(store.leader(name).unwrap().unwrap().value, b"node-2");
        // a third one wins when the leader's lease ends (its node died)
        let waiting =
            scope.spawn(|| store.campaign(name, b"node-3", third, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(store.leader(name).unwrap().unwrap().value, b"node-2");
        store.revoke(second).unwrap();
        let third_key = waiting.join().unwrap().unwrap();
        assert_eq!(
            store.campaign(name, b"node-2", second, Duration::from_secs(1)),
            Err(MetaError::LeaseNotFound(second))
        );
        assert_eq!(third_key.lease, third);
        assert_eq!(store.leader(name).unwrap().unwrap().value, b"node-3");
    });
    // resigning a leadership already lost is harmless
    store.resign(&leader).unwrap();
    assert_eq!(store.leader(name).unwrap().unwrap().value, b"node-3");
    assert_eq!(
        store.campaign(name, b"x", 0, Duration::from_millis(100)),
        Err(MetaError::LeaseNotFound(0))
    );
}

#[test]
fn compare_and_set_and_delete_on_both_stores() {
    on_both(compare_and_set_and_delete);
}

#[test]
fn watches_on_both_stores() {
    on_both(watches_deliver_changes_in_order);
}

#[test]
fn commits_on_both_stores() {
    on_both(commits_are_atomic_and_fenced);
}

#[test]
fn lease_expiry_on_both_stores() {
    on_both(an_expired_lease_deletes_its_keys);
}

#[test]
fn election_on_both_stores() {
    on_both(leadership_passes_on_resign_and_on_revoke);
}

#[test]
fn namespaces_keep_clusters_apart() {
    let etcd = etcd();
    let a = etcd_store(&etcd, "/tessera/a/");
    let b = etcd_store(&etcd, "/tessera/b/");
    let watch_a = a.watch("", 0).unwrap();
    a.compare_and_set("nodes/1", Expect::Absent, b"a1", 0)
        .unwrap();
    // the same key in the other namespace is another key
    b.compare_and_set("nodes/1", Expect::Absent, b"b1", 0)
        .unwrap();
    b.compare_and_set("nodes/2", Expect::Absent, b"b2", 0)
        .unwrap();
    let listing = a.list("").unwrap();
    assert_eq!(listing.kvs.len(), 1);
    assert_eq!(
        (listing.kvs[0].key.as_str(), listing.kvs[0].value.as_slice()),
        ("nodes/1", &b"a1"[..])
    );
    let keys: Vec<String> = b
        .list("nodes/")
        .unwrap()
        .kvs
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert_eq!(keys, ["nodes/1", "nodes/2"]);
    assert_eq!(describe(&recv(&watch_a)).split(' ').nth(1), Some("nodes/1"));
    assert_eq!(
        watch_a.recv_timeout(Duration::from_millis(300)),
        Err(RecvTimeoutError::Timeout)
    );
    // one leader per namespace, its key given without the namespace
    let lease_a = a.grant(Duration::from_secs(60)).unwrap();
    let lease_b = b.grant(Duration::from_secs(60)).unwrap();
    let leader_a = a.campaign("m", b"na", lease_a, TIMEOUT).unwrap();
    let leader_b = b.campaign("m", b"nb", lease_b, TIMEOUT).unwrap();
    assert!(leader_a.key.starts_with("m/"), "{leader_a:?}");
    assert_eq!(leader_a.name, "m");
    assert_eq!(a.leader("m").unwrap().unwrap().key, leader_a.key);
    assert_eq!(b.leader("m").unwrap().unwrap().value, b"nb");
    // a fence of one namespace is checked in that namespace
    assert_eq!(
        a.commit(Some(&leader_b), &[put("x", Expect::Any, b"x")]),
        Err(MetaError::NotLeader {
            key: leader_b.key.clone()
        })
    );
    a.commit(Some(&leader_a), &[put("x", Expect::Any, b"x")])
        .unwrap();
    assert_eq!(b.get("x").unwrap(), None);
    // what the store writes is under the namespace in etcd itself
    let raw = etcd_store(&etcd, "");
    let raw_keys: HashSet<String> = raw
        .list("/tessera/a/")
        .unwrap()
        .kvs
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert!(raw_keys.contains("/tessera/a/nodes/1"), "{raw_keys:?}");
    assert!(raw_keys.contains("/tessera/a/x"), "{raw_keys:?}");
    assert!(raw_keys.contains(&format!("/tessera/a/{}", leader_a.key)));
    // a store without a namespace sees every key, from a past revision too
    let first = a.get("nodes/1").unwrap().unwrap().mod_revision;
    let all = raw.watch("", first).unwrap();
    assert_eq!(
        describe(&recv(&all)),
        format!("put /tessera/a/nodes/1 {first}")
    );
}

#[test]
fn calls_fail_fast_while_etcd_is_down_and_work_again_after() {
    let mut etcd = etcd();
    let timeout = Duration::from_secs(1);
    let store = EtcdMetaStore::connect(&[etcd.endpoint()], "/t/", timeout).unwrap();
    let rev = store.compare_and_set("k", Expect::Absent, b"v", 0).unwrap();
    let lease = store.grant(Duration::from_secs(60)).unwrap();
    let leader = store.campaign("m", b"n", lease, timeout).unwrap();
    let watch = store.watch("", 0).unwrap();
    etcd.kill();
    // the watch ends: its consumer re-lists when the store is back
    assert_eq!(
        watch.recv_timeout(Duration::from_secs(10)),
        Err(RecvTimeoutError::Disconnected)
    );
    let unavailable = |what: &str, result: Result<(), MetaError>, started: Instant| {
        assert!(
            matches!(result, Err(MetaError::Unavailable(_))),
            "{what}: {result:?}"
        );
        // the store's timeout, not the campaign's wait nor a hang
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "{what} took {took:?}");
    };
    for _ in 0..2 {
        let now = Instant::now;
        unavailable("get", store.get("k").map(drop), now());
        unavailable("list", store.list("").map(drop), now());
        let cas = store.compare_and_set("k", Expect::Any, b"w", 0);
        unavailable("compare_and_set", cas.map(drop), now());
        unavailable("delete", store.delete("k", Expect::Any).map(drop), now());
        let commit = store.commit(Some(&leader), &[]);
        unavailable("commit", commit.map(drop), now());
        unavailable("watch", store.watch("", 0).map(drop), now());
        let grant = store.grant(Duration::from_secs(5));
        unavailable("grant", grant.map(drop), now());
        unavailable("keep_alive", store.keep_alive(lease).map(drop), now());
        let campaign = store.campaign("m", b"n", lease, Duration::from_secs(30));
        unavailable("campaign", campaign.map(drop), now());
        unavailable("leader", store.leader("m").map(drop), now());
        unavailable("resign", store.resign(&leader), now());
    }
    let short = Duration::from_millis(500);
    assert!(matches!(
        EtcdMetaStore::connect(&[etcd.endpoint()], "/t/", short),
        Err(MetaError::Unavailable(_))
    ));
    etcd.restart().unwrap();
    let started = Instant::now();
    let kv = loop {
        match store.get("k") {
            Ok(kv) => break kv,
            Err(MetaError::Unavailable(_)) if started.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("the store did not come back: {e}"),
        }
    };
    assert_eq!(kv.unwrap().mod_revision, rev);
    // the lease and the leadership outlived the outage
    store.keep_alive(lease).unwrap();
    assert_eq!(store.leader("m").unwrap().unwrap().key, leader.key);
    store.commit(Some(&leader), &[]).unwrap();
    let watch = store.watch("", 0).unwrap();
    let rev = store
        .compare_and_set("k", Expect::ModRevision(rev), b"w", 0)
        .unwrap();
    assert_eq!(describe(&recv(&watch)), format!("put k {rev}"));
}

#[test]
fn a_watch_from_a_compacted_revision_is_refused() {
    let etcd = etcd();
    let store = etcd_store(&etcd, "/c/");
    let first = store.compare_and_set("k", Expect::Any, b"1", 0).unwrap();
    store.compare_and_set("k", Expect::Any, b"2", 0).unwrap();
    let compacted = store.compare_and_set("k", Expect::Any, b"3", 0).unwrap();
    let last = store.compare_and_set("k", Expect::Any, b"4", 0).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.endpoint()], None)
            .await
            .unwrap();
        client
            .compact(
                compacted as i64,
                Some(etcd_client::CompactionOptions::new().with_physical()),
            )
            .await
            .unwrap();
    });
    let started = Instant::now();
    assert_eq!(
        store.watch("", first).err(),
        Some(MetaError::Compacted {
            compact_revision: compacted
        })
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // from the compact revision on, the history is there
    let watch = store.watch("", last).unwrap();
    assert_eq!(describe(&recv(&watch)), format!("put k {last}"));
}

#[test]
fn the_store_works_from_inside_another_runtime() {
    let etcd = etcd();
    let store = std::sync::Arc::new(etcd_store(&etcd, "/r/"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let rev = runtime.block_on(async {
        // on a worker of another runtime (no block_on there) and on its blocking pool
        let on_worker = store.compare_and_set("k", Expect::Absent, b"v", 0).unwrap();
        let blocking = store.clone();
        let kv = tokio::task::spawn_blocking(move || blocking.get("k"))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(kv.mod_revision, on_worker);
        on_worker
    });
    // and it may be dropped there, connected or not
    runtime.block_on(async move {
        assert_eq!(store.get("k").unwrap().unwrap().mod_revision, rev);
        drop(store);
        for endpoint in ["http://[not-an-address", "http://127.0.0.1:1"] {
            let connected = EtcdMetaStore::connect(&[endpoint.to_string()], "/r/", TIMEOUT);
            assert!(
                matches!(connected, Err(MetaError::Unavailable(_))),
                "{endpoint}"
            );
        }
    });
}

/// etcd's count of its watchers, from its metrics.
fn etcd_watchers(etcd: &EtcdProcess) -> u64 {
    use std::io::{Read, Write};
    let address = etcd.endpoint().trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut metrics = String::new();
    stream.read_to_string(&mut metrics).unwrap();
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("etcd_debugging_mvcc_watcher_total "))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .expect("etcd reports its watchers") as u64
}

#[test]
fn a_dropped_watch_ends_the_etcd_watch_and_a_dropped_store_its_watches() {
    let etcd = etcd();
    let store = etcd_store(&etcd, "/d/");
    let watch = store.watch("k", 0).unwrap();
    let other = store.watch("", 0).unwrap();
    assert_eq!(etcd_watchers(&etcd), 2);
    drop(watch);
    // the store learns it at the next event for that watch
    store.compare_and_set("k", Expect::Any, b"v", 0).unwrap();
    recv(&other);
    let started = Instant::now();
    while etcd_watchers(&etcd) != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the watch stayed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(store);
    assert_eq!(
        other.recv_timeout(Duration::from_secs(5)),
        Err(RecvTimeoutError::Disconnected)
    );
    let started = Instant::now();
    while etcd_watchers(&etcd) != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the watches stayed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
