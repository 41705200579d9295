//! A committed pipeline: the P4Info, the BMv2 JSON it was checked against, and the P4Info id →
//! engine name mapping built once when the pipeline is verified.

use std::collections::HashMap;
use std::sync::Arc;

use p4_bmv2_json::MatchType;
use p4runtime_proto::p4info::{match_field, P4Info};
use p4runtime_proto::p4runtime::forwarding_pipeline_config::Cookie;
use switch_v1model::{ApiError, Switch, SwitchConfig};

/// Why a pipeline's P4Info and BMv2 JSON do not fit together (SetForwardingPipelineConfig
/// answers INVALID_ARGUMENT with this text).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("p4_device_config is not UTF-8 BMv2 JSON: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error("p4_device_config (BMv2 JSON): {0}")]
    Json(#[from] p4_bmv2_json::JsonError),
    #[error("P4Info table \"{name}\" (id {id}): {problem}")]
    Table {
        name: String,
        id: u32,
        problem: TableMismatch,
    },
    #[error("action \"{action}\": parameter widths {p4info:?} in P4Info, {json:?} in the JSON")]
    ParamWidths {
        action: String,
        p4info: Vec<u32>,
        json: Vec<u32>,
    },
    /// `kind` is "direct counter", "counter", "meter", ...
    #[error("P4Info {kind} \"{name}\": no such {kind} in the BMv2 JSON")]
    Missing { kind: &'static str, name: String },
    #[error("P4Info {kind} \"{name}\": {problem}")]
    Direct {
        kind: &'static str,
        name: String,
        problem: DirectMismatch,
    },
    #[error("P4Info value set \"{name}\": field \"{field}\" is not an exact match (bmv2 value sets match exactly)")]
    ValueSetNotExact { name: String, field: String },
    #[error("P4Info register \"{name}\": {source}")]
    Register { name: String, source: ApiError },
}

/// How a P4Info table differs from its BMv2 JSON table.
#[derive(Debug, thiserror::Error)]
pub enum TableMismatch {
    #[error("no such table in the BMv2 JSON")]
    NotInJson,
    #[error("match field \"{field}\": unsupported match type {code}")]
    MatchType { field: String, code: i32 },
    #[error("match field \"{field}\": unsupported match kind")]
    MatchKind { field: String },
    #[error("match field \"{field}\" is not a key of the JSON table")]
    NotAKey { field: String },
    #[error("match field \"{field}\" is {p4info:?} bit<{width}> in P4Info but {json:?} bit<{json_width}> in the JSON")]
    KeyType {
        field: String,
        p4info: Kind,
        width: u32,
        json: Kind,
        json_width: u32,
    },
    #[error("{p4info} match fields in P4Info, {json} keys in the JSON")]
    KeyCount { p4info: usize, json: usize },
    #[error("action ref {0} is not a P4Info action")]
    UnknownActionRef(u32),
    #[error("action \"{0}\" is not an action of the JSON table")]
    ActionNotInTable(String),
    #[error("idle timeout {} in P4Info but support_timeout is {json} in the JSON", idle_timeout(.p4info))]
    IdleTimeout { p4info: bool, json: bool },
}

fn idle_timeout(supported: &bool) -> &'static str {
    if *supported {
        "NOTIFY_CONTROL"
    } else {
        "NO_TIMEOUT"
    }
}

/// How a P4Info direct counter or meter differs from the BMv2 JSON.
#[derive(Debug, thiserror::Error)]
pub enum DirectMismatch {
    #[error("direct_table_id {0} is not a P4Info table")]
    UnknownTable(u32),
    #[error("attached to \"{p4info}\" in P4Info but to \"{json}\" in the BMv2 JSON")]
    AttachedElsewhere { p4info: String, json: String },
    #[error("attached to \"{0}\" in P4Info but not in the BMv2 JSON")]
    NotAttached(String),
}

