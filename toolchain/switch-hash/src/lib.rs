//! The hash and checksum algorithms bmv2 registers, under the names BMv2 JSON uses in
//! `calculations[].algo` (and p4c emits for v1model's `HashAlgorithm`). Each computes a
//! number from the bytes bmv2 would hash (fields deparsed back to back, big-endian); the
//! number is what bmv2's `NamedCalculation` returns before the caller reduces it
//! (`base + h % max` for v1model `hash`). See README.md.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

mod custom_crc;
mod toeplitz;

pub use custom_crc::{CrcParams, CustomCrc};
pub use toeplitz::ToeplitzKey;

// Slice-by-16 tables: checksums over whole packets (update_checksum_with_payload) stay cheap.
type Slice16 = crc::Table<16>;
const CRC16: crc::Crc<u16, Slice16> = crc::Crc::<u16, Slice16>::new(&crc::CRC_16_ARC);
const CRC32: crc::Crc<u32, Slice16> = crc::Crc::<u32, Slice16>::new(&crc::CRC_32_ISO_HDLC);
const CRC_CCITT: crc::Crc<u16, Slice16> = crc::Crc::<u16, Slice16>::new(&crc::CRC_16_IBM_3740);

/// Why a runtime change to an algorithm was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    #[error("{command} applies to {expected} calculations, this one is {got}")]
    WrongType {
        command: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{what} 0x{value:x} does not fit the {width}-bit CRC")]
    TooWide {
        what: &'static str,
        value: u64,
        width: u32,
    },
    #[error("custom CRCs are 8, 16, 32 or 64 bits wide, not {width}")]
    BadCrcWidth { width: u32 },
    #[error("a Toeplitz key is a non-empty multiple of 4 bytes, got {len} bytes")]
    BadToeplitzKey { len: usize },
}

/// One hash algorithm instance. Stateful ones (`round_robin*`, `random`) keep their state
/// inside, behind atomics or a mutex, so `compute` takes `&self` and instances can be shared
/// between pipeline threads as bmv2 shares them.
#[derive(Debug)]
pub enum Algorithm {
    /// CRC-16/ARC: polynomial 0x8005, init 0, input and result reflected, no final XOR.
    Crc16,
    /// CRC-32/ISO-HDLC (Ethernet): polynomial 0x04C11DB7, init and final XOR all ones,
    /// reflected.
    Crc32,
    /// CRC-16/IBM-3740 ("CCITT-FALSE"): polynomial 0x1021, init 0xFFFF, not reflected.
    CrcCcitt,
    /// CRCs whose parameters the runtime can change (`set_crc16_parameters`, ...).
    Crc8Custom(CustomCrc),
    Crc16Custom(CustomCrc),
    Crc32Custom(CustomCrc),
    Crc64Custom(CustomCrc),
    /// The Internet checksum (RFC 1071) as a big-endian 16-bit number: the value an IPv4
    /// header checksum field holds. bmv2 registers it twice, as `csum16` and `cksum16`.
    Csum16,
    Cksum16,
    /// XOR of the input's big-endian 16-bit (32-bit) words; a short last word is padded with
    /// zero bytes at its end.
    Xor16,
    Xor32,
    /// The first `min(8, len)` input bytes as a big-endian number; later bytes are ignored.
    Identity,
    /// XXH64 with seed 0, registered as `xxh64` and (by simple_switch) `bmv2_hash`.
    Xxh64,
    Bmv2Hash,
    /// Toeplitz hash (RSS) with a runtime-settable key.
    Toeplitz(ToeplitzKey),
    /// 0, 1, 2, ... one per call, whatever the input.
    RoundRobin(AtomicU64),
    /// Like `RoundRobin`, but an input seen before gets the number it got the first time.
    RoundRobinConsistent(Mutex<HashMap<Vec<u8>, u64>>),
    /// A pseudo-random number per call from caller-seeded state (see [`RandomSource`]).
    Random(RandomSource),
}

