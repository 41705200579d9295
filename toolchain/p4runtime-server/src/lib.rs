//! A P4Runtime v1 server (tonic) driving a `switch_v1model::Switch` through the [`Dataplane`]
//! trait that the switch binary implements. See README.md for what the spec sections cover.

mod bytes;
mod digest;
mod idle;
mod packet;
mod pipeline;
mod read;
mod role;
mod wire;
mod write;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use p4runtime_proto::google::rpc::{self, Code};
use p4runtime_proto::p4runtime::{
    get_forwarding_pipeline_config_request::ResponseType,
    set_forwarding_pipeline_config_request::Action as ConfigAction, stream_message_request,
    stream_message_response, write_request::Atomicity, CapabilitiesRequest, CapabilitiesResponse,
    ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, MasterArbitrationUpdate, PacketIn, PacketMetadata,
    ReadRequest, ReadResponse, SetForwardingPipelineConfigRequest,
    SetForwardingPipelineConfigResponse, StreamError, StreamMessageRequest, StreamMessageResponse,
    Uint128, Update, WriteRequest, WriteResponse,
};
use p4runtime_proto::{P4Runtime, P4RuntimeServer};
use prost::Message;
use switch_v1model::SwitchConfig;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::http;
use tonic::{Request, Response, Status, Streaming};

pub use bytes::{ByteStringError, ByteStringProblem};
pub use packet::PacketOutError;
pub use pipeline::Pipeline;
pub use role::{P4RoleConfig, PacketFilter, TYPE_URL as ROLE_CONFIG_TYPE_URL};
pub use write::UpdateError;

/// A closure run on the engine between two packets; `None` = no pipeline loaded.
pub type EngineJob = Box<dyn FnOnce(&mut Option<switch_v1model::Switch>) + Send>;

/// Where frames the pipeline sends to the CPU port go (PacketIn).
pub type CpuSink = Box<dyn Fn(Vec<u8>) + Send + Sync>;

/// What the server needs from the switch that hosts it. The switch owns the engine and its
/// packet loop; the server only ever touches the engine through [`Dataplane::exec`].
pub trait Dataplane: Send + Sync + 'static {
    /// Runs `f` on the engine between two packets (never in the middle of one), after every job
    /// queued before it. It may return before `f` has run: a caller that needs the result waits
    /// for it, so that a Write can queue its batch and let the next one queue behind it while
    /// the data plane applies this one. `None` = no pipeline loaded; `f` may install one
    /// (SetForwardingPipelineConfig).
    fn exec(&self, f: EngineJob);
    /// Frames the pipeline sends to the CPU port go to this sink (PacketIn); set by the server.
    fn set_cpu_sink(&self, sink: CpuSink);
    /// Injects a frame as if received on the CPU port (PacketOut).
    fn inject_cpu(&self, frame: Vec<u8>);
    /// The engine settings of the hosting switch (`--cpu-port`, `--priority-queues`,
    /// `--drop-port`): a pipeline set over P4Runtime must run with them, not with defaults.
    fn engine_config(&self) -> SwitchConfig;
    /// The P4Runtime device id this switch answers to.
    fn device_id(&self) -> u64;
}

