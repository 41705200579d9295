"""Our P4Info of p4src/lossless.p4 against the real p4c's (tests/p4c-corpus/p4src/).

The real compiler's P4Info was made from lossless.p4 as of main 511bfe9; that version of the
program is vendored beside it (`lossless-511bfe9/`), so the comparison is exact: our compiler
must write the same P4Info for it, entity by entity. Today's lossless.p4 differs from it only
by what the program added since, which `ADDED_SINCE` names; the second test holds that list
to the truth, so a difference of any other kind fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from p4info_diff import differences
from run import load_p4info

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests/p4c-corpus/p4src"
COMPILER = ROOT / "build/bin/p4c-bm2-ss"

# What lossless.p4 gained after 511bfe9, as p4info_diff names the differences: the PFC
# refresh table of the packet generator (bf6c28b), SFC's mode table, IPv4/IPv6 messages and
# two-bank epoch filter (2b0d228), a PG's headroom counted apart (pg_headroom_bytes).
ADDED_SINCE = [
    "tables: only ours: LosslessIngress.pfc_refresh",  # bf6c28b
    "tables: only ours: LosslessIngress.sfc_mode",  # 2b0d228
    "actions: only ours: LosslessEgress.make_sfc_ipv4",  # 2b0d228
    "actions: only ours: LosslessEgress.make_sfc_ipv6",  # 2b0d228
    "actions: only ours: LosslessIngress.set_refresh",  # bf6c28b
    "actions: only ours: LosslessIngress.set_sfc_mode",  # 2b0d228
    "registers: only ours: pg_headroom_bytes",  # issue 18, headroom after the pause
    "registers: only ours: sfc_bank0_filter0",  # 2b0d228
    "registers: only ours: sfc_bank0_filter1",
    "registers: only ours: sfc_bank1_filter0",
    "registers: only ours: sfc_bank1_filter1",
    "registers: only ours: sfc_epoch",
    "registers: only ours: sfc_epoch_start",
]


def p4info_of(program: Path, out: Path):
    if not COMPILER.exists():
        pytest.fail(f"{COMPILER} missing: run `make build` first")
    cmd = [str(COMPILER), "--arch", "v1model", "-o", str(out / "lossless.json")]
    cmd += ["--p4runtime-files", str(out / "lossless.p4info.txtpb"), str(program)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return load_p4info(out / "lossless.p4info.txtpb")


def test_lossless_at_511bfe9_has_real_p4cs_p4info(tmp_path):
    ours = p4info_of(REFERENCE / "lossless-511bfe9/lossless.p4", tmp_path)
    assert differences(ours, load_p4info(REFERENCE / "lossless.p4info.txtpb")) == []


def test_todays_lossless_differs_only_by_what_it_added(tmp_path):
    ours = p4info_of(ROOT / "p4src/lossless.p4", tmp_path)
    assert differences(ours, load_p4info(REFERENCE / "lossless.p4info.txtpb")) == ADDED_SINCE
