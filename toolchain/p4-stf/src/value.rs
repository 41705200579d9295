//! Unsigned integers of any width, as P4 fields, keys and action parameters need.

use std::fmt;

/// A non-negative integer of arbitrary size, stored big-endian without leading zero bytes.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Value {
    bytes: Vec<u8>,
}

impl Value {
    pub fn zero() -> Value {
        Value::default()
    }

    pub fn from_u128(v: u128) -> Value {
        Value::from_be_bytes(&v.to_be_bytes())
    }

    pub fn from_be_bytes(bytes: &[u8]) -> Value {
        let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
        Value {
            bytes: bytes[first..].to_vec(),
        }
    }

    /// All ones in the low `width` bits.
    pub fn ones(width: u32) -> Value {
        let mut bytes = vec![0xff; width.div_ceil(8) as usize];
        if width % 8 != 0 {
            bytes[0] = (1u8 << (width % 8)) - 1;
        }
        Value::from_be_bytes(&bytes)
    }

    /// `self * factor + addend`, for building a number digit by digit in any base.
    pub(crate) fn mul_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for byte in self.bytes.iter_mut().rev() {
            let v = u64::from(*byte) * u64::from(factor) + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
        while carry != 0 {
            self.bytes.insert(0, carry as u8);
            carry >>= 8;
        }
        let first = self
            .bytes
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(self.bytes.len());
        self.bytes.drain(..first);
    }

    /// Number of significant bits (0 for zero).
    pub fn bits(&self) -> u32 {
        match self.bytes.first() {
            None => 0,
            Some(&b) => (self.bytes.len() as u32 - 1) * 8 + (8 - b.leading_zeros()),
        }
    }

    /// Big-endian bytes, exactly `width.div_ceil(8)` of them, or `None` if the value needs more
    /// than `width` bits. This is the form bmv2 passes keys and parameters in.
    pub fn to_bytes(&self, width: u32) -> Option<Vec<u8>> {
        if self.bits() > width {
            return None;
        }
        let len = width.div_ceil(8) as usize;
        let mut out = vec![0u8; len - self.bytes.len()];
        out.extend_from_slice(&self.bytes);
        Some(out)
    }

    /// The value, if it fits 128 bits.
    pub fn to_u128(&self) -> Option<u128> {
        let bytes = self.to_bytes(128)?;
        let mut raw = [0u8; 16];
        raw.copy_from_slice(&bytes);
        Some(u128::from_be_bytes(raw))
    }

    /// Minimal big-endian bytes (empty for zero).
    pub fn as_be_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Ord for Value {
    /// Numeric order: without leading zeros, a longer byte string is a larger number.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes
            .len()
            .cmp(&other.bytes.len())
            .then_with(|| self.bytes.cmp(&other.bytes))
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bytes.is_empty() {
            return f.write_str("0x0");
        }
        f.write_str("0x")?;
        for (i, b) in self.bytes.iter().enumerate() {
            if i == 0 {
                write!(f, "{b:x}")?;
            } else {
                write!(f, "{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_sizes_values() {
        let mut v = Value::zero();
        for d in [
            1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2,
        ] {
            v.mul_add(10, d);
        }
        assert_eq!(v.to_u128(), Some(1_234_567_890_123_456_789_012));
        assert_eq!(v.bits(), 71);
        assert_eq!(Value::from_u128(0x1ff).to_bytes(9), Some(vec![1, 0xff]));
        assert_eq!(Value::from_u128(0x200).to_bytes(9), None);
        assert_eq!(Value::zero().to_bytes(12), Some(vec![0, 0]));
        assert_eq!(Value::ones(12).to_string(), "0xfff");
        assert_eq!(Value::ones(16).to_string(), "0xffff");
        assert_eq!(
            Value::from_be_bytes(&[0, 0, 0x0a, 0x01]).to_string(),
            "0xa01"
        );
        assert!(Value::from_u128(0x100) > Value::from_u128(0xff));
        assert!(Value::from_u128(0x1234) < Value::from_u128(0x1235));
        assert!(Value::zero() < Value::from_u128(1));
    }
}
