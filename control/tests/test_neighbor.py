"""Neighbour learning from punted ARP and ND (pure, with bytes), and against the fake switch."""

import ipaddress
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lossless_ctl import config_db
from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.loader import load, plan, read_pipeline
from lossless_ctl.neighbor import (
    ND_NA,
    ND_NS,
    NeighborLearner,
    arp_frame,
    icmpv6_checksum,
    mac_bytes,
    mac_str,
    nd_frame,
    parse,
    serve,
    solicited_node,
)
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.p4rt_proto import bindings
from lossless_ctl.show import PENDING_REMOVAL, NeighborRow, render_neighbors
from lossless_paths import CONTROL

DATA = Path(__file__).parent / "data"
ING = "LosslessIngress."
ROUTER_MAC = mac_bytes("00:11:22:33:44:55")
HOST_MAC = mac_bytes("02:00:00:00:00:0a")
V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address


def tables():
    """mini.json plus a LAN on Ethernet4 (port 2) and a route via an unresolved next hop."""
    t = config_db.load_files([DATA / "mini.json"])
    t["INTERFACE"].update({"Ethernet4": {}, "Ethernet4|192.168.1.1/24": {}})
    t["INTERFACE"]["Ethernet4|fc00:1::1/64"] = {}
    t["STATIC_ROUTE"]["10.9.0.0/16"] = {"nexthop": "192.168.1.50"}
    return t


@pytest.fixture
def setup(pipeline_dir):
    pipeline = read_pipeline(pipeline_dir)
    cfg = config_db.parse_checked(tables())
    _, program = plan(cfg, pipeline.p4info)
    index = P4InfoIndex(pipeline.p4info)
    return cfg, program, index, pipeline


def port_meta(index, port):
    fields = index.packet_metadata("packet_in")
    return [(fields["ingress_port"].id, port.to_bytes(2, "big"))]


def summary(index, updates):
    """(type, table, match ints, param ints) per update."""
    pb = bindings().p4runtime_pb2
    out = []
    for u in updates:
        e = u.entity.table_entry
        match = tuple(int.from_bytes(m.exact.value or m.lpm.value, "big") for m in e.match)
        params = tuple(int.from_bytes(p.value, "big") for p in e.action.action.params)
        name = index.name_of(e.table_id).removeprefix(ING)
        out.append((pb.Update.Type.Name(u.type), name, match, params))
    return out


def arp_request(sender, target, mac=HOST_MAC):
    return arp_frame(1, mac, V4(sender), bytes(6), V4(target), b"\xff" * 6)


def test_arp_request_for_the_router_is_answered_and_its_sender_learned(setup):
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    out = learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0.0)
    ((port, reply),) = out.packets
    assert port == 2 and len(reply) == 60
    assert reply[:12] == HOST_MAC + ROUTER_MAC
    p = parse(reply)
    assert (p.kind, p.sender_ip, p.sender_mac, p.target_ip) == (
        "arp-reply",
        V4("192.168.1.1"),
        ROUTER_MAC,
        V4("192.168.1.10"),
    )
    # RIFs: Ethernet0 = 1, Ethernet4 = 2. Next hops: mini.json's neighbour 1, the static
    # route's 192.168.1.50 2, so the learned host gets 3.
    host = int(V4("192.168.1.10"))
    assert summary(index, out.updates) == [
        ("INSERT", "neighbor", (2, host), (0x02000000000A,)),
        ("INSERT", "nexthop", (3,), (2, host)),
        ("INSERT", "ipv4_route", (host,), (3,)),
    ]
    assert out.log == ["neighbour 192.168.1.10 on Ethernet4 learned at 02:00:00:00:00:0a"]
    again = learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 1)
    assert again.updates == [] and len(again.packets) == 1
    moved = learner.packet_in(
        arp_request("192.168.1.10", "192.168.1.1", mac_bytes("02:00:00:00:00:0b")),
        port_meta(index, 2),
        2.0,
    )
    assert summary(index, moved.updates) == [("MODIFY", "neighbor", (2, host), (0x02000000000B,))]


