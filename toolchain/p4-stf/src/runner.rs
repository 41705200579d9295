//! Runs parsed statements against a target and judges the outcome, as p4c's bmv2 runner does:
//! expectations are collected per port and matched in order against everything the switch
//! transmitted on that port; a packet on a port without expectations fails the test. The switch
//! has only the ports some `packet` or `expect` names (p4c's runner gives simple_switch no other
//! interface), so what goes to any other port is reported but not judged.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use crate::ast::{CountKind, CounterRef, Loc, Stmt, StmtKind};
use crate::parse::{parse, Diagnostic};
use crate::pattern::{render_diff, to_hex, Pattern};
use crate::resolve::{find_table, resolve_action, resolve_entry, ResolveError};
use crate::target::{CounterCell, EntryHandle, StfTarget, TableInfo, TargetError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    /// A value read for the user (`register_read` without a check, `counter_read`, ...).
    Info,
}

/// One line of the report, with indented detail lines (a packet diff) when there are some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Where the statement is; `None` for packets no statement expected.
    pub loc: Option<Loc>,
    pub status: Status,
    pub what: String,
    pub detail: String,
}

/// The outcome of one STF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub file: String,
    pub items: Vec<Item>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.items
            .iter()
            .filter(|i| i.status == Status::Pass)
            .count()
    }

    pub fn failed(&self) -> usize {
        self.items
            .iter()
            .filter(|i| i.status == Status::Fail)
            .count()
    }

    /// True when nothing failed.
    pub fn success(&self) -> bool {
        self.failed() == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            let status = match item.status {
                Status::Pass => "PASS",
                Status::Fail => "FAIL",
                Status::Info => "INFO",
            };
            match item.loc {
                Some(loc) => write!(f, "{}({loc}): ", self.file)?,
                None => write!(f, "{}: ", self.file)?,
            }
            writeln!(f, "{status} {}", item.what)?;
            f.write_str(&item.detail)?;
        }
        writeln!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

/// Why a file could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum StfError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", render_diagnostics(file, diagnostics))]
    Parse {
        file: String,
        diagnostics: Vec<Diagnostic>,
    },
}

/// Why one statement failed; the report gives it after the statement's text.
#[derive(Debug, thiserror::Error)]
enum StmtError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("no entry was named '{0}' by an 'add ... = {0}'")]
    UnnamedEntry(String),
}

fn render_diagnostics(file: &str, diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("{file}{d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads, parses and runs an STF file against `target`.
pub fn run_stf<T: StfTarget + ?Sized>(target: &mut T, path: &Path) -> Result<Report, StfError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| StfError::Io {
        file: file.clone(),
        source,
    })?;
    run_stf_source(target, &file, &text)
}

/// Parses and runs STF text; `file` names it in the report and in errors.
pub fn run_stf_source<T: StfTarget + ?Sized>(
    target: &mut T,
    file: &str,
    text: &str,
) -> Result<Report, StfError> {
    let stmts = parse(text).map_err(|diagnostics| StfError::Parse {
        file: file.to_string(),
        diagnostics,
    })?;
    Ok(run_stmts(target, file, &stmts))
}

struct Expectation {
    loc: Loc,
    pattern: Option<Pattern>,
}

struct Run<'t, T: StfTarget + ?Sized> {
    target: &'t mut T,
    tables: Vec<TableInfo>,
    items: Vec<Item>,
    /// Entries named with `= NAME`, for `check_counter c($NAME)`.
    named: HashMap<String, (String, EntryHandle)>,
    expects: BTreeMap<u32, Vec<Expectation>>,
    outputs: BTreeMap<u32, Vec<Vec<u8>>>,
    in_flight: bool,
    /// Ports some `packet` or `expect` names.
    interfaces: BTreeSet<u32>,
}

