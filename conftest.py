"""Fixtures shared by every Python test directory (control/, topo/, ptf-tests/unit/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lossless_kit.pipeline import compile_pipeline


@pytest.fixture(scope="session")
def compiled_pipeline(tmp_path_factory) -> Path:
    """p4src/lossless.p4 compiled by build/bin/p4-compile (`make build`) as `make p4` does:
    lossless.json and lossless.p4info.txtpb, compiled once per test session. Tests that
    change the files copy the directory first."""
    return compile_pipeline(tmp_path_factory.mktemp("p4"))
