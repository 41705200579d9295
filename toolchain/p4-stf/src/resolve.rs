//! Turning STF names and literals into what a target installs, following p4c's bmv2 runner
//! (`backends/bmv2/bmv2stf.py`): name lookup by full name or unique suffix, key-field aliases,
//! wildcard defaults for keys left out, masks and prefixes derived from the digits written.

use crate::ast::{ActionCall, KeyMatch, KeyValue, Number};
use crate::target::{ActionInfo, Entry, FieldMatch, KeyInfo, MatchKind, NameError, TableInfo};
use crate::value::Value;

/// Why an STF `add` or `setdefault` does not resolve against the program; the runner reports it
/// at the statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}")]
    Name(#[from] NameError),
    #[error("no key field '{written}'; the keys are: {}", .keys.join(", "))]
    NoKeyField { written: String, keys: Vec<String> },
    #[error("key field '{written}' is ambiguous: {}", .candidates.join(", "))]
    AmbiguousKeyField {
        written: String,
        candidates: Vec<String>,
    },
    #[error("key field {0} is given twice")]
    KeyTwice(String),
    /// `part` is "value for", "mask for" or "value for parameter"; `name` the key or parameter.
    #[error("{part} {name}: {text} does not fit {width} bits")]
    TooWide {
        part: &'static str,
        name: String,
        text: String,
        width: u32,
    },
    #[error("'*' digits in {text} need a ternary or lpm key, not {kind:?}")]
    DontCare { text: String, kind: MatchKind },
    #[error("prefix length {len} exceeds the {width}-bit key {key}")]
    PrefixTooLong { len: u32, width: u32, key: String },
    /// `written` says what was written: "a plain value", "a prefix (/len)", ...
    #[error("{written} cannot be used for {kind:?} key {key}")]
    WrongMatch {
        written: &'static str,
        kind: MatchKind,
        key: String,
    },
    #[error("action {action} has no parameter '{param}'; its parameters are: {}", param_list(.params))]
    UnknownParam {
        action: String,
        param: String,
        params: Vec<(String, u32)>,
    },
    #[error("action {action} needs parameter '{param}'")]
    MissingParam { action: String, param: String },
}

/// Finds `wanted` among `names`: an exact match, else the only name ending with `wanted`.
pub fn resolve_name<'a, I>(names: I, wanted: &str, what: &str) -> Result<&'a str, NameError>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut suffix_hits = Vec::new();
    for name in names {
        if name == wanted {
            return Ok(name);
        }
        if name.ends_with(wanted) {
            suffix_hits.push(name);
        }
    }
    match suffix_hits.as_slice() {
        [one] => Ok(one),
        [] => Err(NameError::Missing {
            what: what.to_string(),
            wanted: wanted.to_string(),
        }),
        many => Err(NameError::Ambiguous {
            what: what.to_string(),
            wanted: wanted.to_string(),
            candidates: many.iter().map(|n| n.to_string()).collect(),
        }),
    }
}

/// `hdr$0.f` is how STF spells `hdr[0].f` (the `[` is not an identifier character).
fn stack_index_to_brackets(field: &str) -> String {
    let mut out = String::with_capacity(field.len() + 2);
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('[');
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                out.push(d);
                chars.next();
            }
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

/// The index of the table key an STF field name designates, trying p4c's spellings in order.
fn key_index(keys: &[KeyInfo], written: &str) -> Result<usize, ResolveError> {
    let field = stack_index_to_brackets(written);
    let find = |name: &str| keys.iter().position(|k| k.name == name);
    let mut candidates = vec![
        field.clone(),
        format!("{field}$"),
        format!("{field}.$valid$"),
    ];
    if let Some(base) = field.strip_suffix(".valid") {
        candidates.push(format!("{base}.$valid$"));
    }
    if field == "valid" {
        candidates.push("$valid$".to_string());
    }
    if let Some(i) = candidates.iter().find_map(|c| find(c)) {
        return Ok(i);
    }
    let hits: Vec<usize> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| {
            k.name.ends_with(&format!(".{field}"))
                || k.name.ends_with(&format!(".{field}$"))
                || (field == "valid" && k.name.ends_with(".$valid$"))
        })
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(ResolveError::NoKeyField {
            written: written.to_string(),
            keys: keys.iter().map(|k| k.name.clone()).collect(),
        }),
        many => Err(ResolveError::AmbiguousKeyField {
            written: written.to_string(),
            candidates: many.iter().map(|&i| keys[i].name.clone()).collect(),
        }),
    }
}

