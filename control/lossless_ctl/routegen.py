"""Routes and neighbours at SONiC's L3 scale points (seed 002), as a config_db.json fragment.

Seed 002's points: 10k..200k IPv4 routes, 10k..65k IPv6 routes with prefixes longer than /64,
8k/16k/32k ARP and 8k/16k ND neighbours, ECMP 512 groups x 32 paths, 256 x 64, 128 x 128.

The fragment is a complete config of its own (DEVICE_METADATA, PORT, INTERFACE, NEIGH,
STATIC_ROUTE), so `validate`, `sai` and `load` take it as it is:

- port i (Ethernet{4i}, index i+1) owns IPv4 subnet 10.x (sized for its share of neighbours and
  next hops) and IPv6 subnet fc00:0:0:i::/64; the router is host 1 of each, neighbours follow;
- IPv4 routes are /24s from 20.0.0.0, IPv6 routes /80s from 2001:db8::, each to one neighbour
  (round robin), or to an ECMP group when groups are asked for;
- ECMP group g is the window of `paths` consecutive next hops starting at g on a ring of
  max(groups, paths + 1) next hops, so every group is a different set (SONiC shares a group
  between routes with the same set) and the route for each group is a /24 from 30.0.0.0.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any

IPV4_ROUTE_BASE = int(ipaddress.IPv4Address("20.0.0.0"))
ECMP_ROUTE_BASE = int(ipaddress.IPv4Address("30.0.0.0"))
IPV6_ROUTE_BASE = int(ipaddress.IPv6Address("2001:db8::"))
IPV4_SUBNET_BASE = int(ipaddress.IPv4Address("10.0.0.0"))
IPV6_SUBNET_BASE = int(ipaddress.IPv6Address("fc00::"))
IPV6_ROUTE_PREFIX = 80


@dataclass(frozen=True)
class ScalePoint:
    ipv4_routes: int = 0
    ipv6_routes: int = 0
    arp: int = 0
    nd: int = 0
    ecmp_groups: int = 0
    ecmp_paths: int = 0
    ports: int = 32

    def __post_init__(self) -> None:
        if not 1 <= self.ports <= 254:
            raise ValueError(f"ports must be 1..254 (got {self.ports})")
        if min(self.ipv4_routes, self.ipv6_routes, self.arp, self.nd) < 0:
            raise ValueError("counts must not be negative")
        if self.ipv4_routes > 1 << 22 or self.ipv6_routes > 1 << 32:
            raise ValueError("more routes than the generator's address plan holds")
        if (self.ecmp_groups > 0) != (self.ecmp_paths > 0) or self.ecmp_paths == 1:
            raise ValueError("ECMP needs both groups and at least 2 paths")

    @property
    def ecmp_ring(self) -> int:
        return max(self.ecmp_groups, self.ecmp_paths + 1) if self.ecmp_groups else 0


def _mac(n: int) -> str:
    # Locally administered unicast, unique per neighbour number.
    return "02:" + ":".join(f"{b:02x}" for b in (n + 1).to_bytes(5, "big"))


def generate(point: ScalePoint) -> dict[str, Any]:
    ports = [f"Ethernet{4 * i}" for i in range(point.ports)]
    v4_hosts = math.ceil(max(point.arp, point.ecmp_ring) / point.ports)
    # Host 0 is the network, 1 the router, the last the broadcast address.
    v4_bits = max(2, math.ceil(math.log2(v4_hosts + 3)))
    if point.ports << v4_bits > 1 << 24:
        raise ValueError("too many IPv4 hosts for 10.0.0.0/8")
    tables: dict[str, Any] = {
        "DEVICE_METADATA": {"localhost": {"hostname": "scale", "mac": "02:00:00:00:00:01"}},
        "PORT": {
            p: {"index": str(i + 1), "speed": "100000", "mtu": "9100", "admin_status": "up"}
            for i, p in enumerate(ports)
        },
        "INTERFACE": {},
        "NEIGH": {},
        "STATIC_ROUTE": {},
    }

    def v4_host(port: int, host: int) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(IPV4_SUBNET_BASE + (port << v4_bits) + host)

    def v6_host(port: int, host: int) -> ipaddress.IPv6Address:
        return ipaddress.IPv6Address(IPV6_SUBNET_BASE + (port << 64) + host)

    for i, p in enumerate(ports):
        tables["INTERFACE"][p] = {}
        tables["INTERFACE"][f"{p}|{v4_host(i, 1)}/{32 - v4_bits}"] = {}
        tables["INTERFACE"][f"{p}|{v6_host(i, 1)}/64"] = {}

    # Neighbour n sits on port n % ports, host n // ports + 2.
    def v4_neighbor(n: int) -> tuple[str, ipaddress.IPv4Address]:
        return ports[n % point.ports], v4_host(n % point.ports, n // point.ports + 2)

    def v6_neighbor(n: int) -> tuple[str, ipaddress.IPv6Address]:
        return ports[n % point.ports], v6_host(n % point.ports, n // point.ports + 2)

    for n in range(point.arp):
        port, ip = v4_neighbor(n)
        tables["NEIGH"][f"{port}|{ip}"] = {"neigh": _mac(n), "family": "IPv4"}
    for n in range(point.nd):
        port, ip = v6_neighbor(n)
        tables["NEIGH"][f"{port}|{ip}"] = {"neigh": _mac(point.arp + n), "family": "IPv6"}

    v4_hops = max(point.arp, 1)
    for r in range(point.ipv4_routes):
        prefix = ipaddress.IPv4Network((IPV4_ROUTE_BASE + (r << 8), 24))
        port, hop = v4_neighbor(r % v4_hops)
        tables["STATIC_ROUTE"][str(prefix)] = {"nexthop": str(hop), "ifname": port}
    v6_hops = max(point.nd, 1)
    for r in range(point.ipv6_routes):
        base = IPV6_ROUTE_BASE + (r << (128 - IPV6_ROUTE_PREFIX))
        prefix = ipaddress.IPv6Network((base, IPV6_ROUTE_PREFIX))
        port, hop = v6_neighbor(r % v6_hops)
        tables["STATIC_ROUTE"][str(prefix)] = {"nexthop": str(hop), "ifname": port}
    ring = point.ecmp_ring
    for g in range(point.ecmp_groups):
        window = [v4_neighbor((g + j) % ring) for j in range(point.ecmp_paths)]
        prefix = ipaddress.IPv4Network((ECMP_ROUTE_BASE + (g << 8), 24))
        tables["STATIC_ROUTE"][str(prefix)] = {
            "nexthop": ",".join(str(ip) for _, ip in window),
            "ifname": ",".join(port for port, _ in window),
        }
    return tables


# Seed 002's scale points, by the names `make bench` reports them under.
IPV4_POINTS = (10_000, 30_000, 60_000, 90_000, 128_000, 160_000, 200_000)
IPV6_POINTS = (10_000, 25_000, 40_000, 65_000)
ECMP_POINTS = ((512, 32), (256, 64), (128, 128))
SCALE_POINTS: dict[str, ScalePoint] = {
    **{f"ipv4_{n // 1000}k": ScalePoint(ipv4_routes=n, arp=64) for n in IPV4_POINTS},
    **{f"ipv6_{n // 1000}k": ScalePoint(ipv6_routes=n, nd=64) for n in IPV6_POINTS},
    **{f"arp_{n // 1000}k": ScalePoint(arp=n) for n in (8_000, 16_000, 32_000)},
    **{f"nd_{n // 1000}k": ScalePoint(nd=n) for n in (8_000, 16_000)},
    **{f"ecmp_{g}x{p}": ScalePoint(ecmp_groups=g, ecmp_paths=p) for g, p in ECMP_POINTS},
}
