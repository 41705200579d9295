//! Is a peer on a directly connected network? A RoCEv2 test belongs on a lab fabric; a mistyped
//! peer address must not send a test's traffic (and its TCP exchange) out of the default route.
//!
//! The answer follows the kernel's own choice for the main routing table: the longest prefix
//! among the IPv4 routes of `/proc/net/route` and the subnets of the local interface addresses
//! (which also covers loopback, whose route lives in the local table). The peer is local when
//! that route is not the default route and has no gateway.

use std::fmt;
use std::net::Ipv4Addr;

/// `RTF_UP` and `RTF_GATEWAY` from `<linux/route.h>`.
const RTF_UP: u32 = 0x1;
const RTF_GATEWAY: u32 = 0x2;

/// One IPv4 route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub iface: String,
    pub dest: Ipv4Addr,
    pub mask: Ipv4Addr,
    /// `None` for an on-link route.
    pub gateway: Option<Ipv4Addr>,
}

impl Route {
    fn matches(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & u32::from(self.mask) == u32::from(self.dest) & u32::from(self.mask)
    }

    fn prefix_len(&self) -> u32 {
        u32::from(self.mask).count_ones()
    }

    pub fn is_default(&self) -> bool {
        self.prefix_len() == 0
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_default() {
            write!(f, "the default route")?;
        } else {
            write!(f, "route {}/{}", self.dest, self.prefix_len())?;
        }
        if let Some(gw) = self.gateway {
            write!(f, " via {gw}")?;
        }
        write!(f, " dev {}", self.iface)
    }
}

/// The kernel prints each address as the native-endian integer of its network-order bytes.
fn hex_addr(s: &str) -> Option<Ipv4Addr> {
    let v = u32::from_str_radix(s, 16).ok()?;
    Some(Ipv4Addr::from(v.to_ne_bytes()))
}

/// The routes that are up in `/proc/net/route`'s text; malformed lines are skipped.
pub fn parse_proc_route(text: &str) -> Vec<Route> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (iface, dest, gw, flags, mask) =
                (f.first()?, f.get(1)?, f.get(2)?, f.get(3)?, f.get(7)?);
            let flags = u32::from_str_radix(flags, 16).ok()?;
            if flags & RTF_UP == 0 {
                return None;
            }
            Some(Route {
                iface: iface.to_string(),
                dest: hex_addr(dest)?,
                mask: hex_addr(mask)?,
                gateway: (flags & RTF_GATEWAY != 0).then(|| hex_addr(gw)).flatten(),
            })
        })
        .collect()
}

/// The route the kernel would pick for `ip` among `routes`: the longest matching prefix.
pub fn lookup(routes: &[Route], ip: Ipv4Addr) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| r.matches(ip))
        .max_by_key(|r| r.prefix_len())
}

/// On-link routes for the subnets of this host's IPv4 addresses (loopback included).
fn interface_subnets() -> Vec<Route> {
    let mut out = Vec::new();
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut addrs) } != 0 {
        return out;
    }
    let mut cur = addrs;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_netmask.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and at least a sockaddr.
        if i32::from(unsafe { (*ifa.ifa_addr).sa_family }) != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET address and its netmask are sockaddr_in.
        let (addr, mask) = unsafe {
            (
                (*(ifa.ifa_addr as *const libc::sockaddr_in))
                    .sin_addr
                    .s_addr,
                (*(ifa.ifa_netmask as *const libc::sockaddr_in))
                    .sin_addr
                    .s_addr,
            )
        };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        out.push(Route {
            iface: name.to_string_lossy().into_owned(),
            dest: Ipv4Addr::from(addr.to_ne_bytes()),
            mask: Ipv4Addr::from(mask.to_ne_bytes()),
            gateway: None,
        });
    }
    // SAFETY: frees the list returned above exactly once.
    unsafe { libc::freeifaddrs(addrs) };
    out
}

/// Why `peer` is not on a directly connected network, or `None` when it is.
pub fn not_local_reason(routes: &[Route], peer: Ipv4Addr) -> Option<String> {
    match lookup(routes, peer) {
        None => Some("no route to it".to_string()),
        Some(r) if r.is_default() || r.gateway.is_some() => Some(format!("it is reached by {r}")),
        Some(_) => None,
    }
}

