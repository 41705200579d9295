#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use switch_ports::{ChannelPort, Port};
use switch_v1model::{Switch, SwitchConfig};

pub mod cli_layout;
pub mod fixture;
pub mod lossless;

pub fn program(name: &str) -> String {
    let path = format!(
        "{}/../switch-v1model/tests/stf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn switch(name: &str) -> Switch {
    Switch::from_json(&program(name), SwitchConfig::default()).expect("test program loads")
}

/// Switch-side ports for `numbers`, and the host ends.
pub fn ports(numbers: &[u32]) -> (BTreeMap<u32, Arc<dyn Port>>, BTreeMap<u32, ChannelPort>) {
    let mut sw = BTreeMap::new();
    let mut host = BTreeMap::new();
    for &n in numbers {
        let (a, b) = ChannelPort::pair(&format!("sw{n}"), &format!("host{n}"));
        sw.insert(n, Arc::new(a) as Arc<dyn Port>);
        host.insert(n, b);
    }
    (sw, host)
}

/// An ARP-typed frame: l3.json sends anything not IPv4 to port 0 unchanged.
pub fn frame(len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[12] = 0x08;
    f[13] = 0x06;
    f
}

/// An IPv4 frame to `dst` (checksum zero; l3.json recomputes it).
pub fn ipv4_frame(dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[5] = 0xaa;
    f[11] = 0xbb;
    f[12] = 0x08;
    f[13] = 0x00;
    f.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 192, 168, 0, 1]);
    f.extend_from_slice(&dst);
    f
}

pub fn drain(p: &ChannelPort) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; switch_ports::MAX_FRAME];
    while let Ok(switch_ports::Recv::Frame(n)) =
        p.recv(&mut buf, std::time::Duration::from_millis(1))
    {
        out.push(buf[..n].to_vec());
    }
    out
}

/// One HTTP/1.1 request (`Connection: close`); returns (status, body). The server is tiny_http.
pub fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("set a read timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send the request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (status, body)
}
