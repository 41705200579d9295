"""Host interfaces (`run --hostif`) against the real kernel (root): taps in a namespace of the
test's own, frames punted to them and what the kernel sends back. The reference for the
kernel's answer is RFC 826's ARP reply, read field by field."""

from __future__ import annotations

import ipaddress
import os
import struct
import subprocess
import time

import pytest

from lossless_ctl.hostif import HostIf, HostIfError
from lossless_ctl.neighbor import Interface, parse

NS = f"llhostif-{os.getpid()}"
ROUTER_MAC = bytes.fromhex("020000000001")
PEER_MAC = bytes.fromhex("0200000000aa")
ROUTER_IP, PEER_IP = ipaddress.ip_address("10.1.0.1"), ipaddress.ip_address("10.1.0.2")


@pytest.fixture
def hostif():
    assert os.geteuid() == 0, "taps in a namespace need root; CI runs as root"
    subprocess.run(["ip", "netns", "add", NS], check=True)
    sent: list[tuple[int, bytes]] = []
    iface = Interface("Ethernet0", 1, ROUTER_MAC, [ipaddress.ip_interface("10.1.0.1/24")])
    h = HostIf(NS, {"Ethernet0": iface}, log=lambda _: None).start()
    h.attach(lambda port, frame: sent.append((port, frame)))
    try:
        yield h, sent
    finally:
        h.close()
        subprocess.run(["ip", "netns", "del", NS], check=True)


def arp_request() -> bytes:
    """RFC 826: who has 10.1.0.1, tell 10.1.0.2 (broadcast), padded to 60 bytes."""
    eth = b"\xff" * 6 + PEER_MAC + struct.pack("!H", 0x0806)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + PEER_MAC + PEER_IP.packed
    arp += bytes(6) + ROUTER_IP.packed
    return (eth + arp).ljust(60, b"\0")


def test_taps_carry_the_config_addresses_and_mac(hostif):
    out = subprocess.run(
        ["ip", "-n", NS, "-o", "addr", "show", "dev", "Ethernet0"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "inet 10.1.0.1/24" in out
    link = subprocess.run(
        ["ip", "-n", NS, "-o", "link", "show", "dev", "Ethernet0"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "link/ether 02:00:00:00:00:01" in link and ",UP," in link


def test_the_kernel_answers_a_punted_arp_request_out_of_the_port(hostif):
    h, sent = hostif
    h.punt(1, arp_request())
    deadline = time.monotonic() + 5
    replies = []
    while not replies:
        assert time.monotonic() < deadline, f"no ARP reply; sent {sent}, counters {h.counters}"
        replies = [(p, f) for p, f in sent if f[12:14] == b"\x08\x06" and f[20:22] == b"\0\x02"]
        time.sleep(0.05)
    port, frame = replies[0]
    assert port == 1
    assert frame[0:6] == PEER_MAC and frame[6:12] == ROUTER_MAC
    htype, ptype, hlen, plen, op = struct.unpack_from("!HHBBH", frame, 14)
    assert (htype, ptype, hlen, plen, op) == (1, 0x0800, 6, 4, 2)
    assert frame[22:28] == ROUTER_MAC and frame[28:32] == ROUTER_IP.packed
    assert frame[32:38] == PEER_MAC and frame[38:42] == PEER_IP.packed


def test_the_kernel_gets_neighbour_discovery_and_ip_to_the_router_only(hostif):
    h, _ = hostif
    assert h.wants(parse(arp_request()))
    ip = struct.pack("!BBHHHBBH", 0x45, 0, 20, 0, 0, 64, 6, 0)
    to_router = b"\0" * 12 + b"\x08\x00" + ip + PEER_IP.packed + ROUTER_IP.packed
    to_host = b"\0" * 12 + b"\x08\x00" + ip + PEER_IP.packed + bytes([10, 1, 0, 3])
    assert h.wants(parse(to_router))
    assert not h.wants(parse(to_host))


def test_a_missing_namespace_is_a_clear_error():
    iface = Interface("Ethernet0", 1, ROUTER_MAC, [ipaddress.ip_interface("10.1.0.1/24")])
    with pytest.raises(HostIfError, match="llhostif-missing"):
        HostIf("llhostif-missing", {"Ethernet0": iface}, log=lambda _: None)
