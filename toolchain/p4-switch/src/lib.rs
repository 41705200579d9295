//! The software switch around `switch-v1model`: bmv2 `simple_switch`/`simple_switch_grpc`
//! command line, ports, the traffic manager between ingress and egress, the statistics and
//! port-configuration endpoint, and the runtime CLI server.

pub mod app;
pub mod cli;
pub mod cli_server;
pub mod clock;
pub mod core;
pub mod error;
pub mod grpc;
pub mod http;
pub mod log;
pub mod pktgen;
pub mod runtime;
