"""PNG plots of a run: queue occupancy and PFC pause timeline per port, latency CDF,
throughput per flow over time, shared buffer use, PFC frames sent and received, and per-queue
buffer usage (Current/Peak/Average, as seed 003 prints it); and of a lossless-sim sweep: a
measured value against a swept setting.

`python -m lossless_topo.plots RESULTS.json [--out DIR]` draws them from a results.json,
`make run`'s or lossless-sim's (which runs it after a run; with several config cases, each
case's plots also go to DIR/cases/NAME/).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display in namespaces or CI
import matplotlib.pyplot as plt  # noqa: E402

from .results import (  # noqa: E402
    PFC_KINDS,
    Results,
    buffer_series,
    pfc_series,
    port_buffer_series,
    queue_series,
    queue_usage,
)


def write_all(results: Results, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fn in (queues, latency_cdf, throughput, buffer_use, pfc_frames, queue_usage_bars):
        path = fn(results, directory)
        if path is not None:
            written.append(path)
    return written


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# The deepest queues drawn in the occupancy panel; a fabric has dozens that carried a frame.
MAX_DEPTH_SERIES = 10


def queues(results: Results, directory: Path) -> Path | None:
    """Depth over time of the deepest queues; below, the timeline of every paused queue."""
    series = queue_series(results.stats)
    if not series:
        return None
    deepest = sorted(series, key=lambda k: max(series[k]["depth_bytes"]), reverse=True)
    deepest = sorted(k for k in deepest[:MAX_DEPTH_SERIES] if max(series[k]["depth_bytes"]))
    paused = sorted(k for k, s in series.items() if any(s["paused"]))
    fig, (ax_depth, ax_pause) = plt.subplots(
        2, 1, sharex=True, figsize=(10, 8), height_ratios=[3, 2]
    )
    for name in deepest:
        s = series[name]
        ax_depth.plot(s["t"], [b / 1024 for b in s["depth_bytes"]], label=name)
    ax_depth.set_ylabel("queue depth (KB)")
    ax_depth.set_title(
        f"{results.topology}: queue occupancy ({len(deepest)} deepest of {len(series)} queues)"
    )
    if deepest:
        ax_depth.legend(fontsize="small", loc="upper right")
    for i, name in enumerate(paused):
        s = series[name]
        ax_pause.step(s["t"], [i + (0.8 if p else 0) for p in s["paused"]], where="post")
    if paused:
        ax_pause.set_yticks(range(len(paused)), paused, fontsize="x-small")
    else:
        ax_pause.text(
            0.5, 0.5, "no queue was paused by PFC", ha="center", transform=ax_pause.transAxes
        )
        ax_pause.set_yticks([])
    ax_pause.set_ylabel("PFC paused (step up = paused)")
    ax_pause.set_xlabel("time (s, lab clock)")
    ax_pause.set_title("PFC pause timeline per port and queue")
    fig.tight_layout()
    return _save(fig, directory / "queues_pfc.png")


def latency_cdf(results: Results, directory: Path) -> Path | None:
    """CDF of per-message latency for every case that recorded samples (nominal microseconds)."""
    cases = [m for m in results.measurements if m.latency_us]
    if not cases:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for m in cases:
        xs = sorted(m.latency_us)
        n = len(xs)
        ax.step(xs, [(i + 1) / n for i in range(n)], where="post", label=m.case)
    ax.set_xscale("log")
    ax.set_xlabel("latency (us at the nominal link rate)")
    ax.set_ylabel("fraction of messages")
    ax.set_title(f"{results.topology}: latency CDF")
    ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return _save(fig, directory / "latency_cdf.png")


def throughput(results: Results, directory: Path) -> Path | None:
    """Throughput of every flow over time, one panel per case that has series."""
    cases = [m for m in results.measurements if m.throughput]
    if not cases:
        return None
    fig, axes = plt.subplots(
        len(cases), 1, sharex=True, figsize=(10, 2.5 * len(cases) + 1), squeeze=False
    )
    for ax, m in zip(axes[:, 0], cases, strict=True):
        for flow, points in sorted(m.throughput.items()):
            ax.plot([p[0] for p in points], [p[1] / 1e6 for p in points], label=flow)
        ax.set_title(m.case, fontsize="small")
        ax.set_ylabel("Mb/s (lab)")
        if len(m.throughput) <= 10:
            ax.legend(fontsize="x-small", loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"{results.topology}: throughput per flow")
    fig.tight_layout()
    return _save(fig, directory / "throughput.png")


# The ports drawn in the buffer and PFC panels, the busiest first.
MAX_PORT_SERIES = 10


def buffer_use(results: Results, directory: Path) -> Path | None:
    """Shared buffer in use per switch over time; below, what the busiest ports hold."""
    switches = {k: v for k, v in buffer_series(results.stats).items() if any(v["used_bytes"])}
    if not switches:
        return None
    ports = port_buffer_series(results.stats)
    busiest = sorted(ports, key=lambda k: max(ports[k]["used_bytes"]), reverse=True)
    busiest = sorted(busiest[:MAX_PORT_SERIES])
    fig, (ax_sw, ax_port) = plt.subplots(2, 1, sharex=True, figsize=(10, 8))
    for name, s in sorted(switches.items()):
        ax_sw.plot(s["t"], [b / 1024 for b in s["used_bytes"]], label=name)
    ax_sw.set_ylabel("shared buffer in use (KB)")
    ax_sw.set_title(f"{results.topology}: buffer use per switch")
    ax_sw.legend(fontsize="small", loc="upper right")
    for name in busiest:
        s = ports[name]
        ax_port.plot(s["t"], [b / 1024 for b in s["used_bytes"]], label=name)
    if busiest:
        ax_port.legend(fontsize="small", loc="upper right")
    else:
        ax_port.text(0.5, 0.5, "no per-port figures", ha="center", transform=ax_port.transAxes)
    ax_port.set_ylabel("buffer held by the port (KB)")
    ax_port.set_xlabel("time (s)")
    ax_port.set_title(f"the {len(busiest)} ports that held most")
    fig.tight_layout()
    return _save(fig, directory / "buffer.png")


def pfc_frames(results: Results, directory: Path) -> Path | None:
    """PFC frames sent (above) and received (below) per port and priority, counted from the
    start: XOFF solid, XON dashed."""
    series = pfc_series(results.stats)
    if not series:
        return None
    busiest = sorted(series, key=lambda k: sum(max(series[k][x]) for x in PFC_KINDS), reverse=True)
    busiest = sorted(busiest[:MAX_PORT_SERIES])
    fig, (ax_tx, ax_rx) = plt.subplots(2, 1, sharex=True, figsize=(10, 8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(busiest):
        s = series[name]
        c = colors[i % len(colors)]
        for ax, xoff, xon in (
            (ax_tx, "pfc_xoff_tx", "pfc_xon_tx"),
            (ax_rx, "pfc_xoff_rx", "pfc_xon_rx"),
        ):
            if any(s[xoff]) or any(s[xon]):
                ax.step(s["t"], s[xoff], where="post", color=c, label=f"{name} XOFF")
                ax.step(s["t"], s[xon], where="post", color=c, linestyle="--", label=f"{name} XON")
    for ax, what in ((ax_tx, "sent"), (ax_rx, "received")):
        ax.set_ylabel(f"PFC frames {what}")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small", loc="upper left")
        else:
            ax.text(0.5, 0.5, f"no PFC frame {what}", ha="center", transform=ax.transAxes)
    ax_tx.set_title(
        f"{results.topology}: PFC frames per port and priority (XOFF solid, XON dashed)"
    )
    ax_rx.set_xlabel("time (s)")
    fig.tight_layout()
    return _save(fig, directory / "pfc_frames.png")


# The ports whose queues are drawn as seed 003's table, the deepest first.
MAX_USAGE_PORTS = 4


def queue_usage_bars(results: Results, directory: Path) -> Path | None:
    """Seed 003's 'Buffer Usage on each Queue' (Current/Peak/Average, cells/KB) at the ports
    with the highest peaks, from each switch's last full statistics (those with averages)."""
    last: dict[str, dict] = {}
    for s in results.stats:
        if any("avg_cells" in q for p in s.stats.get("ports", []) for q in p.get("queues", [])):
            last[s.switch] = s.stats
    rows = [(sw, u) for sw, stats in sorted(last.items()) for u in queue_usage(stats)]
    peaks: dict[tuple[str, int], int] = {}
    for sw, u in rows:
        key = (sw, u["port"])
        peaks[key] = max(peaks.get(key, 0), u["peak_cells"])
    ports = sorted((k for k in peaks if peaks[k]), key=lambda k: (-peaks[k], k))[:MAX_USAGE_PORTS]
    if not ports:
        return None
    fig, axes = plt.subplots(len(ports), 1, figsize=(13, 3.2 * len(ports)), squeeze=False)
    for ax, (sw, port) in zip(axes[:, 0], ports, strict=True):
        usage = sorted(
            (u for s, u in rows if (s, u["port"]) == (sw, port)), key=lambda u: u["queue"]
        )
        xs = [u["queue"] for u in usage]
        for i, (what, label) in enumerate(
            (("current", "Current"), ("peak", "Peak"), ("average", "Average"))
        ):
            kb = [u[f"{what}_kb"] for u in usage]
            ax.bar([x + (i - 1) * 0.27 for x in xs], kb, width=0.27, label=label)
        table = [f"{'QueueIndex':<12}{'Current':<14}{'Peak':<14}Average"] + [
            f"{u['queue']:<12}"
            + "".join(
                f"{u[f'{k}_cells']}/{u[f'{k}_kb']}".ljust(14)
                for k in ("current", "peak", "average")
            ).rstrip()
            for u in usage
            if u["peak_cells"]
        ]
        ax.text(
            1.01,
            1.0,
            "\n".join(table),
            transform=ax.transAxes,
            va="top",
            family="monospace",
            fontsize="x-small",
        )
        ax.set_xticks(xs)
        ax.set_xlabel("queue")
        ax.set_ylabel("KB")
        ax.set_title(
            f"{sw} port {port}: buffer usage on each queue (cells/KBytes)", fontsize="small"
        )
        ax.legend(fontsize="x-small", loc="upper left")
    # The right quarter holds each port's table.
    fig.tight_layout(rect=(0, 0, 0.75, 1))
    return _save(fig, directory / "queue_usage.png")


