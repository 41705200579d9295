"""The controller against the real switch: p4-compile's output loaded into p4-switch over P4Runtime.

Needs `make build` (build/bin/p4-compile and build/bin/p4-switch), which `make test` runs first.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lossless_ctl import config_db
from lossless_ctl.cli import main as ctl_main
from lossless_ctl.client import P4RuntimeClient
from lossless_ctl.loader import pipeline_cookie, plan, read_back, read_pipeline
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.port_config import tm_config
from lossless_ctl.sai import derive
from lossless_kit.switch import SwitchProcess, free_port
from lossless_paths import BIN
from lossless_paths import PTF_CONFIG_DB as CONFIG

DEVICE_ID = 1


@pytest.fixture(scope="module")
def pipeline(compiled_pipeline) -> Path:
    for tool in ("p4-compile", "p4-switch"):
        assert (BIN / tool).is_file(), f"{BIN / tool} missing: run `make build` first"
    return compiled_pipeline


def portless_switch(workdir: Path, port_config: Path | None = None) -> SwitchProcess:
    """p4-switch without ports or program, as the controller meets it before `load`."""
    return SwitchProcess(
        BIN / "p4-switch",
        device_id=DEVICE_ID,
        grpc_addr=f"127.0.0.1:{free_port()}",
        stats_addr=f"127.0.0.1:{free_port()}",
        port_config=port_config,
        log_path=workdir / "p4-switch.log",
    )


@pytest.fixture
def server(tmp_path):
    with portless_switch(tmp_path) as sw:
        yield sw


@pytest.fixture
def switch(server) -> str:
    return server.grpc_addr


def _load(switch: str, pipeline: Path, *extra: str) -> int:
    return ctl_main(
        [
            "load",
            "--config",
            str(CONFIG),
            "--switch",
            switch,
            "--pipeline",
            str(pipeline),
            "--device-id",
            str(DEVICE_ID),
            "--no-progress",
            *extra,
        ]
    )


def test_load_reads_back_exactly_what_the_config_describes(switch, pipeline, capsys):
    assert _load(switch, pipeline, "--read-back") == 0
    out = capsys.readouterr().out
    assert "read-back: the switch holds exactly what the config describes" in out


def test_restarted_controller_writes_only_the_difference(switch, pipeline, capsys):
    assert _load(switch, pipeline) == 0
    first = re.search(r"written (\d+) of (\d+) updates", capsys.readouterr().out)
    assert first and first[1] == first[2] and int(first[1]) > 0, first
    assert _load(switch, pipeline, "--reconcile") == 0
    again = capsys.readouterr().out
    assert "switch state read" in again and "written 0 of 0 updates" in again, again


def test_load_configures_the_running_switchs_ports(tmp_path, pipeline, capsys):
    # The switch starts with a traffic manager whose ports are all 100M without PFC.
    start = tmp_path / "ports.json"
    ports = [{"port": p, "rate_bps": 100_000_000} for p in (1, 2, 3, 4)]
    start.write_text(json.dumps({"buffer": {"total_bytes": 1_000_000}, "ports": ports}))
    with portless_switch(tmp_path, port_config=start) as sw:
        assert _load(sw.grpc_addr, pipeline, "--stats", sw.stats_addr) == 0
        out = capsys.readouterr().out
        assert f"port configuration: 4 ports configured at {sw.stats_addr}" in out
        cfg = config_db.parse_checked(config_db.load_files([CONFIG]))
        for want in tm_config(derive(cfg), cfg.chip)["ports"]:
            with urllib.request.urlopen(f"http://{sw.stats_addr}/ports/{want['port']}") as resp:
                got = json.loads(resp.read())
            for key in ("rate_bps", "mtu", "pfc_enable"):
                assert got.get(key) == want.get(key), (want["port"], key, got)
            if "pfcwd" in want:
                assert got["pfcwd"]["detection_time_ms"] == want["pfcwd"]["detection_time_ms"]


def test_port_configuration_needs_a_traffic_manager(server, pipeline, capsys):
    assert _load(server.grpc_addr, pipeline, "--stats", server.stats_addr) == 1
    err = capsys.readouterr().err
    assert f"port configuration: http://{server.stats_addr}/ports/1: 400: no traffic manager" in err


def _show(server: SwitchProcess, capsys, *what: str) -> dict:
    capsys.readouterr()
    argv = ["show", *what, "--switch", server.grpc_addr, "--stats", server.stats_addr, "--json"]
    assert ctl_main([*argv, "--config", str(CONFIG), "--device-id", str(DEVICE_ID)]) == 0
    return json.loads(capsys.readouterr().out)


def _clear(server: SwitchProcess, capsys, *what: str) -> str:
    capsys.readouterr()
    argv = ["clear", *what, "--switch", server.grpc_addr, "--stats", server.stats_addr]
    assert ctl_main([*argv, "--device-id", str(DEVICE_ID)]) == 0
    return capsys.readouterr().out


def _write_cells(
    server: SwitchProcess, pipeline: Path, cells: list[tuple[str, str, int, int]]
) -> None:
    """(counter|register, name, index, value): what traffic would have left in the pipeline."""
    index = P4InfoIndex(read_pipeline(pipeline).p4info)
    with P4RuntimeClient(server.grpc_addr, device_id=DEVICE_ID) as client:
        client.arbitrate()
        pb = client.pb
        updates = []
        for kind, name, i, value in cells:
            entity = pb.Entity()
            if kind == "counter":
                entity.counter_entry.counter_id = index.counter(name).preamble.id
                entity.counter_entry.index.index = i
                entity.counter_entry.data.packet_count = value
                entity.counter_entry.data.byte_count = value * 100
            else:
                entity.register_entry.register_id = index.register(name).preamble.id
                entity.register_entry.index.index = i
                # P4Runtime's canonical form: no leading zero bytes.
                width = max(1, (value.bit_length() + 7) // 8)
                entity.register_entry.data.bitstring = value.to_bytes(width, "big")
            updates.append(pb.Update(type=pb.Update.MODIFY, entity=entity))
        assert client.write(updates).errors == []


def test_clear_commands_reset_what_they_name(server, pipeline, capsys):
    assert _load(server.grpc_addr, pipeline) == 0
    # Ethernet0 is port 1: PG 3 is cell 11, PG 4 cell 12, PG 1 cell 9.
    _write_cells(server, pipeline, [
        ("register", "pg_shared_peak", 11, 1500),
        ("register", "pg_headroom_peak", 11, 700),
        ("register", "pg_headroom_peak", 12, 9),
        ("counter", "pfc_sent", 11, 5),
        ("counter", "pg_dropped", 9, 3),
    ])  # fmt: skip
    shared = _show(server, capsys, "priority-group", "watermark", "shared")["Ethernet0"]
    headroom = _show(server, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]
    assert [shared[f"PG{pg}"]["shared"] for pg in range(8)] == [0, 0, 0, 1500, 0, 0, 0, 0]
    assert [headroom[f"PG{pg}"]["headroom"] for pg in range(8)] == [0, 0, 0, 700, 9, 0, 0, 0]
    drops = _show(server, capsys, "priority-group", "drop", "counters")["Ethernet0"]
    assert drops == [0, 3, 0, 0, 0, 0, 0, 0]

    # Each clear resets its own cells only: the cells written above that are not zero.
    out = _clear(server, capsys, "priority-group", "watermark", "headroom")
    assert "(2 pipeline cells reset)" in out, out
    headroom = _show(server, capsys, "priority-group", "watermark", "headroom")["Ethernet0"]
    assert all(headroom[f"PG{pg}"]["headroom"] == 0 for pg in range(8))
    assert headroom["PG3"]["shared"] == 1500
    _clear(server, capsys, "watermarks")
    shared = _show(server, capsys, "priority-group", "watermark", "shared")["Ethernet0"]
    assert shared["PG3"]["shared"] == 0
    assert _show(server, capsys, "pfc", "counters")["Ethernet0"]["tx"][3] == 5
    _clear(server, capsys, "pfccounters")
    assert _show(server, capsys, "pfc", "counters")["Ethernet0"]["tx"] == [0] * 8
    assert _show(server, capsys, "priority-group", "drop", "counters")["Ethernet0"][1] == 3
    _clear(server, capsys, "all")
    assert _show(server, capsys, "priority-group", "drop", "counters")["Ethernet0"] == [0] * 8

    # Cleared cells take new values again.
    _write_cells(server, pipeline, [("register", "pg_shared_peak", 11, 42)])
    shared = _show(server, capsys, "priority-group", "watermark", "shared")["Ethernet0"]
    assert shared["PG3"]["shared"] == 42


def test_clear_errors_name_the_endpoint(server, pipeline, capsys):
    assert _load(server.grpc_addr, pipeline) == 0
    capsys.readouterr()
    unused = f"127.0.0.1:{free_port()}"
    argv = ["clear", "counters", "--switch", server.grpc_addr, "--stats", unused]
    assert ctl_main(argv) == 1
    err = capsys.readouterr().err
    assert f"clear: http://{unused}/clear?scope=ports" in err, err
    with pytest.raises(SystemExit) as exit_info:
        ctl_main(["clear", "everything", "--switch", server.grpc_addr])
    assert exit_info.value.code == 2
    assert "clear 'everything': known are all, counters" in capsys.readouterr().err


def _wait_for(condition, what: str, timeout_s: float = 90.0) -> None:
    """Bounds a wait that would otherwise hang; the time it takes is not what is tested."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.1)


