//! Statistics snapshot of the traffic manager, rendered as JSON (serde) or Prometheus text.

use crate::config::SchedulerType;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::fmt::Write;

/// Why a packet did not make it through the traffic manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The pipeline chose a port the TM has no configuration for.
    UnknownPort,
    /// Queue number outside 0..=7.
    InvalidQueue,
    /// Frame longer than the port's MTU allows.
    MtuExceeded,
    /// The shared buffer has no free cells.
    BufferExhausted,
    /// The port's own buffer limit is reached.
    PortLimit,
    /// The queue's static limit (bytes or packets) is reached.
    QueueLimit,
    /// The queue exceeds its dynamic threshold (2^dynamic_th x free buffer).
    DynamicThreshold,
    /// The PFC watchdog's drop action holds the queue.
    PfcWatchdog,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::UnknownPort,
        DropReason::InvalidQueue,
        DropReason::MtuExceeded,
        DropReason::BufferExhausted,
        DropReason::PortLimit,
        DropReason::QueueLimit,
        DropReason::DynamicThreshold,
        DropReason::PfcWatchdog,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::UnknownPort => "unknown_port",
            DropReason::InvalidQueue => "invalid_queue",
            DropReason::MtuExceeded => "mtu_exceeded",
            DropReason::BufferExhausted => "buffer_exhausted",
            DropReason::PortLimit => "port_limit",
            DropReason::QueueLimit => "queue_limit",
            DropReason::DynamicThreshold => "dynamic_threshold",
            DropReason::PfcWatchdog => "pfc_watchdog",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Packets dropped, by reason. Serialises as `{"reason": count, ...}` with every reason present.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounts([u64; DropReason::ALL.len()]);

impl DropCounts {
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub(crate) fn add(&mut self, reason: DropReason) {
        self.0[reason.index()] += 1;
    }
}

