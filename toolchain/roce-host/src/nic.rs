//! An [`Endpoint`] attached to a real port and the monotonic clock: what the binary runs.

use std::time::{Duration, Instant};

use switch_ports::{Port, PortError, Recv, MAX_FRAME};

use crate::endpoint::Endpoint;

/// Frames handled per [`Nic::step`] in each direction before the caller looks at completions.
const BURST: usize = 64;
/// poll(2) counts whole milliseconds: shorter waits sleep instead, and waits shorter than
/// [`SPIN_BELOW`] spin, so pacing stays accurate without burning a shared CPU.
const POLL_MIN: Duration = Duration::from_millis(1);
const SPIN_BELOW: Duration = Duration::from_micros(50);
/// Longest sleep: a PFC frame or ACK arriving meanwhile waits at most this long in the socket.
const SLEEP_MAX: Duration = Duration::from_micros(100);

pub struct Nic<P: Port> {
    pub ep: Endpoint,
    pub port: P,
    start: Instant,
    out: Vec<u8>,
    buf: Vec<u8>,
}

impl<P: Port> Nic<P> {
    pub fn new(ep: Endpoint, port: P) -> Self {
        Nic {
            ep,
            port,
            start: Instant::now(),
            out: Vec::with_capacity(MAX_FRAME),
            buf: vec![0; MAX_FRAME],
        }
    }

    /// Nanoseconds since the NIC was created: the endpoint's clock.
    pub fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Transmits what is due, then waits at most `max_wait` (less when the endpoint has a
    /// deadline sooner) for received frames and hands them to the endpoint.
    pub fn step(&mut self, max_wait: Duration) -> Result<(), PortError> {
        for _ in 0..BURST {
            let now = self.now();
            if !self.ep.poll_tx(now, &mut self.out) {
                break;
            }
            self.port.send(&self.out)?;
        }
        let now = self.now();
        let wait = match self.ep.next_wakeup() {
            Some(t) => Duration::from_nanos(t.saturating_sub(now)).min(max_wait),
            None => max_wait,
        };
        let mut timeout = if wait >= POLL_MIN {
            // Whole milliseconds, since the port rounds poll(2)'s timeout up: the rest of the
            // wait is slept or spun on the next step, so a paced frame is not sent late.
            Duration::from_millis(wait.as_millis() as u64)
        } else {
            if wait >= SPIN_BELOW {
                std::thread::sleep(wait.min(SLEEP_MAX));
            }
            Duration::ZERO
        };
        for _ in 0..BURST {
            match self.port.recv(&mut self.buf, timeout)? {
                Recv::Frame(n) => {
                    let now = self.now();
                    self.ep.handle_frame(now, &self.buf[..n]);
                }
                Recv::Timeout => break,
                Recv::Closed => {
                    return Err(PortError::Disconnected {
                        port: self.port.name().to_string(),
                    })
                }
            }
            timeout = Duration::ZERO;
        }
        Ok(())
    }

    /// Resolves `ip` by ARP, retrying every 200 ms, for at most `limit`.
    pub fn resolve(&mut self, ip: [u8; 4], limit: Duration) -> Result<Option<[u8; 6]>, PortError> {
        let deadline = Instant::now() + limit;
        let mut next_request = Instant::now();
        while Instant::now() < deadline {
            if let Some(mac) = self.ep.neighbor(ip) {
                return Ok(Some(mac));
            }
            if Instant::now() >= next_request {
                self.ep.arp_request(ip);
                next_request = Instant::now() + Duration::from_millis(200);
            }
            self.step(Duration::from_millis(10))?;
        }
        Ok(self.ep.neighbor(ip))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::endpoint::EndpointConfig;

    /// A port that never delivers a frame and records the timeouts it was asked to wait.
    #[derive(Default)]
    struct Silent(Mutex<Vec<Duration>>);

    impl Port for Silent {
        fn name(&self) -> &str {
            "silent"
        }
        fn send(&self, _frame: &[u8]) -> Result<(), PortError> {
            Ok(())
        }
        fn recv(&self, _buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError> {
            self.0.lock().unwrap().push(timeout);
            Ok(Recv::Timeout)
        }
    }

    #[test]
    fn an_idle_endpoint_blocks_in_whole_milliseconds() {
        let ep = Endpoint::new(EndpointConfig::new([2, 0, 0, 0, 0, 1], [10, 0, 0, 1]));
        let mut nic = Nic::new(ep, Silent::default());
        nic.step(Duration::from_millis(1)).unwrap();
        nic.step(Duration::from_micros(2_500)).unwrap();
        assert_eq!(
            *nic.port.0.lock().unwrap(),
            [Duration::from_millis(1), Duration::from_millis(2)]
        );
    }
}
