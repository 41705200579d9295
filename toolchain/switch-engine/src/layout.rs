//! Header layouts compiled at load: where each field of a header lies in its bytes, so that
//! the parser's extract and the deparser's write of a whole header are one loop over the
//! fields with no per-field width dispatch, slot lookup or packet length check.
//!
//! A header type has a layout when its fields are all fixed and narrow (at most 64 bits) and
//! each lies in the 8 bytes from its first byte (every field of up to 57 bits does, and a
//! wider one when it starts on a byte); its fields' `Phv::narrow` slots are then the header's
//! contiguous slot range, in field order. Other headers (varbits, fields over 64 bits, a
//! field of 58-64 bits off a byte boundary) take the field-by-field path.

/// Where one field lies in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    /// The field's first byte, from the header's start.
    byte: u32,
    /// Its first bit within that byte (0: most significant).
    lead: u8,
    /// Its first bit within its 8-byte word of the header (bytes `8k..8k + 8`).
    word_bit: u8,
    width: u8,
    /// The field ends its word: the deparser stores the word after it.
    ends_word: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    fields: Vec<Pos>,
    /// The header's length in bytes (a partial last byte counts).
    bytes: usize,
    /// Bytes from the header's start that the extract's 8-byte reads touch.
    window: usize,
}

impl Layout {
    /// The layout of a header whose fields have these widths, in order; `None` when a field
    /// does not fit it (see the module's comment).
    pub fn new(widths: &[u32]) -> Option<Layout> {
        let mut fields = Vec::with_capacity(widths.len());
        let mut bit = 0usize;
        let mut window = 0;
        for &w in widths {
            let lead = bit % 8;
            if w == 0 || w > 64 || lead + w as usize > 64 {
                return None;
            }
            let word_bit = bit % 64;
            fields.push(Pos {
                byte: u32::try_from(bit / 8).ok()?,
                lead: lead as u8,
                word_bit: word_bit as u8,
                width: w as u8,
                ends_word: word_bit + w as usize >= 64,
            });
            window = window.max(bit / 8 + 8);
            bit += w as usize;
        }
        Some(Layout {
            fields,
            bytes: bit.div_ceil(8),
            window,
        })
    }

    /// The header's length in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reads the header's fields from the start of `data` into `slots` (its slot range, one
    /// per field). False, with nothing read, when `data` ends before the last field's 8-byte
    /// window: the caller reads field by field then (a header at the very end of a packet).
    #[inline]
    pub fn extract(&self, data: &[u8], slots: &mut [u64]) -> bool {
        let Some(data) = data.get(..self.window) else {
            return false;
        };
        for (p, s) in self.fields.iter().zip(slots) {
            let b = p.byte as usize;
            let w = u64::from_be_bytes(data[b..b + 8].try_into().unwrap_or_default());
            *s = (w << p.lead) >> (64 - u32::from(p.width));
        }
        true
    }

