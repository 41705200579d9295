//! Port configuration file (`--port-config FILE`, YAML or JSON). Field names follow SONiC where
//! SONiC has the concept (SCHEDULER `type`/`weight`, PORT_QOS_MAP `pfc_enable`, PFC_WD
//! `detection_time`/`restoration_time`/`action`, `POLL_INTERVAL`), so a controller reading
//! config_db.json can translate one-to-one.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Egress queues per port (bmv2 `--priority-queues 8`, SONiC's 8 unicast queues).
pub const QUEUES_PER_PORT: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmConfig {
    pub buffer: BufferConfig,
    /// SONiC PFC_WD GLOBAL POLL_INTERVAL: the watchdog looks at queues only this often.
    #[serde(default = "default_poll_interval_ms")]
    pub pfcwd_poll_interval_ms: u64,
    /// How far a late caller may start a backlogged port's next frame in the past, so that a
    /// real-time driver woken with jitter still reaches line rate over time. 0 for simulations.
    #[serde(default)]
    pub catch_up_ns: u64,
    pub ports: Vec<PortConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferConfig {
    /// Size of the shared packet buffer.
    pub total_bytes: u64,
    /// Accounting unit; defaults to the chip's cell, or 256 B (Trident 3) when no chip is given.
    #[serde(default)]
    pub cell_bytes: Option<u32>,
    #[serde(default)]
    pub chip: Option<Chip>,
}

/// A chip of `chips.json`, the table the controller (`lossless_ctl.chips`) loads too: its name and
/// buffer cell size (seed 000). Written by name in a config (`chip: tomahawk2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Chip {
    name: &'static str,
    cell_bytes: u32,
}

#[derive(Deserialize)]
struct ChipTable {
    chips: BTreeMap<String, ChipSpec>,
}

/// The fields the traffic manager uses; the rest (PFC limits, platforms) are the controller's.
#[derive(Deserialize)]
struct ChipSpec {
    cell_bytes: u32,
}

fn chip_table() -> &'static BTreeMap<String, ChipSpec> {
    static TABLE: OnceLock<BTreeMap<String, ChipSpec>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Compiled in and checked by this crate's tests, so a failure here is a build defect.
        serde_json::from_str::<ChipTable>(include_str!("../chips.json"))
            .expect("switch-tm/chips.json is a chip table")
            .chips
    })
}

impl Chip {
    /// Every chip of the table, by name.
    pub fn all() -> impl Iterator<Item = Chip> {
        chip_table().iter().map(|(name, spec)| Chip {
            name,
            cell_bytes: spec.cell_bytes,
        })
    }

    pub fn named(name: &str) -> Option<Chip> {
        Chip::all().find(|chip| chip.name == name)
    }

    pub fn name(self) -> &'static str {
        self.name
    }

    pub fn cell_bytes(self) -> u32 {
        self.cell_bytes
    }
}

/// A config names a chip that `chips.json` does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown chip `{name}` (known: {})", Chip::all().map(Chip::name).collect::<Vec<_>>().join(", "))]
pub struct UnknownChip {
    pub name: String,
}

impl TryFrom<String> for Chip {
    type Error = UnknownChip;

    fn try_from(name: String) -> Result<Self, UnknownChip> {
        Chip::named(&name).ok_or(UnknownChip { name })
    }
}

// By hand: a derived Deserialize would require 'de: 'static for the table's name.
impl<'de> Deserialize<'de> for Chip {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Chip::try_from(name).map_err(serde::de::Error::custom)
    }
}

impl From<Chip> for String {
    fn from(chip: Chip) -> String {
        chip.name.to_string()
    }
}

