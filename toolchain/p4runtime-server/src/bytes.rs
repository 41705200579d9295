//! P4Runtime byte strings (spec 8.4): servers send the canonical form (no leading zero bytes) and
//! accept it or the value padded to the field's `ceil(width / 8)` bytes, as clients such as
//! p4runtime-shell send them; engine values are padded.

use std::fmt::Display;

/// A P4Runtime byte string the server cannot take as a `width`-bit value; `what` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {problem}")]
pub struct ByteStringError {
    pub what: String,
    pub problem: ByteStringProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ByteStringProblem {
    #[error("empty byte string")]
    Empty,
    /// Padded beyond the value's bytes: `hex` has a leading zero byte too many.
    #[error("byte string {hex} is longer than the {nbytes} bytes of a {width}-bit value")]
    TooLong {
        hex: String,
        nbytes: usize,
        width: u32,
    },
    #[error("value {hex} does not fit in {width} bits")]
    TooWide { hex: String, width: u32 },
}

/// A byte string of at most `width` bits, canonical or padded to its bytes, padded for the engine.
/// `what` names the value in the error only, so it is formatted only on a failure.
pub fn to_engine(v: &[u8], width: u32, what: impl Display) -> Result<Vec<u8>, ByteStringError> {
    let err = |problem| ByteStringError {
        what: what.to_string(),
        problem,
    };
    if v.is_empty() {
        return Err(err(ByteStringProblem::Empty));
    }
    let nbytes = width.div_ceil(8) as usize;
    if v.len() > nbytes && v[0] == 0 {
        return Err(err(ByteStringProblem::TooLong {
            hex: hex(v),
            nbytes,
            width,
        }));
    }
    let bits = significant_bits(v);
    if bits > width as usize {
        return Err(err(ByteStringProblem::TooWide { hex: hex(v), width }));
    }
    let mut out = vec![0u8; nbytes];
    let skip = v.iter().take_while(|b| **b == 0).count();
    let sig = &v[skip..];
    out[nbytes - sig.len()..].copy_from_slice(sig);
    Ok(out)
}

/// Whether a padded value of `width` bits has a bit set past its leading `prefix` bits: an LPM
/// value with host bits.
pub fn bits_past_prefix(v: &[u8], width: u32, prefix: u32) -> bool {
    let end = v.len() as u32 * 8 - width + prefix;
    v.iter().enumerate().any(|(i, b)| {
        let kept = end.saturating_sub(i as u32 * 8).min(8);
        u32::from(*b) & (0xff >> kept) != 0
    })
}

/// The canonical form of an engine value (at least one byte).
pub fn canonical(v: &[u8]) -> Vec<u8> {
    let skip = v
        .iter()
        .take_while(|b| **b == 0)
        .count()
        .min(v.len().saturating_sub(1));
    v[skip..].to_vec()
}

fn significant_bits(v: &[u8]) -> usize {
    match v.iter().position(|b| *b != 0) {
        None => 0,
        Some(i) => (v.len() - i - 1) * 8 + (8 - v[i].leading_zeros() as usize),
    }
}

pub fn hex(v: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in v {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A value with only the top `prefix` bits of `width` kept, padded.
pub fn prefix_mask(width: u32, prefix: u32) -> Vec<u8> {
    let nbytes = width.div_ceil(8) as usize;
    let mut out = vec![0u8; nbytes];
    let lead = nbytes as u32 * 8 - width;
    for bit in lead..lead + prefix {
        out[(bit / 8) as usize] |= 0x80 >> (bit % 8);
    }
    out
}

pub fn all_ones(width: u32) -> Vec<u8> {
    prefix_mask(width, width)
}

/// Bits serialised MSB first, one value after another (controller packet headers).
pub fn pack_bits(fields: &[(Vec<u8>, u32)]) -> Vec<u8> {
    let total: u32 = fields.iter().map(|f| f.1).sum();
    let mut out = vec![0u8; total.div_ceil(8) as usize];
    let mut pos = 0u32;
    for (v, width) in fields {
        let vbits = v.len() as u32 * 8;
        for i in 0..*width {
            // bit i of the field, counted from its MSB, is bit (vbits - width + i) of v
            let src = (vbits + i).checked_sub(*width);
            let set = src.is_some_and(|s| v[(s / 8) as usize] & (0x80 >> (s % 8)) != 0);
            if set {
                out[(pos / 8) as usize] |= 0x80 >> (pos % 8);
            }
            pos += 1;
        }
    }
    out
}

/// The inverse of [`pack_bits`]: values padded to whole bytes, or `None` if `data` is too short.
pub fn unpack_bits(data: &[u8], widths: &[u32]) -> Option<(Vec<Vec<u8>>, usize)> {
    let total: u32 = widths.iter().sum();
    let nbytes = total.div_ceil(8) as usize;
    if data.len() < nbytes {
        return None;
    }
    let mut pos = 0u32;
    let mut out = Vec::new();
    for width in widths {
        let n = width.div_ceil(8);
        let mut v = vec![0u8; n as usize];
        for i in 0..*width {
            if data[(pos / 8) as usize] & (0x80 >> (pos % 8)) != 0 {
                let dst = n * 8 - width + i;
                v[(dst / 8) as usize] |= 0x80 >> (dst % 8);
            }
            pos += 1;
        }
        out.push(v);
    }
    Some((out, nbytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_checks() {
        let wide = to_engine(&[2, 0], 9, "x").unwrap_err();
        assert_eq!(
            wide.problem,
            ByteStringProblem::TooWide {
                hex: "0x0200".into(),
                width: 9
            }
        );
        assert_eq!(wide.to_string(), "x: value 0x0200 does not fit in 9 bits");
        assert_eq!(to_engine(&[1, 0xff], 9, "x"), Ok(vec![1, 0xff]));
        assert_eq!(to_engine(&[0, 1], 16, "x"), Ok(vec![0, 1]));
        assert_eq!(to_engine(&[0, 0x05], 9, "x"), Ok(vec![0, 5]));
        assert_eq!(
            to_engine(&[0, 0, 1], 16, "x").map_err(|e| e.to_string()),
            Err("x: byte string 0x000001 is longer than the 2 bytes of a 16-bit value".into())
        );
        assert_eq!(to_engine(&[0], 16, "x"), Ok(vec![0, 0]));
        assert_eq!(canonical(&[0, 0, 5]), vec![5]);
        assert_eq!(canonical(&[0, 0]), vec![0]);
        assert_eq!(prefix_mask(9, 2), vec![0x01, 0x80]);
    }

    #[test]
    fn host_bits_against_the_prefix_mask() {
        for width in [1, 7, 9, 16, 32] {
            let n = (width as usize).div_ceil(8);
            for prefix in 0..=width {
                let mask = prefix_mask(width, prefix);
                for seed in 0..64u32 {
                    let mut v: Vec<u8> = (0..n)
                        .map(|i| (seed.wrapping_mul(0x9e37_79b9) >> (i * 5)) as u8)
                        .collect();
                    v[0] &= 0xff >> (n as u32 * 8 - width);
                    let expected = v.iter().zip(&mask).any(|(a, m)| a & !m != 0);
                    assert_eq!(
                        bits_past_prefix(&v, width, prefix),
                        expected,
                        "{v:?} /{prefix}"
                    );
                }
            }
        }
        assert!(!bits_past_prefix(&[0x01, 0x80], 9, 2));
        assert!(bits_past_prefix(&[0x01, 0xc0], 9, 2));
    }

    #[test]
    fn bits_round_trip() {
        let fields = vec![(vec![0x01, 0x23], 9), (vec![0x05], 7)];
        let packed = pack_bits(&fields);
        assert_eq!(packed, vec![0x91, 0x85]);
        let (vals, n) = unpack_bits(&packed, &[9, 7]).unwrap_or_default();
        assert_eq!(n, 2);
        assert_eq!(vals, vec![vec![0x01, 0x23], vec![0x05]]);
    }
}
