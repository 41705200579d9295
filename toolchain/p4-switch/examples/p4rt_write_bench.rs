//! P4Runtime write rate of p4-switch (issue 22): lossless.p4's routes and neighbours written over
//! gRPC on 127.0.0.1 in WriteRequests of 1000 updates, against the switch as `p4-switch --no-p4`
//! runs it (the runtime's dataplane thread, the gRPC server on its own thread and one-worker
//! tokio runtime, the pipeline set by SetForwardingPipelineConfig), all in this process so the
//! switch's threads can be told from the client's:
//!
//! - **load client**: the requests are encoded before the clock starts (`client_encode_*`: how
//!   fast the client's prost encodes them, per CPU-second) and sent as raw bytes with `IN_FLIGHT` requests
//!   outstanding on one HTTP/2 connection. Its ceiling (`client_ceiling`) is the same requests
//!   sent to a sink on the same transport (a runtime of its own) that answers without decoding:
//!   the client and transport alone, also per CPU-second of the client's threads, so a switch
//!   rate well under it is the switch's own. Each load also reports the client's CPU time;
//! - **switch**: `wall_seconds` from the first request sent to the last response; `server_seconds`
//!   from the first request sent to the end of the last batch applied on the dataplane thread;
//!   `server_cpu_seconds`: CPU time of the switch's threads (the gRPC threads, the blocking pool
//!   that decodes and translates, the dataplane thread) from schedstat, so
//!   `entries_per_server_cpu_second` is the rate on one core of the switch's own;
//! - **baselines** (the ceiling, same entries, in process, per CPU-second of the one thread
//!   doing it): the engine's `Switch::table_add` (names and padded bytes, what the server hands
//!   it) and `switch_tables::Table::insert` alone.
//!
//! The table sizes are checked after each run (every route and neighbour is in the engine).
//!
//! `cargo run --release -p p4-switch --example p4-switch-p4rt-write-bench -- LOSSLESS.json
//! LOSSLESS.p4info.txtpb OUT.json [ROUTES]` (`make bench` passes build/p4's files).

// Only `finish`: this bench has no ports.
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes};
use p4_switch::clock::{ClockKind, SystemClock};
use p4_switch::core::Core;
use p4_switch::grpc::GrpcServer;
use p4_switch::runtime::{Handle, Runtime};
use p4runtime_proto::p4info::{P4Info, Preamble};
use p4runtime_proto::p4runtime::{
    action, entity, field_match, forwarding_pipeline_config,
    set_forwarding_pipeline_config_request, stream_message_request, table_action, update, Action,
    Entity, FieldMatch, ForwardingPipelineConfig, MasterArbitrationUpdate,
    SetForwardingPipelineConfigRequest, StreamMessageRequest, TableAction, TableEntry, Uint128,
    Update, WriteRequest,
};
use p4runtime_proto::P4RuntimeClient;
use p4runtime_server::{CpuSink, Dataplane, EngineJob};
use prost::Message;
use serde_json::{json, Value};
use switch_v1model::{Switch, SwitchConfig};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{http, Service};
use tonic::Status;

/// The allocator the p4-switch binary runs with (src/main.rs), so the switch is measured as it
/// ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 1000;
/// Requests outstanding at once: enough that the switch always has the next one decoded.
const IN_FLIGHT: usize = 8;
const NEIGHBORS: u32 = 48_000;
const DEVICE: u64 = 1;
/// Thread names of the load client's and the sink's runtimes.
const CLIENT: &str = "p4rt-client";
const SINK: &str = "p4rt-sink";
const ROUTE_TABLE: &str = "LosslessIngress.ipv4_route";
const ROUTE_ACTION: &str = "LosslessIngress.set_nexthop_id";
const NEIGHBOR_TABLE: &str = "LosslessIngress.neighbor";
const NEIGHBOR_ACTION: &str = "LosslessIngress.set_dst_mac";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [json_path, p4info_path, out] = match &args[..] {
        [a, b, c] | [a, b, c, _] => [a.clone(), b.clone(), c.clone()],
        _ => {
            eprintln!(
                "usage: p4rt_write_bench LOSSLESS.json LOSSLESS.p4info.txtpb OUT.json [ROUTES]"
            );
            std::process::exit(2);
        }
    };
    let routes = match args.get(3).map(|a| a.parse::<u32>()) {
        None => 200_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("ROUTES: a positive number");
            std::process::exit(2);
        }
    };
    support::finish(
        "p4rt-write-bench",
        &out,
        run(&json_path, &p4info_path, routes),
    );
}

