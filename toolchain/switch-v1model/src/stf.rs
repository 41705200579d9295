//! [`p4_stf::StfTarget`] for the in-process engine: what `p4-stf PROG.json TEST.stf` drives.

use crate::switch::{MirrorSession, Output, Switch};
use p4_bmv2_json::MatchType;
use p4_stf as stf;
use p4_stf::{resolve_name, TargetError, TargetResult};
use switch_engine::{CounterValue, EntryHandle, FieldMatch, MeterRate};

/// The engine under STF test. Time advances one microsecond per packet sent, so meters see
/// back-to-back packets.
pub struct StfSwitch {
    pub switch: Switch,
    now_us: u64,
    out: Vec<Output>,
}

impl StfSwitch {
    pub fn new(switch: Switch) -> StfSwitch {
        StfSwitch {
            switch,
            now_us: 1,
            out: Vec::new(),
        }
    }
}

fn stf_kind(m: MatchType) -> stf::MatchKind {
    match m {
        MatchType::Exact => stf::MatchKind::Exact,
        MatchType::Lpm => stf::MatchKind::Lpm,
        MatchType::Ternary => stf::MatchKind::Ternary,
        MatchType::Range => stf::MatchKind::Range,
        MatchType::Optional => stf::MatchKind::Optional,
        MatchType::Valid => stf::MatchKind::Valid,
    }
}

fn field_match(m: &stf::FieldMatch) -> FieldMatch {
    match m {
        stf::FieldMatch::Exact(v) => FieldMatch::Exact(v.clone()),
        stf::FieldMatch::Lpm { value, prefix_len } => FieldMatch::Lpm {
            value: value.clone(),
            prefix_len: *prefix_len,
        },
        stf::FieldMatch::Ternary { value, mask } => FieldMatch::Ternary {
            value: value.clone(),
            mask: mask.clone(),
        },
        stf::FieldMatch::Range { low, high } => FieldMatch::Range {
            low: low.clone(),
            high: high.clone(),
        },
        stf::FieldMatch::Optional(v) => FieldMatch::Optional(v.clone()),
    }
}

/// What the adapter refuses before the switch sees the request.
#[derive(Debug, thiserror::Error)]
enum AdapterError {
    #[error("priority {0} is too large")]
    Priority(u32),
    #[error("register values are at most 128 bits")]
    WideRegisterValue,
    #[error("counter '{counter}' is direct (table {table}): name an entry with $NAME")]
    DirectCounterByIndex { counter: String, table: String },
}

fn resolve(names: &[String], wanted: &str, what: &str) -> TargetResult<String> {
    Ok(resolve_name(names.iter().map(String::as_str), wanted, what)?.to_string())
}

impl stf::StfTarget for StfSwitch {
    fn tables(&self) -> Vec<stf::TableInfo> {
        self.switch
            .tables()
            .into_iter()
            .map(|t| stf::TableInfo {
                name: t.name,
                keys: t
                    .keys
                    .into_iter()
                    .map(|k| stf::KeyInfo {
                        name: k.name,
                        kind: stf_kind(k.match_type),
                        width: k.width,
                    })
                    .collect(),
                actions: t
                    .actions
                    .into_iter()
                    .map(|a| stf::ActionInfo {
                        name: a.name,
                        params: a.params,
                    })
                    .collect(),
            })
            .collect()
    }

    fn add_entry(&mut self, entry: &stf::Entry) -> TargetResult<stf::EntryHandle> {
        // STF priorities start at 0 (p4c's runner gives bmv2 `10000 - priority`) and the engine's,
        // like P4Runtime's, at 1: shifting by one keeps the order.
        let priority = match entry.priority {
            Some(p) => Some(
                p.checked_add(1)
                    .and_then(|p| i32::try_from(p).ok())
                    .ok_or_else(|| TargetError::target(AdapterError::Priority(p)))?,
            ),
            None => None,
        };
        let h = self
            .switch
            .table_add(
                &entry.table,
                entry.matches.iter().map(field_match).collect(),
                priority,
                &entry.action,
                &entry.args,
            )
            .map_err(TargetError::target)?;
        Ok(stf::EntryHandle(u64::from(h.0)))
    }

    fn set_default(&mut self, table: &str, action: &str, args: &[Vec<u8>]) -> TargetResult<()> {
        self.switch
            .table_set_default(table, action, args)
            .map_err(TargetError::target)
    }

    fn clear_tables(&mut self) -> TargetResult<()> {
        self.switch.clear_tables();
        Ok(())
    }

    fn send_packet(&mut self, port: u32, data: &[u8]) -> TargetResult<()> {
        self.switch.process(port, data, self.now_us, &mut self.out);
        self.now_us += 1;
        Ok(())
    }

    fn wait_idle(&mut self) -> TargetResult<Vec<stf::OutputPacket>> {
        Ok(self
            .out
            .drain(..)
            .map(|o| stf::OutputPacket {
                port: o.port,
                data: o.data,
            })
            .collect())
    }

