//! Packet processing: parser, checksums, match-action pipelines, primitives, deparser.

use crate::compile::{narrow_arg, Code, KeyCopy, KeyLayout, Op, MAX_ACTION_STEPS};
use crate::eval::{eval, eval_bool, eval_u32, eval_u64, Ctx};
use crate::expr::{Arg, Ex, FieldLoc, HRef, K};
use crate::phv::Phv;
use crate::program::*;
use crate::state::{ActionData, EntryVal, Ext, Runtime, TableState};
use crate::value::{get_bits, get_wide, mask64, put_bits, put_wide, sext, Arith};
use num_bigint::BigInt;
use switch_tables::{ActionProfile, EntryHandle, Table, MAX_PACKED_KEY};

/// Parser loops are cut after this many states (bmv2 has no bound; P4 says ParserTimeout).
const MAX_PARSE_STATES: usize = 4096;

/// simple_switch's default drop port (`--drop-port`): the `egress_spec` value `mark_to_drop`
/// writes. The v1model target drops packets whose `egress_spec` equals its configured drop port.
pub const DROP_PORT: u16 = 511;

/// simple_switch's per-packet registers (`RegisterAccess`).
#[derive(Debug, Clone, Default)]
pub struct Regs {
    pub clone: Option<(u32, Option<i64>)>,
    pub resubmit: Option<Option<i64>>,
    pub recirculate: Option<Option<i64>>,
    pub digest: Option<i64>,
    pub truncate: Option<u32>,
    pub exit: bool,
    /// Packet length at ingress (`PACKET_LENGTH_REG_IDX`).
    pub packet_length: u32,
}

/// A packet in flight: its header vector, its bytes and the parser's cursor.
#[derive(Debug, Clone)]
pub struct Pkt {
    pub phv: Phv,
    /// Bytes as the parser saw them; after deparsing, the bytes to transmit.
    pub data: Vec<u8>,
    /// Bytes consumed by the parser: `data[cursor..]` is the payload.
    pub cursor: usize,
    pub regs: Regs,
    pub scratch: Vec<u8>,
    /// Resubmissions and recirculations so far.
    pub reinjections: u32,
}

impl Pkt {
    pub fn new(prog: &Prog) -> Pkt {
        Pkt {
            phv: Phv::new(prog),
            data: Vec::new(),
            cursor: 0,
            regs: Regs::default(),
            scratch: Vec::new(),
            reinjections: 0,
        }
    }

    pub fn ctx<'a>(&'a self, prog: &'a Prog, args: &'a [Arg]) -> Ctx<'a> {
        Ctx {
            prog,
            phv: &self.phv,
            args,
            data: &self.data,
            cursor: self.cursor,
        }
    }

    pub fn set(&mut self, prog: &Prog, f: Option<u32>, v: u64) {
        if let Some(f) = f {
            self.phv.set_u64(prog, f, v);
        }
    }

    pub fn get(&self, prog: &Prog, f: Option<u32>) -> u64 {
        f.map_or(0, |f| self.phv.get_u64(prog, f))
    }
}

/// Evaluates `e` and stores it into field `f`.
fn assign(prog: &Prog, pkt: &mut Pkt, args: &[Arg], f: u32, e: &Ex) {
    let info = &prog.fields[f as usize];
    // The commonest assignments (a constant, an action parameter, another field) store their
    // value directly: the same result as evaluating the tree, without its dispatch or, for a
    // wide parameter, two conversions of a BigInt through bytes.
    match (&e.k, info.slot) {
        (K::Const(v), Slot::Narrow(d)) => {
            pkt.phv.set_n(d, *v as u64);
            return;
        }
        (K::Field(src), Slot::Narrow(d)) => {
            let s = &prog.fields[*src as usize];
            if let Slot::Narrow(j) = s.slot {
                let raw = pkt.phv.n(j);
                let v = if s.signed {
                    sext(raw, s.width) as u64
                } else {
                    raw
                };
                pkt.phv.set_n(d, v);
                return;
            }
        }
        (K::Field(src), Slot::Wide { .. }) => {
            let s = &prog.fields[*src as usize];
            if let (Slot::Narrow(j), false) = (s.slot, s.signed) {
                pkt.phv.set_u64(prog, f, pkt.phv.n(j));
                return;
            }
        }
        (K::Param(p), slot) => match (args.get(*p as usize), slot) {
            (Some(Arg::N(v)), Slot::Narrow(d)) => {
                pkt.phv.set_n(d, *v);
                return;
            }
            (Some(Arg::W(b)), Slot::Wide { .. }) => {
                pkt.phv.set_big(prog, f, b);
                return;
            }
            _ => {}
        },
        _ => {}
    }
    let narrow = matches!(info.slot, Slot::Narrow(_));
    if narrow && !e.wide {
        let v = eval::<i128>(&pkt.ctx(prog, args), e);
        pkt.phv.set_i128(prog, f, v);
    } else {
        let v = eval::<BigInt>(&pkt.ctx(prog, args), e);
        pkt.phv.set_big(prog, f, &v);
    }
}

// ---- parser ---------------------------------------------------------------------------

