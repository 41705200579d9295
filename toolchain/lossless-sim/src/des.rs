//! The event queue: events ordered by virtual time (ns), ties broken by the order they were
//! scheduled in, so that a run is a pure function of its inputs and its seed.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Scheduled<E> {
    at_ns: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at_ns, self.seq) == (other.at_ns, other.seq)
    }
}

impl<E> Eq for Scheduled<E> {}

impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Scheduled<E> {
    /// Reversed, so that the max-heap pops the earliest (time, sequence) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_ns, other.seq).cmp(&(self.at_ns, self.seq))
    }
}

/// A min-queue of events on (time, sequence number).
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, at_ns: u64, event: E) {
        self.heap.push(Scheduled {
            at_ns,
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|s| s.at_ns)
    }

    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|s| (s.at_ns, s.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.push(20, "c");
        q.push(10, "a");
        q.push(20, "d");
        q.push(10, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, "a"), (10, "b"), (20, "c"), (20, "d")]);
    }
}
