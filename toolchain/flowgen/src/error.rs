//! flowgen's error type. Each failure names where it happened (an interface, a file, a
//! template's place in the profile, an option) so that the binary prints it as one line.

use std::io;
use std::path::Path;

use switch_ports::PortError;

use crate::profile::ProfileError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on an interface or a file failed; `at` names it, `op` is the step.
    #[error("{at}: {op}: {source}")]
    Os {
        at: String,
        op: String,
        #[source]
        source: io::Error,
    },
    /// An interface, file or port pair that cannot be used as asked.
    #[error("{at}: {message}")]
    Unusable { at: String, message: String },
    /// A plain AF_PACKET port failed (switch-ports names the interface).
    #[error(transparent)]
    Port(#[from] PortError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A template that cannot be generated; `at` is its place in the profile, e.g.
    /// `flows.yaml: cap_info[0].name: x.pcap: record 3`.
    #[error("{at}: {message}")]
    Template { at: String, message: String },
    /// A template packet whose headers flowgen cannot rewrite; `at` as for `Template`.
    #[error("{at}: {source}")]
    Frame {
        at: String,
        #[source]
        source: FrameError,
    },
    /// A run or benchmark setting that cannot be met; `at` is the option (`--active-flows`).
    #[error("{at}: {message}")]
    Setting { at: String, message: String },
}

impl Error {
    pub(crate) fn os(at: impl Into<String>, op: impl Into<String>, source: io::Error) -> Error {
        Error::Os {
            at: at.into(),
            op: op.into(),
            source,
        }
    }

    pub(crate) fn file(path: &Path, op: &str, source: io::Error) -> Error {
        Error::os(path.display().to_string(), op, source)
    }

    pub(crate) fn unusable(at: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Unusable {
            at: at.into(),
            message: message.into(),
        }
    }

    pub(crate) fn template(at: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Template {
            at: at.into(),
            message: message.into(),
        }
    }

    pub(crate) fn setting(at: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Setting {
            at: at.into(),
            message: message.into(),
        }
    }
}

/// Why a template packet cannot be generated from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("{0}-byte frame is shorter than an Ethernet header")]
    Short(usize),
    #[error("IPv6 templates are not supported")]
    Ipv6,
    #[error("ethertype {0:#06x} is not IPv4")]
    Ethertype(u16),
    #[error("truncated or malformed IPv4 header")]
    BadIpv4,
    #[error("IPv4 header length {ihl} / total length {total} do not fit the {len}-byte packet")]
    Ipv4Length {
        ihl: usize,
        total: usize,
        len: usize,
    },
    #[error("{0}-byte transport segment is truncated")]
    Transport(usize),
}
