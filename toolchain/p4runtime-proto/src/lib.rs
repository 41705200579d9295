//! P4Runtime v1 for Rust: the `p4.v1`, `p4.config.v1` and `google.rpc` messages (prost), the
//! `p4.v1.P4Runtime` gRPC service (tonic server and client), and the descriptor pool that gives
//! every message the text and JSON encodings protobuf's C++ library writes (what p4c emits for
//! `--p4runtime-files X.txt` / `X.json`).
//!
//! The code is generated at build time from `p4runtime.fds.bin`, the PyPI `p4runtime` package's
//! schema committed as a descriptor set; see the README.

use std::sync::OnceLock;

use prost::{Message, Name};
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};

include!(concat!(env!("OUT_DIR"), "/p4runtime_includes.rs"));

mod text;

pub use p4::config::v1 as p4info;
pub use p4::v1 as p4runtime;
pub use p4::v1::p4_runtime_client::P4RuntimeClient;
pub use p4::v1::p4_runtime_server::{P4Runtime, P4RuntimeServer};

/// The serialized `google.protobuf.FileDescriptorSet` the code was generated from (dependencies
/// first): p4runtime.proto, p4info.proto, p4types.proto, p4data.proto, google/rpc/status.proto,
/// google/rpc/code.proto and google/protobuf/any.proto.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("../p4runtime.fds.bin");

/// Where a text or JSON document failed to parse, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("{line}:{column}: {message}")]
    Text {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{line}:{column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("binary protobuf: {0}")]
    Binary(String),
}

/// The descriptors of every message and service in [`FILE_DESCRIPTOR_SET`].
pub fn descriptor_pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        // The bytes were produced and already decoded by build.rs; a failure here is a build bug.
        DescriptorPool::decode(FILE_DESCRIPTOR_SET)
            .expect("build.rs emitted a valid descriptor set")
    })
}

/// The descriptor of a generated message type.
pub fn descriptor_of<M: Name>() -> MessageDescriptor {
    descriptor_pool()
        .get_message_by_name(&M::full_name())
        .expect("every generated message is in the pool it was generated from")
}

/// `msg` as a reflective message, for generic field access.
pub fn to_dynamic<M: Message + Name>(msg: &M) -> DynamicMessage {
    DynamicMessage::decode(descriptor_of::<M>(), msg.encode_to_vec().as_slice())
        .expect("a message re-decodes with its own descriptor")
}

fn from_dynamic<M: Message + Default>(dynamic: &DynamicMessage) -> Result<M, CodecError> {
    M::decode(dynamic.encode_to_vec().as_slice()).map_err(|err| CodecError::Binary(err.to_string()))
}

/// Protobuf text format, laid out as C++ `TextFormat::Printer` does with `SetExpandAny(true)`
/// (what p4c writes): two-space indent, one field a line in field-number order, map entries
/// sorted by key, `google.protobuf.Any` expanded, non-ASCII bytes as octal escapes.
pub fn to_text<M: Message + Name>(msg: &M) -> String {
    text::print_message(&to_dynamic(msg))
}

/// Parses protobuf text format (`#` comments allowed); errors carry line and column.
pub fn from_text<M: Message + Name + Default>(text: &str) -> Result<M, CodecError> {
    let dynamic = DynamicMessage::parse_text_format(descriptor_of::<M>(), text).map_err(|err| {
        use miette::Diagnostic;
        let offset = err
            .labels()
            .and_then(|mut labels| labels.next())
            .map_or(0, |label| label.offset());
        let (line, column) = line_column(text, offset);
        CodecError::Text {
            line,
            column,
            message: err.to_string(),
        }
    })?;
    from_dynamic(&dynamic)
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Proto3 JSON as C++ `MessageToJsonString` with `add_whitespace` writes it (what p4c emits):
/// lowerCamelCase names, 64-bit integers as strings, enums by name, one-space indent.
pub fn to_json<M: Message + Name>(msg: &M) -> String {
    let dynamic = to_dynamic(msg);
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    dynamic
        .serialize_with_options(&mut serializer, &SerializeOptions::new())
        .expect("serializing a DynamicMessage into memory cannot fail");
    let mut json = String::from_utf8(out).expect("serde_json writes UTF-8");
    json.push('\n');
    json
}

/// Parses proto3 JSON (either field-name spelling); errors carry line and column.
pub fn from_json<M: Message + Name + Default>(json: &str) -> Result<M, CodecError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let located = |err: serde_json::Error| CodecError::Json {
        line: err.line(),
        column: err.column(),
        message: err.to_string(),
    };
    let dynamic =
        DynamicMessage::deserialize(descriptor_of::<M>(), &mut deserializer).map_err(located)?;
    deserializer.end().map_err(located)?;
    from_dynamic(&dynamic)
}

/// Parses binary protobuf.
pub fn from_binary<M: Message + Default>(bytes: &[u8]) -> Result<M, CodecError> {
    M::decode(bytes).map_err(|err| CodecError::Binary(err.to_string()))
}
