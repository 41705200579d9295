use crate::HashError;

/// Key of a Toeplitz hash as bmv2 keeps it: big-endian 32-bit words, used cyclically so
/// inputs longer than the key still hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToeplitzKey(Vec<u32>);

impl Default for ToeplitzKey {
    /// bmv2's initial key: four zero bytes, which hashes everything to 0.
    fn default() -> Self {
        ToeplitzKey(vec![0])
    }
}

impl ToeplitzKey {
    /// A key of at least 4 bytes, a multiple of 4 (bmv2 refuses others).
    pub fn new(key: &[u8]) -> Result<Self, HashError> {
        if key.is_empty() || key.len() % 4 != 0 {
            return Err(HashError::BadToeplitzKey { len: key.len() });
        }
        Ok(ToeplitzKey(
            key.chunks_exact(4)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
        ))
    }

    /// For every set input bit (MSB first, bit `i` of the input overall), XOR in the 32 key
    /// bits starting at key bit `i`. The input is read as big-endian words, the last one
    /// zero-padded at its end.
    pub fn hash(&self, input: &[u8]) -> u32 {
        let n = self.0.len();
        let mut result = 0u32;
        for (i, chunk) in input.chunks(4).enumerate() {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            let mut bits = u32::from_be_bytes(word);
            let left = u64::from(self.0[i % n]);
            let right = u64::from(self.0[(i + 1) % n]);
            let window = (left << 32) | right;
            while bits != 0 {
                let bit = bits.leading_zeros();
                result ^= (window >> (32 - bit)) as u32;
                bits &= !(0x8000_0000 >> bit);
            }
        }
        result
    }
}
