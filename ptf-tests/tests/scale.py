"""Seed 002's scale points: routes, neighbours and ECMP groups installed through lossless-ctl,
then verified by forwarding to at least 1000 random destinations per table. Programming times
go to results/ (recorded, not asserted).

`scale=ci` (what `make ptf` and `make test` run) loads one reduced point with every table;
`scale=full` (`make test-scale`) loads each of seed 002's points: 200k IPv4 and 65k IPv6
routes, 32k ARP, 16k ND, ECMP 512x32, 256x64, 128x128. The suite's config is loaded back at the
end, so the other tests can follow.
"""

from __future__ import annotations

import ipaddress
import json
import random
import time
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ptf_harness.base import LosslessTest

DESTINATIONS = 1000

CI_POINTS = {
    "ci_all_tables": dict(
        ipv4_routes=10_000, ipv6_routes=5_000, arp=2_000, nd=1_000, ecmp_groups=64, ecmp_paths=8
    )
}
FULL_POINTS = {
    "ipv4_200k": dict(ipv4_routes=200_000, arp=64),
    "ipv6_65k": dict(ipv6_routes=65_000, nd=64),
    "arp_32k": dict(arp=32_000),
    "nd_16k": dict(nd=16_000),
    "ecmp_512x32": dict(ecmp_groups=512, ecmp_paths=32),
    "ecmp_256x64": dict(ecmp_groups=256, ecmp_paths=64),
    "ecmp_128x128": dict(ecmp_groups=128, ecmp_paths=128),
}


class Scale(LosslessTest):
    def load(self, tables: dict) -> dict:
        from lossless_ctl import config_db
        from lossless_ctl.loader import load, plan, read_pipeline

        pipeline = read_pipeline(self.params["pipeline"])
        start = time.perf_counter()
        cfg = config_db.parse_checked(tables)
        _model, program = plan(cfg, pipeline.p4info)
        planned = time.perf_counter() - start
        summary = load(self.client, pipeline, program)
        if summary.errors:
            self.fail("scale load failed:\n" + summary.render())
        return {
            "plan_seconds": round(planned, 3),
            "pipeline_seconds": round(summary.pipeline_seconds or 0.0, 3),
            "write_seconds": round(summary.seconds, 3),
            "updates": summary.written,
            "updates_per_second": round(summary.written / summary.seconds)
            if summary.seconds
            else None,
            "phases": {p.name: [p.updates, round(p.seconds, 3)] for p in summary.phases},
        }

    def tearDown(self) -> None:
        try:
            from lossless_ctl import config_db

            configs = self.params["configs"].split(",")
            self.load(config_db.load_files(configs))
        finally:
            super().tearDown()

    def runTest(self) -> None:
        from lossless_ctl.routegen import ScalePoint, generate

        mode = self.params.get("scale", "ci")
        points = FULL_POINTS if mode == "full" else CI_POINTS
        record = {}
        for name, spec in points.items():
            tables = generate(ScalePoint(ports=4, **spec))
            timing = self.load(tables)
            verified = self.verify(tables, random.Random(name))
            record[name] = {"point": spec, **timing, "verified_destinations": verified}
        out = Path(self.params["results"]) / f"scale_{mode}.json"
        out.write_text(json.dumps(record, indent=2) + "\n")

    def verify(self, tables: dict, rng: random.Random) -> dict[str, int]:
        """Forward to DESTINATIONS random addresses per table; returns the count per table."""
        port_of = {k: int(v["index"]) for k, v in tables["PORT"].items()}
        neigh: dict[str, tuple[int, str]] = {}
        for key, v in tables["NEIGH"].items():
            ifname, ip = key.split("|")
            neigh[ip] = (port_of[ifname], v["neigh"])
        router = tables["DEVICE_METADATA"]["localhost"]["mac"]
        kinds: dict[str, list] = {"ipv4_route": [], "ipv6_route": [], "ecmp": []}
        for prefix, v in tables["STATIC_ROUTE"].items():
            hops = v["nexthop"].split(",")
            net = ipaddress.ip_network(prefix)
            kind = "ecmp" if len(hops) > 1 else f"ipv{net.version}_route"
            kinds[kind].append((net, {neigh[h] for h in hops}))
        for family, kind in ((4, "arp"), (6, "nd")):
            kinds[kind] = [
                (ipaddress.ip_network(ip), {hop})
                for ip, hop in neigh.items()
                if ipaddress.ip_address(ip).version == family
            ]
        counts = {}
        for kind, entries in kinds.items():
            if not entries or (kind in ("arp", "nd") and len(entries) < 100):
                continue  # the 64 neighbours that only carry routes are not a table point
            for _ in range(DESTINATIONS):
                net, allowed = rng.choice(entries)
                offset = rng.randrange(1, net.num_addresses - 1) if net.num_addresses > 2 else 0
                self.check(net.network_address + offset, allowed, router, kind)
            counts[kind] = DESTINATIONS
        return counts

    def check(self, dst, allowed: set[tuple[int, str]], router: str, kind: str) -> None:
        if dst.version == 4:
            l3 = IP(src="10.0.0.2", dst=str(dst), ttl=64)
        else:
            l3 = IPv6(src="fc00::2", dst=str(dst), hlim=64)
        pkt = Ether(dst=router, src="02:00:00:00:00:02") / l3 / UDP(sport=1, dport=2) / bytes(16)
        self.send(1, pkt)
        got = self.receive(timeout=2.0)
        if got is None:
            self.fail(f"{kind}: packet to {dst} not forwarded (expected one of {sorted(allowed)})")
        port, frame = got
        mac = ":".join(f"{b:02x}" for b in frame[:6])
        self.assertIn((port, mac), allowed, f"{kind}: packet to {dst} left on port {port} to {mac}")
