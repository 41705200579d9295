"""ROUTING=bgp end to end (`make test-bgp`, about 3 minutes, as root): the leaf-spine fabric
with FRR (zebra, bgpd) on every switch over FPM into `lossless-ctl run`, p4-switch forwarding.

The reference is the topology, not our own output: every leaf-spine link is a BGP session, and
every leaf reaches every other leaf's host subnet through both spines (the model's equal-cost
paths), so the routes the P4 tables hold must be those, from FPM. Then seed 002's regression
items under IPv4 and IPv6 traffic at once: a leaf-spine link down and up, a flap storm on it,
an FRR restart, clear neighbours, a controller and a switch restart, each with each family's
loss counted from the packets' sequence numbers and reported (results/bgp/*.json).
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lossless_ctl.client import P4RuntimeError
from lossless_paths import BIN, RESULTS
from lossless_topo import cleanup, configdb, model
from lossless_topo.bgp import expected_routes
from lossless_topo.lab import Lab, Pipeline

SEQFLOW = Path(__file__).with_name("seqflow.py")
PORT = 7000
PORT6 = 7100  # the IPv6 flows' (their source ports follow it: a v6 socket on "::" takes v4's too)
FLOWS, PPS = 16, 200.0
LEAF, FAR, SPINE = "leaf1", "leaf8", "spine1"


@pytest.fixture(scope="module")
def lab(compiled_pipeline, tmp_path_factory):
    import os

    assert os.geteuid() == 0, "the lab tests need root (namespaces, veths); CI runs as root"
    assert (BIN / "p4-switch").exists(), "`make build` builds p4-switch"
    topo = model.load("leafspine-7to1")
    workdir = tmp_path_factory.mktemp("bgp")
    state = cleanup.RunState(workdir / "state.json")
    lab = Lab(
        topo,
        model.Scale.for_topology(topo, 25),
        str(BIN / "p4-switch"),
        Pipeline(compiled_pipeline),
        workdir,
        state,
        routing="bgp",
    )
    start = time.monotonic()
    try:
        lab.start(configdb.Variant())
        print(f"\nleaf-spine up with BGP converged in {time.monotonic() - start:.1f} s")
        yield lab
    finally:
        lab.stop()
        cleanup.cleanup(state)


def far_subnet(topo: model.Topology) -> ipaddress.IPv4Network:
    return next(h.ip.network for h in topo.hosts.values() if h.switch == FAR)


def far_subnet6(topo: model.Topology) -> ipaddress.IPv6Network:
    return next(model.ipv6_of(h.ip).network for h in topo.hosts.values() if h.switch == FAR)


def spine_hops(topo: model.Topology, leaf: str) -> dict[str, ipaddress.IPv4Address]:
    """The leaf's BGP next hop per spine: the spine's end of their /31."""
    return {r.node: r.ip.ip for _, r, _ in topo.switch_links(leaf) if r.node in topo.switches}


def established(lab, switch: str) -> bool:
    """Whether the switch has a session per family on every link to another switch (its
    /31 and its /127), each established."""
    topo = lab.topo
    peers = [r.ip for _, r, _ in topo.switch_links(switch) if r.node in topo.switches]
    want = {str(ip.ip) for ip in peers} | {str(model.ipv6_of(ip).ip) for ip in peers}
    return lab.bgp.sessions(switch) == dict.fromkeys(want, "Established")


def test_every_leaf_spine_link_is_an_established_session(lab):
    for sw in lab.topo.switches:
        assert established(lab, sw), (sw, lab.bgp.sessions(sw))


def test_routes_in_the_p4_tables_come_from_fpm_with_every_spine(lab):
    topo = lab.topo
    node = lab.net[LEAF]
    out = subprocess.run(
        [
            *lab.ctl, "show", "ip", "route", "--config", str(lab.config_path(LEAF)),
            "--switch", node.grpc_addr, "--device-id", str(node.device_id),
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    print(out)
    hops = spine_hops(topo, LEAF)
    for subnet in model.load(topo.name).routes(LEAF):
        head = next(line for line in out.splitlines() if f" {subnet} " in line)
        assert "[fpm]" in head, head
        block = out[out.index(head) :].splitlines()[: len(hops)]
        assert {ipaddress.ip_address(line.split("via ")[1].split(",")[0]) for line in block} == set(
            hops.values()
        ), block
    # The spines reach each leaf's subnet through that leaf alone.
    for spine in (s for s in topo.switches if s.startswith("spine")):
        assert set(lab.bgp.fpm_nexthops(spine).values()) == {1}, spine


def flows(lab, seconds: float, tag: str, ipv6: bool = False):
    """Start h1 -> h8 flows for `seconds`: (sender, receiver, their output files)."""
    h8 = lab.topo.hosts["h8"].ip
    dst = model.ipv6_of(h8).ip if ipv6 else h8.ip
    port = PORT6 if ipv6 else PORT
    sent, got = lab.workdir / f"{tag}-sent.json", lab.workdir / f"{tag}-received.json"
    rx = lab.net["h8"].popen(
        [sys.executable, str(SEQFLOW), "recv", str(port), "--seconds", str(seconds + 3),
         "--out", str(got), *(["--ipv6"] if ipv6 else [])]
    )  # fmt: skip
    time.sleep(0.5)
    tx = lab.net["h1"].popen(
        [sys.executable, str(SEQFLOW), "send", str(dst), str(port), "--flows", str(FLOWS),
         "--pps", str(PPS), "--seconds", str(seconds), "--out", str(sent)]
    )  # fmt: skip
    return tx, rx, sent, got


def both_flows(lab, seconds: float, tag: str) -> list:
    """h1 -> h8 flows over IPv4 and over IPv6 at once: seed 002's regression items run under
    both families' traffic."""
    return [flows(lab, seconds, tag), flows(lab, seconds, f"{tag}-ipv6", ipv6=True)]


