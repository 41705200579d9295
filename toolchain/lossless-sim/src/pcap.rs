//! `--pcap`: per-port capture files of switch ports, as the lab's tcpdump writes them
//! (`pcap/SWITCH-portN.pcap`, the first 128 bytes of each frame, both directions), stamped with
//! virtual time in nanoseconds (pcap magic 0xa1b23c4d).
//!
//! A received frame is stamped when its last bit reaches the port, a transmitted one when its
//! first bit leaves. The simulator hands a received frame over when it leaves the pipeline
//! latency behind, up to that latency after its stamp, so records wait in a heap and are
//! written in time order once nothing earlier can come.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes kept of each frame (the lab's `tcpdump -s 128`).
pub const SNAPLEN: usize = 128;

#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    #[error("--pcap {spec}: {what}")]
    Spec { spec: String, what: String },
    #[error("{path}: {source}")]
    Write {
        path: PathBuf,
        source: pcap_file::PcapError,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Which ports `spec` names among `switches` (name, port numbers): `all`, or a comma-separated
/// list of `SWITCH` (every port of it) and `SWITCH:PORT`.
pub fn select(spec: &str, switches: &[(String, Vec<u32>)]) -> Result<Vec<(usize, u32)>, PcapError> {
    let bad = |what: String| PcapError::Spec {
        spec: spec.to_string(),
        what,
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item == "all" {
            for (sw, (_, ports)) in switches.iter().enumerate() {
                out.extend(ports.iter().map(|&p| (sw, p)));
            }
            continue;
        }
        let (name, port) = match item.split_once(':') {
            Some((n, p)) => {
                let p = p
                    .parse::<u32>()
                    .map_err(|_| bad(format!("'{item}': '{p}' is not a port number")))?;
                (n, Some(p))
            }
            None => (item, None),
        };
        let sw = switches
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| bad(format!("'{item}': no switch '{name}'")))?;
        let ports = &switches[sw].1;
        match port {
            Some(p) if ports.contains(&p) => out.push((sw, p)),
            Some(p) => return Err(bad(format!("'{item}': {name} has no port {p}"))),
            None => out.extend(ports.iter().map(|&p| (sw, p))),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

struct Record {
    stamp_ns: u64,
    seq: u64,
    sw: usize,
    port: u32,
    orig_len: u32,
    data: Vec<u8>,
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        (self.stamp_ns, self.seq) == (other.stamp_ns, other.seq)
    }
}
impl Eq for Record {}
impl PartialOrd for Record {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Record {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.stamp_ns, self.seq).cmp(&(other.stamp_ns, other.seq))
    }
}

type Writer = PcapWriter<BufWriter<File>>;

pub struct Capture {
    writers: BTreeMap<(usize, u32), (PathBuf, Writer)>,
    pending: BinaryHeap<Reverse<Record>>,
    /// How far behind the present a stamp can be when its frame is handed over.
    lag_ns: u64,
    seq: u64,
    /// The first write error; the run goes on and [`Capture::finish`] reports it.
    error: Option<PcapError>,
}

impl Capture {
    /// Creates `dir/SWITCH-portN.pcap` for every port of `ports` (`names` by switch index);
    /// `lag_ns`: the longest pipeline latency of the switches.
    pub fn create(
        dir: &Path,
        names: &[String],
        ports: &[(usize, u32)],
        lag_ns: u64,
    ) -> Result<Capture, PcapError> {
        std::fs::create_dir_all(dir).map_err(|source| PcapError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            // The largest frame a reader should expect; each record keeps SNAPLEN bytes of it
            // and its length on the wire (readers such as pcap-file's reject records longer on
            // the wire than the header's snaplen).
            snaplen: u32::from(u16::MAX),
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            // Fixed, so that the files are the same on every machine.
            endianness: Endianness::Little,
        };
        let mut writers = BTreeMap::new();
        for &(sw, port) in ports {
            let name = names.get(sw).map_or("?", String::as_str);
            let path = dir.join(format!("{name}-port{port}.pcap"));
            let file = File::create(&path).map_err(|source| PcapError::Io {
                path: path.clone(),
                source,
            })?;
            let w = PcapWriter::with_header(BufWriter::new(file), header).map_err(|source| {
                PcapError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
            writers.insert((sw, port), (path, w));
        }
        Ok(Capture {
            writers,
            pending: BinaryHeap::new(),
            lag_ns,
            seq: 0,
            error: None,
        })
    }

    /// Whether switch `sw`'s `port` is captured.
    fn wants(&self, sw: usize, port: u32) -> bool {
        self.writers.contains_key(&(sw, port))
    }

    /// Records `frame` on switch `sw`'s `port` at `stamp_ns`; `now_ns` is the present.
    pub fn record(&mut self, sw: usize, port: u32, stamp_ns: u64, frame: &[u8], now_ns: u64) {
        if !self.wants(sw, port) {
            return;
        }
        self.seq += 1;
        self.pending.push(Reverse(Record {
            stamp_ns,
            seq: self.seq,
            sw,
            port,
            orig_len: frame.len() as u32,
            data: frame[..frame.len().min(SNAPLEN)].to_vec(),
        }));
        // Any record still to come is stamped at or after now - lag.
        let safe = now_ns.saturating_sub(self.lag_ns);
        while self.pending.peek().is_some_and(|r| r.0.stamp_ns < safe) {
            self.write_next();
        }
    }

    fn write_next(&mut self) {
        let Some(Reverse(r)) = self.pending.pop() else {
            return;
        };
        let Some((path, w)) = self.writers.get_mut(&(r.sw, r.port)) else {
            return;
        };
        let packet = PcapPacket::new(Duration::from_nanos(r.stamp_ns), r.orig_len, &r.data);
        if let Err(source) = w.write_packet(&packet) {
            self.error.get_or_insert(PcapError::Write {
                path: path.clone(),
                source,
            });
        }
    }

    /// Writes what is left and closes the files; the paths written.
    pub fn finish(mut self) -> Result<Vec<PathBuf>, PcapError> {
        while !self.pending.is_empty() {
            self.write_next();
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut paths = Vec::new();
        for (_, (path, w)) in self.writers {
            use std::io::Write;
            w.into_writer().flush().map_err(|source| PcapError::Io {
                path: path.clone(),
                source,
            })?;
            paths.push(path);
        }
        Ok(paths)
    }
}
