"""results.json, the seed-style tables, and the measurements they are built from.

Inputs are what the tools print: roce-host's `--json` report (perftest's figures, per-message
latency samples from `--samples` CSV), iperf3's `--json` report (intervals per stream), and
the switch's stats endpoint (switch-tm's `TmStats` JSON), sampled over time by `StatsPoller`.
"""

from __future__ import annotations

import csv
import json
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

# p4-switch serves {"switch": ..., "engine": ..., "tm": TmStats} at this path of --stats-addr.
STATS_PATH = "/stats"


@dataclass
class StatsSample:
    """One poll of one switch's statistics: wall time (s since the run began) and the body."""

    t: float
    switch: str
    stats: dict


def fetch_stats(addr: str, timeout_s: float = 2.0) -> dict:
    """One switch's traffic manager statistics now (switch-tm's TmStats)."""
    with urllib.request.urlopen(f"http://{addr}{STATS_PATH}", timeout=timeout_s) as r:
        doc = json.load(r)
    tm = doc.get("tm") if isinstance(doc, dict) else None
    if not isinstance(tm, dict):
        raise ValueError(f"http://{addr}{STATS_PATH}: no traffic manager statistics ('tm')")
    return tm


# What a polled sample keeps of each port and queue: enough for the plots (depth, pause,
# throughput) and the tables; a 10-switch fabric polled at 10 Hz otherwise writes hundreds of
# megabytes of idle queues into results.json.
PORT_FIELDS = ("port", "pfc_rx", "pause_rx", "rx_packets", "tx_packets", "drops")
QUEUE_FIELDS = (
    "queue",
    "depth_bytes",
    "depth_cells",
    "peak_bytes",
    "peak_cells",
    "avg_bytes",
    "avg_cells",
    "paused",
    "paused_ns",
    "tx_bytes",
    "tx_packets",
    "drops",
)


def compact(stats: dict) -> dict:
    """A TmStats body without idle queues and idle ports (same shape, fewer members)."""
    ports = []
    for port in stats.get("ports", []):
        queues = [
            {k: q[k] for k in QUEUE_FIELDS if k in q}
            for q in port.get("queues", [])
            if q.get("tx_packets")
            or q.get("depth_bytes")
            or q.get("paused")
            or any(q.get("drops", {}).values())
        ]
        if queues or port.get("rx_packets") or any(port.get("pfc_rx", [])):
            ports.append({**{k: port[k] for k in PORT_FIELDS if k in port}, "queues": queues})
    return {"ports": ports, "buffer": stats.get("buffer", {})}


class StatsPoller:
    """Polls every switch's stats endpoint on a thread until stopped.

    At most `max_rounds` polls of all switches are kept: when full, every other round is
    dropped and the interval doubles, so a long run keeps its whole timeline at a coarser
    step instead of growing results.json (and the plotting) without bound.
    """

    def __init__(self, addrs: dict[str, str], interval_s: float = 0.1, max_rounds: int = 2000):
        self.addrs = addrs
        self.interval_s = interval_s
        self.max_rounds = max_rounds
        self.rounds: list[list[StatsSample]] = []
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def samples(self) -> list[StatsSample]:
        return [s for r in self.rounds for s in r]

    def start(self) -> StatsPoller:
        if self.addrs:
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            this_round = []
            for sw, addr in self.addrs.items():
                try:
                    body = compact(fetch_stats(addr, timeout_s=1.0))
                    this_round.append(StatsSample(time.monotonic() - self._t0, sw, body))
                except (OSError, ValueError) as e:
                    self.errors[sw] = str(e)
            self.rounds.append(this_round)
            if len(self.rounds) >= self.max_rounds:
                self.rounds = self.rounds[::2]
                self.interval_s *= 2
            self._stop.wait(self.interval_s)

    def stop(self) -> list[StatsSample]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.samples


