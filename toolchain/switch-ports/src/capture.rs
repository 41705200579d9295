//! bmv2's `--pcap DIR`: every frame a port receives goes to `DIR/NAME_in.pcap`, every frame it
//! sends to `DIR/NAME_out.pcap`, each stamped with the wall-clock time.

use std::fs::File;
use std::io::BufWriter;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use crate::pcap::{create_file, PcapWriter};
use crate::{Port, PortError, Recv};

/// A port whose traffic is also written to pcap files.
pub struct Captured<P: Port> {
    inner: P,
    rx_file: Mutex<PcapWriter<BufWriter<File>>>,
    tx_file: Mutex<PcapWriter<BufWriter<File>>>,
}

impl<P: Port> Captured<P> {
    /// Wraps `inner`; the files are named after `inner.name()` and created (truncated) in `dir`.
    pub fn new(inner: P, dir: &Path) -> Result<Self, PortError> {
        let open = |suffix: &str| {
            let path = dir.join(format!("{}_{suffix}.pcap", inner.name()));
            create_file(&path).map_err(|e| PortError::io(inner.name(), "create capture file", e))
        };
        let rx_file = Mutex::new(open("in")?);
        let tx_file = Mutex::new(open("out")?);
        Ok(Captured {
            inner,
            rx_file,
            tx_file,
        })
    }

    pub fn inner(&self) -> &P {
        &self.inner
    }
}

fn record(
    port: &str,
    file: &Mutex<PcapWriter<BufWriter<File>>>,
    frame: &[u8],
) -> Result<(), PortError> {
    file.lock()
        .unwrap_or_else(|p| p.into_inner())
        .write_now(frame)
        .map_err(|e| PortError::io(port, "write capture file", e))
}

impl<P: Port> Port for Captured<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn send(&self, frame: &[u8]) -> Result<(), PortError> {
        record(self.name(), &self.tx_file, frame)?;
        self.inner.send(frame)
    }

    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError> {
        let got = self.inner.recv(buf, timeout)?;
        if let Recv::Frame(len) = got {
            record(self.name(), &self.rx_file, &buf[..len])?;
        }
        Ok(got)
    }

    fn readable_fd(&self) -> Option<BorrowedFd<'_>> {
        self.inner.readable_fd()
    }
}
