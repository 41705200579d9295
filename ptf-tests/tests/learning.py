"""ARP/ND reply and neighbour learning by the controller (`lossless-ctl run`): the pipeline
punts, the controller answers for router addresses (ARP reply; NA with the router and solicited
flags, RFC 4861 7.2.4), learns senders and installs them, and gleans unresolved hosts with an ARP
request or an NS to the solicited-node group (RFC 4291 2.7.1).

The controller runs as a process in the PTF namespace (election id above the tests' so it is
primary), is ready once it prints its reconcile summary, and is stopped by its PID.
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import (
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import ARP, Ether

from ptf_harness.base import CONTROLLER_ELECTION_ID, LosslessTest
from ptf_harness.packets import routed

H1_MAC = "02:00:00:00:01:02"
NEW_MAC = "02:00:00:00:01:77"
ROUTER_V6 = "fc00:1::1"  # Ethernet0's address in the suite's INTERFACE table
NEW_V6 = "fc00:1::77"


class ControllerTest(LosslessTest):
    """The controller runs for the test's duration."""

    def setUp(self) -> None:
        super().setUp()
        cmd = [sys.executable, "-m", "lossless_ctl.cli", "run", "--switch",
               self.params["grpc_addr"], "--pipeline", self.params["pipeline"],
               "--election-id", str(CONTROLLER_ELECTION_ID)]  # fmt: skip
        for c in self.params["configs"].split(","):
            cmd += ["--config", c]
        self.ctl = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.ctl_output = []
        assert self.ctl.stdout is not None
        for line in self.ctl.stdout:  # ready after the reconcile summary
            self.ctl_output.append(line)
            if line.startswith("written "):
                break
        else:
            self.fail("lossless-ctl run exited before serving:\n" + "".join(self.ctl_output))

    def tearDown(self) -> None:
        self.ctl.terminate()
        try:
            self.ctl.wait(10)
        except subprocess.TimeoutExpired:
            self.ctl.kill()
            self.ctl.wait()
        super().tearDown()

    def wait_frame(
        self,
        port: int,
        match: type,
        what: str,
        timeout: float = 5.0,
        op: int | None = None,
    ) -> Ether:
        """The first frame on `port` that has layer `match` (with that `op`, if given); others,
        e.g. replies to earlier requests, are listed if none does."""
        deadline = time.monotonic() + timeout
        seen = []
        while (left := deadline - time.monotonic()) > 0:
            got = self.receive(port, timeout=left)
            if got is None:
                break
            frame = Ether(got[1])
            if match in frame and (op is None or frame[match].op == op):
                return frame
            seen.append(frame.summary())
        wanted = match.__name__ + ("" if op is None else f" op {op}")
        self.fail(f"{what}: no {wanted} on port {port}; received {seen or 'nothing'}")
        raise AssertionError

    def forwarded_to(self, pkt: object, port: int, mac: str, what: str) -> None:
        """`pkt`, sent from the spine, reaches `port` routed to `mac` within 5 s (the
        controller installs what it learned asynchronously)."""
        want = bytes(routed(pkt, self.cfg.router_mac, mac))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            self.send(3, pkt)
            got = self.receive(port, timeout=0.2)
            if got is not None and got[1] == want:
                return
        self.fail(f"{what}: not forwarded to {mac} on port {port} within 5 s")


class NeighborReplyAndLearning(ControllerTest):
    def arp_from(self, mac: str, ip: str, target: str) -> object:
        return Ether(dst="ff:ff:ff:ff:ff:ff", src=mac) / ARP(op=1, hwsrc=mac, psrc=ip, pdst=target)

    def runTest(self) -> None:
        router = self.cfg.router_mac
        self.send(1, self.arp_from(H1_MAC, "10.1.0.2", "10.1.0.1"))
        reply = self.wait_frame(1, ARP, "ARP reply for the router address 10.1.0.1", op=2)
        self.assertEqual(
            (reply.dst, reply[ARP].hwsrc, reply[ARP].psrc, reply[ARP].hwdst, reply[ARP].pdst),
            (H1_MAC, router, "10.1.0.1", H1_MAC, "10.1.0.2"),
            "ARP reply (Ethernet dst, sender MAC/IP, target MAC/IP)",
        )
        # A new host announces itself by asking for the router: learned and installed.
        self.send(1, self.arp_from(NEW_MAC, "10.1.0.77", "10.1.0.1"))
        self.wait_frame(1, ARP, "ARP reply to the new host", op=2)
        pkt = (
            Ether(dst=router, src="02:00:00:00:03:01")
            / IP(src="20.9.9.9", dst="10.1.0.77", ttl=64)
            / UDP(sport=1, dport=2)
            / bytes(32)
        )
        self.forwarded_to(pkt, 1, NEW_MAC, "10.1.0.77 learned from its ARP request")
        # An unresolved host on a connected subnet is gleaned: the controller asks for it.
        self.drain(quiet=0.2)
        glean = pkt.copy()
        glean[IP].dst = "10.1.0.99"
        self.send(3, glean)
        request = self.wait_frame(1, ARP, "ARP request gleaning 10.1.0.99", op=1)
        self.assertEqual(
            (request[ARP].pdst, request[ARP].psrc, request[ARP].hwsrc),
            ("10.1.0.99", "10.1.0.1", router),
            "glean ARP request (target, sender IP/MAC)",
        )