fn extract(prog: &Prog, pkt: &mut Pkt, h: u32, vl_bits: Option<u32>) -> Result<(), u32> {
    let info = &prog.headers[h as usize];
    let errors = prog.errors;
    let var = match (info.varbit, vl_bits) {
        (Some(f), Some(n)) => {
            if n > prog.fields[f as usize].width {
                return Err(errors.header_too_short);
            }
            n
        }
        _ => 0,
    };
    let total_bits = info.fixed_bits as usize + var as usize;
    let bytes = total_bits.div_ceil(8);
    if pkt.data.len() < pkt.cursor + bytes {
        return Err(errors.packet_too_short);
    }
    let mut bit = pkt.cursor * 8;
    let slots = &mut pkt.phv.narrow[info.narrow_slots()];
    let laid_out = info
        .layout
        .as_ref()
        .is_some_and(|l| l.extract(&pkt.data[pkt.cursor..], slots));
    let fields = if laid_out { 0 } else { info.nfields };
    for f in info.first_field..info.first_field + fields {
        let fi = &prog.fields[f as usize];
        match fi.slot {
            Slot::Narrow(s) => {
                pkt.phv.set_n(s, get_bits(&pkt.data, bit, fi.width));
                bit += fi.width as usize;
            }
            Slot::Wide { off, len } => {
                let out = &mut pkt.phv.wide[off as usize..(off + len) as usize];
                get_wide(&pkt.data, bit, fi.width, out);
                bit += fi.width as usize;
            }
            Slot::Varbit { off, len, vl } => {
                let n = var.div_ceil(8);
                let region = &mut pkt.phv.wide[off as usize..(off + len) as usize];
                region.fill(0);
                let l = region.len();
                get_wide(&pkt.data, bit, var, &mut region[l - n as usize..]);
                pkt.phv.vl_bits[vl as usize] = var;
                bit += var as usize;
            }
        }
    }
    invalidate_union_siblings(prog, pkt, h);
    pkt.phv.valid[h as usize] = true;
    // A header of whole bytes is, until a store, the bytes it came from (the deparser would
    // write a partial last byte's padding as zeros, not as the next header's bits).
    pkt.phv.src[h as usize] = if total_bits % 8 == 0 {
        pkt.cursor as u32 + 1
    } else {
        0
    };
    pkt.cursor += bytes;
    Ok(())
}

fn extract_target(
    prog: &Prog,
    pkt: &mut Pkt,
    t: &ExtractTarget,
    vl: Option<u32>,
) -> Result<(), u32> {
    match t {
        ExtractTarget::Header(HRef::Static(h)) => extract(prog, pkt, *h, vl),
        ExtractTarget::Header(h) => match pkt.ctx(prog, &[]).header(h) {
            Some(h) => extract(prog, pkt, h, vl),
            None => Err(prog.errors.stack_out_of_bounds),
        },
        ExtractTarget::Stack(s) => {
            let next = pkt.phv.stack_next[*s as usize] as usize;
            let Some(&h) = prog.stacks[*s as usize].headers.get(next) else {
                return Err(prog.errors.stack_out_of_bounds);
            };
            extract(prog, pkt, h, vl)?;
            pkt.phv.stack_next[*s as usize] += 1;
            Ok(())
        }
        ExtractTarget::UnionStack(s, m) => {
            let next = pkt.phv.ustack_next[*s as usize] as usize;
            let Some(&u) = prog.union_stacks[*s as usize].unions.get(next) else {
                return Err(prog.errors.stack_out_of_bounds);
            };
            let Some(&h) = prog.unions[u as usize].headers.get(*m as usize) else {
                return Err(prog.errors.parser_invalid_argument);
            };
            extract(prog, pkt, h, vl)?;
            pkt.phv.ustack_next[*s as usize] += 1;
            Ok(())
        }
    }
}

fn key_bytes(prog: &Prog, pkt: &mut Pkt, parts: &[KeyPart]) -> Result<(), u32> {
    let mut key = std::mem::take(&mut pkt.scratch);
    key.clear();
    for KeyPart::Value(e, w) in parts {
        if let crate::expr::K::Lookahead { offset, width } = e.k {
            let start = pkt.cursor as i64 * 8 + offset;
            if start < 0 || start + i64::from(width) > pkt.data.len() as i64 * 8 {
                pkt.scratch = key;
                return Err(prog.errors.packet_too_short);
            }
        }
        let n = w.div_ceil(8) as usize;
        let ctx = pkt.ctx(prog, &[]);
        if *w <= 64 && !e.wide {
            let v = eval::<i128>(&ctx, e) as u64 & mask64(*w);
            key.extend_from_slice(&v.to_be_bytes()[8 - n..]);
        } else {
            let v = eval::<BigInt>(&ctx, e);
            let start = key.len();
            key.resize(start + n, 0);
            crate::value::big_to_bytes(&v, &mut key[start..]);
        }
    }
    pkt.scratch = key;
    Ok(())
}

fn matches(key: &[u8], value: &[u8], mask: Option<&[u8]>) -> bool {
    match mask {
        None => key == value,
        Some(m) => key
            .iter()
            .zip(value)
            .zip(m)
            .all(|((k, v), m)| k & m == v & m),
    }
}

/// Runs parser `p`; returns the parser error code (0 for none).
pub fn parse(
    prog: &Prog,
    code: &Code,
    rt: &mut Runtime,
    pkt: &mut Pkt,
    p: usize,
) -> Result<(), u32> {
    let Some(parser) = prog.parsers.get(p) else {
        return Ok(());
    };
    let layouts = &code.parser_keys[p];
    let mut state = parser.init;
    let mut steps = 0;
    while let Some(s) = state {
        steps += 1;
        if steps > MAX_PARSE_STATES {
            return Err(prog.errors.parser_timeout);
        }
        let st = &parser.states[s as usize];
        for op in &st.ops {
            match op {
                ParserOp::Extract(t) => extract_target(prog, pkt, t, None)?,
                ParserOp::ExtractVl(t, e) => {
                    let bits = eval_u32(&pkt.ctx(prog, &[]), e);
                    if bits % 8 != 0 {
                        return Err(prog.errors.parser_invalid_argument);
                    }
                    extract_target(prog, pkt, t, Some(bits))?
                }
                ParserOp::Set(dst, e) => {
                    if let crate::expr::K::Lookahead { offset, width } = e.k {
                        let start = pkt.cursor as i64 * 8 + offset;
                        if start < 0 || start + i64::from(width) > pkt.data.len() as i64 * 8 {
                            return Err(prog.errors.packet_too_short);
                        }
                    }
                    if let Some(f) = pkt.ctx(prog, &[]).field(dst) {
                        assign(prog, pkt, &[], f, e);
                    }
                }
                ParserOp::Verify(c, e) => {
                    let ctx = pkt.ctx(prog, &[]);
                    if !eval_bool(&ctx, c) {
                        return Err(eval_u32(&ctx, e));
                    }
                }
                ParserOp::Advance(e) => {
                    let bits = eval_u64(&pkt.ctx(prog, &[]), e);
                    if bits % 8 != 0 {
                        return Err(prog.errors.parser_invalid_argument);
                    }
                    let bytes = (bits / 8) as usize;
                    if pkt.data.len().saturating_sub(pkt.cursor) < bytes {
                        return Err(prog.errors.packet_too_short);
                    }
                    pkt.cursor += bytes;
                }
                ParserOp::Primitive(prim) => {
                    run_prim(prog, &mut rt.ext, pkt, prim, &[]);
                }
            }
        }
        if st.transitions.is_empty() {
            break;
        }
        match &layouts[s as usize] {
            Some(layout) => {
                let mut key = std::mem::take(&mut pkt.scratch);
                fill_key(layout, &pkt.phv, &mut key);
                pkt.scratch = key;
            }
            None => key_bytes(prog, pkt, &st.key)?,
        }
        let key = &pkt.scratch[..st.key_bytes.min(pkt.scratch.len())];
        state = None;
        for t in &st.transitions {
            let hit = match &t.matches {
                TransMatch::Default => true,
                TransMatch::Value { value, mask } => matches(key, value, mask.as_deref()),
                TransMatch::Vset { vset, mask } => rt.vsets[*vset as usize]
                    .iter()
                    .any(|v| matches(key, v, mask.as_deref())),
            };
            if hit {
                state = t.next;
                break;
            }
        }
    }
    Ok(())
}