def loss(sent_path: Path, got_path: Path, tail_s: float) -> dict:
    sent = json.loads(sent_path.read_text())["sent"]
    got = json.loads(got_path.read_text())
    received = {int(f): sum(b - a + 1 for a, b in r) for f, r in got["received"].items()}
    lost = [n - received.get(f, 0) for f, n in enumerate(sent)]
    tail = int(PPS / FLOWS * tail_s)
    tail_lost = 0
    for f, n in enumerate(sent):
        have = {s for a, b in got["received"].get(str(f), []) for s in range(a, b + 1)}
        tail_lost += sum(1 for s in range(max(0, n - tail), n) if s not in have)
    return {
        "sent": sum(sent),
        "lost": sum(lost),
        "lost_per_flow": lost,
        "lost_in_last_s": tail_lost,
        "longest_gap_s": max(got["longest_gap_s"].values(), default=0.0),
    }


def test_h1_to_h8_is_forwarded(lab):
    tx, rx, sent, got = flows(lab, 3.0, "steady")
    assert tx.wait(timeout=30) == 0 and rx.wait(timeout=30) == 0
    result = loss(sent, got, 1.0)
    print(f"h1 -> h8: {result}")
    assert result["sent"] >= PPS * 2 and result["lost"] == 0, result


def test_ipv6_routes_come_from_fpm_and_h1_to_h8_is_forwarded(lab):
    """IPv6 beside IPv4: a BGP session per family on every link (the /127 beside the /31),
    every remote host /120 in the P4 tables from FPM through both spines' /127 addresses, and
    an IPv6 flow h1 -> h8 that loses nothing."""
    topo = lab.topo
    hops = {
        model.ipv6_of(r.ip).ip for _, r, _ in topo.switch_links(LEAF) if r.node in topo.switches
    }
    rows = {r.prefix: r for r in lab.bgp.route_rows(LEAF) if r.prefix.version == 6}
    for subnet in model.load(topo.name).routes(LEAF):
        prefix = model.ipv6_of(ipaddress.IPv4Interface(subnet)).network
        assert rows[prefix].source == "fpm", rows[prefix]
        assert {h.ip for h in rows[prefix].nexthops} == hops, rows[prefix]
    tx, rx, sent, got = flows(lab, 3.0, "steady-ipv6", ipv6=True)
    assert tx.wait(timeout=30) == 0 and rx.wait(timeout=30) == 0
    result = loss(sent, got, 1.0)
    print(f"h1 -> h8 over IPv6: {result}")
    assert result["sent"] >= PPS * 2 and result["lost"] == 0, result