@pytest.mark.parametrize(
    ("frame", "port"),
    [
        (arp_request("192.168.1.10", "192.168.1.99"), 2),  # not for us: no reply, no learning
        (arp_request("172.16.0.1", "192.168.1.1"), 2),  # sender off-link: reply only
        (arp_frame(2, mac_bytes("02:00:00:00:00:99"), V4("10.0.0.1"), ROUTER_MAC,
                   V4("10.0.0.0"), ROUTER_MAC), 1),  # static neighbour (NEIGH): not learned
        (arp_request("192.168.1.10", "192.168.1.1"), 7),  # port without a router interface
    ],
)  # fmt: skip
def test_what_is_not_learned(setup, frame, port):
    cfg, program, index, _ = setup
    out = NeighborLearner(cfg, program, index).packet_in(frame, port_meta(index, port), 0.0)
    assert out.updates == []
    expect_reply = port == 2 and parse(frame).target_ip == V4("192.168.1.1")
    assert len(out.packets) == int(expect_reply)


def test_ns_for_the_router_gets_a_na_and_learns_the_host(setup):
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index)
    group, group_mac = solicited_node(V6("fc00:1::1"))
    assert (str(group), group_mac.hex()) == ("ff02::1:ff00:1", "3333ff000001")  # RFC 4291
    ns = nd_frame(ND_NS, HOST_MAC, group_mac, V6("fc00:1::10"), group, V6("fc00:1::1"))
    out = learner.packet_in(ns, port_meta(index, 2), 0.0)
    ((port, na),) = out.packets
    p = parse(na)
    assert (p.kind, p.target_ip, p.sender_mac, p.ip_src) == (
        "na",
        V6("fc00:1::1"),
        ROUTER_MAC,
        V6("fc00:1::1"),
    )
    assert na[:6] == HOST_MAC and na[14 + 24 : 14 + 40] == V6("fc00:1::10").packed
    assert na[14 + 7] == 255  # hop limit 255, as ND requires (RFC 4861 7.1.2)
    assert na[14 + 44] == 0x80 | 0x40 | 0x20  # router, solicited, override
    # A correct ICMPv6 checksum sums, with the pseudo-header, to zero.
    message = na[14 + 40 : 14 + 40 + 32]
    assert icmpv6_checksum(na[14 + 8 : 14 + 24], na[14 + 24 : 14 + 40], message) == 0
    host = int(V6("fc00:1::10"))
    assert summary(index, out.updates)[2] == ("INSERT", "ipv6_route", (host,), (3,))


def test_duplicate_address_detection_is_answered_to_all_nodes_and_not_learned(setup):
    cfg, program, index, _ = setup
    group, group_mac = solicited_node(V6("fc00:1::1"))
    ns = nd_frame(ND_NS, HOST_MAC, group_mac, V6("::"), group, V6("fc00:1::1"))
    out = NeighborLearner(cfg, program, index).packet_in(ns, port_meta(index, 2), 0.0)
    assert out.updates == []
    ((_, na),) = out.packets
    assert na[:6] == bytes.fromhex("333300000001") and na[14 + 44] == 0x80 | 0x20


def test_unsolicited_na_is_learned(setup):
    cfg, program, index, _ = setup
    na = nd_frame(ND_NA, HOST_MAC, ROUTER_MAC, V6("fc00:1::20"), V6("fc00:1::1"), V6("fc00:1::20"))
    out = NeighborLearner(cfg, program, index).packet_in(na, port_meta(index, 2), 0.0)
    assert [u[1] for u in summary(index, out.updates)] == ["neighbor", "nexthop", "ipv6_route"]