impl BufferConfig {
    pub fn effective_cell_bytes(&self) -> u32 {
        self.cell_bytes
            .or(self.chip.map(Chip::cell_bytes))
            .unwrap_or(256)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    /// Port number as the pipeline sees it (`egress_spec`).
    pub port: u32,
    /// Line rate in bits/s; egress is shaped to it counting preamble, SFD, IFG and padding.
    pub rate_bps: u64,
    /// IP MTU as Linux and SONiC give it: the longest frame admitted is `mtu + 18` bytes
    /// (Ethernet header and one 802.1Q tag, FCS excluded).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Queues not listed are STRICT with no limit of their own.
    #[serde(default)]
    pub queues: Vec<QueueConfig>,
    /// Cap on this port's share of the shared buffer.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// Priorities whose PFC frames pause queues (SONiC PORT_QOS_MAP `pfc_enable`).
    #[serde(default)]
    pub pfc_enable: Vec<u8>,
    /// Priority -> queue for PFC (SONiC MAP_PFC_PRIORITY_TO_QUEUE); unlisted priorities map to the
    /// queue of the same number.
    #[serde(default)]
    pub pfc_to_queue: BTreeMap<u8, u8>,
    /// Honour 802.3x PAUSE (pauses every queue of the port).
    #[serde(default = "default_true")]
    pub pause_enable: bool,
    #[serde(default)]
    pub pfcwd: Option<PfcwdConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    pub queue: u8,
    /// SONiC SCHEDULER `type`.
    #[serde(default, rename = "type")]
    pub scheduler: SchedulerType,
    /// SONiC SCHEDULER `weight` (1..=255), required for DWRR and WRR.
    #[serde(default)]
    pub weight: Option<u8>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// bmv2-style depth limit in packets (`set_queue_depth`).
    #[serde(default)]
    pub limit_packets: Option<u32>,
    /// SONiC BUFFER_PROFILE `dynamic_th`: the queue may hold at most 2^dynamic_th x free buffer.
    #[serde(default)]
    pub dynamic_th: Option<i8>,
    /// bmv2-style rate limit in packets/s (`set_queue_rate`): the queue sends its packets at
    /// least 1/rate_pps apart, whatever their size; the port's line rate still applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_pps: Option<u64>,
}

impl QueueConfig {
    /// A queue with its scheduler and weight and no limits of its own: the shared buffer and
    /// the port's line rate are all that bound it.
    pub fn scheduled(queue: u8, scheduler: SchedulerType, weight: Option<u8>) -> Self {
        QueueConfig {
            queue,
            scheduler,
            weight,
            limit_bytes: None,
            limit_packets: None,
            dynamic_th: None,
            rate_pps: None,
        }
    }
}

/// SCHEDULER `type`. STRICT queues are served before the DWRR/WRR group, higher queue first
/// (bmv2 priority queues: 7 highest). DWRR shares bytes by weight, WRR shares packets by weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SchedulerType {
    #[default]
    Strict,
    Dwrr,
    Wrr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcwdConfig {
    #[serde(default = "default_detection_time_ms")]
    pub detection_time_ms: u64,
    /// Defaults to twice the detection time, as `pfcwd start` does.
    #[serde(default)]
    pub restoration_time_ms: Option<u64>,
    #[serde(default)]
    pub action: PfcwdAction,
}

impl PfcwdConfig {
    pub fn effective_restoration_time_ms(&self) -> u64 {
        self.restoration_time_ms
            .unwrap_or(2 * self.detection_time_ms)
    }
}

/// SONiC pfcwd actions: `drop` discards the queue's packets and new arrivals, `forward` transmits
/// in spite of the pause, `alert` only records the storm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PfcwdAction {
    #[default]
    Drop,
    Forward,
    Alert,
}

fn default_poll_interval_ms() -> u64 {
    200
}
fn default_detection_time_ms() -> u64 {
    200
}
fn default_mtu() -> u32 {
    9100
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    Json,
    Yaml,
}

impl ConfigFormat {
    /// `.json` is JSON; anything else (`.yaml`, `.yml`) is read as YAML, which also accepts JSON.
    pub fn from_file_name(name: &str) -> Self {
        if name.to_ascii_lowercase().ends_with(".json") {
            ConfigFormat::Json
        } else {
            ConfigFormat::Yaml
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Syntax or type error; `path` is the field (e.g. `ports[1].queues[0].type`), `message`
    /// carries the line and column.
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// Well-formed but inconsistent configuration.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

fn invalid(path: String, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path,
        message: message.into(),
    }
}

impl TmConfig {
    pub fn parse(text: &str, format: ConfigFormat) -> Result<Self, ConfigError> {
        let parsed: Result<TmConfig, (String, String)> = match format {
            ConfigFormat::Json => {
                let de = &mut serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de)
                    .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
            }
            ConfigFormat::Yaml => {
                serde_path_to_error::deserialize(serde_yaml::Deserializer::from_str(text))
                    .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
            }
        };
        let cfg = parsed.map_err(|(path, message)| ConfigError::Parse { path, message })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks what types cannot: ranges, duplicates, weights required by DWRR.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let cell = self.buffer.effective_cell_bytes();
        if cell == 0 {
            return Err(invalid("buffer.cell_bytes".into(), "must be at least 1"));
        }
        if self.buffer.total_bytes < cell as u64 {
            return Err(invalid(
                "buffer.total_bytes".into(),
                format!("must hold at least one {cell}-byte cell"),
            ));
        }
        if self.pfcwd_poll_interval_ms == 0 {
            return Err(invalid(
                "pfcwd_poll_interval_ms".into(),
                "must be at least 1",
            ));
        }
        let mut seen = BTreeMap::new();
        for (i, p) in self.ports.iter().enumerate() {
            if let Some(first) = seen.insert(p.port, i) {
                return Err(invalid(
                    format!("ports[{i}].port"),
                    format!("port {} already configured at ports[{first}]", p.port),
                ));
            }
            p.validate(&format!("ports[{i}]"))?;
        }
        Ok(())
    }
}

impl PortConfig {
    /// A port with defaults everywhere but its number and rate.
    pub fn new(port: u32, rate_bps: u64) -> Self {
        PortConfig {
            port,
            rate_bps,
            mtu: default_mtu(),
            queues: Vec::new(),
            limit_bytes: None,
            pfc_enable: Vec::new(),
            pfc_to_queue: BTreeMap::new(),
            pause_enable: true,
            pfcwd: None,
        }
    }