/// Why [`serve`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("gRPC server on {addr}: {source}")]
    Transport {
        addr: SocketAddr,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("gRPC server: cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Serves P4Runtime on `addr` until `shutdown` completes. Installs the CPU sink on `dp`.
pub async fn serve(
    addr: SocketAddr,
    dp: Arc<dyn Dataplane>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    serve_listener(listener, dp, shutdown).await
}

/// [`serve`] on an already bound listener (tests bind port 0 and read the address back).
pub async fn serve_listener(
    listener: tokio::net::TcpListener,
    dp: Arc<dyn Dataplane>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        source,
    })?;
    let server = Server::new(dp);
    tokio::spawn(server.digest_poller());
    tokio::spawn(server.idle_poller());
    tonic::transport::Server::builder()
        .add_service(Service::new(server))
        .serve_with_incoming_shutdown(
            // tonic sets TCP_NODELAY only on sockets it accepts itself. Without it, a
            // response written while the previous one is unacknowledged waits for the
            // client's delayed ACK (up to 40 ms on Linux), and a client with several writes in
            // flight waits with it: the switch sat idle half the wall time of the write bench.
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
        .map_err(|source| ServeError::Transport { addr, source })
}

/// Largest request and response (a batch of 100k entries is ~6 MB).
const MAX_MESSAGE: usize = 256 << 20;

/// The P4Runtime service as [`serve`] mounts it: the generated service, except that Write
/// requests are decoded by `wire` (updates left encoded until translated).
#[derive(Clone)]
pub struct Service {
    server: Arc<Server>,
    generated: P4RuntimeServer<Server>,
}

impl Service {
    pub fn new(server: Server) -> Service {
        let server = Arc::new(server);
        Service {
            generated: P4RuntimeServer::from_arc(server.clone())
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
            server,
        }
    }
}

impl tonic::server::NamedService for Service {
    const NAME: &'static str = p4runtime_proto::p4runtime::p4_runtime_server::SERVICE_NAME;
}

type BoxFuture<T, E> = std::pin::Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl tonic::codegen::Service<http::Request<tonic::body::Body>> for Service {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        if req.uri().path() != "/p4.v1.P4Runtime/Write" {
            return self.generated.call(req);
        }
        let method = EncodedWrite(self.server.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(wire::WriteCodec)
                .apply_max_message_size_config(Some(MAX_MESSAGE), Some(MAX_MESSAGE));
            Ok(grpc.unary(method, req).await)
        })
    }
}

struct EncodedWrite(Arc<Server>);

impl tonic::server::UnaryService<wire::WriteRequest> for EncodedWrite {
    type Response = WriteResponse;
    type Future = BoxFuture<Response<WriteResponse>, Status>;

    fn call(&mut self, request: Request<wire::WriteRequest>) -> Self::Future {
        let server = self.0.clone();
        Box::pin(async move {
            server
                .write_encoded(request.into_inner())
                .await
                .map(Response::new)
        })
    }
}

type StreamTx = mpsc::Sender<Result<StreamMessageResponse, Status>>;

struct Controller {
    election_id: Option<u128>,
    /// Role name; "" = the default role.
    role: String,
    /// The role config this controller sent (it applies while the controller is primary).
    config: Option<Arc<role::RoleConfig>>,
    tx: StreamTx,
}

/// Election per role (spec 5): each role has its own primary.
#[derive(Default)]
struct Arbitration {
    next_conn: u64,
    conns: HashMap<u64, Controller>,
    primary: HashMap<String, u64>,
}

impl Arbitration {
    fn highest(&self, role: &str) -> Option<(u64, u128)> {
        self.conns
            .iter()
            .filter(|(_, s)| s.role == role)
            .filter_map(|(c, s)| s.election_id.map(|e| (*c, e)))
            .max_by_key(|(_, e)| *e)
    }

    fn primary_election(&self, role: &str) -> Option<u128> {
        self.primary
            .get(role)
            .and_then(|c| self.conns.get(c))
            .and_then(|c| c.election_id)
    }

