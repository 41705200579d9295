"""SONiC config_db.json: parsing, reference resolution and validation.

`parse(tables, chip=None)` turns the JSON object into a `ConfigDb` of typed records and a list of
`Issue`s. Every problem is collected (not just the first) and named `TABLE|key|field: reason`,
as SONiC's own tools do; errors make the config unusable, warnings (chip limits, settings the
pipeline does not model) do not. Key syntax follows SONiC: `Ethernet0|3-4` (port, then a
number, range or comma list), port lists `Ethernet0,Ethernet4|3`, references
`[BUFFER_PROFILE|pg_lossless_profile]`, and every value a string (numbers as JSON numbers are
accepted too).

Tables read: DEVICE_METADATA, PORT, INTERFACE, LOOPBACK_INTERFACE, VLAN, VLAN_MEMBER,
VLAN_INTERFACE, STATIC_ROUTE, NEIGH, DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP, TC_TO_PRIORITY_GROUP_MAP,
TC_TO_QUEUE_MAP, MAP_PFC_PRIORITY_TO_QUEUE (also accepted as PFC_PRIORITY_TO_QUEUE_MAP),
PORT_QOS_MAP, BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG, BUFFER_QUEUE, WRED_PROFILE, SCHEDULER,
QUEUE, PFC_WD and SFC (this project's table, see control/README.md). Other tables get a warning
that they are not programmed.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lossless_ctl.chips import CHIPS, Chip, chip_for_platform

IpInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def route_key(prefix: IpNetwork) -> bytes:
    """A prefix as the route path indexes it: the network address (4 or 16 bytes) then the
    prefix length, the form the FPM decoder gives (hashing an ipaddress network costs a
    microsecond, building one three; at 265k routes each is a fifth of a second)."""
    return prefix.network_address.packed + bytes((prefix.prefixlen,))


def network_of(key: bytes) -> IpNetwork:
    """The prefix of a route key."""
    if len(key) == 5:
        return ipaddress.IPv4Network((key[:4], key[4]))
    return ipaddress.IPv6Network((key[:16], key[16]))


# PFC priorities, traffic classes, PGs and queues are all 0..7 on this pipeline.
CLASSES = 8
# SFC variants (p4src/README.md, "Source Flow Control"); the first of each is the default, the
# public reference's behaviour.
SFC_DEDUP = ("two_bank", "per_source", "none")
SFC_SRC_PORT = ("data", "fixed")
# PORT_QOS_MAP|<port>|pfc_quanta (this project's field; SONiC has none): the pause time the
# port's XOFF frames ask for, in 512-bit-time quanta; 0 would be an XON.
PFC_QUANTA_DEFAULT = 0xFFFF


@dataclass(frozen=True)
class Issue:
    table: str
    key: str
    field: str | None
    reason: str
    error: bool = True

    @property
    def where(self) -> str:
        parts = [self.table, self.key] + ([self.field] if self.field else [])
        return "|".join(p for p in parts if p)

    def __str__(self) -> str:
        level = "error" if self.error else "warning"
        return f"{level}: {self.where}: {self.reason}"


class ConfigError(Exception):
    """A config with errors; `issues` holds every one of them (and the warnings)."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        errors = [i for i in issues if i.error]
        super().__init__(f"{len(errors)} error(s) in config_db: " + "; ".join(map(str, errors)))


@dataclass(frozen=True)
class Port:
    name: str
    index: int | None  # the switch's port number
    speed_mbps: int
    mtu: int
    admin_up: bool


@dataclass(frozen=True)
class RouterIp:
    ifname: str  # Ethernet0, Vlan1000, Loopback0
    ip: IpInterface


@dataclass(frozen=True)
class Vlan:
    name: str
    vlanid: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class StaticRoute:
    key: str
    prefix: IpNetwork
    nexthops: tuple[tuple[IpAddress, str | None], ...]  # (ip, ifname or None)
    blackhole: bool


@dataclass(frozen=True)
class Neighbor:
    ifname: str
    ip: IpAddress
    mac: str


@dataclass(frozen=True)
class QosMap:
    kind: str  # the SONiC table name
    name: str
    entries: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PortQos:
    port: str
    pfc_enable: tuple[int, ...]
    trust_dscp: bool
    dscp_to_tc_map: str | None
    dot1p_to_tc_map: str | None
    tc_to_pg_map: str | None
    tc_to_queue_map: str | None
    pfc_to_queue_map: str | None
    pfc_quanta: int = PFC_QUANTA_DEFAULT


@dataclass(frozen=True)
class BufferPool:
    name: str
    ingress: bool
    dynamic: bool
    size: int
    xoff: int


@dataclass(frozen=True)
class BufferProfile:
    name: str
    pool: str
    size: int
    xoff: int | None
    xon: int | None
    xon_offset: int | None
    static_th: int | None
    dynamic_th: int | None

    @property
    def lossless(self) -> bool:
        return self.xoff is not None


@dataclass(frozen=True)
class WredProfile:
    name: str
    ecn_green: bool
    green_min: int
    green_max: int
    green_drop_probability: int  # percent


@dataclass(frozen=True)
class Scheduler:
    name: str
    type: str  # STRICT, DWRR, WRR
    weight: int | None


@dataclass(frozen=True)
class QueueSettings:
    port: str
    queue: int
    scheduler: str | None
    wred_profile: str | None


@dataclass(frozen=True)
class PfcWatchdog:
    port: str
    action: str
    detection_ms: int
    restoration_ms: int


@dataclass(frozen=True)
class SfcQueue:
    port: str
    queue: int
    threshold: int
    target: int