    /// `at` is this port's path in the file, used in messages.
    pub fn validate(&self, at: &str) -> Result<(), ConfigError> {
        if self.rate_bps == 0 {
            return Err(invalid(format!("{at}.rate_bps"), "must be at least 1"));
        }
        if self.mtu < 68 {
            return Err(invalid(
                format!("{at}.mtu"),
                "below 68, the smallest IPv4 MTU",
            ));
        }
        let mut seen = [false; QUEUES_PER_PORT];
        for (j, q) in self.queues.iter().enumerate() {
            let qat = format!("{at}.queues[{j}]");
            let Some(slot) = seen.get_mut(q.queue as usize) else {
                return Err(invalid(
                    format!("{qat}.queue"),
                    format!("queue {} out of range 0..=7", q.queue),
                ));
            };
            if std::mem::replace(slot, true) {
                return Err(invalid(
                    format!("{qat}.queue"),
                    format!("queue {} listed twice", q.queue),
                ));
            }
            match (q.scheduler, q.weight) {
                (SchedulerType::Dwrr | SchedulerType::Wrr, None | Some(0)) => {
                    return Err(invalid(
                        format!("{qat}.weight"),
                        "DWRR and WRR queues need a weight of 1..=255",
                    ))
                }
                (SchedulerType::Strict, Some(_)) => {
                    return Err(invalid(
                        format!("{qat}.weight"),
                        "a STRICT queue has no weight",
                    ))
                }
                _ => {}
            }
            if let Some(th) = q.dynamic_th {
                if !(-8..=8).contains(&th) {
                    return Err(invalid(format!("{qat}.dynamic_th"), "out of range -8..=8"));
                }
            }
            if q.rate_pps == Some(0) {
                return Err(invalid(format!("{qat}.rate_pps"), "must be at least 1"));
            }
        }
        for (j, &p) in self.pfc_enable.iter().enumerate() {
            if p > 7 {
                return Err(invalid(
                    format!("{at}.pfc_enable[{j}]"),
                    format!("priority {p} out of range 0..=7"),
                ));
            }
        }
        for (&p, &q) in &self.pfc_to_queue {
            if p > 7 || q as usize >= QUEUES_PER_PORT {
                return Err(invalid(
                    format!("{at}.pfc_to_queue.{p}"),
                    format!("{p} -> {q}: priorities and queues are 0..=7"),
                ));
            }
        }
        if let Some(wd) = &self.pfcwd {
            if wd.detection_time_ms == 0 {
                return Err(invalid(
                    format!("{at}.pfcwd.detection_time_ms"),
                    "must be at least 1",
                ));
            }
            if wd.effective_restoration_time_ms() == 0 {
                return Err(invalid(
                    format!("{at}.pfcwd.restoration_time_ms"),
                    "must be at least 1",
                ));
            }
        }
        Ok(())
    }