    /// Writes the header's fields from `slots` at byte `at` of `out`, which holds the
    /// header's bytes from there; a partial last byte's padding becomes zeros and every byte
    /// outside the header keeps its value. Each 8-byte word of the header is put together in
    /// a register and stored once: no store's bytes are read back by the next field's load,
    /// which the CPU would not forward from a partly overlapping store.
    #[inline]
    pub fn deparse(&self, slots: &[u64], out: &mut [u8], at: usize) {
        let mut word = 0u64;
        let mut o = at;
        for (p, &v) in self.fields.iter().zip(slots) {
            // The field's bits at the top of a word (the bits above its width drop out), then
            // moved to its place: what passes the word's end starts the next word.
            let top = v << (64 - u32::from(p.width));
            word |= top >> p.word_bit;
            if p.ends_word {
                out[o..o + 8].copy_from_slice(&word.to_be_bytes());
                o += 8;
                word = (top << 1) << (63 - p.word_bit);
            }
        }
        let rest = at + self.bytes - o;
        if rest == 0 {
            return;
        }
        // The last word's bytes under a mask when 8 bytes follow (a payload or the
        // deparser's slack), else one by one.
        if let Some(w) = out.get_mut(o..o + 8) {
            let keep = u64::MAX.checked_shr(8 * rest as u32).unwrap_or(0);
            let old = u64::from_be_bytes((&*w).try_into().unwrap_or_default());
            w.copy_from_slice(&((old & keep) | word).to_be_bytes());
        } else {
            for (b, x) in out[o..o + rest].iter_mut().zip(word.to_be_bytes()) {
                *b = x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Bit `i` of `b`, counted from the first byte's most significant bit.
    fn bit(b: &[u8], i: usize) -> u64 {
        u64::from(b[i / 8] >> (7 - i % 8)) & 1
    }

    fn set_bit(b: &mut [u8], i: usize, v: u64) {
        let m = 0x80u8 >> (i % 8);
        if v & 1 == 1 {
            b[i / 8] |= m;
        } else {
            b[i / 8] &= !m;
        }
    }

    /// Random field widths of 1-64 bits, small ones as often as large (headers are mostly
    /// flags, nibbles and bytes); now and then a header without fields.
    fn widths(rng: &mut Rng) -> Vec<u32> {
        let n = rng.below(24);
        (0..n)
            .map(|_| match rng.below(3) {
                0 => 1 + rng.below(8) as u32,
                1 => 8 * (1 + rng.below(8) as u32),
                _ => 1 + rng.below(64) as u32,
            })
            .collect()
    }

    /// Every field of every random header, extracted at a random offset of random bytes
    /// (the buffer ending right after the header, or with room behind it) and written back
    /// over other random bytes, against the bit-by-bit definition: the field's value is its
    /// bits in order; the write puts the value's bits at the field's and zero in the last
    /// byte's padding, and changes no bit outside the header.
    #[test]
    fn layouts_read_and_write_what_bit_by_bit_does() {
        let mut rng = Rng(0x6a09_e667_f3bc_c908);
        let (mut read, mut fell_back, mut written, mut none) = (0usize, 0usize, 0usize, 0usize);
        for _ in 0..20_000 {
            let ws = widths(&mut rng);
            let bits: usize = ws.iter().map(|&w| w as usize).sum();
            let fits = {
                let mut at = 0;
                ws.iter().all(|&w| {
                    let ok = at % 8 + w as usize <= 64;
                    at += w as usize;
                    ok
                })
            };
            let Some(l) = Layout::new(&ws) else {
                assert!(!fits, "{ws:?} has no layout");
                none += 1;
                continue;
            };
            assert!(fits, "{ws:?} has a layout");
            assert_eq!(l.bytes(), bits.div_ceil(8));
            let start = rng.below(16);
            let tail = [0, 1, 7, 8, 20][rng.below(5)];
            let len = start + bits.div_ceil(8) + tail;
            let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let mut slots = vec![0x5a5a_5a5a_5a5a_5a5a; ws.len()];
            if l.extract(&data[start..], &mut slots) {
                let mut b = start * 8;
                for (k, &w) in ws.iter().enumerate() {
                    let want = (b..b + w as usize).fold(0, |a, i| (a << 1) | bit(&data, i));
                    assert_eq!(slots[k], want, "{ws:?} field {k} at byte {start}");
                    b += w as usize;
                }
                read += 1;
            } else {
                assert!(
                    start + l.window > len,
                    "{ws:?}: room for the windows, no read"
                );
                assert!(slots.iter().all(|&s| s == 0x5a5a_5a5a_5a5a_5a5a));
                fell_back += 1;
            }
            // Values with bits above their width: the write must drop them.
            let values: Vec<u64> = ws.iter().map(|_| rng.next()).collect();
            let mut out = data.clone();
            l.deparse(&values, &mut out, start);
            let mut want = data.clone();
            let mut b = start * 8;
            for (k, &w) in ws.iter().enumerate() {
                for i in 0..w as usize {
                    set_bit(&mut want, b + i, values[k] >> (w as usize - 1 - i));
                }
                b += w as usize;
            }
            while b % 8 != 0 {
                set_bit(&mut want, b, 0);
                b += 1;
            }
            assert_eq!(out, want, "{ws:?} written at byte {start} of {len}");
            written += 1;
        }
        assert!(
            read > 5000 && fell_back > 500 && written > 10_000 && none > 100,
            "{read} read, {fell_back} left to the slow path, {written} written, {none} without a layout"
        );
    }
}
