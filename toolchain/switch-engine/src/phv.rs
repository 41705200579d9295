//! Packet header vector: every field of every header instance in flat arrays, so a packet's
//! state is a few buffers that are reset, not reallocated, between packets.

use crate::expr::{FieldId, HeaderId};
use crate::program::{HeaderInfo, NSlot, Prog, Slot};
use crate::value::big_to_bytes;
use num_bigint::BigInt;

/// `Phv::src` of a header whose fields are all zero and untouched since the last reset.
pub const ZEROED: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub struct Phv {
    pub narrow: Vec<u64>,
    pub wide: Vec<u8>,
    pub valid: Vec<bool>,
    /// By header: 1 + the byte offset in the packet it was extracted from while its bytes there
    /// still hold its fields (no store since), [`ZEROED`] while no store or extract has touched
    /// it since the reset, else 0. The deparser leaves a header parsed from bytes as they came
    /// in instead of writing it field by field, and a reset zeroes only the headers a packet
    /// touched: every store already marks its header here, so the reset costs no extra store.
    pub src: Vec<u32>,
    pub vl_bits: Vec<u32>,
    pub stack_next: Vec<u32>,
    pub ustack_next: Vec<u32>,
}

impl Phv {
    pub fn new(prog: &Prog) -> Phv {
        let mut p = Phv {
            narrow: vec![0; prog.narrow_slots as usize],
            wide: vec![0; prog.wide_bytes as usize],
            valid: vec![false; prog.headers.len()],
            src: vec![ZEROED; prog.headers.len()],
            vl_bits: vec![0; prog.varbit_slots as usize],
            stack_next: vec![0; prog.stacks.len()],
            ustack_next: vec![0; prog.union_stacks.len()],
        };
        p.reset(prog);
        p
    }

    /// The byte offset header `h` was extracted from, if no store has changed it since.
    #[inline]
    pub fn parsed_at(&self, h: HeaderId) -> Option<usize> {
        match self.src[h as usize] {
            0 | ZEROED => None,
            s => Some(s as usize - 1),
        }
    }

    /// A new packet: metadata zero and valid, headers invalid and zero.
    pub fn reset(&mut self, prog: &Prog) {
        // Only the headers the last packet touched: most of a program's headers (and, when
        // the PHV is a few kilobytes, most of its bytes) are never parsed or written.
        for (h, info) in prog.headers.iter().enumerate() {
            self.valid[h] = info.metadata;
            if self.src[h] != ZEROED {
                self.zero_storage(info);
                self.src[h] = ZEROED;
            }
        }
        for x in self.stack_next.iter_mut().chain(&mut self.ustack_next) {
            *x = 0;
        }
    }

    /// Zeroes every metadata field (bmv2 `reset_metadata`), keeping headers.
    pub fn reset_metadata(&mut self, prog: &Prog) {
        for (h, info) in prog.headers.iter().enumerate() {
            if info.metadata {
                self.zero_storage(info);
                self.src[h] = 0;
            }
        }
    }

    /// Zeroes a header's fields without marking it.
    fn zero_storage(&mut self, info: &HeaderInfo) {
        self.narrow[info.narrow_slots()].fill(0);
        let r = &info.wide;
        self.wide[r.start as usize..r.end as usize].fill(0);
        if let Some(vl) = info.vl {
            self.vl_bits[vl as usize] = 0;
        }
    }

    /// Marks field `f`'s header as no longer what the packet's bytes hold.
    #[inline]
    fn written(&mut self, prog: &Prog, f: FieldId) {
        self.src[prog.fields[f as usize].header as usize] = 0;
    }

    pub fn zero_header(&mut self, prog: &Prog, h: HeaderId) {
        self.zero_storage(&prog.headers[h as usize]);
        self.src[h as usize] = 0;
    }

    /// A narrow field's value.
    #[inline(always)]
    pub fn n(&self, s: NSlot) -> u64 {
        self.narrow[s.i as usize]
    }

    /// Stores `v` cut to the field's width and marks its header written.
    #[inline(always)]
    pub fn set_n(&mut self, s: NSlot, v: u64) {
        self.narrow[s.i as usize] = v & s.mask;
        self.src[s.hdr as usize] = 0;
    }

    #[inline]
    pub fn get_u64(&self, prog: &Prog, f: FieldId) -> u64 {
        match prog.fields[f as usize].slot {
            Slot::Narrow(s) => self.n(s),
            Slot::Wide { off, len } | Slot::Varbit { off, len, .. } => {
                let b = &self.wide[off as usize..(off + len) as usize];
                b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
            }
        }
    }

    #[inline]
    pub fn set_u64(&mut self, prog: &Prog, f: FieldId, v: u64) {
        let info = &prog.fields[f as usize];
        match info.slot {
            Slot::Narrow(s) => self.set_n(s, v),
            // Wider than 64 bits: `v` zero-extended, as `set_big` stores it, without a BigInt
            // (the parser copies IPv4 addresses into 128-bit metadata on every packet).
            Slot::Wide { off, len } => {
                self.written(prog, f);
                let out = &mut self.wide[off as usize..(off + len) as usize];
                let (high, low) = out.split_at_mut(out.len().saturating_sub(8));
                high.fill(0);
                low.copy_from_slice(&v.to_be_bytes()[8 - low.len()..]);
            }
            Slot::Varbit { .. } => self.set_big(prog, f, &BigInt::from(v)),
        }
    }