def split_cases(results: Results, cases: list[dict]) -> list[Results]:
    """lossless-sim's run of several config cases, one Results per case: its measurements
    (`measurements`: how many, in order) and the samples of its stretch of virtual time."""
    out, first = [], 0
    for case in cases:
        n = case.get("measurements", 0)
        start, end = case["start_ns"] / 1e9, case["end_ns"] / 1e9
        out.append(
            dataclasses.replace(
                results,
                measurements=results.measurements[first : first + n],
                stats=[s for s in results.stats if start <= s.t <= end],
            )
        )
        first += n
    return out


def _short(column: str) -> str:
    """A swept address by its last name: config_db.SFC|*|3-4|threshold -> threshold."""
    return column.split("|")[-1] if column.startswith("config_db.") else column.split(".")[-1]


def sweep(csv_path: Path, directory: Path, x: str, ys: list[str], keys: list[str]) -> list[Path]:
    """lossless-sim's sweep.csv: each of `ys` against the swept column `x`, one line per
    combination of the other `keys` (settings, case, measurement params) that vary; rows that
    do not set x (an explicit baseline point) as dashed horizontal lines. A log x axis when x
    spans more than a decade, categories when x is not numeric."""
    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    # The keys that tell lines apart; one that splits the rows as an earlier one does
    # (remote_pfc with case) says nothing more.
    varying, seen = [], set()
    for k in keys:
        groups: dict[str, set[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(r[k], set()).add(i)
        split = frozenset(frozenset(g) for g in groups.values())
        if k != x and len(groups) > 1 and split not in seen:
            varying.append(k)
            seen.add(split)
    given = sorted({r[x] for r in rows if r[x] != ""})
    try:
        position = {v: float(v) for v in given}
        numeric = True
    except ValueError:
        position = {v: float(i) for i, v in enumerate(given)}
        numeric = False
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for y in ys:
        lines: dict[str, list[tuple[float, float]]] = {}
        baselines: dict[str, float] = {}
        for r in rows:
            if r[y] == "":
                continue
            label = ", ".join(f"{_short(k)}={r[k]}" for k in varying if r[k] != "")
            if r[x] == "":
                baselines[label] = float(r[y])
            else:
                lines.setdefault(label, []).append((position[r[x]], float(r[y])))
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for label, points in sorted(lines.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label or y)
        for label, value in sorted(baselines.items()):
            ax.axhline(value, linestyle="--", linewidth=1, color="grey")
            ax.annotate(
                label, (0.01, value), xycoords=("axes fraction", "data"), fontsize="x-small"
            )
        ticks = sorted(position, key=position.__getitem__)
        values = [position[t] for t in ticks]
        if numeric and values and values[0] > 0 and values[-1] / values[0] > 10:
            ax.set_xscale("log")
        if values:
            ax.set_xticks(values, ticks)
            ax.minorticks_off()
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{y} against {_short(x)}")
        ax.grid(True, which="both", alpha=0.3)
        if len(lines) > 1:
            ax.legend(fontsize="x-small")
        fig.tight_layout()
        written.append(_save(fig, directory / f"sweep_{y}.png"))
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m lossless_topo.plots", description="PNG plots of a results.json"
    )
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path, help="directory (default: the results' own)")
    args = ap.parse_args(argv)
    try:
        doc = json.loads(args.results.read_text())
        sim = doc.pop("sim", None) or {}
        results = Results.from_doc(doc)
    except (OSError, ValueError, TypeError, KeyError) as e:
        print(f"lossless_topo.plots: {args.results}: {e}", file=sys.stderr)
        return 2
    out = args.out or args.results.parent
    cases = sim.get("cases", [])
    if len(cases) > 1:
        # The cases side by side where they compare; each case's own timelines apart, as
        # virtual time idles between them.
        written = [p for p in [latency_cdf(results, out)] if p is not None]
        for case, part in zip(cases, split_cases(results, cases), strict=True):
            written += write_all(part, out / "cases" / case["name"])
    else:
        written = write_all(results, out)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