impl Serialize for DropCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for r in DropReason::ALL {
            m.serialize_entry(r.as_str(), &self.get(r))?;
        }
        m.end()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmStats {
    pub time_ns: u64,
    /// Start of the counting window: TM creation or the last `clear`.
    pub since_ns: u64,
    pub buffer: BufferStats,
    pub unknown_port_drops: u64,
    pub unknown_port_rx: u64,
    pub ports: Vec<PortStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferStats {
    pub cell_bytes: u32,
    pub total_cells: u64,
    pub used_cells: u64,
    pub peak_cells: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortStats {
    pub port: u32,
    pub rate_bps: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: DropCounts,
    pub used_cells: u64,
    pub peak_cells: u64,
    /// PFC frames received with the priority's class-enable bit set (honoured or not).
    pub pfc_rx: [u64; 8],
    /// 802.3x PAUSE frames received.
    pub pause_rx: u64,
    /// MAC control frames with other opcodes, consumed without effect.
    pub mac_control_other_rx: u64,
    /// MAC control frames too short for their opcode.
    pub mac_control_malformed: u64,
    pub queues: Vec<QueueStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueStats {
    pub queue: usize,
    pub scheduler: SchedulerType,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: DropCounts,
    pub depth_packets: u64,
    pub depth_bytes: u64,
    pub depth_cells: u64,
    /// Watermarks since the last clear.
    pub peak_bytes: u64,
    pub peak_cells: u64,
    /// Time-weighted mean occupancy since the last clear.
    pub avg_bytes: f64,
    pub avg_cells: f64,
    pub paused: bool,
    /// Time spent paused (PFC or PAUSE) since the last clear.
    pub paused_ns: u64,
    pub pfcwd: PfcwdQueueStats,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PfcwdQueueStats {
    pub enabled: bool,
    pub stormed: bool,
    pub storms_detected: u64,
    pub restorations: u64,
}

/// One Prometheus metric family being written.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &'static str, kind: &str, help: &str) -> Self {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        Family { out, name }
    }

    fn sample(&mut self, labels: &[(&str, &dyn std::fmt::Display)], value: impl std::fmt::Display) {
        let _ = write!(self.out, "{}", self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(self.out, "{sep}{k}=\"{v}\"");
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

type PortMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&PortStats) -> u64,
);
type QueueMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&QueueStats) -> f64,
);

const PORT_METRICS: &[PortMetric] = &[
    (
        "lossless_tm_port_rx_packets_total",
        "counter",
        "Frames received",
        |p| p.rx_packets,
    ),
    (
        "lossless_tm_port_rx_bytes_total",
        "counter",
        "Bytes received",
        |p| p.rx_bytes,
    ),
    (
        "lossless_tm_port_tx_packets_total",
        "counter",
        "Frames transmitted",
        |p| p.tx_packets,
    ),
    (
        "lossless_tm_port_tx_bytes_total",
        "counter",
        "Bytes transmitted",
        |p| p.tx_bytes,
    ),
    (
        "lossless_tm_port_used_cells",
        "gauge",
        "Buffer cells held by the port",
        |p| p.used_cells,
    ),
    (
        "lossless_tm_port_peak_cells",
        "gauge",
        "Watermark of buffer cells held by the port",
        |p| p.peak_cells,
    ),
    (
        "lossless_tm_port_pause_rx_frames_total",
        "counter",
        "802.3x PAUSE frames received",
        |p| p.pause_rx,
    ),
    (
        "lossless_tm_port_mac_control_other_rx_frames_total",
        "counter",
        "MAC control frames with other opcodes received",
        |p| p.mac_control_other_rx,
    ),
    (
        "lossless_tm_port_mac_control_malformed_frames_total",
        "counter",
        "Truncated MAC control frames received",
        |p| p.mac_control_malformed,
    ),
];

const QUEUE_METRICS: &[QueueMetric] = &[
    (
        "lossless_tm_queue_tx_packets_total",
        "counter",
        "Frames transmitted from the queue",
        |q| q.tx_packets as f64,
    ),
    (
        "lossless_tm_queue_tx_bytes_total",
        "counter",
        "Bytes transmitted from the queue",
        |q| q.tx_bytes as f64,
    ),
    (
        "lossless_tm_queue_depth_packets",
        "gauge",
        "Packets queued",
        |q| q.depth_packets as f64,
    ),
    (
        "lossless_tm_queue_depth_bytes",
        "gauge",
        "Bytes queued",
        |q| q.depth_bytes as f64,
    ),
    (
        "lossless_tm_queue_depth_cells",
        "gauge",
        "Buffer cells queued",
        |q| q.depth_cells as f64,
    ),
    (
        "lossless_tm_queue_watermark_bytes",
        "gauge",
        "Peak bytes queued since the last clear",
        |q| q.peak_bytes as f64,
    ),
    (
        "lossless_tm_queue_watermark_cells",
        "gauge",
        "Peak cells queued since the last clear",
        |q| q.peak_cells as f64,
    ),
    (
        "lossless_tm_queue_avg_bytes",
        "gauge",
        "Time-weighted mean bytes queued since the last clear",
        |q| q.avg_bytes,
    ),
    (
        "lossless_tm_queue_avg_cells",
        "gauge",
        "Time-weighted mean cells queued since the last clear",
        |q| q.avg_cells,
    ),
    (
        "lossless_tm_queue_paused",
        "gauge",
        "1 while PFC or PAUSE holds the queue",
        |q| q.paused as u8 as f64,
    ),
    (
        "lossless_tm_queue_paused_seconds_total",
        "counter",
        "Time the queue spent paused",
        |q| q.paused_ns as f64 / 1e9,
    ),
    (
        "lossless_tm_queue_pfcwd_stormed",
        "gauge",
        "1 while the PFC watchdog holds the queue as stormed",
        |q| q.pfcwd.stormed as u8 as f64,
    ),
    (
        "lossless_tm_queue_pfcwd_storms_total",
        "counter",
        "PFC storms detected by the watchdog",
        |q| q.pfcwd.storms_detected as f64,
    ),
    (
        "lossless_tm_queue_pfcwd_restorations_total",
        "counter",
        "PFC storms the watchdog restored",
        |q| q.pfcwd.restorations as f64,
    ),
];

impl TmStats {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("stats hold only numbers, strings and maps")
    }

    /// Prometheus text exposition format 0.0.4.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let b = &self.buffer;
        for (name, help, v) in [
            (
                "lossless_tm_buffer_cell_bytes",
                "Bytes per buffer cell",
                b.cell_bytes as u64,
            ),
            (
                "lossless_tm_buffer_total_cells",
                "Cells in the shared buffer",
                b.total_cells,
            ),
            (
                "lossless_tm_buffer_used_cells",
                "Cells in use",
                b.used_cells,
            ),
            (
                "lossless_tm_buffer_peak_cells",
                "Watermark of cells in use",
                b.peak_cells,
            ),
        ] {
            Family::new(&mut out, name, "gauge", help).sample(&[], v);
        }
        Family::new(
            &mut out,
            "lossless_tm_unknown_port_drops_total",
            "counter",
            "Packets sent to a port the TM does not know",
        )
        .sample(&[], self.unknown_port_drops);
        for &(name, kind, help, get) in PORT_METRICS {
            let mut f = Family::new(&mut out, name, kind, help);
            for p in &self.ports {
                f.sample(&[("port", &p.port)], get(p));
            }
        }
        let mut f = Family::new(
            &mut out,
            "lossless_tm_port_drops_total",
            "counter",
            "Packets dropped by the port, by reason",
        );
        for p in &self.ports {
            for r in DropReason::ALL {
                f.sample(
                    &[("port", &p.port), ("reason", &r.as_str())],
                    p.drops.get(r),
                );
            }
        }
        let mut f = Family::new(
            &mut out,
            "lossless_tm_port_pfc_rx_frames_total",
            "counter",
            "PFC frames received with the priority enabled",
        );
        for p in &self.ports {
            for (prio, n) in p.pfc_rx.iter().enumerate() {
                f.sample(&[("port", &p.port), ("priority", &prio)], n);
            }
        }
        for &(name, kind, help, get) in QUEUE_METRICS {
            let mut f = Family::new(&mut out, name, kind, help);
            for p in &self.ports {
                for q in &p.queues {
                    f.sample(&[("port", &p.port), ("queue", &q.queue)], get(q));
                }
            }
        }
        let mut f = Family::new(
            &mut out,
            "lossless_tm_queue_drops_total",
            "counter",
            "Packets dropped at the queue, by reason",
        );
        for p in &self.ports {
            for q in &p.queues {
                for r in DropReason::ALL {
                    let labels: [(&str, &dyn std::fmt::Display); 3] = [
                        ("port", &p.port),
                        ("queue", &q.queue),
                        ("reason", &r.as_str()),
                    ];
                    f.sample(&labels, q.drops.get(r));
                }
            }
        }
        out
    }
}
