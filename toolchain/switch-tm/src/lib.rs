//! The traffic manager of p4-switch: what sits between the ingress and egress pipelines.
//!
//! - Ports with a line rate, shaped at egress counting preamble, SFD, inter-frame gap and
//!   padding to the 64-byte minimum frame; an MTU per port.
//! - Eight egress queues per port, scheduled STRICT (higher queue first, as bmv2's priority
//!   queues), DWRR or WRR with SONiC SCHEDULER weights, strict queues ahead of the weighted group.
//! - A shared buffer accounted in cells per queue and per port, with tail drops by reason.
//! - PFC (802.1Qbb) and PAUSE (802.3x) reception through `lossless-wire`, and the SONiC PFC
//!   watchdog.
//! - Statistics as JSON and Prometheus text.
//!
//! No I/O and no clock of its own: every call takes the time in nanoseconds.

pub mod config;
pub mod stats;
mod tm;

pub use config::{
    Chip, ConfigError, ConfigFormat, PfcwdAction, PfcwdConfig, PortConfig, QueueConfig,
    SchedulerType, TmConfig, UnknownChip, QUEUES_PER_PORT,
};
pub use stats::{DropCounts, DropReason, TmStats};
pub use tm::{
    wire_bytes, ClearScope, Dequeued, Dropped, EnqueueInfo, Flushed, PfcwdEvent, PfcwdEventKind,
    PortIndex, QueueDepth, RxVerdict, Tm, TmError, UnknownClearScope,
};