fn run(json_path: &str, p4info_path: &str, routes: u32) -> Result<Value, String> {
    let json = std::fs::read_to_string(json_path).map_err(|e| format!("{json_path}: {e}"))?;
    let text = std::fs::read_to_string(p4info_path).map_err(|e| format!("{p4info_path}: {e}"))?;
    let p4info: P4Info =
        p4runtime_proto::from_text(&text).map_err(|e| format!("{p4info_path}: {e}"))?;
    let ids = Ids::of(&p4info)?;
    let route_updates: Vec<Update> = (0..routes).map(|i| ids.route(i)).collect();
    let neighbor_updates: Vec<Update> = (0..NEIGHBORS).map(|i| ids.neighbor(i)).collect();

    let t = thread_cpu_s();
    let route_reqs = encode(&route_updates);
    let encode_s = thread_cpu_s() - t;
    let neighbor_reqs = encode(&neighbor_updates);

    let client = runtime(2, CLIENT)?;
    let sink = runtime(1, SINK)?;
    let ceiling = client.block_on(sink_rate(&sink, &route_reqs))?;
    drop(sink);

    let core = Core::new(None, None, BTreeMap::new(), SwitchConfig::default(), 0)
        .map_err(|e| e.to_string())?;
    let rt = Runtime::start(
        core,
        Vec::new(),
        Duration::ZERO,
        SystemClock::new(ClockKind::Real),
        DEVICE,
    )
    .map_err(|e| e.to_string())?;
    let timed = Arc::new(Timed {
        inner: rt.handle(),
        last_done: Arc::default(),
    });
    let grpc = GrpcServer::start("127.0.0.1:0", timed.clone()).map_err(|e| e.to_string())?;
    let addr = grpc.addr();
    let result = client.block_on(async {
        let mut c = Controller::connect(addr, &p4info, &json).await?;
        let r = c.load(&route_reqs, routes as usize, &timed).await?;
        let n = c.load(&neighbor_reqs, NEIGHBORS as usize, &timed).await?;
        Ok::<_, String>((r, n))
    });
    let counts = exec(&timed.inner, |sw| {
        let sw = sw.as_ref()?;
        Some((
            sw.table_entries(ROUTE_TABLE).ok()?.len(),
            sw.table_entries(NEIGHBOR_TABLE).ok()?.len(),
        ))
    })
    .flatten();
    drop(grpc);
    rt.shutdown();
    let (route_run, neighbor_run) = result?;
    if counts != Some((routes as usize, NEIGHBORS as usize)) {
        return Err(format!(
            "the engine holds {counts:?} (routes, neighbours) after the run, not ({routes}, {NEIGHBORS})"
        ));
    }

    let (engine_routes, tables_routes) = baseline(&json, &route_updates, &ids, ROUTE_TABLE)?;
    let (engine_nbrs, tables_nbrs) = baseline(&json, &neighbor_updates, &ids, NEIGHBOR_TABLE)?;
    let rate = |n: usize, s: f64| n as f64 / s;
    Ok(json!({
        "bench": "p4-switch P4Runtime Write over gRPC on 127.0.0.1, lossless.p4, 1000 updates a request",
        "batch": BATCH,
        "in_flight": IN_FLIGHT,
        "routes": routes,
        "client_encode_entries_per_cpu_second": rate(routes as usize, encode_s),
        "client_ceiling": ceiling,
        "ipv4_route": route_run,
        "neighbor": neighbor_run,
        "baseline_ipv4_route": {
            "engine_table_add_entries_per_cpu_second": rate(routes as usize, engine_routes),
            "switch_tables_insert_entries_per_cpu_second": rate(routes as usize, tables_routes),
        },
        "baseline_neighbor": {
            "engine_table_add_entries_per_cpu_second": rate(NEIGHBORS as usize, engine_nbrs),
            "switch_tables_insert_entries_per_cpu_second": rate(NEIGHBORS as usize, tables_nbrs),
        },
    }))
}

