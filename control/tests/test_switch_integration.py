"""The controller against the real switch: p4-compile's output loaded into p4-switch over P4Runtime.

Needs `make build` (build/bin/p4-compile and build/bin/p4-switch), which `make test` runs first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lossless_ctl.cli import main as ctl_main
from lossless_topo.switch import switch_without_program

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
    with switch_without_program(BIN / "p4-switch", DEVICE_ID, tmp_path / "p4-switch.log") as addr:
        yield addr


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
