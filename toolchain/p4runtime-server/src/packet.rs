//! PacketOut (spec 16.1): the `packet_out` controller header built from the message's metadata
//! and put in front of the payload, as the CPU port's frame.

use crate::bytes::{pack_bits, to_engine, ByteStringError};
use crate::pipeline::Pipeline;
use p4runtime_proto::google::rpc::Code;
use p4runtime_proto::p4runtime::PacketMetadata;

/// Why a PacketOut is refused; the stream answers it with a `StreamError` carrying the packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketOutError {
    #[error("only the primary may send PacketOut")]
    NotPrimary,
    #[error("no pipeline")]
    NoPipeline,
    #[error("the P4Info has no packet_out controller header")]
    NoHeader,
    #[error("packet_out metadata id {0} missing")]
    MissingMetadata(u32),
    #[error("packet_out has no metadata id {0}")]
    UnknownMetadata(u32),
    #[error(transparent)]
    Value(#[from] ByteStringError),
}

impl PacketOutError {
    /// The canonical gRPC code of the `StreamError`.
    pub fn code(&self) -> Code {
        match self {
            PacketOutError::NotPrimary => Code::PermissionDenied,
            PacketOutError::NoPipeline => Code::FailedPrecondition,
            PacketOutError::NoHeader
            | PacketOutError::MissingMetadata(_)
            | PacketOutError::UnknownMetadata(_)
            | PacketOutError::Value(_) => Code::InvalidArgument,
        }
    }
}

/// The frame a PacketOut injects: its metadata packed as the `packet_out` header, then the
/// payload (the payload alone when the P4Info has no such header and no metadata came).
pub fn frame(
    p: &Pipeline,
    metadata: &[PacketMetadata],
    payload: &[u8],
) -> Result<Vec<u8>, PacketOutError> {
    let Some(hdr) = &p.packet_out else {
        if !metadata.is_empty() {
            return Err(PacketOutError::NoHeader);
        }
        return Ok(payload.to_vec());
    };
    let mut fields = Vec::with_capacity(hdr.len());
    for (id, width) in hdr {
        let Some(m) = metadata.iter().find(|m| m.metadata_id == *id) else {
            return Err(PacketOutError::MissingMetadata(*id));
        };
        let v = to_engine(
            &m.value,
            *width,
            format_args!("packet_out metadata id {id}"),
        )?;
        fields.push((v, *width));
    }
    if let Some(m) = metadata
        .iter()
        .find(|m| !hdr.iter().any(|h| h.0 == m.metadata_id))
    {
        return Err(PacketOutError::UnknownMetadata(m.metadata_id));
    }
    let mut frame = pack_bits(&fields);
    frame.extend_from_slice(payload);
    Ok(frame)
}
