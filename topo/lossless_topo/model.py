"""Topologies as data: hosts, switches, links with rates, loaded from topologies/*.json.

Everything the lab needs beyond the JSON (port numbers, interface names, MACs, link
addresses, routes) is derived here by pure functions, so the same file always gives the same
fabric. Errors name the JSON path (`links[3].b: unknown node 's9'`).
"""

from __future__ import annotations

import ipaddress
import json
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

TOPOLOGY_DIR = Path(__file__).parent / "topologies"
# A link between two switches gets a /31 from this block, in link order.
FABRIC_BLOCK = ipaddress.ip_network("10.255.0.0/16")


class TopologyError(ValueError):
    """A topology file that cannot describe a fabric; the message names the JSON path."""


LAB_V6 = ipaddress.IPv6Network("fd00::/96")


def ipv6_of(ip: ipaddress.IPv4Interface) -> ipaddress.IPv6Interface:
    """The lab's IPv6 plan (ROUTING=bgp): every IPv4 address embedded in fd00::/96, its
    prefix 96 bits longer (a host's /24 a /120, a link's /31 a /127)."""
    address = ipaddress.IPv6Address(int(LAB_V6.network_address) | int(ip.ip))
    return ipaddress.IPv6Interface(f"{address}/{96 + ip.network.prefixlen}")


@dataclass(frozen=True)
class Host:
    name: str
    switch: str
    ip: ipaddress.IPv4Interface
    mac: str

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        """The switch's address on the host's subnet: the first address of the subnet."""
        return next(self.ip.network.hosts())


@dataclass(frozen=True)
class Switch:
    name: str
    index: int
    front_panel_ports: int
    mac: str


@dataclass(frozen=True)
class Endpoint:
    """One end of a link: the node, its port number (switches: 1.., hosts: 0) and interface."""

    node: str
    port: int
    intf: str
    ip: ipaddress.IPv4Interface | None


@dataclass(frozen=True)
class Link:
    a: Endpoint
    b: Endpoint
    rate_mbps: int
    # Propagation delay: `delay_ns`, or `cable_m` at 5 ns/m; 0 when the file gives neither
    # (the lab's veths have none; lossless-sim applies it).
    delay_ns: int = 0


@dataclass
class Topology:
    name: str
    seed: str
    description: str
    chip: str
    hwsku: str
    buffer_bytes: int
    switches: dict[str, Switch]
    hosts: dict[str, Host]
    links: list[Link]
    experiment: dict = field(default_factory=dict)
    # `config_db`: "TABLE|KEY|FIELD" -> value over every switch's generated config_db.json
    # (configdb.configs); KEY may be a glob. How lossless-sim's sweeps reach any config field.
    config_db: dict[str, str] = field(default_factory=dict)

    def switch_links(self, switch: str) -> list[tuple[Endpoint, Endpoint, int]]:
        """(local end, remote end, rate) for every port of `switch`, in port order."""
        out = []
        for link in self.links:
            if link.a.node == switch:
                out.append((link.a, link.b, link.rate_mbps))
            elif link.b.node == switch:
                out.append((link.b, link.a, link.rate_mbps))
        return sorted(out, key=lambda e: e[0].port)

    def host_link(self, host: str) -> tuple[Endpoint, Endpoint, int]:
        for link in self.links:
            if link.a.node == host:
                return link.a, link.b, link.rate_mbps
            if link.b.node == host:
                return link.b, link.a, link.rate_mbps
        raise TopologyError(f"host {host} has no link")

    def max_rate_mbps(self) -> int:
        return max(link.rate_mbps for link in self.links)

    def routes(self, switch: str) -> dict[str, list[Endpoint]]:
        """Host subnet -> the remote ends of this switch's equal-cost next hops (ECMP).

        Only subnets of hosts attached to other switches; a switch's own hosts are connected.
        """
        routes: dict[str, list[Endpoint]] = {}
        for host in self.hosts.values():
            if host.switch == switch:
                continue
            target = _distances(self, host.switch)
            if switch not in target:
                raise TopologyError(f"switches: {switch} has no path to host {host.name}")
            best = target[switch] - 1
            hops = [
                remote
                for _, remote, _ in self.switch_links(switch)
                if remote.node in self.switches and target.get(remote.node) == best
            ]
            routes[str(host.ip.network)] = hops
        return routes