def test_restarted_switch_is_replayed(server, pipeline, tmp_path):
    cfg = config_db.parse_checked(config_db.load_files([CONFIG]))
    loaded = read_pipeline(pipeline)
    _, program = plan(cfg, loaded.p4info)

    def in_sync() -> list[str]:
        with P4RuntimeClient(server.grpc_addr, device_id=DEVICE_ID) as client:
            client.connect()
            assert client.pipeline_cookie() == pipeline_cookie(loaded)
            return read_back(client, loaded, program)

    log = tmp_path / "run.log"
    cmd = [
        sys.executable, "-m", "lossless_ctl.cli", "run", "--config", str(CONFIG),
        "--switch", server.grpc_addr, "--pipeline", str(pipeline),
        "--device-id", str(DEVICE_ID), "--reconnect-timeout", "5",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: "written" in log.read_text(), "the first load")
        first = re.findall(r"written (\d+) of (\d+) updates", log.read_text())
        assert first[0][0] == first[0][1] and int(first[0][0]) > 0, log.read_text()
        assert in_sync() == []

        server.stop(check=True)  # the switch restarts with nothing: no pipeline, no entries
        server.start()
        server.wait_ready()
        _wait_for(lambda: log.read_text().count("written") == 2, "the replay")
        text = log.read_text()
        assert "stream lost; reconnecting to replay" in text, text
        assert text.count("pipeline set in") == 2, text
        again = re.findall(r"written (\d+) of (\d+) updates", text)
        assert again[1] == first[0], text
        assert in_sync() == []
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()


