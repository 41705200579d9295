//! `fabric.json`: what `lossless_topo.simcase` derives from a topology file with the lab's own
//! code (port numbers, MACs, addresses, rates, delays) and the per-switch config_db.json paths.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fabric {
    pub topology: String,
    pub seed: String,
    pub experiment: serde_json::Value,
    pub case: String,
    pub cases: Vec<String>,
    pub switches: Vec<SwitchSpec>,
    pub hosts: Vec<HostSpec>,
    pub links: Vec<LinkDoc>,
    /// Per host: the NIC and PCIe latency between its endpoint and the wire, each way, from
    /// `experiment.host_latency_ns` (hosts it does not name: 0).
    #[serde(skip)]
    pub host_latency_ns: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    pub name: String,
    pub device_id: u64,
    pub mac: String,
    /// Relative to the fabric file's directory.
    pub config_db: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub name: String,
    pub switch: String,
    pub ip: std::net::Ipv4Addr,
    pub prefix_len: u8,
    pub mac: String,
    pub gateway: std::net::Ipv4Addr,
    pub gateway_mac: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    pub node: String,
    /// Switch port number; 0 for a host.
    pub port: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkDoc {
    pub a: End,
    pub b: End,
    pub rate_mbps: u64,
    pub delay_ns: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}({line}:{column}): {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    #[error("{path}: {source}")]
    HostLatency {
        path: PathBuf,
        source: HostLatencyError,
    },
}

/// What is wrong with `experiment.host_latency_ns`, at its JSON path.
#[derive(Debug, thiserror::Error)]
pub enum HostLatencyError {
    #[error("experiment.host_latency_ns: expected a non-negative integer (ns), got {value} or an object of host names to ns")]
    NotNsOrObject { value: serde_json::Value },
    #[error(
        "experiment.host_latency_ns.{host}: expected a non-negative integer (ns), got {value}"
    )]
    NotNs {
        host: String,
        value: serde_json::Value,
    },
    #[error("experiment.host_latency_ns.{host}: unknown host '{host}'")]
    UnknownHost { host: String },
}

/// "02:aa:00:00:00:01" as bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

impl Fabric {
    pub fn load(path: &Path) -> Result<Fabric, FabricError> {
        let text = std::fs::read_to_string(path).map_err(|source| FabricError::Read {
            path: path.into(),
            source,
        })?;
        let mut fabric: Fabric = serde_json::from_str(&text).map_err(|e| FabricError::Parse {
            path: path.into(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let invalid = |what: String| FabricError::Invalid {
            path: path.into(),
            what,
        };
        for (i, s) in fabric.switches.iter().enumerate() {
            parse_mac(&s.mac).ok_or_else(|| invalid(format!("switches[{i}].mac: not a MAC")))?;
        }
        for (i, h) in fabric.hosts.iter().enumerate() {
            parse_mac(&h.mac).ok_or_else(|| invalid(format!("hosts[{i}].mac: not a MAC")))?;
            parse_mac(&h.gateway_mac)
                .ok_or_else(|| invalid(format!("hosts[{i}].gateway_mac: not a MAC")))?;
        }
        for (i, l) in fabric.links.iter().enumerate() {
            if l.rate_mbps == 0 {
                return Err(invalid(format!("links[{i}].rate_mbps: must be positive")));
            }
            for (end, e) in [("a", &l.a), ("b", &l.b)] {
                let known = fabric.switches.iter().any(|s| s.name == e.node)
                    || fabric.hosts.iter().any(|h| h.name == e.node);
                if !known {
                    return Err(invalid(format!(
                        "links[{i}].{end}.node: unknown node '{}'",
                        e.node
                    )));
                }
            }
        }
        fabric.host_latency_ns =
            host_latencies(&fabric).map_err(|source| FabricError::HostLatency {
                path: path.into(),
                source,
            })?;
        Ok(fabric)
    }
}

/// `experiment.host_latency_ns`: one figure for every host, or an object of host name to
/// figure, in ns.
fn host_latencies(fabric: &Fabric) -> Result<BTreeMap<String, u64>, HostLatencyError> {
    let Some(v) = fabric.experiment.get("host_latency_ns") else {
        return Ok(BTreeMap::new());
    };
    if let Some(map) = v.as_object() {
        let mut out = BTreeMap::new();
        for (host, v) in map {
            if !fabric.hosts.iter().any(|h| &h.name == host) {
                return Err(HostLatencyError::UnknownHost { host: host.clone() });
            }
            let ns = v.as_u64().ok_or_else(|| HostLatencyError::NotNs {
                host: host.clone(),
                value: v.clone(),
            })?;
            out.insert(host.clone(), ns);
        }
        return Ok(out);
    }
    let all = v
        .as_u64()
        .ok_or_else(|| HostLatencyError::NotNsOrObject { value: v.clone() })?;
    Ok(fabric.hosts.iter().map(|h| (h.name.clone(), all)).collect())
}
