import json
import subprocess
import sys

import pytest

from lossless_ctl.buffer_calc import mtu_cell, seed000_profile


def test_seed000_worked_example():
    # Edgecore AS7726-32X: 4174 B RoCE MTU, Trident 3 256 B cells, 32 ports.
    profile = seed000_profile(mtu=4174, cell=256, ports=32)
    assert (profile.size, profile.xoff, profile.xon) == (69632, 13056, 512)


@pytest.mark.parametrize(
    ("mtu", "cell", "expected"),
    [(4174, 256, 4352), (4096, 256, 4096), (1500, 208, 1664), (9100, 254, 9144)],
)
def test_mtu_rounds_up_to_whole_cells(mtu, cell, expected):
    assert mtu_cell(mtu, cell) == expected


def test_rejects_nonpositive_sizes():
    with pytest.raises(ValueError, match="mtu=0"):
        seed000_profile(mtu=0, cell=256, ports=32)


def test_cli_prints_config_db_fragment():
    out = subprocess.run(
        [sys.executable, "-m", "lossless_ctl.cli", "buffer-calc", "--mtu", "4174"]
        + ["--chip", "trident3", "--ports", "32"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    profile = json.loads(out)["BUFFER_PROFILE"]["pg_lossless_profile"]
    assert profile == {
        "pool": "[BUFFER_POOL|ingress_lossless_pool]",
        "size": "69632",
        "xoff": "13056",
        "xon": "512",
    }
