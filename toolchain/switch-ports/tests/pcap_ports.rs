//! pcap-file ports as bmv2 uses them: `--pcap DIR` captures and `--use-files` ports, through
//! real files and a FIFO, and several `--use-files` inputs merged in bmv2's order.

use std::ffi::CString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use switch_ports::pcap::{self, Merged, PcapMerge, PcapWriter};
use switch_ports::{Captured, ChannelPort, PcapFilePort, Port, PortError, Recv};

const WAIT: Duration = Duration::from_secs(5);

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("switch-ports-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn captured_port_writes_in_and_out_files_with_timestamps() {
    let dir = TempDir::new("capture");
    let (sw, host) = ChannelPort::pair("s1-eth1", "h1");
    let sw = Captured::new(sw, &dir.0).unwrap();
    host.send(&[1; 60]).unwrap();
    host.send(&[2; 64]).unwrap();
    let mut buf = [0u8; 2048];
    assert_eq!(sw.recv(&mut buf, WAIT).unwrap(), Recv::Frame(60));
    assert_eq!(sw.recv(&mut buf, WAIT).unwrap(), Recv::Frame(64));
    sw.send(&[3; 70]).unwrap();
    assert_eq!(host.recv(&mut buf, WAIT).unwrap(), Recv::Frame(70));

    let rx = pcap::read_file(&dir.0.join("s1-eth1_in.pcap")).unwrap();
    let tx = pcap::read_file(&dir.0.join("s1-eth1_out.pcap")).unwrap();
    assert_eq!(
        rx.iter().map(|r| r.data.clone()).collect::<Vec<_>>(),
        vec![vec![1; 60], vec![2; 64]]
    );
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].data, vec![3; 70]);
    // Wall-clock stamps: after 2020, and in capture order.
    assert!(rx[0].timestamp > Duration::from_secs(1_577_836_800));
    assert!(rx[0].timestamp <= rx[1].timestamp);
}

#[test]
fn use_files_port_reads_name_in_and_writes_name_out() {
    let dir = TempDir::new("usefiles");
    let prefix = dir.0.join("pcap0");
    let mut w = pcap::create_file(&dir.0.join("pcap0_in.pcap")).unwrap();
    w.write(Duration::new(1, 0), &[0xab; 20]).unwrap();
    w.write(Duration::new(2, 0), &[0xcd; 30]).unwrap();
    drop(w);

    let port = PcapFilePort::open(&prefix).unwrap();
    let mut buf = [0u8; 256];
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Frame(20));
    assert_eq!(&buf[..20], &[0xab; 20]);
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Frame(30));
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Closed);
    port.send(&[7; 42]).unwrap();
    let out = pcap::read_file(port.out_path()).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].data, vec![7; 42]);
}

type FifoWriter = PcapWriter<std::fs::File>;

/// A FIFO `NAME_in.pcap` in `dir`, and a thread that opens it for writing (so the port's open
/// returns), writes with `before`, waits for the test's go and writes with `after`.
fn fifo_writer(
    dir: &TempDir,
    name: &str,
    before: fn(&mut FifoWriter),
    after: fn(&mut FifoWriter),
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let fifo = dir.0.join(format!("{name}_in.pcap"));
    let c = CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid C path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let file = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let mut w = PcapWriter::new(file).unwrap();
        before(&mut w);
        go_rx.recv().unwrap();
        after(&mut w);
    });
    (go_tx, writer)
}

#[test]
fn use_files_port_reads_a_fifo_as_the_writer_produces() {
    let dir = TempDir::new("fifo");
    // The second frame is written only after the first was received: a FIFO, not a file.
    let (go_tx, writer) = fifo_writer(
        &dir,
        "p1",
        |w| w.write_now(&[1; 14]).unwrap(),
        |w| w.write_now(&[2; 14]).unwrap(),
    );
    let port = PcapFilePort::open(&dir.0.join("p1")).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Frame(14));
    assert_eq!(buf[0], 1);
    go_tx.send(()).unwrap();
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Frame(14));
    assert_eq!(buf[0], 2);
    writer.join().unwrap();
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Closed);
}

