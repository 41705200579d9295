//! bmv2 runtime CLI commands (`simple_switch_CLI`), run by the switch on its engine. Names are
//! resolved as bmv2 does (full name or unique dot-separated suffix); values are parsed as bmv2's CLI does
//! (decimal, `0x` hex, IPv4 for 32-bit, MAC for 48-bit, IPv6 for 128-bit fields; `&&&` masks,
//! `/len` prefixes, `->` ranges; priority last, lower number wins).

use crate::core::{CliKey, ConfigurePortError, Core};
use p4_bmv2_json::MatchType;
use std::collections::BTreeMap;
use switch_tables::{priority_from_bmv2, EntryHandle};
use switch_v1model::{
    ApiError, EntryAction, EntryDesc, ErrorCode, FieldMatch, MeterRate, MirrorSession, Switch,
    TableDesc,
};

/// Why a command failed; the text is what bmv2's CLI prints (ending with a newline).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input, caught before the switch is asked (bmv2's `UIn_Error`).
    #[error("Error: {0}\n")]
    Input(#[from] InputError),
    /// The switch refused: what the command printed before, and bmv2's error code name.
    #[error("{printed}Invalid {kind} operation ({code})\n")]
    Refused {
        printed: String,
        kind: &'static str,
        code: &'static str,
    },
    #[error("Invalid runtime data: Error while parsing {text} - {problem}\n")]
    RuntimeData { text: String, problem: ValueError },
    #[error("*** Unknown syntax: {0}\n")]
    UnknownSyntax(String),
}

/// Bad input to a command, in bmv2's words where bmv2 has them.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// One of bmv2's fixed messages (`Insufficient number of args`, ...).
    #[error("{0}")]
    Usage(&'static str),
    #[error("Wrong number of args, expected {expected} but got {got}")]
    ArgCount { expected: usize, got: usize },
    #[error("Wrong number of args, expected {low} or {high} but got {got}")]
    ArgCountEither { low: usize, high: usize, got: usize },
    #[error("Bad format for {0}")]
    BadFormat(&'static str),
    #[error("Invalid {what} name ({wanted})")]
    UnknownName { what: &'static str, wanted: String },
    #[error("{what} name '{wanted}' is ambiguous: {}", .candidates.join(", "))]
    AmbiguousName {
        what: &'static str,
        wanted: String,
        candidates: Vec<String>,
    },
    #[error("Invalid bool parameter ({0})")]
    InvalidBool(String),
    /// `width` is `crc16` or `crc32`.
    #[error("Invalid {width}_custom name ({name})")]
    InvalidCustom { width: String, name: String },
    #[error("Invalid number of rates, expected {expected} but got {got}")]
    RateCount { expected: usize, got: usize },
    #[error("'{0}' is not a valid port number")]
    NotAPort(String),
    #[error("Table {table} has no action {action}")]
    NoSuchAction { table: String, action: String },
    #[error("Action profile '{profile}' has no action '{action}'")]
    NoProfileAction { profile: String, action: String },
    #[error("Action {action} needs {needs} parameters")]
    ParamCount { action: String, needs: usize },
    #[error("table {table} needs {needs} match fields, got {got}")]
    KeyCount {
        table: String,
        needs: usize,
        got: usize,
    },
    #[error("table {0} needs a priority after the action parameters")]
    NoPriority(String),
    #[error("priority {0} out of range")]
    PriorityRange(u128),
    #[error("{0}")]
    Priority(switch_tables::TableError),
    #[error("{field}: {problem}")]
    Key { field: String, problem: KeyError },
    #[error("{0}")]
    Value(#[from] ValueError),
    #[error("{0}")]
    Queue(#[from] QueueError),
}

/// A match-field argument that does not fit its match kind.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("'{0}': an lpm key is written value/prefix_length")]
    NotLpm(String),
    #[error("'{text}': prefix length above the field's {width} bits")]
    PrefixTooLong { text: String, width: u32 },
    #[error("'{0}': a ternary key is written value&&&mask")]
    NotTernary(String),
    #[error("'{0}': a range key is written low->high")]
    NotRange(String),
    #[error("{0}")]
    Value(#[from] ValueError),
}

/// A number or address argument bmv2's CLI would not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "{what} '{text}': invalid input, could not cast to integer, try in hex with 0x prefix"
    )]
    NotInteger { what: &'static str, text: String },
    #[error("'{0}' is not a MAC address")]
    NotMac(String),
    #[error("'{0}' is not an IPv6 address")]
    NotIpv6(String),
    #[error("'{text}': input is too large for the {width}-bit field")]
    TooLarge { text: String, width: u32 },
}

/// Why `set_queue_depth` / `set_queue_rate` failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("usage: {cmd} <{what}> [<egress_port> [<priority>]]")]
    Usage { cmd: String, what: &'static str },
    #[error("{cmd}: priority {priority} out of range: the switch has {queues} priority queue(s) (--priority-queues)")]
    Priority {
        cmd: String,
        priority: u128,
        queues: u32,
    },
    #[error("{0}: no traffic manager (start with --port-config FILE)")]
    NoTm(String),
    #[error("port {0} out of range")]
    PortRange(u128),
    #[error("{cmd}: port {port} is not configured")]
    NotConfigured { cmd: String, port: u32 },
    #[error("depth {0} out of range")]
    DepthRange(u128),
    #[error("rate {0} out of range")]
    RateRange(u128),
    /// A queue the port did not list, made from the configuration's defaults.
    #[error("{0}")]
    NewQueue(serde_json::Error),
    #[error("{cmd}: port {port}: {source}")]
    Port {
        cmd: String,
        port: u32,
        source: ConfigurePortError,
    },
}

impl From<&'static str> for CliError {
    fn from(m: &'static str) -> CliError {
        CliError::Input(InputError::Usage(m))
    }
}

impl From<ValueError> for CliError {
    fn from(e: ValueError) -> CliError {
        CliError::Input(e.into())
    }
}

type Out = Result<String, CliError>;

/// Runs one command line; `Ok` text is what bmv2's CLI prints on success, `Err`'s text what it
/// prints on failure (both end with a newline unless empty).
pub fn execute(core: &mut Core, now_ns: u64, line: &str) -> Result<String, CliError> {
    run(core, now_ns, line)
}

/// bmv2's name for an engine error, from the Thrift error enum of the object kind
/// (`TableOperationErrorCode`, `CounterOperationErrorCode`, `McOperationErrorCode`, ...).
fn code_name(kind: &str, c: ErrorCode) -> &'static str {
    use ErrorCode::*;
    match c {
        InvalidTableName => "INVALID_TABLE_NAME",
        InvalidActionName | ActionNotInTable => "INVALID_ACTION_NAME",
        TableFull | ActionProfileFull => "TABLE_FULL",
        DuplicateEntry => "DUPLICATE_ENTRY",
        BadMatchKey => "BAD_MATCH_KEY",
        InvalidHandle if kind == "PRE" => "INVALID_L1_HANDLE",
        InvalidHandle => "INVALID_HANDLE",
        BadActionData => "BAD_ACTION_DATA",
        WrongTableType => "WRONG_TABLE_TYPE",
        DefaultActionIsConst => "DEFAULT_ACTION_IS_CONST",
        DefaultEntryIsConst => "DEFAULT_ENTRY_IS_CONST",
        ImmutableTableEntries => "IMMUTABLE_TABLE_ENTRIES",
        InvalidActionProfileName => "INVALID_ACTION_PROFILE_NAME",
        InvalidMemberHandle => "INVALID_MBR_HANDLE",
        MemberStillUsed => "MBR_STILL_USED",
        InvalidGroupHandle => "INVALID_GRP_HANDLE",
        InvalidCounterName => "INVALID_COUNTER_NAME",
        InvalidMeterName => "INVALID_METER_NAME",
        InvalidRegisterName => "INVALID_REGISTER_NAME",
        IndexOutOfRange => "INVALID_INDEX",
        BadValue if kind == "meter" => "INVALID_INFO_RATE_VALUE",
        InvalidMulticastGroup => "INVALID_MGID",
        InvalidMulticastNode => "INVALID_L1_HANDLE",
        _ => "ERROR",
    }
}

