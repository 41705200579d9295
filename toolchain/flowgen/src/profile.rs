//! Traffic profiles: the YAML a user writes, in TRex's stateful format (seed 004).
//!
//! A profile is either a mapping or TRex's one-element list of that mapping. Every malformed
//! field is refused with its YAML path and position (`cap_info[1].cps (line 14, column 14): ...`):
//! value checks run inside deserialization (newtypes with `try_from`), so serde_yaml knows where
//! the bad value sits and `serde_path_to_error` knows which field it belongs to.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A profile file that could not be read or was refused.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{}{message}", path_prefix(path), location(*.line_col))]
pub struct ProfileError {
    pub file: String,
    /// The YAML path of the offending field (`.` for the document itself).
    pub path: String,
    /// 1-based line and column where serde_yaml saw the problem, when it knows.
    pub line_col: Option<(usize, usize)>,
    pub message: String,
}

fn path_prefix(path: &str) -> &str {
    if path == "." {
        ""
    } else {
        path
    }
}

fn location(line_col: Option<(usize, usize)>) -> String {
    match line_col {
        Some((l, c)) => format!(" (line {l}, column {c}): "),
        None => ": ".to_string(),
    }
}

impl ProfileError {
    /// An error found after parsing, for which only the YAML path is known.
    pub fn at(file: &Path, path: impl Into<String>, message: impl Into<String>) -> Self {
        ProfileError {
            file: file.display().to_string(),
            path: path.into(),
            line_col: None,
            message: message.into(),
        }
    }
}

/// A value its field does not allow. Checked during deserialization, so serde_yaml and
/// `serde_path_to_error` add the field's path and position around this message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FieldError {
    #[error("must be a whole number, got {0}")]
    NotWhole(f64),
    #[error("must be a number greater than 0, got {0}")]
    NotPositive(f64),
    #[error("must be a number of at least 0, got {0}")]
    Negative(f64),
    #[error("clients_end {end} is below clients_start {start}")]
    ClientsReversed { start: Ipv4Addr, end: Ipv4Addr },
    #[error("servers_end {end} is below servers_start {start}")]
    ServersReversed { start: Ipv4Addr, end: Ipv4Addr },
    #[error("must be a power of two from 2 to 1048576, got {0}")]
    Buckets(u64),
    #[error("must be from 1 to 8, got {0}")]
    Levels(u64),
    #[error("give either name (a pcap file) or builtin, not both")]
    BothSources,
    #[error("needs name (a pcap file) or builtin")]
    NoSource,
    #[error("w must be at least 1")]
    ZeroWeight,
    #[error("packets must be at least 1")]
    NoPackets,
    #[error("a tcp flow needs at least 4 packets (SYN, SYN-ACK, ACK, FIN), got {0}")]
    ShortTcp(u16),
    #[error("frame_size {size} is outside {min}..9216 bytes for a {kind} flow")]
    FrameSize {
        size: u16,
        min: usize,
        kind: BuiltinKind,
    },
    #[error("dscp must be 0..63, got {0}")]
    Dscp(u8),
    #[error("{0:?} is not a MAC address like 02:00:00:00:00:01")]
    Mac(String),
}

/// The whole profile: one generator, an optional timer-wheel tuning and the flow templates.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Default run length in seconds (`flowgen run -d` overrides it).
    #[serde(default = "default_duration")]
    pub duration: Positive,
    pub generator: Generator,
    #[serde(default)]
    pub tw: TwConfig,
    pub cap_info: Vec<CapInfo>,
}

/// Checks a number while serde_yaml still knows where it stands, so the error carries the
/// value's own line and column (a `try_from` check would run after, and point at the mapping).
struct Checked<T>(fn(f64) -> Result<T, FieldError>);

impl<T> serde::de::Visitor<'_> for Checked<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<T, E> {
        (self.0)(v).map_err(E::custom)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        (self.0)(v as f64).map_err(E::custom)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        (self.0)(v as f64).map_err(E::custom)
    }
}

/// A whole number from a YAML number.
fn whole(v: f64) -> Result<u64, FieldError> {
    if v.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&v) {
        Ok(v as u64)
    } else {
        Err(FieldError::NotWhole(v))
    }
}

macro_rules! checked_number {
    ($t:ty, $check:expr) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(Checked($check))
            }
        }
    };
}

checked_number!(Positive, Positive::try_from);
checked_number!(NonNegative, NonNegative::try_from);
checked_number!(Buckets, |v| Buckets::try_from(whole(v)?));
checked_number!(Levels, |v| Levels::try_from(whole(v)?));

