//! The event queue: events ordered by virtual time (ns), ties broken by the order they were
//! scheduled in, so that a run is a pure function of its inputs and its seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Low bits of a heap key that hold the event's slot: at most 2^24 (16.7 M) events pending at
/// once (a frame each, at least; a fabric's buffers hold far fewer).
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

/// A min-queue of events on (time, sequence number).
///
/// The heap holds one `u128` per event: its time, its sequence number (40 bits: ties are in
/// scheduling order for 2^40 events) and its slot in `slots`. A sift moves 16 bytes rather than
/// the event (a frame's vector and its addresses) and compares one integer.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, at_ns: u64, event: E) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(event);
                i
            }
            None => {
                self.slots.push(Some(event));
                (self.slots.len() - 1) as u32
            }
        };
        debug_assert!(
            u64::from(slot) <= SLOT_MASK,
            "more than 2^24 events pending"
        );
        let low = (self.seq << SLOT_BITS) | u64::from(slot);
        self.heap
            .push(Reverse((u128::from(at_ns) << 64) | u128::from(low)));
        self.seq += 1;
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(key)| (key >> 64) as u64)
    }

    pub fn pop(&mut self) -> Option<(u64, E)> {
        let Reverse(key) = self.heap.pop()?;
        let slot = (key as u64 & SLOT_MASK) as u32;
        self.free.push(slot);
        let event = self.slots[slot as usize].take()?;
        Some(((key >> 64) as u64, event))
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

    #[test]
    fn slots_freed_by_pops_are_reused_without_mixing_events() {
        let mut q = EventQueue::default();
        q.push(5, 1);
        q.push(3, 2);
        assert_eq!(q.pop(), Some((3, 2)));
        q.push(4, 3); // takes the slot event 2 left
        q.push(5, 4);
        assert_eq!(q.slots.len(), 3, "one slot reused, one new");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(4, 3), (5, 1), (5, 4)]);
        assert!(q.is_empty());
    }
}
