//! Integer arithmetic of bmv2 expressions: infinite precision in principle, truncated to the
//! destination's width on assignment. Expressions over fields of at most 64 bits run on i128
//! (no allocation); anything wider runs on `BigInt`.

use num_bigint::{BigInt, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};
use std::cmp::Ordering;

pub fn mask64(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Sign-extends the low `width` bits of `v`.
pub fn sext(v: u64, width: u32) -> i128 {
    if width == 0 || width >= 128 {
        return i128::from(v);
    }
    let shift = 128 - width;
    ((i128::from(v)) << shift) >> shift
}

/// Arithmetic shared by the two evaluators.
pub trait Arith: Sized + Clone {
    fn from_i128(v: i128) -> Self;
    fn from_bool(b: bool) -> Self {
        Self::from_i128(i128::from(b))
    }
    fn from_be_bytes(bytes: &[u8], signed: bool) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn rem(self, o: Self) -> Self;
    fn shl(self, n: u32) -> Self;
    fn shr(self, n: u32) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
    fn neg(self) -> Self;
    fn cmp(&self, o: &Self) -> Ordering;
    fn is_zero(&self) -> bool;
    /// The value as a shift amount, width or index (saturating).
    fn to_u32_sat(&self) -> u32;
    /// Low 64 bits, two's complement.
    fn low_u64(&self) -> u64;
    /// Reduces to `width` bits, unsigned (what a field of that width stores).
    fn trunc(self, width: u32) -> Self;
}

impl Arith for i128 {
    fn from_i128(v: i128) -> Self {
        v
    }
    fn from_be_bytes(bytes: &[u8], signed: bool) -> Self {
        let tail = &bytes[bytes.len().saturating_sub(16)..];
        let mut v: i128 = if signed && tail.first().is_some_and(|b| b & 0x80 != 0) {
            -1
        } else {
            0
        };
        for &b in tail {
            v = (v << 8) | i128::from(b);
        }
        v
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn sub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    fn div(self, o: Self) -> Self {
        if o == 0 {
            0
        } else {
            self.wrapping_div(o)
        }
    }
    fn rem(self, o: Self) -> Self {
        if o == 0 {
            0
        } else {
            self.wrapping_rem(o)
        }
    }
    fn shl(self, n: u32) -> Self {
        if n >= 128 {
            0
        } else {
            self << n
        }
    }
    fn shr(self, n: u32) -> Self {
        self >> n.min(127)
    }
    fn and(self, o: Self) -> Self {
        self & o
    }
    fn or(self, o: Self) -> Self {
        self | o
    }
    fn xor(self, o: Self) -> Self {
        self ^ o
    }
    fn not(self) -> Self {
        !self
    }
    fn neg(self) -> Self {
        self.wrapping_neg()
    }
    fn cmp(&self, o: &Self) -> Ordering {
        Ord::cmp(self, o)
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
    fn to_u32_sat(&self) -> u32 {
        (*self).clamp(0, i128::from(u32::MAX)) as u32
    }
    fn low_u64(&self) -> u64 {
        *self as u64
    }
    fn trunc(self, width: u32) -> Self {
        if width >= 128 {
            self
        } else {
            // In u128: at width 127 the i128 mask's `1 << 127` is i128::MIN, and its `- 1`
            // overflows (a panic in a debug build).
            self & ((1u128 << width) - 1) as i128
        }
    }
}

impl Arith for BigInt {
    fn from_i128(v: i128) -> Self {
        BigInt::from(v)
    }
    fn from_be_bytes(bytes: &[u8], signed: bool) -> Self {
        if signed {
            BigInt::from_signed_bytes_be(bytes)
        } else {
            BigInt::from_bytes_be(Sign::Plus, bytes)
        }
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div(self, o: Self) -> Self {
        if Zero::is_zero(&o) {
            BigInt::zero()
        } else {
            self / o
        }
    }
    fn rem(self, o: Self) -> Self {
        if Zero::is_zero(&o) {
            BigInt::zero()
        } else {
            self % o
        }
    }
    fn shl(self, n: u32) -> Self {
        // Bounded so a hostile shift amount cannot exhaust memory.
        self << n.min(4096)
    }
    fn shr(self, n: u32) -> Self {
        self >> n.min(4096)
    }
    fn and(self, o: Self) -> Self {
        self & o
    }
    fn or(self, o: Self) -> Self {
        self | o
    }
    fn xor(self, o: Self) -> Self {
        self ^ o
    }
    fn not(self) -> Self {
        -self - BigInt::one()
    }
    fn neg(self) -> Self {
        -self
    }
    fn cmp(&self, o: &Self) -> Ordering {
        Ord::cmp(self, o)
    }
    fn is_zero(&self) -> bool {
        Zero::is_zero(self)
    }
    fn to_u32_sat(&self) -> u32 {
        if self.is_negative() {
            0
        } else {
            self.to_u32().unwrap_or(u32::MAX)
        }
    }
    fn low_u64(&self) -> u64 {
        let m = BigInt::from(u64::MAX);
        (self & m).to_u64().unwrap_or(0)
    }
    fn trunc(self, width: u32) -> Self {
        let m = (BigInt::one() << width) - BigInt::one();
        self & m
    }
}

/// `two_comp_mod(v, width)`: the signed value of `v`'s low `width` bits.
pub fn two_comp_mod<N: Arith>(v: N, width: u32) -> N {
    if width == 0 {
        return N::from_i128(0);
    }
    let t = v.trunc(width);
    let half = N::from_i128(1).shl(width - 1);
    if t.cmp(&half) != Ordering::Less {
        t.sub(N::from_i128(1).shl(width))
    } else {
        t
    }
}

/// Saturating cast to a signed `width`-bit integer.
pub fn sat_cast<N: Arith>(v: N, width: u32) -> N {
    if width == 0 {
        return N::from_i128(0);
    }
    let max = N::from_i128(1).shl(width - 1).sub(N::from_i128(1));
    let min = N::from_i128(0).sub(N::from_i128(1).shl(width - 1));
    if v.cmp(&max) == Ordering::Greater {
        max
    } else if v.cmp(&min) == Ordering::Less {
        min
    } else {
        v
    }
}

/// Saturating cast to an unsigned `width`-bit integer.
pub fn usat_cast<N: Arith>(v: N, width: u32) -> N {
    let max = N::from_i128(1).shl(width).sub(N::from_i128(1));
    if v.cmp(&max) == Ordering::Greater {
        max
    } else if v.cmp(&N::from_i128(0)) == Ordering::Less {
        N::from_i128(0)
    } else {
        v
    }
}

/// Writes `v` modulo 2^(8*out.len()) as big-endian bytes.
pub fn big_to_bytes(v: &BigInt, out: &mut [u8]) {
    if !v.is_negative() {
        // From the magnitude's digits, least significant first: `to_signed_bytes_be` allocates,
        // and a wide action parameter (an IPv6 next hop) is stored this way on every packet.
        out.fill(0);
        let mut at = out.len();
        for d in v.iter_u64_digits() {
            for b in d.to_le_bytes() {
                let Some(i) = at.checked_sub(1) else {
                    return;
                };
                out[i] = b;
                at = i;
            }
        }
        return;
    }
    let bytes = v.to_signed_bytes_be();
    let n = bytes.len().min(out.len());
    let pad = out.len() - n;
    out[..pad].fill(0xff);
    out[pad..].copy_from_slice(&bytes[bytes.len() - n..]);
}

/// Reads `width` bits at bit offset `off` of `data` (big-endian bit order), `width <= 64`.
#[inline]
pub fn get_bits(data: &[u8], off: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    // One unaligned load when 8 bytes follow the field's first byte (a field of at most 57
    // bits fits in them at any bit offset): parsing reads every field of every header here.
    if let Some(w) = data.get(off / 8..off / 8 + 8).filter(|_| width <= 57) {
        let w = u64::from_be_bytes(w.try_into().unwrap_or_default());
        return (w << (off % 8)) >> (64 - width);
    }
    if off % 8 == 0 && width % 8 == 0 {
        let start = off / 8;
        return data[start..start + width as usize / 8]
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    }
    let start = off / 8;
    let shift = off % 8;
    let nbytes = (shift + width as usize).div_ceil(8);
    let mut acc: u128 = 0;
    for &b in &data[start..start + nbytes] {
        acc = (acc << 8) | u128::from(b);
    }
    let drop = nbytes * 8 - shift - width as usize;
    ((acc >> drop) as u64) & mask64(width)
}

/// Writes the low `width` bits of `v` at bit offset `off` of `buf`, `width <= 64`.
#[inline]
pub fn put_bits(buf: &mut [u8], off: usize, width: u32, v: u64) {
    if width == 0 {
        return;
    }
    // The bytes around the field are read and written back unchanged (see `get_bits`).
    if let Some(w) = buf.get_mut(off / 8..off / 8 + 8).filter(|_| width <= 57) {
        let shift = 64 - off % 8 - width as usize;
        let m = mask64(width) << shift;
        let old = u64::from_be_bytes((&*w).try_into().unwrap_or_default());
        w.copy_from_slice(&((old & !m) | ((v << shift) & m)).to_be_bytes());
        return;
    }
    if off % 8 == 0 && width % 8 == 0 {
        // Byte by byte rather than a variable-length copy_from_slice (a memcpy call).
        let n = width as usize / 8;
        for (k, b) in buf[off / 8..off / 8 + n].iter_mut().enumerate() {
            *b = (v >> (8 * (n - 1 - k))) as u8;
        }
        return;
    }
    let start = off / 8;
    let shift = off % 8;
    let nbytes = (shift + width as usize).div_ceil(8);
    let drop = nbytes * 8 - shift - width as usize;
    let m = u128::from(mask64(width)) << drop;
    let mut acc: u128 = 0;
    for &b in &buf[start..start + nbytes] {
        acc = (acc << 8) | u128::from(b);
    }
    acc = (acc & !m) | ((u128::from(v) << drop) & m);
    for i in (0..nbytes).rev() {
        buf[start + i] = acc as u8;
        acc >>= 8;
    }
}

/// Copies `width` bits from bit offset `off` of `data` into `out` (right-aligned big-endian,
/// `out.len() == width.div_ceil(8)`).
pub fn get_wide(data: &[u8], off: usize, width: u32, out: &mut [u8]) {
    if off % 8 == 0 && width % 8 == 0 {
        out.copy_from_slice(&data[off / 8..off / 8 + out.len()]);
        return;
    }
    out.fill(0);
    let lead = out.len() * 8 - width as usize;
    let mut done = 0u32;
    while done < width {
        let chunk = (width - done).min(8 - ((lead as u32 + done) % 8));
        let v = get_bits(data, off + done as usize, chunk);
        put_bits(out, lead + done as usize, chunk, v);
        done += chunk;
    }
}

/// Inverse of [`get_wide`].
pub fn put_wide(buf: &mut [u8], off: usize, width: u32, src: &[u8]) {
    if off % 8 == 0 && width % 8 == 0 {
        buf[off / 8..off / 8 + src.len()].copy_from_slice(src);
        return;
    }
    let lead = src.len() * 8 - width as usize;
    let mut done = 0u32;
    while done < width {
        let chunk = (width - done).min(8);
        let v = get_bits(src, lead + done as usize, chunk);
        put_bits(buf, off + done as usize, chunk, v);
        done += chunk;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i128_truncates_to_every_width_like_bigint() {
        // A debug build checks overflow: width 127 once overflowed building its mask.
        for v in [-1i128, i128::MIN, i128::MAX, 0x1234_5678_9abc_def0, -0x5555] {
            for w in 0..128 {
                let big = BigInt::from(v).trunc(w);
                assert_eq!(BigInt::from(v.trunc(w)), big, "{v} at width {w}");
            }
        }
    }

    #[test]
    fn bit_access_round_trips() {
        let mut buf = [0u8; 4];
        put_bits(&mut buf, 4, 4, 0x5);
        put_bits(&mut buf, 8, 13, 0x1abc);
        assert_eq!(get_bits(&buf, 4, 4), 0x5);
        assert_eq!(get_bits(&buf, 8, 13), 0x1abc);
        let mut w = [0u8; 3];
        get_wide(&buf, 4, 20, &mut w);
        assert_eq!(w, [0x05, 0xd5, 0xe0]);
        let mut back = [0u8; 4];
        put_wide(&mut back, 4, 20, &w);
        assert_eq!(&back[..3], &buf[..3]);
    }

    /// Bit `i` of `b`, counted from the first byte's most significant bit.
    fn bit(b: &[u8], i: usize) -> u64 {
        u64::from(b[i / 8] >> (7 - i % 8)) & 1
    }

    #[test]
    fn bit_access_matches_bit_by_bit_at_every_offset_and_width() {
        // Buffers long enough for the one-load path and ending right after the field, where
        // the bytes are read one by one; each against the bit-by-bit definition.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let pattern: Vec<u8> = (0..24)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for width in 0..=64u32 {
            for off in 0..=64usize {
                for len in [(off + width as usize).div_ceil(8), 24] {
                    let data = &pattern[..len];
                    let want = (off..off + width as usize).fold(0, |a, i| (a << 1) | bit(data, i));
                    assert_eq!(
                        get_bits(data, off, width),
                        want,
                        "get {off}+{width} of {len}"
                    );
                    let v = !want & mask64(width);
                    let mut buf = data.to_vec();
                    put_bits(&mut buf, off, width, v | !mask64(width));
                    for i in 0..len * 8 {
                        let f = i.wrapping_sub(off);
                        let expect = if f < width as usize {
                            (v >> (width as usize - 1 - f)) & 1
                        } else {
                            bit(data, i)
                        };
                        assert_eq!(bit(&buf, i), expect, "put {off}+{width} of {len}: bit {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn big_to_bytes_is_the_low_bytes_of_the_twos_complement() {
        let values = [
            BigInt::from(0),
            BigInt::from(0x1234),
            BigInt::from(u64::MAX),
            BigInt::from(u128::MAX) << 8 | BigInt::from(0xab),
            BigInt::from(-1),
            BigInt::from(-0x1234),
        ];
        for v in &values {
            for len in [1, 2, 8, 16, 20] {
                // Sign-extended far enough, then the low `len` bytes, as p4c's truncation.
                let mut full = [if v.is_negative() { 0xff } else { 0 }; 40];
                let b = v.to_signed_bytes_be();
                full[40 - b.len()..].copy_from_slice(&b);
                let mut out = vec![0x5a; len];
                big_to_bytes(v, &mut out);
                assert_eq!(out, &full[40 - len..], "{v} in {len} bytes");
            }
        }
    }

    #[test]
    fn bmv2_documented_two_comp_mod() {
        // JSON_format.md: two_comp_mod(257, 8) == 1 and two_comp_mod(-129, 8) == 127.
        assert_eq!(two_comp_mod(257i128, 8), 1);
        assert_eq!(two_comp_mod(-129i128, 8), 127);
        assert_eq!(two_comp_mod(BigInt::from(-129), 8), BigInt::from(127));
        assert_eq!(sat_cast(200i128, 8), 127);
        assert_eq!(usat_cast(-5i128, 8), 0);
        assert_eq!(usat_cast(300i128, 8), 255);
    }
}