impl Clone for Algorithm {
    fn clone(&self) -> Self {
        use Algorithm::*;
        match self {
            Crc16 => Crc16,
            Crc32 => Crc32,
            CrcCcitt => CrcCcitt,
            Crc8Custom(c) => Crc8Custom(c.clone()),
            Crc16Custom(c) => Crc16Custom(c.clone()),
            Crc32Custom(c) => Crc32Custom(c.clone()),
            Crc64Custom(c) => Crc64Custom(c.clone()),
            Csum16 => Csum16,
            Cksum16 => Cksum16,
            Xor16 => Xor16,
            Xor32 => Xor32,
            Identity => Identity,
            Xxh64 => Xxh64,
            Bmv2Hash => Bmv2Hash,
            Toeplitz(k) => Toeplitz(k.clone()),
            RoundRobin(n) => RoundRobin(AtomicU64::new(n.load(Ordering::Relaxed))),
            RoundRobinConsistent(m) => RoundRobinConsistent(Mutex::new(
                m.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            )),
            Random(r) => Random(r.clone()),
        }
    }
}

/// Names bmv2 registers, in the order of [`Algorithm::from_bmv2_name`]'s match.
pub const BMV2_NAMES: &[&str] = &[
    "crc16",
    "crc32",
    "crcCCITT",
    "crc8_custom",
    "crc16_custom",
    "crc32_custom",
    "crc64_custom",
    "csum16",
    "cksum16",
    "xor16",
    "xor32",
    "identity",
    "xxh64",
    "bmv2_hash",
    "toeplitz",
    "round_robin",
    "round_robin_consistent",
    "random",
];

impl Algorithm {
    /// The algorithm a BMv2 JSON `algo` string names, in its initial state (custom CRCs with
    /// bmv2's default parameters, a Toeplitz key of four zero bytes, counters at 0, `random`
    /// seeded with 0: use [`RandomSource::new`] for another seed).
    pub fn from_bmv2_name(name: &str) -> Option<Algorithm> {
        use Algorithm::*;
        Some(match name {
            "crc16" => Crc16,
            "crc32" => Crc32,
            "crcCCITT" => CrcCcitt,
            "crc8_custom" => Crc8Custom(CustomCrc::bmv2_default(8)),
            "crc16_custom" => Crc16Custom(CustomCrc::bmv2_default(16)),
            "crc32_custom" => Crc32Custom(CustomCrc::bmv2_default(32)),
            "crc64_custom" => Crc64Custom(CustomCrc::bmv2_default(64)),
            "csum16" => Csum16,
            "cksum16" => Cksum16,
            "xor16" => Xor16,
            "xor32" => Xor32,
            "identity" => Identity,
            "xxh64" => Xxh64,
            "bmv2_hash" => Bmv2Hash,
            "toeplitz" => Toeplitz(ToeplitzKey::default()),
            "round_robin" => RoundRobin(AtomicU64::new(0)),
            "round_robin_consistent" => RoundRobinConsistent(Mutex::new(HashMap::new())),
            "random" => Random(RandomSource::new(0)),
            _ => return None,
        })
    }

