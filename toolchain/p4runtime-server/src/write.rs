//! Write: P4Runtime updates translated (outside the data plane) into engine operations, then
//! applied in one `Dataplane::exec`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use p4runtime_proto::google::rpc::Code;
pub use p4runtime_proto::p4runtime::digest_entry::Config as DigestConfig;
use p4runtime_proto::p4runtime::{
    entity, field_match::FieldMatchType, p4_data, packet_replication_engine_entry as pre, replica,
    table_action, update, ActionProfileActionSet, ActionProfileGroup, ActionProfileMember,
    CloneSessionEntry, CounterData, Entity, MeterConfig, MulticastGroupEntry, TableEntry, Update,
    ValueSetEntry,
};
use smallvec::{smallvec, SmallVec};
use switch_v1model::{
    ApiError, CounterValue, EntryHandle, ErrorCode, FieldMatch, Switch, TableAction,
};

use crate::bytes::{all_ones, bits_past_prefix, to_engine, ByteStringError};
use crate::pipeline::{FastMap, Kind, Pipeline, TableInfo};
use crate::wire::{self, MatchRef};

/// Why one update failed: one variant per canonical code the write path reports, so the code
/// is decided where the failure is (as bmv2's error mapping and PI's report_error do), and the
/// message names the object. Spec 12.4 sends it as the update's `p4.v1.Error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    #[error("INVALID_ARGUMENT: {0}")]
    InvalidArgument(String),
    #[error("NOT_FOUND: {0}")]
    NotFound(String),
    #[error("ALREADY_EXISTS: {0}")]
    AlreadyExists(String),
    #[error("PERMISSION_DENIED: {0}")]
    PermissionDenied(String),
    #[error("RESOURCE_EXHAUSTED: {0}")]
    ResourceExhausted(String),
    #[error("FAILED_PRECONDITION: {0}")]
    FailedPrecondition(String),
    #[error("ABORTED: {0}")]
    Aborted(String),
    #[error("OUT_OF_RANGE: {0}")]
    OutOfRange(String),
    #[error("UNIMPLEMENTED: {0}")]
    Unimplemented(String),
}

/// A byte string that is not a value of its field's width is the client's invalid argument.
impl From<ByteStringError> for UpdateError {
    fn from(e: ByteStringError) -> UpdateError {
        UpdateError::InvalidArgument(e.to_string())
    }
}

impl UpdateError {
    /// The canonical gRPC code (`p4.v1.Error.canonical_code`).
    pub fn code(&self) -> Code {
        match self {
            UpdateError::InvalidArgument(_) => Code::InvalidArgument,
            UpdateError::NotFound(_) => Code::NotFound,
            UpdateError::AlreadyExists(_) => Code::AlreadyExists,
            UpdateError::PermissionDenied(_) => Code::PermissionDenied,
            UpdateError::ResourceExhausted(_) => Code::ResourceExhausted,
            UpdateError::FailedPrecondition(_) => Code::FailedPrecondition,
            UpdateError::Aborted(_) => Code::Aborted,
            UpdateError::OutOfRange(_) => Code::OutOfRange,
            UpdateError::Unimplemented(_) => Code::Unimplemented,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            UpdateError::InvalidArgument(m)
            | UpdateError::NotFound(m)
            | UpdateError::AlreadyExists(m)
            | UpdateError::PermissionDenied(m)
            | UpdateError::ResourceExhausted(m)
            | UpdateError::FailedPrecondition(m)
            | UpdateError::Aborted(m)
            | UpdateError::OutOfRange(m)
            | UpdateError::Unimplemented(m) => m,
        }
    }
}

/// A table entry's match key and priority.
pub type Key = (Vec<FieldMatch>, i32);

/// An entry's idle timeout, and the last hit whose idle period was already notified (one
/// notification per idle period: a hit starts a new one). `handle` is the entry's in the
/// engine, whose hits are tracked by handle.
#[derive(Debug, Clone, Copy)]
pub struct Idle {
    pub timeout_ns: i64,
    pub notified_for: Option<Instant>,
    pub handle: EntryHandle,
}

/// A one-shot entry's hidden objects, which the server creates and owns (as PI does): engine
/// member handles, and the engine group id for a selector.
#[derive(Debug, Clone)]
pub struct OneShot {
    pub profile: String,
    pub set: ActionProfileActionSet,
    pub members: Vec<u32>,
    pub group: Option<u32>,
}

/// What the server keeps beside the engine: the PRE entries as written (with the engine's node
/// handles) so they read back unchanged, and what P4Runtime gives an entry that the engine does
/// not keep. Entries themselves are found by key in the engine's table (`Switch::table_find`):
/// a map of its own here would double the work and memory of every write.
#[derive(Default)]
pub struct Index {
    pub mcast: BTreeMap<u32, (MulticastGroupEntry, Vec<u32>)>,
    pub clones: BTreeMap<u32, CloneSessionEntry>,
    /// Per action profile: P4Runtime member id → (engine member handle, member as written),
    /// and the groups as written.
    pub members: HashMap<String, BTreeMap<u32, (u32, ActionProfileMember)>>,
    pub groups: HashMap<String, BTreeMap<u32, ActionProfileGroup>>,
    /// Entries that set an idle_timeout_ns, per engine table.
    pub idle: FastMap<Arc<str>, FastMap<Key, Idle>>,
    /// Last hit (or insertion) of every entry of a table that supports idle timeout.
    pub last_hit: FastMap<Arc<str>, FastMap<EntryHandle, Instant>>,
    /// One-shot entries per table, and how many each action profile has.
    pub oneshot: FastMap<Arc<str>, FastMap<Key, OneShot>>,
    pub oneshot_count: HashMap<String, usize>,
    /// The last engine group id given to a hidden one-shot group.
    pub oneshot_group: u32,
    /// Value sets as written, with their engine values.
    pub value_sets: BTreeMap<u32, (ValueSetEntry, Vec<Vec<u8>>)>,
    /// DigestEntry configs by digest id (only configured digests are streamed).
    pub digests: BTreeMap<u32, DigestConfig>,
    /// Entries' `controller_metadata` and `metadata`, per engine table (only those that set
    /// them).
    pub cookies: FastMap<Arc<str>, FastMap<Key, Cookie>>,
}

impl Index {
    /// Whether entries of `table` have idle timeouts or cookies here, which an insert must
    /// clear for its key.
    fn keeps_keys(&self, table: &str) -> bool {
        self.idle.get(table).is_some_and(|t| !t.is_empty())
            || self.cookies.get(table).is_some_and(|t| !t.is_empty())
    }
}

/// One action of a one-shot action set: engine name, padded arguments, weight.
pub type WeightedAction = (Arc<str>, Vec<Vec<u8>>, u32);

#[derive(Debug, Clone)]
pub enum Act {
    Action {
        name: Arc<str>,
        args: Vec<Vec<u8>>,
    },
    /// An engine member handle.
    Member(u32),
    Group(u32),
    /// A P4Runtime member id, resolved to an engine handle when applied.
    P4Member {
        profile: String,
        id: u32,
    },
    /// A one-shot action set: (action, args, weight) for the hidden members.
    OneShot {
        profile: String,
        selector: bool,
        actions: Vec<WeightedAction>,
        set: ActionProfileActionSet,
    },
}

/// Rates for the engine (committed first, then peak, per microsecond); `None` = unconfigured.
pub type Rates = Option<Vec<switch_v1model::MeterRate>>;

/// What a TableEntry INSERT or MODIFY sets besides its action: the direct meter's rates and the
/// direct counter's value (`None` = not given: a MODIFY leaves them as they are), and the
/// controller's opaque `controller_metadata` and `metadata`, kept to be read back.
#[derive(Debug, Clone, Default)]
pub struct Direct {
    pub meter: Option<Rates>,
    pub counter: Option<CounterValue>,
    pub cookie: Cookie,
}

impl Direct {
    /// Nothing besides the action: what bulk inserts give.
    fn is_empty(&self) -> bool {
        self.meter.is_none() && self.counter.is_none() && self.cookie == Cookie::default()
    }
}

/// `controller_metadata` and `metadata` of a table entry.
pub type Cookie = (u64, Vec<u8>);

