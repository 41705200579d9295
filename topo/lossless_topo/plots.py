"""PNG plots of a run: queue occupancy and PFC pause timeline per port, latency CDF,
throughput per flow over time."""

from __future__ import annotations

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
