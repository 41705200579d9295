//! `roce-host`: perftest-style RoCEv2 tools (`write_bw`, `write_lat`) on a software endpoint
//! bound to a host interface through AF_PACKET.
//!
//! Like perftest, the two sides exchange QP numbers, PSNs, addresses and keys over TCP (port
//! 18515) before the test, and results after it; the RoCE traffic itself goes through the raw
//! socket. The client's parameters (size, iterations, QPs) are the test's: the server adopts them.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use roce_host::dcqcn::DcqcnConfig;
use roce_host::nic::Nic;
use roce_host::perftest::{
    BwReport, LatReport, BW_HEADER, BW_HEADER_GBITS, LAT_HEADER, RESULT_LINE,
};
use roce_host::route;
use roce_host::{
    Counters, Endpoint, EndpointConfig, IncomingKind, Peer, QpInfo, WcStatus, WorkRequest, WrOp,
};
use serde::{Deserialize, Serialize};
use switch_ports::AfPacketPort;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    WriteBw,
    WriteLat,
}

#[derive(Parser)]
#[command(
    version,
    about = "Software RoCEv2 endpoint with perftest-style write_bw and write_lat"
)]
struct Command {
    #[command(subcommand)]
    mode: ModeArgs,
}

#[derive(Subcommand)]
enum ModeArgs {
    /// RDMA WRITE bandwidth (ib_write_bw)
    #[command(name = "write_bw", alias = "write-bw")]
    WriteBw(Opts),
    /// RDMA WRITE ping-pong latency (ib_write_lat)
    #[command(name = "write_lat", alias = "write-lat")]
    WriteLat(Opts),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Args, Clone)]
struct Opts {
    /// Interface to bind (AF_PACKET)
    #[arg(short = 'd', long = "dev", value_name = "IFACE")]
    dev: String,
    /// Servers to test against (client); none means server
    #[arg(value_name = "PEER_IP")]
    peers: Vec<Ipv4Addr>,
    /// Run as server (also the default when no PEER_IP is given, as in perftest)
    #[arg(long)]
    server: bool,
    /// Message size in bytes [default: 65536 for write_bw, 2 for write_lat]
    #[arg(short = 's', long)]
    size: Option<usize>,
    /// Messages per QP [default: 5000 for write_bw, 1000 for write_lat]
    #[arg(short = 'n', long)]
    iters: Option<u64>,
    /// write_bw: run for this many seconds instead of a number of iterations (perftest -D)
    #[arg(short = 'D', long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// QPs per destination
    #[arg(short = 'q', long, default_value_t = 1)]
    qps: usize,
    /// Outstanding WRITEs per QP (write_bw)
    #[arg(short = 't', long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=4096))]
    tx_depth: u64,
    /// RoCE path MTU (payload bytes per packet)
    #[arg(short = 'm', long, default_value_t = 1024, value_parser = parse_mtu)]
    mtu: usize,
    /// TCP port of the out-of-band exchange
    #[arg(short = 'p', long, default_value_t = 18515)]
    port: u16,
    /// Clients the server waits for (incasts: N clients to one server)
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// NIC line rate in Gb/s: pacing and the length of a PFC quantum
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// DSCP of data and ACKs
    #[arg(long, default_value_t = 26, value_parser = clap::value_parser!(u8).range(0..64))]
    dscp: u8,
    /// 802.1Q PCP: tag frames (VLAN --vlan) with this priority; untagged frames use DSCP/8
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..8))]
    pcp: Option<u8>,
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..4095))]
    vlan: u16,
    /// Send not-ECT instead of ECT(0)
    #[arg(long)]
    no_ecn: bool,
    #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u8).range(0..64))]
    cnp_dscp: u8,
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u8).range(0..8))]
    cnp_pcp: u8,
    /// DCQCN (notification and reaction points)
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    dcqcn: OnOff,
    /// DCQCN g
    #[arg(long, default_value_t = 1.0 / 256.0)]
    dcqcn_g: f64,
    /// DCQCN alpha update period K
    #[arg(long, default_value_t = 55.0)]
    dcqcn_alpha_timer_us: f64,
    /// DCQCN rate increase timer T
    #[arg(long, default_value_t = 55.0)]
    dcqcn_rate_timer_us: f64,
    /// DCQCN byte counter B
    #[arg(long, default_value_t = 10_000_000)]
    dcqcn_byte_counter: u64,
    /// DCQCN fast recovery steps F
    #[arg(long, default_value_t = 5)]
    dcqcn_f: u32,
    #[arg(long, default_value_t = 40.0)]
    dcqcn_rai_mbps: f64,
    #[arg(long, default_value_t = 400.0)]
    dcqcn_rhai_mbps: f64,
    #[arg(long, default_value_t = 1.0)]
    dcqcn_min_rate_mbps: f64,
    /// Notification point: minimum gap between CNPs of one QP
    #[arg(long, default_value_t = 50.0)]
    cnp_interval_us: f64,
    /// Retransmission timeout
    #[arg(long, default_value_t = 67_108.864)]
    timeout_us: f64,
    #[arg(long, default_value_t = 7)]
    retry_cnt: u32,
    /// Our IPv4 address [default: the interface's]
    #[arg(long)]
    ip: Option<Ipv4Addr>,
    /// Peer MAC (skips ARP; the gateway's MAC when routed)
    #[arg(long, value_parser = parse_mac)]
    peer_mac: Option<[u8; 6]>,
    /// Client: allow peers that this host reaches only through a gateway or the default route
    /// (routed fabrics); without it such a peer is refused before any packet is sent
    #[arg(long)]
    allow_remote: bool,
    /// Report bandwidth in Gb/sec instead of MB/sec (perftest's --report_gbits)
    #[arg(long = "report_gbits", alias = "report-gbits")]
    report_gbits: bool,
    /// Print the results as JSON instead of perftest's table
    #[arg(long)]
    json: bool,
    /// write_bw client: write every message's QPN, work request id, post and completion times
    /// (ns) as CSV to this file
    #[arg(long, value_name = "PATH")]
    samples: Option<std::path::PathBuf>,
    /// First QP number [default: from the process id, so processes sharing an interface
    /// (seed 001: write_lat next to write_bw) never see each other's packets as theirs]
    #[arg(long, value_parser = parse_qpn_base)]
    qpn_base: Option<u32>,
    /// Give up after this many seconds
    #[arg(long, default_value_t = 60.0)]
    time_limit: f64,
}

