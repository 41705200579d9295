"""Source Flow Control: signal generation at the congestion point, the public reference's
deduplication, and conversion to PFC at the source ToR only (p4src/README.md, "Source Flow
Control").

Queue depth is set exactly by writing the pipeline's `queue_bytes` for (host port, queue 3)
(over P4Runtime; on bmv2 through its runtime CLI, ptf-tests/README.md, "Against bmv2").
The expected pause is the README's: duration_us = min(65535, (depth - target) x
us_per_byte_q24 >> 24) with us_per_byte_q24 = round(2^24 x 8e6 / port bps), quanta =
min(65535, ceil(duration_us x port bps / 512e6)) (pause quanta per us in Q16.16, rounded up).
Expected SFC messages are built field by field by `ptf_harness.packets.sfc_message` from the
public reference's header (`sfc_pause_h`, a scapy Packet there) and its rules for the fields.
"""

from __future__ import annotations

import time

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ptf_harness.base import LosslessTest
from ptf_harness.packets import SfcPause, pfc_frame, routed, sfc_message

ROCEV2 = 4791
SPINE_MAC = "02:00:00:00:03:01"
H1_MAC = "02:00:00:00:01:02"
BTH = bytes([0x0A, 0x40, 0xFF, 0xFF, 0, 0, 0, 0x11, 0x80, 0, 0, 0x01])  # RDMA WRITE, QP 0x11


def duration_us(depth: int, target: int, bps: int) -> int:
    q24 = round((1 << 24) * 8_000_000 / bps)
    return min(0xFFFF, ((depth - target) * q24) >> 24)