def finish(started: list, name: str, what: str, **figures) -> dict:
    """Wait for both_flows() to end; the IPv4 flows' loss (the last 2 s apart) with `figures`
    and the IPv6 flows' loss under `ipv6`, printed and written to results/bgp/NAME.json."""
    for tx, rx, _, _ in started:
        assert tx.wait(timeout=60) == 0 and rx.wait(timeout=60) == 0
    (_, _, sent, got), (_, _, sent6, got6) = started
    result = loss(sent, got, 2.0) | figures | {"flows": FLOWS, "pps": PPS}
    result["ipv6"] = loss(sent6, got6, 2.0)
    out = RESULTS / "bgp" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{what} under {FLOWS} flows at {PPS:g} pps: {result} ({out})")
    return result


def until(ready, what, timeout_s: float = 60.0) -> float:
    """Seconds until `ready()`; fails with `what()` after `timeout_s`."""
    start = time.monotonic()
    while not ready():
        assert time.monotonic() - start < timeout_s, what()
        time.sleep(0.05)
    return time.monotonic() - start


def hops(lab, subnet) -> int | None:
    """The number of next hops of leaf1's FPM route to `subnet` (None: none, or a restarted
    switch before its pipeline is back)."""
    try:
        return lab.bgp.fpm_nexthops(LEAF).get(subnet)
    except P4RuntimeError:
        return None


def wait_hops(lab, subnet, count: int) -> float:
    return until(lambda: hops(lab, subnet) == count, lambda: (subnet, lab.bgp.route_rows(LEAF)))


def tx_packets(intf: str) -> int:
    return int(Path(f"/sys/class/net/{intf}/statistics/tx_packets").read_text())


def test_leaf_spine_link_down_and_up_under_traffic(lab):
    """Seed 002's link flap: the ECMP member through the link goes and comes back; the flows
    hashed to it lose what the switch forwarded into the dead link until the route changed."""
    topo = lab.topo
    subnet, subnet6 = far_subnet(topo), far_subnet6(topo)
    uplinks = {
        r.node: local.intf for local, r, _ in topo.switch_links(LEAF) if r.node in topo.switches
    }
    hops = spine_hops(topo, LEAF)
    assert lab.bgp.fpm_nexthops(LEAF)[subnet] == 2
    seconds = 16.0
    started = both_flows(lab, seconds, "flap")
    time.sleep(3.0)
    lab.net.configLinkStatus(LEAF, SPINE, "down")
    removed_s = wait_hops(lab, subnet, 1)
    removed6_s = removed_s + wait_hops(lab, subnet6, 1)
    rows = {r.prefix: r for r in lab.bgp.route_rows(LEAF)}
    assert [h.ip for h in rows[subnet].nexthops] == [v for k, v in hops.items() if k != SPINE]
    assert [h.ip for h in rows[subnet6].nexthops] == [
        model.ipv6_of(ipaddress.IPv4Interface(f"{v}/31")).ip for k, v in hops.items() if k != SPINE
    ]
    time.sleep(2.0)
    lab.net.configLinkStatus(LEAF, SPINE, "up")
    restored_s = wait_hops(lab, subnet, 2)
    restored6_s = restored_s + wait_hops(lab, subnet6, 2)
    result = finish(
        started, "link-flap", f"link flap {LEAF}-{SPINE}",
        member_removed_after_s=round(removed_s, 3),
        member_restored_after_s=round(restored_s, 3),
        ipv6_member_removed_after_s=round(removed6_s, 3),
        ipv6_member_restored_after_s=round(restored6_s, 3),
    )  # fmt: skip
    # Only flows hashed to the dead member lose, and only until the route changed (the BGP
    # session drops with the carrier, the route follows within a flush): well under 3 s of
    # half the traffic.
    for r in (result, result["ipv6"]):
        assert r["lost"] <= PPS * 3.0 / 2, r
        assert r["lost_in_last_s"] == 0, r
    # The same flows again, from the member's return on: the first ones' 16 s include the
    # convergence, which a loaded machine stretches past their end (nothing left to count).
    before = tx_packets(uplinks[SPINE])
    again = both_flows(lab, 2.0, "flap-restored")
    for tx, _, _, _ in again:
        assert tx.wait(timeout=60) == 0
    through = tx_packets(uplinks[SPINE]) - before
    restored = finish(
        again, "link-flap-restored", f"after the link flap {LEAF}-{SPINE}",
        packets_through_the_restored_link=through,
    )  # fmt: skip
    for r in (restored, restored["ipv6"]):
        assert r["lost"] == 0, r
    assert through > 50, f"traffic did not return to the restored link: {through}"


