"""The FPM route bench end to end (`make bench-routes` runs it as
`python -m lossless_kit.bench_routes`): FRR's zebra and staticd in a namespace (root), the
recorded stream replayed into `lossless-ctl run --fpm` and a real p4-switch."""

import json

from lossless_kit.bench_routes import main as bench_routes


def test_bench_routes_writes_its_json(tmp_path):
    out = tmp_path / "routes-fpm.json"
    assert bench_routes(["--points", "ipv6_1k", "--route-bulk", "64/0.1", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["route_bulk"] == "64/0.1"
    (point,) = report["results"]
    assert (point["point"], point["routes"]) == ("ipv6_1k", 1000)
    assert point["seconds"] > 0 and point["frr_seconds"] > 0
    # One IPv6 route message with two next hops is at least 100 bytes of netlink.
    assert point["fpm_bytes"] >= 1000 * 100
