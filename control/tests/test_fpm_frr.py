"""FRR's zebra over FPM into `lossless-ctl run --fpm`, programming a real p4-switch.

zebra (with `dplane_fpm_nl`) and staticd from Debian's frr package run in a network namespace
this test creates, with one veth per routed port of the config (Ethernet0..12, the config's
addresses); the FPM socket is opened in that namespace, so zebra reaches it on its loopback.
The reference is what the test asks FRR for (prefixes and next-hop sets): the switch's tables,
read back over P4Runtime, must hold exactly those routes through one shared ECMP group, follow
a next hop's link going down and up, and hold none of them once FRR withdraws them.

Needs root (namespaces), `make build` and the frr package (`make deps`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyroute2.netns import create_socket

from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.show import action_profiles, neighbors
from lossless_ctl.show import routes as show_routes
from lossless_kit.frr import (
    GATEWAYS,
    V6_GATEWAYS,
    Frr,
    fpm_controller,
    missing,
    ns_exec,
    routed_namespace,
    static_routes,
)
from lossless_kit.switch import SwitchProcess, free_port
from lossless_paths import BIN, P4SRC, PTF_CONFIG_DB

CONFIG = PTF_CONFIG_DB
ING = "LosslessIngress."
ROUTES = 200
PREFIXES = [ipaddress.ip_network(f"40.{i // 256}.{i % 256}.0/24") for i in range(ROUTES)]
V6_PREFIXES = [ipaddress.ip_network(f"2001:db8:40:{i:x}::/64") for i in range(20)]
WAIT_S = 60.0
IPV6_ROUTES_SMALL = 64


@pytest.fixture
def netns():
    """A namespace with a veth per routed port of the config (lossless_kit.frr)."""
    assert not missing(), f"{missing()} missing: install frr (`make deps`)"
    with routed_namespace(f"llfpm-{os.getpid()}") as name:
        yield name


class SwitchState:
    """The switch's FPM routes and ECMP groups, read over P4Runtime and resolved to next-hop
    IP addresses."""

    def __init__(self, client: P4RuntimeClient):
        self.client = client
        self.index = P4InfoIndex(client.p4info())

    def _table(self, name: str):
        return self.client.read_table(self.index.table(ING + name).preamble.id)

    def read(self) -> tuple[dict, dict]:
        """({prefix: (action, id, frozenset of next-hop IPs)} of the FPM routes, {group id:
        next-hop IPs}). Routes are read first: the controller writes what a route uses before
        the route, so a next-hop set of None (something missing) is a fault only if it stays."""
        routes = {}
        for version, table in ((4, "ipv4_route"), (6, "ipv6_route")):
            for e in self._table(table):
                if not e.metadata.startswith(b"fpm:"):
                    continue
                lpm = e.match[0].lpm
                value = int.from_bytes(lpm.value, "big")
                address = (
                    ipaddress.IPv4Address(value) if version == 4 else ipaddress.IPv6Address(value)
                )
                prefix = ipaddress.ip_network((address, lpm.prefix_len))
                action = self.index.name_of(e.action.action.action_id).rsplit(".", 1)[-1]
                routes[prefix] = (action, int.from_bytes(e.action.action.params[0].value, "big"))
        ecmp = {
            int.from_bytes(e.match[0].exact.value, "big"): e.action.action_profile_group_id
            for e in self._table("ecmp_group")
        }
        params = {p.name: p.id for p in self.index.action(ING + "set_ip_nexthop").params}
        nexthops = {}
        for e in self._table("nexthop"):
            nid = int.from_bytes(e.match[0].exact.value, "big")
            ip = next(
                p.value for p in e.action.action.params if p.param_id == params["neighbor_ip"]
            )
            nexthops[nid] = int.from_bytes(ip, "big")
        members, groups = action_profiles(self.client)
        groups = {
            gid: frozenset(nexthops.get(members.get(m)) for m in ms) for gid, ms in groups.items()
        }
        out = {}
        for prefix, (action, value) in routes.items():
            if action == "set_ecmp_group_id":
                hops = groups.get(ecmp.get(value))
            else:
                hops = frozenset([nexthops.get(value)])
            out[prefix] = (action, value, None if hops is None or None in hops else hops)
        return out, groups


def _ips(addresses) -> frozenset:
    return frozenset(int(ipaddress.ip_address(a)) for a in addresses)


def _wait_for(state: SwitchState, check, what: str, wait_s: float = WAIT_S):
    deadline = time.monotonic() + wait_s
    while True:
        routes, groups = state.read()
        problem = check(routes, groups)
        if problem is None:
            return routes, groups
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: after {wait_s} s: {problem}")
        time.sleep(0.25)


def _expect(wanted: dict, groups_in_all: int | None = None):
    """A check: the FPM routes are exactly `wanted` ({prefix: next-hop IPs}), the routes with
    the same next-hop set share one group, and the switch has `groups_in_all` ECMP groups (the
    config's included) when given."""

    def check(routes, groups):
        got = {p: hops for p, (_, _, hops) in routes.items()}
        dangling = [p for p, hops in got.items() if hops is None]
        if dangling:
            return f"{len(dangling)} routes to a missing group, member or next hop: {dangling[:3]}"
        if got != wanted:
            missing = len(set(wanted) - set(got))
            extra = len(set(got) - set(wanted))
            wrong = sum(1 for p in set(got) & set(wanted) if got[p] != wanted[p])
            return f"{missing} missing, {extra} extra, {wrong} with other next hops"
        by_set: dict = {}
        for _, (action, value, hops) in routes.items():
            if action == "set_ecmp_group_id":
                by_set.setdefault(hops, set()).add(value)
        shared = {hops: ids for hops, ids in by_set.items() if len(ids) != 1}
        if shared:
            return f"next-hop sets in several groups: {shared}"
        if groups_in_all is not None and len(groups) != groups_in_all:
            return f"{len(groups)} ECMP groups, not {groups_in_all}"
        return None

    return check


# --- netlink, built field by field from rtnetlink(7), for the malformed-input part ---------


def _rtattr(kind: int, value: bytes) -> bytes:
    data = struct.pack("=HH", 4 + len(value), kind) + value
    return data + bytes(-len(data) % 4)


def _route_msg(
    msg_type: int,
    prefix: str | None,
    plen: int,
    gateway: str | None,
    family: int | None = None,
    nexthop_object: int | None = None,
    multipath: list[str] | None = None,
    via: str | None = None,
    rtype: int = 1,
    table: int = 254,
    proto: int = 196,
) -> bytes:
    """RTM_NEWROUTE (24) or RTM_DELROUTE (25) (RTA_DST 1, RTA_TABLE 15, RTA_GATEWAY 5,
    RTA_MULTIPATH 9: an rtnexthop per next hop with its RTA_GATEWAY, RTA_VIA 18: family then
    address, RTA_NH_ID 30); `family` overrides the rtmsg's address family field; no RTA_DST
    when `prefix` is None (a default route)."""
    af = socket.AF_INET6 if ":" in (prefix or gateway or "") else socket.AF_INET
    attrs = _rtattr(1, socket.inet_pton(af, prefix)) if prefix is not None else b""
    attrs += _rtattr(15, struct.pack("=I", table))
    if gateway is not None:
        attrs += _rtattr(5, socket.inet_pton(af, gateway))
    if via is not None:
        via_af = socket.AF_INET6 if ":" in via else socket.AF_INET
        attrs += _rtattr(18, struct.pack("=H", via_af) + socket.inet_pton(via_af, via))
    if multipath is not None:
        hops = b""
        for hop in multipath:
            gw = _rtattr(5, socket.inet_pton(af, hop))
            hops += struct.pack("=HBBi", 8 + len(gw), 0, 0, 2) + gw  # rtnexthop
        attrs += _rtattr(9, hops)
    if nexthop_object is not None:
        attrs += _rtattr(30, struct.pack("=I", nexthop_object))
    # rtmsg: family, dst_len, src_len, tos, table, protocol (196 = zebra's static), scope,
    # type (1 = unicast, 6 = blackhole), flags.
    header_table = table if table < 256 else 252  # RT_TABLE_COMPAT: see RTA_TABLE
    body = struct.pack("=BBBBBBBBI", family or af, plen, 0, 0, header_table, proto, 0, rtype, 0)
    body += attrs
    return struct.pack("=IHHII", 16 + len(body), msg_type, 0x501, 0, 0) + body


def _fpm(payload: bytes, version: int = 1, kind: int = 1) -> bytes:
    return struct.pack("!BBH", version, kind, 4 + len(payload)) + payload


def _connect(ns: str, port: int) -> socket.socket:
    """A connection to the FPM listener, as zebra's: the controller takes one at a time, and a
    new one starts a restart (routes not sent again are removed after --fpm-restart s)."""
    sock = create_socket(ns, socket.AF_INET, socket.SOCK_STREAM, flags=0)
    sock.connect(("127.0.0.1", port))
    return sock


def _send_frames(ns: str, port: int, frames: list[bytes]) -> None:
    with _connect(ns, port) as sock:
        sock.sendall(b"".join(frames))


def _portless_switch(workdir: Path) -> SwitchProcess:
    """A started p4-switch without ports, on free gRPC and stats ports (the default stats
    port, 9090, may be another test's)."""
    assert (BIN / "p4-switch").is_file(), "build/bin/p4-switch missing: run `make build`"
    switch = SwitchProcess(
        BIN / "p4-switch",
        device_id=1,
        grpc_addr=f"127.0.0.1:{free_port()}",
        stats_addr="127.0.0.1:0",
        log_path=workdir / "p4-switch.log",
    )
    switch.start()
    switch.wait_ready()
    return switch


@contextlib.contextmanager
def _controller(netns: str, pipeline: Path, workdir: Path, bulk: str, switch=None, extra=()):
    """p4-switch (a portless one unless `switch`, a started SwitchLab, is given), and
    `lossless-ctl run --fpm` on it with its FPM socket in `netns` (and `extra` options)."""
    portless = switch is None
    if portless:
        switch = _portless_switch(workdir)
    address = switch.grpc_addr
    log = workdir / "lossless-ctl.log"
    options = ("--route-bulk", bulk, "--fpm-restart", "1", *extra)
    try:
        with fpm_controller(address, pipeline, log, *options, netns=netns) as (_, fpm_port):
            with P4RuntimeClient(address) as client:
                client.connect()
                yield address, fpm_port, SwitchState(client), log
    finally:
        if portless:
            switch.stop()


@pytest.fixture
def controller(netns, compiled_pipeline, tmp_path):
    with _controller(netns, compiled_pipeline, tmp_path, "64/0.2") as running:
        yield running


@pytest.fixture
def small_ipv6_controller(netns, tmp_path):
    """The controller on a pipeline whose ipv6_route holds IPV6_ROUTES_SMALL entries (p4src/
    with that one define changed, compiled by the p4c-bm2-ss drop-in)."""
    src = tmp_path / "p4src"
    shutil.copytree(P4SRC, src)
    headers = src / "headers.p4"
    text = headers.read_text()
    assert "#define IPV6_ROUTES 81920" in text
    headers.write_text(text.replace("IPV6_ROUTES 81920", f"IPV6_ROUTES {IPV6_ROUTES_SMALL}"))
    out = tmp_path / "p4-small"
    out.mkdir()
    compiler = BIN / "p4c-bm2-ss"
    info = out / "lossless.p4info.txtpb"
    proc = subprocess.run(
        [compiler, "-o", out / "lossless.json", "--p4runtime-files", info, src / "lossless.p4"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with _controller(netns, out, tmp_path, "16/0.1") as running:
        yield running


def test_bad_fpm_input_is_counted_and_the_listener_keeps_serving(controller, netns):
    _, fpm_port, state, log = controller
    good = _route_msg(24, "60.0.0.0", 24, "10.1.0.2")
    frames = [
        _fpm(good, version=2),  # unknown FPM version
        _fpm(b"\x00" * 7),  # netlink shorter than its header
        _fpm(_route_msg(24, "61.0.0.0", 24, "10.1.0.2")[:30]),  # truncated message
        _fpm(_route_msg(24, "62.0.0.0", 24, "99.9.9.9")),  # next hop on no interface
        _fpm(_route_msg(24, "63.0.0.0", 24, "10.1.0.2", family=28)),  # AF_MPLS
        _fpm(_route_msg(24, "64.0.0.0", 24, None, nexthop_object=7)),  # zebra's NHG mode
        _fpm(good),
    ]
    _send_frames(netns, fpm_port, frames)
    want = {ipaddress.ip_network("60.0.0.0/24"): _ips(["10.1.0.2"])}
    _wait_for(state, _expect(want), "the good route after bad frames")
    _send_frames(netns, fpm_port, [_fpm(_route_msg(25, "60.0.0.0", 24, None))])
    _wait_for(state, _expect({}), "the good route deleted")
    text = log.read_text()
    assert "fpm: malformed: FPM version 2" in text
    assert text.count("fpm: malformed: netlink payload") == 2, text
    assert "next hop 99.9.9.9 is on no router interface" in text
    assert "fpm: unknown address family: route of address family 28" in text
    assert "fpm: next-hop object: 64.0.0.0/24" in text


def test_frr_routes_share_one_group_follow_a_link_flap_and_go(controller, netns):
    switch, fpm_port, state, _ = controller
    frr = Frr(netns, fpm_port)
    try:
        frr.start()
        frr.configure(static_routes(PREFIXES, GATEWAYS) + static_routes(V6_PREFIXES, V6_GATEWAYS))
        everything = {p: _ips(GATEWAYS) for p in PREFIXES}
        everything |= {p: _ips(V6_GATEWAYS) for p in V6_PREFIXES}
        routes, groups = _wait_for(state, _expect(everything), "FRR's routes installed")
        before = len(groups)
        ours = {value for action, value, _ in routes.values() if action == "set_ecmp_group_id"}
        assert len(ours) == 2  # one IPv4 and one IPv6 next-hop set

        out = _show(switch, "ip", "route")
        fpm_lines = [line for line in out.splitlines() if line.split()[2:3] == ["[fpm]"]]
        assert len(fpm_lines) == ROUTES and all(line.startswith("S>*") for line in fpm_lines)
        assert "S>* 20.0.0.0/8 [config_db] via 10.3.0.1, Ethernet8" in out
        out6 = _show(switch, "ipv6", "route")
        fpm6 = [line for line in out6.splitlines() if line.split()[2:3] == ["[fpm]"]]
        assert len(fpm6) == len(V6_PREFIXES)
        assert "S>* 2001:db8:40::/64 [fpm] via fc00:1::2, Ethernet0, ecmp group" in out6
        assert "* via fc00:2::2, Ethernet4" in out6

        # Ethernet12's link goes down: zebra drops 10.4.0.1 from every route.
        ns_exec(netns, "ip", "link", "set", "p3", "down")
        flapped = dict(everything) | {p: _ips(GATEWAYS[:3]) for p in PREFIXES}
        # The 3-member group replaces the 4-member one.
        _wait_for(state, _expect(flapped, before), "next hop 10.4.0.1 withdrawn")
        ns_exec(netns, "ip", "link", "set", "p3", "up")
        _wait_for(state, _expect(everything, before), "next hop 10.4.0.1 restored")

        frr.configure(
            static_routes(PREFIXES, GATEWAYS, no=True)
            + static_routes(V6_PREFIXES, V6_GATEWAYS, no=True)
        )
        # The config's groups stay.
        _wait_for(state, _expect({}, before - 2), "FRR's routes withdrawn")
    finally:
        frr.stop()
        frr.remove()


def _show(switch: str, *what: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "lossless_ctl.cli", "show", *what, "--switch", switch,
         "--config", str(CONFIG)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_route_bulk_setting():
    from lossless_ctl.cli import ROUTE_BULK
    from lossless_ctl.routeorch import SEED002, Bulk, parse_bulk

    assert parse_bulk("seed002") == SEED002 == Bulk(64, 1.0)
    assert parse_bulk("1000/0.05") == Bulk(1000, 0.05)
    assert parse_bulk(ROUTE_BULK) == Bulk(4000, 0.05)
    for bad in ("64", "0/1", "64/0", "x/y"):
        with pytest.raises(ValueError, match="SIZE/SECONDS"):
            parse_bulk(bad)
    assert json.dumps(SEED002.__dict__) == '{"size": 64, "flush_s": 1.0}'


def test_a_full_route_table_is_reported_and_keeps_what_it_holds(small_ipv6_controller, netns):
    """ipv6_route (64 entries here) filled through FPM to 5 entries short of its size; of 8
    more routes 5 fit, 3 are reported and wait, and get in once 3 routes go. Nothing
    installed is lost."""
    _, fpm_port, state, log = small_ipv6_controller
    table = state.index.table(ING + "ipv6_route")
    assert table.size == IPV6_ROUTES_SMALL
    room = table.size - len(state._table("ipv6_route"))
    base = int(ipaddress.IPv6Address("2001:db8:f000::"))
    filler = [ipaddress.IPv6Network((base + (i << 64), 64)) for i in range(room - 5)]
    extra = [ipaddress.IPv6Network((base + (i << 64), 64)) for i in range(room, room + 8)]

    def add(prefixes):
        return [_fpm(_route_msg(24, str(p.network_address), 64, "fc00:1::2")) for p in prefixes]

    def routes_are(want: set):
        def check(routes, _groups):
            return None if set(routes) == want else f"{len(set(routes) ^ want)} routes differ"

        return check

    zebra = _connect(netns, fpm_port)
    zebra.sendall(b"".join(add(filler)))
    _wait_for(state, routes_are(set(filler)), "the filler routes")
    zebra.sendall(b"".join(add(extra)))

    def not_fitting() -> int:
        """Routes the controller reported as not fitting (`... is full (size N): K of ...`)."""
        lines = [line for line in log.read_text().splitlines() if "ipv6_route is full" in line]
        assert all(f"ipv6_route is full (size {table.size}): " in line for line in lines)
        return sum(int(line.split("): ")[1].split()[0]) for line in lines)

    deadline = time.monotonic() + WAIT_S
    while not_fitting() < 3:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    routes, _ = state.read()
    assert not_fitting() == 3
    assert set(filler) <= set(routes)
    assert len(set(extra) & set(routes)) == 5
    assert len(routes) == len(filler) + 5
    deletes = [_fpm(_route_msg(25, str(p.network_address), 64, None)) for p in filler[:3]]
    zebra.sendall(b"".join(deletes))
    _wait_for(state, routes_are(set(filler[3:]) | set(extra)), "waiting routes, once room was made")
    zebra.close()


def test_fpm_frames_split_anywhere_decode_the_same():
    """TCP delivers the stream in any pieces: fed one byte at a time, three frames give their
    three routes; a length below the header's loses the framing and says so."""
    from lossless_ctl.fpm import FpmCounters, FpmError, FpmReader, each_route

    frames = b"".join(_fpm(_route_msg(24, f"70.0.{i}.0", 24, "10.2.0.2")) for i in range(3)) + _fpm(
        _route_msg(24, "2001:db8:70::", 48, "fc00:2::2")
    )
    counters = FpmCounters()
    reader = FpmReader(counters, log=lambda line: pytest.fail(line))
    routes = [r for i in range(len(frames)) for r in each_route(reader.feed(frames[i : i + 1]))]
    want = [ipaddress.ip_network(f"70.0.{i}.0/24") for i in range(3)]
    assert [r.prefix for r in routes] == [*want, ipaddress.ip_network("2001:db8:70::/48")]
    assert routes[0].nexthops == (ipaddress.ip_address("10.2.0.2"),)
    assert routes[0].protocol == "static" and counters["frames"] == 4
    with pytest.raises(FpmError, match="FPM frame length 2 < 4"):
        reader.feed(struct.pack("!BBH", 1, 1, 2))


def test_the_decoder_reads_each_kind_of_route_message_as_rtnetlink_defines_it():
    """Messages built field by field from rtnetlink(7), each decoded alone, then all in one
    frame and in frames of their own; what each must give is written out here by hand."""
    from lossless_ctl.fpm import FpmCounters, FpmReader, each_route

    ip4, ip6 = socket.inet_aton, lambda a: socket.inet_pton(socket.AF_INET6, a)
    cases = [
        # (message, route it gives or None, counter it adds)
        (_route_msg(24, "70.1.0.0", 16, None, multipath=["10.2.0.2", "10.1.0.2", "10.2.0.2"]),
         (ip4("70.1.0.0") + bytes([16]), ip4("10.1.0.2") + ip4("10.2.0.2"), "static"), "routes"),
        (_route_msg(25, "70.1.0.0", 16, None),
         (ip4("70.1.0.0") + bytes([16]), None, "static"), "routes"),
        (_route_msg(24, "70.2.0.0", 24, None, rtype=6, proto=186),
         (ip4("70.2.0.0") + bytes([24]), b"", "bgp"), "routes"),
        (_route_msg(24, None, 0, "10.1.0.2", proto=42),
         (bytes(4) + bytes([0]), ip4("10.1.0.2"), "proto 42"), "routes"),
        (_route_msg(24, "2001:db8:1::", 128, None, via="fc00:1::2"),
         (ip6("2001:db8:1::") + bytes([128]), ip6("fc00:1::2"), "static"), "routes"),
        (_route_msg(24, "fe80::", 64, "fe80::1"), None, "connected or link-local skipped"),
        (_route_msg(24, "10.9.0.0", 24, None), None, "connected or link-local skipped"),
        (_route_msg(24, "70.3.0.1", 24, "10.1.0.2"), None, "malformed"),
        (_route_msg(24, "70.4.0.0", 24, "10.1.0.2", table=1000), None, "other vrf"),
        (_route_msg(24, "70.5.0.0", 24, None, via="fc00:1::2"), None, "malformed"),
        (struct.pack("=IHHII", 16 + 16, 16, 0, 0, 0) + bytes(16), None, "netlink type 16 ignored"),
    ]  # fmt: skip
    logs: list[str] = []
    for message, want, _ in cases:
        routes = each_route(FpmReader(FpmCounters(), logs.append).feed(_fpm(message)))
        assert routes == ([want] if want is not None else [])
    # Together, the first message's route is folded into the second's (its deletion).
    together = [want for _, want, _ in cases if want is not None][1:]
    for stream in (_fpm(b"".join(m for m, _, _ in cases)), b"".join(_fpm(m) for m, _, _ in cases)):
        counters = FpmCounters()
        routes = each_route(FpmReader(counters, logs.append).feed(stream))
        assert routes == together
        want_counts: dict[str, int] = {}
        for _, _, kind in cases:
            want_counts[kind] = want_counts.get(kind, 0) + 1
        assert {k: v for k, v in counters.items() if k != "frames"} == want_counts
    first = each_route(FpmReader(FpmCounters(), logs.append).feed(_fpm(cases[0][0])))
    assert first[0].nexthops == tuple(map(ipaddress.ip_address, GATEWAYS[:2]))
    assert "fpm: malformed: destination 70.3.0.1/24: has host bits set" in logs
    assert "fpm: other vrf: route in table 1000 (only the default VRF is routed)" in logs
    assert "fpm: malformed: next hop fc00:1::2 of another family than the route" in logs


def test_the_decoder_folds_each_prefix_to_its_last_message_and_groups_by_next_hops():
    """What one receive brings comes as one group per (next hops, protocol) with the keys of
    its routes, each prefix once with what its last message said; groups in the order their
    first route (so folded) came."""
    from lossless_ctl.fpm import FpmCounters, FpmReader

    key = [socket.inet_aton(f"70.{i}.0.0") + bytes([24]) for i in range(5)]
    hop = {gw: socket.inet_aton(gw) for gw in ("10.1.0.2", "10.2.0.2")}
    messages = [
        _route_msg(24, "70.0.0.0", 24, "10.1.0.2"),  # moves to 10.2.0.2 below
        _route_msg(24, "70.1.0.0", 24, "10.2.0.2"),  # deleted below
        _route_msg(24, "70.2.0.0", 24, "10.1.0.2"),
        _route_msg(24, "70.0.0.0", 24, "10.2.0.2"),
        _route_msg(25, "70.1.0.0", 24, None),
        _route_msg(24, "70.3.0.0", 24, None, rtype=6),
        _route_msg(24, "70.4.0.0", 24, "10.1.0.2"),
    ]
    counters = FpmCounters()
    groups = FpmReader(counters, lambda line: pytest.fail(line)).feed(
        b"".join(_fpm(m) for m in messages)
    )
    assert groups == [
        ((hop["10.1.0.2"], "static"), [key[2], key[4]]),
        ((hop["10.2.0.2"], "static"), [key[0]]),
        ((None, "static"), [key[1]]),
        ((b"", "static"), [key[3]]),
    ]
    assert counters["routes"] == len(messages)


ROUTER_MAC = bytes.fromhex("020000000001")  # DEVICE_METADATA mac
HOST_MAC = bytes.fromhex("020000000199")  # the next hop the config does not know


def _arp(op: int, sha: bytes, spa: str, tha: bytes, tpa: str, dst: bytes) -> bytes:
    """RFC 826 over Ethernet, padded to 60 bytes."""
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + sha + socket.inet_aton(spa)
    frame = dst + sha + struct.pack("!H", 0x0806) + body + tha + socket.inet_aton(tpa)
    return frame + bytes(60 - len(frame))


def _udp_frame(src_mac: bytes, src: str, dst: str, ttl: int = 64) -> bytes:
    """IPv4 (RFC 791, checksum over the header) and UDP without checksum, padded to 60."""
    udp = struct.pack("!HHHH", 1000, 2000, 8 + 4, 0) + b"fpm!"
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, ttl, 17, 0,
        socket.inet_aton(src), socket.inet_aton(dst),
    )  # fmt: skip
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    frame = ROUTER_MAC + src_mac + struct.pack("!H", 0x0800) + header + udp
    return frame + bytes(60 - len(frame))


def test_a_route_via_a_next_hop_the_config_lacks_resolves_it_and_forwards(
    compiled_pipeline, tmp_path
):
    """An FPM route via 10.1.0.99 (on Ethernet0, not in NEIGH): the controller ARPs for it out
    of port 1, learns the reply, and the switch forwards the route's traffic to that MAC."""
    from lossless_kit.vethlab import SwitchLab

    with SwitchLab(4, tmp_path) as lab:
        ns = lab.veths.namespace
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)  # for FPM
        with _controller(ns, compiled_pipeline, tmp_path, "64/0.1", switch=lab) as running:
            _, fpm_port, state, _ = running
            lab.receive(timeout=0.5)  # whatever start-up sent
            _send_frames(ns, fpm_port, [_fpm(_route_msg(24, "80.0.0.0", 24, "10.1.0.99"))])
            frames = [f for port, f in lab.receive(timeout=5) if port == 1]
            want = _arp(1, ROUTER_MAC, "10.1.0.1", bytes(6), "10.1.0.99", b"\xff" * 6)
            assert want in frames, frames
            lab.send(1, _arp(2, HOST_MAC, "10.1.0.99", ROUTER_MAC, "10.1.0.1", ROUTER_MAC))
            sent = _udp_frame(bytes.fromhex("020000000202"), "10.2.0.2", "80.0.0.5")
            expected = HOST_MAC + ROUTER_MAC + _udp_frame(HOST_MAC, "10.2.0.2", "80.0.0.5", 63)[12:]
            deadline = time.monotonic() + WAIT_S
            while True:  # until the learned neighbour is written
                lab.send(2, sent)
                got = [f for port, f in lab.receive(timeout=0.5) if port == 1]
                if expected in got:
                    break
                assert time.monotonic() < deadline, got


def test_a_reconnected_zebra_keeps_its_routes_until_it_has_resent_them(controller, netns):
    """Graceful restart as the controller does it: after zebra's connection drops its routes
    stay; a new connection that sends one of two again keeps that one, and the other goes once
    zebra has been quiet for --fpm-restart seconds (the fixture's 1)."""
    _, fpm_port, state, log = controller
    a, b = ipaddress.ip_network("90.1.0.0/24"), ipaddress.ip_network("90.2.0.0/24")
    both = {a: _ips(["10.1.0.2"]), b: _ips(["10.1.0.2"])}
    with _connect(netns, fpm_port) as first:
        first.sendall(b"".join(_fpm(_route_msg(24, str(p.network_address), 24, "10.1.0.2"))
                               for p in (a, b)))  # fmt: skip
        _wait_for(state, _expect(both), "the first connection's routes")
    time.sleep(1.5)  # past --fpm-restart: nothing is removed while zebra is away
    assert state.read()[0].keys() == both.keys()
    with _connect(netns, fpm_port) as second:
        second.sendall(_fpm(_route_msg(24, str(a.network_address), 24, "10.1.0.2")))
        _wait_for(state, _expect({a: both[a]}), "the route zebra did not resend removed")
    assert "1 routes zebra did not send again after it reconnected (1 s quiet)" in log.read_text()


def test_pre_encoded_route_updates_parse_to_the_entries_the_p4info_defines(compiled_pipeline):
    """RouteEntries.route() assembles its bytes by hand around a protobuf-made template; the
    protobuf library parsing them back is the reference: table and match field ids from the
    P4Info, the address as P4Runtime's canonical binary string (no leading zero bytes), the
    prefix length (two varint bytes at 128), the action and its parameter, metadata, type."""
    from lossless_ctl.config_db import route_key
    from lossless_ctl.loader import read_pipeline
    from lossless_ctl.p4map import RouteEntries

    index = P4InfoIndex(read_pipeline(compiled_pipeline).p4info)
    entries = RouteEntries(index)
    pb = entries.pb
    cases = [
        ("40.1.2.0/24", ("group", 7), "fpm:bgp", pb.Update.INSERT, b"\x28\x01\x02\x00"),
        ("0.0.1.0/24", ("nexthop", 300), "fpm:static", pb.Update.MODIFY, b"\x01\x00"),
        ("10.0.0.1/32", ("drop", 0), "", pb.Update.DELETE, b"\x0a\x00\x00\x01"),
        ("0.0.0.0/0", ("nexthop", 1), "fpm:static", pb.Update.INSERT, None),
        ("2001:db8::1/128", ("group", 2), "fpm:sharp", pb.Update.INSERT,
         bytes.fromhex("20010db8000000000000000000000001")),
        ("::100:0/120", ("nexthop", 5), "fpm:bgp", pb.Update.INSERT, b"\x01\x00\x00\x00"),
    ]  # fmt: skip
    actions = {"group": ("set_ecmp_group_id", "ecmp_group_id"), "nexthop": ("set_nexthop_id",
               "nexthop_id"), "drop": ("drop_route", None)}  # fmt: skip
    for text, target, source, kind, value in cases:
        prefix = ipaddress.ip_network(text)
        update = pb.Update.FromString(entries.route(route_key(prefix), target, source, kind))
        table = index.table(ING + f"ipv{prefix.version}_route")
        entry = update.entity.table_entry
        assert update.type == kind and entry.table_id == table.preamble.id
        assert entry.metadata == source.encode()
        if value is None:
            assert list(entry.match) == []  # a zero-length prefix: no match field
        else:
            (match,) = entry.match
            dst = next(m for m in table.match_fields if m.name == "dst")
            assert (match.field_id, match.lpm.value) == (dst.id, value)
            assert match.lpm.prefix_len == prefix.prefixlen
        action_name, param = actions[target[0]]
        action = index.action(ING + action_name)
        assert entry.action.action.action_id == action.preamble.id
        params = [(p.param_id, int.from_bytes(p.value, "big")) for p in entry.action.action.params]
        assert params == ([(action.params[0].id, target[1])] if param else [])


def test_a_restarted_controller_takes_over_its_routes_and_writes_nothing(
    netns, compiled_pipeline, tmp_path
):
    """Seed 002's controller restart, diff-only: a second `run` on the switch the first one
    programmed takes over the FPM routes it finds there, so its reconcile writes nothing and
    the routes never leave the switch; zebra's same routes on the new connection are not
    written again."""
    switch = _portless_switch(tmp_path)
    prefixes = [ipaddress.ip_network(f"90.{i}.0.0/24") for i in (1, 2)]
    wanted = {p: _ips(["10.1.0.2"]) for p in prefixes}
    frames = [_fpm(_route_msg(24, str(p.network_address), 24, "10.1.0.2")) for p in prefixes]
    options = ("--route-bulk", "64/0.2", "--fpm-restart", "1")
    try:
        first_log = tmp_path / "first.log"
        with fpm_controller(switch.grpc_addr, compiled_pipeline, first_log, *options,
                            netns=netns) as (_, port):  # fmt: skip
            with P4RuntimeClient(switch.grpc_addr) as client:
                client.connect()
                _send_frames(netns, port, frames)
                before, _ = _wait_for(SwitchState(client), _expect(wanted), "the first's routes")
        log = tmp_path / "second.log"
        with fpm_controller(switch.grpc_addr, compiled_pipeline, log, *options,
                            netns=netns) as (_, port):  # fmt: skip
            text = log.read_text()
            assert "routeorch: took over 2 FPM routes, 0 ECMP groups" in text, text
            assert "written 0 of 0 updates" in text, text
            with P4RuntimeClient(switch.grpc_addr) as client:
                client.connect()
                state = SwitchState(client)
                assert state.read()[0] == before
                _send_frames(netns, port, frames)
                time.sleep(1.5)  # past a flush and --fpm-restart: nothing written or removed
                assert state.read()[0] == before
            assert "written since the last report" not in log.read_text(), log.read_text()
        # zebra first: a third controller's listener gets zebra's routes while its session
        # waits for the (paused) switch; it still takes the switch's over and writes nothing.
        log, port = tmp_path / "third.log", free_port()
        command = [
            sys.executable, "-m", "lossless_ctl.cli", "run", "--config", str(CONFIG),
            "--switch", switch.grpc_addr, "--pipeline", str(compiled_pipeline),
            "--fpm", f"127.0.0.1:{port}", "--fpm-netns", netns, *options,
        ]  # fmt: skip
        os.kill(switch.pid, signal.SIGSTOP)
        try:
            with log.open("wb") as out:
                third = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
            _wait_until(lambda: "fpm: listening" in log.read_text(), True, "the listener")
            _send_frames(netns, port, frames)
            _wait_until(lambda: "fpm: connection closed" in log.read_text(), True, "zebra")
        finally:
            os.kill(switch.pid, signal.SIGCONT)
        try:
            _wait_until(lambda: "run: ready" in log.read_text(), True, "the third's session")
            time.sleep(1.5)  # past a flush and --fpm-restart
            text = log.read_text()
            assert "routeorch: took over 2 FPM routes, 0 ECMP groups" in text, text
            assert "written 0 of 0 updates" in text, text
            assert "written since the last report" not in text, text
            with P4RuntimeClient(switch.grpc_addr) as client:
                client.connect()
                assert SwitchState(client).read()[0] == before
        finally:
            third.terminate()
            third.wait(timeout=10)
    finally:
        switch.stop()


def _neighbour_view(state: SwitchState, ip: str) -> tuple[bool | str, bool, bool]:
    """Whether the switch has the neighbour entry ("pending" when it is marked pending
    removal, as `show arp` reads it), a next hop and the host route of `ip`."""
    client, index = state.client, state.index
    address = ipaddress.ip_address(ip)
    rows = [row for row in neighbors(client, index, {}) if row.address == address]
    have_neighbour = ("pending" if rows[0].pending else True) if rows else False
    params = {p.name: p.id for p in index.action(ING + "set_ip_nexthop").params}
    hops = {
        int.from_bytes(p.value, "big")
        for e in client.read_table(index.table(ING + "nexthop").preamble.id)
        for p in e.action.action.params
        if p.param_id == params["neighbor_ip"]
    }
    host = ipaddress.ip_network(address)
    routes = show_routes(client, index, address.version, {})
    have_route = any(r.prefix == host and r.source != "fpm" for r in routes)
    return have_neighbour, int(address) in hops, have_route


@pytest.fixture
def hostif_ns():
    """A namespace for `run --hostif NS` (its taps and kernel neighbour table) and FPM."""
    ns = f"llneigh-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        ns_exec(ns, "ip", "link", "set", "lo", "up")  # for FPM
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@contextlib.contextmanager
def _neighsync_controller(ns: str, switch: SwitchProcess, pipeline: Path, log: Path):
    """`run --hostif NS --neighsync` on `switch`, with its FPM socket in NS: (the process, its
    FPM port, the switch's state)."""
    options = ("--route-bulk", "64/0.1", "--fpm-restart", "1", "--hostif", ns, "--neighsync")
    with fpm_controller(switch.grpc_addr, pipeline, log, *options, netns=ns) as (proc, port):
        with P4RuntimeClient(switch.grpc_addr) as client:
            client.connect()
            yield proc, port, SwitchState(client)


def _kernel_neighbour(ns: str, ip: str, mac: str) -> None:
    ns_exec(ns, *f"ip neigh replace {ip} lladdr {mac} nud permanent dev Ethernet0".split())


def test_a_neighbour_the_kernel_deletes_keeps_its_next_hop_only_while_routes_use_it(
    hostif_ns, compiled_pipeline, tmp_path
):
    """neighsync (`run --hostif NS --neighsync`): two neighbours in the kernel's table of the
    host interfaces' namespace are learned (neighbour entry, next hop, host route). FPM routes
    use one of them, through an ECMP group with 10.2.0.2 and alone. When the kernel deletes
    both, the unused one's three entries go; the used one keeps all three, its neighbour
    entry marked pending removal (as SONiC's neighorch keeps a referenced neighbour), and
    the group keeps both members; once the routes are withdrawn, its neighbour entry, next
    hop and host route go together."""
    ns = hostif_ns
    unused, used = "10.1.0.50", "10.1.0.51"
    ecmp, single = ipaddress.ip_network("80.0.0.0/24"), ipaddress.ip_network("81.0.0.0/24")
    extra = ("--hostif", ns, "--neighsync")
    with _controller(ns, compiled_pipeline, tmp_path, "64/0.1", extra=extra) as running:
        _, fpm_port, state, log = running
        for ip, mac in ((unused, "02:00:00:00:00:50"), (used, "02:00:00:00:00:51")):
            _kernel_neighbour(ns, ip, mac)
        learned = (True, True, True)
        _wait_until(
            lambda: [_neighbour_view(state, ip) for ip in (unused, used)],
            [learned, learned],
            "both neighbours learned from the kernel",
        )
        frames = [
            _fpm(_route_msg(24, "80.0.0.0", 24, None, multipath=[used, "10.2.0.2"])),
            _fpm(_route_msg(24, "81.0.0.0", 24, used)),
        ]
        _send_frames(ns, fpm_port, frames)
        both = {ecmp: _ips([used, "10.2.0.2"]), single: _ips([used])}
        _, groups = _wait_for(state, _expect(both), "the routes via the used neighbour")
        for ip in (unused, used):
            ns_exec(ns, "ip", "neigh", "del", ip, "dev", "Ethernet0")
        _wait_until(
            lambda: _neighbour_view(state, unused),
            (False, False, False),
            "the unused neighbour's neighbour entry, next hop and host route gone",
        )
        time.sleep(2.5)  # past two of the learner's ticks, which remove unused next hops
        assert _neighbour_view(state, used) == ("pending", True, True)
        # Every member of the group still has its next hop: nothing is half-programmed.
        assert state.read()[1] == groups
        _wait_for(state, _expect(both), "the routes untouched")
        _send_frames(
            ns, fpm_port, [_fpm(_route_msg(25, str(p.network_address), 24, None)) for p in both]
        )
        _wait_for(state, _expect({}), "the routes withdrawn")
        _wait_until(
            lambda: _neighbour_view(state, used),
            (False, False, False),
            "the used neighbour's three entries gone with its routes",
        )
        text = log.read_text()
        assert f"neighbour {unused} on Ethernet0 gone from the kernel\n" in text, text
        assert f"neighbour {used} on Ethernet0 gone from the kernel; routes use" in text, text


def _wait_until(read, want, what: str, wait_s: float = WAIT_S):
    deadline = time.monotonic() + wait_s
    while (got := read()) != want:
        assert time.monotonic() < deadline, f"{what}: after {wait_s} s: {got}"
        time.sleep(0.25)


def test_a_restarted_controller_takes_over_a_neighbour_pending_removal_as_pending(
    hostif_ns, compiled_pipeline, tmp_path
):
    """A neighbour the kernel deleted while an FPM route used its next hop is pending removal
    when its controller stops. The next controller takes it over as pending, not as learned
    (`show arp` still marks it): it stays while zebra's route (sent again) uses it, and its
    neighbour entry, next hop and host route go once the route is withdrawn."""
    ns, used = hostif_ns, "10.1.0.51"
    route = ipaddress.ip_network("81.0.0.0/24")
    frames = [_fpm(_route_msg(24, "81.0.0.0", 24, used))]
    switch = _portless_switch(tmp_path)
    try:
        first = tmp_path / "first.log"
        with _neighsync_controller(ns, switch, compiled_pipeline, first) as (_, port, state):
            _kernel_neighbour(ns, used, "02:00:00:00:00:51")
            _wait_until(lambda: _neighbour_view(state, used), (True, True, True), "learned")
            _send_frames(ns, port, frames)
            _wait_for(state, _expect({route: _ips([used])}), "the route via the neighbour")
            ns_exec(ns, "ip", "neigh", "del", used, "dev", "Ethernet0")
            _wait_until(
                lambda: _neighbour_view(state, used), ("pending", True, True), "pending removal"
            )
        log = tmp_path / "second.log"
        with _neighsync_controller(ns, switch, compiled_pipeline, log) as (_, port, state):
            _send_frames(ns, port, frames)  # zebra again, on a new connection: the route stays
            time.sleep(2.5)  # past --fpm-restart and two of the learner's ticks
            assert _neighbour_view(state, used) == ("pending", True, True)
            _wait_for(state, _expect({route: _ips([used])}), "the route kept")
            _send_frames(ns, port, [_fpm(_route_msg(25, "81.0.0.0", 24, None))])
            _wait_for(state, _expect({}), "the route withdrawn")
            _wait_until(
                lambda: _neighbour_view(state, used),
                (False, False, False),
                "the neighbour's three entries gone with the route",
                wait_s=10.0,
            )
            text = log.read_text()
            assert "run: took over 0 learned neighbours, 1 pending removal" in text, text
    finally:
        switch.stop()


def test_clear_removes_unused_neighbours_and_keeps_used_ones_pending_removal(
    hostif_ns, compiled_pipeline, tmp_path
):
    """`sonic-clear arp` (SIGUSR1 to `run`) flushes the neighbours as SONiC's kernel flush and
    neighorch do: one no route uses goes with its next hop and host route; one an ECMP
    group's route uses stays, pending removal (neighorch refuses to remove a referenced
    neighbour), and so does one the kernel had deleted before, pending already; the group
    stays whole. Once the route is withdrawn, both pending neighbours' entries go."""
    ns = hostif_ns
    unused, used, deleted = "10.1.0.50", "10.1.0.51", "10.1.0.52"
    ecmp = ipaddress.ip_network("80.0.0.0/24")
    switch = _portless_switch(tmp_path)
    log = tmp_path / "ctl.log"
    try:
        with _neighsync_controller(ns, switch, compiled_pipeline, log) as (proc, port, state):
            everyone = (unused, used, deleted)
            for i, ip in enumerate(everyone):
                _kernel_neighbour(ns, ip, f"02:00:00:00:00:5{i}")
            _wait_until(
                lambda: [_neighbour_view(state, ip) for ip in everyone],
                [(True, True, True)] * 3,
                "three neighbours learned from the kernel",
            )
            multipath = [used, deleted]
            _send_frames(
                ns, port, [_fpm(_route_msg(24, "80.0.0.0", 24, None, multipath=multipath))]
            )
            _, groups = _wait_for(state, _expect({ecmp: _ips(multipath)}), "the group's route")
            ns_exec(ns, "ip", "neigh", "del", deleted, "dev", "Ethernet0")
            _wait_until(
                lambda: _neighbour_view(state, deleted), ("pending", True, True), "pending removal"
            )
            proc.send_signal(signal.SIGUSR1)
            _wait_until(lambda: "neighbours cleared" in log.read_text(), True, "the clear")
            assert [_neighbour_view(state, ip) for ip in everyone] == [
                (False, False, False),
                ("pending", True, True),
                ("pending", True, True),
            ]
            assert state.read()[1] == groups
            _wait_for(state, _expect({ecmp: _ips(multipath)}), "the route untouched")
            assert "neighbours cleared: 2 (1 kept pending removal" in log.read_text()
            _send_frames(ns, port, [_fpm(_route_msg(25, "80.0.0.0", 24, None))])
            _wait_for(state, _expect({}), "the route withdrawn")
            _wait_until(
                lambda: [_neighbour_view(state, ip) for ip in (used, deleted)],
                [(False, False, False)] * 2,
                "the pending neighbours' entries gone with the route",
                wait_s=10.0,
            )
    finally:
        switch.stop()