#[derive(Debug, Clone)]
pub enum Op {
    Insert {
        table: Arc<str>,
        key: Key,
        needs_priority: bool,
        act: Act,
        idle_ns: i64,
        /// The table supports idle timeout: the entry's hits are tracked.
        ageing: bool,
        direct: Direct,
    },
    Modify {
        table: Arc<str>,
        key: Key,
        act: Act,
        idle_ns: i64,
        direct: Direct,
    },
    DirectMeter {
        table: Arc<str>,
        key: Key,
        rates: Rates,
    },
    DirectCounter {
        table: Arc<str>,
        key: Key,
        value: CounterValue,
    },
    ValueSet {
        id: u32,
        name: String,
        values: Vec<Vec<u8>>,
        entry: ValueSetEntry,
    },
    Delete {
        table: Arc<str>,
        key: (Vec<FieldMatch>, i32),
    },
    SetDefault {
        table: Arc<str>,
        act: Act,
    },
    Counter {
        name: String,
        index: u64,
        value: CounterValue,
    },
    Register {
        name: String,
        index: u64,
        value: u128,
    },
    Mcast {
        ty: update::Type,
        entry: MulticastGroupEntry,
        ports: Vec<(u32, u32)>,
    },
    Member {
        ty: update::Type,
        profile: String,
        entry: ActionProfileMember,
        action: (Arc<str>, Vec<Vec<u8>>),
    },
    Group {
        ty: update::Type,
        profile: String,
        entry: ActionProfileGroup,
    },
    Meter {
        name: String,
        index: Option<u64>,
        rates: Rates,
    },
    Digest {
        ty: update::Type,
        id: u32,
        config: Option<DigestConfig>,
    },
    Clone {
        ty: update::Type,
        entry: CloneSessionEntry,
        port: Option<u32>,
    },
}

pub fn translate(p: &Pipeline, u: &Update) -> Result<Op, UpdateError> {
    let ty = update::Type::try_from(u.r#type).unwrap_or(update::Type::Unspecified);
    let Some(Entity { entity: Some(e) }) = &u.entity else {
        return Err(UpdateError::InvalidArgument(
            "update without an entity".into(),
        ));
    };
    match e {
        entity::Entity::TableEntry(te) => translate_table(p, ty, te),
        entity::Entity::CounterEntry(c) => {
            let Some((name, size)) = p.counters.get(&c.counter_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no counter with id {}",
                    c.counter_id
                )));
            };
            modify_only(ty, "CounterEntry")?;
            let index = cell_index(c.index.as_ref().map(|i| i.index), *size, name)?;
            let v = counter_value(c.data.as_ref(), &format!("counter \"{name}\""))?;
            Ok(Op::Counter {
                name: name.clone(),
                index,
                value: v,
            })
        }
        entity::Entity::RegisterEntry(r) => {
            let Some((name, size, width)) = p.registers.get(&r.register_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no register with id {}",
                    r.register_id
                )));
            };
            modify_only(ty, "RegisterEntry")?;
            let index = cell_index(r.index.as_ref().map(|i| i.index), *size, name)?;
            let Some(p4_data::Data::Bitstring(bits)) =
                r.data.as_ref().and_then(|d| d.data.as_ref())
            else {
                return Err(UpdateError::InvalidArgument(format!(
                    "register \"{name}\": data must be a bitstring"
                )));
            };
            let v = to_engine(bits, *width, format_args!("register \"{name}\""))?;
            let value = v.iter().fold(0u128, |a, b| (a << 8) | u128::from(*b));
            Ok(Op::Register {
                name: name.clone(),
                index,
                value,
            })
        }
        entity::Entity::MeterEntry(m) => {
            let Some((name, size)) = p.meters.get(&m.meter_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no meter with id {}",
                    m.meter_id
                )));
            };
            modify_only(ty, "MeterEntry")?;
            // No index = every cell (spec 9.5 allows an index wildcard in a meter write).
            let index = match m.index.as_ref() {
                None => None,
                Some(i) => Some(cell_index(Some(i.index), *size, name)?),
            };
            Ok(Op::Meter {
                name: name.clone(),
                index,
                rates: meter_rates(m.config.as_ref(), name)?,
            })
        }
        entity::Entity::DirectMeterEntry(d) => {
            let te = d.table_entry.clone().unwrap_or_default();
            let t = direct_table(p, ty, &te, "DirectMeterEntry", "meter", |t| {
                t.direct_meter.is_some()
            })?;
            Ok(Op::DirectMeter {
                table: t.name.clone(),
                key: direct_key(t, &te)?,
                rates: meter_rates(d.config.as_ref(), &t.name)?,
            })
        }
        entity::Entity::DirectCounterEntry(d) => {
            let te = d.table_entry.clone().unwrap_or_default();
            let t = direct_table(p, ty, &te, "DirectCounterEntry", "counter", |t| {
                t.direct_counter.is_some()
            })?;
            Ok(Op::DirectCounter {
                table: t.name.clone(),
                key: direct_key(t, &te)?,
                // No data = zero, as a CounterData with every field at its default.
                value: counter_value(
                    d.data.as_ref(),
                    &format!("direct counter of \"{}\"", t.name),
                )?,
            })
        }
        entity::Entity::ValueSetEntry(v) => {
            let Some(info) = p.value_sets.get(&v.value_set_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no value set with id {}",
                    v.value_set_id
                )));
            };
            // Spec 9.8: a value set is written whole, by MODIFY.
            modify_only(ty, "ValueSetEntry")?;
            if v.members.len() > info.size {
                return Err(UpdateError::ResourceExhausted(format!(
                    "value set \"{}\": {} members, size {}",
                    info.name,
                    v.members.len(),
                    info.size
                )));
            }
            let values = v
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| value_set_member(info, i, &m.r#match))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Op::ValueSet {
                id: v.value_set_id,
                name: info.name.clone(),
                values,
                entry: v.clone(),
            })
        }
        entity::Entity::DigestEntry(d) => {
            if !p.digests.contains_key(&d.digest_id) {
                return Err(UpdateError::NotFound(format!(
                    "no digest with id {}",
                    d.digest_id
                )));
            }
            let config = match (&d.config, ty) {
                (_, update::Type::Delete) => None,
                (Some(c), _)
                    if c.max_timeout_ns >= 0 && c.max_list_size >= 0 && c.ack_timeout_ns >= 0 =>
                {
                    Some(*c)
                }
                (Some(_), _) => {
                    return Err(UpdateError::InvalidArgument(
                        "digest config values must be >= 0".into(),
                    ))
                }
                (None, _) => {
                    return Err(UpdateError::InvalidArgument(
                        "DigestEntry without a config".into(),
                    ))
                }
            };
            Ok(Op::Digest {
                ty,
                id: d.digest_id,
                config,
            })
        }
        entity::Entity::ActionProfileMember(m) => {
            let Some(prof) = p.profiles.get(&m.action_profile_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no action profile with id {}",
                    m.action_profile_id
                )));
            };
            let action = match (&m.action, ty) {
                (_, update::Type::Delete) => (Arc::from(""), Vec::new()),
                (Some(a), _) => action_args(
                    p,
                    a,
                    &prof.actions,
                    format_args!("action profile \"{}\"", prof.name),
                )?,
                (None, _) => {
                    return Err(UpdateError::InvalidArgument(
                        "member without an action".into(),
                    ))
                }
            };
            Ok(Op::Member {
                ty,
                profile: prof.name.clone(),
                entry: m.clone(),
                action,
            })
        }
        entity::Entity::ActionProfileGroup(g) => {
            let Some(prof) = p.profiles.get(&g.action_profile_id) else {
                return Err(UpdateError::NotFound(format!(
                    "no action profile with id {}",
                    g.action_profile_id
                )));
            };
            if !prof.with_selector {
                return Err(UpdateError::InvalidArgument(format!(
                    "action profile \"{}\" has no selector: no groups",
                    prof.name
                )));
            }
            if ty != update::Type::Delete {
                if let Some(m) = g.members.iter().find(|m| m.weight <= 0) {
                    return Err(UpdateError::InvalidArgument(format!(
                        "member {}: weight must be > 0",
                        m.member_id
                    )));
                }
                let limit = if prof.max_group_size > 0 {
                    prof.max_group_size
                } else {
                    i32::MAX
                };
                if g.max_size > limit {
                    return Err(UpdateError::ResourceExhausted(format!(
                        "group max_size {} exceeds the profile's max_group_size {limit}",
                        g.max_size
                    )));
                }
                let size: i64 = g.members.iter().map(|m| i64::from(m.weight)).sum();
                let cap = if g.max_size > 0 { g.max_size } else { limit };
                if size > i64::from(cap) {
                    return Err(UpdateError::ResourceExhausted(format!(
                        "group of total weight {size} exceeds its size limit {cap}"
                    )));
                }
            }
            Ok(Op::Group {
                ty,
                profile: prof.name.clone(),
                entry: g.clone(),
            })
        }
        entity::Entity::PacketReplicationEngineEntry(e) => match &e.r#type {
            Some(pre::Type::MulticastGroupEntry(m)) => {
                if m.multicast_group_id == 0 {
                    return Err(UpdateError::InvalidArgument(
                        "multicast group id 0 is reserved".into(),
                    ));
                }
                let ports = replicas(&m.replicas)?;
                Ok(Op::Mcast {
                    ty,
                    entry: m.clone(),
                    ports,
                })
            }
            Some(pre::Type::CloneSessionEntry(c)) => {
                if c.session_id == 0 {
                    return Err(UpdateError::InvalidArgument(
                        "clone session id 0 is reserved".into(),
                    ));
                }
                if c.packet_length_bytes != 0 {
                    return Err(UpdateError::Unimplemented(
                        "clone session truncation (packet_length_bytes) is not modelled".into(),
                    ));
                }
                let reps = replicas(&c.replicas)?;
                let port = match (ty, reps.as_slice()) {
                    (update::Type::Delete, _) => None,
                    (_, [(port, _)]) => Some(*port),
                    _ => {
                        return Err(UpdateError::Unimplemented(
                            "clone sessions with other than one replica are not implemented".into(),
                        ))
                    }
                };
                Ok(Op::Clone {
                    ty,
                    entry: c.clone(),
                    port,
                })
            }
            None => Err(UpdateError::InvalidArgument(
                "empty PacketReplicationEngineEntry".into(),
            )),
        },
        _ => Err(UpdateError::Unimplemented(
            "this entity type is not implemented for Write".into(),
        )),
    }
}