/// Maps an engine error to bmv2's line, after what the command printed so far.
fn refused<'a>(kind: &'static str, printed: &'a str) -> impl Fn(ApiError) -> CliError + 'a {
    move |e| CliError::Refused {
        printed: printed.to_string(),
        kind,
        code: code_name(kind, e.code),
    }
}

/// bmv2's refusal of a table operation, found before asking the switch.
fn table_refused(code: &'static str) -> CliError {
    CliError::Refused {
        printed: String::new(),
        kind: "table",
        code,
    }
}

fn exactly<'a, const N: usize>(args: &[&'a str]) -> Result<[&'a str; N], CliError> {
    <[&str; N]>::try_from(args).map_err(|_| {
        InputError::ArgCount {
            expected: N,
            got: args.len(),
        }
        .into()
    })
}

fn at_least(args: &[&str], n: usize) -> Result<(), CliError> {
    if args.len() < n {
        return Err("Insufficient number of args".into());
    }
    Ok(())
}

/// An integer argument as bmv2's CLI reads it (`int(s)`), else `Bad format for <what>`.
fn handle(s: &str, what: &'static str) -> Result<u32, CliError> {
    s.parse().map_err(|_| InputError::BadFormat(what).into())
}

fn run(core: &mut Core, now_ns: u64, line: &str) -> Out {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, args)) = words.split_first() else {
        return Ok(String::new());
    };
    if let "set_queue_depth" | "set_queue_rate" = cmd {
        return Ok(set_queue(core, now_ns, cmd, args)?);
    }
    let keys = &mut core.cli_keys;
    let sw = core
        .switch
        .as_mut()
        .ok_or("no pipeline loaded (start with a JSON file or push one over P4Runtime)")?;
    if let Some(sub) = deprecated_for(cmd) {
        // bmv2's older per-table spellings of the act_prof_* commands: the table stands for
        // its action profile.
        let Some((&t, rest)) = args.split_first() else {
            return Err("Insufficient number of args".into());
        };
        let prof = table(sw, t)?
            .profile
            .ok_or("Cannot run this command on non-indirect table")?;
        let line = [sub, prof.as_str()]
            .into_iter()
            .chain(rest.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        return run(core, now_ns, &line);
    }
    match cmd {
        "table_add" => table_add(sw, keys, args),
        "table_set_default" => table_set_default(sw, args),
        "table_num_entries" => {
            let [t] = exactly(args)?;
            let t = table(sw, t)?;
            let n = sw.table_entries(&t.name).map_err(refused("table", ""))?;
            Ok(format!("{}\n", n.len()))
        }
        "table_delete" | "table_indirect_delete" => {
            let [tn, h] = exactly(args)?;
            let t = table(sw, tn)?;
            let h = handle(h, "entry handle")?;
            let said = format!("Deleting entry {h} from {tn}\n");
            sw.table_delete(&t.name, EntryHandle(h as _))
                .map_err(refused("table", &said))?;
            keys.remove(&(t.name, h as u64));
            Ok(said)
        }
        "table_modify" => {
            at_least(args, 3)?;
            let (tn, a, h) = (args[0], args[1], args[2]);
            let params = match &args[3..] {
                ["=>", rest @ ..] => rest,
                rest => rest,
            };
            let t = table(sw, tn)?;
            let h = handle(h, "entry handle")?;
            let (action, data) = action_args(&t, tn, a, params)?;
            let said = format!(
                "Modifying entry {h} for {} match table {tn}\n",
                table_match_type(&t)
            );
            sw.table_modify(&t.name, EntryHandle(h as _), &action, &data)
                .map_err(refused("table", &said))?;
            Ok(said)
        }
        "table_clear" => {
            let [t] = exactly(args)?;
            let t = table(sw, t)?;
            let entries = sw.table_entries(&t.name).map_err(refused("table", ""))?;
            for e in entries {
                sw.table_delete(&t.name, e.handle)
                    .map_err(refused("table", ""))?;
                keys.remove(&(t.name.clone(), e.handle.0 as u64));
            }
            Ok(String::new())
        }
        "table_dump" => {
            let [t] = exactly(args)?;
            let t = table(sw, t)?;
            table_dump(sw, keys, &t)
        }
        "table_dump_entry" => {
            let [t, h] = exactly(args)?;
            let t = table(sw, t)?;
            let h = handle(h, "entry handle")?;
            let entries = sw.table_entries(&t.name).map_err(refused("table", ""))?;
            let e = entries
                .iter()
                .find(|e| e.handle.0 as u64 == h as u64)
                .ok_or_else(|| table_refused("INVALID_HANDLE"))?;
            Ok(dump_entry(keys, &t, e))
        }
        "table_dump_entry_from_key" => {
            at_least(args, 1)?;
            let t = table(sw, args[0])?;
            let mut key = args[1..].to_vec();
            key.push("=>");
            let (mut matches, priority, _) = entry_key(&t, &key)?;
            sw.canonicalize_like_bmv2(&t.name, &mut matches)
                .map_err(refused("table", ""))?;
            let entries = sw.table_entries(&t.name).map_err(refused("table", ""))?;
            let e = entries
                .iter()
                .find(|e| e.matches == matches && (priority.is_none() || e.priority == priority))
                .ok_or_else(|| table_refused("BAD_MATCH_KEY"))?;
            Ok(dump_entry(keys, &t, e))
        }
        "table_indirect_add" | "table_indirect_add_with_group" => {
            at_least(args, 2)?;
            let tn = args[0];
            let t = table(sw, tn)?;
            if !t.has_profile || (cmd == "table_indirect_add_with_group" && !t.has_selector) {
                return Err(CliError::from(
                    if t.has_profile || cmd == "table_indirect_add" {
                        "Cannot run this command on non-indirect table, or on indirect table with no selector"
                    } else {
                        "Cannot run this command on non-indirect table"
                    },
                ));
            }
            let (typed, priority, params) = entry_key(&t, &args[1..])?;
            let [h] = params else {
                return Err("Invalid arguments, could not find handle".into());
            };
            let h = handle(h, "handle")?;
            let said = format!("Adding entry to indirect match table {tn}\n");
            let mut matches = typed.clone();
            sw.canonicalize_like_bmv2(&t.name, &mut matches)
                .map_err(refused("table", &said))?;
            let r = if cmd == "table_indirect_add" {
                sw.table_add_member_entry(&t.name, &matches, priority, h)
            } else {
                sw.table_add_group_entry(&t.name, &matches, priority, h)
            };
            let e = r.map_err(refused("table", &said))?;
            keys.insert((t.name, e.0 as u64), (typed, matches));
            Ok(format!("{said}Entry has been added with handle {}\n", e.0))
        }
        "act_prof_create_member" => {
            at_least(args, 2)?;
            let prof = resolve(&sw.profile_names(), args[0], "action profile")?;
            let (action, data) = profile_action(sw, &prof, args[0], args[1], &args[2..])?;
            let m = sw
                .profile_add_member(&prof, &action, &data)
                .map_err(refused("table", ""))?;
            Ok(format!("Member has been created with handle {m}\n"))
        }
        "act_prof_modify_member" => {
            at_least(args, 3)?;
            let prof = resolve(&sw.profile_names(), args[0], "action profile")?;
            let m = handle(args[2], "member handle")?;
            let params = match &args[3..] {
                ["=>", rest @ ..] => rest,
                rest => rest,
            };
            let (action, data) = profile_action(sw, &prof, args[0], args[1], params)?;
            sw.profile_modify_member(&prof, m, &action, &data)
                .map_err(refused("table", ""))?;
            Ok(String::new())
        }
        "act_prof_delete_member" => {
            let [p, m] = exactly(args)?;
            let prof = resolve(&sw.profile_names(), p, "action profile")?;
            let m = handle(m, "member handle")?;
            sw.profile_delete_member(&prof, m)
                .map_err(refused("table", ""))?;
            Ok(String::new())
        }
        "act_prof_create_group" => {
            let [p] = exactly(args)?;
            let prof = selector_profile(sw, p)?;
            // bmv2 hands out the lowest free handle; groups written over P4Runtime hold
            // theirs (the group id) in the same space.
            let groups = sw.profile_groups(&prof).map_err(refused("table", ""))?;
            let next = (0..)
                .find(|g| groups.iter().all(|(h, _)| h != g))
                .unwrap_or_default();
            sw.profile_set_group(&prof, next, &[])
                .map_err(refused("table", ""))?;
            Ok(format!("Group has been created with handle {next}\n"))
        }
        "act_prof_delete_group" => {
            let [p, g] = exactly(args)?;
            let prof = selector_profile(sw, p)?;
            let g = handle(g, "group handle")?;
            sw.profile_delete_group(&prof, g)
                .map_err(refused("table", ""))?;
            Ok(String::new())
        }
        "act_prof_add_member_to_group" | "act_prof_remove_member_from_group" => {
            let [p, m, g] = exactly(args)?;
            let prof = selector_profile(sw, p)?;
            let m = handle(m, "member handle")?;
            let g = handle(g, "group handle")?;
            let bad = table_refused;
            if !sw
                .profile_members(&prof)
                .map_err(refused("table", ""))?
                .iter()
                .any(|(h, _)| *h == m)
            {
                return Err(bad("INVALID_MBR_HANDLE"));
            }
            let mut members = sw
                .profile_groups(&prof)
                .map_err(refused("table", ""))?
                .into_iter()
                .find(|(h, _)| *h == g)
                .ok_or_else(|| bad("INVALID_GRP_HANDLE"))?
                .1;
            let at = members.iter().position(|(h, _)| *h == m);
            match (cmd == "act_prof_add_member_to_group", at) {
                (true, Some(_)) => return Err(bad("MBR_ALREADY_IN_GRP")),
                (true, None) => members.push((m, 1)),
                (false, Some(i)) => {
                    members.remove(i);
                }
                (false, None) => return Err(bad("MBR_NOT_IN_GRP")),
            }
            sw.profile_set_group(&prof, g, &members)
                .map_err(refused("table", ""))?;
            Ok(String::new())
        }
        "act_prof_dump_member" => {
            let [p, m] = exactly(args)?;
            let prof = resolve(&sw.profile_names(), p, "action profile")?;
            let m = handle(m, "member handle")?;
            let members = sw.profile_members(&prof).map_err(refused("table", ""))?;
            let (h, a) = members
                .iter()
                .find(|(h, _)| *h == m)
                .ok_or_else(|| table_refused("INVALID_MBR_HANDLE"))?;
            Ok(dump_member(*h, a))
        }
        "act_prof_dump_group" => {
            let [p, g] = exactly(args)?;
            let prof = resolve(&sw.profile_names(), p, "action profile")?;
            let g = handle(g, "group handle")?;
            let groups = sw.profile_groups(&prof).map_err(refused("table", ""))?;
            let (h, ms) = groups
                .iter()
                .find(|(h, _)| *h == g)
                .ok_or_else(|| table_refused("INVALID_GRP_HANDLE"))?;
            Ok(dump_group(*h, ms))
        }
        "act_prof_dump" => {
            let [p] = exactly(args)?;
            let prof = resolve(&sw.profile_names(), p, "action profile")?;
            let with_selector = sw
                .tables()
                .iter()
                .any(|t| t.has_selector && t.profile.as_deref() == Some(prof.as_str()));
            dump_profile(sw, &prof, with_selector)
        }
        "set_crc16_parameters" | "set_crc32_parameters" => {
            let [name, poly, init, xor, refin, refout] = exactly(args)?;
            let flag = |s: &str| match s {
                "true" | "True" => Ok(true),
                "false" | "False" => Ok(false),
                _ => number(s, "flag")
                    .map(|n| n != 0)
                    .map_err(|_| InputError::InvalidBool(s.to_string())),
            };
            let params = switch_v1model::CrcParams {
                polynomial: number(poly, "polynomial")? as u64,
                initial_remainder: number(init, "initial remainder")? as u64,
                final_xor_value: number(xor, "final xor value")? as u64,
                data_reflected: flag(refin)?,
                remainder_reflected: flag(refout)?,
            };
            // bmv2 knows only the custom CRCs of the width the command names.
            let unknown = || InputError::InvalidCustom {
                width: cmd[4..9].to_string(),
                name: name.to_string(),
            };
            let full =
                resolve(&sw.calculation_names(), name, "calculation").map_err(|_| unknown())?;
            sw.set_crc_parameters(&full, params)
                .map_err(|_| unknown())?;
            Ok(String::new())
        }
        "mirroring_add" => {
            let [s, p] = exactly(args)?;
            let session = handle(s, "mirror_id")?;
            let port = handle(p, "egress_port")?;
            sw.mirroring_add(
                session,
                MirrorSession {
                    port: Some(port),
                    mgrp: None,
                    ..Default::default()
                },
            )
            .map_err(refused("mirroring", ""))?;
            Ok(String::new())
        }
        "mc_mgrp_create" | "mc_mgrp_destroy" => {
            let [g] = exactly(args)?;
            let g = handle(g, "multicast group id")?;
            let (said, r) = if cmd == "mc_mgrp_create" {
                (
                    format!("Creating multicast group {g}\n"),
                    sw.mc_mgrp_create(g),
                )
            } else {
                (
                    format!("Destroying multicast group {g}\n"),
                    sw.mc_mgrp_destroy(g),
                )
            };
            r.map_err(refused("PRE", &said))?;
            Ok(said)
        }
        "mc_node_create" | "mc_node_update" => {
            at_least(args, if cmd == "mc_node_create" { 1 } else { 2 })?;
            let first = handle(
                args[0],
                if cmd == "mc_node_create" {
                    "rid"
                } else {
                    "node handle"
                },
            )?;
            let (ports, port_map, lag_map) = ports_and_lags(&args[1..])?;
            if cmd == "mc_node_create" {
                let said = format!(
                    "Creating node with rid {first} , port map {port_map} and lag map {lag_map}\n"
                );
                let h = sw.mc_node_create(first, &ports);
                Ok(format!("{said}node was created with handle {h}\n"))
            } else {
                let said = format!(
                    "Updating node {first} with port map {port_map} and lag map {lag_map}\n"
                );
                sw.mc_node_update(first, &ports)
                    .map_err(refused("PRE", &said))?;
                Ok(said)
            }
        }
        "mc_node_destroy" => {
            let [h] = exactly(args)?;
            let h = handle(h, "node handle")?;
            let said = format!("Destroying node {h}\n");
            sw.mc_node_destroy(h).map_err(refused("PRE", &said))?;
            Ok(said)
        }
        "mc_node_associate" | "mc_node_dissociate" => {
            let [g, h] = exactly(args)?;
            let g = handle(g, "multicast group id")?;
            let h = handle(h, "node handle")?;
            let (said, r) = if cmd == "mc_node_associate" {
                (
                    format!("Associating node {h} to multicast group {g}\n"),
                    sw.mc_node_associate(g, h),
                )
            } else {
                (
                    format!("Dissociating node {h} from multicast group {g}\n"),
                    sw.mc_node_dissociate(g, h),
                )
            };
            r.map_err(refused("PRE", &said))?;
            Ok(said)
        }
        "mc_dump" => {
            exactly::<0>(args)?;
            let mut out = String::from("==========\nMC ENTRIES\n");
            for (g, nodes) in sw.mc_entries() {
                out.push_str(&format!("**********\nmgrp({g})\n"));
                for (h, rid, ports) in nodes {
                    let ports: Vec<String> = ports.iter().map(u32::to_string).collect();
                    out.push_str(&format!(
                        "  -> (L1h={h}, rid={rid}) -> (ports=[{}], lags=[])\n",
                        ports.join(", ")
                    ));
                }
            }
            // No LAGs in the engine: the section is always empty.
            out.push_str("==========\nLAGS\n==========\n");
            Ok(out)
        }
        "register_read" => {
            let (typed, index) = match args {
                [n] => (*n, None),
                [n, i] => (*n, Some(handle(i, "index")?)),
                _ => {
                    return Err(InputError::ArgCountEither {
                        low: 1,
                        high: 2,
                        got: args.len(),
                    }
                    .into())
                }
            };
            let name = resolve(&sw.register_names(), typed, "register")?;
            match index {
                Some(i) => {
                    let v = sw
                        .register_read(&name, i as u64)
                        .map_err(refused("register", ""))?;
                    Ok(format!("{typed}[{i}]= {v}\n"))
                }
                None => {
                    let mut vals = Vec::new();
                    while let Ok(v) = sw.register_read(&name, vals.len() as u64) {
                        vals.push(v.to_string());
                    }
                    Ok(format!("{typed}= {}\n", vals.join(", ")))
                }
            }
        }
        "register_write" => {
            let [n, i, v] = exactly(args)?;
            let name = resolve(&sw.register_names(), n, "register")?;
            let i = handle(i, "index")?;
            let v = number(v, "value").map_err(|_| "Bad format for value, must be an integer")?;
            sw.register_write(&name, i as u64, v)
                .map_err(refused("register", ""))?;
            Ok(String::new())
        }
        "register_reset" => {
            let [n] = exactly(args)?;
            let name = resolve(&sw.register_names(), n, "register")?;
            sw.register_reset(&name).map_err(refused("register", ""))?;
            Ok(String::new())
        }
        "counter_read" => {
            let [typed, i] = exactly(args)?;
            let name = resolve(&sw.counter_names(), typed, "counter")?;
            let i = handle(i, "index")?;
            let v = sw
                .counter_read(&name, i as u64)
                .map_err(refused("counter", ""))?;
            // Python prints the Thrift struct's repr after `"%s[%d]= " % ...` and a space.
            Ok(format!(
                "{typed}[{i}]=  BmCounterValue(bytes={}, packets={})\n",
                v.bytes, v.packets
            ))
        }
        "counter_reset" => {
            let [n] = exactly(args)?;
            let name = resolve(&sw.counter_names(), n, "counter")?;
            sw.counter_reset(&name).map_err(refused("counter", ""))?;
            Ok(String::new())
        }
        "meter_set_rates" | "meter_array_set_rates" => {
            let one = cmd == "meter_set_rates";
            at_least(args, if one { 2 } else { 1 })?;
            let name = resolve(&sw.meter_names(), args[0], "meter")?;
            let (index, rates) = if one {
                (Some(handle(args[1], "index")?), &args[2..])
            } else {
                (None, &args[1..])
            };
            let expected = sw.meter_rate_count(&name).map_err(refused("meter", ""))?;
            if rates.len() != expected {
                return Err(InputError::RateCount {
                    expected,
                    got: rates.len(),
                }
                .into());
            }
            let rates = rates
                .iter()
                .map(|r| {
                    let (rate, burst) = r.split_once(':')?;
                    Some(MeterRate {
                        rate_per_us: rate.parse().ok()?,
                        burst: burst.parse().ok()?,
                    })
                })
                .collect::<Option<Vec<_>>>()
                .ok_or("Error while parsing rates")?;
            sw.meter_set_rates(&name, index.map(u64::from), &rates)
                .map_err(refused("meter", ""))?;
            Ok(String::new())
        }
        "meter_get_rates" => {
            let [n, i] = exactly(args)?;
            let name = resolve(&sw.meter_names(), n, "meter")?;
            let i = handle(i, "index")?;
            let rates = sw
                .meter_get_rates(&name, i as u64)
                .map_err(refused("meter", ""))?;
            Ok(rates
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    format!(
                        "{k}: info rate = {}, burst size = {}\n",
                        python_float(r.rate_per_us),
                        r.burst
                    )
                })
                .collect())
        }
        _ => Err(CliError::UnknownSyntax(line.to_string())),
    }
}