    fn is_primary(&self, conn: u64) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|c| self.primary.get(&c.role) == Some(&conn))
    }

    /// The role config in force: the one its primary sent; `None` = the whole pipeline.
    fn config(&self, role: &str) -> Option<Arc<role::RoleConfig>> {
        self.primary
            .get(role)
            .and_then(|c| self.conns.get(c))
            .and_then(|c| c.config.clone())
    }

    /// The streams of every role's primary, with its role config: PacketIns, digests and
    /// idle-timeout notifications go to each primary whose config lets it see them.
    fn primaries(&self) -> impl Iterator<Item = (&StreamTx, Option<&role::RoleConfig>)> + '_ {
        self.primary
            .values()
            .filter_map(|c| self.conns.get(c))
            .map(|c| (&c.tx, c.config.as_deref()))
    }

    /// Recomputes the role's primary; true when it changed.
    fn elect(&mut self, role: &str) -> bool {
        let new = self.highest(role).map(|(c, _)| c);
        let changed = new != self.primary.get(role).copied();
        match new {
            Some(c) => self.primary.insert(role.to_string(), c),
            None => self.primary.remove(role),
        };
        changed
    }

    fn update_for(&self, conn: u64, device_id: u64) -> StreamMessageResponse {
        let role = self.conns.get(&conn).map_or("", |c| c.role.as_str());
        let highest = self.highest(role).map(|(_, e)| e).unwrap_or(0);
        let (code, message) = if self.primary.get(role) == Some(&conn) {
            (Code::Ok, "this controller is primary")
        } else if self.primary.contains_key(role) {
            (Code::AlreadyExists, "a primary controller is connected")
        } else {
            (Code::NotFound, "no primary controller")
        };
        StreamMessageResponse {
            update: Some(stream_message_response::Update::Arbitration(
                MasterArbitrationUpdate {
                    device_id,
                    role: (!role.is_empty()).then(|| p4runtime_proto::p4runtime::Role {
                        name: role.to_string(),
                        ..Default::default()
                    }),
                    election_id: Some(u128_to(highest)),
                    status: Some(rpc::Status {
                        code: code as i32,
                        message: message.into(),
                        details: Vec::new(),
                    }),
                },
            )),
        }
    }

    fn announce(&self, role: &str, device_id: u64) {
        for (c, s) in &self.conns {
            if s.election_id.is_some() && s.role == role {
                let _ = s.tx.try_send(Ok(self.update_for(*c, device_id)));
            }
        }
    }
}

fn u128_of(v: &Option<Uint128>) -> Option<u128> {
    v.as_ref()
        .map(|v| (u128::from(v.high) << 64) | u128::from(v.low))
}

fn u128_to(v: u128) -> Uint128 {
    Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

#[derive(Default)]
struct State {
    pipeline: Option<Arc<Pipeline>>,
    /// VERIFY_AND_SAVE's pipeline, waiting for COMMIT.
    saved: Option<(Pipeline, switch_v1model::Switch)>,
}

/// The P4Runtime service. Build it with [`Server::new`] and mount it with
/// `P4RuntimeServer::new`, or let [`serve`] do both.
pub struct Server {
    dp: Arc<dyn Dataplane>,
    state: Arc<Mutex<State>>,
    arb: Arc<Mutex<Arbitration>>,
    index: Arc<Mutex<write::Index>>,
    digests: Arc<Mutex<digest::Digests>>,
    /// Serialises Write and SetForwardingPipelineConfig (one batch at a time reaches exec).
    writer: Arc<tokio::sync::Mutex<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn status(code: Code, msg: impl Into<String>) -> Status {
    Status::new(tonic::Code::from_i32(code as i32), msg.into())
}

fn no_pipeline() -> Status {
    status(
        Code::FailedPrecondition,
        "no forwarding pipeline config is set",
    )
}

/// Runs `f` on the engine and hands back its result.
fn exec_on<R: Send + 'static>(
    dp: &dyn Dataplane,
    f: impl FnOnce(&mut Option<switch_v1model::Switch>) -> R + Send + 'static,
) -> Option<R> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    dp.exec(Box::new(move |sw| {
        let _ = tx.send(f(sw));
    }));
    rx.recv().ok()
}

