//! The node's registry of reader contexts (OpenSearch's search contexts): the point-in-time
//! reader a shard's query phase ran on, kept so that the fetch phase, which may come later and
//! over the wire, loads hits from the same segments. A context lives until it is fetched from,
//! freed by the coordinator, or left unused past its keep-alive; an id that is unknown or
//! expired answers `search_context_missing_exception`, as in OpenSearch.
//!
//! A scroll or a point in time *pins* a reader instead: the shard's snapshot is kept, under
//! its own keep-alive, for every later query of the scroll or the PIT, so that writes made
//! since do not shift its pages. A pinned reader is not taken by a fetch: each query on it
//! registers an ordinary context (the same snapshot) for its own fetch phase.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};
use tessera_index::stats::ShardStats;
use tessera_index::ShardSnapshot;

use crate::messages::ReaderContextId;
use crate::request::SearchRequest;

/// OpenSearch's `search.default_keep_alive`.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(300);

/// What the fetch phase needs of the query that ran.
pub struct ReaderContext {
    pub index_uuid: String,
    pub shard_id: u32,
    /// The segments the query saw.
    pub snapshot: Arc<ShardSnapshot>,
    /// The query's weight, when hits must be explained.
    pub weight: Option<Arc<dyn tantivy::query::Weight>>,
    /// The request (what to load, what to highlight).
    pub request: Arc<SearchRequest>,
}

struct Entry {
    context: Arc<ReaderContext>,
    expires: Instant,
}

/// What a reader is pinned for: the two have separate limits
/// (`search.max_open_scroll_context`, `search.max_open_pit_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PinKind {
    Scroll,
    PointInTime,
}

/// A shard's snapshot kept for a scroll or a point in time.
pub struct PinnedReader {
    pub index: String,
    pub index_uuid: String,
    pub shard_id: u32,
    pub snapshot: Arc<ShardSnapshot>,
    pub kind: PinKind,
    /// The point in time this reader belongs to, and the shard's position in it: what a
    /// node needs to list its PITs (`GET /_search/point_in_time/_all`).
    pub pit: Option<(PitGroup, u32)>,
    /// The shard's counters: a reader counts as held from its pinning until it is dropped
    /// (freed, expired, or its index gone), as OpenSearch counts scroll contexts.
    pub stats: Option<Arc<ShardStats>>,
    /// Set once the registry took it (a reader refused by the limit was never held).
    held: Option<Instant>,
}

impl PinnedReader {
    pub fn new(
        index: &str,
        index_uuid: &str,
        shard_id: u32,
        snapshot: Arc<ShardSnapshot>,
        kind: PinKind,
    ) -> PinnedReader {
        PinnedReader {
            index: index.to_string(),
            index_uuid: index_uuid.to_string(),
            shard_id,
            snapshot,
            kind,
            pit: None,
            stats: None,
            held: None,
        }
    }
}

impl Drop for PinnedReader {
    fn drop(&mut self) {
        if let (Some(stats), Some(since)) = (&self.stats, self.held) {
            stats.released(self.kind == PinKind::PointInTime, since.elapsed());
        }
    }
}

/// A point in time as its readers know it: its id's readers are found again by `uuid`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PitGroup {
    pub uuid: String,
    /// The PIT's `creation_time`, epoch millis.
    pub created_millis: i64,
}

struct Pinned {
    reader: Arc<PinnedReader>,
    keep_alive: Duration,
    expires: Instant,
}

/// One node's open reader contexts.
pub struct ReaderContexts {
    session: u64,
    next_id: AtomicU64,
    keep_alive: Duration,
    open: Mutex<HashMap<u64, Entry>>,
    pinned: Mutex<HashMap<u64, Pinned>>,
}

