//! Bounds what waits for a shard's indexing thread, in documents and in bytes.
//!
//! tantivy queues up to 10,000 groups of documents ahead of its indexing thread. A bulk load
//! keeps that queue full: ~160,000 parsed documents (hundreds of MB, more with large documents)
//! that were built almost a second before they are indexed, long after they left the CPU
//! caches, and acknowledged long before they were searchable. A few thousand queued documents
//! keep the indexing thread just as busy, so writers wait for room here, and each document gives
//! its room back when the indexing thread takes it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tantivy::indexer::UserOperation;
use tantivy::schema::Document;
use tantivy::TantivyDocument;

/// Documents allowed to wait for the indexing thread.
pub const QUEUE_DOCS: usize = 8192;

/// Bytes of documents (their `_source`) allowed to wait for the indexing thread; a batch larger
/// than this still enters an empty queue.
pub const QUEUE_BYTES: usize = 64 << 20;

/// How long a writer waits without any document leaving the queue before it stops waiting
/// (tantivy's own bounded queue still applies then).
const STALL: Duration = Duration::from_secs(5);

/// A write on its way to the queue, with the bytes it weighs (0 for deletes).
pub type Weighed = (UserOperation, usize);

/// What is queued for one shard's indexing thread.
#[derive(Debug)]
pub struct IndexQueue {
    docs: AtomicUsize,
    bytes: AtomicUsize,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    room: Condvar,
    max_docs: usize,
    max_bytes: usize,
}

impl IndexQueue {
    pub fn new(max_docs: usize, max_bytes: usize) -> Arc<IndexQueue> {
        Arc::new(IndexQueue {
            docs: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
            max_docs: max_docs.max(2),
            max_bytes: max_bytes.max(2),
        })
    }

    /// Documents and bytes queued now.
    pub fn queued(&self) -> (usize, usize) {
        (
            self.docs.load(Ordering::SeqCst),
            self.bytes.load(Ordering::SeqCst),
        )
    }

    /// Waits for room for the documents among `ops`, then hands them over, each holding its
    /// place in the queue.
    pub fn enter<'q>(
        self: &'q Arc<Self>,
        ops: &'q mut Vec<Weighed>,
    ) -> impl ExactSizeIterator<Item = UserOperation<QueuedDoc>> + 'q {
        let (mut docs, mut bytes) = (0, 0);
        for (op, weight) in ops.iter() {
            if matches!(op, UserOperation::Add(_)) {
                docs += 1;
                bytes += weight;
            }
        }
        self.wait_for_room(docs, bytes);
        self.docs.fetch_add(docs, Ordering::SeqCst);
        self.bytes.fetch_add(bytes, Ordering::SeqCst);
        ops.drain(..).map(move |(op, bytes)| match op {
            UserOperation::Add(doc) => UserOperation::Add(QueuedDoc {
                doc,
                _place: Place {
                    queue: self.clone(),
                    bytes,
                },
            }),
            UserOperation::Delete(term) => UserOperation::Delete(term),
        })
    }

    fn has_room(&self, docs: usize, bytes: usize) -> bool {
        let (queued_docs, queued_bytes) = self.queued();
        // a group larger than the whole queue (a document with many nested objects, which
        // must go in one group) still enters an empty queue
        (queued_docs + docs <= self.max_docs || queued_docs == 0)
            && (queued_bytes + bytes <= self.max_bytes || queued_bytes == 0)
    }

    fn wait_for_room(&self, docs: usize, bytes: usize) {
        if self.has_room(docs, bytes) {
            return;
        }
        let mut guard = self.lock.lock().unwrap();
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut last = self.queued();
        while !self.has_room(docs, bytes) {
            let (next, timeout) = self.room.wait_timeout(guard, STALL).unwrap();
            guard = next;
            let now = self.queued();
            if timeout.timed_out() && now.0 >= last.0 && now.1 >= last.1 {
                break;
            }
            last = now;
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    fn leave(&self, bytes: usize) {
        let docs = self.docs.fetch_sub(1, Ordering::SeqCst) - 1;
        let bytes = self.bytes.fetch_sub(bytes, Ordering::SeqCst) - bytes;
        // waiters are woken once the queue is half empty, so that a writer wakes once per
        // stretch of work rather than once per document
        if self.waiters.load(Ordering::SeqCst) > 0
            && docs <= self.max_docs / 2
            && bytes <= self.max_bytes / 2
        {
            let _guard = self.lock.lock().unwrap();
            self.room.notify_all();
        }
    }
}

/// A document's place in the queue, given back when the document is dropped: by the indexing
/// thread once it has indexed it, or with the queue if the writer is dropped.
#[derive(Debug)]
struct Place {
    queue: Arc<IndexQueue>,
    bytes: usize,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.queue.leave(self.bytes);
    }
}

