//! Flow state and the two schedulers that decide which flow sends next.
//!
//! Both schedulers order *flows*, not packets: each active flow has exactly one pending event
//! (its next packet, or its aging expiry), so the event queue never holds more entries than
//! there are active flows. The timer wheel keeps flow ids in per-bucket arrays; the heap keeps
//! `(due, flow)` pairs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No flow": the end of a list.
pub const NIL: u32 = u32::MAX;

/// Everything the generator keeps per active flow: 32 bytes (checked by a test). The packet
/// bytes live once per template; a flow only knows where it is in its template and which
/// addresses it rewrites in.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct Flow {
    /// When the pending event is due, ns of generator time. The wheel needs it to re-file the
    /// flow when a coarse bucket cascades into finer ones.
    pub due: u64,
    /// The next free slot while the flow is not in use (the table's free list).
    pub next: u32,
    pub client: u32,
    pub server: u32,
    /// Serial number of the flow since the start (RoCEv2 QP number, pair selection).
    pub serial: u32,
    pub template: u16,
    /// Index of the next template packet; the template's length once the flow is aging.
    pub pkt: u16,
    pub client_port: u16,
    /// Output port pair.
    pub pair: u8,
    pub _reserved: u8,
}

/// The flows of a run, addressed by index, with a free list so ended flows' slots are reused.
pub struct FlowTable {
    pub flows: Vec<Flow>,
    free: u32,
    active: usize,
}

impl FlowTable {
    pub fn with_capacity(n: usize) -> Self {
        FlowTable {
            flows: Vec::with_capacity(n),
            free: NIL,
            active: 0,
        }
    }

    pub fn alloc(&mut self, flow: Flow) -> u32 {
        self.active += 1;
        if self.free != NIL {
            let id = self.free;
            let slot = &mut self.flows[id as usize];
            self.free = slot.next;
            *slot = flow;
            id
        } else {
            assert!(
                self.flows.len() < NIL as usize,
                "more than 2^32-1 active flows"
            );
            self.flows.push(flow);
            (self.flows.len() - 1) as u32
        }
    }

    pub fn release(&mut self, id: u32) {
        self.active -= 1;
        self.flows[id as usize].next = self.free;
        self.free = id;
    }

    pub fn active(&self) -> usize {
        self.active
    }
}

/// A queue of one pending event per flow.
pub trait Scheduler {
    /// Files flow `id` to fire at `due` ns (also stored in the flow).
    fn push(&mut self, flows: &mut [Flow], id: u32, due: u64);
    /// Takes one flow whose event is due by `now`. The heap answers exactly; the wheel answers
    /// per bucket, so an event may fire up to one bucket before its time, never after.
    fn pop(&mut self, flows: &mut [Flow], now: u64) -> Option<u32>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of scheduler memory beyond the flow table.
    fn memory_bytes(&self) -> usize;
}

/// The baseline: a binary min-heap of `(due, flow)` (what TRex used before v2.13).
#[derive(Default)]
pub struct HeapScheduler {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl HeapScheduler {
    pub fn with_capacity(n: usize) -> Self {
        HeapScheduler {
            heap: BinaryHeap::with_capacity(n),
        }
    }
}

impl Scheduler for HeapScheduler {
    fn push(&mut self, flows: &mut [Flow], id: u32, due: u64) {
        flows[id as usize].due = due;
        self.heap.push(Reverse((due, id)));
    }