def test_glean_and_static_next_hops_are_resolved_once_a_second(setup):
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index)
    ((port, request),) = learner.start(0.0).packets
    p = parse(request)
    assert (port, p.kind, p.target_ip, p.sender_ip) == (
        2,
        "arp-request",
        V4("192.168.1.50"),
        V4("192.168.1.1"),
    )
    ip = bytes(14) + struct.pack("!BBHHHBBH", 0x45, 0, 20, 0, 0, 64, 17, 0)
    glean = ROUTER_MAC + HOST_MAC + b"\x08\x00" + ip[14:26] + V4("10.0.0.1").packed
    glean += V4("192.168.1.77").packed
    first = learner.packet_in(glean, port_meta(index, 1), 10.0)
    assert [parse(f).target_ip for _, f in first.packets] == [V4("192.168.1.77")]
    assert learner.packet_in(glean, port_meta(index, 1), 10.5).packets == []
    assert len(learner.packet_in(glean, port_meta(index, 1), 11.0).packets) == 1


def test_learned_neighbours_are_probed_then_aged_out(setup):
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0.0)
    assert learner.tick(29.0).packets == []
    ((port, probe),) = learner.tick(30.0).packets
    assert probe[:6] == HOST_MAC and parse(probe).target_ip == V4("192.168.1.10")
    assert learner.tick(31.0).packets == []  # probed once
    gone = learner.tick(60.0)
    host = int(V4("192.168.1.10"))
    assert summary(index, gone.updates) == [
        ("DELETE", "ipv4_route", (host,), (3,)),
        ("DELETE", "nexthop", (3,), (2, host)),
        ("DELETE", "neighbor", (2, host), (0x02000000000A,)),
    ]
    # Learned again later: the same entries come back.
    back = learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 70)
    assert len(back.updates) == 3


def test_serve_against_the_fake_switch(fake_switch, setup):
    servicer, address = fake_switch
    cfg, program, index, pipeline = setup
    stop = threading.Event()
    lines: list[str] = []
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        load(client, pipeline, program)
        learner = NeighborLearner(cfg, program, index)
        thread = threading.Thread(
            target=serve, args=(client, learner, stop), kwargs={"tick_s": 0.05, "log": lines.append}
        )
        thread.start()
        try:
            servicer.send_packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2))
            deadline = time.monotonic() + 10
            while len(servicer.packet_outs) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join(timeout=10)
    # The start-up ARP for the static route's next hop, then the reply; both out of port 2.
    out_fields = index.packet_metadata("packet_out")
    kinds = [parse(p.payload).kind for p in servicer.packet_outs]
    assert kinds == ["arp-request", "arp-reply"]
    ports = {
        int.from_bytes(m.value, "big")
        for p in servicer.packet_outs
        for m in p.metadata
        if m.metadata_id == out_fields["egress_port"].id
    }
    assert ports == {2}
    neighbor = index.table(ING + "neighbor").preamble.id
    learned = [
        e for e in servicer.entities.values()
        if e.table_entry.table_id == neighbor
        and e.table_entry.match[1].exact.value == V4("192.168.1.10").packed
    ]  # fmt: skip
    assert len(learned) == 1
    assert lines == ["neighbour 192.168.1.10 on Ethernet4 learned at 02:00:00:00:00:0a"]


def test_run_command_loads_resolves_and_stops_on_sigterm(fake_switch, pipeline_dir, tmp_path):
    servicer, address = fake_switch
    config = tmp_path / "config_db.json"
    config.write_text(json.dumps(tables()))
    argv = [sys.executable, "-m", "lossless_ctl.cli", "run", "--config", str(config)]
    argv += ["--switch", address, "--pipeline", str(pipeline_dir)]
    env = {**os.environ, "PYTHONPATH": str(CONTROL)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not servicer.packet_outs and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out.decode()
    _, program = plan(config_db.parse_checked(tables()), read_pipeline(pipeline_dir).p4info)
    n = program.updates()
    assert f"written {n} of {n} updates".encode() in out
    # The static route's next hop 192.168.1.50 has no neighbour entry: it is asked for.
    (request,) = servicer.packet_outs
    assert parse(request.payload).target_ip == V4("192.168.1.50")


def test_a_neighbour_learned_and_moved_in_one_burst_is_written_in_order(setup):
    from lossless_ctl.neighbor import _batches

    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index)
    first = learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0)
    moved = learner.packet_in(
        arp_request("192.168.1.10", "192.168.1.1", mac_bytes("02:00:00:00:00:0b")),
        port_meta(index, 2),
        0.1,
    )
    batches = _batches(first.updates + moved.updates)
    assert [len(b) for b in batches] == [3, 1]
    assert summary(index, batches[1])[0][0] == "MODIFY"


