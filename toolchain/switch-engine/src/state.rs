//! Run-time state the control plane changes: table entries, action profiles, stateful
//! externs, value sets, replication and mirroring configuration.

use crate::expr::Arg;
use crate::program::Prog;
use switch_tables::{ActionProfile, Table};

/// An action with its data, as installed in an entry, a member or a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionData {
    pub action: u32,
    pub args: Box<[Arg]>,
}

/// What a table entry points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryVal {
    Act(ActionData),
    Member(u32),
    Group(u32),
}

pub struct TableState {
    /// `None` for keyless tables, which always miss.
    pub table: Option<Table<EntryVal>>,
    pub default: Option<EntryVal>,
}

/// Packets and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterValue {
    pub packets: u64,
    pub bytes: u64,
}

/// One rate of a meter: units (packets or bytes) per microsecond and a burst size in units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeterRate {
    pub rate_per_us: f64,
    pub burst: u64,
}

/// A two-rate three-colour meter cell (RFC 2698 as bmv2 implements it).
#[derive(Debug, Clone, Default)]
pub struct MeterCell {
    pub rates: Vec<MeterRate>,
    tokens: Vec<f64>,
    last_us: u64,
}

impl MeterCell {
    pub fn set_rates(&mut self, rates: &[MeterRate], now_us: u64) {
        self.rates = rates.to_vec();
        self.tokens = rates.iter().map(|r| r.burst as f64).collect();
        self.last_us = now_us;
    }

    /// Colour for a packet of `size` units: 0 green, 1 yellow, 2 red. bmv2 checks the peak
    /// rate first (failing it is red and consumes nothing), then the committed rate.
    pub fn execute(&mut self, size: u64, now_us: u64) -> u32 {
        if self.rates.is_empty() {
            return 0;
        }
        let dt = now_us.saturating_sub(self.last_us) as f64;
        self.last_us = self.last_us.max(now_us);
        for (t, r) in self.tokens.iter_mut().zip(&self.rates) {
            *t = (*t + dt * r.rate_per_us).min(r.burst as f64);
        }
        let size = size as f64;
        for i in (0..self.rates.len()).rev() {
            if self.tokens[i] < size {
                return i as u32 + 1;
            }
            self.tokens[i] -= size;
        }
        0
    }
}

/// Stateful objects packets update.
pub struct Ext {
    pub counters: Vec<Vec<CounterValue>>,
    pub meters: Vec<Vec<MeterCell>>,
    pub registers: Vec<Vec<u128>>,
    pub digests: Vec<Digest>,
    /// Per table with `support_timeout`: hit since the last `take_hits`, by entry handle.
    pub hits: Vec<Vec<bool>>,
    pub logs: Vec<String>,
    pub rng: u64,
    pub now_us: u64,
    /// Register/counter/meter indices out of range, as bmv2 logs them.
    pub index_errors: u64,
    pub assert_failures: u64,
}

/// A learned digest: the list's JSON id and the values of its fields (big-endian bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub list_id: i64,
    pub list_name: String,
    pub values: Vec<Vec<u8>>,
}

impl Ext {
    pub fn new(prog: &Prog) -> Ext {
        Ext {
            counters: prog
                .counters
                .iter()
                .map(|c| vec![CounterValue::default(); c.size])
                .collect(),
            meters: prog
                .meters
                .iter()
                .map(|m| vec![MeterCell::default(); m.size])
                .collect(),
            registers: prog.registers.iter().map(|r| vec![0; r.size]).collect(),
            digests: Vec::new(),
            hits: vec![Vec::new(); prog.tables.len()],
            logs: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15,
            now_us: 0,
            index_errors: 0,
            assert_failures: 0,
        }
    }

    /// xorshift64*: `modify_field_rng_uniform` and the `random` algorithm need no quality.
    pub fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

pub struct Runtime {
    pub tables: Vec<TableState>,
    pub profiles: Vec<ActionProfile<ActionData>>,
    pub vsets: Vec<Vec<Vec<u8>>>,
    pub ext: Ext,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_follows_rfc2698_token_buckets() {
        let mut m = MeterCell::default();
        assert_eq!(m.execute(1, 0), 0, "an unconfigured meter is green");
        let cir = MeterRate {
            rate_per_us: 0.001,
            burst: 1,
        };
        let pir = MeterRate {
            rate_per_us: 0.002,
            burst: 2,
        };
        m.set_rates(&[cir, pir], 0);
        assert_eq!(m.execute(1, 0), 0);
        assert_eq!(m.execute(1, 0), 1, "committed bucket empty: yellow");
        assert_eq!(m.execute(1, 0), 2, "peak bucket empty: red");
        assert_eq!(m.execute(1, 0), 2, "red consumes nothing, still red");
        // 1 ms refills 1 committed and 2 peak tokens (both capped at their bursts).
        assert_eq!(m.execute(1, 1000), 0);
        assert_eq!(m.execute(1, 1000), 1);
    }
}
