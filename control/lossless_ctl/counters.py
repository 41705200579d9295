"""SONiC's counter and watermark show commands, from the pipeline's P4 counters and registers
(read over P4Runtime) and the switch's statistics endpoint (`p4-switch --stats-addr`, `/stats`).

A `Snapshot` is everything read once; each `show_*` function turns it into the rows SONiC's
tool prints (pfcstat, queuestat, watermarkstat, portstat, pfcwd) and into a JSON document.
Which source feeds which column is in control/README.md ("Counter and watermark commands").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.switch_http import StatsError, request

CLASSES = 8  # priorities, PGs and queues per port; P4 counters are indexed port * 8 + class
NA = "N/A"  # what SONiC prints for a counter the platform does not provide

# p4src/README.md "Counters and registers" (index port * 8 + class unless said otherwise).
PIPELINE_COUNTERS = (
    "pfc_sent",
    "ecn_marked",
    "xoff_transitions",
    "xon_transitions",
    "headroom_admits",
    "lossless_violations",
    "pg_dropped",
    "drop_reasons",  # index: reason (DROP_* in p4src/headers.p4)
    "port_rx_dropped",  # index: ingress port
)
PIPELINE_REGISTERS = (
    "pg_bytes",
    "queue_bytes",
    "shared_pool_used",  # index 0
    "pg_shared_peak",
    "pg_headroom_peak",
)

# p4src/headers.p4 DROP_*: the drop_reasons counter's index.
DROP_REASONS = (
    "parser_error",
    "not_router_mac",
    "no_route",
    "ttl_expired",
    "no_neighbor",
    "lossy_threshold",
    "lossless_violation",
    "copp",
    "route_action",
    "mac_control",
)


@dataclass
class Snapshot:
    """One reading of the switch. `counters[name][i]` is (packets, bytes); `registers[name][i]`
    the cell's value; `stats` the `/stats` document (its `tm` is None without a traffic
    manager, i.e. a switch started without `--port-config`)."""

    counters: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    registers: dict[str, dict[int, int]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    port_names: dict[int, str] = field(default_factory=dict)

    def name(self, port: int) -> str:
        return self.port_names.get(port, f"port{port}")

    @property
    def tm_ports(self) -> dict[int, dict[str, Any]]:
        tm = self.stats.get("tm") or {}
        return {p["port"]: p for p in tm.get("ports", [])}

    def ports(self) -> list[int]:
        """The front-panel ports: the config's when given, else every port the switch knows."""
        if self.port_names:
            return sorted(self.port_names)
        sw = self.stats.get("switch") or {}
        known = set(self.tm_ports)
        for key in ("rx_frames", "tx_frames"):
            known |= {int(p) for p in (sw.get(key) or {})}
        return sorted(known)

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return self.counters.get(name, {}).get(index, (0, 0))

    def register(self, name: str, index: int) -> int:
        return self.registers.get(name, {}).get(index, 0)

    def per_class(self, name: str, port: int, what: int = 0) -> list[int]:
        """A port's 8 cells of a `port * 8 + class` counter; what = 0 packets, 1 bytes."""
        return [self.counter(name, port * CLASSES + c)[what] for c in range(CLASSES)]

    def queue(self, port: int, queue: int) -> dict[str, Any] | None:
        for q in self.tm_ports.get(port, {}).get("queues", []):
            if q["queue"] == queue:
                return q
        return None


def fetch_stats(address: str, timeout: float = 10.0) -> dict[str, Any]:
    """GET http://ADDRESS/stats from p4-switch."""
    body = request(address, "/stats", timeout=timeout)
    try:
        return json.loads(body)
    except ValueError as err:
        raise StatsError(f"http://{address}/stats: not JSON: {err}") from err