// ---- calculations, checksums ---------------------------------------------------------

fn varbit_bits(prog: &Prog, phv: &Phv, f: u32) -> usize {
    match prog.fields[f as usize].slot {
        Slot::Varbit { vl, .. } => phv.vl_bits[vl as usize] as usize,
        _ => 0,
    }
}

fn push_field(prog: &Prog, phv: &Phv, buf: &mut Vec<u8>, bits: &mut usize, f: u32) {
    let fi = &prog.fields[f as usize];
    let w = match fi.slot {
        Slot::Varbit { vl, .. } => phv.vl_bits[vl as usize] as usize,
        _ => fi.width as usize,
    };
    let need = (*bits + w).div_ceil(8);
    if buf.len() < need {
        buf.resize(need, 0);
    }
    write_field(prog, phv, buf, bits, f);
}

/// Writes a field at bit offset `bits` of `buf`, which is already long enough.
fn write_field(prog: &Prog, phv: &Phv, buf: &mut [u8], bits: &mut usize, f: u32) {
    let fi = &prog.fields[f as usize];
    match fi.slot {
        Slot::Narrow(s) => {
            put_bits(buf, *bits, fi.width, phv.n(s));
            *bits += fi.width as usize;
        }
        Slot::Wide { off, len } => {
            put_wide(
                buf,
                *bits,
                fi.width,
                &phv.wide[off as usize..(off + len) as usize],
            );
            *bits += fi.width as usize;
        }
        Slot::Varbit { off, len, vl } => {
            let w = phv.vl_bits[vl as usize];
            let n = w.div_ceil(8);
            put_wide(
                buf,
                *bits,
                w,
                &phv.wide[(off + len - n) as usize..(off + len) as usize],
            );
            *bits += w as usize;
        }
    }
}

/// Builds calculation `c`'s input the way bmv2 does: fields packed bit after bit, invalid
/// headers skipped, the last byte padded with zero bits.
pub fn calc_input(prog: &Prog, pkt: &Pkt, c: &CalcInfo, buf: &mut Vec<u8>) {
    buf.clear();
    let mut bits = 0usize;
    let mut last_header: Option<u32> = None;
    for input in &c.inputs {
        match input {
            CalcInput::Field(f) => {
                let h = prog.fields[*f as usize].header;
                last_header = Some(h);
                if pkt.phv.valid[h as usize] {
                    push_field(prog, &pkt.phv, buf, &mut bits, *f);
                }
            }
            CalcInput::Header(h) => {
                last_header = Some(*h);
                if pkt.phv.valid[*h as usize] {
                    let info = &prog.headers[*h as usize];
                    for f in info.first_field..info.first_field + info.nfields {
                        push_field(prog, &pkt.phv, buf, &mut bits, f);
                    }
                }
            }
            CalcInput::Const { value, bits: w } => {
                buf.resize((bits + *w as usize).div_ceil(8), 0);
                put_wide(buf, bits, *w, value);
                bits += *w as usize;
            }
            CalcInput::Payload => {
                // Headers after the last included one, in deparser order, then the payload.
                if let Some(d) = prog.deparsers.first() {
                    let start = last_header
                        .and_then(|l| d.order.iter().position(|&h| h == l))
                        .map_or(0, |p| p + 1);
                    for &h in &d.order[start..] {
                        if pkt.phv.valid[h as usize] {
                            let info = &prog.headers[h as usize];
                            for f in info.first_field..info.first_field + info.nfields {
                                push_field(prog, &pkt.phv, buf, &mut bits, f);
                            }
                        }
                    }
                }
                bits = bits.div_ceil(8) * 8;
                buf.extend_from_slice(&pkt.data[pkt.cursor.min(pkt.data.len())..]);
                bits += (pkt.data.len().saturating_sub(pkt.cursor)) * 8;
            }
        }
    }
}

pub fn compute_calc(prog: &Prog, pkt: &mut Pkt, c: u32) -> u64 {
    let mut buf = std::mem::take(&mut pkt.scratch);
    let calc = &prog.calcs[c as usize];
    calc_input(prog, pkt, calc, &mut buf);
    let v = calc.algo.compute(&buf);
    pkt.scratch = buf;
    v
}

/// Verifies every checksum marked `verify`; true if one fails.
pub fn verify_checksums(prog: &Prog, code: &Code, pkt: &mut Pkt) -> bool {
    let mut failed = false;
    for (ck, cond) in prog.checksums.iter().zip(&code.checksum_conds) {
        if !ck.verify || cond.as_ref().is_some_and(|c| !c(&pkt.ctx(prog, &[]))) {
            continue;
        }
        let v = compute_calc(prog, pkt, ck.calc);
        let width = prog.fields[ck.target as usize].width;
        if v & mask64(width) != pkt.phv.get_u64(prog, ck.target) {
            failed = true;
        }
    }
    failed
}