fn parse_mtu(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v @ (256 | 512 | 1024 | 2048 | 4096)) => Ok(v),
        _ => Err(format!("{s:?}: MTU must be 256, 512, 1024, 2048 or 4096")),
    }
}

/// QPNs one process may allocate: 4096 from its base, within the 24-bit QPN space.
const MAX_QPS: usize = 4096;

fn parse_qpn_base(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("{s:?} is not a number"))?;
    if v < 2 || v as usize + MAX_QPS > 1 << 24 {
        return Err(format!(
            "{s}: QPNs {v}..{v}+{MAX_QPS} must lie in 2..2^24 (0 and 1 are the IB special QPs)"
        ));
    }
    Ok(v)
}

fn default_qpn_base() -> u32 {
    (1 + std::process::id() % 0xffe) << 12
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        return Err(format!(
            "{s:?}: expected six hex octets like 02:00:00:00:00:01"
        ));
    }
    for (m, p) in mac.iter_mut().zip(&parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| format!("{s:?}: {p:?} is not a hex octet"))?;
    }
    Ok(mac)
}

/// Client to server: the test and the client's QPs.
#[derive(Serialize, Deserialize)]
struct Hello {
    mode: String,
    size: usize,
    iters: u64,
    ip: [u8; 4],
    mac: [u8; 6],
    qps: Vec<QpInfo>,
    /// The client's buffers hold `pattern(size, seed)`: the server checks what landed.
    seed: u8,
}

/// Server to client: the server's QPs.
#[derive(Serialize, Deserialize)]
struct Welcome {
    ip: [u8; 4],
    mac: [u8; 6],
    qps: Vec<QpInfo>,
}

/// Server to client after the client's `Done`.
#[derive(Serialize, Deserialize, Clone)]
struct ServerResult {
    bytes_received: u64,
    messages_received: u64,
    data_ok: bool,
}

#[derive(Serialize, Deserialize)]
enum Msg {
    Hello(Hello),
    Welcome(Welcome),
    /// The client finished; its bandwidth report (write_bw), which the server prints too, as
    /// perftest's does.
    Done(Option<BwReport>),
    Result(ServerResult),
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

/// A TCP control connection read without blocking, so the endpoint keeps running meanwhile.
struct Ctl {
    reader: BufReader<TcpStream>,
    line: String,
    peer: String,
}

impl Ctl {
    fn new(stream: TcpStream) -> Result<Ctl, String> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        stream
            .set_nonblocking(true)
            .map_err(|e| format!("control connection {peer}: {e}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Ctl {
            reader: BufReader::new(stream),
            line: String::new(),
            peer,
        })
    }

    fn send(&mut self, msg: &Msg) -> Result<(), String> {
        let mut text = serde_json::to_string(msg).map_err(|e| e.to_string())?;
        text.push('\n');
        let s = self.reader.get_mut();
        s.set_nonblocking(false)
            .and_then(|_| s.write_all(text.as_bytes()))
            .and_then(|_| s.set_nonblocking(true))
            .map_err(|e| format!("control connection {}: send: {e}", self.peer))
    }