def read_pipeline(client: P4RuntimeClient, index: P4InfoIndex, snap: Snapshot) -> None:
    """Every cell of the counters and registers above (one wildcard Read each)."""
    pb = client.pb
    for name in PIPELINE_COUNTERS:
        entity = pb.Entity()
        entity.counter_entry.counter_id = index.counter(name).preamble.id
        cells = {}
        for e in client.read([entity]):
            c = e.counter_entry
            cells[c.index.index] = (c.data.packet_count, c.data.byte_count)
        snap.counters[name] = cells
    for name in PIPELINE_REGISTERS:
        entity = pb.Entity()
        entity.register_entry.register_id = index.register(name).preamble.id
        regs = {}
        for e in client.read([entity]):
            r = e.register_entry
            regs[r.index.index] = int.from_bytes(r.data.bitstring, "big")
        snap.registers[name] = regs


# --- layout ---------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[Any]]) -> str:
    """tabulate's "simple" format with every column right-aligned, as SONiC's tools print."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def comma(n: int | str) -> str:
    """SONiC's format_number_with_comma."""
    return f"{n:,}" if isinstance(n, int) else n


# --- show pfc counters (pfcstat) ------------------------------------------------------------


def pfc_counters(snap: Snapshot) -> dict[str, dict[str, list[int]]]:
    """Rx: PFC frames received with the priority's class-enable bit (traffic manager);
    Tx: PFC frames the pipeline generated, per priority they pause (`pfc_sent`)."""
    tm = snap.tm_ports
    out = {}
    for port in snap.ports():
        rx = list(tm[port]["pfc_rx"]) if port in tm else [0] * CLASSES
        out[snap.name(port)] = {"rx": rx, "tx": snap.per_class("pfc_sent", port)}
    return out


def render_pfc_counters(data: dict[str, dict[str, list[int]]]) -> str:
    blocks = []
    for direction, title in (("rx", "Port Rx"), ("tx", "Port Tx")):
        header = [title] + [f"PFC{p}" for p in range(CLASSES)]
        rows = [[name] + [comma(v) for v in d[direction]] for name, d in data.items()]
        blocks.append(table(header, rows))
    return "\n\n".join(blocks)


# --- show queue counters (queuestat) --------------------------------------------------------


def queue_counters(snap: Snapshot) -> dict[str, dict[str, dict[str, int | str]]]:
    """Per unicast queue: transmitted packets and bytes and tail drops (traffic manager; it
    does not count dropped bytes), ECN marks (`ecn_marked`)."""
    out: dict[str, dict[str, dict[str, int | str]]] = {}
    for port in snap.ports():
        marked = snap.per_class("ecn_marked", port, 0)
        marked_bytes = snap.per_class("ecn_marked", port, 1)
        queues: dict[str, dict[str, int | str]] = {}
        for qi in range(CLASSES):
            q = snap.queue(port, qi)
            queues[f"UC{qi}"] = {
                "totalpacket": q["tx_packets"] if q else NA,
                "totalbytes": q["tx_bytes"] if q else NA,
                "droppacket": sum(q["drops"].values()) if q else NA,
                "dropbytes": NA,
                "ecnmarkedpacket": marked[qi],
                "ecnmarkedbytes": marked_bytes[qi],
            }
        out[snap.name(port)] = queues
    return out


def render_queue_counters(data: dict[str, dict[str, dict[str, int | str]]]) -> str:
    header = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"]
    keys = ("totalpacket", "totalbytes", "droppacket", "dropbytes")
    blocks = [
        table(header, [[name, q] + [comma(c[k]) for k in keys] for q, c in queues.items()])
        for name, queues in data.items()
    ]
    return "\n\n".join(blocks)


def render_wred_counters(data: dict[str, dict[str, dict[str, int | str]]]) -> str:
    """SONiC's `show queue wredcounters`: the pipeline marks and never WRED-drops."""
    header = ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"]
    blocks = [
        table(
            header,
            [
                [name, q, NA, NA, comma(c["ecnmarkedpacket"]), comma(c["ecnmarkedbytes"])]
                for q, c in queues.items()
            ],
        )
        for name, queues in data.items()
    ]
    return "\n\n".join(blocks)


# --- watermarks (watermarkstat) -------------------------------------------------------------


