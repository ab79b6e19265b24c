//! Lucene's `PriorityQueue`: a bounded binary min-heap with 1-based positions. Where
//! OpenSearch keeps "the best N" in one (significant terms, more_like_this's terms), which of
//! several tied elements survive and the order they come out in follow from its exact sift
//! steps, so those are reproduced rather than approximated: once full, an element replaces the
//! weakest only when strictly better, so the first offered of tied elements stay.

pub struct LuceneQueue<T> {
    heap: Vec<T>,
    max: usize,
    less: fn(&T, &T) -> bool,
}

impl<T> LuceneQueue<T> {
    /// A queue of at most `max` elements, `less(a, b)` when `a` is weaker than `b`.
    pub fn new(max: usize, less: fn(&T, &T) -> bool) -> LuceneQueue<T> {
        LuceneQueue {
            heap: Vec::with_capacity(max.min(1 << 16)),
            max,
            less,
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Lucene's `insertWithOverflow` (its `add` while there is room).
    pub fn insert_with_overflow(&mut self, element: T) {
        if self.heap.len() < self.max {
            self.heap.push(element);
            self.up_heap(self.heap.len());
        } else if !self.heap.is_empty() && (self.less)(&self.heap[0], &element) {
            self.heap[0] = element;
            self.down_heap(1);
        }
    }

    fn up_heap(&mut self, mut i: usize) {
        let mut j = i >> 1;
        while j > 0 && (self.less)(&self.heap[i - 1], &self.heap[j - 1]) {
            self.heap.swap(i - 1, j - 1);
            i = j;
            j >>= 1;
        }
    }

    fn down_heap(&mut self, mut i: usize) {
        let size = self.heap.len();
        let mut j = i << 1;
        let mut k = j + 1;
        if k <= size && (self.less)(&self.heap[k - 1], &self.heap[j - 1]) {
            j = k;
        }
        while j <= size && (self.less)(&self.heap[j - 1], &self.heap[i - 1]) {
            self.heap.swap(i - 1, j - 1);
            i = j;
            j = i << 1;
            k = j + 1;
            if k <= size && (self.less)(&self.heap[k - 1], &self.heap[j - 1]) {
                j = k;
            }
        }
    }

    /// Removes and returns the weakest element.
    pub fn pop(&mut self) -> Option<T> {
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.heap[0], last);
        self.down_heap(1);
        Some(top)
    }

    /// Pops everything, best first (as OpenSearch fills its result arrays from the end).
    pub fn into_sorted_desc(mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.heap.len());
        while let Some(element) = self.pop() {
            out.push(element);
        }
        out.reverse();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_and_the_first_offered_of_ties() {
        let mut queue = LuceneQueue::new(3, |a: &(u32, char), b| a.0 < b.0);
        for element in [(1, 'a'), (5, 'b'), (3, 'c'), (3, 'd'), (5, 'e'), (2, 'f')] {
            queue.insert_with_overflow(element);
        }
        assert_eq!(queue.len(), 3);
        // (3, 'd') replaces (1, 'a'), then (5, 'e') the weakest at the top, (3, 'd'); (2, 'f')
        // is not better than (3, 'c'); ties pop in heap order
        assert_eq!(queue.into_sorted_desc(), [(5, 'b'), (5, 'e'), (3, 'c')]);
    }

    #[test]
    fn pops_weakest_first() {
        let mut queue = LuceneQueue::new(10, |a: &i32, b| a < b);
        for v in [4, 1, 3, 2] {
            queue.insert_with_overflow(v);
        }
        let popped: Vec<i32> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(popped, [1, 2, 3, 4]);
        assert!(queue.is_empty());
    }
}