fn sized(
    value: &Value,
    width: u32,
    part: &'static str,
    name: &str,
    text: &str,
) -> Result<Vec<u8>, ResolveError> {
    value.to_bytes(width).ok_or_else(|| ResolveError::TooWide {
        part,
        name: name.to_string(),
        text: text.to_string(),
        width,
    })
}

fn no_dont_care(n: &Number, kind: MatchKind) -> Result<(), ResolveError> {
    if n.care.is_some() {
        return Err(ResolveError::DontCare {
            text: n.text.clone(),
            kind,
        });
    }
    Ok(())
}

/// The mask STF derives from a literal: ones under the digits written, zeros under `*` digits
/// (p4c's runner does the same: it never sees field widths); a decimal literal cares about
/// every bit, where p4c's runner refuses it.
fn written_mask(n: &Number, width: u32) -> Value {
    match (&n.care, n.bits_per_digit) {
        (Some(care), _) => care.clone(),
        (None, 0) => Value::ones(width),
        (None, bits) => Value::ones((n.digits * bits).min(width)),
    }
}

/// The match for one key from the value written for it.
fn field_match(key: &KeyInfo, value: &KeyValue) -> Result<FieldMatch, ResolveError> {
    let w = key.width;
    let name = &key.name;
    let val = |n: &Number| sized(&n.value, w, "value for", name, &n.text);
    match (key.kind, value) {
        (MatchKind::Exact | MatchKind::Valid, KeyValue::Number(n)) => {
            no_dont_care(n, key.kind)?;
            Ok(FieldMatch::Exact(val(n)?))
        }
        (MatchKind::Optional, KeyValue::Number(n)) => {
            no_dont_care(n, key.kind)?;
            Ok(FieldMatch::Optional(Some(val(n)?)))
        }
        (MatchKind::Ternary, KeyValue::Number(n)) => {
            let mask = written_mask(n, w);
            Ok(FieldMatch::Ternary {
                value: val(n)?,
                mask: sized(&mask, w, "mask for", name, &n.text)?,
            })
        }
        (MatchKind::Ternary, KeyValue::Masked(n, m)) => {
            no_dont_care(n, key.kind)?;
            Ok(FieldMatch::Ternary {
                value: val(n)?,
                mask: val(m)?,
            })
        }
        (MatchKind::Lpm, KeyValue::Number(n)) => {
            // p4c: the prefix covers the digits written, minus the `*` ones.
            let prefix_len = if n.bits_per_digit == 0 {
                w
            } else {
                (n.digits - n.wildcards) * n.bits_per_digit
            };
            lpm(name, w, val(n)?, prefix_len)
        }
        (MatchKind::Lpm, KeyValue::Prefix(n, len)) => {
            no_dont_care(n, key.kind)?;
            lpm(name, w, val(n)?, *len)
        }
        (MatchKind::Ternary, KeyValue::Prefix(n, len)) => {
            no_dont_care(n, key.kind)?;
            if *len > w {
                return Err(ResolveError::PrefixTooLong {
                    len: *len,
                    width: w,
                    key: name.clone(),
                });
            }
            Ok(FieldMatch::Ternary {
                value: val(n)?,
                mask: prefix_mask(*len, w),
            })
        }
        (MatchKind::Range, KeyValue::Range(lo, hi)) => {
            no_dont_care(lo, key.kind)?;
            Ok(FieldMatch::Range {
                low: val(lo)?,
                high: val(hi)?,
            })
        }
        (MatchKind::Range, KeyValue::Number(n)) => {
            no_dont_care(n, key.kind)?;
            Ok(FieldMatch::Range {
                low: val(n)?,
                high: val(n)?,
            })
        }
        (kind, v) => Err(ResolveError::WrongMatch {
            written: match v {
                KeyValue::Number(_) => "a plain value",
                KeyValue::Prefix(..) => "a prefix (/len)",
                KeyValue::Masked(..) => "a mask (&&&)",
                KeyValue::Range(..) => "a range (->)",
            },
            kind,
            key: name.clone(),
        }),
    }
}

/// `len` ones followed by `width - len` zeros, as `width.div_ceil(8)` bytes.
fn prefix_mask(len: u32, width: u32) -> Vec<u8> {
    let mut mask = Value::ones(len);
    for _ in len..width {
        mask.mul_add(2, 0);
    }
    mask.to_bytes(width).unwrap_or_default()
}

fn lpm(
    name: &str,
    width: u32,
    value: Vec<u8>,
    prefix_len: u32,
) -> Result<FieldMatch, ResolveError> {
    if prefix_len > width {
        return Err(ResolveError::PrefixTooLong {
            len: prefix_len,
            width,
            key: name.to_string(),
        });
    }
    Ok(FieldMatch::Lpm { value, prefix_len })
}

