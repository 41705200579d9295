//! The packet generator, after Tofino's: timer applications that inject packets into ingress
//! as if received on an internal port, so that a P4 program can act at set times without
//! waiting for traffic (p4src's `lossless.p4` renews PFC pauses with it). Pure: time is passed
//! in, so the real-time dataplane and lossless-sim's virtual time drive it alike through
//! [`crate::core::Core::run_due`].
//!
//! Each packet is the 6-byte pktgen header in Tofino's (TF1) timer layout, `_pad:3 pipe_id:2
//! app_id:3 _pad:8 batch_id:16 packet_id:16` (pipe 0), then zeros up to the application's
//! `packet_len` (a zero Ethernet header behind the pktgen header, for the program to rewrite).

use serde::{Deserialize, Serialize};
use switch_tm::{ConfigFormat, TmConfig};

/// The port generated packets enter on unless configured: below bmv2's drop port (511) and
/// away from the front-panel and CPU ports the lab uses.
pub const DEFAULT_PORT: u32 = 510;
/// Bytes of the pktgen header in front of every generated packet.
pub const HEADER_BYTES: usize = 6;
/// The header, then an Ethernet header.
const MIN_PACKET_LEN: usize = HEADER_BYTES + 14;
/// v1model ports are 9 bits wide.
const PORT_SPACE: u32 = 512;
/// Tofino's 3-bit application id.
const APPS: u8 = 8;
/// Batch and packet ids are 16 bits.
const IDS: u32 = 1 << 16;
/// Most packets one firing may make: a bound on the work of a single timer event.
pub const MAX_PACKETS_PER_FIRING: u64 = 1 << 16;

/// What the controller sets: the `pktgen` section of the port configuration (`--port-config`)
/// or the body of `PUT /pktgen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PktgenConfig {
    /// The ingress port generated packets arrive on (the P4 program's `PKTGEN_PORT`).
    #[serde(default = "default_port")]
    pub port: u32,
    #[serde(default)]
    pub apps: Vec<AppConfig>,
}

/// One periodic timer application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    /// 0..7, carried in each packet's header.
    pub app_id: u8,
    /// Time between firings; the first is one period after the application is configured.
    pub period_ns: u64,
    /// Each firing makes `batches` x `packets_per_batch` packets, ids counting from 0.
    #[serde(default = "one")]
    pub batches: u32,
    #[serde(default = "one")]
    pub packets_per_batch: u32,
    /// Length of each packet, header included (64 by default).
    #[serde(default = "default_packet_len")]
    pub packet_len: usize,
}

fn default_port() -> u32 {
    DEFAULT_PORT
}

fn one() -> u32 {
    1
}

fn default_packet_len() -> usize {
    64
}

/// A bad pktgen configuration: the field (`pktgen.apps[0].period_ns`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PktgenError {
    pub path: String,
    pub message: String,
}

fn bad(path: String, message: impl Into<String>) -> PktgenError {
    PktgenError {
        path,
        message: message.into(),
    }
}

impl PktgenConfig {
    /// Parses a `PUT /pktgen` body (JSON or YAML); field paths start at `pktgen`.
    pub fn parse(text: &str, format: ConfigFormat) -> Result<PktgenConfig, PktgenError> {
        match format {
            ConfigFormat::Json => from(&mut serde_json::Deserializer::from_str(text)),
            ConfigFormat::Yaml => from(serde_yaml::Deserializer::from_str(text)),
        }
    }
}

/// A configuration from any serde source, errors at their field path under `pktgen`.
fn from<'de, D: serde::Deserializer<'de>>(de: D) -> Result<PktgenConfig, PktgenError> {
    serde_path_to_error::deserialize(de).map_err(|e| {
        bad(
            at("pktgen", &e.path().to_string()),
            e.into_inner().to_string(),
        )
    })
}