/// For maps looked up once or more per update of every write: a fast hasher (no HashDoS
/// concern: the keys come from the primary controller, which owns the tables anyway).
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

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
    /// Engine name; shared with the write ops that name the table.
    pub name: Arc<str>,
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
    /// Engine name; shared with the write ops that name the action.
    pub name: Arc<str>,
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
    /// Looked up by every update of a write, as `actions` is by every entry with an action.
    pub tables: FastMap<u32, TableInfo>,
    pub table_ids: HashMap<String, u32>,
    pub actions: FastMap<u32, ActionInfo>,
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
) -> Result<(Pipeline, Switch), PipelineError> {
    let text = std::str::from_utf8(&device_config)?;
    let sw = Switch::from_json(text, config)?;
    let engine_tables = sw.tables();

    let mut actions = FastMap::default();
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
                name: pre.name.into(),
                params,
            },
        );
    }

    let mut tables = FastMap::default();
    let mut table_ids = HashMap::new();
    for t in &p4info.tables {
        let pre = t.preamble.clone().unwrap_or_default();
        let here = |problem| PipelineError::Table {
            name: pre.name.clone(),
            id: pre.id,
            problem,
        };
        let Some(et) = engine_tables.iter().find(|e| e.name == pre.name) else {
            return Err(here(TableMismatch::NotInJson));
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
                        return Err(here(TableMismatch::MatchType {
                            field: mf.name.clone(),
                            code: k,
                        }))
                    }
                },
                _ => {
                    return Err(here(TableMismatch::MatchKind {
                        field: mf.name.clone(),
                    }))
                }
            };
            let Some(ek) = et.keys.iter().find(|k| k.name == mf.name) else {
                return Err(here(TableMismatch::NotAKey {
                    field: mf.name.clone(),
                }));
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
                return Err(here(TableMismatch::KeyType {
                    field: mf.name.clone(),
                    p4info: kind,
                    width,
                    json: ekind,
                    json_width: ek.width,
                }));
            }
            keys.push(KeyInfo {
                id: mf.id,
                kind,
                width,
            });
        }
        if keys.len() != et.keys.len() {
            return Err(here(TableMismatch::KeyCount {
                p4info: keys.len(),
                json: et.keys.len(),
            }));
        }
        let mut ids = Vec::new();
        for r in &t.action_refs {
            let Some(a) = actions.get(&r.id) else {
                return Err(here(TableMismatch::UnknownActionRef(r.id)));
            };
            let Some(ea) = et.actions.iter().find(|e| e.name == *a.name) else {
                return Err(here(TableMismatch::ActionNotInTable(a.name.to_string())));
            };
            let widths: Vec<u32> = a.params.iter().map(|p| p.1).collect();
            let ewidths: Vec<u32> = ea.params.iter().map(|p| p.1).collect();
            if widths != ewidths {
                return Err(PipelineError::ParamWidths {
                    action: a.name.to_string(),
                    p4info: widths,
                    json: ewidths,
                });
            }
            ids.push(r.id);
        }
        // Ageing needs the engine's hit bits, which only `support_timeout` tables keep.
        let supports_timeout = t.idle_timeout_behavior != 0;
        if supports_timeout != et.support_timeout {
            return Err(here(TableMismatch::IdleTimeout {
                p4info: supports_timeout,
                json: et.support_timeout,
            }));
        }
        let needs_priority = keys
            .iter()
            .any(|k| matches!(k.kind, Kind::Ternary | Kind::Range | Kind::Optional));
        table_ids.insert(pre.name.clone(), pre.id);
        tables.insert(
            pre.id,
            TableInfo {
                name: pre.name.into(),
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
        let kind = "direct counter";
        let Some(json_table) = sw.direct_counter_table(&name) else {
            return Err(PipelineError::Missing { kind, name });
        };
        let Some(t) = tables.get_mut(&c.direct_table_id) else {
            return Err(PipelineError::Direct {
                kind,
                name,
                problem: DirectMismatch::UnknownTable(c.direct_table_id),
            });
        };
        if json_table != *t.name {
            return Err(PipelineError::Direct {
                kind,
                name,
                problem: DirectMismatch::AttachedElsewhere {
                    p4info: t.name.to_string(),
                    json: json_table,
                },
            });
        }
        t.direct_counter = Some(pre_id(&c.preamble));
    }
    let mut direct_meters = HashMap::new();
    for m in &p4info.direct_meters {
        let (kind, name) = ("direct meter", pre_name(&m.preamble));
        let Some(json_table) = sw.direct_meter_table(&name) else {
            return Err(PipelineError::Missing { kind, name });
        };
        let Some(t) = tables.get(&m.direct_table_id) else {
            return Err(PipelineError::Direct {
                kind,
                name,
                problem: DirectMismatch::UnknownTable(m.direct_table_id),
            });
        };
        if json_table != *t.name {
            return Err(PipelineError::Direct {
                kind,
                name,
                problem: DirectMismatch::NotAttached(t.name.to_string()),
            });
        }
        direct_meters.insert(pre_id(&m.preamble), m.direct_table_id);
    }
    let mut value_sets = HashMap::new();
    for v in &p4info.value_sets {
        let name = pre_name(&v.preamble);
        let mut fields = Vec::new();
        for f in &v.r#match {
            if !matches!(f.r#match, Some(match_field::Match::MatchType(2)) | None) {
                return Err(PipelineError::ValueSetNotExact {
                    name,
                    field: f.name.clone(),
                });
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
            return Err(PipelineError::Missing {
                kind: what,
                name: missing.clone(),
            });
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
            .map_err(|source| PipelineError::Register {
                name: name.clone(),
                source,
            })?;
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
