//! Errors in a topology's experiment section, found before virtual time starts. Each says which
//! field of `experiment` is wrong and why.

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The section does not have its kind's shape (serde's message names the field).
    #[error("experiment: {0}")]
    Shape(serde_json::Error),
    #[error("experiment.{field}: unknown host '{host}'")]
    UnknownHost { field: String, host: String },
    /// A sender that is also the receiver, or listed twice.
    #[error("experiment: senders[{index}]: '{host}' is the receiver or listed twice")]
    SenderRepeated { index: usize, host: String },
    #[error("experiment: latency_probe: '{host}' is not one of the senders")]
    ProbeNotSender { host: String },
    #[error("experiment: lat_host, bw_host and receiver must be three hosts")]
    PrioHostsShared,
    #[error("experiment: mixes[{index}]: '{mix}' is not R:T")]
    Mix { index: usize, mix: String },
    #[error("experiment: tcp_cc: '{name}' is not a congestion control here (newreno, dctcp)")]
    CongestionControl { name: String },
    #[error("experiment: cnp_rate.senders: expected two hosts (sender 1 takes the CNPs)")]
    CnpRateSenders,
    #[error("experiment: {field}: must be positive")]
    NotPositive { field: &'static str },
    #[error(
        "experiment: case '{case}': not a part of the field test (latency, ecn-ratio, cnp-rate)"
    )]
    FieldTestPart { case: String },
    /// The receiver is not on any link of the topology.
    #[error("experiment: receiver has no link")]
    ReceiverUnlinked,
    /// The endpoints would not connect a QP pair (`what`: the traffic that needed it).
    #[error("experiment: {what}: cannot connect")]
    Connect { what: &'static str },
}