fn default_duration() -> Positive {
    Positive(10.0)
}

/// A float > 0 (rates, times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Positive(pub f64);

impl TryFrom<f64> for Positive {
    type Error = FieldError;
    fn try_from(v: f64) -> Result<Self, FieldError> {
        if v.is_finite() && v > 0.0 {
            Ok(Positive(v))
        } else {
            Err(FieldError::NotPositive(v))
        }
    }
}

/// A float >= 0 (gaps, aging).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NonNegative(pub f64);

impl TryFrom<f64> for NonNegative {
    type Error = FieldError;
    fn try_from(v: f64) -> Result<Self, FieldError> {
        if v.is_finite() && v >= 0.0 {
            Ok(NonNegative(v))
        } else {
            Err(FieldError::Negative(v))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Addresses in order, wrapping at the end of the range.
    Seq,
    /// Uniformly random addresses in the range.
    Random,
}

/// TRex's `generator` section: where flow addresses come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawGenerator")]
pub struct Generator {
    pub distribution: Distribution,
    pub clients_start: Ipv4Addr,
    pub clients_end: Ipv4Addr,
    pub servers_start: Ipv4Addr,
    pub servers_end: Ipv4Addr,
    /// With `min_clients`: the client pool is `max(min_clients, clients_per_gb x offered
    /// Gb/s)` addresses from `clients_start`; without either, the whole range.
    pub clients_per_gb: Option<u32>,
    pub min_clients: Option<u32>,
    /// Added once per port pair index to both addresses of a flow.
    pub dual_port_mask: Ipv4Addr,
    /// Seconds a finished TCP flow keeps its state (TRex `tcp_aging`).
    pub tcp_aging: NonNegative,
    /// Seconds a finished UDP (and RoCEv2) flow keeps its state (TRex `udp_aging`).
    pub udp_aging: NonNegative,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a generator mapping")]
struct RawGenerator {
    #[serde(default = "default_distribution")]
    distribution: Distribution,
    clients_start: Ipv4Addr,
    clients_end: Ipv4Addr,
    servers_start: Ipv4Addr,
    servers_end: Ipv4Addr,
    clients_per_gb: Option<u32>,
    min_clients: Option<u32>,
    #[serde(default = "zero_addr")]
    dual_port_mask: Ipv4Addr,
    #[serde(default)]
    tcp_aging: NonNegative,
    #[serde(default)]
    udp_aging: NonNegative,
}

fn default_distribution() -> Distribution {
    Distribution::Seq
}
fn one() -> u32 {
    1
}
fn zero_addr() -> Ipv4Addr {
    Ipv4Addr::UNSPECIFIED
}

impl TryFrom<RawGenerator> for Generator {
    type Error = FieldError;
    fn try_from(r: RawGenerator) -> Result<Self, FieldError> {
        if u32::from(r.clients_end) < u32::from(r.clients_start) {
            return Err(FieldError::ClientsReversed {
                start: r.clients_start,
                end: r.clients_end,
            });
        }
        if u32::from(r.servers_end) < u32::from(r.servers_start) {
            return Err(FieldError::ServersReversed {
                start: r.servers_start,
                end: r.servers_end,
            });
        }
        Ok(Generator {
            distribution: r.distribution,
            clients_start: r.clients_start,
            clients_end: r.clients_end,
            servers_start: r.servers_start,
            servers_end: r.servers_end,
            clients_per_gb: r.clients_per_gb,
            min_clients: r.min_clients,
            dual_port_mask: r.dual_port_mask,
            tcp_aging: r.tcp_aging,
            udp_aging: r.udp_aging,
        })
    }
}

/// The timer wheel's shape (TRex's `tw` section). TRex's defaults: 1024 buckets, 3 levels, 20 µs.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwConfig {
    #[serde(default = "default_buckets")]
    pub buckets: Buckets,
    #[serde(default = "default_levels")]
    pub levels: Levels,
    #[serde(default = "default_bucket_time")]
    pub bucket_time_usec: Positive,
}

impl Default for TwConfig {
    fn default() -> Self {
        TwConfig {
            buckets: default_buckets(),
            levels: default_levels(),
            bucket_time_usec: default_bucket_time(),
        }
    }
}

impl TwConfig {
    /// The bucket time in whole nanoseconds (at least 1).
    pub fn bucket_ns(&self) -> u64 {
        ((self.bucket_time_usec.0 * 1000.0).round() as u64).max(1)
    }
}

fn default_buckets() -> Buckets {
    Buckets(1024)
}
fn default_levels() -> Levels {
    Levels(3)
}
fn default_bucket_time() -> Positive {
    Positive(20.0)
}

/// Buckets per wheel level: a power of two from 2 to 2^20, so a tick splits into level indices
/// by shifts and masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets(pub u32);

impl TryFrom<u64> for Buckets {
    type Error = FieldError;
    fn try_from(v: u64) -> Result<Self, FieldError> {
        if v.is_power_of_two() && (2..=1 << 20).contains(&v) {
            Ok(Buckets(v as u32))
        } else {
            Err(FieldError::Buckets(v))
        }
    }
}

/// Wheel levels: 1 to 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Levels(pub u32);

impl TryFrom<u64> for Levels {
    type Error = FieldError;
    fn try_from(v: u64) -> Result<Self, FieldError> {
        if (1..=8).contains(&v) {
            Ok(Levels(v as u32))
        } else {
            Err(FieldError::Levels(v))
        }
    }
}

/// One flow template (a TRex `cap_info` entry).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawCapInfo")]
pub struct CapInfo {
    pub source: Source,
    /// New flows per second (before the multiplier).
    pub cps: Positive,
    /// Gap in µs between two packets in the same direction.
    pub ipg: NonNegative,
    /// Gap in µs where the direction changes (request to response); defaults to `ipg`.
    pub rtt: NonNegative,
    /// TRex `w`: this many consecutive flows of the template share one client address.
    pub w: u32,
}

#[derive(Debug, Clone)]
pub enum Source {
    /// A pcap file holding one flow, relative to the profile's directory.
    Pcap(PathBuf),
    Builtin(Builtin),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a cap_info entry (mapping)")]
struct RawCapInfo {
    name: Option<PathBuf>,
    builtin: Option<Builtin>,
    cps: Positive,
    #[serde(default)]
    ipg: NonNegative,
    rtt: Option<NonNegative>,
    #[serde(default = "one", alias = "weight")]
    w: u32,
}

impl TryFrom<RawCapInfo> for CapInfo {
    type Error = FieldError;
    fn try_from(r: RawCapInfo) -> Result<Self, FieldError> {
        let source = match (r.name, r.builtin) {
            (Some(p), None) => Source::Pcap(p),
            (None, Some(b)) => Source::Builtin(b),
            (Some(_), Some(_)) => return Err(FieldError::BothSources),
            (None, None) => return Err(FieldError::NoSource),
        };
        if r.w == 0 {
            return Err(FieldError::ZeroWeight);
        }
        Ok(CapInfo {
            source,
            cps: r.cps,
            ipg: r.ipg,
            rtt: r.rtt.unwrap_or(r.ipg),
            w: r.w,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinKind {
    Udp,
    Tcp,
    Rocev2Write,
}

impl fmt::Display for BuiltinKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuiltinKind::Udp => "udp",
            BuiltinKind::Tcp => "tcp",
            BuiltinKind::Rocev2Write => "rocev2_write",
        })
    }
}

/// A flow described in the profile instead of captured.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawBuiltin")]
pub struct Builtin {
    pub kind: BuiltinKind,
    pub packets: u16,
    /// Ethernet frame length without FCS.
    pub frame_size: u16,
    pub src_port: u16,
    pub dst_port: u16,
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub dscp: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a builtin flow mapping")]
struct RawBuiltin {
    kind: BuiltinKind,
    packets: u16,
    #[serde(default = "default_frame_size")]
    frame_size: u16,
    #[serde(default = "default_src_port")]
    src_port: u16,
    #[serde(default = "default_dst_port")]
    dst_port: u16,
    #[serde(default = "default_src_mac")]
    src_mac: Mac,
    #[serde(default = "default_dst_mac")]
    dst_mac: Mac,
    #[serde(default = "default_dscp")]
    dscp: u8,
}

fn default_frame_size() -> u16 {
    64
}
fn default_src_port() -> u16 {
    1025
}
fn default_dst_port() -> u16 {
    // The discard service: a receiver that wants the traffic need not answer it.
    9
}
fn default_src_mac() -> Mac {
    Mac([0x02, 0, 0, 0, 0, 0x01])
}
fn default_dst_mac() -> Mac {
    Mac([0x02, 0, 0, 0, 0, 0x02])
}
fn default_dscp() -> u8 {
    // SONiC's AZURE DSCP_TO_TC_MAP sends DSCP 3 to the lossless traffic class 3.
    3
}

/// Bytes of Ethernet + IPv4 headers, and the transport headers each built-in kind adds.
pub const ETH_IPV4_LEN: usize = 14 + 20;
pub const UDP_LEN: usize = 8;
pub const TCP_LEN: usize = 20;
/// UDP + BTH + RETH (first packet) + ICRC: the largest RoCEv2 WRITE header stack.
pub const ROCE_WRITE_FIRST_LEN: usize = UDP_LEN + 12 + 16 + 4;

impl BuiltinKind {
    /// The shortest frame that carries this kind's headers.
    pub fn min_frame(self) -> usize {
        ETH_IPV4_LEN
            + match self {
                BuiltinKind::Udp => UDP_LEN,
                BuiltinKind::Tcp => TCP_LEN,
                BuiltinKind::Rocev2Write => ROCE_WRITE_FIRST_LEN,
            }
    }
}

impl TryFrom<RawBuiltin> for Builtin {
    type Error = FieldError;
    fn try_from(r: RawBuiltin) -> Result<Self, FieldError> {
        if r.packets == 0 {
            return Err(FieldError::NoPackets);
        }
        if r.kind == BuiltinKind::Tcp && r.packets < 4 {
            return Err(FieldError::ShortTcp(r.packets));
        }
        let min = r.kind.min_frame();
        if (r.frame_size as usize) < min || r.frame_size as usize > 9216 {
            return Err(FieldError::FrameSize {
                size: r.frame_size,
                min,
                kind: r.kind,
            });
        }
        if r.dscp > 63 {
            return Err(FieldError::Dscp(r.dscp));
        }
        Ok(Builtin {
            kind: r.kind,
            packets: r.packets,
            frame_size: r.frame_size,
            src_port: r.src_port,
            dst_port: r.dst_port,
            src_mac: r.src_mac,
            dst_mac: r.dst_mac,
            dscp: r.dscp,
        })
    }
}

/// A MAC address written `02:00:00:00:00:01`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Mac(pub [u8; 6]);

impl TryFrom<String> for Mac {
    type Error = FieldError;
    fn try_from(s: String) -> Result<Self, FieldError> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in out.iter_mut() {
            let p = parts.next().unwrap_or("");
            match u8::from_str_radix(p, 16) {
                Ok(b) if p.len() == 2 => *byte = b,
                _ => return Err(FieldError::Mac(s)),
            }
        }
        if parts.next().is_some() {
            return Err(FieldError::Mac(s));
        }
        Ok(Mac(out))
    }
}

impl Profile {
    /// Reads and checks a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::at(path, ".", format!("cannot read: {e}")))?;
        Profile::parse(&text, path)
    }

    /// Parses profile text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Profile, ProfileError> {
        // TRex profiles are a list holding one profile; plain mappings are accepted too.
        let is_list = matches!(
            serde_yaml::from_str::<serde_yaml::Value>(text),
            Ok(serde_yaml::Value::Sequence(_))
        );
        let profile = if is_list {
            let list: Vec<Profile> = deserialize(text, file)?;
            let n = list.len();
            let mut it = list.into_iter();
            match (it.next(), n) {
                (Some(p), 1) => p,
                _ => {
                    return Err(ProfileError::at(
                        file,
                        ".",
                        format!("a profile list must hold exactly one profile, found {n}"),
                    ))
                }
            }
        } else {
            deserialize(text, file)?
        };
        if profile.cap_info.is_empty() {
            return Err(ProfileError::at(
                file,
                "cap_info",
                "needs at least one flow template",
            ));
        }
        Ok(profile)
    }
}

fn deserialize<T: serde::de::DeserializeOwned>(text: &str, file: &Path) -> Result<T, ProfileError> {
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line_col = inner.location().map(|l| (l.line(), l.column()));
        ProfileError {
            file: file.display().to_string(),
            path,
            line_col,
            message: bare_message(&inner.to_string()),
        }
    })
}

/// serde_yaml's message without the path and position it appends, which the error carries on
/// its own.
fn bare_message(msg: &str) -> String {
    let msg = match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    };
    // serde_yaml prefixes the path it tracked itself (`cap_info[0].cps: ...`).
    match msg.split_once(": ") {
        Some((head, rest)) if !head.contains(' ') => rest.to_string(),
        _ => msg.to_string(),
    }
}
