//! The text format as protobuf's C++ `TextFormat::Printer` writes it, which is what p4c puts in
//! `.p4info.txt(pb)` files. prost-reflect's own printer writes repeated fields as `[a, b]` lists;
//! that parses but differs from every P4Info file users already have, so files are printed here.

use std::fmt::Write;

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value};

use crate::descriptor_pool;

pub(crate) fn print_message(message: &DynamicMessage) -> String {
    let mut out = String::new();
    write_fields(&mut out, message, 0);
    out
}

fn write_fields(out: &mut String, message: &DynamicMessage, depth: usize) {
    let mut fields: Vec<FieldDescriptor> = message.descriptor().fields().collect();
    // C++ prints set fields in field-number order, not declaration order.
    fields.sort_by_key(FieldDescriptor::number);
    for field in fields.iter().filter(|field| message.has_field(field)) {
        match &*message.get_field(field) {
            Value::List(items) => {
                for item in items {
                    write_field(out, field, item, depth);
                }
            }
            Value::Map(map) => {
                let entry = field.kind();
                let entry = entry.as_message().expect("map fields are entry messages");
                let (key_field, value_field) =
                    (entry.map_entry_key_field(), entry.map_entry_value_field());
                let mut keys: Vec<&MapKey> = map.keys().collect();
                keys.sort();
                for key in keys {
                    indent(out, depth);
                    let _ = writeln!(out, "{} {{", field.name());
                    write_field(out, &key_field, &map_key_value(key), depth + 1);
                    write_field(out, &value_field, &map[key], depth + 1);
                    indent(out, depth);
                    out.push_str("}\n");
                }
            }
            value => write_field(out, field, value, depth),
        }
    }
}

fn map_key_value(key: &MapKey) -> Value {
    match key {
        MapKey::Bool(v) => Value::Bool(*v),
        MapKey::I32(v) => Value::I32(*v),
        MapKey::I64(v) => Value::I64(*v),
        MapKey::U32(v) => Value::U32(*v),
        MapKey::U64(v) => Value::U64(*v),
        MapKey::String(v) => Value::String(v.clone()),
    }
}

fn indent(out: &mut String, depth: usize) {
    out.push_str(&"  ".repeat(depth));
}

fn write_field(out: &mut String, field: &FieldDescriptor, value: &Value, depth: usize) {
    indent(out, depth);
    match value {
        Value::Message(inner) => {
            let _ = writeln!(out, "{} {{", field.name());
            match expanded_any(inner) {
                Some((type_url, payload)) => {
                    indent(out, depth + 1);
                    let _ = writeln!(out, "[{type_url}] {{");
                    write_fields(out, &payload, depth + 2);
                    indent(out, depth + 1);
                    out.push_str("}\n");
                }
                None => write_fields(out, inner, depth + 1),
            }
            indent(out, depth);
            out.push_str("}\n");
        }
        scalar => {
            let _ = writeln!(out, "{}: {}", field.name(), scalar_text(field, scalar));
        }
    }
}

/// A `google.protobuf.Any` whose payload type is in the pool, decoded, as C++ prints it when
/// `SetExpandAny(true)` (p4c sets it).
fn expanded_any(message: &DynamicMessage) -> Option<(String, DynamicMessage)> {
    if message.descriptor().full_name() != "google.protobuf.Any" {
        return None;
    }
    let type_url = message.get_field_by_name("type_url")?;
    let type_url = type_url.as_str()?.to_owned();
    let bytes = message.get_field_by_name("value")?;
    let bytes = bytes.as_bytes()?.clone();
    let type_name = type_url.rsplit('/').next()?;
    let descriptor = descriptor_pool().get_message_by_name(type_name)?;
    let payload = DynamicMessage::decode(descriptor, bytes).ok()?;
    Some((type_url, payload))
}

fn scalar_text(field: &FieldDescriptor, value: &Value) -> String {
    match value {
        Value::Bool(v) => v.to_string(),
        Value::I32(v) => v.to_string(),
        Value::I64(v) => v.to_string(),
        Value::U32(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::F32(v) => float_text(f64::from(*v)),
        Value::F64(v) => float_text(*v),
        Value::String(v) => c_escape(v.as_bytes()),
        Value::Bytes(v) => c_escape(v),
        Value::EnumNumber(number) => match field.kind() {
            Kind::Enum(descriptor) => descriptor
                .get_value(*number)
                .map_or_else(|| number.to_string(), |value| value.name().to_owned()),
            _ => number.to_string(),
        },
        Value::Message(_) | Value::List(_) | Value::Map(_) => {
            unreachable!("write_field handles composite values")
        }
    }
}

fn float_text(v: f64) -> String {
    if v.is_nan() {
        "nan".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        v.to_string()
    }
}

/// Quoted the way C++ `CEscape` does: the usual backslash escapes, and every byte outside
/// printable ASCII as three octal digits.
fn c_escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &byte in bytes {
        match byte {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\{byte:03o}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::c_escape;

    #[test]
    fn escapes_like_c_escape() {
        assert_eq!(c_escape(b"@noWarn(\"unused\")"), r#""@noWarn(\"unused\")""#);
        assert_eq!(c_escape(&[0x0a, 0x00, 0xff, b'\'']), r#""\n\000\377\'""#);
    }
}
