"""Frames the pipeline must produce, built from their specifications, and failure text that
explains how a received frame differs from the expected one (STYLE.md guideline 12).

The PFC layout is IEEE 802.1Qbb (REFERENCES.md): DA 01:80:c2:00:00:01, EtherType 0x8808,
opcode 0x0101, a 16-bit class-enable vector, eight 16-bit timers, zero padding to 60 bytes
(64 with the FCS). The SFC message is the public reference's (p4lang/open-p4studio,
switch-p4-16: header `sfc_pause_h` and the message its egress builds from the data packet),
field by field as below; p4src/README.md describes the same and the variants.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.fields import BitField, ByteField, ShortField
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet

PFC_DST = bytes.fromhex("0180c2000001")
ETHERTYPE_MAC_CONTROL = 0x8808
OPCODE_PFC = 0x0101
OPCODE_PAUSE = 0x0001
MIN_FRAME = 60  # without the FCS
SFC_PORT = 1674


class SfcPause(Packet):
    """switch-p4-16's `sfc_pause_h` {version:8, dscp:8, duration_us:16} and the 112 zero bits
    of padding its message carries after it in the UDP payload."""

    name = "SfcPause"
    fields_desc = [
        ByteField("version", 0),
        ByteField("dscp", 0),
        ShortField("duration_us", 0),
        BitField("pad", 0, 112),
    ]


def mac_bytes(mac: str) -> bytes:
    return bytes(int(b, 16) for b in mac.split(":"))


def pfc_frame(src_mac: str, times: dict[int, int]) -> bytes:
    """A PFC frame that sets the timer of each priority in `times` (0 = XON) and enables it."""
    class_enable = 0
    timers = [0] * 8
    for prio, quanta in times.items():
        if not 0 <= prio <= 7 or not 0 <= quanta <= 0xFFFF:
            raise ValueError(f"priority {prio} / quanta {quanta} out of range")
        class_enable |= 1 << prio
        timers[prio] = quanta
    body = struct.pack("!HH8H", OPCODE_PFC, class_enable, *timers)
    frame = PFC_DST + mac_bytes(src_mac) + struct.pack("!H", ETHERTYPE_MAC_CONTROL) + body
    return frame.ljust(MIN_FRAME, b"\0")


def pause_frame(src_mac: str, quanta: int) -> bytes:
    """An 802.3x PAUSE frame: the whole port for `quanta` (0 resumes)."""
    body = struct.pack("!HH", OPCODE_PAUSE, quanta)
    frame = PFC_DST + mac_bytes(src_mac) + struct.pack("!H", ETHERTYPE_MAC_CONTROL) + body
    return frame.ljust(MIN_FRAME, b"\0")


def pause_time_s(quanta: int, bps: int) -> float:
    """How long `quanta` pause a port of `bps` (one quantum is 512 bit times)."""
    return quanta * 512 / bps


@dataclass(frozen=True)
class PfcFields:
    class_enable: int
    timers: tuple[int, ...]


def parse_pfc(frame: bytes) -> PfcFields | None:
    """The class-enable vector and timers of a PFC frame, or None when it is not one."""
    if len(frame) < 34 or frame[:6] != PFC_DST:
        return None
    ethertype, opcode = struct.unpack_from("!HH", frame, 12)
    if ethertype != ETHERTYPE_MAC_CONTROL or opcode != OPCODE_PFC:
        return None
    class_enable, *timers = struct.unpack_from("!H8H", frame, 16)
    return PfcFields(class_enable, tuple(timers))


def sfc_message(
    data: Packet,
    signal_dscp: int,
    duration_us: int,
    version: int = 0,
    fixed_src_port: bool = False,
) -> bytes:
    """The SFC message a congestion point reflects for the RoCEv2 packet `data` as it entered
    the switch, as the public reference builds it: MACs and addresses swapped (a VLAN tag
    kept), the IP header's other fields kept except DSCP = the signal DSCP with ECN 0, the
    lengths, and the TTL or hop limit, which leaves two hops lower (the data's hop and the
    message's own routing); UDP from the data's source port (or 1674) to 1674, length 26;
    payload SfcPause. IPv4: no UDP checksum, header checksum computed. IPv6 (no reference):
    flow label 0 and the UDP checksum IPv6 requires."""
    eth = Ether(dst=data[Ether].src, src=data[Ether].dst)
    if Dot1Q in data:
        tag = data[Dot1Q]
        eth = eth / Dot1Q(prio=tag.prio, dei=tag.dei, vlan=tag.vlan)
    sport = SFC_PORT if fixed_src_port else data[UDP].sport
    if IP in data:
        ip = data[IP]
        l3 = IP(
            src=ip.dst, dst=ip.src, tos=signal_dscp << 2, len=46, id=ip.id, flags=ip.flags,
            frag=ip.frag, ttl=ip.ttl - 2, proto=17,
        )  # fmt: skip
        udp = UDP(sport=sport, dport=SFC_PORT, len=26, chksum=0)
        dscp = ip.tos >> 2
    else:
        ip6 = data[IPv6]
        l3 = IPv6(
            src=ip6.dst, dst=ip6.src, tc=signal_dscp << 2, fl=0, plen=26, nh=17,
            hlim=ip6.hlim - 2,
        )  # fmt: skip
        udp = UDP(sport=sport, dport=SFC_PORT, len=26)
        dscp = ip6.tc >> 2
    pause = SfcPause(version=version, dscp=dscp, duration_us=min(duration_us, 0xFFFF))
    return bytes(eth / l3 / udp / pause)


def routed(pkt: Packet, src_mac: str, dst_mac: str) -> Packet:
    """`pkt` as a router forwards it: new MACs, TTL or hop limit one less, IPv4 checksum right.
    The expected checksum is recomputed from scratch, so an incremental update in the switch
    is checked against the full computation."""
    out = pkt.copy()
    out[Ether].src = src_mac
    out[Ether].dst = dst_mac
    if IP in out:
        out[IP].ttl -= 1
        del out[IP].chksum
    elif IPv6 in out:
        out[IPv6].hlim -= 1
    return out.__class__(bytes(out))


def _fields(pkt: Packet) -> list[tuple[str, object]]:
    out = []
    layer = pkt
    while layer is not None and not isinstance(layer, type(None)):
        name = layer.__class__.__name__
        for f in layer.fields_desc:
            out.append((f"{name}.{f.name}", layer.getfieldval(f.name)))
        layer = layer.payload if layer.payload else None
    return out


def describe_difference(expected: bytes, received: bytes) -> str:
    """Field by field, where `received` differs from `expected`, both dissected as Ethernet."""
    exp_fields = _fields(Ether(expected))
    got_fields = dict(_fields(Ether(received)))
    lines = []
    for name, value in exp_fields:
        got = got_fields.get(name, "<absent>")
        if got != value:
            lines.append(f"  {name}: expected {_show(value)}, received {_show(got)}")
    if len(expected) != len(received):
        lines.append(f"  length: expected {len(expected)} bytes, received {len(received)}")
    if not lines:
        first = next(
            (i for i, (a, b) in enumerate(zip(expected, received, strict=False)) if a != b), None
        )
        lines.append(f"  bytes differ from offset {first}")
    return "\n".join(lines)


def _show(value: object) -> str:
    if isinstance(value, bytes):
        return value.hex() if len(value) <= 32 else value[:32].hex() + "..."
    if isinstance(value, int) and value > 9:
        return f"{value} (0x{value:x})"
    return repr(value)


def nearest(expected: bytes, candidates: list[bytes]) -> bytes | None:
    """The received frame closest to `expected` (fewest differing bytes), for near-miss reports."""
    if not candidates:
        return None

    def distance(frame: bytes) -> int:
        diff = sum(a != b for a, b in zip(expected, frame, strict=False))
        return diff + abs(len(expected) - len(frame))

    return min(candidates, key=distance)
