"""The switch process: its command line, start, readiness and stop, by PID.

Both switches take simple_switch_grpc's command line: `-i PORT@IFACE`, `--device-id`,
`--no-p4` (the pipeline comes over P4Runtime), and after `--` the target options
`--grpc-server-addr`, `--cpu-port`, `--priority-queues`. p4-switch also reads the traffic
manager's port configuration (`--port-config`, from `lossless-ctl port-config`) and serves its
statistics (`--stats-addr`, `GET /stats`), which tests use to see that a pause took effect.

Ready means: the process is alive and its network namespace has a TCP socket listening on the
P4Runtime port, read from /proc/PID/net/tcp{,6} (which show the sockets of the process's own
namespace), polled until a deadline. No fixed sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CPU_PORT = 255  # p4src/headers.p4 CPU_PORT
TCP_LISTEN = "0A"


class SwitchError(Exception):
    pass


def is_bmv2(switch: str) -> bool:
    """Whether SWITCH is bmv2's simple_switch_grpc (tests skip bmv2's missing features)."""
    return Path(switch).name == "simple_switch_grpc"


@dataclass
class SwitchProcess:
    binary: str
    interfaces: dict[int, str]
    grpc_port: int = 9559
    grpc_host: str = "0.0.0.0"
    port_config: Path | None = None
    stats_addr: str | None = None
    exec_prefix: list[str] = field(default_factory=list)
    log_path: Path = Path("switch.log")
    device_id: int = 1
    proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        cmd = [*self.exec_prefix, self.binary, "--device-id", str(self.device_id)]
        for port, iface in sorted(self.interfaces.items()):
            cmd += ["-i", f"{port}@{iface}"]
        cmd += ["--no-p4", "--"]
        cmd += ["--grpc-server-addr", f"{self.grpc_host}:{self.grpc_port}"]
        cmd += ["--cpu-port", str(CPU_PORT), "--priority-queues", "8"]
        if not is_bmv2(self.binary):
            if self.port_config is not None:
                cmd += ["--port-config", str(self.port_config)]
            if self.stats_addr is not None:
                cmd += ["--stats-addr", self.stats_addr]
        return cmd

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as err:
                raise SwitchError(f"cannot start {self.binary}: {err.strerror}") from err

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise SwitchError("the switch was not started")
        return self.proc.pid

    def listening(self) -> bool:
        """Whether the switch's namespace has a socket listening on the P4Runtime port."""
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                if len(cols) > 3 and cols[3] == TCP_LISTEN:
                    if int(cols[1].rsplit(":", 1)[1], 16) == self.grpc_port:
                        return True
        return False

    def wait_ready(self, timeout: float = 30.0, poll: float = 0.02) -> float:
        """Seconds until the switch listened; raises with the log's tail when it exited first
        or did not listen within `timeout`."""
        start = time.monotonic()
        while True:
            code = self.proc.poll() if self.proc is not None else None
            if code is not None:
                raise SwitchError(
                    f"{self.binary} exited with status {code} before listening on "
                    f"port {self.grpc_port}\n{self.log_tail()}"
                )
            if self.listening():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise SwitchError(
                    f"{self.binary} (pid {self.pid}) did not listen on port {self.grpc_port} "
                    f"within {timeout} s\n{self.log_tail()}"
                )
            time.sleep(poll)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM to our PID, SIGKILL after `timeout`; the exit status (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no switch log)"
        return "\n".join(f"  | {line}" for line in text[-lines:]) or "(switch log empty)"
