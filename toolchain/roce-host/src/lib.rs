//! A software RoCEv2 endpoint for hosts without an RDMA NIC: reliable-connection queue pairs
//! (RDMA WRITE and SEND, go-back-N), PFC/PAUSE reception, DCQCN, and perftest-style reports.
//!
//! - [`endpoint`]: the pure, clock-driven endpoint state machine (QPs, scheduler, counters);
//! - [`dcqcn`]: the DCQCN reaction and notification points;
//! - [`pause`]: PFC/PAUSE as the transmitter honours them;
//! - [`arp`]: ARP requests and replies;
//! - [`perftest`]: perftest's bandwidth and latency reports;
//! - [`route`]: whether a peer is on a directly connected network;
//! - [`nic`]: an endpoint on a [`switch_ports::Port`] and the monotonic clock (the binary's loop).

pub mod arp;
pub mod dcqcn;
pub mod endpoint;
pub mod nic;
pub mod pause;
pub mod perftest;
pub mod route;

pub use endpoint::{
    Completion, Counters, Endpoint, EndpointConfig, Incoming, IncomingKind, PayloadRef, Peer,
    PostError, QpInfo, QpStats, WcStatus, WorkRequest, WrOp, PAYLOAD_REF_LEN,
};