pub fn update_checksums(prog: &Prog, code: &Code, pkt: &mut Pkt) {
    for (ck, cond) in prog.checksums.iter().zip(&code.checksum_conds) {
        if !ck.update || cond.as_ref().is_some_and(|c| !c(&pkt.ctx(prog, &[]))) {
            continue;
        }
        let v = compute_calc(prog, pkt, ck.calc);
        // An unchanged checksum leaves its header as it came in (see `Phv::src`).
        if v & mask64(prog.fields[ck.target as usize].width) != pkt.phv.get_u64(prog, ck.target) {
            pkt.phv.set_u64(prog, ck.target, v);
        }
    }
}

// ---- deparser -------------------------------------------------------------------------

/// Serializes valid headers in deparser order followed by the payload, cut to the length a
/// `truncate` asked for; `pkt.data` becomes the packet to transmit.
pub fn deparse(prog: &Prog, pkt: &mut Pkt, d: usize) {
    let cursor = pkt.cursor.min(pkt.data.len());
    let limit = pkt.regs.truncate.map_or(usize::MAX, |t| t as usize);
    let Some(dep) = prog.deparsers.get(d) else {
        pkt.scratch.clear();
        splice_headers(pkt, cursor, limit);
        return;
    };
    let header_bytes = |h: u32| {
        let info = &prog.headers[h as usize];
        let var = info.varbit.map_or(0, |f| varbit_bits(prog, &pkt.phv, f));
        (info.fixed_bits as usize + var).div_ceil(8)
    };
    let total: usize = dep
        .order
        .iter()
        .filter(|&&h| pkt.phv.valid[h as usize])
        .map(|&h| header_bytes(h))
        .sum();
    // Most packets leave with as many header bytes as they came in with: the headers are
    // written over the parsed ones and the payload stays where it is (no copy of a 4 KB frame
    // per hop). Otherwise they are built aside and the payload follows them.
    let mut out = std::mem::take(&mut pkt.scratch);
    let in_place = total == cursor;
    if in_place {
        std::mem::swap(&mut out, &mut pkt.data);
    } else {
        // With 7 bytes of slack every field of at most 57 bits is one load and store.
        out.clear();
        out.resize(total + 7, 0);
    }
    let mut at = 0;
    for &h in &dep.order {
        if !pkt.phv.valid[h as usize] {
            continue;
        }
        let n = header_bytes(h);
        // A header no store has changed is the bytes it was parsed from: in place at the same
        // offset they are already there (no write at all), else they are copied. Output
        // ranges do not overlap, so in place no earlier header has overwritten them.
        if let Some(from) = pkt.phv.parsed_at(h) {
            if in_place && from == at {
                at += n;
                continue;
            }
            if let (false, Some(b)) = (in_place, pkt.data.get(from..from + n)) {
                out[at..at + n].copy_from_slice(b);
                at += n;
                continue;
            }
        }
        let info = &prog.headers[h as usize];
        if let Some(l) = &info.layout {
            l.deparse(&pkt.phv.narrow[info.narrow_slots()], &mut out, at);
            at += n;
            continue;
        }
        // The fields cover the header's bits: only a partial last byte's padding is left to
        // clear (a fresh buffer is zero already).
        if in_place && n * 8 != info.fixed_bits as usize {
            out[at..at + n].fill(0);
        }
        let mut bits = at * 8;
        for f in info.first_field..info.first_field + info.nfields {
            write_field(prog, &pkt.phv, &mut out, &mut bits, f);
        }
        at += n;
    }
    if in_place {
        pkt.scratch = std::mem::replace(&mut pkt.data, out);
        pkt.cursor = 0;
        pkt.data.truncate(limit);
    } else {
        out.truncate(total);
        pkt.scratch = out;
        splice_headers(pkt, cursor, limit);
    }
}

/// Replaces `pkt.data[..cursor]` (the parsed headers) with the bytes in `pkt.scratch`, keeping
/// at most `limit` bytes in all: a PFC frame made from a 4 KB data packet copies 60 bytes,
/// not the payload it then drops.
fn splice_headers(pkt: &mut Pkt, cursor: usize, limit: usize) {
    let mut out = std::mem::take(&mut pkt.scratch);
    let keep = (pkt.data.len() - cursor).min(limit.saturating_sub(out.len()));
    out.extend_from_slice(&pkt.data[cursor..cursor + keep]);
    out.truncate(limit);
    pkt.scratch = std::mem::replace(&mut pkt.data, out);
    pkt.cursor = 0;
}

// ---- primitives -----------------------------------------------------------------------

fn header_of(prog: &Prog, pkt: &Pkt, args: &[Arg], h: &HRef) -> Option<u32> {
    pkt.ctx(prog, args).header(h)
}

fn field_of(prog: &Prog, pkt: &Pkt, args: &[Arg], f: &FieldLoc) -> Option<u32> {
    pkt.ctx(prog, args).field(f)
}

fn set_valid(prog: &Prog, pkt: &mut Pkt, h: u32, valid: bool) {
    if valid && !pkt.phv.valid[h as usize] {
        pkt.phv.zero_header(prog, h);
        invalidate_union_siblings(prog, pkt, h);
    }
    pkt.phv.valid[h as usize] = valid;
}

/// A header union has at most one valid member: validating one invalidates the others.
fn invalidate_union_siblings(prog: &Prog, pkt: &mut Pkt, h: u32) {
    if let Some(u) = prog.headers[h as usize].union {
        for &o in &prog.unions[u as usize].headers {
            if o != h {
                pkt.phv.valid[o as usize] = false;
            }
        }
    }
}

fn push_stack(prog: &Prog, pkt: &mut Pkt, headers: &[u32], next: &mut u32, n: usize) {
    let size = headers.len();
    let n = n.min(size);
    for i in (n..size).rev() {
        pkt.phv.copy_header(prog, headers[i], headers[i - n]);
    }
    for &h in &headers[..n] {
        pkt.phv.valid[h as usize] = false;
    }
    *next = (*next as usize + n).min(size) as u32;
}