/// A P4Runtime meter config as engine rates; `None` (no config) resets the meter to
/// unconfigured, which marks every packet green (spec 9.5).
fn meter_rates(c: Option<&MeterConfig>, name: &str) -> Result<Rates, UpdateError> {
    let Some(c) = c else { return Ok(None) };
    if [c.cir, c.cburst, c.pir, c.pburst].iter().any(|v| *v < 0) || c.cir > c.pir {
        return Err(UpdateError::InvalidArgument(format!(
            "meter \"{name}\": rates must be >= 0 and cir <= pir"
        )));
    }
    // eburst belongs to single-rate three-colour meters (P4Runtime 1.4); bmv2 meters are
    // two-rate three-colour (RFC 2698), which have no excess burst.
    if c.eburst != 0 {
        return Err(UpdateError::InvalidArgument(format!(
                "meter \"{name}\": eburst {} given, but this meter is two-rate three-colour (no excess burst)",
                c.eburst
            ),
        ));
    }
    // bmv2's order: committed rate first, then peak; rates per microsecond.
    Ok(Some(vec![
        switch_v1model::MeterRate {
            rate_per_us: c.cir as f64 / 1e6,
            burst: c.cburst as u64,
        },
        switch_v1model::MeterRate {
            rate_per_us: c.pir as f64 / 1e6,
            burst: c.pburst as u64,
        },
    ]))
}

/// One value set member as the engine takes it: the fields' values concatenated, MSB first,
/// right-aligned in whole bytes.
fn value_set_member(
    info: &crate::pipeline::ValueSetInfo,
    i: usize,
    fms: &[p4runtime_proto::p4runtime::FieldMatch],
) -> Result<Vec<u8>, UpdateError> {
    let inv = UpdateError::InvalidArgument;
    let what = format!("value set \"{}\" member {i}", info.name);
    if let Some(f) = fms
        .iter()
        .find(|f| !info.fields.iter().any(|(id, _)| *id == f.field_id))
    {
        return Err(inv(format!("{what}: no match field id {}", f.field_id)));
    }
    let total: u32 = info.fields.iter().map(|f| f.1).sum();
    let mut fields = vec![(vec![0u8], total.div_ceil(8) * 8 - total)];
    for (id, width) in &info.fields {
        let mut given = fms.iter().filter(|f| f.field_id == *id);
        let (Some(f), None) = (given.next(), given.next()) else {
            return Err(inv(format!("{what}: field id {id} must be given once")));
        };
        let Some(FieldMatchType::Exact(e)) = &f.field_match_type else {
            return Err(inv(format!("{what}: field id {id} must be an exact match")));
        };
        let v = to_engine(&e.value, *width, format_args!("{what} field id {id}"))?;
        fields.push((v, *width));
    }
    Ok(crate::bytes::pack_bits(&fields))
}

/// A CounterData as the engine's value; absent = zero.
fn counter_value(d: Option<&CounterData>, what: &str) -> Result<CounterValue, UpdateError> {
    let d = d.copied().unwrap_or_default();
    match (u64::try_from(d.packet_count), u64::try_from(d.byte_count)) {
        (Ok(packets), Ok(bytes)) => Ok(CounterValue { packets, bytes }),
        _ => Err(UpdateError::InvalidArgument(format!(
            "{what}: negative count"
        ))),
    }
}

/// The entry a DirectCounterEntry or DirectMeterEntry names. The engine keeps direct resources
/// for installed entries only, not for the default entry.
fn direct_key(t: &TableInfo, te: &TableEntry) -> Result<Key, UpdateError> {
    if te.is_default_action {
        return Err(UpdateError::Unimplemented(format!(
            "table \"{}\": the default entry has no direct counter or meter here",
            t.name
        )));
    }
    translate_match(t, te)
}

/// The table a Direct{Meter,Counter}Entry names, checked in the order the errors are reported:
/// unknown table, not a MODIFY, no direct `kind` resource on it.
fn direct_table<'p>(
    p: &'p Pipeline,
    ty: update::Type,
    te: &TableEntry,
    entity: &str,
    kind: &str,
    has: impl Fn(&TableInfo) -> bool,
) -> Result<&'p TableInfo, UpdateError> {
    let Some(t) = p.tables.get(&te.table_id) else {
        return Err(UpdateError::NotFound(format!(
            "no table with id {}",
            te.table_id
        )));
    };
    modify_only(ty, entity)?;
    if !has(t) {
        return Err(UpdateError::InvalidArgument(format!(
            "table \"{}\" has no direct {kind}",
            t.name
        )));
    }
    Ok(t)
}

fn modify_only(ty: update::Type, what: &str) -> Result<(), UpdateError> {
    if ty != update::Type::Modify {
        return Err(UpdateError::InvalidArgument(format!(
            "{what} can only be modified"
        )));
    }
    Ok(())
}

fn cell_index(index: Option<i64>, size: u64, name: &str) -> Result<u64, UpdateError> {
    let Some(i) = index else {
        return Err(UpdateError::Unimplemented(format!(
            "\"{name}\": writes need an index (index wildcards are read-only here)"
        )));
    };
    match u64::try_from(i) {
        Ok(i) if i < size => Ok(i),
        // Spec 9.4: an index past the array is OUT_OF_RANGE.
        _ => Err(UpdateError::OutOfRange(format!(
            "\"{name}\": index {i} out of 0..{size}"
        ))),
    }
}

/// (port, instance) per replica; `port` bytes (1.4+) or the deprecated `egress_port`.
fn replicas(rs: &[p4runtime_proto::p4runtime::Replica]) -> Result<Vec<(u32, u32)>, UpdateError> {
    let mut out = Vec::with_capacity(rs.len());
    for r in rs {
        let port = match &r.port_kind {
            #[allow(deprecated)]
            Some(replica::PortKind::EgressPort(p)) => *p,
            Some(replica::PortKind::Port(b)) => {
                let v = to_engine(b, 32, "replica port")?;
                u32::from_be_bytes([v[0], v[1], v[2], v[3]])
            }
            None => {
                return Err(UpdateError::InvalidArgument(
                    "replica without a port".into(),
                ))
            }
        };
        if out.contains(&(port, r.instance)) {
            return Err(UpdateError::InvalidArgument(format!(
                "replica (port {port}, instance {}) given twice",
                r.instance
            )));
        }
        out.push((port, r.instance));
    }
    Ok(out)
}

