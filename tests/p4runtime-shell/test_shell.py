"""Issue 4: the unmodified PyPI p4runtime-shell drives p4-switch through its Python API.

Runs in .venv-p4sh (`make p4sh-test`): p4runtime-shell 0.0.6 pins protobuf<3.21 and
p4runtime 1.4.1, which the project's venv cannot hold. Every write is checked twice: read back
through the shell and seen in the packet-ins of shell.p4 (its header comment says how).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh
from p4runtime_sh.context import P4Type
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from lossless_kit.switch import CPU_PORT, SwitchProcess, free_port
from lossless_paths import BIN

HERE = Path(__file__).resolve().parent
DEVICE_ID = 3
MISS, DIRECT = 0xFF, 0xEE
# v1model's standard_metadata.instance_type values (bmv2's simple_switch).
NORMAL, INGRESS_CLONE, REPLICATION = 0, 1, 5
GREEN, YELLOW, RED = 0, 1, 2
# Long enough for a loaded machine; only reached when a packet-in never comes.
PACKET_IN_DEADLINE_S = 10


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("p4")
    subprocess.run(
        [
            BIN / "p4-compile",
            "--target",
            "bmv2",
            "--arch",
            "v1model",
            "-o",
            out,
            "--p4runtime-files",
            out / "shell.p4info.txtpb",
            HERE / "shell.p4",
        ],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def switch(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("switch")
    with SwitchProcess(
        BIN / "p4-switch",
        device_id=DEVICE_ID,
        grpc_addr=f"127.0.0.1:{free_port()}",
        stats_addr=f"127.0.0.1:{free_port()}",
        log_path=workdir / "p4-switch.log",
    ) as sw:
        yield sw.grpc_addr


@pytest.fixture(scope="module")
def packet_in(program, switch):
    """The shell connected as primary with shell.p4 set as the pipeline, and its PacketIn."""
    sh.setup(
        device_id=DEVICE_ID,
        grpc_addr=switch,
        election_id=(0, 1),
        config=sh.FwdPipeConfig(str(program / "shell.p4info.txtpb"), str(program / "shell.json")),
        verbose=False,
    )
    try:
        yield sh.PacketIn()
    finally:
        sh.teardown()


class Exchange:
    """Sends packet-outs and collects the packet-ins they cause."""

    def __init__(self, packet_in: sh.PacketIn) -> None:
        self.packet_in = packet_in
        # PacketIn.p4_info stays unset in 0.0.6 (its `in` test compares names with objects).
        header = sh.context.get_obj(P4Type.controller_packet_metadata, "packet_in")
        self.ids = {md.name: md.id for md in header.metadata}
        self.sent = 0

    def frame(self, dst: int, src: int | None = None) -> bytes:
        """An Ethernet frame to `dst`; each has its own payload, so packet-ins are told apart."""
        self.sent += 1
        src = self.sent if src is None else src
        return (
            dst.to_bytes(6, "big")
            + src.to_bytes(6, "big")
            + b"\x88\xb5"
            + self.sent.to_bytes(4, "big")
            + bytes(46)
        )

    def send(self, *frames: bytes, index: int = 0, egress_port: int = 0) -> list[dict]:
        """Packet-outs of `frames` (through the tables unless `egress_port`), then a barrier
        packet-out straight back to the CPU; returns the packet-ins that came before the
        barrier's, each as its metadata by name plus "payload"."""
        for f in frames:
            sh.PacketOut(f, egress_port=str(egress_port), index=str(index)).send()
        barrier = self.frame(0xFFFFFFFFFFFF)
        sh.PacketOut(barrier, egress_port=str(CPU_PORT), index="0").send()
        got: list[dict] = []
        deadline = time.monotonic() + PACKET_IN_DEADLINE_S
        while time.monotonic() < deadline:
            for msg in self.packet_in.sniff(timeout=0.05):
                pkt = self.decode(msg)
                if pkt["payload"] == barrier:
                    assert pkt["tag"] == DIRECT, pkt
                    return got
                got.append(pkt)
        raise AssertionError(f"no packet-in of the barrier; before it: {got}")

    def decode(self, msg: p4runtime_pb2.StreamMessageResponse) -> dict:
        by_id = {m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata}
        pkt = {name: by_id[i] for name, i in self.ids.items()}
        pkt["payload"] = msg.packet.payload
        return pkt