/// A tokio runtime whose threads are called `name`, so their CPU time is told apart.
fn runtime(workers: usize, name: &str) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// P4Info ids of the two tables, their actions and fields.
struct Ids {
    route: u32,
    route_action: u32,
    neighbor: u32,
    neighbor_action: u32,
}

impl Ids {
    fn of(p: &P4Info) -> Result<Ids, String> {
        let table = |name| id_of(p.tables.iter().map(|t| t.preamble.as_ref()), "table", name);
        let action = |name| {
            id_of(
                p.actions.iter().map(|a| a.preamble.as_ref()),
                "action",
                name,
            )
        };
        Ok(Ids {
            route: table(ROUTE_TABLE)?,
            route_action: action(ROUTE_ACTION)?,
            neighbor: table(NEIGHBOR_TABLE)?,
            neighbor_action: action(NEIGHBOR_ACTION)?,
        })
    }

    /// Route i: a /24 from 1.0.0.0 up, to one of 4096 next hops (canonical byte strings, as
    /// P4Runtime clients send them).
    fn route(&self, i: u32) -> Update {
        let prefix = 0x0100_0000u32 + (i << 8);
        insert(
            self.route,
            vec![FieldMatch {
                field_id: 1,
                field_match_type: Some(field_match::FieldMatchType::Lpm(field_match::Lpm {
                    value: canonical(&prefix.to_be_bytes()),
                    prefix_len: 24,
                })),
            }],
            self.route_action,
            vec![canonical(&(i % 4096 + 1).to_be_bytes()[2..])],
        )
    }

    /// Neighbour i: router interface i % 64 + 1, IPv6 address fd00::i, a MAC from i.
    fn neighbor(&self, i: u32) -> Update {
        let mut ip = [0u8; 16];
        ip[0] = 0xfd;
        ip[12..].copy_from_slice(&i.to_be_bytes());
        let mut mac = [0x02u8, 0, 0, 0, 0, 0];
        mac[2..].copy_from_slice(&i.to_be_bytes());
        let exact = |id: u32, v: &[u8]| FieldMatch {
            field_id: id,
            field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
                value: canonical(v),
            })),
        };
        insert(
            self.neighbor,
            vec![exact(1, &(i % 64 + 1).to_be_bytes()[2..]), exact(2, &ip)],
            self.neighbor_action,
            vec![mac.to_vec()],
        )
    }
}

/// The P4Info id of the object called `name` among `preambles`.
fn id_of<'a>(
    mut preambles: impl Iterator<Item = Option<&'a Preamble>>,
    kind: &str,
    name: &str,
) -> Result<u32, String> {
    preambles
        .find_map(|pr| pr.filter(|pr| pr.name == name).map(|pr| pr.id))
        .ok_or_else(|| format!("P4Info: no {kind} {name}"))
}

fn canonical(v: &[u8]) -> Vec<u8> {
    let skip = v.iter().take_while(|b| **b == 0).count().min(v.len() - 1);
    v[skip..].to_vec()
}

fn insert(table_id: u32, r#match: Vec<FieldMatch>, action_id: u32, args: Vec<Vec<u8>>) -> Update {
    Update {
        r#type: update::Type::Insert as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id,
                r#match,
                action: Some(TableAction {
                    r#type: Some(table_action::Type::Action(Action {
                        action_id,
                        params: args
                            .into_iter()
                            .enumerate()
                            .map(|(i, value)| action::Param {
                                param_id: i as u32 + 1,
                                value,
                            })
                            .collect(),
                    })),
                }),
                ..Default::default()
            })),
        }),
    }
}

