//! The generator end to end, in process: flow starts and ends, address walks, pcap templates
//! replayed byte for byte, the active-flow target, and the profile format of the README.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use flowgen::gen::{self, Generator, VecSink};
use flowgen::profile::Profile;
use flowgen::run::{self, Setup};
use flowgen::sched::{HeapScheduler, Scheduler, TimerWheel};
use flowgen::template::Template;

const BUCKET_NS: u64 = 20_000;

fn profile(yaml: &str) -> Profile {
    Profile::parse(yaml, Path::new("test.yaml")).unwrap_or_else(|e| panic!("{e}"))
}

fn templates(p: &Profile, dir: &Path, multiplier: f64) -> Vec<Template> {
    p.cap_info
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Template::load(c, dir, multiplier, (0.0, 0.0), &format!("cap_info[{i}]"))
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// What a run into a [`VecSink`] produced.
struct VecSinkRun {
    frames: Vec<(u64, usize, Vec<u8>)>,
    counters: gen::Counters,
    active: usize,
}

fn run_until<S: Scheduler>(
    s: S,
    t: Vec<Template>,
    p: &Profile,
    pairs: u32,
    until_ns: u64,
) -> VecSinkRun {
    let mut g = Generator::new(s, t, &p.generator, pairs, 7, 0);
    let mut sink = VecSink::default();
    // Small steps, as a real-time driver would take them.
    let mut now = 0;
    while now < until_ns {
        now = (now + 3_000).min(until_ns);
        g.advance(now, &mut sink).unwrap();
    }
    VecSinkRun {
        frames: sink.frames,
        counters: g.counters(),
        active: g.active_flows(),
    }
}

fn ips(f: &[u8]) -> (Ipv4Addr, Ipv4Addr) {
    let at = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
    (
        Ipv4Addr::new(f[at + 12], f[at + 13], f[at + 14], f[at + 15]),
        Ipv4Addr::new(f[at + 16], f[at + 17], f[at + 18], f[at + 19]),
    )
}

const UDP5: &str = "
generator:
  clients_start: 16.0.0.1
  clients_end: 16.0.0.4
  servers_start: 48.0.0.1
  servers_end: 48.0.0.3
cap_info:
  - builtin: {kind: udp, packets: 5, frame_size: 64}
    cps: 500
    ipg: 100
";

#[test]
fn flows_start_at_cps_and_end_after_their_packets() {
    let p = profile(UDP5);
    let multiplier = 2.0;
    let cps = 500.0 * multiplier;
    let ipg_ns = 100_000u64;
    let packets = 5u64;
    let until = 1_000_000_000u64;
    for (name, r) in [
        (
            "pq",
            run_until(
                HeapScheduler::default(),
                templates(&p, Path::new("."), multiplier),
                &p,
                1,
                until,
            ),
        ),
        (
            "tw",
            run_until(
                TimerWheel::new(1024, 3, BUCKET_NS),
                templates(&p, Path::new("."), multiplier),
                &p,
                1,
                until,
            ),
        ),
    ] {
        // Flow k starts at k / cps: those with k / cps <= until have started.
        let period = (1e9 / cps) as u64;
        let started = until / period + 1;
        assert_eq!(r.counters.flows_started, started, "{name}");
        // A flow ends with its last packet, (packets - 1) gaps after its start; the wheel may
        // run a packet up to one bucket early, never late.
        let life = (packets - 1) * ipg_ns;
        let ended = (0..started).filter(|k| k * period + life <= until).count() as u64;
        assert_eq!(r.counters.flows_ended, ended, "{name}");
        assert_eq!(r.active as u64, started - ended, "{name}");
        // Every flow sent exactly its packets, at its start plus whole gaps.
        let mut per_flow: BTreeMap<(Ipv4Addr, u16), Vec<u64>> = BTreeMap::new();
        for (t, _, f) in &r.frames {
            let port = u16::from_be_bytes([f[34], f[35]]);
            per_flow.entry((ips(f).0, port)).or_default().push(*t);
        }
        assert_eq!(per_flow.len() as u64, started, "{name}");
        let mut starts: Vec<u64> = per_flow.values().map(|ts| ts[0]).collect();
        starts.sort();
        for (k, s) in starts.iter().enumerate() {
            assert_eq!(*s, k as u64 * period, "{name}: start of flow {k}");
        }
        for ts in per_flow.values() {
            let expect = if ts[0] + life <= until {
                packets as usize
            } else {
                ts.len()
            };
            assert_eq!(ts.len(), expect, "{name}");
            for (i, t) in ts.iter().enumerate() {
                assert_eq!(*t, ts[0] + i as u64 * ipg_ns, "{name}");
            }
        }
        assert_eq!(r.counters.packets, r.frames.len() as u64);
    }
}

fn addresses_of(yaml: &str, flows: u64, pairs: u32) -> Vec<(Ipv4Addr, Ipv4Addr, usize)> {
    let p = profile(yaml);
    let t = templates(&p, Path::new("."), 1.0);
    let period = (1e9 / t[0].cps) as u64;
    let r = run_until(HeapScheduler::default(), t, &p, pairs, period * (flows - 1));
    r.frames
        .iter()
        .map(|(_, pair, f)| (ips(f).0, ips(f).1, *pair))
        .collect()
}

fn addr(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

#[test]
fn seq_distribution_walks_the_ranges_in_order() {
    let yaml = UDP5.replace("packets: 5", "packets: 1");
    let got = addresses_of(&yaml, 12, 1);
    let clients: Vec<Ipv4Addr> = (0..12u32)
        .map(|k| Ipv4Addr::from(u32::from(addr("16.0.0.1")) + k % 4))
        .collect();
    let servers: Vec<Ipv4Addr> = (0..12u32)
        .map(|k| Ipv4Addr::from(u32::from(addr("48.0.0.1")) + k % 3))
        .collect();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), clients);
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), servers);

    // w: 2 keeps each client for two consecutive flows.
    let yaml_w = yaml.replace("ipg: 100", "ipg: 100\n    w: 2");
    let got = addresses_of(&yaml_w, 8, 1);
    let clients: Vec<Ipv4Addr> = (0..8u32)
        .map(|k| Ipv4Addr::from(u32::from(addr("16.0.0.1")) + k / 2))
        .collect();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), clients);

    // min_clients limits the pool to the first addresses of the range.
    let yaml_min = yaml.replace(
        "clients_end: 16.0.0.4",
        "clients_end: 16.0.0.4\n  min_clients: 2",
    );
    let got = addresses_of(&yaml_min, 6, 1);
    let clients: Vec<Ipv4Addr> = (0..6u32)
        .map(|k| Ipv4Addr::from(u32::from(addr("16.0.0.1")) + k % 2))
        .collect();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), clients);
}

