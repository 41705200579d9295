"""Drive the `flowgen` traffic generator: start runs, read their results, sweep active flows.

The counterpart of seed 004's automation script (TRex's `CTRexClient`): `FlowgenClient.run`
starts the binary with a profile and returns its JSON result, whose per-second samples can be
read as value lists (`result.value_list("tx_pps")`, as `get_value_list` does for TRex);
`FlowgenClient.sweep` measures Mpps per core from 100 to 8M active flows for several scheduler
variants and writes the CSV; `plot_sweep` draws it (matplotlib).

Command line: `python -m lossless_kit.flowgen_client sweep --csv s.csv --png s.png`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lossless_paths import BIN, CARGO_RELEASE, FLOWGEN_PROFILES

SEED_PROFILE = FLOWGEN_PROFILES / "cur_flow_single.yaml"
SEED_MULTIPLIER = 30000.0

# The columns `flowgen sweep` writes, so both CSVs plot alike.
SWEEP_COLUMNS = (
    "variant",
    "scheduler",
    "buckets",
    "levels",
    "bucket_usec",
    "active_flows_target",
    "active_flows",
    "mpps_per_core",
    "cpu_util",
    "queue_full",
    "packets",
    "cpu_s",
    "state_bytes_per_flow",
)


class FlowgenError(RuntimeError):
    """flowgen refused the run; the message is its one-line error."""


def find_binary() -> Path:
    """`$FLOWGEN`, else `build/bin/flowgen`, else `target/release/flowgen`, else PATH."""
    env = os.environ.get("FLOWGEN")
    candidates = [Path(env)] if env else []
    candidates += [BIN / "flowgen", CARGO_RELEASE / "flowgen"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    found = shutil.which("flowgen")
    if found:
        return Path(found)
    raise FlowgenError("flowgen binary not found: run `make build` or set FLOWGEN")


@dataclass(frozen=True)
class Variant:
    """A scheduler configuration: `pq`, or `tw` with an optional wheel shape and profile."""

    name: str
    scheduler: str = "tw"
    buckets: int | None = None
    levels: int | None = None
    bucket_usec: float | None = None
    profile: Path | None = None


# Seed 004's four curves: PQ (v2.12), TW0 (defaults), TW1 (16K buckets, 2 levels), TW2 (two
# templates, 10% with a long gap).
SEED_VARIANTS = (
    Variant("pq", "pq"),
    Variant("tw0", "tw"),
    Variant("tw1", "tw", buckets=16384, levels=2),
    Variant("tw2", "tw", profile=FLOWGEN_PROFILES / "cur_flow.yaml"),
)


@dataclass
class RunResult:
    """flowgen's JSON result."""

    data: dict

    def __getattr__(self, name: str):
        try:
            return self.data[name]
        except KeyError as err:
            raise AttributeError(name) from err

    def value_list(self, name: str) -> list:
        """One counter across the per-second samples (TRex's `get_value_list`)."""
        return [s[name] for s in self.data.get("samples", [])]


@dataclass
class RunOptions:
    """The `flowgen run` options; `None` leaves flowgen's default."""

    sink: bool = True
    ifaces: Sequence[str] = ()
    tx: str | None = None  # "ring" or "plain", for interfaces
    tx_ring_slots: int | None = None
    pcap_out: Path | None = None
    scheduler: str = "tw"
    buckets: int | None = None
    levels: int | None = None
    bucket_usec: float | None = None
    multiplier: float = 1.0
    duration: float | None = None
    active_flows: int | None = None
    prefill: bool = False
    pace: str | None = None
    max_packets: int | None = None
    seed: int | None = None
    extra: Sequence[str] = field(default_factory=tuple)

    def args(self) -> list[str]:
        a: list[str] = []
        for iface in self.ifaces:
            a += ["-i", iface]
        if self.pcap_out is not None:
            a += ["--pcap-out", str(self.pcap_out)]
        elif self.sink and not self.ifaces:
            a.append("--sink")
        a += ["-s", self.scheduler, "-m", repr(self.multiplier)]
        optional = {
            "--tx": self.tx,
            "--tx-ring-slots": self.tx_ring_slots,
            "--tw-buckets": self.buckets,
            "--tw-levels": self.levels,
            "--tw-bucket-usec": self.bucket_usec,
            "-d": self.duration,
            "--active-flows": self.active_flows,
            "--pace": self.pace,
            "--max-packets": self.max_packets,
            "--seed": self.seed,
        }
        for flag, value in optional.items():
            if value is not None:
                a += [flag, str(value)]
        if self.prefill:
            a.append("--prefill")
        return a + list(self.extra)