/// Why a peer is refused (`--allow-remote` lifts the check).
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("peer {peer}: read /proc/net/route: {source}")]
    Routes {
        peer: Ipv4Addr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "peer {peer} is not on a directly connected network ({why}); give --allow-remote to \
         test across routers"
    )]
    NotLocal { peer: Ipv4Addr, why: String },
}

/// Refuses `peer` unless this host reaches it through an on-link route other than the default
/// route, as this host's routing table says now.
pub fn check_local_peer(peer: Ipv4Addr) -> Result<(), PeerError> {
    let mut routes = interface_subnets();
    let table = std::fs::read_to_string("/proc/net/route")
        .map_err(|source| PeerError::Routes { peer, source })?;
    routes.extend(parse_proc_route(&table));
    match not_local_reason(&routes, peer) {
        None => Ok(()),
        Some(why) => Err(PeerError::NotLocal { peer, why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/net/route` of a host with a default route via 192.0.2.1 on eth0, its subnet
    /// 192.0.2.0/24, a lab subnet 10.1.0.0/16 on veth0, a routed 10.1.5.0/24 inside it, and a
    /// route that is down. Addresses as the kernel prints them on a little- or big-endian host.
    fn table() -> String {
        let h = |a: [u8; 4]| format!("{:08X}", u32::from_ne_bytes(a));
        let row = |iface: &str, d: [u8; 4], g: [u8; 4], flags: u32, m: [u8; 4]| {
            format!(
                "{iface}\t{}\t{}\t{flags:04X}\t0\t0\t0\t{}\t0\t0\t0\n",
                h(d),
                h(g),
                h(m)
            )
        };
        let mut t =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                .to_string();
        t += &row("eth0", [0; 4], [192, 0, 2, 1], 3, [0; 4]);
        t += &row("eth0", [192, 0, 2, 0], [0; 4], 1, [255, 255, 255, 0]);
        t += &row("veth0", [10, 1, 0, 0], [0; 4], 1, [255, 255, 0, 0]);
        t += &row(
            "veth0",
            [10, 1, 5, 0],
            [10, 1, 0, 254],
            3,
            [255, 255, 255, 0],
        );
        t += &row("veth1", [10, 9, 0, 0], [0; 4], 0, [255, 255, 0, 0]);
        t += "garbage line\n";
        t
    }

    #[test]
    fn parses_the_kernel_table() {
        let r = parse_proc_route(&table());
        assert_eq!(r.len(), 4, "{r:?}");
        assert_eq!(r[0].gateway, Some(Ipv4Addr::new(192, 0, 2, 1)));
        assert!(r[0].is_default());
        assert_eq!(r[2].dest, Ipv4Addr::new(10, 1, 0, 0));
        assert_eq!(r[2].mask, Ipv4Addr::new(255, 255, 0, 0));
        assert_eq!(r[2].gateway, None);
    }

    #[test]
    fn only_on_link_non_default_routes_are_local() {
        let r = parse_proc_route(&table());
        let why = |ip: [u8; 4]| not_local_reason(&r, Ipv4Addr::from(ip));
        assert_eq!(why([10, 1, 0, 2]), None);
        assert_eq!(why([192, 0, 2, 77]), None);
        assert_eq!(
            why([1, 2, 3, 4]).as_deref(),
            Some("it is reached by the default route via 192.0.2.1 dev eth0")
        );
        // The longer, routed prefix wins over the on-link /16 around it.
        assert_eq!(
            why([10, 1, 5, 9]).as_deref(),
            Some("it is reached by route 10.1.5.0/24 via 10.1.0.254 dev veth0")
        );
        // A route that is down does not count; without a default route nothing matches.
        let no_default: Vec<Route> = r.into_iter().filter(|x| !x.is_default()).collect();
        assert_eq!(
            not_local_reason(&no_default, Ipv4Addr::new(10, 9, 0, 1)).as_deref(),
            Some("no route to it")
        );
    }
}