fn pop_stack(prog: &Prog, pkt: &mut Pkt, headers: &[u32], next: &mut u32, n: usize) {
    let size = headers.len();
    let n = n.min(size);
    for i in 0..size - n {
        pkt.phv.copy_header(prog, headers[i], headers[i + n]);
    }
    for &h in &headers[size - n..] {
        pkt.phv.valid[h as usize] = false;
    }
    *next = next.saturating_sub(n as u32);
}

fn union_headers(prog: &Prog, us: u32) -> Vec<Vec<u32>> {
    prog.union_stacks[us as usize]
        .unions
        .iter()
        .map(|&u| prog.unions[u as usize].headers.clone())
        .collect()
}

fn length_units(prog: &Prog, pkt: &Pkt, meter: u32) -> u64 {
    match prog.meters[meter as usize].kind {
        p4_bmv2_json::MeterType::Packets => 1,
        p4_bmv2_json::MeterType::Bytes => u64::from(pkt.regs.packet_length),
    }
}

fn format_log(fmt: &str, values: &[String]) -> String {
    let mut out = String::new();
    let mut vals = values.iter();
    let mut rest = fmt;
    while let Some(p) = rest.find("{}") {
        out.push_str(&rest[..p]);
        out.push_str(vals.next().map_or("{}", String::as_str));
        rest = &rest[p + 2..];
    }
    out.push_str(rest);
    out
}

/// Runs action `a`'s compiled steps with action data `args` (a table's entry, an action call).
pub fn run_action(prog: &Prog, code: &Code, ext: &mut Ext, pkt: &mut Pkt, a: u32, args: &[Arg]) {
    let ops = &code.actions[a as usize].ops;
    let prims = &prog.actions[a as usize].prims;
    let mut pc = 0usize;
    let mut steps = 0usize;
    while let Some(op) = ops.get(pc) {
        pc += 1;
        steps += 1;
        if steps > MAX_ACTION_STEPS {
            break;
        }
        match step(prog, ext, pkt, op, args, prims) {
            Ctl::Next => {}
            Ctl::Goto(t) => pc = t,
            Ctl::Exit => return,
        }
    }
}

/// Where the steps go on after one.
enum Ctl {
    Next,
    Goto(usize),
    Exit,
}

/// Runs one of an action's steps with action data `args`; `prims` are the action's
/// primitives. A pipeline's own steps (`Op::Table`, `Branch`, `Call`, `ActionPrim`) are
/// `apply_pipeline`'s.
#[inline(always)]
fn step(prog: &Prog, ext: &mut Ext, pkt: &mut Pkt, op: &Op, args: &[Arg], prims: &[Prim]) -> Ctl {
    let prim = match op {
        Op::Store { slot, value } => {
            let v = value(&pkt.ctx(prog, args));
            pkt.phv.set_n(*slot, v as u64);
            return Ctl::Next;
        }
        Op::StoreField { slot, src } => {
            pkt.phv.set_n(*slot, pkt.phv.n(*src));
            return Ctl::Next;
        }
        Op::StoreConst { slot, value } => {
            pkt.phv.set_n(*slot, *value);
            return Ctl::Next;
        }
        Op::StoreParam { slot, param, prim } => match narrow_arg(args, *param) {
            Some(v) => {
                pkt.phv.set_n(*slot, v);
                return Ctl::Next;
            }
            None => *prim,
        },
        Op::Stores {
            copies,
            consts,
            params,
        } => {
            for &(slot, src) in copies.iter() {
                pkt.phv.set_n(slot, pkt.phv.n(src));
            }
            for &(slot, value) in consts.iter() {
                pkt.phv.set_n(slot, value);
            }
            for &(slot, param, prim) in params.iter() {
                match (narrow_arg(args, param), prims.get(prim as usize)) {
                    (Some(v), _) => pkt.phv.set_n(slot, v),
                    // An assignment: it neither jumps nor exits.
                    (None, Some(p)) => {
                        run_prim(prog, ext, pkt, p, args);
                    }
                    (None, None) => {}
                }
            }
            return Ctl::Next;
        }
        Op::Jump(t) => return Ctl::Goto(*t),
        Op::JumpIfFalse(c, t) => {
            return match c(&pkt.ctx(prog, args)) {
                true => Ctl::Next,
                false => Ctl::Goto(*t),
            }
        }
        Op::SetValid { header, valid } => {
            set_valid(prog, pkt, *header, *valid);
            return Ctl::Next;
        }
        Op::Count { counter, index } => {
            let i = index(&pkt.ctx(prog, args)) as u64 as usize;
            count(ext, pkt, *counter, i);
            return Ctl::Next;
        }
        Op::RegisterRead {
            slot,
            register,
            index,
        } => {
            let i = index(&pkt.ctx(prog, args)) as u64 as usize;
            // Wider register values keep their low bits, as `Phv::set_big` does.
            pkt.phv
                .set_n(*slot, register_read(ext, *register, i) as u64);
            return Ctl::Next;
        }
        Op::RegisterWrite {
            register,
            index,
            value,
            bits,
        } => {
            let ctx = pkt.ctx(prog, args);
            let i = index(&ctx) as u64 as usize;
            let v = value(&ctx).trunc(*bits) as u128;
            register_write(ext, *register, i, v);
            return Ctl::Next;
        }
        Op::Prim(i) => *i,
        Op::Branch { .. } | Op::Table(_) | Op::Call(_) | Op::ActionPrim { .. } => return Ctl::Next,
    };
    match prims
        .get(prim as usize)
        .map(|p| run_prim(prog, ext, pkt, p, args))
    {
        Some(Flow::Exit) => Ctl::Exit,
        _ => Ctl::Next,
    }
}

