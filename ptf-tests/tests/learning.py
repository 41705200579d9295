"""ARP reply and neighbour learning by the controller (`lossless-ctl run`): the pipeline punts,
the controller answers for router addresses, learns senders and installs them, and gleans
unresolved hosts with an ARP request.

The controller runs as a process in the PTF namespace (election id above the tests' so it is
primary), is ready once it prints its reconcile summary, and is stopped by its PID.
"""

from __future__ import annotations

import subprocess
import sys
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from ptf_harness.base import LosslessTest
from ptf_harness.packets import routed

H1_MAC = "02:00:00:00:01:02"
NEW_MAC = "02:00:00:00:01:77"


class NeighborReplyAndLearning(LosslessTest):
    def setUp(self) -> None:
        super().setUp()
        cmd = [sys.executable, "-m", "lossless_ctl.cli", "run", "--switch",
               self.params["grpc_addr"], "--pipeline", self.params["pipeline"],
               "--election-id", "200"]  # fmt: skip
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

    def arp_from(self, mac: str, ip: str, target: str) -> object:
        return Ether(dst="ff:ff:ff:ff:ff:ff", src=mac) / ARP(op=1, hwsrc=mac, psrc=ip, pdst=target)

    def wait_arp(self, port: int, op: int, what: str, timeout: float = 5.0) -> ARP:
        deadline = time.monotonic() + timeout
        seen = []
        while (left := deadline - time.monotonic()) > 0:
            got = self.receive(port, timeout=left)
            if got is None:
                break
            frame = Ether(got[1])
            if ARP in frame and frame[ARP].op == op:
                return frame
            seen.append(frame.summary())
        self.fail(f"{what}: no ARP op {op} on port {port}; received {seen or 'nothing'}")
        raise AssertionError

    def runTest(self) -> None:
        router = self.cfg.router_mac
        self.send(1, self.arp_from(H1_MAC, "10.1.0.2", "10.1.0.1"))
        reply = self.wait_arp(1, 2, "ARP reply for the router address 10.1.0.1")
        self.assertEqual(
            (reply.dst, reply[ARP].hwsrc, reply[ARP].psrc, reply[ARP].hwdst, reply[ARP].pdst),
            (H1_MAC, router, "10.1.0.1", H1_MAC, "10.1.0.2"),
            "ARP reply (Ethernet dst, sender MAC/IP, target MAC/IP)",
        )
        # A new host announces itself by asking for the router: learned and installed.
        self.send(1, self.arp_from(NEW_MAC, "10.1.0.77", "10.1.0.1"))
        self.wait_arp(1, 2, "ARP reply to the new host")
        pkt = (
            Ether(dst=router, src="02:00:00:00:03:01")
            / IP(src="20.9.9.9", dst="10.1.0.77", ttl=64)
            / UDP(sport=1, dport=2)
            / bytes(32)
        )
        want = bytes(routed(pkt, router, NEW_MAC))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            self.send(3, pkt)
            got = self.receive(1, timeout=0.2)
            if got is not None and got[1] == want:
                break
        else:
            self.fail("10.1.0.77 learned from its ARP request is not forwarded to within 5 s")
        # An unresolved host on a connected subnet is gleaned: the controller asks for it.
        self.drain(quiet=0.2)
        glean = pkt.copy()
        glean[IP].dst = "10.1.0.99"
        self.send(3, glean)
        request = self.wait_arp(1, 1, "ARP request gleaning 10.1.0.99")
        self.assertEqual(
            (request[ARP].pdst, request[ARP].psrc, request[ARP].hwsrc),
            ("10.1.0.99", "10.1.0.1", router),
            "glean ARP request (target, sender IP/MAC)",
        )
