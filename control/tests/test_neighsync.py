"""neighsync against the real kernel (root): the neighbour table of a namespace of the test's
own, changed with iproute2, read back as neighsyncd reads it (RTM_NEWNEIGH / RTM_DELNEIGH)."""

from __future__ import annotations

import ipaddress
import os
import queue
import subprocess

import pytest

from lossless_ctl.neighsync import NeighSync

NS = f"llneighsync-{os.getpid()}"
PEER = ipaddress.ip_address("10.1.0.2")
PEER6 = ipaddress.ip_address("fc00:1::2")


def ip(*args: str) -> None:
    subprocess.run(["ip", "-n", NS, *args], check=True)


@pytest.fixture
def namespace():
    assert os.geteuid() == 0, "a network namespace needs root; CI runs as root"
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        for port, peer in (("Ethernet0", "p0"), ("other", "p1")):
            ip("link", "add", port, "type", "veth", "peer", "name", peer)
            ip("link", "set", peer, "up")
            ip("link", "set", port, "up")
        ip("addr", "add", "10.1.0.1/24", "dev", "Ethernet0")
        ip("addr", "add", "fc00:1::1/64", "dev", "Ethernet0", "nodad")
        yield NS
    finally:
        subprocess.run(["ip", "netns", "del", NS], check=True)


def events(sync: NeighSync, count: int) -> list:
    return [sync.events.get(timeout=5) for _ in range(count)]


def test_kernel_neighbours_become_events(namespace):
    ip("neigh", "add", str(PEER), "lladdr", "02:00:00:00:00:aa", "nud", "permanent",
       "dev", "Ethernet0")  # fmt: skip
    sync = NeighSync(namespace, {"Ethernet0"}).start()
    try:
        # What the table already holds comes first (the dump at start).
        assert events(sync, 1) == [("Ethernet0", PEER, bytes.fromhex("0200000000aa"))]
        ip("neigh", "replace", str(PEER), "lladdr", "02:00:00:00:00:bb", "nud", "reachable",
           "dev", "Ethernet0")  # fmt: skip
        ip("neigh", "add", str(PEER6), "lladdr", "02:00:00:00:00:cc", "nud", "permanent",
           "dev", "Ethernet0")  # fmt: skip
        ip(
            "neigh",
            "add",
            "10.9.0.9",
            "lladdr",
            "02:00:00:00:00:dd",
            "nud",
            "permanent",
            "dev",
            "other",
        )  # fmt: skip  (not one of ours: no event)
        ip("neigh", "del", str(PEER), "dev", "Ethernet0")
        got = events(sync, 3)
        assert got[:2] == [
            ("Ethernet0", PEER, bytes.fromhex("0200000000bb")),
            ("Ethernet0", PEER6, bytes.fromhex("0200000000cc")),
        ]
        assert got[2] == ("Ethernet0", PEER, None)
        # The deletion may come twice (the entry failed, then went); nothing of `other`.
        rest = []
        while True:
            try:
                rest.append(sync.events.get(timeout=0.5))
            except queue.Empty:
                break
        assert set(rest) <= {("Ethernet0", PEER, None)}, rest
    finally:
        sync.close()