#[test]
fn malformed_use_files_input_is_reported_with_its_location() {
    let dir = TempDir::new("bad");
    let mut w = pcap::create_file(&dir.0.join("p2_in.pcap")).unwrap();
    w.write(Duration::ZERO, &[1; 10]).unwrap();
    let mut file = w.into_inner();
    file.write_all(&[0; 5]).unwrap();
    drop(file);
    let port = PcapFilePort::open(&dir.0.join("p2")).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Frame(10));
    let err = port.recv(&mut buf, WAIT).unwrap_err();
    let want = format!(
        "{}: record 2 at byte 50: truncated record header (5 of 16 bytes)",
        dir.0.join("p2_in.pcap").display()
    );
    assert!(matches!(&err, PortError::Pcap(_)));
    assert_eq!(err.to_string(), want);
    assert_eq!(port.recv(&mut buf, WAIT).unwrap(), Recv::Closed);

    let missing = PcapFilePort::open(&dir.0.join("absent"))
        .err()
        .expect("missing input");
    assert!(
        missing
            .to_string()
            .contains("absent_in.pcap: byte 0: cannot open:"),
        "{missing}"
    );
}

fn input(dir: &TempDir, name: &str, frames: &[(u64, u8)]) -> std::sync::Arc<PcapFilePort> {
    let mut w = pcap::create_file(&dir.0.join(format!("{name}_in.pcap"))).unwrap();
    for (micros, byte) in frames {
        w.write(Duration::from_micros(*micros), &[*byte; 14])
            .unwrap();
    }
    drop(w);
    std::sync::Arc::new(PcapFilePort::open(&dir.0.join(name)).unwrap())
}

/// Every frame of `merge` as (port, first byte), until all inputs end.
fn drain(merge: &mut PcapMerge) -> Vec<(u32, u8)> {
    let mut out = Vec::new();
    loop {
        match merge.next(WAIT).unwrap() {
            Merged::Frame(port, data) => out.push((port, data[0])),
            Merged::Waiting => panic!("files never make the merge wait {WAIT:?}"),
            Merged::Ended => return out,
        }
    }
}

#[test]
fn merged_inputs_go_by_timestamp_then_port_as_bmv2_reads_them() {
    let dir = TempDir::new("merge");
    // Port 3 is opened first and its frames are read first by its thread; the timestamps
    // decide, and equal ones go to the lower port.
    let p3 = input(&dir, "p3", &[(30, 0x31), (50, 0x32)]);
    let p0 = input(&dir, "p0", &[(10, 0x01), (50, 0x02), (70, 0x03)]);
    let p1 = input(&dir, "p1", &[(20, 0x11)]);
    let empty = input(&dir, "p5", &[]);
    let mut merge = PcapMerge::new(vec![(3, p3), (0, p0), (1, p1), (5, empty)]);
    assert_eq!(
        drain(&mut merge),
        vec![
            (0, 0x01),
            (1, 0x11),
            (3, 0x31),
            (0, 0x02),
            (3, 0x32),
            (0, 0x03)
        ]
    );
}

#[test]
fn merged_inputs_wait_for_every_fifo_before_choosing() {
    let dir = TempDir::new("merge-fifo");
    let (go_tx, writer) = fifo_writer(
        &dir,
        "p1",
        |_| {},
        |w| w.write(Duration::from_micros(5), &[0x11; 14]).unwrap(),
    );
    let p0 = input(&dir, "p0", &[(10, 0x01)]);
    let p1 = std::sync::Arc::new(PcapFilePort::open(&dir.0.join("p1")).unwrap());
    let mut merge = PcapMerge::new(vec![(0, p0), (1, p1)]);
    // Port 0's frame is ready, but port 1 may still write an earlier one.
    assert_eq!(
        merge.next(Duration::from_millis(50)).unwrap(),
        Merged::Waiting
    );
    go_tx.send(()).unwrap();
    writer.join().unwrap();
    assert_eq!(drain(&mut merge), vec![(1, 0x11), (0, 0x01)]);
}
