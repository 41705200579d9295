"""PFC generation (XOFF at the threshold, exact bytes; timed refresh; XON), headroom, lossy drops,
PFC reception and the PFC watchdog.

Packets from host h1 (port 1, 1G, lossless PG 3 for DSCP 3) are routed to uplink port 3
(10 Mb/s). The test holds them in the switch by sending PFC (or PAUSE) into port 3 itself: at
10 Mb/s one 65535-quanta pause lasts 3.36 s, far longer than the test needs, and a quanta-0
frame releases it. Thresholds come from the suite's BUFFER_PROFILE through p4src/README.md's
formulas, never from the switch.
"""

from __future__ import annotations

import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ptf_harness.base import DROP_LOSSLESS_VIOLATION, DROP_LOSSY_THRESHOLD, LosslessTest
from ptf_harness.packets import pause_frame, pause_time_s, pfc_frame, routed

FRAME = 1000  # bytes per data frame, as the switch counts them (no FCS)
PEER_MAC = "02:00:00:00:03:01"


def data(dscp: int, seq: int, dst: str = "10.3.0.1") -> object:
    pkt = (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:01:02")
        / IP(src="10.1.0.2", dst=dst, tos=dscp << 2, id=seq, ttl=64)
        / UDP(sport=4000, dport=4001)
    )
    return pkt / bytes(FRAME - len(pkt))


def reset_accounting(test: LosslessTest) -> None:
    """Zero the pipeline's byte counts this module uses. Packets a traffic manager drops (the
    watchdog's drop action) never reach egress, so their bytes are never released: v1model
    accounting cannot see them. Tests start from empty buffers instead of inheriting that."""
    for name, index in (
        ("pg_bytes", 1 * 8 + 3),
        ("pg_bytes", 1 * 8 + 1),
        ("pg_headroom_bytes", 1 * 8 + 3),
        ("queue_bytes", 3 * 8 + 3),
        ("queue_bytes", 4 * 8 + 3),
        ("shared_pool_used", 0),
    ):
        test.register_write(name, index, 0)


class PfcBase(LosslessTest):
    def setUp(self) -> None:
        super().setUp()
        self.pg_index = 1 * 8 + 3  # (ingress port 1, PG 3)
        self.th = self.cfg.lossless()
        _ip, self.peer_mac = self.cfg.host(3)
        reset_accounting(self)

    def tearDown(self) -> None:
        # Whatever happened, release port 3 so later tests find it running.
        self.dataplane.send(0, 3, pfc_frame(PEER_MAC, {3: 0, 4: 0}))
        self.dataplane.send(0, 3, pause_frame(PEER_MAC, 0))
        self.drain()
        super().tearDown()

    def hold(self, priority: int | None) -> None:
        """Pause port 3's queue for `priority` (None: the whole port with 802.3x PAUSE), and
        wait until the switch reports it paused: the frame and the data sent next into port 1
        are received by different threads, in no set order."""
        if priority is None:
            self.dataplane.send(0, 3, pause_frame(PEER_MAC, 0xFFFF))
            self.wait_paused(3, None, "802.3x PAUSE into port 3")
        else:
            self.dataplane.send(0, 3, pfc_frame(PEER_MAC, {priority: 0xFFFF}))
            queue = self.cfg.pfc_queue(3, priority)
            self.wait_paused(3, [queue], f"PFC XOFF for priority {priority} into port 3")

    def release(self, priority: int | None) -> None:
        frame = pause_frame(PEER_MAC, 0) if priority is None else pfc_frame(PEER_MAC, {priority: 0})
        self.dataplane.send(0, 3, frame)

    def routed(self, pkt: object) -> bytes:
        return bytes(routed(pkt, self.cfg.router_mac, self.peer_mac))

    def xoff(self) -> bytes:
        # Class enable = the priorities whose TC maps to PG 3: TC 3 only; quanta 65535.
        return pfc_frame(self.cfg.router_mac, {3: 0xFFFF})

    def xon(self) -> bytes:
        return pfc_frame(self.cfg.router_mac, {3: 0})


