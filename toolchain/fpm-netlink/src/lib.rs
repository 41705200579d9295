//! zebra's FPM stream decoded for lossless-ctl's route path (a Python extension module,
//! `lossless_ctl._fpm_netlink`): FPM frames split, their netlink route messages decoded with
//! the `netlink-packet-route` crate, and each turned into what routeorch needs, in the compact
//! form it indexes by, folded and grouped by next-hop set (see `decode`). In Python, pyroute2
//! took 60 to 160 us per message, which alone was more than the whole route path's budget.
//!
//! FPM frame (FRR's fpm/fpm.h): version (1 byte, 1), message type (1 byte, 1 = netlink),
//! length (2 bytes, big-endian, header included), then one or more netlink messages.

use std::borrow::Cow;
use std::collections::BTreeMap;

use foldhash::HashMap as FastMap;
use std::net::IpAddr;

use netlink_packet_core::{NetlinkBuffer, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

const FPM_HEADER: usize = 4;
const FPM_VERSION: u8 = 1;
const FPM_NETLINK: u8 = 1;
const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;

/// Route protocols as zebra marks them (FRR's zebra/rt_netlink.h RTPROT_*): the source of a
/// route, shown by `show ip route`.
fn protocol_name(proto: u8) -> Option<&'static str> {
    Some(match proto {
        2 => "kernel",
        11 => "zebra",
        186 => "bgp",
        187 => "isis",
        188 => "ospf",
        189 => "rip",
        190 => "ripng",
        191 => "nhrp",
        192 => "eigrp",
        193 => "ldp",
        194 => "sharp",
        195 => "pbr",
        196 => "static",
        197 => "openfabric",
        _ => return None,
    })
}

/// Something a message says that cannot be used: `kind` is its counter's name.
struct Problem {
    kind: &'static str,
    message: String,
}

fn problem(kind: &'static str, message: String) -> Problem {
    Problem { kind, message }
}

/// One route as zebra sent it. `key`: the network address (4 or 16 bytes) then the prefix
/// length (1 byte), host bits zero. `hops`: the distinct next hops' addresses, sorted and
/// concatenated (None for a deletion, empty for a drop route).
struct Route {
    key: Vec<u8>,
    hops: Option<Vec<u8>>,
    protocol: Cow<'static, str>,
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

fn gateway(attrs: &[RouteAttribute], v4: bool) -> Result<Option<Vec<u8>>, Problem> {
    let mut found = None;
    for attr in attrs {
        let ip: IpAddr = match attr {
            RouteAttribute::Gateway(RouteAddress::Inet(a)) => (*a).into(),
            RouteAttribute::Gateway(RouteAddress::Inet6(a)) => (*a).into(),
            RouteAttribute::Via(RouteVia::Inet(a)) => (*a).into(),
            RouteAttribute::Via(RouteVia::Inet6(a)) => (*a).into(),
            _ => continue,
        };
        if ip.is_ipv4() != v4 {
            return Err(problem(
                "malformed",
                format!("next hop {ip} of another family than the route"),
            ));
        }
        found.get_or_insert(octets(ip));
    }
    Ok(found)
}

/// The route in one route message; None for a route this switch does not program (connected
/// and IPv6 link-local or multicast routes, which config_db's INTERFACE table describes).
fn route_of(msg: &RouteMessage, deleted: bool) -> Result<Option<Route>, Problem> {
    let header: &RouteHeader = &msg.header;
    let v4 = match header.address_family {
        AddressFamily::Inet => true,
        AddressFamily::Inet6 => false,
        other => {
            let family = u8::from(other);
            return Err(problem(
                "unknown address family",
                format!("route of address family {family}"),
            ));
        }
    };
    let mut table = u32::from(header.table);
    let mut dst: Option<IpAddr> = None;
    let mut multipath = None;
    let mut nh_object = false;
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Table(t) if *t != 0 => table = *t,
            RouteAttribute::Destination(RouteAddress::Inet(a)) => dst = Some((*a).into()),
            RouteAttribute::Destination(RouteAddress::Inet6(a)) => dst = Some((*a).into()),
            RouteAttribute::MultiPath(paths) => multipath = Some(paths),
            RouteAttribute::NhId(_) => nh_object = true,
            _ => {}
        }
    }
    if table != u32::from(RouteHeader::RT_TABLE_MAIN) {
        return Err(problem(
            "other vrf",
            format!("route in table {table} (only the default VRF is routed)"),
        ));
    }
    let full = if v4 { 32 } else { 128 };
    let plen = header.destination_prefix_length;
    let mut address = match dst {
        Some(ip) => octets(ip),
        None => vec![0; full / 8],
    };
    let shown = |address: &[u8]| match <[u8; 4]>::try_from(address) {
        Ok(a) => IpAddr::from(a).to_string(),
        Err(_) => IpAddr::from(<[u8; 16]>::try_from(address).unwrap_or([0; 16])).to_string(),
    };
    if usize::from(plen) > full {
        return Err(problem("malformed", format!("prefix length {plen}")));
    }
    let host_bits = address.iter().enumerate().any(|(i, b)| {
        let kept = usize::from(plen).saturating_sub(i * 8).min(8);
        b & (0xffu8.checked_shr(kept as u32).unwrap_or(0)) != 0
    });
    if host_bits {
        let at = shown(&address);
        return Err(problem(
            "malformed",
            format!("destination {at}/{plen}: has host bits set"),
        ));
    }
    // IPv6 link-local (fe80::/10) and multicast (ff00::/8) prefixes are the host's own.
    if !v4
        && ((plen >= 10 && address[0] == 0xfe && address[1] & 0xc0 == 0x80)
            || (plen >= 8 && address[0] == 0xff))
    {
        return Ok(None);
    }
    let proto = u8::from(header.protocol);
    let protocol = protocol_name(proto).map_or_else(|| format!("proto {proto}").into(), Cow::from);
    address.push(plen);
    let key = address;
    if deleted {
        return Ok(Some(Route {
            key,
            hops: None,
            protocol,
        }));
    }
    if nh_object {
        let at = shown(&key[..key.len() - 1]);
        return Err(problem(
            "next-hop object",
            format!(
                "{at}/{plen}: next hop given as a next-hop object id; configure zebra with \
                 `no fpm use-next-hop-groups`"
            ),
        ));
    }
    match header.kind {
        RouteType::BlackHole | RouteType::Unreachable | RouteType::Prohibit => {
            return Ok(Some(Route {
                key,
                hops: Some(Vec::new()),
                protocol,
            }));
        }
        RouteType::Unicast => {}
        _ => return Ok(None),
    }
    let mut hops: Vec<Vec<u8>> = Vec::new();
    match multipath {
        Some(paths) if !paths.is_empty() => {
            for path in paths {
                hops.extend(gateway(&path.attributes, v4)?);
            }
        }
        _ => hops.extend(gateway(&msg.attributes, v4)?),
    }
    if hops.is_empty() {
        return Ok(None); // directly connected: an INTERFACE subnet of the config
    }
    hops.sort_unstable();
    hops.dedup();
    Ok(Some(Route {
        key,
        hops: Some(hops.concat()),
        protocol,
    }))
}

