"""`lossless-ctl show ...`: SONiC's show commands, read from the switch over P4Runtime.

The tables are read back and turned into SONiC's layout; port names come from the config's
PORT `index` when a config is given (the switch knows only port numbers).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.p4info import P4InfoIndex

ING = "LosslessIngress."
# The metadata of a neighbour entry whose removal waits for the routes using its next hop to
# let go (p4map.NeighborEntries.release), as SONiC's neighorch keeps a referenced neighbour.
PENDING_REMOVAL = b"pending-removal"


@dataclass(frozen=True)
class NeighborRow:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    mac: str
    iface: str
    pending: bool = False  # pending removal (PENDING_REMOVAL)


def match_value(entry: Any, index: P4InfoIndex, table: Any, name: str) -> int:
    mf = index.match_field(table, name)
    for m in entry.match:
        if m.field_id == mf.id:
            return int.from_bytes(m.exact.value or m.lpm.value, "big")
    return 0


def param_value(entry: Any, index: P4InfoIndex, name: str) -> int | None:
    action = entry.action.action
    for p in index.action(index.name_of(action.action_id)).params:
        if p.name == name:
            for value in action.params:
                if value.param_id == p.id:
                    return int.from_bytes(value.value, "big")
    return None


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def neighbors(
    client: P4RuntimeClient, index: P4InfoIndex, port_names: dict[int, str]
) -> list[NeighborRow]:
    """Every neighbour entry with its interface (router interface -> port -> port name)."""
    rif_table = index.table(ING + "router_interface")
    rif_port = {
        match_value(e, index, rif_table, "rif"): param_value(e, index, "port")
        for e in client.read_table(rif_table.preamble.id)
    }
    table = index.table(ING + "neighbor")
    rows = []
    for e in client.read_table(table.preamble.id):
        value = match_value(e, index, table, "ip")
        # IPv4 neighbours are zero-extended into the 128-bit key (p4src/README.md).
        address = ipaddress.IPv6Address(value) if value >> 32 else ipaddress.IPv4Address(value)
        port = rif_port.get(match_value(e, index, table, "rif"))
        iface = port_names.get(port, f"port {port}") if port is not None else "-"
        mac = _mac(param_value(e, index, "dst_mac") or 0)
        rows.append(NeighborRow(address, mac, iface, e.metadata == PENDING_REMOVAL))
    return sorted(rows, key=lambda r: (r.address.version, r.address))


def render_neighbors(rows: list[NeighborRow], version: int) -> str:
    """SONiC's `show arp` (version 4) / `show ndp` (version 6) layout, with a Status column
    when neighbours are pending removal (kept while routes use their next hops)."""
    header = ["Address", "MacAddress", "Iface", "Vlan"]
    shown = [r for r in rows if r.address.version == version]
    body = [[str(r.address), r.mac, r.iface, "-"] for r in shown]
    if any(r.pending for r in shown):
        header.append("Status")
        for row, r in zip(body, shown, strict=True):
            row.append("pending removal" if r.pending else "")
    widths = [max([len(h)] + [len(row[i]) for row in body]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body
    ]
    lines.append(f"Total number of entries {len(body)}")
    return "\n".join(lines)


ROUTE_KINDS = {
    "set_nexthop_id": "next hop",
    "set_ecmp_group_id": "ECMP group",
    "drop_route": "blackhole",
}


def route_summary(client: P4RuntimeClient, index: P4InfoIndex, version: int) -> str:
    """Route counts by what they do and by prefix length (FRR's `show ip route summary`
    reports sources, which the switch does not know; what it forwards to is what it has)."""
    table = index.table(ING + ("ipv4_route" if version == 4 else "ipv6_route"))
    full = 32 if version == 4 else 128
    kinds: Counter = Counter()
    lengths: Counter = Counter()
    for e in client.read_table(table.preamble.id):
        plen = next((m.lpm.prefix_len for m in e.match), 0)
        action = index.name_of(e.action.action.action_id).rsplit(".", 1)[-1]
        if action == "trap":
            kind = "local (to the CPU)" if plen == full else "connected (glean)"
        else:
            kind = ROUTE_KINDS.get(action, action)
        kinds[kind] += 1
        lengths[plen] += 1
    lines = [f"{'Route kind':<24}{'Routes':>10}"]
    lines += [f"{kind:<24}{n:>10}" for kind, n in sorted(kinds.items())]
    lines.append("-" * 34)
    lines.append(f"{'Totals':<24}{sum(kinds.values()):>10}")
    lines.append("")
    lines.append(f"{'Prefix length':<24}{'Routes':>10}")
    lines += [f"{'/' + str(p):<24}{n:>10}" for p, n in sorted(lengths.items())]
    return "\n".join(lines)


# FRR's route codes, by the protocol zebra marks a route with (fpm.PROTOCOLS' names).
FRR_CODES = {
    "kernel": "K",
    "connected": "C",
    "local": "L",
    "static": "S",
    "rip": "R",
    "ospf": "O",
    "isis": "I",
    "bgp": "B",
    "eigrp": "E",
    "nhrp": "N",
    "sharp": "D",
    "pbr": "F",
    "openfabric": "f",
    "neighbour": "H",
}
ROUTE_LEGEND = (
    "Codes: K - kernel route, C - connected, L - local, S - static, R - RIP, O - OSPF,\n"
    "       I - IS-IS, B - BGP, E - EIGRP, N - NHRP, D - SHARP, F - PBR, f - OpenFabric,\n"
    "       H - neighbour host route (SAI adds one per neighbour)\n"
    "       > - selected route, * - in the switch's table, r - next hop without a neighbour\n"
    "       [config_db] from the config, [fpm] from zebra over FPM, [learned] ARP/ND"
)


@dataclass(frozen=True)
class NextHopRow:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    iface: str
    resolved: bool  # the neighbour (its MAC) is in the switch


@dataclass(frozen=True)
class RouteRow:
    prefix: ipaddress.IPv4Network | ipaddress.IPv6Network
    code: str  # FRR_CODES
    source: str  # config_db, fpm, learned
    kind: str  # via, group, blackhole, connected, local
    nexthops: tuple[NextHopRow, ...] = ()
    group: int | None = None


def _address(value: int, version: int):
    return ipaddress.IPv4Address(value) if version == 4 else ipaddress.IPv6Address(value)


def action_profiles(client: P4RuntimeClient) -> tuple[dict[int, int], dict[int, list[int]]]:
    """The ECMP members ({member id: its one action parameter, the next-hop id}) and groups
    ({group id: member ids}) the switch holds."""
    member = client.pb.Entity()
    member.action_profile_member.SetInParent()
    group = client.pb.Entity()
    group.action_profile_group.SetInParent()
    members, groups = {}, {}
    for e in client.read([member, group]):
        if e.WhichOneof("entity") == "action_profile_member":
            m = e.action_profile_member
            members[m.member_id] = int.from_bytes(m.action.params[0].value, "big")
        else:
            g = e.action_profile_group
            groups[g.group_id] = [m.member_id for m in g.members]
    return members, groups


def routes(
    client: P4RuntimeClient,
    index: P4InfoIndex,
    version: int,
    rif_names: dict[int, str],
    config_neighbors: set | None = None,
) -> list[RouteRow]:
    """The route table with each route's next hops (through its ECMP group) and where it came
    from: the entry's metadata names FPM routes ("fpm:bgp", written by routeorch); the others
    are the config's, or host routes of learned neighbours (not in `config_neighbors`)."""
    nh_table = index.table(ING + "nexthop")
    nexthops = {
        match_value(e, index, nh_table, "nexthop_id"): (
            param_value(e, index, "rif"),
            param_value(e, index, "neighbor_ip"),
        )
        for e in client.read_table(nh_table.preamble.id)
    }
    n_table = index.table(ING + "neighbor")
    resolved = {
        (match_value(e, index, n_table, "rif"), match_value(e, index, n_table, "ip"))
        for e in client.read_table(n_table.preamble.id)
    }
    member_nh, group_members = action_profiles(client)
    ecmp_table = index.table(ING + "ecmp_group")
    ecmp = {
        match_value(e, index, ecmp_table, "group"): e.action.action_profile_group_id
        for e in client.read_table(ecmp_table.preamble.id)
    }

    def hop(nid: int) -> NextHopRow:
        rif, ip = nexthops.get(nid, (None, 0))
        iface = rif_names.get(rif, f"rif {rif}") if rif is not None else f"next hop {nid}?"
        return NextHopRow(_address(ip or 0, version), iface, (rif, ip) in resolved)

    table = index.table(ING + ("ipv4_route" if version == 4 else "ipv6_route"))
    full = 32 if version == 4 else 128
    rows = []
    for e in client.read_table(table.preamble.id):
        lpm = next((m.lpm for m in e.match), None)
        value = int.from_bytes(lpm.value, "big") if lpm is not None else 0
        plen = lpm.prefix_len if lpm is not None else 0
        prefix = ipaddress.ip_network((_address(value, version), plen))
        action = index.name_of(e.action.action.action_id).rsplit(".", 1)[-1]
        meta = e.metadata.decode(errors="replace")
        source, _, protocol = meta.partition(":") if meta else ("config_db", "", "static")
        hops: tuple[NextHopRow, ...] = ()
        group_id = None
        if action == "trap":
            kind = protocol = "local" if plen == full else "connected"
        elif action == "drop_route":
            kind = "blackhole"
        elif action == "set_ecmp_group_id":
            kind, group_id = "group", param_value(e, index, "ecmp_group_id")
            members = group_members.get(ecmp.get(group_id, group_id), [])
            hops = tuple(hop(member_nh.get(m, m)) for m in members)
        else:
            kind = "via"
            hops = (hop(param_value(e, index, "nexthop_id") or 0),)
            if not meta and plen == full and hops[0].ip == prefix.network_address:
                protocol = "neighbour"
                if config_neighbors is not None and prefix.network_address not in config_neighbors:
                    source = "learned"
        rows.append(RouteRow(prefix, FRR_CODES.get(protocol, "?"), source, kind, hops, group_id))
    return sorted(rows, key=lambda r: (r.prefix.network_address, r.prefix.prefixlen))