def _distances(topo: Topology, start: str) -> dict[str, int]:
    """Hop counts from `start` over switch-to-switch links (breadth first)."""
    dist = {start: 0}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        for _, remote, _ in topo.switch_links(node):
            if remote.node in topo.switches and remote.node not in dist:
                dist[remote.node] = dist[node] + 1
                todo.append(remote.node)
    return dist


def available() -> list[str]:
    return sorted(p.stem for p in TOPOLOGY_DIR.glob("*.json"))


def load(name_or_path: str) -> Topology:
    """Load a topology by name (topologies/NAME.json) or path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = TOPOLOGY_DIR / f"{name_or_path}.json"
    if not path.exists():
        raise TopologyError(f"{name_or_path}: no such topology (have: {', '.join(available())})")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TopologyError(f"{path}({e.lineno}:{e.colno}): {e.msg}") from e
    return parse(data)


# Fields a topology file may have, per object; anything else is an error at its JSON path, so a
# misspelt parameter is not silently ignored by the lab or the simulator.
TOP_FIELDS = {
    "name",
    "seed",
    "description",
    "chip",
    "hwsku",
    "buffer_bytes",
    "switches",
    "hosts",
    "links",
    "experiment",
    "config_db",
}
SWITCH_FIELDS = {"name", "front_panel_ports"}
HOST_FIELDS = {"name", "switch", "ip"}
LINK_FIELDS = {"a", "b", "rate_mbps", "cable_m", "delay_ns"}
# What seed 003's 7-to-1 experiments (remote PFC test, field test) share.
SEED003_FIELDS = {
    "kind",
    "receiver",
    "senders",
    "roce_priority",
    "tcp_priority",
    "tcp_cc",
    "ecn",
    "nic_cnp_interval_ns",
    "nic_min_rate_mbps",
    "host_latency_ns",
    "quick",
}
EXPERIMENT_FIELDS = {
    "prio-2to1": {
        "kind",
        "lat_host",
        "bw_host",
        "receiver",
        "lat_size",
        "lat_iters",
        "bw_size",
        "bw_seconds",
        "cases",
        "ecn",
        "host_latency_ns",
        "quick",
    },
    "incast": {
        "kind",
        "receiver",
        "senders",
        "priority",
        "size",
        "iters",
        "roce_mtu",
        "cases",
        "host_latency_ns",
        "quick",
    },
    "leafspine": SEED003_FIELDS
    | {
        "mixes",
        "flows_per_sender",
        "sizes",
        "iters",
        "seconds",
        "sfc_threshold_kmax",
        "latency_probe",
    },
    # Seed 003's "issue in field test" and its two observed phenomena (lossless-sim).
    "fieldtest": SEED003_FIELDS | {"latency", "ecn_ratio", "cnp_rate"},
}
# Nanoseconds of propagation per metre of cable (light in fibre or copper at ~2/3 c).
NS_PER_METRE = 5


def _known(data, allowed: set[str], path: str) -> None:
    if not isinstance(data, dict):
        raise TopologyError(f"{path or 'topology'}: expected an object")
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise TopologyError(f"{where}: unknown field (known: {', '.join(sorted(allowed))})")


def _check_experiment(exp: dict) -> None:
    if not exp:
        return
    kind = exp.get("kind")
    if kind not in EXPERIMENT_FIELDS:
        raise TopologyError(
            f"experiment.kind: unknown experiment {kind!r} (known: {', '.join(EXPERIMENT_FIELDS)})"
        )
    fields = EXPERIMENT_FIELDS[kind]
    _known(exp, fields, "experiment")
    _known(exp.get("quick", {}), fields - {"kind", "quick"}, "experiment.quick")


def _delay_ns(raw: dict, path: str) -> int:
    if "delay_ns" in raw and "cable_m" in raw:
        raise TopologyError(f"{path}: give delay_ns or cable_m, not both")
    if "delay_ns" in raw:
        value = raw["delay_ns"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TopologyError(f"{path}.delay_ns: expected a non-negative integer")
        return value
    if "cable_m" in raw:
        value = raw["cable_m"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise TopologyError(f"{path}.cable_m: expected a non-negative number")
        return round(value * NS_PER_METRE)
    return 0


def _get(data: dict, key: str, path: str, kind: type):
    if not isinstance(data, dict) or key not in data:
        raise TopologyError(f"{path}.{key}: missing" if path else f"{key}: missing")
    value = data[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise TopologyError(f"{path + '.' if path else ''}{key}: expected {kind.__name__}")
    return value


def _config_db(data) -> dict[str, str]:
    """The topology's config_db settings, each value as config_db.json writes it (a string)."""
    if not isinstance(data, dict):
        raise TopologyError('config_db: expected an object of "TABLE|KEY|FIELD": value')
    out = {}
    for address, value in data.items():
        parts = address.split("|")
        if len(parts) < 3 or not all(parts):
            raise TopologyError(f'config_db."{address}": expected TABLE|KEY|FIELD')
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float):
            value = str(value)
        elif not isinstance(value, str):
            raise TopologyError(f'config_db."{address}": expected a string, number or boolean')
        out[address] = value
    return out


