"""Route programming time from FRR over FPM to the switch, beside seed 002's, as JSON.

    python -m lossless_kit.bench_routes [--pipeline DIR] [--points ipv4_1k,...] [--seed002]
        [--route-bulk SIZE/SECONDS] [-o results/bench/routes-fpm.json]

Per point (root: a network namespace):
1. FRR's time. zebra (with `dplane_fpm_nl`) and staticd from Debian's frr run in a namespace
   with one veth per routed port of the PTF config (its addresses, so the next hops resolve);
   the point's static routes (IPv4 /24s over the config's 4 neighbours, IPv6 /96s over 2) are
   given with vtysh, and a recorder in the namespace takes zebra's FPM stream. `frr_seconds` is
   from the vtysh command to the last of the point's routes in that stream.
2. Our time, the replay. A fresh p4-switch and `lossless-ctl run --fpm` (the PTF config) get
   the recorded stream on one connection; `seconds` is from its first byte to the P4Runtime
   read-back that finds every route of the point (entries marked `fpm:`) on the switch, all
   through the ECMP group of their final next hops (zebra resends a route as staticd adds
   each of its next hops, so the first 10k entries are not yet the last of 10k routes).
   `readback_s` is how long that last read took, the resolution of the figure.
Debian's FRR has no sharpd, so staticd produces the routes; it is slow at scale, which is why
its time is reported apart from ours.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pyroute2.netns import create_socket

from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.fpm import FpmCounters, FpmReader
from lossless_ctl.p4info import P4InfoIndex
from lossless_paths import BIN

from .bench import write_report
from .frr import (
    GATEWAYS,
    V6_GATEWAYS,
    Frr,
    fpm_controller,
    missing,
    routed_namespace,
    static_routes,
)
from .pipeline import compile_pipeline
from .switch import SwitchProcess, free_port

ING = "LosslessIngress."
POINTS = {
    "ipv4_1k": (4, 1_000),
    "ipv4_10k": (4, 10_000),
    "ipv6_1k": (6, 1_000),
    "ipv4_30k": (4, 30_000),
    "ipv4_60k": (4, 60_000),
    "ipv4_90k": (4, 90_000),
}
SMALL = ("ipv4_1k", "ipv4_10k", "ipv6_1k")
SEED002_POINTS = ("ipv4_10k", "ipv4_30k", "ipv4_60k", "ipv4_90k")
# Seed 002 (SONiC L3 scaling HLD, 2019, AS7712 Tomahawk): route programming time in seconds.
SEED002_SECONDS = {"ipv4_10k": 11, "ipv4_30k": 30, "ipv4_60k": 48, "ipv4_90k": 68}
WAIT_S = 600.0


class BenchError(Exception):
    pass


def prefixes(version: int, count: int) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    if version == 4:
        base = int(ipaddress.IPv4Address("40.0.0.0"))
        return [ipaddress.IPv4Network((base + (i << 8), 24)) for i in range(count)]
    base = int(ipaddress.IPv6Address("2001:db8:40::"))
    return [ipaddress.IPv6Network((base + (i << 32), 96)) for i in range(count)]


class Recorder:
    """zebra's FPM peer in the namespace: keeps the byte stream until every wanted prefix has
    come with all its next hops (staticd adds them one by one), and the time of the last."""

    def __init__(self, ns: str, wanted: set, width: int):
        self.sock = create_socket(ns, socket.AF_INET, socket.SOCK_STREAM, flags=0)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.wanted = wanted
        self.width = width  # next hops per route once staticd has given them all
        self.seen: set = set()
        self.last = 0.0
        self.data = bytearray()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="fpm-recorder", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        reader = FpmReader(FpmCounters(), log=lambda line: print(line, file=sys.stderr))
        with conn:
            while chunk := conn.recv(1 << 16):
                self.data += chunk
                for route in reader.feed(chunk):
                    if route.prefix in self.wanted and not route.deleted:
                        self.last = time.perf_counter()
                        if len(route.nexthops) == self.width:
                            self.seen.add(route.prefix)
                if len(self.seen) == len(self.wanted):
                    self.done.set()

    def close(self) -> None:
        self.sock.close()


def record(name: str, wanted: list) -> tuple[bytes, float]:
    """zebra's FPM stream for the point's static routes, and FRR's time to send them."""
    gateways = GATEWAYS if wanted[0].version == 4 else V6_GATEWAYS
    with routed_namespace(f"llbench-{os.getpid()}") as ns:
        recorder = Recorder(ns, set(wanted), len(gateways))
        try:
            with Frr(ns, recorder.port) as frr:
                start = time.perf_counter()
                frr.configure(static_routes(wanted, gateways))
                if not recorder.done.wait(WAIT_S):
                    raise BenchError(f"{name}: zebra sent {len(recorder.seen)} of {len(wanted)}")
                return bytes(recorder.data), recorder.last - start
        finally:
            recorder.close()