impl Server {
    pub fn new(dp: Arc<dyn Dataplane>) -> Server {
        let state = Arc::new(Mutex::new(State::default()));
        let arb = Arc::new(Mutex::new(Arbitration::default()));
        let (st, ar) = (state.clone(), arb.clone());
        dp.set_cpu_sink(Box::new(move |frame| {
            let pipeline = lock(&st).pipeline.clone();
            let Some(msg) = pipeline.and_then(|p| packet_in(&p, frame)) else {
                return;
            };
            let Some(stream_message_response::Update::Packet(pkt)) = &msg.update else {
                return;
            };
            for (tx, config) in lock(&ar).primaries() {
                if config.map_or(true, |c| c.wants_packet_in(&pkt.metadata)) {
                    let _ = tx.try_send(Ok(msg.clone()));
                }
            }
        }));
        Server {
            dp,
            state,
            arb,
            index: Arc::new(Mutex::new(write::Index::default())),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            digests: Arc::default(),
        }
    }

    /// The DigestList task; it ends when the server is dropped. [`serve`] runs it; call it when
    /// mounting the service yourself.
    pub fn digest_poller(&self) -> impl Future<Output = ()> + Send + 'static {
        digest::Poller {
            dp: self.dp.clone(),
            state: Arc::downgrade(&self.state),
            index: Arc::downgrade(&self.index),
            arb: Arc::downgrade(&self.arb),
            digests: Arc::downgrade(&self.digests),
        }
        .run()
    }

    /// The IdleTimeoutNotification task; it ends when the server is dropped. [`serve`] runs it;
    /// call it when mounting the service yourself.
    pub fn idle_poller(&self) -> impl Future<Output = ()> + Send + 'static {
        idle::Poller {
            dp: self.dp.clone(),
            state: Arc::downgrade(&self.state),
            index: Arc::downgrade(&self.index),
            arb: Arc::downgrade(&self.arb),
        }
        .run()
    }

    fn check_device(&self, device_id: u64) -> Result<(), Status> {
        if device_id != self.dp.device_id() {
            return Err(status(
                Code::NotFound,
                format!(
                    "device id {device_id}: this switch is device {}",
                    self.dp.device_id()
                ),
            ));
        }
        Ok(())
    }

    fn check_primary(&self, role: &str, election_id: &Option<Uint128>) -> Result<(), Status> {
        let primary = lock(&self.arb).primary_election(role);
        match (u128_of(election_id), primary) {
            (Some(e), Some(p)) if e == p => Ok(()),
            (e, p) => Err(status(
                Code::PermissionDenied,
                format!(
                    "election id {} is not the primary's ({})",
                    e.map_or("none".into(), |e| e.to_string()),
                    p.map_or("no primary".into(), |p| p.to_string())
                ),
            )),
        }
    }

    fn pipeline(&self) -> Result<Arc<Pipeline>, Status> {
        lock(&self.state).pipeline.clone().ok_or_else(no_pipeline)
    }

    /// Write (spec 12) of a request whose updates are still encoded.
    async fn write_encoded(&self, req: wire::WriteRequest) -> Result<WriteResponse, Status> {
        self.check_device(req.device_id)?;
        self.check_primary(&req.role, &req.election_id)?;
        let p = self.pipeline()?;
        let config = lock(&self.arb).config(&req.role);
        let rollback = match Atomicity::try_from(req.atomicity) {
            Ok(Atomicity::ContinueOnError) => false,
            // One exec applies the whole batch between two packets, so an all-or-nothing batch
            // is also dataplane-atomic.
            Ok(Atomicity::RollbackOnError | Atomicity::DataplaneAtomic) => true,
            Err(_) => {
                return Err(status(
                    Code::InvalidArgument,
                    format!("atomicity {}", req.atomicity),
                ))
            }
        };
        // Decoded and translated outside the writer lock, so the next batch is ready while
        // the data plane applies this one. Translation reads the pipeline only; a pipeline
        // committed meanwhile makes the batch translate again under the lock.
        let role = req.role.clone();
        let translate = move |p: &Pipeline, req: &wire::WriteRequest| -> Vec<_> {
            let mut plain = wire::PlainEntry::default();
            req.updates()
                .map(|bytes| {
                    // Plain table entries straight from the wire; role configs filter by
                    // entity, so a role with one takes the full decode.
                    if config.is_none() {
                        let op = plain
                            .read(bytes)
                            .and_then(|()| write::translate_wire(p, &plain));
                        if let Some(op) = op {
                            return op;
                        }
                    }
                    let u = Update::decode(bytes).map_err(|e| {
                        UpdateError::InvalidArgument(format!("the update does not decode: {e}"))
                    })?;
                    match (&config, &u.entity) {
                        (Some(c), Some(e)) if !c.allows(e) => {
                            Err(UpdateError::PermissionDenied(format!(
                                "role \"{role}\": its role config does not give it this entity"
                            )))
                        }
                        _ => write::translate(p, &u),
                    }
                })
                .collect()
        };
        // One blocking task translates, waits its turn and queues the batch on the data plane;
        // the lock is held only while queueing (the data plane runs jobs in order), so the
        // next batch is queued while this one is applied and the data plane goes from one to
        // the next without waiting for a thread to wake. The result comes back to the async
        // side directly.
        let (dp, index, state, writer) = (
            self.dp.clone(),
            self.index.clone(),
            self.state.clone(),
            self.writer.clone(),
        );
        let applied = tokio::task::spawn_blocking(move || {
            let ops = translate(&p, &req);
            let _guard = writer.blocking_lock();
            let now = lock(&state).pipeline.clone().ok_or_else(no_pipeline)?;
            let ops = if Arc::ptr_eq(&now, &p) {
                ops
            } else {
                translate(&now, &req)
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            dp.exec(Box::new(move |sw| {
                let mut ops = ops;
                let results = match sw {
                    Some(sw) => write::apply(sw, &mut lock(&index), &mut ops, rollback),
                    None => vec![Err(UpdateError::FailedPrecondition("no pipeline".into()))],
                };
                let _ = tx.send((results, ops));
            }));
            Ok::<_, Status>(rx)
        })
        .await
        .map_err(|e| status(Code::Internal, format!("write task: {e}")))??;
        let (results, ops) = applied
            .await
            .map_err(|_| status(Code::Unavailable, "the data plane is gone"))?;
        // The applied entries' keys and arguments (four allocations or more an entry) are
        // freed on the blocking pool: neither the data plane nor this connection's task waits
        // for it.
        tokio::task::spawn_blocking(move || drop(ops));
        if results.iter().all(|r| r.is_ok()) {
            Ok(WriteResponse {})
        } else {
            Err(batch_status(&results))
        }
    }

    /// Installs a verified engine and its mapping; entries start empty.
    fn commit(&self, p: Pipeline, sw: switch_v1model::Switch) {
        let _ = exec_on(&*self.dp, move |slot| *slot = Some(sw));
        *lock(&self.index) = write::Index::default();
        lock(&self.state).pipeline = Some(Arc::new(p));
    }
}

