//! Endpoint throughput on one core: a requester and a responder endpoint in one thread, frames
//! handed straight from one to the other, RDMA WRITEs of 64 B to 4 KB on 8 QPs with 128
//! outstanding each. Time is simulated for the protocol (no pacing stalls: 400 Gb/s link) and
//! measured on the wall clock for the work, so the figures are what one core sustains for both
//! ends of the connection: the cost of building, checking (ICRC twice per packet) and placing.
//!
//! Rates are per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so a machine shared
//! with other jobs does not understate them; wall-clock seconds are reported beside.
//!
//! `cargo run --release -p roce-host --example roce-host-bench -- OUT.json`

use std::time::Instant;

use roce_host::{Endpoint, EndpointConfig, Peer, WcStatus, WorkRequest, WrOp};
use serde::Serialize;

const QPS: usize = 8;
const DEPTH: u64 = 128;

#[derive(Serialize)]
struct Row {
    msg_size: usize,
    messages: u64,
    packets: u64,
    /// CPU seconds of the benchmark thread.
    cpu_seconds: f64,
    wall_seconds: f64,
    messages_per_sec: f64,
    packets_per_sec: f64,
    /// Payload bits per second.
    gbps: f64,
}

fn run(size: usize, messages: u64) -> Row {
    let mk = |last: u8| {
        let mut c = EndpointConfig::new([2, 0, 0, 0, 0, last], [10, 0, 0, last]);
        c.rate_bps = 400_000_000_000;
        Endpoint::new(c)
    };
    let (mut a, mut b) = (mk(1), mk(2));
    let mut pairs = Vec::new();
    for i in 0..QPS {
        let qa = a.create_qp(size, i as u32 * 1000);
        let qb = b.create_qp(size, i as u32 * 7000);
        let (ia, ib) = (a.qp_info(qa).unwrap(), b.qp_info(qb).unwrap());
        a.connect(
            qa,
            Peer {
                ip: [10, 0, 0, 2],
                mac: [2, 0, 0, 0, 0, 2],
                qp: ib,
            },
        )
        .unwrap();
        b.connect(
            qb,
            Peer {
                ip: [10, 0, 0, 1],
                mac: [2, 0, 0, 0, 0, 1],
                qp: ia,
            },
        )
        .unwrap();
        pairs.push((qa, ib));
    }
    let per_qp = messages / QPS as u64;
    let mut posted = [0u64; QPS];
    let mut done = 0u64;
    let total = per_qp * QPS as u64;
    let mut now = 0u64;
    let mut out = Vec::with_capacity(9000);
    let t0 = Instant::now();
    let c0 = thread_cpu_seconds();
    while done < total {
        for (i, &(qa, remote)) in pairs.iter().enumerate() {
            while posted[i] < per_qp && posted[i] < (done / QPS as u64) + DEPTH {
                let wr = WorkRequest {
                    wr_id: posted[i],
                    op: WrOp::Write {
                        remote_va: remote.va,
                        rkey: remote.rkey,
                    },
                    local_offset: 0,
                    len: size,
                };
                if a.post(now, qa, wr).is_err() {
                    break;
                }
                posted[i] += 1;
            }
        }
        let mut moved = false;
        while a.poll_tx(now, &mut out) {
            b.handle_frame(now, &out);
            moved = true;
        }
        while b.poll_tx(now, &mut out) {
            a.handle_frame(now, &out);
            moved = true;
        }
        for c in a.take_completions() {
            assert_eq!(c.status, WcStatus::Success);
            done += 1;
        }
        b.take_incoming();
        if !moved {
            match [a.next_wakeup(), b.next_wakeup()]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) => now = t.max(now + 1),
                None => now += 1,
            }
        }
    }
    let seconds = thread_cpu_seconds() - c0;
    let wall_seconds = t0.elapsed().as_secs_f64();
    let packets = a.counters().tx_data_pkts;
    assert_eq!(a.counters().tx_retransmitted_pkts, 0);
    Row {
        msg_size: size,
        messages: total,
        packets,
        cpu_seconds: seconds,
        wall_seconds,
        messages_per_sec: total as f64 / seconds,
        packets_per_sec: packets as f64 / seconds,
        gbps: (total * size as u64) as f64 * 8.0 / seconds / 1e9,
    }
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bench OUT.json");
        std::process::exit(2);
    };
    let mut rows = Vec::new();
    println!(
        " size   messages    msgs/s      pkts/s      Gb/s   (per CPU-second, both ends)  wall s"
    );
    for size in [64usize, 128, 256, 512, 1024, 2048, 4096] {
        let messages = (40_000_000 / size as u64).clamp(40_000, 200_000);
        let r = run(size, messages);
        println!(
            " {:<6} {:<10} {:<11.0} {:<11.0} {:<6.2} {:>36.2}",
            r.msg_size, r.messages, r.messages_per_sec, r.packets_per_sec, r.gbps, r.wall_seconds
        );
        rows.push(r);
    }
    #[derive(Serialize)]
    struct Out {
        bench: &'static str,
        qps: usize,
        tx_depth: u64,
        mtu: usize,
        results: Vec<Row>,
    }
    let out = Out {
        bench: "roce-host endpoint, requester and responder on one core",
        qps: QPS,
        tx_depth: DEPTH,
        mtu: 1024,
        results: rows,
    };
    let text = serde_json::to_string_pretty(&out).expect("serialize");
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("bench: {path}: {e}");
        std::process::exit(1);
    }
}
