"""The counter and watermark show commands against the real p4-switch running the compiled
pipeline, with packets sent through veth ports (root: network namespaces).

The switch is loaded with ptf-tests/config/config_db.json: Ethernet0..12 are ports 1..4, at
1G, 1G, 10M and 10M; DSCP 3 is TC 3, PG 3 and queue 3, lossless with PFC on 3 and 4; the
watchdog watches Ethernet12. Every expected count is what this test sent or what the hosts
received, never a number written in by hand.
"""

from __future__ import annotations

import json
import struct
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from lossless_ctl import config_db
from lossless_ctl.cli import main as ctl_main
from lossless_ctl.port_config import tm_config
from lossless_ctl.sai import derive
from lossless_kit.vethlab import SwitchLab
from lossless_paths import PTF_CONFIG_DB as CONFIG

ROUTER_MAC = "02:00:00:00:00:01"
HOST1_MAC = "02:00:00:00:01:02"  # NEIGH Ethernet0|10.1.0.2
PFC_DST = "01:80:c2:00:00:01"
FRAME_LEN = 200


@pytest.fixture(scope="module")
def lab(tmp_path_factory, compiled_pipeline):
    work = tmp_path_factory.mktemp("lab")
    cfg = config_db.parse_checked(config_db.load_files([CONFIG]))
    ports_json = work / "ports.json"
    ports_json.write_text(json.dumps(tm_config(derive(cfg), cfg.chip)))
    with SwitchLab(4, work, port_config=ports_json) as lab:
        argv = ["load", "--config", str(CONFIG), "--switch", lab.grpc_addr]
        argv += ["--pipeline", str(compiled_pipeline), "--no-progress"]
        assert ctl_main(argv) == 0
        lab.receive(timeout=0.3)  # nothing is expected; drain whatever start-up sent
        yield lab