fn packet_in(p: &Pipeline, frame: Vec<u8>) -> Option<StreamMessageResponse> {
    let (metadata, payload) = match &p.packet_in {
        Some(hdr) => {
            let widths: Vec<u32> = hdr.iter().map(|h| h.1).collect();
            let (vals, n) = bytes::unpack_bits(&frame, &widths)?;
            let md = hdr
                .iter()
                .zip(vals)
                .map(|((id, _), v)| PacketMetadata {
                    metadata_id: *id,
                    value: bytes::canonical(&v),
                })
                .collect();
            (md, frame.get(n..).unwrap_or_default().to_vec())
        }
        None => (Vec::new(), frame),
    };
    Some(StreamMessageResponse {
        update: Some(stream_message_response::Update::Packet(PacketIn {
            payload,
            metadata,
        })),
    })
}

/// The batch status of spec 12.4: UNKNOWN with one p4.v1.Error per update in the details.
/// A successful update's Error is empty (canonical_code OK is proto3's default), 33 bytes with
/// its Any; a failed one adds its code and message. The details travel as
/// `grpc-status-details-bin` in the trailers, so a large failing batch needs a client whose
/// metadata limit is above gRPC's 16 KiB default (spec appendix on gRPC metadata size; see the
/// README).
fn batch_status(results: &[Result<(), UpdateError>]) -> Status {
    let failed = results.iter().filter(|r| r.is_err()).count();
    let details: Vec<prost_types::Any> = results
        .iter()
        .map(|r| {
            let e = match r {
                Ok(()) => p4runtime_proto::p4runtime::Error::default(),
                Err(e) => p4runtime_proto::p4runtime::Error {
                    canonical_code: e.code() as i32,
                    message: e.message().to_string(),
                    ..Default::default()
                },
            };
            prost_types::Any {
                type_url: "type.googleapis.com/p4.v1.Error".into(),
                value: e.encode_to_vec(),
            }
        })
        .collect();
    let first = results
        .iter()
        .find_map(|r| r.as_ref().err())
        .map(UpdateError::to_string)
        .unwrap_or_default();
    let message = format!(
        "{failed} of {} updates failed; first: {first}",
        results.len()
    );
    let body = rpc::Status {
        code: Code::Unknown as i32,
        message: message.clone(),
        details,
    };
    Status::with_details(tonic::Code::Unknown, message, body.encode_to_vec().into())
}

