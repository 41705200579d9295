//! Data model of the BMv2 JSON format (behavioral-model `docs/JSON_format.md`, version 2.x),
//! as p4c's `p4c-bm2-ss` writes it and `simple_switch` reads it.
//!
//! [`Program::from_json`] reads a file's text; every error names the JSON path of the offending
//! item (`pipelines[0].tables[2].key[1].match_type: unknown match type "foo"`). Attributes that
//! bmv2 ignores (`source_info` on most objects, `pi_omit`, ...) are accepted and ignored.
//! The same types serialize back, for a compiler that emits the format.

mod hexstr;
mod tv;

pub use hexstr::HexStr;
pub use tv::{Expr, ExprOp, FieldRef, ParserParam, Primitive, Tv};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A loading error: where in the document, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct JsonError {
    /// Dotted JSON path (`actions[3].primitives[0]`), `.` for the document root.
    pub path: String,
    pub message: String,
}

impl Program {
    /// Reads a BMv2 JSON document.
    pub fn from_json(text: &str) -> Result<Program, JsonError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let program: Program =
            serde_path_to_error::deserialize(&mut de).map_err(|e| JsonError {
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        de.end().map_err(|e| JsonError {
            path: ".".into(),
            message: e.to_string(),
        })?;
        Ok(program)
    }

    /// Writes the document as p4c would (attribute order aside).
    pub fn to_json_pretty(&self) -> String {
        // Serializing plain data into a String cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Declares a string-valued enum whose unknown values are reported as `unknown WHAT "value"`.
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),* }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)*
                    _ => Err(format!(concat!("unknown ", $what, " \"{}\""), s)),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_enum!(
    /// `match_type` of a table or of a key element.
    MatchType, "match type", {
    Exact = "exact",
    Lpm = "lpm",
    Ternary = "ternary",
    Range = "range",
    Optional = "optional",
    Valid = "valid",
});

string_enum!(
    /// Table implementation.
    TableType, "table type", {
    Simple = "simple",
    Indirect = "indirect",
    IndirectWs = "indirect_ws",
});

string_enum!(MeterType, "meter type", { Bytes = "bytes", Packets = "packets" });

string_enum!(ParserOpKind, "parser op", {
    Extract = "extract",
    ExtractVl = "extract_VL",
    Set = "set",
    Verify = "verify",
    Shift = "shift",
    Advance = "advance",
    Primitive = "primitive",
});

fn yes() -> bool {
    true
}

/// Where in the P4 source an object comes from (used in logs only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SourceInfo {
    pub filename: String,
    pub line: u32,
    pub column: u32,
    pub source_fragment: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Program {
    pub header_types: Vec<HeaderType>,
    pub headers: Vec<Header>,
    pub header_stacks: Vec<HeaderStack>,
    pub header_union_types: Vec<HeaderUnionType>,
    pub header_unions: Vec<HeaderUnion>,
    pub header_union_stacks: Vec<HeaderUnionStack>,
    pub field_lists: Vec<FieldList>,
    pub errors: Vec<(String, i64)>,
    pub enums: Vec<EnumDecl>,
    pub parsers: Vec<Parser>,
    pub parse_vsets: Vec<ParseVset>,
    pub deparsers: Vec<Deparser>,
    pub meter_arrays: Vec<MeterArray>,
    pub counter_arrays: Vec<CounterArray>,
    pub register_arrays: Vec<RegisterArray>,
    pub calculations: Vec<Calculation>,
    pub learn_lists: Vec<LearnList>,
    pub actions: Vec<Action>,
    pub pipelines: Vec<Pipeline>,
    pub checksums: Vec<Checksum>,
    pub force_arith: Vec<FieldRef>,
    pub extern_instances: Vec<ExternInstance>,
    pub field_aliases: Vec<(String, FieldRef)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    #[serde(rename = "__meta__", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Meta {
    pub version: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
}

/// Width of a header field: bits, or `"*"` for the variable-length field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldWidth {
    Bits(u32),
    Variable,
}

/// `[name, width]` or `[name, width, signed]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDecl {
    pub name: String,
    pub width: FieldWidth,
    pub signed: bool,
}

impl Serialize for FieldDecl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(3))?;
        seq.serialize_element(&self.name)?;
        match self.width {
            FieldWidth::Bits(b) => seq.serialize_element(&b)?,
            FieldWidth::Variable => seq.serialize_element("*")?,
        }
        seq.serialize_element(&self.signed)?;
        seq.end()
    }
}