def show(lab: SwitchLab, capsys, *what: str) -> dict:
    capsys.readouterr()
    argv = ["show", *what, "--switch", lab.grpc_addr, "--stats", lab.stats_addr]
    assert ctl_main([*argv, "--config", str(CONFIG), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def clear(lab: SwitchLab, capsys, *what: str) -> None:
    argv = ["clear", *what, "--switch", lab.grpc_addr, "--stats", lab.stats_addr]
    assert ctl_main(argv) == 0
    capsys.readouterr()


def show_text(lab: SwitchLab, capsys, *what: str) -> str:
    capsys.readouterr()
    argv = ["show", *what, "--switch", lab.grpc_addr, "--stats", lab.stats_addr]
    assert ctl_main([*argv, "--config", str(CONFIG)]) == 0
    return capsys.readouterr().out


def udp(dst: str, dscp: int, length: int = FRAME_LEN, sport: int = 1000) -> bytes:
    pkt = Ether(src=HOST1_MAC, dst=ROUTER_MAC) / IP(src="10.1.0.2", dst=dst, tos=dscp << 2)
    pkt = pkt / UDP(sport=sport, dport=4791)
    frame = bytes(pkt)
    return frame + bytes(length - len(frame))


def pfc(times: dict[int, int]) -> bytes:
    """An 802.1Qbb frame (opcode 0x0101, class-enable vector, eight timers), padded to 60."""
    vector = sum(1 << p for p in times)
    body = struct.pack("!HH", 0x0101, vector)
    body += b"".join(struct.pack("!H", times.get(p, 0)) for p in range(8))
    frame = bytes.fromhex(PFC_DST.replace(":", "")) + bytes.fromhex("020000000404") + b"\x88\x08"
    frame += body
    return frame + bytes(60 - len(frame))


def pfc_priorities(frame: bytes) -> list[int]:
    """The priorities a received PFC frame names (class-enable bits), [] if not PFC."""
    if frame[12:14] != b"\x88\x08" or frame[14:16] != b"\x01\x01":
        return []
    vector = int.from_bytes(frame[16:18], "big")
    return [p for p in range(8) if vector >> p & 1]


def test_routed_packets_are_counted_per_interface_and_queue(lab, capsys):
    before_if = show(lab, capsys, "interfaces", "counters")
    before_q = show(lab, capsys, "queue", "counters")
    count = 25
    for i in range(count):
        lab.send(1, udp("20.1.2.5", dscp=3, sport=1000 + i))  # 20.1.2.0/24 -> Ethernet4
    got = [f for port, f in lab.receive(timeout=2.0) if port == 2]
    assert len(got) == count, f"{len(got)} of {count} routed packets reached Ethernet4"

    after_if = show(lab, capsys, "interfaces", "counters")
    assert after_if["Ethernet0"]["rx_ok"] - before_if["Ethernet0"]["rx_ok"] == count
    assert after_if["Ethernet4"]["tx_ok"] - before_if["Ethernet4"]["tx_ok"] == len(got)
    assert after_if["Ethernet4"]["tx_drp"] == before_if["Ethernet4"]["tx_drp"]
    after_q = show(lab, capsys, "queue", "counters")
    q3, q3_before = after_q["Ethernet4"]["UC3"], before_q["Ethernet4"]["UC3"]
    assert q3["totalpacket"] - q3_before["totalpacket"] == len(got)
    assert q3["totalbytes"] - q3_before["totalbytes"] == sum(len(f) for f in got)
    assert q3["droppacket"] == q3_before["droppacket"] == 0
    for queue in ("UC0", "UC1", "UC2", "UC4", "UC5", "UC6", "UC7"):
        assert (
            after_q["Ethernet4"][queue]["totalpacket"]
            == before_q["Ethernet4"][queue]["totalpacket"]
        ), queue

    text = show_text(lab, capsys, "interfaces", "counters")
    header = text.splitlines()[0].split()
    assert header[:3] == ["IFACE", "STATE", "RX_OK"] and header[-1] == "TX_OVR"
    row = next(line.split() for line in text.splitlines() if line.split()[:1] == ["Ethernet4"])
    # Without --period the rates are N/A (one word), so words and columns line up.
    assert row[header.index("TX_OK")] == f"{after_if['Ethernet4']['tx_ok']:,}"
    assert row[header.index("TX_BPS")] == "N/A"


def test_pfc_frames_received_and_generated_are_shown(lab, capsys):
    before = show(lab, capsys, "pfc", "counters")
    # Rx: PFC frames into Ethernet8 for priorities 3 and 4 (short pauses).
    sent_rx = 7
    for _ in range(sent_rx):
        lab.send(3, pfc({3: 1, 4: 1}))
    # Tx: a lossless burst from Ethernet0 to the 10M Ethernet8 (20.0.0.0/8) fills PG 3 of
    # Ethernet0 past its pause point (size 8000 + static_th 0): the pipeline sends XOFF, then
    # XON when the queue drains.
    # Python sends slower than a 1G port, so the burst is long enough for the 10M queue to
    # build past the pause point whatever the sender's pace.
    burst = [udp("20.9.9.9", dscp=3, length=1000, sport=2000 + i) for i in range(40)]
    for frame in burst:
        lab.send(1, frame)
    frames = lab.receive(timeout=2.0, quiet=1.0)
    generated = [0] * 8
    for port, frame in frames:
        if port == 1:
            for p in pfc_priorities(frame):
                generated[p] += 1
    assert generated[3] >= 2, f"no XOFF/XON toward Ethernet0: {frames[:3]}"

    after = show(lab, capsys, "pfc", "counters")
    rx = [a - b for a, b in zip(after["Ethernet8"]["rx"], before["Ethernet8"]["rx"], strict=True)]
    assert rx == [sent_rx if p in (3, 4) else 0 for p in range(8)]
    tx = [a - b for a, b in zip(after["Ethernet0"]["tx"], before["Ethernet0"]["tx"], strict=True)]
    assert tx == generated

    text = show_text(lab, capsys, "pfc", "counters")
    rx_table, tx_table = text.strip().split("\n\n")
    assert rx_table.splitlines()[0].split() == ["Port", "Rx", *(f"PFC{p}" for p in range(8))]
    assert tx_table.splitlines()[0].split() == ["Port", "Tx", *(f"PFC{p}" for p in range(8))]
    row = next(r.split() for r in tx_table.splitlines() if r.split()[:1] == ["Ethernet0"])
    assert row[1:] == [f"{v:,}" for v in after["Ethernet0"]["tx"]]

    # The burst built a queue at the 10M port: its watermark holds at least one packet and at
    # most the burst.
    wm = show(lab, capsys, "queue", "watermark", "unicast")["Ethernet8"]["UC3"]
    assert 1000 <= wm <= len(burst) * 1000
    # The PG paused, so it held bytes beyond its pause point (size 8000 + static_th 0, all of it
    # reserved): headroom, at most the profile's xoff (4000); nothing in the shared pool.
    pg = show(lab, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]["PG3"]
    assert 0 < pg["headroom"] <= 4000 and pg["shared"] == 0
    assert pg["occupancy_bytes"] == 0  # drained by now


def test_pfc_watchdog_storm_is_shown(lab, capsys):
    # Pause queue 3 of Ethernet12 for long (65535 quanta at 10M = 3.4 s), put packets in it,
    # and keep the pause up: after detection_time (200 ms) the watchdog storms and drops.
    lab.send(4, pfc({3: 0xFFFF}))
    time.sleep(0.05)  # the pause and the data enter on different ports' receive threads
    count = 5
    for i in range(count):
        lab.send(1, udp("20.1.9.9", dscp=3, sport=3000 + i))  # 20.1.0.0/16 -> Ethernet12
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:
        lab.send(4, pfc({3: 0xFFFF}))
        time.sleep(0.05)
    data = show(lab, capsys, "pfcwd", "stats")
    q = data["Ethernet12:3"]
    # Under load the XOFF stream may gap past restoration_time, so the storm may already be
    # restored; the status must agree with the counts either way.
    assert q["storm_detected"] == 1 and q["storm_restored"] in (0, 1)
    assert q["status"] == ("stormed" if q["storm_restored"] == 0 else "operational")
    left = [f for port, f in lab.receive(timeout=0.2) if port == 4 and not pfc_priorities(f)]
    assert (q["tx_ok"], q["tx_drop"]) == (len(left), count - len(left))
    assert q["tx_drop"] > 0
    text = show_text(lab, capsys, "pfcwd", "stats")
    assert text.splitlines()[0].split()[:2] == ["QUEUE", "STATUS"]
    # By now the storm may be restored (no XOFF for restoration_time); the counts stay.
    row = next(r.split() for r in text.splitlines() if r.split()[:1] == ["Ethernet12:3"])
    assert row[2].startswith("1/") and row[3] == f"{q['tx_ok']}/{q['tx_drop']}"


def burst(lab: SwitchLab, dscp: int, count: int, sport: int) -> list[tuple[int, bytes]]:
    """1000-byte frames from Ethernet0 to the 10M Ethernet8, built first and then sent back to
    back, faster than 10M drains, so the PG and the queue fill; every frame that comes out,
    once drained."""
    frames = [udp("20.9.9.9", dscp=dscp, length=1000, sport=sport + i) for i in range(count)]
    for frame in frames:
        lab.send(1, frame)
    return lab.receive(timeout=2.0, quiet=1.0)


def test_clear_commands_reset_and_counting_resumes(lab, capsys):
    def traffic(routed: int, blackholed: int, pfc_frames: int) -> None:
        for i in range(routed):
            lab.send(1, udp("20.1.2.5", dscp=3, sport=5000 + i))  # -> Ethernet4, queue 3
        for i in range(blackholed):
            lab.send(1, udp("192.0.2.9", dscp=0, sport=6000 + i))  # blackhole route
        for _ in range(pfc_frames):
            lab.send(3, pfc({3: 1}))
        got = [f for port, f in lab.receive(timeout=2.0) if port == 2]
        assert len(got) == routed

    traffic(4, 1, 2)
    before = show(lab, capsys, "interfaces", "counters")["Ethernet0"]
    assert before["rx_ok"] > 0 and before["rx_drp"] > 0
    for what in ("counters", "pfccounters", "queuecounters", "dropcounters"):
        clear(lab, capsys, what)
    interfaces = show(lab, capsys, "interfaces", "counters")
    for name, row in interfaces.items():
        assert [row[k] for k in ("rx_ok", "tx_ok", "rx_drp", "tx_drp")] == [0] * 4, name
    pfc_data = show(lab, capsys, "pfc", "counters")
    assert all(d["rx"] == d["tx"] == [0] * 8 for d in pfc_data.values()), pfc_data
    queues = show(lab, capsys, "queue", "counters")
    assert all(q["totalpacket"] == 0 for qs in queues.values() for q in qs.values())
    drops = show(lab, capsys, "dropcounters", "counts")
    assert set(drops["switch"].values()) == {0}
    assert all(p["rx_drps"] == 0 for p in drops["ports"].values())

    routed, blackholed, pfc_frames = 7, 2, 3
    traffic(routed, blackholed, pfc_frames)
    interfaces = show(lab, capsys, "interfaces", "counters")
    assert interfaces["Ethernet0"]["rx_ok"] == routed + blackholed
    assert interfaces["Ethernet0"]["rx_drp"] == blackholed
    assert interfaces["Ethernet4"]["tx_ok"] == routed
    assert interfaces["Ethernet8"]["rx_ok"] == pfc_frames  # MAC control frames count on the wire
    assert show(lab, capsys, "pfc", "counters")["Ethernet8"]["rx"] == [0, 0, 0, 3, 0, 0, 0, 0]
    assert show(lab, capsys, "queue", "counters")["Ethernet4"]["UC3"]["totalpacket"] == routed
    drops = show(lab, capsys, "dropcounters", "counts")
    assert drops["switch"]["route_action"] == blackholed
    assert drops["ports"]["Ethernet0"]["rx_drps"] == blackholed
    assert sum(drops["switch"].values()) == blackholed


def test_watermarks_and_pg_drops_clear_and_rise_again(lab, capsys):
    burst(lab, dscp=3, count=40, sport=7000)
    pg = show(lab, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]["PG3"]
    assert pg["headroom"] > 0
    assert show(lab, capsys, "queue", "watermark")["Ethernet8"]["UC3"] >= 1000
    clear(lab, capsys, "watermarks")
    pg = show(lab, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]["PG3"]
    assert pg["headroom"] == 0
    # The queue has drained: its watermark restarts from an empty queue.
    assert show(lab, capsys, "queue", "watermark")["Ethernet8"]["UC3"] == 0
    burst(lab, dscp=3, count=40, sport=7100)
    pg = show(lab, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]["PG3"]
    assert 0 < pg["headroom"] <= 4000
    assert show(lab, capsys, "queue", "watermark")["Ethernet8"]["UC3"] >= 1000

    # Lossy PG 1 (DSCP 10, static_th 5000): what does not fit is dropped by the pipeline,
    # counted for the PG, the port and the reason; its shared watermark is at most 5000.
    clear(lab, capsys, "priority-group", "drop", "counters")
    clear(lab, capsys, "dropcounters")
    sent = 60
    out = [f for port, f in burst(lab, dscp=10, count=sent, sport=8000) if port == 3]
    dropped = sent - len(out)
    assert dropped > 0, "the 10M port drained the burst as fast as it came"
    assert show(lab, capsys, "priority-group", "drop", "counters")["Ethernet0"][1] == dropped
    drops = show(lab, capsys, "dropcounters", "counts")
    assert drops["switch"]["lossy_threshold"] == dropped
    assert drops["ports"]["Ethernet0"]["rx_drps"] == dropped
    shared = show(lab, capsys, "priority-group", "watermark", "shared")["Ethernet0"]["PG1"]
    assert 4000 < shared["shared"] <= 5000
