//! The command line (bmv2's `simple_switch_grpc --help` plus ours) and start-up.

use crate::clock::{Clock, ClockKind, SystemClock};
use crate::core::Core;
use crate::error::ServerError;
use crate::log::{Level, Logger};
use crate::pktgen::{parse_port_config, PktgenError, PortConfigError};
use crate::runtime::Runtime;
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use switch_ports::pcap::PcapMerge;
use switch_ports::{AfPacketPort, Captured, PcapFilePort, Port, PortError};
use switch_tm::{ConfigFormat, TmError};
use switch_v1model::{Switch, SwitchConfig};

#[derive(Debug, Parser)]
#[command(
    name = "simple_switch_grpc",
    about = "P4 software switch running BMv2 JSON (bmv2 simple_switch drop-in)"
)]
pub struct Args {
    /// BMv2 JSON program.
    pub json: Option<PathBuf>,
    /// Start without a program (load one over P4Runtime).
    #[arg(long)]
    pub no_p4: bool,
    /// Attach a port: PORT@IFACE (repeatable); with --use-files, IFACE is a pcap file prefix.
    #[arg(short = 'i', long = "interface", value_name = "PORT@IFACE")]
    pub interfaces: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub device_id: u64,
    /// Port whose packets go to the P4Runtime controller (PacketIn/PacketOut).
    #[arg(long)]
    pub cpu_port: Option<u32>,
    /// Queues per port; the queue is standard_metadata.priority.
    #[arg(long, default_value_t = 1)]
    pub priority_queues: usize,
    #[arg(long)]
    pub log_console: bool,
    #[arg(short = 'L', long = "log-level", value_enum, default_value = "info")]
    pub log_level: Level,
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    #[arg(long)]
    pub log_flush: bool,
    /// Write DIR/IFACE_in.pcap and DIR/IFACE_out.pcap per port (default: current directory).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub pcap: Option<PathBuf>,
    /// Ports are pcap files/FIFOs IFACE_in.pcap / IFACE_out.pcap; start processing after N s.
    #[arg(long, value_name = "N")]
    pub use_files: Option<u64>,
    /// TCP port of the runtime CLI server (simple_switch_CLI), on 127.0.0.1.
    #[arg(long)]
    pub thrift_port: Option<u16>,
    /// Bytes of each packet written to the log at debug level.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub dump_packet_data: usize,
    /// P4Runtime server [default: 127.0.0.1:9559; none as `simple_switch`].
    #[arg(long)]
    pub grpc_server_addr: Option<String>,
    /// Traffic manager configuration (YAML or JSON); without it ports are unshaped as in bmv2.
    #[arg(long, value_name = "FILE")]
    pub port_config: Option<PathBuf>,
    /// Statistics and port-configuration HTTP endpoint [default: 127.0.0.1:9090; none as
    /// `simple_switch`].
    #[arg(long)]
    pub stats_addr: Option<String>,
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// `egress_spec` value that drops.
    #[arg(long, default_value_t = 511)]
    pub drop_port: u32,
    /// Run as bmv2's `simple_switch` (set from argv[0]): it serves only the runtime CLI, so the
    /// P4Runtime and stats servers start only when their address is given. p4c's harness runs
    /// several at once, which would otherwise all bind the same default addresses.
    #[arg(skip)]
    pub as_simple_switch: bool,
}

const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:9559";
const DEFAULT_STATS_ADDR: &str = "127.0.0.1:9090";

/// What runs until a signal: the dataplane and its servers.
pub struct Running {
    pub runtime: Runtime,
    pub stats: Option<crate::http::StatsServer>,
    pub cli: Option<crate::cli_server::CliServer>,
    pub grpc: Option<crate::grpc::GrpcServer>,
}

impl Running {
    pub fn shutdown(self) {
        let Running {
            runtime,
            stats,
            cli,
            grpc,
        } = self;
        // Servers first: a P4Runtime call waiting on the dataplane gets its answer or an error.
        drop(grpc);
        drop(cli);
        drop(stats);
        runtime.shutdown();
    }
}