impl<'de> Deserialize<'de> for FieldDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, SeqAccess, Visitor};
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Flag {
            Bool(bool),
            Int(u64),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum W {
            Bits(u32),
            Star(String),
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FieldDecl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[name, width] or [name, width, signed]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FieldDecl, A::Error> {
                let name: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let width = match seq.next_element::<W>()? {
                    Some(W::Bits(b)) => FieldWidth::Bits(b),
                    Some(W::Star(s)) if s == "*" => FieldWidth::Variable,
                    Some(W::Star(s)) => {
                        return Err(de::Error::custom(format!(
                            "field width must be an integer or \"*\", not \"{s}\""
                        )))
                    }
                    None => return Err(de::Error::invalid_length(1, &self)),
                };
                // p4c writes `0` rather than `false` for some fields (bool struct members).
                let signed = match seq.next_element::<Flag>()? {
                    None | Some(Flag::Bool(false)) | Some(Flag::Int(0)) => false,
                    Some(Flag::Bool(true)) | Some(Flag::Int(1)) => true,
                    Some(Flag::Int(n)) => {
                        return Err(de::Error::custom(format!(
                            "signed flag must be a boolean, 0 or 1, not {n}"
                        )))
                    }
                };
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(FieldDecl {
                    name,
                    width,
                    signed,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HeaderType {
    pub name: String,
    pub id: i64,
    pub fields: Vec<FieldDecl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length_exp: Option<Tv>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Header {
    pub name: String,
    pub id: i64,
    pub header_type: String,
    pub metadata: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pi_omit: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HeaderStack {
    pub name: String,
    pub id: i64,
    pub header_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    pub header_ids: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HeaderUnionType {
    pub name: String,
    pub id: i64,
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HeaderUnion {
    pub name: String,
    pub id: i64,
    pub union_type: String,
    pub header_ids: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HeaderUnionStack {
    pub name: String,
    pub id: i64,
    pub union_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    pub header_union_ids: Vec<i64>,
}

/// A field list (clone/resubmit/recirculate preserved fields, hash inputs of P4_14).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct FieldList {
    pub name: String,
    pub id: i64,
    pub elements: Vec<Tv>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EnumDecl {
    pub name: String,
    pub entries: Vec<(String, i64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Parser {
    pub name: String,
    pub id: i64,
    pub init_state: Option<String>,
    pub parse_states: Vec<ParseState>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ParseState {
    pub name: String,
    pub id: i64,
    pub parser_ops: Vec<ParserOp>,
    pub transition_key: Vec<Tv>,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParserOp {
    pub op: ParserOpKind,
    #[serde(default)]
    pub parameters: Vec<ParserParam>,
}

/// What a transition matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionKind {
    Default,
    Hexstr { value: HexStr, mask: Option<HexStr> },
    ParseVset { name: String, mask: Option<HexStr> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawTransition", into = "RawTransition")]
pub struct Transition {
    pub kind: TransitionKind,
    pub next_state: Option<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct RawTransition {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    value: Option<String>,
    mask: Option<String>,
    next_state: Option<String>,
}

impl TryFrom<RawTransition> for Transition {
    type Error = String;

    fn try_from(raw: RawTransition) -> Result<Transition, String> {
        let mask = raw.mask.as_deref().map(str::parse).transpose()?;
        // Older p4c writes `"value": "default"` without a `type`.
        let kind = match (raw.kind.as_deref(), raw.value) {
            (Some("default"), _) | (None, None) => TransitionKind::Default,
            (None, Some(v)) if v == "default" => TransitionKind::Default,
            (Some("hexstr") | None, Some(v)) => TransitionKind::Hexstr {
                value: v.parse()?,
                mask,
            },
            (Some("parse_vset"), Some(name)) => TransitionKind::ParseVset { name, mask },
            (Some(t @ ("hexstr" | "parse_vset")), None) => {
                return Err(format!("transition of type \"{t}\" needs a `value`"))
            }
            (Some(t), _) => return Err(format!("unknown transition type \"{t}\"")),
        };
        Ok(Transition {
            kind,
            next_state: raw.next_state,
        })
    }
}

impl From<Transition> for RawTransition {
    fn from(t: Transition) -> RawTransition {
        let (kind, value, mask) = match t.kind {
            TransitionKind::Default => ("default", None, None),
            TransitionKind::Hexstr { value, mask } => ("hexstr", Some(value.to_string()), mask),
            TransitionKind::ParseVset { name, mask } => ("parse_vset", Some(name), mask),
        };
        RawTransition {
            kind: Some(kind.into()),
            value,
            mask: mask.map(|m| m.to_string()),
            next_state: t.next_state,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ParseVset {
    pub name: String,
    pub id: i64,
    pub compressed_bitwidth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Deparser {
    pub name: String,
    pub id: i64,
    pub order: Vec<String>,
    pub primitives: Vec<Primitive>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeterArray {
    pub name: String,
    #[serde(default)]
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: MeterType,
    #[serde(default = "two")]
    pub rate_count: u32,
    #[serde(default)]
    pub size: u32,
    #[serde(default)]
    pub is_direct: bool,
    #[serde(default)]
    pub binding: Option<String>,
    #[serde(default)]
    pub result_target: Option<FieldRef>,
}

fn two() -> u32 {
    2
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CounterArray {
    pub name: String,
    pub id: i64,
    pub size: u32,
    pub is_direct: bool,
    pub binding: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RegisterArray {
    pub name: String,
    pub id: i64,
    pub size: u32,
    pub bitwidth: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Calculation {
    pub name: String,
    pub id: i64,
    pub algo: String,
    pub input: Vec<Tv>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LearnList {
    pub name: String,
    pub id: i64,
    pub elements: Vec<Tv>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RuntimeData {
    pub name: String,
    pub bitwidth: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Action {
    pub name: String,
    pub id: i64,
    pub runtime_data: Vec<RuntimeData>,
    pub primitives: Vec<Primitive>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Pipeline {
    pub name: String,
    pub id: i64,
    pub init_table: Option<String>,
    pub tables: Vec<Table>,
    pub action_profiles: Vec<ActionProfile>,
    pub conditionals: Vec<Conditional>,
    pub action_calls: Vec<ActionCall>,
}

/// A key element's target: a field, or a header for `valid` keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeyTarget {
    Field(FieldRef),
    Header(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableKey {
    pub match_type: MatchType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub target: KeyTarget,
    #[serde(default)]
    pub mask: Option<HexStr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct DefaultEntry {
    pub action_id: i64,
    pub action_const: bool,
    pub action_data: Vec<HexStr>,
    pub action_entry_const: bool,
}

/// The key of a const entry: a hexstr, or a boolean for `valid`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EntryKeyValue {
    Bool(bool),
    Hex(HexStr),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryKey {
    pub match_type: MatchType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<EntryKeyValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<HexStr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<HexStr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<HexStr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ActionEntry {
    pub action_id: i64,
    pub action_data: Vec<HexStr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstEntry {
    pub match_key: Vec<EntryKey>,
    pub action_entry: ActionEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub name: String,
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub key: Vec<TableKey>,
    #[serde(default = "exact")]
    pub match_type: MatchType,
    #[serde(rename = "type", default = "simple")]
    pub kind: TableType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_profile: Option<String>,
    /// Older JSON (P4_14's p4c-bm, bmv2's own test programs): the indirect table names its
    /// action profile here and carries the selector itself, with no `action_profiles` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act_prof_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    #[serde(default)]
    pub max_size: u32,
    #[serde(default)]
    pub with_counters: bool,
    #[serde(default)]
    pub support_timeout: bool,
    #[serde(default)]
    pub direct_meters: Option<String>,
    #[serde(default)]
    pub action_ids: Vec<i64>,
    #[serde(default)]
    pub actions: Vec<String>,
    #[serde(default)]
    pub base_default_next: Option<String>,
    #[serde(default)]
    pub next_tables: BTreeMap<String, Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_entry: Option<DefaultEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<ConstEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_info: Option<SourceInfo>,
}

fn exact() -> MatchType {
    MatchType::Exact
}

fn simple() -> TableType {
    TableType::Simple
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selector {
    pub algo: String,
    #[serde(default)]
    pub input: Vec<Tv>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ActionProfile {
    pub name: String,
    pub id: i64,
    pub max_size: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conditional {
    pub name: String,
    #[serde(default)]
    pub id: i64,
    pub expression: Tv,
    #[serde(default)]
    pub true_next: Option<String>,
    #[serde(default)]
    pub false_next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_info: Option<SourceInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ActionCall {
    pub name: String,
    pub id: i64,
    pub action_id: i64,
    pub next_node: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checksum {
    pub name: String,
    #[serde(default)]
    pub id: i64,
    pub target: FieldRef,
    #[serde(rename = "type", default)]
    pub kind: String,
    pub calculation: String,
    #[serde(default = "yes")]
    pub update: bool,
    #[serde(default = "yes")]
    pub verify: bool,
    #[serde(default)]
    pub if_cond: Option<Tv>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ExternInstance {
    pub name: String,
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub attribute_values: Vec<ExternAttribute>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ExternAttribute {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub value: serde_json::Value,
}
