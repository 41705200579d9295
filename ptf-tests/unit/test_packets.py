"""Frame builders against scapy's independent encodings of the same standards."""

import struct

from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from ptf_harness.packets import (
    describe_difference,
    nearest,
    parse_pfc,
    pause_frame,
    pause_time_s,
    pfc_frame,
    routed,
    sfc_message,
)

SRC = "02:00:00:00:00:01"


def test_pfc_frame_matches_scapy_802_1qbb():
    ours = pfc_frame(SRC, {3: 0xFFFF, 4: 7})
    ref = Ether(dst="01:80:c2:00:00:01", src=SRC) / MACControlClassBasedFlowControl(
        c3_enabled=1, c3_pause_time=0xFFFF, c4_enabled=1, c4_pause_time=7
    )
    assert ours == bytes(ref)
    assert len(ours) == 60  # 64 on the wire with the FCS
    assert parse_pfc(ours).class_enable == 0x18
    assert parse_pfc(ours).timers == (0, 0, 0, 0xFFFF, 7, 0, 0, 0)


def test_xon_enables_the_class_with_timer_zero():
    xon = parse_pfc(pfc_frame(SRC, {3: 0}))
    assert (xon.class_enable, xon.timers[3]) == (0x08, 0)


def test_pause_frame_matches_scapy_802_3x():
    ref = Ether(dst="01:80:c2:00:00:01", src=SRC) / MACControlPause(pause_time=0xFFFF)
    assert pause_frame(SRC, 0xFFFF) == bytes(ref).ljust(60, b"\0")
    assert parse_pfc(pause_frame(SRC, 1)) is None


def test_pause_time_reference_figure():
    # REFERENCES.md: 65535 quanta at 100G is about 335.5 us.
    assert abs(pause_time_s(0xFFFF, 100_000_000_000) - 335.5e-6) < 0.1e-6


def test_sfc_message_layout():
    data = (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:03:01")
        / IP(src="20.9.9.9", dst="10.1.0.2", tos=(3 << 2) | 2, ttl=63, id=77, flags="DF")
        / UDP(sport=49152, dport=4791)
        / bytes(100)
    )
    msg = sfc_message(data, signal_dscp=48, duration_us=1040)
    assert len(msg) == 60
    ip = Ether(msg)[IP]
    assert (Ether(msg).dst, Ether(msg).src) == ("02:00:00:00:03:01", "02:00:00:00:00:01")
    assert (ip.src, ip.dst, ip.tos, ip.ttl, ip.len, ip.proto, ip.id, int(ip.flags)) == (
        "10.1.0.2", "20.9.9.9", 48 << 2, 61, 46, 17, 77, 2,
    )  # fmt: skip
    udp = Ether(msg)[UDP]
    assert (udp.sport, udp.dport, udp.len, udp.chksum) == (49152, 1674, 26, 0)
    assert msg[42:46] == struct.pack("!BBH", 0, 3, 1040)
    assert msg[46:] == bytes(14)
    # The variants: version byte and the fixed source port.
    variant = sfc_message(data, 48, 1040, version=1, fixed_src_port=True)
    assert Ether(variant)[UDP].sport == 1674 and variant[42] == 1
    # The IPv4 header checksum is the one computed from scratch.
    fresh = IP(bytes(ip)[:20])
    del fresh.chksum
    assert IP(bytes(fresh)).chksum == ip.chksum
    tagged = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:03:01") / Dot1Q(vlan=5) / data[IP]
    assert len(sfc_message(tagged, 48, 1)) == 64


def test_sfc_message_ipv6_has_a_valid_udp_checksum():
    data = (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:03:01")
        / IPv6(src="2001:db8::9", dst="2001:db8:1::2", tc=3 << 2, hlim=63, fl=5)
        / UDP(sport=50000, dport=4791)
        / bytes(100)
    )
    msg = sfc_message(data, signal_dscp=48, duration_us=7)
    assert len(msg) == 80
    ip6 = Ether(msg)[IPv6]
    assert (ip6.src, ip6.dst, ip6.tc, ip6.fl, ip6.plen, ip6.nh, ip6.hlim) == (
        "2001:db8:1::2", "2001:db8::9", 48 << 2, 0, 26, 17, 61,
    )  # fmt: skip
    assert msg[62:66] == struct.pack("!BBH", 0, 3, 7)
    udp = ip6[UDP]
    fresh = udp.copy()
    del fresh.chksum
    assert udp.chksum not in (0, None)
    assert UDP(bytes(IPv6(src=ip6.src, dst=ip6.dst) / fresh)[40:]).chksum == udp.chksum


def test_routed_decrements_ttl_and_fixes_checksum():
    pkt = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:01:02") / IP(dst="1.2.3.4", ttl=9)
    out = routed(pkt, "02:00:00:00:00:01", "02:00:00:00:03:01")
    assert out[IP].ttl == 8
    recomputed = IP(bytes(out[IP]))
    del recomputed.chksum
    assert IP(bytes(recomputed)).chksum == out[IP].chksum


def test_difference_names_the_fields_and_picks_the_nearest_miss():
    a = pfc_frame(SRC, {3: 0xFFFF})
    b = pfc_frame(SRC, {3: 0xFFFE})
    far = pause_frame("02:aa:aa:aa:aa:aa", 1)
    assert nearest(a, [far, b]) == b
    text = describe_difference(a, b)
    assert "c3_pause_time: expected 65535 (0xffff), received 65534 (0xfffe)" in text
    assert "length" not in text