@dataclass(frozen=True)
class CoppGroup:
    name: str
    trap_action: str
    queue: int | None
    meter_type: str  # packets or bytes
    mode: str  # sr_tcm or tr_tcm
    cir: int | None
    cbs: int | None
    pir: int | None
    pbs: int | None
    red_action: str


@dataclass(frozen=True)
class CoppTrap:
    name: str
    trap_ids: tuple[str, ...]
    group: str


@dataclass
class ConfigDb:
    """The parsed config: records keyed as config_db keys them, ready for SAI derivation."""

    mac: str | None = None
    hostname: str | None = None
    chip: Chip | None = None
    ports: dict[str, Port] = field(default_factory=dict)
    router_ips: list[RouterIp] = field(default_factory=list)
    rif_ports: set[str] = field(default_factory=set)  # ports with an INTERFACE (routed)
    vlans: dict[str, Vlan] = field(default_factory=dict)
    static_routes: list[StaticRoute] = field(default_factory=list)
    neighbors: list[Neighbor] = field(default_factory=list)
    qos_maps: dict[tuple[str, str], QosMap] = field(default_factory=dict)
    port_qos: dict[str, PortQos] = field(default_factory=dict)
    buffer_pools: dict[str, BufferPool] = field(default_factory=dict)
    buffer_profiles: dict[str, BufferProfile] = field(default_factory=dict)
    buffer_pgs: dict[tuple[str, int], str] = field(default_factory=dict)  # -> profile
    buffer_queues: dict[tuple[str, int], str] = field(default_factory=dict)
    wred_profiles: dict[str, WredProfile] = field(default_factory=dict)
    schedulers: dict[str, Scheduler] = field(default_factory=dict)
    queues: dict[tuple[str, int], QueueSettings] = field(default_factory=dict)
    pfc_wd: dict[str, PfcWatchdog] = field(default_factory=dict)
    pfcwd_poll_interval_ms: int | None = None
    sfc_queues: dict[tuple[str, int], SfcQueue] = field(default_factory=dict)
    sfc_host_ports: set[str] = field(default_factory=set)
    sfc_min_interval_us: int = 0
    sfc_signal_dscp: int = 0
    sfc_dedup: str = "two_bank"
    sfc_version: int = 0
    sfc_src_port: str = "data"
    copp_groups: dict[str, CoppGroup] = field(default_factory=dict)
    copp_traps: dict[str, CoppTrap] = field(default_factory=dict)


QOS_MAP_TABLES = {
    # table: (key range, value range)
    "DSCP_TO_TC_MAP": (63, 7),
    "DOT1P_TO_TC_MAP": (7, 7),
    "TC_TO_PRIORITY_GROUP_MAP": (7, 7),
    "TC_TO_QUEUE_MAP": (7, 7),
    "MAP_PFC_PRIORITY_TO_QUEUE": (7, 7),
}
# Older and newer SONiC spell the PFC priority map differently; both mean the same table.
TABLE_ALIASES = {"PFC_PRIORITY_TO_QUEUE_MAP": "MAP_PFC_PRIORITY_TO_QUEUE"}

PORT_QOS_BINDINGS = {
    "dscp_to_tc_map": "DSCP_TO_TC_MAP",
    "dot1p_to_tc_map": "DOT1P_TO_TC_MAP",
    "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
    "tc_to_queue_map": "TC_TO_QUEUE_MAP",
    "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
}

# Fields each table may carry; others get a warning (a typo must not pass silently).
KNOWN_FIELDS: dict[str, set[str]] = {
    "DEVICE_METADATA": {
        "mac", "hostname", "hwsku", "platform", "type", "bgp_asn", "buffer_model",
        "default_bgp_status", "default_pfcwd_status", "deployment_id", "docker_routing_config_mode",
        "region", "cloudtype", "synchronous_mode", "subtype",
    },
    "PORT": {
        "admin_status", "speed", "mtu", "lanes", "alias", "index", "fec", "autoneg",
        "description", "pfc_asym", "tpid", "parent_port", "role",
    },
    "VLAN": {"vlanid", "members", "admin_status", "mtu", "description"},
    "VLAN_MEMBER": {"tagging_mode"},
    "STATIC_ROUTE": {"nexthop", "ifname", "blackhole", "distance", "nexthop-vrf", "advertise"},
    "NEIGH": {"neigh", "family"},
    "PORT_QOS_MAP": set(PORT_QOS_BINDINGS) | {
        "pfc_enable", "trust", "pfcwd_sw_enable", "pfc_quanta",
    },
    "BUFFER_POOL": {"type", "mode", "size", "xoff"},
    "BUFFER_PROFILE": {
        "pool", "size", "xoff", "xon", "xon_offset", "static_th", "dynamic_th",
        "headroom_type",
    },
    "BUFFER_PG": {"profile"},
    "BUFFER_QUEUE": {"profile"},
    "WRED_PROFILE": {
        "ecn", "wred_green_enable", "wred_yellow_enable", "wred_red_enable",
        "green_min_threshold", "green_max_threshold", "green_drop_probability",
        "yellow_min_threshold", "yellow_max_threshold", "yellow_drop_probability",
        "red_min_threshold", "red_max_threshold", "red_drop_probability",
    },
    "SCHEDULER": {"type", "weight", "priority", "meter_type", "pir", "pbs", "cir", "cbs"},
    "QUEUE": {"scheduler", "wred_profile"},
    "PFC_WD": {"action", "detection_time", "restoration_time", "POLL_INTERVAL", "BIG_RED_SWITCH"},
    "SFC": {
        "min_interval_us", "signal_dscp", "dedup", "version", "src_port", "host_facing",
        "threshold", "target",
    },
    "COPP_GROUP": {
        "trap_action", "trap_priority", "queue", "meter_type", "mode", "color", "cir", "cbs",
        "pir", "pbs", "red_action", "yellow_action", "green_action", "genetlink_name",
        "genetlink_mcgrp_name",
    },
    "COPP_TRAP": {"trap_ids", "trap_group", "always_enabled"},
}  # fmt: skip

