"""SAI derivation (orchagent's job) and its mapping to P4Runtime and the port configuration,
on the T0 and T1 configs. Expected values come from p4src/README.md's formulas, worked by hand
in the comments."""

import ipaddress
from pathlib import Path

import pytest

from lossless_ctl import config_db
from lossless_ctl.p4info import P4InfoIndex, read_p4info
from lossless_ctl.p4map import (
    MappingError,
    mark_slope,
    pause_quanta_per_us_q16,
    refresh_interval_us,
    to_p4,
    us_per_byte_q24,
)
from lossless_ctl.p4rt_proto import bindings
from lossless_ctl.port_config import tm_config
from lossless_ctl.sai import classes_of_pg, derive, half_pause_ns

DATA = Path(__file__).parent / "data"
ING = "LosslessIngress."


@pytest.fixture(scope="module")
def p4info(compiled_pipeline):
    return P4InfoIndex(read_p4info(compiled_pipeline / "lossless.p4info.txtpb"))


def model_of(name):
    cfg = config_db.parse_checked(config_db.load_files([DATA / name]))
    return cfg, derive(cfg)


def entries(program, p4info, table):
    """(match values, action name, param values) of every update to `table`, as integers."""
    tid = p4info.table(table).preamble.id
    out = []
    for phase in program.phases:
        for u in phase.updates:
            e = u.entity.table_entry
            if u.entity.WhichOneof("entity") != "table_entry" or e.table_id != tid:
                continue
            match = tuple(
                (int.from_bytes(m.lpm.value, "big"), m.lpm.prefix_len)
                if m.HasField("lpm")
                else int.from_bytes(m.exact.value, "big")
                for m in e.match
            )
            action = p4info.name_of(e.action.action.action_id)
            params = tuple(int.from_bytes(p.value, "big") for p in e.action.action.params)
            out.append((match, action, params))
    return out


def test_t0_objects_and_bindings():
    _, model = model_of("t0_as7726.json")
    port = model["port:Ethernet0"]
    assert port["SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL"] == 0b11000
    assert port["SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP"] == "qos_map:DSCP_TO_TC_MAP|AZURE"
    assert port["SAI_PORT_ATTR_MTU"] == 9122  # portsorch: IP MTU + Ethernet + FCS + VLAN
    assert port["SAI_PORT_ATTR_SPEED"] == 100000
    assert classes_of_pg(model, port, 3) == [3]
    assert classes_of_pg(model, port, 0) == []
    dscp = dict(model["qos_map:DSCP_TO_TC_MAP|AZURE"]["SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST"])
    assert (dscp[3], dscp[46], dscp[48], dscp[0]) == (3, 5, 6, 1)
    ipg = model["ipg:Ethernet0|3"]
    assert ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_BUFFER_PROFILE"] == (
        "buffer_profile:pg_lossless_100000_5m_profile"
    )
    profile = model["buffer_profile:pg_lossless_100000_5m_profile"]
    assert profile["SAI_BUFFER_PROFILE_ATTR_XOFF_TH"] == 96928
    assert profile["SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH"] == -3
    queue = model["queue:Ethernet0|3"]
    assert queue["SAI_QUEUE_ATTR_WRED_PROFILE_ID"] == "wred:AZURE_LOSSLESS"
    assert queue["SAI_QUEUE_ATTR_SCHEDULER_PROFILE_ID"] == "scheduler:scheduler.1"