@pytest.fixture(scope="module")
def net(packet_in) -> Exchange:
    return Exchange(packet_in)


def tags(packets: list[dict]) -> list[int]:
    return [p["tag"] for p in packets]


def write_error(excinfo) -> tuple[int, str]:
    """The one per-update error of a failed single-update write."""
    assert len(excinfo.value.errors) == 1, str(excinfo.value)
    _, err = excinfo.value.errors[0]
    return err.canonical_code, err.message


def fwd_entry(dst: int, action: str, **params: str) -> sh.TableEntry:
    te = sh.TableEntry("fwd")(action=action)
    te.match["hdr.ethernet.dst"] = str(dst)
    for name, value in params.items():
        te.action[name] = value
    return te


def test_pipeline_is_set_and_packet_out_comes_back_as_packet_in(net):
    p4info = sh.client.get_p4info()
    assert {t.preamble.alias for t in p4info.tables} == {"fwd", "ecmp"}
    assert sh.APIVersion()
    frame = net.frame(0x0A0000000001)
    sh.PacketOut(frame, egress_port=str(CPU_PORT), index="3").send()
    [pkt] = net.send()
    assert pkt["payload"] == frame
    assert pkt["ingress_port"] == CPU_PORT
    assert (pkt["tag"], pkt["instance_type"], pkt["egress_rid"]) == (DIRECT, NORMAL, 0)


def test_table_entry_insert_read_modify_delete_with_direct_counter(net):
    dst = 0x0A0000000002
    fwd_entry(dst, "to_cpu", tag="7").insert()
    [read] = list(sh.TableEntry("fwd").read())
    assert read.match["hdr.ethernet.dst"].exact.value == dst.to_bytes(6, "big")
    assert read.action.action_name == "ShellIngress.to_cpu"
    assert read.action["tag"].value == b"\x07"

    frame = net.frame(dst)
    [pkt] = net.send(frame)
    assert (pkt["tag"], pkt["payload"]) == (7, frame)

    fwd_entry(dst, "to_cpu", tag="9").modify()
    [read] = list(sh.TableEntry("fwd").read())
    assert read.action["tag"].value == b"\x09"
    assert tags(net.send(net.frame(dst), net.frame(dst))) == [9, 9]

    # The direct counter counted the three packets; bmv2 counts the bytes the CPU port
    # received, packet_out header (2 bytes) included.
    [c] = list(direct_counter(dst).read())
    assert (c.packet_count, c.byte_count) == (3, 3 * (len(frame) + 2))

    with pytest.raises(P4RuntimeWriteException) as e:
        fwd_entry(dst, "to_cpu", tag="1").insert()
    assert write_error(e)[0] == grpc.StatusCode.ALREADY_EXISTS.value[0]

    fwd_entry(dst, "to_cpu", tag="9").delete()
    assert list(sh.TableEntry("fwd").read()) == []
    assert tags(net.send(net.frame(dst))) == [MISS]
    with pytest.raises(P4RuntimeWriteException) as e:
        fwd_entry(dst, "to_cpu", tag="9").delete()
    assert write_error(e)[0] == grpc.StatusCode.NOT_FOUND.value[0]


def direct_counter(dst: int) -> sh.DirectCounterEntry:
    counter = sh.DirectCounterEntry("fwd_counter")
    counter.table_entry.match["hdr.ethernet.dst"] = str(dst)
    return counter