def solicited_node(ip: str) -> tuple[str, str]:
    """RFC 4291 2.7.1: the solicited-node group of `ip` and its RFC 2464 MAC."""
    low = ipaddress.IPv6Address(ip).packed[-3:]
    group = ipaddress.IPv6Address(bytes.fromhex("ff02" + "00" * 9 + "01ff") + low)
    return str(group), "33:33:" + ":".join(f"{b:02x}" for b in group.packed[-4:])


class NdReplyAndLearning(ControllerTest):
    """IPv6: an NS for the router's address is answered with a solicited NA (router and
    solicited flags, our MAC as target link-layer address), its sender is learned and routed
    to, and an unresolved host is gleaned with an NS to its solicited-node group."""

    def ns_from(self, mac: str, ip: str, target: str) -> object:
        group, group_mac = solicited_node(target)
        return (
            Ether(dst=group_mac, src=mac)
            / IPv6(src=ip, dst=group, hlim=255)
            / ICMPv6ND_NS(tgt=target)
            / ICMPv6NDOptSrcLLAddr(lladdr=mac)
        )

    def check_na(self, mac: str, ip: str) -> None:
        router = self.cfg.router_mac
        na = self.wait_frame(1, ICMPv6ND_NA, f"NA to {ip} for the router address {ROUTER_V6}")
        self.assertEqual(
            (na.dst, na.src, na[IPv6].src, na[IPv6].dst, na[IPv6].hlim, na[ICMPv6ND_NA].tgt),
            (mac, router, ROUTER_V6, ip, 255, ROUTER_V6),
            "NA (Ethernet dst/src, IPv6 src/dst, hop limit 255 (RFC 4861 7.1.2), target)",
        )
        self.assertEqual(
            (na[ICMPv6ND_NA].R, na[ICMPv6ND_NA].S),
            (1, 1),
            "NA flags: Router (we route), Solicited (an answer to an NS)",
        )
        self.assertIn(ICMPv6NDOptDstLLAddr, na, "NA carries the target link-layer address")
        self.assertEqual(na[ICMPv6NDOptDstLLAddr].lladdr, router, "target link-layer address")

    def runTest(self) -> None:
        self.send(1, self.ns_from(H1_MAC, "fc00:1::2", ROUTER_V6))
        self.check_na(H1_MAC, "fc00:1::2")
        # A new host asks for the router: answered, learned and installed.
        self.send(1, self.ns_from(NEW_MAC, NEW_V6, ROUTER_V6))
        self.check_na(NEW_MAC, NEW_V6)
        pkt = (
            Ether(dst=self.cfg.router_mac, src="02:00:00:00:03:01")
            / IPv6(src="2001:db8:9::9", dst=NEW_V6, hlim=64)
            / UDP(sport=1, dport=2)
            / bytes(32)
        )
        self.forwarded_to(pkt, 1, NEW_MAC, f"{NEW_V6} learned from its NS")
        # An unresolved host on the connected /64 is gleaned with a multicast NS.
        self.drain(quiet=0.2)
        glean = pkt.copy()
        glean[IPv6].dst = "fc00:1::99"
        self.send(3, glean)
        ns = self.wait_frame(1, ICMPv6ND_NS, "NS gleaning fc00:1::99")
        group, group_mac = solicited_node("fc00:1::99")
        self.assertEqual(
            (ns.dst, ns.src, ns[IPv6].dst, ns[IPv6].hlim, ns[ICMPv6ND_NS].tgt),
            (group_mac, self.cfg.router_mac, group, 255, "fc00:1::99"),
            "glean NS (to the solicited-node group and its MAC, hop limit 255, target)",
        )
        self.assertIn(ICMPv6NDOptSrcLLAddr, ns, "NS carries our source link-layer address")
        self.assertEqual(ns[ICMPv6NDOptSrcLLAddr].lladdr, self.cfg.router_mac)