    fn pop(&mut self, _flows: &mut [Flow], now: u64) -> Option<u32> {
        match self.heap.peek() {
            Some(Reverse((due, _))) if *due <= now => self.heap.pop().map(|Reverse((_, id))| id),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn memory_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Reverse<(u64, u32)>>()
    }
}

/// Flows fetched ahead while firing a bucket, and while cascading one (re-filing is much less
/// work per flow than sending, so it must look further ahead to cover a miss).
const PREFETCH_FIRE: usize = 16;
const PREFETCH_CASCADE: usize = 32;

/// Asks the CPU to load a flow's cache line: bucket walks know which flows come next, so their
/// misses overlap instead of queuing one after the other.
#[inline(always)]
fn prefetch(flows: &[Flow], id: u32) {
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = flows.get(id as usize) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults; the address is a live element.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>((f as *const Flow).cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (flows, id);
}

/// Division by the bucket time without a divide instruction (tens of cycles, several per
/// event): `n / d` as a multiply by a precomputed reciprocal, corrected by at most one.
#[derive(Debug, Clone, Copy)]
struct Divider {
    d: u64,
    /// floor(2^64 / d).
    m: u64,
}

impl Divider {
    fn new(d: u64) -> Self {
        let d = d.max(1);
        // d = 1 would need 2^64; saturating to u64::MAX stays within the one-step correction.
        let m = ((1u128 << 64) / d as u128).min(u64::MAX as u128) as u64;
        Divider { d, m }
    }

    #[inline(always)]
    fn div(&self, n: u64) -> u64 {
        // m <= 2^64/d, so q <= n/d; and m > 2^64/d - 1, so n*m/2^64 > n/d - 1: q is
        // floor(n/d) or one less.
        let mut q = ((n as u128 * self.m as u128) >> 64) as u64;
        let mut r = n - q * self.d;
        while r >= self.d {
            q += 1;
            r -= self.d;
        }
        q
    }
}

/// A drained level-0 bucket keeps its array for the next round unless it grew this large.
const KEEP_CAPACITY: usize = 4096;

/// A hierarchical timer wheel (Varghese and Lauck's scheme 7, TRex's `tw` section).
///
/// Level 0 has `B` buckets of `bucket_ns` each; a bucket of level `l` spans `B^l` level-0 ticks.
/// An event `d` ticks ahead goes to the lowest level whose span reaches it; when the level-0
/// index wraps to 0 the current bucket of level 1 is emptied ("cascaded") into level 0, and so
/// on upwards. Insertion and firing are O(1); each event is cascaded at most once per level.
/// Events beyond `B^levels` ticks park in the farthest top-level bucket and are re-filed from
/// their real due time when they come up.
///
/// A bucket is an array of flow ids rather than a list linked through the flows: walking an
/// array tells which flows come next, so their cache misses are prefetched and overlap (with
/// millions of flows nearly every flow touched is a miss). Within a bucket the order is
/// unspecified (last in, first out).
pub struct TimerWheel {
    /// `levels * B` buckets, level-major.
    buckets: Vec<Vec<u32>>,
    levels: u32,
    /// log2(B).
    shift: u32,
    /// The level of an event whose tick distance has its highest bit at index i: i / log2(B)
    /// (a table, since a divide by a runtime value costs tens of cycles).
    level_of_bit: [u8; 64],
    mask: u64,
    bucket: Divider,
    /// The tick being fired: every bucket before it is empty and every cascade up to it done.
    cur: u64,
    len: usize,
}

impl TimerWheel {
    /// `buckets` must be a power of two and `levels * log2(buckets)` at most 48.
    pub fn new(buckets: u32, levels: u32, bucket_ns: u64) -> Self {
        assert!(
            buckets.is_power_of_two() && buckets >= 2,
            "buckets {buckets}"
        );
        let shift = buckets.trailing_zeros();
        assert!(
            (1..=8).contains(&levels) && shift * levels <= 48,
            "levels {levels}"
        );
        TimerWheel {
            buckets: (0..buckets * levels).map(|_| Vec::new()).collect(),
            levels,
            shift,
            level_of_bit: std::array::from_fn(|i| (i as u32 / shift) as u8),
            mask: buckets as u64 - 1,
            bucket: Divider::new(bucket_ns),
            cur: 0,
            len: 0,
        }
    }

    pub fn bucket_ns(&self) -> u64 {
        self.bucket.d
    }

    fn slot(&self, level: u32, tick: u64) -> usize {
        ((level as u64) << self.shift | ((tick >> (level * self.shift)) & self.mask)) as usize
    }

    fn file(&mut self, flows: &[Flow], id: u32) {
        let tick = self.bucket.div(flows[id as usize].due).max(self.cur);
        let delta = tick - self.cur;
        let level = if delta == 0 {
            0
        } else {
            self.level_of_bit[(63 - delta.leading_zeros()) as usize] as u32
        };
        let slot = if level < self.levels {
            self.slot(level, tick)
        } else {
            let top = self.levels - 1;
            let reach = 1u64 << (self.levels * self.shift);
            self.slot(top, self.cur + reach - 1)
        };
        self.buckets[slot].push(id);
    }

    /// Moves to the next tick and cascades every level whose bucket boundary it crosses.
    fn step(&mut self, flows: &[Flow]) {
        self.cur += 1;
        for level in (1..self.levels).rev() {
            let span_mask = (1u64 << (level * self.shift)) - 1;
            if self.cur & span_mask != 0 {
                continue;
            }
            let slot = self.slot(level, self.cur);
            // Taken, not cleared: a coarse bucket's memory goes back until it fills again.
            let ids = std::mem::take(&mut self.buckets[slot]);
            for (i, &id) in ids.iter().enumerate() {
                if let Some(&ahead) = ids.get(i + PREFETCH_CASCADE) {
                    prefetch(flows, ahead);
                }
                self.file(flows, id);
            }
        }
    }
}

impl Scheduler for TimerWheel {
    fn push(&mut self, flows: &mut [Flow], id: u32, due: u64) {
        flows[id as usize].due = due;
        self.len += 1;
        self.file(flows, id);
    }

    fn pop(&mut self, flows: &mut [Flow], now: u64) -> Option<u32> {
        let target = self.bucket.div(now);
        loop {
            let slot = self.slot(0, self.cur);
            let b = &mut self.buckets[slot];
            if let Some(id) = b.pop() {
                if let Some(&ahead) = b.len().checked_sub(PREFETCH_FIRE).and_then(|i| b.get(i)) {
                    prefetch(flows, ahead);
                }
                if self.bucket.div(flows[id as usize].due) > self.cur {
                    // Parked beyond the reach of a one-level wheel: file it again.
                    self.file(flows, id);
                    continue;
                }
                self.len -= 1;
                return Some(id);
            }
            if b.capacity() > KEEP_CAPACITY {
                *b = Vec::new();
            }
            if self.cur >= target {
                return None;
            }
            if self.len == 0 {
                // Nothing to cascade either: jump instead of walking empty ticks.
                self.cur = target;
                continue;
            }
            self.step(flows);
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn memory_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| std::mem::size_of::<Vec<u32>>() + b.capacity() * 4)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_state_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Flow>(), 32);
    }

    /// Drives a scheduler with a randomized workload and compares every firing against a
    /// reference that knows all due times: at each clock step, exactly the events whose bucket
    /// (for the heap: whose time) has been reached must fire, each once.
    fn check_against_reference<S: Scheduler>(mut s: S, granule: u64, seed: u64, horizon: u64) {
        let mut rng = fastrand::Rng::with_seed(seed);
        let n = 3000u32;
        let mut flows = vec![Flow::default(); n as usize];
        let mut fired = vec![false; n as usize];
        // Each flow fires once at a random time; a third of them on firing schedule a follow-up
        // (re-using the flow), exercising pushes from inside the firing loop.
        let mut pending: Vec<u64> = vec![0; n as usize];
        let mut remaining_followups: Vec<u8> = (0..n).map(|i| (i % 3 == 0) as u8).collect();
        for id in 0..n {
            let due = rng.u64(0..horizon);
            pending[id as usize] = due;
            s.push(&mut flows, id, due);
        }
        let mut reference: std::collections::BTreeSet<(u64, u32)> =
            (0..n).map(|id| (pending[id as usize], id)).collect();
        let mut now = 0u64;
        let mut outstanding = n as usize;
        while outstanding > 0 {
            // Mostly sub-bucket steps, sometimes a jump across many buckets and levels.
            now += if rng.u8(0..10) == 0 {
                rng.u64(1..horizon / 10 + 2)
            } else {
                rng.u64(1..granule * 3)
            };
            while let Some(id) = s.pop(&mut flows, now) {
                assert!(!fired[id as usize], "flow {id} fired twice");
                let due = pending[id as usize];
                assert_eq!(flows[id as usize].due, due);
                // Never late: the event's bucket has been reached.
                assert!(
                    due / granule <= now / granule,
                    "flow {id} due {due} fired at {now}"
                );
                assert!(reference.remove(&(due, id)), "flow {id} was not pending");
                if remaining_followups[id as usize] > 0 {
                    remaining_followups[id as usize] -= 1;
                    // Anywhere from "already past" to far beyond the top level.
                    let next = match rng.u8(0..4) {
                        0 => now.saturating_sub(rng.u64(0..granule * 2)),
                        1 => now + rng.u64(0..granule * 8),
                        _ => now + rng.u64(0..horizon * 4),
                    };
                    pending[id as usize] = next;
                    reference.insert((next, id));
                    s.push(&mut flows, id, next);
                } else {
                    fired[id as usize] = true;
                    outstanding -= 1;
                }
            }
            // Never early by more than a bucket, and nothing left behind: whatever is still
            // pending lies in a bucket not reached yet.
            if let Some(&(due, id)) = reference.first() {
                assert!(
                    due / granule > now / granule,
                    "flow {id} due {due} still pending at {now}"
                );
            }
            assert_eq!(s.len(), outstanding);
        }
        assert!(s.is_empty());
    }

    #[test]
    fn wheel_fires_every_event_in_its_bucket_across_levels() {
        // 16 buckets x 3 levels = 4096 ticks of reach: horizons below and far beyond it.
        for (seed, horizon) in [(1, 200), (2, 5_000), (3, 60_000), (4, 2_000_000)] {
            let bucket = 7;
            check_against_reference(TimerWheel::new(16, 3, bucket), bucket, seed, horizon);
        }
    }

    #[test]
    fn wheel_with_one_level_and_many_buckets() {
        check_against_reference(TimerWheel::new(1024, 1, 20), 20, 5, 1_000_000);
        check_against_reference(TimerWheel::new(2, 8, 1), 1, 6, 100_000);
    }

    #[test]
    fn heap_fires_exactly_in_time() {
        check_against_reference(HeapScheduler::default(), 1, 7, 100_000);
    }

    #[test]
    fn divider_matches_division() {
        let mut rng = fastrand::Rng::with_seed(9);
        for d in [
            1u64,
            2,
            3,
            7,
            1000,
            20_000,
            20_001,
            1 << 40,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let div = Divider::new(d);
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1] {
                assert_eq!(div.div(n), n / d, "{n} / {d}");
            }
            for _ in 0..10_000 {
                let n = rng.u64(..);
                assert_eq!(div.div(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn flow_table_reuses_slots() {
        let mut t = FlowTable::with_capacity(2);
        let a = t.alloc(Flow::default());
        let b = t.alloc(Flow::default());
        t.release(a);
        assert_eq!(t.active(), 1);
        let c = t.alloc(Flow::default());
        assert_eq!(c, a);
        assert_ne!(b, c);
        assert_eq!(t.flows.len(), 2);
    }
}
