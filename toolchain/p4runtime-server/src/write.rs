//! Write: P4Runtime updates translated (outside the data plane) into engine operations, then
//! applied in one `Dataplane::exec`.

use std::collections::{BTreeMap, HashMap};

use p4runtime_proto::google::rpc::Code;
use p4runtime_proto::p4runtime::{
    entity, field_match::FieldMatchType, p4_data, packet_replication_engine_entry as pre, replica,
    table_action, update, ActionProfileGroup, ActionProfileMember, CloneSessionEntry, Entity,
    MulticastGroupEntry, TableEntry, Update,
};
use switch_engine::{ApiError, EntryHandle, ErrorCode, FieldMatch, Switch};

use crate::bytes::{all_ones, prefix_mask, to_engine};
use crate::pipeline::{Kind, Pipeline, TableInfo};

/// A per-update failure: canonical code and message.
pub type UpdateError = (Code, String);

/// What the server keeps beside the engine: match key → handle per engine table (P4Runtime
/// addresses entries by key, the engine by handle), and the PRE entries as written (with the
/// engine's node handles) so they read back unchanged.
#[derive(Default)]
pub struct Index {
    pub tables: HashMap<String, HashMap<(Vec<FieldMatch>, i32), EntryHandle>>,
    pub mcast: BTreeMap<u32, (MulticastGroupEntry, Vec<u32>)>,
    pub clones: BTreeMap<u32, CloneSessionEntry>,
    /// Per action profile: P4Runtime member id → (engine member handle, member as written),
    /// and the groups as written.
    pub members: HashMap<String, BTreeMap<u32, (u32, ActionProfileMember)>>,
    pub groups: HashMap<String, BTreeMap<u32, ActionProfileGroup>>,
}

