//! Loader: BMv2 JSON data model -> compiled [`Prog`]. Every semantic error names the JSON path.

use crate::expr::{Ex, FieldLoc, HRef, Op1, Op2, URef, K};
use crate::phv::Slot;
use crate::program::*;
use num_bigint::BigInt;
use p4_bmv2_json as j;
use p4_bmv2_json::{Expr, JsonError, MatchType, ParserOpKind, ParserParam, Tv};
use std::collections::HashMap;

type R<T> = Result<T, JsonError>;

fn err<T>(path: &str, message: impl Into<String>) -> R<T> {
    Err(JsonError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// What an expression may refer to where it is compiled.
#[derive(Clone, Copy)]
struct Scope<'a> {
    params: Option<&'a [(String, u32)]>,
    parser: bool,
}

/// Bounds that keep a hostile program from exhausting memory (bmv2 has none).
const MAX_FIELD_BITS: u32 = 1 << 16;
const MAX_ARRAY_SIZE: u32 = 1 << 24;

fn check_size(size: u32, path: &str) -> R<()> {
    if size > MAX_ARRAY_SIZE {
        return err(
            path,
            format!("size {size} exceeds the supported {MAX_ARRAY_SIZE} cells"),
        );
    }
    Ok(())
}

const NO_SCOPE: Scope<'static> = Scope {
    params: None,
    parser: false,
};

struct L<'a> {
    j: &'a j::Program,
    p: Prog,
    header_by_name: HashMap<&'a str, u32>,
    header_by_id: HashMap<i64, u32>,
    /// Field offsets within a header, by header index.
    field_index: Vec<HashMap<&'a str, u32>>,
    stack_by_name: HashMap<&'a str, u32>,
    union_by_name: HashMap<&'a str, u32>,
    union_by_id: HashMap<i64, u32>,
    /// Member names of each union, in order.
    union_members: Vec<Vec<&'a str>>,
    ustack_by_name: HashMap<&'a str, u32>,
    ustack_type_members: Vec<Vec<&'a str>>,
    aliases: HashMap<&'a str, &'a j::FieldRef>,
    calc_by_name: HashMap<&'a str, u32>,
    counter_by_name: HashMap<&'a str, u32>,
    meter_by_name: HashMap<&'a str, u32>,
    register_by_name: HashMap<&'a str, u32>,
    vset_by_name: HashMap<&'a str, u32>,
    action_by_id: HashMap<i64, u32>,
    node_by_name: HashMap<&'a str, Next>,
}

pub(crate) fn load(jp: &j::Program) -> R<Prog> {
    if let Some(meta) = &jp.meta {
        if meta.version.first().is_some_and(|&v| v != 2) {
            return err(
                "__meta__.version",
                format!(
                    "unsupported BMv2 JSON major version {:?} (expected 2)",
                    meta.version
                ),
            );
        }
    }
    let mut l = L {
        j: jp,
        p: Prog::default(),
        header_by_name: HashMap::new(),
        header_by_id: HashMap::new(),
        field_index: Vec::new(),
        stack_by_name: HashMap::new(),
        union_by_name: HashMap::new(),
        union_by_id: HashMap::new(),
        union_members: Vec::new(),
        ustack_by_name: HashMap::new(),
        ustack_type_members: Vec::new(),
        aliases: HashMap::new(),
        calc_by_name: HashMap::new(),
        counter_by_name: HashMap::new(),
        meter_by_name: HashMap::new(),
        register_by_name: HashMap::new(),
        vset_by_name: HashMap::new(),
        action_by_id: HashMap::new(),
        node_by_name: HashMap::new(),
    };
    l.headers()?;
    l.stacks_unions()?;
    l.errors();
    for (name, target) in &jp.field_aliases {
        l.aliases.insert(name.as_str(), target);
    }
    l.intrinsics();
    l.lists()?;
    l.calculations()?;
    l.stateful()?;
    l.actions()?;
    l.parsers()?;
    l.deparsers()?;
    l.pipelines()?;
    l.checksums()?;
    Ok(l.p)
}

impl<'a> L<'a> {
    fn headers(&mut self) -> R<()> {
        let types: HashMap<&str, &j::HeaderType> = self
            .j
            .header_types
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect();
        for (ti, t) in self.j.header_types.iter().enumerate() {
            if t.length_exp.is_some() {
                return err(
                    &format!("header_types[{ti}].length_exp"),
                    "length_exp (P4_14 variable-length headers) is not supported; P4_16 uses extract_VL",
                );
            }
            for (fi, f) in t.fields.iter().enumerate() {
                let w = match f.width {
                    j::FieldWidth::Bits(b) => b,
                    j::FieldWidth::Variable => t.max_length.unwrap_or(0).saturating_mul(8),
                };
                if w > MAX_FIELD_BITS {
                    return err(
                        &format!("header_types[{ti}].fields[{fi}]"),
                        format!("field width {w} exceeds the supported {MAX_FIELD_BITS} bits"),
                    );
                }
            }
        }
        for (hi, h) in self.j.headers.iter().enumerate() {
            let path = format!("headers[{hi}]");
            let Some(t) = types.get(h.header_type.as_str()) else {
                return err(
                    &format!("{path}.header_type"),
                    format!("unknown header type \"{}\"", h.header_type),
                );
            };
            if self.header_by_name.insert(&h.name, hi as u32).is_some() {
                return err(&path, format!("duplicate header name \"{}\"", h.name));
            }
            self.header_by_id.insert(h.id, hi as u32);
            let fixed_bits: u32 = t
                .fields
                .iter()
                .map(|f| match f.width {
                    j::FieldWidth::Bits(b) => b,
                    j::FieldWidth::Variable => 0,
                })
                .sum();
            let first_field = self.p.fields.len() as u32;
            let mut varbit = None;
            let mut index = HashMap::new();
            for (fi, f) in t.fields.iter().enumerate() {
                let (width, slot) = match f.width {
                    j::FieldWidth::Bits(w) if w <= 64 => {
                        self.p.narrow_slots += 1;
                        (w, Slot::Narrow(self.p.narrow_slots - 1))
                    }
                    j::FieldWidth::Bits(w) => {
                        let off = self.p.wide_bytes;
                        self.p.wide_bytes += w.div_ceil(8);
                        (
                            w,
                            Slot::Wide {
                                off,
                                len: w.div_ceil(8),
                            },
                        )
                    }
                    j::FieldWidth::Variable => {
                        if varbit.is_some() {
                            return err(
                                &format!("header_types[{}].fields[{fi}]", t.id),
                                "a header type has at most one variable-length field",
                            );
                        }
                        let max_bits = t
                            .max_length
                            .map_or(0, |m| m.saturating_mul(8).saturating_sub(fixed_bits));
                        let len = max_bits.div_ceil(8);
                        let off = self.p.wide_bytes;
                        self.p.wide_bytes += len;
                        self.p.varbit_slots += 1;
                        varbit = Some(self.p.fields.len() as u32);
                        (
                            max_bits,
                            Slot::Varbit {
                                off,
                                len,
                                vl: self.p.varbit_slots - 1,
                            },
                        )
                    }
                };
                if f.signed && width < 2 {
                    return err(
                        &format!("header types \"{}\" field \"{}\"", t.name, f.name),
                        "a signed field needs at least 2 bits",
                    );
                }
                index.insert(f.name.as_str(), fi as u32);
                self.p.fields.push(FieldInfo {
                    header: hi as u32,
                    width,
                    signed: f.signed,
                    slot,
                });
            }
            self.field_index.push(index);
            self.p.headers.push(HeaderInfo {
                metadata: h.metadata,
                first_field,
                nfields: t.fields.len() as u32,
                fixed_bits,
                varbit,
                union: None,
            });
        }
        Ok(())
    }

