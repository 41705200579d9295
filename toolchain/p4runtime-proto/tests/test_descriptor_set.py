"""The committed p4runtime.fds.bin is the schema the installed PyPI packages give.

The Rust build compiles the committed file so that it needs no Python; this test is what keeps
it equal to the `p4runtime` and `googleapis-common-protos` packages of the venv. On a mismatch
(for instance after an upgrade of either package) `make proto` regenerates the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CRATE = Path(__file__).resolve().parents[1]


def _files(blob: bytes) -> list[tuple[str, str]]:
    # In a child with the pure-Python backend, as export_fds.py runs: p4runtime's old generated
    # modules do not load under the upb backend.
    code = (
        "import sys\n"
        "from google.protobuf import descriptor_pb2\n"
        "fds = descriptor_pb2.FileDescriptorSet.FromString(sys.stdin.buffer.read())\n"
        "for f in fds.file: print(f.name, f.package)\n"
    )
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob, env=env, capture_output=True, check=True
    )
    return [tuple(line.split(" ", 1)) for line in out.stdout.decode().splitlines()]


def test_committed_descriptor_set_equals_the_pypi_packages(tmp_path):
    fresh = tmp_path / "p4runtime.fds.bin"
    subprocess.run(
        [sys.executable, str(CRATE / "export_fds.py"), str(fresh)],
        capture_output=True,
        check=True,
    )
    committed = (CRATE / "p4runtime.fds.bin").read_bytes()
    exported = fresh.read_bytes()
    # The file list first, for a readable failure; then every byte of every descriptor.
    assert _files(committed) == _files(exported), "run `make proto`"
    assert committed == exported, "run `make proto`: a .proto file's contents differ"


def test_descriptor_set_holds_the_p4runtime_service_and_its_dependencies():
    names = [name for name, _ in _files((CRATE / "p4runtime.fds.bin").read_bytes())]
    for proto in (
        "p4/v1/p4runtime.proto",
        "p4/config/v1/p4info.proto",
        "google/rpc/status.proto",
        "google/rpc/code.proto",
    ):
        assert proto in names
    # Dependencies first, as protoc writes a set and as prost-build expects.
    assert names.index("google/protobuf/any.proto") < names.index("google/rpc/status.proto")
    assert names.index("p4/config/v1/p4info.proto") < names.index("p4/v1/p4runtime.proto")