#[derive(Debug, Clone)]
pub enum Act {
    Action {
        name: String,
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
}

#[derive(Debug, Clone)]
pub enum Op {
    Insert {
        table: String,
        key: (Vec<FieldMatch>, i32),
        needs_priority: bool,
        act: Act,
    },
    Modify {
        table: String,
        key: (Vec<FieldMatch>, i32),
        act: Act,
    },
    Delete {
        table: String,
        key: (Vec<FieldMatch>, i32),
    },
    SetDefault {
        table: String,
        act: Act,
    },
    Counter {
        name: String,
        index: u64,
        packets: u64,
        bytes: u64,
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
        action: (String, Vec<Vec<u8>>),
    },
    Group {
        ty: update::Type,
        profile: String,
        entry: ActionProfileGroup,
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
        return Err((Code::InvalidArgument, "update without an entity".into()));
    };
    match e {
        entity::Entity::TableEntry(te) => translate_table(p, ty, te),
        entity::Entity::CounterEntry(c) => {
            let Some((name, size)) = p.counters.get(&c.counter_id) else {
                return Err((
                    Code::NotFound,
                    format!("no counter with id {}", c.counter_id),
                ));
            };
            modify_only(ty, "CounterEntry")?;
            let index = cell_index(c.index.as_ref().map(|i| i.index), *size, name)?;
            let d = c.data.unwrap_or_default();
            let (Ok(packets), Ok(bytes)) =
                (u64::try_from(d.packet_count), u64::try_from(d.byte_count))
            else {
                return Err((
                    Code::InvalidArgument,
                    format!("counter \"{name}\": negative count"),
                ));
            };
            Ok(Op::Counter {
                name: name.clone(),
                index,
                packets,
                bytes,
            })
        }
        entity::Entity::RegisterEntry(r) => {
            let Some((name, size, width)) = p.registers.get(&r.register_id) else {
                return Err((
                    Code::NotFound,
                    format!("no register with id {}", r.register_id),
                ));
            };
            modify_only(ty, "RegisterEntry")?;
            let index = cell_index(r.index.as_ref().map(|i| i.index), *size, name)?;
            let Some(p4_data::Data::Bitstring(bits)) =
                r.data.as_ref().and_then(|d| d.data.as_ref())
            else {
                return Err((
                    Code::InvalidArgument,
                    format!("register \"{name}\": data must be a bitstring"),
                ));
            };
            let v = to_engine(bits, *width, &format!("register \"{name}\""))
                .map_err(|m| (Code::InvalidArgument, m))?;
            let value = v.iter().fold(0u128, |a, b| (a << 8) | u128::from(*b));
            Ok(Op::Register {
                name: name.clone(),
                index,
                value,
            })
        }
        entity::Entity::ActionProfileMember(m) => {
            let Some(prof) = p.profiles.get(&m.action_profile_id) else {
                return Err((
                    Code::NotFound,
                    format!("no action profile with id {}", m.action_profile_id),
                ));
            };
            let action = match (&m.action, ty) {
                (_, update::Type::Delete) => (String::new(), Vec::new()),
                (Some(a), _) => action_args(
                    p,
                    a,
                    &prof.actions,
                    &format!("action profile \"{}\"", prof.name),
                )?,
                (None, _) => {
                    return Err((Code::InvalidArgument, "member without an action".into()))
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
                return Err((
                    Code::NotFound,
                    format!("no action profile with id {}", g.action_profile_id),
                ));
            };
            if !prof.with_selector {
                return Err((
                    Code::InvalidArgument,
                    format!(
                        "action profile \"{}\" has no selector: no groups",
                        prof.name
                    ),
                ));
            }
            if ty != update::Type::Delete {
                if let Some(m) = g.members.iter().find(|m| m.weight <= 0) {
                    return Err((
                        Code::InvalidArgument,
                        format!("member {}: weight must be > 0", m.member_id),
                    ));
                }
                let limit = if prof.max_group_size > 0 {
                    prof.max_group_size
                } else {
                    i32::MAX
                };
                if g.max_size > limit {
                    return Err((
                        Code::ResourceExhausted,
                        format!(
                            "group max_size {} exceeds the profile's max_group_size {limit}",
                            g.max_size
                        ),
                    ));
                }
                let size: i64 = g.members.iter().map(|m| i64::from(m.weight)).sum();
                let cap = if g.max_size > 0 { g.max_size } else { limit };
                if size > i64::from(cap) {
                    return Err((
                        Code::ResourceExhausted,
                        format!("group of total weight {size} exceeds its size limit {cap}"),
                    ));
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
                    return Err((
                        Code::InvalidArgument,
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
                    return Err((
                        Code::InvalidArgument,
                        "clone session id 0 is reserved".into(),
                    ));
                }
                if c.packet_length_bytes != 0 {
                    return Err((
                        Code::Unimplemented,
                        "clone session truncation (packet_length_bytes) is not modelled".into(),
                    ));
                }
                let reps = replicas(&c.replicas)?;
                let port = match (ty, reps.as_slice()) {
                    (update::Type::Delete, _) => None,
                    (_, [(port, _)]) => Some(*port),
                    _ => {
                        return Err((
                            Code::Unimplemented,
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
            None => Err((
                Code::InvalidArgument,
                "empty PacketReplicationEngineEntry".into(),
            )),
        },
        _ => Err((
            Code::Unimplemented,
            "this entity type is not implemented for Write".into(),
        )),
    }
}

fn modify_only(ty: update::Type, what: &str) -> Result<(), UpdateError> {
    if ty != update::Type::Modify {
        return Err((
            Code::InvalidArgument,
            format!("{what} can only be modified"),
        ));
    }
    Ok(())
}

fn cell_index(index: Option<i64>, size: u64, name: &str) -> Result<u64, UpdateError> {
    let Some(i) = index else {
        return Err((
            Code::Unimplemented,
            format!("\"{name}\": writes need an index (index wildcards are read-only here)"),
        ));
    };
    match u64::try_from(i) {
        Ok(i) if i < size => Ok(i),
        _ => Err((
            Code::InvalidArgument,
            format!("\"{name}\": index {i} out of 0..{size}"),
        )),
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
                let v = to_engine(b, 32, "replica port").map_err(|m| (Code::InvalidArgument, m))?;
                u32::from_be_bytes([v[0], v[1], v[2], v[3]])
            }
            None => return Err((Code::InvalidArgument, "replica without a port".into())),
        };
        if out.contains(&(port, r.instance)) {
            return Err((
                Code::InvalidArgument,
                format!("replica (port {port}, instance {}) given twice", r.instance),
            ));
        }
        out.push((port, r.instance));
    }
    Ok(out)
}

fn translate_table(p: &Pipeline, ty: update::Type, te: &TableEntry) -> Result<Op, UpdateError> {
    let inv = |m: String| (Code::InvalidArgument, m);
    let Some(t) = p.tables.get(&te.table_id) else {
        return Err((Code::NotFound, format!("no table with id {}", te.table_id)));
    };
    if ty == update::Type::Unspecified {
        return Err(inv("update type UNSPECIFIED".into()));
    }
    if t.is_const {
        return Err((
            Code::PermissionDenied,
            format!(
                "table \"{}\" has const entries and cannot be written",
                t.name
            ),
        ));
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
    match ty {
        update::Type::Insert => Ok(Op::Insert {
            table,
            key,
            needs_priority: t.needs_priority,
            act: translate_action(p, t, te)?,
        }),
        update::Type::Modify => Ok(Op::Modify {
            table,
            key,
            act: translate_action(p, t, te)?,
        }),
        _ => Ok(Op::Delete { table, key }),
    }
}

pub fn translate_match(
    t: &TableInfo,
    te: &TableEntry,
) -> Result<(Vec<FieldMatch>, i32), UpdateError> {
    let inv = |m: String| (Code::InvalidArgument, m);
    if t.needs_priority && te.priority <= 0 {
        return Err(inv(format!(
            "table \"{}\" has ternary, range or optional keys: a priority > 0 is required",
            t.name
        )));
    }
    if !t.needs_priority && te.priority != 0 {
        return Err(inv(format!(
            "table \"{}\" has no ternary, range or optional keys: priority must be 0",
            t.name
        )));
    }
    let mut given: Vec<Option<&FieldMatchType>> = vec![None; t.keys.len()];
    for fm in &te.r#match {
        let Some(i) = t.keys.iter().position(|k| k.id == fm.field_id) else {
            return Err(inv(format!(
                "table \"{}\": no match field id {}",
                t.name, fm.field_id
            )));
        };
        if given[i].is_some() {
            return Err(inv(format!("match field id {} given twice", fm.field_id)));
        }
        given[i] = fm.field_match_type.as_ref();
    }
    let mut out = Vec::with_capacity(t.keys.len());
    for (k, g) in t.keys.iter().zip(given) {
        let what = format!("table \"{}\" field id {}", t.name, k.id);
        let w = k.width;
        let m = match (k.kind, g) {
            (Kind::Exact, Some(FieldMatchType::Exact(e))) => {
                FieldMatch::Exact(to_engine(&e.value, w, &what).map_err(inv)?)
            }
            (Kind::Exact, None) => {
                return Err(inv(format!("{what}: exact fields cannot be omitted")))
            }
            (Kind::Lpm, Some(FieldMatchType::Lpm(l))) => {
                let plen = u32::try_from(l.prefix_len)
                    .ok()
                    .filter(|p| *p <= w)
                    .ok_or_else(|| {
                        inv(format!(
                            "{what}: prefix length {} out of 0..={w}",
                            l.prefix_len
                        ))
                    })?;
                if plen == 0 {
                    return Err(inv(format!(
                        "{what}: a /0 LPM match must be omitted (don't care)"
                    )));
                }
                let v = to_engine(&l.value, w, &what).map_err(inv)?;
                let mask = prefix_mask(w, plen);
                if v.iter().zip(&mask).any(|(a, m)| a & !m != 0) {
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
            (Kind::Ternary, Some(FieldMatchType::Ternary(tn))) => {
                let v = to_engine(&tn.value, w, &what).map_err(inv)?;
                let mask = to_engine(&tn.mask, w, &format!("{what} mask")).map_err(inv)?;
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
            (Kind::Range, Some(FieldMatchType::Range(r))) => {
                let low = to_engine(&r.low, w, &format!("{what} low")).map_err(inv)?;
                let high = to_engine(&r.high, w, &format!("{what} high")).map_err(inv)?;
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
            (Kind::Optional, Some(FieldMatchType::Optional(o))) => {
                FieldMatch::Optional(Some(to_engine(&o.value, w, &what).map_err(inv)?))
            }
            (Kind::Optional, None) => FieldMatch::Optional(None),
            (kind, Some(_)) => return Err(inv(format!("{what}: not a {kind:?} match"))),
        };
        out.push(m);
    }
    Ok((out, te.priority))
}

fn translate_action(p: &Pipeline, t: &TableInfo, te: &TableEntry) -> Result<Act, UpdateError> {
    let inv = |m: String| (Code::InvalidArgument, m);
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
            let (name, args) = action_args(p, a, &t.actions, &format!("table \"{}\"", t.name))?;
            Ok(Act::Action { name, args })
        }
        table_action::Type::ActionProfileMemberId(m) if t.indirect => Ok(Act::P4Member {
            profile: t.profile.clone().unwrap_or_default(),
            id: *m,
        }),
        table_action::Type::ActionProfileGroupId(g) if t.indirect => Ok(Act::Group(*g)),
        table_action::Type::ActionProfileActionSet(_) => Err((
            Code::Unimplemented,
            "one-shot action profile action sets are not implemented".into(),
        )),
        _ => Err(inv(format!("table \"{}\" is not indirect", t.name))),
    }
}

/// An action's engine name and padded arguments, checked against the allowed action ids.
fn action_args(
    p: &Pipeline,
    a: &p4runtime_proto::p4runtime::Action,
    allowed: &[u32],
    owner: &str,
) -> Result<(String, Vec<Vec<u8>>), UpdateError> {
    let inv = |m: String| (Code::InvalidArgument, m);
    if !allowed.contains(&a.action_id) {
        return Err(inv(format!(
            "action id {} is not an action of {owner}",
            a.action_id
        )));
    }
    let Some(info) = p.actions.get(&a.action_id) else {
        return Err(inv(format!("no action with id {}", a.action_id)));
    };
    if a.params.len() != info.params.len() {
        return Err(inv(format!(
            "action \"{}\" takes {} parameters, {} given",
            info.name,
            info.params.len(),
            a.params.len()
        )));
    }
    let mut args = Vec::with_capacity(info.params.len());
    for (id, w) in &info.params {
        let Some(pv) = a.params.iter().find(|x| x.param_id == *id) else {
            return Err(inv(format!(
                "action \"{}\": parameter id {id} missing",
                info.name
            )));
        };
        let what = format!("action \"{}\" param id {id}", info.name);
        args.push(to_engine(&pv.value, *w, &what).map_err(inv)?);
    }
    Ok((info.name.clone(), args))
}

/// The engine's closed error set, one P4Runtime code each.
pub fn engine_code(e: ErrorCode) -> Code {
    match e {
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
        | ErrorCode::InvalidMulticastNode => Code::NotFound,
        ErrorCode::InvalidActionName
        | ErrorCode::ActionNotInTable
        | ErrorCode::BadMatchKey
        | ErrorCode::BadActionData
        | ErrorCode::WrongTableType
        | ErrorCode::IndexOutOfRange
        | ErrorCode::BadValue => Code::InvalidArgument,
        ErrorCode::TableFull | ErrorCode::ActionProfileFull => Code::ResourceExhausted,
        ErrorCode::DuplicateEntry => Code::AlreadyExists,
        ErrorCode::DefaultActionIsConst
        | ErrorCode::DefaultEntryIsConst
        | ErrorCode::ImmutableTableEntries => Code::PermissionDenied,
        ErrorCode::MemberStillUsed => Code::FailedPrecondition,
    }
}

fn api(e: ApiError) -> UpdateError {
    (engine_code(e.code), e.message)
}

/// What undoing one applied op takes.
enum Undo {
    Delete {
        table: String,
        key: (Vec<FieldMatch>, i32),
    },
    Restore {
        table: String,
        key: (Vec<FieldMatch>, i32),
        act: Act,
        priority_ok: bool,
    },
}

fn add(
    sw: &mut Switch,
    table: &str,
    key: &(Vec<FieldMatch>, i32),
    needs_priority: bool,
    act: &Act,
) -> Result<EntryHandle, ApiError> {
    let prio = needs_priority.then_some(key.1);
    match act {
        Act::Action { name, args } => sw.table_add(table, key.0.clone(), prio, name, args),
        Act::Member(m) => sw.table_add_member_entry(table, key.0.clone(), prio, *m),
        Act::Group(g) => sw.table_add_group_entry(table, key.0.clone(), prio, *g),
        Act::P4Member { .. } => unreachable!("member ids are resolved before the engine sees them"),
    }
}

/// The entry's action and whether it has a priority (for the undo log only: a table scan).
fn current(sw: &Switch, table: &str, h: EntryHandle) -> Option<(Act, bool)> {
    let entries = sw.table_entries(table).ok()?;
    let e = entries.into_iter().find(|e| e.handle == h)?;
    let prio = e.priority.is_some();
    Some((
        match e.action {
            switch_engine::EntryAction::Action { name, args } => Act::Action { name, args },
            switch_engine::EntryAction::Member(m) => Act::Member(m),
            switch_engine::EntryAction::Group(g) => Act::Group(g),
        },
        prio,
    ))
}

fn modify(sw: &mut Switch, table: &str, h: EntryHandle, act: &Act) -> Result<(), ApiError> {
    match act {
        Act::Action { name, args } => sw.table_modify(table, h, name, args),
        // The engine modifies direct actions only; a member/group change re-adds the entry.
        Act::Member(_) | Act::Group(_) | Act::P4Member { .. } => Err(ApiError {
            code: ErrorCode::WrongTableType,
            message: "modifying an indirect entry's member or group is not supported".into(),
        }),
    }
}

/// Applies `ops` in order; with `rollback`, the first failure undoes the applied ones and the
/// rest are not tried (reported as ABORTED).
pub fn apply(
    sw: &mut Switch,
    index: &mut Index,
    ops: Vec<Result<Op, UpdateError>>,
    rollback: bool,
) -> Vec<Result<(), UpdateError>> {
    // The undo log covers table entries only.
    let ops: Vec<_> = ops
        .into_iter()
        .map(|op| match op {
            Ok(
                Op::Counter { .. }
                | Op::Register { .. }
                | Op::Mcast { .. }
                | Op::Clone { .. }
                | Op::Member { .. }
                | Op::Group { .. }
                | Op::SetDefault { .. },
            ) if rollback => Err((
                Code::Unimplemented,
                "ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches support table entries only".into(),
            )),
            op => op,
        })
        .collect();
    let mut results = Vec::with_capacity(ops.len());
    let mut undo: Vec<Undo> = Vec::new();
    let mut failed = false;
    for op in ops {
        if failed && rollback {
            results.push(Err((
                Code::Aborted,
                "not applied: an earlier update of the batch failed".into(),
            )));
            continue;
        }
        let r = op.and_then(|op| apply_one(sw, index, op, rollback.then_some(&mut undo)));
        if r.is_err() {
            failed = true;
        }
        results.push(r);
    }
    if failed && rollback {
        for u in undo.into_iter().rev() {
            match u {
                Undo::Delete { table, key } => {
                    if let Some(h) = index.tables.get_mut(&table).and_then(|t| t.remove(&key)) {
                        let _ = sw.table_delete(&table, h);
                    }
                }
                Undo::Restore {
                    table,
                    key,
                    act,
                    priority_ok,
                } => {
                    let h = index.tables.get(&table).and_then(|t| t.get(&key)).copied();
                    match h {
                        Some(h) => {
                            let _ = modify(sw, &table, h, &act);
                        }
                        None => {
                            if let Ok(h) = add(sw, &table, &key, priority_ok, &act) {
                                index.tables.entry(table).or_default().insert(key, h);
                            }
                        }
                    }
                }
            }
        }
        for r in results.iter_mut() {
            if r.is_ok() {
                *r = Err((
                    Code::Aborted,
                    "rolled back: another update of the batch failed".into(),
                ));
            }
        }
    }
    results
}

/// A P4Runtime member id to the engine's member handle.
fn resolve(index: &Index, act: Act) -> Result<Act, UpdateError> {
    match act {
        Act::P4Member { profile, id } => index
            .members
            .get(&profile)
            .and_then(|m| m.get(&id))
            .map(|m| Act::Member(m.0))
            .ok_or((
                Code::NotFound,
                format!("action profile \"{profile}\": no member {id}"),
            )),
        act => Ok(act),
    }
}

fn apply_one(
    sw: &mut Switch,
    index: &mut Index,
    op: Op,
    undo: Option<&mut Vec<Undo>>,
) -> Result<(), UpdateError> {
    let op = match op {
        Op::Insert {
            table,
            key,
            needs_priority,
            act,
        } => Op::Insert {
            table,
            key,
            needs_priority,
            act: resolve(index, act)?,
        },
        Op::Modify { table, key, act } => Op::Modify {
            table,
            key,
            act: resolve(index, act)?,
        },
        op => op,
    };
    match op {
        Op::Insert {
            table,
            key,
            needs_priority,
            act,
        } => {
            let t = index.tables.entry(table.clone()).or_default();
            if t.contains_key(&key) {
                return Err((
                    Code::AlreadyExists,
                    format!("table \"{table}\": an entry with this match key exists"),
                ));
            }
            let h = add(sw, &table, &key, needs_priority, &act).map_err(api)?;
            t.insert(key.clone(), h);
            if let Some(u) = undo {
                u.push(Undo::Delete { table, key });
            }
            Ok(())
        }
        Op::Modify { table, key, act } => {
            let Some(h) = index.tables.get(&table).and_then(|t| t.get(&key)).copied() else {
                return Err((
                    Code::NotFound,
                    format!("table \"{table}\": no entry with this match key"),
                ));
            };
            let old = undo.is_some().then(|| current(sw, &table, h)).flatten();
            modify(sw, &table, h, &act).map_err(api)?;
            if let (Some(u), Some((old, _))) = (undo, old) {
                u.push(Undo::Restore {
                    table,
                    key,
                    act: old,
                    priority_ok: true,
                });
            }
            Ok(())
        }
        Op::Delete { table, key } => {
            let Some(h) = index.tables.get(&table).and_then(|t| t.get(&key)).copied() else {
                return Err((
                    Code::NotFound,
                    format!("table \"{table}\": no entry with this match key"),
                ));
            };
            let old = undo.is_some().then(|| current(sw, &table, h)).flatten();
            sw.table_delete(&table, h).map_err(api)?;
            if let Some(t) = index.tables.get_mut(&table) {
                t.remove(&key);
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
            Act::Action { name, args } => sw.table_set_default(&table, &name, &args).map_err(api),
            _ => Err((
                Code::InvalidArgument,
                "a default entry takes a direct action".into(),
            )),
        },
        Op::Counter {
            name,
            index: i,
            packets,
            bytes,
        } => sw
            .counter_write(&name, i, switch_engine::CounterValue { packets, bytes })
            .map_err(api),
        Op::Register {
            name,
            index: i,
            value,
        } => sw.register_write(&name, i, value).map_err(api),
        Op::Mcast { ty, entry, ports } => {
            let id = entry.multicast_group_id;
            let exists = index.mcast.contains_key(&id);
            match ty {
                update::Type::Insert if exists => {
                    return Err((Code::AlreadyExists, format!("multicast group {id} exists")))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err((Code::NotFound, format!("no multicast group {id}")))
                }
                _ => {}
            }
            if let Some((_, nodes)) = index.mcast.remove(&id) {
                sw.mc_mgrp_destroy(id).map_err(api)?;
                for n in nodes {
                    sw.mc_node_destroy(n).map_err(api)?;
                }
            }
            if ty == update::Type::Delete {
                return Ok(());
            }
            sw.mc_mgrp_create(id).map_err(api)?;
            // One engine node per instance (egress_rid), holding that instance's ports.
            let mut instances: Vec<u32> = ports.iter().map(|p| p.1).collect();
            instances.sort_unstable();
            instances.dedup();
            let mut nodes = Vec::new();
            for rid in instances {
                let ps: Vec<u32> = ports.iter().filter(|p| p.1 == rid).map(|p| p.0).collect();
                let n = sw.mc_node_create(rid, &ps);
                sw.mc_node_associate(id, n).map_err(api)?;
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
            let members = index.members.entry(profile.clone()).or_default();
            let h = members.get(&id).map(|m| m.0);
            match (ty, h) {
                (update::Type::Insert, Some(_)) => {
                    Err((Code::AlreadyExists, format!("member {id} exists")))
                }
                (update::Type::Insert, None) => {
                    let h = sw.profile_add_member(&profile, &name, &args).map_err(api)?;
                    members.insert(id, (h, entry));
                    Ok(())
                }
                (_, None) => Err((Code::NotFound, format!("no member {id}"))),
                (update::Type::Modify, Some(h)) => {
                    sw.profile_modify_member(&profile, h, &name, &args)
                        .map_err(api)?;
                    members.insert(id, (h, entry));
                    Ok(())
                }
                (_, Some(h)) => {
                    sw.profile_delete_member(&profile, h).map_err(api)?;
                    members.remove(&id);
                    Ok(())
                }
            }
        }
        Op::Group { ty, profile, entry } => {
            let id = entry.group_id;
            let exists = index
                .groups
                .get(&profile)
                .is_some_and(|g| g.contains_key(&id));
            match ty {
                update::Type::Insert if exists => {
                    return Err((Code::AlreadyExists, format!("group {id} exists")))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err((Code::NotFound, format!("no group {id}")))
                }
                _ => {}
            }
            if ty == update::Type::Delete {
                sw.profile_delete_group(&profile, id).map_err(api)?;
                if let Some(g) = index.groups.get_mut(&profile) {
                    g.remove(&id);
                }
                return Ok(());
            }
            let members = index.members.get(&profile);
            let mut list = Vec::with_capacity(entry.members.len());
            for m in &entry.members {
                let Some(h) = members.and_then(|ms| ms.get(&m.member_id)).map(|x| x.0) else {
                    return Err((
                        Code::NotFound,
                        format!("group {id}: no member {}", m.member_id),
                    ));
                };
                list.push((h, m.weight as u32));
            }
            sw.profile_set_group(&profile, id, &list).map_err(api)?;
            index.groups.entry(profile).or_default().insert(id, entry);
            Ok(())
        }
        Op::Clone { ty, entry, port } => {
            let id = entry.session_id;
            let exists = index.clones.contains_key(&id);
            match ty {
                update::Type::Insert if exists => {
                    return Err((Code::AlreadyExists, format!("clone session {id} exists")))
                }
                update::Type::Modify | update::Type::Delete if !exists => {
                    return Err((Code::NotFound, format!("no clone session {id}")))
                }
                _ => {}
            }
            if ty == update::Type::Delete {
                sw.mirroring_delete(id).map_err(api)?;
                index.clones.remove(&id);
                return Ok(());
            }
            sw.mirroring_add(id, switch_engine::MirrorSession { port, mgrp: None })
                .map_err(api)?;
            index.clones.insert(id, entry);
            Ok(())
        }
    }
}
