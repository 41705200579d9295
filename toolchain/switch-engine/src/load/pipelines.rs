//! Pipelines (`pipelines`): tables, action profiles and selectors, conditionals,
//! action calls, next nodes.

use super::{err, L, NO_SCOPE, R};
use crate::expr::{FieldLoc, HRef};
use crate::program::*;
use p4_bmv2_json as j;
use p4_bmv2_json::MatchType;
use std::collections::HashMap;

impl<'a> L<'a> {
    pub(super) fn next(&self, name: &Option<String>, path: &str) -> R<Next> {
        match name {
            None => Ok(Next::End),
            Some(n) => match self.node_by_name.get(n.as_str()) {
                Some(&x) => Ok(x),
                None => err(path, format!("unknown control flow node \"{n}\"")),
            },
        }
    }

    pub(super) fn action_ref(&self, id: i64, path: &str) -> R<u32> {
        match self.action_by_id.get(&id) {
            Some(&a) => Ok(a),
            None => err(path, format!("no action with id {id}")),
        }
    }

    pub(super) fn pipelines(&mut self) -> R<()> {
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
        let mut keyless = Vec::new();
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
                // p4c's `tbl_act` wrappers of straight-line code: no key, a constant default
                // entry without action data, nothing counted or metered per entry.
                let plain = t.key.is_empty()
                    && direct_counter.is_none()
                    && direct_meter.is_none()
                    && !table.support_timeout;
                if let Some(d) = t.default_entry.as_ref().filter(|d| {
                    plain && d.action_const && d.action_entry_const && d.action_data.is_empty()
                }) {
                    let action =
                        self.action_ref(d.action_id, &format!("{tpath}.default_entry.action_id"))?;
                    keyless.push((table_index, action));
                }
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
        // Packets run a pipeline as one list of steps in this order (`compile::Pipeline`).
        for (pi, p) in self.p.pipelines.iter().enumerate() {
            if let Err(n) = self.p.node_order(p.init) {
                let name = self.node_by_name.iter().find(|(_, &x)| x == n);
                return err(
                    &format!("pipelines[{pi}]"),
                    format!(
                        "control flow node \"{}\" leads back to itself (a control graph has no cycles)",
                        name.map_or("?", |(k, _)| k)
                    ),
                );
            }
        }
        self.keyless_as_calls(&keyless);
        Ok(())
    }

    /// A keyless table with a constant default entry (`keyless`: table, action) always runs
    /// that action and goes to its miss node: it becomes an action call, which a packet runs
    /// without the table's lookup, entry resolution and next-node search. The table stays
    /// (the control plane still reads its default entry); no node leads to it any more.
    fn keyless_as_calls(&mut self, keyless: &[(u32, u32)]) {
        let mut call_of = HashMap::new();
        for &(t, action) in keyless {
            let info = &self.p.tables[t as usize];
            let next = match info.hit_miss {
                Some((_, miss)) => miss,
                None => info.next_of(action),
            };
            call_of.insert(t, self.p.calls.len() as u32);
            self.p.calls.push(CallInfo { action, next });
        }
        let call = |n: &mut Next| {
            if let Next::Table(t) = *n {
                if let Some(&c) = call_of.get(&t) {
                    *n = Next::Call(c);
                }
            }
        };
        let p = &mut self.p;
        p.pipelines.iter_mut().for_each(|x| call(&mut x.init));
        p.calls.iter_mut().for_each(|x| call(&mut x.next));
        for c in &mut p.conds {
            call(&mut c.t);
            call(&mut c.f);
        }
        for t in &mut p.tables {
            t.next_by_action.iter_mut().for_each(|(_, n)| call(n));
            if let Some((hit, miss)) = &mut t.hit_miss {
                call(hit);
                call(miss);
            }
            call(&mut t.base_default_next);
        }
    }

    /// The hash calculation of an action selector at `path` (`PATH.selector`), if any.
    pub(super) fn selector(&mut self, sel: &Option<j::Selector>, path: &str) -> R<Option<u32>> {
        let Some(s) = sel else {
            return Ok(None);
        };
        let algo = Self::hasher(&s.algo, &format!("{path}.selector.algo"))?;
        let inputs = self.calc_inputs(&s.input, &format!("{path}.selector.input"))?;
        self.p.calcs.push(CalcInfo { algo, inputs });
        Ok(Some(self.p.calcs.len() as u32 - 1))
    }

    pub(super) fn table(
        &self,
        t: &j::Table,
        tpath: &str,
        profiles: &HashMap<&str, u32>,
    ) -> R<TableInfo> {
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
        let mut next_by_action: Vec<(u32, Next)> = Vec::new();
        let (mut hit, mut miss) = (None, None);
        for (name, node) in &t.next_tables {
            let npath = format!("{tpath}.next_tables.{name}");
            let n = self.next(node, &npath)?;
            match name.as_str() {
                "__HIT__" => hit = Some(n),
                "__MISS__" => miss = Some(n),
                _ => match by_name.get(name.as_str()) {
                    Some(&a) => {
                        // Two names of one action: the later entry wins, as before.
                        match next_by_action.iter_mut().find(|(x, _)| *x == a) {
                            Some(slot) => slot.1 = n,
                            None => next_by_action.push((a, n)),
                        }
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
}