/// The act_prof_* command a deprecated table_indirect_* / table_dump_* command stands for.
fn deprecated_for(cmd: &str) -> Option<&'static str> {
    Some(match cmd {
        "table_indirect_create_member" => "act_prof_create_member",
        "table_indirect_delete_member" => "act_prof_delete_member",
        "table_indirect_modify_member" => "act_prof_modify_member",
        "table_indirect_create_group" => "act_prof_create_group",
        "table_indirect_delete_group" => "act_prof_delete_group",
        "table_indirect_add_member_to_group" => "act_prof_add_member_to_group",
        "table_indirect_remove_member_from_group" => "act_prof_remove_member_from_group",
        "table_dump_member" => "act_prof_dump_member",
        "table_dump_group" => "act_prof_dump_group",
        _ => return None,
    })
}

/// An action profile with a selector, as the group commands need.
fn selector_profile(sw: &Switch, typed: &str) -> Result<String, CliError> {
    let prof = resolve(&sw.profile_names(), typed, "action profile")?;
    if !sw
        .tables()
        .iter()
        .any(|t| t.has_selector && t.profile.as_deref() == Some(prof.as_str()))
    {
        return Err("Cannot run this command on an action profile without selector".into());
    }
    Ok(prof)
}

/// bmv2's port (or LAG) bitmap string: bit `n` set for port `n`, port 0 rightmost.
fn port_map(list: &[u32]) -> String {
    let mut sorted = list.to_vec();
    sorted.sort_unstable();
    let mut out = String::new();
    let mut next = 0;
    for p in sorted {
        out.push_str(&"0".repeat(p.saturating_sub(next) as usize));
        out.push('1');
        next = p + 1;
    }
    out.chars().rev().collect()
}