def latency_samples_from_csv(path: Path) -> list[float]:
    """Per-message latency in us from roce-host's `--samples` CSV (posted_ns, completed_ns)."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append((int(row["completed_ns"]) - int(row["posted_ns"])) / 1000.0)
    return out


def roce_counters(reports: list[dict]) -> dict[str, int]:
    """What the mechanisms did, summed over roce-host reports (clients and servers).

    CE marks seen and CNPs exchanged show ECN/DCQCN at work, PFC XOFF frames received by the
    hosts show PFC (or SFC converted to PFC at the source ToR), retransmissions show loss.
    """
    out = {"ce_marked": 0, "cnps_rx": 0, "pfc_xoff_rx": 0, "retransmissions": 0}
    for r in reports:
        c = r.get("counters", {})
        out["ce_marked"] += c.get("rx_ce_marked", 0)
        out["cnps_rx"] += c.get("rx_cnps", 0)
        out["retransmissions"] += c.get("tx_retransmitted_pkts", 0)
        out["pfc_xoff_rx"] += sum(r.get("pause", {}).get("rx_pfc_xoff", []))
    return out


def iperf3_throughput(report: dict) -> dict[str, list[tuple[float, float]]]:
    """Per stream: (interval end s, bits/s) from iperf3's `--json` intervals."""
    series: dict[str, list[tuple[float, float]]] = {}
    for interval in report.get("intervals", []):
        for stream in interval.get("streams", []):
            key = f"tcp:{stream.get('socket')}"
            series.setdefault(key, []).append((stream["end"], stream["bits_per_second"]))
    return series


def queue_series(samples: list[StatsSample]) -> dict[str, dict[str, list]]:
    """Per `switch port P queue Q` with traffic: times, depth bytes, paused flags."""
    out: dict[str, dict[str, list]] = {}
    for s in samples:
        for port in s.stats.get("ports", []):
            for q in port.get("queues", []):
                key = f"{s.switch} port {port['port']} q{q['queue']}"
                entry = out.setdefault(
                    key, {"t": [], "depth_bytes": [], "paused": [], "tx_bytes": []}
                )
                entry["t"].append(s.t)
                entry["depth_bytes"].append(q.get("depth_bytes", 0))
                entry["paused"].append(bool(q.get("paused", False)))
                entry["tx_bytes"].append(q.get("tx_bytes", 0))
    # Queues that never held a byte, sent one or were paused are noise in a plot.
    return {
        k: v
        for k, v in out.items()
        if any(v["depth_bytes"]) or any(v["paused"]) or (v["tx_bytes"] and v["tx_bytes"][-1])
    }


def buffer_series(samples: list[StatsSample]) -> dict[str, dict[str, list]]:
    """Per switch: times and shared buffer bytes in use."""
    out: dict[str, dict[str, list]] = {}
    for s in samples:
        buf = s.stats.get("buffer", {})
        if "used_cells" not in buf:
            continue
        entry = out.setdefault(s.switch, {"t": [], "used_bytes": []})
        entry["t"].append(s.t)
        entry["used_bytes"].append(buf["used_cells"] * buf.get("cell_bytes", 1))
    return out


def port_buffer_series(samples: list[StatsSample]) -> dict[str, dict[str, list]]:
    """Per `switch port P` whose samples carry `used_cells`: times and bytes held."""
    out: dict[str, dict[str, list]] = {}
    for s in samples:
        cell = s.stats.get("buffer", {}).get("cell_bytes", 1)
        for port in s.stats.get("ports", []):
            if "used_cells" in port:
                entry = out.setdefault(
                    f"{s.switch} port {port['port']}", {"t": [], "used_bytes": []}
                )
                entry["t"].append(s.t)
                entry["used_bytes"].append(port["used_cells"] * cell)
    return {k: v for k, v in out.items() if any(v["used_bytes"])}


# lossless-sim's timeline samples count each port's PFC frames per priority, from the case's
# start (left out while all are 0).
PFC_KINDS = ("pfc_xoff_tx", "pfc_xon_tx", "pfc_xoff_rx", "pfc_xon_rx")