def test_direct_counter_is_writable(net):
    dst = 0x0A000000000A
    fwd_entry(dst, "to_cpu", tag="7").insert()
    assert tags(net.send(net.frame(dst))) == [7]
    counter = direct_counter(dst)
    counter.packet_count = 50
    counter.byte_count = 500
    try:
        counter.modify()
        [c] = list(direct_counter(dst).read())
        assert (c.packet_count, c.byte_count) == (50, 500)
    finally:
        fwd_entry(dst, "to_cpu", tag="7").delete()


def test_table_entry_read_carries_its_direct_counter(net):
    dst = 0x0A000000000C
    fwd_entry(dst, "to_cpu", tag="7").insert()
    try:
        assert tags(net.send(net.frame(dst), net.frame(dst))) == [7, 7]
        # P4Runtime 9.1 (direct resources): counter_data set in the read asks for the counter.
        te = sh.TableEntry("fwd")
        te.counter_data.packet_count = 0
        [read] = list(te.read())
        assert read.msg().HasField("counter_data"), read.msg()
        assert read.counter_data.packet_count == 2
    finally:
        fwd_entry(dst, "to_cpu", tag="7").delete()


def test_default_entry_modify_and_read(net):
    default = sh.TableEntry("fwd")(is_default=True, action="to_cpu")
    default.action["tag"] = "0x42"
    default.modify()
    [read] = list(sh.TableEntry("fwd")(is_default=True).read())
    assert read.action.action_name == "ShellIngress.to_cpu"
    assert read.action["tag"].value == b"\x42"
    sh.TableEntry("fwd")(is_default=True, action="drop").modify()
    [read] = list(sh.TableEntry("fwd")(is_default=True).read())
    assert read.action.action_name == "ShellIngress.drop"


def member(member_id: int, tag: int) -> sh.ActionProfileMember:
    m = sh.ActionProfileMember("ecmp_selector")(member_id=member_id, action="to_cpu")
    m.action["tag"] = str(tag)
    return m


def ecmp_entry(dst: int, **action: int) -> sh.TableEntry:
    """An entry of the indirect table; `action` is member_id=... or group_id=..."""
    entry = sh.TableEntry("ecmp")(**action)
    entry.match["hdr.ethernet.dst"] = str(dst)
    return entry


def test_action_profile_members_groups_and_indirect_table(net):
    dst = 0x0A0000000003
    member(1, 0x11).insert()
    member(2, 0x22).insert()
    member(1, 0x33).modify()
    read = {
        m.member_id: m.action["tag"].value for m in sh.ActionProfileMember("ecmp_selector").read()
    }
    assert read == {1: b"\x33", 2: b"\x22"}

    group = sh.ActionProfileGroup("ecmp_selector")(group_id=10)
    group.add(1).add(2)
    group.insert()
    [g] = list(sh.ActionProfileGroup("ecmp_selector").read())
    assert (g.group_id, sorted(m.member_id for m in g.members)) == (10, [1, 2])

    entry = ecmp_entry(dst, group_id=10)
    entry.insert()
    [read] = list(sh.TableEntry("ecmp").read())
    assert read.group_id == 10

    # The selector spreads sources over both members and keeps each source on one.
    sources = range(1, 33)
    spread = tags(net.send(*(net.frame(dst, src) for src in sources)))
    assert set(spread) == {0x33, 0x22}, spread
    assert tags(net.send(*(net.frame(dst, src) for src in sources))) == spread

    with pytest.raises(P4RuntimeWriteException) as e:
        sh.ActionProfileMember("ecmp_selector")(member_id=2).delete()
    assert write_error(e)[0] == grpc.StatusCode.FAILED_PRECONDITION.value[0]

    group = sh.ActionProfileGroup("ecmp_selector")(group_id=10)
    group.add(2)
    group.modify()
    [g] = list(sh.ActionProfileGroup("ecmp_selector").read())
    assert [m.member_id for m in g.members] == [2]
    assert set(tags(net.send(*(net.frame(dst, src) for src in sources)))) == {0x22}

    entry.delete()
    sh.ActionProfileGroup("ecmp_selector")(group_id=10).delete()
    sh.ActionProfileMember("ecmp_selector")(member_id=1).delete()
    sh.ActionProfileMember("ecmp_selector")(member_id=2).delete()
    assert list(sh.ActionProfileGroup("ecmp_selector").read()) == []
    assert list(sh.ActionProfileMember("ecmp_selector").read()) == []
    assert tags(net.send(net.frame(dst))) == [MISS]