/// Why the switch did not start; `main` prints it after `error: ` and exits 1.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("--log-file {}: {source}", .path.display())]
    LogFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--priority-queues {given}: must be 1 to {max}")]
    PriorityQueues { given: usize, max: usize },
    #[error("give a JSON file or --no-p4, not both")]
    JsonAndNoP4,
    #[error("give a BMv2 JSON file, or --no-p4")]
    NoProgram,
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Json {
        path: PathBuf,
        source: p4_bmv2_json::JsonError,
    },
    #[error("{}: {source}", .path.display())]
    PortConfig {
        path: PathBuf,
        source: PortConfigError,
    },
    #[error("-i {arg}: {problem}")]
    Interface {
        arg: String,
        problem: InterfaceProblem,
    },
    #[error("{0}")]
    Port(#[from] PortError),
    #[error("{0}")]
    Tm(#[from] TmError),
    #[error("{}: {source}", .path.display())]
    Pktgen { path: PathBuf, source: PktgenError },
    #[error("starting threads: {0}")]
    Threads(std::io::Error),
    #[error("{0}")]
    Server(#[from] ServerError),
    #[error("--thrift-port {port}: {source}")]
    CliServer { port: u16, source: std::io::Error },
}

/// What is wrong with a `-i PORT@IFACE` argument.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterfaceProblem {
    #[error("expected PORT@IFACE")]
    NoAt,
    #[error("'{0}' is not a port number")]
    NotANumber(String),
    #[error("empty interface name")]
    NoName,
    #[error("port {0} given twice")]
    Twice(u32),
}

fn parse_interface(s: &str) -> Result<(u32, String), InterfaceProblem> {
    let (p, iface) = s.split_once('@').ok_or(InterfaceProblem::NoAt)?;
    // bmv2 keeps a leading space in the value (p4c's harness passes `-i ' 0@pcap0'` as one
    // argument) and its number parsing skips it.
    let p = p
        .trim_start()
        .parse()
        .map_err(|_| InterfaceProblem::NotANumber(p.to_string()))?;
    if iface.is_empty() {
        return Err(InterfaceProblem::NoName);
    }
    Ok((p, iface.to_string()))
}

/// Loads the program and configuration, opens the ports and starts every thread.
pub fn start(args: &Args) -> Result<Running, StartError> {
    let clock = SystemClock::new(args.clock);
    let out: Box<dyn std::io::Write + Send> = match &args.log_file {
        Some(f) => Box::new(
            std::fs::File::create(f).map_err(|source| StartError::LogFile {
                path: f.clone(),
                source,
            })?,
        ),
        None if args.log_console => Box::new(std::io::stdout()),
        None => Box::new(std::io::sink()),
    };
    let logging = args.log_console || args.log_file.is_some();
    let logger = logging.then(|| {
        Logger::new(
            args.log_level,
            out,
            args.log_flush || args.log_console,
            args.dump_packet_data,
        )
    });
    if !(1..=switch_tm::QUEUES_PER_PORT).contains(&args.priority_queues) {
        return Err(StartError::PriorityQueues {
            given: args.priority_queues,
            max: switch_tm::QUEUES_PER_PORT,
        });
    }
    let config = SwitchConfig {
        drop_port: args.drop_port,
        cpu_port: args.cpu_port,
        priority_queues: args.priority_queues as u32,
        ..SwitchConfig::default()
    };
    let switch = match (&args.json, args.no_p4) {
        (Some(_), true) => return Err(StartError::JsonAndNoP4),
        (None, false) => return Err(StartError::NoProgram),
        (None, true) => None,
        (Some(path), false) => {
            let text = read(path)?;
            Some(
                Switch::from_json(&text, config.clone()).map_err(|source| StartError::Json {
                    path: path.clone(),
                    source,
                })?,
            )
        }
    };
    let (tm, pktgen) = match &args.port_config {
        None => (None, None),
        Some(path) => {
            let text = read(path)?;
            let name = path.display().to_string();
            let (tm, pktgen) = parse_port_config(&text, ConfigFormat::from_file_name(&name))
                .map_err(|source| StartError::PortConfig {
                    path: path.clone(),
                    source,
                })?;
            (Some(tm), pktgen)
        }
    };
    let mut wanted = BTreeMap::new();
    for s in &args.interfaces {
        let interface = |problem| StartError::Interface {
            arg: s.clone(),
            problem,
        };
        let (p, iface) = parse_interface(s).map_err(interface)?;
        if wanted.insert(p, iface).is_some() {
            return Err(interface(InterfaceProblem::Twice(p)));
        }
    }
    // Ascending port order: opening a FIFO blocks until its writer opens it, as in bmv2.
    let mut ports: Vec<(u32, Arc<dyn Port>)> = Vec::new();
    let mut pcap_inputs = Vec::new();
    for (p, iface) in &wanted {
        let port: Arc<dyn Port> = match (args.use_files.is_some(), &args.pcap) {
            (true, _) => {
                let file = Arc::new(PcapFilePort::open(std::path::Path::new(iface))?);
                pcap_inputs.push((*p, file.clone()));
                file
            }
            (false, None) => Arc::new(AfPacketPort::open(iface)?),
            (false, Some(dir)) => Arc::new(Captured::new(AfPacketPort::open(iface)?, dir)?),
        };
        ports.push((*p, port));
    }
    let mut core = Core::new(
        switch,
        tm,
        ports.iter().cloned().collect(),
        config,
        clock.now_ns(),
    )?;
    if pktgen.is_some() {
        core.set_pktgen(clock.now_ns(), pktgen)
            .map_err(|source| StartError::Pktgen {
                path: args.port_config.clone().unwrap_or_default(),
                source,
            })?;
    }
    core.log = logger;
    let delay = Duration::from_secs(args.use_files.unwrap_or(0));
    let runtime = if args.use_files.is_some() {
        let inputs = PcapMerge::new(pcap_inputs);
        Runtime::start_pcap_files(core, inputs, delay, clock, args.device_id)
    } else {
        Runtime::start(core, ports, delay, clock, args.device_id)
    }
    .map_err(StartError::Threads)?;
    let handle = runtime.handle();
    let default_addr = |d: &'static str| (!args.as_simple_switch).then_some(d);
    let stats_addr = args
        .stats_addr
        .as_deref()
        .or(default_addr(DEFAULT_STATS_ADDR));
    let stats = match stats_addr.map(|a| crate::http::StatsServer::start(a, handle.clone())) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            runtime.shutdown();
            return Err(e.into());
        }
    };
    let cli = match args.thrift_port {
        None => None,
        Some(p) => match crate::cli_server::CliServer::start(&format!("127.0.0.1:{p}"), handle) {
            Ok(c) => Some(c),
            Err(source) => {
                runtime.shutdown();
                return Err(StartError::CliServer { port: p, source });
            }
        },
    };
    let grpc_addr = args
        .grpc_server_addr
        .as_deref()
        .or(default_addr(DEFAULT_GRPC_ADDR));
    let grpc =
        match grpc_addr.map(|a| crate::grpc::GrpcServer::start(a, Arc::new(runtime.handle()))) {
            None => None,
            Some(Ok(g)) => Some(g),
            Some(Err(e)) => {
                runtime.shutdown();
                return Err(e.into());
            }
        };
    Ok(Running {
        runtime,
        stats,
        cli,
        grpc,
    })
}

fn read(path: &std::path::Path) -> Result<String, StartError> {
    std::fs::read_to_string(path).map_err(|source| StartError::Read {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::{parse_interface, InterfaceProblem, StartError};

    #[test]
    fn interface_port_may_have_leading_space_as_bmv2_accepts() {
        assert_eq!(parse_interface(" 0@pcap0"), Ok((0, "pcap0".to_string())));
        assert_eq!(parse_interface("3@veth1"), Ok((3, "veth1".to_string())));
        let problem = parse_interface("x@veth1").unwrap_err();
        assert_eq!(problem, InterfaceProblem::NotANumber("x".into()));
        let e = StartError::Interface {
            arg: "x@veth1".into(),
            problem,
        };
        assert_eq!(e.to_string(), "-i x@veth1: 'x' is not a port number");
    }
}
