"""Where things are in the repository: the one place that knows its layout.

Every package here is installed editable from the repository (`make deps`), so the tree is
found from this file. The controller uses it only to reach the schema exporter it shares with
the Rust build; the lab kit, the lab, the PTF harness and the tests for build outputs,
sources and results.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD = ROOT / "build"
BIN = BUILD / "bin"  # `make build` installs the Rust binaries here
P4_BUILD = BUILD / "p4"  # `make p4`: lossless.json and lossless.p4info.txtpb
CARGO_RELEASE = ROOT / "target" / "release"
RESULTS = ROOT / "results"
P4SRC = ROOT / "p4src"
LOSSLESS_P4 = P4SRC / "lossless.p4"
TOOLCHAIN = ROOT / "toolchain"
P4RUNTIME_EXPORTER = TOOLCHAIN / "p4runtime-proto" / "export_fds.py"
FLOWGEN_PROFILES = TOOLCHAIN / "flowgen" / "profiles"
PTF_TESTS = ROOT / "ptf-tests"
PTF_CONFIG_DB = PTF_TESTS / "config" / "config_db.json"
CONTROL = ROOT / "control"
TEST_DOUBLES = ROOT / "tests" / "doubles"
