"""ECMP: flows spread evenly over the members (chi-square bound), each flow stays on one member,
and RoCEv2's entropy (the UDP source port, destination 4791) alone spreads queue pairs."""

from __future__ import annotations

import random

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ptf_harness.base import PORTS, LosslessTest
from ptf_harness.stats import uniform_spread

FLOWS = 400
ROCEV2 = 4791


class EcmpBase(LosslessTest):
    def flow(self, src: str, dst: str, sport: int, dport: int) -> object:
        return (
            Ether(dst=self.cfg.router_mac, src="02:00:00:00:01:02")
            / IP(src=src, dst=dst, ttl=64)
            / UDP(sport=sport, dport=dport)
            / bytes(32)
        )

    def member_of(self, pkt: object) -> int:
        """The port the switch chose for `pkt`, checking the MAC rewrite matches that member."""
        self.send(1, pkt)
        got = self.receive(timeout=2.0)
        if got is None:
            self.fail(f"ECMP flow {pkt.summary()}: nothing arrived on any port")
        port, frame = got
        _ip, mac = self.cfg.host(port)
        dst = ":".join(f"{b:02x}" for b in frame[:6])
        self.assertEqual(dst, mac, f"flow left on port {port} with the wrong neighbour MAC")
        return port

    def check_spread(self, flows: list[object], what: str) -> dict[int, int]:
        chosen = [self.member_of(f) for f in flows]
        counts = [chosen.count(p) for p in PORTS]
        spread = uniform_spread(counts)
        self.assertTrue(spread.uniform, f"{what}: {spread.explain([f'port {p}' for p in PORTS])}")
        # Consistency: every flow again, in another order, takes the same member.
        order = list(range(len(flows)))
        random.Random(7).shuffle(order)
        for i in order[:100]:
            again = self.member_of(flows[i])
            self.assertEqual(
                again, chosen[i], f"{what}: flow {flows[i].summary()} moved from port "
                f"{chosen[i]} to port {again}"
            )  # fmt: skip
        return dict(zip(PORTS, counts, strict=True))


class EcmpFiveTupleSpread(EcmpBase):
    def runTest(self) -> None:
        rng = random.Random(1)
        flows = [
            self.flow(
                f"10.1.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                f"30.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                rng.randrange(1024, 65536),
                rng.randrange(1, 65536),
            )
            for _ in range(FLOWS)
        ]
        self.check_spread(flows, "5-tuple flows into 30.0.0.0/8 (4 members)")


class EcmpRoceEntropy(EcmpBase):
    """One pair of hosts, RoCEv2 (UDP 4791): only the source port varies, as NICs set it per QP."""

    def runTest(self) -> None:
        flows = [self.flow("10.1.0.2", "30.0.0.1", 49152 + i, ROCEV2) for i in range(FLOWS)]
        self.check_spread(flows, "RoCEv2 queue pairs 10.1.0.2 -> 30.0.0.1 by UDP source port")