fn translate_table(p: &Pipeline, ty: update::Type, te: &TableEntry) -> Result<Op, UpdateError> {
    let inv = UpdateError::InvalidArgument;
    let Some(t) = p.tables.get(&te.table_id) else {
        return Err(UpdateError::NotFound(format!(
            "no table with id {}",
            te.table_id
        )));
    };
    if ty == update::Type::Unspecified {
        return Err(inv("update type UNSPECIFIED".into()));
    }
    if t.is_const {
        return Err(UpdateError::PermissionDenied(format!(
            "table \"{}\" has const entries and cannot be written",
            t.name
        )));
    }
    if te.is_default_action {
        if !te.r#match.is_empty() || te.priority != 0 {
            return Err(inv("a default entry has no match and no priority".into()));
        }
        return match ty {
            update::Type::Modify => {
                let act = translate_action(p, t, te)?;
                Ok(Op::SetDefault {
                    table: t.name.clone(),
                    act,
                })
            }
            _ => Err(inv(format!(
                "the default entry of \"{}\" can only be modified",
                t.name
            ))),
        };
    }
    let key = translate_match(t, te)?;
    let table = t.name.clone();
    let idle_ns = te.idle_timeout_ns;
    if idle_ns < 0 || (idle_ns > 0 && !t.supports_timeout) {
        return Err(inv(format!(
            "table \"{}\": idle_timeout_ns {idle_ns} (the table {} idle timeout)",
            t.name,
            if t.supports_timeout {
                "supports"
            } else {
                "has no"
            }
        )));
    }
    if ty == update::Type::Delete {
        return Ok(Op::Delete { table, key });
    }
    let meter = match (&te.meter_config, t.direct_meter) {
        (None, _) => None,
        (Some(c), Some(_)) => Some(meter_rates(Some(c), &t.name)?),
        (Some(_), None) => {
            return Err(inv(format!(
                "table \"{}\" has no direct meter: meter_config not allowed",
                t.name
            )))
        }
    };
    let counter = match (&te.counter_data, t.direct_counter) {
        (None, _) => None,
        (Some(d), Some(_)) => Some(counter_value(
            Some(d),
            &format!("table \"{}\" counter_data", t.name),
        )?),
        (Some(_), None) => {
            return Err(inv(format!(
                "table \"{}\" has no direct counter: counter_data not allowed",
                t.name
            )))
        }
    };
    if te.meter_counter_data.is_some() {
        return Err(UpdateError::Unimplemented(format!(
            "table \"{}\": meter_counter_data (per-colour counters) is not kept by this switch",
            t.name
        )));
    }
    // controller_metadata is deprecated (1.4) for `metadata`; older controllers still set it.
    #[allow(deprecated)]
    let cookie = (te.controller_metadata, te.metadata.clone());
    let direct = Direct {
        meter,
        counter,
        cookie,
    };
    let act = translate_action(p, t, te)?;
    if ty == update::Type::Insert {
        Ok(Op::Insert {
            table,
            key,
            needs_priority: t.needs_priority,
            act,
            idle_ns,
            ageing: t.supports_timeout,
            direct,
        })
    } else {
        Ok(Op::Modify {
            table,
            key,
            act,
            idle_ns,
            direct,
        })
    }
}

/// A plain table entry read by `wire` into the op [`translate`] makes of it, for the entries
/// bulk writes are made of: an INSERT, MODIFY or DELETE of a plain entry (key, action,
/// priority) with a direct action. `None` for anything else, which the caller decodes in full
/// and translates: the checks and errors are [`translate_table`]'s, as both share the key and
/// action checks and a plain entry passes the others.
pub fn translate_wire(p: &Pipeline, u: &wire::PlainEntry) -> Option<Result<Op, UpdateError>> {
    let ty = update::Type::try_from(u.r#type).ok()?;
    let t = p.tables.get(&u.table_id)?;
    if ty == update::Type::Unspecified || t.is_const {
        return None;
    }
    let key = match translate_key(t, u.priority, u.matches.iter().copied()) {
        Ok(key) => key,
        Err(e) => return Some(Err(e)),
    };
    let table = t.name.clone();
    if ty == update::Type::Delete {
        return Some(Ok(Op::Delete { table, key }));
    }
    let action_id = u.action_id.filter(|_| !t.indirect)?;
    let owner = &t.name;
    let args = checked_args(
        p,
        action_id,
        u.params.iter().copied(),
        &t.actions,
        format_args!("table \"{owner}\""),
    );
    let (name, args) = match args {
        Ok(na) => na,
        Err(e) => return Some(Err(e)),
    };
    let act = Act::Action { name, args };
    Some(Ok(if ty == update::Type::Insert {
        Op::Insert {
            table,
            key,
            needs_priority: t.needs_priority,
            act,
            idle_ns: 0,
            ageing: t.supports_timeout,
            direct: Direct::default(),
        }
    } else {
        Op::Modify {
            table,
            key,
            act,
            idle_ns: 0,
            direct: Direct::default(),
        }
    }))
}

/// `table "t" field id N`, formatted only for an error message.
#[derive(Clone, Copy)]
struct FieldName<'a>(&'a str, u32);

impl std::fmt::Display for FieldName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "table \"{}\" field id {}", self.0, self.1)
    }
}

impl<'a> From<&'a FieldMatchType> for MatchRef<'a> {
    fn from(m: &'a FieldMatchType) -> MatchRef<'a> {
        match m {
            FieldMatchType::Exact(e) => MatchRef::Exact(&e.value),
            FieldMatchType::Lpm(l) => MatchRef::Lpm(&l.value, l.prefix_len),
            FieldMatchType::Ternary(t) => MatchRef::Ternary(&t.value, &t.mask),
            FieldMatchType::Range(r) => MatchRef::Range(&r.low, &r.high),
            FieldMatchType::Optional(o) => MatchRef::Optional(&o.value),
            FieldMatchType::Other(_) => MatchRef::Other,
        }
    }
}

pub fn translate_match(
    t: &TableInfo,
    te: &TableEntry,
) -> Result<(Vec<FieldMatch>, i32), UpdateError> {
    translate_key(
        t,
        te.priority,
        te.r#match.iter().map(|fm| {
            (
                fm.field_id,
                fm.field_match_type.as_ref().map(MatchRef::from),
            )
        }),
    )
}

/// An entry's key in engine form: `fields` are (field id, match) as given, in any order.
fn translate_key<'a>(
    t: &TableInfo,
    priority: i32,
    fields: impl Iterator<Item = (u32, Option<MatchRef<'a>>)>,
) -> Result<Key, UpdateError> {
    let inv = UpdateError::InvalidArgument;
    if t.needs_priority && priority <= 0 {
        return Err(inv(format!(
            "table \"{}\" has ternary, range or optional keys: a priority > 0 is required",
            t.name
        )));
    }
    if !t.needs_priority && priority != 0 {
        return Err(inv(format!(
            "table \"{}\" has no ternary, range or optional keys: priority must be 0",
            t.name
        )));
    }
    let mut given: SmallVec<[Option<MatchRef>; 8]> = smallvec![None; t.keys.len()];
    for (field_id, m) in fields {
        let Some(i) = t.keys.iter().position(|k| k.id == field_id) else {
            return Err(inv(format!(
                "table \"{}\": no match field id {}",
                t.name, field_id
            )));
        };
        if given[i].is_some() {
            return Err(inv(format!("match field id {field_id} given twice")));
        }
        given[i] = m;
    }
    let mut out = Vec::with_capacity(t.keys.len());
    for (k, g) in t.keys.iter().zip(given) {
        let what = FieldName(&t.name, k.id);
        let w = k.width;
        let m = match (k.kind, g) {
            (Kind::Exact, Some(MatchRef::Exact(v))) => FieldMatch::Exact(to_engine(v, w, what)?),
            (Kind::Exact, None) => {
                return Err(inv(format!("{what}: exact fields cannot be omitted")))
            }
            (Kind::Lpm, Some(MatchRef::Lpm(value, prefix_len))) => {
                let plen = u32::try_from(prefix_len)
                    .ok()
                    .filter(|p| *p <= w)
                    .ok_or_else(|| {
                        inv(format!("{what}: prefix length {prefix_len} out of 0..={w}"))
                    })?;
                if plen == 0 {
                    return Err(inv(format!(
                        "{what}: a /0 LPM match must be omitted (don't care)"
                    )));
                }
                let v = to_engine(value, w, what)?;
                if bits_past_prefix(&v, w, plen) {
                    return Err(inv(format!(
                        "{what}: LPM value has bits set beyond the /{plen} prefix"
                    )));
                }
                FieldMatch::Lpm {
                    value: v,
                    prefix_len: plen,
                }
            }
            (Kind::Lpm, None) => FieldMatch::Lpm {
                value: vec![0; w.div_ceil(8) as usize],
                prefix_len: 0,
            },
            (Kind::Ternary, Some(MatchRef::Ternary(value, mask))) => {
                let v = to_engine(value, w, what)?;
                let mask = to_engine(mask, w, format_args!("{what} mask"))?;
                if mask.iter().all(|b| *b == 0) {
                    return Err(inv(format!(
                        "{what}: an all-zero mask must be omitted (don't care)"
                    )));
                }
                if v.iter().zip(&mask).any(|(a, m)| a & !m != 0) {
                    return Err(inv(format!(
                        "{what}: ternary value has bits outside the mask"
                    )));
                }
                FieldMatch::Ternary { value: v, mask }
            }
            (Kind::Ternary, None) => {
                let z = vec![0; w.div_ceil(8) as usize];
                FieldMatch::Ternary {
                    value: z.clone(),
                    mask: z,
                }
            }
            (Kind::Range, Some(MatchRef::Range(low, high))) => {
                let low = to_engine(low, w, format_args!("{what} low"))?;
                let high = to_engine(high, w, format_args!("{what} high"))?;
                if low > high {
                    return Err(inv(format!("{what}: range low > high")));
                }
                if low.iter().all(|b| *b == 0) && high == all_ones(w) {
                    return Err(inv(format!(
                        "{what}: a full range must be omitted (don't care)"
                    )));
                }
                FieldMatch::Range { low, high }
            }
            (Kind::Range, None) => FieldMatch::Range {
                low: vec![0; w.div_ceil(8) as usize],
                high: all_ones(w),
            },
            (Kind::Optional, Some(MatchRef::Optional(v))) => {
                FieldMatch::Optional(Some(to_engine(v, w, what)?))
            }
            (Kind::Optional, None) => FieldMatch::Optional(None),
            (kind, Some(_)) => return Err(inv(format!("{what}: not a {kind:?} match"))),
        };
        out.push(m);
    }
    Ok((out, priority))
}