class FlowgenRun:
    """A started run: `wait()` for its result."""

    def __init__(self, proc: subprocess.Popen, workdir: tempfile.TemporaryDirectory):
        self.proc = proc
        self._workdir = workdir

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float | None = None) -> RunResult:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        try:
            if self.proc.returncode != 0:
                lines = [ln for ln in err.splitlines() if ln.strip()]
                raise FlowgenError(lines[-1] if lines else f"flowgen exited {self.proc.returncode}")
            with open(Path(self._workdir.name) / "result.json") as f:
                return RunResult(json.load(f))
        finally:
            self._workdir.cleanup()

    def stop(self) -> None:
        """Ends this run (by its own process) and cleans up."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._workdir.cleanup()


class FlowgenClient:
    """Starts flowgen runs (seed 004's `CTRexClient.start_trex` + `sample_until_finish`)."""

    def __init__(self, binary: Path | None = None):
        self.binary = Path(binary) if binary else find_binary()

    def start(self, profile: Path, options: RunOptions | None = None) -> FlowgenRun:
        options = options or RunOptions()
        workdir = tempfile.TemporaryDirectory(prefix="flowgen-")
        cmd = [str(self.binary), "run", "-f", str(profile), "-q"]
        cmd += options.args() + ["--json", str(Path(workdir.name) / "result.json")]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return FlowgenRun(proc, workdir)

    def run(
        self, profile: Path, options: RunOptions | None = None, timeout: float | None = 600
    ) -> RunResult:
        return self.start(profile, options).wait(timeout)

    def measure(self, variant: Variant, active_flows: int, packets: int, multiplier: float) -> dict:
        """One sweep point: the variant holding `active_flows` flows for `packets` packets."""
        opts = RunOptions(
            scheduler=variant.scheduler,
            buckets=variant.buckets,
            levels=variant.levels,
            bucket_usec=variant.bucket_usec,
            multiplier=multiplier,
            duration=1e9,
            active_flows=active_flows,
            prefill=True,
            pace="max",
            max_packets=packets,
        )
        r = self.run(variant.profile or SEED_PROFILE, opts)
        return {
            "variant": variant.name,
            "scheduler": r.scheduler,
            "buckets": r.tw_buckets if r.tw_buckets is not None else "",
            "levels": r.tw_levels if r.tw_levels is not None else "",
            "bucket_usec": r.tw_bucket_usec if r.tw_bucket_usec is not None else "",
            "active_flows_target": active_flows,
            "active_flows": r.active_flows,
            "mpps_per_core": r.mpps_per_core,
            "cpu_util": r.cpu_util,
            "queue_full": r.queue_full,
            "packets": r.packets,
            "cpu_s": r.cpu_s,
            "state_bytes_per_flow": r.state_bytes_per_flow,
        }

    def sweep(
        self,
        csv_path: Path,
        variants: Iterable[Variant] = SEED_VARIANTS,
        points: Sequence[int] | None = None,
        packets: int = 5_000_000,
        multiplier: float = SEED_MULTIPLIER,
        progress=None,
    ) -> list[dict]:
        """Seed 004's loop: every variant at every point, one CSV row each, as measured."""
        points = list(points) if points is not None else sweep_points()
        rows = []
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=SWEEP_COLUMNS)
            writer.writeheader()
            for v in variants:
                for n in points:
                    row = self.measure(v, n, packets, multiplier)
                    writer.writerow(row)
                    f.flush()
                    rows.append(row)
                    if progress:
                        progress(row)
        return rows