def test_clear_removes_an_unused_neighbour_and_asks_again(setup):
    """`sonic-clear arp` flushes the kernel's table, and a neighbour no route uses goes as
    neighorch removes it: neighbour entry, next hop and host route. It is asked for at once;
    its answer installs it again, and it ages as a learned one does."""
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    learner.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0.0)
    host = int(V4("192.168.1.10"))
    cleared = learner.clear(5.0)
    assert [u[:3] for u in summary(index, cleared.updates)] == [
        ("DELETE", "ipv4_route", (host,)),
        ("DELETE", "nexthop", (3,)),
        ("DELETE", "neighbor", (2, host)),
    ]
    assert cleared.freed == [3] and learner.learned == {}
    ((port, ask),) = cleared.packets
    assert port == 2 and ask[:6] == b"\xff" * 6 and parse(ask).target_ip == V4("192.168.1.10")
    assert cleared.log == [
        "neighbours cleared: 1 (0 kept pending removal: routes use their next hops); "
        "1 asked for again (0 pending removal before)"
    ]
    reply = arp_frame(2, HOST_MAC, V4("192.168.1.10"), ROUTER_MAC, V4("192.168.1.1"), ROUTER_MAC)
    back = learner.packet_in(reply, port_meta(index, 2), 5.1)
    assert [u[:3] for u in summary(index, back.updates)] == [
        ("INSERT", "neighbor", (2, host)),
        ("INSERT", "nexthop", (4,)),  # 3 is released only once its deletion is written
        ("INSERT", "ipv4_route", (host,)),
    ]
    gone = learner.tick(70.0)  # not answered since: aged out, all three go
    assert [u[:2] for u in summary(index, gone.updates)] == [
        ("DELETE", "ipv4_route"),
        ("DELETE", "nexthop"),
        ("DELETE", "neighbor"),
    ]
    assert learner.clear(71.0).updates == []


def test_clear_keeps_used_neighbours_pending_removal_and_asks_for_those_too(setup):
    """A neighbour whose next hop routes use is not removed by `sonic-clear arp` (neighorch
    refuses to remove a referenced neighbour; its removal waits): it is kept, pending
    removal, as when the kernel deletes it. One pending removal already is left as it is
    (the flush does not reach it: the kernel no longer has it), and asked for again with
    the cleared ones; an answer cancels its removal, and once the routes let go of the
    other's next hop, that one goes."""
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    ips = [V4("192.168.1.20"), V4("192.168.1.21")]
    for ip in ips:
        learner.kernel("Ethernet4", ip, HOST_MAC, 0.0)
        program.ids.hold_nexthop(f"nexthop:Ethernet4|{ip}")  # a route's
    assert learner.kernel("Ethernet4", ips[0], None, 1.0).updates[0].entity.table_entry.metadata
    cleared = learner.clear(2.0)
    (mark,) = cleared.updates
    assert summary(index, [mark]) == [("MODIFY", "neighbor", (2, int(ips[1])), (0x02000000000A,))]
    assert mark.entity.table_entry.metadata == PENDING_REMOVAL and cleared.freed == []
    assert sorted(parse(frame).target_ip for _, frame in cleared.packets) == ips
    assert cleared.log == [
        "neighbours cleared: 1 (1 kept pending removal: routes use their next hops); "
        "2 asked for again (1 pending removal before)"
    ]
    assert learner.entries.kept == {("Ethernet4", ip) for ip in ips}
    reply = arp_frame(2, HOST_MAC, ips[0], ROUTER_MAC, V4("192.168.1.1"), ROUTER_MAC)
    back = learner.packet_in(reply, port_meta(index, 2), 2.1)
    assert summary(index, back.updates) == [
        ("MODIFY", "neighbor", (2, int(ips[0])), (0x02000000000A,))
    ]
    assert back.updates[0].entity.table_entry.metadata == b""
    assert learner.tick(3.0).updates == []
    program.ids.drop_nexthop(f"nexthop:Ethernet4|{ips[1]}")
    assert [u[:3] for u in summary(index, learner.tick(4.0).updates)] == [
        ("DELETE", "ipv4_route", (int(ips[1]),)),
        ("DELETE", "nexthop", (4,)),
        ("DELETE", "neighbor", (2, int(ips[1]))),
    ]


