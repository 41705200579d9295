//! The P4Runtime server (`p4runtime-server`) on `--grpc-server-addr`, over the running dataplane
//! or any other [`Dataplane`] (lossless-sim serves its simulated switches with it).

use crate::error::ServerError;
use crate::runtime::{EngineJob, Handle};
use p4runtime_server::{CpuSink, Dataplane};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use switch_v1model::SwitchConfig;
use tokio::sync::oneshot;

/// How long a stopping switch lets connected controllers finish their requests.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

impl Dataplane for Handle {
    fn exec(&self, f: EngineJob) {
        Handle::exec(self, f)
    }
    fn set_cpu_sink(&self, sink: CpuSink) {
        Handle::set_cpu_sink(self, sink)
    }
    fn inject_cpu(&self, frame: Vec<u8>) {
        Handle::inject_cpu(self, frame)
    }
    fn engine_config(&self) -> SwitchConfig {
        Handle::engine_config(self)
    }
    fn device_id(&self) -> u64 {
        Handle::device_id(self)
    }
}

pub struct GrpcServer {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl GrpcServer {
    /// Binds `addr` now (so a busy port is a start-up error) and serves `dp` on a thread of its
    /// own.
    pub fn start(addr: &str, dp: Arc<dyn Dataplane>) -> Result<GrpcServer, ServerError> {
        let err = |e: std::io::Error| ServerError::Bind {
            option: "--grpc-server-addr",
            addr: addr.to_string(),
            source: Box::new(e),
        };
        let listener = std::net::TcpListener::bind(addr).map_err(err)?;
        listener.set_nonblocking(true).map_err(err)?;
        let bound = listener.local_addr().map_err(err)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(err)?;
        let (tx, rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("grpc".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("gRPC server on {bound}: {e}");
                            return;
                        }
                    };
                    let (graceful, graceful_rx) = oneshot::channel::<()>();
                    let shutdown = async {
                        let _ = graceful_rx.await;
                    };
                    let serve = p4runtime_server::serve_listener(listener, dp, shutdown);
                    tokio::pin!(serve);
                    let result = tokio::select! {
                        r = &mut serve => r,
                        _ = rx => {
                            let _ = graceful.send(());
                            // A graceful shutdown waits for every open StreamChannel, i.e. for
                            // the controllers to leave; a stopping switch drops them after a
                            // grace period instead (leaving block_on drops the runtime's tasks).
                            tokio::time::timeout(SHUTDOWN_GRACE, serve)
                                .await
                                .unwrap_or(Ok(()))
                        }
                    };
                    if let Err(e) = result {
                        eprintln!("{e}");
                    }
                })
            })
            .map_err(err)?;
        Ok(GrpcServer {
            addr: bound,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