def _fpm_routes(client: P4RuntimeClient, table_id: int) -> tuple[int, int]:
    """(FPM routes on the switch, distinct actions among them). zebra sends a static route again
    as staticd adds each next hop, so the routes are done when all are there and share one
    action: the ECMP group of every gateway."""
    entries = [e for e in client.read_table(table_id) if e.metadata.startswith(b"fpm:")]
    return len(entries), len({e.action.action.SerializeToString() for e in entries})


def replay(stream: bytes, count: int, version: int, pipeline: Path, bulk: str, work: Path):
    """(seconds, read-back seconds) from the stream's first byte to the switch holding
    `count` FPM routes, all through the one ECMP group of their final next hops."""
    switch = SwitchProcess(
        BIN / "p4-switch",
        grpc_addr=f"127.0.0.1:{free_port()}",
        stats_addr="127.0.0.1:0",
        log_path=work / "p4-switch.log",
    )
    log = work / "lossless-ctl.log"
    with switch:
        switch.wait_ready(timeout=30)
        with fpm_controller(switch.grpc_addr, pipeline, log, "--route-bulk", bulk) as running:
            proc, fpm_port = running
            with P4RuntimeClient(switch.grpc_addr, timeout=600) as client:
                client.connect()
                index = P4InfoIndex(client.p4info())
                table = index.table(ING + ("ipv4_route" if version == 4 else "ipv6_route"))
                with socket.create_connection(("127.0.0.1", fpm_port)) as zebra:
                    start = time.perf_counter()
                    zebra.sendall(stream)
                    deadline = time.monotonic() + WAIT_S
                    while True:
                        read_start = time.perf_counter()
                        got, actions = _fpm_routes(client, table.preamble.id)
                        end = time.perf_counter()
                        if got >= count and actions == 1:
                            return end - start, end - read_start
                        if time.monotonic() > deadline or proc.poll() is not None:
                            raise BenchError(f"{got} of {count} routes, {actions} actions")
                        time.sleep(0.05)


def run_point(name: str, pipeline: Path, bulk: str, work: Path) -> dict[str, Any]:
    version, count = POINTS[name]
    wanted = prefixes(version, count)
    stream, frr_seconds = record(name, wanted)
    seconds, readback = replay(stream, count, version, pipeline, bulk, work)
    out = {
        "point": name,
        "routes": count,
        "seconds": round(seconds, 3),
        "routes_per_s": round(count / seconds),
        "readback_s": round(readback, 3),
        "frr_seconds": round(frr_seconds, 3),
        "fpm_bytes": len(stream),
    }
    if name in SEED002_SECONDS:
        out["seed002_seconds"] = SEED002_SECONDS[name]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lossless_kit.bench_routes", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--pipeline", help="compiler output dir (default: compile p4src/)")
    parser.add_argument("--points", default=",".join(SMALL), help=f"of {', '.join(POINTS)}")
    parser.add_argument("--seed002", action="store_true", help="seed 002's points as well")
    parser.add_argument("--route-bulk", default="seed002", help="lossless-ctl's --route-bulk")
    parser.add_argument("-o", "--output", default="results/bench/routes-fpm.json")
    args = parser.parse_args(argv)
    names = [n for n in args.points.split(",") if n]
    if args.seed002:
        names += [n for n in SEED002_POINTS if n not in names]
    unknown = [n for n in names if n not in POINTS]
    if unknown:
        parser.error(f"unknown points {unknown} (known: {', '.join(POINTS)})")
    if missing():
        parser.error(f"{', '.join(map(str, missing()))} missing: install frr (`make deps`)")
    results = []
    with tempfile.TemporaryDirectory(prefix="llbench-routes-") as tmp:
        work = Path(tmp)
        pipeline = Path(args.pipeline) if args.pipeline else compile_pipeline(work / "p4")
        for name in names:
            record_ = run_point(name, pipeline, args.route_bulk, work)
            results.append(record_)
            seed = record_.get("seed002_seconds")
            beside = f"  (seed 002: {seed} s)" if seed else ""
            print(
                f"{name}: {record_['routes']} routes in {record_['seconds']} s "
                f"(FRR produced them in {record_['frr_seconds']} s){beside}",
                file=sys.stderr,
            )
    report = {
        "bench": "FPM to switch: zebra's recorded stream replayed into lossless-ctl run --fpm",
        "seconds": "first FPM byte to the read-back finding every route in its final ECMP group",
        "frr_seconds": "vtysh static routes to zebra's last route message (staticd, not ours)",
        "route_bulk": args.route_bulk,
        "results": results,
    }
    write_report(Path(args.output), report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
