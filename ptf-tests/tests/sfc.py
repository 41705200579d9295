"""Source Flow Control: signal generation at the congestion point, its rate limit, and
conversion to PFC at the source ToR only (p4src/README.md, "Source Flow Control").

Queue depth is set exactly by writing the pipeline's `queue_bytes` for (host port, queue 3).
The expected pause is the README's: duration_us = min(65535, (depth - target) x
us_per_byte_q24 >> 24) with us_per_byte_q24 = round(2^24 x 8e6 / port bps), quanta =
min(65535, ceil(duration_us x port bps / 512e6)) (pause quanta per us in Q16.16, rounded up).
"""

from __future__ import annotations

import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ptf_harness.base import LosslessTest
from ptf_harness.packets import pfc_frame, routed, sfc_message

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

    def congest(self, port: int) -> None:
        index = port * 8 + 3
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

    def roce(self, src_mac: str, src: str, dst: str, seq: int) -> object:
        return (
            Ether(dst=self.cfg.router_mac, src=src_mac)
            / IP(src=src, dst=dst, tos=3 << 2, id=seq, ttl=64)  # DSCP 3, Not-ECT
            / UDP(sport=49152 + seq, dport=ROCEV2, chksum=0)
            / Raw(BTH + bytes(64))
        )


class SfcSignalAndRateLimit(SfcBase):
    """Traffic from the spine (port 3) into h1's congested queue: the data is forwarded, and one
    SFC message goes back out of port 3 to the source; more packets within min_interval_us
    are not signalled again (counted as suppressed); after the interval, a new signal."""

    def runTest(self) -> None:
        self.congest(1)
        _ip, h1_mac = self.cfg.host(1)
        bps = self.cfg.port_bps[1]
        dur = duration_us(self.depth, self.sfc["target"], bps)
        before = {
            "triggered": self.counter("sfc_triggered", 3)[0],
            "suppressed": self.counter("sfc_suppressed", 3)[0],
            "sent": self.counter("sfc_sent", 3)[0],
        }
        interval = self.sfc["interval_us"] / 1e6
        first = self.roce(SPINE_MAC, "20.9.9.9", "10.1.0.2", 1)
        # Taken before the first packet enters the switch, so `now - start` bounds the switch's
        # time between the first signal and any later packet from above: while it is below the
        # interval, a second signal is a failure; after it, the machine was too slow to tell.
        start = time.monotonic()
        self.send(3, first)
        self.expect_both(
            [
                (1, routed(first, self.cfg.router_mac, h1_mac), "the data packet"),
                (
                    3,
                    sfc_message(first, self.sfc["dscp"], dur),
                    f"SFC message to 20.9.9.9 (duration {dur} us for depth {self.depth} B)",
                ),
            ]
        )
        repeats = 4
        within = True
        for i in range(repeats):
            pkt = self.roce(SPINE_MAC, "20.9.9.9", "10.1.0.2", 2 + i)
            self.send(3, pkt)
            want = (1, bytes(routed(pkt, self.cfg.router_mac, h1_mac)))
            got = self.receive(timeout=2.0)
            if got is not None and got != want and got[0] == 3:
                # A signal: wrong within the interval, allowed (and proving nothing) after it.
                self.assertGreaterEqual(
                    time.monotonic() - start, interval, f"second signal before packet {2 + i}"
                )
                within = False
                got = self.receive(timeout=2.0)
            self.assertEqual(got, want, f"data packet {2 + i}")
        within = within and time.monotonic() - start < interval
        if within:  # a machine too slow to send 4 packets in the interval proves nothing
            self.expect_nothing("no second signal within min_interval_us", timeout=0.1)
        else:
            self.drain(quiet=0.1)
        after = {
            "triggered": self.counter("sfc_triggered", 3)[0],
            "suppressed": self.counter("sfc_suppressed", 3)[0],
            "sent": self.counter("sfc_sent", 3)[0],
        }
        if within:  # a machine too slow to send 4 packets in the interval proves nothing
            self.assertEqual(
                {k: after[k] - before[k] for k in after},
                {"triggered": 1, "suppressed": repeats, "sent": 1},
                "SFC counters on port 3",
            )
        time.sleep(interval)
        late = self.roce(SPINE_MAC, "20.9.9.9", "10.1.0.2", 9)
        self.send(3, late)
        self.expect_both(
            [
                (1, routed(late, self.cfg.router_mac, h1_mac), "the data packet"),
                (3, sfc_message(late, self.sfc["dscp"], dur), "a new signal after the interval"),
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
        payload = bytes([1, data_dscp]) + duration.to_bytes(2, "big") + bytes(14)
        return (
            Ether(dst=self.cfg.router_mac, src=SPINE_MAC)
            / IP(src="20.9.9.9", dst=dst, tos=self.sfc["dscp"] << 2, ttl=64)
            / UDP(sport=1674, dport=1674, chksum=0)
            / Raw(payload)
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
            {"received": 3, "converted": 1},
            "sfc_received[3] counts every message, sfc_converted[1] the conversion",
        )
