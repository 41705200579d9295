"""ARP, ND and IP2ME punt to the controller with packet_in (ingress port, reason), and the CoPP
meter that limits them."""

from __future__ import annotations

import time

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import ICMPv6ND_NS, IPv6
from scapy.layers.l2 import ARP, Ether

from ptf_harness.base import DROP_COPP, PUNT_ARP, PUNT_IP2ME, PUNT_ND, LosslessTest

H1_MAC = "02:00:00:00:01:02"


def arp_request(target: str = "10.1.0.1") -> object:
    return Ether(dst="ff:ff:ff:ff:ff:ff", src=H1_MAC) / ARP(
        op=1, hwsrc=H1_MAC, psrc="10.1.0.2", pdst=target
    )


class PuntBase(LosslessTest):
    def packet_ins(self, wanted: int, timeout: float = 2.0) -> list[tuple[bytes, int, int]]:
        """(payload, ingress_port, reason) of PacketIns until `wanted` or a quiet `timeout`."""
        meta = {m.name: m.id for m in self._packet_in_meta()}
        out = []
        while len(out) < wanted:
            p = self.client.next_packet_in(timeout)
            if p is None:
                break
            fields = {m.metadata_id: int.from_bytes(m.value, "big") for m in p.metadata}
            out.append((p.payload, fields.get(meta["ingress_port"]), fields.get(meta["reason"])))
        return out

    def _packet_in_meta(self) -> list:
        for cpm in self.client.p4info().controller_packet_metadata:
            if cpm.preamble.name == "packet_in":
                return list(cpm.metadata)
        raise AssertionError("the switch's P4Info has no packet_in controller header")

    def expect_punt(self, port: int, pkt: object, reason: int, what: str) -> None:
        self.send(port, pkt)
        got = self.packet_ins(1)
        self.assertEqual(len(got), 1, f"{what}: expected one PacketIn, got {len(got)}")
        payload, ingress, why = got[0]
        self.assertEqual((ingress, why), (port, reason), f"{what}: PacketIn (ingress_port, reason)")
        self.assertEqual(payload, bytes(pkt), f"{what}: PacketIn payload is not the packet sent")
        self.expect_nothing(f"{what} is punted, not forwarded")


class ArpNdIp2mePunt(PuntBase):
    def runTest(self) -> None:
        self.open_session()
        self.expect_punt(1, arp_request(), PUNT_ARP, "ARP request for the router address")
        ns = (
            Ether(dst="33:33:ff:00:00:01", src=H1_MAC)
            / IPv6(src="fc00:1::2", dst="ff02::1:ff00:1", hlim=255)
            / ICMPv6ND_NS(tgt="fc00:1::1")
        )
        self.expect_punt(1, ns, PUNT_ND, "IPv6 neighbour solicitation")
        ip2me = (
            Ether(dst=self.cfg.router_mac, src=H1_MAC)
            / IP(src="10.1.0.2", dst="10.3.0.0")
            / UDP(sport=5, dport=179)
        )
        self.expect_punt(1, ip2me, PUNT_IP2ME, "IPv4 to a router address (IP2ME)")


class CoppMeterRate(PuntBase):
    """ARP punts pass the CoPP policer (sr_tcm, cir/cbs in packets) at most at cbs + cir x
    elapsed, at least the burst; the rest are dropped and counted."""

    def runTest(self) -> None:
        cir, cbs = self.cfg.copp_arp()
        sent = 4 * cbs
        self.open_session()
        before = self.counter("drop_reasons", DROP_COPP)[0]
        frame = arp_request()
        start = time.monotonic()
        self.send(1, frame, count=sent)
        elapsed = time.monotonic() - start
        got = len(self.packet_ins(sent, timeout=1.0))
        dropped = self.counter("drop_reasons", DROP_COPP)[0] - before
        ceiling = cbs + cir * elapsed + 1
        self.assertLessEqual(
            got, ceiling, f"{got} of {sent} ARP punts in {elapsed:.3f} s passed a policer of "
            f"cir {cir}/s cbs {cbs}: at most {ceiling:.0f} may"
        )  # fmt: skip
        self.assertGreaterEqual(got, min(cbs, sent), f"the burst of {cbs} must pass")
        self.assertEqual(dropped, sent - got, "drop_reasons[COPP] must count every policed punt")
