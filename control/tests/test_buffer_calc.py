import json
import subprocess
import sys
from dataclasses import astuple, replace
from pathlib import Path

import pytest

from lossless_ctl.buffer_calc import (
    BufferProfile,
    HeadroomInputs,
    mtu_cell,
    parse_cable_length,
    seed000_profile,
    sonic_headroom,
)
from lossless_ctl.cli import main

DATA = Path(__file__).parent / "data"


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


def test_sonic_headroom_worked_example():
    # 100G, 40 m, port MTU 9100, lossless MTU 4174, 256 B cells, small packets 100 %:
    # factor 256/64 = 4, occupancy (0 + 100 x 4)/100 = 4; cable 40 / 1.98e8 x 1e11 / 8
    # = 2525.25 B; peer 394 quanta x 512 / 8 = 25216 B; in flight 9100 + 2 x 2525.25 + 820
    # + 25216 = 40186.5; xoff = 4174 + 4 x 40186.5 = 164920.02 -> 645 cells = 165120;
    # xon = pipeline latency 18432 (72 cells); size = xon + xoff = 183552.
    inputs = HeadroomInputs(
        speed_mbps=100000, cable_m=40, port_mtu=9100, lossless_mtu=4174, cell=256
    )
    assert sonic_headroom(inputs) == BufferProfile(size=183552, xoff=165120, xon=18432)
    shared = sonic_headroom(replace(inputs, shared_headroom=True))
    assert (shared.size, shared.xoff) == (18432, 165120)


def test_sonic_headroom_grows_with_cable_and_rounds_to_cells():
    base = HeadroomInputs(speed_mbps=25000, cable_m=5, port_mtu=9100, lossless_mtu=4096, cell=208)
    short, long = sonic_headroom(base), sonic_headroom(replace(base, cable_m=300))
    assert long.xoff > short.xoff
    assert all(v % 208 == 0 for v in (*astuple(short), *astuple(long)))
    # Small cells (<= 128 B) waste at most a factor 2 x cell / (1 + cell).
    small = sonic_headroom(replace(base, cell=96))
    assert small.xoff < short.xoff


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"speed_mbps": 12345}, "no peer response time for speed 12345"),
        ({"small_packet_percent": 101}, "small packet percentage 101 is not 0..100"),
        ({"cell": 0}, "mtu and cell size must be positive"),
    ],
)
def test_sonic_headroom_rejects_bad_inputs(change, message):
    base = HeadroomInputs(speed_mbps=25000, cable_m=5, port_mtu=9100, lossless_mtu=4096, cell=256)
    with pytest.raises(ValueError, match=message):
        sonic_headroom(replace(base, **change))


@pytest.mark.parametrize(("text", "metres"), [("5m", 5.0), ("300m", 300.0), ("40", 40.0)])
def test_cable_lengths_as_sonic_writes_them(text, metres):
    assert parse_cable_length(text) == metres


def test_cli_writes_a_sonic_profile_into_a_config_that_validates(tmp_path):
    config = tmp_path / "config_db.json"
    config.write_text((DATA / "seed000_as7726.json").read_text())
    argv = ["buffer-calc", "--mtu", "4174", "--chip", "trident3", "--model", "sonic"]
    argv += ["--speed", "100000", "--cable-length", "40m", "--port-mtu", "9100"]
    argv += ["--static-th", "0", "--write", str(config)]
    assert main(argv) == 0
    tables = json.loads(config.read_text())
    assert tables["BUFFER_PROFILE"]["pg_lossless_100000_40m_profile"] == {
        "pool": "[BUFFER_POOL|ingress_lossless_pool]",
        "size": "183552",
        "xoff": "165120",
        "xon": "18432",
        "static_th": "0",
    }
    # The seed's own profile is kept, and the file still validates.
    assert "pg_300m_profile" in tables["BUFFER_PROFILE"]
    assert main(["validate", "--config", str(config)]) == 0


def test_cli_seed_model_needs_ports():
    with pytest.raises(SystemExit):
        main(["buffer-calc", "--mtu", "4174", "--chip", "trident3"])