    /// The next complete message, if one has arrived.
    fn poll(&mut self) -> Result<Option<Msg>, String> {
        match self.reader.read_line(&mut self.line) {
            Ok(0) => Err(format!("control connection {}: closed by peer", self.peer)),
            Ok(_) if self.line.ends_with('\n') => {
                let line = std::mem::take(&mut self.line);
                serde_json::from_str(&line)
                    .map(Some)
                    .map_err(|e| format!("control connection {}: bad message: {e}", self.peer))
            }
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(format!("control connection {}: {e}", self.peer)),
        }
    }
}

struct Run {
    mode: Mode,
    opts: Opts,
    size: usize,
    iters: u64,
    nic: Nic<AfPacketPort>,
    deadline: Instant,
    /// write_bw client: the `--samples` file, created before any network activity.
    samples: Option<io::BufWriter<std::fs::File>>,
}

impl Run {
    fn check_deadline(&self, what: &str) -> Result<(), String> {
        if Instant::now() > self.deadline {
            Err(format!(
                "time limit of {} s reached while {what}",
                self.opts.time_limit
            ))
        } else {
            Ok(())
        }
    }

    fn step(&mut self) -> Result<(), String> {
        self.nic
            .step(Duration::from_millis(1))
            .map_err(|e| e.to_string())
    }

    /// Waits, running the endpoint, for the next message on `ctl`.
    fn recv(&mut self, ctl: &mut Ctl, what: &str) -> Result<Msg, String> {
        loop {
            if let Some(m) = ctl.poll()? {
                return Ok(m);
            }
            self.check_deadline(what)?;
            self.step()?;
        }
    }

    fn peer_mac(&mut self, ip: [u8; 4]) -> Result<[u8; 6], String> {
        if let Some(mac) = self.opts.peer_mac {
            return Ok(mac);
        }
        self.nic
            .resolve(ip, Duration::from_secs(5))
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!(
                    "no ARP reply from {} on {}; give --peer-mac",
                    Ipv4Addr::from(ip),
                    self.opts.dev
                )
            })
    }
}

fn iface_mac(dev: &str) -> Result<[u8; 6], String> {
    let path = format!("/sys/class/net/{dev}/address");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    parse_mac(text.trim()).map_err(|e| format!("{path}: {e}"))
}

fn iface_ipv4(dev: &str) -> Option<[u8; 4]> {
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut addrs) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = addrs;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: ifa_addr is non-null and at least a sockaddr.
        let family = unsafe { (*ifa.ifa_addr).sa_family };
        if name.to_bytes() == dev.as_bytes() && family as i32 == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            found = Some(sin.sin_addr.s_addr.to_ne_bytes());
            break;
        }
    }
    // SAFETY: frees the list returned above exactly once.
    unsafe { libc::freeifaddrs(addrs) };
    found
}

/// Every check an option allows on its own, before the interface is touched or a packet sent.
fn check_options(mode: Mode, o: &Opts) -> Result<(), String> {
    if !(o.rate > 0.0 && o.rate.is_finite()) {
        return Err(format!(
            "--rate {}: must be a positive number of Gb/s",
            o.rate
        ));
    }
    if ((o.rate * 1e9) as u64) < 1_000_000 {
        return Err(format!("--rate {}: below 1 Mb/s", o.rate));
    }
    let positive = [
        ("--dcqcn-alpha-timer-us", o.dcqcn_alpha_timer_us),
        ("--dcqcn-rate-timer-us", o.dcqcn_rate_timer_us),
        ("--dcqcn-rai-mbps", o.dcqcn_rai_mbps),
        ("--dcqcn-rhai-mbps", o.dcqcn_rhai_mbps),
        ("--dcqcn-min-rate-mbps", o.dcqcn_min_rate_mbps),
        ("--timeout-us", o.timeout_us),
    ];
    for (name, v) in positive {
        if !(v > 0.0 && v.is_finite()) {
            return Err(format!("{name} {v}: must be a positive number"));
        }
    }
    if !(o.dcqcn_g > 0.0 && o.dcqcn_g <= 1.0) {
        return Err(format!("--dcqcn-g {}: must be in (0, 1]", o.dcqcn_g));
    }
    if !(o.cnp_interval_us >= 0.0 && o.cnp_interval_us.is_finite()) {
        return Err(format!(
            "--cnp-interval-us {}: must be 0 or more",
            o.cnp_interval_us
        ));
    }
    if o.dcqcn_byte_counter < 64 {
        return Err(format!(
            "--dcqcn-byte-counter {}: at least one minimum frame (64)",
            o.dcqcn_byte_counter
        ));
    }
    if !(o.time_limit > 0.0 && o.time_limit < 1e9) {
        return Err(format!(
            "--time-limit {}: must be a positive number of seconds",
            o.time_limit
        ));
    }
    if let Some(d) = o.duration {
        if mode != Mode::WriteBw {
            return Err("-D/--duration is for write_bw".to_string());
        }
        if !(d > 0.0 && d < o.time_limit) {
            return Err(format!(
                "-D {d}: must be positive and below --time-limit {}",
                o.time_limit
            ));
        }
    }
    let client = !(o.server || o.peers.is_empty());
    if o.server && !o.peers.is_empty() {
        return Err("--server takes no PEER_IP".to_string());
    }
    if o.qps == 0 {
        return Err("-q/--qps: at least 1".to_string());
    }
    if o.clients == 0 {
        return Err("--clients: at least 1".to_string());
    }
    if o.samples.is_some() && !(client && mode == Mode::WriteBw) {
        return Err("--samples is for the write_bw client".to_string());
    }
    let (size, iters) = sizes(mode, o);
    let buffers = o.qps.saturating_mul(o.peers.len().max(1));
    if o.qps.saturating_mul(o.peers.len()) > MAX_QPS {
        return Err(format!(
            "{} QPs to {} servers: at most {MAX_QPS} QPs per process",
            o.qps,
            o.peers.len()
        ));
    }
    check_memory(size, buffers).map_err(|e| format!("-s {size} with {buffers} QPs: {e}"))?;
    let total = iters.saturating_mul(buffers as u64);
    if client && mode == Mode::WriteBw && o.duration.is_none() && total > MAX_RECORDED {
        return Err(format!(
            "-n {iters} with {buffers} QPs: {total} messages, at most {MAX_RECORDED} in an \
             iteration run; use -D"
        ));
    }
    Ok(())
}