fn count(ext: &mut Ext, pkt: &Pkt, c: u32, i: usize) {
    match ext.counters[c as usize].get_mut(i) {
        Some(cell) => {
            cell.packets += 1;
            cell.bytes += u64::from(pkt.regs.packet_length);
        }
        None => ext.index_errors += 1,
    }
}

/// A register cell; an index out of range reads 0 (and is counted).
fn register_read(ext: &mut Ext, r: u32, i: usize) -> u128 {
    match ext.registers[r as usize].get(i) {
        Some(&v) => v,
        None => {
            ext.index_errors += 1;
            0
        }
    }
}

fn register_write(ext: &mut Ext, r: u32, i: usize, v: u128) {
    match ext.registers[r as usize].get_mut(i) {
        Some(cell) => *cell = v,
        None => ext.index_errors += 1,
    }
}

/// What follows a primitive.
enum Flow {
    Next,
    Exit,
}

/// Runs one primitive with action data `args` (the interpreter: `compile.rs` runs the
/// stores it covers itself, and every jump: one here goes nowhere, as in a parser).
fn run_prim(prog: &Prog, ext: &mut Ext, pkt: &mut Pkt, p: &Prim, args: &[Arg]) -> Flow {
    match p {
        Prim::Assign(dst, e) => {
            if let Some(f) = field_of(prog, pkt, args, dst) {
                assign(prog, pkt, args, f, e);
            }
        }
        Prim::AssignVl(dst, src) => {
            if let (Some(d), Some(s)) = (
                field_of(prog, pkt, args, dst),
                field_of(prog, pkt, args, src),
            ) {
                pkt.phv.copy_field(prog, d, s);
            }
        }
        Prim::AssignHeader(dst, src) => {
            if let (Some(d), Some(s)) = (
                header_of(prog, pkt, args, dst),
                header_of(prog, pkt, args, src),
            ) {
                pkt.phv.copy_header(prog, d, s);
            }
        }
        Prim::AssignUnion(dst, src) => {
            let ctx = pkt.ctx(prog, args);
            if let (Some(d), Some(s)) = (ctx.union(dst), ctx.union(src)) {
                let (dh, sh) = (
                    &prog.unions[d as usize].headers,
                    &prog.unions[s as usize].headers,
                );
                for (&a, &b) in dh.iter().zip(sh) {
                    pkt.phv.copy_header(prog, a, b);
                }
            }
        }
        Prim::AssignHeaderStack(d, s) => {
            let (dh, sh) = (
                &prog.stacks[*d as usize].headers,
                &prog.stacks[*s as usize].headers,
            );
            for (&a, &b) in dh.iter().zip(sh) {
                pkt.phv.copy_header(prog, a, b);
            }
            pkt.phv.stack_next[*d as usize] = pkt.phv.stack_next[*s as usize];
        }
        Prim::AssignUnionStack(d, s) => {
            let (du, su) = (union_headers(prog, *d), union_headers(prog, *s));
            for (a, b) in du.iter().zip(&su) {
                for (&x, &y) in a.iter().zip(b) {
                    pkt.phv.copy_header(prog, x, y);
                }
            }
            pkt.phv.ustack_next[*d as usize] = pkt.phv.ustack_next[*s as usize];
        }
        Prim::Push(s, n) | Prim::Pop(s, n) => {
            let n = eval_u32(&pkt.ctx(prog, args), n) as usize;
            let headers = &prog.stacks[*s as usize].headers;
            let mut next = pkt.phv.stack_next[*s as usize];
            if matches!(p, Prim::Push(..)) {
                push_stack(prog, pkt, headers, &mut next, n);
            } else {
                pop_stack(prog, pkt, headers, &mut next, n);
            }
            pkt.phv.stack_next[*s as usize] = next;
        }
        Prim::PushUnion(s, n) | Prim::PopUnion(s, n) => {
            let n = eval_u32(&pkt.ctx(prog, args), n) as usize;
            let unions = union_headers(prog, *s);
            let members = unions.first().map_or(0, Vec::len);
            let mut next = pkt.phv.ustack_next[*s as usize];
            for m in 0..members {
                let column: Vec<u32> = unions.iter().map(|u| u[m]).collect();
                let mut nx = next;
                if matches!(p, Prim::PushUnion(..)) {
                    push_stack(prog, pkt, &column, &mut nx, n);
                } else {
                    pop_stack(prog, pkt, &column, &mut nx, n);
                }
                if m + 1 == members {
                    next = nx;
                }
            }
            pkt.phv.ustack_next[*s as usize] = next;
        }
        Prim::SetValid(h) | Prim::SetInvalid(h) => {
            if let Some(h) = header_of(prog, pkt, args, h) {
                set_valid(prog, pkt, h, matches!(p, Prim::SetValid(_)));
            }
        }
        Prim::MarkToDrop => {
            pkt.set(prog, prog.intr.egress_spec, DROP_PORT.into());
            pkt.set(prog, prog.intr.mcast_grp, 0);
        }
        Prim::Exit => {
            pkt.regs.exit = true;
            return Flow::Exit;
        }
        Prim::Jump(_) | Prim::JumpIfZero(..) => {}
        Prim::HashOffset {
            dst,
            base,
            calc,
            size,
        } => {
            let (b, sz) = {
                let ctx = pkt.ctx(prog, args);
                (eval_u64(&ctx, base), eval_u64(&ctx, size))
            };
            let h = compute_calc(prog, pkt, *calc);
            // bmv2: base + hash % size; a zero size leaves the hash unreduced.
            let v = b.wrapping_add(if sz == 0 { h } else { h % sz });
            if let Some(f) = field_of(prog, pkt, args, dst) {
                pkt.phv.set_u64(prog, f, v);
            }
        }
        Prim::RngUniform(dst, lo, hi) => {
            let (l, h) = {
                let ctx = pkt.ctx(prog, args);
                (eval_u64(&ctx, lo), eval_u64(&ctx, hi))
            };
            let r = ext.next_random();
            let v = if h <= l {
                l
            } else {
                l + r % (h - l).saturating_add(1).max(1)
            };
            if let Some(f) = field_of(prog, pkt, args, dst) {
                pkt.phv.set_u64(prog, f, v);
            }
        }
        Prim::Count(c, idx) => {
            let i = eval_u64(&pkt.ctx(prog, args), idx) as usize;
            count(ext, pkt, *c, i);
        }
        Prim::ExecuteMeter(m, idx, dst) => {
            let i = eval_u64(&pkt.ctx(prog, args), idx) as usize;
            let units = length_units(prog, pkt, *m);
            let now = ext.now_us;
            let colour = match ext.meters[*m as usize].get_mut(i) {
                Some(cell) => cell.execute(units, now),
                None => {
                    ext.index_errors += 1;
                    0
                }
            };
            if let Some(f) = field_of(prog, pkt, args, dst) {
                pkt.phv.set_u64(prog, f, u64::from(colour));
            }
        }
        Prim::RegisterRead(dst, r, idx) => {
            let i = eval_u64(&pkt.ctx(prog, args), idx) as usize;
            let v = register_read(ext, *r, i);
            if let Some(f) = field_of(prog, pkt, args, dst) {
                if v <= u128::from(u64::MAX) {
                    pkt.phv.set_u64(prog, f, v as u64);
                } else {
                    pkt.phv.set_big(prog, f, &BigInt::from(v));
                }
            }
        }
        Prim::RegisterWrite(r, idx, val) => {
            let ctx = pkt.ctx(prog, args);
            let i = eval_u64(&ctx, idx) as usize;
            let width = prog.registers[*r as usize].width;
            let v = if val.wide {
                let b = eval::<BigInt>(&ctx, val).trunc(width.min(128));
                u128::try_from(b).unwrap_or(0)
            } else {
                eval::<i128>(&ctx, val).trunc(width.min(127)) as u128
            };
            register_write(ext, *r, i, v);
        }
        Prim::CloneI2E(session, fl) | Prim::CloneE2E(session, fl) => {
            let ctx = pkt.ctx(prog, args);
            let s = eval_u32(&ctx, session);
            let fl = fl.as_ref().map(|e| eval_u64(&ctx, e) as i64);
            pkt.regs.clone = Some((s, fl));
        }
        Prim::Resubmit(fl) => {
            let fl = fl
                .as_ref()
                .map(|e| eval_u64(&pkt.ctx(prog, args), e) as i64);
            pkt.regs.resubmit = Some(fl);
        }
        Prim::Recirculate(fl) => {
            let fl = fl
                .as_ref()
                .map(|e| eval_u64(&pkt.ctx(prog, args), e) as i64);
            pkt.regs.recirculate = Some(fl);
        }
        Prim::Digest(list) => {
            pkt.regs.digest = Some(eval_u64(&pkt.ctx(prog, args), list) as i64);
        }
        Prim::Truncate(len) => {
            pkt.regs.truncate = Some(eval_u32(&pkt.ctx(prog, args), len));
        }
        Prim::LogMsg(fmt, vals) => {
            let ctx = pkt.ctx(prog, args);
            let values: Vec<String> = vals
                .iter()
                .map(|e| eval::<BigInt>(&ctx, e).to_string())
                .collect();
            if ext.logs.len() < 10_000 {
                ext.logs.push(format_log(fmt, &values));
            }
        }
        Prim::Assert(c) => {
            if !eval_bool(&pkt.ctx(prog, args), c) {
                // bmv2 aborts the switch; a software switch under test counts instead.
                ext.assert_failures += 1;
            }
        }
        Prim::Nop => {}
    }
    Flow::Next
}