/// A document on its way to the indexing thread; tantivy indexes it through its fields.
#[derive(Debug)]
pub struct QueuedDoc {
    doc: TantivyDocument,
    _place: Place,
}

impl QueuedDoc {
    pub(crate) fn document(&self) -> &TantivyDocument {
        &self.doc
    }
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

    fn adds(n: usize, bytes: usize) -> Vec<Weighed> {
        (0..n)
            .map(|_| (UserOperation::Add(TantivyDocument::new()), bytes))
            .collect()
    }

    /// Runs `enter` on another thread; the receiver hears once it got in.
    fn enter_elsewhere(queue: &Arc<IndexQueue>, mut ops: Vec<Weighed>) -> mpsc::Receiver<usize> {
        let (tx, rx) = mpsc::channel();
        let queue = queue.clone();
        thread::spawn(move || {
            let entered: Vec<_> = queue.enter(&mut ops).collect();
            tx.send(entered.len()).unwrap();
        });
        rx
    }

    #[test]
    fn a_document_holds_its_place_until_dropped() {
        let queue = IndexQueue::new(QUEUE_DOCS, QUEUE_BYTES);
        let mut ops = adds(3, 100);
        let term = tantivy::Term::from_field_text(tantivy::schema::Field::from_field_id(0), "x");
        ops.push((UserOperation::Delete(term), 0));
        let queued: Vec<_> = queue.enter(&mut ops).collect();
        assert_eq!(queued.len(), 4);
        assert_eq!(queue.queued(), (3, 300), "a delete holds no place");
        drop(queued);
        assert_eq!(queue.queued(), (0, 0));
    }

    #[test]
    fn a_queue_full_of_documents_makes_the_writer_wait_until_they_leave() {
        let queue = IndexQueue::new(64, QUEUE_BYTES);
        let held: Vec<_> = queue.enter(&mut adds(64, 1)).collect();
        let entered = enter_elsewhere(&queue, adds(16, 1));
        assert!(
            entered.recv_timeout(Duration::from_millis(300)).is_err(),
            "the writer went on while the queue was full"
        );
        // the indexing thread takes documents: the writer goes on once there is room enough
        drop(held);
        assert_eq!(entered.recv_timeout(Duration::from_secs(5)).unwrap(), 16);
    }

    #[test]
    fn a_queue_full_of_bytes_makes_the_writer_wait_but_an_empty_one_takes_any_batch() {
        let queue = IndexQueue::new(QUEUE_DOCS, 1000);
        let held: Vec<_> = queue.enter(&mut adds(2, 400)).collect();
        let entered = enter_elsewhere(&queue, adds(1, 400));
        assert!(
            entered.recv_timeout(Duration::from_millis(300)).is_err(),
            "1,200 bytes went into a queue of 1,000"
        );
        drop(held);
        assert_eq!(entered.recv_timeout(Duration::from_secs(5)).unwrap(), 1);
        // once that document left, a batch larger than the whole limit still gets in
        let big: Vec<_> = queue.enter(&mut adds(1, 5000)).collect();
        assert_eq!(queue.queued(), (1, 5000));
        drop(big);
    }
}
