"""The switch lifecycle against a stand-in binary: command line, readiness from /proc (in a
network namespace of the harness's topology), failure reports, stop by PID."""

import os
import signal
import sys
from pathlib import Path

import pytest

from ptf_harness.switch import SwitchError, SwitchProcess, is_bmv2
from ptf_harness.topology import SWITCH_MGMT_IP, Topology

STANDIN = Path(__file__).with_name("standin_switch.py")


def standin(tmp_path, monkeypatch, mode, **kw):
    monkeypatch.setenv("STANDIN_MODE", mode)
    script = tmp_path / "p4-switch"
    script.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
    script.chmod(0o755)
    return SwitchProcess(
        binary=str(script),
        interfaces={1: "sw1", 2: "sw2"},
        grpc_port=kw.pop("port", 19559),
        log_path=tmp_path / "switch.log",
        port_config=tmp_path / "ports.json",
        **kw,
    )


def test_command_line_is_simple_switch_grpc_s():
    sw = SwitchProcess(
        "build/bin/p4-switch", {2: "sw2", 1: "sw1"}, port_config=Path("p.json"),
        stats_addr="169.254.77.1:9090",
    )  # fmt: skip
    assert sw.command() == [
        "build/bin/p4-switch", "--device-id", "1", "-i", "1@sw1", "-i", "2@sw2", "--no-p4",
        "--", "--grpc-server-addr", "0.0.0.0:9559", "--cpu-port", "255",
        "--priority-queues", "8", "--port-config", "p.json", "--stats-addr", "169.254.77.1:9090",
    ]  # fmt: skip
    bmv2 = SwitchProcess(
        "/usr/bin/simple_switch_grpc", {1: "sw1"}, port_config=Path("p.json"), stats_addr="x:1"
    )
    cmd = bmv2.command()
    assert is_bmv2(bmv2.binary) and "--port-config" not in cmd and "--stats-addr" not in cmd


def test_ready_when_listening_then_stopped_by_pid(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_DELAY", "0.3")
    sw = standin(tmp_path, monkeypatch, "listen")
    sw.start()
    try:
        waited = sw.wait_ready(timeout=10)
        assert waited >= 0.3
        assert sw.listening()
    finally:
        code = sw.stop()
    assert code == -signal.SIGTERM
    assert "argv: --device-id 1 -i 1@sw1 -i 2@sw2 --no-p4 --" in sw.log_path.read_text()


def test_exit_before_listening_reports_status_and_log(tmp_path, monkeypatch):
    sw = standin(tmp_path, monkeypatch, "exit")
    sw.start()
    expected = r"(?s)exited with status 3 before listening.*\| cannot open interface"
    with pytest.raises(SwitchError, match=expected):
        sw.wait_ready(timeout=10)
    assert sw.stop() == 3


def test_never_listening_times_out(tmp_path, monkeypatch):
    sw = standin(tmp_path, monkeypatch, "silent")
    sw.start()
    try:
        with pytest.raises(SwitchError, match="did not listen on port 19559 within 0.5 s"):
            sw.wait_ready(timeout=0.5)
    finally:
        sw.stop()


def test_sigterm_ignored_gets_sigkill(tmp_path, monkeypatch):
    sw = standin(tmp_path, monkeypatch, "stubborn")
    sw.start()
    sw.wait_ready(timeout=10)
    assert sw.stop(timeout=0.5) == -signal.SIGKILL


def test_readiness_seen_inside_the_switch_namespace(tmp_path, monkeypatch):
    topo = Topology(ports=2, prefix=f"llut{os.getpid() % 10000}")
    topo.up()
    try:
        sw = standin(tmp_path, monkeypatch, "listen", exec_prefix=topo.exec_prefix(topo.switch_ns))
        sw.grpc_host = SWITCH_MGMT_IP
        sw.start()
        try:
            sw.wait_ready(timeout=10)
        finally:
            sw.stop()
    finally:
        topo.down()
    assert not topo.exists()