/// Message size and iterations, with the mode's defaults.
fn sizes(mode: Mode, o: &Opts) -> (usize, u64) {
    match mode {
        Mode::WriteBw => (o.size.unwrap_or(65536), o.iters.unwrap_or(5000)),
        Mode::WriteLat => (o.size.unwrap_or(2), o.iters.unwrap_or(1000)),
    }
}

/// The endpoint for options that passed [`check_options`].
fn endpoint_config(o: &Opts, mac: [u8; 6], ip: [u8; 4]) -> EndpointConfig {
    let rate_bps = (o.rate * 1e9) as u64;
    let us = |v: f64| (v * 1000.0) as u64;
    let dcqcn = (o.dcqcn == OnOff::On).then(|| DcqcnConfig {
        line_rate_bps: rate_bps as f64,
        g: o.dcqcn_g,
        alpha_timer_ns: us(o.dcqcn_alpha_timer_us),
        rate_timer_ns: us(o.dcqcn_rate_timer_us),
        byte_counter: o.dcqcn_byte_counter,
        fast_recovery_steps: o.dcqcn_f,
        rai_bps: o.dcqcn_rai_mbps * 1e6,
        rhai_bps: o.dcqcn_rhai_mbps * 1e6,
        min_rate_bps: o.dcqcn_min_rate_mbps * 1e6,
        initial_alpha: 1.0,
        cnp_interval_ns: us(o.cnp_interval_us),
    });
    EndpointConfig {
        rate_bps,
        mtu: o.mtu,
        dscp: o.dscp,
        pcp: o.pcp,
        vlan: o.vlan,
        ecn: !o.no_ecn,
        cnp_dscp: o.cnp_dscp,
        cnp_pcp: o.cnp_pcp,
        dcqcn,
        retry_timeout_ns: us(o.timeout_us),
        retry_cnt: o.retry_cnt,
        max_outstanding: 256,
        qpn_base: o.qpn_base.unwrap_or_else(default_qpn_base),
        ..EndpointConfig::new(mac, ip)
    }
}

/// Checks everything (options, interface, the peers' routes), and only then opens the
/// interface: nothing goes on any network before the whole command line is known good.
fn start(mode: Mode, opts: Opts) -> Result<Run, String> {
    check_options(mode, &opts)?;
    let mac = iface_mac(&opts.dev)?;
    let ip = match opts.ip {
        Some(ip) => ip.octets(),
        None => iface_ipv4(&opts.dev)
            .ok_or_else(|| format!("{} has no IPv4 address; give --ip", opts.dev))?,
    };
    if !opts.allow_remote {
        for &peer in &opts.peers {
            route::check_local_peer(peer).map_err(|e| e.to_string())?;
        }
    }
    let samples = match &opts.samples {
        Some(path) => {
            let err = |e: io::Error| format!("--samples {}: {e}", path.display());
            let mut w = io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
            writeln!(w, "qpn,wr_id,posted_ns,completed_ns").map_err(err)?;
            Some(w)
        }
        None => None,
    };
    let (size, iters) = sizes(mode, &opts);
    let cfg = endpoint_config(&opts, mac, ip);
    let port = AfPacketPort::open(&opts.dev).map_err(|e| e.to_string())?;
    Ok(Run {
        mode,
        size,
        iters,
        deadline: Instant::now() + Duration::from_secs_f64(opts.time_limit.max(0.0)),
        opts,
        samples,
        nic: Nic::new(Endpoint::new(cfg), port),
    })
}