/// `<ports> [| <lags>]`: the ports and both bitmap strings. The engine has no LAGs, so a
/// non-empty LAG list is refused rather than ignored.
fn ports_and_lags(args: &[&str]) -> Result<(Vec<u32>, String, String), CliError> {
    let (ports, lags) = match args.iter().position(|a| *a == "|") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let parse = |l: &[&str]| {
        l.iter()
            .map(|p| {
                p.parse::<u32>()
                    .map_err(|_| InputError::NotAPort(p.to_string()).into())
            })
            .collect::<Result<Vec<u32>, CliError>>()
    };
    let (ports, lags) = (parse(ports)?, parse(lags)?);
    if !lags.is_empty() {
        return Err("LAGs are not supported by p4-switch's replication engine".into());
    }
    let (pm, lm) = (port_map(&ports), port_map(&lags));
    Ok((ports, pm, lm))
}

/// A float as Python's `str()` prints it (`1.0`, `0.25`, `1e-06`, `1.5e+16`).
fn python_float(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || (1e-4..1e16).contains(&a) {
        let s = format!("{v}");
        if s.contains('.') || s.contains("inf") || s.contains("NaN") {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{v:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        format!("{mant}e{sign}{digits:0>2}")
    }
}

fn resolve(names: &[String], wanted: &str, what: &'static str) -> Result<String, InputError> {
    resolve_name(names.iter().map(String::as_str), wanted, what).map(str::to_string)
}

/// bmv2's runtime CLI lookup: the full name, or the one name whose trailing dot-separated
/// components are `wanted` (`ecmp_ap` and `ingress.ecmp_ap` find `ingress.ecmp_ap`, `ap` does
/// not); a suffix shared by several names is refused, as bmv2 drops it from its lookup map.
fn resolve_name<'a>(
    names: impl IntoIterator<Item = &'a str>,
    wanted: &str,
    what: &'static str,
) -> Result<&'a str, InputError> {
    let mut hits = Vec::new();
    for name in names {
        if name == wanted {
            return Ok(name);
        }
        if name
            .strip_suffix(wanted)
            .is_some_and(|head| head.ends_with('.'))
        {
            hits.push(name);
        }
    }
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(InputError::UnknownName {
            what,
            wanted: wanted.to_string(),
        }),
        many => Err(InputError::AmbiguousName {
            what,
            wanted: wanted.to_string(),
            candidates: many.iter().map(|n| n.to_string()).collect(),
        }),
    }
}