    /// Queue that PFC priority `p` pauses.
    pub fn queue_of_priority(&self, p: u8) -> usize {
        self.pfc_to_queue.get(&p).copied().unwrap_or(p) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "
buffer: {total_bytes: 1048576, chip: tomahawk2}
ports:
  - port: 1
    rate_bps: 25000000000
    queues:
      - {queue: 3, type: DWRR, weight: 40}
      - {queue: 7, type: STRICT}
    pfc_enable: [3, 4]
    pfcwd: {detection_time_ms: 400}
";

    #[test]
    fn yaml_example_parses_with_sonic_defaults() {
        let c = TmConfig::parse(YAML, ConfigFormat::Yaml).unwrap();
        assert_eq!(c.buffer.effective_cell_bytes(), 208);
        assert_eq!(c.pfcwd_poll_interval_ms, 200);
        let p = &c.ports[0];
        assert_eq!(p.mtu, 9100);
        assert_eq!(p.queues[0].scheduler, SchedulerType::Dwrr);
        let wd = p.pfcwd.as_ref().unwrap();
        assert_eq!(wd.effective_restoration_time_ms(), 800);
        assert_eq!(wd.action, PfcwdAction::Drop);
        assert_eq!(p.queue_of_priority(4), 4);
    }

    /// Seed 000, appendix 2: the chipsets' packet buffer cell sizes.
    #[test]
    fn chip_table_has_seed_000_cell_sizes() {
        let table: Vec<(&str, u32)> = Chip::all().map(|c| (c.name(), c.cell_bytes())).collect();
        assert_eq!(
            table,
            [
                ("helix5", 256),
                ("tomahawk2", 208),
                ("tomahawk3", 254),
                ("trident3", 256)
            ]
        );
    }

    #[test]
    fn unknown_chip_is_named_with_the_known_ones_and_its_path() {
        let err = TmConfig::parse(
            "buffer: {total_bytes: 4096, chip: tomahawk9}\nports: []\n",
            ConfigFormat::Yaml,
        )
        .unwrap_err();
        let ConfigError::Parse { path, message } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(path, "buffer.chip");
        assert!(
            message.contains(
                "unknown chip `tomahawk9` (known: helix5, tomahawk2, tomahawk3, trident3)"
            ),
            "{message}"
        );
    }

    #[test]
    fn json_type_error_names_field_path_and_line() {
        let json = r#"{"buffer": {"total_bytes": 4096},
 "ports": [{"port": 1, "rate_bps": 1000},
           {"port": 2, "rate_bps": 1000, "queues": [{"queue": 1, "type": "FAIR"}]}]}"#;
        let err = TmConfig::parse(json, ConfigFormat::Json).unwrap_err();
        let ConfigError::Parse { path, message } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(path, "ports[1].queues[0].type");
        assert!(message.contains("line 3"), "{message}");
    }

    #[test]
    fn yaml_unknown_field_is_reported_with_path() {
        let bad = YAML.replace("pfc_enable", "pfc_enabled");
        let err = TmConfig::parse(&bad, ConfigFormat::Yaml).unwrap_err();
        assert!(err.to_string().starts_with("ports[0]"), "{err}");
        assert!(err.to_string().contains("pfc_enabled"), "{err}");
    }

    #[test]
    fn semantic_errors_name_the_field() {
        for (from, to, path) in [
            ("weight: 40", "weight: 0", "ports[0].queues[0].weight"),
            ("queue: 7", "queue: 8", "ports[0].queues[1].queue"),
            ("queue: 7", "queue: 3", "ports[0].queues[1].queue"),
            ("[3, 4]", "[3, 9]", "ports[0].pfc_enable[1]"),
            ("rate_bps: 25000000000", "rate_bps: 0", "ports[0].rate_bps"),
        ] {
            let err = TmConfig::parse(&YAML.replace(from, to), ConfigFormat::Yaml).unwrap_err();
            match err {
                ConfigError::Invalid { path: p, .. } => assert_eq!(p, path),
                other => panic!("{from} -> {to}: {other:?}"),
            }
        }
    }

    #[test]
    fn readme_example_is_valid() {
        let readme = include_str!("../README.md");
        let start = readme.find("```yaml\n").unwrap() + 8;
        let len = readme[start..].find("```").unwrap();
        let c = TmConfig::parse(&readme[start..start + len], ConfigFormat::Yaml).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert_eq!(c.ports[0].queues[1].dynamic_th, Some(1));
    }

    #[test]
    fn duplicate_port_is_rejected() {
        let dup = format!("{YAML}  - {{port: 1, rate_bps: 1000}}\n");
        let err = TmConfig::parse(&dup, ConfigFormat::Yaml).unwrap_err();
        assert!(err.to_string().starts_with("ports[1].port"), "{err}");
    }
}