def test_a_restarted_controller_takes_over_what_the_last_one_learned(setup):
    """adopt: the switch's neighbour entries that the config lacks, with the next hop and host
    route made for them, are the learner's again; their keys are what the reconcile keeps."""
    from lossless_ctl.client import entity_key

    cfg, program, index, _ = setup
    first = NeighborLearner(cfg, program, index, age_s=60)
    learned = first.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0)
    state = {entity_key(u.entity): u.entity for u in learned.updates}
    _, fresh = plan(cfg, setup[3].p4info)  # a new process numbers the config afresh
    second = NeighborLearner(cfg, fresh, index, age_s=60)
    assert second.adopt(state, 100.0) == set(state)
    assert set(second.learned) == {("Ethernet4", V4("192.168.1.10"))}
    # Known now: the same answer writes nothing; aged out, the same three entries go.
    again = second.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 101)
    assert again.updates == []
    # The next neighbour learned does not take the adopted next hop's id (3).
    other = second.packet_in(arp_request("192.168.1.11", "192.168.1.1"), port_meta(index, 2), 102)
    assert summary(index, other.updates)[1][1:3] == ("nexthop", (4,))
    gone = second.tick(200.0)
    assert set(state) <= {entity_key(u.entity) for u in gone.updates}


def test_a_restarted_controller_takes_over_a_neighbour_pending_removal_as_pending(setup):
    """adopt: a neighbour entry marked pending removal (gone while routes used its next hop)
    is taken over pending, not learned: kept while routes (routeorch's, taken over after
    it) use its next hop, then its three entries go; a second neighbour, unmarked, is
    learned."""
    from lossless_ctl.client import entity_key

    cfg, program, index, _ = setup
    first = NeighborLearner(cfg, program, index, age_s=60)
    ip, other = V4("192.168.1.20"), V4("192.168.1.21")
    key = f"nexthop:Ethernet4|{ip}"
    state = {}
    for address in (ip, other):
        learned = first.kernel("Ethernet4", address, HOST_MAC, 0.0)
        state |= {entity_key(u.entity): u.entity for u in learned.updates}
    program.ids.hold_nexthop(key)  # a route's
    marked = first.kernel("Ethernet4", ip, None, 1.0).updates
    state |= {entity_key(u.entity): u.entity for u in marked}
    _, fresh = plan(cfg, setup[3].p4info)
    second = NeighborLearner(cfg, fresh, index, age_s=60)
    assert second.adopt(state, 100.0) == set(state)
    assert set(second.learned) == {("Ethernet4", other)}
    assert second.entries.kept == {("Ethernet4", ip)}
    fresh.ids.hold_nexthop(key)  # the route, as routeorch's adopt counts it
    assert second.tick(101.0).updates == []
    fresh.ids.drop_nexthop(key)
    assert [u[:3] for u in summary(index, second.tick(102.0).updates)] == [
        ("DELETE", "ipv4_route", (int(ip),)),
        ("DELETE", "nexthop", (3,)),
        ("DELETE", "neighbor", (2, int(ip))),
    ]