impl ReaderContexts {
    pub fn new(keep_alive: Duration) -> ReaderContexts {
        ReaderContexts {
            session: tessera_common::ids::random_u64(),
            next_id: AtomicU64::new(1),
            keep_alive,
            open: Mutex::new(HashMap::new()),
            pinned: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `context` for a later fetch (until [`reap_expired`](Self::reap_expired) drops it
    /// past its keep-alive, if nothing took it before).
    pub fn register(&self, context: ReaderContext) -> ReaderContextId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let entry = Entry {
            context: Arc::new(context),
            expires: Instant::now() + self.keep_alive,
        };
        self.open.lock().unwrap().insert(id, entry);
        ReaderContextId {
            session: self.session,
            id,
        }
    }

    /// Takes the context out (the fetch phase is its last use).
    pub fn take(&self, id: ReaderContextId) -> Result<Arc<ReaderContext>> {
        let missing = || Error::search_context_missing(id.id);
        if id.session != self.session {
            return Err(missing());
        }
        let entry = self
            .open
            .lock()
            .unwrap()
            .remove(&id.id)
            .ok_or_else(missing)?;
        if entry.expires <= Instant::now() {
            return Err(missing());
        }
        Ok(entry.context)
    }

    /// Releases a context nobody will fetch from, or a pinned reader (a cleared scroll, a
    /// deleted PIT); false when it was not open.
    pub fn free(&self, id: ReaderContextId) -> bool {
        id.session == self.session
            && (self.open.lock().unwrap().remove(&id.id).is_some()
                || self.pinned.lock().unwrap().remove(&id.id).is_some())
    }

    /// Pins `reader` for `keep_alive`, unless this node already holds `max_open` readers
    /// of its kind (OpenSearch's message for the limit's setting).
    pub fn pin(
        &self,
        reader: PinnedReader,
        keep_alive: Duration,
        max_open: usize,
    ) -> Result<ReaderContextId> {
        let mut pinned = self.pinned.lock().unwrap();
        let kind = reader.kind;
        if pinned.values().filter(|p| p.reader.kind == kind).count() >= max_open {
            return Err(too_many_pinned(kind, max_open));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut reader = reader;
        reader.held = Some(Instant::now());
        if let Some(stats) = &reader.stats {
            stats.pinned(kind == PinKind::PointInTime);
        }
        pinned.insert(
            id,
            Pinned {
                reader: Arc::new(reader),
                keep_alive,
                expires: Instant::now() + keep_alive,
            },
        );
        Ok(ReaderContextId {
            session: self.session,
            id,
        })
    }

    /// The pinned reader `id`, its keep-alive renewed (with `keep_alive` when given, as a
    /// scroll's or a PIT search's own `keep_alive` does, else with the one it had).
    pub fn pinned(
        &self,
        id: ReaderContextId,
        keep_alive: Option<Duration>,
    ) -> Result<Arc<PinnedReader>> {
        let missing = || Error::search_context_missing(id.id);
        if id.session != self.session {
            return Err(missing());
        }
        let mut pinned = self.pinned.lock().unwrap();
        let entry = pinned.get_mut(&id.id).ok_or_else(missing)?;
        let now = Instant::now();
        if entry.expires <= now {
            pinned.remove(&id.id);
            return Err(missing());
        }
        if let Some(keep_alive) = keep_alive {
            entry.keep_alive = keep_alive;
        }
        entry.expires = now + entry.keep_alive;
        Ok(entry.reader.clone())
    }

    /// The pinned readers of `kind` that are open: id, reader, keep-alive.
    pub fn pinned_of(&self, kind: PinKind) -> Vec<(ReaderContextId, Arc<PinnedReader>, Duration)> {
        let now = Instant::now();
        self.pinned
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, p)| p.reader.kind == kind && p.expires > now)
            .map(|(&id, p)| {
                let id = ReaderContextId {
                    session: self.session,
                    id,
                };
                (id, p.reader.clone(), p.keep_alive)
            })
            .collect()
    }

    /// Releases every pinned reader of `kind` (`DELETE /_search/scroll/_all`,
    /// `DELETE /_search/point_in_time/_all`); how many went.
    pub fn free_all(&self, kind: PinKind) -> usize {
        let mut pinned = self.pinned.lock().unwrap();
        let before = pinned.len();
        pinned.retain(|_, p| p.reader.kind != kind);
        before - pinned.len()
    }

    /// Drops the contexts and pinned readers past their keep-alive (the scheduler calls it);
    /// how many went.
    pub fn reap_expired(&self) -> usize {
        let now = Instant::now();
        let mut open = self.open.lock().unwrap();
        let before = open.len();
        open.retain(|_, entry| entry.expires > now);
        let mut pinned = self.pinned.lock().unwrap();
        let pinned_before = pinned.len();
        pinned.retain(|_, p| p.expires > now);
        before - open.len() + pinned_before - pinned.len()
    }

    /// How many contexts are open, pinned readers included (`_nodes/stats` `open_contexts`).
    pub fn open_count(&self) -> usize {
        self.open.lock().unwrap().len() + self.pinned.lock().unwrap().len()
    }

    /// How many readers of `kind` are pinned (`scroll_current`, `point_in_time_current`).
    pub fn pinned_count(&self, kind: PinKind) -> usize {
        let pinned = self.pinned.lock().unwrap();
        pinned.values().filter(|p| p.reader.kind == kind).count()
    }
}

/// OpenSearch's refusal of one scroll or PIT too many on a node.
fn too_many_pinned(kind: PinKind, max_open: usize) -> Error {
    let (what, setting) = match kind {
        PinKind::Scroll => ("scroll", "search.max_open_scroll_context"),
        PinKind::PointInTime => ("Point In Time", "search.max_open_pit_context"),
    };
    Error::new(
        "rejected_execution_exception",
        429,
        format!(
            "Trying to create too many {what} contexts. Must be less than or equal to: [{max_open}]. This limit can be set by changing the [{setting}] setting."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> ReaderContext {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = crate::test_support::empty_snapshot(dir.path());
        ReaderContext {
            index_uuid: "u".into(),
            shard_id: 0,
            snapshot,
            weight: None,
            request: Arc::new(SearchRequest::default()),
        }
    }

    #[test]
    fn a_context_is_fetched_once_then_missing() {
        let contexts = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let id = contexts.register(context());
        assert_eq!(contexts.open_count(), 1);
        assert_eq!(contexts.take(id).unwrap().shard_id, 0);
        let error = contexts.take(id).err().unwrap();
        assert_eq!(error.kind(), "search_context_missing_exception");
        assert_eq!(error.status(), 404);
        assert_eq!(contexts.open_count(), 0);
    }

    #[test]
    fn free_releases_and_other_sessions_ids_are_unknown() {
        let contexts = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let other = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let id = contexts.register(context());
        assert!(!other.free(id));
        assert!(other.take(id).is_err());
        assert!(contexts.free(id));
        assert!(!contexts.free(id));
    }

    #[test]
    fn expired_contexts_are_missing_and_reaped() {
        let contexts = ReaderContexts::new(Duration::from_millis(1));
        let a = contexts.register(context());
        let _b = contexts.register(context());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(
            contexts.take(a).err().unwrap().kind(),
            "search_context_missing_exception"
        );
        assert_eq!(contexts.reap_expired(), 1);
        assert_eq!(contexts.open_count(), 0);
    }

    fn pinned_reader(kind: PinKind) -> PinnedReader {
        let context = context();
        PinnedReader::new("i", &context.index_uuid, 0, context.snapshot, kind)
    }

    #[test]
    fn a_held_reader_counts_until_it_is_dropped() {
        let contexts = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let stats = Arc::new(ShardStats::default());
        let counted = |kind| {
            let mut reader = pinned_reader(kind);
            reader.stats = Some(stats.clone());
            reader
        };
        let scroll = contexts
            .pin(counted(PinKind::Scroll), DEFAULT_KEEP_ALIVE, 1)
            .unwrap();
        // refused by the limit: never held, never counted
        assert!(contexts
            .pin(counted(PinKind::Scroll), DEFAULT_KEEP_ALIVE, 1)
            .is_err());
        let pit = contexts
            .pin(counted(PinKind::PointInTime), DEFAULT_KEEP_ALIVE, 1)
            .unwrap();
        let get = |c: &AtomicU64| ShardStats::get(c);
        assert_eq!(get(&stats.scroll_current), 1);
        assert_eq!(get(&stats.point_in_time_current), 1);
        assert!(contexts.free(scroll));
        assert_eq!(
            (get(&stats.scroll_current), get(&stats.scroll_total)),
            (0, 1)
        );
        assert!(contexts.free(pit));
        assert_eq!(get(&stats.point_in_time_total), 1);
    }

    #[test]
    fn a_pinned_reader_serves_many_queries_until_freed() {
        let contexts = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let id = contexts
            .pin(pinned_reader(PinKind::Scroll), DEFAULT_KEEP_ALIVE, 10)
            .unwrap();
        assert!(contexts.pinned(id, None).is_ok());
        assert!(contexts.pinned(id, Some(Duration::from_secs(1))).is_ok());
        assert_eq!(contexts.pinned_count(PinKind::Scroll), 1);
        assert_eq!(contexts.pinned_count(PinKind::PointInTime), 0);
        assert_eq!(contexts.open_count(), 1);
        assert!(contexts.free(id));
        assert_eq!(
            contexts.pinned(id, None).err().unwrap().kind(),
            "search_context_missing_exception"
        );
    }

    #[test]
    fn pinned_readers_expire_unless_used_and_have_a_limit_per_kind() {
        let contexts = ReaderContexts::new(DEFAULT_KEEP_ALIVE);
        let short = Duration::from_millis(1000);
        let readers: Vec<PinnedReader> = (0..3).map(|_| pinned_reader(PinKind::Scroll)).collect();
        let pit_reader = pinned_reader(PinKind::PointInTime);
        let mut readers = readers.into_iter();
        let used = contexts.pin(readers.next().unwrap(), short, 2).unwrap();
        let idle = contexts.pin(readers.next().unwrap(), short, 2).unwrap();
        let refused = contexts.pin(readers.next().unwrap(), short, 2).unwrap_err();
        assert_eq!(refused.status(), 429);
        assert!(refused.reason().contains("search.max_open_scroll_context"));
        // the other kind has its own limit
        let pit = contexts.pin(pit_reader, DEFAULT_KEEP_ALIVE, 2).unwrap();
        // a use renews the keep-alive: the used reader outlives the idle one
        std::thread::sleep(Duration::from_millis(600));
        contexts.pinned(used, None).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        assert!(contexts.pinned(used, None).is_ok());
        assert!(contexts.pinned(idle, None).is_err());
        assert_eq!(contexts.pinned_of(PinKind::PointInTime)[0].0, pit);
        assert_eq!(contexts.free_all(PinKind::Scroll), 1);
        assert_eq!(contexts.pinned_count(PinKind::PointInTime), 1);
    }
}