def render_routes(rows: list[RouteRow], connected: dict | None = None) -> str:
    """FRR's `show ip route` layout, with each route's source in brackets. `connected` names
    the interface of a connected prefix (the switch only knows it traps the subnet)."""
    lines = [ROUTE_LEGEND, ""]
    for r in rows:
        head = f"{r.code}>* {r.prefix} [{r.source}]"
        if r.kind in ("connected", "local"):
            iface = (connected or {}).get(r.prefix)
            what = "is directly connected" if r.kind == "connected" else "is local"
            lines.append(f"{head} {what}" + (f", {iface}" if iface else "") + ", to the CPU")
            continue
        if r.kind == "blackhole":
            lines.append(f"{head} blackhole")
            continue
        group = f", ecmp group {r.group}" if r.group is not None else ""
        for i, h in enumerate(r.nexthops or (None,)):
            if h is None:
                lines.append(f"{head} via nothing (empty group){group}")
                continue
            mark = "" if h.resolved else " r"
            text = f"via {h.ip}, {h.iface}{mark}"
            lines.append(f"{head} {text}{group}" if i == 0 else " " * (len(head) - 1) + f"* {text}")
    ecmp = {r.group for r in rows if r.group is not None}
    lines.append("")
    lines.append(f"Total {len(rows)} routes, {len(ecmp)} ECMP groups in use")
    return "\n".join(lines)