def test_every_error_of_a_large_failing_batch_reaches_the_client(server, pipeline):
    """Issue 22: 1000 failed updates in one WriteRequest give 1000 per-update errors, each with
    the code the spec gives its failure, although their trailers are far above gRPC's default
    16 KiB metadata limit (the client raises it)."""
    assert _load(server.grpc_addr, pipeline) == 0
    index = P4InfoIndex(read_pipeline(pipeline).p4info)
    route = index.table("LosslessIngress.ipv4_route")
    dst = index.match_field(route, "dst").id
    no_route = index.action("LosslessIngress.no_route").preamble.id
    counter = index.counter("LosslessIngress.port_rx_dropped")
    with P4RuntimeClient(server.grpc_addr, device_id=DEVICE_ID) as client:
        client.arbitrate()
        pb = client.pb
        updates, expected = [], []
        for i in range(1000):
            entity = pb.Entity()
            prefix = bytes([198, 18, i >> 8, i & 0xFF])
            if i % 3 == 2:
                # Spec 9.4: an index past the counter array.
                entity.counter_entry.counter_id = counter.preamble.id
                entity.counter_entry.index.index = counter.size + i
                updates.append(pb.Update(type=pb.Update.MODIFY, entity=entity))
                expected.append("OUT_OF_RANGE")
                continue
            entry = entity.table_entry
            entry.table_id = route.preamble.id
            entry.action.action.action_id = no_route
            field = entry.match.add(field_id=dst)
            if i % 3 == 0:
                # Spec 9.1: deleting an entry that is not there.
                field.lpm.value, field.lpm.prefix_len = prefix, 32
                updates.append(pb.Update(type=pb.Update.DELETE, entity=entity))
                expected.append("NOT_FOUND")
            else:
                # Spec 8.3: an LPM value with bits set past its prefix.
                field.lpm.value, field.lpm.prefix_len = prefix[:3] + b"\x01", 24
                updates.append(pb.Update(type=pb.Update.INSERT, entity=entity))
                expected.append("INVALID_ARGUMENT")
        result = client.write(updates, batch_size=1000)
    assert result.written == 0
    assert [e.index for e in result.errors] == list(range(1000))
    assert [e.code for e in result.errors] == expected
    assert all(e.message for e in result.errors)


