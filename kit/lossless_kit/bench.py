"""Programming time at seed 002's scale points and neighbour learning time, against the real
p4-switch running the compiled pipeline, as JSON.

    python -m lossless_kit.bench [--pipeline DIR] [--switch ADDR] [--points ipv4_10k,...]
                                 [--batch-size N] [--in-flight N] [-o results/bench/control.json]

The pipeline is `--pipeline` (e.g. build/p4) or p4src/ compiled by build/bin/p4-compile. Scale
points: for each, generate the config_db fragment, validate it, derive the SAI objects, map them
to P4Runtime updates and write them to a p4-switch this program starts (or `--switch ADDR`),
a fresh pipeline per point; the neighbour table is read back (the `show arp` analog). Beside
them: seed 002's SONiC figures.

Neighbour learning (`learn_arp_8k` ... `learn_nd_16k`, root: veths) runs p4-switch on 4 veth
ports with the config's interfaces and no NEIGH: one ARP request or NS per host goes into the
switch's port, the pipeline punts it through the CPU port (PacketIn), the learner installs the
neighbour and answers (PacketOut), and the time is until every answer has come out of the
switch's ports and every neighbour entry is on the switch. Requests are paced by a window of
answers outstanding, as hosts would retry; a request left unanswered for a second is sent again.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from lossless_ctl import config_db
from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.loader import Pipeline, load, read_pipeline
from lossless_ctl.neighbor import (
    ND_NS,
    NeighborLearner,
    arp_frame,
    mac_bytes,
    nd_frame,
    serve,
    solicited_node,
)
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.p4map import to_p4
from lossless_ctl.routegen import SCALE_POINTS, ScalePoint, generate
from lossless_ctl.sai import derive
from lossless_paths import BIN

from .pipeline import compile_pipeline
from .switch import SwitchProcess, free_port
from .vethlab import SwitchLab

# Seed 002 (SONiC L3 scaling HLD, 2019, AS7712 Tomahawk): route programming time in seconds.
SONIC_2019_SECONDS = {
    "ipv4_10k": 11,
    "ipv4_30k": 30,
    "ipv4_60k": 48,
    "ipv4_90k": 68,
    "ipv6_10k": 11,
    "ipv6_30k": 30,
}


def run_point(
    name: str, pipeline: Pipeline, client: P4RuntimeClient, batch: int, in_flight: int
) -> dict[str, Any]:
    point = SCALE_POINTS[name]
    times: dict[str, float] = {}

    def timed(stage: str, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        times[stage] = time.perf_counter() - start
        return out

    tables = timed("generate_s", generate, point)
    cfg = timed("validate_s", config_db.parse_checked, tables)
    model = timed("derive_s", derive, cfg)
    index = P4InfoIndex(pipeline.p4info)
    program = timed("map_s", to_p4, model, index)
    start = time.perf_counter()
    written = 0
    for phase in program.phases:
        result = client.write(phase.updates, batch_size=batch, in_flight=in_flight)
        if result.errors:
            first = result.errors[0]
            raise RuntimeError(f"{name}: {phase.labels[first.index]}: {first.message}")
        written += result.written
    times["write_s"] = time.perf_counter() - start
    routes = point.ipv4_routes + point.ipv6_routes + point.ecmp_groups
    controller = times["validate_s"] + times["derive_s"] + times["map_s"] + times["write_s"]
    record: dict[str, Any] = {
        "point": name,
        "routes": routes,
        "neighbors": point.arp + point.nd,
        "ecmp": f"{point.ecmp_groups}x{point.ecmp_paths}" if point.ecmp_groups else None,
        "updates": written,
        **{k: round(v, 4) for k, v in times.items()},
        "program_s": round(controller, 4),
        "updates_per_s": round(written / controller),
        "routes_per_s": round(routes / controller) if routes else None,
        "sonic_2019_s": SONIC_2019_SECONDS.get(name),
    }
    if point.arp + point.nd:
        start = time.perf_counter()
        n = len(client.read_table(index.table("LosslessIngress.neighbor").preamble.id))
        record["read_neighbors_s"] = round(time.perf_counter() - start, 4)
        record["read_neighbors"] = n
    return record


# Four ports: the hosts are spread over them, and the learner answers on the one asked.
LEARN_POINTS = {
    **{f"learn_arp_{n // 1000}k": ScalePoint(arp=n, ports=4) for n in (8_000, 16_000, 32_000)},
    **{f"learn_nd_{n // 1000}k": ScalePoint(nd=n, ports=4) for n in (8_000, 16_000)},
}
WINDOW = 256  # requests in flight: hosts retry, they do not flood


def _requests(cfg: config_db.ConfigDb, hosts: dict[str, dict[str, str]]) -> dict[bytes, tuple]:
    """Host MAC -> (port, ARP request or NS for the router address of its interface)."""
    import ipaddress

    routers = {(rip.ifname, rip.ip.version): rip.ip.ip for rip in cfg.router_ips}
    out = {}
    for key, fields in hosts.items():
        ifname, _, ip_text = key.partition("|")
        ip = ipaddress.ip_address(ip_text)
        mac = mac_bytes(fields["neigh"])
        router = routers[(ifname, ip.version)]
        if ip.version == 4:
            frame = arp_frame(1, mac, ip, bytes(6), router, b"\xff" * 6)
        else:
            group, group_mac = solicited_node(router)
            frame = nd_frame(ND_NS, mac, group_mac, ip, group, router)
        out[mac] = (cfg.ports[ifname].index, frame)
    return out


def run_learning(name: str, pipeline: Pipeline, workdir: Path) -> dict[str, Any]:
    import select
    import threading

    point = LEARN_POINTS[name]
    tables = generate(point)
    hosts = tables.pop("NEIGH")
    cfg = config_db.parse_checked(tables)
    index = P4InfoIndex(pipeline.p4info)
    program = to_p4(derive(cfg), index)
    requests = _requests(cfg, hosts)
    neighbor_table = index.table("LosslessIngress.neighbor").preamble.id
    with (
        SwitchLab(point.ports, workdir) as lab,
        P4RuntimeClient(lab.grpc_addr, timeout=600) as client,
    ):
        client.arbitrate()
        load(client, pipeline, program)
        before = len(client.read_table(neighbor_table))
        learner = NeighborLearner(cfg, program, index, age_s=3600)
        stop = threading.Event()
        thread = threading.Thread(target=serve, args=(client, learner, stop), kwargs={"log": len})
        thread.start()
        by_fd = {s.fileno(): s for s in lab.sockets.values()}
        pending = list(requests)  # host MACs not asked yet
        asked: dict[bytes, float] = {}  # host MAC -> when last asked, until answered
        answered: set[bytes] = set()
        resent = 0
        start = time.perf_counter()
        deadline = time.monotonic() + 600
        while len(answered) < len(requests) and time.monotonic() < deadline:
            now = time.monotonic()
            while pending and len(asked) < WINDOW:
                mac = pending.pop()
                port, frame = requests[mac]
                lab.send(port, frame)
                asked[mac] = now
            ready, _, _ = select.select(list(by_fd), [], [], 0.05)
            for fd in ready:
                sock = by_fd[fd]
                while True:
                    try:
                        frame = sock.recv(65536, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    mac = frame[:6]
                    if mac in asked:
                        del asked[mac]
                        answered.add(mac)
            for mac, when in list(asked.items()):
                if now - when > 1.0:
                    port, frame = requests[mac]
                    lab.send(port, frame)
                    asked[mac] = now
                    resent += 1
        answered_s = time.perf_counter() - start
        installed = 0
        while time.monotonic() < deadline:
            installed = len(client.read_table(neighbor_table)) - before
            if installed >= len(requests):
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        stop.set()
        thread.join(timeout=30)
    return {
        "point": name,
        "neighbors": len(requests),
        "installed": installed,
        "replies": len(answered),
        "resent": resent,
        "window": WINDOW,
        "replies_s": round(answered_s, 4),
        "learn_s": round(seconds, 4),
        "neighbors_per_s": round(installed / seconds),
        "target": "p4-switch, 4 veth ports, requests punted through the CPU port",
    }


def _portless_switch(workdir: Path) -> SwitchProcess:
    """A p4-switch without ports for the scale points: P4Runtime only."""
    return SwitchProcess(
        BIN / "p4-switch",
        grpc_addr=f"127.0.0.1:{free_port()}",
        stats_addr="127.0.0.1:0",
        log_path=workdir / "p4-switch.log",
    )


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m lossless_kit.bench", description=__doc__)
    parser.add_argument("--switch", help="a running P4Runtime server (default: start p4-switch)")
    parser.add_argument("--pipeline", help="compiler output dir (default: compile p4src/)")
    parser.add_argument(
        "--points", default=",".join([*SCALE_POINTS, *LEARN_POINTS]), help="comma list"
    )
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("-o", "--output", default="results/bench/control.json")
    args = parser.parse_args(argv)
    names = [n for n in args.points.split(",") if n]
    unknown = [n for n in names if n not in SCALE_POINTS and n not in LEARN_POINTS]
    if unknown:
        known = ", ".join([*SCALE_POINTS, *LEARN_POINTS])
        parser.error(f"unknown points {unknown} (known: {known})")
    results = []
    with tempfile.TemporaryDirectory(prefix="llctl-bench-") as tmp:
        work = Path(tmp)
        pipeline_dir = Path(args.pipeline) if args.pipeline else compile_pipeline(work / "p4")
        pipeline = read_pipeline(pipeline_dir)
        switch, address = None, args.switch
        if address is None and any(n in SCALE_POINTS for n in names):
            switch = _portless_switch(work)
            switch.start()
            address = switch.grpc_addr
        try:
            if switch is not None:
                switch.wait_ready(timeout=30)
            for name in names:
                if name in LEARN_POINTS:
                    record = run_learning(name, pipeline, work)
                else:
                    # A fresh pipeline per point, so points do not see each other's entries.
                    with P4RuntimeClient(address, timeout=600) as client:
                        client.arbitrate()
                        client.set_pipeline(pipeline.p4info, pipeline.device_config)
                        record = run_point(name, pipeline, client, args.batch_size, args.in_flight)
                results.append(record)
                print(json.dumps(record), file=sys.stderr)
        finally:
            if switch is not None:
                switch.stop(timeout=30)
    write_report(
        Path(args.output),
        {
            "bench": "lossless-ctl programming and neighbour learning at seed 002 scale points",
            "target": args.switch or "p4-switch started by the bench (build/bin/p4-switch)",
            "pipeline": str(pipeline_dir if args.pipeline else "p4src/ compiled by p4-compile"),
            "batch_size": args.batch_size,
            "in_flight": args.in_flight,
            "results": results,
        },
    )
    return 0


def write_report(out: Path, report: dict[str, Any]) -> None:
    """A benchmark's JSON under results/bench/ (the folder made as needed), and where it went."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