#[test]
fn dual_port_mask_offsets_every_other_pair() {
    let yaml = UDP5.replace("packets: 5", "packets: 1").replace(
        "servers_end: 48.0.0.3",
        "servers_end: 48.0.0.3\n  dual_port_mask: 1.0.0.0",
    );
    let got = addresses_of(&yaml, 6, 2);
    for (k, (c, s, pair)) in got.iter().enumerate() {
        let k = k as u32;
        let off = (k % 2) << 24;
        assert_eq!(*pair as u32, k % 2);
        assert_eq!(u32::from(*c), u32::from(addr("16.0.0.1")) + k % 4 + off);
        assert_eq!(u32::from(*s), u32::from(addr("48.0.0.1")) + k % 3 + off);
    }
}

#[test]
fn random_distribution_covers_the_ranges_uniformly() {
    let yaml = UDP5
        .replace("packets: 5", "packets: 1")
        .replace("generator:", "generator:\n  distribution: random");
    let n = 4000u64;
    let got = addresses_of(&yaml, n, 1);
    assert_eq!(got.len() as u64, n);
    let mut clients: BTreeMap<Ipv4Addr, u64> = BTreeMap::new();
    let mut servers: BTreeMap<Ipv4Addr, u64> = BTreeMap::new();
    for (c, s, _) in &got {
        *clients.entry(*c).or_default() += 1;
        *servers.entry(*s).or_default() += 1;
    }
    let expect_keys = |start: &str, k: u32| {
        (0..k)
            .map(|i| Ipv4Addr::from(u32::from(addr(start)) + i))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        clients.keys().copied().collect::<Vec<_>>(),
        expect_keys("16.0.0.1", 4)
    );
    assert_eq!(
        servers.keys().copied().collect::<Vec<_>>(),
        expect_keys("48.0.0.1", 3)
    );
    // Binomial counts: mean n/k, standard deviation below 30 here; 6 sigma bounds.
    for (map, k) in [(&clients, 4u64), (&servers, 3)] {
        for (a, c) in map {
            let mean = n / k;
            assert!(
                c.abs_diff(mean) < 180,
                "{a}: {c} of {n}, expected about {mean}"
            );
        }
    }
    // And not the sequential order.
    let seq: Vec<Ipv4Addr> = (0..8u32)
        .map(|k| Ipv4Addr::from(u32::from(addr("16.0.0.1")) + k % 4))
        .collect();
    assert_ne!(got.iter().take(8).map(|g| g.0).collect::<Vec<_>>(), seq);
}

