//! Threads: one receive thread per port, one dataplane thread owning the [`Core`] (engine and
//! traffic manager). Control-plane work reaches the engine as closures run by the dataplane
//! thread between two packets ([`Handle::exec_core`]), so the engine needs no lock.
//!
//! A receive thread hands over every frame its port has ready as one [`Batch`]: under load the
//! cost of waking the dataplane thread and of the queue is paid per burst, not per frame, and
//! batches come back through a pool, so the hot path allocates nothing.

use crate::core::{Core, CpuSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use switch_engine::{Switch, SwitchConfig};
use switch_ports::{Port, Recv, MAX_FRAME};

/// Frames and closures waiting for the dataplane thread. Bounded: a full queue makes receive
/// threads wait, and the kernel's socket buffers then drop, as a real port's would.
const QUEUE: usize = 1024;
/// Longest the dataplane thread sleeps without a packet, a closure or a TM event.
const IDLE: Duration = Duration::from_millis(50);
/// Receive timeout, so receive threads notice shutdown.
const RX_POLL: Duration = Duration::from_millis(100);
/// Batches kept for reuse.
const POOL: usize = 2048;
/// Most frames a receive thread puts in one batch: enough to amortise the hand-over, few enough
/// that one port's burst does not keep the others waiting long.
const RX_BATCH: usize = 64;

/// The time base of the dataplane (`--clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockKind {
    /// Monotonic, from switch start (bmv2: timestamps are microseconds since start).
    Real,
    /// Wall clock (Unix epoch), to line timestamps up with pcap captures.
    Wall,
}

#[derive(Clone, Copy)]
pub struct Clock {
    start: Instant,
    offset_ns: u64,
}

impl Clock {
    pub fn new(kind: ClockKind) -> Clock {
        let offset_ns = match kind {
            ClockKind::Real => 0,
            ClockKind::Wall => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        };
        Clock {
            start: Instant::now(),
            offset_ns,
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.offset_ns + self.start.elapsed().as_nanos() as u64
    }
}

type CoreFn = Box<dyn FnOnce(&mut Core, u64) + Send>;
/// A control-plane job on the engine (`p4runtime_server::Dataplane::exec`).
pub type EngineJob = Box<dyn FnOnce(&mut Option<Switch>) + Send>;

/// Frames received on one port, back to back in one buffer.
#[derive(Default)]
struct Batch {
    port: u32,
    bytes: Vec<u8>,
    /// Where each frame ends in `bytes`.
    ends: Vec<usize>,
}

impl Batch {
    fn push(&mut self, frame: &[u8]) {
        self.bytes.extend_from_slice(frame);
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn frames(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(a, &b)| &self.bytes[a..b])
    }
}

enum Msg {
    Frames(Batch),
    Exec(CoreFn),
}

struct Shared {
    tx: SyncSender<Msg>,
    pool: Mutex<Vec<Batch>>,
    stop: AtomicBool,
    engine: SwitchConfig,
    device_id: u64,
    clock: Clock,
}

impl Shared {
    fn batch(&self, port: u32) -> Batch {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let mut batch = pool.pop().unwrap_or_default();
        batch.port = port;
        batch
    }

    fn give_back(&self, mut batch: Batch) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < POOL {
            batch.bytes.clear();
            batch.ends.clear();
            pool.push(batch);
        }
    }
}

/// A cloneable handle on the running dataplane, for the control-plane servers.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// Runs `f` on the core between two packets (with the dataplane's current time) and returns
    /// its result; `None` when the dataplane has stopped.
    pub fn exec_core<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Core, u64) -> R + Send + 'static,
    ) -> Option<R> {
        let (done_tx, done_rx) = sync_channel(1);
        let msg = Msg::Exec(Box::new(move |core, now| {
            let _ = done_tx.send(f(core, now));
        }));
        self.shared.tx.send(msg).ok()?;
        done_rx.recv().ok()
    }

    pub fn now_ns(&self) -> u64 {
        self.shared.clock.now_ns()
    }

    /// Receives a frame as if it arrived on `port` (CPU PacketOut, tests).
    pub fn inject(&self, port: u32, frame: &[u8]) {
        let mut batch = self.shared.batch(port);
        batch.push(frame);
        let _ = self.shared.tx.send(Msg::Frames(batch));
    }

    /// The P4Runtime-facing operations (what `p4runtime_server::Dataplane` asks for).
    pub fn exec(&self, f: EngineJob) {
        self.exec_core(move |core, _| f(&mut core.switch));
    }

    pub fn set_cpu_sink(&self, sink: CpuSink) {
        self.exec_core(move |core, _| core.set_cpu_sink(sink));
    }

    pub fn inject_cpu(&self, frame: Vec<u8>) {
        if let Some(p) = self.shared.engine.cpu_port {
            self.inject(p, &frame);
        }
    }

    pub fn engine_config(&self) -> SwitchConfig {
        self.shared.engine.clone()
    }

    pub fn device_id(&self) -> u64 {
        self.shared.device_id
    }

    pub fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }
}