    /// Stores `v` truncated to the field's width (two's complement for negative values).
    #[inline]
    pub fn set_i128(&mut self, prog: &Prog, f: FieldId, v: i128) {
        let info = &prog.fields[f as usize];
        match info.slot {
            Slot::Narrow(s) => self.set_n(s, v as u64),
            _ => self.set_big(prog, f, &BigInt::from(v)),
        }
    }

    pub fn set_big(&mut self, prog: &Prog, f: FieldId, v: &BigInt) {
        self.written(prog, f);
        let info = &prog.fields[f as usize];
        match info.slot {
            Slot::Narrow(s) => {
                let mut b = [0u8; 8];
                big_to_bytes(v, &mut b);
                self.set_n(s, u64::from_be_bytes(b));
            }
            Slot::Wide { off, len } => {
                let out = &mut self.wide[off as usize..(off + len) as usize];
                big_to_bytes(v, out);
                let extra = len * 8 - info.width;
                if extra > 0 {
                    out[0] &= 0xffu8 >> extra;
                }
            }
            Slot::Varbit { off, len, vl } => {
                let out = &mut self.wide[off as usize..(off + len) as usize];
                big_to_bytes(v, out);
                let bits = self.vl_bits[vl as usize];
                let keep = bits.div_ceil(8) as usize;
                let l = out.len();
                out[..l - keep.min(l)].fill(0);
            }
        }
    }

    /// The field's bytes, big-endian, `width.div_ceil(8)` long (varbit: its current width).
    pub fn field_bytes(&self, prog: &Prog, f: FieldId, out: &mut Vec<u8>) {
        let info = &prog.fields[f as usize];
        match info.slot {
            Slot::Narrow(s) => {
                // Byte by byte: a 1-8 byte extend_from_slice of variable length is a memcpy
                // call, and table keys are built from these on every lookup.
                let v = self.n(s);
                for k in (0..info.width.div_ceil(8)).rev() {
                    out.push((v >> (8 * k)) as u8);
                }
            }
            Slot::Wide { off, len } => {
                out.extend_from_slice(&self.wide[off as usize..(off + len) as usize])
            }
            Slot::Varbit { off, len, vl } => {
                let n = self.vl_bits[vl as usize].div_ceil(8);
                out.extend_from_slice(&self.wide[(off + len - n) as usize..(off + len) as usize]);
            }
        }
    }

    /// Copies a field's value and (for varbits) width from another PHV of the same program.
    pub fn copy_field_from(&mut self, prog: &Prog, f: FieldId, src: &Phv) {
        self.written(prog, f);
        match prog.fields[f as usize].slot {
            Slot::Narrow(s) => self.set_n(s, src.n(s)),
            Slot::Wide { off, len } => {
                let r = off as usize..(off + len) as usize;
                self.wide[r.clone()].copy_from_slice(&src.wide[r]);
            }
            Slot::Varbit { off, len, vl } => {
                let r = off as usize..(off + len) as usize;
                self.wide[r.clone()].copy_from_slice(&src.wide[r]);
                self.vl_bits[vl as usize] = src.vl_bits[vl as usize];
            }
        }
    }

    /// Copies field `src_f` into field `dst_f` within this PHV (same width assumed).
    pub fn copy_field(&mut self, prog: &Prog, dst_f: FieldId, src_f: FieldId) {
        self.written(prog, dst_f);
        let (d, s) = (
            prog.fields[dst_f as usize].slot,
            prog.fields[src_f as usize].slot,
        );
        match (d, s) {
            (Slot::Narrow(a), Slot::Narrow(b)) => self.set_n(a, self.n(b)),
            (Slot::Wide { off: a, len }, Slot::Wide { off: b, len: l2 }) if len == l2 => {
                self.wide
                    .copy_within(b as usize..(b + len) as usize, a as usize);
            }
            (
                Slot::Varbit {
                    off: a,
                    len,
                    vl: va,
                },
                Slot::Varbit {
                    off: b,
                    len: l2,
                    vl: vb,
                },
            ) => {
                let n = len.min(l2);
                self.wide.copy_within(
                    (b + l2 - n) as usize..(b + l2) as usize,
                    (a + len - n) as usize,
                );
                self.vl_bits[va as usize] = self.vl_bits[vb as usize].min(n * 8);
            }
            _ => {
                let mut tmp = Vec::new();
                self.field_bytes(prog, src_f, &mut tmp);
                let v = BigInt::from_bytes_be(num_bigint::Sign::Plus, &tmp);
                self.set_big(prog, dst_f, &v);
            }
        }
    }

    /// Copies a whole header (fields and validity) onto another of the same type.
    pub fn copy_header(&mut self, prog: &Prog, dst: HeaderId, src: HeaderId) {
        let (d, s) = (&prog.headers[dst as usize], &prog.headers[src as usize]);
        for i in 0..d.nfields.min(s.nfields) {
            self.copy_field(prog, d.first_field + i, s.first_field + i);
        }
        self.valid[dst as usize] = self.valid[src as usize];
        self.src[dst as usize] = 0;
    }
}
