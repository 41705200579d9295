//! The "type value" objects of the format (`{"type": ..., "value": ...}`), expressions and
//! primitive calls. They nest into each other, so one visitor reads all three and each public
//! type accepts the forms that may appear where it is used.

use crate::hexstr::HexStr;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A reference to a header field: `["header", "field"]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FieldRef(pub String, pub String);

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// A type-value object, or a bare integer where the format allows one (`access_field`).
#[derive(Debug, Clone, PartialEq)]
pub enum Tv {
    Field(FieldRef),
    Hexstr(HexStr),
    /// A `hexstr` with an explicit `bitwidth` (calculation inputs).
    SizedHexstr {
        value: HexStr,
        bitwidth: u32,
    },
    Bool(bool),
    Header(String),
    HeaderStack(String),
    HeaderUnion(String),
    HeaderUnionStack(String),
    Calculation(String),
    RegisterArray(String),
    MeterArray(String),
    CounterArray(String),
    Extern(String),
    String(String),
    Lookahead {
        offset: i64,
        bitwidth: u32,
    },
    /// `register`: an array name and an index expression.
    Register(String, Box<Tv>),
    StackField(String, String),
    UnionStackField(String, String, String),
    Expression(Box<Expr>),
    Local(u32),
    RuntimeData(u32),
    ParametersVector(Vec<Tv>),
    /// Extract targets.
    Regular(String),
    Stack(String),
    UnionStack(String, String),
    /// Calculation input: the rest of the packet.
    Payload,
    Int(i64),
}

/// An expression: an operation, or (when p4c wraps twice) a type-value object.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Op(ExprOp),
    Tv(Tv),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExprOp {
    pub op: String,
    pub left: Option<Tv>,
    pub right: Option<Tv>,
    /// Only for the ternary operator `?`.
    pub cond: Option<Tv>,
}

/// A primitive call in an action, a deparser or a parser `primitive` op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Primitive {
    pub op: String,
    #[serde(default)]
    pub parameters: Vec<Tv>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_info: Option<crate::SourceInfo>,
}

/// A parameter of a parser op: a type-value object, or a primitive call for `primitive`.
#[derive(Debug, Clone, PartialEq)]
pub enum ParserParam {
    Tv(Tv),
    Primitive(Primitive),
}

enum Node {
    Tv(Tv),
    Op(ExprOp),
    Prim(Primitive),
}

struct NodeVisitor;

/// Every `type` a type-value object may have.
const KNOWN_TYPES: &[&str] = &[
    "field",
    "hexstr",
    "bool",
    "header",
    "header_stack",
    "header_union",
    "header_union_stack",
    "calculation",
    "register_array",
    "meter_array",
    "counter_array",
    "extern",
    "string",
    "lookahead",
    "register",
    "stack_field",
    "union_stack_field",
    "expression",
    "local",
    "runtime_data",
    "parameters_vector",
    "regular",
    "stack",
    "union_stack",
    "payload",
];

struct Typed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for Typed<'_> {
    type Value = Tv;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Tv, D::Error> {
        Ok(match self.0 {
            "field" => {
                let FieldRef(h, f) = FieldRef::deserialize(d)?;
                Tv::Field(FieldRef(h, f))
            }
            "hexstr" => Tv::Hexstr(HexStr::deserialize(d)?),
            "bool" => Tv::Bool(bool::deserialize(d)?),
            "header" => Tv::Header(String::deserialize(d)?),
            "header_stack" => Tv::HeaderStack(String::deserialize(d)?),
            "header_union" => Tv::HeaderUnion(String::deserialize(d)?),
            "header_union_stack" => Tv::HeaderUnionStack(String::deserialize(d)?),
            "calculation" => Tv::Calculation(String::deserialize(d)?),
            "register_array" => Tv::RegisterArray(String::deserialize(d)?),
            "meter_array" => Tv::MeterArray(String::deserialize(d)?),
            "counter_array" => Tv::CounterArray(String::deserialize(d)?),
            "extern" => Tv::Extern(String::deserialize(d)?),
            "string" => Tv::String(String::deserialize(d)?),
            "lookahead" => {
                let (offset, bitwidth) = <(i64, u32)>::deserialize(d)?;
                Tv::Lookahead { offset, bitwidth }
            }
            "register" => {
                let (name, index) = <(String, Tv)>::deserialize(d)?;
                Tv::Register(name, Box::new(index))
            }
            "stack_field" => {
                let (s, f) = <(String, String)>::deserialize(d)?;
                Tv::StackField(s, f)
            }
            "union_stack_field" => {
                let (s, u, f) = <(String, String, String)>::deserialize(d)?;
                Tv::UnionStackField(s, u, f)
            }
            "expression" => Tv::Expression(Box::new(Expr::deserialize(d)?)),
            "local" => Tv::Local(u32::deserialize(d)?),
            "runtime_data" => Tv::RuntimeData(u32::deserialize(d)?),
            "parameters_vector" => Tv::ParametersVector(Vec::<Tv>::deserialize(d)?),
            "regular" => Tv::Regular(String::deserialize(d)?),
            "stack" => Tv::Stack(String::deserialize(d)?),
            "union_stack" => {
                let (s, u) = <(String, String)>::deserialize(d)?;
                Tv::UnionStack(s, u)
            }
            "payload" => {
                IgnoredAny::deserialize(d)?;
                Tv::Payload
            }
            other => return Err(de::Error::custom(format!("unknown type \"{other}\""))),
        })
    }
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with `type` and `value`, or an expression with `op`")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        i64::try_from(v)
            .map(|v| Node::Tv(Tv::Int(v)))
            .map_err(|_| E::custom("integer out of range"))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Tv(Tv::Int(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut ty: Option<String> = None;
        let mut value: Option<Tv> = None;
        let mut raw_value: Option<serde_json::Value> = None;
        let mut bitwidth: Option<u32> = None;
        let mut op: Option<String> = None;
        let (mut left, mut right, mut cond) = (None, None, None);
        let mut parameters: Option<Vec<Tv>> = None;
        let mut source_info = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => {
                    let t: String = map.next_value()?;
                    if !KNOWN_TYPES.contains(&t.as_str()) {
                        return Err(de::Error::custom(format!("unknown type \"{t}\"")));
                    }
                    ty = Some(t);
                }
                "value" => match &ty {
                    Some(t) => value = Some(map.next_value_seed(Typed(t))?),
                    None => raw_value = Some(map.next_value()?),
                },
                "bitwidth" => bitwidth = Some(map.next_value()?),
                "op" => op = Some(map.next_value()?),
                "left" => left = map.next_value::<Option<Tv>>()?,
                "right" => right = map.next_value::<Option<Tv>>()?,
                "cond" => cond = map.next_value::<Option<Tv>>()?,
                "parameters" => parameters = Some(map.next_value()?),
                "source_info" => source_info = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(t) = ty {
            let v = match (value, raw_value) {
                (Some(v), _) => v,
                (None, Some(raw)) => Typed(&t).deserialize(raw).map_err(de::Error::custom)?,
                (None, None) if t == "payload" => Tv::Payload,
                (None, None) => return Err(de::Error::missing_field("value")),
            };
            return Ok(Node::Tv(match (v, bitwidth) {
                (Tv::Hexstr(value), Some(bitwidth)) => Tv::SizedHexstr { value, bitwidth },
                (v, _) => v,
            }));
        }
        match (op, parameters) {
            (Some(op), Some(parameters)) => Ok(Node::Prim(Primitive {
                op,
                parameters,
                source_info,
            })),
            (Some(op), None) => Ok(Node::Op(ExprOp {
                op,
                left,
                right,
                cond,
            })),
            _ => Err(de::Error::custom(
                "expected an object with `type` and `value`, or with `op`",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Tv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tv, D::Error> {
        match d.deserialize_any(NodeVisitor)? {
            Node::Tv(t) => Ok(t),
            _ => Err(de::Error::custom(
                "expected a type-value object (`type` and `value`)",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        match d.deserialize_any(NodeVisitor)? {
            Node::Tv(t) => Ok(Expr::Tv(t)),
            Node::Op(o) => Ok(Expr::Op(o)),
            Node::Prim(_) => Err(de::Error::custom(
                "expected an expression, found a primitive call",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for ParserParam {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ParserParam, D::Error> {
        match d.deserialize_any(NodeVisitor)? {
            Node::Tv(t) => Ok(ParserParam::Tv(t)),
            Node::Prim(p) => Ok(ParserParam::Primitive(p)),
            Node::Op(_) => Err(de::Error::custom(
                "expected a type-value object or a primitive call",
            )),
        }
    }
}

impl Tv {
    /// The `type` string of this object.
    pub fn type_name(&self) -> &'static str {
        match self {
            Tv::Field(_) => "field",
            Tv::Hexstr(_) | Tv::SizedHexstr { .. } => "hexstr",
            Tv::Bool(_) => "bool",
            Tv::Header(_) => "header",
            Tv::HeaderStack(_) => "header_stack",
            Tv::HeaderUnion(_) => "header_union",
            Tv::HeaderUnionStack(_) => "header_union_stack",
            Tv::Calculation(_) => "calculation",
            Tv::RegisterArray(_) => "register_array",
            Tv::MeterArray(_) => "meter_array",
            Tv::CounterArray(_) => "counter_array",
            Tv::Extern(_) => "extern",
            Tv::String(_) => "string",
            Tv::Lookahead { .. } => "lookahead",
            Tv::Register(..) => "register",
            Tv::StackField(..) => "stack_field",
            Tv::UnionStackField(..) => "union_stack_field",
            Tv::Expression(_) => "expression",
            Tv::Local(_) => "local",
            Tv::RuntimeData(_) => "runtime_data",
            Tv::ParametersVector(_) => "parameters_vector",
            Tv::Regular(_) => "regular",
            Tv::Stack(_) => "stack",
            Tv::UnionStack(..) => "union_stack",
            Tv::Payload => "payload",
            Tv::Int(_) => "integer",
        }
    }
}

struct Pair<'a, A, B>(&'a A, &'a B);
impl<A: Serialize, B: Serialize> Serialize for Pair<'_, A, B> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(2))?;
        seq.serialize_element(self.0)?;
        seq.serialize_element(self.1)?;
        seq.end()
    }
}

impl Serialize for Tv {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Tv::Int(v) = self {
            return s.serialize_i64(*v);
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", self.type_name())?;
        match self {
            Tv::Field(f) => m.serialize_entry("value", f)?,
            Tv::Hexstr(h) => m.serialize_entry("value", h)?,
            Tv::SizedHexstr { value, bitwidth } => {
                m.serialize_entry("value", value)?;
                m.serialize_entry("bitwidth", bitwidth)?;
            }
            Tv::Bool(b) => m.serialize_entry("value", b)?,
            Tv::Header(n)
            | Tv::HeaderStack(n)
            | Tv::HeaderUnion(n)
            | Tv::HeaderUnionStack(n)
            | Tv::Calculation(n)
            | Tv::RegisterArray(n)
            | Tv::MeterArray(n)
            | Tv::CounterArray(n)
            | Tv::Extern(n)
            | Tv::String(n)
            | Tv::Regular(n)
            | Tv::Stack(n) => m.serialize_entry("value", n)?,
            Tv::Lookahead { offset, bitwidth } => {
                m.serialize_entry("value", &Pair(offset, bitwidth))?
            }
            Tv::Register(n, i) => m.serialize_entry("value", &Pair(n, i.as_ref()))?,
            Tv::StackField(a, b) | Tv::UnionStack(a, b) => {
                m.serialize_entry("value", &Pair(a, b))?
            }
            Tv::UnionStackField(a, b, c) => m.serialize_entry("value", &[a, b, c])?,
            Tv::Expression(e) => m.serialize_entry("value", e.as_ref())?,
            Tv::Local(i) | Tv::RuntimeData(i) => m.serialize_entry("value", i)?,
            Tv::ParametersVector(v) => m.serialize_entry("value", v)?,
            Tv::Payload => m.serialize_entry("value", &())?,
            Tv::Int(_) => {}
        }
        m.end()
    }
}

impl Serialize for Expr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Expr::Tv(t) => t.serialize(s),
            Expr::Op(o) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("op", &o.op)?;
                if let Some(c) = &o.cond {
                    m.serialize_entry("cond", c)?;
                }
                m.serialize_entry("left", &o.left)?;
                m.serialize_entry("right", &o.right)?;
                m.end()
            }
        }
    }
}

impl Serialize for ParserParam {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParserParam::Tv(t) => t.serialize(s),
            ParserParam::Primitive(p) => p.serialize(s),
        }
    }
}