/// The running dataplane: stop it with [`Runtime::shutdown`].
pub struct Runtime {
    handle: Handle,
    threads: Vec<JoinHandle<()>>,
}

impl Runtime {
    /// Starts the dataplane thread on `core` and a receive thread per port. Receiving starts
    /// after `start_delay` (bmv2 `--use-files N`).
    pub fn start(
        core: Core,
        ports: Vec<(u32, Arc<dyn Port>)>,
        start_delay: Duration,
        clock: Clock,
        device_id: u64,
    ) -> std::io::Result<Runtime> {
        let (tx, rx) = sync_channel(QUEUE);
        let shared = Arc::new(Shared {
            tx,
            pool: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            engine: core.engine_config().clone(),
            device_id,
            clock,
        });
        let mut threads = Vec::new();
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("dataplane".into())
                .spawn(move || dataplane(core, rx, &s))?,
        );
        for (num, port) in ports {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("rx {num}"))
                    .spawn(move || receive(num, port, start_delay, &s))?,
            );
        }
        Ok(Runtime {
            handle: Handle { shared },
            threads,
        })
    }

    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Stops every thread and waits for them.
    pub fn shutdown(self) {
        self.handle.shared.stop.store(true, Ordering::Relaxed);
        // Wakes the dataplane thread if it sleeps; a full queue means it is awake anyway.
        match self
            .handle
            .shared
            .tx
            .try_send(Msg::Exec(Box::new(|_, _| {})))
        {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn dataplane(mut core: Core, rx: Receiver<Msg>, s: &Shared) {
    let mut next: Option<u64> = None;
    while !s.stop.load(Ordering::Relaxed) {
        let now = s.clock.now_ns();
        let wait = next.map_or(IDLE, |t| {
            Duration::from_nanos(t.saturating_sub(now)).min(IDLE)
        });
        let msg = if wait.is_zero() {
            rx.try_recv().ok()
        } else {
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        match msg {
            Some(Msg::Frames(batch)) => {
                for frame in batch.frames() {
                    core.receive(s.clock.now_ns(), batch.port, frame);
                }
                s.give_back(batch);
            }
            Some(Msg::Exec(f)) => f(&mut core, s.clock.now_ns()),
            None => {}
        }
        next = core.run_due(s.clock.now_ns());
    }
}

fn receive(num: u32, port: Arc<dyn Port>, start_delay: Duration, s: &Shared) {
    let begin = Instant::now();
    while begin.elapsed() < start_delay {
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(RX_POLL.min(start_delay.saturating_sub(begin.elapsed())));
    }
    let mut frame = vec![0u8; MAX_FRAME];
    let mut batch = s.batch(num);
    let mut closed = false;
    while !closed && !s.stop.load(Ordering::Relaxed) {
        // Wait for the first frame, then take what else is ready without waiting.
        let mut wait = RX_POLL;
        while batch.len() < RX_BATCH {
            match port.recv(&mut frame, wait) {
                Ok(Recv::Frame(n)) => batch.push(&frame[..n]),
                Ok(Recv::Timeout) => break,
                Ok(Recv::Closed) => {
                    closed = true;
                    break;
                }
                Err(e) => {
                    eprintln!("{e}");
                    closed = matches!(e, switch_ports::PortError::Pcap(_));
                    break;
                }
            }
            wait = Duration::ZERO;
        }
        if !batch.ends.is_empty() {
            if s.tx.send(Msg::Frames(batch)).is_err() {
                return;
            }
            batch = s.batch(num);
        }
    }
}
