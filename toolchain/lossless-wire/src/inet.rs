//! The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of 16-bit
//! big-endian words, shared by the IPv4 header and TCP (which also sums a pseudo-header); the
//! IPv4 header the RoCEv2 and TCP frames share; big-endian reads for every parser here.

/// The checksum of the concatenation of `parts`, as one byte stream: a part of odd length
/// continues into the next (TCP's pseudo-header, header and payload are summed as one).
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    // A byte left over from a part of odd length: the high half of the next word.
    let mut odd: Option<u8> = None;
    for part in parts {
        let mut b: &[u8] = part;
        if let Some(hi) = odd.take() {
            match b.split_first() {
                Some((&lo, rest)) => {
                    sum += u64::from(u16::from_be_bytes([hi, lo]));
                    b = rest;
                }
                None => {
                    odd = Some(hi);
                    continue;
                }
            }
        }
        let mut words = b.chunks_exact(2);
        for w in &mut words {
            sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        odd = words.remainder().first().copied();
    }
    if let Some(hi) = odd {
        sum += u64::from(hi) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 header without options: its length.
pub const IPV4_LEN: usize = 20;

/// The fields of an IPv4 header without options that a sender chooses; the rest is fixed
/// (version 4, IHL 5, DF set and no fragment) or derived (total length, checksum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4 {
    pub dscp: u8,
    pub ecn: u8,
    pub id: u16,
    pub ttl: u8,
    pub protocol: u8,
    pub src: [u8; 4],
    pub dst: [u8; 4],
}

impl Ipv4 {
    /// Appends the header for `payload_len` bytes after it, its checksum filled in.
    pub fn write(&self, out: &mut Vec<u8>, payload_len: usize) {
        let at = out.len();
        out.push(0x45);
        out.push((self.dscp << 2) | (self.ecn & 3));
        out.extend_from_slice(&((IPV4_LEN + payload_len) as u16).to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0x00, self.ttl, self.protocol, 0, 0]);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        let sum = checksum(&[&out[at..]]);
        out[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
    }
}

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2, checksum 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&[&data]), !0xddf2);
        // Split anywhere, odd lengths included: the same stream, the same sum.
        for cut in 0..data.len() {
            let (a, b) = data.split_at(cut);
            assert_eq!(checksum(&[a, &[], b]), !0xddf2, "cut at {cut}");
        }
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(checksum(&[&[0x12, 0x34, 0x56]]), !(0x1234u16 + 0x5600));
    }
}