def pfc_series(samples: list[StatsSample]) -> dict[str, dict[str, list]]:
    """Per `switch port P prio N` that sent or received PFC: times and the frames so far of
    each kind (XOFF/XON sent/received)."""
    out: dict[str, dict[str, list]] = {}
    none = [0] * 8
    for s in samples:
        if "since_ns" in s.stats:
            continue  # a traffic manager's full statistics, which count no PFC frame sent
        for port in s.stats.get("ports", []):
            counted = any(k in port for k in PFC_KINDS)
            for prio in range(8):
                key = f"{s.switch} port {port['port']} prio {prio}"
                # A port's counts are left out while they are all 0.
                if not counted and key not in out:
                    continue
                entry = out.setdefault(key, {"t": [], **{k: [] for k in PFC_KINDS}})
                entry["t"].append(s.t)
                for k in PFC_KINDS:
                    entry[k].append(port.get(k, none)[prio])
    return {k: v for k, v in out.items() if any(any(v[kind]) for kind in PFC_KINDS)}


def queue_usage(stats: dict) -> list[dict]:
    """Seed 003's 'Buffer Usage on each Queue': current/peak/average per queue, cells/KB."""
    rows = []
    for port in stats.get("ports", []):
        for q in port.get("queues", []):
            rows.append(
                {
                    "port": port["port"],
                    "queue": q["queue"],
                    "current_cells": q.get("depth_cells", 0),
                    "current_kb": q.get("depth_bytes", 0) // 1024,
                    "peak_cells": q.get("peak_cells", 0),
                    "peak_kb": q.get("peak_bytes", 0) // 1024,
                    "average_cells": round(q.get("avg_cells", 0.0)),
                    "average_kb": round(q.get("avg_bytes", 0.0) / 1024),
                }
            )
    return rows


def queue_avg_bytes(before: dict, after: dict, port: int, queue: int) -> float:
    """The time-average depth of one queue between two readings of the same switch.

    switch-tm averages each queue over its counting window (since_ns to time_ns); two
    readings of one window give the average between them.
    """

    def area(stats: dict) -> float:
        for p in stats.get("ports", []):
            for q in p.get("queues", []) if p["port"] == port else []:
                if q["queue"] == queue:
                    return q.get("avg_bytes", 0.0) * (stats["time_ns"] - stats["since_ns"])
        return 0.0

    if before["since_ns"] != after["since_ns"]:
        raise ValueError("the switch's statistics were cleared between the two readings")
    span = after["time_ns"] - before["time_ns"]
    return (area(after) - area(before)) / span if span > 0 else 0.0


def drops(stats: dict, queue: int | None = None) -> int:
    """Packets the traffic manager dropped (on one queue number across ports, or all)."""
    total = 0
    for port in stats.get("ports", []):
        if queue is None:
            total += sum(port.get("drops", {}).values())
        for q in port.get("queues", []):
            if queue is not None and q["queue"] == queue:
                total += sum(q.get("drops", {}).values())
    return total


@dataclass
class Measurement:
    """One row of an experiment's table, with the raw material of its plots."""

    case: str
    params: dict
    values: dict
    latency_us: list[float] = field(default_factory=list)
    throughput: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


@dataclass
class Results:
    topology: str
    experiment: str
    seed: str
    scale: dict
    switch: str
    missing_features: list[str]
    routing: str = "static"  # where the switches' routes came from: the configs, or BGP (FRR)
    measurements: list[Measurement] = field(default_factory=list)
    stats: list[StatsSample] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "results.json"
        doc = asdict(self)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        return path

    @classmethod
    def read(cls, path: Path) -> Results:
        return cls.from_doc(json.loads(path.read_text()))

    @classmethod
    def from_doc(cls, doc: dict) -> Results:
        """From results.json's members (lossless-sim's `sim` member is not one of them)."""
        doc = {**doc}
        doc["measurements"] = [Measurement(**m) for m in doc["measurements"]]
        doc["stats"] = [StatsSample(**s) for s in doc["stats"]]
        return cls(**doc)


def table(title: str, header: list[str], rows: list[list]) -> str:
    """A plain text table in the seed documents' style (tab-free, aligned)."""
    cells = [header] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells[1:]
    ]
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return "-" if v is None else str(v)
