"""The controller against a fake P4Runtime server (conftest.py): exact WriteRequests, batching,
per-update errors, arbitration, read-back, and that a bad config writes nothing. These are unit
tests of the controller; tests against p4-switch check what the pipeline does with the writes.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

from lossless_ctl import config_db
from lossless_ctl.cli import main
from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
from lossless_ctl.loader import load, plan, read_back, read_pipeline, reconcile
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.p4rt_proto import bindings
from lossless_paths import CONTROL

DATA = Path(__file__).parent / "data"
ING = "LosslessIngress."
EG = "LosslessEgress."


def expand(template: str, index: P4InfoIndex) -> str:
    """{t:TABLE} / {a:ACTION} -> ids from the P4Info; {v:INT} -> canonical bytes literal."""

    def sub(m: re.Match) -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "t":
            return str(index.table(arg).preamble.id)
        if kind == "a":
            return str(index.action(arg).preamble.id)
        value = int(arg, 0)
        raw = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
        return '"' + "".join(f"\\x{b:02x}" for b in raw) + '"'

    return re.sub(r"\{([tav]):([^}]+)\}", sub, template)


def exact(table, match, action, params, kind="INSERT", default=False):
    fields = "".join(f"match {{ field_id: {i} {m} }} " for i, m in match)
    ps = "".join(f"params {{ param_id: {i} value: {{v:{v}}} }} " for i, v in enumerate(params, 1))
    flag = "is_default_action: true " if default else ""
    return (
        f"updates {{ type: {kind} entity {{ table_entry {{ table_id: {{t:{table}}} {fields}"
        f"action {{ action {{ action_id: {{a:{action}}} {ps}}} }} {flag}}} }} }}"
    )


def ex(value):
    return f"exact {{ value: {{v:{value}}} }}"


def lpm(value, plen):
    return f"lpm {{ value: {{v:{value}}} prefix_len: {plen} }}"


# The mini config (data/mini.json) as the P4Runtime writes it should come out, phase by phase.
# Values by p4src/README.md: clone sessions' class of service = queue 7 (generated frames ahead
# of data); pg_profile reserved = size 69632, xoff_threshold = size + static_th
# 0, xoff_size = xoff 13056, xon_threshold = xon 512, no xon_offset, static, class_enable = bit
# 3, refresh = 65535 quanta at 25G / 2 = 671.08 us, in whole us less one = 670, and the same
# pause in pfc_refresh for the packet generator's packet 0; shared pool = 10875072 - 4194112 =
# 6680960.
MAC = 0x001122334455
NB_MAC = 0x525400000001
EXPECTED = [
    "updates { type: INSERT entity { packet_replication_engine_entry { clone_session_entry {"
    " session_id: 513 replicas { port: {v:1} instance: 1 } class_of_service: 7 } } } }"
    "updates { type: INSERT entity { packet_replication_engine_entry { clone_session_entry {"
    " session_id: 514 replicas { port: {v:2} instance: 1 } class_of_service: 7 } } } }",
    exact(ING + "switch_config", [], ING + "set_switch_config", [6680960, 0], "MODIFY", True)
    + exact(ING + "router_mac", [(1, ex(MAC))], "NoAction", []),
    exact(ING + "tc_to_pg", [(1, ex(1)), (2, ex(3))], ING + "set_pg", [3])
    + exact(ING + "port_qos", [(1, ex(1))], ING + "set_port_qos", [0, 0, 0, 1, 0, 0])
    + exact(ING + "port_qos", [(1, ex(2))], ING + "set_port_qos", [0, 0, 0, 0, 0, 0]),
    exact(
        ING + "pg_profile",
        [(1, ex(1)), (2, ex(3))],
        ING + "set_lossless",
        [69632, 69632, 13056, 512, 0, 0, 0, 0, 8, 65535, 670],
    )
    + exact(
        ING + "pfc_refresh",
        [(1, ex(0)), (2, ex(0)), (3, ex(0))],
        ING + "set_refresh",
        [1, 3, 8, 65535, 670],
    ),
    # SFC as the public reference by default: two-bank dedup (0), version 0, data's port.
    # 25G: 48.828125 pause quanta (512 bit times) per microsecond, in Q16.16.
    exact(ING + "sfc_mode", [], ING + "set_sfc_mode", [0, 0, 0], "MODIFY", True)
    + exact(EG + "egress_port", [(1, ex(1))], EG + "set_egress_port", [MAC, 0, 3_200_000])
    + exact(EG + "egress_port", [(1, ex(2))], EG + "set_egress_port", [MAC, 0, 3_200_000]),
    exact(ING + "router_interface", [(1, ex(1))], ING + "set_port_and_src_mac", [1, MAC])
    + exact(ING + "nexthop", [(1, ex(1))], ING + "set_ip_nexthop", [1, 0x0A000001])
    + exact(ING + "neighbor", [(1, ex(1)), (2, ex(0x0A000001))], ING + "set_dst_mac", [NB_MAC]),
    exact(ING + "ipv4_route", [(1, lpm(0x0A000000, 31))], ING + "trap", [])
    + exact(ING + "ipv4_route", [(1, lpm(0x0A000000, 32))], ING + "trap", [])
    + exact(ING + "ipv4_route", [(1, lpm(0xC0A80000, 16))], ING + "set_nexthop_id", [1])
    + exact(ING + "ipv4_route", [(1, lpm(0x0A000001, 32))], ING + "set_nexthop_id", [1]),
]  # fmt: skip


def mini_program(pipeline):
    cfg = config_db.parse_checked(config_db.load_files([DATA / "mini.json"]))
    return plan(cfg, pipeline.p4info)


def test_exact_write_requests_for_the_mini_config(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    _, program = mini_program(pipeline)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        summary = load(client, pipeline, program, batch_size=100, in_flight=1)
    assert summary.errors == []
    index = P4InfoIndex(pipeline.p4info)
    pb = bindings().p4runtime_pb2
    got = [text_format.MessageToString(w) for w in servicer.writes]
    want = []
    for updates in EXPECTED:
        request = text_format.Parse(
            "device_id: 1 election_id { low: 1 } " + expand(updates, index), pb.WriteRequest()
        )
        want.append(text_format.MessageToString(request))
    assert got == want
    # The pipeline went first, with the P4Info and the BMv2 JSON bytes.
    (set_pipeline,) = servicer.pipelines
    assert set_pipeline.config.p4info == pipeline.p4info
    assert set_pipeline.config.p4_device_config == pipeline.device_config
    assert set_pipeline.action == pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT


def test_small_batches_with_several_in_flight_write_everything_once(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    _, program = mini_program(pipeline)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        summary = load(client, pipeline, program, batch_size=1, in_flight=3)
    assert summary.written == program.updates() == 19
    assert all(len(w.updates) == 1 for w in servicer.writes)
    written = sorted(u.SerializeToString() for w in servicer.writes for u in w.updates)
    planned = sorted(u.SerializeToString() for p in program.phases for u in p.updates)
    assert written == planned
    assert summary.per_table[ING + "ipv4_route"] == 4


def test_per_update_errors_are_reported_and_later_phases_not_written(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    index = P4InfoIndex(pipeline.p4info)
    nexthop_table = index.table(ING + "nexthop").preamble.id
    servicer.reject = lambda u: (
        (6, "nexthop 1 exists") if u.entity.table_entry.table_id == nexthop_table else None
    )
    _, program = mini_program(pipeline)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        summary = load(client, pipeline, program, batch_size=100, in_flight=2)
    assert [(label, e.code, e.message) for label, e in summary.errors] == [
        ("NEXT_HOP nexthop:Ethernet0|10.0.0.1", "ALREADY_EXISTS", "nexthop 1 exists")
    ]
    # The router interface and the neighbour of the same batch went in; the routes did not.
    assert summary.phases[-1].name == "router interfaces, next hops, neighbours"
    assert summary.phases[-1].updates - len(summary.phases[-1].errors) == 2
    route_table = index.table(ING + "ipv4_route").preamble.id
    assert not any(
        u.entity.table_entry.table_id == route_table for w in servicer.writes for u in w.updates
    )
    assert "failed: NEXT_HOP nexthop:Ethernet0|10.0.0.1: ALREADY_EXISTS: nexthop 1 exists" in (
        summary.render()
    )


def test_a_lower_election_id_is_not_primary(fake_switch):
    _, address = fake_switch
    with P4RuntimeClient(address, election_id=(0, 10)) as first:
        first.arbitrate()
        with P4RuntimeClient(address, election_id=(0, 5)) as second:
            with pytest.raises(
                P4RuntimeError, match="not primary: election id 0:5, primary holds 0:10"
            ):
                second.arbitrate()


def test_read_back_finds_missing_entries(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    _, program = mini_program(pipeline)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        load(client, pipeline, program)
        assert read_back(client, pipeline, program) == []
        neighbor = P4InfoIndex(pipeline.p4info).table(ING + "neighbor").preamble.id
        servicer.hide_on_read = lambda e: e.table_entry.table_id == neighbor
        assert read_back(client, pipeline, program) == [f"{ING}neighbor: 1 missing"]
        servicer.hide_on_read = lambda e: False
        # An entry the config does not have, and a route whose action differs.
        route = P4InfoIndex(pipeline.p4info).table(ING + "ipv4_route").preamble.id
        stored = [e for e in servicer.entities.values() if e.table_entry.table_id == route]
        extra = type(stored[0])()
        extra.CopyFrom(stored[0])
        extra.table_entry.match[0].lpm.prefix_len = 8
        extra.table_entry.match[0].lpm.value = b"\x0b\x00\x00\x00"
        servicer.entities[("extra",)] = extra
        stored[2].table_entry.action.action.params[0].value = b"\x09"
        assert read_back(client, pipeline, program) == [
            f"{ING}ipv4_route: 1 different, 1 not in the config"
        ]


def test_cli_load_writes_port_config_and_reads_back(fake_switch, pipeline_dir, tmp_path, capsys):
    servicer, address = fake_switch
    tm = tmp_path / "ports.json"
    argv = ["load", "--config", str(DATA / "mini.json"), "--switch", address]
    argv += ["--pipeline", str(pipeline_dir), "--port-config", str(tm), "--read-back"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "written 19 of 19 updates" in out
    assert "read-back: the switch holds exactly what the config describes" in out
    ports = json.loads(tm.read_text())["ports"]
    assert ports[0] == {
        "port": 1,
        "rate_bps": 25_000_000_000,
        "mtu": 9100,
        "pfc_enable": [3],
        "pfc_to_queue": {"3": 3},
    }


def test_cli_load_with_a_bad_config_writes_nothing(fake_switch, pipeline_dir, tmp_path, capsys):
    servicer, address = fake_switch
    tables = json.loads((DATA / "mini.json").read_text())
    tables["BUFFER_PROFILE"]["pg_300m_profile"]["xon"] = "20000"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tables))
    argv = ["load", "--config", str(bad), "--switch", address, "--pipeline", str(pipeline_dir)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "error: BUFFER_PROFILE|pg_300m_profile|xon: xon 20000 > xoff 13056" in err
    assert "nothing was written" in err
    assert servicer.pipelines == [] and servicer.writes == []


def test_cli_load_without_port_numbers_writes_nothing(fake_switch, pipeline_dir, capsys):
    servicer, address = fake_switch
    argv = ["load", "--config", str(DATA / "seed000_as7726.json"), "--switch", address]
    assert main(argv + ["--pipeline", str(pipeline_dir)]) == 1
    assert servicer.pipelines == [] and servicer.writes == []


def test_unreachable_switch_is_a_clear_error(pipeline_dir, capsys):
    pipeline = read_pipeline(pipeline_dir)
    with P4RuntimeClient("127.0.0.1:1", timeout=0.5) as client:
        with pytest.raises(P4RuntimeError, match="no P4Runtime server answered within 0.5 s"):
            client.arbitrate()
    assert pipeline.config_path.name == "lossless.json"


def reconcile_with(address, pipeline, tables):
    cfg = config_db.parse_checked(tables)
    _, program = plan(cfg, pipeline.p4info)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        return reconcile(client, pipeline, program)


def test_restarted_controller_writes_only_the_difference(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    tables = config_db.load_files([DATA / "mini.json"])
    first = reconcile_with(address, pipeline, tables)  # the switch runs nothing: full load
    assert first.pipeline_seconds is not None and first.written == 19
    assert len(servicer.pipelines) == 1
    servicer.writes.clear()

    same = reconcile_with(address, pipeline, tables)
    assert same.pipeline_seconds is None and same.written == 0
    assert servicer.writes == [] and len(servicer.pipelines) == 1

    # New neighbour MAC, one route gone, one route added.
    tables["NEIGH"]["Ethernet0|10.0.0.1"]["neigh"] = "52:54:00:00:00:02"
    del tables["STATIC_ROUTE"]["192.168.0.0/16"]
    tables["STATIC_ROUTE"]["172.16.0.0/12"] = {"nexthop": "10.0.0.1"}
    changed = reconcile_with(address, pipeline, tables)
    pb = bindings().p4runtime_pb2
    kinds = [
        (pb.Update.Type.Name(u.type), u.entity.table_entry.table_id)
        for w in servicer.writes
        for u in w.updates
    ]
    index = P4InfoIndex(pipeline.p4info)
    neighbor = index.table(ING + "neighbor").preamble.id
    route = index.table(ING + "ipv4_route").preamble.id
    assert kinds == [("MODIFY", neighbor), ("INSERT", route), ("DELETE", route)]
    assert [p.name for p in changed.phases] == [
        "router interfaces, next hops, neighbours",
        "routes",
        "delete: routes",
    ]
    assert changed.errors == []
    # The switch now holds exactly what a full load of the new config writes.
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        _, program = plan(config_db.parse_checked(tables), pipeline.p4info)
        assert read_back(client, pipeline, program) == []


def test_restarted_switch_is_replayed(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    tables = config_db.load_files([DATA / "mini.json"])
    reconcile_with(address, pipeline, tables)
    # The switch restarts: no pipeline, no entries.
    servicer.pipelines.clear()
    servicer.entities.clear()
    replay = reconcile_with(address, pipeline, tables)
    assert replay.pipeline_seconds is not None and replay.written == 19
    assert len(servicer.pipelines) == 1


def test_another_pipeline_on_the_switch_means_a_full_load(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    tables = config_db.load_files([DATA / "mini.json"])
    reconcile_with(address, pipeline, tables)
    (pipeline_dir / "lossless.json").write_text('{"program": "changed"}\n')
    again = reconcile_with(address, read_pipeline(pipeline_dir), tables)
    assert again.pipeline_seconds is not None and again.written == 19
    assert len(servicer.pipelines) == 2


def test_reconcile_of_t0_with_ecmp_and_copp_writes_nothing_the_second_time(
    fake_switch, pipeline_dir
):
    servicer, address = fake_switch
    pipeline = read_pipeline(pipeline_dir)
    tables = config_db.load_files([DATA / "t0_as7726.json"])
    first = reconcile_with(address, pipeline, tables)
    _, program = plan(config_db.parse_checked(tables), pipeline.p4info)
    assert first.errors == [] and first.written == program.updates()
    again = reconcile_with(address, pipeline, tables)
    assert again.written == 0 and again.phases == []
    # The ARP policer goes: its two meter cells are reset, nothing else changes.
    tables["COPP_TRAP"]["arp"]["trap_group"] = "queue4_group1"
    servicer.writes.clear()
    changed = reconcile_with(address, pipeline, tables)
    assert [p.name for p in changed.phases] == ["reset meters"]
    resets = [u.entity.meter_entry for w in servicer.writes for u in w.updates]
    assert sorted(m.index.index for m in resets) == [1, 2]
    assert not any(m.HasField("config") for m in resets)


def test_bindings_generate_once_into_the_cache(tmp_path):
    """A fresh cache gets modern bindings that import with the installed protobuf; a second
    run reuses them."""
    code = (
        "import sys; from lossless_ctl.p4rt_proto import bindings, cache_dir; "
        "b = bindings(); w = b.p4runtime_pb2.WriteRequest(device_id=7); "
        "assert type(w).FromString(w.SerializeToString()).device_id == 7; "
        "assert b.p4runtime_pb2_grpc.P4RuntimeStub; print(cache_dir())"
    )
    env = {**os.environ, "LOSSLESS_CTL_CACHE": str(tmp_path), "PYTHONPATH": str(CONTROL)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    generated = Path(first.stdout.strip()) / "p4" / "v1" / "p4runtime_pb2.py"
    assert generated.is_relative_to(tmp_path) and generated.exists()
    stamp = generated.stat().st_mtime_ns
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert generated.stat().st_mtime_ns == stamp
    # Nothing but the generated tree is left in the cache (no temporary directories).
    assert [p.name for p in generated.parents[3].iterdir()] == [generated.parents[2].name]


def test_sai_and_port_config_commands(tmp_path, capsys):
    assert main(["sai", "--config", str(DATA / "mini.json")]) == 0
    dump = json.loads(capsys.readouterr().out)
    route = dump["SAI_OBJECT_TYPE_ROUTE_ENTRY:route:192.168.0.0/16"]
    assert route == {
        "entry": {"vr_id": "default", "destination": "192.168.0.0/16"},
        "SAI_ROUTE_ENTRY_ATTR_PACKET_ACTION": "SAI_PACKET_ACTION_FORWARD",
        "SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID": "nexthop:Ethernet0|10.0.0.1",
    }
    out = tmp_path / "ports.json"
    assert main(["port-config", "--config", str(DATA / "t1_as7816.json"), "-o", str(out)]) == 0
    assert len(json.loads(out.read_text())["ports"]) == 8


def test_a_switch_failing_everything_gets_a_short_summary(fake_switch, pipeline_dir):
    servicer, address = fake_switch
    servicer.reject = lambda u: (14, "switch going away")  # UNAVAILABLE
    pipeline = read_pipeline(pipeline_dir)
    tables = config_db.load_files([DATA / "as7726_ports.json"])
    _, program = plan(config_db.parse_checked(tables), pipeline.p4info)
    with P4RuntimeClient(address) as client:
        client.arbitrate()
        summary = load(client, pipeline, program)
    assert len(summary.errors) == 32  # the 32 clone sessions; nothing after them was tried
    lines = summary.render().splitlines()
    assert sum(line.startswith("failed: ") for line in lines) == 20
    assert lines[-1] == "... and 12 more failed updates"
    assert "failed: clone session 513 (port:Ethernet0): UNAVAILABLE: switch going away" in lines


def test_show_arp_ndp_and_route_summary(fake_switch, pipeline_dir, capsys):
    servicer, address = fake_switch
    config = str(DATA / "t0_as7726.json")
    argv = ["load", "--config", config, "--switch", address, "--pipeline", str(pipeline_dir)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["show", "arp", "--switch", address, "--config", config]) == 0
    arp = capsys.readouterr().out.splitlines()
    assert arp[0].split() == ["Address", "MacAddress", "Iface", "Vlan"]
    assert arp[2].split() == ["10.0.0.57", "52:54:00:00:01:00", "Ethernet0", "-"]
    assert arp[-1] == "Total number of entries 4"
    assert main(["show", "ndp", "--switch", address]) == 0
    ndp = capsys.readouterr().out.splitlines()
    assert ndp[2].split() == ["fc00::72", "52:54:00:00:01:00", "port", "1", "-"]
    assert ndp[-1] == "Total number of entries 4"
    assert main(["show", "ip", "route", "summary", "--switch", address]) == 0
    summary = capsys.readouterr().out
    # T0 IPv4: 4 uplink /31s + Vlan1000 /21 connected; 4 + 1 + loopback router addresses;
    # 4 neighbour host routes; the default via ECMP; one blackhole.
    assert "connected (glean)                5" in summary
    assert "local (to the CPU)               6" in summary
    assert "next hop                         4" in summary
    assert "ECMP group                       1" in summary
    assert "blackhole                        1" in summary
    assert "Totals                          17" in summary
    with pytest.raises(SystemExit):
        main(["show", "interfaces", "--switch", address])
