//! bmv2's logging options: `--log-console`, `--log-file FILE`, `--log-flush`, `-L LEVEL`,
//! `--dump-packet-data N`. Per-packet lines are written only at `debug` or `trace`.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    Off,
}

#[derive(Clone)]
pub struct Logger {
    level: Level,
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    flush: bool,
    dump_bytes: usize,
}

impl Logger {
    pub fn new(level: Level, out: Box<dyn Write + Send>, flush: bool, dump_bytes: usize) -> Self {
        Logger {
            level,
            out: Arc::new(Mutex::new(out)),
            flush,
            dump_bytes,
        }
    }

    pub fn enabled(&self, level: Level) -> bool {
        level >= self.level && self.level != Level::Off
    }

    pub fn log(&self, level: Level, msg: &str) {
        if !self.enabled(level) {
            return;
        }
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "[{level:?}] {msg}");
        if self.flush {
            let _ = out.flush();
        }
    }

    /// One line per packet at `debug`, with the first `--dump-packet-data` bytes in hex.
    pub fn packet(&self, what: &str, port: u32, data: &[u8]) {
        if !self.enabled(Level::Debug) {
            return;
        }
        let mut line = format!("{what} {port}, {} bytes", data.len());
        if self.dump_bytes > 0 {
            line.push_str(": ");
            for b in data.iter().take(self.dump_bytes) {
                let _ = write!(line, "{b:02x}");
            }
        }
        self.log(Level::Debug, &line);
    }
}