def test_t0_routes_next_hops_and_ecmp():
    _, model = model_of("t0_as7726.json")
    default = model["route:0.0.0.0/0"]
    group = default["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"]
    members = [
        m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_ID"]
        for m in model.of_type("NEXT_HOP_GROUP_MEMBER")
        if m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_GROUP_ID"] == group
    ]
    assert members == [
        "nexthop:Ethernet0|10.0.0.57",
        "nexthop:Ethernet12|10.0.0.63",
        "nexthop:Ethernet4|10.0.0.59",
        "nexthop:Ethernet8|10.0.0.61",
    ]
    # The IPv6 default is a second group of its own.
    assert model["route:::/0"]["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] != group
    assert model["route:192.0.2.0/24"]["SAI_ROUTE_ENTRY_ATTR_PACKET_ACTION"] == (
        "SAI_PACKET_ACTION_DROP"
    )
    # Connected subnet via the RIF, router address to the CPU (IP2ME).
    assert model["route:10.0.0.56/31"]["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] == "rif:Ethernet0"
    assert model["route:10.0.0.56/32"]["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] == "port:CPU"
    assert model["route:10.1.0.32/32"]["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] == "port:CPU"
    assert model["route:192.168.0.0/21"]["SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID"] == "rif:Vlan1000"
    neighbor = model["neighbor:Ethernet0|10.0.0.57"]
    assert neighbor.entry == {
        "rif_id": "rif:Ethernet0",
        "ip_address": ipaddress.ip_address("10.0.0.57"),
    }
    assert neighbor["SAI_NEIGHBOR_ENTRY_ATTR_DST_MAC_ADDRESS"] == "52:54:00:00:01:00"


def test_t0_mapping(p4info):
    _, model = model_of("t0_as7726.json")
    program = to_p4(model, p4info)
    assert program.notes == [
        "trap:bgp: not a punt reason of the pipeline (traffic to the router's addresses is all "
        "IP2ME)",
        "trap:bgpv6: not a punt reason of the pipeline (traffic to the router's addresses is all "
        "IP2ME)",
        "rif:Vlan1000: VLAN with 4 member ports has no single egress port; its subnet is "
        "trapped to the CPU (glean)",
    ]
    # CoPP: ARP and ND at seed 002's raised 8000 pps (single rate: pir = cir), IP2ME 6000;
    # meter cells are the pipeline's punt reasons (PUNT_ARP 1, PUNT_ND 2, PUNT_IP2ME 3).
    copp = next(p for p in program.phases if p.name == "CoPP")
    cells = [
        (u.entity.meter_entry.index.index, u.entity.meter_entry.config.cir,
         u.entity.meter_entry.config.pir, u.entity.meter_entry.config.pburst)
        for u in copp.updates
    ]  # fmt: skip
    assert cells == [(1, 8000, 8000, 8000), (2, 8000, 8000, 8000), (3, 6000, 6000, 6000)]
    modify = bindings().p4runtime_pb2.Update.MODIFY
    assert {u.type for u in copp.updates} == {modify}  # meter cells always exist
    # Lossless PG 3 of port 1 (Ethernet0, 100G), profile size 1248, xoff 96928, xon 1248,
    # xon_offset 2496, dynamic_th -3: reserved 1248, pause above 1248 + free / 8 (shift right
    # 3, computed by the pipeline), headroom 96928, XON below max(1248, that point - 2496);
    # class_enable = bit 3, quanta 65535 (no pfc_quanta), refresh = 65535 x 512 bit / 100G / 2
    # = 167.77 us, in whole us less one (the pipeline's microsecond grain) = 166.
    pg = {m: (a, p) for m, a, p in entries(program, p4info, ING + "pg_profile")}
    lossless = (1248, 1248, 96928, 1248, 2496, 1, 0, 3)
    assert pg[(1, 3)] == (ING + "set_lossless", (*lossless, 8, 65535, 166))
    assert pg[(1, 4)] == (ING + "set_lossless", (*lossless, 16, 65535, 166))
    assert pg[(1, 0)] == (ING + "set_lossy_dynamic", (3, 0))  # dynamic_th 3: x 2^3
    # WRED AZURE_LOSSLESS: Kmin 1 MiB, Kmax 2 MiB, Pmax 5 %: slope 5% x 2^32 / 1 MiB = 204.
    wred = entries(program, p4info, "LosslessEgress.queue_wred")
    assert ((1, 3), "LosslessEgress.set_wred_ecn", (1048576, 2097152, 204)) in wred
    assert len(wred) == 16  # queues 3 and 4 of 8 ports
    # Host ports (SFC host_facing) pause DSCP 3 and 4 on priorities 3 and 4.
    assert entries(program, p4info, ING + "sfc_dscp_to_priority") == [
        ((3,), ING + "set_sfc_priority", (3,)),
        ((4,), ING + "set_sfc_priority", (4,)),
    ]
    # Default routes: ECMP group ids; blackhole: drop; /0 omits the match field.
    routes = {m: (a, p) for m, a, p in entries(program, p4info, ING + "ipv4_route")}
    assert routes[()] == (ING + "set_ecmp_group_id", (1,))
    assert routes[((0xC0000200, 24),)] == (ING + "drop_route", ())
    assert routes[((0xC0A80000, 21),)] == (ING + "trap", ())
    v6 = {m: (a, p) for m, a, p in entries(program, p4info, ING + "ipv6_route")}
    assert v6[()] == (ING + "set_ecmp_group_id", (2,))
    # Trust DSCP on every port with the AZURE maps (map ids 1).
    port_qos = entries(program, p4info, ING + "port_qos")
    assert port_qos[0] == ((1,), ING + "set_port_qos", (1, 1, 0, 1, 1, 0))


def test_lossless_shared_static_th_moves_the_pause_point(p4info):
    raw = config_db.load_files([DATA / "t1_as7816.json"])
    raw["BUFFER_PROFILE"]["pg_lossless_100000_300m_profile"]["static_th"] = "20000"
    program = to_p4(derive(config_db.parse_checked(raw)), p4info)
    pg = {m: p for m, _, p in entries(program, p4info, ING + "pg_profile")}
    # SONiC: the PG pauses once it holds its reserved size (139264) plus its shared threshold;
    # the headroom (xoff 26112) comes on top, the static threshold needs no pipeline help. The
    # reserved size stays 139264: what the PG holds beyond it is its shared watermark.
    assert pg[(8, 3)][:6] == (139264, 139264 + 20000, 26112, 2496, 0, 0)


def test_t1_sfc_and_port_config(p4info):
    cfg, model = model_of("t1_as7816.json")
    program = to_p4(model, p4info)
    # 100G drain time per byte, Q8.24: 2^24 x 8e6 / 1e11 = 1342.18 -> 1342; signal DSCP 48.
    sfc = {m: p for m, _, p in entries(program, p4info, ING + "sfc_queue")}
    assert sfc[(1, 3)] == (4194304, 1048576, 1342, 48)
    assert len(sfc) == 8
    switch = entries(program, p4info, ING + "switch_config")
    assert switch == [((), ING + "set_switch_config", (10875072 - 4194112, 100))]
    # SFC as the public reference: two-bank dedup, version 0, the data packet's source port.
    assert entries(program, p4info, ING + "sfc_mode") == [((), ING + "set_sfc_mode", (0, 0, 0))]
    # Static lossless profile (seed 000 style): all of size reserved, pause above size +
    # static_th 0, headroom xoff, XON below xon.
    pg = {m: p for m, _, p in entries(program, p4info, ING + "pg_profile")}
    assert pg[(8, 3)] == (139264, 139264, 26112, 2496, 0, 0, 0, 0, 8, 65535, 166)
    assert pg[(8, 0)] == (1048576,)
    tm = tm_config(model, cfg.chip)
    assert tm["buffer"] == {"total_bytes": 12766208, "cell_bytes": 208}
    assert tm["pfcwd_poll_interval_ms"] == 200
    port = tm["ports"][0]
    assert port["pfcwd"] == {"detection_time_ms": 200, "restoration_time_ms": 200, "action": "drop"}
    assert port["queues"][3] == {"queue": 3, "type": "DWRR", "weight": 15, "limit_bytes": 12766208}
    assert port["queues"][1] == {"queue": 1, "type": "DWRR", "weight": 14, "dynamic_th": 3}


@pytest.mark.parametrize(
    ("fields", "params"),
    [
        ({"dedup": "per_source", "version": "1", "src_port": "fixed"}, (1, 1, 1)),
        ({"dedup": "none"}, (2, 0, 0)),
    ],
)
def test_sfc_variants_reach_sfc_mode(p4info, fields, params):
    tables = config_db.load_files([DATA / "t1_as7816.json"])
    tables["SFC"]["GLOBAL"].update(fields)
    program = to_p4(derive(config_db.parse_checked(tables)), p4info)
    assert entries(program, p4info, ING + "sfc_mode") == [((), ING + "set_sfc_mode", params)]


@pytest.mark.parametrize(
    ("bps", "q24", "quanta_per_us"),
    # p4src/README.md: 5369 at 25G. A pause quantum is 512 bit times (IEEE 802.1Qbb), so a
    # microsecond holds bps / 512e6 quanta: 48.828125 at 25G, 0.01953125 at 10 Mb/s.
    [
        (25_000_000_000, 5369, 48.828125),
        (50_000_000_000, 2684, 97.65625),
        (100_000_000_000, 1342, 195.3125),
        (1_000_000_000, 134218, 1.953125),
        (10_000_000, 13421773, 0.01953125),
    ],
)
def test_rate_constants_match_the_pipeline_readme(bps, q24, quanta_per_us):
    assert us_per_byte_q24(bps) == q24
    # These rates are exact in Q16.16: nothing is lost at lab rates below 512 Mb/s.
    assert pause_quanta_per_us_q16(bps) == quanta_per_us * 2**16
    assert pause_quanta_per_us_q16(bps) > 0


def test_mark_slope_reaches_pmax_at_kmax():
    slope = mark_slope(5, 1000, 3000)
    assert abs(slope * 2000 / 2**32 - 0.05) < 1e-6
    assert mark_slope(100, 5, 5) == 0


def test_missing_port_index_is_a_mapping_error(p4info):
    tables = config_db.load_files([DATA / "mini.json"])
    del tables["PORT"]["Ethernet4"]["index"]
    cfg = config_db.parse_checked(tables)
    with pytest.raises(MappingError) as err:
        to_p4(derive(cfg), p4info)
    assert err.value.problems == ["PORT|Ethernet4|index: missing: the switch's port number"]


def test_mapping_uses_whatever_ids_the_p4info_has(p4info):
    """Renumber every table and action: the mapping follows, since it looks names up."""
    info = type(p4info.info)()
    info.CopyFrom(p4info.info)
    old_to_new = {}
    for i, a in enumerate(info.actions):
        old_to_new[a.preamble.id] = 0x01000000 | (0x800 + i)
        a.preamble.id = old_to_new[a.preamble.id]
    for t in info.tables:
        t.preamble.id |= 0x400
        for ref in t.action_refs:
            ref.id = old_to_new[ref.id]
        if t.const_default_action_id:
            t.const_default_action_id = old_to_new[t.const_default_action_id]
    renumbered = P4InfoIndex(info)
    _, model = model_of("mini.json")
    before = entries(to_p4(model, p4info), p4info, ING + "ipv4_route")
    after = entries(to_p4(model, renumbered), renumbered, ING + "ipv4_route")
    assert before == after and len(after) == 4


@pytest.mark.parametrize(
    ("quanta", "bps", "half_ns", "refresh_us"),
    [
        # quanta x 512 bit / rate / 2, worked by hand: 10 Mb/s 65535 -> 1.677696 s; 25G ->
        # 671.0784 us; 400G -> 41.9424 us; 256 quanta at 1G -> 65.536 us; 16 at 400G ->
        # 10.24 ns, below the pipeline's microsecond: renewed on every generated packet.
        (65535, 10_000_000, 1_677_696_000, 1_677_695),
        (65535, 25_000_000_000, 671_078, 670),
        (65535, 400_000_000_000, 41_942, 40),
        (256, 1_000_000_000, 65_536, 64),
        (16, 400_000_000_000, 10, 0),
    ],
)
def test_refresh_is_half_the_pause_at_every_rate(quanta, bps, half_ns, refresh_us):
    assert half_pause_ns(quanta, bps) == half_ns
    assert refresh_interval_us(quanta, bps) == refresh_us


def test_pfc_quanta_from_config_sets_the_pause_its_refresh_and_the_packet_generator(p4info):
    raw = config_db.load_files([DATA / "t1_as7816.json"])
    ports = "Ethernet0,Ethernet4,Ethernet8,Ethernet12,Ethernet16,Ethernet20,Ethernet24,Ethernet28"
    raw["PORT_QOS_MAP"][ports]["pfc_quanta"] = "4096"
    cfg = config_db.parse_checked(raw)
    model = derive(cfg)
    program = to_p4(model, p4info)
    # 4096 quanta at 100G pause for 20.97152 us: renewed after 10 us (half, whole us, less one).
    pg = {m: p for m, _, p in entries(program, p4info, ING + "pg_profile")}
    assert pg[(8, 3)][-3:] == (8, 4096, 9)
    assert pg[(8, 4)][-3:] == (16, 4096, 9)
    # One generated packet per lossless PG (priorities 3 and 4 of 8 ports), each naming its
    # (port, PG) and carrying the same pause.
    refresh = entries(program, p4info, ING + "pfc_refresh")
    assert len(refresh) == 16
    assert sorted(m[2] for m, _, _ in refresh) == list(range(16))
    assert {(m[0], m[1]) for m, _, _ in refresh} == {(0, 0)}
    by_pg = {p[:2]: p[2:] for _, _, p in refresh}
    assert by_pg[(8, 3)] == (8, 4096, 9) and by_pg[(8, 4)] == (16, 4096, 9)
    # The packet generator fires every quarter pause: 4096 x 512 / 100G / 2 = 10485 ns, / 2.
    pktgen = tm_config(model, cfg.chip)["pktgen"]
    assert pktgen == {
        "port": 510,
        "apps": [{"app_id": 0, "period_ns": 5242, "batches": 1, "packets_per_batch": 16}],
    }
    # Without the field, SONiC's behaviour: the largest pause.
    _, plain = model_of("t1_as7816.json")
    assert tm_config(plain, cfg.chip)["pktgen"]["apps"][0]["period_ns"] == 83_884