def test_each_requests_outcome_reaches_the_caller_while_later_requests_are_made(server, pipeline):
    """P4RuntimeClient.write's `done`: each WriteRequest's outcome (its first update's index,
    its count, its per-update errors as the switch gave them) is handed back as the request
    completes, while the updates of later requests are still to be made: with one request in
    flight, request k-2's outcome is in before request k's first update is taken."""
    assert _load(server.grpc_addr, pipeline) == 0
    index = P4InfoIndex(read_pipeline(pipeline).p4info)
    route = index.table("LosslessIngress.ipv4_route")
    dst = index.match_field(route, "dst").id
    no_route = index.action("LosslessIngress.no_route").preamble.id
    outcomes: list[tuple] = []
    seen: list[int] = []  # outcomes in when each request's first update is taken

    def updates(pb):
        for i in range(50):
            if i % 10 == 0:
                seen.append(len(outcomes))
            entity = pb.Entity()
            entity.table_entry.table_id = route.preamble.id
            entity.table_entry.action.action.action_id = no_route
            field = entity.table_entry.match.add(field_id=dst)
            field.lpm.value, field.lpm.prefix_len = bytes([198, 19, 0, i]), 32
            # Spec 9.1: deleting an entry that is not there fails NOT_FOUND.
            kind = pb.Update.DELETE if i % 7 == 3 else pb.Update.INSERT
            yield pb.Update(type=kind, entity=entity)

    with P4RuntimeClient(server.grpc_addr, device_id=DEVICE_ID) as client:
        client.arbitrate()
        result = client.write(
            updates(client.pb), batch_size=10, in_flight=1, done=lambda *o: outcomes.append(o)
        )
    assert all(k - 1 <= n <= k for k, n in enumerate(seen)), seen
    assert [(first, count) for first, count, _ in outcomes] == [(k * 10, 10) for k in range(5)]
    errors = [(e.index, e.code) for _, _, request in outcomes for e in request]
    assert errors == [(i, "NOT_FOUND") for i in range(50) if i % 7 == 3]
    assert result.written == 50 - len(errors)


def test_sighup_reloads_the_config_and_writes_only_the_difference(server, pipeline, tmp_path):
    """`config reload`: run reads its config again on SIGHUP and the switch ends up as the
    new config says (read back against that config's own plan), writing only what changed."""
    base = json.loads(CONFIG.read_text())
    path = tmp_path / "config_db.json"
    path.write_text(json.dumps(base))
    log = tmp_path / "run.log"
    cmd = [
        sys.executable, "-m", "lossless_ctl.cli", "run", "--config", str(path),
        "--switch", server.grpc_addr, "--pipeline", str(pipeline),
        "--device-id", str(DEVICE_ID),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: "run: ready (session 1)" in log.read_text(), "the first load")
        changed = json.loads(json.dumps(base))
        del changed["STATIC_ROUTE"]["20.1.2.0/24"]
        changed["STATIC_ROUTE"]["20.9.0.0/16"] = {"nexthop": "10.2.0.2"}
        path.write_text(json.dumps(changed))
        proc.send_signal(signal.SIGHUP)
        _wait_for(lambda: "run: ready (session 2)" in log.read_text(), "the reload")
        text = log.read_text()
        assert "run: reload:" in text and "pipeline kept" in text, text
        # One route deleted, one added: two updates, not the whole config again.
        assert re.findall(r"written (\d+) of (\d+) updates", text)[-1] == ("2", "2"), text
        cfg = config_db.parse_checked(config_db.load_files([path]))
        loaded = read_pipeline(pipeline)
        _, program = plan(cfg, loaded.p4info)
        with P4RuntimeClient(server.grpc_addr, device_id=DEVICE_ID) as client:
            client.connect()
            assert read_back(client, loaded, program) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()