    fn mirroring_add(&mut self, session: u32, port: u32) -> TargetResult<()> {
        let cfg = MirrorSession {
            port: Some(port),
            mgrp: None,
            ..Default::default()
        };
        self.switch
            .mirroring_add(session, cfg)
            .map_err(TargetError::target)
    }

    fn mirroring_add_mc(&mut self, session: u32, mgrp: u32) -> TargetResult<()> {
        let cfg = MirrorSession {
            port: None,
            mgrp: Some(mgrp),
            ..Default::default()
        };
        self.switch
            .mirroring_add(session, cfg)
            .map_err(TargetError::target)
    }

    fn mirroring_delete(&mut self, session: u32) -> TargetResult<()> {
        self.switch
            .mirroring_delete(session)
            .map_err(TargetError::target)
    }

    fn mirroring_get(&mut self, session: u32) -> TargetResult<String> {
        let s = self
            .switch
            .mirroring_get(session)
            .map_err(TargetError::target)?;
        Ok(format!(
            "session {session}: port {:?}, mgrp {:?}",
            s.port, s.mgrp
        ))
    }

    fn mc_mgrp_create(&mut self, mgrp: u32) -> TargetResult<()> {
        self.switch
            .mc_mgrp_create(mgrp)
            .map_err(TargetError::target)
    }

    fn mc_node_create(&mut self, rid: u32, ports: &[u32]) -> TargetResult<u32> {
        Ok(self.switch.mc_node_create(rid, ports))
    }

    fn mc_node_update(&mut self, handle: u32, ports: &[u32]) -> TargetResult<()> {
        self.switch
            .mc_node_update(handle, ports)
            .map_err(TargetError::target)
    }

    fn mc_node_associate(&mut self, mgrp: u32, handle: u32) -> TargetResult<()> {
        self.switch
            .mc_node_associate(mgrp, handle)
            .map_err(TargetError::target)
    }

    fn register_read(&mut self, register: &str, index: u64) -> TargetResult<stf::Value> {
        let name = resolve(&self.switch.register_names(), register, "register")?;
        let v = self
            .switch
            .register_read(&name, index)
            .map_err(TargetError::target)?;
        Ok(stf::Value::from_u128(v))
    }

    fn register_write(
        &mut self,
        register: &str,
        index: u64,
        value: &stf::Value,
    ) -> TargetResult<()> {
        let name = resolve(&self.switch.register_names(), register, "register")?;
        let v = value
            .to_u128()
            .ok_or_else(|| TargetError::target(AdapterError::WideRegisterValue))?;
        self.switch
            .register_write(&name, index, v)
            .map_err(TargetError::target)
    }

    fn register_reset(&mut self, register: &str) -> TargetResult<()> {
        let name = resolve(&self.switch.register_names(), register, "register")?;
        self.switch
            .register_reset(&name)
            .map_err(TargetError::target)
    }

    fn counter_read(
        &mut self,
        counter: &str,
        cell: &stf::CounterCell,
    ) -> TargetResult<stf::CounterValue> {
        let name = resolve(&self.switch.counter_names(), counter, "counter")?;
        let v = match cell {
            stf::CounterCell::Index(i) => match self.switch.direct_counter_table(&name) {
                Some(t) => {
                    return Err(TargetError::target(AdapterError::DirectCounterByIndex {
                        counter: name,
                        table: t,
                    }))
                }
                None => self.switch.counter_read(&name, *i),
            },
            stf::CounterCell::Entry { table, handle } => {
                let h = EntryHandle(handle.0 as u32);
                self.switch.direct_counter_read(table, h)
            }
        }
        .map_err(TargetError::target)?;
        Ok(stf::CounterValue {
            packets: v.packets,
            bytes: v.bytes,
        })
    }

    fn counter_write(
        &mut self,
        counter: &str,
        index: u64,
        value: stf::CounterValue,
    ) -> TargetResult<()> {
        let name = resolve(&self.switch.counter_names(), counter, "counter")?;
        let v = CounterValue {
            packets: value.packets,
            bytes: value.bytes,
        };
        self.switch
            .counter_write(&name, index, v)
            .map_err(TargetError::target)
    }

    fn meter_set_rates(
        &mut self,
        meter: &str,
        index: Option<u64>,
        rates: &[stf::MeterRate],
    ) -> TargetResult<()> {
        let name = resolve(&self.switch.meter_names(), meter, "meter")?;
        let rates: Vec<MeterRate> = rates
            .iter()
            .map(|r| MeterRate {
                rate_per_us: r.rate,
                burst: r.burst,
            })
            .collect();
        self.switch
            .meter_set_rates(&name, index, &rates)
            .map_err(TargetError::target)
    }

    fn meter_get_rates(&mut self, meter: &str, index: u64) -> TargetResult<Vec<stf::MeterRate>> {
        let name = resolve(&self.switch.meter_names(), meter, "meter")?;
        let rates = self
            .switch
            .meter_get_rates(&name, index)
            .map_err(TargetError::target)?;
        Ok(rates
            .into_iter()
            .map(|r| stf::MeterRate {
                rate: r.rate_per_us,
                burst: r.burst,
            })
            .collect())
    }
}