def test_indirect_entry_modify_switches_from_group_to_member(net):
    dst = 0x0A000000000B
    member(3, 0x44).insert()
    sh.ActionProfileGroup("ecmp_selector")(group_id=11).add(3).insert()
    entry = ecmp_entry(dst, group_id=11)
    entry.insert()
    try:
        ecmp_entry(dst, member_id=3).modify()
        [read] = list(sh.TableEntry("ecmp").read())
        assert read.member_id == 3
        assert tags(net.send(net.frame(dst))) == [0x44]
    finally:
        entry.delete()
        sh.ActionProfileGroup("ecmp_selector")(group_id=11).delete()
        sh.ActionProfileMember("ecmp_selector")(member_id=3).delete()


def test_indirect_counter_counts_packets_and_is_writable(net):
    frame = net.frame(0x0A0000000004)
    assert tags(net.send(frame, frame, frame, index=5)) == [MISS] * 3
    [c] = list(sh.CounterEntry("index_counter")(index=5).read())
    assert (c.packet_count, c.byte_count) == (3, 3 * (len(frame) + 2))

    c = sh.CounterEntry("index_counter")(index=5)
    c.packet_count = 100
    c.byte_count = 1000
    c.modify()
    [c] = list(sh.CounterEntry("index_counter")(index=5).read())
    assert (c.packet_count, c.byte_count) == (100, 1000)

    every = {c.index: c.packet_count for c in sh.CounterEntry("index_counter").read()}
    assert len(every) == 128 and every[5] == 100


def test_counter_index_beyond_the_array_is_out_of_range(net):
    # P4Runtime 9.4: MODIFY of a CounterEntry past the array's size is OUT_OF_RANGE.
    c = sh.CounterEntry("index_counter")(index=500)
    c.packet_count = 1
    with pytest.raises(P4RuntimeWriteException) as e:
        c.modify()
    assert write_error(e)[0] == grpc.StatusCode.OUT_OF_RANGE.value[0]


def test_meter_config_colours_packets(net):
    meter = sh.MeterEntry("index_meter")(index=6)
    meter.cir, meter.cburst, meter.pir, meter.pburst = 1, 1, 1, 2
    meter.modify()
    [m] = list(sh.MeterEntry("index_meter")(index=6).read())
    assert (m.cir, m.cburst, m.pir, m.pburst) == (1, 1, 1, 2)

    # At one packet a second, the second packet sent back to back exceeds the committed
    # burst and the third the peak burst.
    frame = net.frame(0x0A0000000005)
    colours = [p["color"] for p in net.send(frame, frame, frame, index=6)]
    assert colours == [GREEN, YELLOW, RED]

    sh.MeterEntry("index_meter")(index=6).modify()  # no config: the meter passes everything
    [m] = list(sh.MeterEntry("index_meter")(index=6).read())
    assert not m.msg().HasField("config")
    assert [p["color"] for p in net.send(frame, frame, frame, index=6)] == [GREEN] * 3


def register_entity(index: int, value: int | None = None) -> p4runtime_pb2.Entity:
    # 0.0.6 has no RegisterEntry object (nor registers in its P4Info context).
    [register] = [
        r for r in sh.client.get_p4info().registers if r.preamble.alias == "index_register"
    ]
    entity = p4runtime_pb2.Entity()
    entry = entity.register_entry
    entry.register_id = register.preamble.id
    entry.index.index = index
    if value is not None:
        entry.data.bitstring = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
    return entity