/// Largest message (IB: 2^31 bytes) and total buffer memory this process will allocate.
const MAX_MSG: usize = 1 << 31;
const MAX_MEMORY: usize = 8 << 30;

fn check_memory(size: usize, buffers: usize) -> Result<(), String> {
    if size > MAX_MSG {
        return Err(format!("messages are at most {MAX_MSG} bytes"));
    }
    if size.saturating_mul(buffers) > MAX_MEMORY {
        return Err(format!("buffers would exceed {MAX_MEMORY} bytes"));
    }
    Ok(())
}

fn bw_header(gbits: bool) -> &'static str {
    if gbits {
        BW_HEADER_GBITS
    } else {
        BW_HEADER
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::WriteBw => "write_bw",
        Mode::WriteLat => "write_lat",
    }
}

/// One destination of a client: its control connection and QP pairs (ours, theirs).
struct Dest {
    ctl: Ctl,
    qps: Vec<(u32, QpInfo)>,
}

#[derive(Serialize)]
struct ClientReport {
    mode: &'static str,
    role: &'static str,
    msg_size: usize,
    iterations: u64,
    qps_per_destination: usize,
    destinations: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bw: Option<BwReport>,
    /// write_bw: post-to-completion time of every message; write_lat: the test itself.
    latency: LatReport,
    servers: Vec<ServerResult>,
    counters: Counters,
    pause: roce_host::pause::PauseCounters,
}