def quanta(duration: int, bps: int) -> int:
    return min(0xFFFF, -(-duration * bps // 512_000_000))


class SfcBase(LosslessTest):
    def setUp(self) -> None:
        super().setUp()
        self.sfc = self.cfg.sfc()
        self.depth = self.sfc["threshold"] + 50_000
        self.touched: list[int] = []

    def tearDown(self) -> None:
        for index in self.touched:
            self.register_write("queue_bytes", index, 0)
        super().tearDown()

    def congest(self, port: int, queue: int = 3) -> None:
        index = port * 8 + queue
        self.touched.append(index)
        self.register_write("queue_bytes", index, self.depth)

    def expect_both(self, wanted: list[tuple[int, object, str]], timeout: float = 2.0) -> None:
        """Wait for every (port, frame, what). The data packet and the frame its signal
        generates leave different ports from one ingress event, in no defined order, so
        expecting them one after the other would discard whichever comes first."""
        missing = [(port, bytes(frame), what) for port, frame, what in wanted]
        seen: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while missing and (left := deadline - time.monotonic()) > 0:
            got = self.receive(timeout=left)
            if got is None:
                break
            match = next((m for m in missing if (m[0], m[1]) == got), None)
            if match is None:
                seen.append(got)
            else:
                missing.remove(match)
        if missing:
            port, want, what = missing[0]
            self.fail(self._explain(f"{what}: expected on port {port}", port, want, seen))

    def roce(self, src_mac: str, src: str, dst: str, seq: int, dscp: int = 3) -> object:
        """RoCEv2 of `dscp` (3 and 4: TC and queue 3 and 4, lossless), Not-ECT."""
        if ":" in src:
            l3 = IPv6(src=src, dst=dst, tc=dscp << 2, fl=seq, hlim=64)
        else:
            l3 = IP(src=src, dst=dst, tos=dscp << 2, id=seq, flags="DF", ttl=64)
        return (
            Ether(dst=self.cfg.router_mac, src=src_mac)
            / l3
            / UDP(sport=49152 + seq, dport=ROCEV2, chksum=0)
            / Raw(BTH + bytes(64))
        )


class SfcDedupByFlowAndEpoch(SfcBase):
    """The public reference's deduplication (the default) with min_interval_us as its epoch:
    traffic from the spine (port 3) into h1's congested queue is forwarded and one SFC message,
    byte-identical to the reference's, goes back out of port 3 to the source; repeats of the
    same (source, destination, DSCP) within the epoch are suppressed (counted); the same
    source toward another destination (h2), or with another DSCP (4, queue 4), is signalled;
    once more than the window has passed the next epoch signals the first flow again."""

    def signal(self, pkt: object, host: int, want: bool | None, what: str) -> None:
        """Send `pkt` from the spine toward host port `host`: the data packet is forwarded, and a
        message comes back when `want` (none when False; either when None)."""
        _ip, mac = self.cfg.host(host)
        dur = duration_us(self.depth, self.sfc["target"], self.cfg.port_bps[host])
        data = (host, routed(pkt, self.cfg.router_mac, mac), f"{what}: the data packet")
        message = (3, sfc_message(pkt, self.sfc["dscp"], dur), f"{what}: the SFC message")
        self.send(3, pkt)
        if want:
            self.expect_both([data, message])
            return
        got = self.receive(timeout=2.0)
        if want is None and got is not None and got[0] == 3:
            got = self.receive(timeout=2.0)
        self.assertEqual(got, (host, bytes(data[1])), f"{what}: only the data packet")

    def runTest(self) -> None:
        self.congest(1)
        self.congest(1, queue=4)
        self.congest(2)
        h1, _ = self.cfg.host(1)
        h2, _ = self.cfg.host(2)
        window = self.sfc["interval_us"] / 1e6
        src = "20.9.9.9"
        counters = ("sfc_triggered", "sfc_suppressed", "sfc_sent")
        before = {name: self.counter(name, 3)[0] for name in counters}
        # Every epoch began at a packet; a window after the last one, the next packet
        # begins a new epoch, with an empty filter.
        time.sleep(window * 1.2)
        start = time.monotonic()
        self.signal(self.roce(SPINE_MAC, src, h1, 1), 1, True, "first packet of (src, h1, 3)")
        repeats = 3
        for i in range(repeats):
            within = time.monotonic() - start < window
            self.signal(
                self.roce(SPINE_MAC, src, h1, 2 + i), 1, False if within else None,
                f"repeat {i + 1} of (src, h1, 3) within the epoch",
            )  # fmt: skip
        self.signal(self.roce(SPINE_MAC, src, h2, 5), 2, True, "the same source toward h2")
        self.signal(
            self.roce(SPINE_MAC, src, h1, 6, dscp=4), 1, True, "the same source to h1, DSCP 4"
        )
        within = time.monotonic() - start < window
        after = {name: self.counter(name, 3)[0] for name in counters}
        if within:  # a machine too slow to send 6 packets in the window proves nothing here
            self.assertEqual(
                {k: after[k] - before[k] for k in after},
                {"sfc_triggered": 3, "sfc_suppressed": repeats, "sfc_sent": 3},
                "SFC counters on port 3",
            )
        time.sleep(window * 1.2)
        self.signal(self.roce(SPINE_MAC, src, h1, 7), 1, True, "(src, h1, 3) in the next epoch")
        self.signal(self.roce(SPINE_MAC, src, h1, 8), 1, None, "and its repeat")


class SfcIpv6Message(SfcBase):
    """IPv6 RoCEv2 from the spine into h1's congested queue: the data is forwarded and the
    message to the IPv6 source is IPv6 (the reference's payload, UDP checksum over the IPv6
    pseudo-header), byte for byte."""

    def runTest(self) -> None:
        self.congest(1)
        h1, h1_mac = self.cfg.host(1, family=6)
        dur = duration_us(self.depth, self.sfc["target"], self.cfg.port_bps[1])
        pkt = self.roce(SPINE_MAC, "2001:db8:99::9", h1, 1)
        self.send(3, pkt)
        self.expect_both(
            [
                (1, routed(pkt, self.cfg.router_mac, h1_mac), "the IPv6 data packet"),
                (3, sfc_message(pkt, self.sfc["dscp"], dur), "IPv6 SFC message to its source"),
            ]
        )


class SfcSourceOnOwnHostPort(SfcBase):
    """The source is behind our own host-facing port 1: the signal becomes a PFC frame out of
    port 1 for the packet's TC, quanta from the duration at port 1's rate."""

    def runTest(self) -> None:
        self.congest(2)
        _ip, h2_mac = self.cfg.host(2)
        dur = duration_us(self.depth, self.sfc["target"], self.cfg.port_bps[2])
        before = self.counter("sfc_converted", 1)[0]
        pkt = self.roce(H1_MAC, "10.1.0.2", "10.2.0.2", 1)
        self.send(1, pkt)
        self.expect_both(
            [
                (2, routed(pkt, self.cfg.router_mac, h2_mac), "the data packet"),
                (
                    1,
                    pfc_frame(self.cfg.router_mac, {3: quanta(dur, self.cfg.port_bps[1])}),
                    f"PFC toward h1 for priority 3 ({dur} us)",
                ),
            ]
        )
        self.assertEqual(self.counter("sfc_converted", 1)[0] - before, 1, "sfc_converted[1]")


class SfcConversionAtSourceTorOnly(SfcBase):
    """A received SFC message for a host behind a host-facing port becomes PFC toward it
    (priority from the host ports' DSCP map); one for a destination behind an uplink is routed
    on unchanged apart from the hop; the message is never forwarded to the host."""

    def message(self, dst: str, data_dscp: int, duration: int) -> object:
        """A message as the reference sends it (version 0, the data's source port), IPv6 with
        its UDP checksum for an IPv6 destination."""
        if ":" in dst:
            l3 = IPv6(src="2001:db8:99::9", dst=dst, tc=self.sfc["dscp"] << 2, hlim=64)
        else:
            l3 = IP(src="20.9.9.9", dst=dst, tos=self.sfc["dscp"] << 2, ttl=64)
        return (
            Ether(dst=self.cfg.router_mac, src=SPINE_MAC)
            / l3
            / UDP(sport=49152, dport=1674, chksum=None if ":" in dst else 0)
            / SfcPause(dscp=data_dscp, duration_us=duration)
        )

    def runTest(self) -> None:
        before = {
            "received": self.counter("sfc_received", 3)[0],
            "converted": self.counter("sfc_converted", 1)[0],
        }
        to_host = self.message("10.1.0.2", 3, 500)
        self.send(3, to_host)
        self.expect(
            1,
            pfc_frame(self.cfg.router_mac, {3: quanta(500, self.cfg.port_bps[1])}),
            "SFC for h1 (DSCP 3 -> priority 3, 500 us) converted to PFC at its ToR",
        )
        h1_v6, _mac = self.cfg.host(1, family=6)
        self.send(3, self.message(h1_v6, 3, 500))
        self.expect(
            1,
            pfc_frame(self.cfg.router_mac, {3: quanta(500, self.cfg.port_bps[1])}),
            "IPv6 SFC for h1 converted to PFC at its ToR",
        )
        _ip, s2_mac = self.cfg.host(4)
        transit = self.message("20.1.9.9", 3, 500)
        self.send(3, transit)
        self.expect(4, routed(transit, self.cfg.router_mac, s2_mac), "transit SFC is routed")
        unmapped = self.message("10.1.0.2", 0, 500)  # DSCP 0 is not a lossless class
        self.send(3, unmapped)
        self.expect_nothing("SFC for a non-PFC DSCP toward a host is dropped, not forwarded")
        after = {
            "received": self.counter("sfc_received", 3)[0],
            "converted": self.counter("sfc_converted", 1)[0],
        }
        self.assertEqual(
            {k: after[k] - before[k] for k in after},
            {"received": 4, "converted": 2},
            "sfc_received[3] counts every message, sfc_converted[1] the conversion",
        )