/// What one call found: routes, counts by kind, and the problems to log.
#[derive(Default)]
struct Decoded {
    routes: Vec<Route>,
    counts: BTreeMap<String, u64>,
    logs: Vec<String>,
}

impl Decoded {
    fn count(&mut self, kind: &str) {
        // Once per message: no allocation for a kind already counted.
        match self.counts.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.counts.insert(kind.to_owned(), 1);
            }
        }
    }

    fn report(&mut self, p: Problem) {
        self.count(p.kind);
        self.logs.push(format!("fpm: {}: {}", p.kind, p.message));
    }

    /// One frame's netlink payload. Its messages' lengths must tile it: one that runs past
    /// the end makes the whole frame malformed (nothing of it is used).
    fn netlink(&mut self, payload: &[u8]) -> Result<(), Problem> {
        let mut messages = Vec::new();
        let mut at = 0;
        while at < payload.len() {
            let buffer = NetlinkBuffer::new_checked(&payload[at..]).map_err(|err| {
                problem(
                    "malformed",
                    format!("netlink payload of {} bytes: {err}", payload.len()),
                )
            })?;
            let length = buffer.length() as usize;
            messages.push(at..at + length);
            // Netlink messages are 4-byte aligned (NLMSG_ALIGN).
            at += length.div_ceil(4) * 4;
        }
        if messages.is_empty() {
            let len = payload.len();
            return Err(problem(
                "malformed",
                format!("netlink payload of {len} bytes: empty"),
            ));
        }
        for range in messages {
            let buffer = NetlinkBuffer::new(&payload[range]);
            let kind = buffer.message_type();
            if kind != RTM_NEWROUTE && kind != RTM_DELROUTE {
                self.count(&format!("netlink type {kind} ignored"));
                continue;
            }
            let decoded = NetlinkMessage::<RouteNetlinkMessage>::deserialize(buffer.into_inner());
            let route = match decoded.map(|m| m.payload) {
                Ok(NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(m))) => {
                    route_of(&m, false)
                }
                Ok(NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelRoute(m))) => {
                    route_of(&m, true)
                }
                Ok(_) => continue,
                Err(err) => Err(problem("malformed", format!("route message: {err}"))),
            };
            match route {
                Ok(Some(route)) => {
                    self.count("routes");
                    self.routes.push(route);
                }
                Ok(None) => self.count("connected or link-local skipped"),
                Err(p) => self.report(p),
            }
        }
        Ok(())
    }
}