def parse(data: dict) -> Topology:
    """Build and check a topology from its JSON document."""
    _known(data, TOP_FIELDS, "")
    name = _get(data, "name", "", str)
    switches: dict[str, Switch] = {}
    for i, s in enumerate(_get(data, "switches", "", list)):
        _known(s, SWITCH_FIELDS, f"switches[{i}]")
        sname = _get(s, "name", f"switches[{i}]", str)
        if sname in switches:
            raise TopologyError(f"switches[{i}].name: duplicate node '{sname}'")
        ports = s.get("front_panel_ports", 32)
        switches[sname] = Switch(
            sname, i + 1, ports, f"02:aa:00:00:{(i + 1) >> 8:02x}:{(i + 1) & 255:02x}"
        )
    hosts: dict[str, Host] = {}
    for i, h in enumerate(_get(data, "hosts", "", list)):
        path = f"hosts[{i}]"
        _known(h, HOST_FIELDS, path)
        hname = _get(h, "name", path, str)
        if hname in hosts or hname in switches:
            raise TopologyError(f"{path}.name: duplicate node '{hname}'")
        sw = _get(h, "switch", path, str)
        if sw not in switches:
            raise TopologyError(f"{path}.switch: unknown switch '{sw}'")
        try:
            ip = ipaddress.IPv4Interface(_get(h, "ip", path, str))
        except ValueError as e:
            raise TopologyError(f"{path}.ip: {e}") from e
        if ip.network.prefixlen > 30 or ip.ip == next(ip.network.hosts()):
            raise TopologyError(f"{path}.ip: {ip} leaves no gateway address (the subnet's first)")
        hosts[hname] = Host(hname, sw, ip, f"02:00:00:00:{(i + 1) >> 8:02x}:{(i + 1) & 255:02x}")

    next_port = {s: 1 for s in switches}
    fabric = FABRIC_BLOCK.subnets(new_prefix=31)
    links: list[Link] = []
    seen_hosts: set[str] = set()
    for i, raw in enumerate(_get(data, "links", "", list)):
        path = f"links[{i}]"
        _known(raw, LINK_FIELDS, path)
        a, b = _get(raw, "a", path, str), _get(raw, "b", path, str)
        rate = _get(raw, "rate_mbps", path, int)
        if rate <= 0:
            raise TopologyError(f"{path}.rate_mbps: must be positive, got {rate}")
        for end, node in (("a", a), ("b", b)):
            if node not in switches and node not in hosts:
                raise TopologyError(f"{path}.{end}: unknown node '{node}'")
        if a == b:
            raise TopologyError(f"{path}: a link from {a} to itself")
        if a in hosts and b in hosts:
            raise TopologyError(
                f"{path}: hosts {a} and {b} linked directly (hosts hang off switches)"
            )
        ends = []
        sub = next(fabric) if a in switches and b in switches else None
        for k, node in enumerate((a, b)):
            if node in hosts:
                host = hosts[node]
                other = b if node == a else a
                if other != host.switch:
                    raise TopologyError(
                        f"{path}: host {node} is declared on {host.switch}, not {other}"
                    )
                if node in seen_hosts:
                    raise TopologyError(f"{path}: host {node} has a second link")
                seen_hosts.add(node)
                ends.append(Endpoint(node, 0, f"{node}-eth0", host.ip))
            else:
                port = next_port[node]
                next_port[node] += 1
                if port > switches[node].front_panel_ports:
                    raise TopologyError(
                        f"{path}.{'ab'[k]}: {node} has only "
                        f"{switches[node].front_panel_ports} ports"
                    )
                ip = None
                if sub is not None:
                    ip = ipaddress.IPv4Interface(f"{sub.network_address + k}/31")
                elif a in hosts or b in hosts:
                    host = hosts[a if a in hosts else b]
                    ip = ipaddress.IPv4Interface(f"{host.gateway}/{host.ip.network.prefixlen}")
                ends.append(Endpoint(node, port, f"{node}-eth{port}", ip))
        links.append(Link(ends[0], ends[1], rate, _delay_ns(raw, path)))
    for hname in hosts:
        if hname not in seen_hosts:
            raise TopologyError(f"hosts: {hname} has no link")
    nets = [h.ip.network for h in hosts.values()]
    for i, n in enumerate(nets):
        for m in nets[i + 1 :]:
            if n.overlaps(m):
                raise TopologyError(f"hosts: subnets {n} and {m} overlap")
    experiment = data.get("experiment", {})
    _check_experiment(experiment)
    topo = Topology(
        name=name,
        seed=data.get("seed", ""),
        description=data.get("description", ""),
        chip=data.get("chip", "trident3"),
        hwsku=data.get("hwsku", ""),
        buffer_bytes=_get(data, "buffer_bytes", "", int),
        switches=switches,
        hosts=hosts,
        links=links,
        experiment=experiment,
        config_db=_config_db(data.get("config_db", {})),
    )
    for s in switches:
        topo.routes(s)  # every host reachable from every switch
    return topo


