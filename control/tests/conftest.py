"""Fixtures: a copy of the compiled pipeline (../../conftest.py), and a fake P4Runtime server
(tests/doubles/fake_p4runtime.py) for the unit tests that check the requests the controller
sends."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fake_p4runtime import FakeSwitch

DATA = Path(__file__).parent / "data"


@pytest.fixture
def fake_switch():
    """(servicer, "127.0.0.1:PORT") of a running fake P4Runtime server."""
    with FakeSwitch() as switch:
        yield switch.servicer, switch.address


@pytest.fixture
def pipeline_dir(tmp_path, compiled_pipeline):
    """A pipeline directory of the compiler's output, which a test may change."""
    d = tmp_path / "p4"
    shutil.copytree(compiled_pipeline, d)
    return d
