//! In-process ports: two ends of a virtual cable, like a veth pair without the kernel.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

use crate::{deliver, Port, PortError, Recv};

/// One end of an in-process cable. Frames sent on one end are received on the other, in order.
pub struct ChannelPort {
    name: String,
    tx: Sender<Vec<u8>>,
    // mpsc receivers are not Sync; a port is shared by threads, and only one of them receives,
    // so this lock is never contended.
    rx: Mutex<Receiver<Vec<u8>>>,
}

impl ChannelPort {
    /// Two connected ends named `a` and `b`.
    pub fn pair(a: &str, b: &str) -> (ChannelPort, ChannelPort) {
        let (tx_ab, rx_ab) = channel();
        let (tx_ba, rx_ba) = channel();
        (
            ChannelPort {
                name: a.to_string(),
                tx: tx_ab,
                rx: Mutex::new(rx_ba),
            },
            ChannelPort {
                name: b.to_string(),
                tx: tx_ba,
                rx: Mutex::new(rx_ab),
            },
        )
    }
}

impl Port for ChannelPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, frame: &[u8]) -> Result<(), PortError> {
        self.tx
            .send(frame.to_vec())
            .map_err(|_| PortError::Disconnected {
                port: self.name.clone(),
            })
    }

    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError> {
        let rx = self.rx.lock().unwrap_or_else(|poison| poison.into_inner());
        match rx.recv_timeout(timeout) {
            Ok(frame) => deliver(&self.name, &frame, buf),
            Err(RecvTimeoutError::Timeout) => Ok(Recv::Timeout),
            Err(RecvTimeoutError::Disconnected) => Ok(Recv::Closed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(5);

    #[test]
    fn frames_cross_in_order_both_ways() {
        let (sw, host) = ChannelPort::pair("sw0", "host0");
        sw.send(&[1, 2, 3]).unwrap();
        sw.send(&[4]).unwrap();
        host.send(&[9; 60]).unwrap();
        let mut buf = [0u8; 128];
        assert_eq!(host.recv(&mut buf, WAIT).unwrap(), Recv::Frame(3));
        assert_eq!(&buf[..3], &[1, 2, 3]);
        assert_eq!(host.recv(&mut buf, WAIT).unwrap(), Recv::Frame(1));
        assert_eq!(buf[0], 4);
        assert_eq!(sw.recv(&mut buf, WAIT).unwrap(), Recv::Frame(60));
        assert_eq!(&buf[..60], &[9; 60]);
    }

    #[test]
    fn empty_port_times_out_and_dropped_peer_closes() {
        let (sw, host) = ChannelPort::pair("sw0", "host0");
        let mut buf = [0u8; 16];
        assert_eq!(
            sw.recv(&mut buf, Duration::from_millis(1)).unwrap(),
            Recv::Timeout
        );
        drop(host);
        assert_eq!(sw.recv(&mut buf, WAIT).unwrap(), Recv::Closed);
        assert!(matches!(
            sw.send(&[1]),
            Err(PortError::Disconnected { port }) if port == "sw0"
        ));
    }

    #[test]
    fn frame_larger_than_buffer_is_reported() {
        let (sw, host) = ChannelPort::pair("sw0", "host0");
        host.send(&[0; 100]).unwrap();
        let mut buf = [0u8; 64];
        let err = sw.recv(&mut buf, WAIT).unwrap_err();
        assert_eq!(
            err.to_string(),
            "port sw0: received a 100-byte frame into a 64-byte buffer; frame dropped"
        );
    }
}
