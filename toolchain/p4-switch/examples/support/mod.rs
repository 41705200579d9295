//! What the p4-switch benches share: a port that discards, and writing the result.

use serde_json::Value;
use std::time::Duration;
use switch_ports::{Port, PortError, Recv};

/// A transmit-only port that drops every frame: the bench measures the switch, not a port.
pub struct Discard;

impl Port for Discard {
    fn name(&self) -> &str {
        "discard"
    }
    fn send(&self, _frame: &[u8]) -> Result<(), PortError> {
        Ok(())
    }
    fn recv(&self, _buf: &mut [u8], _t: Duration) -> Result<Recv, PortError> {
        Ok(Recv::Closed)
    }
}

/// Prints the result and writes it to `out`; exits 1 on an error (the bench's or the write's).
pub fn finish(name: &str, out: &str, result: Result<Value, String>) {
    let doc = result.unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    });
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    println!("{text}");
    if let Err(e) = std::fs::write(out, text + "\n") {
        eprintln!("{out}: {e}");
        std::process::exit(1);
    }
}
