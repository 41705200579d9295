"""L2/L3 forwarding: MAC rewrite, TTL / hop limit, IPv4 checksum, LPM longest match, drops."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP, IPOption_RR
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ptf_harness.base import (
    DROP_NO_ROUTE,
    DROP_NOT_ROUTER_MAC,
    DROP_ROUTE_ACTION,
    DROP_TTL_EXPIRED,
    LosslessTest,
)
from ptf_harness.packets import routed

SRC_MAC = "02:00:00:00:01:02"  # host h1 on port 1


def v4(dst: str, ttl: int = 64, router: str = "02:00:00:00:00:01", **ip) -> object:
    return (
        Ether(dst=router, src=SRC_MAC)
        / IP(src="10.1.0.2", dst=dst, ttl=ttl, **ip)
        / UDP(sport=1234, dport=5678)
        / bytes(40)
    )


class L3Base(LosslessTest):
    def forward_v4(self, dst: str, port: int, pkt: object = None) -> None:
        pkt = pkt if pkt is not None else v4(dst)
        _ip, mac = self.cfg.host(port)
        self.send(1, pkt)
        self.expect(port, routed(pkt, self.cfg.router_mac, mac), f"IPv4 to {dst}")


class Ipv4Forwarding(L3Base):
    """Routed to the neighbour's port with its MAC, the router's MAC, TTL - 1, checksum right."""

    def runTest(self) -> None:
        self.forward_v4("10.3.0.1", 3)
        self.forward_v4("10.2.0.2", 2)
        self.forward_v4("10.4.0.1", 4)


class Ipv4ChecksumWithOptions(L3Base):
    """The incremental checksum update (RFC 1624) stays right with IPv4 options present and at
    TTL values whose decrement borrows across the checksum word."""

    def runTest(self) -> None:
        for ttl in (2, 64, 128, 255):
            pkt = v4("10.3.0.1", ttl=ttl, options=[IPOption_RR(routers=["1.2.3.4"])])
            self.forward_v4("10.3.0.1", 3, pkt)


class Ipv6Forwarding(L3Base):
    def runTest(self) -> None:
        for dst, port in (("fc00:3::2", 3), ("2001:db8:1::9", 4), ("2001:db8:1:2::9", 2)):
            pkt = (
                Ether(dst=self.cfg.router_mac, src=SRC_MAC)
                / IPv6(src="fc00:1::2", dst=dst, hlim=64)
                / UDP(sport=1, dport=2)
                / bytes(40)
            )
            _ip, mac = self.cfg.host(port, 6)
            self.send(1, pkt)
            self.expect(port, routed(pkt, self.cfg.router_mac, mac), f"IPv6 to {dst}")


class LpmLongestMatch(L3Base):
    """20/8 -> port 3, 20.1/16 -> port 4, 20.1.2/24 -> port 2, 20.1.2.3/32 -> port 1."""

    def runTest(self) -> None:
        for dst, port in (
            ("20.9.9.9", 3),
            ("20.1.9.9", 4),
            ("20.1.2.9", 2),
            ("20.1.2.3", 1),
            ("20.1.3.0", 4),
            ("20.255.255.255", 3),
        ):
            self.forward_v4(dst, port)


class TtlExpiry(L3Base):
    """TTL 1 and hop limit 1 are dropped (not sent on with 0) and counted."""

    def runTest(self) -> None:
        before = self.counter("drop_reasons", DROP_TTL_EXPIRED)[0]
        self.send(1, v4("10.3.0.1", ttl=1))
        self.send(1, v4("10.3.0.1", ttl=0))
        self.send(
            1,
            Ether(dst=self.cfg.router_mac, src=SRC_MAC)
            / IPv6(src="fc00:1::2", dst="fc00:3::2", hlim=1)
            / UDP(),
        )
        self.expect_nothing("TTL/hop limit 1 and 0")
        after = self.counter("drop_reasons", DROP_TTL_EXPIRED)[0]
        self.assertEqual(after - before, 3, "drop_reasons[TTL_EXPIRED] must count the 3 drops")


class Drops(L3Base):
    """Not for the router's MAC, no route, blackhole route: dropped, each counted by reason."""

    def runTest(self) -> None:
        reasons = [DROP_NOT_ROUTER_MAC, DROP_NO_ROUTE, DROP_ROUTE_ACTION]
        before = self.counters("drop_reasons", reasons)
        self.send(1, v4("10.3.0.1", router="02:00:00:00:00:99"), count=2)
        self.send(1, v4("99.0.0.1"), count=3)
        self.send(1, v4("192.0.2.7"), count=4)
        self.expect_nothing("dropped packets")
        after = self.counters("drop_reasons", reasons)
        got = {r: after[r] - before[r] for r in reasons}
        self.assertEqual(
            got,
            {DROP_NOT_ROUTER_MAC: 2, DROP_NO_ROUTE: 3, DROP_ROUTE_ACTION: 4},
            "drop_reasons deltas by reason (not router MAC, no route, blackhole)",
        )
