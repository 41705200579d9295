//! Two endpoints joined by an in-process cable, on a simulated clock:
//!
//! ```text
//!   [Endpoint A] --ChannelPort a== tap ==ChannelPort b-- [Endpoint B]
//! ```
//!
//! The tap sees every frame A sends to B (and B to A) and may deliver, drop, hold (deliver it
//! after the next one: reordering) or rewrite it. Time jumps to the next deadline whenever
//! nothing moves, so retry timers, pauses and DCQCN timers cost no wall-clock time.

#![allow(dead_code)]

use std::time::Duration;

use lossless_wire::rocev2::Packet;
use roce_host::dcqcn::DcqcnConfig;
use roce_host::{Endpoint, EndpointConfig, Peer};
use switch_ports::{ChannelPort, Port, Recv, MAX_FRAME};

pub const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
pub const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];
pub const IP_A: [u8; 4] = [10, 0, 0, 1];
pub const IP_B: [u8; 4] = [10, 0, 0, 2];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    AtoB,
    BtoA,
}

pub enum Verdict {
    Deliver,
    Drop,
    /// Deliver after the next frame in the same direction.
    Hold,
}

pub type Tap = Box<dyn FnMut(Dir, &mut Vec<u8>) -> Verdict>;

pub struct Sim {
    pub a: Endpoint,
    pub b: Endpoint,
    pub qa: Vec<u32>,
    pub qb: Vec<u32>,
    pub now: u64,
    port_a: ChannelPort,
    port_b: ChannelPort,
    pub tap: Tap,
    held: [Option<Vec<u8>>; 2],
    /// (time, direction, frame) of everything put on the cable.
    pub log: Vec<(u64, Dir, Vec<u8>)>,
    pub keep_log: bool,
}

pub fn config(mac: [u8; 6], ip: [u8; 4]) -> EndpointConfig {
    EndpointConfig {
        rate_bps: 10_000_000_000,
        ..EndpointConfig::new(mac, ip)
    }
}

pub fn with_dcqcn(mut c: EndpointConfig) -> EndpointConfig {
    c.dcqcn = Some(DcqcnConfig::paper(c.rate_bps as f64));
    c
}

impl Sim {
    /// `nqps` QP pairs with `mem` bytes each, connected A[i] <-> B[i].
    pub fn new(ca: EndpointConfig, cb: EndpointConfig, nqps: usize, mem: usize) -> Sim {
        let mut a = Endpoint::new(ca);
        let mut b = Endpoint::new(cb);
        let mut qa = Vec::new();
        let mut qb = Vec::new();
        for i in 0..nqps {
            // PSNs near the 24-bit wrap, so wrapping is exercised everywhere
            qa.push(a.create_qp(mem, 0xff_fff0 + i as u32));
            qb.push(b.create_qp(mem, 0x00_1000 * i as u32));
        }
        for i in 0..nqps {
            let ia = a.qp_info(qa[i]).unwrap();
            let ib = b.qp_info(qb[i]).unwrap();
            a.connect(
                qa[i],
                Peer {
                    ip: IP_B,
                    mac: MAC_B,
                    qp: ib,
                },
            )
            .unwrap();
            b.connect(
                qb[i],
                Peer {
                    ip: IP_A,
                    mac: MAC_A,
                    qp: ia,
                },
            )
            .unwrap();
        }
        let (port_a, port_b) = ChannelPort::pair("a", "b");
        Sim {
            a,
            b,
            qa,
            qb,
            now: 0,
            port_a,
            port_b,
            tap: Box::new(|_, _| Verdict::Deliver),
            held: [None, None],
            log: Vec::new(),
            keep_log: false,
        }
    }

    fn put(&mut self, dir: Dir, mut frame: Vec<u8>) {
        let slot = dir as usize;
        match (self.tap)(dir, &mut frame) {
            Verdict::Drop => return,
            Verdict::Hold => {
                self.held[slot] = Some(frame);
                return;
            }
            Verdict::Deliver => {}
        }
        let port = match dir {
            Dir::AtoB => &self.port_a,
            Dir::BtoA => &self.port_b,
        };
        port.send(&frame).unwrap();
        if self.keep_log {
            self.log.push((self.now, dir, frame));
        }
        if let Some(h) = self.held[slot].take() {
            port.send(&h).unwrap();
            if self.keep_log {
                self.log.push((self.now, dir, h));
            }
        }
    }

    /// One round: both endpoints transmit what is due, both receive what arrived. True if any
    /// frame moved.
    pub fn round(&mut self) -> bool {
        let mut moved = false;
        let mut out = Vec::new();
        while self.a.poll_tx(self.now, &mut out) {
            self.put(Dir::AtoB, out.clone());
            moved = true;
        }
        while self.b.poll_tx(self.now, &mut out) {
            self.put(Dir::BtoA, out.clone());
            moved = true;
        }
        let mut buf = vec![0u8; MAX_FRAME];
        // Payloads sent by reference (EndpointConfig::payload_by_reference) are read from the
        // sender's memory.
        let (a, b) = (&mut self.a, &mut self.b);
        while let Recv::Frame(n) = self.port_b.recv(&mut buf, Duration::ZERO).unwrap() {
            b.handle_frame_with(self.now, &buf[..n], |r| {
                (r.ip == IP_A).then(|| a.payload(r)).flatten()
            });
            moved = true;
        }
        while let Recv::Frame(n) = self.port_a.recv(&mut buf, Duration::ZERO).unwrap() {
            a.handle_frame_with(self.now, &buf[..n], |r| {
                (r.ip == IP_B).then(|| b.payload(r)).flatten()
            });
            moved = true;
        }
        moved
    }

    /// Runs until `done` holds (true) or nothing is left to do or `limit_ns` passes (false).
    pub fn run_until(&mut self, limit_ns: u64, mut done: impl FnMut(&mut Sim) -> bool) -> bool {
        loop {
            let moved = self.round();
            if done(self) {
                return true;
            }
            if moved {
                continue;
            }
            let next = [self.a.next_wakeup(), self.b.next_wakeup()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= limit_ns => self.now = self.now.max(t).max(self.now + 1),
                _ => return false,
            }
        }
    }
}

/// The PSN of a RoCEv2 data frame (None for ACKs, CNPs and anything else).
pub fn data_psn(frame: &[u8]) -> Option<u32> {
    let p = Packet::parse(frame).ok()??;
    (p.bth.opcode <= 0x0b).then_some(p.bth.psn)
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed ^ (i >> 8) as u8)
        })
        .collect()
}
