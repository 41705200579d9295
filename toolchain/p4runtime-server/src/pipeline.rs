//! A committed pipeline: the P4Info, the BMv2 JSON it was checked against, and the P4Info id →
//! engine name mapping built once when the pipeline is verified.

use std::collections::HashMap;

use p4_bmv2_json::MatchType;
use p4runtime_proto::p4info::{match_field, P4Info};
use p4runtime_proto::p4runtime::forwarding_pipeline_config::Cookie;
use switch_v1model::{Switch, SwitchConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
}

#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub id: u32,
    pub kind: Kind,
    pub width: u32,
}

#[derive(Debug, Clone)]
pub struct TableInfo {
    pub name: String,
    pub keys: Vec<KeyInfo>,
    /// Action ids the table accepts (P4Info `action_refs`).
    pub actions: Vec<u32>,
    pub needs_priority: bool,
    pub is_const: bool,
    pub indirect: bool,
    /// P4Info `idle_timeout_behavior` is NOTIFY_CONTROL.
    pub supports_timeout: bool,
    /// The action profile (engine name) of an indirect table.
    pub profile: Option<String>,
    /// The P4Info id of the table's direct meter.
    pub direct_meter: Option<u32>,
    /// The P4Info id of the table's direct counter.
    pub direct_counter: Option<u32>,
}

/// A parser value set: engine name, (match field id, bitwidth) in P4Info order, size.
#[derive(Debug, Clone)]
pub struct ValueSetInfo {
    pub name: String,
    pub fields: Vec<(u32, u32)>,
    pub size: usize,
}

#[derive(Debug, Clone)]
pub struct ProfileInfo {
    pub name: String,
    /// Actions its members may use (those of its first table).
    pub actions: Vec<u32>,
    pub with_selector: bool,
    pub max_group_size: i32,
}

#[derive(Debug, Clone)]
pub struct ActionInfo {
    pub name: String,
    /// (param id, bitwidth) in P4Info order, which is the engine's argument order.
    pub params: Vec<(u32, u32)>,
}

/// One `@controller_header` header: (metadata id, bitwidth) in wire order.
pub type PacketHeader = Vec<(u32, u32)>;

#[derive(Debug)]
pub struct Pipeline {
    pub p4info: P4Info,
    pub device_config: Vec<u8>,
    pub cookie: Option<Cookie>,
    pub tables: HashMap<u32, TableInfo>,
    pub table_ids: HashMap<String, u32>,
    pub actions: HashMap<u32, ActionInfo>,
    pub action_ids: HashMap<String, u32>,
    pub packet_out: Option<PacketHeader>,
    pub packet_in: Option<PacketHeader>,
    /// Indexed counters: id → (engine name, size).
    pub counters: HashMap<u32, (String, u64)>,
    /// Registers: id → (engine name, size, cell width).
    pub registers: HashMap<u32, (String, u64, u32)>,
    pub profiles: HashMap<u32, ProfileInfo>,
    /// Indexed meters: id → (engine name, size).
    pub meters: HashMap<u32, (String, u64)>,
    /// Digests: id → learn list name (p4c names both after the digested type).
    pub digests: HashMap<u32, String>,
    /// Direct meters: id → the P4Info id of their table.
    pub direct_meters: HashMap<u32, u32>,
    pub value_sets: HashMap<u32, ValueSetInfo>,
}