fn translate_action(p: &Pipeline, t: &TableInfo, te: &TableEntry) -> Result<Act, UpdateError> {
    let inv = UpdateError::InvalidArgument;
    let Some(ta) = te.action.as_ref().and_then(|a| a.r#type.as_ref()) else {
        return Err(inv(format!(
            "table \"{}\": entry without an action",
            t.name
        )));
    };
    match ta {
        table_action::Type::Action(a) => {
            if t.indirect {
                return Err(inv(format!(
                    "table \"{}\" is indirect: give a member or group id",
                    t.name
                )));
            }
            let (name, args) = action_args(p, a, &t.actions, format_args!("table \"{}\"", t.name))?;
            Ok(Act::Action { name, args })
        }
        table_action::Type::ActionProfileMemberId(m) if t.indirect => Ok(Act::P4Member {
            profile: t.profile.clone().unwrap_or_default(),
            id: *m,
        }),
        table_action::Type::ActionProfileGroupId(g) if t.indirect => Ok(Act::Group(*g)),
        table_action::Type::ActionProfileActionSet(set) if t.indirect => {
            let profile = t.profile.clone().unwrap_or_default();
            let prof = p.profiles.values().find(|pr| pr.name == profile);
            let selector = prof.is_some_and(|pr| pr.with_selector);
            let max = prof.map_or(0, |pr| pr.max_group_size);
            if set.action_profile_actions.is_empty() {
                return Err(inv(format!("table \"{}\": empty action set", t.name)));
            }
            if !selector && set.action_profile_actions.len() != 1 {
                return Err(inv(format!(
                    "table \"{}\": its action profile has no selector, so an action set holds one action",
                    t.name
                )));
            }
            let mut actions = Vec::with_capacity(set.action_profile_actions.len());
            let mut total: i64 = 0;
            for (i, pa) in set.action_profile_actions.iter().enumerate() {
                let Some(a) = &pa.action else {
                    return Err(inv(format!("action set entry {i} without an action")));
                };
                if pa.weight <= 0 {
                    return Err(inv(format!("action set entry {i}: weight must be > 0")));
                }
                total += i64::from(pa.weight);
                let (name, args) =
                    action_args(p, a, &t.actions, format_args!("table \"{}\"", t.name))?;
                actions.push((name, args, pa.weight as u32));
            }
            if max > 0 && total > i64::from(max) {
                return Err(UpdateError::ResourceExhausted(format!(
                    "action set of total weight {total} exceeds max_group_size {max}"
                )));
            }
            Ok(Act::OneShot {
                profile,
                selector,
                actions,
                set: set.clone(),
            })
        }
        _ => Err(inv(format!("table \"{}\" is not indirect", t.name))),
    }
}

/// An action's engine name and padded arguments, checked against the allowed action ids.
fn action_args(
    p: &Pipeline,
    a: &p4runtime_proto::p4runtime::Action,
    allowed: &[u32],
    owner: impl std::fmt::Display,
) -> Result<(Arc<str>, Vec<Vec<u8>>), UpdateError> {
    let params = a.params.iter().map(|x| (x.param_id, &x.value[..]));
    checked_args(p, a.action_id, params, allowed, owner)
}

/// [`action_args`] of an action given as its id and (param id, value) pairs, from either decoder.
fn checked_args<'a>(
    p: &Pipeline,
    action_id: u32,
    params: impl Iterator<Item = (u32, &'a [u8])> + Clone,
    allowed: &[u32],
    owner: impl std::fmt::Display,
) -> Result<(Arc<str>, Vec<Vec<u8>>), UpdateError> {
    let inv = UpdateError::InvalidArgument;
    if !allowed.contains(&action_id) {
        return Err(inv(format!(
            "action id {action_id} is not an action of {owner}"
        )));
    }
    let Some(info) = p.actions.get(&action_id) else {
        return Err(inv(format!("no action with id {action_id}")));
    };
    let given = params.clone().count();
    if given != info.params.len() {
        return Err(inv(format!(
            "action \"{}\" takes {} parameters, {given} given",
            info.name,
            info.params.len(),
        )));
    }
    let mut args = Vec::with_capacity(info.params.len());
    for (id, w) in &info.params {
        let Some((_, value)) = params.clone().find(|x| x.0 == *id) else {
            return Err(inv(format!(
                "action \"{}\": parameter id {id} missing",
                info.name
            )));
        };
        args.push(to_engine(
            value,
            *w,
            format_args!("action \"{}\" param id {id}", info.name),
        )?);
    }
    Ok((info.name.clone(), args))
}

/// A Read's match key is checked as a write's is; its failure is the call's status.
impl From<UpdateError> for tonic::Status {
    fn from(e: UpdateError) -> tonic::Status {
        tonic::Status::new(tonic::Code::from_i32(e.code() as i32), e.message())
    }
}

/// The engine's closed error set, one P4Runtime code each.
impl From<ApiError> for UpdateError {
    fn from(e: ApiError) -> UpdateError {
        let m = e.message;
        match e.code {
            ErrorCode::InvalidTableName
            | ErrorCode::InvalidActionProfileName
            | ErrorCode::InvalidCounterName
            | ErrorCode::InvalidMeterName
            | ErrorCode::InvalidRegisterName
            | ErrorCode::InvalidValueSetName
            | ErrorCode::InvalidCalculationName
            | ErrorCode::InvalidHandle
            | ErrorCode::InvalidMemberHandle
            | ErrorCode::InvalidGroupHandle
            | ErrorCode::InvalidMirroringSession
            | ErrorCode::InvalidMulticastGroup
            | ErrorCode::InvalidMulticastNode => UpdateError::NotFound(m),
            ErrorCode::InvalidActionName
            | ErrorCode::ActionNotInTable
            | ErrorCode::BadMatchKey
            | ErrorCode::BadActionData
            | ErrorCode::WrongTableType
            | ErrorCode::IndexOutOfRange
            | ErrorCode::BadValue => UpdateError::InvalidArgument(m),
            ErrorCode::TableFull | ErrorCode::ActionProfileFull => {
                UpdateError::ResourceExhausted(m)
            }
            ErrorCode::DuplicateEntry => UpdateError::AlreadyExists(m),
            ErrorCode::DefaultActionIsConst
            | ErrorCode::DefaultEntryIsConst
            | ErrorCode::ImmutableTableEntries => UpdateError::PermissionDenied(m),
            ErrorCode::MemberStillUsed => UpdateError::FailedPrecondition(m),
        }
    }
}

/// What undoing one applied op takes.
enum Undo {
    Delete {
        table: Arc<str>,
        key: (Vec<FieldMatch>, i32),
    },
    Restore {
        table: Arc<str>,
        key: (Vec<FieldMatch>, i32),
        act: Act,
        priority_ok: bool,
    },
    /// An entry's direct meter rates (empty = unconfigured) and counter as they were.
    Direct {
        table: Arc<str>,
        key: Key,
        meter: Option<Vec<switch_v1model::MeterRate>>,
        counter: Option<CounterValue>,
    },
}

/// The undo of an op that overwrites an entry's direct meter and/or counter.
fn old_direct(
    sw: &mut Switch,
    table: &str,
    key: &Key,
    h: EntryHandle,
    meter: bool,
    counter: bool,
) -> Undo {
    Undo::Direct {
        table: table.into(),
        key: key.clone(),
        meter: meter
            .then(|| sw.direct_meter_get_rates(table, h).ok())
            .flatten(),
        counter: counter
            .then(|| sw.direct_counter_read(table, h).ok())
            .flatten(),
    }
}

/// The engine entry with this key: tables without priorities take 0, which is no priority.
fn find(sw: &Switch, table: &str, key: &Key) -> Option<EntryHandle> {
    sw.table_find(table, &key.0, (key.1 != 0).then_some(key.1))
        .ok()
        .flatten()
}

/// The last table and action a batch's inserts named, resolved by the engine: bulk writes name
/// the same two entry after entry, as the pipeline's shared names (compared by address).
#[derive(Default)]
struct Resolved(Option<(Arc<str>, Arc<str>, TableAction)>);