HANDLED_TABLES = set(KNOWN_FIELDS) | set(QOS_MAP_TABLES) | {
    "INTERFACE", "LOOPBACK_INTERFACE", "VLAN_INTERFACE",
}  # fmt: skip

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
REF_RE = re.compile(r"^\[([A-Z0-9_]+)\|([^\]]+)\]$")
ECN_MODES = {
    "ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red",
    "ecn_yellow_red", "ecn_all",
}  # fmt: skip


def load_files(paths: Iterable[str | Path]) -> dict[str, Any]:
    """Read config_db.json files and merge them in order, as `config load` does: a later file's
    fields replace an earlier file's fields of the same TABLE|key."""
    merged: dict[str, Any] = {}
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as err:
            raise ConfigError([Issue(str(path), "", None, f"cannot read: {err.strerror}")]) from err
        except json.JSONDecodeError as err:
            reason = f"not JSON: {err.msg} at line {err.lineno} column {err.colno}"
            raise ConfigError([Issue(str(path), "", None, reason)]) from err
        if not isinstance(data, dict):
            raise ConfigError([Issue(str(path), "", None, "top level must be an object of tables")])
        for table, entries in data.items():
            target = merged.setdefault(table, {})
            if isinstance(entries, dict) and isinstance(target, dict):
                for key, fields in entries.items():
                    if isinstance(fields, dict) and isinstance(target.get(key), dict):
                        target[key] = {**target[key], **fields}
                    else:
                        target[key] = fields
            else:
                merged[table] = entries
    return merged


def parse_prefix(text: str) -> IpNetwork:
    """`10.0.0.0/24` or `2001:db8::/80`, host bits clear. The C address parser keeps 200k-route
    configs quick; the network constructor still checks the prefix length and host bits."""
    addr, sep, plen = text.partition("/")
    v6 = ":" in addr
    try:
        packed = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, addr)
    except OSError:
        raise ValueError(f"{addr!r} is not an IP address") from None
    if sep and not plen.isdigit():
        raise ValueError(f"{plen!r} is not a prefix length")
    value = int.from_bytes(packed, "big")
    length = int(plen) if sep else len(packed) * 8
    return ipaddress.IPv6Network((value, length)) if v6 else ipaddress.IPv4Network((value, length))


