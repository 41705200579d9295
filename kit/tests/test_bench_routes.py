"""The FPM route bench end to end (`make bench-routes` runs it as
`python -m lossless_kit.bench_routes`): FRR's zebra and staticd in a namespace (root), the
recorded stream replayed into `lossless-ctl run --fpm` and a real p4-switch."""

import json
import os

from lossless_kit.bench_routes import main as bench_routes


def test_bench_routes_writes_its_json(tmp_path):
    out, streams = tmp_path / "routes-fpm.json", tmp_path / "streams"
    args = ["--points", "ipv6_1k,ipv4_1k+ipv6_1k", "--route-bulk", "64/0.1"]
    assert bench_routes([*args, "--streams", str(streams), "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["route_bulk"] == "64/0.1"
    v6, both = report["results"]
    assert (v6["point"], v6["routes"]) == ("ipv6_1k", 1000)
    assert v6["seconds"] > 0 and v6["frr_seconds"] > 0
    # CPU time within `seconds` (clock ticks: 1k routes may take less than one).
    cores = os.cpu_count() or 1
    for cpu in (v6["controller_cpu_s"], v6["switch_cpu_s"]):
        assert 0 <= cpu <= v6["seconds"] * cores + 0.02
    # One IPv6 route message with two next hops is at least 100 bytes of netlink; zebra sends
    # each route at least once.
    assert v6["fpm_bytes"] >= 1000 * 100 and v6["fpm_messages"] >= 1000
    # A combined point replays both streams, the IPv6 one as recorded for the first point.
    assert (both["routes"], both["frr_seconds_parts"]["ipv6_1k"]) == (2000, v6["frr_seconds"])
    assert sorted(p.name for p in streams.iterdir()) == [
        "ipv4_1k.fpm", "ipv4_1k.json", "ipv6_1k.fpm", "ipv6_1k.json"
    ]  # fmt: skip


def test_the_encoded_stream_is_one_message_per_route_with_its_final_next_hops():
    """The stand-in for FRR at 200k routes: pyroute2's messages, read by the controller's
    decoder, give each prefix once with all the family's gateways."""
    import ipaddress

    from lossless_ctl.fpm import FpmCounters, FpmReader, each_route
    from lossless_kit.bench_routes import encoded, prefixes
    from lossless_kit.frr import GATEWAYS, V6_GATEWAYS

    for version, gateways in ((4, GATEWAYS), (6, V6_GATEWAYS)):
        wanted = prefixes(version, 3)
        counters = FpmCounters()
        routes = each_route(FpmReader(counters, print).feed(encoded(wanted)))
        assert [r.prefix for r in routes] == wanted
        hops = tuple(sorted(map(ipaddress.ip_address, gateways)))
        assert {r.nexthops for r in routes} == {hops}
        assert {r.protocol for r in routes} == {"static"}
        assert counters["frames"] == counters["routes"] == 3


def test_frr_as_the_source_from_a_bgp_peer(tmp_path):
    """FRR fed live by ExaBGP: 1k IPv6 /96s through the peer, and 8 ECMP groups of 4 next hops
    (2 routes each) that bgpd gets as ADD-PATH paths of one session and makes multipath. The
    bench fails unless the switch then holds each route through exactly the announced next
    hops, routes with one next-hop set sharing one group."""
    out = tmp_path / "routes-fpm.json"
    args = ["--points", "bgp_ipv6_1k,bgp_ecmp_8x4", "--route-bulk", "64/0.1"]
    assert bench_routes([*args, "--streams", str(tmp_path), "-o", str(out)]) == 0
    v6, ecmp = json.loads(out.read_text())["results"]
    assert (v6["routes"], v6["routes_by_family"], v6["ecmp_groups"]) == (1000, {"ipv6": 1000}, 0)
    assert (ecmp["routes"], ecmp["ecmp_groups"], ecmp["ecmp"]) == (16, 8, "8x4")
    for point in (v6, ecmp):
        # FRR's time ends with zebra's last message, ours starts with its first.
        assert 0 < point["frr_first_message_s"] <= point["frr_seconds"]
        assert point["peer_seconds"] > 0
        assert 0 < point["seconds"] <= point["release_to_forwarding_s"]
        assert point["fpm_messages"] >= point["routes"]
        # The same stream replayed into a fresh controller and switch passed the same check.
        assert point["replay_seconds"] > 0
    assert (tmp_path / "bgp_ecmp_8x4.fpm").stat().st_size == ecmp["fpm_bytes"]
    # --replay: the kept stream alone, again checked, with FRR's time from the recording.
    again = tmp_path / "replayed.json"
    args = ["--points", "bgp_ecmp_8x4", "--replay", "--streams", str(tmp_path), "-o", str(again)]
    assert bench_routes(args) == 0
    (replayed,) = json.loads(again.read_text())["results"]
    assert replayed["replay_seconds"] > 0 and "seconds" not in replayed
    assert replayed["frr_seconds"] == ecmp["frr_seconds"]
    assert replayed["recorded_live"]["seconds"] == ecmp["seconds"]


def test_announcements_batch_prefixes_per_next_hop_set_with_a_path_per_hop():
    """ExaBGP's API commands: a path id per next hop of a set (ADD-PATH), prefixes of one set
    batched."""
    import ipaddress

    from lossless_kit.bench_routes import prefixes
    from lossless_kit.bgp_peer import NLRI_PER_COMMAND, announcements

    nets = prefixes(4, NLRI_PER_COMMAND + 1)
    hops = (ipaddress.ip_address("10.1.0.2"), ipaddress.ip_address("10.1.0.3"))
    lines = announcements([(n, hops) for n in nets] + [(nets[0], hops[:1])])
    assert len(lines) == 2 * 2 + 1
    assert lines[0].startswith("announce attributes path-information 1 next-hop 10.1.0.2 nlri ")
    assert lines[2].startswith("announce attributes path-information 2 next-hop 10.1.0.3 nlri ")
    assert lines[1].endswith(f"nlri {nets[-1]}")
    assert lines[-1] == f"announce attributes path-information 1 next-hop 10.1.0.2 nlri {nets[0]}"
