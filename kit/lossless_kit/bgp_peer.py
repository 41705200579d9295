"""A BGP peer that announces routes in bulk: ExaBGP (PyPI) in a network namespace of its own,
for the route bench's FRR-as-source points (root).

The peer's side of a veth whose other end is a routed port of FRR's namespace: one eBGP
session per family (the port's IPv4 and IPv6 neighbour addresses), with ADD-PATH send, so one
session can hand bgpd several paths of a prefix, each through its own next hop on the port's
subnet (third-party next hops), which bgpd's multipath makes one ECMP route. ExaBGP reads its
commands from a FIFO (its API process is `cat FIFO`), so the caller decides when the
announcement starts: after the sessions are established, which is when FRR's time starts.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from .frr import FrrError, ns_exec

# Prefixes per `announce attributes ... nlri` command: ExaBGP turns each command into one
# change per prefix and packs changes with equal attributes into UPDATEs; a command per prefix
# would cost ExaBGP a parse each.
NLRI_PER_COMMAND = 500


def announcements(routes: Iterable[tuple[ipaddress._BaseNetwork, tuple[str, ...]]]) -> list[str]:
    """ExaBGP API commands announcing each (prefix, next hops): one path per next hop, path
    ids 1..M (ADD-PATH), prefixes with the same next-hop set and family batched per command."""
    by_hops: dict[tuple[str, ...], list[str]] = {}
    for prefix, hops in routes:
        by_hops.setdefault(tuple(hops), []).append(str(prefix))
    lines = []
    for hops, prefixes in by_hops.items():
        for path_id, hop in enumerate(hops, start=1):
            for i in range(0, len(prefixes), NLRI_PER_COMMAND):
                nlri = " ".join(prefixes[i : i + NLRI_PER_COMMAND])
                lines.append(
                    f"announce attributes path-information {path_id} next-hop {hop} nlri {nlri}"
                )
    return lines


class ExaBgpPeer:
    """ExaBGP in namespace `ns` with sessions to FRR: `sessions` lists (local address, FRR's
    address, family) per session; AS `local_as` to FRR's `peer_as`. As a context manager:
    started, then stopped (by its pid) and its files removed."""

    def __init__(
        self,
        ns: str,
        sessions: list[tuple[str, str, str]],
        local_as: int,
        peer_as: int,
    ):
        self.ns = ns
        self.dir = Path(tempfile.mkdtemp(prefix="llexabgp-"))
        self.fifo = self.dir / "commands"
        os.mkfifo(self.fifo)
        self.log = self.dir / "exabgp.log"
        router_id = next(local for local, _, family in sessions if family == "ipv4")
        lines = [f"process feed {{\n  run /bin/cat {self.fifo};\n  encoder text;\n}}"]
        for local, remote, family in sessions:
            lines.append(
                f"neighbor {remote} {{\n  router-id {router_id};\n  local-address {local};\n"
                f"  local-as {local_as};\n  peer-as {peer_as};\n  hold-time 180;\n"
                f"  family {{ {family} unicast; }}\n"
                f"  capability {{ add-path send; }}\n"
                f"  api {{ processes [ feed ]; }}\n}}"
            )
        self.config = self.dir / "exabgp.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen | None = None
        self.writer = None

    def start(self) -> None:
        env = os.environ | {
            # Root in the namespace: ExaBGP would drop to `nobody`, who cannot read the FIFO's
            # directory; no acknowledgement per command (nobody reads them: the process is cat).
            "exabgp_daemon_user": "root",
            "exabgp_daemon_drop": "false",
            "exabgp_api_ack": "false",
            "exabgp_log_destination": str(self.log),
            "exabgp_log_level": "WARNING",
        }
        exabgp = Path(sys.executable).with_name("exabgp")
        with (self.dir / "stdout.log").open("wb") as out:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, str(exabgp), "server", str(self.config)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        # Opening the FIFO blocks until cat has it open for reading: ExaBGP is running.
        deadline = time.monotonic() + 30
        while self.writer is None:
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise FrrError(f"exabgp did not start:\n{self.logs()}") from None
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            self.writer = os.fdopen(fd, "w", buffering=1 << 20)

    def announce(self, commands: list[str]) -> None:
        assert self.writer is not None, "start() first"
        self.writer.write("\n".join(commands) + "\n")
        self.writer.flush()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def __enter__(self) -> ExaBgpPeer:
        try:
            self.start()
        except BaseException:
            self.stop()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def peer_namespace(ns: str, peer_ns: str, veth: str, addresses: list[str]) -> None:
    """Move `veth` (the far end of a routed port of `ns`) into a new namespace `peer_ns` with
    `addresses`, up."""
    subprocess.run(["ip", "netns", "del", peer_ns], capture_output=True)
    subprocess.run(["ip", "netns", "add", peer_ns], check=True)
    ns_exec(ns, "ip", "link", "set", veth, "netns", peer_ns)
    ns_exec(peer_ns, "ip", "link", "set", "lo", "up")
    for address in addresses:
        extra = ["nodad"] if ":" in address else []
        ns_exec(peer_ns, "ip", "addr", "add", address, "dev", veth, *extra)
    ns_exec(peer_ns, "ip", "link", "set", veth, "up")
