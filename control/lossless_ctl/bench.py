"""Programming time at seed 002's scale points, as JSON.

    python -m lossless_ctl.bench [--switch ADDR --pipeline DIR] [--points ipv4_10k,...]
                                 [--batch-size N] [--in-flight N] [-o results/bench/control.json]

For each point: generate the config_db fragment, validate it, derive the SAI objects, map them
to P4Runtime updates, and write them. Without --switch the writes go to an in-process fake
P4Runtime server that accepts and discards them, so the figures are the controller's own cost
(the ceiling it puts on a switch), not a switch's; with --switch they include the switch, and
the neighbour table is read back (the `show arp` analog). Beside them: seed 002's SONiC figures.

Neighbour learning (`learn_arp_8k` ... `learn_nd_16k`) always runs against the in-process fake,
since only it can be made to punt thousands of ARP requests or NSs: the config has the
interfaces but no NEIGH, one request per host goes in as a PacketIn, and the time is until
every neighbour entry is on the (fake) switch and every reply has gone out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from lossless_ctl import config_db
from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.fake_switch import FakeSwitch
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
from lossless_ctl.p4info import P4InfoIndex, read_p4info
from lossless_ctl.p4map import to_p4
from lossless_ctl.routegen import SCALE_POINTS, ScalePoint, generate
from lossless_ctl.sai import derive

# Seed 002 (SONiC L3 scaling HLD, 2019, AS7712 Tomahawk): route programming time in seconds.
SONIC_2019_SECONDS = {
    "ipv4_10k": 11,
    "ipv4_30k": 30,
    "ipv4_60k": 48,
    "ipv4_90k": 68,
    "ipv6_10k": 11,
    "ipv6_30k": 30,
}
FIXTURE_P4INFO = Path(__file__).resolve().parents[1] / "tests" / "data" / "lossless.p4info.txtpb"


def run_point(
    name: str, pipeline: Pipeline, client: P4RuntimeClient, batch: int, in_flight: int, real: bool
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
    if real and point.arp + point.nd:
        start = time.perf_counter()
        n = len(client.read_table(index.table("LosslessIngress.neighbor").preamble.id))
        record["read_neighbors_s"] = round(time.perf_counter() - start, 4)
        record["read_neighbors"] = n
    return record


LEARN_POINTS = {
    **{f"learn_arp_{n // 1000}k": ScalePoint(arp=n) for n in (8_000, 16_000, 32_000)},
    **{f"learn_nd_{n // 1000}k": ScalePoint(nd=n) for n in (8_000, 16_000)},
}


def run_learning(name: str, pipeline: Pipeline) -> dict[str, Any]:
    import ipaddress
    import threading

    point = LEARN_POINTS[name]
    tables = generate(point)
    hosts = tables.pop("NEIGH")
    cfg = config_db.parse_checked(tables)
    index = P4InfoIndex(pipeline.p4info)
    program = to_p4(derive(cfg), index)
    routers = {}
    for rip in cfg.router_ips:
        routers[(rip.ifname, rip.ip.version)] = rip.ip.ip
    port_field = index.packet_metadata("packet_in")["ingress_port"]
    frames = []
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
        port = cfg.ports[ifname].index
        frames.append((frame, [(port_field.id, port.to_bytes(2, "big"))]))
    neighbor_table = index.table("LosslessIngress.neighbor").preamble.id
    with FakeSwitch() as fake, P4RuntimeClient(fake.address, timeout=600) as client:
        client.arbitrate()
        load(client, pipeline, program)
        learner = NeighborLearner(cfg, program, index, age_s=3600)
        stop = threading.Event()
        thread = threading.Thread(target=serve, args=(client, learner, stop), kwargs={"log": len})
        thread.start()
        before = len(fake.servicer.packet_outs)
        start = time.perf_counter()
        for frame, metadata in frames:
            fake.servicer.send_packet_in(frame, metadata)
        deadline = time.monotonic() + 600
        installed = replies = 0
        while time.monotonic() < deadline:
            # Count entries only once every reply is out: counting holds the fake's lock.
            replies = len(fake.servicer.packet_outs) - before
            if replies >= len(frames):
                with fake.servicer.lock:
                    installed = sum(
                        1
                        for e in fake.servicer.entities.values()
                        if e.WhichOneof("entity") == "table_entry"
                        and e.table_entry.table_id == neighbor_table
                    )
                if installed >= len(frames):
                    break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        stop.set()
        thread.join(timeout=30)
    return {
        "point": name,
        "neighbors": len(frames),
        "installed": installed,
        "replies": replies,
        "learn_s": round(seconds, 4),
        "neighbors_per_s": round(installed / seconds),
        "target": "in-process fake P4Runtime server",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lossless_ctl.bench", description=__doc__)
    parser.add_argument("--switch", help="P4Runtime server (default: in-process fake)")
    parser.add_argument("--pipeline", help="compiler output dir (needed with --switch)")
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
    if args.switch and not args.pipeline:
        parser.error("--switch needs --pipeline")
    if args.pipeline:
        pipeline = read_pipeline(args.pipeline)
    else:
        pipeline = Pipeline(read_p4info(FIXTURE_P4INFO), b"{}", FIXTURE_P4INFO, FIXTURE_P4INFO)
    results = []
    fake = None if args.switch else FakeSwitch(record=False)
    try:
        if fake is not None:
            fake.__enter__()
        address = args.switch or fake.address
        for name in names:
            if name in LEARN_POINTS:
                results.append(run_learning(name, pipeline))
                print(json.dumps(results[-1]), file=sys.stderr)
                continue
            # A fresh session and pipeline per point, so points do not see each other's entries.
            with P4RuntimeClient(address, timeout=600) as client:
                client.arbitrate()
                client.set_pipeline(pipeline.p4info, pipeline.device_config)
                record = run_point(
                    name, pipeline, client, args.batch_size, args.in_flight, fake is None
                )
            results.append(record)
            print(json.dumps(record), file=sys.stderr)
    finally:
        if fake is not None:
            fake.__exit__(None, None, None)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "bench": "lossless-ctl programming time at seed 002 scale points",
        "target": args.switch or "in-process fake P4Runtime server (controller cost only)",
        "p4info": str(pipeline.p4info_path),
        "batch_size": args.batch_size,
        "in_flight": args.in_flight,
        "results": results,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
