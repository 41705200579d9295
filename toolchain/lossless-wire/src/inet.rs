//! The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of 16-bit
//! big-endian words, shared by the IPv4 header and TCP (which also sums a pseudo-header).

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