def test_ecmp_member_flap_storm_under_traffic(lab):
    """Seed 002's member flap storm: the leaf1-spine1 link down and up 10 times in 10 s. The
    flows hashed to spine1 lose while the member is there and the link is not; once the link
    stays up the member comes back and nothing more is lost."""
    topo = lab.topo
    subnet = far_subnet(topo)
    assert lab.bgp.fpm_nexthops(LEAF)[subnet] == 2
    started = both_flows(lab, 20.0, "storm")
    time.sleep(2.0)
    start = time.monotonic()
    for i in range(10):
        lab.net.configLinkStatus(LEAF, SPINE, "down")
        time.sleep(max(0.0, start + 0.5 + i - time.monotonic()))
        lab.net.configLinkStatus(LEAF, SPINE, "up")
        time.sleep(max(0.0, start + 1.0 + i - time.monotonic()))
    storm_s = time.monotonic() - start
    restored_s = wait_hops(lab, subnet, 2)
    restored_s += wait_hops(lab, far_subnet6(topo), 2)  # IPv6 too
    result = finish(
        started, "flap-storm", f"flap storm {LEAF}-{SPINE}",
        flaps=10, storm_s=round(storm_s, 3), member_restored_after_storm_s=round(restored_s, 3),
    )  # fmt: skip
    for r in (result, result["ipv6"]):
        assert r["lost"] <= PPS / 2 * (storm_s + 2.0), r
        assert r["lost_in_last_s"] == 0, r


def test_frr_restart_keeps_the_routes(lab):
    """Seed 002's FRR restart: leaf1's zebra and bgpd stop and start under traffic. zebra
    retains its routes, the controller keeps them on the switch while zebra is away and until
    it has sent them again, so h1 -> h8 loses nothing and the sessions come back."""
    topo = lab.topo
    subnet = far_subnet(topo)
    started = both_flows(lab, 12.0, "frr-restart")
    time.sleep(2.0)
    start = time.monotonic()
    lab.bgp.restart_frr(LEAF)
    restarted_s = time.monotonic() - start
    established_s = restarted_s + until(
        lambda: established(lab, LEAF), lambda: lab.bgp.sessions(LEAF)
    )
    result = finish(
        started, "frr-restart", f"FRR restart on {LEAF}",
        daemons_restarted_in_s=round(restarted_s, 3),
        sessions_established_after_s=round(established_s, 3),
    )  # fmt: skip
    for r in (result, result["ipv6"]):
        assert r["lost"] == 0, r
    assert lab.bgp.fpm_nexthops(LEAF)[subnet] == 2
    assert lab.bgp.fpm_nexthops(LEAF)[far_subnet6(topo)] == 2


