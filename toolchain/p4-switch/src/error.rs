//! Why one of the switch's servers (statistics, P4Runtime) could not start; `app` reports it at
//! start-up and lossless-sim when it serves its simulated switches.

/// A server that did not start, with the command-line option that gave its address.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{option} {addr}: {source}")]
    Bind {
        option: &'static str,
        addr: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{option} {addr}: not an IP address")]
    NotIp { option: &'static str, addr: String },
    /// The server's thread could not be created.
    #[error("{0}")]
    Thread(std::io::Error),
}