// ---- pipelines ------------------------------------------------------------------------

/// Builds a key from its compiled layout (a table's or a parser state's).
#[inline]
pub fn fill_key(layout: &KeyLayout, phv: &Phv, key: &mut Vec<u8>) {
    key.resize(layout.len, 0);
    for c in &layout.copies {
        match *c {
            KeyCopy::Narrow {
                slot,
                at,
                bytes,
                mask,
            } => {
                // Byte by byte: a copy of a run-time length would be a memcpy call.
                let v = phv.n(slot) & mask;
                for (j, b) in key[at as usize..(at + bytes) as usize]
                    .iter_mut()
                    .enumerate()
                {
                    *b = (v >> (8 * (bytes as usize - 1 - j))) as u8;
                }
            }
            KeyCopy::Valid { header, at, mask } => {
                key[at as usize] = u8::from(phv.valid[header as usize]) & mask;
            }
            KeyCopy::Wide {
                off,
                at,
                bytes,
                mask,
            } => {
                let src = &phv.wide[off as usize..(off + bytes) as usize];
                let dst = &mut key[at as usize..(at + bytes) as usize];
                // Masks are rare, and a byte of a u128 mask costs a 128-bit shift.
                if mask == u128::MAX >> (128 - 8 * bytes) {
                    dst.copy_from_slice(src);
                } else {
                    for (j, (b, s)) in dst.iter_mut().zip(src).enumerate() {
                        *b = s & (mask >> (8 * (bytes as usize - 1 - j))) as u8;
                    }
                }
            }
        }
    }
}

/// The key `fill_key` builds, as one big-endian number: for keys of at most
/// `switch_tables::MAX_PACKED_KEY` bytes, which tables probe with as a number.
#[inline]
pub fn packed_key(layout: &KeyLayout, phv: &Phv) -> u128 {
    layout.copies.iter().fold(0u128, |k, c| match *c {
        KeyCopy::Narrow {
            slot, bytes, mask, ..
        } => (k << (8 * bytes)) | u128::from(phv.n(slot) & mask),
        KeyCopy::Valid { header, mask, .. } => {
            (k << 8) | u128::from(u8::from(phv.valid[header as usize]) & mask)
        }
        KeyCopy::Wide {
            off, bytes, mask, ..
        } => {
            let v = phv.wide[off as usize..(off + bytes) as usize]
                .iter()
                .fold(0u128, |v, &b| (v << 8) | u128::from(b));
            // A 16-byte field is the whole key: nothing before it to shift out.
            k.checked_shl(8 * bytes).unwrap_or(0) | (v & mask)
        }
    })
}