#[tonic::async_trait]
impl P4Runtime for Server {
    async fn write(
        &self,
        request: Request<WriteRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        self.write_encoded(request.into_inner().into())
            .await
            .map(Response::new)
    }

    type ReadStream = ReceiverStream<Result<ReadResponse, Status>>;

    async fn read(
        &self,
        request: Request<ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        let p = self.pipeline()?;
        let dp = self.dp.clone();
        let index = self.index.clone();
        let config = lock(&self.arb).config(&req.role);
        let mut entities =
            tokio::task::spawn_blocking(move || read::read(&*dp, &p, &index, &req.entities))
                .await
                .map_err(|e| status(Code::Internal, format!("read task: {e}")))??;
        if let Some(c) = config {
            entities.retain(|e| c.allows(e));
        }
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            let mut it = entities.into_iter().peekable();
            while it.peek().is_some() {
                let chunk: Vec<_> = it.by_ref().take(read::CHUNK).collect();
                if tx.send(Ok(ReadResponse { entities: chunk })).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        self.check_primary(&req.role, &req.election_id)?;
        if lock(&self.arb)
            .config(&req.role)
            .is_some_and(|c| !c.config.can_push_pipeline)
        {
            return Err(status(
                Code::PermissionDenied,
                format!(
                    "role \"{}\": its role config does not allow pushing a pipeline",
                    req.role
                ),
            ));
        }
        let action = ConfigAction::try_from(req.action).unwrap_or(ConfigAction::Unspecified);
        let _guard = self.writer.lock().await;
        let verified = |config: Option<ForwardingPipelineConfig>| {
            let c = config.ok_or_else(|| status(Code::InvalidArgument, "no config given"))?;
            let p4info = c
                .p4info
                .ok_or_else(|| status(Code::InvalidArgument, "config without p4info"))?;
            pipeline::verify(
                p4info,
                c.p4_device_config,
                c.cookie,
                self.dp.engine_config(),
            )
            .map_err(|e| status(Code::InvalidArgument, e.to_string()))
        };
        match action {
            ConfigAction::Unspecified => {
                return Err(status(Code::InvalidArgument, "action UNSPECIFIED"));
            }
            ConfigAction::Verify => {
                verified(req.config)?;
            }
            ConfigAction::VerifyAndSave => {
                lock(&self.state).saved = Some(verified(req.config)?);
            }
            ConfigAction::VerifyAndCommit => {
                let (p, sw) = verified(req.config)?;
                self.commit(p, sw);
            }
            ConfigAction::Commit => {
                if req.config.is_some() {
                    return Err(status(
                        Code::InvalidArgument,
                        "COMMIT takes no config: it commits the one VERIFY_AND_SAVE saved",
                    ));
                }
                let saved = lock(&self.state).saved.take();
                let (p, sw) = saved.ok_or_else(|| {
                    status(
                        Code::FailedPrecondition,
                        "COMMIT without a config saved by VERIFY_AND_SAVE",
                    )
                })?;
                self.commit(p, sw);
            }
            ConfigAction::ReconcileAndCommit => {
                let (p, sw) = verified(req.config)?;
                let same = lock(&self.state).pipeline.as_ref().is_some_and(|old| {
                    old.device_config == p.device_config && old.p4info == p.p4info
                });
                if same {
                    // Same program: state is kept, only the cookie changes.
                    let mut st = lock(&self.state);
                    st.pipeline = Some(Arc::new(p));
                } else {
                    // The engine cannot carry entries across programs; refuse rather than lose
                    // them silently (spec 14.1: the server may reject a reconcile it cannot do).
                    drop(sw);
                    return Err(status(
                        Code::Unimplemented,
                        "RECONCILE_AND_COMMIT with a different program would lose state; use VERIFY_AND_COMMIT",
                    ));
                }
            }
        }
        Ok(Response::new(SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        let ty = ResponseType::try_from(req.response_type).map_err(|_| {
            status(
                Code::InvalidArgument,
                format!("response type {}", req.response_type),
            )
        })?;
        // Spec 7.3: with no pipeline known, the response's config is unset (not an error).
        let Some(p) = lock(&self.state).pipeline.clone() else {
            return Ok(Response::new(GetForwardingPipelineConfigResponse {
                config: None,
            }));
        };
        let (info, dev) = match ty {
            ResponseType::All => (true, true),
            ResponseType::CookieOnly => (false, false),
            ResponseType::P4infoAndCookie => (true, false),
            ResponseType::DeviceConfigAndCookie => (false, true),
        };
        Ok(Response::new(GetForwardingPipelineConfigResponse {
            config: Some(ForwardingPipelineConfig {
                p4info: info.then(|| p.p4info.clone()),
                p4_device_config: if dev {
                    p.device_config.clone()
                } else {
                    Vec::new()
                },
                cookie: p.cookie,
            }),
        }))
    }

    type StreamChannelStream = ReceiverStream<Result<StreamMessageResponse, Status>>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(1024);
        let conn = {
            let mut arb = lock(&self.arb);
            arb.next_conn += 1;
            let c = arb.next_conn;
            arb.conns.insert(
                c,
                Controller {
                    election_id: None,
                    role: String::new(),
                    config: None,
                    tx: tx.clone(),
                },
            );
            c
        };
        let arb = self.arb.clone();
        let state = self.state.clone();
        let dp = self.dp.clone();
        let digests = self.digests.clone();
        tokio::spawn(async move {
            while let Ok(Some(msg)) = inbound.message().await {
                match msg.update {
                    Some(stream_message_request::Update::Arbitration(a)) => {
                        if let Err(e) = arbitrate(&arb, &*dp, conn, a) {
                            let _ = tx.send(Err(e)).await;
                            break;
                        }
                    }
                    Some(stream_message_request::Update::Packet(po)) => {
                        let is_primary = lock(&arb).is_primary(conn);
                        let pipeline = lock(&state).pipeline.clone();
                        let r = match (is_primary, pipeline) {
                            (false, _) => Err(PacketOutError::NotPrimary),
                            (true, None) => Err(PacketOutError::NoPipeline),
                            (true, Some(p)) => packet::frame(&p, &po.metadata, &po.payload),
                        };
                        match r {
                            Ok(frame) => dp.inject_cpu(frame),
                            Err(e) => {
                                let err = StreamError {
                                    canonical_code: e.code() as i32,
                                    message: e.to_string(),
                                    space: String::new(),
                                    code: 0,
                                    details: Some(p4runtime_proto::p4runtime::stream_error::Details::PacketOut(
                                        p4runtime_proto::p4runtime::PacketOutError { packet_out: Some(po) },
                                    )),
                                };
                                let _ = tx
                                    .send(Ok(StreamMessageResponse {
                                        update: Some(stream_message_response::Update::Error(err)),
                                    }))
                                    .await;
                            }
                        }
                    }
                    Some(stream_message_request::Update::DigestAck(ack)) => {
                        lock(&digests).ack(ack.digest_id, ack.list_id);
                    }
                    Some(stream_message_request::Update::Other(_)) | None => {}
                }
            }
            let mut a = lock(&arb);
            if let Some(gone) = a.conns.remove(&conn) {
                if a.elect(&gone.role) {
                    a.announce(&gone.role, dp.device_id());
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn capabilities(
        &self,
        _request: Request<CapabilitiesRequest>,
    ) -> Result<Response<CapabilitiesResponse>, Status> {
        Ok(Response::new(CapabilitiesResponse {
            p4runtime_api_version: "1.3.0".into(),
            experimental: None,
        }))
    }
}

fn arbitrate(
    arb: &Mutex<Arbitration>,
    dp: &dyn Dataplane,
    conn: u64,
    a: MasterArbitrationUpdate,
) -> Result<(), Status> {
    if a.device_id != dp.device_id() {
        return Err(status(
            Code::NotFound,
            format!(
                "device id {}: this switch is device {}",
                a.device_id,
                dp.device_id()
            ),
        ));
    }
    let role = a.role.as_ref().map_or(String::new(), |r| r.name.clone());
    let config = match a.role.as_ref().and_then(|r| r.config.as_ref()) {
        None => None,
        Some(_) if role.is_empty() => {
            return Err(status(
                Code::InvalidArgument,
                "the default role has the whole pipeline: a role config needs a role name",
            ))
        }
        Some(any) => Some(Arc::new(
            role::RoleConfig::from_any(any).map_err(|(c, m)| status(c, m))?,
        )),
    };
    let election = u128_of(&a.election_id).unwrap_or(0);
    let mut arb = lock(arb);
    if let Some(c) = arb.conns.get(&conn) {
        if c.election_id.is_some() && c.role != role {
            return Err(status(
                Code::InvalidArgument,
                format!(
                    "this stream is in role \"{}\"; a stream keeps its role",
                    c.role
                ),
            ));
        }
    }
    if arb
        .conns
        .iter()
        .any(|(c, s)| *c != conn && s.role == role && s.election_id == Some(election))
    {
        return Err(status(
            Code::InvalidArgument,
            format!("election id {election} is used by another controller of this role"),
        ));
    }
    if let Some(cfg) = &config {
        let clash = arb.conns.values().find_map(|s| {
            let other = s.config.as_ref().filter(|_| s.role != role)?;
            cfg.conflict(other).map(|id| (id, s.role.clone()))
        });
        if let Some((id, other)) = clash {
            return Err(status(
                Code::InvalidArgument,
                format!(
                    "role config: P4 id {id} is held exclusively by role \"{other}\" or claimed \
                     exclusively here while role \"{other}\" lists it"
                ),
            ));
        }
    }
    if let Some(c) = arb.conns.get_mut(&conn) {
        c.election_id = Some(election);
        c.role = role.clone();
        c.config = config;
    }
    if arb.elect(&role) {
        arb.announce(&role, dp.device_id());
    } else if let Some(c) = arb.conns.get(&conn) {
        let _ = c.tx.try_send(Ok(arb.update_for(conn, dp.device_id())));
    }
    Ok(())
}
