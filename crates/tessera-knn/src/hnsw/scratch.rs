//! The memory a graph walk reuses: visited marks stamped with a generation (so clearing them is
//! one increment, not a pass over every node), and the candidate and result heaps.
//!
//! A search takes its thread's scratch; nothing of size O(n) is allocated per query. A search
//! started from inside another one's filter on the same thread gets a fresh scratch instead.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A node and its distance to the query, ordered by distance then ordinal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scored {
    pub(crate) distance: f32,
    pub(crate) node: u32,
}

impl Eq for Scored {}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.node.cmp(&other.node))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Visited marks for nodes 0..n: a node is visited when its mark equals the generation.
#[derive(Default)]
pub(crate) struct Visited {
    marks: Vec<u16>,
    generation: u16,
}

impl Visited {
    /// Forgets every mark and makes room for `n` nodes.
    pub(crate) fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.fill(0);
            self.generation = 1;
        }
    }

    /// Marks `node`; true when it was not marked yet.
    #[inline]
    pub(crate) fn insert(&mut self, node: u32) -> bool {
        let mark = &mut self.marks[node as usize];
        if *mark == self.generation {
            false
        } else {
            *mark = self.generation;
            true
        }
    }
}

/// Everything a walk reuses.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) visited: Visited,
    /// Nodes to expand, closest first.
    pub(crate) candidates: BinaryHeap<Reverse<Scored>>,
    /// The best accepted nodes so far, farthest on top.
    pub(crate) results: BinaryHeap<Scored>,
    /// A node's unvisited neighbours, gathered before their distances are computed.
    pub(crate) pending: Vec<u32>,
}

impl Scratch {
    pub(crate) fn reset(&mut self, n: usize) {
        self.visited.reset(n);
        self.candidates.clear();
        self.results.clear();
        self.pending.clear();
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch (a fresh one if it is already in use further up the stack).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => f(&mut scratch),
        Err(_) => f(&mut Scratch::default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visited_marks_clear_on_reset_even_when_the_generation_wraps() {
        let mut visited = Visited::default();
        visited.reset(10);
        assert!(visited.insert(3));
        assert!(!visited.insert(3));
        for _ in 0..70_000 {
            visited.reset(10);
            assert!(visited.insert(3));
        }
        visited.reset(20);
        assert!(visited.insert(19));
        assert!(visited.insert(3));
    }

    #[test]
    fn scored_orders_by_distance_then_node_and_nan_sorts_last() {
        let a = Scored {
            distance: 1.0,
            node: 5,
        };
        let b = Scored {
            distance: 1.0,
            node: 6,
        };
        let c = Scored {
            distance: f32::NAN,
            node: 0,
        };
        assert!(a < b && b < c);
    }

    #[test]
    fn a_nested_use_gets_its_own_scratch() {
        with_scratch(|outer| {
            outer.reset(4);
            outer.visited.insert(1);
            with_scratch(|inner| {
                inner.reset(4);
                assert!(inner.visited.insert(1));
            });
            assert!(!outer.visited.insert(1));
        });
    }
}
