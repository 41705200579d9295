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


@dataclass(frozen=True)
class NeighborRow:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    mac: str
    iface: str


def _field(entry: Any, index: P4InfoIndex, table: Any, name: str) -> int:
    mf = index.match_field(table, name)
    for m in entry.match:
        if m.field_id == mf.id:
            return int.from_bytes(m.exact.value or m.lpm.value, "big")
    return 0


def _param(entry: Any, index: P4InfoIndex, name: str) -> int | None:
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
        _field(e, index, rif_table, "rif"): _param(e, index, "port")
        for e in client.read_table(rif_table.preamble.id)
    }
    table = index.table(ING + "neighbor")
    rows = []
    for e in client.read_table(table.preamble.id):
        value = _field(e, index, table, "ip")
        # IPv4 neighbours are zero-extended into the 128-bit key (p4src/README.md).
        address = ipaddress.IPv6Address(value) if value >> 32 else ipaddress.IPv4Address(value)
        port = rif_port.get(_field(e, index, table, "rif"))
        iface = port_names.get(port, f"port {port}") if port is not None else "-"
        rows.append(NeighborRow(address, _mac(_param(e, index, "dst_mac") or 0), iface))
    return sorted(rows, key=lambda r: (r.address.version, r.address))


def render_neighbors(rows: list[NeighborRow], version: int) -> str:
    """SONiC's `show arp` (version 4) / `show ndp` (version 6) layout."""
    header = ["Address", "MacAddress", "Iface", "Vlan"]
    body = [[str(r.address), r.mac, r.iface, "-"] for r in rows if r.address.version == version]
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