impl Resolved {
    fn get(
        &mut self,
        sw: &Switch,
        table: &Arc<str>,
        action: &Arc<str>,
    ) -> Result<TableAction, ApiError> {
        match &self.0 {
            Some((t, a, ta)) if Arc::ptr_eq(t, table) && Arc::ptr_eq(a, action) => Ok(*ta),
            _ => {
                let ta = sw.table_action_of(table, action)?;
                self.0 = Some((table.clone(), action.clone(), ta));
                Ok(ta)
            }
        }
    }
}

fn add(
    sw: &mut Switch,
    resolved: &mut Resolved,
    table: &Arc<str>,
    matches: &[FieldMatch],
    prio: Option<i32>,
    act: &Act,
) -> Result<EntryHandle, ApiError> {
    match act {
        Act::Action { name, args } => {
            let ta = resolved.get(sw, table, name)?;
            sw.table_add_resolved(ta, matches, prio, args)
        }
        Act::Member(m) => sw.table_add_member_entry(table, matches, prio, *m),
        Act::Group(g) => sw.table_add_group_entry(table, matches, prio, *g),
        Act::P4Member { .. } | Act::OneShot { .. } => {
            unreachable!("member ids and action sets are resolved before the engine sees them")
        }
    }
}

/// The entry's action and whether it has a priority (for the undo log only: a table scan).
fn current(sw: &Switch, table: &str, h: EntryHandle) -> Option<(Act, bool)> {
    let entries = sw.table_entries(table).ok()?;
    let e = entries.into_iter().find(|e| e.handle == h)?;
    let prio = e.priority.is_some();
    Some((
        match e.action {
            switch_v1model::EntryAction::Action { name, args } => Act::Action {
                name: name.into(),
                args,
            },
            switch_v1model::EntryAction::Member(m) => Act::Member(m),
            switch_v1model::EntryAction::Group(g) => Act::Group(g),
        },
        prio,
    ))
}

fn modify(sw: &mut Switch, table: &str, h: EntryHandle, act: &Act) -> Result<(), ApiError> {
    match act {
        Act::Action { name, args } => sw.table_modify(table, h, name, args),
        Act::Member(m) => sw.table_modify_member(table, h, *m),
        Act::Group(g) => sw.table_modify_group(table, h, *g),
        Act::P4Member { .. } | Act::OneShot { .. } => Err(ApiError {
            code: ErrorCode::WrongTableType,
            message: "member ids and action sets are resolved before the engine sees them".into(),
        }),
    }
}

/// The undo log covers table entries (with their direct meters and counters) only: other ops
/// fail in an all-or-nothing batch.
fn undoable(op: Result<Op, UpdateError>) -> Result<Op, UpdateError> {
    match op {
        Ok(
            Op::Insert {
                act: Act::OneShot { .. },
                ..
            }
            | Op::Modify {
                act: Act::OneShot { .. },
                ..
            }
            | Op::ValueSet { .. }
            | Op::Counter { .. }
            | Op::Register { .. }
            | Op::Mcast { .. }
            | Op::Clone { .. }
            | Op::Member { .. }
            | Op::Digest { .. }
            | Op::Meter { .. }
            | Op::Group { .. }
            | Op::SetDefault { .. },
        ) => Err(UpdateError::Unimplemented(
            "ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches support table entries (without \
             action sets) and their direct meters and counters only"
                .into(),
        )),
        op => op,
    }
}

/// Applies `ops` in order; with `rollback`, the first failure undoes the applied ones and the
/// rest are not tried (reported as ABORTED). Plain inserts are applied from where they are and
/// left in `ops` (the others are taken), so that the caller frees them off the data plane.
pub fn apply(
    sw: &mut Switch,
    index: &mut Index,
    ops: &mut [Result<Op, UpdateError>],
    rollback: bool,
) -> Vec<Result<(), UpdateError>> {
    let mut results = Vec::with_capacity(ops.len());
    let mut undo: Vec<Undo> = Vec::new();
    let mut failed = false;
    let mut resolved = Resolved::default();
    for op in ops.iter_mut() {
        if failed && rollback {
            results.push(Err(UpdateError::Aborted(
                "not applied: an earlier update of the batch failed".into(),
            )));
            continue;
        }
        let r = match op {
            // The bulk of a batch: an entry with an action and nothing else kept for it here.
            Ok(Op::Insert {
                table,
                key,
                needs_priority,
                act: act @ Act::Action { .. },
                idle_ns: 0,
                ageing,
                direct,
            }) if !rollback && direct.is_empty() && !index.keeps_keys(table) => {
                add_new(sw, &mut resolved, table, key, *needs_priority, act).map(|h| {
                    if *ageing {
                        start_ageing(index, table, h);
                    }
                })
            }
            _ => {
                let op = std::mem::replace(op, Err(UpdateError::Aborted(String::new())));
                let op = if rollback { undoable(op) } else { op };
                op.and_then(|op| {
                    apply_one(sw, index, &mut resolved, op, rollback.then_some(&mut undo))
                })
            }
        };
        if r.is_err() {
            failed = true;
        }
        results.push(r);
    }
    if failed && rollback {
        for u in undo.into_iter().rev() {
            match u {
                Undo::Delete { table, key } => {
                    set_cookie(index, &table, &key, Cookie::default());
                    if let Some(h) = find(sw, &table, &key) {
                        let _ = sw.table_delete(&table, h);
                    }
                }
                Undo::Direct {
                    table,
                    key,
                    meter,
                    counter,
                } => {
                    if let Some(h) = find(sw, &table, &key) {
                        if let Some(r) = meter {
                            let _ = sw.direct_meter_set_rates(&table, h, &r);
                        }
                        if let Some(v) = counter {
                            let _ = sw.direct_counter_write(&table, h, v);
                        }
                    }
                }
                Undo::Restore {
                    table,
                    key,
                    act,
                    priority_ok,
                } => match find(sw, &table, &key) {
                    Some(h) => {
                        let _ = modify(sw, &table, h, &act);
                    }
                    None => {
                        let prio = priority_ok.then_some(key.1);
                        let _ = add(sw, &mut resolved, &table, &key.0, prio, &act);
                    }
                },
            }
        }
        for r in results.iter_mut() {
            if r.is_ok() {
                *r = Err(UpdateError::Aborted(
                    "rolled back: another update of the batch failed".into(),
                ));
            }
        }
    }
    results
}

/// Records an entry's idle timeout; a new timeout is a new idle period (not yet notified).
fn set_idle(index: &mut Index, table: &str, key: &Key, handle: EntryHandle, ns: i64) {
    if ns == 0 {
        if let Some(t) = index.idle.get_mut(table).filter(|t| !t.is_empty()) {
            t.remove(key);
        }
    } else {
        index.idle.entry(table.into()).or_default().insert(
            key.clone(),
            Idle {
                timeout_ns: ns,
                notified_for: None,
                handle,
            },
        );
    }
}

/// Creates the hidden members (and group) of a one-shot action set; on failure nothing is
/// left behind.
fn create_oneshot(
    sw: &mut Switch,
    index: &mut Index,
    profile: &str,
    selector: bool,
    actions: &[WeightedAction],
    group: Option<u32>,
) -> Result<(Vec<u32>, Option<u32>), UpdateError> {
    let mut members = Vec::with_capacity(actions.len());
    let undo = |sw: &mut Switch, members: &[u32]| {
        for h in members {
            let _ = sw.profile_delete_member(profile, *h);
        }
    };
    for (name, args, _) in actions {
        match sw.profile_add_member(profile, name, args) {
            Ok(h) => members.push(h),
            Err(e) => {
                undo(sw, &members);
                return Err(UpdateError::from(e));
            }
        }
    }
    if !selector {
        return Ok((members, None));
    }
    let gid = group.unwrap_or_else(|| {
        index.oneshot_group = index.oneshot_group.wrapping_add(1).max(1);
        index.oneshot_group
    });
    let list: Vec<(u32, u32)> = members
        .iter()
        .zip(actions)
        .map(|(h, (_, _, w))| (*h, *w))
        .collect();
    if let Err(e) = sw.profile_set_group(profile, gid, &list) {
        undo(sw, &members);
        return Err(UpdateError::from(e));
    }
    Ok((members, Some(gid)))
}

/// Deletes a one-shot entry's hidden group and members (after its entry is gone).
fn delete_oneshot(sw: &mut Switch, index: &mut Index, o: &OneShot) {
    if let Some(g) = o.group {
        let _ = sw.profile_delete_group(&o.profile, g);
    }
    for h in &o.members {
        let _ = sw.profile_delete_member(&o.profile, *h);
    }
    if let Some(n) = index.oneshot_count.get_mut(&o.profile) {
        *n = n.saturating_sub(1);
    }
}