@dataclass(frozen=True)
class Scale:
    """Link rates scaled to what the machine sustains, by time dilation.

    Rates are multiplied by `factor`; durations (DCQCN timers, CNP and SFC intervals) divided
    by it; byte quantities (buffers, ECN thresholds, headroom) stay, since a queue of B bytes
    at rate R x factor drains in the same number of dilated microseconds. Latencies measured
    in the lab are multiplied by `factor` to report them at the nominal rate.
    """

    factor: Fraction
    nominal_mbps: int

    @classmethod
    def for_topology(cls, topo: Topology, lab_link_mbps: int) -> Scale:
        if lab_link_mbps <= 0:
            raise TopologyError(f"lab link rate must be positive, got {lab_link_mbps} Mb/s")
        nominal = topo.max_rate_mbps()
        return cls(min(Fraction(1), Fraction(lab_link_mbps, nominal)), nominal)

    def rate_mbps(self, nominal_mbps: float) -> int:
        return max(1, round(nominal_mbps * self.factor))

    def duration_us(self, nominal_us: float) -> float:
        return float(nominal_us / self.factor)

    def nominal_latency_us(self, measured_us: float) -> float:
        return float(measured_us * self.factor)

    def describe(self) -> str:
        return (
            f"link-rate scale factor {self.factor} ({float(self.factor):.6g}): "
            f"{self.nominal_mbps} Mb/s links run at {self.rate_mbps(self.nominal_mbps)} Mb/s; "
            f"rates x{float(self.factor):.6g}, timers x{float(1 / self.factor):.6g}, "
            "byte thresholds unchanged, latencies reported x factor"
        )