    fn header_ids(&self, ids: &[i64], path: &str) -> R<Vec<u32>> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| match self.header_by_id.get(id) {
                Some(&h) => Ok(h),
                None => err(&format!("{path}[{i}]"), format!("no header with id {id}")),
            })
            .collect()
    }

    fn stacks_unions(&mut self) -> R<()> {
        for (i, s) in self.j.header_stacks.iter().enumerate() {
            let headers =
                self.header_ids(&s.header_ids, &format!("header_stacks[{i}].header_ids"))?;
            self.stack_by_name.insert(&s.name, i as u32);
            self.p.stacks.push(StackInfo { headers });
        }
        let utypes: HashMap<&str, &j::HeaderUnionType> = self
            .j
            .header_union_types
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect();
        for (i, u) in self.j.header_unions.iter().enumerate() {
            let path = format!("header_unions[{i}]");
            let headers = self.header_ids(&u.header_ids, &format!("{path}.header_ids"))?;
            let Some(t) = utypes.get(u.union_type.as_str()) else {
                return err(
                    &format!("{path}.union_type"),
                    format!("unknown header union type \"{}\"", u.union_type),
                );
            };
            self.union_by_name.insert(&u.name, i as u32);
            self.union_by_id.insert(u.id, i as u32);
            self.union_members
                .push(t.headers.iter().map(|(n, _)| n.as_str()).collect());
            for &h in &headers {
                self.p.headers[h as usize].union = Some(i as u32);
            }
            self.p.unions.push(UnionInfo { headers });
        }
        for (i, s) in self.j.header_union_stacks.iter().enumerate() {
            let path = format!("header_union_stacks[{i}]");
            let mut unions = Vec::new();
            for (k, id) in s.header_union_ids.iter().enumerate() {
                match self.union_by_id.get(id) {
                    Some(&u) => unions.push(u),
                    None => {
                        return err(
                            &format!("{path}.header_union_ids[{k}]"),
                            format!("no header union with id {id}"),
                        )
                    }
                }
            }
            let members = match utypes.get(s.union_type.as_str()) {
                Some(t) => t.headers.iter().map(|(n, _)| n.as_str()).collect(),
                None => {
                    return err(
                        &format!("{path}.union_type"),
                        format!("unknown header union type \"{}\"", s.union_type),
                    )
                }
            };
            self.ustack_by_name.insert(&s.name, i as u32);
            self.ustack_type_members.push(members);
            self.p.union_stacks.push(UnionStackInfo { unions });
        }
        Ok(())
    }

    fn errors(&mut self) {
        let mut by_name: HashMap<&str, u32> = HashMap::new();
        for (name, v) in &self.j.errors {
            by_name.insert(name, *v as u32);
            self.p.error_names.insert(*v as u32, name.clone());
        }
        // Core errors the program does not declare get fresh values, as bmv2 does.
        let mut next = self
            .j
            .errors
            .iter()
            .map(|(_, v)| *v as u32 + 1)
            .max()
            .unwrap_or(1);
        let mut core = |name: &str, names: &mut HashMap<u32, String>| -> u32 {
            match by_name.get(name) {
                Some(&v) => v,
                None => {
                    next += 1;
                    names.insert(next - 1, name.to_string());
                    next - 1
                }
            }
        };
        let names = &mut self.p.error_names;
        let no_error = by_name.get("NoError").copied().unwrap_or(0);
        self.p.errors = CoreErrors {
            no_error,
            packet_too_short: core("PacketTooShort", names),
            stack_out_of_bounds: core("StackOutOfBounds", names),
            header_too_short: core("HeaderTooShort", names),
            parser_timeout: core("ParserTimeout", names),
            parser_invalid_argument: core("ParserInvalidArgument", names),
        };
    }

    fn named_field(&self, header: &str, field: &str) -> Option<u32> {
        let h = *self.header_by_name.get(header)?;
        let off = *self.field_index[h as usize].get(field)?;
        Some(self.p.headers[h as usize].first_field + off)
    }

    fn intrinsic(&self, name: &str) -> Option<u32> {
        if let Some(f) = self.aliases.get(name) {
            return self.named_field(&f.0, &f.1);
        }
        let (h, f) = name.split_once('.')?;
        self.named_field(h, f)
    }

    fn intrinsics(&mut self) {
        let i = |s: &str| self.intrinsic(s);
        let pick = |a: &str, b: &str| i(a).or_else(|| i(b));
        self.p.intr = Intrinsics {
            ingress_port: i("standard_metadata.ingress_port"),
            egress_spec: i("standard_metadata.egress_spec"),
            egress_port: i("standard_metadata.egress_port"),
            instance_type: i("standard_metadata.instance_type"),
            packet_length: i("standard_metadata.packet_length"),
            checksum_error: i("standard_metadata.checksum_error"),
            parser_error: i("standard_metadata.parser_error"),
            priority: pick("intrinsic_metadata.priority", "standard_metadata.priority"),
            ingress_global_timestamp: pick(
                "intrinsic_metadata.ingress_global_timestamp",
                "standard_metadata.ingress_global_timestamp",
            ),
            egress_global_timestamp: pick(
                "intrinsic_metadata.egress_global_timestamp",
                "standard_metadata.egress_global_timestamp",
            ),
            mcast_grp: pick(
                "intrinsic_metadata.mcast_grp",
                "standard_metadata.mcast_grp",
            ),
            egress_rid: pick(
                "intrinsic_metadata.egress_rid",
                "standard_metadata.egress_rid",
            ),
            enq_timestamp: pick(
                "queueing_metadata.enq_timestamp",
                "standard_metadata.enq_timestamp",
            ),
            enq_qdepth: pick(
                "queueing_metadata.enq_qdepth",
                "standard_metadata.enq_qdepth",
            ),
            deq_timedelta: pick(
                "queueing_metadata.deq_timedelta",
                "standard_metadata.deq_timedelta",
            ),
            deq_qdepth: pick(
                "queueing_metadata.deq_qdepth",
                "standard_metadata.deq_qdepth",
            ),
            qid: pick("queueing_metadata.qid", "standard_metadata.qid"),
        };
    }

    fn field_ref(&self, f: &j::FieldRef, path: &str) -> R<u32> {
        match self.header_by_name.get(f.0.as_str()) {
            None => err(path, format!("unknown header \"{}\"", f.0)),
            Some(&h) => match self.field_index[h as usize].get(f.1.as_str()) {
                Some(&off) => Ok(self.p.headers[h as usize].first_field + off),
                None => err(path, format!("header \"{}\" has no field \"{}\"", f.0, f.1)),
            },
        }
    }

    fn field_list_elems(&self, elems: &[Tv], path: &str) -> R<Vec<u32>> {
        let mut out = Vec::new();
        for (i, e) in elems.iter().enumerate() {
            let p = format!("{path}[{i}]");
            match e {
                Tv::Field(f) => out.push(self.field_ref(f, &p)?),
                Tv::Header(h) => {
                    let h = self.header(h, &p)?;
                    let info = &self.p.headers[h as usize];
                    out.extend(info.first_field..info.first_field + info.nfields);
                }
                other => {
                    return err(
                        &p,
                        format!("a field list holds fields, not a {}", other.type_name()),
                    )
                }
            }
        }
        Ok(out)
    }

    fn lists(&mut self) -> R<()> {
        for (i, fl) in self.j.field_lists.iter().enumerate() {
            let fields =
                self.field_list_elems(&fl.elements, &format!("field_lists[{i}].elements"))?;
            self.p.field_lists.insert(
                fl.id,
                ListInfo {
                    name: fl.name.clone(),
                    fields,
                },
            );
        }
        for (i, ll) in self.j.learn_lists.iter().enumerate() {
            let fields =
                self.field_list_elems(&ll.elements, &format!("learn_lists[{i}].elements"))?;
            self.p.learn_lists.insert(
                ll.id,
                ListInfo {
                    name: ll.name.clone(),
                    fields,
                },
            );
        }
        Ok(())
    }

    fn header(&self, name: &str, path: &str) -> R<u32> {
        match self.header_by_name.get(name) {
            Some(&h) => Ok(h),
            None => err(path, format!("unknown header \"{name}\"")),
        }
    }

    fn hasher(algo: &str, path: &str) -> R<switch_hash::Algorithm> {
        match switch_hash::Algorithm::from_bmv2_name(algo) {
            Some(h) => Ok(h),
            None => err(path, format!("unknown hash algorithm \"{algo}\"")),
        }
    }

    fn calc_inputs(&self, input: &[Tv], path: &str) -> R<Vec<CalcInput>> {
        let mut out = Vec::new();
        for (i, t) in input.iter().enumerate() {
            let p = format!("{path}[{i}]");
            out.push(match t {
                Tv::Field(f) => CalcInput::Field(self.field_ref(f, &p)?),
                Tv::Header(h) => CalcInput::Header(self.header(h, &p)?),
                Tv::Payload => CalcInput::Payload,
                Tv::SizedHexstr { value, bitwidth } => CalcInput::Const {
                    value: value.to_width_bytes(bitwidth.div_ceil(8) as usize),
                    bits: *bitwidth,
                },
                Tv::Hexstr(value) => CalcInput::Const {
                    bits: value.bytes.len() as u32 * 8,
                    value: value.bytes.clone(),
                },
                other => {
                    return err(
                        &p,
                        format!("calculation input cannot be a {}", other.type_name()),
                    )
                }
            });
        }
        Ok(out)
    }

    fn calculations(&mut self) -> R<()> {
        for (i, c) in self.j.calculations.iter().enumerate() {
            let path = format!("calculations[{i}]");
            let algo = Self::hasher(&c.algo, &format!("{path}.algo"))?;
            let inputs = self.calc_inputs(&c.input, &format!("{path}.input"))?;
            self.calc_by_name.insert(&c.name, i as u32);
            self.p.calc_names.push(c.name.clone());
            self.p.calcs.push(CalcInfo { algo, inputs });
        }
        Ok(())
    }

    fn stateful(&mut self) -> R<()> {
        for (i, c) in self.j.counter_arrays.iter().enumerate() {
            check_size(c.size, &format!("counter_arrays[{i}].size"))?;
            self.counter_by_name.insert(&c.name, i as u32);
            self.p.counters.push(CounterInfo {
                name: c.name.clone(),
                size: c.size as usize,
                direct: None,
            });
        }
        for (i, m) in self.j.meter_arrays.iter().enumerate() {
            check_size(m.size, &format!("meter_arrays[{i}].size"))?;
            let result = match (&m.result_target, m.is_direct) {
                (Some(f), true) => {
                    Some(self.field_ref(f, &format!("meter_arrays[{i}].result_target"))?)
                }
                _ => None,
            };
            if m.rate_count == 0 || m.rate_count > 2 {
                return err(
                    &format!("meter_arrays[{i}].rate_count"),
                    format!("rate_count {} is not supported (1 or 2)", m.rate_count),
                );
            }
            self.meter_by_name.insert(&m.name, i as u32);
            self.p.meters.push(MeterInfo {
                name: m.name.clone(),
                size: m.size as usize,
                kind: m.kind,
                rate_count: m.rate_count as usize,
                direct: None,
                result,
            });
        }
        for (i, r) in self.j.register_arrays.iter().enumerate() {
            check_size(r.size, &format!("register_arrays[{i}].size"))?;
            if r.bitwidth > 128 {
                return err(
                    &format!("register_arrays[{i}].bitwidth"),
                    format!(
                        "registers wider than 128 bits are not supported ({})",
                        r.bitwidth
                    ),
                );
            }
            self.register_by_name.insert(&r.name, i as u32);
            self.p.registers.push(RegisterInfo {
                name: r.name.clone(),
                size: r.size as usize,
                width: r.bitwidth,
            });
        }
        for (i, v) in self.j.parse_vsets.iter().enumerate() {
            self.vset_by_name.insert(&v.name, i as u32);
            self.p.vsets.push(ParseVsetInfo {
                name: v.name.clone(),
                bitwidth: v.compressed_bitwidth,
                max_size: v.max_size.map_or(usize::MAX, |m| m as usize),
                key_widths: vec![v.compressed_bitwidth],
            });
        }
        Ok(())
    }

    // ---- expressions -------------------------------------------------------------------

    fn href(&self, t: &Tv, path: &str, sc: Scope) -> R<HRef> {
        match t {
            Tv::Header(h) | Tv::Regular(h) => Ok(HRef::Static(self.header(h, path)?)),
            Tv::Expression(e) => self.href_expr(e, path, sc),
            other => err(
                path,
                format!("expected a header, found a {}", other.type_name()),
            ),
        }
    }

    fn href_expr(&self, e: &Expr, path: &str, sc: Scope) -> R<HRef> {
        match e {
            Expr::Tv(t) => self.href(t, &format!("{path}.value"), sc),
            Expr::Op(o) => match o.op.as_str() {
                "dereference_header_stack" => {
                    let s = self.stack_of(o.left.as_ref(), &format!("{path}.left"))?;
                    let idx = self.opnd(o.right.as_ref(), &format!("{path}.right"), sc)?;
                    Ok(HRef::Stack(s, Box::new(idx)))
                }
                "access_union_header" => {
                    let u = self.uref_opt(o.left.as_ref(), &format!("{path}.left"), sc)?;
                    let m = self.int_opnd(o.right.as_ref(), &format!("{path}.right"))?;
                    Ok(HRef::UnionMember(u, m))
                }
                other => err(
                    path,
                    format!("operation \"{other}\" does not produce a header"),
                ),
            },
        }
    }

    fn uref_opt(&self, t: Option<&Tv>, path: &str, sc: Scope) -> R<URef> {
        match t {
            Some(t) => self.uref(t, path, sc),
            None => err(path, "missing header union operand"),
        }
    }

    fn uref(&self, t: &Tv, path: &str, sc: Scope) -> R<URef> {
        match t {
            Tv::HeaderUnion(u) => match self.union_by_name.get(u.as_str()) {
                Some(&u) => Ok(URef::Static(u)),
                None => err(path, format!("unknown header union \"{u}\"")),
            },
            Tv::Expression(e) => match e.as_ref() {
                Expr::Tv(t) => self.uref(t, &format!("{path}.value"), sc),
                Expr::Op(o) if o.op == "dereference_union_stack" => {
                    let s = self.ustack_of(o.left.as_ref(), &format!("{path}.value.left"))?;
                    let idx = self.opnd(o.right.as_ref(), &format!("{path}.value.right"), sc)?;
                    Ok(URef::Stack(s, Box::new(idx)))
                }
                Expr::Op(o) => err(
                    path,
                    format!("operation \"{}\" does not produce a header union", o.op),
                ),
            },
            other => err(
                path,
                format!("expected a header union, found a {}", other.type_name()),
            ),
        }
    }

    fn stack_of(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::HeaderStack(s) | Tv::Stack(s)) => match self.stack_by_name.get(s.as_str()) {
                Some(&s) => Ok(s),
                None => err(path, format!("unknown header stack \"{s}\"")),
            },
            Some(other) => err(
                path,
                format!("expected a header stack, found a {}", other.type_name()),
            ),
            None => err(path, "missing header stack operand"),
        }
    }

    fn ustack_of(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::HeaderUnionStack(s)) => match self.ustack_by_name.get(s.as_str()) {
                Some(&s) => Ok(s),
                None => err(path, format!("unknown header union stack \"{s}\"")),
            },
            Some(other) => err(
                path,
                format!(
                    "expected a header union stack, found a {}",
                    other.type_name()
                ),
            ),
            None => err(path, "missing header union stack operand"),
        }
    }

    fn int_opnd(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::Int(v)) if *v >= 0 => Ok(*v as u32),
            Some(Tv::Hexstr(h)) => match h.to_i128() {
                Some(v) if (0..=i128::from(u32::MAX)).contains(&v) => Ok(v as u32),
                _ => err(path, "offset out of range"),
            },
            _ => err(path, "expected a non-negative integer offset"),
        }
    }

    fn opnd(&self, t: Option<&Tv>, path: &str, sc: Scope) -> R<Ex> {
        match t {
            Some(t) => self.expr(t, path, sc),
            None => err(path, "missing operand"),
        }
    }

    fn last_of_stack(s: u32) -> Ex {
        Ex {
            k: K::Bin(
                Op2::Sub,
                Box::new(Ex {
                    k: K::SizeStack(s),
                    wide: false,
                }),
                Box::new(Ex {
                    k: K::Const(1),
                    wide: false,
                }),
            ),
            wide: false,
        }
    }

    fn field_ex(&self, f: u32) -> Ex {
        Ex {
            k: K::Field(f),
            wide: self.p.fields[f as usize].width > 64,
        }
    }

    fn dyn_field_ex(&self, h: HRef, off: u32, width: u32) -> Ex {
        Ex {
            k: K::DynField(h, off),
            wide: width > 64,
        }
    }

    /// Width of field `off` of header(s) reachable through `h` (stack elements share a type).
    fn href_field_width(&self, h: &HRef, off: u32) -> Option<u32> {
        let header = match h {
            HRef::Static(h) => *h,
            HRef::Stack(s, _) => *self.p.stacks[*s as usize].headers.first()?,
            HRef::UnionMember(u, m) => {
                let u = match u {
                    URef::Static(u) => *u,
                    URef::Stack(s, _) => *self.p.union_stacks[*s as usize].unions.first()?,
                };
                *self.p.unions[u as usize].headers.get(*m as usize)?
            }
        };
        let info = &self.p.headers[header as usize];
        (off < info.nfields).then(|| self.p.fields[(info.first_field + off) as usize].width)
    }

    fn stack_field_offset(&self, s: u32, field: &str, path: &str) -> R<u32> {
        let Some(&h) = self.p.stacks[s as usize].headers.first() else {
            return err(path, "empty header stack");
        };
        match self.field_index[h as usize].get(field) {
            Some(&o) => Ok(o),
            None => err(path, format!("stack elements have no field \"{field}\"")),
        }
    }

    fn expr(&self, t: &Tv, path: &str, sc: Scope) -> R<Ex> {
        let c = |v: i128| Ex {
            k: K::Const(v),
            wide: false,
        };
        Ok(match t {
            Tv::Field(f) if f.1 == "$valid$" => Ex {
                k: K::Valid(HRef::Static(self.header(&f.0, path)?)),
                wide: false,
            },
            Tv::Field(f) => self.field_ex(self.field_ref(f, path)?),
            Tv::Hexstr(h) | Tv::SizedHexstr { value: h, .. } => {
                let bits = h.significant_bits();
                match h.to_i128() {
                    Some(v) if bits <= 64 => c(v),
                    _ => {
                        let mag = BigInt::from_bytes_be(num_bigint::Sign::Plus, &h.bytes);
                        Ex {
                            k: K::ConstBig(if h.negative { -mag } else { mag }),
                            wide: true,
                        }
                    }
                }
            }
            Tv::Bool(b) => c(i128::from(*b)),
            Tv::Int(v) => c(i128::from(*v)),
            Tv::Local(i) | Tv::RuntimeData(i) => match sc.params {
                Some(ps) => match ps.get(*i as usize) {
                    Some((_, w)) => Ex {
                        k: K::Param(*i),
                        wide: *w > 64,
                    },
                    None => {
                        return err(
                            path,
                            format!("action has {} parameters, no parameter {i}", ps.len()),
                        )
                    }
                },
                None => return err(path, "action parameters are only available inside actions"),
            },
            Tv::StackField(s, f) => {
                let s = self.stack_of(Some(&Tv::HeaderStack(s.clone())), path)?;
                let off = self.stack_field_offset(s, f, path)?;
                let h = HRef::Stack(s, Box::new(Self::last_of_stack(s)));
                let w = self.href_field_width(&h, off).unwrap_or(0);
                self.dyn_field_ex(h, off, w)
            }
            Tv::UnionStackField(s, member, f) => {
                let us = self.ustack_of(Some(&Tv::HeaderUnionStack(s.clone())), path)?;
                let m = self.ustack_type_members[us as usize]
                    .iter()
                    .position(|n| n == member);
                let Some(m) = m else {
                    return err(
                        path,
                        format!("union stack \"{s}\" has no member \"{member}\""),
                    );
                };
                let last = Ex {
                    k: K::Bin(
                        Op2::Sub,
                        Box::new(Ex {
                            k: K::SizeUnionStack(us),
                            wide: false,
                        }),
                        Box::new(c(1)),
                    ),
                    wide: false,
                };
                let h = HRef::UnionMember(URef::Stack(us, Box::new(last)), m as u32);
                let first_union = self.p.union_stacks[us as usize].unions.first().copied();
                let header =
                    first_union.and_then(|u| self.p.unions[u as usize].headers.get(m).copied());
                let Some(header) = header else {
                    return err(path, "empty header union stack");
                };
                let Some(&off) = self.field_index[header as usize].get(f.as_str()) else {
                    return err(path, format!("member \"{member}\" has no field \"{f}\""));
                };
                let w = self.href_field_width(&h, off).unwrap_or(0);
                self.dyn_field_ex(h, off, w)
            }
            Tv::Lookahead { offset, bitwidth } => {
                if !sc.parser {
                    return err(path, "lookahead is only available in parsers");
                }
                Ex {
                    k: K::Lookahead {
                        offset: *offset,
                        width: *bitwidth,
                    },
                    wide: *bitwidth > 64,
                }
            }
            Tv::Expression(e) => self.expr_of(e, &format!("{path}.value"), sc)?,
            other => {
                return err(
                    path,
                    format!("a {} cannot be used as a value", other.type_name()),
                )
            }
        })
    }

    fn expr_of(&self, e: &Expr, path: &str, sc: Scope) -> R<Ex> {
        let o = match e {
            Expr::Tv(t) => return self.expr(t, path, sc),
            Expr::Op(o) => o,
        };
        let lp = format!("{path}.left");
        let rp = format!("{path}.right");
        let bin = |op: Op2| -> R<Ex> {
            let a = self.opnd(o.left.as_ref(), &lp, sc)?;
            let b = self.opnd(o.right.as_ref(), &rp, sc)?;
            let wide = match op {
                Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le | Op2::And | Op2::Or => {
                    false
                }
                Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast => a.wide,
                _ => a.wide || b.wide,
            };
            Ok(Ex {
                k: K::Bin(op, Box::new(a), Box::new(b)),
                wide,
            })
        };
        let un = |op: Op1| -> R<Ex> {
            let a = self.opnd(o.right.as_ref(), &rp, sc)?;
            let wide = matches!(op, Op1::BNot | Op1::Neg) && a.wide;
            Ok(Ex {
                k: K::Un(op, Box::new(a)),
                wide,
            })
        };
        let narrow = |k: K| Ex { k, wide: false };
        match o.op.as_str() {
            "+" => bin(Op2::Add),
            "-" if o.left.is_none() => un(Op1::Neg),
            "-" => bin(Op2::Sub),
            "*" => bin(Op2::Mul),
            "/" => bin(Op2::Div),
            "%" => bin(Op2::Mod),
            "<<" => bin(Op2::Shl),
            ">>" => bin(Op2::Shr),
            "==" => bin(Op2::Eq),
            "!=" => bin(Op2::Ne),
            ">" => bin(Op2::Gt),
            ">=" => bin(Op2::Ge),
            "<" => bin(Op2::Lt),
            "<=" => bin(Op2::Le),
            "and" => bin(Op2::And),
            "or" => bin(Op2::Or),
            "&" => bin(Op2::BAnd),
            "|" => bin(Op2::BOr),
            "^" => bin(Op2::BXor),
            "two_comp_mod" => bin(Op2::TwoCompMod),
            "sat_cast" => bin(Op2::SatCast),
            "usat_cast" => bin(Op2::UsatCast),
            "not" => un(Op1::Not),
            "~" => un(Op1::BNot),
            "d2b" => un(Op1::D2b),
            "b2d" => un(Op1::B2d),
            "valid" => {
                let h = match &o.right {
                    Some(t) => self.href(t, &rp, sc)?,
                    None => return err(&rp, "missing header operand"),
                };
                Ok(narrow(K::Valid(h)))
            }
            "valid_union" => Ok(narrow(K::ValidUnion(self.uref_opt(
                o.right.as_ref(),
                &rp,
                sc,
            )?))),
            "?" => {
                let c = self.opnd(o.cond.as_ref(), &format!("{path}.cond"), sc)?;
                let a = self.opnd(o.left.as_ref(), &lp, sc)?;
                let b = self.opnd(o.right.as_ref(), &rp, sc)?;
                let wide = a.wide || b.wide;
                Ok(Ex {
                    k: K::Cond(Box::new(c), Box::new(a), Box::new(b)),
                    wide,
                })
            }
            "last_stack_index" => {
                let s = self.stack_of(o.right.as_ref().or(o.left.as_ref()), &rp)?;
                Ok(narrow(Self::last_of_stack(s).k))
            }
            "size_stack" => {
                let s = self.stack_of(o.right.as_ref().or(o.left.as_ref()), &rp)?;
                Ok(narrow(K::SizeStack(s)))
            }
            "access_field" => {
                let h = match &o.left {
                    Some(t) => self.href(t, &lp, sc)?,
                    None => return err(&lp, "missing header operand"),
                };
                let off = self.int_opnd(o.right.as_ref(), &rp)?;
                let Some(w) = self.href_field_width(&h, off) else {
                    return err(&rp, format!("field offset {off} is out of range"));
                };
                Ok(match h {
                    HRef::Static(h) => self.field_ex(self.p.headers[h as usize].first_field + off),
                    h => self.dyn_field_ex(h, off, w),
                })
            }
            "dereference_header_stack" | "dereference_union_stack" | "access_union_header" => {
                err(path, format!("\"{}\" produces a header, not a value", o.op))
            }
            other => err(
                &format!("{path}.op"),
                format!("unknown expression op \"{other}\""),
            ),
        }
    }

    /// A writable field.
    fn lval(&self, t: &Tv, path: &str, sc: Scope) -> R<FieldLoc> {
        match t {
            Tv::Field(f) if f.1 == "$valid$" => err(path, "$valid$ is read-only"),
            Tv::Field(f) => Ok(FieldLoc::Static(self.field_ref(f, path)?)),
            Tv::StackField(..) | Tv::UnionStackField(..) => match self.expr(t, path, sc)?.k {
                K::DynField(h, off) => Ok(FieldLoc::Dyn(h, off)),
                K::Field(f) => Ok(FieldLoc::Static(f)),
                _ => err(path, "not a field"),
            },
            Tv::Expression(e) => match e.as_ref() {
                Expr::Tv(t) => self.lval(t, &format!("{path}.value"), sc),
                Expr::Op(o) if o.op == "access_field" => {
                    match self.expr_of(e, &format!("{path}.value"), sc)?.k {
                        K::DynField(h, off) => Ok(FieldLoc::Dyn(h, off)),
                        K::Field(f) => Ok(FieldLoc::Static(f)),
                        _ => err(path, "not a field"),
                    }
                }
                Expr::Op(o) => err(path, format!("\"{}\" is not a writable field", o.op)),
            },
            other => err(
                path,
                format!("expected a field to write, found a {}", other.type_name()),
            ),
        }
    }

    // ---- primitives --------------------------------------------------------------------

    fn prim(&self, p: &j::Primitive, path: &str, sc: Scope, nprims: usize) -> R<Prim> {
        let ps = &p.parameters;
        let arg = |i: usize| format!("{path}.parameters[{i}]");
        let want = |lo: usize, hi: usize| -> R<()> {
            if ps.len() < lo || ps.len() > hi {
                let n = if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo} to {hi}")
                };
                return err(
                    &format!("{path}.parameters"),
                    format!("\"{}\" takes {n} parameters, found {}", p.op, ps.len()),
                );
            }
            Ok(())
        };
        let e = |i: usize| self.expr(&ps[i], &arg(i), sc);
        let lv = |i: usize| self.lval(&ps[i], &arg(i), sc);
        let hr = |i: usize| self.href(&ps[i], &arg(i), sc);
        let named = |i: usize, map: &HashMap<&str, u32>, want_ty: &str| -> R<u32> {
            let name = match &ps[i] {
                Tv::CounterArray(n)
                | Tv::MeterArray(n)
                | Tv::RegisterArray(n)
                | Tv::Calculation(n)
                | Tv::String(n) => n,
                other => {
                    return err(
                        &arg(i),
                        format!("expected a {want_ty}, found a {}", other.type_name()),
                    )
                }
            };
            match map.get(name.as_str()) {
                Some(&v) => Ok(v),
                None => err(&arg(i), format!("unknown {want_ty} \"{name}\"")),
            }
        };
        let jump_target = |i: usize| -> R<usize> {
            let t = self.int_opnd(Some(&ps[i]), &arg(i))? as usize;
            if t > nprims {
                return err(&arg(i), format!("jump target {t} is past the action's end"));
            }
            Ok(t)
        };
        Ok(match p.op.as_str() {
            "assign" => {
                want(2, 2)?;
                Prim::Assign(lv(0)?, e(1)?)
            }
            // P4_14's primitives, in JSON from p4c-bm (bmv2's own test programs).
            "modify_field" => {
                want(2, 3)?;
                let value = match ps.len() {
                    2 => e(1)?,
                    _ => {
                        // dst = (dst & ~mask) | (src & mask)
                        let (dst, src, mask) = (e(0)?, e(1)?, e(2)?);
                        let keep = bin(Op2::BAnd, dst, un(Op1::BNot, mask.clone()));
                        bin(Op2::BOr, keep, bin(Op2::BAnd, src, mask))
                    }
                };
                Prim::Assign(lv(0)?, value)
            }
            "add_to_field" | "subtract_from_field" => {
                want(2, 2)?;
                let op = if p.op == "add_to_field" {
                    Op2::Add
                } else {
                    Op2::Sub
                };
                Prim::Assign(lv(0)?, bin(op, e(0)?, e(1)?))
            }
            "assign_VL" => {
                want(2, 2)?;
                Prim::AssignVl(lv(0)?, lv(1)?)
            }
            "assign_header" => {
                want(2, 2)?;
                Prim::AssignHeader(hr(0)?, hr(1)?)
            }
            "assign_union" => {
                want(2, 2)?;
                Prim::AssignUnion(
                    self.uref(&ps[0], &arg(0), sc)?,
                    self.uref(&ps[1], &arg(1), sc)?,
                )
            }
            "assign_header_stack" => {
                want(2, 2)?;
                Prim::AssignHeaderStack(
                    self.stack_of(Some(&ps[0]), &arg(0))?,
                    self.stack_of(Some(&ps[1]), &arg(1))?,
                )
            }
            "assign_union_stack" => {
                want(2, 2)?;
                Prim::AssignUnionStack(
                    self.ustack_of(Some(&ps[0]), &arg(0))?,
                    self.ustack_of(Some(&ps[1]), &arg(1))?,
                )
            }
            "push" | "pop" => {
                want(2, 2)?;
                let n = e(1)?;
                match &ps[0] {
                    Tv::HeaderUnionStack(_) => {
                        let s = self.ustack_of(Some(&ps[0]), &arg(0))?;
                        if p.op == "push" {
                            Prim::PushUnion(s, n)
                        } else {
                            Prim::PopUnion(s, n)
                        }
                    }
                    _ => {
                        let s = self.stack_of(Some(&ps[0]), &arg(0))?;
                        if p.op == "push" {
                            Prim::Push(s, n)
                        } else {
                            Prim::Pop(s, n)
                        }
                    }
                }
            }
            "add_header" => {
                want(1, 1)?;
                Prim::SetValid(hr(0)?)
            }
            "remove_header" => {
                want(1, 1)?;
                Prim::SetInvalid(hr(0)?)
            }
            "mark_to_drop" | "drop" => {
                want(0, 1)?;
                Prim::MarkToDrop
            }
            "exit" => {
                want(0, 0)?;
                Prim::Exit
            }
            "_jump" => {
                want(1, 1)?;
                Prim::Jump(jump_target(0)?)
            }
            "_jump_if_zero" => {
                want(2, 2)?;
                Prim::JumpIfZero(e(0)?, jump_target(1)?)
            }
            "modify_field_with_hash_based_offset" => {
                want(4, 4)?;
                Prim::HashOffset {
                    dst: lv(0)?,
                    base: e(1)?,
                    calc: named(2, &self.calc_by_name, "calculation")?,
                    size: e(3)?,
                }
            }
            "modify_field_rng_uniform" => {
                want(3, 3)?;
                Prim::RngUniform(lv(0)?, e(1)?, e(2)?)
            }
            "count" => {
                want(2, 2)?;
                Prim::Count(named(0, &self.counter_by_name, "counter array")?, e(1)?)
            }
            "execute_meter" => {
                want(3, 3)?;
                Prim::ExecuteMeter(named(0, &self.meter_by_name, "meter array")?, e(1)?, lv(2)?)
            }
            "register_read" => {
                want(3, 3)?;
                Prim::RegisterRead(
                    lv(0)?,
                    named(1, &self.register_by_name, "register array")?,
                    e(2)?,
                )
            }
            "register_write" => {
                want(3, 3)?;
                Prim::RegisterWrite(
                    named(0, &self.register_by_name, "register array")?,
                    e(1)?,
                    e(2)?,
                )
            }
            "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
                want(1, 2)?;
                let fl = if ps.len() > 1 { Some(e(1)?) } else { None };
                if p.op == "clone_ingress_pkt_to_egress" {
                    Prim::CloneI2E(e(0)?, fl)
                } else {
                    Prim::CloneE2E(e(0)?, fl)
                }
            }
            "resubmit" | "recirculate" => {
                want(0, 1)?;
                let fl = if ps.is_empty() { None } else { Some(e(0)?) };
                if p.op == "resubmit" {
                    Prim::Resubmit(fl)
                } else {
                    Prim::Recirculate(fl)
                }
            }
            "generate_digest" => {
                want(2, 2)?;
                Prim::Digest(e(1)?)
            }
            "truncate" => {
                want(1, 1)?;
                Prim::Truncate(e(0)?)
            }
            "log_msg" => {
                want(1, 2)?;
                let Tv::String(fmt) = &ps[0] else {
                    return err(&arg(0), "log_msg takes a format string");
                };
                let args = match ps.get(1) {
                    Some(Tv::ParametersVector(v)) => v
                        .iter()
                        .enumerate()
                        .map(|(i, t)| self.expr(t, &format!("{}.value[{i}]", arg(1)), sc))
                        .collect::<R<Vec<_>>>()?,
                    Some(other) => {
                        return err(
                            &arg(1),
                            format!(
                                "expected a parameters_vector, found a {}",
                                other.type_name()
                            ),
                        )
                    }
                    None => Vec::new(),
                };
                Prim::LogMsg(fmt.clone(), args)
            }
            "assert" | "assume" => {
                want(1, 1)?;
                Prim::Assert(e(0)?)
            }
            // Checksum externs p4c may leave in deparsers are handled by `checksums`.
            "update_checksum" | "verify_checksum" | "no_op" => Prim::Nop,
            other => {
                return err(
                    &format!("{path}.op"),
                    format!("unknown primitive \"{other}\""),
                )
            }
        })
    }

    fn actions(&mut self) -> R<()> {
        let mut actions = Vec::new();
        for (i, a) in self.j.actions.iter().enumerate() {
            let path = format!("actions[{i}]");
            if self.action_by_id.insert(a.id, i as u32).is_some() {
                return err(
                    &format!("{path}.id"),
                    format!("duplicate action id {}", a.id),
                );
            }
            let params: Vec<(String, u32)> = a
                .runtime_data
                .iter()
                .map(|r| (r.name.clone(), r.bitwidth))
                .collect();
            let sc = Scope {
                params: Some(&params),
                parser: false,
            };
            let prims = a
                .primitives
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    self.prim(
                        p,
                        &format!("{path}.primitives[{k}]"),
                        sc,
                        a.primitives.len(),
                    )
                })
                .collect::<R<Vec<_>>>()?;
            actions.push(ActionInfo {
                name: a.name.clone(),
                json_id: a.id,
                params,
                prims,
            });
        }
        self.p.actions = actions;
        Ok(())
    }

    // ---- parsers -----------------------------------------------------------------------

    fn extract_target(&self, t: &ParserParam, path: &str, sc: Scope) -> R<ExtractTarget> {
        match t {
            ParserParam::Tv(Tv::Stack(s)) => Ok(ExtractTarget::Stack(
                self.stack_of(Some(&Tv::Stack(s.clone())), path)?,
            )),
            ParserParam::Tv(Tv::UnionStack(s, m)) => {
                let us = self.ustack_of(Some(&Tv::HeaderUnionStack(s.clone())), path)?;
                match self.ustack_type_members[us as usize]
                    .iter()
                    .position(|n| n == m)
                {
                    Some(m) => Ok(ExtractTarget::UnionStack(us, m as u32)),
                    None => err(path, format!("union stack \"{s}\" has no member \"{m}\"")),
                }
            }
            ParserParam::Tv(t) => Ok(ExtractTarget::Header(self.href(t, path, sc)?)),
            ParserParam::Primitive(_) => err(path, "expected an extract target"),
        }
    }

    fn ptv<'b>(&self, ps: &'b [ParserParam], i: usize, path: &str) -> R<&'b Tv> {
        match ps.get(i) {
            Some(ParserParam::Tv(t)) => Ok(t),
            Some(ParserParam::Primitive(_)) => err(
                &format!("{path}.parameters[{i}]"),
                "expected a type-value object",
            ),
            None => err(
                &format!("{path}.parameters"),
                format!("missing parameter {i}"),
            ),
        }
    }

    fn parser_op(&self, op: &j::ParserOp, path: &str) -> R<ParserOp> {
        let sc = Scope {
            params: None,
            parser: true,
        };
        let ps = &op.parameters;
        let arg = |i: usize| format!("{path}.parameters[{i}]");
        let count = |n: usize| -> R<()> {
            if ps.len() != n {
                return err(
                    &format!("{path}.parameters"),
                    format!("\"{}\" takes {n} parameters, found {}", op.op, ps.len()),
                );
            }
            Ok(())
        };
        Ok(match op.op {
            ParserOpKind::Extract => {
                count(1)?;
                ParserOp::Extract(self.extract_target(&ps[0], &arg(0), sc)?)
            }
            ParserOpKind::ExtractVl => {
                count(2)?;
                ParserOp::ExtractVl(
                    self.extract_target(&ps[0], &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Set => {
                count(2)?;
                ParserOp::Set(
                    self.lval(self.ptv(ps, 0, path)?, &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Verify => {
                count(2)?;
                ParserOp::Verify(
                    self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Shift => {
                count(1)?;
                let bytes = self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?;
                ParserOp::Advance(Ex {
                    k: K::Bin(
                        Op2::Mul,
                        Box::new(bytes),
                        Box::new(Ex {
                            k: K::Const(8),
                            wide: false,
                        }),
                    ),
                    wide: false,
                })
            }
            ParserOpKind::Advance => {
                count(1)?;
                ParserOp::Advance(self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?)
            }
            ParserOpKind::Primitive => {
                count(1)?;
                match &ps[0] {
                    ParserParam::Primitive(p) => {
                        ParserOp::Primitive(self.prim(p, &arg(0), sc, 1)?)
                    }
                    ParserParam::Tv(_) => return err(&arg(0), "expected a primitive call"),
                }
            }
        })
    }

    fn key_part(&self, t: &Tv, path: &str) -> R<(Ex, Option<u32>)> {
        let sc = Scope {
            params: None,
            parser: true,
        };
        let ex = self.expr(t, path, sc)?;
        let width = match (&ex.k, t) {
            (K::Field(f), _) => Some(self.p.fields[*f as usize].width),
            (K::Valid(_), _) => Some(1),
            (K::DynField(h, off), _) => self.href_field_width(h, *off),
            (K::Lookahead { width, .. }, _) => Some(*width),
            _ => None,
        };
        Ok((ex, width))
    }

    fn parsers(&mut self) -> R<()> {
        let mut parsers = Vec::new();
        let mut vset_widths = Vec::new();
        for (pi, p) in self.j.parsers.iter().enumerate() {
            let ppath = format!("parsers[{pi}]");
            let by_name: HashMap<&str, u32> = p
                .parse_states
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), i as u32))
                .collect();
            let state_ref = |name: &Option<String>, path: &str| -> R<Option<u32>> {
                match name {
                    None => Ok(None),
                    Some(n) => match by_name.get(n.as_str()) {
                        Some(&s) => Ok(Some(s)),
                        None => err(path, format!("unknown parse state \"{n}\"")),
                    },
                }
            };
            let init = state_ref(&p.init_state, &format!("{ppath}.init_state"))?;
            let mut states = Vec::new();
            for (si, s) in p.parse_states.iter().enumerate() {
                let spath = format!("{ppath}.parse_states[{si}]");
                let ops = s
                    .parser_ops
                    .iter()
                    .enumerate()
                    .map(|(k, op)| self.parser_op(op, &format!("{spath}.parser_ops[{k}]")))
                    .collect::<R<Vec<_>>>()?;
                let mut parts = Vec::new();
                for (k, t) in s.transition_key.iter().enumerate() {
                    parts.push(self.key_part(t, &format!("{spath}.transition_key[{k}]"))?);
                }
                // An expression key part takes the bytes the transition values leave for it.
                let known: usize = parts
                    .iter()
                    .filter_map(|(_, w)| w.map(|w| w.div_ceil(8) as usize))
                    .sum();
                let unknown = parts.iter().filter(|(_, w)| w.is_none()).count();
                let value_len = s.transitions.iter().find_map(|t| match &t.kind {
                    j::TransitionKind::Hexstr { value, .. } => Some(value.bytes.len()),
                    _ => None,
                });
                // Without a value, a value set tells it: its width is the key's, unpadded.
                let known_bits: u32 = parts.iter().filter_map(|(_, w)| *w).sum();
                let vset_bits = s.transitions.iter().find_map(|t| match &t.kind {
                    j::TransitionKind::ParseVset { name, .. } => self
                        .vset_by_name
                        .get(name.as_str())
                        .map(|&v| self.p.vsets[v as usize].bitwidth),
                    _ => None,
                });
                let mut key = Vec::new();
                for (k, (ex, w)) in parts.into_iter().enumerate() {
                    let w = match (w, unknown, value_len, vset_bits) {
                        (Some(w), _, _, _) => w,
                        (None, 1, Some(total), _) if total >= known => ((total - known) * 8) as u32,
                        (None, 1, None, Some(bits)) if bits > known_bits => bits - known_bits,
                        _ => {
                            return err(
                                &format!("{spath}.transition_key[{k}]"),
                                "cannot tell the width of this key expression",
                            )
                        }
                    };
                    key.push(KeyPart::Value(ex, w));
                }
                let key_bytes: usize = key
                    .iter()
                    .map(|KeyPart::Value(_, w)| w.div_ceil(8) as usize)
                    .sum();
                let mut transitions = Vec::new();
                for (k, t) in s.transitions.iter().enumerate() {
                    let tpath = format!("{spath}.transitions[{k}]");
                    let mask_of =
                        |m: &Option<j::HexStr>| m.as_ref().map(|m| m.to_width_bytes(key_bytes));
                    let matches = match &t.kind {
                        j::TransitionKind::Default => TransMatch::Default,
                        j::TransitionKind::Hexstr { value, mask } => TransMatch::Value {
                            value: value.to_width_bytes(key_bytes),
                            mask: mask_of(mask),
                        },
                        j::TransitionKind::ParseVset { name, mask } => {
                            match self.vset_by_name.get(name.as_str()) {
                                Some(&v) => TransMatch::Vset {
                                    vset: v,
                                    mask: mask_of(mask),
                                },
                                None => {
                                    return err(
                                        &format!("{tpath}.value"),
                                        format!("unknown parse value set \"{name}\""),
                                    )
                                }
                            }
                        }
                    };
                    transitions.push(Transition {
                        matches,
                        next: state_ref(&t.next_state, &format!("{tpath}.next_state"))?,
                    });
                }
                for t in &transitions {
                    if let TransMatch::Vset { vset, .. } = t.matches {
                        let widths: Vec<u32> = key.iter().map(|KeyPart::Value(_, w)| *w).collect();
                        vset_widths.push((vset, widths));
                    }
                }
                states.push(ParseState {
                    ops,
                    key,
                    key_bytes,
                    transitions,
                });
            }
            parsers.push(ParserInfo {
                name: p.name.clone(),
                init,
                states,
            });
        }
        self.p.parsers = parsers;
        for (v, widths) in vset_widths {
            self.p.vsets[v as usize].key_widths = widths;
        }
        Ok(())
    }

    fn deparsers(&mut self) -> R<()> {
        for (i, d) in self.j.deparsers.iter().enumerate() {
            let order = d
                .order
                .iter()
                .enumerate()
                .map(|(k, h)| self.header(h, &format!("deparsers[{i}].order[{k}]")))
                .collect::<R<Vec<_>>>()?;
            self.p.deparsers.push(DeparserInfo { order });
        }
        Ok(())
    }

    // ---- pipelines ---------------------------------------------------------------------

    fn next(&self, name: &Option<String>, path: &str) -> R<Next> {
        match name {
            None => Ok(Next::End),
            Some(n) => match self.node_by_name.get(n.as_str()) {
                Some(&x) => Ok(x),
                None => err(path, format!("unknown control flow node \"{n}\"")),
            },
        }
    }

    fn action_ref(&self, id: i64, path: &str) -> R<u32> {
        match self.action_by_id.get(&id) {
            Some(&a) => Ok(a),
            None => err(path, format!("no action with id {id}")),
        }
    }

    fn pipelines(&mut self) -> R<()> {
        let (mut nt, mut nc, mut na) = (0u32, 0u32, 0u32);
        for p in &self.j.pipelines {
            for t in &p.tables {
                self.node_by_name.insert(&t.name, Next::Table(nt));
                nt += 1;
            }
            for c in &p.conditionals {
                self.node_by_name.insert(&c.name, Next::Cond(nc));
                nc += 1;
            }
            for a in &p.action_calls {
                self.node_by_name.insert(&a.name, Next::Call(na));
                na += 1;
            }
        }
        let direct_counters: HashMap<&str, u32> = self
            .j
            .counter_arrays
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.binding.as_deref().filter(|_| c.is_direct)?, i as u32)))
            .collect();
        let direct_meters: HashMap<&str, u32> = self
            .j
            .meter_arrays
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((m.binding.as_deref().filter(|_| m.is_direct)?, i as u32)))
            .collect();
        for (pi, p) in self.j.pipelines.iter().enumerate() {
            let ppath = format!("pipelines[{pi}]");
            let mut profile_by_name = HashMap::new();
            for (ai, ap) in p.action_profiles.iter().enumerate() {
                let apath = format!("{ppath}.action_profiles[{ai}]");
                let selector = self.selector(&ap.selector, &apath)?;
                profile_by_name.insert(ap.name.as_str(), self.p.profiles.len() as u32);
                self.p.profiles.push(ProfileInfo {
                    name: ap.name.clone(),
                    max_size: ap.max_size as usize,
                    selector,
                });
            }
            // Older JSON declares a table's profile (and selector) in the table itself.
            for (ti, t) in p.tables.iter().enumerate() {
                let Some(name) = t.act_prof_name.as_deref() else {
                    continue;
                };
                if t.action_profile.is_some() || profile_by_name.contains_key(name) {
                    continue;
                }
                let selector = self.selector(&t.selector, &format!("{ppath}.tables[{ti}]"))?;
                profile_by_name.insert(name, self.p.profiles.len() as u32);
                self.p.profiles.push(ProfileInfo {
                    name: name.to_string(),
                    max_size: t.max_size as usize,
                    selector,
                });
            }
            for (ti, t) in p.tables.iter().enumerate() {
                let tpath = format!("{ppath}.tables[{ti}]");
                let table = self.table(t, &tpath, &profile_by_name)?;
                let table_index = self.p.tables.len() as u32;
                if let Some(&c) = direct_counters.get(t.name.as_str()) {
                    self.p.counters[c as usize].direct = Some(table_index);
                }
                if let Some(&m) = direct_meters.get(t.name.as_str()) {
                    self.p.meters[m as usize].direct = Some(table_index);
                }
                let direct_counter = direct_counters.get(t.name.as_str()).copied();
                let direct_meter = match &t.direct_meters {
                    Some(name) => match self.meter_by_name.get(name.as_str()) {
                        Some(&m) => Some(m),
                        None => {
                            return err(
                                &format!("{tpath}.direct_meters"),
                                format!("unknown meter array \"{name}\""),
                            )
                        }
                    },
                    None => direct_meters.get(t.name.as_str()).copied(),
                };
                self.p.tables.push(TableInfo {
                    direct_counter,
                    direct_meter,
                    ..table
                });
            }
            for (ci, c) in p.conditionals.iter().enumerate() {
                let cpath = format!("{ppath}.conditionals[{ci}]");
                let expr = self.expr(&c.expression, &format!("{cpath}.expression"), NO_SCOPE)?;
                let t = self.next(&c.true_next, &format!("{cpath}.true_next"))?;
                let f = self.next(&c.false_next, &format!("{cpath}.false_next"))?;
                self.p.conds.push(CondInfo { expr, t, f });
            }
            for (ci, c) in p.action_calls.iter().enumerate() {
                let cpath = format!("{ppath}.action_calls[{ci}]");
                let action = self.action_ref(c.action_id, &format!("{cpath}.action_id"))?;
                let next = self.next(&c.next_node, &format!("{cpath}.next_node"))?;
                self.p.calls.push(CallInfo { action, next });
            }
            let init = self.next(&p.init_table, &format!("{ppath}.init_table"))?;
            self.p.pipelines.push(PipelineInfo {
                name: p.name.clone(),
                init,
            });
        }
        Ok(())
    }

    /// The hash calculation of an action selector at `path` (`PATH.selector`), if any.
    fn selector(&mut self, sel: &Option<j::Selector>, path: &str) -> R<Option<u32>> {
        let Some(s) = sel else {
            return Ok(None);
        };
        let algo = Self::hasher(&s.algo, &format!("{path}.selector.algo"))?;
        let inputs = self.calc_inputs(&s.input, &format!("{path}.selector.input"))?;
        self.p.calcs.push(CalcInfo { algo, inputs });
        Ok(Some(self.p.calcs.len() as u32 - 1))
    }

    fn table(&self, t: &j::Table, tpath: &str, profiles: &HashMap<&str, u32>) -> R<TableInfo> {
        let mut keys = Vec::new();
        for (k, key) in t.key.iter().enumerate() {
            let kpath = format!("{tpath}.key[{k}]");
            let (src, width, default_name, target_name) = match (&key.target, key.match_type) {
                (j::KeyTarget::Header(h), MatchType::Valid) => (
                    KeySrc::Valid(HRef::Static(self.header(h, &format!("{kpath}.target"))?)),
                    1,
                    format!("{h}.$valid$"),
                    format!("{h}_valid"),
                ),
                (j::KeyTarget::Field(f), _) if f.1 == "$valid$" => (
                    KeySrc::Valid(HRef::Static(self.header(&f.0, &format!("{kpath}.target"))?)),
                    1,
                    f.to_string(),
                    format!("{}_valid", f.0),
                ),
                (j::KeyTarget::Field(f), _) => {
                    let id = self.field_ref(f, &format!("{kpath}.target"))?;
                    (
                        KeySrc::Field(FieldLoc::Static(id)),
                        self.p.fields[id as usize].width,
                        f.to_string(),
                        format!("{}.{}", f.0, f.1),
                    )
                }
                (j::KeyTarget::Header(h), _) => {
                    return err(
                        &format!("{kpath}.target"),
                        format!("a header (\"{h}\") is only a key with match type valid"),
                    )
                }
            };
            keys.push(KeyElem {
                name: key.name.clone().unwrap_or(default_name),
                target_name,
                src,
                kind: key.match_type,
                width,
                mask: key
                    .mask
                    .as_ref()
                    .map(|m| m.to_width_bytes(width.div_ceil(8) as usize)),
            });
        }
        let mut actions = Vec::new();
        let mut by_name = HashMap::new();
        for (k, id) in t.action_ids.iter().enumerate() {
            let a = self.action_ref(*id, &format!("{tpath}.action_ids[{k}]"))?;
            actions.push(a);
            by_name.insert(self.p.actions[a as usize].name.as_str(), a);
            if let Some(n) = t.actions.get(k) {
                by_name.insert(n.as_str(), a);
            }
        }
        // JSON from P4_14's p4c-bm (bmv2's own test programs) lists actions by name only.
        if t.action_ids.is_empty() {
            for (k, n) in t.actions.iter().enumerate() {
                let Some(a) = self.p.actions.iter().position(|x| x.name == *n) else {
                    return err(
                        &format!("{tpath}.actions[{k}]"),
                        format!("no action named \"{n}\""),
                    );
                };
                actions.push(a as u32);
                by_name.insert(n.as_str(), a as u32);
            }
        }
        let mut next_by_action = HashMap::new();
        let (mut hit, mut miss) = (None, None);
        for (name, node) in &t.next_tables {
            let npath = format!("{tpath}.next_tables.{name}");
            let n = self.next(node, &npath)?;
            match name.as_str() {
                "__HIT__" => hit = Some(n),
                "__MISS__" => miss = Some(n),
                _ => match by_name.get(name.as_str()) {
                    Some(&a) => {
                        next_by_action.insert(a, n);
                    }
                    None => {
                        return err(&npath, format!("\"{name}\" is not an action of this table"))
                    }
                },
            }
        }
        let base_default_next =
            self.next(&t.base_default_next, &format!("{tpath}.base_default_next"))?;
        let profile = match (
            t.action_profile.as_ref().or(t.act_prof_name.as_ref()),
            t.kind,
        ) {
            (_, j::TableType::Simple) => None,
            (Some(name), kind) => match profiles.get(name.as_str()) {
                Some(&p) => {
                    if kind == j::TableType::IndirectWs
                        && self.p.profiles[p as usize].selector.is_none()
                    {
                        return err(
                            &format!("{tpath}.action_profile"),
                            format!("indirect_ws table needs an action profile with a selector (\"{name}\" has none)"),
                        );
                    }
                    Some(p)
                }
                None => {
                    return err(
                        &format!("{tpath}.action_profile"),
                        format!("unknown action profile \"{name}\""),
                    )
                }
            },
            (None, _) => {
                return err(
                    &format!("{tpath}.action_profile"),
                    "an indirect table needs an action profile",
                )
            }
        };
        let (default_action_const, default_entry_const) = t
            .default_entry
            .as_ref()
            .map_or((false, false), |d| (d.action_const, d.action_entry_const));
        Ok(TableInfo {
            name: t.name.clone(),
            keys,
            profile,
            max_size: t.max_size as usize,
            actions,
            next_by_action,
            hit_miss: match (hit, miss) {
                (None, None) => None,
                (h, m) => Some((
                    h.unwrap_or(base_default_next),
                    m.unwrap_or(base_default_next),
                )),
            },
            base_default_next,
            default_action_const,
            default_entry_const,
            immutable_entries: !t.entries.is_empty(),
            direct_counter: None,
            direct_meter: None,
            support_timeout: t.support_timeout,
        })
    }

    fn checksums(&mut self) -> R<()> {
        for (i, c) in self.j.checksums.iter().enumerate() {
            let path = format!("checksums[{i}]");
            let target = self.field_ref(&c.target, &format!("{path}.target"))?;
            let Some(&calc) = self.calc_by_name.get(c.calculation.as_str()) else {
                return err(
                    &format!("{path}.calculation"),
                    format!("unknown calculation \"{}\"", c.calculation),
                );
            };
            let cond = match &c.if_cond {
                Some(e) => Some(self.expr(e, &format!("{path}.if_cond"), NO_SCOPE)?),
                None => None,
            };
            self.p.checksums.push(ChecksumInfo {
                target,
                calc,
                update: c.update,
                verify: c.verify,
                cond,
            });
        }
        Ok(())
    }
}

fn bin(op: Op2, a: Ex, b: Ex) -> Ex {
    let wide = a.wide || b.wide;
    Ex {
        k: K::Bin(op, Box::new(a), Box::new(b)),
        wide,
    }
}

fn un(op: Op1, a: Ex) -> Ex {
    let wide = a.wide;
    Ex {
        k: K::Un(op, Box::new(a)),
        wide,
    }
}
