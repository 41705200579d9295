//! Threads: one dataplane thread owning the [`Core`] (engine and traffic manager), one transmit
//! thread, and a receive thread for each port that cannot be polled (one for all of bmv2's
//! `--use-files` inputs, which it merges by timestamp as bmv2 does). Control-plane work reaches
//! the engine as closures run by the dataplane thread between two packets
//! ([`Handle::exec_core`]), so the engine needs no lock.
//!
//! Ports with a descriptor (`AF_PACKET`) are read by the dataplane thread itself, from one
//! `ppoll` over all of them, as bmv2 reads every interface from one `select` loop: a frame goes
//! from the socket into the pipeline without a hand-over between threads, which on a machine
//! with few cores costs more than the forwarding. The other ports
//! (pcap files, in-process channels) have receive threads that hand over every frame ready as
//! one [`Batch`], so waking the dataplane thread is paid per burst, not per frame; batches come
//! back through a pool, so the hot path allocates nothing.
//!
//! The transmit thread sends what the pipeline produced, one [`TxBatch`] per round of the
//! dataplane loop, as bmv2's transmit thread does: through veths the kernel's send path costs
//! more than the pipeline, and on its own thread it runs beside it. Sent batches come back with
//! their buffers, which return to the engine.

use crate::clock::Clock;
use crate::core::{Core, CpuSink, TxBatch};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use switch_ports::pcap::{Merged, PcapMerge};
use switch_ports::{Port, Recv, MAX_FRAME};
use switch_v1model::{Switch, SwitchConfig};

/// Frames and closures waiting for the dataplane thread. Bounded: a full queue makes receive
/// threads wait, as a polled port's socket buffer fills while the dataplane thread is busy.
const QUEUE: usize = 1024;
/// Longest the dataplane thread sleeps without a packet, a closure or a TM event.
const IDLE: Duration = Duration::from_millis(50);
/// Receive timeout, so receive threads notice shutdown.
const RX_POLL: Duration = Duration::from_millis(100);
/// Batches kept for reuse.
const POOL: usize = 2048;
/// Batches waiting for the transmit thread; when full, the dataplane thread waits for it.
const TX_QUEUE: usize = 64;
/// Most frames read from one port in a row (by a receive thread into one batch, or by the
/// dataplane thread from a polled port): enough to amortise the wake-up, few enough that one
/// port's burst does not keep the others waiting long.
const RX_BATCH: usize = 64;

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

/// An eventfd that wakes the dataplane thread from its `ppoll` when a message is queued.
struct Wake(OwnedFd);

