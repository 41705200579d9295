//! Header types, headers, header stacks and unions (`header_types`, `headers`,
//! `header_stacks`, `header_union_types`, `header_unions`, `header_union_stacks`), field
//! references, and the intrinsic fields simple_switch reads or writes (`field_aliases`).

use super::{err, L, MAX_FIELD_BITS, R};
use crate::program::*;
use p4_bmv2_json as j;
use std::collections::HashMap;

impl<'a> L<'a> {
    pub(super) fn headers(&mut self) -> R<()> {
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
            let (narrow0, wide0) = (self.p.narrow_slots, self.p.wide_bytes);
            let mut vl = None;
            let mut varbit = None;
            let mut index = HashMap::new();
            for (fi, f) in t.fields.iter().enumerate() {
                let (width, slot) = match f.width {
                    j::FieldWidth::Bits(w) if w <= 64 => {
                        self.p.narrow_slots += 1;
                        let mask = crate::value::mask64(w);
                        (
                            w,
                            Slot::Narrow(NSlot {
                                i: self.p.narrow_slots - 1,
                                hdr: hi as u32,
                                mask,
                            }),
                        )
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
                        vl = Some(self.p.varbit_slots - 1);
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
            let widths: Option<Vec<u32>> = t
                .fields
                .iter()
                .map(|f| match f.width {
                    j::FieldWidth::Bits(b) => Some(b),
                    j::FieldWidth::Variable => None,
                })
                .collect();
            self.p.headers.push(HeaderInfo {
                metadata: h.metadata,
                first_field,
                nfields: t.fields.len() as u32,
                fixed_bits,
                varbit,
                union: None,
                narrow: narrow0..self.p.narrow_slots,
                wide: wide0..self.p.wide_bytes,
                vl,
                layout: widths.and_then(|w| crate::layout::Layout::new(&w)),
            });
        }
        Ok(())
    }

    pub(super) fn header_ids(&self, ids: &[i64], path: &str) -> R<Vec<u32>> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| match self.header_by_id.get(id) {
                Some(&h) => Ok(h),
                None => err(&format!("{path}[{i}]"), format!("no header with id {id}")),
            })
            .collect()
    }

    pub(super) fn stacks_unions(&mut self) -> R<()> {
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

    pub(super) fn named_field(&self, header: &str, field: &str) -> Option<u32> {
        let h = *self.header_by_name.get(header)?;
        let off = *self.field_index[h as usize].get(field)?;
        Some(self.p.headers[h as usize].first_field + off)
    }

    pub(super) fn intrinsic(&self, name: &str) -> Option<u32> {
        if let Some(f) = self.aliases.get(name) {
            return self.named_field(&f.0, &f.1);
        }
        let (h, f) = name.split_once('.')?;
        self.named_field(h, f)
    }

    pub(super) fn intrinsics(&mut self) {
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

    pub(super) fn field_ref(&self, f: &j::FieldRef, path: &str) -> R<u32> {
        match self.header_by_name.get(f.0.as_str()) {
            None => err(path, format!("unknown header \"{}\"", f.0)),
            Some(&h) => match self.field_index[h as usize].get(f.1.as_str()) {
                Some(&off) => Ok(self.p.headers[h as usize].first_field + off),
                None => err(path, format!("header \"{}\" has no field \"{}\"", f.0, f.1)),
            },
        }
    }

    pub(super) fn header(&self, name: &str, path: &str) -> R<u32> {
        match self.header_by_name.get(name) {
            Some(&h) => Ok(h),
            None => err(path, format!("unknown header \"{name}\"")),
        }
    }
}
