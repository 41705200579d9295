//! Field lists and learn lists, calculations, counters, meters and registers
//! (`field_lists`, `learn_lists`, `calculations`, `counter_arrays`, `meter_arrays`,
//! `register_arrays`), and checksums (`checksums`).

use super::{check_size, err, L, NO_SCOPE, R};
use crate::program::*;
use p4_bmv2_json::Tv;

impl<'a> L<'a> {
    pub(super) fn field_list_elems(&self, elems: &[Tv], path: &str) -> R<Vec<u32>> {
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

    pub(super) fn lists(&mut self) -> R<()> {
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

    pub(super) fn hasher(algo: &str, path: &str) -> R<switch_hash::Algorithm> {
        match switch_hash::Algorithm::from_bmv2_name(algo) {
            Some(h) => Ok(h),
            None => err(path, format!("unknown hash algorithm \"{algo}\"")),
        }
    }

    pub(super) fn calc_inputs(&self, input: &[Tv], path: &str) -> R<Vec<CalcInput>> {
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

    pub(super) fn calculations(&mut self) -> R<()> {
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

    pub(super) fn stateful(&mut self) -> R<()> {
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

    pub(super) fn checksums(&mut self) -> R<()> {
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