class XoffAtThresholdHeadroomXon(PfcBase):
    """XOFF exactly when the PG's occupancy first exceeds xoff (size), headroom admits up to
    size + xoff with no lossless drop, the next packet is a counted violation, and XON goes out
    once the occupancy falls below xon; counters agree with the frames seen."""

    def runTest(self) -> None:
        below = self.th["xoff"] // FRAME  # packets that do not yet exceed xoff
        headroom = self.th["limit"] // FRAME - below  # packets admitted above xoff
        idx = self.pg_index
        before = {
            "xoff": self.counter("xoff_transitions", idx)[0],
            "xon": self.counter("xon_transitions", idx)[0],
            "admits": self.counter("headroom_admits", idx)[0],
            "violations": self.counter("lossless_violations", idx)[0],
            "drops": self.counter("drop_reasons", DROP_LOSSLESS_VIOLATION)[0],
            "pfc_sent": self.counter("pfc_sent", 1 * 8 + 3)[0],
        }
        self.hold(3)
        sent = []
        for i in range(below):
            sent.append(data(3, i))
            self.send(1, sent[-1])
        self.expect_nothing(
            f"{below} x {FRAME} B = {below * FRAME} B is not above xoff {self.th['xoff']}: "
            "no PFC yet, and port 3 is paused"
        )
        sent.append(data(3, below))
        self.send(1, sent[-1])
        self.expect(1, self.xoff(), f"XOFF once PG 3 holds {(below + 1) * FRAME} B")
        for i in range(below + 1, below + headroom):
            sent.append(data(3, i))
            self.send(1, sent[-1])
        beyond = data(3, 999)
        self.send(1, beyond)  # limit + FRAME: beyond the headroom
        # 0.3 s of what comes, not "until quiet": the switch renews the XOFF every half pause.
        frames = self.drain(quiet=0.3, limit=0.3)
        extra = [f for p, f in frames if p == 1]
        self.assertTrue(
            all(f == self.xoff() for f in extra),
            "while paused, port 1 may only repeat the XOFF (refresh), got "
            + ", ".join(f.hex() for f in extra if f != self.xoff()),
        )
        self.assertEqual([f for p, f in frames if p != 1], [], "port 3 is paused: nothing leaves")
        self.release(3)
        out = self.drain(quiet=0.5)
        delivered = [f for p, f in out if p == 3]
        to_host = [f for p, f in out if p == 1]
        self.assertEqual(
            [len(f) for f in delivered],
            [FRAME] * len(sent),
            f"all {len(sent)} admitted packets (up to the headroom) must leave port 3 after XON",
        )
        for pkt, got in zip(sent, delivered, strict=True):
            self.assertEqual(got, self.routed(pkt), f"packet id {pkt[IP].id} routed intact")
        self.assertEqual(
            [f for f in to_host if f != self.xoff()],
            [self.xon()],
            "exactly one XON (class enable 0x08, timer 0) once PG 3 drains below xon",
        )
        after = {
            "xoff": self.counter("xoff_transitions", idx)[0],
            "xon": self.counter("xon_transitions", idx)[0],
            "admits": self.counter("headroom_admits", idx)[0],
            "violations": self.counter("lossless_violations", idx)[0],
            "drops": self.counter("drop_reasons", DROP_LOSSLESS_VIOLATION)[0],
            "pfc_sent": self.counter("pfc_sent", 1 * 8 + 3)[0],
        }
        pfc_seen = 1 + len(extra) + len(to_host)
        self.assertEqual(
            {k: after[k] - before[k] for k in after},
            {
                "xoff": 1,
                "xon": 1,
                "admits": headroom,
                "violations": 1,
                "drops": 1,
                "pfc_sent": pfc_seen,
            },
            "counter deltas (headroom_admits = packets above xoff, one violation beyond "
            f"size + xoff = {self.th['limit']} B, pfc_sent = PFC frames seen on port 1)",
        )


class XoffRefresh(PfcBase):
    """While the PG stays above xon with nothing arriving, the switch renews the XOFF about
    every half pause (its packet generator: p4src/README.md, "Timed refresh"), so the sender's
    65535 quanta at port 1's rate never run out; one XON once the PG drains."""

    def runTest(self) -> None:
        pause_s = pause_time_s(0xFFFF, self.cfg.port_bps[1])
        below = self.th["xoff"] // FRAME
        self.hold(3)
        for i in range(below + 1):
            self.send(1, data(3, i))
        self.expect(1, self.xoff(), "first XOFF")
        # Ten pause times with no packet sent: a renewal every half pause gives 20; fewer than
        # 10 would leave the sender unpaused for part of the window.
        window = 10 * pause_s
        frames = self.drain(quiet=window, limit=window)
        self.assertEqual(
            {(p, f) for p, f in frames}, {(1, self.xoff())}, "only the renewed XOFF, on port 1"
        )
        renewals = len(frames)
        self.assertGreaterEqual(
            renewals,
            10,
            f"{renewals} XOFF renewals in {window * 1e3:.0f} ms without arrivals; one per "
            f"pause ({pause_s * 1e3:.1f} ms) at least",
        )
        self.release(3)
        self.expect(1, self.xon(), "one XON once PG 3 drains")