def queue_watermarks(snap: Snapshot) -> dict[str, dict[str, int | str]]:
    """The traffic manager's per-queue peak occupancy in bytes since start or the last clear."""
    out: dict[str, dict[str, int | str]] = {}
    for port in snap.ports():
        row: dict[str, int | str] = {}
        for qi in range(CLASSES):
            q = snap.queue(port, qi)
            row[f"UC{qi}"] = q["peak_bytes"] if q else NA
        out[snap.name(port)] = row
    return out


def pg_watermarks(snap: Snapshot) -> dict[str, dict[str, dict[str, int]]]:
    """The pipeline's PG watermarks (registers `pg_shared_peak`, `pg_headroom_peak`): peak bytes
    beyond the PG's reserved size outside its headroom, and in its headroom (what it took beyond
    its pause point or while paused), since the last clear. The JSON adds the PG's current
    occupancy (`pg_bytes`) and the packets admitted into headroom."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for port in snap.ports():
        admits = snap.per_class("headroom_admits", port)
        out[snap.name(port)] = {
            f"PG{pg}": {
                "shared": snap.register("pg_shared_peak", port * CLASSES + pg),
                "headroom": snap.register("pg_headroom_peak", port * CLASSES + pg),
                "occupancy_bytes": snap.register("pg_bytes", port * CLASSES + pg),
                "headroom_admits": admits[pg],
            }
            for pg in range(CLASSES)
        }
    return out


def buffer_occupancy(snap: Snapshot) -> dict[str, Any]:
    """What the buffer holds now: the pipeline's counts (registers `pg_bytes`, `queue_bytes`,
    `shared_pool_used`, on which it decides pause, XON and drops) beside the traffic manager's
    queue depth in bytes (`/stats`). The switch releases the pipeline's counts for every
    packet that leaves the buffer, dropped or sent, so the two queue columns agree for data
    packets (a generated PFC or SFC frame waiting in a queue is the TM's alone)."""
    ports: dict[str, dict[str, dict[str, int | str]]] = {}
    for port in snap.ports():
        row: dict[str, dict[str, int | str]] = {}
        for c in range(CLASSES):
            q = snap.queue(port, c)
            row[str(c)] = {
                "pg_bytes": snap.register("pg_bytes", port * CLASSES + c),
                "queue_bytes": snap.register("queue_bytes", port * CLASSES + c),
                "tm_queue_bytes": q["depth_bytes"] if q else NA,
            }
        ports[snap.name(port)] = row
    return {"shared_pool_used": snap.register("shared_pool_used", 0), "ports": ports}


def render_buffer_occupancy(data: dict[str, Any]) -> str:
    """This lab's (SONiC shows only watermarks): a port per row, the 8 classes as columns,
    three rows per port (pipeline PG, pipeline queue, TM queue)."""
    header = ["Port", "Count", *(str(c) for c in range(CLASSES))]
    rows = []
    for name, classes in data["ports"].items():
        for key, label in (("pg_bytes", "PG"), ("queue_bytes", "Queue"), ("tm_queue_bytes", "TM")):
            cells = [classes[str(c)][key] for c in range(CLASSES)]
            rows.append([name, label, *(comma(v) for v in cells)])
    pool = f"Shared pool used: {comma(data['shared_pool_used'])} bytes"
    return f"Buffer occupancy in bytes:\n{table(header, rows)}\n{pool}"


def pg_drop_counters(snap: Snapshot) -> dict[str, list[int]]:
    """Packets each PG's thresholds dropped (`pg_dropped`): lossy thresholds and lossless
    packets beyond the headroom."""
    return {snap.name(port): snap.per_class("pg_dropped", port) for port in snap.ports()}


def render_pg_drop_counters(data: dict[str, list[int]]) -> str:
    """SONiC's `show priority-group drop counters` (pg-drop): a port per row."""
    header = ["Port", *(f"PG{pg}" for pg in range(CLASSES))]
    rows = [[name, *(comma(v) for v in cells)] for name, cells in data.items()]
    return "Ingress PG dropped packets:\n" + table(header, rows)


def pg_pause_counters(snap: Snapshot) -> dict[str, dict[str, dict[str, int]]]:
    """Per PG: pause state changes (`xoff_transitions`, `xon_transitions`), packets admitted
    into headroom and dropped beyond it (`headroom_admits`, `lossless_violations`). SONiC has
    no command for these; the layout follows `show queue counters`."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for port in snap.ports():
        cells = {
            key: snap.per_class(name, port, what)
            for key, name, what in (
                ("xoff", "xoff_transitions", 0),
                ("xon", "xon_transitions", 0),
                ("headroom_packets", "headroom_admits", 0),
                ("headroom_bytes", "headroom_admits", 1),
                ("violation_packets", "lossless_violations", 0),
                ("violation_bytes", "lossless_violations", 1),
            )
        }
        out[snap.name(port)] = {
            f"PG{pg}": {key: values[pg] for key, values in cells.items()} for pg in range(CLASSES)
        }
    return out


def render_pg_pause_counters(data: dict[str, dict[str, dict[str, int]]]) -> str:
    header = ["Port", "PG", "XOFF", "XON", "Headroom/pkts", "Headroom/bytes",
              "Violation/pkts", "Violation/bytes"]  # fmt: skip
    keys = ("xoff", "xon", "headroom_packets", "headroom_bytes", "violation_packets",
            "violation_bytes")  # fmt: skip
    blocks = [
        table(header, [[name, pg] + [comma(c[k]) for k in keys] for pg, c in pgs.items()])
        for name, pgs in data.items()
    ]
    return "\n\n".join(blocks)


def render_watermarks(title: str, data: dict[str, list[int | str]], prefix: str) -> str:
    """watermarkstat's layout: a title line, then a port per row and a class per column."""
    header = ["Port", *(f"{prefix}{i}" for i in range(CLASSES))]
    return f"{title}:\n" + table(header, [[port, *cells] for port, cells in data.items()])


# --- show interfaces counters (portstat) ----------------------------------------------------


def _port_value(port: int, key: str, sw_key: str | None, tm: dict, sw: dict) -> int | None:
    """A port's count from the traffic manager's stats, else from the switch's own maps."""
    if port in tm:
        return int(tm[port][key])
    if sw_key is not None and str(port) in (sw.get(sw_key) or {}):
        return int(sw[sw_key][str(port)])
    return None


def interface_counters(
    snap: Snapshot, before: Snapshot | None = None, period_s: float = 0.0
) -> dict[str, dict[str, int | str]]:
    """Frames and bytes per port from the traffic manager (every frame on the wire, MAC
    control included), else the switch's per-port frame counts; TX_DRP = the port's egress
    queue drops. With `before` (SONiC's `--period`) counts are the difference and rates are
    computed over the period."""
    sw = snap.stats.get("switch") or {}
    tm = snap.tm_ports
    old_tm = before.tm_ports if before else {}
    old_sw = (before.stats.get("switch") or {}) if before else {}
    out: dict[str, dict[str, int | str]] = {}
    for port in snap.ports():
        attached = port in tm or str(port) in (sw.get("rx_frames") or {})
        row: dict[str, int | str] = {"state": "U" if attached else "X"}
        for direction, pk, bk, swp, swb in (
            ("rx", "rx_packets", "rx_bytes", "rx_frames", None),
            ("tx", "tx_packets", "tx_bytes", "tx_frames", "tx_bytes"),
        ):
            pkts = _port_value(port, pk, swp, tm, sw)
            byts = _port_value(port, bk, swb, tm, sw)
            if before is not None:
                old_p = _port_value(port, pk, swp, old_tm, old_sw)
                old_b = _port_value(port, bk, swb, old_tm, old_sw)
                pkts = None if pkts is None or old_p is None else pkts - old_p
                byts = None if byts is None or old_b is None else byts - old_b
            row[f"{direction}_ok"] = pkts if pkts is not None else NA
            row[f"{direction}_bytes"] = byts if byts is not None else NA
            rate = byts / period_s if before is not None and byts is not None and period_s else None
            row[f"{direction}_bps"] = rate if rate is not None else NA
            speed = tm.get(port, {}).get("rate_bps")
            row[f"{direction}_util"] = rate * 8 * 100 / speed if rate is not None and speed else NA
            row[f"{direction}_err"] = NA
            row[f"{direction}_ovr"] = NA
        drops = sum(tm[port]["drops"].values()) if port in tm else None
        if before is not None and drops is not None and port in old_tm:
            drops -= sum(old_tm[port]["drops"].values())
        rx_drops = snap.counter("port_rx_dropped", port)[0]
        if before is not None:
            rx_drops -= before.counter("port_rx_dropped", port)[0]
        row["rx_drp"] = rx_drops
        row["tx_drp"] = drops if drops is not None else NA
        out[snap.name(port)] = row
    return out


def _rate(bps: float | str) -> str:
    """portstat's byte rate with two decimals: B/s, KB/s, MB/s or GB/s (steps of 1000)."""
    if isinstance(bps, str):
        return bps
    for unit in ("B/s", "KB/s", "MB/s"):
        if bps < 1000:
            return f"{bps:.2f} {unit}"
        bps /= 1000
    return f"{bps:.2f} GB/s"


def render_interface_counters(data: dict[str, dict[str, int | str]]) -> str:
    header = [
        "IFACE", "STATE",
        "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR",
        "TX_OK", "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR",
    ]  # fmt: skip
    rows = []
    for name, r in data.items():
        row: list[Any] = [name, r["state"]]
        for d in ("rx", "tx"):
            util = r[f"{d}_util"]
            row += [
                comma(r[f"{d}_ok"]),
                _rate(r[f"{d}_bps"]),
                f"{util:.2f}%" if not isinstance(util, str) else util,
                comma(r[f"{d}_err"]),
                comma(r[f"{d}_drp"]),
                comma(r[f"{d}_ovr"]),
            ]
        rows.append(row)
    return table(header, rows)


# --- show dropcounters counts (dropstat) ----------------------------------------------------


def drop_counters(snap: Snapshot) -> dict[str, Any]:
    """Per port: packets the pipeline dropped from it (`port_rx_dropped`) and the traffic
    manager's drops at its egress queues; for the switch: the pipeline's drops by reason
    (`drop_reasons`, SONiC's switch-level debug counters)."""
    tm = snap.tm_ports
    ports = {
        snap.name(port): {
            "state": "U" if port in tm or snap.counter("port_rx_dropped", port)[0] else "X",
            "rx_err": NA,
            "rx_drps": snap.counter("port_rx_dropped", port)[0],
            "tx_err": NA,
            "tx_drps": sum(tm[port]["drops"].values()) if port in tm else NA,
        }
        for port in snap.ports()
    }
    reasons = {name: snap.counter("drop_reasons", i)[0] for i, name in enumerate(DROP_REASONS)}
    return {"ports": ports, "switch": reasons}


def render_drop_counters(data: dict[str, Any]) -> str:
    header = ["IFACE", "STATE", "RX_ERR", "RX_DRPS", "TX_ERR", "TX_DRPS"]
    keys = ("rx_err", "rx_drps", "tx_err", "tx_drps")
    rows = [[name, r["state"], *(comma(r[k]) for k in keys)] for name, r in data["ports"].items()]
    reasons = data["switch"]
    device = table(
        ["DEVICE", *(name.upper() for name in reasons)],
        [["SWITCH", *(comma(v) for v in reasons.values())]],
    )
    return table(header, rows) + "\n\n" + device


# --- show pfcwd stats -----------------------------------------------------------------------


def pfcwd_stats(snap: Snapshot) -> dict[str, dict[str, int | str]]:
    """Queues with the watchdog enabled (traffic manager): state, storms detected/restored,
    packets sent and dropped by the watchdog at the queue. Ingress (RX) and last-storm
    counts are not kept by the switch."""
    out: dict[str, dict[str, int | str]] = {}
    for port in snap.ports():
        for q in snap.tm_ports.get(port, {}).get("queues", []):
            wd = q["pfcwd"]
            if not wd["enabled"]:
                continue
            out[f"{snap.name(port)}:{q['queue']}"] = {
                "status": "stormed" if wd["stormed"] else "operational",
                "storm_detected": wd["storms_detected"],
                "storm_restored": wd["restorations"],
                "tx_ok": q["tx_packets"],
                "tx_drop": q["drops"].get("pfc_watchdog", 0),
                "rx_ok": NA,
                "rx_drop": NA,
                "tx_last_ok": NA,
                "tx_last_drop": NA,
                "rx_last_ok": NA,
                "rx_last_drop": NA,
            }
    return out


def render_pfcwd_stats(data: dict[str, dict[str, int | str]]) -> str:
    header = [
        "QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP",
        "TX LAST OK/DROP", "RX LAST OK/DROP",
    ]  # fmt: skip
    rows = [
        [
            queue,
            s["status"],
            f"{s['storm_detected']}/{s['storm_restored']}",
            f"{s['tx_ok']}/{s['tx_drop']}",
            f"{s['rx_ok']}/{s['rx_drop']}",
            f"{s['tx_last_ok']}/{s['tx_last_drop']}",
            f"{s['rx_last_ok']}/{s['rx_last_drop']}",
        ]
        for queue, s in data.items()
    ]
    return table(header, rows)


# --- clear (sonic-clear) --------------------------------------------------------------------


@dataclass(frozen=True)
class ClearSet:
    """What a clear command resets: P4 counters and registers (to 0 over P4Runtime) and the
    traffic manager's groups (`POST /clear?scope=`, p4-switch's names)."""

    counters: tuple[str, ...] = ()
    registers: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()


PG_PAUSE_COUNTERS = (
    "xoff_transitions",
    "xon_transitions",
    "headroom_admits",
    "lossless_violations",
)
CLEAR_COMMANDS = {
    "counters": ClearSet(counters=("port_rx_dropped",), scopes=("ports",)),
    "pfccounters": ClearSet(counters=("pfc_sent",), scopes=("pfc",)),
    "queuecounters": ClearSet(counters=("ecn_marked",), scopes=("queues",)),
    "pfcwdcounters": ClearSet(scopes=("pfcwd",)),
    "dropcounters": ClearSet(counters=("drop_reasons", "port_rx_dropped")),
    "priority-group drop counters": ClearSet(counters=("pg_dropped",)),
    "priority-group pause counters": ClearSet(counters=PG_PAUSE_COUNTERS),
    "watermarks": ClearSet(
        registers=("pg_shared_peak", "pg_headroom_peak"), scopes=("watermarks",)
    ),
    "queue watermark unicast": ClearSet(scopes=("watermarks",)),
    "priority-group watermark shared": ClearSet(registers=("pg_shared_peak",)),
    "priority-group watermark headroom": ClearSet(registers=("pg_headroom_peak",)),
}
CLEAR_ALIASES = {
    "queue watermark": "queue watermark unicast",
    "queue watermark all": "queue watermark unicast",
}


def clear_set(what: str) -> ClearSet:
    """The union of every clear command for `all`, else the named command's set."""
    if what == "all":
        sets = CLEAR_COMMANDS.values()
        return ClearSet(
            *(tuple(dict.fromkeys(n for c in sets for n in getattr(c, f))) for f in
              ("counters", "registers", "scopes"))
        )  # fmt: skip
    return CLEAR_COMMANDS[CLEAR_ALIASES.get(what, what)]


def _zero_cells(client: P4RuntimeClient, entity: Any, kind: str) -> list[Any]:
    """MODIFY updates that set every cell the wildcard read `entity` finds non-zero to 0: a
    write needs an index, and the untouched cells are zero already."""
    pb = client.pb
    updates = []
    for e in client.read([entity]):
        cell = getattr(e, kind)
        if kind == "counter_entry":
            if not (cell.data.packet_count or cell.data.byte_count):
                continue
            zero = pb.Entity()
            zero.counter_entry.counter_id = cell.counter_id
            zero.counter_entry.index.index = cell.index.index
            zero.counter_entry.data.SetInParent()
        else:
            if not any(cell.data.bitstring):
                continue
            zero = pb.Entity()
            zero.register_entry.register_id = cell.register_id
            zero.register_entry.index.index = cell.index.index
            zero.register_entry.data.bitstring = b"\x00"
        updates.append(pb.Update(type=pb.Update.MODIFY, entity=zero))
    return updates


def clear(
    client: P4RuntimeClient, index: P4InfoIndex, stats_addr: str, what: str, timeout: float = 10.0
) -> int:
    """Reset what `sonic-clear WHAT` would; the number of P4 cells written. A cell that counts
    between the read and the write loses that count, as in any clear."""
    which = clear_set(what)
    updates = []
    for name in which.counters:
        entity = client.pb.Entity()
        entity.counter_entry.counter_id = index.counter(name).preamble.id
        updates += _zero_cells(client, entity, "counter_entry")
    for name in which.registers:
        entity = client.pb.Entity()
        entity.register_entry.register_id = index.register(name).preamble.id
        updates += _zero_cells(client, entity, "register_entry")
    result = client.write(updates)
    if result.errors:
        first = result.errors[0]
        raise StatsError(
            f"clear {what}: {len(result.errors)} of {len(updates)} cells not reset "
            f"(first: {first.code}: {first.message})"
        )
    if which.scopes:
        request(stats_addr, f"/clear?scope={','.join(which.scopes)}", "POST", timeout=timeout)
    return len(updates)


# --- dispatch -------------------------------------------------------------------------------


def take_snapshot(
    client: P4RuntimeClient, index: P4InfoIndex, stats_addr: str, port_names: dict[int, str]
) -> Snapshot:
    snap = Snapshot(port_names=dict(port_names))
    read_pipeline(client, index, snap)
    snap.stats = fetch_stats(stats_addr)
    return snap


def _queue_wm(snap: Snapshot) -> tuple[Any, str]:
    data = queue_watermarks(snap)
    rows = {port: list(cells.values()) for port, cells in data.items()}
    return data, render_watermarks("Egress shared pool occupancy per unicast queue", rows, "UC")


def _pg_wm(kind: str, title: str) -> Any:
    def run(snap: Snapshot) -> tuple[Any, str]:
        data = pg_watermarks(snap)
        rows = {port: [pg[kind] for pg in pgs.values()] for port, pgs in data.items()}
        return data, render_watermarks(title, rows, "PG")

    return run


def _simple(build: Any, render: Any) -> Any:
    def run(snap: Snapshot) -> tuple[Any, str]:
        data = build(snap)
        return data, render(data)

    return run


COMMANDS = {
    "pfc counters": _simple(pfc_counters, render_pfc_counters),
    "queue counters": _simple(queue_counters, render_queue_counters),
    "queue wredcounters": _simple(queue_counters, render_wred_counters),
    "queue watermark unicast": _queue_wm,
    "priority-group watermark shared": _pg_wm("shared", "Ingress shared pool occupancy per PG"),
    "priority-group watermark headroom": _pg_wm("headroom", "Ingress headroom per PG"),
    "interfaces counters": _simple(interface_counters, render_interface_counters),
    "pfcwd stats": _simple(pfcwd_stats, render_pfcwd_stats),
    "priority-group drop counters": _simple(pg_drop_counters, render_pg_drop_counters),
    "priority-group pause counters": _simple(pg_pause_counters, render_pg_pause_counters),
    "buffer occupancy": _simple(buffer_occupancy, render_buffer_occupancy),
    "dropcounters counts": _simple(drop_counters, render_drop_counters),
}
# SONiC accepts the queue type as optional in `show queue watermark`; unicast is all we have.
ALIASES = {"queue watermark": "queue watermark unicast"}


def show(what: str, snap: Snapshot, before: Snapshot | None = None, period_s: float = 0.0):
    """(JSON-able data, SONiC text) of `show WHAT`."""
    what = ALIASES.get(what, what)
    if what == "interfaces counters":
        data = interface_counters(snap, before, period_s)
        return data, render_interface_counters(data)
    return COMMANDS[what](snap)
