//! Write requests as they come off the wire. The generated `p4.v1.WriteRequest` decodes every
//! update into its own tree of messages and copies each byte string, which cost more than the
//! rest of a write together. Here the request is decoded with its updates left encoded (slices
//! of the received buffer, not copies), and each update is decoded on its own when the batch is
//! translated, into the messages below: the table entry subset of p4runtime.proto's schema with
//! the same tags, byte strings as slices of the request. prost decodes both; the messages are
//! declared here because p4runtime-proto generates owned byte strings for every user.
//!
//! Fields the fast path does not translate are still declared (as bytes or with their types), so
//! an update that sets one is seen and decoded in full instead (`p4runtime_proto`'s `Update`).

use bytes::Bytes;
use p4runtime_proto::p4runtime::Uint128;
use prost::Message;

/// `p4.v1.WriteRequest` with its updates encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(uint64, tag = "1")]
    pub device_id: u64,
    #[prost(string, tag = "6")]
    pub role: String,
    #[prost(message, optional, tag = "3")]
    pub election_id: Option<Uint128>,
    /// Each a `p4.v1.Update`.
    #[prost(bytes = "bytes", repeated, tag = "4")]
    pub updates: Vec<Bytes>,
    #[prost(int32, tag = "5")]
    pub atomicity: i32,
}

impl From<p4runtime_proto::p4runtime::WriteRequest> for WriteRequest {
    /// For a request that arrived decoded (the `P4Runtime` trait's `write`).
    fn from(r: p4runtime_proto::p4runtime::WriteRequest) -> WriteRequest {
        WriteRequest {
            device_id: r.device_id,
            role: r.role,
            election_id: r.election_id,
            updates: r
                .updates
                .iter()
                .map(|u| Bytes::from(u.encode_to_vec()))
                .collect(),
            atomicity: r.atomicity,
        }
    }
}

/// `p4.v1.Update`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Update {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub entity: Option<Entity>,
}

/// `p4.v1.Entity`: a table entry, or another kind of entity (left encoded).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Entity {
    #[prost(oneof = "Kind", tags = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12")]
    pub entity: Option<Kind>,
}

// Boxing the table entry would add an allocation per update; a Kind lives only while its
// update is translated.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    #[prost(bytes = "bytes", tag = "1")]
    ExternEntry(Bytes),
    #[prost(message, tag = "2")]
    TableEntry(TableEntry),
    #[prost(bytes = "bytes", tag = "3")]
    ActionProfileMember(Bytes),
    #[prost(bytes = "bytes", tag = "4")]
    ActionProfileGroup(Bytes),
    #[prost(bytes = "bytes", tag = "5")]
    MeterEntry(Bytes),
    #[prost(bytes = "bytes", tag = "6")]
    DirectMeterEntry(Bytes),
    #[prost(bytes = "bytes", tag = "7")]
    CounterEntry(Bytes),
    #[prost(bytes = "bytes", tag = "8")]
    DirectCounterEntry(Bytes),
    #[prost(bytes = "bytes", tag = "9")]
    PacketReplicationEngineEntry(Bytes),
    #[prost(bytes = "bytes", tag = "10")]
    ValueSetEntry(Bytes),
    #[prost(bytes = "bytes", tag = "11")]
    RegisterEntry(Bytes),
    #[prost(bytes = "bytes", tag = "12")]
    DigestEntry(Bytes),
}

/// `p4.v1.TableEntry`; the fields after `priority` only tell whether they are set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableEntry {
    #[prost(uint32, tag = "1")]
    pub table_id: u32,
    #[prost(message, repeated, tag = "2")]
    pub r#match: Vec<FieldMatch>,
    #[prost(message, optional, tag = "3")]
    pub action: Option<TableAction>,
    #[prost(int32, tag = "4")]
    pub priority: i32,
    #[prost(uint64, tag = "5")]
    pub controller_metadata: u64,
    #[prost(bytes = "bytes", optional, tag = "6")]
    pub meter_config: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "7")]
    pub counter_data: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "12")]
    pub meter_counter_data: Option<Bytes>,
    #[prost(bool, tag = "8")]
    pub is_default_action: bool,
    #[prost(int64, tag = "9")]
    pub idle_timeout_ns: i64,
    #[prost(bytes = "bytes", optional, tag = "10")]
    pub time_since_last_hit: Option<Bytes>,
    #[prost(bytes = "bytes", tag = "11")]
    pub metadata: Bytes,
    #[prost(bool, tag = "13")]
    pub is_const: bool,
}

impl TableEntry {
    /// Whether the entry sets nothing but its table, key, action and priority.
    pub fn is_plain(&self) -> bool {
        self.controller_metadata == 0
            && self.meter_config.is_none()
            && self.counter_data.is_none()
            && self.meter_counter_data.is_none()
            && !self.is_default_action
            && self.idle_timeout_ns == 0
            && self.time_since_last_hit.is_none()
            && self.metadata.is_empty()
            && !self.is_const
    }
}

/// `p4.v1.FieldMatch`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FieldMatch {
    #[prost(uint32, tag = "1")]
    pub field_id: u32,
    #[prost(oneof = "Match", tags = "2, 3, 4, 6, 7, 100")]
    pub field_match_type: Option<Match>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Match {
    #[prost(message, tag = "2")]
    Exact(Value),
    #[prost(message, tag = "3")]
    Ternary(Pair),
    #[prost(message, tag = "4")]
    Lpm(Lpm),
    #[prost(message, tag = "6")]
    Range(Pair),
    #[prost(message, tag = "7")]
    Optional(Value),
    /// `google.protobuf.Any`, architecture-specific.
    #[prost(bytes = "bytes", tag = "100")]
    Other(Bytes),
}

/// `FieldMatch.Exact` and `FieldMatch.Optional`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(bytes = "bytes", tag = "1")]
    pub value: Bytes,
}

/// `FieldMatch.Ternary` (value, mask) and `FieldMatch.Range` (low, high).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Pair {
    #[prost(bytes = "bytes", tag = "1")]
    pub first: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub second: Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Lpm {
    #[prost(bytes = "bytes", tag = "1")]
    pub value: Bytes,
    #[prost(int32, tag = "2")]
    pub prefix_len: i32,
}

/// `p4.v1.TableAction`: an action, or a member, group or action set (left encoded).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableAction {
    #[prost(oneof = "ActionKind", tags = "1, 2, 3, 4")]
    pub r#type: Option<ActionKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ActionKind {
    #[prost(message, tag = "1")]
    Action(Action),
    #[prost(uint32, tag = "2")]
    ActionProfileMemberId(u32),
    #[prost(uint32, tag = "3")]
    ActionProfileGroupId(u32),
    #[prost(bytes = "bytes", tag = "4")]
    ActionProfileActionSet(Bytes),
}

/// `p4.v1.Action`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Action {
    #[prost(uint32, tag = "1")]
    pub action_id: u32,
    #[prost(message, repeated, tag = "4")]
    pub params: Vec<Param>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Param {
    #[prost(uint32, tag = "2")]
    pub param_id: u32,
    #[prost(bytes = "bytes", tag = "3")]
    pub value: Bytes,
}
