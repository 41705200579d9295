"""The Mininet switch class: one `$SWITCH` process per node, loaded through lossless-ctl.

The command line is simple_switch_grpc's (`-i PORT@IFNAME`, `--device-id`,
`--priority-queues 8`, the JSON, `--grpc-server-addr`, `--cpu-port`; bmv2 takes the last two
as target options after `--`, p4-switch as its own options). p4-switch adds
`--port-config FILE` and `--stats-addr ADDR` (HTTP: GET /stats, PUT /ports/N); bmv2's
simple_switch_grpc has neither, so with it the traffic manager's port rates, PFC reception and
the stats endpoint are missing, and the lab says so (`missing_features`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mininet.node import Switch

from .cleanup import RunState

CPU_PORT = 255
# The lab's switches and NICs stand for hardware, whose reaction (a PFC frame generated, a
# sender pausing) takes nanoseconds and is not dilated with the link rates: a few milliseconds
# of scheduling delay behind other work on the machine already exceed seed 000's headroom
# (13 KB, 4 ms at 25 Mb/s). Their processes run ahead of ordinary ones.
HARDWARE_NICE = -10


def hardware_priority() -> None:
    """Popen's preexec_fn for a process that stands for hardware (threads inherit it)."""
    os.nice(HARDWARE_NICE)


class SwitchError(RuntimeError):
    pass


def is_bmv2(switch_bin: str) -> bool:
    return Path(switch_bin).name.startswith("simple_switch")


def missing_features(switch_bin: str) -> list[str]:
    """What the lab cannot measure with this switch binary."""
    if not is_bmv2(switch_bin):
        return []
    return [
        "--port-config: no line-rate ports, per-queue scheduling or PFC reception (bmv2 has no "
        "traffic manager rates in bits/s)",
        "--stats-addr: no queue occupancy, watermark or pause statistics (plots of queues and "
        "PFC timelines are empty)",
    ]


def command(
    switch_bin: str,
    *,
    ports: dict[int, str],
    device_id: int,
    grpc_port: int,
    json_path: Path,
    port_config: Path | None,
    stats_port: int | None,
) -> list[str]:
    cmd = [switch_bin, "--device-id", str(device_id), "--priority-queues", "8"]
    for port, intf in sorted(ports.items()):
        cmd += ["-i", f"{port}@{intf}"]
    if not is_bmv2(switch_bin):
        if port_config is not None:
            cmd += ["--port-config", str(port_config)]
        if stats_port is not None:
            cmd += ["--stats-addr", f"127.0.0.1:{stats_port}"]
    cmd.append(str(json_path))
    if is_bmv2(switch_bin):
        cmd.append("--")  # simple_switch_grpc's target options follow
    cmd += ["--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--cpu-port", str(CPU_PORT)]
    return cmd


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Wait until something accepts TCP connections on 127.0.0.1:port, or the process exits."""
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        if proc.poll() is not None:
            raise SwitchError(
                f"{' '.join(proc.args)} exited with {proc.returncode} before listening on "
                f"127.0.0.1:{port}; its log ({log}) ends:\n{tail(log)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SwitchError(
                f"{proc.args[0]} (pid {proc.pid}) did not listen on 127.0.0.1:{port} within "
                f"{timeout_s:.0f} s; its log ({log}) ends:\n{tail(log)}"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortlessSwitch:
    """`switch_bin --no-p4` with no ports and CPU_PORT as its CPU port, for P4Runtime tests.

    Its P4Runtime (`address`) and stats (`stats`) addresses are chosen once, so that after
    `stop()` and `start()` the switch comes back where a controller looks for it; each start
    logs to `workdir/p4-switch-N.log`. `port_config`: a traffic-manager file (`--port-config`).
    """

    def __init__(
        self,
        switch_bin: Path,
        device_id: int,
        workdir: Path,
        port_config: Path | None = None,
    ):
        self.switch_bin = switch_bin
        self.device_id = device_id
        self.workdir = workdir
        self.port_config = port_config
        self.grpc_port, self.stats_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.grpc_port}"
        self.stats = f"127.0.0.1:{self.stats_port}"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self.log = self.workdir / f"p4-switch-{self.starts}.log"
        cmd = [
            self.switch_bin, "--no-p4", "--device-id", str(self.device_id),
            "--cpu-port", str(CPU_PORT), "--grpc-server-addr", self.address,
            "--stats-addr", self.stats,
        ]  # fmt: skip
        if self.port_config is not None:
            cmd += ["--port-config", str(self.port_config)]
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        wait_for_port(self.grpc_port, self.proc, self.log, timeout_s=20)
        wait_for_port(self.stats_port, self.proc, self.log, timeout_s=10)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM; the switch must exit 0 (SwitchError with its log's tail otherwise)."""
        if self.proc is None:
            return
        self.proc.terminate()
        self.proc.wait(timeout=10)
        if self.proc.returncode != 0:
            raise SwitchError(
                f"{self.switch_bin} exited {self.proc.returncode}; its log ({self.log}) "
                f"ends:\n{tail(self.log)}"
            )


@contextmanager
def switch_without_program(switch_bin: Path, device_id: int, workdir: Path) -> Iterator[str]:
    """A started PortlessSwitch for the `with` block; yields its P4Runtime address."""
    sw = PortlessSwitch(switch_bin, device_id, workdir)
    sw.start()
    try:
        yield sw.address
    finally:
        sw.stop()


class LosslessSwitch(Switch):
    """A Mininet switch node running `switch_bin` on its interfaces.

    Parameters (through Mininet's `addSwitch(name, cls=LosslessSwitch, ...)`): `switch_bin`,
    `json_path` (the BMv2 JSON), `device_id`, `workdir` (logs, port config), `state` (the
    run's RunState), `startup_timeout_s`.
    """

    def __init__(
        self,
        name,
        switch_bin: str,
        json_path: Path,
        device_id: int,
        workdir: Path,
        state: RunState,
        startup_timeout_s: float = 30.0,
        **params,
    ):
        super().__init__(name, **params)
        self.switch_bin = switch_bin
        self.json_path = json_path
        self.device_id = device_id
        self.workdir = workdir
        self.state = state
        self.startup_timeout_s = startup_timeout_s
        self.grpc_port = free_port()
        self.stats_port = free_port()
        self.port_config = workdir / f"{name}.ports.json"
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def stats_addr(self) -> str | None:
        return None if is_bmv2(self.switch_bin) else f"127.0.0.1:{self.stats_port}"

    def data_ports(self) -> dict[int, str]:
        return {port: intf.name for intf, port in self.ports.items() if intf.name != "lo"}

    def start(self, controllers):  # noqa: ARG002 (Mininet's signature; no OpenFlow controller)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state.add_interfaces(list(self.data_ports().values()))
        cmd = command(
            self.switch_bin,
            ports=self.data_ports(),
            device_id=self.device_id,
            grpc_port=self.grpc_port,
            json_path=self.json_path,
            port_config=self.port_config if self.port_config.exists() else None,
            stats_port=self.stats_port,
        )
        with open(self.log, "w") as log:
            log.write(" ".join(cmd) + "\n")
            log.flush()
            # Its own session: Ctrl-C on the terminal reaches the runner, which stops it.
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=hardware_priority,
            )
        self.state.add_process(self.proc.pid, f"switch {self.name}")
        wait_for_port(self.grpc_port, self.proc, self.log, self.startup_timeout_s)

    def stop(self, deleteIntfs=True):  # noqa: N803 (Mininet's keyword)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, 9)
                self.proc.wait()
        super().stop(deleteIntfs)
