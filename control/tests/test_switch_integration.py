"""The controller against the real switch: p4-compile's output loaded into p4-switch over P4Runtime.

Needs `make build` (build/bin/p4-compile and build/bin/p4-switch), which `make test` runs first.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lossless_ctl.cli import main as ctl_main
from lossless_topo.switch import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "bin"
CONFIG = ROOT / "ptf-tests" / "config" / "config_db.json"
DEVICE_ID = 1


@pytest.fixture(scope="module")
def pipeline(compiled_pipeline) -> Path:
    for tool in ("p4-compile", "p4-switch"):
        assert (BIN / tool).is_file(), f"{BIN / tool} missing: run `make build` first"
    return compiled_pipeline


@pytest.fixture
def switch(tmp_path):
    grpc_port, stats_port = free_port(), free_port()
    log = tmp_path / "p4-switch.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                BIN / "p4-switch",
                "--no-p4",
                "--device-id",
                str(DEVICE_ID),
                "--cpu-port",
                "255",
                "--grpc-server-addr",
                f"127.0.0.1:{grpc_port}",
                "--stats-addr",
                f"127.0.0.1:{stats_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_for_port(grpc_port, proc, log, timeout_s=20)
        yield f"127.0.0.1:{grpc_port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.returncode == 0, f"p4-switch exited {proc.returncode}: {log.read_text()}"


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
