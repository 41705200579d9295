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

/// Asks the kernel to back `[ptr, ptr + len)` with 2 MiB pages where it can (transparent huge
/// pages in `madvise` mode). With millions of flows every flow touched is a random access into
/// hundreds of megabytes: with 4 KiB pages each one also misses the TLB and walks the page
/// tables, while 2 MiB pages keep the whole table within the TLB's reach (DPDK, and so TRex,
/// run on huge pages for the same reason). Only whole huge pages inside the range are advised;
/// failure (no THP support) just leaves small pages.
fn advise_huge_pages(ptr: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation this process owns; MADV_HUGEPAGE only
        // changes how its future page faults are served, never its contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

impl FlowTable {
    pub fn with_capacity(n: usize) -> Self {
        let flows: Vec<Flow> = Vec::with_capacity(n);
        // Before the first fault on it, so the table is built from huge pages.
        advise_huge_pages(
            flows.as_ptr().cast(),
            flows.capacity() * std::mem::size_of::<Flow>(),
        );
        FlowTable {
            flows,
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

/// Flows fetched ahead while firing a bucket.
const PREFETCH_FIRE: usize = 16;

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

/// Drained coarse-bucket arrays kept for the next coarse buckets to fill.
const SPARE_ARRAYS: usize = 4;

/// An entry of a coarse bucket: the flow and the low 32 bits of its tick, so that cascading
/// re-files it without reading the flow.
#[derive(Debug, Clone, Copy)]
struct Coarse {
    id: u32,
    tick: u32,
}

/// A hierarchical timer wheel (Varghese and Lauck's scheme 7, TRex's `tw` section).
///
/// Level 0 has `B` buckets of `bucket_ns` each; a bucket of level `l` spans `B^l` level-0 ticks.
/// An event `d` ticks ahead goes to the lowest level whose span reaches it; when the level-0
/// index wraps to 0 the current bucket of level 1 is emptied ("cascaded") into level 0, and so
/// on upwards. Insertion and firing are O(1); each event is cascaded at most once per level.
/// Events beyond `B^levels` ticks park in the farthest top-level bucket and are re-filed from
/// their real due time when they come up.
///
/// With millions of flows nearly every flow touched is a cache miss, so the wheel is laid out
/// to touch each flow once per event, when it fires:
/// - a level-0 bucket is an array of flow ids, so firing knows which flows come next and
///   prefetches them (the misses overlap instead of queuing behind each other);
/// - a coarse bucket holds the flow id *and* its tick (low 32 bits: a coarse bucket is
///   cascaded within `B^levels <= 2^32` ticks of its events), so a cascade streams through
///   one array into others and never reads the flow table;
/// - a drained coarse array goes to a small pool that the next coarse bucket to fill takes,
///   so the multi-megabyte arrays of a busy wheel are not allocated, grown by copying and
///   page-faulted in again every bucket time.
///
/// Within a bucket the order is unspecified (last in, first out).
pub struct TimerWheel {
    /// Level 0: `B` buckets of flow ids.
    fine: Vec<Vec<u32>>,
    /// Levels 1..: `(levels - 1) * B` buckets, level-major.
    coarse: Vec<Vec<Coarse>>,
    spare: Vec<Vec<Coarse>>,
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
    /// `buckets` must be a power of two from 2 to 2^32. Levels whose reach would exceed 2^32
    /// ticks (`levels * log2(buckets) > 32`) are not built: coarse buckets keep 32 bits of an
    /// event's tick, and events beyond the reach are parked and re-filed anyway.
    pub fn new(buckets: u32, levels: u32, bucket_ns: u64) -> Self {
        assert!(
            buckets.is_power_of_two() && buckets >= 2,
            "buckets {buckets}"
        );
        let shift = buckets.trailing_zeros();
        let levels = levels.clamp(1, (32 / shift).max(1));
        TimerWheel {
            fine: (0..buckets).map(|_| Vec::new()).collect(),
            coarse: (0..buckets * (levels - 1)).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
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

    /// The coarse bucket of `tick` at `level` (1..levels).
    fn coarse_slot(&self, level: u32, tick: u64) -> usize {
        (((level - 1) as u64) << self.shift | ((tick >> (level * self.shift)) & self.mask)) as usize
    }

    /// Files flow `id`, due in `tick` (never before the current one).
    fn file(&mut self, id: u32, tick: u64) {
        let delta = tick - self.cur;
        let level = if delta == 0 {
            0
        } else {
            self.level_of_bit[(63 - delta.leading_zeros()) as usize] as u32
        };
        // Beyond the top level's reach: park in its farthest bucket (re-filed from the flow's
        // due time when it fires).
        let (level, tick) = if level < self.levels {
            (level, tick)
        } else {
            let reach = 1u64 << (self.levels * self.shift);
            (self.levels - 1, self.cur + reach - 1)
        };
        if level == 0 {
            self.fine[(tick & self.mask) as usize].push(id);
            return;
        }
        let slot = self.coarse_slot(level, tick);
        let b = &mut self.coarse[slot];
        if b.capacity() == 0 {
            if let Some(v) = self.spare.pop() {
                *b = v;
            }
        }
        b.push(Coarse {
            id,
            tick: tick as u32,
        });
    }

    /// Moves to the next tick and cascades every level whose bucket boundary it crosses.
    fn step(&mut self) {
        self.cur += 1;
        for level in (1..self.levels).rev() {
            let span_mask = (1u64 << (level * self.shift)) - 1;
            if self.cur & span_mask != 0 {
                continue;
            }
            let slot = self.coarse_slot(level, self.cur);
            let mut entries = std::mem::take(&mut self.coarse[slot]);
            if level == 1 {
                // Everything in a level-1 bucket lands in level 0 (every packet of a long-gap
                // flow comes this way): its index is the tick's low bits.
                for e in &entries {
                    self.fine[(e.tick as u64 & self.mask) as usize].push(e.id);
                }
            } else {
                for e in &entries {
                    // Every entry's tick lies in [cur, cur + B^level), within 2^32 ticks.
                    let tick = self.cur + e.tick.wrapping_sub(self.cur as u32) as u64;
                    self.file(e.id, tick);
                }
            }
            entries.clear();
            if self.spare.len() < SPARE_ARRAYS && entries.capacity() > 0 {
                self.spare.push(entries);
            }
        }
    }
}

impl Scheduler for TimerWheel {
    fn push(&mut self, flows: &mut [Flow], id: u32, due: u64) {
        flows[id as usize].due = due;
        self.len += 1;
        let tick = self.bucket.div(due).max(self.cur);
        self.file(id, tick);
    }

    fn pop(&mut self, flows: &mut [Flow], now: u64) -> Option<u32> {
        let target = self.bucket.div(now);
        loop {
            let b = &mut self.fine[(self.cur & self.mask) as usize];
            if let Some(id) = b.pop() {
                if let Some(&ahead) = b.len().checked_sub(PREFETCH_FIRE).and_then(|i| b.get(i)) {
                    prefetch(flows, ahead);
                }
                let tick = self.bucket.div(flows[id as usize].due);
                if tick > self.cur {
                    // Parked beyond the wheel's reach: file it again.
                    self.file(id, tick);
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
            self.step();
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn memory_bytes(&self) -> usize {
        let fine: usize = self
            .fine
            .iter()
            .map(|b| std::mem::size_of::<Vec<u32>>() + b.capacity() * 4)
            .sum();
        let coarse: usize = self
            .coarse
            .iter()
            .chain(&self.spare)
            .map(|b| {
                std::mem::size_of::<Vec<Coarse>>() + b.capacity() * std::mem::size_of::<Coarse>()
            })
            .sum();
        fine + coarse
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
    fn wheel_shapes_beyond_32_bits_of_reach_drop_levels() {
        // 2^20 x 3 would reach 2^60 ticks: built as one level, parked events re-filed.
        let w = TimerWheel::new(1 << 20, 3, 5);
        assert_eq!(w.levels, 1);
        check_against_reference(w, 5, 8, 50_000_000);
        let w = TimerWheel::new(1 << 16, 3, 5);
        assert_eq!(w.levels, 2);
        check_against_reference(w, 5, 9, 50_000_000);
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
