//! Where the dataplane's time comes from. The engine, the traffic manager and `Core` take time
//! as an argument; the real-time switch's dataplane thread reads it from a [`Clock`] (the
//! system's monotonic or wall clock), and nothing on that path reads the system clock itself.
//! lossless-sim does not run that thread: it calls `Core` with its virtual time directly.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A time base in nanoseconds; it never goes backwards.
pub trait Clock: Send + Sync {
    fn now_ns(&self) -> u64;
}

/// The time base of the real-time dataplane (`--clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockKind {
    /// Monotonic, from switch start (bmv2: timestamps are microseconds since start).
    Real,
    /// Wall clock (Unix epoch), to line timestamps up with pcap captures.
    Wall,
}

/// The system's clock: monotonic from its creation, offset to the Unix epoch for `Wall`.
#[derive(Clone, Copy)]
pub struct SystemClock {
    start: Instant,
    offset_ns: u64,
}

impl SystemClock {
    pub fn new(kind: ClockKind) -> SystemClock {
        let offset_ns = match kind {
            ClockKind::Real => 0,
            ClockKind::Wall => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        };
        SystemClock {
            start: Instant::now(),
            offset_ns,
        }
    }
}

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        self.offset_ns + self.start.elapsed().as_nanos() as u64
    }
}
