//! The v1model driver: what simple_switch does around the parser and the two pipelines
//! (instance types, clone, resubmit, recirculate, multicast through the PRE, drop rules).

use crate::action_data::action_data;
use crate::error::ApiError;
use p4_bmv2_json::JsonError;
use std::collections::{BTreeSet, HashMap, VecDeque};
use switch_engine::compile::Code;
use switch_engine::exec::{self, Pkt, Regs};
use switch_engine::load;
use switch_engine::program::Prog;
use switch_engine::state::{ActionData, CounterValue, Digest, EntryVal, Ext, Runtime, TableState};
use switch_tables::{ActionProfile, EntryHandle, KeyField, MatchKind, Table, TableError};

pub use switch_engine::exec::DROP_PORT;

/// `standard_metadata.instance_type` values of simple_switch.
pub mod instance_type {
    pub const NORMAL: u64 = 0;
    pub const INGRESS_CLONE: u64 = 1;
    pub const EGRESS_CLONE: u64 = 2;
    pub const COALESCED: u64 = 3;
    pub const RECIRC: u64 = 4;
    pub const REPLICATION: u64 = 5;
    pub const RESUBMIT: u64 = 6;
}

#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// `egress_spec` value that drops (simple_switch `--drop-port`, default 511).
    pub drop_port: u32,
    /// The CPU port (`--cpu-port`), for the P4Runtime packet I/O layer; the engine only keeps it.
    pub cpu_port: Option<u32>,
    /// Resubmissions plus recirculations one packet may go through before it is dropped
    /// (bmv2 has no bound; an unbounded loop would hang a test).
    pub max_reinjections: u32,
    /// Egress queues per port (`--priority-queues`, default 1). As in simple_switch, a packet
    /// whose `priority` is not below this is dropped at enqueue.
    pub priority_queues: u32,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            drop_port: u32::from(DROP_PORT),
            cpu_port: None,
            max_reinjections: 32,
            priority_queues: 1,
        }
    }
}

/// What the switch counted (bmv2 logs these; we count them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub received: u64,
    pub transmitted: u64,
    pub parser_errors: u64,
    pub checksum_errors: u64,
    pub dropped_ingress: u64,
    pub dropped_egress: u64,
    pub cloned: u64,
    pub resubmitted: u64,
    pub recirculated: u64,
    pub replicated: u64,
    pub reinjection_limit_drops: u64,
    /// Dropped at enqueue: `priority` not below `SwitchConfig::priority_queues`.
    pub priority_drops: u64,
    pub index_errors: u64,
    pub assert_failures: u64,
}

/// A packet between ingress and egress: hand it to a traffic manager, then to
/// [`Switch::egress`].
#[derive(Debug)]
pub struct EgressJob {
    pkt: Box<Pkt>,
    /// Egress port chosen by ingress (or the PRE / a mirroring session).
    pub port: u32,
    /// `standard_metadata.priority` at enqueue time (queue selection).
    pub priority: u8,
}

