//! The statistics and port-configuration endpoint (`--stats-addr`, default 127.0.0.1:9090):
//!
//! | request | answer |
//! |---|---|
//! | `GET /metrics` | Prometheus text: traffic manager (`lossless_tm_*`) and switch (`p4switch_*`) |
//! | `GET /stats` | JSON: `{"switch": {...}, "engine": {...}, "tm": {...} or null, "pipeline": {...} or null}` |
//! | `POST /clear` | counters to zero, watermarks from the current occupancy (SONiC clear) |
//! | `POST /clear?scope=LIST` | only some: `ports`, `pfc`, `queues`, `watermarks`, `pfcwd` |
//! | `GET /ports` / `GET /ports/N` | the traffic manager's port configuration(s), JSON |
//! | `PUT /ports/N` | a port configuration (JSON or YAML, as in `--port-config`'s `ports[]`) |

use crate::error::ServerError;
use crate::pktgen::PktgenConfig;
use crate::runtime::Handle;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use switch_tm::{ClearScope, ConfigFormat, PortConfig};
use tiny_http::{Header, Method, Request, Response, Server};

pub struct StatsServer {
    addr: SocketAddr,
    server: Arc<Server>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StatsServer {
    pub fn start(addr: &str, handle: Handle) -> Result<StatsServer, ServerError> {
        let option = "--stats-addr";
        let server = Server::http(addr).map_err(|source| ServerError::Bind {
            option,
            addr: addr.to_string(),
            source,
        })?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| ServerError::NotIp {
                option,
                addr: addr.to_string(),
            })?;
        let server = Arc::new(server);
        let s = server.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("stats".into())
            .spawn(move || {
                while !handle.stopping() && !stop2.load(Ordering::Relaxed) {
                    match s.recv_timeout(Duration::from_millis(100)) {
                        Ok(Some(req)) => serve(req, &handle),
                        Ok(None) => {}
                        Err(_) => return,
                    }
                }
            })
            .map_err(ServerError::Thread)?;
        Ok(StatsServer {
            addr: bound,
            server,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for StatsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn content_type(v: &str) -> Header {
    Header::from_bytes("Content-Type", v).expect("static header")
}

fn serve(mut req: Request, handle: &Handle) {
    let url = req.url().to_string();
    let method = req.method().clone();
    let (status, ctype, body) = match (method, url.as_str()) {
        (Method::Get, "/metrics") => match handle.exec_core(metrics) {
            Some(b) => (200, "text/plain; version=0.0.4", b),
            None => stopped(),
        },
        (Method::Get, "/stats") => match handle.exec_core(stats_json) {
            Some(b) => (200, "application/json", b),
            None => stopped(),
        },
        (Method::Post, "/clear") => match handle.exec_core(|c, now| c.clear(now)) {
            Some(()) => (200, "text/plain", "cleared\n".into()),
            None => stopped(),
        },
        (Method::Post, path) if path.starts_with("/clear?scope=") => {
            match ClearScope::parse(&path["/clear?scope=".len()..]) {
                Err(e) => (400, "text/plain", format!("{e}\n")),
                Ok(scope) => match handle.exec_core(move |c, now| c.clear_some(now, scope)) {
                    Some(()) => (200, "text/plain", "cleared\n".into()),
                    None => stopped(),
                },
            }
        }
        (Method::Get, "/ports") => match handle.exec_core(|c, _| {
            let ports: Vec<PortConfig> = c
                .tm()
                .map(|tm| {
                    tm.port_numbers()
                        .filter_map(|p| tm.port_config(p).cloned())
                        .collect()
                })
                .unwrap_or_default();
            serde_json::to_string_pretty(&ports).unwrap_or_default()
        }) {
            Some(b) => (200, "application/json", b),
            None => stopped(),
        },
        (m, path) if path.starts_with("/ports/") => match path["/ports/".len()..].parse::<u32>() {
            Err(_) => (404, "text/plain", format!("{path}: not a port number\n")),
            Ok(port) if m == Method::Get => {
                match handle
                    .exec_core(move |c, _| c.tm().and_then(|t| t.port_config(port).cloned()))
                {
                    Some(Some(cfg)) => (
                        200,
                        "application/json",
                        serde_json::to_string_pretty(&cfg).unwrap_or_default(),
                    ),
                    Some(None) => (
                        404,
                        "text/plain",
                        format!("port {port} is not configured\n"),
                    ),
                    None => stopped(),
                }
            }
            Ok(port) if m == Method::Put => {
                let mut text = String::new();
                if req.as_reader().read_to_string(&mut text).is_err() {
                    (400, "text/plain", "request body is not UTF-8\n".into())
                } else {
                    match parse_port(&text, port) {
                        Err(e) => (400, "text/plain", format!("{e}\n")),
                        Ok(cfg) => match handle.exec_core(move |c, now| c.configure_port(now, cfg))
                        {
                            Some(Ok(())) => {
                                (200, "text/plain", format!("port {port} configured\n"))
                            }
                            Some(Err(e)) => (400, "text/plain", format!("{e}\n")),
                            None => stopped(),
                        },
                    }
                }
            }
            Ok(_) => (405, "text/plain", "use GET or PUT\n".into()),
        },
        (Method::Get, "/pktgen") => match handle.exec_core(|c, _| c.pktgen_config().cloned()) {
            Some(cfg) => (
                200,
                "application/json",
                serde_json::to_string_pretty(&cfg).unwrap_or_default(),
            ),
            None => stopped(),
        },
        (Method::Put, "/pktgen") => {
            let mut text = String::new();
            if req.as_reader().read_to_string(&mut text).is_err() {
                (400, "text/plain", "request body is not UTF-8\n".into())
            } else {
                match PktgenConfig::parse(&text, body_format(&text)) {
                    Err(e) => (400, "text/plain", format!("{e}\n")),
                    Ok(cfg) => match handle.exec_core(move |c, now| c.set_pktgen(now, Some(cfg))) {
                        Some(Ok(())) => (200, "text/plain", "pktgen configured\n".into()),
                        Some(Err(e)) => (400, "text/plain", format!("{e}\n")),
                        None => stopped(),
                    },
                }
            }
        }
        (Method::Delete, "/pktgen") => match handle.exec_core(|c, now| c.set_pktgen(now, None)) {
            Some(_) => (200, "text/plain", "pktgen stopped\n".into()),
            None => stopped(),
        },
        _ => (
            404,
            "text/plain",
            "endpoints: GET /metrics, GET /stats, POST /clear[?scope=LIST], GET /ports, \
             GET|PUT /ports/N, GET|PUT|DELETE /pktgen\n"
                .into(),
        ),
    };
    let resp = Response::from_string(body)
        .with_status_code(status)
        .with_header(content_type(ctype));
    let _ = req.respond(resp);
}

fn stopped() -> (u16, &'static str, String) {
    (503, "text/plain", "the dataplane has stopped\n".into())
}

/// A request body is JSON when it is an object, else YAML.
fn body_format(text: &str) -> ConfigFormat {
    if text.trim_start().starts_with('{') {
        ConfigFormat::Json
    } else {
        ConfigFormat::Yaml
    }
}

/// Why a `PUT /ports/N` body is refused (answered 400 with this text).
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("body: {0}")]
    Yaml(#[from] serde_yaml::Error),
    #[error("body: port: {body} differs from the URL's port {url}")]
    Port { body: u32, url: u32 },
    /// Already says where (`body.…`).
    #[error("{0}")]
    Invalid(#[from] switch_tm::ConfigError),
}

/// A `PUT /ports/N` body: a port configuration in JSON or YAML; `port` may be left out.
fn parse_port(text: &str, port: u32) -> Result<PortConfig, BodyError> {
    // JSON through serde_json: serde_yaml does not read JSON's string map keys (pfc_to_queue
    // {"3": 3}) as the numbers they stand for, as the --port-config file reader does.
    let cfg: PortConfig = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(mut value) => {
            if let Some(m) = value.as_object_mut() {
                m.entry("port").or_insert_with(|| port.into());
            }
            serde_json::from_value(value)?
        }
        Err(_) => {
            let mut value: serde_yaml::Value = serde_yaml::from_str(text)?;
            if let serde_yaml::Value::Mapping(m) = &mut value {
                let key = serde_yaml::Value::from("port");
                if !m.contains_key(&key) {
                    m.insert(key, serde_yaml::Value::from(port));
                }
            }
            serde_yaml::from_value(value)?
        }
    };
    if cfg.port != port {
        return Err(BodyError::Port {
            body: cfg.port,
            url: port,
        });
    }
    cfg.validate("body")?;
    Ok(cfg)
}

fn stats_json(c: &mut crate::core::Core, now: u64) -> String {
    let e = c.engine_stats();
    let engine = serde_json::json!({
        "received": e.received, "transmitted": e.transmitted,
        "parser_errors": e.parser_errors, "checksum_errors": e.checksum_errors,
        "dropped_ingress": e.dropped_ingress, "dropped_egress": e.dropped_egress,
        "cloned": e.cloned, "resubmitted": e.resubmitted, "recirculated": e.recirculated,
        "replicated": e.replicated, "reinjection_limit_drops": e.reinjection_limit_drops,
        "priority_drops": e.priority_drops,
        "index_errors": e.index_errors, "assert_failures": e.assert_failures,
    });
    let tm: serde_json::Value = c
        .tm()
        .and_then(|tm| serde_json::from_str(&tm.stats(now).to_json()).ok())
        .unwrap_or(serde_json::Value::Null);
    let pipeline = c.pipeline_occupancy();
    let doc = serde_json::json!({
        "switch": c.counters(), "engine": engine, "tm": tm, "pipeline": pipeline,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// The `/metrics` body: the switch's counters, the pipeline's occupancy registers (when the
/// program has them, [`crate::core::PipelineOccupancy`]) and the traffic manager's metrics.
pub fn metrics(c: &mut crate::core::Core, now: u64) -> String {
    let mut out = String::new();
    let e = c.engine_stats();
    let k = c.counters();
    for (name, help, v) in [
        (
            "p4switch_engine_received_total",
            "Packets into the ingress pipeline",
            e.received,
        ),
        (
            "p4switch_engine_transmitted_total",
            "Packets out of the deparser",
            e.transmitted,
        ),
        (
            "p4switch_parser_errors_total",
            "Packets with a parser error",
            e.parser_errors,
        ),
        (
            "p4switch_checksum_errors_total",
            "Packets failing checksum verification",
            e.checksum_errors,
        ),
        (
            "p4switch_dropped_ingress_total",
            "Packets dropped by the ingress pipeline",
            e.dropped_ingress,
        ),
        (
            "p4switch_dropped_egress_total",
            "Packets dropped by the egress pipeline",
            e.dropped_egress,
        ),
        (
            "p4switch_reinjection_limit_drops_total",
            "Packets dropped after too many resubmits/recirculations",
            e.reinjection_limit_drops,
        ),
        (
            "p4switch_index_errors_total",
            "Extern accesses out of range",
            e.index_errors,
        ),
        (
            "p4switch_tx_errors_total",
            "Port send failures",
            k.tx_errors,
        ),
        (
            "p4switch_mac_control_consumed_total",
            "MAC control frames consumed by ports",
            k.mac_control_consumed,
        ),
        (
            "p4switch_unknown_egress_port_total",
            "Packets sent to a port without interface",
            k.unknown_egress_port,
        ),
        (
            "p4switch_priority_drops_total",
            "Packets whose priority has no queue (--priority-queues)",
            e.priority_drops,
        ),
        (
            "p4switch_no_pipeline_total",
            "Frames received with no pipeline loaded",
            k.no_pipeline,
        ),
        (
            "p4switch_tm_drops_total",
            "Packets the traffic manager dropped",
            k.tm_drops,
        ),
        (
            "p4switch_cpu_packet_in_total",
            "Packets sent to the CPU port",
            k.cpu_packet_in,
        ),
        (
            "p4switch_pktgen_packets_total",
            "Packets the packet generator injected",
            k.pktgen_packets,
        ),
        (
            "p4switch_pktgen_dropped_total",
            "Generated packets the pipeline dropped in ingress (not traffic lost)",
            k.pktgen_dropped,
        ),
        (
            "p4switch_pktgen_skipped_firings_total",
            "Packet generator firings skipped because the dataplane woke up a period late",
            k.pktgen_skipped,
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
        );
    }
    for (name, help, map) in [
        (
            "p4switch_port_rx_frames_total",
            "Frames handed to the pipeline",
            &k.rx_frames,
        ),
        (
            "p4switch_port_tx_frames_total",
            "Frames transmitted",
            &k.tx_frames,
        ),
        (
            "p4switch_port_tx_bytes_total",
            "Bytes transmitted",
            &k.tx_bytes,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (p, v) in map {
            let _ = writeln!(out, "{name}{{port=\"{p}\"}} {v}");
        }
    }
    if let Some(occ) = c.pipeline_occupancy() {
        for (name, help, label, map) in [
            (
                "p4switch_pipeline_pg_bytes",
                "Bytes the pipeline counts in an ingress priority group (register pg_bytes)",
                "pg",
                &occ.pg_bytes,
            ),
            (
                "p4switch_pipeline_queue_bytes",
                "Bytes the pipeline counts in an egress queue (register queue_bytes)",
                "queue",
                &occ.queue_bytes,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (port, classes) in map {
                for (class, v) in classes.iter().enumerate() {
                    let _ = writeln!(out, "{name}{{port=\"{port}\",{label}=\"{class}\"}} {v}");
                }
            }
        }
        let name = "p4switch_pipeline_shared_pool_used_bytes";
        let _ = writeln!(
            out,
            "# HELP {name} Bytes the pipeline counts in the shared pool (register shared_pool_used)\n\
             # TYPE {name} gauge\n{name} {}",
            occ.shared_pool_used
        );
    }
    if let Some(tm) = c.tm() {
        out.push_str(&tm.stats(now).to_prometheus());
    }
    out
}
