"""Fixtures: a fake P4Runtime server (lossless_ctl.fake_switch) and a pipeline directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from lossless_ctl.fake_switch import FakeSwitch

DATA = Path(__file__).parent / "data"


@pytest.fixture
def fake_switch():
    """(servicer, "127.0.0.1:PORT") of a running fake P4Runtime server."""
    with FakeSwitch() as switch:
        yield switch.servicer, switch.address


@pytest.fixture
def pipeline_dir(tmp_path):
    """A pipeline directory as `make p4` lays it out: the P4Info fixture and a BMv2 JSON."""
    d = tmp_path / "p4"
    d.mkdir()
    (d / "lossless.p4info.txtpb").write_text((DATA / "lossless.p4info.txtpb").read_text())
    # The fake server does not run the program; any bytes stand for the BMv2 JSON.
    (d / "lossless.json").write_text('{"program": "p4src/lossless.p4"}\n')
    return d