/// The complete FPM frames at the start of `buffer`, decoded: (bytes they take, what they
/// say, the reason the framing was lost if it was).
fn frames(buffer: &[u8]) -> (usize, Decoded, Option<String>) {
    let mut out = Decoded::default();
    let mut at = 0;
    while buffer.len() - at >= FPM_HEADER {
        let (version, kind) = (buffer[at], buffer[at + 1]);
        let length = usize::from(u16::from_be_bytes([buffer[at + 2], buffer[at + 3]]));
        if length < FPM_HEADER {
            out.count("malformed");
            let reason = format!("FPM frame length {length} < {FPM_HEADER}");
            return (at, out, Some(reason));
        }
        if buffer.len() - at < length {
            break;
        }
        let payload = &buffer[at + FPM_HEADER..at + length];
        at += length;
        out.count("frames");
        let result = if version != FPM_VERSION {
            Err(problem(
                "malformed",
                format!("FPM version {version} (expected 1)"),
            ))
        } else if kind != FPM_NETLINK {
            Err(problem(
                "not netlink",
                format!("FPM message type {kind} (1 = netlink)"),
            ))
        } else {
            out.netlink(payload)
        };
        if let Err(p) = result {
            out.report(p);
        }
    }
    (at, out, None)
}

/// The routes of one call folded (a prefix's last message wins, as the next flush would take
/// it) and grouped by what they say, (next hops, protocol): per group, the index of a route
/// that says it and the indices of the routes in it, in order of first appearance.
fn grouped(routes: &[Route]) -> Vec<(usize, Vec<usize>)> {
    /// What a route says: its next hops and protocol.
    type Via<'a> = (Option<&'a [u8]>, &'a str);
    // foldhash rather than std's SipHash: these two maps were a third of the decoding time.
    let mut last: FastMap<&[u8], usize> =
        FastMap::with_capacity_and_hasher(routes.len(), <_>::default());
    for (i, r) in routes.iter().enumerate() {
        last.insert(&r.key, i);
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut index: FastMap<Via, usize> = FastMap::default();
    let mut previous: Option<(Via, usize)> = None;
    for (i, r) in routes.iter().enumerate() {
        if last[r.key.as_slice()] != i {
            continue;
        }
        let via = (r.hops.as_deref(), r.protocol.as_ref());
        // Runs of routes with the same next hops are the usual case: no lookup for those.
        let at = match previous {
            Some((seen, at)) if seen == via => at,
            _ => *index.entry(via).or_insert_with(|| {
                groups.push((i, Vec::new()));
                groups.len() - 1
            }),
        };
        previous = Some((via, at));
        groups[at].1.push(i);
    }
    groups
}

/// Splits `buffer` (bytes received, the previous call's remainder first) into FPM frames and
/// decodes them. Returns `(consumed, groups, counts, logs, desynchronised)`: the bytes of
/// complete frames (the rest is an incomplete frame, to be given again with what follows);
/// the routes as `((hops, protocol), keys)` groups (see `Route` and `grouped`: one Python
/// object per next-hop set rather than per route, which routeorch stores and writes as they
/// come); counters by kind ("frames", "routes" (messages), "malformed", ...); log lines for
/// what could not be used; and, when a frame's header gives a length below its own (the
/// stream's framing is lost: the caller drops the connection), the reason, with nothing after
/// that frame decoded. The decoding runs without the GIL: the controller's other threads (the
/// route flushes) go on meanwhile.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn decode<'py>(
    py: Python<'py>,
    buffer: &[u8],
) -> PyResult<(
    usize,
    Bound<'py, PyList>,
    BTreeMap<String, u64>,
    Vec<String>,
    Option<String>,
)> {
    let (at, out, desynchronised, grouping) = py.detach(|| {
        let (at, out, desynchronised) = frames(buffer);
        let grouping = grouped(&out.routes);
        (at, out, desynchronised, grouping)
    });
    let routes = &out.routes;
    let groups = PyList::empty(py);
    for (first, members) in grouping {
        let r = &routes[first];
        let hops = r.hops.as_deref().map(|h| PyBytes::new(py, h));
        let via = (hops, PyString::intern(py, &r.protocol));
        let keys = PyList::new(
            py,
            members.iter().map(|&i| PyBytes::new(py, &routes[i].key)),
        )?;
        groups.append((via, keys))?;
    }
    Ok((at, groups, out.counts, out.logs, desynchronised))
}

#[pymodule]
fn _fpm_netlink(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode, m)?)
}
