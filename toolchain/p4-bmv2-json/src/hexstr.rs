//! `hexstr` values: big-endian hexadecimal strings, optionally negative (`-0x1`).

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A hexadecimal constant as written in the JSON. `bytes` keeps the written width (an odd
/// number of digits gets one leading zero nibble), which matters where bmv2 checks byte widths.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct HexStr {
    pub negative: bool,
    pub bytes: Vec<u8>,
}

impl HexStr {
    pub fn from_u64(v: u64) -> HexStr {
        HexStr {
            negative: false,
            bytes: v.to_be_bytes().to_vec(),
        }
    }

    /// Bytes of the magnitude, exactly `len` long (left-padded, or truncated to the low bytes).
    pub fn to_width_bytes(&self, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let n = self.bytes.len().min(len);
        out[len - n..].copy_from_slice(&self.bytes[self.bytes.len() - n..]);
        out
    }

    /// Number of significant bits of the magnitude.
    pub fn significant_bits(&self) -> u32 {
        match self.bytes.iter().position(|&b| b != 0) {
            None => 0,
            Some(i) => (self.bytes.len() - i) as u32 * 8 - self.bytes[i].leading_zeros(),
        }
    }

    /// The value as i128 if it fits.
    pub fn to_i128(&self) -> Option<i128> {
        if self.significant_bits() > 127 {
            return None;
        }
        let mag = self
            .bytes
            .iter()
            .fold(0i128, |acc, &b| (acc << 8) | i128::from(b));
        Some(if self.negative { -mag } else { mag })
    }
}

impl std::str::FromStr for HexStr {
    type Err = String;

    fn from_str(s: &str) -> Result<HexStr, String> {
        let (negative, rest) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let digits = rest
            .strip_prefix("0x")
            .or_else(|| rest.strip_prefix("0X"))
            .unwrap_or(rest);
        if digits.is_empty() {
            return Err(format!("invalid hexstr \"{s}\": no digits"));
        }
        let mut nibbles = Vec::with_capacity(digits.len() + 1);
        if digits.len() % 2 == 1 {
            nibbles.push(0u8);
        }
        for c in digits.chars() {
            let d = c
                .to_digit(16)
                .ok_or_else(|| format!("invalid hexstr \"{s}\": '{c}' is not a hex digit"))?;
            nibbles.push(d as u8);
        }
        let bytes = nibbles.chunks(2).map(|p| (p[0] << 4) | p[1]).collect();
        Ok(HexStr { negative, bytes })
    }
}

impl fmt::Display for HexStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        f.write_str("0x")?;
        if self.bytes.is_empty() {
            return f.write_str("00");
        }
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Serialize for HexStr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HexStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HexStr, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HexStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hexadecimal string such as \"0x0800\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HexStr, E> {
                s.parse().map_err(E::custom)
            }
            // Some producers write small constants as JSON integers.
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HexStr, E> {
                Ok(HexStr::from_u64(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HexStr, E> {
                let mut h = HexStr::from_u64(v.unsigned_abs());
                h.negative = v < 0;
                Ok(h)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let h: HexStr = "0x0aba03".parse().unwrap();
        assert_eq!(h.bytes, vec![0x0a, 0xba, 0x03]);
        assert_eq!(h.to_string(), "0x0aba03");
        let n: HexStr = "-0x1".parse().unwrap();
        assert_eq!(n.to_i128(), Some(-1));
        assert_eq!("0xabc".parse::<HexStr>().unwrap().bytes, vec![0x0a, 0xbc]);
        assert!("0xzz".parse::<HexStr>().is_err());
        assert!("0x".parse::<HexStr>().is_err());
        assert_eq!(h.to_width_bytes(2), vec![0xba, 0x03]);
        assert_eq!(h.significant_bits(), 20);
    }
}
