"""A real p4-switch with veth ports, for the integration tests and the benchmarks.

    root namespace                        namespace llctl-<pid>
    p4-switch: port N on llctl<pid>sN  <-- veth -->  hN (the test's end, AF_PACKET)

The switch runs in the root namespace so its P4Runtime and stats servers are on 127.0.0.1; the
host ends live in a namespace of their own, and sockets on them are opened by entering it
(setns) from the calling thread only. IPv6 is off on every end so that the kernel sends
nothing (router solicitations, MLD) that a test would count. Needs root (namespaces, veths).
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import subprocess
import time
from pathlib import Path

from lossless_paths import BIN

from .switch import SwitchProcess, free_port

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
PREFIX = "llctl"


class LabError(Exception):
    pass


def _ip(*args: str, check: bool = True) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


def remove_stale() -> None:
    """Namespaces of earlier runs whose process is gone (a crash or a kill -9)."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in names.splitlines():
        name = line.split()[0] if line.split() else ""
        pid = name.removeprefix(f"{PREFIX}-")
        if name.startswith(f"{PREFIX}-") and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _ip("netns", "del", name, check=False)


class VethPorts:
    """Ports 1..n: veth pairs between the root namespace (switch) and `llctl-<pid>` (hosts)."""

    def __init__(self, ports: int):
        self.ports = list(range(1, ports + 1))
        self.tag = f"{PREFIX}{os.getpid() % 100000}"
        self.namespace = f"{PREFIX}-{os.getpid()}"
        self._libc = ctypes.CDLL(None, use_errno=True)

    def switch_iface(self, port: int) -> str:
        return f"{self.tag}s{port}"

    def up(self) -> None:
        remove_stale()
        self.down()
        try:
            _ip("netns", "add", self.namespace)
            self._sysctl_ns("net.ipv6.conf.all.disable_ipv6=1")
            self._sysctl_ns("net.ipv6.conf.default.disable_ipv6=1")
            for port in self.ports:
                sw, host = self.switch_iface(port), f"h{port}"
                _ip("link", "add", sw, "type", "veth", "peer", "name", host)
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{sw}.disable_ipv6=1"], check=True)
                _ip("link", "set", host, "netns", self.namespace)
                _ip("link", "set", sw, "mtu", "9216", "up")
                _ip("-n", self.namespace, "link", "set", host, "mtu", "9216", "up")
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _ip("netns", "del", self.namespace, check=False)
        for port in self.ports:  # pairs of a half-made topology still in the root namespace
            _ip("link", "del", self.switch_iface(port), check=False)

    def _sysctl_ns(self, setting: str) -> None:
        cmd = ["ip", "netns", "exec", self.namespace, "sysctl", "-qw", setting]
        subprocess.run(cmd, check=True)

    def host_socket(self, port: int) -> socket.socket:
        """An AF_PACKET socket on host port `port` (inside the namespace)."""
        here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        there = os.open(f"/var/run/netns/{self.namespace}", os.O_RDONLY)
        try:
            if self._libc.setns(there, CLONE_NEWNET) != 0:
                raise LabError(f"setns {self.namespace}: {os.strerror(ctypes.get_errno())}")
            try:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((f"h{port}", 0))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            finally:
                if self._libc.setns(here, CLONE_NEWNET) != 0:
                    raise LabError(f"setns back: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(here)
            os.close(there)
        return s


class SwitchLab:
    """p4-switch on `ports` veth ports, with the traffic manager configured from
    `port_config` (the file `lossless-ctl port-config` writes). Use as a context manager."""

    def __init__(self, ports: int, workdir: Path, port_config: Path | None = None,
                 switch: Path = BIN / "p4-switch", device_id: int = 1):  # fmt: skip
        self.veths = VethPorts(ports)
        self.switch = SwitchProcess(
            switch,
            interfaces={p: self.veths.switch_iface(p) for p in self.veths.ports},
            device_id=device_id,
            grpc_addr=f"127.0.0.1:{free_port()}",
            stats_addr=f"127.0.0.1:{free_port()}",
            port_config=port_config,
            log_path=workdir / "p4-switch.log",
        )
        self.grpc_addr = self.switch.grpc_addr
        self.stats_addr = self.switch.stats_addr
        self.sockets: dict[int, socket.socket] = {}

    def __enter__(self) -> SwitchLab:
        if not Path(self.switch.binary).is_file():
            raise LabError(f"{self.switch.binary} missing: run `make build` first")
        self.veths.up()
        try:
            self.switch.start()
            self.switch.wait_ready(timeout=30)
            self.sockets = {p: self.veths.host_socket(p) for p in self.veths.ports}
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.sockets.values():
            s.close()
        self.sockets = {}
        self.switch.stop()
        self.veths.down()

    def send(self, port: int, frame: bytes) -> None:
        self.sockets[port].send(frame)

    def receive(self, timeout: float = 1.0, quiet: float = 0.3) -> list[tuple[int, bytes]]:
        """Every frame that reaches a host port until `quiet` seconds pass without one (or
        `timeout` without the first)."""
        by_fd = {s.fileno(): p for p, s in self.sockets.items()}
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while True:
            wait = max(0.0, deadline - time.monotonic()) if not out else quiet
            ready, _, _ = select.select(list(by_fd), [], [], wait)
            if not ready:
                return out
            for fd in ready:
                port = by_fd[fd]
                frame, addr = self.sockets[port].recvfrom(65536)
                if addr[2] != socket.PACKET_OUTGOING:  # not our own send
                    out.append((port, frame))
