//! Read: entries collected from the engine in one `exec`, converted back to P4Runtime (canonical
//! bytes, don't-care fields omitted) outside it.

use p4runtime_proto::google::rpc::Code;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use p4runtime_proto::p4runtime::{
    entity, field_match, p4_data, packet_replication_engine_entry as pre, table_action, Action,
    CounterData, CounterEntry, DigestEntry, DirectCounterEntry, DirectMeterEntry, Entity,
    FieldMatch, Index, MeterConfig, MeterEntry, P4Data, PacketReplicationEngineEntry,
    RegisterEntry, TableAction, TableEntry, ValueSetEntry,
};
use switch_v1model::{
    CounterValue, EntryAction, EntryDesc, EntryHandle, FieldMatch as EM, MeterRate, Switch,
};
use tonic::Status;

use crate::bytes::{all_ones, canonical};
use crate::pipeline::{Pipeline, TableInfo};
use crate::write::Index as Store;
use crate::{exec_on, status, Dataplane};

/// The ids a table id selects: 0 = every table, in id order.
fn table_ids(p: &Pipeline, id: u32) -> Result<Vec<u32>, Status> {
    if id == 0 {
        let mut v: Vec<u32> = p.tables.keys().copied().collect();
        v.sort_unstable();
        Ok(v)
    } else if p.tables.contains_key(&id) {
        Ok(vec![id])
    } else {
        Err(status(Code::NotFound, format!("no table with id {id}")))
    }
}

fn sorted<V>(m: &HashMap<u32, V>) -> Vec<(u32, &V)> {
    let mut v: Vec<(u32, &V)> = m.iter().map(|(k, v)| (*k, v)).collect();
    v.sort_by_key(|e| e.0);
    v
}

/// (id, engine name, index) of every cell a counter/register read asks for: id 0 = every
/// object, no index = every cell.
fn cells(
    objs: &[(u32, String, u64)],
    id: u32,
    index: Option<i64>,
) -> Result<Vec<(u32, String, u64)>, Status> {
    let mut sel: Vec<&(u32, String, u64)> = objs.iter().filter(|o| id == 0 || o.0 == id).collect();
    if sel.is_empty() && id != 0 {
        return Err(status(
            Code::NotFound,
            format!("no counter or register with id {id}"),
        ));
    }
    sel.sort_by_key(|o| o.0);
    let mut out = Vec::new();
    for (oid, name, size) in sel {
        match index {
            Some(i) => match u64::try_from(i) {
                Ok(i) if i < *size => out.push((*oid, name.clone(), i)),
                _ => {
                    return Err(status(
                        Code::OutOfRange,
                        format!("\"{name}\": index {i} out of 0..{size}"),
                    ))
                }
            },
            None => out.extend((0..*size).map(|i| (*oid, name.clone(), i))),
        }
    }
    Ok(out)
}

/// A read's object id: 0 (every object) or one the P4Info has, else NOT_FOUND.
fn known(id: u32, exists: bool, what: &str) -> Result<(), Status> {
    if id == 0 || exists {
        Ok(())
    } else {
        Err(status(Code::NotFound, format!("no {what} with id {id}")))
    }
}

/// Entities per ReadResponse.
pub const CHUNK: usize = 1000;

struct Query {
    table: u32,
    key: Option<(Vec<EM>, i32)>,
    default: bool,
    /// `time_since_last_hit` asked for (tables that support idle timeout).
    since_hit: bool,
    /// `counter_data` / `meter_config` asked for (set in the request, as PI does) on a table
    /// with a direct counter / meter.
    counters: bool,
    meters: bool,
}

/// What one query takes from the engine.
#[derive(Default)]
struct Raw {
    entries: Vec<EntryDesc>,
    default: Option<EntryAction>,
    hits: Vec<EntryHandle>,
    meters: HashMap<EntryHandle, Vec<MeterRate>>,
    counters: HashMap<EntryHandle, CounterValue>,
}