def test_a_new_session_installs_what_the_last_one_learned_again(setup):
    """A restarted switch is replayed from the config, which has no learned neighbours: the
    last session's learner gives its ids back (else routeorch would take the gone next hop
    for one that exists) and the next installs what it had learned at once."""
    cfg, program, index, _ = setup
    first = NeighborLearner(cfg, program, index, age_s=60)
    first.packet_in(arp_request("192.168.1.10", "192.168.1.1"), port_meta(index, 2), 0.0)
    known = first.forget()
    assert known == {("Ethernet4", V4("192.168.1.10")): HOST_MAC}
    assert "nexthop:Ethernet4|192.168.1.10" not in program.ids.nexthop_ids
    second = NeighborLearner(cfg, program, index, age_s=60)
    host = int(V4("192.168.1.10"))
    assert summary(index, second.relearn(known, 1.0).updates) == [
        ("INSERT", "neighbor", (2, host), (0x02000000000A,)),
        ("INSERT", "nexthop", (3,), (2, host)),
        ("INSERT", "ipv4_route", (host,), (3,)),
    ]


def test_the_kernels_neighbours_are_learned_and_its_deletions_remove_them(setup):
    """neighsync's events (SONiC's neighsyncd): an entry with a MAC writes the neighbour, next
    hop and host route as a learned one does; a new MAC moves it; a deletion removes the
    three (no route uses the next hop); entries of other interfaces, or outside the port's
    subnets, are not learned."""
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    ip, host = V4("192.168.1.20"), int(V4("192.168.1.20"))
    added = learner.kernel("Ethernet4", ip, HOST_MAC, 0.0)
    kinds = {(t, name) for t, name, _, _ in summary(index, added.updates)}
    assert kinds == {("INSERT", "neighbor"), ("INSERT", "nexthop"), ("INSERT", "ipv4_route")}
    moved = learner.kernel("Ethernet4", ip, mac_bytes("02:00:00:00:00:0b"), 1.0)
    assert summary(index, moved.updates) == [("MODIFY", "neighbor", (2, host), (0x02000000000B,))]
    assert learner.kernel("Ethernet4", ip, mac_bytes("02:00:00:00:00:0b"), 2.0).updates == []
    gone = learner.kernel("Ethernet4", ip, None, 3.0)
    assert [u[:3] for u in summary(index, gone.updates)] == [
        ("DELETE", "ipv4_route", (host,)),
        ("DELETE", "nexthop", (3,)),
        ("DELETE", "neighbor", (2, host)),
    ]
    assert gone.freed == [3]
    assert learner.kernel("Ethernet4", ip, None, 4.0).updates == []
    back = learner.kernel("Ethernet4", ip, HOST_MAC, 5.0)
    assert [u[:3] for u in summary(index, back.updates)] == [
        ("INSERT", "neighbor", (2, host)),
        ("INSERT", "nexthop", (4,)),  # 3 is released only once its deletion is written
        ("INSERT", "ipv4_route", (host,)),
    ]
    assert learner.kernel("Ethernet99", ip, HOST_MAC, 6.0).updates == []
    assert learner.kernel("Ethernet4", V4("10.77.0.1"), HOST_MAC, 6.0).updates == []