def parse_numbers(text: str) -> list[int] | None:
    """`3`, `3-4`, `0,3-4` -> the numbers, in order; None if malformed."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            return None
        out.extend(range(lo, hi + 1))
    return out


class _Parser:
    def __init__(self, tables: Mapping[str, Any], chip: Chip | None):
        self.raw = {TABLE_ALIASES.get(t, t): v for t, v in tables.items()}
        self.issues: list[Issue] = []
        self.cfg = ConfigDb(chip=chip)
        self.has_port_table = "PORT" in self.raw

    # --- reporting and field helpers ---------------------------------------------------------

    def error(self, table: str, key: str, fld: str | None, reason: str) -> None:
        self.issues.append(Issue(table, key, fld, reason))

    def warn(self, table: str, key: str, fld: str | None, reason: str) -> None:
        self.issues.append(Issue(table, key, fld, reason, error=False))

    def entries(self, table: str) -> list[tuple[str, dict[str, Any]]]:
        data = self.raw.get(table, {})
        if not isinstance(data, dict):
            self.error(table, "", None, "a table must be an object of keys")
            return []
        out = []
        for key, fields in data.items():
            if not isinstance(fields, dict):
                self.error(table, key, None, "an entry must be an object of fields")
                continue
            known = KNOWN_FIELDS.get(table)
            if known is not None:
                for f in fields:
                    if f not in known:
                        self.warn(table, key, f, "unknown field, ignored")
            out.append((key, fields))
        return out

    def text(self, table: str, key: str, fields: dict, name: str, required: bool = False):
        value = fields.get(name)
        if value is None:
            if required:
                self.error(table, key, name, "missing")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            self.error(table, key, name, f"must be a string, not {json.dumps(value)}")
            return None
        return str(value)

    def number(
        self,
        table: str,
        key: str,
        fields: dict,
        name: str,
        lo: int = 0,
        hi: int | None = None,
        required: bool = False,
    ) -> int | None:
        value = self.text(table, key, fields, name, required)
        if value is None:
            return None
        try:
            n = int(value.strip())
        except ValueError:
            self.error(table, key, name, f"not a number: {value!r}")
            return None
        if n < lo or (hi is not None and n > hi):
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            self.error(table, key, name, f"{n} is out of range ({bound})")
            return None
        return n

    def boolean(self, table: str, key: str, fields: dict, name: str, default: bool) -> bool:
        value = self.text(table, key, fields, name)
        if value is None:
            return default
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        self.error(table, key, name, f"must be true or false, not {value!r}")
        return default

    def choice(
        self, table: str, key: str, fields: dict, name: str, allowed: tuple[str, ...], default: str
    ) -> str:
        value = self.text(table, key, fields, name)
        if value is None:
            return default
        if value.strip() in allowed:
            return value.strip()
        self.error(table, key, name, f"must be one of {', '.join(allowed)}, not {value!r}")
        return default

    def reference(self, table: str, key: str, fields: dict, name: str, target: str) -> str | None:
        """A `[TARGET|name]` reference, checked to exist; returns the name."""
        value = self.text(table, key, fields, name)
        if value is None:
            return None
        m = REF_RE.match(value.strip())
        if m:
            ref_table, ref_key = TABLE_ALIASES.get(m.group(1), m.group(1)), m.group(2)
        elif "[" not in value and "|" not in value:
            # Newer SONiC writes bare names (the yang model's leafref form).
            ref_table, ref_key = target, value.strip()
        else:
            self.error(
                table, key, name, f"malformed reference {value!r} (expected [{target}|NAME])"
            )
            return None
        if ref_table != target:
            self.error(table, key, name, f"reference {value!r} must point into {target}")
            return None
        data = self.raw.get(target)
        if not isinstance(data, dict) or ref_key not in data:
            self.error(table, key, name, f"missing reference: {target}|{ref_key} does not exist")
            return None
        return ref_key

    def port_names(self, table: str, key: str, text: str) -> list[str]:
        """Ports in a key's port part, each checked against PORT."""
        names = [p.strip() for p in text.split(",")]
        ok = []
        for name in names:
            if not name:
                self.error(table, key, None, "empty port name in key")
            elif self.has_port_table and name not in self.cfg.ports:
                self.error(table, key, None, f"unknown port {name!r}: not in PORT")
            elif not self.has_port_table and not re.fullmatch(r"Ethernet\d+", name):
                self.error(table, key, None, f"unknown port {name!r}: not a SONiC port name")
            else:
                ok.append(name)
        return ok

    def port_class_key(self, table: str, key: str) -> list[tuple[str, int]]:
        """`Ethernet0,Ethernet4|3-4` -> [(port, class), ...]."""
        parts = key.split("|")
        if len(parts) != 2:
            self.error(table, key, None, "key must be PORT|CLASSES (e.g. Ethernet0|3-4)")
            return []
        numbers = parse_numbers(parts[1])
        if numbers is None or any(n >= CLASSES for n in numbers):
            self.error(table, key, None, f"{parts[1]!r} is not a list or range of 0..7")
            return []
        return [(p, n) for p in self.port_names(table, key, parts[0]) for n in numbers]

    # --- tables ------------------------------------------------------------------------------

    def run(self) -> None:
        for table in self.raw:
            if table not in HANDLED_TABLES:
                self.warn(table, "", None, "table not programmed by lossless-ctl, ignored")
        self.device_metadata()
        if not self.has_port_table:
            self.warn("PORT", "", None, "no PORT table: port names are checked for form only")
        self.ports()
        self.vlans()
        self.interfaces()
        self.qos_maps()
        self.port_qos_map()
        self.buffer_pools()
        self.buffer_profiles()
        self.buffer_bindings("BUFFER_PG", ingress=True, out=self.cfg.buffer_pgs)
        self.buffer_bindings("BUFFER_QUEUE", ingress=False, out=self.cfg.buffer_queues)
        self.wred_profiles()
        self.schedulers()
        self.queues()
        self.pfc_wd()
        self.neighbors()
        self.static_routes()
        self.sfc()
        self.copp()
        self.pfc_checks()

    def device_metadata(self) -> None:
        for key, fields in self.entries("DEVICE_METADATA"):
            if key != "localhost":
                self.warn("DEVICE_METADATA", key, None, "only 'localhost' is read")
                continue
            mac = self.text("DEVICE_METADATA", key, fields, "mac")
            if mac is not None and not MAC_RE.match(mac):
                self.error("DEVICE_METADATA", key, "mac", f"not a MAC address: {mac!r}")
            else:
                self.cfg.mac = mac.lower() if mac else None
            self.cfg.hostname = self.text("DEVICE_METADATA", key, fields, "hostname")
            if self.cfg.chip is None:
                self.cfg.chip = chip_for_platform(
                    str(fields.get("platform", "")), str(fields.get("hwsku", ""))
                )

    def ports(self) -> None:
        indexes: dict[int, str] = {}
        for key, fields in self.entries("PORT"):
            t = "PORT"
            if not re.fullmatch(r"Ethernet\d+", key):
                self.error(t, key, None, "port names are EthernetN")
                continue
            # The switch's port number; 255 is the CPU port and 511 the v1model drop port.
            index = self.number(t, key, fields, "index", 0, 510)
            if index == 255:
                self.error(t, key, "index", "255 is the CPU port")
                index = None
            if index is not None and index in indexes:
                self.error(t, key, "index", f"{index} is also the index of {indexes[index]}")
            elif index is not None:
                indexes[index] = key
            speed = self.number(t, key, fields, "speed", 1, required=True)
            mtu = self.number(t, key, fields, "mtu", 68, 9216)
            admin = self.text(t, key, fields, "admin_status") or "down"
            if admin not in ("up", "down"):
                self.error(t, key, "admin_status", f"must be up or down, not {admin!r}")
            self.cfg.ports[key] = Port(key, index, speed or 0, mtu or 9100, admin == "up")

    def vlans(self) -> None:
        members: dict[str, list[str]] = {}
        for key, _ in self.entries("VLAN_MEMBER"):
            vlan, _, port = key.partition("|")
            if vlan not in self.raw.get("VLAN", {}):
                self.error(
                    "VLAN_MEMBER", key, None, f"missing reference: VLAN|{vlan} does not exist"
                )
                continue
            if self.port_names("VLAN_MEMBER", key, port):
                members.setdefault(vlan, []).append(port)
        for key, fields in self.entries("VLAN"):
            vid = self.number("VLAN", key, fields, "vlanid", 1, 4094, required=True)
            if not re.fullmatch(r"Vlan\d+", key):
                self.error("VLAN", key, None, "VLAN names are VlanN")
            elif vid is not None:
                self.cfg.vlans[key] = Vlan(key, vid, tuple(sorted(members.get(key, []))))

    def interfaces(self) -> None:
        for table in ("INTERFACE", "VLAN_INTERFACE", "LOOPBACK_INTERFACE"):
            for key, fields in self.entries(table):
                ifname, _, ip = key.partition("|")
                vrf = self.text(table, key, fields, "vrf_name")
                if vrf not in (None, "", "default"):
                    self.error(
                        table, key, "vrf_name", f"{vrf!r}: only the default VRF is programmed"
                    )
                    continue
                if table == "INTERFACE" and not self.port_names(table, key, ifname):
                    continue
                if table == "VLAN_INTERFACE" and ifname not in self.cfg.vlans:
                    self.error(table, key, None, f"missing reference: VLAN|{ifname} does not exist")
                    continue
                if table == "INTERFACE":
                    self.cfg.rif_ports.add(ifname)
                if not ip:
                    continue
                try:
                    addr = ipaddress.ip_interface(ip)
                except ValueError:
                    self.error(table, key, None, f"not an IP address with prefix: {ip!r}")
                    continue
                self.cfg.router_ips.append(RouterIp(ifname, addr))

    def qos_maps(self) -> None:
        for table, (key_max, value_max) in QOS_MAP_TABLES.items():
            for name, fields in self.entries(table):
                entries = []
                for k in fields:
                    kv = self.number(table, name, {k: k}, k, 0, key_max)
                    vv = self.number(table, name, fields, k, 0, value_max)
                    if kv is not None and vv is not None:
                        entries.append((kv, vv))
                self.cfg.qos_maps[(table, name)] = QosMap(table, name, tuple(sorted(entries)))

    def port_qos_map(self) -> None:
        t = "PORT_QOS_MAP"
        for key, fields in self.entries(t):
            if key == "global":
                # Switch-wide DSCP map (newer SONiC): checked, and used for ports without one.
                self.reference(t, key, fields, "dscp_to_tc_map", "DSCP_TO_TC_MAP")
                continue
            ports = self.port_names(t, key, key)
            refs = {
                f: self.reference(t, key, fields, f, tbl) for f, tbl in PORT_QOS_BINDINGS.items()
            }
            pfc: list[int] = []
            text = self.text(t, key, fields, "pfc_enable")
            if text:
                numbers = parse_numbers(text)
                if numbers is None or any(n >= CLASSES for n in numbers):
                    self.error(t, key, "pfc_enable", f"{text!r} is not a list of priorities 0..7")
                else:
                    pfc = sorted(set(numbers))
            trust = self.text(t, key, fields, "trust")
            if trust is not None and trust not in ("dscp", "dot1p"):
                self.error(t, key, "trust", f"must be dscp or dot1p, not {trust!r}")
            quanta = self.number(t, key, fields, "pfc_quanta", 1, 0xFFFF)
            trust_dscp = (trust or ("dscp" if refs["dscp_to_tc_map"] else "dot1p")) == "dscp"
            if refs["dscp_to_tc_map"] is None and "global" in self.raw.get(t, {}):
                refs["dscp_to_tc_map"] = self.reference(
                    t, "global", self.raw[t]["global"], "dscp_to_tc_map", "DSCP_TO_TC_MAP"
                )
                trust_dscp = trust != "dot1p" and refs["dscp_to_tc_map"] is not None
            for port in ports:
                self.cfg.port_qos[port] = PortQos(
                    port,
                    tuple(pfc),
                    trust_dscp,
                    **{f: refs[f] for f in PORT_QOS_BINDINGS},
                    pfc_quanta=PFC_QUANTA_DEFAULT if quanta is None else quanta,
                )

    def buffer_pools(self) -> None:
        t = "BUFFER_POOL"
        for key, fields in self.entries(t):
            kind = self.text(t, key, fields, "type", required=True)
            if kind is not None and kind not in ("ingress", "egress"):
                self.error(t, key, "type", f"must be ingress or egress, not {kind!r}")
            mode = self.text(t, key, fields, "mode") or "dynamic"
            if mode not in ("static", "dynamic"):
                self.error(t, key, "mode", f"must be static or dynamic, not {mode!r}")
            size = self.number(t, key, fields, "size", required=True)
            xoff = self.number(t, key, fields, "xoff") or 0
            if size is not None and xoff > size:
                self.error(t, key, "xoff", f"shared headroom {xoff} exceeds the pool size {size}")
            self.cfg.buffer_pools[key] = BufferPool(
                key, kind == "ingress", mode == "dynamic", size or 0, xoff
            )

    def buffer_profiles(self) -> None:
        t = "BUFFER_PROFILE"
        for key, fields in self.entries(t):
            pool_name = self.reference(t, key, fields, "pool", "BUFFER_POOL")
            if "pool" not in fields:
                self.error(t, key, "pool", "missing")
            pool = self.cfg.buffer_pools.get(pool_name or "")
            size = self.number(t, key, fields, "size", required=True)
            xoff = self.number(t, key, fields, "xoff")
            xon = self.number(t, key, fields, "xon")
            xon_offset = self.number(t, key, fields, "xon_offset")
            static_th = self.number(t, key, fields, "static_th")
            dynamic_th = self.number(t, key, fields, "dynamic_th", -8, 8)
            if static_th is None and dynamic_th is None and xoff is None:
                if "static_th" not in fields and "dynamic_th" not in fields:
                    self.error(t, key, None, "needs static_th or dynamic_th (or xoff if lossless)")
            if pool is not None and pool.dynamic and "static_th" in fields and xoff is None:
                self.error(t, key, "static_th", f"pool {pool.name} is dynamic; use dynamic_th")
            if pool is not None and not pool.dynamic and "dynamic_th" in fields:
                self.error(t, key, "dynamic_th", f"pool {pool.name} is static; use static_th")
            if xoff is not None and xon is not None and xon > xoff:
                self.error(t, key, "xon", f"xon {xon} > xoff {xoff}")
            # In a static pool (the seed 000 model) size is the PG's whole allotment and xoff is
            # carved out of it; SONiC's dynamic profiles keep headroom beside a small size.
            if (
                pool is not None
                and not pool.dynamic
                and xoff is not None
                and size is not None
                and size < xoff
            ):
                self.error(t, key, "size", f"size {size} is below xoff {xoff}")
            if xoff is not None and pool is not None and not pool.ingress:
                self.error(t, key, "xoff", f"lossless (xoff) profile in egress pool {pool.name}")
            self.cfg.buffer_profiles[key] = BufferProfile(
                key, pool_name or "", size or 0, xoff, xon, xon_offset, static_th, dynamic_th
            )

    def buffer_bindings(self, table: str, ingress: bool, out: dict) -> None:
        for key, fields in self.entries(table):
            pairs = self.port_class_key(table, key)
            if "profile" not in fields:
                self.error(table, key, "profile", "missing")
                continue
            if str(fields["profile"]) in ("NULL", "[BUFFER_PROFILE|NULL]"):
                continue  # SONiC's dynamic model: headroom computed by buffermgr; none here
            profile_name = self.reference(table, key, fields, "profile", "BUFFER_PROFILE")
            profile = self.cfg.buffer_profiles.get(profile_name or "")
            if profile is None:
                continue
            pool = self.cfg.buffer_pools.get(profile.pool)
            if pool is not None and pool.ingress != ingress:
                side = "an ingress" if ingress else "an egress"
                self.error(
                    table, key, "profile", f"{profile_name} is in pool {pool.name}, not {side} pool"
                )
                continue
            for pair in pairs:
                out[pair] = profile_name

    def wred_profiles(self) -> None:
        t = "WRED_PROFILE"
        for key, fields in self.entries(t):
            ecn = self.text(t, key, fields, "ecn") or "ecn_none"
            if ecn not in ECN_MODES:
                self.error(t, key, "ecn", f"unknown ECN mode {ecn!r}")
            gmin = self.number(t, key, fields, "green_min_threshold", 0, 2**32 - 1)
            gmax = self.number(t, key, fields, "green_max_threshold", 0, 2**32 - 1)
            prob = self.number(t, key, fields, "green_drop_probability", 0, 100)
            for color in ("yellow", "red"):
                for f in (f"{color}_min_threshold", f"{color}_max_threshold"):
                    self.number(t, key, fields, f)
                self.number(t, key, fields, f"{color}_drop_probability", 0, 100)
            green_marks = ecn in ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")
            if green_marks and (gmin is None or gmax is None):
                for f, v in (("green_min_threshold", gmin), ("green_max_threshold", gmax)):
                    if v is None and f not in fields:
                        self.error(t, key, f, "missing (needed for ECN marking of green)")
            if gmin is not None and gmax is not None and gmin > gmax:
                self.error(t, key, "green_min_threshold", f"min {gmin} > max {gmax}")
            if self.boolean(t, key, fields, "wred_green_enable", False) and not green_marks:
                self.warn(t, key, "wred_green_enable", "WRED dropping is not in the pipeline")
            self.cfg.wred_profiles[key] = WredProfile(
                key, green_marks, gmin or 0, gmax or 0, 100 if prob is None else prob
            )

    def schedulers(self) -> None:
        t = "SCHEDULER"
        for key, fields in self.entries(t):
            kind = (self.text(t, key, fields, "type") or "DWRR").upper()
            if kind not in ("STRICT", "DWRR", "WRR"):
                self.error(t, key, "type", f"must be STRICT, DWRR or WRR, not {kind!r}")
            weight = self.number(t, key, fields, "weight", 1, 100)
            if kind != "STRICT" and weight is None and "weight" not in fields:
                self.error(t, key, "weight", f"missing (needed by {kind})")
            for f in ("pir", "cir", "pbs", "cbs", "meter_type"):
                if f in fields:
                    self.warn(t, key, f, "shaping is not in the traffic manager, ignored")
            self.cfg.schedulers[key] = Scheduler(key, kind, weight)

    def queues(self) -> None:
        t = "QUEUE"
        for key, fields in self.entries(t):
            sched = self.reference(t, key, fields, "scheduler", "SCHEDULER")
            wred = self.reference(t, key, fields, "wred_profile", "WRED_PROFILE")
            for port, queue in self.port_class_key(t, key):
                self.cfg.queues[(port, queue)] = QueueSettings(port, queue, sched, wred)

    def pfc_wd(self) -> None:
        t = "PFC_WD"
        for key, fields in self.entries(t):
            if key == "GLOBAL":
                self.cfg.pfcwd_poll_interval_ms = self.number(t, key, fields, "POLL_INTERVAL", 1)
                continue
            ports = self.port_names(t, key, key)
            action = self.text(t, key, fields, "action") or "drop"
            if action not in ("drop", "forward", "alert"):
                self.error(t, key, "action", f"must be drop, forward or alert, not {action!r}")
            detection = self.number(t, key, fields, "detection_time", 1, required=True)
            restoration = self.number(t, key, fields, "restoration_time", 1)
            if detection is None:
                continue
            for port in ports:
                self.cfg.pfc_wd[port] = PfcWatchdog(
                    port, action, detection, restoration or 2 * detection
                )

    def interface_of(self, table: str, key: str, fld: str | None, ifname: str) -> bool:
        if ifname.startswith("Vlan"):
            vlan = self.cfg.vlans.get(ifname)
            if vlan is None:
                self.error(table, key, fld, f"missing reference: VLAN|{ifname} does not exist")
                return False
            if len(vlan.members) != 1:
                self.error(
                    table,
                    key,
                    fld,
                    f"{ifname} has {len(vlan.members)} member ports and the pipeline does not "
                    "bridge, so the neighbour's port is unknown",
                )
                return False
            return True
        if ifname not in self.cfg.rif_ports:
            self.error(table, key, fld, f"{ifname} has no router interface (INTERFACE|{ifname})")
            return False
        return True

    def neighbors(self) -> None:
        t = "NEIGH"
        for key, fields in self.entries(t):
            ifname, _, ip = key.partition("|")
            mac = self.text(t, key, fields, "neigh", required=True)
            if mac is not None and not MAC_RE.match(mac):
                self.error(t, key, "neigh", f"not a MAC address: {mac!r}")
                mac = None
            try:
                addr = ipaddress.ip_address(ip)
            except ValueError:
                self.error(t, key, None, f"not an IP address: {ip!r}")
                continue
            family = self.text(t, key, fields, "family")
            if family is not None and family != f"IPv{addr.version}":
                self.error(t, key, "family", f"{family} does not match address {addr}")
            if not self.interface_of(t, key, None, ifname) or mac is None:
                continue
            self.cfg.neighbors.append(Neighbor(ifname, addr, mac.lower()))

    def static_routes(self) -> None:
        t = "STATIC_ROUTE"
        # Large route sets reuse a few next hops: each (hop, ifname) is checked once.
        checked: dict[tuple[str, str | None, int], tuple[IpAddress, str | None]] = {}
        for key, fields in self.entries(t):
            vrf, _, prefix_text = key.rpartition("|")
            if vrf not in ("", "default"):
                self.error(t, key, None, f"VRF {vrf!r}: only the default VRF is programmed")
                continue
            try:
                prefix = parse_prefix(prefix_text)
            except ValueError:
                self.error(t, key, None, f"not a prefix with host bits clear: {prefix_text!r}")
                continue
            hops = [h.strip() for h in (self.text(t, key, fields, "nexthop") or "").split(",")]
            ifnames = [i.strip() for i in (self.text(t, key, fields, "ifname") or "").split(",")]
            holes = [b.strip() for b in (self.text(t, key, fields, "blackhole") or "").split(",")]
            blackhole = any(b == "true" for b in holes)
            if blackhole:
                self.cfg.static_routes.append(StaticRoute(key, prefix, (), True))
                continue
            if hops == [""]:
                self.error(t, key, "nexthop", "missing (and not a blackhole route)")
                continue
            if ifnames != [""] and len(ifnames) != len(hops):
                self.error(t, key, "ifname", f"{len(ifnames)} names for {len(hops)} next hops")
                continue
            nexthops = []
            for i, hop in enumerate(hops):
                ifname = ifnames[i] if ifnames != [""] else None
                known = checked.get((hop, ifname, prefix.version))
                if known is not None:
                    nexthops.append(known)
                    continue
                try:
                    addr = ipaddress.ip_address(hop)
                except ValueError:
                    self.error(t, key, "nexthop", f"not an IP address: {hop!r}")
                    continue
                if addr.version != prefix.version:
                    self.error(t, key, "nexthop", f"{addr} is not IPv{prefix.version}")
                    continue
                if ifname is not None and not self.interface_of(t, key, "ifname", ifname):
                    continue
                if ifname is None and self.connected_interface(addr) is None:
                    self.error(t, key, "nexthop", f"{addr} is in no interface's subnet")
                    continue
                nexthops.append((addr, ifname))
                checked[(hop, ifname, prefix.version)] = (addr, ifname)
            if len(nexthops) == len(hops):
                self.cfg.static_routes.append(StaticRoute(key, prefix, tuple(nexthops), False))

    def connected_interface(self, addr: IpAddress) -> str | None:
        for rip in self.cfg.router_ips:
            if addr in rip.ip.network and not rip.ifname.startswith("Loopback"):
                return rip.ifname
        return None

    def copp(self) -> None:
        """SONiC's CoPP tables (202012 and later): COPP_GROUP policers, COPP_TRAP trap ids."""
        t = "COPP_GROUP"
        for key, fields in self.entries(t):
            action = self.text(t, key, fields, "trap_action") or "trap"
            if action not in ("trap", "copy", "drop", "forward"):
                self.error(
                    t, key, "trap_action", f"must be trap, copy, drop or forward, not {action!r}"
                )
            meter_type = self.text(t, key, fields, "meter_type") or "packets"
            if meter_type not in ("packets", "bytes"):
                self.error(t, key, "meter_type", f"must be packets or bytes, not {meter_type!r}")
            mode = self.text(t, key, fields, "mode") or "sr_tcm"
            if mode not in ("sr_tcm", "tr_tcm", "storm"):
                self.error(t, key, "mode", f"must be sr_tcm, tr_tcm or storm, not {mode!r}")
            rates = {
                f: self.number(t, key, fields, f, 0, 2**63 - 1)
                for f in ("cir", "cbs", "pir", "pbs")
            }
            red = self.text(t, key, fields, "red_action") or "drop"
            if red not in ("drop", "forward", "copy", "trap"):
                self.error(t, key, "red_action", f"unknown action {red!r}")
            self.cfg.copp_groups[key] = CoppGroup(
                key, action, self.number(t, key, fields, "queue", 0, 7), meter_type, mode,
                rates["cir"], rates["cbs"], rates["pir"], rates["pbs"], red,
            )  # fmt: skip
        t = "COPP_TRAP"
        for key, fields in self.entries(t):
            group = self.reference(t, key, fields, "trap_group", "COPP_GROUP")
            if "trap_group" not in fields:
                self.error(t, key, "trap_group", "missing")
            ids = tuple(i.strip() for i in (self.text(t, key, fields, "trap_ids") or "").split(","))
            if ids == ("",):
                self.error(t, key, "trap_ids", "missing")
                continue
            if group is not None:
                self.cfg.copp_traps[key] = CoppTrap(key, ids, group)

    def sfc(self) -> None:
        t = "SFC"
        for key, fields in self.entries(t):
            if key == "GLOBAL":
                self.cfg.sfc_min_interval_us = (
                    self.number(t, key, fields, "min_interval_us", 0, 2**48 - 1) or 0
                )
                self.cfg.sfc_signal_dscp = self.number(t, key, fields, "signal_dscp", 0, 63) or 0
                self.cfg.sfc_dedup = self.choice(t, key, fields, "dedup", SFC_DEDUP, "two_bank")
                self.cfg.sfc_version = self.number(t, key, fields, "version", 0, 255) or 0
                self.cfg.sfc_src_port = self.choice(
                    t, key, fields, "src_port", SFC_SRC_PORT, "data"
                )
            elif "|" not in key:
                if self.port_names(t, key, key) and self.boolean(
                    t, key, fields, "host_facing", False
                ):
                    self.cfg.sfc_host_ports.add(key)
            else:
                given = "threshold" in fields
                threshold = self.number(t, key, fields, "threshold", 1, 2**32 - 1)
                target = self.number(t, key, fields, "target", 0, 2**32 - 1) or 0
                if given and threshold is None:
                    continue
                for port, queue in self.port_class_key(t, key):
                    th = threshold if given else self.sfc_default_threshold(port, queue)
                    if th is None:
                        self.error(
                            t, key, "threshold",
                            f"missing, and {port} queue {queue} has no WRED_PROFILE with ECN "
                            f"whose 2 x green_max_threshold could be the default",
                        )  # fmt: skip
                        break
                    if target > th:
                        self.error(t, key, "target", f"target {target} > threshold {th}")
                        break
                    self.cfg.sfc_queues[(port, queue)] = SfcQueue(port, queue, th, target)

    def sfc_default_threshold(self, port: str, queue: int) -> int | None:
        """Seed 003: the remote PFC threshold is 2 x Kmax of the queue's ECN marking."""
        settings = self.cfg.queues.get((port, queue))
        wred = self.cfg.wred_profiles.get(settings.wred_profile or "") if settings else None
        if wred is None or not wred.ecn_green:
            return None
        return min(2 * wred.green_max, 2**32 - 1)

    def pfc_checks(self) -> None:
        """Cross-table checks: PFC priorities, their PGs' profiles, the chip's limits."""
        chip = self.cfg.chip
        for port, qos in self.cfg.port_qos.items():
            limit = chip.max_pfc_priorities if chip else None
            if limit is not None and len(qos.pfc_enable) > limit:
                self.warn(
                    "PORT_QOS_MAP",
                    port,
                    "pfc_enable",
                    f"PFC on {len(qos.pfc_enable)} priorities; {chip.name} supports {limit}",
                )
            pg_map = self.cfg.qos_maps.get(("TC_TO_PRIORITY_GROUP_MAP", qos.tc_to_pg_map or ""))
            tc_to_pg = dict(pg_map.entries) if pg_map else {}
            for prio in qos.pfc_enable:
                pg = tc_to_pg.get(prio, 0)
                profile = self.cfg.buffer_profiles.get(self.cfg.buffer_pgs.get((port, pg), ""))
                if profile is None or not profile.lossless:
                    self.warn(
                        "PORT_QOS_MAP",
                        port,
                        "pfc_enable",
                        f"priority {prio} maps to PG {pg}, which has no lossless BUFFER_PG profile",
                    )


def parse(tables: Mapping[str, Any], chip: str | None = None) -> tuple[ConfigDb, list[Issue]]:
    """Parse and check a config_db object. Returns the config and every issue found."""
    if chip is not None and chip not in CHIPS:
        raise ValueError(f"unknown chip {chip!r} (known: {', '.join(sorted(CHIPS))})")
    parser = _Parser(tables, CHIPS[chip] if chip else None)
    parser.run()
    return parser.cfg, parser.issues


def parse_checked(
    tables: Mapping[str, Any], chip: str | None = None, warn: Callable[[Issue], None] | None = None
) -> ConfigDb:
    """`parse`, raising ConfigError when there is any error; warnings go to `warn`."""
    cfg, issues = parse(tables, chip)
    if any(i.error for i in issues):
        raise ConfigError(issues)
    for issue in issues:
        if warn is not None:
            warn(issue)
    return cfg