def read_register(index: int) -> int:
    [reply] = list(sh.client.read_one(register_entity(index)))
    [entity] = reply.entities
    return int.from_bytes(entity.register_entry.data.bitstring, "big")


def test_register_write_read_and_packets(net, tmp_path):
    # The shell's Write command sends a WriteRequest from a text file; its client reads.
    request = p4runtime_pb2.WriteRequest()
    update = request.updates.add()
    update.type = p4runtime_pb2.Update.MODIFY
    update.entity.CopyFrom(register_entity(7, 41))
    path = tmp_path / "register.txt"
    path.write_text(str(request))
    sh.Write(str(path))
    assert read_register(7) == 41

    frame = net.frame(0x0A0000000006)
    assert [p["reg_value"] for p in net.send(frame, frame, index=7)] == [41, 42]
    assert read_register(7) == 43


def test_multicast_group_replicates_to_its_replicas(net):
    dst = 0x0A0000000007
    sh.MulticastGroupEntry(3).add(CPU_PORT, 1).add(CPU_PORT, 2).insert()
    [g] = list(sh.MulticastGroupEntry(3).read())
    assert sorted((r.egress_port, r.instance) for r in g.replicas) == [
        (CPU_PORT, 1),
        (CPU_PORT, 2),
    ]
    fwd_entry(dst, "flood", group="3").insert()

    frame = net.frame(dst)
    packets = net.send(frame)
    assert sorted(p["egress_rid"] for p in packets) == [1, 2]
    assert {(p["instance_type"], p["payload"]) for p in packets} == {(REPLICATION, frame)}

    sh.MulticastGroupEntry(3).add(CPU_PORT, 4).add(CPU_PORT, 5).add(CPU_PORT, 6).modify()
    assert sorted(p["egress_rid"] for p in net.send(net.frame(dst))) == [4, 5, 6]

    with pytest.raises(P4RuntimeWriteException) as e:
        sh.MulticastGroupEntry(3).add(CPU_PORT, 1).insert()
    assert write_error(e)[0] == grpc.StatusCode.ALREADY_EXISTS.value[0]

    sh.MulticastGroupEntry(3).delete()
    assert list(sh.MulticastGroupEntry().read()) == []
    assert net.send(net.frame(dst)) == []
    fwd_entry(dst, "flood", group="3").delete()


def test_clone_session_mirrors_to_its_port(net):
    dst = 0x0A0000000008
    sh.CloneSessionEntry(100).add(CPU_PORT, 1).insert()
    [s] = list(sh.CloneSessionEntry(100).read())
    assert [(r.egress_port, r.instance) for r in s.replicas] == [(CPU_PORT, 1)]
    fwd_entry(dst, "mirror", session="100", tag="0x55").insert()

    frame = net.frame(dst)
    packets = net.send(frame)
    by_type = {p["instance_type"]: p for p in packets}
    assert len(packets) == 2 and set(by_type) == {NORMAL, INGRESS_CLONE}, packets
    assert by_type[NORMAL]["tag"] == 0x55
    assert by_type[INGRESS_CLONE]["payload"] == by_type[NORMAL]["payload"] == frame

    sh.CloneSessionEntry(100).add(CPU_PORT, 7).modify()
    [s] = list(sh.CloneSessionEntry(100).read())
    assert [(r.egress_port, r.instance) for r in s.replicas] == [(CPU_PORT, 7)]
    packets = net.send(net.frame(dst))
    assert sorted(p["instance_type"] for p in packets) == [NORMAL, INGRESS_CLONE]

    sh.CloneSessionEntry(100).delete()
    assert list(sh.CloneSessionEntry().read()) == []
    assert [p["instance_type"] for p in net.send(net.frame(dst))] == [NORMAL]
    fwd_entry(dst, "mirror", session="100", tag="0x55").delete()