fn election() -> Option<Uint128> {
    Some(Uint128 { high: 0, low: 1 })
}

/// The WriteRequests of `updates`, BATCH a request, encoded.
fn encode(updates: &[Update]) -> Vec<Bytes> {
    updates
        .chunks(BATCH)
        .map(|chunk| {
            Bytes::from(
                WriteRequest {
                    device_id: DEVICE,
                    election_id: election(),
                    updates: chunk.to_vec(),
                    ..Default::default()
                }
                .encode_to_vec(),
            )
        })
        .collect()
}

/// Sends `reqs` as they are, IN_FLIGHT at a time, and waits for every response.
async fn send_all(channel: &tonic::transport::Channel, reqs: &[Bytes]) -> Result<(), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let reqs: Arc<Vec<Bytes>> = Arc::new(reqs.to_vec());
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (next, reqs) = (next.clone(), reqs.clone());
            let mut grpc = tonic::client::Grpc::new(channel.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(req) = reqs.get(i) else {
                        return Ok::<(), String>(());
                    };
                    grpc.ready().await.map_err(|e| e.to_string())?;
                    grpc.unary::<_, Bytes, _>(
                        tonic::Request::new(req.clone()),
                        http::uri::PathAndQuery::from_static("/p4.v1.P4Runtime/Write"),
                        Raw,
                    )
                    .await
                    .map_err(|e| format!("write request {i}: {e}"))?;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

async fn connect(addr: std::net::SocketAddr) -> Result<tonic::transport::Channel, String> {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("{addr}: {e}"))
}

