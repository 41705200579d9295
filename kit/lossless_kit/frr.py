"""Debian's FRR (zebra with `dplane_fpm_nl`, staticd) in a network namespace with the PTF
config's routed ports, and `lossless-ctl run --fpm`, the listener it feeds: for the FPM tests and
the route bench (root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lossless_paths import PTF_CONFIG_DB

from .switch import free_port

FRR = Path("/usr/lib/frr")
# The PTF config's routed ports, their addresses and their neighbours (its NEIGH), which routes'
# next hops are: zebra resolves them on these interfaces.
PORTS = {
    "Ethernet0": ("10.1.0.1/24", "10.1.0.2"),
    "Ethernet4": ("10.2.0.1/24", "10.2.0.2"),
    "Ethernet8": ("10.3.0.0/31", "10.3.0.1"),
    "Ethernet12": ("10.4.0.0/31", "10.4.0.1"),
}
V6_PORTS = {"Ethernet0": ("fc00:1::1/64", "fc00:1::2"), "Ethernet4": ("fc00:2::1/64", "fc00:2::2")}
GATEWAYS = [gw for _, gw in PORTS.values()]
V6_GATEWAYS = [gw for _, gw in V6_PORTS.values()]


class FrrError(Exception):
    pass


def missing(daemons: tuple[str, ...] = ("zebra", "staticd")) -> list[Path]:
    """The FRR daemons that are not installed (`make deps` installs them)."""
    return [FRR / tool for tool in daemons if not (FRR / tool).is_file()]


def ns_exec(ns: str, *cmd: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise FrrError(f"{' '.join(cmd)} in {ns}: {proc.stderr.strip()}")
    return proc


@contextmanager
def routed_namespace(name: str) -> Iterator[str]:
    """Namespace `name` with a veth per routed port (`EthernetN` with the config's addresses,
    its peer `pN` up so that the port's carrier follows it); deleted on exit."""
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        ns_exec(name, "ip", "link", "set", "lo", "up")
        for i, (port, (address, _)) in enumerate(PORTS.items()):
            ns_exec(name, "ip", "link", "add", port, "type", "veth", "peer", "name", f"p{i}")
            ns_exec(name, "ip", "addr", "add", address, "dev", port)
            if port in V6_PORTS:
                ns_exec(name, "ip", "addr", "add", V6_PORTS[port][0], "dev", port, "nodad")
            ns_exec(name, "ip", "link", "set", f"p{i}", "up")
            ns_exec(name, "ip", "link", "set", port, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def static_routes(prefixes, gateways, no: bool = False) -> list[str]:
    """vtysh config lines: each prefix via each gateway (ECMP), or their removal."""
    verb = "ip route" if prefixes[0].version == 4 else "ipv6 route"
    verb = f"no {verb}" if no else verb
    return [f"{verb} {p} {gw}" for p in prefixes for gw in gateways]


class Frr:
    """zebra (streaming FPM to 127.0.0.1:`fpm_port` of `ns`) and the daemons of `configs`
    (name: its config file's text; staticd alone by default) in `ns`, their sockets, pid files
    and logs in a directory of their own (they run as user frr, who cannot enter a private tmp
    directory). Stopped by their pids. As a context manager: started, then stopped and
    removed."""

    def __init__(
        self, ns: str, fpm_port: int, configs: dict[str, str] | None = None, retain: bool = False
    ):
        self.ns = ns
        # zebra -r: a stopped zebra leaves its routes where they are (its FPM peer keeps
        # them until zebra is back), as a routing daemon restart under graceful restart does.
        self.retain = retain
        self.dir = Path(tempfile.mkdtemp(prefix="llfpm-frr-"))
        self.dir.chmod(0o777)
        (self.dir / "zebra.conf").write_text(
            f"fpm address 127.0.0.1 port {fpm_port}\nno fpm use-next-hop-groups\n"
        )
        self.daemons = ["zebra", *(configs or {"staticd": ""})]
        for daemon, text in (configs or {"staticd": ""}).items():
            (self.dir / f"{daemon}.conf").write_text(text)
        self.pids: list[int] = []

    def start(self) -> None:
        for daemon in self.daemons:
            extra = []
            if daemon == "zebra":
                extra = ["-M", "dplane_fpm_nl", *(["-r"] if self.retain else [])]
            pid_file = self.dir / f"{daemon}.pid"
            ns_exec(
                self.ns, str(FRR / daemon), "-d", "-P", "0", *extra,
                "-f", str(self.dir / f"{daemon}.conf"), "-i", str(pid_file),
                "-z", str(self.dir / "zserv.api"), "--vty_socket", str(self.dir),
                "--log", f"file:{self.dir / daemon}.log",
            )  # fmt: skip
            deadline = time.monotonic() + 10
            while not pid_file.exists() or not pid_file.read_text().strip():
                if time.monotonic() > deadline:
                    raise FrrError(f"{daemon} wrote no pid file")
                time.sleep(0.05)
            self.pids.append(int(pid_file.read_text()))

    def configure(self, lines: list[str]) -> None:
        script = self.dir / "commands"
        script.write_text("\n".join(lines) + "\n")  # vtysh -f: config-file syntax
        ns_exec(self.ns, "vtysh", "--vty_socket", str(self.dir), "-f", str(script))

    def show(self, command: str) -> str:
        """A vtysh command's output (e.g. `show bgp summary json`)."""
        return ns_exec(self.ns, "vtysh", "--vty_socket", str(self.dir), "-c", command).stdout

    def stop(self, zebra_first: bool = False) -> None:
        """Daemons in reverse start order; `zebra_first` for a restart that keeps the routes:
        stopped first, a zebra started with `retain` withdraws nothing, where a bgpd stopped
        before it has its routes withdrawn through it (over FPM too)."""
        for pid in self.pids if zebra_first else reversed(self.pids):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        self.pids = []

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.dir.glob("*.log")))

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Frr:
        try:
            self.start()
        except BaseException:
            self.stop()
            self.remove()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
        self.remove()


@contextmanager
def fpm_controller(
    switch: str, pipeline: Path, log: Path, *options: str, netns: str | None = None
) -> Iterator[tuple[subprocess.Popen, int]]:
    """`lossless-ctl run --fpm` with the PTF config on the P4Runtime server `switch` (more
    `options`, e.g. --route-bulk), its FPM socket in `netns` (default: this namespace), output
    to `log`: (the process, its FPM port) once the config is written and it listens."""
    fpm_port = free_port()
    cmd = [
        sys.executable, "-m", "lossless_ctl.cli", "run", "--config", str(PTF_CONFIG_DB),
        "--switch", switch, "--pipeline", str(pipeline), "--fpm", f"127.0.0.1:{fpm_port}",
        *(["--fpm-netns", netns] if netns else []), *options,
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "fpm: listening" not in log.read_text() or "written" not in log.read_text():
            if proc.poll() is not None:
                raise FrrError(f"lossless-ctl run exited:\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise FrrError(f"lossless-ctl run not ready after 60 s:\n{log.read_text()}")
            time.sleep(0.1)
        yield proc, fpm_port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
