"""Writes the pipeline's STF tests (p4src/tests/*.stf) with every expected frame built here,
independently of the P4 program: scapy for the data packets, `ptf_harness.packets` for the
802.1Qbb PFC frame and the SFC message (their layouts from the specifications and the public
SFC format, p4src/README.md), and the README's formulas for thresholds, durations and quanta.

    PYTHONPATH=ptf-tests python p4src/tests/gen_stf.py     # rewrites p4src/tests/*.stf

The STF files are committed; run them with `p4-stf build/p4/lossless.json p4src/tests/X.stf`.
Queue depth is preset with `register_write queue_bytes INDEX BYTES` (p4c's STF command, passed
to bmv2's CLI): each packet adds its length at admission and removes it in egress, so it
leaves exactly the preset depth behind, which is what ECN marking and SFC use.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from ptf_harness.packets import SfcPause, pfc_frame, sfc_message

HERE = Path(__file__).resolve().parent

ROUTER_MAC = "00:00:00:aa:00:01"
PORT_MAC = {1: "00:00:00:aa:00:01", 2: "00:00:00:aa:00:01", 3: "00:00:00:aa:00:01"}
HOST_MAC = {1: "02:00:00:00:01:02", 2: "02:00:00:00:02:02", 3: "02:00:00:00:03:01"}
# Port 1 and 2 lead to hosts 10.1.0.2 and 10.2.0.2; port 3 to a spine (20.0.0.0/8 behind it).
HOST_IP = {1: "10.1.0.2", 2: "10.2.0.2"}
PORT_BPS = {1: 25_000_000_000, 2: 25_000_000_000, 3: 100_000_000_000}
PORT_SESSION_BASE = 512
LOSSLESS_DSCP = 3  # -> TC 3 -> PG 3, queue 3 (SONiC's lossless class)
ROCEV2 = 4791
BTH = bytes([0x0A, 0x40, 0xFF, 0xFF, 0, 0, 0, 0x11, 0x80, 0, 0, 0x01])  # RDMA WRITE, QP 0x11

# WRED_PROFILE of the ECN tests (SONiC units: bytes and percent).
KMIN, KMAX, PMAX_PERCENT = 20_000, 80_000, 50
# SFC of the SFC tests: threshold 2 x Kmax (seed 003), target Kmin-ish, signal DSCP 48.
SFC_THRESHOLD, SFC_TARGET, SFC_SIGNAL_DSCP = 2 * KMAX, 20_000, 48


def mark_slope(percent: int, kmin: int, kmax: int) -> int:
    """p4src/README.md: mark_slope = Pmax x 2^32 / (Kmax - Kmin)."""
    return min(0xFFFFFFFF, percent * (1 << 32) // (100 * (kmax - kmin)))


def us_per_byte_q24(bps: int) -> int:
    return round((1 << 24) * 8_000_000 / bps)


def pause_quanta_per_us_q16(bps: int) -> int:
    """Pause quanta (512 bit times) per microsecond in Q16.16: bps x 2^16 / 512e6."""
    return bps * 128 // 1_000_000


def duration_us(depth: int, target: int, bps: int) -> int:
    return min(0xFFFF, ((depth - target) * us_per_byte_q24(bps)) >> 24)


def quanta(duration: int, bps: int) -> int:
    """802.1Qbb quanta covering `duration` us, rounded up, capped at the largest timer."""
    return min(0xFFFF, -(-duration * pause_quanta_per_us_q16(bps) // (1 << 16)))


def mac_int(mac: str) -> str:
    return "0x" + mac.replace(":", "")


def ip_int(ip: str) -> str:
    return "0x" + "".join(f"{int(b):02x}" for b in ip.split("."))


def hexs(frame: bytes) -> str:
    return frame.hex()


def queue_index(port: int, queue: int = 3) -> int:
    return port * 8 + queue


def routed(pkt: Ether, port: int) -> bytes:
    """`pkt` as the router sends it out of `port`: MACs rewritten, TTL - 1, checksum redone."""
    out = pkt.copy()
    out[Ether].src = PORT_MAC[port]
    out[Ether].dst = HOST_MAC[port]
    if IP in out:
        out[IP].ttl -= 1
        del out[IP].chksum
    else:
        out[IPv6].hlim -= 1
    return bytes(out)


def setup(host_facing: tuple[int, ...] = (1, 2), signal_interval_us: int = 0) -> list[str]:
    """Entries the controller would write for a three-port ToR: trust DSCP on every port,
    DSCP 3 -> TC 3 -> PG 3 / queue 3, routes to the two hosts and the spine, the port MACs,
    and one clone session per port for generated frames."""
    lines = [
        "# --- the controller's entries (lossless-ctl from config_db.json) ---",
        f"setdefault switch_config set_switch_config(shared_pool_bytes:1000000, "
        f"sfc_min_interval_us:{signal_interval_us})",
        f"add router_mac dst_mac:{mac_int(ROUTER_MAC)} NoAction()",
        f"add dscp_to_tc map:1 dscp:{LOSSLESS_DSCP} set_tc(tc:3)",
        "add tc_to_pg map:1 tc:3 set_pg(pg:3)",
        "add tc_to_queue map:1 tc:3 set_queue(queue:3)",
    ]
    for port in (1, 2, 3):
        lines += [
            f"add port_qos port:{port} set_port_qos(trust_dscp:1, dscp_to_tc_map:1, "
            f"dot1p_to_tc_map:0, tc_to_pg_map:1, tc_to_queue_map:1, default_tc:0)",
            f"add router_interface rif:{port} set_port_and_src_mac(port:{port}, "
            f"src_mac:{mac_int(PORT_MAC[port])})",
            f"add nexthop nexthop_id:{port} set_ip_nexthop(rif:{port}, neighbor_ip:{port})",
            f"add neighbor rif:{port} ip:{port} set_dst_mac(dst_mac:{mac_int(HOST_MAC[port])})",
            f"add egress_port port:{port} set_egress_port(mac:{mac_int(PORT_MAC[port])}, "
            f"sfc_host_facing:{int(port in host_facing)}, "
            f"pause_quanta_per_us_q16:{pause_quanta_per_us_q16(PORT_BPS[port])})",
            f"mirroring_add {PORT_SESSION_BASE + port} {port}",
        ]
    lines += [
        f"add ipv4_route dst:{ip_int('10.1.0.0')}/16 set_nexthop_id(nexthop_id:1)",
        f"add ipv4_route dst:{ip_int('10.2.0.0')}/16 set_nexthop_id(nexthop_id:2)",
        f"add ipv4_route dst:{ip_int('20.0.0.0')}/8 set_nexthop_id(nexthop_id:3)",
        "",
    ]
    return lines


def ecn_packet(seq: int, ecn: int, dst: str = "20.1.0.1") -> Ether:
    if ":" in dst:
        return (
            Ether(dst=ROUTER_MAC, src=HOST_MAC[1])
            / IPv6(src="2001:db8:1::2", dst=dst, tc=(LOSSLESS_DSCP << 2) | ecn, hlim=64)
            / UDP(sport=1000 + seq, dport=ROCEV2, chksum=0)
            / Raw(BTH + bytes(32))
        )
    return (
        Ether(dst=ROUTER_MAC, src=HOST_MAC[1])
        / IP(src=HOST_IP[1], dst=dst, tos=(LOSSLESS_DSCP << 2) | ecn, id=seq, ttl=64)
        / UDP(sport=1000 + seq, dport=ROCEV2, chksum=0)
        / Raw(BTH + bytes(32))
    )


def with_ecn(frame: bytes, ecn: int) -> bytes:
    """`frame` with its ECN field set (and the IPv4 header checksum redone)."""
    pkt = Ether(frame)
    if IP in pkt:
        pkt[IP].tos = (pkt[IP].tos & 0xFC) | ecn
        del pkt[IP].chksum
    else:
        pkt[IPv6].tc = (pkt[IPv6].tc & 0xFC) | ecn
    return bytes(pkt)


def wildcard_ecn(frame: bytes) -> str:
    """The frame's hex with the low nibble of the IPv4 ToS (ECN and 2 DSCP bits) and the
    header checksum as don't-cares: the pattern of a packet that may or may not be marked."""
    text = list(frame.hex())
    tos_low = 2 * (14 + 1) + 1
    text[tos_low] = "*"
    csum = 2 * (14 + 10)
    text[csum : csum + 4] = "****"
    return "".join(text)


