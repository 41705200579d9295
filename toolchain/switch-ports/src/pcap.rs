//! The classic libpcap file format (what tshark, tcpdump, scapy and bmv2 read and write), and the
//! bmv2 `--use-files` port built on it.
//!
//! Writing: microsecond timestamps, host byte order, link type Ethernet, as bmv2 writes.
//! Reading: both byte orders and both microsecond and nanosecond variants; pcapng is refused
//! with a hint, every malformed record is reported with its number and byte offset.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{deliver, Port, PortError, Recv};

const MAGIC_USEC: u32 = 0xa1b2_c3d4;
const MAGIC_NSEC: u32 = 0xa1b2_3c4d;
const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const LINKTYPE_ETHERNET: u32 = 1;
/// The snap length written in our headers: no frame is ever cut.
pub const SNAPLEN: u32 = 262_144;
const GLOBAL_HEADER_LEN: u64 = 24;
const RECORD_HEADER_LEN: u64 = 16;

/// A malformed or unreadable pcap input, located by file, record number and byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}{reason}", location(*.record, *.offset))]
pub struct PcapError {
    pub file: String,
    /// 1-based record number; `None` for the global header and for open failures.
    pub record: Option<u64>,
    /// Byte offset in the file where the faulty structure starts.
    pub offset: u64,
    pub reason: String,
}

fn location(record: Option<u64>, offset: u64) -> String {
    match record {
        Some(n) => format!("record {n} at byte {offset}: "),
        None => format!("byte {offset}: "),
    }
}