impl EgressJob {
    /// Packet length as bmv2 accounts it (`packet_length` register).
    pub fn len(&self) -> u32 {
        self.pkt.regs.packet_length
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Queueing metadata the traffic manager reports for a dequeued packet (bmv2 units:
/// microseconds and packets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueMeta {
    pub enq_timestamp_us: u64,
    pub enq_qdepth: u32,
    pub deq_timedelta_us: u64,
    pub deq_qdepth: u32,
    pub qid: u32,
}

/// A packet to transmit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub port: u32,
    pub data: Vec<u8>,
}

/// A mirroring session (`mirroring_add`): a port, a multicast group, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MirrorSession {
    pub port: Option<u32>,
    pub mgrp: Option<u32>,
    /// P4Runtime `CloneSessionEntry.class_of_service`: the `priority` (egress queue) its clones
    /// enter, at most the switch's highest queue. A clone starts with fresh metadata, so 0
    /// (bmv2's only behaviour) is queue 0.
    pub class_of_service: u8,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct McNode {
    pub rid: u32,
    pub ports: BTreeSet<u32>,
    pub group: Option<u32>,
}

/// Packet replication engine (simple_switch's `McSimplePre`).
#[derive(Debug, Default)]
pub(crate) struct Pre {
    pub groups: HashMap<u32, Vec<u32>>,
    pub nodes: Vec<Option<McNode>>,
}

impl Pre {
    fn replicate(&self, mgrp: u32, out: &mut Vec<(u32, u32)>) {
        out.clear();
        if let Some(nodes) = self.groups.get(&mgrp) {
            for &n in nodes {
                if let Some(Some(node)) = self.nodes.get(n as usize) {
                    out.extend(node.ports.iter().map(|&p| (p, node.rid)));
                }
            }
        }
    }
}

/// Why a `const entries` entry of the BMv2 JSON cannot be installed (reported under its JSON
/// path).
#[derive(Debug, thiserror::Error)]
enum ConstEntryError {
    #[error("entry has {entry} key fields, the table has {table}")]
    KeyCount { entry: usize, table: usize },
    #[error("match_key[{key}]: missing `{field}`")]
    Missing { key: usize, field: &'static str },
    #[error("no action with id {0}")]
    UnknownAction(i64),
    #[error("{0}")]
    ActionData(#[from] ApiError),
    #[error("a table without keys cannot have entries")]
    NoKeys,
    #[error("{0}")]
    Table(#[from] TableError),
}

/// A BMv2 JSON program running with simple_switch semantics.
pub struct Switch {
    pub(crate) prog: Prog,
    /// `prog`'s conditions, actions and keys compiled (what each packet runs).
    code: Code,
    pub(crate) rt: Runtime,
    pub(crate) pre: Pre,
    pub(crate) mirrors: HashMap<u32, MirrorSession>,
    pub(crate) config: SwitchConfig,
    pub(crate) stats: Stats,
    /// Table name -> index: control-plane calls name their table, up to a million a second.
    /// foldhash, not SipHash, whose hash of the name was an eighth of the data plane's
    /// instructions per P4Runtime insert (p4-switch-p4rt-write-bench under callgrind); the
    /// names come from the program and from the controller that owns it, so no HashDoS risk.
    pub(crate) table_names: HashMap<String, usize, foldhash::fast::RandomState>,
    // Jobs move between queues as one pointer; the pool keeps those boxes for reuse.
    #[allow(clippy::vec_box)]
    pool: Vec<Box<Pkt>>,
    replicas: Vec<(u32, u32)>,
    fifo: VecDeque<EgressJob>,
    jobs: Vec<EgressJob>,
    buffers: Vec<Vec<u8>>,
    parser: usize,
    deparser: usize,
    ingress: usize,
    egress: usize,
}

fn key_kind(k: p4_bmv2_json::MatchType) -> MatchKind {
    use p4_bmv2_json::MatchType as M;
    match k {
        M::Exact | M::Valid => MatchKind::Exact,
        M::Lpm => MatchKind::Lpm,
        M::Ternary => MatchKind::Ternary,
        M::Range => MatchKind::Range,
        M::Optional => MatchKind::Optional,
    }
}

impl Switch {
    /// Loads a BMv2 JSON text. Errors name the JSON path.
    pub fn from_json(text: &str, config: SwitchConfig) -> Result<Switch, JsonError> {
        Switch::new(&p4_bmv2_json::Program::from_json(text)?, config)
    }

    pub fn new(json: &p4_bmv2_json::Program, config: SwitchConfig) -> Result<Switch, JsonError> {
        let prog = load::load(json)?;
        let mut tables = Vec::new();
        for (ti, t) in prog.tables.iter().enumerate() {
            let table = if t.keys.is_empty() {
                None
            } else {
                let keys = t
                    .keys
                    .iter()
                    .map(|k| KeyField {
                        kind: key_kind(k.kind),
                        width: k.width,
                    })
                    .collect();
                let size = if t.max_size == 0 { 1024 } else { t.max_size };
                Some(Table::new(keys, size).map_err(|e| JsonError {
                    path: table_path(json, ti),
                    message: e.to_string(),
                })?)
            };
            tables.push(TableState {
                table,
                default: None,
            });
        }
        let profiles = prog
            .profiles
            .iter()
            .map(|p| {
                let n = if p.max_size == 0 { 1024 } else { p.max_size };
                ActionProfile::new(n, n, 0)
            })
            .collect();
        let rt = Runtime {
            tables,
            profiles,
            vsets: vec![Vec::new(); prog.vsets.len()],
            ext: Ext::new(&prog),
        };
        let find = |names: &[&str], fallback: usize, len: usize| -> usize {
            names
                .iter()
                .find_map(|n| prog.pipelines.iter().position(|p| p.name == *n))
                .unwrap_or(fallback.min(len.saturating_sub(1)))
        };
        let ingress = find(&["ingress"], 0, prog.pipelines.len());
        let egress = find(&["egress"], 1, prog.pipelines.len());
        let parser = prog
            .parsers
            .iter()
            .position(|p| p.name == "parser")
            .unwrap_or(0);
        let mut table_names = HashMap::default();
        for (i, t) in prog.tables.iter().enumerate() {
            // The first of a name wins, as a search in JSON order finds it.
            table_names.entry(t.name.clone()).or_insert(i);
        }
        let mut sw = Switch {
            code: Code::new(&prog),
            prog,
            rt,
            pre: Pre::default(),
            mirrors: HashMap::new(),
            config,
            stats: Stats::default(),
            table_names,
            pool: Vec::new(),
            replicas: Vec::new(),
            fifo: VecDeque::new(),
            jobs: Vec::new(),
            buffers: Vec::new(),
            parser,
            deparser: 0,
            ingress,
            egress,
        };
        sw.install_json_entries(json)?;
        Ok(sw)
    }

    fn install_json_entries(&mut self, json: &p4_bmv2_json::Program) -> Result<(), JsonError> {
        let mut ti = 0usize;
        for (pi, p) in json.pipelines.iter().enumerate() {
            for (k, t) in p.tables.iter().enumerate() {
                let path = format!("pipelines[{pi}].tables[{k}]");
                if let Some(d) = &t.default_entry {
                    let args: Vec<Vec<u8>> =
                        d.action_data.iter().map(|h| h.bytes.clone()).collect();
                    let action = self.action_index(d.action_id).ok_or_else(|| JsonError {
                        path: format!("{path}.default_entry.action_id"),
                        message: format!("no action with id {}", d.action_id),
                    })?;
                    let data = self.action_data(action, &args).map_err(|e| JsonError {
                        path: format!("{path}.default_entry.action_data"),
                        message: e.message,
                    })?;
                    self.rt.tables[ti].default = Some(EntryVal::Act(data));
                }
                for (e, entry) in t.entries.iter().enumerate() {
                    let epath = format!("{path}.entries[{e}]");
                    self.install_const_entry(ti, entry).map_err(|e| JsonError {
                        path: epath,
                        message: e.to_string(),
                    })?;
                }
                ti += 1;
            }
        }
        Ok(())
    }

    fn install_const_entry(
        &mut self,
        ti: usize,
        entry: &p4_bmv2_json::ConstEntry,
    ) -> Result<(), ConstEntryError> {
        use p4_bmv2_json::{EntryKeyValue, MatchType as M};
        use switch_tables::FieldMatch;
        let info = &self.prog.tables[ti];
        if entry.match_key.len() != info.keys.len() {
            return Err(ConstEntryError::KeyCount {
                entry: entry.match_key.len(),
                table: info.keys.len(),
            });
        }
        let mut matches = Vec::new();
        for (k, (mk, key)) in entry.match_key.iter().zip(&info.keys).enumerate() {
            let n = key.width.div_ceil(8) as usize;
            let missing = |field| ConstEntryError::Missing { key: k, field };
            let hex = |v: &Option<p4_bmv2_json::HexStr>, field| {
                v.as_ref()
                    .map(|h| h.to_width_bytes(n))
                    .ok_or_else(|| missing(field))
            };
            let keyv = match &mk.key {
                Some(EntryKeyValue::Hex(h)) => Some(h.to_width_bytes(n)),
                Some(EntryKeyValue::Bool(b)) => Some(vec![u8::from(*b)]),
                None => None,
            };
            let need_key = || keyv.clone().ok_or_else(|| missing("key"));
            // bmv2 masks a JSON entry's value (p4c writes `const entries` as written, e.g.
            // 0x11 &&& 0xF0), where P4Runtime must refuse such a value.
            let masked = |mut v: Vec<u8>, mask: &[u8]| {
                v.iter_mut().zip(mask).for_each(|(b, m)| *b &= m);
                v
            };
            matches.push(match mk.match_type {
                M::Exact | M::Valid => FieldMatch::Exact(need_key()?),
                M::Lpm => {
                    let prefix_len = mk.prefix_length.ok_or_else(|| missing("prefix_length"))?;
                    // The field's top prefix_len bits, in its right-aligned bytes.
                    let first = n as u32 * 8 - key.width;
                    let mask: Vec<u8> = (0..n as u32)
                        .map(|byte| {
                            (0..8u32)
                                .filter(|bit| {
                                    let at = byte * 8 + bit;
                                    at >= first && at < first + prefix_len
                                })
                                .fold(0u8, |m, bit| m | (0x80 >> bit))
                        })
                        .collect();
                    FieldMatch::Lpm {
                        value: masked(need_key()?, &mask),
                        prefix_len,
                    }
                }
                M::Ternary if key.kind == M::Optional => {
                    let mask = hex(&mk.mask, "mask")?;
                    if mask.iter().all(|&b| b == 0) {
                        FieldMatch::Optional(None)
                    } else {
                        FieldMatch::Optional(Some(need_key()?))
                    }
                }
                M::Ternary => {
                    let mask = hex(&mk.mask, "mask")?;
                    FieldMatch::Ternary {
                        value: masked(need_key()?, &mask),
                        mask,
                    }
                }
                M::Range => FieldMatch::Range {
                    low: hex(&mk.start, "start")?,
                    high: hex(&mk.end, "end")?,
                },
                M::Optional => FieldMatch::Optional(keyv.clone()),
            });
        }
        let action = self
            .action_index(entry.action_entry.action_id)
            .ok_or(ConstEntryError::UnknownAction(entry.action_entry.action_id))?;
        let args: Vec<Vec<u8>> = entry
            .action_entry
            .action_data
            .iter()
            .map(|h| h.bytes.clone())
            .collect();
        let data = self.action_data(action, &args)?;
        let table = self.rt.tables[ti]
            .table
            .as_mut()
            .ok_or(ConstEntryError::NoKeys)?;
        // bmv2 JSON priorities: a smaller number wins; switch-tables: a larger one does.
        let priority = table.needs_priority().then(|| {
            i32::MAX
                - entry
                    .priority
                    .unwrap_or(0)
                    .clamp(0, i64::from(i32::MAX - 1)) as i32
        });
        let h = table.insert(&matches, priority, EntryVal::Act(data))?;
        self.reset_direct(ti, h);
        Ok(())
    }

    pub(crate) fn action_index(&self, json_id: i64) -> Option<u32> {
        self.prog
            .actions
            .iter()
            .position(|a| a.json_id == json_id)
            .map(|i| i as u32)
    }

    pub(crate) fn action_data(
        &self,
        action: u32,
        args: &[Vec<u8>],
    ) -> Result<ActionData, ApiError> {
        action_data(&self.prog, action, args)
    }

    /// Zeroes the direct counter and meter cells and the hit bit of a new entry.
    pub(crate) fn reset_direct(&mut self, t: usize, h: EntryHandle) {
        let i = h.0 as usize;
        if let Some(c) = self.prog.tables[t].direct_counter {
            let cells = &mut self.rt.ext.counters[c as usize];
            if cells.len() <= i {
                cells.resize(i + 1, CounterValue::default());
            }
            cells[i] = CounterValue::default();
        }
        if let Some(m) = self.prog.tables[t].direct_meter {
            let cells = &mut self.rt.ext.meters[m as usize];
            if cells.len() <= i {
                cells.resize(i + 1, Default::default());
            }
            cells[i] = Default::default();
        }
        if self.prog.tables[t].support_timeout {
            let hits = &mut self.rt.ext.hits[t];
            if hits.len() <= i {
                hits.resize(i + 1, false);
            }
            hits[i] = false;
        }
    }

    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    pub fn stats(&self) -> Stats {
        Stats {
            index_errors: self.rt.ext.index_errors,
            assert_failures: self.rt.ext.assert_failures,
            ..self.stats.clone()
        }
    }

    /// Digests generated since the last call (`generate_digest` / v1model `digest`).
    pub fn take_digests(&mut self) -> Vec<Digest> {
        std::mem::take(&mut self.rt.ext.digests)
    }

    /// Restarts the `random` extern's generator from `seed` (the simulator's `--seed`); a
    /// switch never seeded keeps its fixed start. Zero would stall xorshift, so it is mixed.
    pub fn seed_random(&mut self, seed: u64) {
        self.rt.ext.rng = (seed ^ 0x9e37_79b9_7f4a_7c15).max(1);
    }

    /// `log_msg` output since the last call.
    pub fn take_logs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.rt.ext.logs)
    }

    fn alloc(&mut self) -> Box<Pkt> {
        match self.pool.pop() {
            Some(mut p) => {
                p.phv.reset(&self.prog);
                p.regs = Regs::default();
                p.cursor = 0;
                p.reinjections = 0;
                p
            }
            None => Box::new(Pkt::new(&self.prog)),
        }
    }

    fn recycle(&mut self, p: Box<Pkt>) {
        if self.pool.len() < 256 {
            self.pool.push(p);
        }
    }

    fn copy_of(&mut self, src: &Pkt) -> Box<Pkt> {
        let mut p = self.alloc();
        p.phv.clone_from(&src.phv);
        p.data.clone_from(&src.data);
        p.cursor = src.cursor;
        p.regs = Regs {
            packet_length: src.regs.packet_length,
            ..Regs::default()
        };
        p
    }

    /// A fresh packet for resubmit/recirculate/clone: metadata reset, then the field list
    /// copied from `from`, then the instance type set (`copy_field_list_and_set_type`).
    fn carry_field_list(&self, to: &mut Pkt, from: &Pkt, list: Option<i64>, itype: u64) {
        to.phv.reset_metadata(&self.prog);
        if let Some(l) = list.and_then(|id| self.prog.field_lists.get(&id)) {
            for &f in &l.fields {
                to.phv.copy_field_from(&self.prog, f, &from.phv);
            }
        }
        to.set(&self.prog, self.prog.intr.instance_type, itype);
    }

    fn enqueue(&mut self, port: u32, pkt: Box<Pkt>, out: &mut Vec<EgressJob>) {
        let priority = pkt.get(&self.prog, self.prog.intr.priority);
        if priority >= u64::from(self.config.priority_queues) {
            self.stats.priority_drops += 1;
            self.recycle(pkt);
            return;
        }
        let priority = priority as u8;
        out.push(EgressJob {
            pkt,
            port,
            priority,
        });
    }

    fn multicast(&mut self, pkt: &Pkt, mgrp: u32, out: &mut Vec<EgressJob>) {
        let mut replicas = std::mem::take(&mut self.replicas);
        self.pre.replicate(mgrp, &mut replicas);
        for &(port, rid) in &replicas {
            let mut copy = self.copy_of(pkt);
            copy.set(&self.prog, self.prog.intr.egress_rid, u64::from(rid));
            self.stats.replicated += 1;
            self.enqueue(port, copy, out);
        }
        self.replicas = replicas;
    }

    fn send_clone(&mut self, mut copy: Box<Pkt>, session: MirrorSession, out: &mut Vec<EgressJob>) {
        self.stats.cloned += 1;
        if session.class_of_service != 0 {
            // A switch with fewer queues puts the class in its highest rather than drop it.
            let cos = u32::from(session.class_of_service)
                .min(self.config.priority_queues.saturating_sub(1));
            copy.set(&self.prog, self.prog.intr.priority, u64::from(cos));
        }
        if let Some(m) = session.mgrp {
            self.multicast(&copy, m, out);
        }
        match session.port {
            Some(p) => self.enqueue(p, copy, out),
            None => self.recycle(copy),
        }
    }

    fn parse(&mut self, pkt: &mut Pkt) {
        let prog = &self.prog;
        let err = match exec::parse(prog, &self.code, &mut self.rt, pkt, self.parser) {
            Ok(()) => prog.errors.no_error,
            Err(code) => {
                self.stats.parser_errors += 1;
                code
            }
        };
        pkt.set(prog, prog.intr.parser_error, u64::from(err));
        let bad = exec::verify_checksums(prog, &self.code, pkt);
        if bad {
            self.stats.checksum_errors += 1;
        }
        pkt.set(prog, prog.intr.checksum_error, u64::from(bad));
    }

    /// Runs a packet received on `port` through the parser and the ingress pipeline; the
    /// packets bound for egress (unicast, multicast copies, ingress clones) go to `out`.
    pub fn ingress(&mut self, port: u32, data: &[u8], now_us: u64, out: &mut Vec<EgressJob>) {
        let mut pkt = self.alloc();
        pkt.data.clear();
        pkt.data.extend_from_slice(data);
        self.start_ingress(port, pkt, now_us, out);
    }

    /// [`Switch::ingress`] taking the packet's buffer, which the engine parses and deparses in
    /// place instead of copying it first (a simulator moves frames between switches this way).
    pub fn ingress_buf(
        &mut self,
        port: u32,
        mut data: Vec<u8>,
        now_us: u64,
        out: &mut Vec<EgressJob>,
    ) {
        let mut pkt = self.alloc();
        std::mem::swap(&mut pkt.data, &mut data);
        self.recycle_buffer(data);
        self.start_ingress(port, pkt, now_us, out);
    }

    fn start_ingress(
        &mut self,
        port: u32,
        mut pkt: Box<Pkt>,
        now_us: u64,
        out: &mut Vec<EgressJob>,
    ) {
        self.stats.received += 1;
        let len = pkt.data.len();
        pkt.regs.packet_length = len as u32;
        let intr = &self.prog.intr;
        let prog = &self.prog;
        pkt.set(prog, intr.ingress_port, u64::from(port));
        pkt.set(prog, intr.packet_length, len as u64);
        pkt.set(prog, intr.instance_type, instance_type::NORMAL);
        pkt.set(prog, intr.ingress_global_timestamp, now_us);
        self.run_ingress(pkt, 0, now_us, out);
    }

    fn run_ingress(
        &mut self,
        mut pkt: Box<Pkt>,
        mut reinjections: u32,
        now_us: u64,
        out: &mut Vec<EgressJob>,
    ) {
        self.rt.ext.now_us = now_us;
        loop {
            let ingress_len = pkt.regs.packet_length;
            let ingress_port = pkt.get(&self.prog, self.prog.intr.ingress_port);
            pkt.cursor = 0;
            self.parse(&mut pkt);
            exec::apply_pipeline(&self.prog, &self.code, &mut self.rt, &mut pkt, self.ingress);
            let prog = &self.prog;
            let egress_spec = pkt.get(prog, prog.intr.egress_spec) as u32;
            let mgrp = pkt.get(prog, prog.intr.mcast_grp) as u32;
            if let Some((session, list)) = pkt.regs.clone.take() {
                if let Some(&cfg) = self.mirrors.get(&session) {
                    // The clone is the packet as received, parsed again.
                    let mut copy = self.alloc();
                    copy.data.clone_from(&pkt.data);
                    copy.regs.packet_length = ingress_len;
                    copy.set(&self.prog, self.prog.intr.ingress_port, ingress_port);
                    self.parse(&mut copy);
                    self.carry_field_list(&mut copy, &pkt, list, instance_type::INGRESS_CLONE);
                    self.send_clone(copy, cfg, out);
                }
            }
            if let Some(list) = pkt.regs.digest.take() {
                self.learn(&pkt, list);
            }
            if let Some(list) = pkt.regs.resubmit.take() {
                reinjections += 1;
                if reinjections > self.config.max_reinjections {
                    self.stats.reinjection_limit_drops += 1;
                    self.recycle(pkt);
                    return;
                }
                self.stats.resubmitted += 1;
                let mut copy = self.alloc();
                copy.data.clone_from(&pkt.data);
                self.carry_field_list(&mut copy, &pkt, list, instance_type::RESUBMIT);
                copy.regs.packet_length = ingress_len;
                copy.set(
                    &self.prog,
                    self.prog.intr.packet_length,
                    u64::from(ingress_len),
                );
                self.recycle(std::mem::replace(&mut pkt, copy));
                continue;
            }
            if mgrp != 0 {
                pkt.set(
                    &self.prog,
                    self.prog.intr.instance_type,
                    instance_type::REPLICATION,
                );
                self.multicast(&pkt, mgrp, out);
                self.recycle(pkt);
                return;
            }
            if egress_spec == self.config.drop_port {
                self.stats.dropped_ingress += 1;
                self.recycle(pkt);
                return;
            }
            pkt.set(
                &self.prog,
                self.prog.intr.instance_type,
                instance_type::NORMAL,
            );
            pkt.reinjections = reinjections;
            self.enqueue(egress_spec, pkt, out);
            return;
        }
    }

    /// Runs a dequeued packet through the egress pipeline and the deparser. Returns the packet
    /// to transmit, if any; egress clones and recirculated packets' new egress jobs go to `out`.
    pub fn egress(
        &mut self,
        job: EgressJob,
        q: QueueMeta,
        now_us: u64,
        out: &mut Vec<EgressJob>,
    ) -> Option<Output> {
        self.run_egress(job, q, now_us, out, false)
    }

    /// Runs the egress pipeline for a packet the traffic manager dropped (full buffer, queue
    /// limit, watchdog flush) so that a program keeping its own buffer accounting can release
    /// the packet's bytes: `egress_spec` starts as the drop port (what `mark_to_drop` sets;
    /// bmv2 and a normal pass start it at 0), and the packet is discarded afterwards whatever
    /// egress does. Egress clones it makes (an XON, say) go to `out` as usual.
    pub fn egress_dropped(
        &mut self,
        job: EgressJob,
        q: QueueMeta,
        now_us: u64,
        out: &mut Vec<EgressJob>,
    ) {
        self.run_egress(job, q, now_us, out, true);
    }

    fn run_egress(
        &mut self,
        job: EgressJob,
        q: QueueMeta,
        now_us: u64,
        out: &mut Vec<EgressJob>,
        dropped: bool,
    ) -> Option<Output> {
        self.rt.ext.now_us = now_us;
        let EgressJob { mut pkt, port, .. } = job;
        let prog = &self.prog;
        let intr = &prog.intr;
        pkt.set(prog, intr.egress_global_timestamp, now_us);
        pkt.set(prog, intr.enq_timestamp, q.enq_timestamp_us);
        pkt.set(prog, intr.enq_qdepth, u64::from(q.enq_qdepth));
        pkt.set(prog, intr.deq_timedelta, q.deq_timedelta_us);
        pkt.set(prog, intr.deq_qdepth, u64::from(q.deq_qdepth));
        pkt.set(prog, intr.qid, u64::from(q.qid));
        pkt.set(prog, intr.egress_port, u64::from(port));
        let spec = if dropped { self.config.drop_port } else { 0 };
        pkt.set(prog, intr.egress_spec, u64::from(spec));
        let len = u64::from(pkt.regs.packet_length);
        pkt.set(prog, intr.packet_length, len);
        exec::apply_pipeline(&self.prog, &self.code, &mut self.rt, &mut pkt, self.egress);
        if let Some((session, list)) = pkt.regs.clone.take() {
            if let Some(&cfg) = self.mirrors.get(&session) {
                // E2E clones keep the egress-modified headers, with metadata reset.
                let mut copy = self.copy_of(&pkt);
                self.carry_field_list(&mut copy, &pkt, list, instance_type::EGRESS_CLONE);
                self.send_clone(copy, cfg, out);
            }
        }
        let prog = &self.prog;
        if dropped {
            self.recycle(pkt);
            return None;
        }
        if pkt.get(prog, prog.intr.egress_spec) as u32 == self.config.drop_port {
            self.stats.dropped_egress += 1;
            self.recycle(pkt);
            return None;
        }
        exec::update_checksums(prog, &self.code, &mut pkt);
        exec::deparse(prog, &mut pkt, self.deparser);
        if let Some(list) = pkt.regs.recirculate.take() {
            let reinjections = pkt.reinjections + 1;
            if reinjections > self.config.max_reinjections {
                self.stats.reinjection_limit_drops += 1;
                self.recycle(pkt);
                return None;
            }
            self.stats.recirculated += 1;
            let mut copy = self.alloc();
            std::mem::swap(&mut copy.data, &mut pkt.data);
            self.carry_field_list(&mut copy, &pkt, list, instance_type::RECIRC);
            let n = copy.data.len() as u32;
            copy.regs.packet_length = n;
            copy.set(&self.prog, self.prog.intr.packet_length, u64::from(n));
            self.recycle(pkt);
            self.run_ingress(copy, reinjections, now_us, out);
            return None;
        }
        self.stats.transmitted += 1;
        let data = std::mem::replace(&mut pkt.data, self.buffers.pop().unwrap_or_default());
        self.recycle(pkt);
        Some(Output { port, data })
    }

    /// Ingress, an in-engine FIFO, and egress for every resulting packet: what a switch
    /// without a traffic manager does. Transmitted packets are appended to `out`.
    pub fn process(&mut self, port: u32, data: &[u8], now_us: u64, out: &mut Vec<Output>) {
        let mut jobs = std::mem::take(&mut self.jobs);
        self.ingress(port, data, now_us, &mut jobs);
        self.fifo.extend(jobs.drain(..));
        while let Some(job) = self.fifo.pop_front() {
            let q = QueueMeta {
                enq_timestamp_us: now_us,
                enq_qdepth: self.fifo.len() as u32,
                deq_timedelta_us: 0,
                deq_qdepth: self.fifo.len() as u32,
                // simple_switch reports the priority queue the packet left.
                qid: u32::from(job.priority),
            };
            if let Some(o) = self.egress(job, q, now_us, &mut jobs) {
                out.push(o);
            }
            self.fifo.extend(jobs.drain(..));
        }
        self.jobs = jobs;
    }

    /// Gives a transmitted packet's buffer back for reuse, so a steady stream of packets
    /// allocates nothing.
    pub fn recycle_buffer(&mut self, mut data: Vec<u8>) {
        if self.buffers.len() < 256 {
            data.clear();
            self.buffers.push(data);
        }
    }

    fn learn(&mut self, pkt: &Pkt, list: i64) {
        let Some(l) = self.prog.learn_lists.get(&list) else {
            return;
        };
        let mut values = Vec::with_capacity(l.fields.len());
        for &f in &l.fields {
            let mut v = Vec::new();
            pkt.phv.field_bytes(&self.prog, f, &mut v);
            values.push(v);
        }
        if self.rt.ext.digests.len() < 65_536 {
            self.rt.ext.digests.push(Digest {
                list_id: list,
                list_name: l.name.clone(),
                values,
            });
        }
    }
}

fn table_path(json: &p4_bmv2_json::Program, mut ti: usize) -> String {
    for (pi, p) in json.pipelines.iter().enumerate() {
        if ti < p.tables.len() {
            return format!("pipelines[{pi}].tables[{ti}]");
        }
        ti -= p.tables.len();
    }
    "pipelines".into()
}

impl std::fmt::Debug for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Switch")
            .field("headers", &self.prog.headers.len())
            .field("tables", &self.prog.tables.len())
            .field("actions", &self.prog.actions.len())
            .field("config", &self.config)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