def test_clear_neighbours_and_relearn(lab):
    """Seed 002's clear neighbours: the configs have no NEIGH, so every neighbour on the
    switches is learned (the hosts, the BGP peers, IPv4 and IPv6). Clearing leaf1's and
    leaf8's under traffic removes the hosts' entries (the peers', whose next hops the
    fabric's routes use, are kept pending removal); each controller asks for every one again
    at once and the answers install them again: the loss is what arrived in between,
    bounded, and reported."""
    topo = lab.topo
    switches = (LEAF, FAR)
    want = {}
    for sw in switches:
        hosts = [h.ip for h in topo.hosts.values() if h.switch == sw]
        peers = [r.ip for _, r, _ in topo.switch_links(sw) if r.node in topo.switches]
        want[sw] = {str(ip.ip) for ip in hosts + peers}
        want[sw] |= {str(model.ipv6_of(ip).ip) for ip in hosts + peers}
    before = {sw: lab.bgp.neighbors(sw) for sw in switches}
    for sw in switches:
        assert set(before[sw]) == want[sw], (sw, before[sw])
        config = json.loads(lab.config_path(sw).read_text())
        assert config["NEIGH"] == {}, config["NEIGH"]
    cleared = {sw: lab.bgp.log_path(sw).read_text().count("neighbours cleared") for sw in switches}
    started = both_flows(lab, 8.0, "clear-neighbours")
    time.sleep(2.0)
    start = time.monotonic()
    for sw in switches:
        lab.bgp.clear_neighbors(sw)
    for sw in switches:
        until(
            lambda sw=sw: (
                lab.bgp.log_path(sw).read_text().count("neighbours cleared") > cleared[sw]
            ),
            lambda sw=sw: lab.bgp.log_path(sw).read_text()[-2000:],
        )
    cleared_s = time.monotonic() - start
    relearned_s = cleared_s + until(
        lambda: all(lab.bgp.neighbors(sw) == before[sw] for sw in switches),
        lambda: {sw: lab.bgp.neighbors(sw) for sw in switches},
        timeout_s=10.0,
    )
    result = finish(
        started, "clear-neighbours", f"clear neighbours on {LEAF} and {FAR}",
        neighbours_cleared={sw: len(before[sw]) for sw in switches},
        cleared_after_s=round(cleared_s, 3),
        relearned_after_s=round(relearned_s, 3),
    )  # fmt: skip
    # Traffic is lost only between an entry's removal and its answer (one ARP round trip
    # through both controllers): under a second of the traffic, none at the end.
    for r in (result, result["ipv6"]):
        assert r["lost"] <= PPS * 1.0, r
        assert r["lost_in_last_s"] == 0, r


def uptimes_s(lab, switch: str) -> dict[str, float]:
    """Seconds each of the switch's BGP sessions has been established (bgpd's)."""
    data = json.loads(lab.bgp.frr[switch].show("show bgp ipv4 unicast summary json") or "{}")
    return {ip: p.get("peerUptimeMsec", 0) / 1000 for ip, p in data.get("peers", {}).items()}


def written(log: str) -> int:
    """What a controller's reconcile wrote (its summary's last line: written N of M)."""
    return int(re.findall(r"^written (\d+) of \d+ updates", log, re.M)[-1])


def test_controller_restart_loses_nothing(lab):
    """Seed 002's controller restart: leaf1's `lossless-ctl run` stops and starts again under
    traffic. The taps are the lab's, so the kernel, FRR and the BGP sessions see nothing; the
    switch forwards on; the new controller takes over the FPM routes its predecessor left
    (adopt) and its reconcile writes only the difference from the config, which is none;
    zebra reconnects and sends its routes again, identical, so none is written."""
    subnet = far_subnet(lab.topo)
    started = both_flows(lab, 12.0, "ctl-restart")
    time.sleep(2.0)
    before = uptimes_s(lab, LEAF)
    start = time.monotonic()
    log = lab.bgp.restart_controller(LEAF)
    ready_s = time.monotonic() - start
    offset = len(lab.bgp.log_path(LEAF).read_text()) - len(log)
    resent_s = ready_s + until(
        lambda: "fpm: connection from" in lab.bgp.log_path(LEAF).read_text()[offset:],
        lambda: lab.bgp.log_path(LEAF).read_text()[offset:],
    )
    time.sleep(2.5)  # more than one flush of seed 002's 1 s timer after zebra's dump
    after = lab.bgp.log_path(LEAF).read_text()[offset:]
    taken = re.search(r"took over (\d+) FPM routes, (\d+) ECMP groups", after)
    flushed = sum(int(n) for n in re.findall(r"(\d+) written since the last report", after))
    result = finish(
        started, "controller-restart", f"controller restart on {LEAF}",
        controller_ready_after_s=round(ready_s, 3),
        zebra_reconnected_after_s=round(resent_s, 3),
        reconcile_writes=written(log),
        fpm_routes_taken_over=int(taken[1]) if taken else 0,
        ecmp_groups_taken_over=int(taken[2]) if taken else 0,
        fpm_routes_written_after_reconnect=flushed,
    )  # fmt: skip
    # Every session stayed up through the restart: none was established again.
    elapsed = time.monotonic() - start
    up = uptimes_s(lab, LEAF)
    assert set(up) == set(before) and all(up[ip] > elapsed for ip in up), (before, up)
    for r in (result, result["ipv6"]):
        assert r["lost"] == 0, r
    assert result["reconcile_writes"] == 0, log
    assert result["fpm_routes_taken_over"] == len(expected_routes(lab.topo, LEAF)), after
    assert result["fpm_routes_written_after_reconnect"] == 0, after
    assert lab.bgp.fpm_nexthops(LEAF)[subnet] == 2


