//! Role configs. The spec (section 15) leaves `Role.config` (a `google.protobuf.Any`) to the
//! target; this server understands `stratum.P4RoleConfig`, the format Stratum defines and ONOS
//! sends, so that a role can be confined to part of the pipeline. Its fields, by tag:
//! 1 `exclusive_p4_ids` and 2 `shared_p4_ids` (the P4 objects the role may write and read; no
//! other role may list an object another role holds exclusively), 3 `packet_in_filter` (a
//! PacketIn reaches the role only if its metadata `metadata_id` equals `value`), 4
//! `receives_packet_ins`, 5 `can_push_pipeline`.

use std::collections::HashSet;

use p4runtime_proto::google::rpc::Code;
use p4runtime_proto::p4runtime::{entity, Entity, PacketMetadata};

/// `stratum.P4RoleConfig`, declared here by its wire format (the type is not in the
/// `p4runtime` package).
#[derive(Clone, PartialEq, prost::Message)]
pub struct P4RoleConfig {
    #[prost(uint32, repeated, tag = "1")]
    pub exclusive_p4_ids: Vec<u32>,
    #[prost(uint32, repeated, tag = "2")]
    pub shared_p4_ids: Vec<u32>,
    #[prost(message, optional, tag = "3")]
    pub packet_in_filter: Option<PacketFilter>,
    #[prost(bool, tag = "4")]
    pub receives_packet_ins: bool,
    #[prost(bool, tag = "5")]
    pub can_push_pipeline: bool,
}

/// `stratum.P4RoleConfig.PacketFilter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PacketFilter {
    #[prost(uint32, tag = "1")]
    pub metadata_id: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// The `Any` type URL of [`P4RoleConfig`].
pub const TYPE_URL: &str = "type.googleapis.com/stratum.P4RoleConfig";

/// A decoded role config with its P4 ids as a set.
#[derive(Debug, Clone)]
pub struct RoleConfig {
    pub config: P4RoleConfig,
    pub ids: HashSet<u32>,
}

impl RoleConfig {
    pub fn from_any(any: &prost_types::Any) -> Result<RoleConfig, (Code, String)> {
        // Any's type URL is "<host>/<full message name>"; the host is not significant.
        let name = any.type_url.rsplit('/').next().unwrap_or_default();
        if name != "stratum.P4RoleConfig" {
            return Err((
                Code::Unimplemented,
                format!(
                    "role config of type \"{}\": this switch understands {TYPE_URL} only",
                    any.type_url
                ),
            ));
        }
        let config = <P4RoleConfig as prost::Message>::decode(any.value.as_slice())
            .map_err(|e| (Code::InvalidArgument, format!("role config: {e}")))?;
        let ids = config
            .exclusive_p4_ids
            .iter()
            .chain(&config.shared_p4_ids)
            .copied()
            .collect();
        Ok(RoleConfig { config, ids })
    }

    /// The first id that one of the two configs holds exclusively and the other lists.
    pub fn conflict(&self, other: &RoleConfig) -> Option<u32> {
        let claims = |a: &RoleConfig, b: &RoleConfig| {
            a.config
                .exclusive_p4_ids
                .iter()
                .find(|id| b.ids.contains(id))
                .copied()
        };
        claims(self, other).or_else(|| claims(other, self))
    }

    /// Whether the role may write and read `e`. Entities without a P4 id (the packet
    /// replication engine) belong to roles without a config only.
    pub fn allows(&self, e: &Entity) -> bool {
        entity_id(e).is_some_and(|id| self.allows_id(id))
    }

    /// Whether the role has the P4 object `id` (a table, a digest, ...).
    pub fn allows_id(&self, id: u32) -> bool {
        self.ids.contains(&id)
    }

    pub fn wants_packet_in(&self, metadata: &[PacketMetadata]) -> bool {
        self.config.receives_packet_ins
            && self.config.packet_in_filter.as_ref().map_or(true, |f| {
                metadata
                    .iter()
                    .any(|m| m.metadata_id == f.metadata_id && m.value == f.value)
            })
    }
}

/// The P4Info id an entity belongs to: its table for entries and direct resources, else the
/// object's own id.
fn entity_id(e: &Entity) -> Option<u32> {
    let table =
        |te: &Option<p4runtime_proto::p4runtime::TableEntry>| te.as_ref().map(|t| t.table_id);
    match e.entity.as_ref()? {
        entity::Entity::TableEntry(t) => Some(t.table_id),
        entity::Entity::DirectCounterEntry(d) => table(&d.table_entry),
        entity::Entity::DirectMeterEntry(d) => table(&d.table_entry),
        entity::Entity::CounterEntry(c) => Some(c.counter_id),
        entity::Entity::MeterEntry(m) => Some(m.meter_id),
        entity::Entity::RegisterEntry(r) => Some(r.register_id),
        entity::Entity::ActionProfileMember(m) => Some(m.action_profile_id),
        entity::Entity::ActionProfileGroup(g) => Some(g.action_profile_id),
        entity::Entity::ValueSetEntry(v) => Some(v.value_set_id),
        entity::Entity::DigestEntry(d) => Some(d.digest_id),
        entity::Entity::ExternEntry(x) => Some(x.extern_id),
        entity::Entity::PacketReplicationEngineEntry(_) => None,
    }
}
