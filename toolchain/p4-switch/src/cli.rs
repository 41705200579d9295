//! bmv2 runtime CLI commands (`simple_switch_CLI`), run by the switch on its engine. Names are
//! resolved as bmv2 does (full name or unique dot-separated suffix); values are parsed as bmv2's CLI does
//! (decimal, `0x` hex, IPv4 for 32-bit, MAC for 48-bit, IPv6 for 128-bit fields; `&&&` masks,
//! `/len` prefixes, `->` ranges; priority last, lower number wins).

use crate::core::Core;
use p4_bmv2_json::MatchType;
use switch_engine::{EntryAction, FieldMatch, MeterRate, MirrorSession, Switch, TableDesc};
use switch_tables::{priority_from_bmv2, EntryHandle};

/// Runs one command line; `Ok` text is what bmv2's CLI prints, `Err` an error message.
pub fn execute(core: &mut Core, now_ns: u64, line: &str) -> Result<String, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, args)) = words.split_first() else {
        return Ok(String::new());
    };
    match cmd {
        "set_queue_depth" | "set_queue_rate" => return set_queue(core, now_ns, cmd, args),
        _ => {}
    }
    let sw = core
        .switch
        .as_mut()
        .ok_or("no pipeline loaded (start with a JSON file or push one over P4Runtime)")?;
    match cmd {
        "table_add" => table_add(sw, args),
        "table_set_default" => table_set_default(sw, args),
        "table_delete" => {
            let [t, h] = args else {
                return Err(usage("table_delete <table name> <entry handle>"));
            };
            let t = table(sw, t)?;
            let h = number(h, "entry handle")?;
            sw.table_delete(&t.name, EntryHandle(h as _))
                .map_err(|e| format!("Invalid table operation ({:?}): {e}", e.code))?;
            Ok(format!("Deleting entry {h} from {}\n", t.name))
        }
        "table_modify" => {
            let [t, a, h, params @ ..] = args else {
                return Err(usage(
                    "table_modify <table name> <action name> <entry handle> [action parameters]",
                ));
            };
            let t = table(sw, t)?;
            let (action, data) = action_args(&t, a, params)?;
            let h = number(h, "entry handle")?;
            sw.table_modify(&t.name, EntryHandle(h as _), &action, &data)
                .map_err(|e| format!("Invalid table operation ({:?}): {e}", e.code))?;
            Ok(format!("Modifying entry {h} for {} table\n", t.name))
        }
        "table_clear" => {
            let [t] = args else {
                return Err(usage("table_clear <table name>"));
            };
            let t = table(sw, t)?;
            let entries = sw.table_entries(&t.name).map_err(|e| e.to_string())?;
            for e in entries {
                sw.table_delete(&t.name, e.handle)
                    .map_err(|e| e.to_string())?;
            }
            Ok(String::new())
        }
        "table_dump" => {
            let [t] = args else {
                return Err(usage("table_dump <table name>"));
            };
            let t = table(sw, t)?;
            table_dump(sw, &t)
        }
        "act_prof_create_member" => {
            let [prof, a, params @ ..] = args else {
                return Err(usage(
                    "act_prof_create_member <action profile name> <action_name> [action parameters]",
                ));
            };
            let prof = resolve(&sw.profile_names(), prof, "action profile")?;
            let (action, data) = profile_action(sw, a, params)?;
            let m = sw
                .profile_add_member(&prof, &action, &data)
                .map_err(|e| format!("Invalid action profile operation ({:?}): {e}", e.code))?;
            Ok(format!("Member has been created with handle {m}\n"))
        }
        "act_prof_create_group" => {
            let [prof] = args else {
                return Err(usage("act_prof_create_group <action profile name>"));
            };
            let prof = resolve(&sw.profile_names(), prof, "action profile")?;
            let next = core.cli_groups.keys().filter(|(p, _)| *p == prof).count() as u32;
            let sw = core.switch.as_mut().ok_or("no pipeline loaded")?;
            sw.profile_set_group(&prof, next, &[])
                .map_err(|e| format!("Invalid action profile operation ({:?}): {e}", e.code))?;
            core.cli_groups.insert((prof, next), Vec::new());
            Ok(format!("Group has been created with handle {next}\n"))
        }
        "act_prof_add_member_to_group" => {
            let [prof, m, g] = args else {
                return Err(usage(
                    "act_prof_add_member_to_group <action profile name> <member handle> <group handle>",
                ));
            };
            let prof = resolve(&sw.profile_names(), prof, "action profile")?;
            let (m, g) = (
                number(m, "member handle")? as u32,
                number(g, "group handle")? as u32,
            );
            let key = (prof.clone(), g);
            let mut members = core.cli_groups.get(&key).cloned().ok_or_else(|| {
                format!("no group {g} created with act_prof_create_group in {prof}")
            })?;
            members.push((m, 1));
            let sw = core.switch.as_mut().ok_or("no pipeline loaded")?;
            sw.profile_set_group(&prof, g, &members)
                .map_err(|e| format!("Invalid action profile operation ({:?}): {e}", e.code))?;
            core.cli_groups.insert(key, members);
            Ok(String::new())
        }
        "table_indirect_add" | "table_indirect_add_with_group" => {
            let [t, rest @ ..] = args else {
                return Err(usage(&format!(
                    "{cmd} <table name> <match fields> => <handle> [priority]"
                )));
            };
            let t = table(sw, t)?;
            let (matches, priority, params) = entry_key(&t, rest)?;
            let [h] = params else {
                return Err(format!("{cmd}: give one handle after =>"));
            };
            let h = number(h, "handle")? as u32;
            let r = if cmd == "table_indirect_add" {
                sw.table_add_member_entry(&t.name, matches, priority, h)
            } else {
                sw.table_add_group_entry(&t.name, matches, priority, h)
            };
            let e = r.map_err(|e| format!("Invalid table operation ({:?}): {e}", e.code))?;
            Ok(format!("Entry has been added with handle {}\n", e.0))
        }
        "set_crc16_parameters" | "set_crc32_parameters" => {
            let [name, poly, init, xor, refin, refout] = args else {
                return Err(usage(&format!(
                    "{cmd} <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>"
                )));
            };
            let flag = |s: &str| match s.to_ascii_lowercase().as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(format!("'{s}': expected true or false")),
            };
            let params = switch_engine::CrcParams {
                polynomial: number(poly, "polynomial")? as u64,
                initial_remainder: number(init, "initial remainder")? as u64,
                final_xor_value: number(xor, "final xor value")? as u64,
                data_reflected: flag(refin)?,
                remainder_reflected: flag(refout)?,
            };
            let name = resolve(&sw.calculation_names(), name, "calculation")?;
            sw.set_crc_parameters(&name, params)
                .map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        "mirroring_add" => {
            let [s, p] = args else {
                return Err(usage("mirroring_add <mirror_id> <egress_port>"));
            };
            let session = number(s, "mirror id")? as u32;
            let port = number(p, "egress port")? as u32;
            sw.mirroring_add(
                session,
                MirrorSession {
                    port: Some(port),
                    mgrp: None,
                },
            )
            .map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        "mc_mgrp_create" => {
            let [g] = args else {
                return Err(usage("mc_mgrp_create <group id>"));
            };
            let g = number(g, "group id")? as u32;
            sw.mc_mgrp_create(g).map_err(|e| e.to_string())?;
            Ok(format!("Creating multicast group {g}\n"))
        }
        "mc_node_create" => {
            let [rid, ports @ ..] = args else {
                return Err(usage("mc_node_create <rid> <space-separated port list>"));
            };
            let rid = number(rid, "rid")? as u32;
            let ports = ports
                .iter()
                .take_while(|p| **p != "|")
                .map(|p| number(p, "port").map(|n| n as u32))
                .collect::<Result<Vec<u32>, String>>()?;
            let h = sw.mc_node_create(rid, &ports);
            Ok(format!("Creating node with rid {rid} , port list {ports:?}\nnode was created with handle {h}\n"))
        }
        "mc_node_associate" => {
            let [g, h] = args else {
                return Err(usage("mc_node_associate <group handle> <node handle>"));
            };
            let (g, h) = (number(g, "group")? as u32, number(h, "node handle")? as u32);
            sw.mc_node_associate(g, h).map_err(|e| e.to_string())?;
            Ok(format!("Associating node {h} to multicast group {g}\n"))
        }
        "register_read" => {
            let (name, index) = match args {
                [n] => (*n, None),
                [n, i] => (*n, Some(number(i, "index")?)),
                _ => return Err(usage("register_read <name> [index]")),
            };
            let name = resolve(&sw.register_names(), name, "register")?;
            match index {
                Some(i) => {
                    let v = sw
                        .register_read(&name, i as u64)
                        .map_err(|e| e.to_string())?;
                    Ok(format!("{name}[{i}]= {v}\n"))
                }
                None => {
                    let mut vals = Vec::new();
                    let mut i = 0u64;
                    while let Ok(v) = sw.register_read(&name, i) {
                        vals.push(v.to_string());
                        i += 1;
                    }
                    Ok(format!("{name}= {}\n", vals.join(", ")))
                }
            }
        }
        "register_write" => {
            let [n, i, v] = args else {
                return Err(usage("register_write <name> <index> <value>"));
            };
            let name = resolve(&sw.register_names(), n, "register")?;
            let (i, v) = (number(i, "index")?, number(v, "value")?);
            sw.register_write(&name, i as u64, v)
                .map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        "register_reset" => {
            let [n] = args else {
                return Err(usage("register_reset <name>"));
            };
            let name = resolve(&sw.register_names(), n, "register")?;
            sw.register_reset(&name).map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        "counter_read" => {
            let [n, i] = args else {
                return Err(usage("counter_read <name> <index>"));
            };
            let name = resolve(&sw.counter_names(), n, "counter")?;
            let i = number(i, "index")? as u64;
            let v = sw.counter_read(&name, i).map_err(|e| e.to_string())?;
            Ok(format!(
                "{name}[{i}]=  BmCounterValue(packets={}, bytes={})\n",
                v.packets, v.bytes
            ))
        }
        "counter_reset" => {
            let [n] = args else {
                return Err(usage("counter_reset <name>"));
            };
            let name = resolve(&sw.counter_names(), n, "counter")?;
            sw.counter_reset(&name).map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        "meter_set_rates" => {
            let [n, i, rates @ ..] = args else {
                return Err(usage(
                    "meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2>",
                ));
            };
            let name = resolve(&sw.meter_names(), n, "meter")?;
            let i = number(i, "index")? as u64;
            let rates = rates
                .iter()
                .map(|r| {
                    let (rate, burst) = r
                        .split_once(':')
                        .ok_or_else(|| format!("rate '{r}': expected <rate>:<burst>"))?;
                    Ok(MeterRate {
                        rate_per_us: rate
                            .parse()
                            .map_err(|_| format!("rate '{rate}' is not a number"))?,
                        burst: number(burst, "burst")? as u64,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            sw.meter_set_rates(&name, Some(i), &rates)
                .map_err(|e| e.to_string())?;
            Ok(String::new())
        }
        _ => Err(format!("*** Unknown syntax: {line}")),
    }
}

fn usage(u: &str) -> String {
    format!("usage: {u}")
}

fn resolve(names: &[String], wanted: &str, what: &str) -> Result<String, String> {
    resolve_name(names.iter().map(String::as_str), wanted, what).map(str::to_string)
}

/// bmv2's runtime CLI lookup: the full name, or the one name whose trailing dot-separated
/// components are `wanted` (`ecmp_ap` and `ingress.ecmp_ap` find `ingress.ecmp_ap`, `ap` does
/// not); a suffix shared by several names is refused, as bmv2 drops it from its lookup map.
fn resolve_name<'a>(
    names: impl IntoIterator<Item = &'a str>,
    wanted: &str,
    what: &str,
) -> Result<&'a str, String> {
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
        [] => Err(format!("no {what} named '{wanted}'")),
        many => Err(format!(
            "{what} name '{wanted}' is ambiguous: {}",
            many.join(", ")
        )),
    }
}

fn table(sw: &Switch, name: &str) -> Result<TableDesc, String> {
    let tables = sw.tables();
    let full = resolve_name(tables.iter().map(|t| t.name.as_str()), name, "table")?.to_string();
    tables
        .into_iter()
        .find(|t| t.name == full)
        .ok_or_else(|| format!("no table named '{name}'"))
}

/// An integer as Python's `int(s, 0)` reads it: decimal, `0x`, `0o`, `0b`.
fn number(s: &str, what: &str) -> Result<u128, String> {
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
    r.map_err(|_| {
        format!("{what} '{s}': invalid input, could not cast to integer, try in hex with 0x prefix")
    })
}

/// A value for a field of `width` bits, as bmv2's CLI `parse_param` reads it.
pub fn param(s: &str, width: u32) -> Result<Vec<u8>, String> {
    let n = width.div_ceil(8) as usize;
    if width == 32 {
        if let Ok(a) = s.parse::<std::net::Ipv4Addr>() {
            return Ok(a.octets().to_vec());
        }
    } else if width == 48 && s.contains(':') {
        let bytes: Result<Vec<u8>, _> = s.split(':').map(|b| u8::from_str_radix(b, 16)).collect();
        match bytes {
            Ok(b) if b.len() == 6 => return Ok(b),
            _ => return Err(format!("'{s}' is not a MAC address")),
        }
    } else if width == 128 && s.contains(':') {
        return s
            .parse::<std::net::Ipv6Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| format!("'{s}' is not an IPv6 address"));
    }
    let v = number(s, "value")?;
    if width < 128 && v >> width != 0 {
        return Err(format!(
            "'{s}': input is too large for the {width}-bit field"
        ));
    }
    Ok(v.to_be_bytes()[16 - n.min(16)..].to_vec())
}

fn key_match(kind: MatchType, width: u32, s: &str) -> Result<FieldMatch, String> {
    Ok(match kind {
        MatchType::Lpm => {
            let (v, len) = s
                .split_once('/')
                .ok_or_else(|| format!("'{s}': an lpm key is written value/prefix_length"))?;
            let prefix_len = number(len, "prefix length")? as u32;
            if prefix_len > width {
                return Err(format!(
                    "'{s}': prefix length above the field's {width} bits"
                ));
            }
            FieldMatch::Lpm {
                value: param(v, width)?,
                prefix_len,
            }
        }
        MatchType::Ternary => {
            let (v, m) = s
                .split_once("&&&")
                .ok_or_else(|| format!("'{s}': a ternary key is written value&&&mask"))?;
            FieldMatch::Ternary {
                value: param(v, width)?,
                mask: param(m, width)?,
            }
        }
        MatchType::Range => {
            let (lo, hi) = s
                .split_once("->")
                .ok_or_else(|| format!("'{s}': a range key is written low->high"))?;
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

fn action_args(
    t: &TableDesc,
    action: &str,
    params: &[&str],
) -> Result<(String, Vec<Vec<u8>>), String> {
    let full = resolve_name(t.actions.iter().map(|a| a.name.as_str()), action, "action")?;
    let a = t
        .actions
        .iter()
        .find(|a| a.name == full)
        .ok_or_else(|| format!("no action named '{action}'"))?;
    if params.len() != a.params.len() {
        return Err(format!(
            "action {} needs {} parameters, got {}",
            a.name,
            a.params.len(),
            params.len()
        ));
    }
    let data = a
        .params
        .iter()
        .zip(params)
        .map(|((name, w), s)| param(s, *w).map_err(|e| format!("parameter {name}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((a.name.clone(), data))
}

fn table_add(sw: &mut Switch, args: &[&str]) -> Result<String, String> {
    let usage_text =
        "table_add <table name> <action name> <match fields> => <action parameters> [priority]";
    let [t, a, rest @ ..] = args else {
        return Err(usage(usage_text));
    };
    let t = table(sw, t)?;
    let (matches, priority, params) = entry_key(&t, rest)?;
    let (action, data) = action_args(&t, a, params)?;
    let h = sw
        .table_add(&t.name, matches, priority, &action, &data)
        .map_err(|e| format!("Invalid table operation ({:?}): {e}", e.code))?;
    Ok(format!(
        "Adding entry to {} table {}\naction:              {action}\nEntry has been added with handle {}\n",
        t.keys
            .first()
            .map_or("exact".to_string(), |k| format!("{:?}", k.match_type).to_lowercase()),
        t.name,
        h.0
    ))
}

type Key<'a> = (Vec<FieldMatch>, Option<i32>, &'a [&'a str]);

/// `<match fields> => <rest> [priority]`: the matches, the priority (P4Runtime order) when the
/// table needs one, and what follows `=>` without it.
fn entry_key<'a>(t: &TableDesc, rest: &'a [&'a str]) -> Result<Key<'a>, String> {
    let arrow = rest.iter().position(|w| *w == "=>");
    let (keys, mut params) = match arrow {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    if keys.len() != t.keys.len() {
        return Err(format!(
            "table {} needs {} match fields, got {}",
            t.name,
            t.keys.len(),
            keys.len()
        ));
    }
    let priority = if needs_priority(t) {
        let (last, before) = params.split_last().ok_or_else(|| {
            format!(
                "table {} needs a priority after the action parameters",
                t.name
            )
        })?;
        params = before;
        let p = number(last, "priority")?;
        let p = i32::try_from(p).map_err(|_| format!("priority {p} out of range"))?;
        Some(priority_from_bmv2(p).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let matches = t
        .keys
        .iter()
        .zip(keys)
        .map(|(k, s)| key_match(k.match_type, k.width, s).map_err(|e| format!("{}: {e}", k.name)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((matches, priority, params))
}

/// An action for an action-profile member: any table's action, by full name or unique suffix.
fn profile_action(
    sw: &Switch,
    action: &str,
    params: &[&str],
) -> Result<(String, Vec<Vec<u8>>), String> {
    let tables = sw.tables();
    let owner = tables
        .iter()
        .filter(|t| t.has_profile)
        .find(|t| resolve_name(t.actions.iter().map(|a| a.name.as_str()), action, "action").is_ok())
        .ok_or_else(|| format!("no action named '{action}' in a table with an action profile"))?;
    action_args(owner, action, params)
}

fn table_set_default(sw: &mut Switch, args: &[&str]) -> Result<String, String> {
    let [t, a, params @ ..] = args else {
        return Err(usage(
            "table_set_default <table name> <action name> <action parameters>",
        ));
    };
    let t = table(sw, t)?;
    let (action, data) = action_args(&t, a, params)?;
    sw.table_set_default(&t.name, &action, &data)
        .map_err(|e| format!("Invalid table operation ({:?}): {e}", e.code))?;
    Ok(format!(
        "Setting default action of {}\naction:              {action}\n",
        t.name
    ))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn table_dump(sw: &Switch, t: &TableDesc) -> Result<String, String> {
    let mut out = String::from("==========\nTABLE ENTRIES\n");
    for e in sw.table_entries(&t.name).map_err(|e| e.to_string())? {
        out.push_str(&format!(
            "**********\nDumping entry 0x{:x}\nMatch key:\n",
            e.handle.0
        ));
        for (k, m) in t.keys.iter().zip(&e.matches) {
            let v = match m {
                FieldMatch::Exact(v) => format!("EXACT     {}", hex(v)),
                FieldMatch::Lpm { value, prefix_len } => {
                    format!("LPM       {}/{prefix_len}", hex(value))
                }
                FieldMatch::Ternary { value, mask } => {
                    format!("TERNARY   {} &&& {}", hex(value), hex(mask))
                }
                FieldMatch::Range { low, high } => {
                    format!("RANGE     {} -> {}", hex(low), hex(high))
                }
                FieldMatch::Optional(v) => {
                    format!("OPTIONAL  {}", v.as_deref().map_or("*".into(), hex))
                }
            };
            out.push_str(&format!("* {:<20}: {v}\n", k.name));
        }
        if let Some(p) = e.priority {
            out.push_str(&format!("Priority: {}\n", i32::MAX - p));
        }
        out.push_str(&format!("Action entry: {}\n", describe(&e.action)));
    }
    out.push_str("==========\nDefault entry:\n");
    if let Some(d) = sw.table_default(&t.name).map_err(|e| e.to_string())? {
        out.push_str(&format!("Action entry: {}\n", describe(&d)));
    }
    out.push_str("==========\n");
    Ok(out)
}

fn describe(a: &EntryAction) -> String {
    match a {
        EntryAction::Action { name, args } => format!(
            "{name} - {}",
            args.iter().map(|a| hex(a)).collect::<Vec<_>>().join(", ")
        ),
        EntryAction::Member(m) => format!("member {m}"),
        EntryAction::Group(g) => format!("group {g}"),
    }
}

/// bmv2's `set_queue_depth <nb_pkts>` and `set_queue_rate <rate_pps>`, each with an optional
/// `[<egress_port> [<priority>]]`: every queue of every port, every queue of one port, or the
/// queue of one priority (queue = priority, as `--priority-queues` maps them). They set the
/// traffic manager's `limit_packets` and `rate_pps` for those queues.
fn set_queue(core: &mut Core, now_ns: u64, cmd: &str, args: &[&str]) -> Result<String, String> {
    let depth = cmd == "set_queue_depth";
    let what = if depth { "nb_pkts" } else { "rate_pps" };
    let (value, port, priority) = match args {
        [v] => (v, None, None),
        [v, p] => (v, Some(p), None),
        [v, p, q] => (v, Some(p), Some(q)),
        _ => {
            return Err(usage(&format!(
                "{cmd} <{what}> [<egress_port> [<priority>]]"
            )))
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
                return Err(format!(
                    "{cmd}: priority {q} out of range: the switch has {n} priority queue(s) \
                     (--priority-queues)"
                ));
            }
            vec![q as u8]
        }
    };
    let tm = core
        .tm()
        .ok_or_else(|| format!("{cmd}: no traffic manager (start with --port-config FILE)"))?;
    let ports: Vec<u32> = match port {
        Some(p) => vec![u32::try_from(p).map_err(|_| format!("port {p} out of range"))?],
        None => tm.port_numbers().collect(),
    };
    for p in ports {
        let mut cfg = core
            .tm()
            .and_then(|tm| tm.port_config(p).cloned())
            .ok_or_else(|| format!("{cmd}: port {p} is not configured"))?;
        for &q in &queues {
            let c = match cfg.queues.iter().position(|c| c.queue == q) {
                Some(i) => &mut cfg.queues[i],
                None => {
                    let c = serde_json::from_value(serde_json::json!({ "queue": q }))
                        .map_err(|e| e.to_string())?;
                    cfg.queues.push(c);
                    cfg.queues.last_mut().ok_or("queue list")?
                }
            };
            if depth {
                c.limit_packets =
                    Some(u32::try_from(value).map_err(|_| format!("depth {value} out of range"))?);
            } else {
                c.rate_pps =
                    Some(u64::try_from(value).map_err(|_| format!("rate {value} out of range"))?);
            }
        }
        core.configure_port(now_ns, cfg)
            .map_err(|e| format!("{cmd}: port {p}: {e}"))?;
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
        let r = |w: &str| resolve_name(names, w, "x");
        assert_eq!(r("ecmp_ap"), Ok("ingress.ecmp_ap"));
        assert_eq!(r("ingress.ecmp_ap"), Ok("ingress.ecmp_ap"));
        assert_eq!(r("ingress.acl.drop"), Ok("ingress.acl.drop"));
        // The full name wins over suffixes of other names.
        assert_eq!(r("drop"), Ok("drop"));
        assert_eq!(r("ap"), Err("no x named 'ap'".to_string()));
        assert_eq!(
            r("acl.drop"),
            Err("x name 'acl.drop' is ambiguous: ingress.acl.drop, egress.acl.drop".to_string())
        );
    }
}