/// The client's and transport's own rate: the requests to a server that answers each without
/// decoding it.
async fn sink_rate(sink: &tokio::runtime::Runtime, reqs: &[Bytes]) -> Result<Value, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let listener = {
        let _in_sink = sink.enter();
        tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = sink.spawn(
        tonic::transport::Server::builder()
            .add_service(Sink)
            .serve_with_incoming_shutdown(
                // As the switch's server sets it: the sink measures the same transport.
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    let channel = connect(addr).await?;
    let entries: usize = reqs.len() * BATCH;
    let cpu0 = client_cpu_ns();
    let t = Instant::now();
    send_all(&channel, reqs).await?;
    let s = t.elapsed().as_secs_f64();
    let cpu = (client_cpu_ns() - cpu0) as f64 / 1e9;
    let _ = stop.send(());
    let _ = server.await;
    Ok(json!({
        "requests_per_second": reqs.len() as f64 / s,
        "entries_per_second": entries as f64 / s,
        "client_cpu_seconds": cpu,
        "entries_per_client_cpu_second": entries as f64 / cpu,
    }))
}

/// The controller: primary by arbitration (its stream stays open), the pipeline set.
struct Controller {
    channel: tonic::transport::Channel,
    _stream: tokio::sync::mpsc::Sender<StreamMessageRequest>,
}

impl Controller {
    async fn connect(
        addr: std::net::SocketAddr,
        p4info: &P4Info,
        json: &str,
    ) -> Result<Controller, String> {
        let channel = connect(addr).await?;
        let mut client = P4RuntimeClient::new(channel.clone());
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(StreamMessageRequest {
            update: Some(stream_message_request::Update::Arbitration(
                MasterArbitrationUpdate {
                    device_id: DEVICE,
                    election_id: election(),
                    ..Default::default()
                },
            )),
        })
        .await
        .map_err(|e| e.to_string())?;
        let mut responses = client
            .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .map_err(|e| format!("StreamChannel: {e}"))?
            .into_inner();
        responses
            .message()
            .await
            .map_err(|e| format!("arbitration: {e}"))?
            .ok_or("arbitration: the stream closed")?;
        client
            .set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                election_id: election(),
                action: set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
                config: Some(ForwardingPipelineConfig {
                    p4info: Some(p4info.clone()),
                    p4_device_config: json.as_bytes().to_vec(),
                    cookie: Some(forwarding_pipeline_config::Cookie { cookie: 1 }),
                }),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("SetForwardingPipelineConfig: {e}"))?;
        Ok(Controller {
            channel,
            _stream: tx,
        })
    }

    /// Writes `reqs` (holding `entries` updates) and measures the switch.
    async fn load(
        &mut self,
        reqs: &[Bytes],
        entries: usize,
        timed: &Timed,
    ) -> Result<Value, String> {
        *timed.last_done.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let (cpu0, client0) = (switch_cpu_ns(), client_cpu_ns());
        let t = Instant::now();
        send_all(&self.channel, reqs).await?;
        let wall = t.elapsed().as_secs_f64();
        let cpu = (switch_cpu_ns() - cpu0) as f64 / 1e9;
        let client = (client_cpu_ns() - client0) as f64 / 1e9;
        // The response may reach the client before the dataplane thread notes the end of its
        // job: a job queued behind the last batch has it noted.
        exec(&timed.inner, |_| ()).ok_or("the data plane is gone")?;
        let done = timed
            .last_done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or("no batch was applied")?;
        let server = done.duration_since(t).as_secs_f64();
        Ok(json!({
            "entries": entries,
            "wall_seconds": wall,
            "wall_entries_per_second": entries as f64 / wall,
            "server_seconds": server,
            "server_entries_per_second": entries as f64 / server,
            "server_cpu_seconds": cpu,
            "entries_per_server_cpu_second": entries as f64 / cpu,
            "client_cpu_seconds": client,
        }))
    }
}

/// The runtime's handle, noting on the dataplane thread when each engine job ends (the last one
/// of a load is its last batch applied).
struct Timed {
    inner: Handle,
    last_done: Arc<Mutex<Option<Instant>>>,
}

impl Dataplane for Timed {
    fn exec(&self, f: EngineJob) {
        let last_done = self.last_done.clone();
        Dataplane::exec(
            &self.inner,
            Box::new(move |sw| {
                f(sw);
                *last_done.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            }),
        );
    }
    fn set_cpu_sink(&self, sink: CpuSink) {
        Dataplane::set_cpu_sink(&self.inner, sink)
    }
    fn inject_cpu(&self, frame: Vec<u8>) {
        Dataplane::inject_cpu(&self.inner, frame)
    }
    fn engine_config(&self) -> SwitchConfig {
        Dataplane::engine_config(&self.inner)
    }
    fn device_id(&self) -> u64 {
        Dataplane::device_id(&self.inner)
    }
}

fn exec<R: Send + 'static>(
    h: &Handle,
    f: impl FnOnce(&mut Option<Switch>) -> R + Send + 'static,
) -> Option<R> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    Dataplane::exec(
        h,
        Box::new(move |sw| {
            let _ = tx.send(f(sw));
        }),
    );
    rx.recv().ok()
}

/// CPU time (ns, schedstat) of this process's threads but the main one whose name `pick`s.
fn cpu_ns(pick: impl Fn(&str) -> bool) -> u64 {
    let pid = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter(|t| t.file_name() != pid.as_str())
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| pick(c.trim())))
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The switch's threads: all but the load client's and the sink's.
fn switch_cpu_ns() -> u64 {
    cpu_ns(|name| !name.starts_with(CLIENT) && !name.starts_with(SINK))
}

fn client_cpu_ns() -> u64 {
    cpu_ns(|name| name.starts_with(CLIENT))
}

