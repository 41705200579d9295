//! Control-plane operations (what P4Runtime and bmv2's runtime CLI call). Names are the JSON's
//! full names; suffix resolution belongs to the front ends. Every failure has a closed code.

use crate::action_data::{action_data, to_bytes};
use crate::error::{fail, ApiError, ErrorCode};
use crate::switch::{McNode, MirrorSession, Switch};
use num_bigint::BigInt;
use p4_bmv2_json::MatchType;
use switch_engine::state::{ActionData, CounterValue, EntryVal, MeterCell, MeterRate};
use switch_engine::value::big_to_bytes;
use switch_tables::{EntryHandle, FieldMatch, GroupMember};

/// A table as the control plane sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDesc {
    pub name: String,
    pub keys: Vec<KeyDesc>,
    /// Action names with their parameters (name, width).
    pub actions: Vec<ActionDesc>,
    pub has_profile: bool,
    /// The action profile's name, for indirect tables.
    pub profile: Option<String>,
    pub has_selector: bool,
    pub max_size: usize,
    /// JSON `support_timeout`: entries record hits (`take_hits`).
    pub support_timeout: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDesc {
    pub name: String,
    /// The key as bmv2's runtime CLI names it (target joined with dots, `HEADER_valid`).
    pub target_name: String,
    pub match_type: MatchType,
    pub width: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionDesc {
    pub name: String,
    pub params: Vec<(String, u32)>,
}

/// A direct table and one of its actions, as [`Switch::table_action_of`] resolved them: valid
/// for the switch that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableAction {
    table: usize,
    action: u32,
}

/// A multicast group: its id and its nodes as `(node handle, rid, ports)`.
pub type McGroupDesc = (u32, Vec<(u32, u32, Vec<u32>)>);

/// A group's `(member, weight)` list.
pub type GroupMembers = Vec<(u32, u32)>;

