"""PNG plots of a run: queue occupancy and PFC pause timeline per port, latency CDF,
throughput per flow over time; and of a lossless-sim sweep: a measured value against a swept
setting."""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display in namespaces or CI
import matplotlib.pyplot as plt  # noqa: E402

from .results import Results, queue_series  # noqa: E402


def write_all(results: Results, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fn in (queues, latency_cdf, throughput):
        path = fn(results, directory)
        if path is not None:
            written.append(path)
    return written


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
    path = directory / "queues_pfc.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
    path = directory / "latency_cdf.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
    path = directory / "throughput.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
        path = directory / f"sweep_{y}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