/// Looks table `t`'s key up: packed into a number when the compiled layout says the key is
/// short enough (no bytes built at all), else built in `pkt.scratch` from the layout or,
/// for keys the layout does not cover, element by element.
fn table_lookup<'a>(
    prog: &Prog,
    code: &Code,
    pkt: &mut Pkt,
    t: u32,
    table: &'a Table<EntryVal>,
) -> Option<(EntryHandle, &'a EntryVal)> {
    if let Some(layout) = &code.keys[t as usize] {
        if layout.len <= MAX_PACKED_KEY {
            return table.lookup_packed(packed_key(layout, &pkt.phv));
        }
        fill_key(layout, &pkt.phv, &mut pkt.scratch);
        return table.lookup(&pkt.scratch);
    }
    let mut key = std::mem::take(&mut pkt.scratch);
    key.clear();
    for k in &prog.tables[t as usize].keys {
        let start = key.len();
        match &k.src {
            KeySrc::Field(f) => match pkt.ctx(prog, &[]).field(f) {
                Some(f) => pkt.phv.field_bytes(prog, f, &mut key),
                None => key.resize(start + k.width.div_ceil(8) as usize, 0),
            },
            KeySrc::Valid(h) => {
                let v = header_of(prog, pkt, &[], h).is_some_and(|h| pkt.phv.valid[h as usize]);
                key.push(u8::from(v));
            }
        }
        if let Some(m) = &k.mask {
            for (b, m) in key[start..].iter_mut().zip(m) {
                *b &= m;
            }
        }
    }
    pkt.scratch = key;
    table.lookup(&pkt.scratch)
}

/// Resolves an entry's value to the action to run (following members and groups).
fn resolve<'a>(
    prog: &Prog,
    profiles: &'a [ActionProfile<ActionData>],
    pkt: &mut Pkt,
    t: &TableInfo,
    v: &'a EntryVal,
) -> Option<&'a ActionData> {
    match v {
        EntryVal::Act(a) => Some(a),
        EntryVal::Member(m) => profiles.get(t.profile? as usize)?.member(*m),
        EntryVal::Group(g) => {
            let p = t.profile?;
            let hash = match prog.profiles[p as usize].selector {
                Some(c) => compute_calc(prog, pkt, c),
                None => 0,
            };
            let prof = profiles.get(p as usize)?;
            let m = prof.select(*g, hash)?;
            prof.member(m)
        }
    }
}

fn apply_table(
    prog: &Prog,
    code: &Code,
    tables: &[TableState],
    profiles: &[ActionProfile<ActionData>],
    ext: &mut Ext,
    pkt: &mut Pkt,
    t: u32,
) -> Next {
    let ti = &prog.tables[t as usize];
    let ts = &tables[t as usize];
    let mut hit = None;
    if let Some(table) = &ts.table {
        hit = table_lookup(prog, code, pkt, t, table);
    }
    let (action, next) = match hit {
        Some((h, v)) => {
            if let Some(b) = ext
                .hits
                .get_mut(t as usize)
                .and_then(|hits| hits.get_mut(h.0 as usize))
            {
                *b = true;
            }
            if let Some(c) = ti.direct_counter {
                let cells = &mut ext.counters[c as usize];
                if let Some(cell) = cells.get_mut(h.0 as usize) {
                    cell.packets += 1;
                    cell.bytes += u64::from(pkt.regs.packet_length);
                }
            }
            if let Some(m) = ti.direct_meter {
                let units = length_units(prog, pkt, m);
                let now = ext.now_us;
                let colour = ext.meters[m as usize]
                    .get_mut(h.0 as usize)
                    .map_or(0, |cell| cell.execute(units, now));
                if let Some(f) = prog.meters[m as usize].result {
                    pkt.phv.set_u64(prog, f, u64::from(colour));
                }
            }
            let a = resolve(prog, profiles, pkt, ti, v);
            let next = match (ti.hit_miss, a) {
                (Some((h, _)), _) => h,
                (None, Some(a)) => ti.next_of(a.action),
                (None, None) => ti.base_default_next,
            };
            (a, next)
        }
        None => {
            let a = ts
                .default
                .as_ref()
                .and_then(|v| resolve(prog, profiles, pkt, ti, v));
            let next = match (ti.hit_miss, a) {
                (Some((_, m)), _) => m,
                (None, Some(a)) => ti.next_of(a.action),
                (None, None) => ti.base_default_next,
            };
            (a, next)
        }
    };
    if let Some(a) = action {
        run_action(prog, code, ext, pkt, a.action, &a.args);
    }
    next
}

/// Applies a control pipeline to the packet: its steps (`compile::Pipeline`) in order, each
/// at most once (every jump goes forward).
pub fn apply_pipeline(prog: &Prog, code: &Code, rt: &mut Runtime, pkt: &mut Pkt, p: usize) {
    let Some(pipe) = code.pipelines.get(p) else {
        return;
    };
    let ops = &pipe.ops;
    let mut pc = 0usize;
    while let Some(op) = ops.get(pc) {
        pc += 1;
        match op {
            Op::Table(t) => {
                let next = apply_table(prog, code, &rt.tables, &rt.profiles, &mut rt.ext, pkt, *t);
                if pkt.regs.exit {
                    break;
                }
                pc = pipe.step(next);
            }
            Op::Branch { cond, t, f } => {
                pc = if cond(&pkt.ctx(prog, &[])) { *t } else { *f };
            }
            Op::Call(a) => {
                run_action(prog, code, &mut rt.ext, pkt, *a, &[]);
                if pkt.regs.exit {
                    break;
                }
            }
            Op::ActionPrim { action, prim } => {
                let p = &prog.actions[*action as usize].prims[*prim as usize];
                if let Flow::Exit = run_prim(prog, &mut rt.ext, pkt, p, &[]) {
                    break;
                }
            }
            op => match step(prog, &mut rt.ext, pkt, op, &[], &[]) {
                Ctl::Next => {}
                Ctl::Goto(t) => pc = t,
                Ctl::Exit => break,
            },
        }
    }
    pkt.regs.exit = false;
}
