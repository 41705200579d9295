"""ECN marking (WRED_PROFILE with ecn) against queue depth, within statistical bounds.

The depth is set exactly: the test writes the pipeline's own byte count for (port 3, queue 3)
(`queue_bytes`, p4src/README.md) over P4Runtime, on bmv2 through its runtime CLI (traffic
cannot build these depths there: ptf-tests/README.md, "Against bmv2"); each packet adds its
length at admission and removes it in egress, so it leaves exactly that depth behind, which is
what marking uses.
Packets go one at a time, so they never overlap. The expected probability is WRED's: 0 up to
Kmin, Pmax x (depth - Kmin) / (Kmax - Kmin) between, 1 at or above Kmax.
"""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ptf_harness.base import LosslessTest
from ptf_harness.packets import routed
from ptf_harness.stats import FALSE_FAILURE, binomial_interval

QUEUE_INDEX = 3 * 8 + 3  # (egress port 3, queue 3)
SAMPLES = 300


def expected_probability(depth: int, kmin: int, kmax: int, pmax: float) -> float:
    if depth <= kmin:
        return 0.0
    if depth >= kmax:
        return 1.0
    return pmax * (depth - kmin) / (kmax - kmin)


class EcnMarking(LosslessTest):
    def tearDown(self) -> None:
        if self._client is not None:
            self.register_write("queue_bytes", QUEUE_INDEX, 0)
        super().tearDown()

    def marks_at(self, depth: int, ecn: int, n: int) -> int:
        """How many of `n` packets with ECN codepoint `ecn` leave marked CE at `depth`."""
        _ip, mac = self.cfg.host(3)
        self.register_write("queue_bytes", QUEUE_INDEX, depth)
        marked = 0
        for i in range(n):
            pkt = (
                Ether(dst=self.cfg.router_mac, src="02:00:00:00:01:02")
                / IP(src="10.1.0.2", dst="10.3.0.1", tos=(3 << 2) | ecn, id=i)
                / UDP(sport=9, dport=9)
                / bytes(64)
            )
            plain = bytes(routed(pkt, self.cfg.router_mac, mac))
            ce = pkt.copy()
            ce[IP].tos = (3 << 2) | 3
            ce_frame = bytes(routed(ce, self.cfg.router_mac, mac))
            self.send(1, pkt)
            got = self.receive(3, timeout=2.0)
            if got is None:
                self.fail(f"depth {depth}: packet {i} (ECN {ecn}) not forwarded")
            if got[1] == ce_frame and ecn not in (0, 3):
                marked += 1
            elif got[1] != plain:
                self.fail(
                    f"depth {depth}: packet {i} is neither the routed packet nor it marked CE "
                    f"(with the checksum updated):\n{got[1].hex()}"
                )
        return marked

    def runTest(self) -> None:
        w = self.cfg.wred()
        kmin, kmax, pmax = int(w["kmin"]), int(w["kmax"]), w["pmax"]
        before = self.counter("ecn_marked", QUEUE_INDEX)[0]
        total = 0
        depths = [kmin // 2, kmin, kmin + (kmax - kmin) // 2, kmin + 5 * (kmax - kmin) // 6, kmax]
        for depth in depths:
            p = expected_probability(depth, kmin, kmax, pmax)
            n = SAMPLES if 0 < p < 1 else 50
            got = self.marks_at(depth, 2, n)  # ECT(0)
            total += got
            low, high = binomial_interval(n, p)
            self.assertTrue(
                low <= got <= high,
                f"queue depth {depth} B (Kmin {kmin}, Kmax {kmax}, Pmax {pmax:.0%}): "
                f"{got} of {n} ECT(0) packets marked, expected {n * p:.1f} "
                f"(bounds {low}..{high}, false-failure probability {FALSE_FAILURE:g})",
            )
        for ecn, what in ((0, "Not-ECT"), (3, "CE")):
            self.assertEqual(self.marks_at(kmax * 2, ecn, 20), 0, f"{what} is never re-marked")
        self.assertEqual(self.marks_at(kmax, 1, 20), 20, "ECT(1) is marked like ECT(0)")
        total += 20
        marked = self.counter("ecn_marked", QUEUE_INDEX)[0] - before
        self.assertEqual(marked, total, "ecn_marked[port 3, queue 3] counts every CE mark seen")