/// What an installed entry does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryAction {
    Action { name: String, args: Vec<Vec<u8>> },
    Member(u32),
    Group(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDesc {
    pub handle: EntryHandle,
    pub matches: Vec<FieldMatch>,
    pub priority: Option<i32>,
    pub action: EntryAction,
}

impl Switch {
    fn table_index(&self, name: &str) -> Result<usize, ApiError> {
        match self.table_names.get(name) {
            Some(&i) => Ok(i),
            None => fail(ErrorCode::InvalidTableName, format!("no table \"{name}\"")),
        }
    }

    fn table_action(&self, t: usize, action: &str) -> Result<u32, ApiError> {
        let info = &self.prog.tables[t];
        // Several actions may share a name only across tables: the table's own first (a few
        // to compare); the search of every action only tells the two errors apart.
        if let Some(&x) = info
            .actions
            .iter()
            .find(|&&x| self.prog.actions[x as usize].name == action)
        {
            return Ok(x);
        }
        let Some(a) = self.prog.actions.iter().position(|a| a.name == action) else {
            return fail(
                ErrorCode::InvalidActionName,
                format!("no action \"{action}\""),
            );
        };
        fail(
            ErrorCode::ActionNotInTable,
            format!(
                "action \"{}\" is not an action of table \"{}\"",
                self.prog.actions[a].name, info.name
            ),
        )
    }

    /// An action of a direct table (entries of indirect tables point at members or groups).
    fn direct_action(&self, t: usize, action: &str) -> Result<u32, ApiError> {
        if self.prog.tables[t].profile.is_some() {
            return fail(
                ErrorCode::WrongTableType,
                format!(
                    "table \"{}\" is indirect: entries point at members or groups",
                    self.prog.tables[t].name
                ),
            );
        }
        self.table_action(t, action)
    }

    fn entry_value(&self, t: usize, action: &str, args: &[Vec<u8>]) -> Result<EntryVal, ApiError> {
        let a = self.direct_action(t, action)?;
        Ok(EntryVal::Act(action_data(&self.prog, a, args)?))
    }

    fn mutable_table(&mut self, t: usize) -> Result<&mut switch_tables::Table<EntryVal>, ApiError> {
        if self.prog.tables[t].immutable_entries {
            return fail(
                ErrorCode::ImmutableTableEntries,
                format!("table \"{}\" has const entries", self.prog.tables[t].name),
            );
        }
        match self.rt.tables[t].table.as_mut() {
            Some(tb) => Ok(tb),
            None => fail(
                ErrorCode::TableFull,
                format!(
                    "table \"{}\" has no key and takes no entries",
                    self.prog.tables[t].name
                ),
            ),
        }
    }

    /// The entries of a `support_timeout` table hit since the last call, which clears them
    /// (hit bits, as an ASIC's ageing poll reads them).
    pub fn take_hits(&mut self, table: &str) -> Result<Vec<EntryHandle>, ApiError> {
        let t = self.table_index(table)?;
        let hits = &mut self.rt.ext.hits[t];
        let out = hits
            .iter()
            .enumerate()
            .filter(|(_, hit)| **hit)
            .map(|(i, _)| EntryHandle(i as u32))
            .collect();
        hits.fill(false);
        Ok(out)
    }

    fn insert_entry(
        &mut self,
        t: usize,
        matches: &[FieldMatch],
        priority: Option<i32>,
        v: EntryVal,
    ) -> Result<EntryHandle, ApiError> {
        let h = self.mutable_table(t)?.insert(matches, priority, v)?;
        self.reset_direct(t, h);
        Ok(h)
    }

    /// Clears the bits bmv2 ignores in a key (beyond an LPM prefix, outside a ternary mask,
    /// above the field width), so that keys bmv2's runtime CLI accepts are accepted here too.
    pub fn canonicalize_like_bmv2(
        &self,
        table: &str,
        matches: &mut [FieldMatch],
    ) -> Result<(), ApiError> {
        let t = self.table_index(table)?;
        if let Some(tb) = &self.rt.tables[t].table {
            tb.canonicalize_like_bmv2(matches);
        }
        Ok(())
    }

    /// Every table, in JSON order.
    pub fn tables(&self) -> Vec<TableDesc> {
        self.prog
            .tables
            .iter()
            .map(|t| TableDesc {
                name: t.name.clone(),
                keys: t
                    .keys
                    .iter()
                    .map(|k| KeyDesc {
                        name: k.name.clone(),
                        target_name: k.target_name.clone(),
                        match_type: k.kind,
                        width: k.width,
                    })
                    .collect(),
                actions: t
                    .actions
                    .iter()
                    .map(|&a| ActionDesc {
                        name: self.prog.actions[a as usize].name.clone(),
                        params: self.prog.actions[a as usize].params.clone(),
                    })
                    .collect(),
                has_profile: t.profile.is_some(),
                profile: t
                    .profile
                    .map(|p| self.prog.profiles[p as usize].name.clone()),
                has_selector: t
                    .profile
                    .is_some_and(|p| self.prog.profiles[p as usize].selector.is_some()),
                max_size: t.max_size,
                support_timeout: t.support_timeout,
            })
            .collect()
    }

    /// The name of a parser error value (`standard_metadata.parser_error`), from the JSON's
    /// `errors` or the core errors bmv2 adds.
    pub fn error_name(&self, value: u32) -> Option<&str> {
        self.prog.error_names.get(&value).map(String::as_str)
    }

    /// Names of registers, counters and meters (for name resolution by front ends).
    pub fn register_names(&self) -> Vec<String> {
        self.prog.registers.iter().map(|r| r.name.clone()).collect()
    }
    pub fn counter_names(&self) -> Vec<String> {
        self.prog.counters.iter().map(|r| r.name.clone()).collect()
    }
    pub fn meter_names(&self) -> Vec<String> {
        self.prog.meters.iter().map(|r| r.name.clone()).collect()
    }
    /// Action profiles and selectors (`action_profiles` of the JSON).
    pub fn profile_names(&self) -> Vec<String> {
        self.prog.profiles.iter().map(|r| r.name.clone()).collect()
    }
    /// The JSON's `calculations` (what `set_crc16_parameters` names).
    pub fn calculation_names(&self) -> Vec<String> {
        self.prog.calc_names.clone()
    }

    /// Adds an entry. `priority`: larger wins (P4Runtime); required exactly when the table has
    /// ternary, range or optional keys.
    pub fn table_add(
        &mut self,
        table: &str,
        matches: Vec<FieldMatch>,
        priority: Option<i32>,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<EntryHandle, ApiError> {
        let ta = self.table_action_of(table, action)?;
        self.table_add_resolved(ta, &matches, priority, args)
    }

    /// A direct table and one of its actions by name, resolved for [`Switch::table_add_resolved`]
    /// (bulk writes name the same two for entry after entry). Fails as `table_add` would.
    pub fn table_action_of(&self, table: &str, action: &str) -> Result<TableAction, ApiError> {
        let t = self.table_index(table)?;
        let a = self.direct_action(t, action)?;
        Ok(TableAction {
            table: t,
            action: a,
        })
    }

    /// [`Switch::table_add`] of a table and action already resolved by this switch's
    /// [`Switch::table_action_of`]; the key is compiled, not kept.
    pub fn table_add_resolved(
        &mut self,
        ta: TableAction,
        matches: &[FieldMatch],
        priority: Option<i32>,
        args: &[Vec<u8>],
    ) -> Result<EntryHandle, ApiError> {
        let v = EntryVal::Act(action_data(&self.prog, ta.action, args)?);
        self.insert_entry(ta.table, matches, priority, v)
    }

    /// Adds an entry of an indirect table pointing at an action profile member.
    pub fn table_add_member_entry(
        &mut self,
        table: &str,
        matches: &[FieldMatch],
        priority: Option<i32>,
        member: u32,
    ) -> Result<EntryHandle, ApiError> {
        let p = self.profile_of(table)?;
        if self.rt.profiles[p].member(member).is_none() {
            return fail(
                ErrorCode::InvalidMemberHandle,
                format!("no member {member}"),
            );
        }
        let t = self.table_index(table)?;
        self.insert_entry(t, matches, priority, EntryVal::Member(member))
    }

    /// Adds an entry of an indirect table with selector pointing at a group.
    pub fn table_add_group_entry(
        &mut self,
        table: &str,
        matches: &[FieldMatch],
        priority: Option<i32>,
        group: u32,
    ) -> Result<EntryHandle, ApiError> {
        let p = self.profile_of(table)?;
        if self.rt.profiles[p].group(group).is_none() {
            return fail(ErrorCode::InvalidGroupHandle, format!("no group {group}"));
        }
        let t = self.table_index(table)?;
        self.insert_entry(t, matches, priority, EntryVal::Group(group))
    }

    /// Points an indirect table's entry at another member (bmv2's `mt_indirect_modify_entry`);
    /// an entry of a table with a selector may switch between members and groups.
    pub fn table_modify_member(
        &mut self,
        table: &str,
        handle: EntryHandle,
        member: u32,
    ) -> Result<(), ApiError> {
        let p = self.profile_of(table)?;
        if self.rt.profiles[p].member(member).is_none() {
            return fail(
                ErrorCode::InvalidMemberHandle,
                format!("no member {member}"),
            );
        }
        let t = self.table_index(table)?;
        self.mutable_table(t)?
            .modify(handle, EntryVal::Member(member))?;
        Ok(())
    }

    /// Points an indirect table's entry at a group (bmv2's `mt_indirect_ws_modify_entry`).
    pub fn table_modify_group(
        &mut self,
        table: &str,
        handle: EntryHandle,
        group: u32,
    ) -> Result<(), ApiError> {
        let p = self.profile_of(table)?;
        if self.rt.profiles[p].group(group).is_none() {
            return fail(ErrorCode::InvalidGroupHandle, format!("no group {group}"));
        }
        let t = self.table_index(table)?;
        self.mutable_table(t)?
            .modify(handle, EntryVal::Group(group))?;
        Ok(())
    }

    fn profile_of(&self, table: &str) -> Result<usize, ApiError> {
        let t = self.table_index(table)?;
        match self.prog.tables[t].profile {
            Some(p) => Ok(p as usize),
            None => fail(
                ErrorCode::WrongTableType,
                format!("table \"{table}\" is not indirect"),
            ),
        }
    }

    pub fn table_modify(
        &mut self,
        table: &str,
        handle: EntryHandle,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<(), ApiError> {
        let t = self.table_index(table)?;
        let v = self.entry_value(t, action, args)?;
        self.mutable_table(t)?.modify(handle, v)?;
        Ok(())
    }

    /// The entry with exactly this key (and priority, in tables that have them), if any: how
    /// P4Runtime addresses entries.
    pub fn table_find(
        &self,
        table: &str,
        matches: &[FieldMatch],
        priority: Option<i32>,
    ) -> Result<Option<EntryHandle>, ApiError> {
        let t = self.table_index(table)?;
        Ok(self.rt.tables[t]
            .table
            .as_ref()
            .and_then(|tb| tb.find(matches, priority)))
    }

    pub fn table_delete(&mut self, table: &str, handle: EntryHandle) -> Result<(), ApiError> {
        let t = self.table_index(table)?;
        self.mutable_table(t)?.delete(handle)?;
        Ok(())
    }

    /// Deletes every entry of every table that allows it (STF `remove all`).
    pub fn clear_tables(&mut self) {
        for (t, info) in self.prog.tables.iter().enumerate() {
            if !info.immutable_entries {
                if let Some(tb) = self.rt.tables[t].table.as_mut() {
                    tb.clear();
                }
            }
        }
    }

    pub fn table_set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<(), ApiError> {
        let t = self.table_index(table)?;
        let info = &self.prog.tables[t];
        let a = self.table_action(t, action)?;
        let current = self.rt.tables[t].default.as_ref();
        let same_action = matches!(current, Some(EntryVal::Act(d)) if d.action == a);
        if info.default_action_const && !same_action {
            return fail(
                ErrorCode::DefaultActionIsConst,
                format!("the default action of \"{}\" is const", info.name),
            );
        }
        let data = action_data(&self.prog, a, args)?;
        if info.default_entry_const && current != Some(&EntryVal::Act(data.clone())) {
            return fail(
                ErrorCode::DefaultEntryIsConst,
                format!("the default entry of \"{}\" is const", info.name),
            );
        }
        self.rt.tables[t].default = Some(EntryVal::Act(data));
        Ok(())
    }

    pub fn table_entries(&self, table: &str) -> Result<Vec<EntryDesc>, ApiError> {
        let t = self.table_index(table)?;
        let Some(tb) = &self.rt.tables[t].table else {
            return Ok(Vec::new());
        };
        Ok(tb
            .iter()
            .map(|(handle, e)| EntryDesc {
                handle,
                matches: e.matches(),
                priority: e.priority,
                action: self.describe(e.value),
            })
            .collect())
    }

    pub fn table_default(&self, table: &str) -> Result<Option<EntryAction>, ApiError> {
        let t = self.table_index(table)?;
        Ok(self.rt.tables[t].default.as_ref().map(|v| self.describe(v)))
    }

    fn describe(&self, v: &EntryVal) -> EntryAction {
        match v {
            EntryVal::Act(d) => self.describe_action(d),
            EntryVal::Member(m) => EntryAction::Member(*m),
            EntryVal::Group(g) => EntryAction::Group(*g),
        }
    }

    fn describe_action(&self, d: &ActionData) -> EntryAction {
        let a = &self.prog.actions[d.action as usize];
        EntryAction::Action {
            name: a.name.clone(),
            args: d
                .args
                .iter()
                .zip(&a.params)
                .map(|(x, (_, w))| to_bytes(x, *w))
                .collect(),
        }
    }

    // ---- action profiles --------------------------------------------------------------

    fn profile_index(&self, name: &str) -> Result<usize, ApiError> {
        match self.prog.profiles.iter().position(|p| p.name == name) {
            Some(p) => Ok(p),
            None => fail(
                ErrorCode::InvalidActionProfileName,
                format!("no action profile \"{name}\""),
            ),
        }
    }

    fn profile_action(
        &self,
        p: usize,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<ActionData, ApiError> {
        // The profile's actions are those of the tables that use it.
        let t = self
            .prog
            .tables
            .iter()
            .position(|t| t.profile == Some(p as u32))
            .ok_or_else(|| ApiError {
                code: ErrorCode::InvalidActionProfileName,
                message: "no table uses this action profile".into(),
            })?;
        let a = self.table_action(t, action)?;
        action_data(&self.prog, a, args)
    }

    pub fn profile_add_member(
        &mut self,
        profile: &str,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<u32, ApiError> {
        let p = self.profile_index(profile)?;
        let d = self.profile_action(p, action, args)?;
        Ok(self.rt.profiles[p].add_member(d)?)
    }

    pub fn profile_modify_member(
        &mut self,
        profile: &str,
        member: u32,
        action: &str,
        args: &[Vec<u8>],
    ) -> Result<(), ApiError> {
        let p = self.profile_index(profile)?;
        let d = self.profile_action(p, action, args)?;
        Ok(self.rt.profiles[p].modify_member(member, d)?)
    }

    pub fn profile_delete_member(&mut self, profile: &str, member: u32) -> Result<(), ApiError> {
        let p = self.profile_index(profile)?;
        self.rt.profiles[p].delete_member(member)?;
        Ok(())
    }

    /// Creates or replaces group `group` with `(member, weight)` pairs.
    pub fn profile_set_group(
        &mut self,
        profile: &str,
        group: u32,
        members: &[(u32, u32)],
    ) -> Result<(), ApiError> {
        let p = self.profile_index(profile)?;
        let list: Vec<GroupMember> = members
            .iter()
            .map(|&(member, weight)| GroupMember { member, weight })
            .collect();
        let prof = &mut self.rt.profiles[p];
        if prof.group(group).is_some() {
            prof.modify_group(group, list)?;
        } else {
            prof.insert_group(group, list)?;
        }
        Ok(())
    }

    /// The members of an action profile with their actions, by handle; whoever created them
    /// (P4Runtime or the runtime CLI).
    pub fn profile_members(&self, profile: &str) -> Result<Vec<(u32, EntryAction)>, ApiError> {
        let p = self.profile_index(profile)?;
        let mut out: Vec<(u32, EntryAction)> = self.rt.profiles[p]
            .members()
            .map(|(m, d)| (m, self.describe_action(d)))
            .collect();
        out.sort_by_key(|(m, _)| *m);
        Ok(out)
    }

    /// The groups of an action profile with their `(member, weight)` lists, by handle.
    pub fn profile_groups(&self, profile: &str) -> Result<Vec<(u32, GroupMembers)>, ApiError> {
        let p = self.profile_index(profile)?;
        let mut out: Vec<(u32, GroupMembers)> = self.rt.profiles[p]
            .groups()
            .map(|(g, ms)| (g, ms.iter().map(|m| (m.member, m.weight)).collect()))
            .collect();
        out.sort_by_key(|(g, _)| *g);
        Ok(out)
    }

    pub fn profile_delete_group(&mut self, profile: &str, group: u32) -> Result<(), ApiError> {
        let p = self.profile_index(profile)?;
        self.rt.profiles[p].delete_group(group)?;
        Ok(())
    }

    // ---- counters, registers, meters ----------------------------------------------------

    fn counter_index(&self, name: &str) -> Result<usize, ApiError> {
        match self.prog.counters.iter().position(|c| c.name == name) {
            Some(c) => Ok(c),
            None => fail(
                ErrorCode::InvalidCounterName,
                format!("no counter \"{name}\""),
            ),
        }
    }

    fn cell<'c, T>(cells: &'c mut [T], index: u64, what: &str) -> Result<&'c mut T, ApiError> {
        let n = cells.len();
        match cells.get_mut(index as usize) {
            Some(c) => Ok(c),
            None => fail(
                ErrorCode::IndexOutOfRange,
                format!("index {index} is out of range for {what} of size {n}"),
            ),
        }
    }

    pub fn counter_read(&mut self, name: &str, index: u64) -> Result<CounterValue, ApiError> {
        let c = self.counter_index(name)?;
        Ok(*Self::cell(&mut self.rt.ext.counters[c], index, name)?)
    }

    pub fn counter_write(
        &mut self,
        name: &str,
        index: u64,
        v: CounterValue,
    ) -> Result<(), ApiError> {
        let c = self.counter_index(name)?;
        *Self::cell(&mut self.rt.ext.counters[c], index, name)? = v;
        Ok(())
    }

    pub fn counter_reset(&mut self, name: &str) -> Result<(), ApiError> {
        let c = self.counter_index(name)?;
        self.rt.ext.counters[c].fill(CounterValue::default());
        Ok(())
    }

    /// Whether table `t` holds entry `handle` (direct resources exist only for installed ones).
    fn check_installed(&self, t: usize, handle: EntryHandle) -> Result<(), ApiError> {
        if self.rt.tables[t]
            .table
            .as_ref()
            .and_then(|tb| tb.get(handle))
            .is_none()
        {
            return fail(
                ErrorCode::InvalidHandle,
                format!("no entry with handle {}", handle.0),
            );
        }
        Ok(())
    }

    /// (counter array, cell) of the direct counter of `table`'s installed entry `handle`.
    fn direct_counter_cell(
        &self,
        table: &str,
        handle: EntryHandle,
    ) -> Result<(usize, usize), ApiError> {
        let t = self.table_index(table)?;
        let Some(c) = self.prog.tables[t].direct_counter else {
            return fail(
                ErrorCode::InvalidCounterName,
                format!("table \"{table}\" has no direct counter"),
            );
        };
        self.check_installed(t, handle)?;
        Ok((c as usize, handle.0 as usize))
    }

    /// The direct counter of `table` for an installed entry.
    pub fn direct_counter_read(
        &self,
        table: &str,
        handle: EntryHandle,
    ) -> Result<CounterValue, ApiError> {
        let (c, i) = self.direct_counter_cell(table, handle)?;
        Ok(self.rt.ext.counters[c].get(i).copied().unwrap_or_default())
    }

    /// Sets the direct counter of `table`'s installed entry `handle` (P4Runtime
    /// DirectCounterEntry MODIFY, TableEntry `counter_data`).
    pub fn direct_counter_write(
        &mut self,
        table: &str,
        handle: EntryHandle,
        v: CounterValue,
    ) -> Result<(), ApiError> {
        let (c, i) = self.direct_counter_cell(table, handle)?;
        let cells = &mut self.rt.ext.counters[c];
        if cells.len() <= i {
            cells.resize(i + 1, CounterValue::default());
        }
        cells[i] = v;
        Ok(())
    }

    /// The table a direct counter is attached to, if `name` is a direct counter.
    pub fn direct_counter_table(&self, name: &str) -> Option<String> {
        let c = self.prog.counters.iter().find(|c| c.name == name)?;
        Some(self.prog.tables[c.direct? as usize].name.clone())
    }

    fn register_index(&self, name: &str) -> Result<usize, ApiError> {
        match self.prog.registers.iter().position(|r| r.name == name) {
            Some(r) => Ok(r),
            None => fail(
                ErrorCode::InvalidRegisterName,
                format!("no register \"{name}\""),
            ),
        }
    }

    pub fn register_width(&self, name: &str) -> Result<u32, ApiError> {
        Ok(self.prog.registers[self.register_index(name)?].width)
    }

    pub fn register_read(&mut self, name: &str, index: u64) -> Result<u128, ApiError> {
        let r = self.register_index(name)?;
        Ok(*Self::cell(&mut self.rt.ext.registers[r], index, name)?)
    }

    pub fn register_write(&mut self, name: &str, index: u64, value: u128) -> Result<(), ApiError> {
        let r = self.register_index(name)?;
        let w = self.prog.registers[r].width;
        if w < 128 && value >> w != 0 {
            return fail(
                ErrorCode::BadValue,
                format!("value does not fit the {w}-bit register \"{name}\""),
            );
        }
        *Self::cell(&mut self.rt.ext.registers[r], index, name)? = value;
        Ok(())
    }

    pub fn register_reset(&mut self, name: &str) -> Result<(), ApiError> {
        let r = self.register_index(name)?;
        self.rt.ext.registers[r].fill(0);
        Ok(())
    }

    fn meter_index(&self, name: &str) -> Result<usize, ApiError> {
        match self.prog.meters.iter().position(|m| m.name == name) {
            Some(m) => Ok(m),
            None => fail(ErrorCode::InvalidMeterName, format!("no meter \"{name}\"")),
        }
    }

    /// Sets the rates of one cell (`Some(index)`) or of every cell. Rates are given as bmv2's
    /// CLI takes them: committed first, then peak.
    pub fn meter_set_rates(
        &mut self,
        name: &str,
        index: Option<u64>,
        rates: &[MeterRate],
    ) -> Result<(), ApiError> {
        let m = self.meter_index(name)?;
        let info = &self.prog.meters[m];
        if rates.len() != info.rate_count {
            return fail(
                ErrorCode::BadValue,
                format!(
                    "meter \"{name}\" takes {} rates, got {}",
                    info.rate_count,
                    rates.len()
                ),
            );
        }
        // bmv2 refuses a committed rate above the peak rate (INVALID_INFO_RATE_VALUE).
        if rates
            .windows(2)
            .any(|w| w[0].rate_per_us > w[1].rate_per_us)
        {
            return fail(
                ErrorCode::BadValue,
                format!("meter \"{name}\": the rates must not decrease (committed, then peak)"),
            );
        }
        let now = self.rt.ext.now_us;
        let cells = &mut self.rt.ext.meters[m];
        match index {
            Some(i) => Self::cell(cells, i, name)?.set_rates(rates, now),
            None => cells.iter_mut().for_each(|c| c.set_rates(rates, now)),
        }
        Ok(())
    }

    /// Unconfigures one cell (`Some(index)`) or every cell: they mark every packet green again.
    pub fn meter_reset_rates(&mut self, name: &str, index: Option<u64>) -> Result<(), ApiError> {
        let m = self.meter_index(name)?;
        let now = self.rt.ext.now_us;
        let cells = &mut self.rt.ext.meters[m];
        match index {
            Some(i) => Self::cell(cells, i, name)?.set_rates(&[], now),
            None => cells.iter_mut().for_each(|c| c.set_rates(&[], now)),
        }
        Ok(())
    }

    /// The direct meter cell of `table`'s entry `handle`, checked to exist.
    fn direct_meter_cell(
        &mut self,
        table: &str,
        handle: EntryHandle,
    ) -> Result<&mut MeterCell, ApiError> {
        let t = self.table_index(table)?;
        let Some(m) = self.prog.tables[t].direct_meter else {
            return fail(
                ErrorCode::InvalidMeterName,
                format!("table \"{table}\" has no direct meter"),
            );
        };
        self.check_installed(t, handle)?;
        let cells = &mut self.rt.ext.meters[m as usize];
        let i = handle.0 as usize;
        if cells.len() <= i {
            cells.resize(i + 1, Default::default());
        }
        Ok(&mut cells[i])
    }

    /// Sets (committed first, then peak) or, with no rates, unconfigures the direct meter of an
    /// installed entry.
    pub fn direct_meter_set_rates(
        &mut self,
        table: &str,
        handle: EntryHandle,
        rates: &[MeterRate],
    ) -> Result<(), ApiError> {
        let t = self.table_index(table)?;
        if let Some(m) = self.prog.tables[t].direct_meter {
            let want = self.prog.meters[m as usize].rate_count;
            if !rates.is_empty() && rates.len() != want {
                return fail(
                    ErrorCode::BadValue,
                    format!(
                        "direct meter of \"{table}\" takes {want} rates, got {}",
                        rates.len()
                    ),
                );
            }
        }
        let now = self.rt.ext.now_us;
        self.direct_meter_cell(table, handle)?.set_rates(rates, now);
        Ok(())
    }

    /// The rates of an installed entry's direct meter; empty when it was never configured.
    pub fn direct_meter_get_rates(
        &mut self,
        table: &str,
        handle: EntryHandle,
    ) -> Result<Vec<MeterRate>, ApiError> {
        Ok(self.direct_meter_cell(table, handle)?.rates.clone())
    }

    /// The table a direct meter is attached to, if `name` is a direct meter.
    pub fn direct_meter_table(&self, name: &str) -> Option<String> {
        let m = self.prog.meters.iter().find(|m| m.name == name)?;
        Some(self.prog.tables[m.direct? as usize].name.clone())
    }

    /// How many rates a cell of meter `name` takes (2 for bmv2's two-rate meters).
    pub fn meter_rate_count(&self, name: &str) -> Result<usize, ApiError> {
        Ok(self.prog.meters[self.meter_index(name)?].rate_count)
    }

    pub fn meter_get_rates(&mut self, name: &str, index: u64) -> Result<Vec<MeterRate>, ApiError> {
        let m = self.meter_index(name)?;
        Ok(Self::cell(&mut self.rt.ext.meters[m], index, name)?
            .rates
            .clone())
    }

    /// Changes the parameters of a `crc16_custom`/`crc32_custom` calculation (bmv2 CLI
    /// `set_crc16_parameters` / `set_crc32_parameters`).
    pub fn set_crc_parameters(
        &mut self,
        calculation: &str,
        params: switch_hash::CrcParams,
    ) -> Result<(), ApiError> {
        let Some(c) = self.prog.calc_names.iter().position(|n| n == calculation) else {
            return fail(
                ErrorCode::InvalidCalculationName,
                format!("no calculation \"{calculation}\""),
            );
        };
        self.prog.calcs[c]
            .algo
            .set_crc_parameters(params)
            .map_err(|e| ApiError {
                code: ErrorCode::BadValue,
                message: e.to_string(),
            })
    }

    // ---- parse value sets ---------------------------------------------------------------

    /// Adds a value to a parse value set: big-endian, `compressed_bitwidth` bits (the key
    /// fields concatenated without padding, as P4Runtime and bmv2's CLI give it).
    pub fn parse_vset_add(&mut self, name: &str, value: &[u8]) -> Result<(), ApiError> {
        let Some(v) = self.prog.vsets.iter().position(|v| v.name == name) else {
            return fail(
                ErrorCode::InvalidValueSetName,
                format!("no parse value set \"{name}\""),
            );
        };
        let info = &self.prog.vsets[v];
        let value = BigInt::from_bytes_be(num_bigint::Sign::Plus, value);
        if value.bits() > u64::from(info.bitwidth) {
            return fail(
                ErrorCode::BadValue,
                format!("value wider than {} bits", info.bitwidth),
            );
        }
        // Split into the key fields (last field in the low bits) and pad each to bytes.
        let mut padded = Vec::new();
        let mut rest = value;
        for &w in info.key_widths.iter().rev() {
            let mask = (BigInt::from(1) << w) - 1;
            let field = &rest & &mask;
            rest >>= w;
            let mut bytes = vec![0u8; w.div_ceil(8) as usize];
            big_to_bytes(&field, &mut bytes);
            padded.splice(0..0, bytes);
        }
        let set = &mut self.rt.vsets[v];
        if set.len() >= info.max_size {
            return fail(
                ErrorCode::TableFull,
                format!("parse value set \"{name}\" is full"),
            );
        }
        if !set.contains(&padded) {
            set.push(padded);
        }
        Ok(())
    }

    /// Empties a parse value set.
    pub fn parse_vset_clear(&mut self, name: &str) -> Result<(), ApiError> {
        let Some(v) = self.prog.vsets.iter().position(|v| v.name == name) else {
            return fail(
                ErrorCode::InvalidValueSetName,
                format!("no parse value set \"{name}\""),
            );
        };
        self.rt.vsets[v].clear();
        Ok(())
    }

    // ---- mirroring and multicast ------------------------------------------------------

    pub fn mirroring_add(&mut self, session: u32, cfg: MirrorSession) -> Result<(), ApiError> {
        if cfg.port.is_none() && cfg.mgrp.is_none() {
            return fail(
                ErrorCode::InvalidMirroringSession,
                "a session needs a port or a multicast group",
            );
        }
        self.mirrors.insert(session, cfg);
        Ok(())
    }

    pub fn mirroring_delete(&mut self, session: u32) -> Result<(), ApiError> {
        match self.mirrors.remove(&session) {
            Some(_) => Ok(()),
            None => fail(
                ErrorCode::InvalidMirroringSession,
                format!("no mirroring session {session}"),
            ),
        }
    }

    pub fn mirroring_get(&self, session: u32) -> Result<MirrorSession, ApiError> {
        match self.mirrors.get(&session) {
            Some(s) => Ok(*s),
            None => fail(
                ErrorCode::InvalidMirroringSession,
                format!("no mirroring session {session}"),
            ),
        }
    }

    pub fn mc_mgrp_create(&mut self, mgrp: u32) -> Result<(), ApiError> {
        if self.pre.groups.contains_key(&mgrp) {
            return fail(
                ErrorCode::InvalidMulticastGroup,
                format!("multicast group {mgrp} exists"),
            );
        }
        self.pre.groups.insert(mgrp, Vec::new());
        Ok(())
    }

    pub fn mc_mgrp_destroy(&mut self, mgrp: u32) -> Result<(), ApiError> {
        let Some(nodes) = self.pre.groups.remove(&mgrp) else {
            return fail(
                ErrorCode::InvalidMulticastGroup,
                format!("no multicast group {mgrp}"),
            );
        };
        for n in nodes {
            if let Some(Some(node)) = self.pre.nodes.get_mut(n as usize) {
                node.group = None;
            }
        }
        Ok(())
    }

    /// Creates a replication node; handles are 0, 1, 2, ... as bmv2 assigns them.
    /// The multicast groups by id, each with its nodes in association order as
    /// `(node handle, rid, ports)` (bmv2's `bm_mc_get_entries`).
    pub fn mc_entries(&self) -> Vec<McGroupDesc> {
        let mut groups: Vec<McGroupDesc> = self
            .pre
            .groups
            .iter()
            .map(|(&g, nodes)| {
                let nodes = nodes
                    .iter()
                    .filter_map(|&h| {
                        let n = self.pre.nodes.get(h as usize)?.as_ref()?;
                        Some((h, n.rid, n.ports.iter().copied().collect()))
                    })
                    .collect();
                (g, nodes)
            })
            .collect();
        groups.sort_by_key(|(g, _)| *g);
        groups
    }

    pub fn mc_node_create(&mut self, rid: u32, ports: &[u32]) -> u32 {
        let node = McNode {
            rid,
            ports: ports.iter().copied().collect(),
            group: None,
        };
        match self.pre.nodes.iter().position(Option::is_none) {
            Some(i) => {
                self.pre.nodes[i] = Some(node);
                i as u32
            }
            None => {
                self.pre.nodes.push(Some(node));
                self.pre.nodes.len() as u32 - 1
            }
        }
    }

    fn node(&mut self, handle: u32) -> Result<&mut McNode, ApiError> {
        match self.pre.nodes.get_mut(handle as usize) {
            Some(Some(n)) => Ok(n),
            _ => fail(
                ErrorCode::InvalidMulticastNode,
                format!("no multicast node {handle}"),
            ),
        }
    }

    pub fn mc_node_update(&mut self, handle: u32, ports: &[u32]) -> Result<(), ApiError> {
        self.node(handle)?.ports = ports.iter().copied().collect();
        Ok(())
    }

    pub fn mc_node_destroy(&mut self, handle: u32) -> Result<(), ApiError> {
        if let Some(g) = self.node(handle)?.group {
            if let Some(list) = self.pre.groups.get_mut(&g) {
                list.retain(|&n| n != handle);
            }
        }
        self.pre.nodes[handle as usize] = None;
        Ok(())
    }

    pub fn mc_node_associate(&mut self, mgrp: u32, handle: u32) -> Result<(), ApiError> {
        if !self.pre.groups.contains_key(&mgrp) {
            return fail(
                ErrorCode::InvalidMulticastGroup,
                format!("no multicast group {mgrp}"),
            );
        }
        let node = self.node(handle)?;
        if node.group.is_some() {
            return fail(
                ErrorCode::InvalidMulticastNode,
                format!("node {handle} is already in a group"),
            );
        }
        node.group = Some(mgrp);
        if let Some(list) = self.pre.groups.get_mut(&mgrp) {
            list.push(handle);
        }
        Ok(())
    }

    pub fn mc_node_dissociate(&mut self, mgrp: u32, handle: u32) -> Result<(), ApiError> {
        let node = self.node(handle)?;
        if node.group != Some(mgrp) {
            return fail(
                ErrorCode::InvalidMulticastNode,
                format!("node {handle} is not in group {mgrp}"),
            );
        }
        node.group = None;
        if let Some(list) = self.pre.groups.get_mut(&mgrp) {
            list.retain(|&n| n != handle);
        }
        Ok(())
    }
}
