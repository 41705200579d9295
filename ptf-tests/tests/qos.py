"""Classification: DSCP (port 1, trust dscp) and PCP (port 2, trust dot1p) to TC to queue.

The queue a packet took is observed through strict-priority scheduling: port 3 is paused with
802.3x PAUSE, one packet per class is queued in the lowest-first order, and on release the
traffic manager must send them highest queue first. TC -> queue is the identity in the suite's
TC_TO_QUEUE_MAP, so the expected order follows from DSCP_TO_TC_MAP / DOT1P_TO_TC_MAP alone.
"""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from ptf_harness.base import LosslessTest
from ptf_harness.packets import pause_frame, routed

PEER_MAC = "02:00:00:00:03:01"


class QosBase(LosslessTest):
    def order_test(self, ingress: int, packets: list[tuple[int, object]], what: str) -> None:
        """`packets`: (expected queue, packet); they must leave port 3 by descending queue."""
        _ip, mac = self.cfg.host(3)
        self.dataplane.send(0, 3, pause_frame(PEER_MAC, 0xFFFF))
        try:
            # The PAUSE (port 3) and the data (another port) are received by different
            # threads: see the pause in place before sending, and every packet queued before
            # the release.
            self.wait_paused(3, None, "802.3x PAUSE into port 3")
            for _queue, pkt in packets:
                self.send(ingress, pkt)
            self.wait_queued(3, len(packets), "one packet per class held on paused port 3")
            self.expect_nothing("port 3 is paused", timeout=0.2)
        finally:
            self.dataplane.send(0, 3, pause_frame(PEER_MAC, 0))
        out = self.drain(quiet=0.5)
        expected = [
            bytes(routed(p, self.cfg.router_mac, mac))
            for _q, p in sorted(packets, key=lambda qp: -qp[0])
        ]
        got = [f for port, f in out if port == 3]
        if got != expected:
            names = {bytes(routed(p, self.cfg.router_mac, mac)): q for q, p in packets}
            self.fail(
                f"{what}: expected strict-priority order by queue "
                f"{[q for q, _ in sorted(packets, key=lambda qp: -qp[0])]}, got queues "
                f"{[names.get(f, '?') for f in got]} ({len(got)} frames on port 3, "
                f"{len(out) - len(got)} elsewhere)"
            )


class DscpToQueue(QosBase):
    def runTest(self) -> None:
        dscp_map = self.cfg.tables["DSCP_TO_TC_MAP"]["PTF"]
        chosen = {}  # one DSCP per TC
        for dscp, tc in dscp_map.items():
            chosen.setdefault(int(tc), int(dscp))
        packets = [
            (
                tc,
                Ether(dst=self.cfg.router_mac, src="02:00:00:00:01:02")
                / IP(src="10.1.0.2", dst="10.3.0.1", tos=dscp << 2, id=tc)
                / UDP(sport=7, dport=7)
                / bytes(64),
            )
            for tc, dscp in sorted(chosen.items())
        ]
        self.order_test(1, packets, "DSCP -> TC -> queue")


class PcpToQueue(QosBase):
    def runTest(self) -> None:
        pcp_map = self.cfg.tables["DOT1P_TO_TC_MAP"]["PTF"]
        packets = [
            (
                int(tc),
                Ether(dst=self.cfg.router_mac, src="02:00:00:00:02:02")
                / Dot1Q(prio=int(pcp), vlan=100)
                / IP(src="10.2.0.2", dst="10.3.0.1", id=int(pcp))
                / UDP(sport=7, dport=7)
                / bytes(64),
            )
            for pcp, tc in sorted(pcp_map.items())
        ]
        self.order_test(2, packets, "PCP -> TC -> queue on a trust-dot1p port")
