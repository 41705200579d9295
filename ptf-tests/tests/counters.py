"""Counters agree with the packets sent: the switch's port counters (frames into the pipeline,
frames and bytes out), the traffic manager's port and queue counters (every frame received,
including MAC control; transmitted per queue), PFC/PAUSE reception counts, and the pipeline's
drop_reasons, all as deltas over one burst of known frames.

The switch's and traffic manager's counters come from p4-switch's statistics endpoint
(`GET /stats`, p4-switch's README); bmv2's simple_switch_grpc has none, so the test is skipped
there.
"""

from __future__ import annotations

from typing import Any

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ptf_harness.base import DROP_NO_ROUTE, LosslessTest
from ptf_harness.packets import pause_frame, pfc_frame, routed

H1_MAC = "02:00:00:00:01:02"
PEER2_MAC = "02:00:00:00:02:02"  # h2, sending the MAC control frames into port 2


def flat(stats: dict[str, Any]) -> dict[str, int]:
    """The counters this test compares, by a readable name."""
    sw, tm = stats["switch"], stats["tm"]
    port = {p["port"]: p for p in tm["ports"]}
    out = {
        "switch.rx_frames[1]": sw["rx_frames"].get("1", 0),
        "switch.tx_frames[2]": sw["tx_frames"].get("2", 0),
        "switch.tx_bytes[2]": sw["tx_bytes"].get("2", 0),
        "switch.mac_control_consumed": sw["mac_control_consumed"],
        "tm.port1.rx_packets": port[1]["rx_packets"],
        "tm.port1.rx_bytes": port[1]["rx_bytes"],
        "tm.port2.rx_packets": port[2]["rx_packets"],
        "tm.port2.pfc_rx[3]": port[2]["pfc_rx"][3],
        "tm.port2.pause_rx": port[2]["pause_rx"],
        "tm.port2.tx_packets": port[2]["tx_packets"],
        "tm.port2.tx_bytes": port[2]["tx_bytes"],
        "tm.port2.drops": sum(port[2]["drops"].values()),
    }
    for q in port[2]["queues"]:
        out[f"tm.port2.queue{q['queue']}.tx_packets"] = q["tx_packets"]
    return out


class PortAndDropCounters(LosslessTest):
    """20 routed frames h1 -> h2 (DSCP 0: TC 0, queue 0), 5 with no route, 3 PFC frames and one
    PAUSE into port 2: each counter moves by exactly what was sent, received or dropped."""

    def runTest(self) -> None:
        _ip, h2_mac = self.cfg.host(2)
        forwarded = [
            Ether(dst=self.cfg.router_mac, src=H1_MAC)
            / IP(src="10.1.0.2", dst="10.2.0.2", id=i, ttl=64)
            / UDP(sport=1000 + i, dport=7)
            / bytes(100 + i)  # lengths differ, so bytes are not packets x one size
            for i in range(20)
        ]
        unroutable = [
            Ether(dst=self.cfg.router_mac, src=H1_MAC)
            / IP(src="10.1.0.2", dst="99.0.0.1", id=i)
            / UDP(sport=7, dport=7)
            / bytes(64)
            for i in range(5)
        ]
        # Quanta 0: these resume rather than pause, so nothing is held.
        mac_control = [pfc_frame(PEER2_MAC, {3: 0})] * 3 + [pause_frame(PEER2_MAC, 0)]
        self.drain(quiet=0.2)
        drops_before = self.counter("drop_reasons", DROP_NO_ROUTE)[0]
        mc_before = self.counter("mac_control_received", 2)[0]
        before = flat(self.switch_stats())
        for frame in mac_control:
            self.dataplane.send(0, 2, frame)
        for pkt in forwarded + unroutable:
            self.send(1, pkt)
        for pkt in forwarded:
            self.expect(2, routed(pkt, self.cfg.router_mac, h2_mac), f"packet id {pkt[IP].id}")
        self.expect_nothing("the unroutable packets are dropped, MAC control consumed")
        after = flat(self.switch_stats())
        rx1 = [bytes(p) for p in forwarded + unroutable]
        tx2 = [bytes(routed(p, self.cfg.router_mac, h2_mac)) for p in forwarded]
        expected = {k: 0 for k in before}
        expected.update(
            {
                "switch.rx_frames[1]": len(rx1),
                "switch.tx_frames[2]": len(tx2),
                "switch.tx_bytes[2]": sum(map(len, tx2)),
                "switch.mac_control_consumed": len(mac_control),
                "tm.port1.rx_packets": len(rx1),
                "tm.port1.rx_bytes": sum(map(len, rx1)),
                "tm.port2.rx_packets": len(mac_control),
                "tm.port2.pfc_rx[3]": 3,
                "tm.port2.pause_rx": 1,
                "tm.port2.tx_packets": len(tx2),
                "tm.port2.tx_bytes": sum(map(len, tx2)),
                "tm.port2.queue0.tx_packets": len(tx2),
            }
        )
        self.assertEqual(
            {k: after[k] - before[k] for k in before},
            expected,
            "counter deltas: the pipeline counts what it processed, the TM every frame "
            "received (MAC control too) and what each queue sent",
        )
        self.assertEqual(
            self.counter("drop_reasons", DROP_NO_ROUTE)[0] - drops_before,
            len(unroutable),
            "drop_reasons[NO_ROUTE]",
        )
        self.assertEqual(
            self.counter("mac_control_received", 2)[0] - mc_before,
            0,
            "MAC control frames are consumed by the port and never reach the pipeline",
        )