/// One packet read back from a pcap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    /// Capture time since the Unix epoch.
    pub timestamp: Duration,
    /// Length of the frame on the wire; larger than `data.len()` if the capture cut it.
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// Writes a pcap stream: the global header at creation, then one record per frame.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = [0u8; GLOBAL_HEADER_LEN as usize];
        header[0..4].copy_from_slice(&MAGIC_USEC.to_ne_bytes());
        header[4..6].copy_from_slice(&2u16.to_ne_bytes());
        header[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs stay zero, as every modern writer leaves them.
        header[16..20].copy_from_slice(&SNAPLEN.to_ne_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_ne_bytes());
        out.write_all(&header)?;
        out.flush()?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame stamped `timestamp` (since the Unix epoch) and flushes, so a reader
    /// following the file (tshark, a test) sees each frame as soon as it is written.
    pub fn write(&mut self, timestamp: Duration, frame: &[u8]) -> io::Result<()> {
        let caplen = frame.len().min(SNAPLEN as usize);
        let mut header = [0u8; RECORD_HEADER_LEN as usize];
        // pcap's 32-bit seconds wrap in 2106; truncation is the format's own limit.
        header[0..4].copy_from_slice(&(timestamp.as_secs() as u32).to_ne_bytes());
        header[4..8].copy_from_slice(&timestamp.subsec_micros().to_ne_bytes());
        header[8..12].copy_from_slice(&(caplen as u32).to_ne_bytes());
        header[12..16].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(&frame[..caplen])?;
        self.out.flush()
    }

    /// Writes with the current wall-clock time.
    pub fn write_now(&mut self, frame: &[u8]) -> io::Result<()> {
        self.write(now(), frame)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

pub(crate) fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Reads a pcap stream record by record.
pub struct PcapReader<R: Read> {
    input: R,
    file: String,
    big_endian: bool,
    nanos: bool,
    snaplen: u32,
    offset: u64,
    record: u64,
}

impl PcapReader<BufReader<File>> {
    /// Opens a pcap file (or FIFO: the open blocks until a writer appears, as in bmv2).
    pub fn open(path: &Path) -> Result<Self, PcapError> {
        let file = File::open(path).map_err(|e| PcapError {
            file: path.display().to_string(),
            record: None,
            offset: 0,
            reason: format!("cannot open: {e}"),
        })?;
        PcapReader::new(BufReader::new(file), &path.display().to_string())
    }
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the global header; `file` names the input in errors.
    pub fn new(mut input: R, file: &str) -> Result<Self, PcapError> {
        let mut header = [0u8; GLOBAL_HEADER_LEN as usize];
        let got = read_full(&mut input, &mut header).map_err(|e| PcapError {
            file: file.to_string(),
            record: None,
            offset: 0,
            reason: format!("read error: {e}"),
        })?;
        let fail = |offset: u64, reason: String| PcapError {
            file: file.to_string(),
            record: None,
            offset,
            reason,
        };
        if got < 4 {
            return Err(fail(
                0,
                format!("file too short for a pcap header ({got} bytes)"),
            ));
        }
        let raw = [header[0], header[1], header[2], header[3]];
        let (le, be) = (u32::from_le_bytes(raw), u32::from_be_bytes(raw));
        let (big_endian, nanos) = if le == MAGIC_USEC || be == MAGIC_USEC {
            (be == MAGIC_USEC, false)
        } else if le == MAGIC_NSEC || be == MAGIC_NSEC {
            (be == MAGIC_NSEC, true)
        } else if le == PCAPNG_MAGIC {
            return Err(fail(
                0,
                "this is a pcapng file; only classic pcap is read (convert: editcap -F pcap IN OUT)"
                    .to_string(),
            ));
        } else {
            return Err(fail(0, format!("not a pcap file (magic 0x{le:08x})")));
        };
        if got < header.len() {
            return Err(fail(
                got as u64,
                format!("truncated global header ({got} of 24 bytes)"),
            ));
        }
        let field = |at: usize| u32_at(&header, at, big_endian);
        let linktype = field(20) & 0x0fff_ffff;
        if linktype != LINKTYPE_ETHERNET {
            return Err(fail(
                20,
                format!("link type {linktype} is not Ethernet (1); a switch port carries Ethernet frames"),
            ));
        }
        Ok(PcapReader {
            input,
            file: file.to_string(),
            big_endian,
            nanos,
            snaplen: field(16),
            offset: GLOBAL_HEADER_LEN,
            record: 0,
        })
    }

    fn error(&self, offset: u64, reason: String) -> PcapError {
        PcapError {
            file: self.file.clone(),
            record: Some(self.record),
            offset,
            reason,
        }
    }

    /// The next record, `Ok(None)` at a clean end of file.
    pub fn next_record(&mut self) -> Result<Option<PcapRecord>, PcapError> {
        let start = self.offset;
        self.record += 1;
        let mut header = [0u8; RECORD_HEADER_LEN as usize];
        let got = read_full(&mut self.input, &mut header)
            .map_err(|e| self.error(start, format!("read error: {e}")))?;
        if got == 0 {
            self.record -= 1;
            return Ok(None);
        }
        if got < header.len() {
            return Err(self.error(
                start,
                format!("truncated record header ({got} of 16 bytes)"),
            ));
        }
        let secs = u32_at(&header, 0, self.big_endian);
        let frac = u32_at(&header, 4, self.big_endian);
        let caplen = u32_at(&header, 8, self.big_endian);
        let orig_len = u32_at(&header, 12, self.big_endian);
        // Writers put 0 or 65535 in snaplen while writing longer records, so the real bound is
        // the largest capture any libpcap accepts.
        let limit = self.snaplen.max(SNAPLEN);
        if caplen > limit {
            return Err(self.error(
                start,
                format!("captured length {caplen} exceeds the limit of {limit} bytes"),
            ));
        }
        let frac_limit = if self.nanos { 1_000_000_000 } else { 1_000_000 };
        if frac >= frac_limit {
            return Err(self.error(
                start,
                format!("fraction-of-second field {frac} is not below {frac_limit}"),
            ));
        }
        let mut data = vec![0u8; caplen as usize];
        let got = read_full(&mut self.input, &mut data)
            .map_err(|e| self.error(start, format!("read error: {e}")))?;
        if got < data.len() {
            return Err(self.error(
                start,
                format!("truncated packet data ({got} of {caplen} bytes)"),
            ));
        }
        self.offset = start + RECORD_HEADER_LEN + u64::from(caplen);
        let nanos = if self.nanos { frac } else { frac * 1000 };
        Ok(Some(PcapRecord {
            timestamp: Duration::new(u64::from(secs), nanos),
            orig_len: orig_len.max(caplen),
            data,
        }))
    }
}

fn u32_at(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let raw = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    }
}

/// Reads until `buf` is full or the input ends; returns how much was read.
fn read_full<R: Read>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads every record of a pcap file.
pub fn read_file(path: &Path) -> Result<Vec<PcapRecord>, PcapError> {
    let mut reader = PcapReader::open(path)?;
    let mut records = Vec::new();
    while let Some(record) = reader.next_record()? {
        records.push(record);
    }
    Ok(records)
}

/// Creates (truncating) a pcap file with its global header written.
pub fn create_file(path: &Path) -> io::Result<PcapWriter<BufWriter<File>>> {
    PcapWriter::new(BufWriter::new(File::create(path)?))
}

/// bmv2's `--use-files` port: port `NAME` reads frames from `NAME_in.pcap` (a file or a FIFO)
/// and writes what the switch sends to `NAME_out.pcap`.
///
/// Frames are delivered in file order as fast as they are read; timestamps are not replayed.
/// Several ports' inputs are ordered among themselves by [`PcapMerge`].
pub struct PcapFilePort {
    name: String,
    frames: Mutex<Receiver<Result<PcapRecord, PcapError>>>,
    out: Mutex<PcapWriter<BufWriter<File>>>,
    out_path: PathBuf,
}

/// Input frames read ahead of the switch; bounds memory when the input is a large file.
const READ_AHEAD: usize = 1024;

impl PcapFilePort {
    /// Opens `NAME_in.pcap` then creates `NAME_out.pcap`, where `NAME` is `prefix` (a path
    /// without the suffix). Opening a FIFO blocks until its writer opens it, as in bmv2, which
    /// is why a switch opens its ports in ascending port order.
    pub fn open(prefix: &Path) -> Result<Self, PortError> {
        let name = prefix.display().to_string();
        let in_path = PathBuf::from(format!("{name}_in.pcap"));
        let out_path = PathBuf::from(format!("{name}_out.pcap"));
        let mut reader = PcapReader::open(&in_path)?;
        let out =
            create_file(&out_path).map_err(|e| PortError::io(&name, "create output pcap", e))?;
        let (tx, rx) = sync_channel(READ_AHEAD);
        // A reader thread turns blocking FIFO reads into a receive with a timeout. It ends at the
        // end of the input, at the first malformed record, or when the port is dropped.
        std::thread::Builder::new()
            .name(format!("pcap-in {name}"))
            .spawn(move || loop {
                match reader.next_record() {
                    Ok(Some(record)) => {
                        if tx.send(Ok(record)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            })
            .map_err(|e| PortError::io(&name, "start pcap reader thread", e))?;
        Ok(PcapFilePort {
            name,
            frames: Mutex::new(rx),
            out: Mutex::new(out),
            out_path,
        })
    }

    /// Where this port's transmitted frames go.
    pub fn out_path(&self) -> &Path {
        &self.out_path
    }

    /// Waits at most `timeout` for the next input record, timestamp included.
    pub fn recv_record(&self, timeout: Duration) -> Result<Option<NextRecord>, PortError> {
        let frames = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        match frames.recv_timeout(timeout) {
            Ok(Ok(record)) => Ok(Some(NextRecord::Record(record))),
            Ok(Err(e)) => Err(PortError::Pcap(e)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Ok(Some(NextRecord::End)),
        }
    }
}

/// What an input gave: its next record, or its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextRecord {
    Record(PcapRecord),
    End,
}

/// The inputs of several `--use-files` ports read in bmv2's order (its `PcapFilesReader`): the
/// next record of every input that has not ended is read first, waiting for FIFO writers if
/// need be, and the one with the earliest timestamp goes first (the lower port on a tie). So
/// frames written to different ports' FIFOs one after the other reach the switch in that
/// order, whichever reader thread runs first. Timestamps order the frames; they are not
/// replayed as delays.
pub struct PcapMerge {
    inputs: Vec<(u32, std::sync::Arc<PcapFilePort>)>,
    /// Each input's next record once read; `None` while wanted (or after the end).
    heads: Vec<Option<PcapRecord>>,
    ended: Vec<bool>,
}

/// What [`PcapMerge::next`] gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    /// The next frame, and the port it arrived on.
    Frame(u32, Vec<u8>),
    /// An input has no next record yet (within the timeout): ask again.
    Waiting,
    /// Every input has ended.
    Ended,
}

impl PcapMerge {
    /// `inputs`: (port number, port); ties go to the lower port number.
    pub fn new(mut inputs: Vec<(u32, std::sync::Arc<PcapFilePort>)>) -> Self {
        inputs.sort_by_key(|(num, _)| *num);
        PcapMerge {
            heads: vec![None; inputs.len()],
            ended: vec![false; inputs.len()],
            inputs,
        }
    }

    /// The next frame in bmv2's order, waiting at most `timeout` for each input's next record.
    /// A malformed input is reported once and then counts as ended.
    pub fn next(&mut self, timeout: Duration) -> Result<Merged, PortError> {
        let wanted = self.heads.iter_mut().zip(self.ended.iter_mut());
        for ((head, ended), (_, port)) in wanted.zip(&self.inputs) {
            if head.is_some() || *ended {
                continue;
            }
            match port.recv_record(timeout) {
                Ok(Some(NextRecord::Record(r))) => *head = Some(r),
                Ok(Some(NextRecord::End)) => *ended = true,
                Ok(None) => return Ok(Merged::Waiting),
                Err(e) => {
                    *ended = true;
                    return Err(e);
                }
            }
        }
        let earliest = self
            .heads
            .iter_mut()
            .zip(&self.inputs)
            .filter(|(head, _)| head.is_some())
            .min_by_key(|(head, (num, _))| (head.as_ref().map(|r| r.timestamp), *num));
        match earliest.and_then(|(head, (num, _))| Some((*num, head.take()?))) {
            Some((num, record)) => Ok(Merged::Frame(num, record.data)),
            None => Ok(Merged::Ended),
        }
    }
}

impl Port for PcapFilePort {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, frame: &[u8]) -> Result<(), PortError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.write_now(frame)
            .map_err(|e| PortError::io(&self.name, "write output pcap", e))
    }

    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError> {
        match self.recv_record(timeout)? {
            Some(NextRecord::Record(r)) => deliver(&self.name, &r.data, buf),
            Some(NextRecord::End) => Ok(Recv::Closed),
            None => Ok(Recv::Timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(frames: &[(Duration, &[u8])]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for (ts, f) in frames {
            w.write(*ts, f).unwrap();
        }
        w.into_inner()
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<PcapRecord>, PcapError> {
        let mut r = PcapReader::new(bytes, "t.pcap")?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    #[test]
    fn round_trip_keeps_bytes_and_microsecond_timestamps() {
        let ts1 = Duration::new(1_700_000_000, 123_456_000);
        let ts2 = Duration::new(1_700_000_001, 999_999_000);
        let bytes = written(&[(ts1, &[0xaa; 60]), (ts2, &[1, 2, 3, 4, 5])]);
        assert_eq!(bytes.len(), 24 + 16 + 60 + 16 + 5);
        let recs = read_all(&bytes).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].timestamp, ts1);
        assert_eq!(recs[0].data, vec![0xaa; 60]);
        assert_eq!(recs[0].orig_len, 60);
        assert_eq!(recs[1].timestamp, ts2);
        assert_eq!(recs[1].data, vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn reads_big_endian_nanosecond_files() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MAGIC_NSEC.to_be_bytes());
        bytes.extend_from_slice(&2u16.to_be_bytes());
        bytes.extend_from_slice(&4u16.to_be_bytes());
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&65535u32.to_be_bytes());
        bytes.extend_from_slice(&1u32.to_be_bytes());
        for v in [7u32, 5, 3, 3] {
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        bytes.extend_from_slice(&[9, 8, 7]);
        let recs = read_all(&bytes).unwrap();
        assert_eq!(recs[0].timestamp, Duration::new(7, 5));
        assert_eq!(recs[0].data, vec![9, 8, 7]);
    }

    #[test]
    fn malformed_inputs_are_located() {
        let good = written(&[(Duration::ZERO, &[1; 10]), (Duration::ZERO, &[2; 10])]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![], "t.pcap: byte 0: file too short for a pcap header (0 bytes)"),
            (good[..10].to_vec(), "t.pcap: byte 10: truncated global header (10 of 24 bytes)"),
            (
                b"\x0a\x0d\x0d\x0a rest of a pcapng section".to_vec(),
                "t.pcap: byte 0: this is a pcapng file; only classic pcap is read (convert: editcap -F pcap IN OUT)",
            ),
            (b"GIF89a..................".to_vec(), "t.pcap: byte 0: not a pcap file (magic 0x38464947)"),
            (
                good[..24 + 26 + 7].to_vec(),
                "t.pcap: record 2 at byte 50: truncated record header (7 of 16 bytes)",
            ),
            (
                good[..good.len() - 1].to_vec(),
                "t.pcap: record 2 at byte 50: truncated packet data (9 of 10 bytes)",
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(read_all(&bytes).unwrap_err().to_string(), want);
        }
        let mut huge = good.clone();
        huge[24 + 8..24 + 12].copy_from_slice(&1_000_000u32.to_ne_bytes());
        assert_eq!(
            read_all(&huge).unwrap_err().to_string(),
            "t.pcap: record 1 at byte 24: captured length 1000000 exceeds the limit of 262144 bytes"
        );
        let mut not_eth = good.clone();
        not_eth[20..24].copy_from_slice(&101u32.to_ne_bytes());
        assert_eq!(
            read_all(&not_eth).unwrap_err().to_string(),
            "t.pcap: byte 20: link type 101 is not Ethernet (1); a switch port carries Ethernet frames"
        );
        let mut bad_usec = good;
        bad_usec[24 + 4..24 + 8].copy_from_slice(&1_000_000u32.to_ne_bytes());
        assert_eq!(
            read_all(&bad_usec).unwrap_err().to_string(),
            "t.pcap: record 1 at byte 24: fraction-of-second field 1000000 is not below 1000000"
        );
    }
}