/// The same entries straight into the engine (`Switch::table_add` with names and padded byte
/// strings) and into a `switch_tables::Table` alone: CPU seconds for each.
fn baseline(json: &str, updates: &[Update], ids: &Ids, table: &str) -> Result<(f64, f64), String> {
    let entries: Vec<(Vec<switch_v1model::FieldMatch>, Vec<Vec<u8>>)> =
        updates.iter().map(|u| engine_entry(u, ids)).collect();
    let mut sw = Switch::from_json(json, SwitchConfig::default()).map_err(|e| e.message)?;
    let action = if table == ROUTE_TABLE {
        ROUTE_ACTION
    } else {
        NEIGHBOR_ACTION
    };
    let copy = entries.clone();
    let t = thread_cpu_s();
    for (m, args) in copy {
        sw.table_add(table, m, None, action, &args)
            .map_err(|e| e.message)?;
    }
    let engine = thread_cpu_s() - t;
    let keys: Vec<switch_tables::KeyField> = entries[0]
        .0
        .iter()
        .map(|m| match m {
            switch_v1model::FieldMatch::Lpm { value, .. } => switch_tables::KeyField {
                kind: switch_tables::MatchKind::Lpm,
                width: value.len() as u32 * 8,
            },
            switch_v1model::FieldMatch::Exact(v) => switch_tables::KeyField {
                kind: switch_tables::MatchKind::Exact,
                width: v.len() as u32 * 8,
            },
            _ => unreachable!("the bench writes LPM and exact keys"),
        })
        .collect();
    let mut t2 = switch_tables::Table::new(keys, entries.len()).map_err(|e| e.to_string())?;
    let t = thread_cpu_s();
    for (m, args) in entries {
        t2.insert(&m, None, args).map_err(|e| e.to_string())?;
    }
    Ok((engine, thread_cpu_s() - t))
}

/// CPU time of the calling thread: the baselines are single-threaded, and on a shared machine
/// their wall time is mostly other processes'.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// An update as the engine takes it: field values padded to their bytes (the widths of
/// lossless.p4's fields are whole bytes).
fn engine_entry(u: &Update, ids: &Ids) -> (Vec<switch_v1model::FieldMatch>, Vec<Vec<u8>>) {
    let Some(Entity {
        entity: Some(entity::Entity::TableEntry(te)),
    }) = &u.entity
    else {
        unreachable!("the bench builds table entries")
    };
    let (key_bytes, arg_bytes): (&[usize], &[usize]) = if te.table_id == ids.route {
        (&[4], &[2])
    } else {
        (&[2, 16], &[6])
    };
    let pad = |v: &[u8], n: usize| {
        let mut out = vec![0u8; n];
        out[n - v.len()..].copy_from_slice(v);
        out
    };
    let matches = te
        .r#match
        .iter()
        .zip(key_bytes)
        .map(|(m, n)| match &m.field_match_type {
            Some(field_match::FieldMatchType::Lpm(l)) => switch_v1model::FieldMatch::Lpm {
                value: pad(&l.value, *n),
                prefix_len: l.prefix_len as u32,
            },
            Some(field_match::FieldMatchType::Exact(e)) => {
                switch_v1model::FieldMatch::Exact(pad(&e.value, *n))
            }
            _ => unreachable!("the bench writes LPM and exact keys"),
        })
        .collect();
    let args = match te.action.as_ref().and_then(|a| a.r#type.as_ref()) {
        Some(table_action::Type::Action(a)) => a
            .params
            .iter()
            .zip(arg_bytes)
            .map(|(p, n)| pad(&p.value, *n))
            .collect(),
        _ => unreachable!("the bench writes direct actions"),
    };
    (matches, args)
}

/// Requests and responses as bytes: the client sends what it encoded beforehand, the sink
/// answers without decoding.
#[derive(Clone, Copy)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// A P4Runtime Write endpoint that answers every request with an empty WriteResponse unread.
#[derive(Clone)]
struct Sink;

impl tonic::server::NamedService for Sink {
    const NAME: &'static str = "p4.v1.P4Runtime";
}

impl tonic::server::UnaryService<Bytes> for Sink {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;
    fn call(&mut self, _request: tonic::Request<Bytes>) -> Self::Future {
        std::future::ready(Ok(tonic::Response::new(Bytes::new())))
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, std::convert::Infallible>> + Send>>;

impl Service<http::Request<tonic::body::Body>> for Sink {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response>;
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move { Ok(tonic::server::Grpc::new(Raw).unary(Sink, req).await) })
    }
}