fn client(mut run: Run) -> Result<(), String> {
    let seed = 0x5a;
    let mut dests = Vec::new();
    for &peer in &run.opts.peers.clone() {
        let stream = loop {
            // Bounded by the time limit: a peer that drops SYNs must not hold the run for the
            // kernel's minutes of retries.
            let left = run.deadline.saturating_duration_since(Instant::now());
            let addr = std::net::SocketAddr::from((peer, run.opts.port));
            match TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(10))) {
                Ok(s) => break s,
                Err(e) => {
                    run.check_deadline(&format!("connecting to {peer}:{} ({e})", run.opts.port))?;
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        let mut ctl = Ctl::new(stream)?;
        let mut ours = Vec::new();
        for i in 0..run.opts.qps {
            let qpn = run.nic.ep.create_qp(run.size, psn_seed(i));
            if let Some(m) = run.nic.ep.memory_mut(qpn) {
                m.copy_from_slice(&pattern(run.size, seed));
            }
            ours.push(qpn);
        }
        let cfg = run.nic.ep.config().clone();
        ctl.send(&Msg::Hello(Hello {
            mode: mode_name(run.mode).to_string(),
            size: run.size,
            iters: run.iters,
            ip: cfg.ip,
            mac: cfg.mac,
            qps: ours.iter().filter_map(|&q| run.nic.ep.qp_info(q)).collect(),
            seed,
        }))?;
        let Msg::Welcome(w) = run.recv(&mut ctl, "waiting for the server's QPs")? else {
            return Err(format!("{peer}: expected the server's QPs"));
        };
        if w.qps.len() != ours.len() {
            return Err(format!(
                "{peer}: server offered {} QPs, not {}",
                w.qps.len(),
                ours.len()
            ));
        }
        let mac = run.peer_mac(w.ip)?;
        for (&q, &info) in ours.iter().zip(&w.qps) {
            let peer = Peer {
                ip: w.ip,
                mac,
                qp: info,
            };
            run.nic.ep.connect(q, peer).map_err(|e| e.to_string())?;
        }
        dests.push(Dest {
            ctl,
            qps: ours.into_iter().zip(w.qps).collect(),
        });
    }
    let (bw, latency) = match run.mode {
        Mode::WriteBw => {
            let (bw, lat) = client_bw(&mut run, &dests)?;
            (Some(bw), lat)
        }
        Mode::WriteLat => (None, client_lat(&mut run, &dests)?),
    };
    let mut servers = Vec::new();
    for d in &mut dests {
        d.ctl.send(&Msg::Done(bw))?;
        match run.recv(&mut d.ctl, "waiting for the server's result")? {
            Msg::Result(r) => servers.push(r),
            _ => return Err(format!("{}: expected the server's result", d.ctl.peer)),
        }
    }
    let report = ClientReport {
        mode: mode_name(run.mode),
        role: "client",
        msg_size: run.size,
        iterations: run.iters,
        qps_per_destination: run.opts.qps,
        destinations: run.opts.peers.iter().map(|p| p.to_string()).collect(),
        bw,
        latency,
        servers,
        counters: run.nic.ep.counters().clone(),
        pause: run.nic.ep.pause_counters().clone(),
    };
    print_report(&run, &report.bw, &report.latency);
    if run.opts.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

/// Spreads the initial PSNs of QPs (perftest draws them at random).
fn psn_seed(i: usize) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (t ^ (i as u32).wrapping_mul(0x9e37_79b1)) & 0xff_ffff
}

fn print_report(run: &Run, bw: &Option<BwReport>, lat: &LatReport) {
    if run.opts.json {
        return;
    }
    println!("{RESULT_LINE}");
    match (run.mode, bw) {
        (Mode::WriteBw, Some(bw)) => {
            println!("{}", bw_header(run.opts.report_gbits));
            println!("{}", bw.row(run.opts.report_gbits));
        }
        _ => {
            println!("{LAT_HEADER}");
            println!("{}", lat.row());
        }
    }
    println!("{RESULT_LINE}");
}

/// Messages whose post and completion times an iteration run records (perftest keeps the same
/// arrays); longer runs use -D.
const MAX_RECORDED: u64 = 50_000_000;
/// Latency samples a duration run keeps (the first ones).
const MAX_LAT_SAMPLES: usize = 10_000_000;

fn client_bw(run: &mut Run, dests: &[Dest]) -> Result<(BwReport, LatReport), String> {
    let qps: Vec<(u32, QpInfo)> = dests.iter().flat_map(|d| d.qps.iter().copied()).collect();
    let index: std::collections::HashMap<u32, usize> =
        qps.iter().enumerate().map(|(i, (q, _))| (*q, i)).collect();
    let mut posted = vec![0u64; qps.len()];
    let mut done = vec![0u64; qps.len()];
    let start = run.nic.now();
    // -D: post until this time, then drain what is in flight.
    let until = run
        .opts
        .duration
        .map(|d| start.saturating_add((d * 1e9) as u64));
    let total = run.iters.saturating_mul(qps.len() as u64);
    let record = until.is_none();
    let hint = total.min(1 << 20) as usize;
    let mut posted_at = Vec::with_capacity(if record { hint } else { 0 });
    let mut completed_at = Vec::with_capacity(if record { hint } else { 0 });
    let mut lat = Vec::with_capacity(hint);
    let (mut completed, mut last_completion) = (0u64, start);
    let depth = run.opts.tx_depth;
    let mut samples = run.samples.take();
    loop {
        let now = run.nic.now();
        let posting = match until {
            Some(t) => now < t,
            None => true,
        };
        let in_flight = posted.iter().zip(&done).any(|(p, d)| p > d);
        let finished = match until {
            Some(_) => !posting && !in_flight,
            None => completed >= total,
        };
        if finished {
            break;
        }
        for (i, &(qpn, remote)) in qps.iter().enumerate() {
            while posting
                && (until.is_some() || posted[i] < run.iters)
                && posted[i] - done[i] < depth
            {
                let wr = WorkRequest {
                    wr_id: posted[i],
                    op: WrOp::Write {
                        remote_va: remote.va,
                        rkey: remote.rkey,
                    },
                    local_offset: 0,
                    len: run.size,
                };
                run.nic.ep.post(now, qpn, wr).map_err(|e| e.to_string())?;
                posted[i] += 1;
                if record {
                    posted_at.push(now);
                }
            }
        }
        run.step()?;
        for c in run.nic.ep.take_completions() {
            if c.status != WcStatus::Success {
                return Err(format!(
                    "QP {:#x}: work request {} failed: {:?}",
                    c.qpn, c.wr_id, c.status
                ));
            }
            if let Some(&i) = index.get(&c.qpn) {
                done[i] += 1;
            }
            completed += 1;
            last_completion = c.completed_ns;
            if record {
                completed_at.push(c.completed_ns);
            }
            if record || lat.len() < MAX_LAT_SAMPLES {
                lat.push(c.completed_ns - c.posted_ns);
            }
            if let Some(out) = samples.as_mut() {
                writeln!(
                    out,
                    "{},{},{},{}",
                    c.qpn, c.wr_id, c.posted_ns, c.completed_ns
                )
                .map_err(|e| format!("--samples: {e}"))?;
            }
        }
        run.check_deadline("sending")?;
    }
    if let Some(mut out) = samples {
        out.flush().map_err(|e| format!("--samples: {e}"))?;
    }
    let bw = if record {
        BwReport::compute(run.size as u64, run.iters, &posted_at, &completed_at)
    } else {
        BwReport::from_totals(run.size as u64, completed, last_completion - start)
    };
    Ok((bw, LatReport::compute(run.size as u64, &mut lat)))
}

fn client_lat(run: &mut Run, dests: &[Dest]) -> Result<LatReport, String> {
    let qps: Vec<(u32, QpInfo)> = dests.iter().flat_map(|d| d.qps.iter().copied()).collect();
    let mut samples = Vec::new();
    let mut sent_at = std::collections::HashMap::new();
    let mut rounds = std::collections::HashMap::new();
    let post = |run: &mut Run, qpn: u32, remote: QpInfo, n: u64| {
        let wr = WorkRequest {
            wr_id: n,
            op: WrOp::Write {
                remote_va: remote.va,
                rkey: remote.rkey,
            },
            local_offset: 0,
            len: run.size,
        };
        let now = run.nic.now();
        run.nic.ep.post(now, qpn, wr).map_err(|e| e.to_string())?;
        Ok::<u64, String>(now)
    };
    for &(qpn, remote) in &qps {
        sent_at.insert(qpn, post(run, qpn, remote, 0)?);
        rounds.insert(qpn, 0u64);
    }
    let total = run.iters.saturating_mul(qps.len() as u64);
    while (samples.len() as u64) < total {
        run.step()?;
        for c in run.nic.ep.take_completions() {
            if c.status != WcStatus::Success {
                return Err(format!(
                    "QP {:#x}: work request {} failed: {:?}",
                    c.qpn, c.wr_id, c.status
                ));
            }
        }
        for inc in run.nic.ep.take_incoming() {
            let (Some(&t0), Some(&(qpn, remote))) = (
                sent_at.get(&inc.qpn),
                qps.iter().find(|(q, _)| *q == inc.qpn),
            ) else {
                continue;
            };
            samples.push((inc.at_ns - t0) / 2);
            let n = rounds.entry(qpn).or_insert(0);
            *n += 1;
            if *n < run.iters {
                let n = *n;
                sent_at.insert(qpn, post(run, qpn, remote, n)?);
            }
        }
        run.check_deadline("ping-ponging")?;
    }
    Ok(LatReport::compute(run.size as u64, &mut samples))
}

#[derive(Serialize)]
struct ServerReport {
    mode: &'static str,
    role: &'static str,
    msg_size: usize,
    clients: usize,
    bytes_received: u64,
    messages_received: u64,
    data_ok: bool,
    /// From the first to the last message placed.
    bw_average_gbps: f64,
    /// Each client's own bandwidth report, as perftest's server prints it.
    client_reports: Vec<BwReport>,
    counters: Counters,
    pause: roce_host::pause::PauseCounters,
}

struct Client {
    ctl: Ctl,
    qps: Vec<(u32, QpInfo)>,
    seed: u8,
    bytes: u64,
    messages: u64,
    report: Option<BwReport>,
    done: bool,
}

fn server(mut run: Run) -> Result<(), String> {
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, run.opts.port))
        .map_err(|e| format!("listen on TCP port {}: {e}", run.opts.port))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut pending: Vec<Ctl> = Vec::new();
    let mut clients: Vec<Client> = Vec::new();
    let mut bytes = 0u64;
    let mut messages = 0u64;
    let mut first_last: Option<(u64, u64)> = None;
    let mut owner = std::collections::HashMap::new();
    let mut size = run.size;
    let mut mode = run.mode;
    loop {
        if clients.len() + pending.len() < run.opts.clients {
            match listener.accept() {
                Ok((s, _)) => pending.push(Ctl::new(s)?),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("accept: {e}")),
            }
        }
        let mut i = 0;
        while i < pending.len() {
            let Some(msg) = pending[i].poll()? else {
                i += 1;
                continue;
            };
            let mut ctl = pending.remove(i);
            let Msg::Hello(h) = msg else {
                return Err(format!("{}: expected a hello", ctl.peer));
            };
            let total = h.qps.len() + clients.iter().map(|c| c.qps.len()).sum::<usize>();
            if total > MAX_QPS {
                return Err(format!(
                    "{}: {total} QPs in all, at most {MAX_QPS} per process",
                    ctl.peer
                ));
            }
            check_memory(h.size, h.qps.len()).map_err(|e| {
                format!("{}: {} QPs of {} bytes: {e}", ctl.peer, h.qps.len(), h.size)
            })?;
            size = h.size;
            mode = if h.mode == "write_lat" {
                Mode::WriteLat
            } else {
                Mode::WriteBw
            };
            let mut qps = Vec::new();
            for (n, info) in h.qps.iter().enumerate() {
                let q = run.nic.ep.create_qp(h.size, psn_seed(n));
                if mode == Mode::WriteLat {
                    if let Some(m) = run.nic.ep.memory_mut(q) {
                        m.copy_from_slice(&pattern(h.size, h.seed));
                    }
                }
                qps.push((q, *info));
            }
            let cfg = run.nic.ep.config().clone();
            ctl.send(&Msg::Welcome(Welcome {
                ip: cfg.ip,
                mac: cfg.mac,
                qps: qps
                    .iter()
                    .filter_map(|(q, _)| run.nic.ep.qp_info(*q))
                    .collect(),
            }))?;
            let mac = run.peer_mac(h.ip)?;
            for &(q, info) in &qps {
                let peer = Peer {
                    ip: h.ip,
                    mac,
                    qp: info,
                };
                run.nic.ep.connect(q, peer).map_err(|e| e.to_string())?;
            }
            for &(q, _) in &qps {
                owner.insert(q, clients.len());
            }
            clients.push(Client {
                ctl,
                qps,
                seed: h.seed,
                bytes: 0,
                messages: 0,
                report: None,
                done: false,
            });
        }
        run.step()?;
        for inc in run.nic.ep.take_incoming() {
            if !matches!(inc.kind, IncomingKind::Write { .. }) {
                continue;
            }
            bytes += inc.len as u64;
            messages += 1;
            if let Some(c) = owner.get(&inc.qpn).and_then(|&i| clients.get_mut(i)) {
                c.bytes += inc.len as u64;
                c.messages += 1;
            }
            first_last = Some(first_last.map_or((inc.at_ns, inc.at_ns), |(f, _)| (f, inc.at_ns)));
            if mode == Mode::WriteLat {
                // ping-pong: answer each WRITE with one of ours
                if let Some(remote) = clients
                    .iter()
                    .flat_map(|c| c.qps.iter())
                    .find(|(q, _)| *q == inc.qpn)
                    .map(|(_, r)| *r)
                {
                    let wr = WorkRequest {
                        wr_id: messages,
                        op: WrOp::Write {
                            remote_va: remote.va,
                            rkey: remote.rkey,
                        },
                        local_offset: 0,
                        len: size,
                    };
                    let now = run.nic.now();
                    run.nic
                        .ep
                        .post(now, inc.qpn, wr)
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        run.nic.ep.take_completions();
        for c in clients.iter_mut().filter(|c| !c.done) {
            match c.ctl.poll()? {
                Some(Msg::Done(report)) => {
                    let expect = pattern(size, c.seed);
                    let data_ok = mode == Mode::WriteLat
                        || c.qps
                            .iter()
                            .all(|(q, _)| run.nic.ep.memory(*q).is_some_and(|m| m == &expect[..]));
                    c.ctl.send(&Msg::Result(ServerResult {
                        bytes_received: c.bytes,
                        messages_received: c.messages,
                        data_ok,
                    }))?;
                    c.report = report;
                    c.done = true;
                }
                Some(_) => return Err(format!("{}: unexpected message", c.ctl.peer)),
                None => {}
            }
        }
        if clients.len() == run.opts.clients && clients.iter().all(|c| c.done) {
            break;
        }
        run.check_deadline("serving")?;
    }
    let data_ok = clients.iter().all(|c| {
        let expect = pattern(size, c.seed);
        mode == Mode::WriteLat
            || c.qps
                .iter()
                .all(|(q, _)| run.nic.ep.memory(*q).is_some_and(|m| m == &expect[..]))
    });
    let secs = first_last.map_or(0.0, |(f, l)| (l - f) as f64 / 1e9);
    let report = ServerReport {
        mode: mode_name(mode),
        role: "server",
        msg_size: size,
        clients: clients.len(),
        bytes_received: bytes,
        messages_received: messages,
        data_ok,
        bw_average_gbps: if secs > 0.0 {
            bytes as f64 * 8.0 / secs / 1e9
        } else {
            0.0
        },
        client_reports: clients.iter().filter_map(|c| c.report).collect(),
        counters: run.nic.ep.counters().clone(),
        pause: run.nic.ep.pause_counters().clone(),
    };
    if run.opts.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        println!("{RESULT_LINE}");
        if !report.client_reports.is_empty() {
            println!("{}", bw_header(run.opts.report_gbits));
            for r in &report.client_reports {
                println!("{}", r.row(run.opts.report_gbits));
            }
            println!("{RESULT_LINE}");
        }
        println!(
            " server: {} messages, {} bytes received from {} client(s), data {}",
            messages,
            bytes,
            clients.len(),
            if data_ok { "intact" } else { "CORRUPT" }
        );
        println!("{RESULT_LINE}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let cmd = Command::parse();
    let (mode, opts) = match cmd.mode {
        ModeArgs::WriteBw(o) => (Mode::WriteBw, o),
        ModeArgs::WriteLat(o) => (Mode::WriteLat, o),
    };
    let is_server = opts.server || opts.peers.is_empty();
    let result = start(mode, opts).and_then(|run| {
        // Without a socket on the RoCEv2 port the kernel answers every datagram to an address
        // it owns with ICMP port unreachable; a socket nobody reads makes it drop them quietly.
        let _quiet = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, lossless_wire::rocev2::UDP_PORT));
        if is_server {
            server(run)
        } else {
            client(run)
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roce-host: {e}");
            ExitCode::FAILURE
        }
    }
}