impl Wake {
    fn new() -> io::Result<Wake> {
        // SAFETY: plain FFI call; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Wake(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes the 8 bytes of `one`. It cannot block (EFD_NONBLOCK) and fails only
        // when the counter is near overflow, when the thread is already woken.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn clear(&self) {
        let mut n: u64 = 0;
        // SAFETY: reads 8 bytes into `n`; EAGAIN (nothing signalled) leaves it as it is.
        unsafe { libc::read(self.0.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }
}

struct Shared {
    tx: SyncSender<Msg>,
    wake: Wake,
    pool: Mutex<Vec<Batch>>,
    stop: AtomicBool,
    engine: SwitchConfig,
    device_id: u64,
    clock: Box<dyn Clock>,
}

impl Shared {
    /// Queues `msg` for the dataplane thread (waiting while the queue is full) and wakes it;
    /// false once the dataplane has stopped.
    fn send(&self, msg: Msg) -> bool {
        let sent = self.tx.send(msg).is_ok();
        self.wake.signal();
        sent
    }

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
        if !self.shared.send(msg) {
            return None;
        }
        done_rx.recv().ok()
    }

    pub fn now_ns(&self) -> u64 {
        self.shared.clock.now_ns()
    }

    /// Receives a frame as if it arrived on `port` (CPU PacketOut, tests).
    pub fn inject(&self, port: u32, frame: &[u8]) {
        let mut batch = self.shared.batch(port);
        batch.push(frame);
        self.shared.send(Msg::Frames(batch));
    }

    /// The P4Runtime-facing operations (what `p4runtime_server::Dataplane` asks for). `exec`
    /// queues `f` and returns: the server's writes queue the next batch while the dataplane
    /// thread applies this one, so it goes from one to the next without a wake-up between.
    /// Once the dataplane has stopped, `f` is dropped unrun.
    pub fn exec(&self, f: EngineJob) {
        self.shared
            .send(Msg::Exec(Box::new(move |core, _| f(&mut core.switch))));
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
    /// Starts the dataplane thread on `core`, which also reads the ports that can be polled, and
    /// a receive thread for each other port. Receiving starts after `start_delay` (bmv2
    /// `--use-files N`).
    pub fn start(
        core: Core,
        ports: Vec<(u32, Arc<dyn Port>)>,
        start_delay: Duration,
        clock: impl Clock + 'static,
        device_id: u64,
    ) -> std::io::Result<Runtime> {
        Runtime::launch(core, ports, None, start_delay, clock, device_id)
    }

    /// The same for bmv2's `--use-files` ports: one receive thread reads them all in `inputs`'
    /// order (earliest timestamp first), so that frames written to several ports reach the
    /// pipeline in the order they were written.
    pub fn start_pcap_files(
        core: Core,
        inputs: PcapMerge,
        start_delay: Duration,
        clock: impl Clock + 'static,
        device_id: u64,
    ) -> std::io::Result<Runtime> {
        Runtime::launch(
            core,
            Vec::new(),
            Some(inputs),
            start_delay,
            clock,
            device_id,
        )
    }

    fn launch(
        core: Core,
        ports: Vec<(u32, Arc<dyn Port>)>,
        merged: Option<PcapMerge>,
        start_delay: Duration,
        clock: impl Clock + 'static,
        device_id: u64,
    ) -> std::io::Result<Runtime> {
        let (tx, rx) = sync_channel(QUEUE);
        let shared = Arc::new(Shared {
            tx,
            wake: Wake::new()?,
            pool: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            engine: core.engine_config().clone(),
            device_id,
            clock: Box::new(clock),
        });
        let (polled, threaded): (Vec<_>, Vec<_>) = ports
            .into_iter()
            .partition(|(_, port)| port.readable_fd().is_some());
        let mut threads = Vec::new();
        let (to_tx, batches) = sync_channel(TX_QUEUE);
        let (sent, done) = channel();
        threads.push(
            std::thread::Builder::new()
                .name("tx".into())
                .spawn(move || transmit(batches, sent))?,
        );
        let mut core = core;
        core.defer_transmit();
        let s = shared.clone();
        let start_at = Instant::now() + start_delay;
        let tx = Tx { to_tx, done };
        threads.push(
            std::thread::Builder::new()
                .name("dataplane".into())
                .spawn(move || dataplane(core, rx, polled, start_at, tx, &s))?,
        );
        for (num, port) in threaded {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("rx {num}"))
                    .spawn(move || receive(num, port, start_delay, &s))?,
            );
        }
        if let Some(inputs) = merged {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("rx pcap".into())
                    .spawn(move || receive_merged(inputs, start_delay, &s))?,
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
        self.handle.shared.wake.signal();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Waits until a descriptor of `fds` is readable or `timeout` passes (nanosecond precision,
/// which the traffic manager's next event needs; `poll` would round to milliseconds).
fn wait_readable(fds: &mut [libc::pollfd], timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a live slice of pollfd of the length passed; `ts` outlives the call.
    // EINTR and the like leave every revents 0: the loop simply goes round again.
    let rc = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        fds.iter_mut().for_each(|f| f.revents = 0);
    }
}

fn handle(core: &mut Core, msg: Msg, s: &Shared) {
    match msg {
        Msg::Frames(batch) => {
            for frame in batch.frames() {
                core.receive(s.clock.now_ns(), batch.port, frame);
            }
            s.give_back(batch);
        }
        Msg::Exec(f) => f(core, s.clock.now_ns()),
    }
}

/// The dataplane thread's ends of the transmit thread's queues.
struct Tx {
    to_tx: SyncSender<TxBatch>,
    done: Receiver<(TxBatch, u64)>,
}

/// The transmit thread: sends each batch in order and gives it back with its failures, until
/// the dataplane thread drops its end (every round of its loop queues what the round produced,
/// so nothing is left behind when it stops).
fn transmit(batches: Receiver<TxBatch>, sent: Sender<(TxBatch, u64)>) {
    for batch in batches {
        let errors = batch
            .iter()
            .filter(|(port, data)| port.send(data).is_err())
            .count() as u64;
        // The dataplane thread may be gone at shutdown; the rest is still sent.
        let _ = sent.send((batch, errors));
    }
}

fn dataplane(
    mut core: Core,
    rx: Receiver<Msg>,
    polled: Vec<(u32, Arc<dyn Port>)>,
    start_at: Instant,
    tx: Tx,
    s: &Shared,
) {
    let mut spare: Vec<TxBatch> = Vec::new();
    let mut frame = vec![0u8; MAX_FRAME];
    let pollfd = |fd: libc::c_int| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // The wake-up eventfd first, then one entry per polled port, in `polled`'s order. A port
    // that reports it is closed gets fd -1, which ppoll skips.
    let mut fds: Vec<libc::pollfd> = std::iter::once(s.wake.0.as_raw_fd())
        .chain(
            polled
                .iter()
                .map(|(_, p)| p.readable_fd().map_or(-1, |fd| fd.as_raw_fd())),
        )
        .map(pollfd)
        .collect();
    let mut next: Option<u64> = None;
    let mut busy = false;
    while !s.stop.load(Ordering::Relaxed) {
        let now = s.clock.now_ns();
        let until_start = start_at.saturating_duration_since(Instant::now());
        let started = until_start.is_zero();
        let wait = if busy {
            Duration::ZERO
        } else {
            let tm = next.map_or(IDLE, |t| Duration::from_nanos(t.saturating_sub(now)));
            let wait = tm.min(IDLE);
            // Before the start, also wake up when the ports are to be read.
            if started {
                wait
            } else {
                wait.min(until_start)
            }
        };
        let live = if started { fds.len() } else { 1 };
        wait_readable(&mut fds[..live], wait);
        // Clear the wake-up before taking the queue: a message queued after the take signals
        // again, so the next ppoll returns at once instead of leaving it behind.
        if fds[0].revents != 0 {
            s.wake.clear();
        }
        // At most a queue's worth, so that receive threads cannot starve the polled ports; what
        // is left keeps the loop from sleeping.
        let mut taken = 0;
        for msg in rx.try_iter().take(QUEUE) {
            handle(&mut core, msg, s);
            taken += 1;
        }
        busy = taken == QUEUE;
        for (i, (num, port)) in polled.iter().enumerate() {
            let pfd = &mut fds[i + 1];
            if pfd.revents == 0 {
                continue;
            }
            for _ in 0..RX_BATCH {
                match port.recv(&mut frame, Duration::ZERO) {
                    Ok(Recv::Frame(n)) => {
                        core.receive(s.clock.now_ns(), *num, &frame[..n]);
                        busy = true;
                    }
                    Ok(Recv::Timeout) => break,
                    Ok(Recv::Closed) => {
                        pfd.fd = -1;
                        break;
                    }
                    Err(e) => {
                        eprintln!("{e}");
                        break;
                    }
                }
            }
        }
        next = core.run_due(s.clock.now_ns());
        for (batch, errors) in tx.done.try_iter() {
            spare.push(core.tx_done(batch, errors));
        }
        if let Some(batch) = core.take_tx(&mut spare) {
            if tx.to_tx.send(batch).is_err() {
                return;
            }
        }
    }
}

/// Sleeps until `start_delay` has passed; false when the runtime stopped first.
fn wait_start(start_delay: Duration, s: &Shared) -> bool {
    let begin = Instant::now();
    while begin.elapsed() < start_delay {
        if s.stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(RX_POLL.min(start_delay.saturating_sub(begin.elapsed())));
    }
    true
}

/// The receive thread of merged pcap inputs: one frame per batch, in the merge's order.
fn receive_merged(mut inputs: PcapMerge, start_delay: Duration, s: &Shared) {
    if !wait_start(start_delay, s) {
        return;
    }
    while !s.stop.load(Ordering::Relaxed) {
        match inputs.next(RX_POLL) {
            Ok(Merged::Frame(port, data)) => {
                let mut batch = s.batch(port);
                batch.push(&data);
                if !s.send(Msg::Frames(batch)) {
                    return;
                }
            }
            Ok(Merged::Waiting) => {}
            Ok(Merged::Ended) => return,
            Err(e) => eprintln!("{e}"),
        }
    }
}

fn receive(num: u32, port: Arc<dyn Port>, start_delay: Duration, s: &Shared) {
    if !wait_start(start_delay, s) {
        return;
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
            if !s.send(Msg::Frames(batch)) {
                return;
            }
            batch = s.batch(num);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ClockKind, SystemClock};
    use std::collections::BTreeMap;
    use std::sync::mpsc;

    /// `exec` queues: it returns while the dataplane thread is still busy with an earlier job
    /// (what lets the P4Runtime server queue its next batch), and jobs run in the order queued.
    #[test]
    fn exec_returns_before_its_job_runs_and_jobs_run_in_order() {
        let core = Core::new(None, None, BTreeMap::new(), SwitchConfig::default(), 0).unwrap();
        let rt = Runtime::start(
            core,
            Vec::new(),
            Duration::ZERO,
            SystemClock::new(ClockKind::Real),
            0,
        )
        .unwrap();
        let h = rt.handle();
        let (release, held) = mpsc::channel::<()>();
        let (ran, order) = mpsc::channel();
        let (queued_tx, queued) = mpsc::channel();
        let queuer = std::thread::spawn(move || {
            h.exec(Box::new(move |_| {
                let _ = held.recv();
            }));
            for i in 0..3 {
                let ran = ran.clone();
                h.exec(Box::new(move |_| ran.send(i).unwrap()));
            }
            queued_tx.send(()).unwrap();
        });
        // A generous bound: exec of a queued job returns at once; waiting for the held job
        // would never end.
        let returned = queued.recv_timeout(Duration::from_secs(10));
        let before_release = order.try_recv();
        release.send(()).unwrap();
        assert!(
            returned.is_ok(),
            "exec waited for the busy dataplane thread"
        );
        assert!(
            before_release.is_err(),
            "a job ran before the one ahead of it ended"
        );
        let got: Vec<i32> = (0..3)
            .map(|_| order.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2]);
        queuer.join().unwrap();
        rt.shutdown();
    }
}