fn table(sw: &Switch, name: &str) -> Result<TableDesc, InputError> {
    let tables = sw.tables();
    let full = resolve_name(tables.iter().map(|t| t.name.as_str()), name, "table")?.to_string();
    tables
        .into_iter()
        .find(|t| t.name == full)
        .ok_or(InputError::UnknownName {
            what: "table",
            wanted: full,
        })
}

/// An integer as Python's `int(s, 0)` reads it: decimal, `0x`, `0o`, `0b`.
fn number(s: &str, what: &'static str) -> Result<u128, ValueError> {
    let t = s.replace('_', "");
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u128::from_str_radix(h, 16)
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u128::from_str_radix(b, 2)
    } else if let Some(o) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        u128::from_str_radix(o, 8)
    } else {
        t.parse()
    };
    r.map_err(|_| ValueError::NotInteger {
        what,
        text: s.to_string(),
    })
}

/// A value for a field of `width` bits, as bmv2's CLI `parse_param` reads it.
pub fn param(s: &str, width: u32) -> Result<Vec<u8>, ValueError> {
    let n = width.div_ceil(8) as usize;
    if width == 32 {
        if let Ok(a) = s.parse::<std::net::Ipv4Addr>() {
            return Ok(a.octets().to_vec());
        }
    } else if width == 48 && s.contains(':') {
        let bytes: Result<Vec<u8>, _> = s.split(':').map(|b| u8::from_str_radix(b, 16)).collect();
        match bytes {
            Ok(b) if b.len() == 6 => return Ok(b),
            _ => return Err(ValueError::NotMac(s.to_string())),
        }
    } else if width == 128 && s.contains(':') {
        return s
            .parse::<std::net::Ipv6Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| ValueError::NotIpv6(s.to_string()));
    }
    let v = number(s, "value")?;
    if width < 128 && v >> width != 0 {
        return Err(ValueError::TooLarge {
            text: s.to_string(),
            width,
        });
    }
    Ok(v.to_be_bytes()[16 - n.min(16)..].to_vec())
}