/// Spec 9.2.3: an action profile is programmed either by members and groups or by one-shot
/// action sets, not both at once.
fn check_profile_mode(index: &Index, profile: &str, oneshot: bool) -> Result<(), UpdateError> {
    let manual = index.members.get(profile).is_some_and(|m| !m.is_empty())
        || index.groups.get(profile).is_some_and(|g| !g.is_empty());
    let shots = index.oneshot_count.get(profile).copied().unwrap_or(0) > 0;
    match (oneshot, manual, shots) {
        (true, true, _) => Err(UpdateError::InvalidArgument(format!("action profile \"{profile}\" has members or groups: no one-shot action sets"),
        )),
        (false, _, true) => Err(UpdateError::InvalidArgument(format!("action profile \"{profile}\" is programmed by one-shot action sets: no members or groups"),
        )),
        _ => Ok(()),
    }
}

fn set_direct_meter(
    sw: &mut Switch,
    table: &str,
    h: EntryHandle,
    rates: &Rates,
) -> Result<(), UpdateError> {
    sw.direct_meter_set_rates(table, h, rates.as_deref().unwrap_or_default())
        .map_err(UpdateError::from)
}

/// Applies what an INSERT or MODIFY gives besides the action.
fn set_direct(
    sw: &mut Switch,
    index: &mut Index,
    table: &str,
    key: &Key,
    h: EntryHandle,
    d: Direct,
) -> Result<(), UpdateError> {
    if let Some(rates) = &d.meter {
        set_direct_meter(sw, table, h, rates)?;
    }
    if let Some(v) = d.counter {
        sw.direct_counter_write(table, h, v)
            .map_err(UpdateError::from)?;
    }
    set_cookie(index, table, key, d.cookie);
    Ok(())
}

/// Records an entry's controller data; the default (none) is not stored, so tables written
/// without it (the bulk of routes) cost nothing.
fn set_cookie(index: &mut Index, table: &str, key: &Key, cookie: Cookie) {
    if cookie == Cookie::default() {
        if let Some(t) = index.cookies.get_mut(table).filter(|t| !t.is_empty()) {
            t.remove(key);
        }
    } else {
        index
            .cookies
            .entry(table.into())
            .or_default()
            .insert(key.clone(), cookie);
    }
}

/// A P4Runtime member id to the engine's member handle.
fn member_handle(index: &Index, profile: &str, id: u32) -> Result<u32, UpdateError> {
    index
        .members
        .get(profile)
        .and_then(|m| m.get(&id))
        .map(|m| m.0)
        .ok_or_else(|| {
            UpdateError::NotFound(format!("action profile \"{profile}\": no member {id}"))
        })
}

/// ALREADY_EXISTS of an INSERT.
fn exists(table: &str) -> UpdateError {
    UpdateError::AlreadyExists(format!(
        "table \"{table}\": an entry with this match key exists"
    ))
}

/// Adds an INSERT's entry to the engine.
fn add_new(
    sw: &mut Switch,
    resolved: &mut Resolved,
    table: &Arc<str>,
    key: &Key,
    needs_priority: bool,
    act: &Act,
) -> Result<EntryHandle, UpdateError> {
    add(
        sw,
        resolved,
        table,
        &key.0,
        needs_priority.then_some(key.1),
        act,
    )
    .map_err(|e| match e.code {
        ErrorCode::DuplicateEntry => exists(table),
        _ => UpdateError::from(e),
    })
}

/// A new entry of a table that supports idle timeout: its hits are tracked from now.
fn start_ageing(index: &mut Index, table: &Arc<str>, h: EntryHandle) {
    index
        .last_hit
        .entry(table.clone())
        .or_default()
        .insert(h, Instant::now());
}

