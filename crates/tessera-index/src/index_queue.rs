//! Bounds how many documents wait for a shard's indexing thread.
//!
//! tantivy queues up to 10,000 groups of documents ahead of its indexing thread. A bulk load
//! keeps that queue full: ~160,000 parsed documents (hundreds of MB) that were built almost a
//! second before they are indexed, long after they left the CPU caches, and whose memory the
//! allocator keeps handing back to the operating system and faulting in again. A few thousand
//! queued documents keep the indexing thread just as busy, so writers wait for room here, and
//! each document gives its room back when the indexing thread takes it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tantivy::indexer::UserOperation;
use tantivy::schema::Document;
use tantivy::TantivyDocument;

/// Documents allowed to wait for the indexing thread.
pub const QUEUE_LIMIT: usize = 8192;

/// A writer that finds no room waits until this many places are free, so that it wakes once per
/// stretch of work rather than once per document.
const WAKE_ROOM: usize = 512;

/// How long a writer waits without any document leaving the queue before it stops waiting
/// (tantivy's own bounded queue still applies then).
const STALL: Duration = Duration::from_secs(5);

/// The count of documents queued for one shard's indexing thread.
#[derive(Debug)]
pub struct IndexQueue {
    queued: AtomicUsize,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    room: Condvar,
    limit: usize,
}

impl IndexQueue {
    pub fn new(limit: usize) -> Arc<IndexQueue> {
        Arc::new(IndexQueue {
            queued: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
            limit: limit.max(WAKE_ROOM * 2),
        })
    }

    /// Documents queued now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Waits for room for the documents among `ops`, then hands them over, each holding its
    /// place in the queue.
    pub fn enter<'q>(
        self: &'q Arc<Self>,
        ops: &'q mut Vec<UserOperation>,
    ) -> impl ExactSizeIterator<Item = UserOperation<QueuedDoc>> + 'q {
        let adds = ops
            .iter()
            .filter(|op| matches!(op, UserOperation::Add(_)))
            .count();
        self.wait_for_room(adds);
        self.queued.fetch_add(adds, Ordering::SeqCst);
        ops.drain(..).map(move |op| match op {
            UserOperation::Add(doc) => UserOperation::Add(QueuedDoc {
                doc,
                _place: Place(self.clone()),
            }),
            UserOperation::Delete(term) => UserOperation::Delete(term),
        })
    }

    fn wait_for_room(&self, count: usize) {
        if self.queued() + count <= self.limit {
            return;
        }
        let mut guard = self.lock.lock().unwrap();
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut last = self.queued();
        while last + count > self.limit {
            let (next, timeout) = self.room.wait_timeout(guard, STALL).unwrap();
            guard = next;
            let now = self.queued();
            if timeout.timed_out() && now >= last {
                break;
            }
            last = now;
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        let left = self.queued.fetch_sub(1, Ordering::SeqCst) - 1;
        if self.waiters.load(Ordering::SeqCst) > 0 && left + WAKE_ROOM <= self.limit {
            let _guard = self.lock.lock().unwrap();
            self.room.notify_all();
        }
    }
}

/// A document's place in the queue, given back when the document is dropped: by the indexing
/// thread once it has indexed it, or with the queue if the writer is dropped.
#[derive(Debug)]
struct Place(Arc<IndexQueue>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// A document on its way to the indexing thread; tantivy indexes it through its fields.
#[derive(Debug)]
pub struct QueuedDoc {
    doc: TantivyDocument,
    _place: Place,
}

impl Document for QueuedDoc {
    type Value<'a> = <TantivyDocument as Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;

    fn adds(n: usize) -> Vec<UserOperation> {
        (0..n)
            .map(|_| UserOperation::Add(TantivyDocument::new()))
            .collect()
    }

    #[test]
    fn a_document_holds_its_place_until_dropped() {
        let queue = IndexQueue::new(QUEUE_LIMIT);
        let mut ops = adds(3);
        ops.push(UserOperation::Delete(tantivy::Term::from_field_text(
            tantivy::schema::Field::from_field_id(0),
            "x",
        )));
        let queued: Vec<_> = queue.enter(&mut ops).collect();
        assert_eq!(queued.len(), 4);
        assert_eq!(queue.queued(), 3, "a delete holds no place");
        drop(queued);
        assert_eq!(queue.queued(), 0);
    }

    #[test]
    fn a_full_queue_makes_the_writer_wait_until_documents_leave() {
        let limit = WAKE_ROOM * 2;
        let queue = IndexQueue::new(limit);
        let held: Vec<_> = queue.enter(&mut adds(limit)).collect();
        let (tx, rx) = mpsc::channel();
        let writer = {
            let queue = queue.clone();
            thread::spawn(move || {
                let more: Vec<_> = queue.enter(&mut adds(16)).collect();
                tx.send(more.len()).unwrap();
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the writer went on while the queue was full"
        );
        // the indexing thread takes documents: the writer goes on once there is room enough
        drop(held);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 16);
        writer.join().unwrap();
        assert_eq!(queue.queued(), 0);
    }
}