fn key_match(kind: MatchType, width: u32, s: &str) -> Result<FieldMatch, KeyError> {
    Ok(match kind {
        MatchType::Lpm => {
            let (v, len) = s
                .split_once('/')
                .ok_or_else(|| KeyError::NotLpm(s.to_string()))?;
            let prefix_len = number(len, "prefix length")? as u32;
            if prefix_len > width {
                return Err(KeyError::PrefixTooLong {
                    text: s.to_string(),
                    width,
                });
            }
            FieldMatch::Lpm {
                value: param(v, width)?,
                prefix_len,
            }
        }
        MatchType::Ternary => {
            let (v, m) = s
                .split_once("&&&")
                .ok_or_else(|| KeyError::NotTernary(s.to_string()))?;
            FieldMatch::Ternary {
                value: param(v, width)?,
                mask: param(m, width)?,
            }
        }
        MatchType::Range => {
            let (lo, hi) = s
                .split_once("->")
                .ok_or_else(|| KeyError::NotRange(s.to_string()))?;
            FieldMatch::Range {
                low: param(lo, width)?,
                high: param(hi, width)?,
            }
        }
        MatchType::Optional => {
            if s == "*" {
                FieldMatch::Optional(None)
            } else {
                FieldMatch::Optional(Some(param(s, width)?))
            }
        }
        _ => FieldMatch::Exact(param(s, width)?),
    })
}

fn needs_priority(t: &TableDesc) -> bool {
    t.keys.iter().any(|k| {
        matches!(
            k.match_type,
            MatchType::Ternary | MatchType::Range | MatchType::Optional
        )
    })
}