def sweep_points(min_flows: int = 100, max_flows: int = 8_000_000, steps: int = 10) -> list[int]:
    """`steps` logarithmic steps from `min_flows` to `max_flows` (steps + 1 points, floored)."""
    factor = math.exp(math.log(max_flows / min_flows) / steps)
    return [math.floor(min_flows * factor**i) for i in range(steps + 1)]


def read_sweep(csv_path: Path) -> dict[str, list[tuple[int, float]]]:
    """Sweep rows grouped by variant: (active flows, Mpps per core), by active flows."""
    curves: dict[str, list[tuple[int, float]]] = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            point = (int(row["active_flows"]), float(row["mpps_per_core"]))
            curves.setdefault(row["variant"], []).append(point)
    return {k: sorted(v) for k, v in curves.items()}


def plot_sweep(csv_path: Path, png_path: Path, title: str = "flowgen: Mpps per core") -> None:
    """Draws Mpps per core against active flows (log scale), one line per variant."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise FlowgenError("plotting needs matplotlib: pip install matplotlib") from err
    curves = read_sweep(csv_path)
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, pts in curves.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("active flows")
    ax.set_ylabel("Mpps per core")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)


def _parse_variant(spec: str) -> Variant:
    """NAME=pq | NAME=tw[:BUCKETSxLEVELS[:USEC]][@PROFILE], as `flowgen sweep --variant`."""
    name, sep, rest = spec.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"variant {spec!r}: expected NAME=SCHEDULER")
    sched, _, profile = rest.partition("@")
    parts = sched.split(":")
    try:
        if parts == ["pq"]:
            v = Variant(name, "pq")
        elif parts[0] == "tw" and len(parts) <= 3:
            buckets = levels = usec = None
            if len(parts) >= 2:
                b, _, lv = parts[1].partition("x")
                buckets, levels = int(b), int(lv)
            if len(parts) == 3:
                usec = float(parts[2])
            v = Variant(name, "tw", buckets, levels, usec)
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"variant {spec!r}: expected pq or tw[:BUCKETSxLEVELS[:USEC]]"
        ) from None
    if profile:
        v = Variant(v.name, v.scheduler, v.buckets, v.levels, v.bucket_usec, Path(profile))
    return v


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flowgen_client", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sw = sub.add_parser("sweep", help="seed 004's active-flows sweep: CSV and PNG")
    sw.add_argument("--csv", type=Path, required=True)
    sw.add_argument("--png", type=Path)
    sw.add_argument("--variant", type=_parse_variant, action="append", dest="variants")
    sw.add_argument("--min", type=int, default=100)
    sw.add_argument("--max", type=int, default=8_000_000)
    sw.add_argument("--steps", type=int, default=10)
    sw.add_argument("--packets", type=int, default=5_000_000)
    sw.add_argument("-m", "--multiplier", type=float, default=SEED_MULTIPLIER)
    pl = sub.add_parser("plot", help="draw a sweep CSV (from this client or `flowgen sweep`)")
    pl.add_argument("csv", type=Path)
    pl.add_argument("png", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "sweep":
            client = FlowgenClient()
            client.sweep(
                args.csv,
                args.variants or SEED_VARIANTS,
                sweep_points(args.min, args.max, args.steps),
                args.packets,
                args.multiplier,
                progress=lambda r: print(
                    f"{r['variant']:<5} {r['active_flows']:>9} flows "
                    f"{r['mpps_per_core']:7.3f} Mpps/core",
                    file=sys.stderr,
                ),
            )
            if args.png:
                plot_sweep(args.csv, args.png)
        else:
            plot_sweep(args.csv, args.png)
    except FlowgenError as err:
        print(f"flowgen_client: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
