"""Mininet bring-up, the switch class's process management and cleanup (as root).

The switch processes here are tests/doubles/standin_switch.py, which only records its command
line and listens on its gRPC port: what the switch class starts, waits for and stops.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

import standins
from lossless_kit.switch import SwitchError
from lossless_paths import TEST_DOUBLES
from lossless_topo import cleanup, configdb, lab, model
from lossless_topo.results import fetch_stats
from lossless_topo.switch import missing_features


def make_lab(tmp_path, name="prio-2to1"):
    topo = model.load(name)
    state = cleanup.RunState(tmp_path / "state.json")
    return lab.Lab(
        topo=topo,
        scale=model.Scale.for_topology(topo, 100),
        switch_bin=str(standins.executable(tmp_path)),
        pipeline=lab.Pipeline(tmp_path / "p4"),
        workdir=tmp_path / "run",
        state=state,
    )


def links_named(prefix):
    return [n for n in os.listdir("/sys/class/net") if n.startswith(prefix)]


@pytest.fixture
def argv_dir(tmp_path, monkeypatch):
    d = tmp_path / "argv"
    d.mkdir()
    monkeypatch.setenv("STANDIN_ARGV_DIR", str(d))
    return d


def test_bring_up_hosts_links_and_switch_processes(tmp_path, argv_dir):
    the_lab = make_lab(tmp_path)
    try:
        the_lab.bring_up(configdb.Variant())
        net = the_lab.net
        h1 = net["h1"]
        assert "10.0.1.2/24" in h1.cmd("ip -4 addr show dev h1-eth0")
        assert "default via 10.0.1.1" in h1.cmd("ip route")
        assert "02:aa:00:00:00:01" in h1.cmd("ip neigh show 10.0.1.1")
        assert " rate 100Mbit " in h1.cmd(
            "tc qdisc show dev h1-eth0"
        )  # shaped to the scaled 100 Mb/s
        argv = json.loads((argv_dir / "1.json").read_text())
        assert argv[argv.index("--priority-queues") + 1] == "8"
        ports = [argv[i + 1] for i, a in enumerate(argv) if a == "-i"]
        assert ports == ["1@s1-eth1", "2@s1-eth2", "3@s1-eth3"]
        assert argv[argv.index("--port-config") + 1].endswith("s1.ports.json")
        assert argv[argv.index("--cpu-port") + 1] == "255"
        ports_json = json.loads((tmp_path / "run" / "s1.ports.json").read_text())
        assert {p["rate_bps"] for p in ports_json["ports"]} == {100_000_000}
        recorded = json.loads((tmp_path / "state.json").read_text())
        whats = [p["what"] for p in recorded["processes"]]
        assert "switch s1" in whats and "host h1" in whats
        assert set(recorded["interfaces"]) == {"s1-eth1", "s1-eth2", "s1-eth3"}
    finally:
        the_lab.stop()
    assert links_named("s1-eth") == []
    done = cleanup.cleanup(the_lab.state)
    assert done == []  # the orderly stop left nothing behind


def test_switch_that_exits_is_reported_with_its_log(tmp_path, argv_dir, monkeypatch):
    monkeypatch.setenv("STANDIN_MODE", "exit")
    the_lab = make_lab(tmp_path)
    with pytest.raises(lab.LabError, match="(?s)exited with status 3 .*cannot open interface"):
        try:
            the_lab.bring_up(configdb.Variant())
        except SwitchError as e:  # Mininet may raise from build
            raise lab.LabError(str(e)) from e
    the_lab.stop()
    cleanup.cleanup(the_lab.state)
    assert links_named("s1-eth") == []


TESTS = str(Path(__file__).parent)
CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path[:0] = [{tests!r}, {doubles!r}]
    from test_lab import make_lab
    from lossless_topo import configdb
    the_lab = make_lab(Path({tmp!r}))
    the_lab.bring_up(configdb.Variant())
    print("up", flush=True)
    time.sleep(600)
    """
)


def test_cleanup_after_a_killed_run(tmp_path, argv_dir):
    """SIGKILL the process running the lab; cleanup from its state file removes everything."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD.format(tests=TESTS, doubles=str(TEST_DOUBLES), tmp=str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "up"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    try:
        check_cleanup_after_kill(tmp_path)
    finally:
        cleanup.cleanup(cleanup.RunState.load(tmp_path / "state.json"))


def check_cleanup_after_kill(tmp_path):
    state = cleanup.RunState.load(tmp_path / "state.json")
    pids = [(p["pid"], p["start_time"]) for p in state.processes]
    switch = [(p["pid"], p["start_time"]) for p in state.processes if p["what"] == "switch s1"]
    # The host shells die with their parent; the switch, in its own session, is orphaned.
    assert switch and cleanup.alive(*switch[0])
    done = cleanup.cleanup(state)
    assert any(d.startswith("stopped switch s1") for d in done)
    assert not any(cleanup.alive(*p) for p in pids)
    assert links_named("s1-eth") == [] and links_named("h1-eth") == []
    assert not (tmp_path / "state.json").exists()


def test_stop_process_leaves_a_reused_pid_alone():
    proc = subprocess.Popen(["sleep", "30"])
    try:
        started = cleanup.start_time(proc.pid)
        assert not cleanup.stop_process(proc.pid, started + 1)  # another process's start time
        assert proc.poll() is None
        assert cleanup.stop_process(proc.pid, started)
        # stopped (a zombie until its parent, this test, waits: not alive any more)
        assert not cleanup.alive(proc.pid, started)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_bmv2_reports_what_it_lacks():
    assert missing_features("/usr/bin/simple_switch_grpc")
    assert missing_features("build/bin/p4-switch") == []


def test_preflight_names_what_is_missing(tmp_path):
    missing = lab.preflight(str(tmp_path / "p4-switch"), lab.Pipeline(tmp_path / "p4"))
    text = "\n".join(missing)
    assert "p4-switch: not found" in text
    assert "lossless.json: missing (`make p4`" in text
    assert "lossless.p4info.txtpb: missing" in text


def test_state_file_cut_short_is_ignored(tmp_path):
    (tmp_path / "s.json").write_text('{"processes": [{"pid"')
    assert cleanup.RunState.load(tmp_path / "s.json").processes == []
    time.sleep(0)


class _Switch(BaseHTTPRequestHandler):
    puts: list = []

    def do_GET(self):  # noqa: N802
        body = json.dumps(
            {"switch": {}, "engine": {"received": 1}, "tm": {"ports": [{"port": 1, "queues": []}]}}
        ).encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("rate_bps", 0) <= 0:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b"ports[0].rate_bps: must be positive")
            return
        _Switch.puts.append((self.path, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


def test_stats_and_port_reconfiguration_over_http():
    server = HTTPServer(("127.0.0.1", 0), _Switch)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    addr = f"127.0.0.1:{server.server_address[1]}"
    try:
        assert fetch_stats(addr) == {"ports": [{"port": 1, "queues": []}]}
        lab.put_port(addr, {"port": 2, "rate_bps": 25_000_000, "pfc_enable": [3, 4]})
        assert _Switch.puts == [
            ("/ports/2", {"port": 2, "rate_bps": 25_000_000, "pfc_enable": [3, 4]})
        ]
        with pytest.raises(lab.LabError, match="PUT .*/ports/1: 400 ports\\[0\\].rate_bps"):
            lab.put_port(addr, {"port": 1, "rate_bps": 0})
    finally:
        server.shutdown()