/// The action `action` of `t` (called `owner` as the user typed it) and its parameters, with
/// bmv2's messages for a foreign action, a wrong count and a bad value.
fn action_args(
    t: &TableDesc,
    owner: &str,
    action: &str,
    params: &[&str],
) -> Result<(String, Vec<Vec<u8>>), CliError> {
    let a = resolve_name(t.actions.iter().map(|a| a.name.as_str()), action, "action")
        .ok()
        .and_then(|full| t.actions.iter().find(|a| a.name == full))
        .ok_or_else(|| InputError::NoSuchAction {
            table: owner.to_string(),
            action: action.to_string(),
        })?;
    if params.len() != a.params.len() {
        return Err(InputError::ParamCount {
            action: a.name.clone(),
            needs: a.params.len(),
        }
        .into());
    }
    let data = a
        .params
        .iter()
        .zip(params)
        .map(|((_, w), s)| {
            param(s, *w).map_err(|problem| CliError::RuntimeData {
                text: s.to_string(),
                problem,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((a.name.clone(), data))
}

/// The table's match type as bmv2's JSON gives it and its CLI prints it: the "widest" kind
/// among the keys (range, then ternary, then lpm, else exact).
fn table_match_type(t: &TableDesc) -> &'static str {
    let has = |m: &[MatchType]| t.keys.iter().any(|k| m.contains(&k.match_type));
    if has(&[MatchType::Range]) {
        "range"
    } else if has(&[MatchType::Ternary, MatchType::Optional]) {
        "ternary"
    } else if has(&[MatchType::Lpm]) {
        "lpm"
    } else {
        "exact"
    }
}

/// Bytes as bmv2's CLI echoes what it sends: `0a:00:00:01`.
fn colon_hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A match field as bmv2's CLI echoes it on `table_add` (`EXACT-0a:00`, `LPM-0a:00/8`).
fn echo_match(m: &FieldMatch) -> String {
    match m {
        FieldMatch::Exact(v) => format!("EXACT-{}", colon_hex(v)),
        FieldMatch::Lpm { value, prefix_len } => format!("LPM-{}/{prefix_len}", colon_hex(value)),
        FieldMatch::Ternary { value, mask } => {
            format!("TERNARY-{} &&& {}", colon_hex(value), colon_hex(mask))
        }
        FieldMatch::Range { low, high } => {
            format!("RANGE-{} -> {}", colon_hex(low), colon_hex(high))
        }
        FieldMatch::Optional(v) => {
            format!("OPTIONAL-{}", v.as_deref().map_or(String::new(), colon_hex))
        }
    }
}

fn echo_data(data: &[Vec<u8>]) -> String {
    data.iter()
        .map(|d| colon_hex(d))
        .collect::<Vec<_>>()
        .join("\t")
}

fn table_add(sw: &mut Switch, keys: &mut BTreeMap<(String, u64), CliKey>, args: &[&str]) -> Out {
    at_least(args, 3)?;
    let (tn, a) = (args[0], args[1]);
    let t = table(sw, tn)?;
    let (typed, priority, params) = entry_key(&t, &args[2..])?;
    let (action, data) = action_args(&t, tn, a, params)?;
    let mut matches = typed.clone();
    sw.canonicalize_like_bmv2(&t.name, &mut matches)
        .map_err(refused("table", ""))?;
    let said = format!(
        "Adding entry to {} match table {tn}\n{:<20} {}\n{:<20} {a}\n{:<20} {}\n",
        table_match_type(&t),
        "match key:",
        typed.iter().map(echo_match).collect::<Vec<_>>().join("\t"),
        "action:",
        "runtime data:",
        echo_data(&data),
    );
    let h = sw
        .table_add(&t.name, matches.clone(), priority, &action, &data)
        .map_err(refused("table", &said))?;
    keys.insert((t.name, h.0 as u64), (typed, matches));
    Ok(format!("{said}Entry has been added with handle {}\n", h.0))
}

type Key<'a> = (Vec<FieldMatch>, Option<i32>, &'a [&'a str]);

/// `<match fields> => <rest> [priority]`: the matches, the priority (P4Runtime order) when the
/// table needs one, and what follows `=>` without it.
fn entry_key<'a>(t: &TableDesc, rest: &'a [&'a str]) -> Result<Key<'a>, InputError> {
    let arrow = rest.iter().position(|w| *w == "=>");
    let (keys, mut params) = match arrow {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    if keys.len() != t.keys.len() {
        return Err(InputError::KeyCount {
            table: t.name.clone(),
            needs: t.keys.len(),
            got: keys.len(),
        });
    }
    let priority = if needs_priority(t) {
        let (last, before) = params
            .split_last()
            .ok_or_else(|| InputError::NoPriority(t.name.clone()))?;
        params = before;
        let p = number(last, "priority")?;
        let p = i32::try_from(p).map_err(|_| InputError::PriorityRange(p))?;
        Some(priority_from_bmv2(p).map_err(InputError::Priority)?)
    } else {
        None
    };
    let matches = t
        .keys
        .iter()
        .zip(keys)
        .map(|(k, s)| {
            key_match(k.match_type, k.width, s).map_err(|problem| InputError::Key {
                field: k.name.clone(),
                problem,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((matches, priority, params))
}

/// An action for an action-profile member: any table's action, by full name or unique suffix.
fn profile_action(
    sw: &Switch,
    prof: &str,
    typed: &str,
    action: &str,
    params: &[&str],
) -> Result<(String, Vec<Vec<u8>>), CliError> {
    let tables = sw.tables();
    let owner = tables
        .iter()
        .filter(|t| t.profile.as_deref() == Some(prof))
        .find(|t| resolve_name(t.actions.iter().map(|a| a.name.as_str()), action, "action").is_ok())
        .ok_or_else(|| InputError::NoProfileAction {
            profile: typed.to_string(),
            action: action.to_string(),
        })?;
    action_args(owner, typed, action, params)
}

fn table_set_default(sw: &mut Switch, args: &[&str]) -> Out {
    at_least(args, 2)?;
    let (tn, a) = (args[0], args[1]);
    let t = table(sw, tn)?;
    let (action, data) = action_args(&t, tn, a, &args[2..])?;
    let said = format!(
        "Setting default action of {tn}\n{:<20} {a}\n{:<20} {}\n",
        "action:",
        "runtime data:",
        echo_data(&data)
    );
    sw.table_set_default(&t.name, &action, &data)
        .map_err(refused("table", &said))?;
    Ok(said)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One entry as bmv2's `table_dump_entry` prints it.
fn dump_entry(keys: &BTreeMap<(String, u64), CliKey>, t: &TableDesc, e: &EntryDesc) -> String {
    let matches = match keys.get(&(t.name.clone(), e.handle.0 as u64)) {
        Some((typed, stored)) if *stored == e.matches => typed,
        _ => &e.matches,
    };
    let w = t
        .keys
        .iter()
        .map(|k| k.target_name.len())
        .max()
        .unwrap_or(0)
        .max(20);
    let mut out = format!("Dumping entry 0x{:x}\nMatch key:\n", e.handle.0);
    for (k, m) in t.keys.iter().zip(matches) {
        let (kind, v) = match m {
            FieldMatch::Exact(v) if k.match_type == MatchType::Valid => (
                "VALID",
                if v.iter().any(|b| *b != 0) {
                    "01"
                } else {
                    "00"
                }
                .to_string(),
            ),
            FieldMatch::Exact(v) => ("EXACT", hex(v)),
            FieldMatch::Lpm { value, prefix_len } => {
                ("LPM", format!("{}/{prefix_len}", hex(value)))
            }
            FieldMatch::Ternary { value, mask } => {
                ("TERNARY", format!("{} &&& {}", hex(value), hex(mask)))
            }
            FieldMatch::Range { low, high } => ("RANGE", format!("{} -> {}", hex(low), hex(high))),
            FieldMatch::Optional(v) => ("OPTIONAL", v.as_deref().map_or("*".into(), hex)),
        };
        out.push_str(&format!("* {:<w$}: {kind:<10}{v}\n", k.target_name));
    }
    if let Some(p) = e.priority {
        out.push_str(&format!("Priority: {}\n", i32::MAX - p));
    }
    out.push_str(&describe(&e.action));
    out
}

fn dump_member(m: u32, a: &EntryAction) -> String {
    format!("Dumping member {m}\n{}", describe(a))
}

fn dump_group(g: u32, members: &[(u32, u32)]) -> String {
    format!(
        "Dumping group {g}\nMembers: [{}]\n",
        members
            .iter()
            .map(|(m, _)| m.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// bmv2's `act_prof_dump` (also the middle of `table_dump` for indirect tables).
fn dump_profile(sw: &Switch, prof: &str, with_selector: bool) -> Out {
    let mut out = String::from("==========\nMEMBERS\n");
    for (m, a) in sw.profile_members(prof).map_err(refused("table", ""))? {
        out.push_str("**********\n");
        out.push_str(&dump_member(m, &a));
    }
    if with_selector {
        out.push_str("==========\nGROUPS\n");
        for (g, ms) in sw.profile_groups(prof).map_err(refused("table", ""))? {
            out.push_str("**********\n");
            out.push_str(&dump_group(g, &ms));
        }
    }
    Ok(out)
}

fn table_dump(sw: &Switch, keys: &BTreeMap<(String, u64), CliKey>, t: &TableDesc) -> Out {
    let mut out = String::from("==========\nTABLE ENTRIES\n");
    for e in sw.table_entries(&t.name).map_err(refused("table", ""))? {
        out.push_str("**********\n");
        out.push_str(&dump_entry(keys, t, &e));
    }
    if let Some(prof) = &t.profile {
        out.push_str(&dump_profile(sw, prof, t.has_selector)?);
    }
    out.push_str("==========\nDumping default entry\n");
    match sw.table_default(&t.name).map_err(refused("table", ""))? {
        Some(d) => out.push_str(&describe(&d)),
        None => out.push_str("EMPTY\n"),
    }
    out.push_str("==========\n");
    Ok(out)
}

/// An entry's action line as bmv2's dumps print it. bmv2 hands action data back as the
/// value's shortest big-endian bytes (one byte for 0), not at the parameter's width.
fn describe(a: &EntryAction) -> String {
    let shortest = |b: &[u8]| {
        let first = b
            .iter()
            .position(|x| *x != 0)
            .unwrap_or(b.len().saturating_sub(1));
        hex(&b[first..])
    };
    match a {
        EntryAction::Action { name, args } => format!(
            "Action entry: {name} - {}\n",
            args.iter()
                .map(|a| shortest(a))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        EntryAction::Member(m) => format!("Index: member({m})\n"),
        EntryAction::Group(g) => format!("Index: group({g})\n"),
    }
}

/// bmv2's `set_queue_depth <nb_pkts>` and `set_queue_rate <rate_pps>`, each with an optional
/// `[<egress_port> [<priority>]]`: every queue of every port, every queue of one port, or the
/// queue of one priority (queue = priority, as `--priority-queues` maps them). They set the
/// traffic manager's `limit_packets` and `rate_pps` for those queues.
fn set_queue(core: &mut Core, now_ns: u64, cmd: &str, args: &[&str]) -> Result<String, InputError> {
    let depth = cmd == "set_queue_depth";
    let what = if depth { "nb_pkts" } else { "rate_pps" };
    let (value, port, priority) = match args {
        [v] => (v, None, None),
        [v, p] => (v, Some(p), None),
        [v, p, q] => (v, Some(p), Some(q)),
        _ => {
            return Err(QueueError::Usage {
                cmd: cmd.to_string(),
                what,
            }
            .into())
        }
    };
    let value = number(value, what)?;
    let port = port.map(|p| number(p, "egress port")).transpose()?;
    let queues: Vec<u8> = match priority {
        None => (0..switch_tm::QUEUES_PER_PORT as u8).collect(),
        Some(q) => {
            let q = number(q, "priority")?;
            let n = core.engine_config().priority_queues;
            if q >= n as u128 {
                return Err(QueueError::Priority {
                    cmd: cmd.to_string(),
                    priority: q,
                    queues: n,
                }
                .into());
            }
            vec![q as u8]
        }
    };
    let tm = core.tm().ok_or_else(|| QueueError::NoTm(cmd.to_string()))?;
    let ports: Vec<u32> = match port {
        Some(p) => vec![u32::try_from(p).map_err(|_| QueueError::PortRange(p))?],
        None => tm.port_numbers().collect(),
    };
    for p in ports {
        let mut cfg = core
            .tm()
            .and_then(|tm| tm.port_config(p).cloned())
            .ok_or_else(|| QueueError::NotConfigured {
                cmd: cmd.to_string(),
                port: p,
            })?;
        for &q in &queues {
            let c = match cfg.queues.iter().position(|c| c.queue == q) {
                Some(i) => &mut cfg.queues[i],
                None => {
                    let c = serde_json::from_value(serde_json::json!({ "queue": q }))
                        .map_err(QueueError::NewQueue)?;
                    cfg.queues.push(c);
                    let last = cfg.queues.len() - 1;
                    &mut cfg.queues[last]
                }
            };
            if depth {
                c.limit_packets =
                    Some(u32::try_from(value).map_err(|_| QueueError::DepthRange(value))?);
            } else {
                c.rate_pps = Some(u64::try_from(value).map_err(|_| QueueError::RateRange(value))?);
            }
        }
        core.configure_port(now_ns, cfg)
            .map_err(|source| QueueError::Port {
                cmd: cmd.to_string(),
                port: p,
                source,
            })?;
    }
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::resolve_name;

    #[test]
    fn names_resolve_by_full_name_or_unique_dot_separated_suffix() {
        let names = [
            "ingress.ecmp_ap",
            "ingress.acl.drop",
            "egress.acl.drop",
            "drop",
        ];
        let r = |w: &str| resolve_name(names, w, "x").map_err(|e| e.to_string());
        assert_eq!(r("ecmp_ap"), Ok("ingress.ecmp_ap"));
        assert_eq!(r("ingress.ecmp_ap"), Ok("ingress.ecmp_ap"));
        assert_eq!(r("ingress.acl.drop"), Ok("ingress.acl.drop"));
        // The full name wins over suffixes of other names.
        assert_eq!(r("drop"), Ok("drop"));
        assert_eq!(r("ap"), Err("Invalid x name (ap)".to_string()));
        assert_eq!(
            r("acl.drop"),
            Err("x name 'acl.drop' is ambiguous: ingress.acl.drop, egress.acl.drop".to_string())
        );
    }
}