// --- pcap templates ------------------------------------------------------------------------

/// RFC 1071 sum, written independently of the crate's.
fn csum(parts: &[&[u8]]) -> u16 {
    let mut s: u64 = 0;
    for p in parts {
        for (i, b) in p.iter().enumerate() {
            s += if i % 2 == 0 {
                (*b as u64) << 8
            } else {
                *b as u64
            };
        }
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An Ethernet/IPv4 frame with the given transport segment; `vlan` adds an 802.1Q tag and
/// `options` an IPv4 option word. Checksums are filled in.
fn frame(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    mut seg: Vec<u8>,
    vlan: bool,
    options: bool,
) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa];
    if vlan {
        f.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let ihl = if options { 6 } else { 5 };
    let total = (ihl * 4 + seg.len()) as u16;
    let mut ip = vec![0x40 | ihl as u8, 0x0c];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0x12, 0x34, 0x40, 0x00, 61, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    if options {
        ip.extend_from_slice(&[0x01, 0x01, 0x01, 0x00]); // NOP NOP NOP EOL
    }
    let c = csum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let len = (seg.len() as u16).to_be_bytes();
    let pseudo = [&src[..], &dst[..], &[0, proto], &len[..]].concat();
    let at = if proto == 6 { 16 } else { 6 };
    let c = csum(&[&pseudo, &seg]);
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&seg);
    f
}

fn tcp(sport: u16, dport: u16, seq: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&seq.to_be_bytes());
    s.extend_from_slice(&0x55u32.to_be_bytes());
    s.extend_from_slice(&[0x50, flags, 0x20, 0x00, 0, 0, 0, 0]);
    s.extend_from_slice(data);
    s
}

fn udp(sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    s.extend_from_slice(&[0, 0]);
    s.extend_from_slice(data);
    s
}

/// Where the rewrite may touch a frame: addresses, IPv4 checksum, client port, L4 checksum.
fn rewritten_bytes(f: &[u8], c2s: bool) -> Vec<usize> {
    let ip = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
    let l4 = ip + (f[ip] & 0xf) as usize * 4;
    let port = if c2s { l4 } else { l4 + 2 };
    let ck = if f[ip + 9] == 6 { l4 + 16 } else { l4 + 6 };
    let mut v: Vec<usize> = (ip + 10..ip + 20).collect();
    v.extend([port, port + 1, ck, ck + 1]);
    v
}

fn checksums_valid(f: &[u8]) -> bool {
    let ip = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
    let ihl = (f[ip] & 0xf) as usize * 4;
    let total = u16::from_be_bytes([f[ip + 2], f[ip + 3]]) as usize;
    let seg = &f[ip + ihl..ip + total];
    let proto = f[ip + 9];
    let len = (seg.len() as u16).to_be_bytes();
    let pseudo = [&f[ip + 12..ip + 20], &[0, proto], &len[..]].concat();
    csum(&[&f[ip..ip + ihl]]) == 0 && csum(&[&pseudo, seg]) == 0
}

