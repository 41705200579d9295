//! Switch port I/O, independent of the engine that forwards between ports.
//!
//! A [`Port`] sends whole Ethernet frames and receives them with a timeout. Backends:
//! - [`AfPacketPort`]: a Linux interface through an `AF_PACKET` raw socket (Mininet veths);
//! - [`ChannelPort`]: an in-process pair, so tests need neither root nor a kernel;
//! - [`PcapFilePort`]: bmv2's `--use-files` mode (`NAME_in.pcap` in, `NAME_out.pcap` out);
//! - [`Captured`]: wraps any port and records both directions as bmv2's `--pcap DIR` does.
//!
//! Ports take `&self` so one port can be shared (`Arc`) by a receiving and a sending thread.

mod afpacket;
mod capture;
mod channel;
pub mod pcap;

use std::os::fd::BorrowedFd;
use std::time::Duration;

pub use afpacket::{setsockopt, AfPacketPort};
pub use capture::Captured;
pub use channel::ChannelPort;
pub use pcap::PcapFilePort;

/// Largest frame a receive buffer must hold: a veth with GRO can hand over 64 KiB frames, plus
/// the Ethernet header and a re-inserted VLAN tag.
pub const MAX_FRAME: usize = 65_536 + 14 + 4;

/// What one [`Port::recv`] call produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// A frame of this many bytes is at the start of the buffer.
    Frame(usize),
    /// Nothing arrived before the timeout.
    Timeout,
    /// The port will never deliver again (peer gone, end of the input file).
    Closed,
}

/// A switch port: one full-duplex Ethernet attachment.
pub trait Port: Send + Sync {
    /// The name the port was opened with (interface name, file prefix, channel label).
    fn name(&self) -> &str;
    /// Transmits one frame, whole.
    fn send(&self, frame: &[u8]) -> Result<(), PortError>;
    /// Waits at most `timeout` for one frame and copies it into `buf`.
    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError>;
    /// A descriptor that polls readable when `recv` has a frame, so that one thread can wait
    /// on many ports at once; `None` for a port that can only be waited on through `recv`.
    fn readable_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
}

/// Every way port I/O fails; each names the port.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("port {port}: {op}: {source}")]
    Io {
        port: String,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "port {port}: received a {len}-byte frame into a {capacity}-byte buffer; frame dropped"
    )]
    Truncated {
        port: String,
        len: usize,
        capacity: usize,
    },
    #[error("port {port}: the peer is gone")]
    Disconnected { port: String },
    #[error(transparent)]
    Pcap(#[from] pcap::PcapError),
}

impl PortError {
    pub(crate) fn io(port: &str, op: &'static str, source: std::io::Error) -> Self {
        PortError::Io {
            port: port.to_string(),
            op,
            source,
        }
    }
}

/// Copies `frame` into `buf`, or reports the truncation the caller would otherwise miss.
pub(crate) fn deliver(port: &str, frame: &[u8], buf: &mut [u8]) -> Result<Recv, PortError> {
    if frame.len() > buf.len() {
        return Err(PortError::Truncated {
            port: port.to_string(),
            len: frame.len(),
            capacity: buf.len(),
        });
    }
    buf[..frame.len()].copy_from_slice(frame);
    Ok(Recv::Frame(frame.len()))
}
