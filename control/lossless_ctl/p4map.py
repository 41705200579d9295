"""SAI objects -> P4Runtime updates for p4src/lossless.p4 (sairedis/syncd's job).

This is the one module that knows the P4 program: every table, action and parameter name it
writes is in `P4` below or spelled at its one use, and every id comes from the loaded P4Info,
so a change to the program touches only this file. The thresholds follow p4src/README.md.

syncd's other job, turning OIDs into hardware ids, is here too: router interfaces, next hops,
ECMP groups and QoS maps get small integer ids in object order, starting at 1 (0 is "none" to
the pipeline).
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from lossless_ctl.config_db import route_key
from lossless_ctl.p4info import P4InfoError, P4InfoIndex
from lossless_ctl.p4rt_proto import bindings, length_delimited, varint
from lossless_ctl.sai import (
    CPU_PORT,
    NULL,
    PFC_REFRESH_APP,
    SaiModel,
    SaiObject,
    classes_of_pg,
    half_pause_ns,
    lossless_pgs,
)
from lossless_ctl.show import PENDING_REMOVAL

ING = "LosslessIngress."
EG = "LosslessEgress."
# sfc_mode's dedup values (SFC_DEDUP_* in p4src/headers.p4) for config_db's SFC|GLOBAL dedup.
SFC_DEDUP_CODE = {"two_bank": 0, "per_source": 1, "none": 2}
# The clone session that sends generated frames (PFC, SFC) out of port P is this + P
# (PORT_SESSION_BASE in p4src/headers.p4).
PORT_SESSION_BASE = 512
# The queue those sessions' clones enter (CloneSessionEntry.class_of_service, honoured by
# p4-switch): the highest, which SONiC's QoS template leaves strict priority and lossless
# configurations leave without PFC, so a generated pause leaves ahead of the data it stops.
CONTROL_QUEUE = 7

# Why the pipeline sends a packet to the CPU: packet_in.reason and the copp meter index
# (PUNT_* in p4src/headers.p4), by the SAI trap that covers it.
PUNT_REASONS = {
    "SAI_HOSTIF_TRAP_TYPE_ARP_REQUEST": 1,
    "SAI_HOSTIF_TRAP_TYPE_ARP_RESPONSE": 1,
    "SAI_HOSTIF_TRAP_TYPE_IPV6_NEIGHBOR_DISCOVERY": 2,
    "SAI_HOSTIF_TRAP_TYPE_IP2ME": 3,
    "SAI_HOSTIF_TRAP_TYPE_TTL_ERROR": 4,
}

QOS_MAP_TABLES = {
    "SAI_QOS_MAP_TYPE_DSCP_TO_TC": (ING + "dscp_to_tc", "dscp", ING + "set_tc", "tc"),
    "SAI_QOS_MAP_TYPE_DOT1P_TO_TC": (ING + "dot1p_to_tc", "pcp", ING + "set_tc", "tc"),
    "SAI_QOS_MAP_TYPE_TC_TO_PRIORITY_GROUP": (ING + "tc_to_pg", "tc", ING + "set_pg", "pg"),
    "SAI_QOS_MAP_TYPE_TC_TO_QUEUE": (ING + "tc_to_queue", "tc", ING + "set_queue", "queue"),
}


class MappingError(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass
class Phase:
    """Updates that may be in flight together; a phase starts when the previous one is done."""

    name: str
    updates: list[Any] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # what each update is, for error reports


@dataclass
class HardwareIds:
    """syncd's OID -> id map, kept so that run-time objects (learned neighbours, FPM routes)
    fit in. Run-time writers share it from several threads: ids are taken under `lock`."""

    rif_ids: dict[str, int] = field(default_factory=dict)
    nexthop_ids: dict[str, int] = field(default_factory=dict)
    routes: set[bytes] = field(default_factory=set)  # route_key()s of the route entries
    group_ids: dict[str, int] = field(default_factory=dict)
    members: set[int] = field(default_factory=set)  # ECMP members written (id = next hop id)
    # Users of each run-time next hop (one the config does not have), by key: routeorch's
    # routes and ECMP groups, and the learned neighbour whose host route it is. The one count
    # both writers keep (hold_nexthop, drop_nexthop): whoever takes its last user away deletes
    # it, so no route or group ever points at a next hop the other removed.
    nexthop_users: dict[str, int] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    _free: dict[str, list[int]] = field(default_factory=dict, repr=False)
    _next: dict[str, int] = field(default_factory=dict, repr=False)

    def allocate(self, kind: str) -> int:
        """An id no "nexthop" or "group" holds: a released one first, so that flapping run-time
        objects do not run the pipeline's id space out."""
        with self.lock:
            free = self._free.get(kind)
            if free:
                return free.pop()
            used = self.nexthop_ids if kind == "nexthop" else self.group_ids
            n = self._next.get(kind) or max(used.values(), default=0) + 1
            self._next[kind] = n + 1
            return n

    def release(self, kind: str, n: int) -> None:
        with self.lock:
            self._free.setdefault(kind, []).append(n)

    def hold_nexthop(self, key: str, users: int = 1, nid: int | None = None) -> tuple[int, bool]:
        """Next hop `key`'s id with `users` more users, and whether it is new (its entry is
        the caller's to write). `nid`: the id it already has on the switch (taken over from an
        earlier controller). The config's next hops are permanent: they are not counted."""
        with self.lock:
            known = self.nexthop_ids.get(key)
            if known is not None:
                if key in self.nexthop_users:
                    self.nexthop_users[key] += users
                return known, False
            new = nid is None
            if new:
                nid = self.allocate("nexthop")
            else:
                self.claim("nexthop", nid)
            self.nexthop_ids[key] = nid
            self.nexthop_users[key] = users
            return nid, new

    def drop_nexthop(self, key: str, users: int = 1) -> int | None:
        """`users` fewer users of next hop `key`. The id of a run-time next hop left with
        none, which is gone from here: the caller deletes its entry, then release()s the id
        (not before, or another writer could insert that id while the delete is on its way);
        None while it has users, and for the config's."""
        with self.lock:
            left = self.nexthop_users.get(key)
            if left is None:
                return None
            if left > users:
                self.nexthop_users[key] = left - users
                return None
            del self.nexthop_users[key]
            return self.nexthop_ids.pop(key)

    def forget_nexthops(self) -> None:
        """The switch holds no run-time next hop any more (a new session replayed or
        reconciled it to the config): every one's id is given back."""
        with self.lock:
            for key in self.nexthop_users:
                self.release("nexthop", self.nexthop_ids.pop(key))
            self.nexthop_users.clear()

    def claim(self, kind: str, n: int) -> None:
        """Ids up to `n` are taken: objects an earlier controller wrote are still on the
        switch (routeorch's adopt), so allocate() must not hand them out."""
        with self.lock:
            used = self.nexthop_ids if kind == "nexthop" else self.group_ids
            start = self._next.get(kind) or max(used.values(), default=0) + 1
            self._next[kind] = max(start, n + 1)