impl<T: StfTarget + ?Sized> Run<'_, T> {
    fn item(&mut self, loc: Option<Loc>, status: Status, what: String, detail: String) {
        self.items.push(Item {
            loc,
            status,
            what,
            detail,
        });
    }

    fn fail(&mut self, stmt: &Stmt, error: StmtError) {
        self.item(
            Some(stmt.loc),
            Status::Fail,
            format!("{}: {error}", stmt.text),
            String::new(),
        );
    }

    /// Lets the switch finish what was sent; control-plane statements and reads see the state
    /// after every earlier packet, as they do in bmv2 given p4c's delays.
    fn drain(&mut self, stmt: Option<&Stmt>) {
        if !self.in_flight {
            return;
        }
        self.in_flight = false;
        match self.target.wait_idle() {
            Ok(packets) => {
                for p in packets {
                    self.outputs.entry(p.port).or_default().push(p.data);
                }
            }
            Err(e) => self.item(
                stmt.map(|s| s.loc),
                Status::Fail,
                format!("the switch failed while processing packets: {e}"),
                String::new(),
            ),
        }
    }

    fn exec(&mut self, stmt: &Stmt) {
        if !matches!(
            stmt.kind,
            StmtKind::Packet { .. } | StmtKind::Expect { .. } | StmtKind::NoPacket
        ) {
            self.drain(Some(stmt));
        }
        let result: Result<(), StmtError> = match &stmt.kind {
            StmtKind::Packet { port, data } => {
                self.in_flight = true;
                self.target
                    .send_packet(*port, data)
                    .map_err(StmtError::from)
            }
            StmtKind::Expect { port, pattern } => {
                self.expects.entry(*port).or_default().push(Expectation {
                    loc: stmt.loc,
                    pattern: pattern.clone(),
                });
                Ok(())
            }
            StmtKind::NoPacket | StmtKind::Wait => Ok(()),
            StmtKind::Add {
                table,
                priority,
                keys,
                action,
                name,
            } => resolve_entry(&self.tables, table, *priority, keys, action)
                .map_err(StmtError::from)
                .and_then(|entry| {
                    let handle = self.target.add_entry(&entry).map_err(StmtError::from)?;
                    if let Some(name) = name {
                        self.named
                            .insert(name.clone(), (entry.table.clone(), handle));
                    }
                    Ok(())
                }),
            StmtKind::SetDefault { table, action } => find_table(&self.tables, table)
                .and_then(|info| {
                    let (action, args) = resolve_action(info, action)?;
                    Ok((info.name.clone(), action.name.clone(), args))
                })
                .map_err(StmtError::from)
                .and_then(|(table, action, args)| {
                    self.target
                        .set_default(&table, &action, &args)
                        .map_err(StmtError::from)
                }),
            StmtKind::RemoveAll => {
                self.named.clear();
                self.target.clear_tables().map_err(StmtError::from)
            }
            StmtKind::CheckCounter {
                counter,
                index,
                check,
            } => {
                let cell = match index {
                    CounterRef::Index(i) => Ok(CounterCell::Index(*i)),
                    CounterRef::Entry(name) => match self.named.get(name) {
                        Some((table, handle)) => Ok(CounterCell::Entry {
                            table: table.clone(),
                            handle: *handle,
                        }),
                        None => Err(StmtError::UnnamedEntry(name.clone())),
                    },
                };
                cell.and_then(|cell| {
                    self.target
                        .counter_read(counter, &cell)
                        .map_err(StmtError::from)
                })
                .map(|got| {
                    let seen = format!("{} packets, {} bytes", got.packets, got.bytes);
                    let ok = match check {
                        None => got.packets == 0 && got.bytes == 0,
                        Some((CountKind::Packets, cmp, n)) => cmp.holds(&got.packets, n),
                        Some((CountKind::Bytes, cmp, n)) => cmp.holds(&got.bytes, n),
                    };
                    let status = if ok { Status::Pass } else { Status::Fail };
                    self.item(
                        Some(stmt.loc),
                        status,
                        format!("{}: {seen}", stmt.text),
                        String::new(),
                    );
                })
            }
            StmtKind::MirroringAdd { session, port } => self
                .target
                .mirroring_add(*session, *port)
                .map_err(StmtError::from),
            StmtKind::MirroringAddMc { session, mgrp } => self
                .target
                .mirroring_add_mc(*session, *mgrp)
                .map_err(StmtError::from),
            StmtKind::MirroringDelete { session } => self
                .target
                .mirroring_delete(*session)
                .map_err(StmtError::from),
            StmtKind::MirroringGet { session } => self
                .target
                .mirroring_get(*session)
                .map_err(StmtError::from)
                .map(|desc| {
                    self.item(
                        Some(stmt.loc),
                        Status::Info,
                        format!("{}: {desc}", stmt.text),
                        String::new(),
                    )
                }),
            StmtKind::McMgrpCreate { mgrp } => {
                self.target.mc_mgrp_create(*mgrp).map_err(StmtError::from)
            }
            StmtKind::McNodeCreate { rid, ports } => self
                .target
                .mc_node_create(*rid, ports)
                .map_err(StmtError::from)
                .map(|_| ()),
            StmtKind::McNodeUpdate { handle, ports } => self
                .target
                .mc_node_update(*handle, ports)
                .map_err(StmtError::from),
            StmtKind::McNodeAssociate { mgrp, handle } => self
                .target
                .mc_node_associate(*mgrp, *handle)
                .map_err(StmtError::from),
            StmtKind::CounterRead { counter, index } => self
                .target
                .counter_read(counter, &CounterCell::Index(*index))
                .map_err(StmtError::from)
                .map(|v| {
                    let what = format!("{}: {} packets, {} bytes", stmt.text, v.packets, v.bytes);
                    self.item(Some(stmt.loc), Status::Info, what, String::new())
                }),
            StmtKind::CounterWrite {
                counter,
                index,
                packets,
                bytes,
            } => self
                .target
                .counter_write(
                    counter,
                    *index,
                    crate::target::CounterValue {
                        packets: *packets,
                        bytes: *bytes,
                    },
                )
                .map_err(StmtError::from),
            StmtKind::RegisterRead {
                register,
                index,
                check,
            } => self
                .target
                .register_read(register, *index)
                .map_err(StmtError::from)
                .map(|v| {
                    let (status, what) = match check {
                        None => (Status::Info, format!("{}: {v}", stmt.text)),
                        Some((cmp, want)) => {
                            let ok = cmp.holds(&v, want);
                            let status = if ok { Status::Pass } else { Status::Fail };
                            (status, format!("{}: read {v}", stmt.text))
                        }
                    };
                    self.item(Some(stmt.loc), status, what, String::new())
                }),
            StmtKind::RegisterWrite {
                register,
                index,
                value,
            } => self
                .target
                .register_write(register, *index, value)
                .map_err(StmtError::from),
            StmtKind::RegisterReset { register } => self
                .target
                .register_reset(register)
                .map_err(StmtError::from),
            StmtKind::MeterSetRates {
                meter,
                index,
                rates,
            } => self
                .target
                .meter_set_rates(meter, *index, rates)
                .map_err(StmtError::from),
            StmtKind::MeterGetRates { meter, index } => self
                .target
                .meter_get_rates(meter, *index)
                .map_err(StmtError::from)
                .map(|rates| {
                    let list = rates
                        .iter()
                        .map(|r| format!("{}:{}", r.rate, r.burst))
                        .collect::<Vec<_>>()
                        .join(" ");
                    self.item(
                        Some(stmt.loc),
                        Status::Info,
                        format!("{}: {list}", stmt.text),
                        String::new(),
                    )
                }),
        };
        if let Err(error) = result {
            self.fail(stmt, error);
        }
    }

    /// Matches each port's expectations, in order, against what the port transmitted.
    fn judge(&mut self) {
        let ports: BTreeSet<u32> = self
            .expects
            .keys()
            .chain(self.outputs.keys())
            .copied()
            .collect();
        for port in ports {
            let expects = self.expects.remove(&port).unwrap_or_default();
            let got = self.outputs.remove(&port).unwrap_or_default();
            if !self.interfaces.contains(&port) {
                for (i, packet) in got.iter().enumerate() {
                    self.item(
                        None,
                        Status::Info,
                        format!(
                            "port {port}: packet #{} ({} bytes) not judged: no packet or expect names port {port}",
                            i + 1,
                            packet.len()
                        ),
                        format!("      received {}\n", to_hex(packet)),
                    );
                }
                continue;
            }
            let any_count = expects.iter().any(|e| e.pattern.is_none());
            let patterned: Vec<(Loc, Pattern)> = expects
                .into_iter()
                .filter_map(|e| e.pattern.map(|p| (e.loc, p)))
                .collect();
            for (i, (loc, pattern)) in patterned.iter().enumerate() {
                let n = i + 1;
                let Some(packet) = got.get(i) else {
                    self.item(
                        Some(*loc),
                        Status::Fail,
                        format!(
                            "expect port {port} packet #{n}: not received ({} packet(s) on port {port})",
                            got.len()
                        ),
                        format!("      expected {}\n", pattern.to_hex()),
                    );
                    continue;
                };
                match pattern.check(packet) {
                    Ok(()) => self.item(
                        Some(*loc),
                        Status::Pass,
                        format!("expect port {port} packet #{n} ({} bytes)", packet.len()),
                        String::new(),
                    ),
                    Err(mismatch) => self.item(
                        Some(*loc),
                        Status::Fail,
                        format!("expect port {port} packet #{n}: {}", mismatch.summary()),
                        render_diff(pattern, packet),
                    ),
                }
            }
            if !any_count {
                for (i, packet) in got.iter().enumerate().skip(patterned.len()) {
                    self.item(
                        None,
                        Status::Fail,
                        format!(
                            "port {port}: unexpected packet #{} ({} bytes)",
                            i + 1,
                            packet.len()
                        ),
                        format!("      received {}\n", to_hex(packet)),
                    );
                }
            }
        }
    }
}

/// Runs already parsed statements; `file` names the source in the report.
pub fn run_stmts<T: StfTarget + ?Sized>(target: &mut T, file: &str, stmts: &[Stmt]) -> Report {
    let tables = target.tables();
    let mut run = Run {
        target,
        tables,
        items: Vec::new(),
        named: HashMap::new(),
        expects: BTreeMap::new(),
        outputs: BTreeMap::new(),
        // Drain once at the end even when no packet was sent: a target may emit on its own.
        in_flight: true,
        interfaces: stmts
            .iter()
            .filter_map(|s| match s.kind {
                StmtKind::Packet { port, .. } | StmtKind::Expect { port, .. } => Some(port),
                _ => None,
            })
            .collect(),
    };
    for stmt in stmts {
        run.exec(stmt);
    }
    run.in_flight = true;
    run.drain(None);
    run.judge();
    let mut items = run.items;
    // Source order; packets nobody expected come last, by port. The sort is stable.
    items.sort_by_key(|i| (i.loc.is_none(), i.loc));
    Report {
        file: file.to_string(),
        items,
    }
}