class LossyDropAboveThreshold(PfcBase):
    """A lossy PG (DSCP 10 -> TC 1 -> PG 1, static_th) drops what exceeds its threshold, never
    pauses, and counts the drops."""

    def runTest(self) -> None:
        threshold = self.cfg.profile("pg_lossy_ptf")["static_th"]
        admitted = threshold // FRAME
        extra = 3
        before = self.counter("drop_reasons", DROP_LOSSY_THRESHOLD)[0]
        self.hold(None)
        sent = [data(10, i) for i in range(admitted + extra)]
        for pkt in sent:
            self.send(1, pkt)
        self.expect_nothing("port 3 paused; a lossy PG sends no PFC", timeout=0.3)
        self.release(None)
        out = self.drain(quiet=0.5)
        ids = {self.routed(p): p[IP].id for p in sent}
        self.assertEqual(
            [(port, ids.get(f, "?")) for port, f in out],
            [(3, p[IP].id) for p in sent[:admitted]],
            f"(port, IP id) of what left: the first {admitted} packets ({admitted * FRAME} B <= "
            f"static_th {threshold}) leave port 3 in order, the other {extra} are dropped, and "
            "nothing goes to port 1",
        )
        dropped = self.counter("drop_reasons", DROP_LOSSY_THRESHOLD)[0] - before
        self.assertEqual(dropped, extra, "drop_reasons[LOSSY_THRESHOLD]")


class PfcReceptionPausesEgress(PfcBase):
    """A PFC frame for priority 3 into port 3 holds queue 3 only: DSCP 0 traffic still leaves,
    DSCP 3 waits until the XON."""

    def runTest(self) -> None:
        self.hold(3)
        lossless, lossy = data(3, 1), data(0, 2)
        self.send(1, lossless)
        self.send(1, lossy)
        self.expect(3, self.routed(lossy), "queue 0 is not paused by priority 3")
        self.expect_nothing("queue 3 is paused for 65535 quanta", timeout=0.5)
        self.release(3)
        self.expect(3, self.routed(lossless), "queue 3 resumes on XON")


class PfcWatchdogStorm(LosslessTest):
    """Port 4 has pfcwd (action drop, detection 200 ms, restoration 400 ms): a queue paused
    with packets for longer than detection is stormed, its packets dropped; an XON does not
    end the storm (restoration needs calm time without XOFF), after which it forwards again."""

    def runTest(self) -> None:
        reset_accounting(self)
        wd = self.cfg.tables["PFC_WD"]["Ethernet12"]
        detection = int(wd["detection_time"]) / 1000
        restoration = int(wd["restoration_time"]) / 1000
        peer = "02:00:00:00:04:01"
        _ip, mac = self.cfg.host(4)
        stuck = data(3, 1, dst="10.4.0.1")
        self.dataplane.send(0, 4, pfc_frame(peer, {3: 0xFFFF}))
        self.wait_paused(4, [self.cfg.pfc_queue(4, 3)], "PFC XOFF for priority 3 into port 4")
        self.send(1, stuck)
        end = time.monotonic() + detection * 3
        while time.monotonic() < end:  # the storm: keep refreshing the pause
            self.dataplane.send(0, 4, pfc_frame(peer, {3: 0xFFFF}))
            time.sleep(0.1)
        during = data(3, 2, dst="10.4.0.1")
        self.send(1, during)
        self.dataplane.send(0, 4, pfc_frame(peer, {3: 0}))
        self.expect_nothing(
            "stormed queue with action drop: the held packet and later arrivals are dropped, "
            "also right after the XON",
            timeout=min(0.3, restoration / 2),
        )
        deadline = time.monotonic() + restoration * 5
        probe_id = 10
        while time.monotonic() < deadline:
            probe = data(3, probe_id, dst="10.4.0.1")
            self.send(1, probe)
            got = self.receive(timeout=0.1)
            if got is not None:
                self.assertEqual(
                    got, (4, bytes(routed(probe, self.cfg.router_mac, mac))), "restored queue"
                )
                return
            probe_id += 1
        self.fail(f"queue 3 of port 4 not restored within {restoration * 5:.1f} s of the XON")
