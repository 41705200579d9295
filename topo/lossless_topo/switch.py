"""The Mininet switch class: one `$SWITCH` process per node, loaded through lossless-ctl.

The process (command line, readiness, stop) is lossless_kit's SwitchProcess. p4-switch adds
`--port-config FILE` and `--stats-addr ADDR` (HTTP: GET /stats, PUT /ports/N); bmv2's
simple_switch_grpc has neither, so with it the traffic manager's port rates, PFC reception and
the stats endpoint are missing, and the lab says so (`missing_features`).
"""

from __future__ import annotations

import os
from pathlib import Path

from mininet.node import Switch

from lossless_kit.switch import SwitchProcess, free_port, is_bmv2

from .cleanup import RunState

# The lab's switches and NICs stand for hardware, whose reaction (a PFC frame generated, a
# sender pausing) takes nanoseconds and is not dilated with the link rates: a few milliseconds
# of scheduling delay behind other work on the machine already exceed seed 000's headroom
# (13 KB, 4 ms at 25 Mb/s). Their processes run ahead of ordinary ones.
HARDWARE_NICE = -10


def hardware_priority() -> None:
    """Popen's preexec_fn for a process that stands for hardware (threads inherit it)."""
    os.nice(HARDWARE_NICE)


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
        self.state = state
        self.startup_timeout_s = startup_timeout_s
        self.port_config = workdir / f"{name}.ports.json"
        self.log = workdir / f"{name}.log"
        self.process = SwitchProcess(
            switch_bin,
            json_path=json_path,
            device_id=device_id,
            grpc_addr=f"127.0.0.1:{free_port()}",
            stats_addr=f"127.0.0.1:{free_port()}",
            log_path=self.log,
            preexec_fn=hardware_priority,
        )

    @property
    def device_id(self) -> int:
        return self.process.device_id

    @property
    def grpc_addr(self) -> str:
        return self.process.grpc_addr

    @property
    def stats_addr(self) -> str | None:
        return None if self.process.bmv2 else self.process.stats_addr

    def data_ports(self) -> dict[int, str]:
        return {port: intf.name for intf, port in self.ports.items() if intf.name != "lo"}

    def start(self, controllers):  # noqa: ARG002 (Mininet's signature; no OpenFlow controller)
        self.state.add_interfaces(list(self.data_ports().values()))
        self.process.interfaces = self.data_ports()
        self.process.port_config = self.port_config if self.port_config.exists() else None
        self.process.start()
        self.state.add_process(self.process.pid, f"switch {self.name}")
        self.process.wait_ready(self.startup_timeout_s)

    def stop(self, deleteIntfs=True):  # noqa: N803 (Mininet's keyword)
        self.process.stop(timeout=5)
        super().stop(deleteIntfs)
