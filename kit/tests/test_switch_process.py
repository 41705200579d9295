"""The switch process against a stand-in binary (tests/doubles/standin_switch.py): command line
for both switches, readiness from /proc (also inside a network namespace), failure reports,
restart, stop by PID."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

import standins
from lossless_kit.switch import SwitchError, SwitchProcess, free_port, is_bmv2


def standin(tmp_path, monkeypatch, mode, **kw):
    monkeypatch.setenv("STANDIN_MODE", mode)
    return SwitchProcess(
        standins.executable(tmp_path),
        interfaces={1: "sw1", 2: "sw2"},
        grpc_addr=kw.pop("grpc_addr", "127.0.0.1:19559"),
        log_path=tmp_path / "switch.log",
        port_config=tmp_path / "ports.json",
        **kw,
    )


def test_command_line_is_simple_switch_grpc_s():
    sw = SwitchProcess(
        "build/bin/p4-switch", {2: "sw2", 1: "sw1"}, port_config=Path("p.json"),
        grpc_addr="0.0.0.0:9559", stats_addr="169.254.77.1:9090",
    )  # fmt: skip
    assert sw.command() == [
        "build/bin/p4-switch", "--device-id", "1", "-i", "1@sw1", "-i", "2@sw2", "--no-p4",
        "--", "--grpc-server-addr", "0.0.0.0:9559", "--cpu-port", "255",
        "--priority-queues", "8", "--port-config", "p.json", "--stats-addr", "169.254.77.1:9090",
    ]  # fmt: skip
    assert sw.ports() == [9559, 9090]


def test_bmv2_gets_its_program_and_target_options_but_not_ours():
    bmv2 = SwitchProcess(
        "/usr/bin/simple_switch_grpc", {1: "s1-eth1"}, json_path=Path("l.json"), device_id=3,
        port_config=Path("p.json"), stats_addr="127.0.0.1:9090",
    )  # fmt: skip
    assert bmv2.command() == [
        "/usr/bin/simple_switch_grpc", "--device-id", "3", "-i", "1@s1-eth1", "l.json",
        "--", "--grpc-server-addr", "127.0.0.1:9559", "--cpu-port", "255",
        "--priority-queues", "8",
    ]  # fmt: skip
    assert bmv2.ports() == [9559]  # no statistics endpoint to wait for


def test_runtime_cli_port_and_the_cli_beside_the_switch(tmp_path):
    (tmp_path / "simple_switch_CLI").write_text("")
    sw = SwitchProcess(
        tmp_path / "simple_switch_grpc", {1: "sw1"}, thrift_port=9091,
        exec_prefix=["ip", "netns", "exec", "ns"],
    )  # fmt: skip
    assert sw.command()[:7] == [
        "ip", "netns", "exec", "ns", str(tmp_path / "simple_switch_grpc"), "--device-id", "1",
    ]  # fmt: skip
    assert sw.command()[7:12] == ["-i", "1@sw1", "--thrift-port", "9091", "--no-p4"]
    assert sw.ports() == [9559, 9091]
    assert sw.runtime_cli() == [
        "ip", "netns", "exec", "ns", str(tmp_path / "simple_switch_CLI"), "--thrift-port", "9091",
    ]  # fmt: skip
    with pytest.raises(SwitchError, match="without a runtime CLI"):
        SwitchProcess(tmp_path / "simple_switch_grpc").runtime_cli()


def test_bmv2_is_decided_by_the_file_a_name_resolves_to(tmp_path):
    # `make build` links bmv2's names to p4-switch: those are p4-switch, with its features.
    ours = tmp_path / "p4-switch"
    ours.write_text("")
    (tmp_path / "simple_switch_grpc").symlink_to(ours)
    assert not is_bmv2(tmp_path / "simple_switch_grpc")
    assert not is_bmv2(ours)
    assert is_bmv2("/usr/local/bin/simple_switch_grpc") and is_bmv2("simple_switch")


def test_ready_when_listening_then_stopped_by_pid(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_DELAY", "0.3")
    sw = standin(tmp_path, monkeypatch, "listen")
    sw.start()
    try:
        waited = sw.wait_ready(timeout=10)
        assert waited >= 0.3
        assert sw.listening(19559)
    finally:
        code = sw.stop()
    assert code == 0  # the stand-in exits 0 on SIGTERM, as a switch does
    log = sw.log_path.read_text()
    assert log.startswith(f"{sw.binary} --device-id 1 -i 1@sw1 -i 2@sw2 --no-p4 --")
    assert "argv: --device-id 1 -i 1@sw1 -i 2@sw2 --no-p4 --" in log


def test_waits_for_the_statistics_port_too(tmp_path, monkeypatch):
    stats = free_port()
    sw = standin(tmp_path, monkeypatch, "grpc-only", stats_addr=f"127.0.0.1:{stats}")
    sw.start()
    try:
        with pytest.raises(SwitchError, match=f"did not listen on port {stats} within 0.5 s"):
            sw.wait_ready(timeout=0.5)
    finally:
        sw.stop()


def test_restart_keeps_the_addresses_and_appends_to_the_log(tmp_path, monkeypatch):
    sw = standin(tmp_path, monkeypatch, "listen")
    with sw:
        first = sw.pid
    assert not sw.running()
    sw.start()
    try:
        sw.wait_ready(timeout=10)
        assert sw.pid != first and sw.listening(19559)
    finally:
        sw.stop()
    assert sw.log_path.read_text().count("argv: --device-id 1") == 2


def test_exit_before_listening_reports_status_and_log(tmp_path, monkeypatch):
    sw = standin(tmp_path, monkeypatch, "exit")
    sw.start()
    expected = r"(?s)exited with status 3 before listening.*\| cannot open interface"
    with pytest.raises(SwitchError, match=expected):
        sw.wait_ready(timeout=10)
    assert sw.stop() == 3
    with pytest.raises(SwitchError, match="exited with status 3"):
        sw.stop(check=True)


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
    """Started through `ip netns exec`: the namespace's loopback is not the caller's, so only
    /proc/PID/net shows the socket (root)."""
    ns = f"llkit{os.getpid() % 10000}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        sw = standin(tmp_path, monkeypatch, "listen", exec_prefix=["ip", "netns", "exec", ns])
        sw.start()
        try:
            sw.wait_ready(timeout=10)
        finally:
            sw.stop()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