def test_switch_restart_is_replayed(lab):
    """Seed 002's switch restart: leaf1's p4-switch stops and starts empty under traffic. Its
    controller reconnects, replays the config and writes zebra's routes again; the BGP
    sessions, whose keepalives stop only for the outage (under the 9 s hold time), stay up."""
    topo = lab.topo
    subnet = far_subnet(topo)
    started = both_flows(lab, 14.0, "switch-restart")
    time.sleep(2.0)
    start = time.monotonic()
    lab.restart_switch(LEAF)
    listening_s = time.monotonic() - start
    replayed_s = listening_s + wait_hops(lab, subnet, 2)
    replayed_s += wait_hops(lab, far_subnet6(topo), 2)  # IPv6 too
    result = finish(
        started, "switch-restart", f"switch restart of {LEAF}",
        switch_listening_after_s=round(listening_s, 3),
        routes_replayed_after_s=round(replayed_s, 3),
    )  # fmt: skip
    assert established(lab, LEAF), lab.bgp.sessions(LEAF)
    # Everything is lost while the switch is away, nothing once it is replayed.
    for r in (result, result["ipv6"]):
        assert r["lost"] <= PPS * (replayed_s + 1.0), r
        assert r["lost_in_last_s"] == 0, r


def test_neighbours_follow_the_kernels_table(lab):
    """SONiC's neighsyncd (`run --neighsync`): a neighbour that leaf1's kernel gets (added
    here with iproute2 on the tap of h1's port, IPv4 and IPv6, as the kernel's own ARP and ND
    would) reaches the switch's neighbour table with its MAC; a new MAC there moves it; deleted
    from the kernel, it goes from the switch, its host route with it (no route uses its next
    hop; control/README.md)."""
    h1 = next(h for h in lab.topo.hosts.values() if h.switch == LEAF)
    v4 = h1.ip.network.network_address + 200
    v6 = model.ipv6_of(ipaddress.IPv4Interface(f"{v4}/{h1.ip.network.prefixlen}")).ip
    ns = f"lab-{LEAF}"
    route = subprocess.run(
        ["ip", "-n", ns, "-j", "route", "get", str(h1.ip.ip)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    dev = json.loads(route)[0]["dev"]

    def neigh(*args: str) -> None:
        subprocess.run(["ip", "-n", ns, "neigh", *args, "dev", dev], check=True)

    def table() -> dict[str, str]:
        have = lab.bgp.neighbors(LEAF)
        return {ip: have[ip] for ip in (str(v4), str(v6)) if ip in have}

    timings = {}
    start = time.monotonic()
    for mac in ("02:00:00:00:77:01", "02:00:00:00:77:02"):
        for ip in (v4, v6):
            neigh("replace", str(ip), "lladdr", mac, "nud", "permanent")
        want = {str(v4): mac, str(v6): mac}
        timings[mac] = until(lambda want=want: table() == want, table, timeout_s=10.0)

    def host_routes() -> list[str]:
        hosts = {ipaddress.ip_network(v4), ipaddress.ip_network(v6)}
        return [str(r.prefix) for r in lab.bgp.route_rows(LEAF) if r.prefix in hosts]

    assert len(host_routes()) == 2
    for ip in (v4, v6):
        neigh("del", str(ip))
    timings["deleted"] = until(lambda: table() == {}, table, timeout_s=10.0)
    timings["host routes gone"] = until(lambda: host_routes() == [], host_routes, timeout_s=10.0)
    print(f"kernel neighbours on {LEAF} ({dev}): {timings} ({time.monotonic() - start:.2f} s)")