/// Loads the JSON and checks the P4Info against it; returns the mapping and a fresh engine.
pub fn verify(
    p4info: P4Info,
    device_config: Vec<u8>,
    cookie: Option<Cookie>,
    config: SwitchConfig,
) -> Result<(Pipeline, Switch), String> {
    let text = std::str::from_utf8(&device_config)
        .map_err(|e| format!("p4_device_config is not UTF-8 BMv2 JSON: {e}"))?;
    let sw = Switch::from_json(text, config)
        .map_err(|e| format!("p4_device_config (BMv2 JSON): {e}"))?;
    let engine_tables = sw.tables();

    let mut actions = HashMap::new();
    let mut action_ids = HashMap::new();
    for a in &p4info.actions {
        let pre = a.preamble.clone().unwrap_or_default();
        let params = a
            .params
            .iter()
            .map(|p| (p.id, u32::try_from(p.bitwidth).unwrap_or(0)))
            .collect();
        action_ids.insert(pre.name.clone(), pre.id);
        actions.insert(
            pre.id,
            ActionInfo {
                name: pre.name,
                params,
            },
        );
    }

    let mut tables = HashMap::new();
    let mut table_ids = HashMap::new();
    for t in &p4info.tables {
        let pre = t.preamble.clone().unwrap_or_default();
        let here = format!("P4Info table \"{}\" (id {})", pre.name, pre.id);
        let Some(et) = engine_tables.iter().find(|e| e.name == pre.name) else {
            return Err(format!("{here}: no such table in the BMv2 JSON"));
        };
        let mut keys = Vec::new();
        for mf in &t.match_fields {
            let kind = match mf.r#match {
                Some(match_field::Match::MatchType(k)) => match k {
                    2 => Kind::Exact,
                    3 => Kind::Lpm,
                    4 => Kind::Ternary,
                    5 => Kind::Range,
                    6 => Kind::Optional,
                    _ => {
                        return Err(format!(
                            "{here}: match field \"{}\": unsupported match type {k}",
                            mf.name
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "{here}: match field \"{}\": unsupported match kind",
                        mf.name
                    ))
                }
            };
            let Some(ek) = et.keys.iter().find(|k| k.name == mf.name) else {
                return Err(format!(
                    "{here}: match field \"{}\" is not a key of the JSON table",
                    mf.name
                ));
            };
            let ekind = match ek.match_type {
                MatchType::Exact | MatchType::Valid => Kind::Exact,
                MatchType::Lpm => Kind::Lpm,
                MatchType::Ternary => Kind::Ternary,
                MatchType::Range => Kind::Range,
                MatchType::Optional => Kind::Optional,
            };
            let width = u32::try_from(mf.bitwidth).unwrap_or(0);
            if ekind != kind || ek.width != width {
                return Err(format!(
                    "{here}: match field \"{}\" is {kind:?} bit<{width}> in P4Info but {ekind:?} bit<{}> in the JSON",
                    mf.name, ek.width
                ));
            }
            keys.push(KeyInfo {
                id: mf.id,
                kind,
                width,
            });
        }
        if keys.len() != et.keys.len() {
            return Err(format!(
                "{here}: {} match fields in P4Info, {} keys in the JSON",
                keys.len(),
                et.keys.len()
            ));
        }
        let mut ids = Vec::new();
        for r in &t.action_refs {
            let Some(a) = actions.get(&r.id) else {
                return Err(format!(
                    "{here}: action ref {} is not a P4Info action",
                    r.id
                ));
            };
            let Some(ea) = et.actions.iter().find(|e| e.name == a.name) else {
                return Err(format!(
                    "{here}: action \"{}\" is not an action of the JSON table",
                    a.name
                ));
            };
            let widths: Vec<u32> = a.params.iter().map(|p| p.1).collect();
            let ewidths: Vec<u32> = ea.params.iter().map(|p| p.1).collect();
            if widths != ewidths {
                return Err(format!(
                    "action \"{}\": parameter widths {widths:?} in P4Info, {ewidths:?} in the JSON",
                    a.name
                ));
            }
            ids.push(r.id);
        }
        // Ageing needs the engine's hit bits, which only `support_timeout` tables keep.
        let supports_timeout = t.idle_timeout_behavior != 0;
        if supports_timeout != et.support_timeout {
            return Err(format!(
                "{here}: idle timeout {} in P4Info but support_timeout is {} in the JSON",
                if supports_timeout {
                    "NOTIFY_CONTROL"
                } else {
                    "NO_TIMEOUT"
                },
                et.support_timeout
            ));
        }
        let needs_priority = keys
            .iter()
            .any(|k| matches!(k.kind, Kind::Ternary | Kind::Range | Kind::Optional));
        table_ids.insert(pre.name.clone(), pre.id);
        tables.insert(
            pre.id,
            TableInfo {
                name: pre.name,
                keys,
                actions: ids,
                needs_priority,
                is_const: t.is_const_table,
                indirect: et.has_profile,
                supports_timeout,
                profile: p4info
                    .action_profiles
                    .iter()
                    .find(|ap| {
                        pre_id(&ap.preamble) == t.implementation_id && t.implementation_id != 0
                    })
                    .map(|ap| pre_name(&ap.preamble)),
                direct_meter: p4info
                    .direct_meters
                    .iter()
                    .map(|m| pre_id(&m.preamble))
                    .find(|id| t.direct_resource_ids.contains(id)),
                // Set below from the direct counter's `direct_table_id`, once it is checked.
                direct_counter: None,
            },
        );
    }
    for c in &p4info.direct_counters {
        let name = pre_name(&c.preamble);
        let here = format!("P4Info direct counter \"{name}\"");
        let Some(json_table) = sw.direct_counter_table(&name) else {
            return Err(format!("{here}: no such direct counter in the BMv2 JSON"));
        };
        let Some(t) = tables.get_mut(&c.direct_table_id) else {
            return Err(format!(
                "{here}: direct_table_id {} is not a P4Info table",
                c.direct_table_id
            ));
        };
        if json_table != t.name {
            return Err(format!(
                "{here}: attached to \"{}\" in P4Info but to \"{json_table}\" in the BMv2 JSON",
                t.name
            ));
        }
        t.direct_counter = Some(pre_id(&c.preamble));
    }
    let mut direct_meters = HashMap::new();
    for m in &p4info.direct_meters {
        let here = format!("P4Info direct meter \"{}\"", pre_name(&m.preamble));
        if sw.direct_meter_table(&pre_name(&m.preamble)).is_none() {
            return Err(format!("{here}: no such direct meter in the BMv2 JSON"));
        }
        let Some(t) = tables.get(&m.direct_table_id) else {
            return Err(format!(
                "{here}: direct_table_id {} is not a P4Info table",
                m.direct_table_id
            ));
        };
        if sw.direct_meter_table(&pre_name(&m.preamble)).as_deref() != Some(t.name.as_str()) {
            return Err(format!(
                "{here}: attached to \"{}\" in P4Info but not in the BMv2 JSON",
                t.name
            ));
        }
        direct_meters.insert(pre_id(&m.preamble), m.direct_table_id);
    }
    let mut value_sets = HashMap::new();
    for v in &p4info.value_sets {
        let name = pre_name(&v.preamble);
        let mut fields = Vec::new();
        for f in &v.r#match {
            if !matches!(f.r#match, Some(match_field::Match::MatchType(2)) | None) {
                return Err(format!(
                    "P4Info value set \"{name}\": field \"{}\" is not an exact match (bmv2 value sets match exactly)",
                    f.name
                ));
            }
            fields.push((f.id, u32::try_from(f.bitwidth).unwrap_or(0)));
        }
        value_sets.insert(
            pre_id(&v.preamble),
            ValueSetInfo {
                name,
                fields,
                size: usize::try_from(v.size).unwrap_or(0),
            },
        );
    }
    for (what, names, have) in [
        (
            "counter",
            p4info
                .counters
                .iter()
                .map(|c| pre_name(&c.preamble))
                .collect::<Vec<_>>(),
            sw.counter_names(),
        ),
        (
            "meter",
            p4info
                .meters
                .iter()
                .map(|c| pre_name(&c.preamble))
                .collect(),
            sw.meter_names(),
        ),
        (
            "register",
            p4info
                .registers
                .iter()
                .map(|c| pre_name(&c.preamble))
                .collect(),
            sw.register_names(),
        ),
    ] {
        if let Some(missing) = names.iter().find(|n| !have.contains(n)) {
            return Err(format!(
                "P4Info {what} \"{missing}\": no such {what} in the BMv2 JSON"
            ));
        }
    }
    let counters = p4info
        .counters
        .iter()
        .map(|c| {
            (
                pre_id(&c.preamble),
                (pre_name(&c.preamble), u64::try_from(c.size).unwrap_or(0)),
            )
        })
        .collect();
    let mut registers = HashMap::new();
    for r in &p4info.registers {
        let name = pre_name(&r.preamble);
        let width = sw
            .register_width(&name)
            .map_err(|e| format!("P4Info register \"{name}\": {e}"))?;
        registers.insert(
            pre_id(&r.preamble),
            (name, u64::try_from(r.size).unwrap_or(0), width),
        );
    }
    let profiles = p4info
        .action_profiles
        .iter()
        .map(|ap| {
            let actions = ap
                .table_ids
                .first()
                .and_then(|t| tables.get(t))
                .map(|t: &TableInfo| t.actions.clone())
                .unwrap_or_default();
            (
                pre_id(&ap.preamble),
                ProfileInfo {
                    name: pre_name(&ap.preamble),
                    actions,
                    with_selector: ap.with_selector,
                    max_group_size: ap.max_group_size,
                },
            )
        })
        .collect();
    let meters = p4info
        .meters
        .iter()
        .map(|m| {
            (
                pre_id(&m.preamble),
                (pre_name(&m.preamble), u64::try_from(m.size).unwrap_or(0)),
            )
        })
        .collect();
    let digests = p4info
        .digests
        .iter()
        .map(|d| (pre_id(&d.preamble), pre_name(&d.preamble)))
        .collect();
    let header = |which: &str| {
        p4info
            .controller_packet_metadata
            .iter()
            .find(|c| pre_name(&c.preamble) == which)
            .map(|c| {
                c.metadata
                    .iter()
                    .map(|m| (m.id, u32::try_from(m.bitwidth).unwrap_or(0)))
                    .collect()
            })
    };
    let packet_out = header("packet_out");
    let packet_in = header("packet_in");
    Ok((
        Pipeline {
            p4info,
            device_config,
            cookie,
            tables,
            table_ids,
            actions,
            action_ids,
            packet_out,
            packet_in,
            counters,
            registers,
            profiles,
            digests,
            meters,
            direct_meters,
            value_sets,
        },
        sw,
    ))
}

fn pre_name(p: &Option<p4runtime_proto::p4info::Preamble>) -> String {
    p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
}

fn pre_id(p: &Option<p4runtime_proto::p4info::Preamble>) -> u32 {
    p.as_ref().map_or(0, |p| p.id)
}