    /// The BMv2 JSON name of this algorithm.
    pub fn bmv2_name(&self) -> &'static str {
        use Algorithm::*;
        match self {
            Crc16 => "crc16",
            Crc32 => "crc32",
            CrcCcitt => "crcCCITT",
            Crc8Custom(_) => "crc8_custom",
            Crc16Custom(_) => "crc16_custom",
            Crc32Custom(_) => "crc32_custom",
            Crc64Custom(_) => "crc64_custom",
            Csum16 => "csum16",
            Cksum16 => "cksum16",
            Xor16 => "xor16",
            Xor32 => "xor32",
            Identity => "identity",
            Xxh64 => "xxh64",
            Bmv2Hash => "bmv2_hash",
            Toeplitz(_) => "toeplitz",
            RoundRobin(_) => "round_robin",
            RoundRobinConsistent(_) => "round_robin_consistent",
            Random(_) => "random",
        }
    }

    /// How many low bits of `compute`'s result can be set.
    pub fn output_bits(&self) -> u32 {
        use Algorithm::*;
        match self {
            Crc8Custom(_) => 8,
            Crc16 | CrcCcitt | Crc16Custom(_) | Csum16 | Cksum16 | Xor16 => 16,
            Crc32 | Crc32Custom(_) | Xor32 | Toeplitz(_) => 32,
            Crc64Custom(_)
            | Identity
            | Xxh64
            | Bmv2Hash
            | RoundRobin(_)
            | RoundRobinConsistent(_)
            | Random(_) => 64,
        }
    }

    pub fn compute(&self, input: &[u8]) -> u64 {
        use Algorithm::*;
        match self {
            Crc16 => u64::from(CRC16.checksum(input)),
            Crc32 => u64::from(CRC32.checksum(input)),
            CrcCcitt => u64::from(CRC_CCITT.checksum(input)),
            Crc8Custom(c) | Crc16Custom(c) | Crc32Custom(c) | Crc64Custom(c) => c.compute(input),
            Csum16 | Cksum16 => u64::from(internet_checksum(input)),
            Xor16 => xor_words::<2>(input),
            Xor32 => xor_words::<4>(input),
            Identity => input
                .iter()
                .take(8)
                .fold(0, |acc, &b| (acc << 8) | u64::from(b)),
            Xxh64 | Bmv2Hash => xxhash_rust::xxh64::xxh64(input, 0),
            Toeplitz(k) => u64::from(k.hash(input)),
            RoundRobin(n) => n.fetch_add(1, Ordering::Relaxed),
            RoundRobinConsistent(m) => {
                let mut seen = m.lock().unwrap_or_else(|e| e.into_inner());
                let next = seen.len() as u64;
                *seen.entry(input.to_vec()).or_insert(next)
            }
            Random(r) => r.next(),
        }
    }

    /// Replaces the parameters of a custom CRC of any width.
    pub fn set_crc_parameters(&mut self, params: CrcParams) -> Result<(), HashError> {
        use Algorithm::*;
        match self {
            Crc8Custom(c) | Crc16Custom(c) | Crc32Custom(c) | Crc64Custom(c) => {
                *c = CustomCrc::new(c.width(), params)?;
                Ok(())
            }
            other => Err(HashError::WrongType {
                command: "set_crc_parameters",
                expected: "crc*_custom",
                got: other.bmv2_name(),
            }),
        }
    }

    /// bmv2's runtime command `set_crc16_parameters`: only for `crc16_custom`.
    pub fn set_crc16_parameters(&mut self, params: CrcParams) -> Result<(), HashError> {
        match self {
            Algorithm::Crc16Custom(_) => self.set_crc_parameters(params),
            other => Err(HashError::WrongType {
                command: "set_crc16_parameters",
                expected: "crc16_custom",
                got: other.bmv2_name(),
            }),
        }
    }

    /// bmv2's runtime command `set_crc32_parameters`: only for `crc32_custom`.
    pub fn set_crc32_parameters(&mut self, params: CrcParams) -> Result<(), HashError> {
        match self {
            Algorithm::Crc32Custom(_) => self.set_crc_parameters(params),
            other => Err(HashError::WrongType {
                command: "set_crc32_parameters",
                expected: "crc32_custom",
                got: other.bmv2_name(),
            }),
        }
    }

    /// Replaces the key of a `toeplitz` calculation (bmv2 `ToeplitzMgr::update_key`).
    pub fn set_toeplitz_key(&mut self, key: &[u8]) -> Result<(), HashError> {
        match self {
            Algorithm::Toeplitz(k) => {
                *k = ToeplitzKey::new(key)?;
                Ok(())
            }
            other => Err(HashError::WrongType {
                command: "set_toeplitz_key",
                expected: "toeplitz",
                got: other.bmv2_name(),
            }),
        }
    }
}

/// RFC 1071 ones' complement sum of big-endian 16-bit words (an odd last byte padded with a
/// zero byte), complemented.
fn internet_checksum(input: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut words = input.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// XOR of `N`-byte big-endian words, the last one zero-padded at its end.
fn xor_words<const N: usize>(input: &[u8]) -> u64 {
    let word = |chunk: &[u8]| {
        let mut w = [0u8; 8];
        w[8 - N..8 - N + chunk.len()].copy_from_slice(chunk);
        u64::from_be_bytes(w)
    };
    let mut chunks = input.chunks_exact(N);
    let mut acc = 0;
    for c in &mut chunks {
        acc ^= word(c);
    }
    match chunks.remainder() {
        [] => acc,
        rest => acc ^ word(rest),
    }
}

/// State for `random`: SplitMix64 over an atomic counter, so concurrent callers each get a
/// distinct value and a given seed always yields the same sequence.
#[derive(Debug)]
pub struct RandomSource(AtomicU64);

impl RandomSource {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    pub fn new(seed: u64) -> Self {
        RandomSource(AtomicU64::new(seed))
    }

    pub fn next(&self) -> u64 {
        let mut z = self
            .0
            .fetch_add(Self::GAMMA, Ordering::Relaxed)
            .wrapping_add(Self::GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Clone for RandomSource {
    fn clone(&self) -> Self {
        RandomSource(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}