fn apply_one(
    sw: &mut Switch,
    index: &mut Index,
    resolved: &mut Resolved,
    op: Op,
    undo: Option<&mut Vec<Undo>>,
) -> Result<(), UpdateError> {
    let mut op = op;
    if let Op::Insert { act, .. } | Op::Modify { act, .. } = &mut op {
        if let Act::P4Member { profile, id } = act {
            *act = Act::Member(member_handle(index, profile, *id)?);
        }
    }
    match op {
        Op::Insert {
            table,
            key,
            needs_priority,
            act,
            idle_ns,
            ageing,
            direct,
        } => {
            // An action set creates hidden objects first: only for an entry that can be added.
            if matches!(act, Act::OneShot { .. }) && find(sw, &table, &key).is_some() {
                return Err(exists(&table));
            }
            let (act, shot) = match act {
                Act::OneShot {
                    profile,
                    selector,
                    actions,
                    set,
                } => {
                    check_profile_mode(index, &profile, true)?;
                    let (members, group) =
                        create_oneshot(sw, index, &profile, selector, &actions, None)?;
                    let act = match (group, members.first()) {
                        (Some(g), _) => Act::Group(g),
                        (None, Some(m)) => Act::Member(*m),
                        (None, None) => unreachable!("an action set has at least one action"),
                    };
                    let shot = OneShot {
                        profile,
                        set,
                        members,
                        group,
                    };
                    (act, Some(shot))
                }
                act => (act, None),
            };
            let added = add_new(sw, resolved, &table, &key, needs_priority, &act).and_then(|h| {
                match set_direct(sw, index, &table, &key, h, direct) {
                    Ok(()) => Ok(h),
                    Err(e) => {
                        let _ = sw.table_delete(&table, h);
                        set_cookie(index, &table, &key, Cookie::default());
                        Err(e)
                    }
                }
            });
            let h = match added {
                Ok(h) => h,
                Err(e) => {
                    if let Some(s) = &shot {
                        *index.oneshot_count.entry(s.profile.clone()).or_default() += 1;
                        delete_oneshot(sw, index, s);
                    }
                    return Err(e);
                }
            };
            if ageing {
                start_ageing(index, &table, h);
            }
            if let Some(s) = shot {
                *index.oneshot_count.entry(s.profile.clone()).or_default() += 1;
                index
                    .oneshot
                    .entry(table.clone())
                    .or_default()
                    .insert(key.clone(), s);
            }
            set_idle(index, &table, &key, h, idle_ns);
            if let Some(u) = undo {
                u.push(Undo::Delete { table, key });
            }
            Ok(())
        }
        Op::Modify {
            table,
            key,
            act:
                Act::OneShot {
                    selector,
                    actions,
                    set,
                    ..
                },
            idle_ns,
            direct,
        } => {
            let Some(h) = find(sw, &table, &key) else {
                return Err(UpdateError::NotFound(format!(
                    "table \"{table}\": no entry with this match key"
                )));
            };
            let Some(old) = index.oneshot.get(&table).and_then(|t| t.get(&key)).cloned() else {
                return Err(UpdateError::InvalidArgument(format!("table \"{table}\": the entry points at a member or group; an action set cannot replace it"),
                ));
            };
            let profile = old.profile.clone();
            let (members, group) = if selector {
                // The entry keeps its hidden group; the group gets new members.
                let created = create_oneshot(sw, index, &profile, selector, &actions, old.group)?;
                for m in &old.members {
                    let _ = sw.profile_delete_member(&profile, *m);
                }
                created
            } else {
                let (name, args, _) = &actions[0];
                sw.profile_modify_member(&profile, old.members[0], name, args)
                    .map_err(UpdateError::from)?;
                (old.members.clone(), None)
            };
            set_direct(sw, index, &table, &key, h, direct)?;
            index.oneshot.entry(table.clone()).or_default().insert(
                key.clone(),
                OneShot {
                    profile,
                    set,
                    members,
                    group,
                },
            );
            set_idle(index, &table, &key, h, idle_ns);
            Ok(())
        }
        Op::Modify {
            table,
            key,
            act,
            idle_ns,
            direct,
        } => {
            let Some(h) = find(sw, &table, &key) else {
                return Err(UpdateError::NotFound(format!(
                    "table \"{table}\": no entry with this match key"
                )));
            };
            // Logged before applying: a failure half way is undone too.
            if let Some(u) = undo {
                let meter = direct.meter.is_some();
                let counter = direct.counter.is_some();
                u.push(old_direct(sw, &table, &key, h, meter, counter));
                if let Some((old, _)) = current(sw, &table, h) {
                    u.push(Undo::Restore {
                        table: table.clone(),
                        key: key.clone(),
                        act: old,
                        priority_ok: true,
                    });
                }
            }
            modify(sw, &table, h, &act).map_err(UpdateError::from)?;
            set_direct(sw, index, &table, &key, h, direct)?;
            set_idle(index, &table, &key, h, idle_ns);
            Ok(())
        }
        Op::Delete { table, key } => {
            let Some(h) = find(sw, &table, &key) else {
                return Err(UpdateError::NotFound(format!(
                    "table \"{table}\": no entry with this match key"
                )));
            };
            let old = undo.is_some().then(|| current(sw, &table, h)).flatten();
            sw.table_delete(&table, h).map_err(UpdateError::from)?;
            set_idle(index, &table, &key, h, 0);
            set_cookie(index, &table, &key, Cookie::default());
            if let Some(t) = index.last_hit.get_mut(&table) {
                t.remove(&h);
            }
            if let Some(s) = index.oneshot.get_mut(&table).and_then(|t| t.remove(&key)) {
                delete_oneshot(sw, index, &s);
            }
            if let (Some(u), Some((old, prio))) = (undo, old) {
                u.push(Undo::Restore {
                    table,
                    key,
                    act: old,
                    priority_ok: prio,
                });
            }
            Ok(())
        }
        Op::SetDefault { table, act } => match act {
            Act::Action { name, args } => sw
                .table_set_default(&table, &name, &args)
                .map_err(UpdateError::from),
            _ => Err(UpdateError::InvalidArgument(
                "a default entry takes a direct action".into(),
            )),
        },
        Op::Counter {
            name,
            index: i,
            value,
        } => sw.counter_write(&name, i, value).map_err(UpdateError::from),
        Op::Register {
            name,
            index: i,
            value,
        } => sw
            .register_write(&name, i, value)
            .map_err(UpdateError::from),
        Op::Mcast { ty, entry, ports } => {
            let id = entry.multicast_group_id;
            let exists = index.mcast.contains_key(&id);
            match ty {
                update::Type::Insert if exists => {
                    return Err(UpdateError::AlreadyExists(format!(
                        "multicast group {id} exists"
                    )))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err(UpdateError::NotFound(format!("no multicast group {id}")))
                }
                _ => {}
            }
            if let Some((_, nodes)) = index.mcast.remove(&id) {
                sw.mc_mgrp_destroy(id).map_err(UpdateError::from)?;
                for n in nodes {
                    sw.mc_node_destroy(n).map_err(UpdateError::from)?;
                }
            }
            if ty == update::Type::Delete {
                return Ok(());
            }
            sw.mc_mgrp_create(id).map_err(UpdateError::from)?;
            // One engine node per instance (egress_rid), holding that instance's ports.
            let mut instances: Vec<u32> = ports.iter().map(|p| p.1).collect();
            instances.sort_unstable();
            instances.dedup();
            let mut nodes = Vec::new();
            for rid in instances {
                let ps: Vec<u32> = ports.iter().filter(|p| p.1 == rid).map(|p| p.0).collect();
                let n = sw.mc_node_create(rid, &ps);
                sw.mc_node_associate(id, n).map_err(UpdateError::from)?;
                nodes.push(n);
            }
            index.mcast.insert(id, (entry, nodes));
            Ok(())
        }
        Op::Member {
            ty,
            profile,
            entry,
            action: (name, args),
        } => {
            let id = entry.member_id;
            if ty == update::Type::Insert {
                check_profile_mode(index, &profile, false)?;
            }
            let members = index.members.entry(profile.clone()).or_default();
            let h = members.get(&id).map(|m| m.0);
            match (ty, h) {
                (update::Type::Insert, Some(_)) => {
                    Err(UpdateError::AlreadyExists(format!("member {id} exists")))
                }
                (update::Type::Insert, None) => {
                    let h = sw
                        .profile_add_member(&profile, &name, &args)
                        .map_err(UpdateError::from)?;
                    members.insert(id, (h, entry));
                    Ok(())
                }
                (_, None) => Err(UpdateError::NotFound(format!("no member {id}"))),
                (update::Type::Modify, Some(h)) => {
                    sw.profile_modify_member(&profile, h, &name, &args)
                        .map_err(UpdateError::from)?;
                    members.insert(id, (h, entry));
                    Ok(())
                }
                (_, Some(h)) => {
                    sw.profile_delete_member(&profile, h)
                        .map_err(UpdateError::from)?;
                    members.remove(&id);
                    Ok(())
                }
            }
        }
        Op::Group { ty, profile, entry } => {
            let id = entry.group_id;
            if ty == update::Type::Insert {
                check_profile_mode(index, &profile, false)?;
            }
            let exists = index
                .groups
                .get(&profile)
                .is_some_and(|g| g.contains_key(&id));
            match ty {
                update::Type::Insert if exists => {
                    return Err(UpdateError::AlreadyExists(format!("group {id} exists")))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err(UpdateError::NotFound(format!("no group {id}")))
                }
                _ => {}
            }
            if ty == update::Type::Delete {
                sw.profile_delete_group(&profile, id)
                    .map_err(UpdateError::from)?;
                if let Some(g) = index.groups.get_mut(&profile) {
                    g.remove(&id);
                }
                return Ok(());
            }
            let members = index.members.get(&profile);
            let mut list = Vec::with_capacity(entry.members.len());
            for m in &entry.members {
                let Some(h) = members.and_then(|ms| ms.get(&m.member_id)).map(|x| x.0) else {
                    return Err(UpdateError::NotFound(format!(
                        "group {id}: no member {}",
                        m.member_id
                    )));
                };
                list.push((h, m.weight as u32));
            }
            sw.profile_set_group(&profile, id, &list)
                .map_err(UpdateError::from)?;
            index.groups.entry(profile).or_default().insert(id, entry);
            Ok(())
        }
        Op::Meter {
            name,
            index: i,
            rates: Some(rates),
        } => sw
            .meter_set_rates(&name, i, &rates)
            .map_err(UpdateError::from),
        Op::Meter {
            name,
            index: i,
            rates: None,
        } => sw.meter_reset_rates(&name, i).map_err(UpdateError::from),
        Op::DirectMeter { table, key, rates } => {
            let Some(h) = find(sw, &table, &key) else {
                return Err(UpdateError::NotFound(format!(
                    "table \"{table}\": no entry with this match key"
                )));
            };
            if let Some(u) = undo {
                u.push(old_direct(sw, &table, &key, h, true, false));
            }
            set_direct_meter(sw, &table, h, &rates)
        }
        Op::DirectCounter { table, key, value } => {
            let Some(h) = find(sw, &table, &key) else {
                return Err(UpdateError::NotFound(format!(
                    "table \"{table}\": no entry with this match key"
                )));
            };
            if let Some(u) = undo {
                u.push(old_direct(sw, &table, &key, h, false, true));
            }
            sw.direct_counter_write(&table, h, value)
                .map_err(UpdateError::from)
        }
        Op::ValueSet {
            id,
            name,
            values,
            entry,
        } => {
            sw.parse_vset_clear(&name).map_err(UpdateError::from)?;
            for v in &values {
                if let Err(e) = sw.parse_vset_add(&name, v) {
                    // Leave the set as it was rather than half written.
                    let _ = sw.parse_vset_clear(&name);
                    for old in index
                        .value_sets
                        .get(&id)
                        .map(|o| &o.1)
                        .into_iter()
                        .flatten()
                    {
                        let _ = sw.parse_vset_add(&name, old);
                    }
                    return Err(UpdateError::from(e));
                }
            }
            index.value_sets.insert(id, (entry, values));
            Ok(())
        }
        Op::Digest { ty, id, config } => {
            let exists = index.digests.contains_key(&id);
            match (ty, config) {
                (update::Type::Insert, _) if exists => Err(UpdateError::AlreadyExists(format!(
                    "digest {id} is configured"
                ))),
                (update::Type::Modify | update::Type::Delete, _) if !exists => Err(
                    UpdateError::NotFound(format!("digest {id} is not configured")),
                ),
                (update::Type::Delete, _) => {
                    index.digests.remove(&id);
                    Ok(())
                }
                (_, Some(c)) => {
                    index.digests.insert(id, c);
                    Ok(())
                }
                (_, None) => Err(UpdateError::InvalidArgument(
                    "DigestEntry without a config".into(),
                )),
            }
        }
        Op::Clone { ty, entry, port } => {
            let id = entry.session_id;
            let exists = index.clones.contains_key(&id);
            match ty {
                update::Type::Insert if exists => {
                    return Err(UpdateError::AlreadyExists(format!(
                        "clone session {id} exists"
                    )))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err(UpdateError::NotFound(format!("no clone session {id}")))
                }
                _ => {}
            }
            if ty == update::Type::Delete {
                sw.mirroring_delete(id).map_err(UpdateError::from)?;
                index.clones.remove(&id);
                return Ok(());
            }
            let class_of_service = u8::try_from(entry.class_of_service)
                .ok()
                .filter(|&c| c < 8)
                .ok_or_else(|| {
                    UpdateError::InvalidArgument(format!(
                        "clone session {id}: class_of_service {} is not a queue (0-7)",
                        entry.class_of_service
                    ))
                })?;
            let session = switch_v1model::MirrorSession {
                port,
                mgrp: None,
                class_of_service,
            };
            sw.mirroring_add(id, session).map_err(UpdateError::from)?;
            index.clones.insert(id, entry);
            Ok(())
        }
    }
}