#[test]
fn pcap_template_is_replayed_byte_for_byte_but_for_addresses() {
    let dir = std::env::temp_dir().join(format!("flowgen-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = [192, 168, 7, 1];
    let s = [192, 168, 9, 2];
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    let frames = vec![
        frame(c, s, 6, tcp(33000, 80, 1, 0x02, &[]), false, false),
        frame(s, c, 6, tcp(80, 33000, 9, 0x12, &[]), true, false),
        frame(c, s, 6, tcp(33000, 80, 2, 0x10, &[]), false, true),
        frame(c, s, 6, tcp(33000, 80, 2, 0x18, &data[..201]), false, false),
        frame(s, c, 6, tcp(80, 33000, 10, 0x18, &data[50..]), false, false),
        frame(c, s, 6, tcp(33000, 80, 203, 0x11, &[]), true, true),
    ];
    let mut w = switch_ports::pcap::create_file(&dir.join("conv.pcap")).unwrap();
    for f in &frames {
        w.write(std::time::Duration::ZERO, f).unwrap();
    }
    drop(w);
    let udp_frames = vec![frame(c, s, 17, udp(5000, 53, &data[..37]), false, false)];
    let mut w = switch_ports::pcap::create_file(&dir.join("dns.pcap")).unwrap();
    w.write(std::time::Duration::ZERO, &udp_frames[0]).unwrap();
    drop(w);

    let yaml = "
generator: {clients_start: 16.0.0.1, clients_end: 16.0.0.200, servers_start: 48.0.0.1, servers_end: 48.0.1.0}
cap_info:
  - {name: conv.pcap, cps: 1000, ipg: 10, rtt: 30}
  - {name: dns.pcap, cps: 1000, ipg: 10}
";
    let p = profile(yaml);
    let t = templates(&p, &dir, 1.0);
    assert_eq!(t[0].packets.len(), frames.len());
    let r = run_until(TimerWheel::new(256, 2, 1_000), t, &p, 1, 3_000_000);
    assert!(r.frames.len() >= 3 * (frames.len() + 1));
    let client_range = u32::from(addr("16.0.0.1"))..=u32::from(addr("16.0.0.200"));
    let server_range = u32::from(addr("48.0.0.1"))..=u32::from(addr("48.0.1.0"));
    // Which template and packet a frame came from: length and VLAN/options layout identify it
    // here; the direction follows from the template.
    let mut matched = 0;
    for (_, _, out) in &r.frames {
        let candidates: Vec<&Vec<u8>> = frames
            .iter()
            .chain(&udp_frames)
            .filter(|f| f.len() == out.len() && f[12..14] == out[12..14])
            .collect();
        let found = candidates.iter().any(|tpl| {
            let c2s = ips(tpl).0 == Ipv4Addr::from(c);
            let skip = rewritten_bytes(tpl, c2s);
            let same = tpl
                .iter()
                .zip(out.iter())
                .enumerate()
                .all(|(i, (a, b))| a == b || skip.contains(&i));
            let (src, dst) = ips(out);
            let (cl, sv) = if c2s { (src, dst) } else { (dst, src) };
            same && client_range.contains(&u32::from(cl)) && server_range.contains(&u32::from(sv))
        });
        assert!(
            found,
            "frame not derived from a template packet: {out:02x?}"
        );
        assert!(checksums_valid(out), "bad checksum in {out:02x?}");
        matched += 1;
    }
    assert_eq!(matched, r.frames.len());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pcap_template_errors_name_the_entry_and_record() {
    let dir = std::env::temp_dir().join(format!("flowgen-pcap-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = [10, 0, 0, 1];
    let b = [10, 0, 0, 2];
    let other = [10, 0, 0, 3];
    let mut w = switch_ports::pcap::create_file(&dir.join("two.pcap")).unwrap();
    w.write(
        std::time::Duration::ZERO,
        &frame(a, b, 17, udp(1, 2, b"x"), false, false),
    )
    .unwrap();
    w.write(
        std::time::Duration::ZERO,
        &frame(a, other, 17, udp(1, 2, b"y"), false, false),
    )
    .unwrap();
    drop(w);
    let yaml = "
generator: {clients_start: 16.0.0.1, clients_end: 16.0.0.2, servers_start: 48.0.0.1, servers_end: 48.0.0.2}
cap_info:
  - {builtin: {kind: udp, packets: 2}, cps: 1}
  - {name: two.pcap, cps: 1}
  - {name: missing.pcap, cps: 1}
";
    let p = profile(yaml);
    let e = Template::load(&p.cap_info[1], &dir, 1.0, (0.0, 0.0), "cap_info[1]").unwrap_err();
    assert!(matches!(e, flowgen::Error::Template { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.starts_with("cap_info[1].name: two.pcap: record 2:"),
        "{e}"
    );
    let e = Template::load(&p.cap_info[2], &dir, 1.0, (0.0, 0.0), "cap_info[2]")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cap_info[2].name: ") && e.contains("missing.pcap"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

// --- active flows --------------------------------------------------------------------------

#[test]
fn active_flows_target_holds_at_steady_state() {
    let p = profile(UDP5);
    for target in [300u64, 20_000] {
        let mut t = templates(&p, Path::new("."), 10.0);
        let factor = gen::scale_to_active_flows(&mut t, target).unwrap();
        assert!(factor > 1.0);
        let mut g = Generator::new(HeapScheduler::default(), t, &p.generator, 1, 1, 0);
        g.prefill();
        let after_prefill = g.active_flows() as f64;
        let mut sink = VecSink::default();
        g.advance(2_000_000_000, &mut sink).unwrap();
        for got in [after_prefill, g.active_flows() as f64] {
            assert!(
                (got - target as f64).abs() / target as f64 <= 0.01,
                "{got} for {target}"
            );
        }
        // Prefilled flows are mid-way: no flow sends more than its packets.
        let mut per_flow: BTreeMap<(Ipv4Addr, u16), u32> = BTreeMap::new();
        for (_, _, f) in &sink.frames {
            *per_flow
                .entry((ips(f).0, u16::from_be_bytes([f[34], f[35]])))
                .or_default() += 1;
        }
        assert!(per_flow.values().all(|&n| n <= 5));
    }
}

#[test]
fn single_packet_flows_cannot_be_stretched() {
    let p = profile(&UDP5.replace("packets: 5", "packets: 1"));
    let mut t = templates(&p, Path::new("."), 1.0);
    let e = gen::scale_to_active_flows(&mut t, 1000).unwrap_err();
    assert!(
        matches!(&e, flowgen::Error::Setting { at, .. } if at == "--active-flows"),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("two or more packets"), "{e}");
}

// --- the README's profile -------------------------------------------------------------------

#[test]
fn readme_example_profile_loads_and_runs() {
    let readme = include_str!("../README.md");
    let start = readme.find("```yaml\n").expect("README has a yaml block") + 8;
    let end = start + readme[start..].find("```").expect("closed");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let p = Profile::parse(&readme[start..end], &path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.cap_info.len(), 3);
    let setup = Setup {
        profile_path: path,
        profile: p,
        sched: run::SchedChoice::Heap,
        multiplier: 1.0,
        active_flows: None,
        prefill: false,
        pairs: 1,
        seed: 1,
    };
    let (t, _) = run::load_templates(&setup).unwrap();
    let mut g = Generator::new(
        HeapScheduler::default(),
        t,
        &setup.profile.generator,
        1,
        1,
        0,
    );
    let mut sink = VecSink::default();
    g.advance(100_000_000, &mut sink).unwrap();
    assert!(g.counters().flows_started > 3 && g.counters().packets > 10);
}

#[test]
fn shipped_profiles_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Profile::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert_eq!(n, 3);
}

#[test]
fn absurd_rates_gaps_and_table_sizes_are_refused() {
    let load = |p: &Profile, m: f64| {
        Template::load(&p.cap_info[0], Path::new("."), m, (0.0, 0.0), "cap_info[0]")
            .unwrap_err()
            .to_string()
    };
    let e = load(&profile(&UDP5.replace("ipg: 100", "ipg: 1e12")), 1.0);
    assert!(e.starts_with("cap_info[0].ipg: "), "{e}");
    let e = load(&profile(UDP5), 1e300);
    assert!(e.starts_with("cap_info[0].cps: "), "{e}");
    let mut t = templates(&profile(UDP5), Path::new("."), 1.0);
    let e = gen::scale_to_active_flows(&mut t, gen::MAX_ACTIVE_FLOWS + 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("above"), "{e}");
}

#[test]
fn aging_keeps_finished_flows_active() {
    // udp_aging 0.01 s: a flow stays in the table 10 ms after its last packet.
    let yaml = UDP5.replace(
        "servers_end: 48.0.0.3",
        "servers_end: 48.0.0.3\n  udp_aging: 0.01",
    );
    let p = profile(&yaml);
    let aging = (0.0, p.generator.udp_aging.0);
    let t: Vec<Template> = p
        .cap_info
        .iter()
        .map(|c| Template::load(c, Path::new("."), 1.0, aging, "cap_info[0]").unwrap())
        .collect();
    assert_eq!(t[0].aging_ns, 10_000_000);
    let until = 100_000_000u64;
    let r = run_until(HeapScheduler::default(), t, &p, 1, until);
    let period = 2_000_000u64; // 500 cps
    let life = 4 * 100_000 + 10_000_000;
    let started = until / period + 1;
    let ended = (0..started).filter(|k| k * period + life <= until).count() as u64;
    assert_eq!(r.counters.flows_started, started);
    assert_eq!(r.counters.flows_ended, ended);
    assert_eq!(r.active as u64, started - ended);
    // Aging sends nothing: five packets per flow that finished sending.
    let sent = (0..started)
        .map(|k| ((until - k * period) / 100_000 + 1).min(5))
        .sum::<u64>();
    assert_eq!(r.counters.packets, sent);
}
