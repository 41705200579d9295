"""The SAI object layer: config_db records -> SAI objects, orchagent's job, as pure functions.

Objects carry SAI object types and attribute names (saiport.h, saibuffer.h, saiqosmap.h, ...)
so that a SONiC developer can read them as an ASIC_DB dump. References between objects hold the
referenced object's key (our stand-in for an OID). Settings SAI has no attribute for (the
pipeline's Source Flow Control, the PFC watchdog that orchagent runs itself, the switch's port
number) are extension attributes named `..._ATTR_EXT_...`, as vendor SAI extensions are.

What the mapping to P4Runtime does with these objects is `p4map` (syncd's job); the port
configuration file of the switch is `port_config`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lossless_ctl.config_db import (
    CLASSES,
    PFC_QUANTA_DEFAULT,
    ConfigDb,
    IpAddress,
    IpNetwork,
)

NULL = "SAI_NULL_OBJECT_ID"
CPU_PORT = "port:CPU"
# The switch's packet generator (p4-switch's pktgen): the port its packets enter on
# (PKTGEN_PORT in p4src/headers.p4) and the application that renews PFC pauses.
PKTGEN_PORT = 510
PFC_REFRESH_APP = 0

# SONiC's portsorch adds the Ethernet header, FCS and one VLAN tag to the IP MTU.
PORT_MTU_OVERHEAD = 22

QOS_MAP_TYPES = {
    "DSCP_TO_TC_MAP": ("SAI_QOS_MAP_TYPE_DSCP_TO_TC", "SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP"),
    "DOT1P_TO_TC_MAP": ("SAI_QOS_MAP_TYPE_DOT1P_TO_TC", "SAI_PORT_ATTR_QOS_DOT1P_TO_TC_MAP"),
    "TC_TO_PRIORITY_GROUP_MAP": (
        "SAI_QOS_MAP_TYPE_TC_TO_PRIORITY_GROUP",
        "SAI_PORT_ATTR_QOS_TC_TO_PRIORITY_GROUP_MAP",
    ),
    "TC_TO_QUEUE_MAP": ("SAI_QOS_MAP_TYPE_TC_TO_QUEUE", "SAI_PORT_ATTR_QOS_TC_TO_QUEUE_MAP"),
    "MAP_PFC_PRIORITY_TO_QUEUE": (
        "SAI_QOS_MAP_TYPE_PFC_PRIORITY_TO_QUEUE",
        "SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_QUEUE_MAP",
    ),
}
PORT_QOS_FIELDS = {
    "DSCP_TO_TC_MAP": "dscp_to_tc_map",
    "DOT1P_TO_TC_MAP": "dot1p_to_tc_map",
    "TC_TO_PRIORITY_GROUP_MAP": "tc_to_pg_map",
    "TC_TO_QUEUE_MAP": "tc_to_queue_map",
    "MAP_PFC_PRIORITY_TO_QUEUE": "pfc_to_queue_map",
}
ECN_MARK_MODES = {
    "green": "SAI_ECN_MARK_MODE_GREEN",
    "none": "SAI_ECN_MARK_MODE_NONE",
}


@dataclass
class SaiObject:
    type: str  # SAI_OBJECT_TYPE_...
    key: str  # OID stand-in; for entries (route, neighbour) a readable form of `entry`
    attrs: dict[str, Any] = field(default_factory=dict)
    # Key fields of entry objects, as in sai_route_entry_t / sai_neighbor_entry_t.
    entry: dict[str, Any] | None = None

    def __getitem__(self, attr: str) -> Any:
        return self.attrs[attr]

    def get(self, attr: str, default: Any = None) -> Any:
        return self.attrs.get(attr, default)


@dataclass
class SaiModel:
    """SAI objects in creation order (an object comes after everything it refers to)."""

    objects: dict[str, SaiObject] = field(default_factory=dict)
    by_type: dict[str, dict[str, SaiObject]] = field(default_factory=dict)

    def add(self, type_: str, key: str, entry: dict[str, Any] | None = None, **attrs: Any):
        obj = SaiObject(f"SAI_OBJECT_TYPE_{type_}", key, attrs, entry)
        self.objects[key] = obj
        self.by_type.setdefault(type_, {})[key] = obj
        return obj

    def of_type(self, type_: str) -> Iterator[SaiObject]:
        return iter(self.by_type.get(type_, {}).values())

    def __getitem__(self, key: str) -> SaiObject:
        return self.objects[key]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for obj in self.objects.values():
            out[obj.type] = out.get(obj.type, 0) + 1
        return out


def port_key(name: str) -> str:
    return f"port:{name}"


def rif_key(ifname: str) -> str:
    return f"rif:{ifname}"


def nexthop_key(ifname: str, ip: IpAddress) -> str:
    return f"nexthop:{ifname}|{ip}"


def route_key(prefix: IpNetwork) -> str:
    return f"route:{prefix}"


def derive(cfg: ConfigDb) -> SaiModel:
    """Every SAI object the config describes. `cfg` must have passed validation."""
    model = SaiModel()
    mac = cfg.mac or "00:00:00:00:00:00"
    model.add(
        "SWITCH",
        "switch",
        SAI_SWITCH_ATTR_SRC_MAC_ADDRESS=mac,
        SAI_SWITCH_ATTR_EXT_SFC_MIN_INTERVAL_US=cfg.sfc_min_interval_us,
        SAI_SWITCH_ATTR_EXT_SFC_SIGNAL_DSCP=cfg.sfc_signal_dscp,
        SAI_SWITCH_ATTR_EXT_SFC_DEDUP=cfg.sfc_dedup,
        SAI_SWITCH_ATTR_EXT_SFC_VERSION=cfg.sfc_version,
        SAI_SWITCH_ATTR_EXT_SFC_SRC_PORT=cfg.sfc_src_port,
        SAI_SWITCH_ATTR_EXT_PFCWD_POLL_INTERVAL=cfg.pfcwd_poll_interval_ms,
    )
    _qos_maps(cfg, model)
    _ports(cfg, model)
    _buffers(cfg, model)
    _schedulers_and_wred(cfg, model)
    _queues(cfg, model)
    _router_interfaces(cfg, model, mac)
    _neighbors_and_routes(cfg, model)
    _copp(cfg, model)
    return model


# SONiC trap id -> SAI host interface trap type.
TRAP_TYPES = {
    "arp_req": "SAI_HOSTIF_TRAP_TYPE_ARP_REQUEST",
    "arp_resp": "SAI_HOSTIF_TRAP_TYPE_ARP_RESPONSE",
    "neigh_discovery": "SAI_HOSTIF_TRAP_TYPE_IPV6_NEIGHBOR_DISCOVERY",
    "ip2me": "SAI_HOSTIF_TRAP_TYPE_IP2ME",
    "ttl_error": "SAI_HOSTIF_TRAP_TYPE_TTL_ERROR",
}


def _copp(cfg: ConfigDb, model: SaiModel) -> None:
    """CoPP as copporch programs it: a POLICER per group, a HOSTIF_TRAP_GROUP, a HOSTIF_TRAP
    per trap id."""
    for name, group in sorted(cfg.copp_groups.items()):
        policer = None
        if group.cir is not None:
            policer = f"policer:{name}"
            # A single-rate meter has no peak rate of its own: its red is the excess above cir.
            pir = group.pir if group.mode == "tr_tcm" and group.pir is not None else group.cir
            pbs = group.pbs if group.mode == "tr_tcm" and group.pbs is not None else group.cbs
            model.add(
                "POLICER",
                policer,
                SAI_POLICER_ATTR_METER_TYPE=f"SAI_METER_TYPE_{group.meter_type.upper()}",
                SAI_POLICER_ATTR_MODE=f"SAI_POLICER_MODE_{group.mode.upper()}",
                SAI_POLICER_ATTR_CIR=group.cir,
                SAI_POLICER_ATTR_CBS=group.cbs or 0,
                SAI_POLICER_ATTR_PIR=pir,
                SAI_POLICER_ATTR_PBS=pbs or 0,
                SAI_POLICER_ATTR_RED_PACKET_ACTION=f"SAI_PACKET_ACTION_{group.red_action.upper()}",
            )
        attrs: dict[str, Any] = {"SAI_HOSTIF_TRAP_GROUP_ATTR_POLICER": policer or NULL}
        if group.queue is not None:
            attrs["SAI_HOSTIF_TRAP_GROUP_ATTR_QUEUE"] = group.queue
        model.add("HOSTIF_TRAP_GROUP", f"trap_group:{name}", **attrs)
    for _, trap in sorted(cfg.copp_traps.items()):
        group = cfg.copp_groups[trap.group]
        for trap_id in trap.trap_ids:
            model.add(
                "HOSTIF_TRAP",
                f"trap:{trap_id}",
                SAI_HOSTIF_TRAP_ATTR_TRAP_TYPE=TRAP_TYPES.get(
                    trap_id, f"SAI_HOSTIF_TRAP_TYPE_{trap_id.upper()}"
                ),
                SAI_HOSTIF_TRAP_ATTR_PACKET_ACTION=f"SAI_PACKET_ACTION_{group.trap_action.upper()}",
                SAI_HOSTIF_TRAP_ATTR_TRAP_GROUP=f"trap_group:{trap.group}",
            )


def _qos_maps(cfg: ConfigDb, model: SaiModel) -> None:
    for (table, name), qmap in sorted(cfg.qos_maps.items()):
        model.add(
            "QOS_MAP",
            f"qos_map:{table}|{name}",
            SAI_QOS_MAP_ATTR_TYPE=QOS_MAP_TYPES[table][0],
            SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST=list(qmap.entries),
        )


def _ports(cfg: ConfigDb, model: SaiModel) -> None:
    for name, port in sorted(cfg.ports.items(), key=lambda p: (p[1].index is None, p[1].index)):
        qos = cfg.port_qos.get(name)
        attrs: dict[str, Any] = {
            "SAI_PORT_ATTR_EXT_DEV_PORT": port.index,
            "SAI_PORT_ATTR_SPEED": port.speed_mbps,
            "SAI_PORT_ATTR_MTU": port.mtu + PORT_MTU_OVERHEAD,
            "SAI_PORT_ATTR_ADMIN_STATE": port.admin_up,
            "SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL": sum(
                1 << p for p in (qos.pfc_enable if qos else ())
            ),
            "SAI_PORT_ATTR_EXT_PFC_QUANTA": qos.pfc_quanta if qos else PFC_QUANTA_DEFAULT,
        }
        for table, (_, attr) in QOS_MAP_TYPES.items():
            bound = getattr(qos, PORT_QOS_FIELDS[table]) if qos else None
            # Trusting PCP means not binding the DSCP map: that is what makes a port trust DSCP.
            if table == "DSCP_TO_TC_MAP" and qos is not None and not qos.trust_dscp:
                bound = None
            attrs[attr] = f"qos_map:{table}|{bound}" if bound else NULL
        wd = cfg.pfc_wd.get(name)
        if wd is not None:
            attrs["SAI_PORT_ATTR_EXT_PFCWD_ACTION"] = wd.action
            attrs["SAI_PORT_ATTR_EXT_PFCWD_DETECTION_TIME"] = wd.detection_ms
            attrs["SAI_PORT_ATTR_EXT_PFCWD_RESTORATION_TIME"] = wd.restoration_ms
        attrs["SAI_PORT_ATTR_EXT_SFC_HOST_FACING"] = name in cfg.sfc_host_ports
        model.add("PORT", port_key(name), **attrs)


def _buffers(cfg: ConfigDb, model: SaiModel) -> None:
    for name, pool in sorted(cfg.buffer_pools.items()):
        model.add(
            "BUFFER_POOL",
            f"buffer_pool:{name}",
            SAI_BUFFER_POOL_ATTR_TYPE="SAI_BUFFER_POOL_TYPE_"
            + ("INGRESS" if pool.ingress else "EGRESS"),
            SAI_BUFFER_POOL_ATTR_SIZE=pool.size,
            SAI_BUFFER_POOL_ATTR_THRESHOLD_MODE="SAI_BUFFER_POOL_THRESHOLD_MODE_"
            + ("DYNAMIC" if pool.dynamic else "STATIC"),
            SAI_BUFFER_POOL_ATTR_XOFF_SIZE=pool.xoff,
        )
    for name, prof in sorted(cfg.buffer_profiles.items()):
        attrs: dict[str, Any] = {
            "SAI_BUFFER_PROFILE_ATTR_POOL_ID": f"buffer_pool:{prof.pool}",
            "SAI_BUFFER_PROFILE_ATTR_RESERVED_BUFFER_SIZE": prof.size,
        }
        if prof.dynamic_th is not None:
            attrs["SAI_BUFFER_PROFILE_ATTR_THRESHOLD_MODE"] = (
                "SAI_BUFFER_PROFILE_THRESHOLD_MODE_DYNAMIC"
            )
            attrs["SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH"] = prof.dynamic_th
        else:
            attrs["SAI_BUFFER_PROFILE_ATTR_THRESHOLD_MODE"] = (
                "SAI_BUFFER_PROFILE_THRESHOLD_MODE_STATIC"
            )
            attrs["SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH"] = prof.static_th or 0
        if prof.xoff is not None:
            attrs["SAI_BUFFER_PROFILE_ATTR_XOFF_TH"] = prof.xoff
            attrs["SAI_BUFFER_PROFILE_ATTR_XON_TH"] = prof.xon or 0
            attrs["SAI_BUFFER_PROFILE_ATTR_XON_OFFSET_TH"] = prof.xon_offset or 0
        model.add("BUFFER_PROFILE", f"buffer_profile:{name}", **attrs)
    for (port, pg), profile in sorted(cfg.buffer_pgs.items()):
        model.add(
            "INGRESS_PRIORITY_GROUP",
            f"ipg:{port}|{pg}",
            SAI_INGRESS_PRIORITY_GROUP_ATTR_PORT=port_key(port),
            SAI_INGRESS_PRIORITY_GROUP_ATTR_INDEX=pg,
            SAI_INGRESS_PRIORITY_GROUP_ATTR_BUFFER_PROFILE=f"buffer_profile:{profile}",
        )


def _schedulers_and_wred(cfg: ConfigDb, model: SaiModel) -> None:
    for name, sched in sorted(cfg.schedulers.items()):
        attrs: dict[str, Any] = {
            "SAI_SCHEDULER_ATTR_SCHEDULING_TYPE": f"SAI_SCHEDULING_TYPE_{sched.type}",
        }
        if sched.weight is not None:
            attrs["SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT"] = sched.weight
        model.add("SCHEDULER", f"scheduler:{name}", **attrs)
    for name, wred in sorted(cfg.wred_profiles.items()):
        model.add(
            "WRED",
            f"wred:{name}",
            SAI_WRED_ATTR_ECN_MARK_MODE=ECN_MARK_MODES["green" if wred.ecn_green else "none"],
            SAI_WRED_ATTR_GREEN_MIN_THRESHOLD=wred.green_min,
            SAI_WRED_ATTR_GREEN_MAX_THRESHOLD=wred.green_max,
            SAI_WRED_ATTR_GREEN_DROP_PROBABILITY=wred.green_drop_probability,
        )


def _queues(cfg: ConfigDb, model: SaiModel) -> None:
    keys = set(cfg.queues) | set(cfg.buffer_queues) | set(cfg.sfc_queues)
    for port, queue in sorted(keys):
        attrs: dict[str, Any] = {
            "SAI_QUEUE_ATTR_PORT": port_key(port),
            "SAI_QUEUE_ATTR_INDEX": queue,
        }
        settings = cfg.queues.get((port, queue))
        if settings is not None and settings.scheduler:
            attrs["SAI_QUEUE_ATTR_SCHEDULER_PROFILE_ID"] = f"scheduler:{settings.scheduler}"
        if settings is not None and settings.wred_profile:
            attrs["SAI_QUEUE_ATTR_WRED_PROFILE_ID"] = f"wred:{settings.wred_profile}"
        if (port, queue) in cfg.buffer_queues:
            attrs["SAI_QUEUE_ATTR_BUFFER_PROFILE_ID"] = (
                f"buffer_profile:{cfg.buffer_queues[(port, queue)]}"
            )
        sfc = cfg.sfc_queues.get((port, queue))
        if sfc is not None:
            attrs["SAI_QUEUE_ATTR_EXT_SFC_THRESHOLD"] = sfc.threshold
            attrs["SAI_QUEUE_ATTR_EXT_SFC_TARGET"] = sfc.target
        model.add("QUEUE", f"queue:{port}|{queue}", **attrs)


def _router_interfaces(cfg: ConfigDb, model: SaiModel, mac: str) -> None:
    for port in sorted(
        cfg.rif_ports, key=lambda p: cfg.ports[p].index or 0 if p in cfg.ports else 0
    ):
        mtu = cfg.ports[port].mtu if port in cfg.ports else 9100
        model.add(
            "ROUTER_INTERFACE",
            rif_key(port),
            SAI_ROUTER_INTERFACE_ATTR_TYPE="SAI_ROUTER_INTERFACE_TYPE_PORT",
            SAI_ROUTER_INTERFACE_ATTR_PORT_ID=port_key(port),
            SAI_ROUTER_INTERFACE_ATTR_SRC_MAC_ADDRESS=mac,
            SAI_ROUTER_INTERFACE_ATTR_MTU=mtu,
        )
    vlans_with_ips = {r.ifname for r in cfg.router_ips if r.ifname.startswith("Vlan")}
    for name in sorted(vlans_with_ips):
        vlan = cfg.vlans[name]
        model.add("VLAN", f"vlan:{name}", SAI_VLAN_ATTR_VLAN_ID=vlan.vlanid)
        for member in vlan.members:
            model.add(
                "VLAN_MEMBER",
                f"vlan_member:{name}|{member}",
                SAI_VLAN_MEMBER_ATTR_VLAN_ID=f"vlan:{name}",
                SAI_VLAN_MEMBER_ATTR_BRIDGE_PORT_ID=port_key(member),
            )
        model.add(
            "ROUTER_INTERFACE",
            rif_key(name),
            SAI_ROUTER_INTERFACE_ATTR_TYPE="SAI_ROUTER_INTERFACE_TYPE_VLAN",
            SAI_ROUTER_INTERFACE_ATTR_VLAN_ID=f"vlan:{name}",
            SAI_ROUTER_INTERFACE_ATTR_SRC_MAC_ADDRESS=mac,
            SAI_ROUTER_INTERFACE_ATTR_MTU=9100,
        )


def _route(model: SaiModel, prefix: IpNetwork, action: str, nexthop: str | None) -> None:
    attrs: dict[str, Any] = {"SAI_ROUTE_ENTRY_ATTR_PACKET_ACTION": f"SAI_PACKET_ACTION_{action}"}
    if nexthop is not None:
        attrs["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] = nexthop
    entry = {"vr_id": "default", "destination": prefix}
    model.add("ROUTE_ENTRY", route_key(prefix), entry, **attrs)


def _nexthop(model: SaiModel, ifname: str, ip: IpAddress) -> str:
    key = nexthop_key(ifname, ip)
    if key not in model.objects:
        model.add(
            "NEXT_HOP",
            key,
            SAI_NEXT_HOP_ATTR_TYPE="SAI_NEXT_HOP_TYPE_IP",
            SAI_NEXT_HOP_ATTR_IP=ip,
            SAI_NEXT_HOP_ATTR_ROUTER_INTERFACE_ID=rif_key(ifname),
        )
    return key


def _neighbors_and_routes(cfg: ConfigDb, model: SaiModel) -> None:
    # Router addresses: the subnet is connected (unresolved hosts glean to the CPU through the
    # RIF), the address itself is IP2ME (to the CPU port), as SONiC's intfsorch programs them.
    for rip in sorted(cfg.router_ips, key=lambda r: (r.ip.version, r.ip)):
        if (
            not rip.ifname.startswith("Loopback")
            and rip.ip.network.prefixlen < rip.ip.max_prefixlen
        ):
            _route(model, rip.ip.network, "FORWARD", rif_key(rip.ifname))
        host = ipaddress.ip_network(rip.ip.ip)
        _route(model, host, "FORWARD", CPU_PORT)
    # A neighbour is a NEIGHBOR_ENTRY plus the next hop neighorch creates for it; SAI installs
    # its host route implicitly (SAI_NEIGHBOR_ENTRY_ATTR_NO_HOST_ROUTE false).
    for n in sorted(cfg.neighbors, key=lambda n: (n.ifname, n.ip.version, n.ip)):
        model.add(
            "NEIGHBOR_ENTRY",
            f"neighbor:{n.ifname}|{n.ip}",
            {"rif_id": rif_key(n.ifname), "ip_address": n.ip},
            SAI_NEIGHBOR_ENTRY_ATTR_DST_MAC_ADDRESS=n.mac,
            SAI_NEIGHBOR_ENTRY_ATTR_NO_HOST_ROUTE=False,
        )
        _nexthop(model, n.ifname, n.ip)
    connected = [
        (r.ip.network, r.ifname) for r in cfg.router_ips if not r.ifname.startswith("Loop")
    ]

    def ifname_of(ip: IpAddress, given: str | None) -> str:
        if given is not None:
            return given
        # Longest matching connected subnet, as the kernel resolves a next hop's interface.
        best = max((net.prefixlen, name) for net, name in connected if ip in net)
        return best[1]

    groups: dict[tuple[str, ...], str] = {}
    hop_keys: dict[tuple[IpAddress, str | None], str] = {}

    def hop_key(ip: IpAddress, given: str | None) -> str:
        key = hop_keys.get((ip, given))
        if key is None:
            key = hop_keys[(ip, given)] = _nexthop(model, ifname_of(ip, given), ip)
        return key

    for route in sorted(cfg.static_routes, key=lambda r: (r.prefix.version, r.prefix)):
        if route.blackhole:
            _route(model, route.prefix, "DROP", None)
            continue
        hops = sorted({hop_key(ip, ifn) for ip, ifn in route.nexthops})
        if len(hops) == 1:
            _route(model, route.prefix, "FORWARD", hops[0])
            continue
        members = tuple(hops)
        group = groups.get(members)
        if group is None:
            group = f"nhg:{len(groups) + 1}"
            groups[members] = group
            model.add(
                "NEXT_HOP_GROUP", group, SAI_NEXT_HOP_GROUP_ATTR_TYPE="SAI_NEXT_HOP_GROUP_TYPE_ECMP"
            )
            for hop in members:
                model.add(
                    "NEXT_HOP_GROUP_MEMBER",
                    f"nhgm:{group}|{hop}",
                    SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_GROUP_ID=group,
                    SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_ID=hop,
                )
        _route(model, route.prefix, "FORWARD", group)


def half_pause_ns(quanta: int, bps: int) -> int:
    """Half the time `quanta` pause a sender at `bps` (512 bit times each), in whole ns: how
    often a paused PG is renewed, as real switches refresh at about half the pause. Integers
    all the way, so 10 Mb/s (1 677 696 000 ns at 0xFFFF) and 400G (41 942 ns) are both exact."""
    return quanta * 512 * 1_000_000_000 // (2 * bps)


def lossless_pgs(model: SaiModel) -> list[SaiObject]:
    """Ingress priority groups with a lossless (XOFF) profile on a port the switch has, in
    object order: packet i of the pipeline's refresh batch renews the i-th one's pause."""
    out = []
    for ipg in model.of_type("INGRESS_PRIORITY_GROUP"):
        profile = model[ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_BUFFER_PROFILE"]]
        port = model.objects.get(ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_PORT"])
        if (
            profile.get("SAI_BUFFER_PROFILE_ATTR_XOFF_TH") is not None
            and port is not None
            and port["SAI_PORT_ATTR_EXT_DEV_PORT"] is not None
        ):
            out.append(ipg)
    return out


def classes_of_pg(model: SaiModel, port: SaiObject, pg: int) -> list[int]:
    """PFC priorities (= TCs, as SONiC pairs them) that the port maps to priority group `pg`."""
    pfc = port["SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL"]
    map_key = port["SAI_PORT_ATTR_QOS_TC_TO_PRIORITY_GROUP_MAP"]
    # Without a TC-to-PG map every TC is in PG 0, SAI's default.
    tc_to_pg = dict(model[map_key]["SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST"]) if map_key != NULL else {}
    return [p for p in range(CLASSES) if pfc >> p & 1 and tc_to_pg.get(p, 0) == pg]