@dataclass
class P4Program:
    phases: list[Phase]
    notes: list[str]
    ids: HardwareIds = field(default_factory=HardwareIds)

    def updates(self) -> int:
        return sum(len(p.updates) for p in self.phases)


def encode(value: int, bitwidth: int) -> bytes:
    """P4Runtime's canonical binary string: big-endian, no leading zero bytes (0 is one byte)."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"{value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def refresh_interval_us(quanta: int, bps: int) -> int:
    """How long after its last XOFF a paused PG is renewed, in the pipeline's microseconds:
    half the pause, less one. The pipeline compares whole microseconds, so a renewal may come
    up to 1 us after this; with the packet generator firing every half pause or sooner
    (port_config), the next XOFF always lands before the last one's pause runs out."""
    return max(half_pause_ns(quanta, bps) // 1000 - 1, 0)


def us_per_byte_q24(bps: int) -> int:
    """A queue's drain time per byte in microseconds, Q8.24 (p4src/README.md: 5369 at 25G)."""
    return round((1 << 24) * 8_000_000 / bps)


def pause_quanta_per_us_q16(bps: int) -> int:
    """Pause quanta (512 bit times) in one microsecond, Q16.16 (p4src/README.md): bps / 512 / 1e6
    x 2^16 = bps x 128 / 1e6, rounded; 1280 at 10 Mb/s (0.0195 quanta/us), 3200000 at 25G."""
    return (bps * 128 + 500_000) // 1_000_000


def mark_slope(probability_percent: int, kmin: int, kmax: int) -> int:
    """Pmax x 2^32 / (Kmax - Kmin): marking probability per byte of depth above Kmin."""
    if kmax <= kmin:
        return 0
    return min(0xFFFFFFFF, probability_percent * (1 << 32) // (100 * (kmax - kmin)))


class _Builder:
    def __init__(self, p4info: P4InfoIndex):
        self.idx = p4info
        self.pb = bindings().p4runtime_pb2
        # Name lookups resolved once per table and action, not once per entry.
        self._tables: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._actions: dict[tuple[str | None, str], tuple[int, dict[str, Any]]] = {}

    def _table(self, name: str) -> tuple[Any, dict[str, Any]]:
        found = self._tables.get(name)
        if found is None:
            table = self.idx.table(name)
            found = self._tables[name] = (table, {mf.name: mf for mf in table.match_fields})
        return found

    def _action_of(self, table: Any, name: str) -> tuple[int, dict[str, Any]]:
        key = (table.preamble.name if table is not None else None, name)
        found = self._actions.get(key)
        if found is None:
            action = self.idx.action(name)
            if table is not None:
                self.idx.check_action_of(table, action)
            found = self._actions[key] = (action.preamble.id, {p.name: p for p in action.params})
        return found

    def table_entry(
        self,
        table_name: str,
        match: dict[str, Any],
        action_name: str | None = None,
        params: dict[str, int] | None = None,
        group_id: int | None = None,
        default: bool = False,
    ) -> Any:
        table, fields = self._table(table_name)
        update = self.pb.Update(type=self.pb.Update.MODIFY if default else self.pb.Update.INSERT)
        entry = update.entity.table_entry
        entry.table_id = table.preamble.id
        entry.is_default_action = default
        for name, value in match.items():
            mf = fields.get(name)
            if mf is None:
                raise P4InfoError(f"table {table_name} has no match field {name!r}")
            if isinstance(value, tuple):  # LPM (value, prefix length)
                addr, plen = value
                if plen == 0:
                    continue  # a zero-length prefix is a wildcard: the field is omitted
                fm = entry.match.add(field_id=mf.id)
                fm.lpm.value = encode(addr, mf.bitwidth)
                fm.lpm.prefix_len = plen
            else:
                fm = entry.match.add(field_id=mf.id)
                fm.exact.value = encode(value, mf.bitwidth)
        if group_id is not None:
            entry.action.action_profile_group_id = group_id
        else:
            self._action(table, action_name or "NoAction", params or {}, entry.action.action)
        return update

    def _action(self, table: Any, name: str, params: dict[str, int], out: Any) -> None:
        action_id, declared = self._action_of(table, name)
        out.action_id = action_id
        for pname, value in params.items():
            p = declared.get(pname)
            if p is None:
                raise P4InfoError(f"action {name} has no parameter {pname!r}")
            try:
                out.params.add(param_id=p.id, value=encode(value, p.bitwidth))
            except ValueError as err:
                raise P4InfoError(f"{name}({pname}): {err}") from err

    def member(self, profile: str, member_id: int, action: str, params: dict[str, int]) -> Any:
        update = self.pb.Update(type=self.pb.Update.INSERT)
        m = update.entity.action_profile_member
        m.action_profile_id = self.idx.action_profile(profile).preamble.id
        m.member_id = member_id
        self._action(None, action, params, m.action)
        return update

    def group(self, profile: str, group_id: int, members: list[int]) -> Any:
        update = self.pb.Update(type=self.pb.Update.INSERT)
        g = update.entity.action_profile_group
        g.action_profile_id = self.idx.action_profile(profile).preamble.id
        g.group_id = group_id
        g.max_size = len(members)
        for mid in members:
            g.members.add(member_id=mid, weight=1)
        return update

    def meter(self, meter: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> Any:
        # Indirect meter cells always exist: configuring one is a MODIFY.
        update = self.pb.Update(type=self.pb.Update.MODIFY)
        m = update.entity.meter_entry
        m.meter_id = self.idx.meter(meter).preamble.id
        m.index.index = index
        m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = cir, cburst, pir, pburst
        return update

    def clone_session(self, session: int, port: int) -> Any:
        update = self.pb.Update(type=self.pb.Update.INSERT)
        cs = update.entity.packet_replication_engine_entry.clone_session_entry
        cs.session_id = session
        cs.class_of_service = CONTROL_QUEUE
        cs.replicas.add(port=encode(port, 32), instance=1)
        return update


def to_p4(model: SaiModel, p4info: P4InfoIndex) -> P4Program:
    """Every P4Runtime update for `model`, in phases that respect references."""
    return _Mapper(model, p4info).run()


class _Mapper:
    def __init__(self, model: SaiModel, p4info: P4InfoIndex):
        self.m = model
        self.b = _Builder(p4info)
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.switch = model["switch"]
        self.dev_port: dict[str, int] = {}
        self.port_bps: dict[str, int] = {}
        for port in model.of_type("PORT"):
            name = port.key.split(":", 1)[1]
            if port["SAI_PORT_ATTR_EXT_DEV_PORT"] is None:
                self.problems.append(f"PORT|{name}|index: missing: the switch's port number")
                continue
            self.dev_port[port.key] = port["SAI_PORT_ATTR_EXT_DEV_PORT"]
            self.port_bps[port.key] = port["SAI_PORT_ATTR_SPEED"] * 1_000_000
        self.map_ids: dict[str, int] = {}
        per_type: dict[str, int] = {}
        for qmap in model.of_type("QOS_MAP"):
            kind = qmap["SAI_QOS_MAP_ATTR_TYPE"]
            per_type[kind] = per_type.get(kind, 0) + 1
            self.map_ids[qmap.key] = per_type[kind]
        self.rif_ids = {o.key: i for i, o in enumerate(model.of_type("ROUTER_INTERFACE"), 1)}
        self.nexthop_ids = {o.key: i for i, o in enumerate(model.of_type("NEXT_HOP"), 1)}
        self.group_ids = {o.key: i for i, o in enumerate(model.of_type("NEXT_HOP_GROUP"), 1)}
        self.members: set[int] = set()

    def port_of(self, key: str, where: str) -> int | None:
        """The switch port number of a PORT object (a missing index is reported once, above)."""
        if key not in self.dev_port and key not in self.m.objects:
            self.problems.append(f"{where}: {key.split(':', 1)[1]} is not in PORT")
        return self.dev_port.get(key)

    def run(self) -> P4Program:
        phases = [
            self.clone_sessions(),
            self.switch_settings(),
            self.copp(),
            self.qos(),
            self.buffers(),
            self.egress(),
            self.l3_objects(),
            *self.ecmp(),
            self.routes(),
        ]
        if self.problems:
            raise MappingError(self.problems)
        routes = {route_key(r.entry["destination"]) for r in self.m.of_type("ROUTE_ENTRY")}
        routes |= {
            route_key(ipaddress.ip_network(n.entry["ip_address"]))
            for n in self.m.of_type("NEIGHBOR_ENTRY")
        }
        ids = HardwareIds(
            dict(self.rif_ids), dict(self.nexthop_ids), routes, dict(self.group_ids), self.members
        )
        return P4Program([p for p in phases if p.updates], self.notes, ids)

    def add(self, phase: Phase, label: str, build, *args, **kwargs) -> None:
        try:
            phase.updates.append(build(*args, **kwargs))
            phase.labels.append(label)
        except (P4InfoError, ValueError) as err:
            self.problems.append(f"{label}: {err}")

    def clone_sessions(self) -> Phase:
        phase = Phase("clone sessions")
        for key, port in sorted(self.dev_port.items(), key=lambda kv: kv[1]):
            session = PORT_SESSION_BASE + port
            self.add(phase, f"clone session {session} ({key})", self.b.clone_session, session, port)
        return phase

    def switch_settings(self) -> Phase:
        phase = Phase("switch")
        # Dynamic thresholds share what the ingress pools leave after their shared headroom.
        shared = sum(
            p["SAI_BUFFER_POOL_ATTR_SIZE"] - p["SAI_BUFFER_POOL_ATTR_XOFF_SIZE"]
            for p in self.m.of_type("BUFFER_POOL")
            if p["SAI_BUFFER_POOL_ATTR_TYPE"] == "SAI_BUFFER_POOL_TYPE_INGRESS"
        )
        self.add(
            phase,
            "SWITCH switch_config",
            self.b.table_entry,
            ING + "switch_config",
            {},
            ING + "set_switch_config",
            {
                "shared_pool_bytes": shared,
                "sfc_min_interval_us": self.switch["SAI_SWITCH_ATTR_EXT_SFC_MIN_INTERVAL_US"],
            },
            default=True,
        )
        macs = {self.switch["SAI_SWITCH_ATTR_SRC_MAC_ADDRESS"]} | {
            rif["SAI_ROUTER_INTERFACE_ATTR_SRC_MAC_ADDRESS"]
            for rif in self.m.of_type("ROUTER_INTERFACE")
        }
        for mac in sorted(macs):
            self.add(
                phase,
                f"router MAC {mac}",
                self.b.table_entry,
                ING + "router_mac",
                {"dst_mac": mac_int(mac)},
            )
        return phase

    def copp(self) -> Phase:
        """The copp meter, one cell per punt reason, from the policer of the trap's group.
        Traps sharing a SAI policer get a cell each here, i.e. a bucket each."""
        phase = Phase("CoPP")
        configured: dict[int, str] = {}
        for trap in self.m.of_type("HOSTIF_TRAP"):
            trap_type = trap["SAI_HOSTIF_TRAP_ATTR_TRAP_TYPE"]
            reason = PUNT_REASONS.get(trap_type)
            if reason is None:
                self.notes.append(
                    f"{trap.key}: not a punt reason of the pipeline (traffic to the router's "
                    "addresses is all IP2ME)"
                )
                continue
            group = self.m[trap["SAI_HOSTIF_TRAP_ATTR_TRAP_GROUP"]]
            policer_key = group["SAI_HOSTIF_TRAP_GROUP_ATTR_POLICER"]
            if policer_key == NULL:
                continue
            policer = self.m[policer_key]
            if policer["SAI_POLICER_ATTR_METER_TYPE"] != "SAI_METER_TYPE_PACKETS":
                self.notes.append(
                    f"{policer.key}: the pipeline's CoPP meter counts packets; skipped"
                )
                continue
            if reason in configured:
                if configured[reason] != policer.key:
                    first = configured[reason]
                    self.notes.append(f"{trap.key}: punt reason {reason} is metered by {first}")
                continue
            configured[reason] = policer.key
            self.add(
                phase, f"HOSTIF_TRAP {trap.key} ({policer.key})", self.b.meter, ING + "copp",
                reason, policer["SAI_POLICER_ATTR_CIR"], policer["SAI_POLICER_ATTR_CBS"],
                policer["SAI_POLICER_ATTR_PIR"], policer["SAI_POLICER_ATTR_PBS"],
            )  # fmt: skip
        return phase

    def qos(self) -> Phase:
        phase = Phase("QoS maps")
        for qmap in self.m.of_type("QOS_MAP"):
            target = QOS_MAP_TABLES.get(qmap["SAI_QOS_MAP_ATTR_TYPE"])
            if target is None:
                continue  # PFC priority -> queue is the traffic manager's (port_config)
            table, key_field, action, param = target
            for k, v in qmap["SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST"]:
                self.add(
                    phase,
                    f"QOS_MAP {qmap.key} {k}->{v}",
                    self.b.table_entry,
                    table,
                    {"map": self.map_ids[qmap.key], key_field: k},
                    action,
                    {param: v},
                )
        for port in self.m.of_type("PORT"):
            dev = self.dev_port.get(port.key)
            if dev is None:
                continue

            def map_id(attr: str, port: SaiObject = port) -> int:
                bound = port[attr]
                return 0 if bound == NULL else self.map_ids[bound]

            dscp = map_id("SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP")
            self.add(
                phase,
                f"PORT {port.key} QoS bindings",
                self.b.table_entry,
                ING + "port_qos",
                {"port": dev},
                ING + "set_port_qos",
                {
                    "trust_dscp": int(dscp != 0),
                    "dscp_to_tc_map": dscp,
                    "dot1p_to_tc_map": map_id("SAI_PORT_ATTR_QOS_DOT1P_TO_TC_MAP"),
                    "tc_to_pg_map": map_id("SAI_PORT_ATTR_QOS_TC_TO_PRIORITY_GROUP_MAP"),
                    "tc_to_queue_map": map_id("SAI_PORT_ATTR_QOS_TC_TO_QUEUE_MAP"),
                    "default_tc": 0,
                },
            )
        return phase

    def buffers(self) -> Phase:
        phase = Phase("buffers")
        refresh_packet = {ipg.key: i for i, ipg in enumerate(lossless_pgs(self.m))}
        for ipg in self.m.of_type("INGRESS_PRIORITY_GROUP"):
            port_key = ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_PORT"]
            dev = self.port_of(port_key, f"BUFFER_PG|{ipg.key[4:]}")
            if dev is None:
                continue
            port = self.m[port_key]
            pg = ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_INDEX"]
            prof = self.m[ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_BUFFER_PROFILE"]]
            size = prof["SAI_BUFFER_PROFILE_ATTR_RESERVED_BUFFER_SIZE"]
            match = {"port": dev, "pg": pg}
            label = f"INGRESS_PRIORITY_GROUP {ipg.key} ({prof.key})"
            if prof.get("SAI_BUFFER_PROFILE_ATTR_XOFF_TH") is not None:
                classes = classes_of_pg(self.m, port, pg)
                if not classes:
                    self.notes.append(f"{label}: lossless profile, but no PFC priority maps here")
                # The PG pauses once it holds its reserved size plus its shared threshold
                # (static_th bytes, or 2^dynamic_th x the free shared buffer, computed by the
                # pipeline), and resumes below max(xon, that point - xon_offset).
                dynamic = prof.get("SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH")
                static = prof.get("SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH") or 0
                params = {
                    "reserved": size,
                    "xoff_threshold": size + (static if dynamic is None else 0),
                    "xoff_size": prof["SAI_BUFFER_PROFILE_ATTR_XOFF_TH"],
                    "xon_threshold": prof["SAI_BUFFER_PROFILE_ATTR_XON_TH"],
                    "xon_offset": prof["SAI_BUFFER_PROFILE_ATTR_XON_OFFSET_TH"] or 0,
                    "shared_dynamic": int(dynamic is not None),
                    "shift_left": max(dynamic or 0, 0),
                    "shift_right": max(-(dynamic or 0), 0),
                }
                pause = {
                    "class_enable": sum(1 << c for c in classes),
                    "quanta": port["SAI_PORT_ATTR_EXT_PFC_QUANTA"],
                    "refresh_interval_us": refresh_interval_us(
                        port["SAI_PORT_ATTR_EXT_PFC_QUANTA"], self.port_bps[port.key]
                    ),
                }
                self.add(
                    phase, label, self.b.table_entry, ING + "pg_profile", match,
                    ING + "set_lossless", params | pause,
                )  # fmt: skip
                # The packet generator's packet for this PG renews its pause while it holds.
                refresh = {"app": PFC_REFRESH_APP, "batch": 0, "packet": refresh_packet[ipg.key]}
                self.add(
                    phase, f"{label} timed refresh", self.b.table_entry, ING + "pfc_refresh",
                    refresh, ING + "set_refresh", {"port": dev, "pg": pg} | pause,
                )  # fmt: skip
            elif prof.get("SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH") is not None:
                th = prof["SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH"]
                params = {"shift_left": max(th, 0), "shift_right": max(-th, 0)}
                self.add(
                    phase, label, self.b.table_entry, ING + "pg_profile", match,
                    ING + "set_lossy_dynamic", params,
                )  # fmt: skip
            else:
                params = {"threshold": prof["SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH"]}
                self.add(
                    phase, label, self.b.table_entry, ING + "pg_profile", match,
                    ING + "set_lossy_static", params,
                )  # fmt: skip
        return phase

    def egress(self) -> Phase:
        phase = Phase("egress and SFC")
        mac = mac_int(self.switch["SAI_SWITCH_ATTR_SRC_MAC_ADDRESS"])
        signal_dscp = self.switch["SAI_SWITCH_ATTR_EXT_SFC_SIGNAL_DSCP"]
        self.add(
            phase,
            "SWITCH sfc_mode",
            self.b.table_entry,
            ING + "sfc_mode",
            {},
            ING + "set_sfc_mode",
            {
                "dedup": SFC_DEDUP_CODE[self.switch["SAI_SWITCH_ATTR_EXT_SFC_DEDUP"]],
                "version": self.switch["SAI_SWITCH_ATTR_EXT_SFC_VERSION"],
                "fixed_src_port": int(self.switch["SAI_SWITCH_ATTR_EXT_SFC_SRC_PORT"] == "fixed"),
            },
            default=True,
        )
        host_ports = []
        for port in self.m.of_type("PORT"):
            dev = self.dev_port.get(port.key)
            if dev is None:
                continue
            host = port["SAI_PORT_ATTR_EXT_SFC_HOST_FACING"]
            if host:
                host_ports.append(port)
            self.add(
                phase,
                f"PORT {port.key} egress",
                self.b.table_entry,
                EG + "egress_port",
                {"port": dev},
                EG + "set_egress_port",
                {
                    "mac": mac,
                    "sfc_host_facing": int(host),
                    "pause_quanta_per_us_q16": pause_quanta_per_us_q16(self.port_bps[port.key]),
                },
            )
        for queue in self.m.of_type("QUEUE"):
            port_key = queue["SAI_QUEUE_ATTR_PORT"]
            dev = self.port_of(port_key, f"QUEUE|{queue.key[6:]}")
            if dev is None:
                continue
            match = {"port": dev, "queue": queue["SAI_QUEUE_ATTR_INDEX"]}
            wred_key = queue.get("SAI_QUEUE_ATTR_WRED_PROFILE_ID")
            if wred_key is not None:
                wred = self.m[wred_key]
                if wred["SAI_WRED_ATTR_ECN_MARK_MODE"] != "SAI_ECN_MARK_MODE_NONE":
                    kmin = wred["SAI_WRED_ATTR_GREEN_MIN_THRESHOLD"]
                    kmax = wred["SAI_WRED_ATTR_GREEN_MAX_THRESHOLD"]
                    prob = wred["SAI_WRED_ATTR_GREEN_DROP_PROBABILITY"]
                    params = {
                        "min_threshold": kmin,
                        "max_threshold": kmax,
                        "mark_slope": mark_slope(prob, kmin, kmax),
                    }
                    self.add(
                        phase, f"QUEUE {queue.key} {wred_key}", self.b.table_entry,
                        EG + "queue_wred", match, EG + "set_wred_ecn", params,
                    )  # fmt: skip
            if queue.get("SAI_QUEUE_ATTR_EXT_SFC_THRESHOLD") is not None:
                params = {
                    "threshold": queue["SAI_QUEUE_ATTR_EXT_SFC_THRESHOLD"],
                    "target": queue["SAI_QUEUE_ATTR_EXT_SFC_TARGET"],
                    "us_per_byte_q24": us_per_byte_q24(self.port_bps[port_key]),
                    "dscp": signal_dscp,
                }
                self.add(
                    phase, f"QUEUE {queue.key} SFC", self.b.table_entry, ING + "sfc_queue",
                    match, ING + "set_sfc", params,
                )  # fmt: skip
        # The source ToR pauses a host on the priority its host port gives the signalled DSCP:
        # the port's DSCP-to-TC map, for TCs with PFC enabled (priority = TC, as SONiC pairs them).
        dscp_prio: dict[int, int] = {}
        for port in host_ports:
            bound = port["SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP"]
            if bound == NULL:
                continue
            pfc = port["SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL"]
            for dscp, tc in self.m[bound]["SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST"]:
                if pfc >> tc & 1:
                    if dscp_prio.setdefault(dscp, tc) != tc:
                        self.notes.append(
                            f"SFC: host ports map DSCP {dscp} to different priorities; "
                            f"using {dscp_prio[dscp]}"
                        )
        for dscp, prio in sorted(dscp_prio.items()):
            self.add(
                phase, f"SFC DSCP {dscp} -> priority {prio}", self.b.table_entry,
                ING + "sfc_dscp_to_priority", {"dscp": dscp}, ING + "set_sfc_priority",
                {"prio": prio},
            )  # fmt: skip
        return phase

    def l3_objects(self) -> Phase:
        phase = Phase("router interfaces, next hops, neighbours")
        for rif in self.m.of_type("ROUTER_INTERFACE"):
            if rif["SAI_ROUTER_INTERFACE_ATTR_TYPE"] == "SAI_ROUTER_INTERFACE_TYPE_PORT":
                ports = [rif["SAI_ROUTER_INTERFACE_ATTR_PORT_ID"]]
            else:
                vlan = rif["SAI_ROUTER_INTERFACE_ATTR_VLAN_ID"]
                ports = [
                    m["SAI_VLAN_MEMBER_ATTR_BRIDGE_PORT_ID"]
                    for m in self.m.of_type("VLAN_MEMBER")
                    if m["SAI_VLAN_MEMBER_ATTR_VLAN_ID"] == vlan
                ]
                if len(ports) != 1:
                    # No bridging in the pipeline: hosts on it are reached once learned.
                    self.notes.append(
                        f"{rif.key}: VLAN with {len(ports)} member ports has no single egress "
                        "port; its subnet is trapped to the CPU (glean)"
                    )
                    continue
            dev = self.port_of(ports[0], f"INTERFACE|{rif.key[4:]}")
            if dev is None:
                continue
            self.add(
                phase, f"ROUTER_INTERFACE {rif.key}", self.b.table_entry, ING + "router_interface",
                {"rif": self.rif_ids[rif.key]}, ING + "set_port_and_src_mac",
                {"port": dev, "src_mac": mac_int(rif["SAI_ROUTER_INTERFACE_ATTR_SRC_MAC_ADDRESS"])},
            )  # fmt: skip
        for nh in self.m.of_type("NEXT_HOP"):
            self.add(
                phase, f"NEXT_HOP {nh.key}", self.b.table_entry, ING + "nexthop",
                {"nexthop_id": self.nexthop_ids[nh.key]}, ING + "set_ip_nexthop",
                {
                    "rif": self.rif_ids[nh["SAI_NEXT_HOP_ATTR_ROUTER_INTERFACE_ID"]],
                    "neighbor_ip": int(nh["SAI_NEXT_HOP_ATTR_IP"]),
                },
            )  # fmt: skip
        for n in self.m.of_type("NEIGHBOR_ENTRY"):
            self.add(
                phase, f"NEIGHBOR_ENTRY {n.key}", self.b.table_entry, ING + "neighbor",
                {
                    "rif": self.rif_ids[n.entry["rif_id"]],
                    "ip": int(n.entry["ip_address"]),
                },
                ING + "set_dst_mac",
                {"dst_mac": mac_int(n["SAI_NEIGHBOR_ENTRY_ATTR_DST_MAC_ADDRESS"])},
            )  # fmt: skip
        return phase

    def ecmp(self) -> list[Phase]:
        members, groups, table = Phase("ECMP members"), Phase("ECMP groups"), Phase("ECMP table")
        profile = ING + "ecmp_selector"
        used = self.members
        by_group: dict[str, list[int]] = {}
        for m in self.m.of_type("NEXT_HOP_GROUP_MEMBER"):
            by_group.setdefault(m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_GROUP_ID"], []).append(
                self.nexthop_ids[m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_ID"]]
            )
        for group in self.m.of_type("NEXT_HOP_GROUP"):
            gid = self.group_ids[group.key]
            ids = by_group.get(group.key, [])
            # One member per next hop, shared by every group that uses it (member id = next hop id).
            for nid in ids:
                if nid not in used:
                    used.add(nid)
                    self.add(
                        members, f"ECMP member for next hop {nid}", self.b.member, profile, nid,
                        ING + "set_nexthop_id", {"nexthop_id": nid},
                    )  # fmt: skip
            self.add(groups, f"NEXT_HOP_GROUP {group.key}", self.b.group, profile, gid, ids)
            self.add(
                table, f"NEXT_HOP_GROUP {group.key} entry", self.b.table_entry,
                ING + "ecmp_group", {"group": gid}, group_id=gid,
            )  # fmt: skip
        return [members, groups, table]

    def routes(self) -> Phase:
        phase = Phase("routes")
        keys = set()
        for route in self.m.of_type("ROUTE_ENTRY"):
            keys.add(route.key)
            prefix = route.entry["destination"]
            action = route["SAI_ROUTE_ENTRY_ATTR_PACKET_ACTION"]
            target = route.get("SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID")
            if action == "SAI_PACKET_ACTION_DROP":
                self.route(phase, route.key, prefix, ING + "drop_route", {})
            elif action == "SAI_PACKET_ACTION_TRAP" or target == CPU_PORT:
                self.route(phase, route.key, prefix, ING + "trap", {})
            elif target in self.rif_ids:
                # Connected subnet: hosts without a neighbour entry glean to the CPU.
                self.route(phase, route.key, prefix, ING + "trap", {})
            elif target in self.group_ids:
                gid = self.group_ids[target]
                self.route(
                    phase, route.key, prefix, ING + "set_ecmp_group_id", {"ecmp_group_id": gid}
                )
            else:
                nid = self.nexthop_ids[target]
                self.route(phase, route.key, prefix, ING + "set_nexthop_id", {"nexthop_id": nid})
        # Neighbour host routes, which SAI installs implicitly unless a route says otherwise.
        for n in self.m.of_type("NEIGHBOR_ENTRY"):
            ip = n.entry["ip_address"]
            host = ipaddress.ip_network(ip)
            if f"route:{host}" in keys or n["SAI_NEIGHBOR_ENTRY_ATTR_NO_HOST_ROUTE"]:
                continue
            rif = n.entry["rif_id"]
            nid = self.nexthop_ids[f"nexthop:{rif[4:]}|{ip}"]
            self.route(
                phase, f"host route {n.key}", host, ING + "set_nexthop_id", {"nexthop_id": nid}
            )
        return phase

    def route(self, phase: Phase, label: str, prefix, action: str, params: dict) -> None:
        table = ING + ("ipv4_route" if prefix.version == 4 else "ipv6_route")
        match = {"dst": (int(prefix.network_address), prefix.prefixlen)}
        self.add(phase, f"ROUTE_ENTRY {label}", self.b.table_entry, table, match, action, params)


class NeighborEntries:
    """Entries for neighbours learned at run time: the neighbour entry, and the next hop and
    host route SAI would add for it, with ids beyond those of the loaded config. Each
    neighbour is one user of its next hop (HardwareIds.hold_nexthop), which routeorch's
    routes and ECMP groups may use too: whoever takes its last user away deletes it."""

    def __init__(self, p4info: P4InfoIndex, ids: HardwareIds):
        self.b = _Builder(p4info)
        self.ids = ids
        # What remove() takes away: the host route's DELETE (if it made one), then the
        # neighbour entry's (last); the next hop goes by its count.
        self.created: dict[tuple[str, Any], list[Any]] = {}
        # Gone neighbours (release) whose next hop routes still use: neighbour entry (marked
        # pending removal), next hop and host route kept until none does (sweep) or the
        # neighbour is learned again (install).
        self.kept: set[tuple[str, Any]] = set()
        self.holds: set[tuple[str, Any]] = set()  # neighbours counted as their next hop's users

    def _entry(self, kind: int, table: str, match: dict, action: str, params: dict) -> Any:
        update = self.b.table_entry(table, match, action, params)
        update.type = kind
        return update

    def _nexthop(self, kind: int, nid: int, ifname: str, ip: Any) -> Any:
        params = {"rif": self.ids.rif_ids[f"rif:{ifname}"], "neighbor_ip": int(ip)}
        return self._entry(
            kind, ING + "nexthop", {"nexthop_id": nid}, ING + "set_ip_nexthop", params
        )

    def _neighbor(self, ifname: str, ip: Any) -> tuple[str, dict, str]:
        rif = self.ids.rif_ids[f"rif:{ifname}"]
        return ING + "neighbor", {"rif": rif, "ip": int(ip)}, ING + "set_dst_mac"

    def install(self, ifname: str, ip: Any, mac: str, known: bool) -> list[Any]:
        """INSERT a new neighbour (with next hop and host route when missing), or MODIFY the
        MAC of a `known` one. One pending removal (release) is known again: its removal is
        cancelled, and its entry loses the mark (and takes the MAC if that changed)."""
        pb = self.b.pb.Update
        neighbor = self._neighbor(ifname, ip)
        pending = (ifname, ip) in self.kept
        self.kept.discard((ifname, ip))
        kind = pb.MODIFY if known or pending else pb.INSERT
        updates = [self._entry(kind, *neighbor, {"dst_mac": mac_int(mac)})]
        if known or pending:
            return updates
        created = [self._entry(pb.DELETE, *neighbor, {"dst_mac": mac_int(mac)})]
        nid, new = self.ids.hold_nexthop(f"nexthop:{ifname}|{ip}")
        self.holds.add((ifname, ip))
        if new:
            updates.append(self._nexthop(pb.INSERT, nid, ifname, ip))
        host = ipaddress.ip_network(ip)
        if route_key(host) not in self.ids.routes:
            self.ids.routes.add(route_key(host))
            table = ING + ("ipv4_route" if host.version == 4 else "ipv6_route")
            route = (table, {"dst": (int(ip), host.prefixlen)}, ING + "set_nexthop_id")
            updates.append(self._entry(pb.INSERT, *route, {"nexthop_id": nid}))
            created.insert(0, self._entry(pb.DELETE, *route, {"nexthop_id": nid}))
        self.created[(ifname, ip)] = created
        return updates

    def adopt(
        self, ifname: str, ip: Any, mac: str, nexthop: int | None, route: bool, pending: bool
    ) -> list[Any]:
        """A neighbour an earlier controller learned, still on the switch, taken over as if
        install() had made it (with its `nexthop` id and host `route` if those were the
        learner's), and as if release() had kept it when it is `pending` removal (its entry
        marked so); its entities, as the DELETEs remove() would write."""
        pb = self.b.pb.Update
        neighbor = self._neighbor(ifname, ip)
        created = [self._entry(pb.DELETE, *neighbor, {"dst_mac": mac_int(mac)})]
        entities = list(created)
        key = f"nexthop:{ifname}|{ip}"
        with self.ids.lock:
            if nexthop is not None:
                self.ids.hold_nexthop(key, nid=nexthop)
                self.holds.add((ifname, ip))
                entities.append(self._nexthop(pb.DELETE, nexthop, ifname, ip))
            nid = self.ids.nexthop_ids.get(key)
            host = ipaddress.ip_network(ip)
            if route and nid is not None:
                self.ids.routes.add(route_key(host))
                table = ING + ("ipv4_route" if host.version == 4 else "ipv6_route")
                entry = (table, {"dst": (int(ip), host.prefixlen)}, ING + "set_nexthop_id")
                created.insert(0, self._entry(pb.DELETE, *entry, {"nexthop_id": nid}))
                entities.append(created[0])
        self.created[(ifname, ip)] = created
        if pending:
            self.kept.add((ifname, ip))
        return entities

    def remove(self, ifname: str, ip: Any) -> tuple[list[Any], int | None]:
        """DELETE what install() created: host route, then the next hop if no route uses it
        any more, then the neighbour; and the next hop's id to release once they are
        written (or None)."""
        created = self.created.pop((ifname, ip), [])
        self.kept.discard((ifname, ip))
        self._discard_routes(ifname, ip, created)
        routes, neighbor = created[:-1], created[-1:]
        nid = None
        if (ifname, ip) in self.holds:
            self.holds.discard((ifname, ip))
            nid = self.ids.drop_nexthop(f"nexthop:{ifname}|{ip}")
        if nid is not None:
            routes.append(self._nexthop(self.b.pb.Update.DELETE, nid, ifname, ip))
        return routes + neighbor, nid

    def release(self, ifname: str, ip: Any, mac: str) -> tuple[list[Any], int | None]:
        """The neighbour (at `mac`) is gone (the kernel deleted it, or it aged out): all
        remove() takes away if no route uses its next hop; else nothing goes yet, as SONiC's
        neighorch keeps a neighbour whose next hop is referenced: its entry is marked pending
        removal, and it goes with its next hop and host route once sweep() finds no route
        using them (ECMP groups keep their members whole and resolved meanwhile)."""
        with self.ids.lock:
            users = self.ids.nexthop_users.get(f"nexthop:{ifname}|{ip}", 0)
            if users <= 1:
                return self.remove(ifname, ip)
            self.kept.add((ifname, ip))
            mark = self._entry(
                self.b.pb.Update.MODIFY, *self._neighbor(ifname, ip), {"dst_mac": mac_int(mac)}
            )
            mark.entity.table_entry.metadata = PENDING_REMOVAL
            return [mark], None

    def sweep(self) -> tuple[list[Any], list[int]]:
        """What remove() takes away for the kept neighbours (release) whose next hop no route
        uses any more, and their next hop ids to release once written."""
        updates: list[Any] = []
        freed: list[int] = []
        with self.ids.lock:
            for ifname, ip in list(self.kept):
                if self.ids.nexthop_users.get(f"nexthop:{ifname}|{ip}", 0) <= 1:
                    gone, nid = self.remove(ifname, ip)
                    updates += gone
                    freed += [nid] if nid is not None else []
        return updates, freed

    def forget(self) -> None:
        """The switch holds none of this any more (a new session replayed or reconciled it):
        the host routes' keys and every run-time next hop's id are given back."""
        for (ifname, ip), created in self.created.items():
            self._discard_routes(ifname, ip, created)
        self.created.clear()
        self.kept.clear()
        self.holds.clear()
        self.ids.forget_nexthops()

    def _discard_routes(self, ifname: str, ip: Any, created: list[Any]) -> None:
        for update in created:
            if self.b.idx.name_of(update.entity.table_entry.table_id).endswith("_route"):
                self.ids.routes.discard(route_key(ipaddress.ip_network(ip)))


# A route key's parts (config_db.route_key()): its first byte, address, prefix length.
_FIRST, _ADDRESS, _LAST = itemgetter(0), itemgetter(slice(0, -1)), itemgetter(-1)


class RouteEntries:
    """Entries for routes added at run time (FPM): next hops, ECMP members, groups and their
    ecmp_group entries, and route entries whose `metadata` names their source ("fpm:bgp"),
    which is how `show ip route` tells them from the config's."""

    ECMP_PROFILE = ING + "ecmp_selector"

    def __init__(self, p4info: P4InfoIndex):
        self.b = _Builder(p4info)
        self.pb = self.b.pb
        self._templates: dict[tuple, bytes] = {}
        self._dst: dict[int, int] = {}  # route key width: the dst match field's id
        self._frames: dict[tuple[int, int, int], tuple[bytes, bytes]] = {}
        # Field numbers of the route entries' path, from the schema rather than typed in.
        number = {
            (m.DESCRIPTOR.name, f.name): f.number
            for m in (self.pb.Update, self.pb.Entity, self.pb.TableEntry, self.pb.FieldMatch)
            for f in m.DESCRIPTOR.fields
        }
        lpm = self.pb.FieldMatch.LPM.DESCRIPTOR.fields_by_name
        self._f_entity = number[("Update", "entity")]
        self._f_table_entry = number[("Entity", "table_entry")]
        self._f_match = number[("TableEntry", "match")]
        self._f_field_id = varint(number[("FieldMatch", "field_id")] << 3)  # wire type 0
        self._f_lpm = number[("FieldMatch", "lpm")]
        self._f_value = lpm["value"].number
        self._f_prefix_len = varint(lpm["prefix_len"].number << 3)

    def _typed(self, update: Any, insert: bool) -> Any:
        update.type = self.pb.Update.INSERT if insert else self.pb.Update.DELETE
        return update

    def nexthop(self, nid: int, rif: int, ip: Any, insert: bool = True) -> Any:
        params = {"rif": rif, "neighbor_ip": int(ip)}
        update = self.b.table_entry(
            ING + "nexthop", {"nexthop_id": nid}, ING + "set_ip_nexthop", params
        )
        return self._typed(update, insert)

    def member(self, nid: int, insert: bool = True) -> Any:
        update = self.b.member(self.ECMP_PROFILE, nid, ING + "set_nexthop_id", {"nexthop_id": nid})
        return self._typed(update, insert)

    def group(self, gid: int, members: list[int], insert: bool = True) -> list[Any]:
        """The group and its ecmp_group entry: written in that order, deleted in the other."""
        group = self._typed(self.b.group(self.ECMP_PROFILE, gid, members), insert)
        entry = self._typed(
            self.b.table_entry(ING + "ecmp_group", {"group": gid}, group_id=gid), insert
        )
        return [group, entry] if insert else [entry, group]

    def route(self, key: bytes, target: tuple[str, int], source: str, kind: int) -> bytes:
        """A route entry (config_db.route_key() `key`); see routes()."""
        return self.routes([key], target, source, kind)[0]

    def routes(
        self, keys: list[bytes], target: tuple[str, int], source: str, kind: int
    ) -> list[bytes]:
        """Route entries (config_db.route_key() `keys`) to ("nexthop", id), ("group", id) or
        ("drop", 0), as update `kind`, serialized: the route path's hot spot, so the part all
        routes of one target share is built once with protobuf (`_route_template`) and each
        route adds only its LPM match (a zero-length prefix is a wildcard: no match field)
        around its address; the bytes there depend only on the address's length and the prefix
        length (`_lpm_frame`, made once per such pair)."""
        frames, out = self._frames, []
        plens = set(map(_LAST, keys))
        if 0 not in plens and len(plens) == 1 and len(set(map(len, keys))) == 1:
            if min(map(_FIRST, keys)):
                # The usual batch: no leading zero byte (the address is the whole value) and
                # one prefix length, so one frame around every address.
                width, plen = len(keys[0]), keys[0][-1]
                template = self._templates.get(
                    (width, target, source, kind)
                ) or self._route_template(width, target, source, kind)
                frame = frames.get((width, width - 1, plen))
                if frame is None:
                    frame = frames[(width, width - 1, plen)] = self._lpm_frame(
                        width, keys[0][:-1], plen
                    )
                head, tail = template + frame[0], frame[1]
                return [head + address + tail for address in map(_ADDRESS, keys)]
        templates: dict[int, bytes] = {}  # by route key width: IPv4 and IPv6 drop routes mix
        for key in keys:
            width = len(key)
            template = templates.get(width)
            if template is None:
                template = templates[width] = self._templates.get(
                    (width, target, source, kind)
                ) or self._route_template(width, target, source, kind)
            plen = key[-1]
            if plen == 0:
                out.append(template)
                continue
            value = key[:-1].lstrip(b"\0") or b"\0"  # P4Runtime's canonical binary string
            frame = frames.get((width, len(value), plen))
            if frame is None:
                frame = frames[(width, len(value), plen)] = self._lpm_frame(width, value, plen)
            out.append(template + frame[0] + value + frame[1])
        return out

    def _route_template(self, width: int, target: tuple[str, int], source: str, kind: int):
        table = ING + ("ipv4_route" if width == 5 else "ipv6_route")
        what, n = target
        if what == "drop":
            action, params = ING + "drop_route", {}
        elif what == "group":
            action, params = ING + "set_ecmp_group_id", {"ecmp_group_id": n}
        else:
            action, params = ING + "set_nexthop_id", {"nexthop_id": n}
        update = self.b.table_entry(table, {}, action, params)
        update.type = kind
        update.entity.table_entry.metadata = source.encode()
        template = self._templates[(width, target, source, kind)] = update.SerializeToString()
        if width not in self._dst:
            self._dst[width] = self.b._table(table)[1]["dst"].id
        return template

    def _lpm_frame(self, width: int, value: bytes, plen: int) -> tuple[bytes, bytes]:
        """(what precedes the address, what follows it) in the encoding of
        Update.entity.table_entry.match[dst], LPM."""
        tail = self._f_prefix_len + varint(plen)
        lpm = length_delimited(self._f_value, value) + tail
        match = self._f_field_id + varint(self._dst[width]) + length_delimited(self._f_lpm, lpm)
        entry = length_delimited(self._f_match, match)
        whole = length_delimited(self._f_entity, length_delimited(self._f_table_entry, entry))
        # The LPM message ends the encoding: the address is just before its prefix length.
        at = len(whole) - len(tail) - len(value)
        return whole[:at], tail