@pytest.mark.parametrize("how", ["kernel", "aged"])
def test_a_gone_neighbour_is_kept_pending_removal_while_routes_use_its_next_hop(setup, how):
    """The next hop's users are counted once for the learner and routeorch (HardwareIds): a
    neighbour the kernel deletes, or that ages out, while routes (here two, as routeorch
    counts them) use its next hop keeps all its entries, as SONiC's neighorch keeps a
    referenced neighbour: its neighbour entry is rewritten with the same MAC and marked
    pending removal (metadata); neighbour entry, next hop and host route go together at the
    first tick after the routes have let go, and the next hop's id is free once that is
    written."""
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    ip, host = V4("192.168.1.20"), int(V4("192.168.1.20"))
    key = f"nexthop:Ethernet4|{ip}"
    learner.kernel("Ethernet4", ip, HOST_MAC, 0.0)
    assert program.ids.hold_nexthop(key, 2) == (3, False)  # routeorch's two routes
    gone = learner.kernel("Ethernet4", ip, None, 1.0) if how == "kernel" else learner.tick(61.0)
    assert summary(index, gone.updates) == [("MODIFY", "neighbor", (2, host), (0x02000000000A,))]
    assert gone.updates[0].entity.table_entry.metadata == PENDING_REMOVAL
    assert "routes use its next hop: pending removal" in gone.log[0]
    assert (gone.freed, learner.tick(62.0).updates) == ([], [])
    assert program.ids.drop_nexthop(key, 2) is None  # the learner's use is left
    swept = learner.tick(63.0)
    assert [u[:3] for u in summary(index, swept.updates)] == [
        ("DELETE", "ipv4_route", (host,)),
        ("DELETE", "nexthop", (3,)),
        ("DELETE", "neighbor", (2, host)),
    ]
    assert swept.freed == [3] and key not in program.ids.nexthop_ids
    assert learner.tick(64.0).updates == []


@pytest.mark.parametrize("mac", [HOST_MAC, mac_bytes("02:00:00:00:00:0b")])
def test_learning_a_neighbour_pending_removal_again_cancels_the_removal(setup, mac):
    """A neighbour pending removal (its next hop used by routes) that the kernel has again,
    at the same MAC or a new one, is learned back: one MODIFY without the mark (with the
    MAC it has now), nothing else written; when the routes let go nothing is removed, and
    it ages out from then on as a learned neighbour does."""
    cfg, program, index, _ = setup
    learner = NeighborLearner(cfg, program, index, age_s=60)
    ip, host = V4("192.168.1.20"), int(V4("192.168.1.20"))
    key = f"nexthop:Ethernet4|{ip}"
    learner.kernel("Ethernet4", ip, HOST_MAC, 0.0)
    program.ids.hold_nexthop(key)  # a route's
    assert learner.kernel("Ethernet4", ip, None, 1.0).updates[0].entity.table_entry.metadata
    back = learner.kernel("Ethernet4", ip, mac, 2.0)
    mac_int = int.from_bytes(mac, "big")
    assert summary(index, back.updates) == [("MODIFY", "neighbor", (2, host), (mac_int,))]
    assert back.updates[0].entity.table_entry.metadata == b""
    assert back.log == [f"neighbour {ip} on Ethernet4 back (removal cancelled) at {mac_str(mac)}"]
    assert program.ids.drop_nexthop(key) is None  # the route lets go; the learner holds it
    assert learner.tick(3.0).updates == []
    aged = learner.tick(62.0)
    assert [u[:3] for u in summary(index, aged.updates)] == [
        ("DELETE", "ipv4_route", (host,)),
        ("DELETE", "nexthop", (3,)),
        ("DELETE", "neighbor", (2, host)),
    ]


def test_show_arp_marks_neighbours_pending_removal():
    """`show arp` adds a Status column only when a neighbour is pending removal."""
    rows = [
        NeighborRow(V4("10.0.0.1"), "02:00:00:00:00:01", "Ethernet0"),
        NeighborRow(V4("10.0.0.2"), "02:00:00:00:00:02", "Ethernet0", pending=True),
    ]
    lines = render_neighbors(rows, 4).splitlines()
    assert lines[0].split() == ["Address", "MacAddress", "Iface", "Vlan", "Status"]
    assert lines[2].split() == ["10.0.0.1", "02:00:00:00:00:01", "Ethernet0", "-"]
    assert lines[3].split() == [
        "10.0.0.2",
        "02:00:00:00:00:02",
        "Ethernet0",
        "-",
        "pending",
        "removal",
    ]
    assert render_neighbors(rows[:1], 4).splitlines()[0].split()[-1] == "Vlan"
