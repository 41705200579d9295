"""The switch process, for the lab, the PTF harness and the tests: its command line, start,
readiness, restart and stop by PID.

Both switches take simple_switch_grpc's command line: `-i PORT@IFACE`, `--device-id`, the BMv2
JSON or `--no-p4` (the pipeline comes over P4Runtime), and after `--` the target options
`--grpc-server-addr`, `--cpu-port`, `--priority-queues`. p4-switch reads them all as one
command line (it drops the `--`) and adds the traffic manager's port configuration
(`--port-config`, from `lossless-ctl port-config`) and its statistics endpoint (`--stats-addr`,
`GET /stats`, `PUT /ports/N`); bmv2 has neither, so they are left out for it.

Ready means: the process is alive and its network namespace has a TCP socket listening on each
of its ports (P4Runtime, and statistics where it has them), read from /proc/PID/net/tcp{,6}.
Those tables show the sockets of the process's own namespace, so this works alike for a switch
in the caller's namespace and one started through `ip netns exec`. Polled until a deadline; no
fixed sleeps.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CPU_PORT = 255  # p4src/headers.p4 CPU_PORT
TCP_LISTEN = "0A"  # the `st` column of /proc/net/tcp for a listening socket


class SwitchError(Exception):
    pass


def is_bmv2(binary: str | Path) -> bool:
    """Whether `binary` is bmv2's simple_switch or simple_switch_grpc.

    Decided by the name of the file it resolves to (through PATH and symlinks): `make build`
    installs p4-switch under bmv2's names too, and those links are p4-switch, with its
    traffic manager and statistics."""
    found = shutil.which(str(binary)) or str(binary)
    return Path(found).resolve().name.startswith("simple_switch")


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


@dataclass
class SwitchProcess:
    """One switch process. `start()` then `wait_ready()`, or use it as a context manager.

    The addresses are fixed when it is made, so after `stop()` and `start()` (a restart) the
    switch comes back where its controller looks for it. Each start appends to `log_path`: the
    command line, then the switch's stdout and stderr. `exec_prefix` runs it elsewhere (`ip
    netns exec NS`); `preexec_fn` runs in the child before the switch (the lab's priority)."""

    binary: str | Path
    interfaces: dict[int, str] = field(default_factory=dict)
    json_path: Path | None = None  # None: --no-p4
    device_id: int = 1
    grpc_addr: str = "127.0.0.1:9559"
    stats_addr: str | None = None
    thrift_port: int | None = None  # the runtime CLI's server (simple_switch_CLI); None: none
    port_config: Path | None = None
    log_path: Path = Path("switch.log")
    exec_prefix: list[str] = field(default_factory=list)
    preexec_fn: Callable[[], None] | None = None
    proc: subprocess.Popen | None = None

    @property
    def bmv2(self) -> bool:
        return is_bmv2(self.binary)

    def command(self) -> list[str]:
        cmd = [*self.exec_prefix, str(self.binary), "--device-id", str(self.device_id)]
        for port, iface in sorted(self.interfaces.items()):
            cmd += ["-i", f"{port}@{iface}"]
        if self.thrift_port is not None:
            cmd += ["--thrift-port", str(self.thrift_port)]
        cmd += [str(self.json_path)] if self.json_path is not None else ["--no-p4"]
        cmd += ["--", "--grpc-server-addr", self.grpc_addr]
        cmd += ["--cpu-port", str(CPU_PORT), "--priority-queues", "8"]
        if not self.bmv2:
            if self.port_config is not None:
                cmd += ["--port-config", str(self.port_config)]
            if self.stats_addr is not None:
                cmd += ["--stats-addr", self.stats_addr]
        return cmd

    def runtime_cli(self) -> list[str]:
        """The command line of the runtime CLI for this switch (commands on its stdin): the
        `simple_switch_CLI` beside the switch's binary (bmv2 installs both in one directory,
        `make build` both names in build/bin), else the one on PATH."""
        if self.thrift_port is None:
            raise SwitchError("the switch was configured without a runtime CLI (thrift_port)")
        beside = Path(self.binary).parent / "simple_switch_CLI"
        found = str(beside) if beside.is_file() else shutil.which("simple_switch_CLI")
        if found is None:
            raise SwitchError(f"no simple_switch_CLI beside {self.binary} nor on PATH")
        return [*self.exec_prefix, found, "--thrift-port", str(self.thrift_port)]

    def ports(self) -> list[int]:
        """The TCP ports the started switch listens on (a stats port 0 is the switch's pick)."""
        ports = [_port(self.grpc_addr)]
        if self.thrift_port is not None:
            ports.append(self.thrift_port)
        if self.stats_addr is not None and not self.bmv2 and _port(self.stats_addr) != 0:
            ports.append(_port(self.stats_addr))
        return ports

    def start(self) -> None:
        cmd = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as log:
            log.write(" ".join(cmd) + "\n")
            log.flush()
            try:
                # Its own session: a Ctrl-C on the terminal reaches the caller, which stops it.
                self.proc = subprocess.Popen(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=self.preexec_fn,
                )
            except OSError as err:
                raise SwitchError(f"cannot start {self.binary}: {err.strerror}") from err

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise SwitchError("the switch was not started")
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def listening(self, port: int) -> bool:
        """Whether the switch's namespace has a socket listening on TCP `port`."""
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                if len(cols) > 3 and cols[3] == TCP_LISTEN:
                    if int(cols[1].rsplit(":", 1)[1], 16) == port:
                        return True
        return False

    def wait_ready(self, timeout: float = 30.0, poll: float = 0.02) -> float:
        """Seconds until the switch listened on all its ports; raises with the log's tail when
        it exited first or did not listen within `timeout`."""
        start = time.monotonic()
        waiting = self.ports()
        while True:
            code = self.proc.poll() if self.proc is not None else None
            if code is not None:
                raise SwitchError(
                    f"{self.binary} exited with status {code} before listening on port "
                    f"{waiting[0]}; its log ({self.log_path}) ends:\n{self.log_tail()}"
                )
            waiting = [p for p in waiting if not self.listening(p)]
            if not waiting:
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise SwitchError(
                    f"{self.binary} (pid {self.pid}) did not listen on port {waiting[0]} "
                    f"within {timeout} s; its log ({self.log_path}) ends:\n{self.log_tail()}"
                )
            time.sleep(poll)

    def stop(self, timeout: float = 10.0, check: bool = False) -> int | None:
        """SIGTERM to our PID, SIGKILL after `timeout`; the exit status (None if never started).
        `check`: the switch must have exited 0 (SwitchError with its log's tail otherwise)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        code = self.proc.returncode
        if check and code != 0:
            raise SwitchError(
                f"{self.binary} exited with status {code}; its log ({self.log_path}) ends:\n"
                f"{self.log_tail()}"
            )
        return code

    def __enter__(self) -> SwitchProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.stop(check=exc_type is None)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no switch log)"
        return "\n".join(f"  | {line}" for line in text[-lines:]) or "(switch log empty)"