impl PktgenConfig {
    /// Ranges and uniqueness; `taken` are the switch's own ports (and its CPU port), which the
    /// generator's port must not be.
    pub fn validate(&self, taken: &[u32]) -> Result<(), PktgenError> {
        if self.port >= PORT_SPACE - 1 {
            return Err(bad(
                "pktgen.port".into(),
                format!("{} is not a port below the drop port 511", self.port),
            ));
        }
        if taken.contains(&self.port) {
            return Err(bad(
                "pktgen.port".into(),
                format!("{} is one of the switch's ports", self.port),
            ));
        }
        let mut seen = [false; APPS as usize];
        for (i, app) in self.apps.iter().enumerate() {
            let path = |field: &str| format!("pktgen.apps[{i}].{field}");
            if app.app_id >= APPS {
                return Err(bad(path("app_id"), format!("{} is not 0..7", app.app_id)));
            }
            if std::mem::replace(&mut seen[app.app_id as usize], true) {
                return Err(bad(
                    path("app_id"),
                    format!("{} is configured twice", app.app_id),
                ));
            }
            if app.period_ns == 0 {
                return Err(bad(path("period_ns"), "must be at least 1"));
            }
            for (field, n) in [
                ("batches", app.batches),
                ("packets_per_batch", app.packets_per_batch),
            ] {
                if n == 0 || n > IDS {
                    return Err(bad(path(field), format!("{n} is not 1..{IDS}")));
                }
            }
            let packets = u64::from(app.batches) * u64::from(app.packets_per_batch);
            if packets > MAX_PACKETS_PER_FIRING {
                return Err(bad(
                    path("packets_per_batch"),
                    format!(
                        "batches x packets_per_batch = {packets}, more than {MAX_PACKETS_PER_FIRING} per firing"
                    ),
                ));
            }
            if !(MIN_PACKET_LEN..=switch_ports::MAX_FRAME).contains(&app.packet_len) {
                return Err(bad(
                    path("packet_len"),
                    format!(
                        "{} is not {MIN_PACKET_LEN}..{}",
                        app.packet_len,
                        switch_ports::MAX_FRAME
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A bad port-configuration file: the traffic manager's part or the `pktgen` section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortConfigError {
    #[error(transparent)]
    Tm(#[from] switch_tm::ConfigError),
    #[error(transparent)]
    Pktgen(#[from] PktgenError),
}

/// A port-configuration file (`--port-config`, what `lossless-ctl port-config` writes):
/// switch-tm's configuration, and this switch's own `pktgen` section, which the traffic
/// manager does not know and which is taken out before it reads the rest.
pub fn parse_port_config(
    text: &str,
    format: ConfigFormat,
) -> Result<(TmConfig, Option<PktgenConfig>), PortConfigError> {
    let split = match format {
        ConfigFormat::Json => serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|mut doc| {
                let section = doc.as_object_mut()?.remove("pktgen")?;
                Some((doc.to_string(), from(section)))
            }),
        ConfigFormat::Yaml => serde_yaml::from_str::<serde_yaml::Value>(text)
            .ok()
            .and_then(|mut doc| {
                let section = doc.as_mapping_mut()?.remove("pktgen")?;
                Some((serde_yaml::to_string(&doc).ok()?, from(section)))
            }),
    };
    // Without a pktgen section the traffic manager reads the text as written, so its errors
    // keep their lines and columns.
    let Some((rest, pktgen)) = split else {
        return Ok((TmConfig::parse(text, format)?, None));
    };
    let tm = TmConfig::parse(&rest, format)?;
    Ok((tm, Some(pktgen?)))
}

fn at(root: &str, path: &str) -> String {
    match path {
        "" | "." => root.to_string(),
        p if p.starts_with('[') => format!("{root}{p}"),
        p => format!("{root}.{p}"),
    }
}

/// The running generator: the configuration and when each application fires next.
#[derive(Debug, Clone)]
pub struct Pktgen {
    config: PktgenConfig,
    next_ns: Vec<u64>,
    frame: Vec<u8>,
}

/// What one call to [`Pktgen::fire`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fired {
    pub packets: u64,
    /// Firings that fell due more than one period ago (a late real-time wake-up): they are
    /// skipped, not made up, so that a stalled switch does not flood its own pipeline.
    pub skipped: u64,
}

impl Pktgen {
    /// A validated configuration started at `now_ns`: each application first fires one period
    /// later.
    pub fn new(config: PktgenConfig, now_ns: u64) -> Pktgen {
        let next_ns = config
            .apps
            .iter()
            .map(|a| now_ns.saturating_add(a.period_ns))
            .collect();
        Pktgen {
            config,
            next_ns,
            frame: Vec::new(),
        }
    }

    pub fn config(&self) -> &PktgenConfig {
        &self.config
    }

    /// When the next application fires; `None` without applications.
    pub fn next_ns(&self) -> Option<u64> {
        self.next_ns.iter().copied().min()
    }

    /// Makes the packets of every application due at `now_ns`, handing each to `inject` with
    /// the generator's port, in application, batch, packet order.
    pub fn fire(&mut self, now_ns: u64, mut inject: impl FnMut(u32, &[u8])) -> Fired {
        let mut fired = Fired::default();
        for (app, next) in self.config.apps.iter().zip(self.next_ns.iter_mut()) {
            if *next > now_ns {
                continue;
            }
            let late = (now_ns - *next) / app.period_ns;
            fired.skipped += late;
            *next += (late + 1) * app.period_ns;
            self.frame.clear();
            self.frame.resize(app.packet_len, 0);
            self.frame[0] = app.app_id;
            for batch in 0..app.batches {
                self.frame[2..4].copy_from_slice(&(batch as u16).to_be_bytes());
                for packet in 0..app.packets_per_batch {
                    self.frame[4..6].copy_from_slice(&(packet as u16).to_be_bytes());
                    inject(self.config.port, &self.frame);
                    fired.packets += 1;
                }
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(app_id: u8, period_ns: u64, batches: u32, packets: u32) -> AppConfig {
        AppConfig {
            app_id,
            period_ns,
            batches,
            packets_per_batch: packets,
            packet_len: 64,
        }
    }

    #[test]
    fn fires_every_period_with_tofino_header() {
        let cfg = PktgenConfig {
            port: DEFAULT_PORT,
            apps: vec![app(5, 1000, 2, 3)],
        };
        let mut g = Pktgen::new(cfg, 500);
        assert_eq!(g.next_ns(), Some(1500));
        let mut seen = Vec::new();
        assert_eq!(g.fire(1499, |_, _| panic!("not due")), Fired::default());
        let fired = g.fire(1500, |port, f| {
            assert_eq!((port, f.len()), (DEFAULT_PORT, 64));
            assert!(f[6..].iter().all(|&b| b == 0));
            // app 5 in bits 2..0 of the first byte, pipe 0.
            assert_eq!(f[..2], [0x05, 0]);
            seen.push((
                u16::from_be_bytes([f[2], f[3]]),
                u16::from_be_bytes([f[4], f[5]]),
            ));
        });
        assert_eq!(fired.packets, 6);
        assert_eq!(seen, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        assert_eq!(g.next_ns(), Some(2500));
        // Three periods late: one firing now, two skipped, the next back on the grid.
        let fired = g.fire(4700, |_, _| {});
        assert_eq!((fired.packets, fired.skipped), (6, 2));
        assert_eq!(g.next_ns(), Some(5500));
    }

    #[test]
    fn bad_values_name_their_field() {
        let check = |text: &str, taken: &[u32]| {
            PktgenConfig::parse(text, ConfigFormat::Json)
                .and_then(|c| c.validate(taken))
                .unwrap_err()
                .to_string()
        };
        let one = |a: &str| format!("{{\"apps\": [{a}]}}");
        assert_eq!(
            check(&one(r#"{"app_id": 0, "period_ns": 0}"#), &[]),
            "pktgen.apps[0].period_ns: must be at least 1"
        );
        assert_eq!(
            check(&one(r#"{"app_id": 8, "period_ns": 1}"#), &[]),
            "pktgen.apps[0].app_id: 8 is not 0..7"
        );
        let unknown = check(&one(r#"{"app_id": 0, "period": 1}"#), &[]);
        assert!(
            unknown.starts_with("pktgen.apps[0].period: unknown field `period`"),
            "{unknown}"
        );
        assert_eq!(
            check(
                &one(r#"{"app_id": 0, "period_ns": 1, "batches": 512, "packets_per_batch": 256}"#),
                &[]
            ),
            "pktgen.apps[0].packets_per_batch: batches x packets_per_batch = 131072, more than 65536 per firing"
        );
        assert_eq!(
            check(
                &one(r#"{"app_id": 0, "period_ns": 1, "packet_len": 8}"#),
                &[]
            ),
            format!(
                "pktgen.apps[0].packet_len: 8 is not 20..{}",
                switch_ports::MAX_FRAME
            )
        );
        assert_eq!(
            check(r#"{"port": 3}"#, &[1, 3]),
            "pktgen.port: 3 is one of the switch's ports"
        );
        assert_eq!(
            check(r#"{"port": 511}"#, &[]),
            "pktgen.port: 511 is not a port below the drop port 511"
        );
        assert_eq!(
            check(
                r#"{"apps": [{"app_id": 1, "period_ns": 1}, {"app_id": 1, "period_ns": 2}]}"#,
                &[]
            ),
            "pktgen.apps[1].app_id: 1 is configured twice"
        );
    }

    #[test]
    fn port_config_carries_a_pktgen_section_beside_the_traffic_manager() {
        let yaml = "buffer: {total_bytes: 65536}\nports:\n  - {port: 1, rate_bps: 1000000000, \
                    pfc_enable: [3], pfc_to_queue: {3: 3}}\n\
                    pktgen:\n  apps: [{app_id: 0, period_ns: 1000, packets_per_batch: 8}]\n";
        let (tm, pktgen) = parse_port_config(yaml, ConfigFormat::Yaml).unwrap();
        assert_eq!(tm.ports[0].port, 1);
        let pktgen = pktgen.expect("pktgen section");
        assert_eq!(
            (pktgen.port, pktgen.apps[0].packets_per_batch),
            (DEFAULT_PORT, 8)
        );
        let json = r#"{"buffer": {"total_bytes": 65536}, "ports": [], "pktgen": {"apps": [{"app_id": 0}]}}"#;
        assert_eq!(
            parse_port_config(json, ConfigFormat::Json)
                .unwrap_err()
                .to_string(),
            "pktgen.apps[0]: missing field `period_ns`"
        );
        let (_, none) = parse_port_config(
            r#"{"buffer": {"total_bytes": 65536}, "ports": []}"#,
            ConfigFormat::Json,
        )
        .unwrap();
        assert_eq!(none, None);
    }
}
