//! The node's registry of reader contexts (OpenSearch's search contexts): the point-in-time
//! reader a shard's query phase ran on, kept so that the fetch phase, which may come later and
//! over the wire, loads hits from the same segments. A context lives until it is fetched from,
//! freed by the coordinator, or left unused past its keep-alive; an id that is unknown or
//! expired answers `search_context_missing_exception`, as in OpenSearch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tessera_common::{Error, Result};
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

/// One node's open reader contexts.
pub struct ReaderContexts {
    session: u64,
    next_id: AtomicU64,
    keep_alive: Duration,
    open: Mutex<HashMap<u64, Entry>>,
}

impl ReaderContexts {
    pub fn new(keep_alive: Duration) -> ReaderContexts {
        ReaderContexts {
            session: tessera_common::ids::random_u64(),
            next_id: AtomicU64::new(1),
            keep_alive,
            open: Mutex::new(HashMap::new()),
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

    /// Releases a context nobody will fetch from; false when it was not open.
    pub fn free(&self, id: ReaderContextId) -> bool {
        id.session == self.session && self.open.lock().unwrap().remove(&id.id).is_some()
    }

    /// Drops the contexts past their keep-alive (the scheduler calls it); how many went.
    pub fn reap_expired(&self) -> usize {
        let now = Instant::now();
        let mut open = self.open.lock().unwrap();
        let before = open.len();
        open.retain(|_, entry| entry.expires > now);
        before - open.len()
    }

    /// How many contexts are open (`_nodes/stats` `open_contexts`).
    pub fn open_count(&self) -> usize {
        self.open.lock().unwrap().len()
    }
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
}