/// The match used for a key the STF leaves out: a wildcard where the kind has one.
fn default_match(key: &KeyInfo) -> FieldMatch {
    let zero = vec![0u8; key.width.div_ceil(8) as usize];
    match key.kind {
        MatchKind::Exact | MatchKind::Valid => FieldMatch::Exact(zero),
        MatchKind::Lpm => FieldMatch::Lpm {
            value: zero,
            prefix_len: 0,
        },
        MatchKind::Ternary => FieldMatch::Ternary {
            value: zero.clone(),
            mask: zero,
        },
        MatchKind::Range => FieldMatch::Range {
            low: zero,
            high: Value::ones(key.width)
                .to_bytes(key.width)
                .unwrap_or_default(),
        },
        MatchKind::Optional => FieldMatch::Optional(None),
    }
}

pub(crate) fn find_table<'a>(
    tables: &'a [TableInfo],
    name: &str,
) -> Result<&'a TableInfo, ResolveError> {
    let full = resolve_name(tables.iter().map(|t| t.name.as_str()), name, "table")?;
    Ok(tables
        .iter()
        .find(|t| t.name == full)
        .expect("resolve_name returns one of the names"))
}

/// Resolves an action call against a table's actions: full name or unique suffix, then every
/// parameter by name, sized to its width.
pub(crate) fn resolve_action<'a>(
    table: &'a TableInfo,
    call: &ActionCall,
) -> Result<(&'a ActionInfo, Vec<Vec<u8>>), ResolveError> {
    let full = resolve_name(
        table.actions.iter().map(|a| a.name.as_str()),
        &call.name,
        &format!("action of table {}", table.name),
    )?;
    let action = table
        .actions
        .iter()
        .find(|a| a.name == full)
        .expect("resolve_name returns one of the names");
    for (arg, _) in &call.args {
        if !action.params.iter().any(|(p, _)| p == arg) {
            return Err(ResolveError::UnknownParam {
                action: action.name.clone(),
                param: arg.clone(),
                params: action.params.clone(),
            });
        }
    }
    let mut args = Vec::with_capacity(action.params.len());
    for (param, width) in &action.params {
        let (_, n) = call.args.iter().find(|(a, _)| a == param).ok_or_else(|| {
            ResolveError::MissingParam {
                action: action.name.clone(),
                param: param.clone(),
            }
        })?;
        args.push(sized(
            &n.value,
            *width,
            "value for parameter",
            param,
            &n.text,
        )?);
    }
    Ok((action, args))
}

fn param_list(params: &[(String, u32)]) -> String {
    if params.is_empty() {
        return "(none)".to_string();
    }
    params
        .iter()
        .map(|(p, w)| format!("{p}:bit<{w}>"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds the entry of an `add`. Errors are messages about the first problem found.
pub(crate) fn resolve_entry(
    tables: &[TableInfo],
    table: &str,
    priority: Option<u32>,
    keys: &[KeyMatch],
    action: &ActionCall,
) -> Result<Entry, ResolveError> {
    let info = find_table(tables, table)?;
    let mut matches: Vec<Option<FieldMatch>> = vec![None; info.keys.len()];
    for key in keys {
        let i = key_index(&info.keys, &key.field)?;
        if matches[i].is_some() {
            return Err(ResolveError::KeyTwice(info.keys[i].name.clone()));
        }
        matches[i] = Some(field_match(&info.keys[i], &key.value)?);
    }
    let matches = matches
        .into_iter()
        .zip(&info.keys)
        .map(|(m, k)| m.unwrap_or_else(|| default_match(k)))
        .collect();
    let (action_info, args) = resolve_action(info, action)?;
    Ok(Entry {
        table: info.name.clone(),
        matches,
        priority,
        action: action_info.name.clone(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_by_full_name_or_unique_suffix_else_a_typed_error() {
        let names = ["ingress.t", "ingress.sub.t", "egress.u"];
        assert_eq!(resolve_name(names, "ingress.t", "table"), Ok("ingress.t"));
        assert_eq!(resolve_name(names, "u", "table"), Ok("egress.u"));
        let missing = resolve_name(names, "v", "table").unwrap_err();
        assert_eq!(
            missing,
            NameError::Missing {
                what: "table".into(),
                wanted: "v".into()
            }
        );
        assert_eq!(missing.to_string(), "no table named 'v'");
        let ambiguous = resolve_name(names, "t", "table").unwrap_err();
        assert_eq!(
            ambiguous.to_string(),
            "table name 't' is ambiguous: ingress.t, ingress.sub.t"
        );
    }
}