def binomial_interval(n: int, p: float, alpha: float = 1e-6) -> tuple[int, int]:
    """The smallest symmetric-tail interval holding Binomial(n, p) with probability
    >= 1 - alpha (exact tails, summed from the probability mass function)."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    low, acc = 0, 0.0
    while acc + pmf[low] <= alpha / 2:
        acc += pmf[low]
        low += 1
    high, acc = n, 0.0
    while acc + pmf[high] <= alpha / 2:
        acc += pmf[high]
        high -= 1
    return low, high


def ecn_stf() -> list[str]:
    slope = mark_slope(PMAX_PERCENT, KMIN, KMAX)
    q3 = queue_index(3)
    q2 = queue_index(2)
    lines = [
        '# ECN marking with WRED_PROFILE semantics (p4src/README.md, "ECN marking"):',
        f"# Kmin {KMIN} B, Kmax {KMAX} B, Pmax {PMAX_PERCENT} % on (port 3, queue 3);",
        "# Pmax 0 % on (port 2, queue 3). Generated by gen_stf.py.",
        *setup(),
        f"add queue_wred port:3 queue:3 set_wred_ecn(min_threshold:{KMIN}, "
        f"max_threshold:{KMAX}, mark_slope:{slope})",
        f"add ipv6_route dst:0x{'20010db8002' + '0' * 21}/48 set_nexthop_id(nexthop_id:3)",
        f"add queue_wred port:2 queue:3 set_wred_ecn(min_threshold:{KMIN}, "
        f"max_threshold:{KMAX}, mark_slope:0)",
        "",
    ]
    seq = 0
    marks = {q3: 0, q2: 0}

    def one(
        depth: int, ecn: int, expect_ecn: int, why: str, queue: int = q3, v6: bool = False
    ) -> None:
        nonlocal seq, marks
        dst = "20.1.0.1" if queue == q3 else HOST_IP[2]
        if v6:
            dst = "2001:db8:20::1"
        port = 3 if queue == q3 else 2
        pkt = ecn_packet(seq, ecn, dst)
        seq += 1
        out = with_ecn(routed(pkt, port), expect_ecn)
        if expect_ecn != ecn:
            marks[queue] += 1
        lines.extend(
            [
                f"# {why}",
                f"register_write queue_bytes {queue} {depth}",
                f"packet 1 {hexs(bytes(pkt))}",
                f"expect {port} {hexs(out)} $",
            ]
        )

    one(KMIN // 2, 2, 2, "depth Kmin/2: ECT(0) not marked")
    one(KMIN, 2, 2, "depth Kmin: not marked (marking starts above Kmin)")
    one(KMAX, 2, 3, "depth Kmax: ECT(0) always marked CE, checksum updated")
    one(KMAX + 1, 2, 3, "depth Kmax + 1: marked")
    one(4 * KMAX, 1, 3, "depth 4 x Kmax: ECT(1) marked like ECT(0)")
    one(4 * KMAX, 0, 0, "depth 4 x Kmax: Not-ECT is never marked")
    one(4 * KMAX, 3, 3, "depth 4 x Kmax: CE stays CE (not counted as a new mark)")
    one(KMAX, 2, 3, "IPv6, depth Kmax: ECT(0) marked CE in the traffic class", v6=True)
    one(4 * KMAX, 0, 0, "IPv6, depth 4 x Kmax: Not-ECT never marked", v6=True)
    one(KMAX - 1, 2, 2, "Pmax 0 %: depth Kmax - 1 not marked", q2)
    one(KMAX, 2, 3, "Pmax 0 %: depth Kmax marked", q2)
    lines += [
        f"check_counter ecn_marked({q3}) packets == {marks[q3]}",
        f"check_counter ecn_marked({q2}) packets == {marks[q2]}",
        "",
    ]
    # The linear part: Pmax x (depth - Kmin) / (Kmax - Kmin), checked in distribution. p4-switch
    # draws from a fixed-seed generator, so its result is reproducible; on bmv2 the bounds fail
    # with probability below 1e-6.
    counted = marks[q3]
    for depth, n in ((KMIN + (KMAX - KMIN) // 2, 300), (KMIN + 5 * (KMAX - KMIN) // 6, 300)):
        p = PMAX_PERCENT / 100 * (depth - KMIN) / (KMAX - KMIN)
        low, high = binomial_interval(n, p)
        lines += [
            f"# depth {depth}: {n} ECT(0) packets, P(mark) = {p:.4f}, "
            f"expected {n * p:.1f}, bounds {low}..{high} (false failure < 1e-6)",
            f"register_write queue_bytes {q3} {depth}",
        ]
        for _ in range(n):
            pkt = ecn_packet(seq, 2)
            seq += 1
            lines += [
                f"packet 1 {hexs(bytes(pkt))}",
                f"expect 3 {wildcard_ecn(routed(pkt, 3))} $",
            ]
        lines += [
            "wait",
            f"check_counter ecn_marked({q3}) packets >= {counted + low}",
            f"check_counter ecn_marked({q3}) packets <= {counted + high}",
            f"counter_write ecn_marked {q3} {counted} 0",
            "",
        ]
    return lines


def roce(
    port: int, src: str, dst: str, seq: int, dscp: int = LOSSLESS_DSCP, ttl: int = 64
) -> Ether:
    """A RoCEv2 RDMA WRITE entering on `port` from the neighbour there (IPv6 for IPv6
    addresses)."""
    if ":" in src:
        l3 = IPv6(src=src, dst=dst, tc=dscp << 2, fl=seq, hlim=ttl)
    else:
        l3 = IP(src=src, dst=dst, tos=dscp << 2, id=seq, flags="DF", ttl=ttl)
    return (
        Ether(dst=ROUTER_MAC, src=HOST_MAC[port])
        / l3
        / UDP(sport=49152 + seq, dport=ROCEV2, chksum=0)
        / Raw(BTH + bytes(64))
    )


def sfc_received(dst: str, data_dscp: int, duration: int) -> Ether:
    """An SFC message from another switch, arriving from the spine (port 3): the reference's
    (version 0, the data's source port), IPv6 for an IPv6 destination."""
    if ":" in dst:
        l3 = IPv6(src=SPINE_IPV6, dst=dst, tc=SFC_SIGNAL_DSCP << 2, hlim=64)
    else:
        l3 = IP(src="20.9.9.9", dst=dst, tos=SFC_SIGNAL_DSCP << 2, ttl=64)
    return (
        Ether(dst=ROUTER_MAC, src=HOST_MAC[3])
        / l3
        / UDP(sport=49152, dport=1674, chksum=None if ":" in dst else 0)
        / SfcPause(dscp=data_dscp, duration_us=duration)
    )


H1_IPV6 = "2001:db8:1::2"
H2_IPV6 = "2001:db8:2::2"
SPINE_IPV6 = "2001:db8:20::9"
OTHER_LOSSLESS_DSCP = 4  # also TC 3 in the SFC files: a second DSCP into the same queue


def sfc_mode(dedup: int, version: int = 0, fixed_src_port: int = 0) -> str:
    """The sfc_mode default action (dedup 0 two-bank, 1 per source, 2 none)."""
    return (
        f"setdefault sfc_mode set_sfc_mode(dedup:{dedup}, version:{version}, "
        f"fixed_src_port:{fixed_src_port})"
    )


def sfc_setup(interval_us: int) -> list[str]:
    lines = setup(signal_interval_us=interval_us)
    lines += [
        f"add dscp_to_tc map:1 dscp:{OTHER_LOSSLESS_DSCP} set_tc(tc:3)",
        f"add ipv6_route dst:0x{'20010db80001' + '0' * 20}/48 set_nexthop_id(nexthop_id:1)",
        f"add ipv6_route dst:0x{'20010db80002' + '0' * 20}/48 set_nexthop_id(nexthop_id:2)",
        f"add ipv6_route dst:0x{'20010db80020' + '0' * 20}/48 set_nexthop_id(nexthop_id:3)",
    ]
    for port in (1, 2):
        lines.append(
            f"add sfc_queue port:{port} queue:3 set_sfc(threshold:{SFC_THRESHOLD}, "
            f"target:{SFC_TARGET}, us_per_byte_q24:{us_per_byte_q24(PORT_BPS[port])}, "
            f"dscp:{SFC_SIGNAL_DSCP})"
        )
    # PG 3 is lossless on port 1 only (thresholds out of reach: no XOFF of its own here), so
    # a source on port 2 has no PFC on the priority to be paused with.
    lines += [
        "add pg_profile port:1 pg:3 set_lossless(reserved:0xffffffff, xoff_threshold:0xffffffff, "
        "xoff_size:0, xon_threshold:0, xon_offset:0, shared_dynamic:0, shift_left:0, "
        "shift_right:0, class_enable:0x08, quanta:0xffff, refresh_interval_us:1000)",
        f"add sfc_dscp_to_priority dscp:{LOSSLESS_DSCP} set_sfc_priority(prio:3)",
        "",
    ]
    return lines


def step(
    lines: list[str],
    why: str,
    depth: tuple[int, int] | None,
    port: int,
    pkt: Ether,
    expects: list[tuple[int, bytes]],
) -> None:
    lines.append(f"# {why}")
    if depth is not None:
        lines.append(f"register_write queue_bytes {depth[0]} {depth[1]}")
    lines.append(f"packet {port} {hexs(bytes(pkt))}")
    lines += [f"expect {p} {hexs(frame)} $" for p, frame in expects]


def from_spine(lines: list[str], why: str, pkt: Ether, dur: int, signal: bool) -> None:
    """`pkt` from the spine (port 3) toward h1: forwarded, and the SFC message for a pause of
    `dur` us back to its source when `signal`."""
    expects = [(1, routed(pkt, 1))]
    if signal:
        expects.append((3, sfc_message(pkt, SFC_SIGNAL_DSCP, dur)))
    step(lines, why, None, 3, pkt, expects)


def spine_counts(triggered: int, suppressed: int) -> list[str]:
    """Once every packet has been processed: the SFC counters of the spine port (3)."""
    return [
        "wait",
        f"check_counter sfc_triggered(3) packets == {triggered}",
        f"check_counter sfc_suppressed(3) packets == {suppressed}",
        f"check_counter sfc_sent(3) packets == {triggered}",
    ]


def signal_stf() -> list[str]:
    """The congestion point: which packets signal, and the message's exact bytes."""
    lines = [
        "# Source Flow Control at the congestion point (p4src/README.md): a RoCEv2 packet into a",
        f"# lossless queue deeper than the SFC threshold ({SFC_THRESHOLD} B = 2 x Kmax) makes the",
        "# switch reflect an SFC message to the packet's source, the public reference's message",
        "# by default; window 0 (a new deduplication epoch every microsecond, so every packet).",
        "# Generated by gen_stf.py.",
        *sfc_setup(0),
    ]
    h1 = queue_index(1)
    bps = PORT_BPS[1]
    src = "20.9.9.9"
    sent = 0
    pkt = roce(3, src, HOST_IP[1], 1)
    step(
        lines,
        "depth exactly the threshold: forwarded, no signal",
        (h1, SFC_THRESHOLD),
        3,
        pkt,
        [(1, routed(pkt, 1))],
    )

    def signalled(why: str, depth: int, pkt: Ether, **variant: int) -> None:
        """`pkt` from the spine at `depth`: forwarded to h1, and a message back to its source."""
        nonlocal sent
        message = sfc_message(pkt, SFC_SIGNAL_DSCP, duration_us(depth, SFC_TARGET, bps), **variant)
        step(lines, why, (h1, depth), 3, pkt, [(1, routed(pkt, 1)), (3, message)])
        sent += 1

    for n, depth in enumerate((SFC_THRESHOLD + 1, 1_000_000, 300_000_000)):
        signalled(
            f"depth {depth}: signal with duration_us = min(65535, (depth - target) x "
            f"{us_per_byte_q24(bps)} >> 24) = {duration_us(depth, SFC_TARGET, bps)}",
            depth,
            roce(3, src, HOST_IP[1], 2 + n),
        )
    tagged = (
        Ether(dst=ROUTER_MAC, src=HOST_MAC[3])
        / Dot1Q(prio=3, vlan=10)
        / IP(src=src, dst=HOST_IP[1], tos=LOSSLESS_DSCP << 2, id=7, ttl=64)
        / UDP(sport=49999, dport=ROCEV2, chksum=0)
        / Raw(BTH + bytes(64))
    )
    depth = SFC_THRESHOLD + 10_000
    signalled("a VLAN-tagged data packet: the message keeps the tag (64 bytes)", depth, tagged)
    signalled(
        "IPv6 RoCEv2: an IPv6 message (80 bytes, UDP checksum over the pseudo-header)",
        depth,
        roce(3, SPINE_IPV6, H1_IPV6, 10),
    )
    lines.append(sfc_mode(2, version=1, fixed_src_port=1))
    for data in (roce(3, src, HOST_IP[1], 11), roce(3, SPINE_IPV6, H1_IPV6, 12)):
        signalled(
            "variants: version 1, UDP source port 1674 (no deduplication)",
            depth,
            data,
            version=1,
            fixed_src_port=True,
        )
    lines.append(sfc_mode(0))
    pkt = roce(3, src, HOST_IP[1], 13, ttl=2)
    step(
        lines,
        "data arriving with TTL 2: the message would leave with 0, so none goes out",
        (h1, depth),
        3,
        pkt,
        [(1, routed(pkt, 1))],
    )
    plain_udp = (
        Ether(dst=ROUTER_MAC, src=HOST_MAC[3])
        / IP(src=src, dst=HOST_IP[1], tos=LOSSLESS_DSCP << 2, id=8, ttl=64)
        / UDP(sport=49999, dport=4000, chksum=0)
        / Raw(bytes(76))
    )
    step(
        lines,
        "not RoCEv2 (UDP 4000): no signal",
        (h1, 1_000_000),
        3,
        plain_udp,
        [(1, routed(plain_udp, 1))],
    )
    pkt = roce(1, HOST_IP[1], "20.1.0.1", 9)
    step(
        lines,
        "RoCEv2 into a queue without SFC (port 3): no signal",
        (queue_index(3), 1_000_000),
        1,
        pkt,
        [(3, routed(pkt, 3))],
    )
    lines += [
        "wait",
        f"check_counter sfc_triggered(3) packets == {sent + 1}",
        f"check_counter sfc_sent(3) packets == {sent}",
        "check_counter sfc_suppressed(3) packets == 0",
        "check_counter sfc_triggered(1) packets == 0",
        "check_counter sfc_converted(1) packets == 0",
    ]
    return lines


def rate_limit_stf() -> list[str]:
    """The per-source variant (sfc_mode dedup 1): at most one signal per source per
    sfc_min_interval_us. p4-stf's clock advances 1 us per
    packet sent (the first at t = 1), so intervals are exact here; on bmv2's wall clock only
    the 'forever' interval part holds."""
    interval = 6  # even: the loop below alternates two sources
    lines = [
        "# Source Flow Control, the per-source variant (sfc_mode dedup 1): at most one signal",
        f"# per source per sfc_min_interval_us ({interval} us here; p4-stf's clock is 1 us per",
        "# packet sent).",
        "# Generated by gen_stf.py.",
        *sfc_setup(interval),
        sfc_mode(1),
    ]
    h1 = queue_index(1)
    depth = SFC_THRESHOLD + 50_000
    dur = duration_us(depth, SFC_TARGET, PORT_BPS[1])
    lines.append(f"register_write queue_bytes {h1} {depth}")
    a, b = "20.9.9.9", "20.7.7.7"
    seq = 0
    triggered = suppressed = 0

    def data(src: str, signal: bool, why: str) -> None:
        nonlocal seq, triggered, suppressed
        seq += 1
        if signal:
            triggered += 1
        else:
            suppressed += 1
        pkt = roce(3, src, HOST_IP[1], seq)
        from_spine(lines, f"t = {seq} us, source {src}: {why}", pkt, dur, signal)

    data(a, True, "first signal to this source")
    data(b, True, "another source is signalled independently")
    for _ in range((interval - 2) // 2):
        data(a, False, f"less than {interval} us after its last signal: suppressed")
        data(b, False, f"less than {interval} us after its last signal: suppressed")
    data(a, True, f"exactly {interval} us after its last signal: signalled again")
    data(b, True, f"exactly {interval} us after its last signal: signalled again")
    data(a, False, "suppressed again")
    lines += [
        *spine_counts(triggered, suppressed),
        "",
        "# An interval longer than any test ('forever'): holds on any clock.",
        f"setdefault switch_config set_switch_config(shared_pool_bytes:1000000, "
        f"sfc_min_interval_us:{(1 << 48) - 1})",
    ]
    for _ in range(3):
        data(a, False, "suppressed (interval 2^48 - 1 us)")
    lines += [
        "# Back to the 0 interval: every triggering packet signals.",
        "setdefault switch_config set_switch_config(shared_pool_bytes:1000000, "
        "sfc_min_interval_us:0)",
    ]
    data(a, True, "interval 0: signalled")
    data(a, True, "interval 0: signalled again")
    lines += [
        *spine_counts(triggered, suppressed),
    ]
    return lines


class ReferenceFilter:
    """The public reference's suppression as its source states it: an epoch ends at the first
    packet more than `window` us after it began (or before it, the clock having wrapped), and
    within an epoch a (source, destination, DSCP) is signalled once. Its two hashed bit banks
    only approximate the set kept here (a collision can suppress a signal, never add one)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.start = 0
        self.epoch = 0
        self.seen: set[tuple[str, str, int]] = set()

    def packet(self, now: int) -> None:
        if now - self.start > self.window or now < self.start:
            self.start, self.epoch = now, self.epoch + 1
            self.seen = set()

    def signal(self, key: tuple[str, str, int]) -> bool:
        fresh = key not in self.seen
        self.seen.add(key)
        return fresh


def dedup_stf() -> list[str]:
    """The default deduplication, the reference's two-bank epoch filter, against
    ReferenceFilter: a repeat of the same (source, destination, DSCP) is suppressed within an
    epoch, another destination or DSCP is not, and the next epoch lets it through, in the
    other bank and again in the first (whose old marks must count as cleared)."""
    window = 6
    lines = [
        "# Source Flow Control deduplication, the public reference's two-bank epoch filter",
        f"# (the default): window sfc_min_interval_us = {window} us; p4-stf's clock is 1 us per",
        "# packet sent. Generated by gen_stf.py.",
        *sfc_setup(window),
    ]
    h1 = queue_index(1)
    depth = SFC_THRESHOLD + 50_000
    dur = duration_us(depth, SFC_TARGET, PORT_BPS[1])
    lines.append(f"register_write queue_bytes {h1} {depth}")
    model = ReferenceFilter(window)
    seq = 0
    triggered = suppressed = 0
    a, b = "20.9.9.9", "20.7.7.7"

    def data(src: str, dst: str, dscp: int, want: bool, why: str) -> None:
        nonlocal seq, triggered, suppressed
        seq += 1
        model.packet(seq)
        signal = model.signal((src, dst, dscp))
        if signal != want:
            raise AssertionError(f"t = {seq}: the reference model says {signal} ({why})")
        if signal:
            triggered += 1
        else:
            suppressed += 1
        pkt = roce(3, src, dst, seq, dscp=dscp)
        from_spine(lines, f"t = {seq} us, epoch {model.epoch}: {why}", pkt, dur, signal)

    h1_ip = HOST_IP[1]
    data(a, h1_ip, LOSSLESS_DSCP, True, "first signal for (a, h1, 3)")
    data(a, h1_ip, LOSSLESS_DSCP, False, "a repeat in the same epoch: suppressed")
    data(a, "10.1.0.9", LOSSLESS_DSCP, True, "another destination: signalled")
    data(a, h1_ip, OTHER_LOSSLESS_DSCP, True, "another DSCP: signalled")
    data(b, h1_ip, LOSSLESS_DSCP, True, "another source: signalled")
    data(a, h1_ip, LOSSLESS_DSCP, False, f"{window} us after the epoch began: still suppressed")
    lines.append("register_read sfc_epoch 0 == 0")
    data(
        a,
        h1_ip,
        LOSSLESS_DSCP,
        True,
        f"more than {window} us: a new epoch (bank 1) lets it through",
    )
    data(a, h1_ip, LOSSLESS_DSCP, False, "suppressed again in the new epoch")
    lines.append("register_read sfc_epoch 0 == 1")
    lines.append(f"register_read sfc_epoch_start 0 == {seq - 1}")
    for n in range(window - 1):
        data(b, "10.1.0.9", LOSSLESS_DSCP, n == 0, "another flow, still epoch 1")
    data(a, "10.1.0.9", LOSSLESS_DSCP, True, "epoch 2, bank 0 again: its epoch-0 mark is cleared")
    data(a, h1_ip, LOSSLESS_DSCP, True, "and so is this one's")
    data(a, h1_ip, LOSSLESS_DSCP, False, "suppressed within epoch 2")
    lines.append("register_read sfc_epoch 0 == 2")
    lines += [
        *spine_counts(triggered, suppressed),
        "",
        "# No deduplication (sfc_mode dedup 2): every triggering packet signals.",
        sfc_mode(2),
    ]
    for _ in range(2):
        seq += 1
        pkt = roce(3, a, h1_ip, seq)
        from_spine(lines, "dedup none: signalled", pkt, dur, True)
        triggered += 1
    lines += spine_counts(triggered, suppressed)
    return lines


def source_tor_stf() -> list[str]:
    """Conversion to PFC only where the source is behind one of our host-facing ports."""
    lines = [
        "# Source Flow Control at the source ToR (p4src/README.md): ports 1 and 2 face hosts,",
        "# port 3 a spine. A signal for a source behind a host-facing port becomes an 802.1Qbb",
        "# frame toward it (quanta = ceil(duration_us x port bps / 512e6), at most 65535, from",
        "# egress_port.pause_quanta_per_us_q16); anything else stays an SFC message.",
        "# Generated by gen_stf.py.",
        *sfc_setup(0),
    ]
    depth = SFC_THRESHOLD + 50_000
    dur = duration_us(depth, SFC_TARGET, PORT_BPS[2])
    pkt = roce(1, HOST_IP[1], HOST_IP[2], 1)
    step(
        lines,
        f"h1 -> h2 into congested (2, 3): the source is ours, PFC priority 3 for "
        f"{dur} us out of port 1, no SFC message",
        (queue_index(2), depth),
        1,
        pkt,
        [(2, routed(pkt, 2)), (1, pfc_frame(PORT_MAC[1], {3: quanta(dur, PORT_BPS[1])}))],
    )
    pkt = roce(1, H1_IPV6, H2_IPV6, 4)
    step(
        lines,
        f"IPv6 h1 -> h2 into congested (2, 3): PFC priority 3 for {dur} us out of port 1",
        (queue_index(2), depth),
        1,
        pkt,
        [(2, routed(pkt, 2)), (1, pfc_frame(PORT_MAC[1], {3: quanta(dur, PORT_BPS[1])}))],
    )
    pkt = roce(2, HOST_IP[2], HOST_IP[1], 3)
    step(
        lines,
        "h2 -> h1 into congested (1, 3): the source is ours but PG 3 is lossy on port 2, "
        "so no PFC and no SFC message",
        (queue_index(1), depth),
        2,
        pkt,
        [(1, routed(pkt, 1))],
    )
    pkt = roce(3, "20.9.9.9", HOST_IP[2], 2)
    step(
        lines,
        "spine -> h2 into the same queue: the source is remote, an SFC message",
        (queue_index(2), depth),
        3,
        pkt,
        [(2, routed(pkt, 2)), (3, sfc_message(pkt, SFC_SIGNAL_DSCP, dur))],
    )
    msg = sfc_received(HOST_IP[1], LOSSLESS_DSCP, 500)
    step(
        lines,
        "received SFC for h1 (DSCP 3 -> priority 3, 500 us): PFC toward h1, not forwarded",
        None,
        3,
        msg,
        [(1, pfc_frame(PORT_MAC[1], {3: quanta(500, PORT_BPS[1])}))],
    )
    msg = sfc_received(H1_IPV6, LOSSLESS_DSCP, 500)
    step(
        lines,
        "received IPv6 SFC for h1: PFC toward h1, not forwarded",
        None,
        3,
        msg,
        [(1, pfc_frame(PORT_MAC[1], {3: quanta(500, PORT_BPS[1])}))],
    )
    msg = sfc_received("20.1.9.9", LOSSLESS_DSCP, 500)
    step(
        lines,
        "received SFC for a destination behind the spine: routed like any packet",
        None,
        3,
        msg,
        [(3, routed(msg, 3))],
    )
    msg = sfc_received(HOST_IP[2], 0, 500)
    step(
        lines,
        "received SFC for h2 with DSCP 0 (no PFC priority): dropped, never forwarded to the host",
        None,
        3,
        msg,
        [],
    )
    lines += [
        "wait",
        "check_counter sfc_triggered(1) packets == 2",
        "check_counter sfc_converted(1) packets == 4",
        "check_counter sfc_sent(1) packets == 0",
        "check_counter sfc_triggered(3) packets == 1",
        "check_counter sfc_sent(3) packets == 1",
        "check_counter sfc_received(3) packets == 4",
        "check_counter sfc_triggered(2) packets == 1",
        "check_counter sfc_converted(2) packets == 0",
        "check_counter sfc_sent(2) packets == 0",
        "check_counter pfc_sent(11) packets == 4",
        "check_counter pfc_sent(19) packets == 0",
    ]
    return lines


def write(name: str, lines: list[str]) -> None:
    (HERE / name).write_text("\n".join(lines).rstrip("\n") + "\n")


def main() -> int:
    write("ecn_kmin_kmax.stf", ecn_stf())
    write("sfc_signal.stf", signal_stf())
    write("sfc_rate_limit.stf", rate_limit_stf())
    write("sfc_dedup.stf", dedup_stf())
    write("sfc_source_tor.stf", source_tor_stf())
    return 0


if __name__ == "__main__":
    sys.exit(main())