/// A meter config as P4Runtime gives it; `None` for an unconfigured meter.
fn meter_config(r: &[MeterRate]) -> Option<MeterConfig> {
    match r {
        [c, p] => Some(MeterConfig {
            cir: (c.rate_per_us * 1e6).round() as i64,
            cburst: c.burst as i64,
            pir: (p.rate_per_us * 1e6).round() as i64,
            pburst: p.burst as i64,
            eburst: 0,
        }),
        _ => None,
    }
}

/// Records hits the engine saw since the last poll as hits now (the ageing resolution is the
/// poll interval); returns when that was.
pub fn note_hits(store: &mut Store, hits: Vec<(String, Vec<EntryHandle>)>) -> std::time::Instant {
    let now = std::time::Instant::now();
    for (table, hs) in hits {
        let Some(last) = store.last_hit.get_mut(table.as_str()) else {
            continue;
        };
        for h in hs {
            if let Some(t) = last.get_mut(&h) {
                *t = now;
            }
        }
    }
    now
}

fn counter_data(v: CounterValue) -> CounterData {
    CounterData {
        byte_count: v.bytes as i64,
        packet_count: v.packets as i64,
    }
}

/// The installed entries a DirectCounterEntry / DirectMeterEntry read selects, each as its key
/// (a TableEntry without action) with the value `get` reads: table id 0 = every table that
/// `has` the resource, a table without it is INVALID_ARGUMENT; an empty match = every entry.
fn direct_entries<R: Send + 'static>(
    dp: &dyn Dataplane,
    p: &Pipeline,
    handles: &HashMap<(String, u32), u32>,
    te: &TableEntry,
    what: &str,
    has: fn(&TableInfo) -> bool,
    get: fn(&mut Switch, &str, EntryHandle) -> Option<R>,
) -> Result<Vec<(TableEntry, R)>, Status> {
    let mut out = Vec::new();
    for id in table_ids(p, te.table_id)? {
        let t = &p.tables[&id];
        if !has(t) {
            if te.table_id == 0 {
                continue;
            }
            return Err(status(
                Code::InvalidArgument,
                format!("table \"{}\" has no direct {what}", t.name),
            ));
        }
        let key = if te.r#match.is_empty() {
            None
        } else {
            Some(crate::write::translate_match(t, te)?)
        };
        let name = t.name.clone();
        let got = exec_on(dp, move |sw| {
            let Some(sw) = sw else { return Vec::new() };
            let entries = sw.table_entries(&name).unwrap_or_default();
            entries
                .into_iter()
                .filter(|e| {
                    key.as_ref()
                        .map_or(true, |k| k.0 == e.matches && k.1 == e.priority.unwrap_or(0))
                })
                .filter_map(|e| get(sw, &name, e.handle).map(|v| (e, v)))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
        for (e, v) in got {
            let prio = e.priority.unwrap_or(0);
            let m = matches_of(t, &e.matches);
            if let Some(entity::Entity::TableEntry(mut te)) =
                table_entity(p, t, handles, id, (m, prio), &e.action, false).entity
            {
                te.action = None;
                out.push((te, v));
            }
        }
    }
    Ok(out)
}

pub fn read(
    dp: &dyn Dataplane,
    p: &Pipeline,
    index: &Arc<Mutex<Store>>,
    entities: &[Entity],
) -> Result<Vec<Entity>, Status> {
    // Engine member handle → P4Runtime member id, for entries of indirect tables.
    let handles: HashMap<(String, u32), u32> = {
        let idx = index.lock().unwrap_or_else(|e| e.into_inner());
        idx.members
            .iter()
            .flat_map(|(prof, ms)| ms.iter().map(move |(id, (h, _))| ((prof.clone(), *h), *id)))
            .collect()
    };
    let mut queries = Vec::new();
    let mut out = Vec::new();
    for e in entities {
        match &e.entity {
            Some(entity::Entity::CounterEntry(c)) => {
                let cells = cells(
                    &p.counters
                        .iter()
                        .map(|(id, (n, size))| (*id, n.clone(), *size))
                        .collect::<Vec<_>>(),
                    c.counter_id,
                    c.index.as_ref().map(|i| i.index),
                )?;
                let got = exec_on(dp, move |sw| {
                    let Some(sw) = sw else { return Vec::new() };
                    cells
                        .into_iter()
                        .filter_map(|(id, n, i)| sw.counter_read(&n, i).ok().map(|v| (id, i, v)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
                out.extend(got.into_iter().map(|(id, i, v)| Entity {
                    entity: Some(entity::Entity::CounterEntry(CounterEntry {
                        counter_id: id,
                        index: Some(Index { index: i as i64 }),
                        data: Some(counter_data(v)),
                    })),
                }));
            }
            Some(entity::Entity::DirectCounterEntry(dc)) => {
                let te = dc.table_entry.clone().unwrap_or_default();
                let got = direct_entries(
                    dp,
                    p,
                    &handles,
                    &te,
                    "counter",
                    |t| t.direct_counter.is_some(),
                    |sw, name, h| sw.direct_counter_read(name, h).ok(),
                )?;
                out.extend(got.into_iter().map(|(te, v)| Entity {
                    entity: Some(entity::Entity::DirectCounterEntry(DirectCounterEntry {
                        table_entry: Some(te),
                        data: Some(counter_data(v)),
                    })),
                }));
            }
            Some(entity::Entity::MeterEntry(m)) => {
                let objs: Vec<_> = p
                    .meters
                    .iter()
                    .map(|(id, (n, size))| (*id, n.clone(), *size))
                    .collect();
                let cells = cells(&objs, m.meter_id, m.index.as_ref().map(|i| i.index))?;
                let got = exec_on(dp, move |sw| {
                    let Some(sw) = sw else { return Vec::new() };
                    cells
                        .into_iter()
                        .filter_map(|(id, n, i)| sw.meter_get_rates(&n, i).ok().map(|r| (id, i, r)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
                out.extend(got.into_iter().map(|(id, i, r)| {
                    let config = meter_config(&r);
                    Entity {
                        entity: Some(entity::Entity::MeterEntry(MeterEntry {
                            meter_id: id,
                            index: Some(Index { index: i as i64 }),
                            config,
                            counter_data: None,
                        })),
                    }
                }));
            }
            Some(entity::Entity::DirectMeterEntry(dm)) => {
                let te = dm.table_entry.clone().unwrap_or_default();
                let got = direct_entries(
                    dp,
                    p,
                    &handles,
                    &te,
                    "meter",
                    |t| t.direct_meter.is_some(),
                    |sw, name, h| sw.direct_meter_get_rates(name, h).ok(),
                )?;
                out.extend(got.into_iter().map(|(te, r)| Entity {
                    entity: Some(entity::Entity::DirectMeterEntry(DirectMeterEntry {
                        table_entry: Some(te),
                        config: meter_config(&r),
                        counter_data: None,
                    })),
                }));
            }
            Some(entity::Entity::ValueSetEntry(v)) => {
                let mut ids: Vec<u32> = p.value_sets.keys().copied().collect();
                ids.sort_unstable();
                known(v.value_set_id, ids.contains(&v.value_set_id), "value set")?;
                let idx = index.lock().unwrap_or_else(|e| e.into_inner());
                for id in ids {
                    if v.value_set_id != 0 && v.value_set_id != id {
                        continue;
                    }
                    let entry = idx.value_sets.get(&id).map_or(
                        ValueSetEntry {
                            value_set_id: id,
                            members: Vec::new(),
                        },
                        |(e, _)| e.clone(),
                    );
                    out.push(Entity {
                        entity: Some(entity::Entity::ValueSetEntry(entry)),
                    });
                }
            }
            Some(entity::Entity::RegisterEntry(r)) => {
                let cells = cells(
                    &p.registers
                        .iter()
                        .map(|(id, (n, size, _))| (*id, n.clone(), *size))
                        .collect::<Vec<_>>(),
                    r.register_id,
                    r.index.as_ref().map(|i| i.index),
                )?;
                let got = exec_on(dp, move |sw| {
                    let Some(sw) = sw else { return Vec::new() };
                    cells
                        .into_iter()
                        .filter_map(|(id, n, i)| sw.register_read(&n, i).ok().map(|v| (id, i, v)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
                out.extend(got.into_iter().map(|(id, i, v)| Entity {
                    entity: Some(entity::Entity::RegisterEntry(RegisterEntry {
                        register_id: id,
                        index: Some(Index { index: i as i64 }),
                        data: Some(P4Data {
                            data: Some(p4_data::Data::Bitstring(canonical(&v.to_be_bytes()))),
                        }),
                    })),
                }));
            }
            Some(entity::Entity::DigestEntry(d)) => {
                known(d.digest_id, p.digests.contains_key(&d.digest_id), "digest")?;
                let idx = index.lock().unwrap_or_else(|e| e.into_inner());
                out.extend(
                    idx.digests
                        .iter()
                        .filter(|(id, _)| d.digest_id == 0 || **id == d.digest_id)
                        .map(|(id, c)| Entity {
                            entity: Some(entity::Entity::DigestEntry(DigestEntry {
                                digest_id: *id,
                                config: Some(*c),
                            })),
                        }),
                );
            }
            Some(entity::Entity::ActionProfileMember(m)) => {
                let id = m.action_profile_id;
                known(id, p.profiles.contains_key(&id), "action profile")?;
                let idx = index.lock().unwrap_or_else(|e| e.into_inner());
                for (pid, prof) in sorted(&p.profiles) {
                    if m.action_profile_id != 0 && m.action_profile_id != pid {
                        continue;
                    }
                    if let Some(ms) = idx.members.get(&prof.name) {
                        out.extend(
                            ms.iter()
                                .filter(|(id, _)| m.member_id == 0 || **id == m.member_id)
                                .map(|(_, (_, e))| Entity {
                                    entity: Some(entity::Entity::ActionProfileMember(e.clone())),
                                }),
                        );
                    }
                }
            }
            Some(entity::Entity::ActionProfileGroup(g)) => {
                let id = g.action_profile_id;
                known(id, p.profiles.contains_key(&id), "action profile")?;
                let idx = index.lock().unwrap_or_else(|e| e.into_inner());
                for (pid, prof) in sorted(&p.profiles) {
                    if g.action_profile_id != 0 && g.action_profile_id != pid {
                        continue;
                    }
                    if let Some(gs) = idx.groups.get(&prof.name) {
                        out.extend(
                            gs.iter()
                                .filter(|(id, _)| g.group_id == 0 || **id == g.group_id)
                                .map(|(_, e)| Entity {
                                    entity: Some(entity::Entity::ActionProfileGroup(e.clone())),
                                }),
                        );
                    }
                }
            }
            Some(entity::Entity::PacketReplicationEngineEntry(pe)) => {
                let idx = index.lock().unwrap_or_else(|e| e.into_inner());
                let wrap = |t| Entity {
                    entity: Some(entity::Entity::PacketReplicationEngineEntry(
                        PacketReplicationEngineEntry { r#type: Some(t) },
                    )),
                };
                match &pe.r#type {
                    Some(pre::Type::MulticastGroupEntry(m)) => out.extend(
                        idx.mcast
                            .iter()
                            .filter(|(id, _)| {
                                m.multicast_group_id == 0 || **id == m.multicast_group_id
                            })
                            .map(|(_, (e, _))| wrap(pre::Type::MulticastGroupEntry(e.clone()))),
                    ),
                    Some(pre::Type::CloneSessionEntry(c)) => out.extend(
                        idx.clones
                            .iter()
                            .filter(|(id, _)| c.session_id == 0 || **id == c.session_id)
                            .map(|(_, e)| wrap(pre::Type::CloneSessionEntry(e.clone()))),
                    ),
                    None => {
                        return Err(status(
                            Code::InvalidArgument,
                            "empty PacketReplicationEngineEntry",
                        ))
                    }
                }
            }
            Some(entity::Entity::TableEntry(te)) => {
                let ids: Vec<u32> = if te.table_id == 0 {
                    let mut v: Vec<u32> = p.tables.keys().copied().collect();
                    v.sort_unstable();
                    v
                } else if p.tables.contains_key(&te.table_id) {
                    vec![te.table_id]
                } else {
                    return Err(status(
                        Code::NotFound,
                        format!("no table with id {}", te.table_id),
                    ));
                };
                for id in ids {
                    let t = &p.tables[&id];
                    let key = if te.r#match.is_empty() {
                        None
                    } else {
                        Some(crate::write::translate_match(t, te)?)
                    };
                    queries.push((
                        Query {
                            table: id,
                            key,
                            default: te.is_default_action,
                            since_hit: te.time_since_last_hit.is_some() && t.supports_timeout,
                            counters: te.counter_data.is_some() && t.direct_counter.is_some(),
                            meters: te.meter_config.is_some() && t.direct_meter.is_some(),
                        },
                        t.name.clone(),
                    ));
                }
            }
            Some(entity::Entity::ExternEntry(_)) => {
                return Err(status(
                    Code::Unimplemented,
                    "ExternEntry reads are not implemented (bmv2 has no P4Info externs)",
                ));
            }
            None => return Err(status(Code::InvalidArgument, "read of an empty entity")),
        }
    }
    let asks: Vec<(String, bool, bool, bool, bool)> = queries
        .iter()
        .map(|(q, n)| (n.to_string(), q.default, q.since_hit, q.meters, q.counters))
        .collect();
    let dp_index = Arc::clone(index);
    let (raw, now) = exec_on(dp, move |sw| {
        let Some(sw) = sw else {
            return (Vec::new(), std::time::Instant::now());
        };
        let raw = asks
            .iter()
            .map(|(n, default, since_hit, meters, counters)| {
                if *default {
                    return Raw {
                        default: sw.table_default(n).ok().flatten(),
                        ..Raw::default()
                    };
                }
                let entries = sw.table_entries(n).unwrap_or_default();
                let hits = if *since_hit {
                    sw.take_hits(n).unwrap_or_default()
                } else {
                    Vec::new()
                };
                let meters = if *meters {
                    entries
                        .iter()
                        .filter_map(|e| {
                            Some((e.handle, sw.direct_meter_get_rates(n, e.handle).ok()?))
                        })
                        .collect()
                } else {
                    HashMap::new()
                };
                let counters = if *counters {
                    entries
                        .iter()
                        .filter_map(|e| Some((e.handle, sw.direct_counter_read(n, e.handle).ok()?)))
                        .collect()
                } else {
                    HashMap::new()
                };
                Raw {
                    entries,
                    default: None,
                    hits,
                    meters,
                    counters,
                }
            })
            .collect::<Vec<Raw>>();
        // Hits leave the engine and enter the store in one step on the dataplane thread, as the
        // idle poller's do: a read between the two steps would see the hit in neither place.
        let hits = asks
            .iter()
            .zip(&raw)
            .map(|((n, ..), r)| (n.clone(), r.hits.clone()))
            .collect();
        let now = note_hits(
            &mut dp_index.lock().unwrap_or_else(|e| e.into_inner()),
            hits,
        );
        (raw, now)
    })
    .ok_or_else(|| status(Code::Unavailable, "the data plane is gone"))?;
    let store = index.lock().unwrap_or_else(|e| e.into_inner());
    let store = &*store;
    for ((q, _), r) in queries.iter().zip(raw) {
        let t = &p.tables[&q.table];
        if q.default {
            if let Some(a) = r.default {
                out.push(table_entity(
                    p,
                    t,
                    &handles,
                    q.table,
                    (Vec::new(), 0),
                    &a,
                    true,
                ));
            }
            continue;
        }
        for e in r.entries {
            let prio = e.priority.unwrap_or(0);
            if let Some(k) = &q.key {
                if k.0 != e.matches || k.1 != prio {
                    continue;
                }
            }
            let m = matches_of(t, &e.matches);
            let mut ent = table_entity(p, t, &handles, q.table, (m, prio), &e.action, false);
            if let Some(entity::Entity::TableEntry(te)) = ent.entity.as_mut() {
                let key = (e.matches.clone(), prio);
                if let Some(i) = store.idle.get(&t.name).and_then(|i| i.get(&key)) {
                    te.idle_timeout_ns = i.timeout_ns;
                }
                if let Some(o) = store.oneshot.get(&t.name).and_then(|o| o.get(&key)) {
                    te.action = Some(TableAction {
                        r#type: Some(table_action::Type::ActionProfileActionSet(o.set.clone())),
                    });
                }
                // controller_metadata is deprecated (1.4) for `metadata`; older controllers
                // still set it, and PI reads it back.
                #[allow(deprecated)]
                if let Some((c, m)) = store.cookies.get(&t.name).and_then(|c| c.get(&key)) {
                    te.controller_metadata = *c;
                    te.metadata.clone_from(m);
                }
                if q.meters {
                    te.meter_config = r.meters.get(&e.handle).and_then(|m| meter_config(m));
                }
                if q.counters {
                    te.counter_data = r.counters.get(&e.handle).map(|v| counter_data(*v));
                }
                if q.since_hit {
                    te.time_since_last_hit = store
                        .last_hit
                        .get(&t.name)
                        .and_then(|l| l.get(&e.handle))
                        .map(|at| p4runtime_proto::p4runtime::table_entry::IdleTimeout {
                            elapsed_ns: i64::try_from(now.duration_since(*at).as_nanos())
                                .unwrap_or(i64::MAX),
                        });
                }
            }
            out.push(ent);
        }
    }
    Ok(out)
}

pub(crate) fn matches_of(t: &TableInfo, ms: &[EM]) -> Vec<FieldMatch> {
    t.keys
        .iter()
        .zip(ms)
        .filter_map(|(k, m)| {
            let ty = match m {
                EM::Exact(v) => field_match::FieldMatchType::Exact(field_match::Exact {
                    value: canonical(v),
                }),
                EM::Lpm { prefix_len: 0, .. } => return None,
                EM::Lpm { value, prefix_len } => {
                    field_match::FieldMatchType::Lpm(field_match::Lpm {
                        value: canonical(value),
                        prefix_len: *prefix_len as i32,
                    })
                }
                EM::Ternary { mask, .. } if mask.iter().all(|b| *b == 0) => return None,
                EM::Ternary { value, mask } => {
                    field_match::FieldMatchType::Ternary(field_match::Ternary {
                        value: canonical(value),
                        mask: canonical(mask),
                    })
                }
                EM::Range { low, high }
                    if low.iter().all(|b| *b == 0) && *high == all_ones(k.width) =>
                {
                    return None
                }
                EM::Range { low, high } => field_match::FieldMatchType::Range(field_match::Range {
                    low: canonical(low),
                    high: canonical(high),
                }),
                EM::Optional(None) => return None,
                EM::Optional(Some(v)) => {
                    field_match::FieldMatchType::Optional(field_match::Optional {
                        value: canonical(v),
                    })
                }
            };
            Some(FieldMatch {
                field_id: k.id,
                field_match_type: Some(ty),
            })
        })
        .collect()
}

fn table_entity(
    p: &Pipeline,
    t: &TableInfo,
    handles: &HashMap<(String, u32), u32>,
    table_id: u32,
    (m, priority): (Vec<FieldMatch>, i32),
    a: &EntryAction,
    default: bool,
) -> Entity {
    let ty = match a {
        EntryAction::Action { name, args } => {
            let id = p.action_ids.get(name).copied().unwrap_or(0);
            let params = p
                .actions
                .get(&id)
                .map(|info| {
                    info.params
                        .iter()
                        .zip(args)
                        .map(|((pid, _), v)| p4runtime_proto::p4runtime::action::Param {
                            param_id: *pid,
                            value: canonical(v),
                        })
                        .collect()
                })
                .unwrap_or_default();
            table_action::Type::Action(Action {
                action_id: id,
                params,
            })
        }
        EntryAction::Member(h) => {
            let profile = t.profile.clone().unwrap_or_default();
            table_action::Type::ActionProfileMemberId(
                handles.get(&(profile, *h)).copied().unwrap_or(*h),
            )
        }
        EntryAction::Group(g) => table_action::Type::ActionProfileGroupId(*g),
    };
    Entity {
        entity: Some(entity::Entity::TableEntry(TableEntry {
            table_id,
            r#match: m,
            action: Some(TableAction { r#type: Some(ty) }),
            priority,
            is_default_action: default,
            // P4Runtime 1.4: entries of a const table are marked as such.
            is_const: t.is_const && !default,
            ..Default::default()
        })),
    }
}
