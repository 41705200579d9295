"""A topology brought up in Mininet: host namespaces, veth links, one switch process per node.

Hosts get their address, a default route to the switch's address on their subnet and a
static ARP entry for it (the pipeline routes; nothing answers ARP unless `lossless-ctl run`
does, and the lab does not need it). Checksum offloads are turned off on host interfaces, as
for any software switch on veths: the switch sees packets before the kernel fills checksums.
Host-side links are shaped to the scaled rate with tbf, so iperf3's TCP cannot enter the
switch faster than a NIC could.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from mininet.link import TCLink
from mininet.net import Mininet
from mininet.node import Host

from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.counters import CLASSES
from lossless_ctl.p4info import P4InfoIndex, read_p4info
from lossless_kit.frr import FrrError
from lossless_kit.frr import missing as frr_missing
from lossless_kit.switch import SwitchError, is_bmv2

from . import configdb
from .bgp import BgpError, BgpFabric
from .cleanup import RunState
from .model import Scale, Topology
from .switch import LosslessSwitch

# The host NIC's transmit queue under the shaper, in (lab) milliseconds.
HOST_QUEUE_MS = 100
# A load takes seconds; one that hangs (seen once: a leaf-spine reload stuck for 10 minutes)
# fails the run, naming the switch, instead of holding the lab up.
CTL_TIMEOUT_S = 180


class LabError(RuntimeError):
    pass


def yaml_flow(value) -> str:
    """JSON, except that mapping keys made of digits stay unquoted (YAML integers).

    p4-switch parses a PUT body as YAML, where `"3"` is a string and its `pfc_to_queue` keys
    are numbers; the port-config file (JSON, whose keys are always strings) is read as JSON.
    """
    if isinstance(value, dict):
        items = (
            f"{k if str(k).isdigit() else json.dumps(str(k))}: {yaml_flow(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(yaml_flow(v) for v in value) + "]"
    return json.dumps(value)


def put_port(addr: str, port: dict) -> None:
    """Reconfigure one port of a running p4-switch (PUT /ports/N on its stats address)."""
    url = f"http://{addr}/ports/{port['port']}"
    req = urllib.request.Request(url, data=yaml_flow(port).encode(), method="PUT")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()
    except urllib.error.HTTPError as e:
        raise LabError(f"PUT {url}: {e.code} {e.read().decode(errors='replace').strip()}") from e
    except OSError as e:
        raise LabError(f"PUT {url}: {e}") from e


@dataclass
class Pipeline:
    """The compiled P4 program the switches run (the compiler's output directory)."""

    directory: Path
    name: str = "lossless"

    @property
    def json(self) -> Path:
        return self.directory / f"{self.name}.json"

    @property
    def p4info(self) -> Path:
        return self.directory / f"{self.name}.p4info.txtpb"


def preflight(switch_bin: str, pipeline: Pipeline, routing: str = "static") -> list[str]:
    """Everything missing before a run can start, each with what provides it."""
    missing = []
    if routing == "bgp":
        missing += [
            f"{d}: FRR from Debian (`make deps` installs frr)"
            for d in frr_missing(("zebra", "bgpd"))
        ]
    found = shutil.which(switch_bin) if os.sep not in switch_bin else switch_bin
    if not found or not os.access(found, os.X_OK):
        missing.append(
            f"switch binary {switch_bin}: not found or not executable (the p4-switch crate "
            "builds it into build/bin with `make build`; SWITCH=simple_switch_grpc selects bmv2)"
        )
    for path in (pipeline.json, pipeline.p4info):
        if not path.exists():
            missing.append(
                f"{path}: missing (`make p4` compiles p4src/ with $P4C; the compiler must emit "
                "BMv2 JSON and P4Info)"
            )
    for tool in ("roce-host", "iperf3", "tcpdump", "mnexec", "ethtool"):
        if not shutil.which(tool):
            missing.append(f"{tool}: not on PATH (`make run` installs and builds it)")
    if os.geteuid() != 0:
        missing.append("root: Mininet needs network namespaces and veths (run as root)")
    return missing


@dataclass
class Lab:
    topo: Topology
    scale: Scale
    switch_bin: str
    pipeline: Pipeline
    workdir: Path
    state: RunState
    ctl: list[str] = field(default_factory=lambda: [sys.executable, "-m", "lossless_ctl.cli"])
    net: Mininet | None = None
    # "static": the configs' STATIC_ROUTEs, loaded by `lossless-ctl load`; "bgp": FRR on every
    # switch over FPM into `lossless-ctl run` (bgp.py).
    routing: str = "static"
    bgp: BgpFabric | None = None

    def config_path(self, switch: str) -> Path:
        return self.workdir / "config" / f"{switch}.config_db.json"

    def write_configs(self, variant: configdb.Variant) -> dict[str, Path]:
        out = {}
        cfgs = configdb.configs(
            self.topo, variant, self.scale, static_routes=self.routing == "static"
        )
        for sw, cfg in cfgs.items():
            path = self.config_path(sw)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cfg, indent=2) + "\n")
            out[sw] = path
        return out

    def start(self, variant: configdb.Variant) -> None:
        """Bring up hosts, links and switches, and load every switch's config."""
        self.bring_up(variant)
        if self.routing == "bgp":
            self.bgp = BgpFabric(self)
            try:
                self.bgp.start()
            except (BgpError, FrrError, OSError, subprocess.CalledProcessError) as e:
                raise LabError(f"ROUTING=bgp: {e}") from e
        else:
            self.load(variant)

    def bring_up(self, variant: configdb.Variant) -> None:
        """Hosts, links and switch processes (each waited for), without loading configs."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        configs = self.write_configs(variant)
        # The switch reads its port rates, PFC reception and queues at start.
        self._ctl_all(
            {
                sw: [
                    "port-config",
                    "--config",
                    str(path),
                    "-o",
                    str(self.workdir / f"{sw}.ports.json"),
                ]
                for sw, path in configs.items()
            }
        )
        net = Mininet(topo=None, controller=None, build=False, autoSetMacs=False)
        self.net = net
        for sw in self.topo.switches.values():
            net.addSwitch(
                sw.name,
                cls=LosslessSwitch,
                switch_bin=self.switch_bin,
                json_path=self.pipeline.json,
                device_id=sw.index,
                workdir=self.workdir,
                state=self.state,
            )
        for host in self.topo.hosts.values():
            net.addHost(host.name, cls=Host, ip=str(host.ip), mac=host.mac)
        for link in self.topo.links:
            params = {}
            for end, key in ((link.a, "params1"), (link.b, "params2")):
                if end.node in self.topo.hosts:
                    params[key] = {
                        "bw": self.scale.rate_mbps(link.rate_mbps),
                        # tbf: htb at these rates warns about its quantum on every link
                        "use_tbf": True,
                        "latency_ms": HOST_QUEUE_MS,
                    }
            net.addLink(
                link.a.node,
                link.b.node,
                port1=link.a.port or None,
                port2=link.b.port or None,
                intfName1=link.a.intf,
                intfName2=link.b.intf,
                cls=TCLink,
                **params,
            )
        net.build()
        for host in net.hosts:
            self.state.add_process(host.pid, f"host {host.name}")
        # veths start at 1500 bytes; RoCE frames of a 4096-byte MTU are 4174 (seed 000), so
        # every link carries the switches' port MTU, as the fabric's cables would.
        for link in net.links:
            for intf in (link.intf1, link.intf2):
                intf.node.cmd(f"ip link set dev {intf.name} mtu {configdb.PORT_MTU}")
        for host in self.topo.hosts.values():
            node = net[host.name]
            intf = f"{host.name}-eth0"
            node.cmd(f"ethtool -K {intf} tx off rx off tso off gso off gro off >/dev/null 2>&1")
            node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            node.cmd(f"ip route replace default via {host.gateway} dev {intf}")
            node.cmd(
                f"ip neigh replace {host.gateway} lladdr {self.topo.switches[host.switch].mac}"
                f" dev {intf} nud permanent"
            )
        for sw in net.switches:
            sw.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        try:
            net.start()
        except SwitchError as e:
            raise LabError(str(e)) from e

    def load(self, variant: configdb.Variant) -> None:
        """Write every switch's config for `variant` through the controller (reconciling)."""
        if self.bgp is not None:
            self.write_configs(variant)
            try:
                self.bgp.reload()
            except BgpError as e:
                raise LabError(str(e)) from e
            return
        configs = self.write_configs(variant)
        self._ctl_all(
            {
                sw: [
                    "load",
                    "--config",
                    str(path),
                    "--switch",
                    self.net[sw].grpc_addr,
                    "--pipeline",
                    str(self.pipeline.directory),
                    "--device-id",
                    str(self.net[sw].device_id),
                    "--port-config",
                    str(self.workdir / f"{sw}.ports.json"),
                    "--reconcile",
                    "--no-progress",
                ]
                for sw, path in configs.items()
            }
        )
        # The switch reads --port-config only at start; a case that turns PFC on or off
        # changes which priorities its ports obey, so the new port configuration goes live.
        for sw, addr in self.stats_addrs().items():
            doc = json.loads((self.workdir / f"{sw}.ports.json").read_text())
            for port in doc.get("ports", []):
                put_port(addr, port)

    def _ctl_all(self, calls: dict[str, list[str]]) -> None:
        """Run one lossless-ctl per switch, all at once; raise with every failure's output.

        Each call mostly starts Python or waits on its switch's P4Runtime server, so a fabric
        of ten switches done one after another takes a minute.
        """
        procs = {
            sw: subprocess.Popen(
                [*self.ctl, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for sw, args in calls.items()
        }
        failed = []
        deadline = time.monotonic() + CTL_TIMEOUT_S
        for sw, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                failed.append(
                    f"{sw}: lossless-ctl {' '.join(calls[sw])} did not finish in "
                    f"{CTL_TIMEOUT_S} s (its switch's log: {self.workdir / sw}.log):\n{out}"
                )
                continue
            if proc.returncode != 0:
                failed.append(f"{sw}: lossless-ctl {' '.join(calls[sw])} failed:\n{out}")
        if failed:
            raise LabError("\n".join(failed))

    def pg_drops(self, pg: int) -> int:
        """Packets every switch's pipeline dropped at admission into priority group `pg`.

        The pipeline's `pg_dropped` counter (p4src/README.md), over P4Runtime: a lossy PG above
        its threshold or a lossless PG beyond its headroom, indexed port * 8 + PG.
        """
        index = P4InfoIndex(read_p4info(self.pipeline.p4info))
        total = 0
        for sw in self.net.switches:
            with P4RuntimeClient(sw.grpc_addr, device_id=sw.device_id) as client:
                client.connect()
                entity = client.pb.Entity()
                entity.counter_entry.counter_id = index.counter("pg_dropped").preamble.id
                total += sum(
                    e.counter_entry.data.packet_count
                    for e in client.read([entity])
                    if e.counter_entry.index.index % CLASSES == pg
                )
        return total

    def restart_switch(self, name: str) -> None:
        """Stop a switch's process and start it again, empty (no pipeline, no entries): its
        controller, if one runs (ROUTING=bgp), reconnects and replays it."""
        process = self.net[name].process
        process.stop(timeout=5)
        process.start()
        self.state.add_process(process.pid, f"switch {name}")
        try:
            process.wait_ready()
        except SwitchError as e:
            raise LabError(str(e)) from e

    def stats_addrs(self) -> dict[str, str]:
        if self.net is None or is_bmv2(self.switch_bin):
            return {}
        return {sw.name: sw.stats_addr for sw in self.net.switches}

    def stop(self) -> None:
        if self.bgp is not None:
            self.bgp.stop()
            self.bgp = None
        if self.net is not None:
            self.net.stop()
            self.net = None
