"""Python bindings for P4Runtime that import with today's protobuf.

The PyPI `p4runtime` wheel ships code from an old protoc that the upb backend of current
`protobuf` refuses to load ("Descriptors cannot be created directly"). Its descriptors are still
the published schema, so we generate modern bindings from them: the schema is exported as a
FileDescriptorSet by `toolchain/p4runtime-proto/export_fds.py` (the script `make proto` runs for
the Rust build's committed set, run with the pure-Python backend), then `grpc_tools.protoc`
writes `p4/v1/*_pb2.py`, `*_pb2_grpc.py` and `p4/config/v1/*_pb2.py` into a cache directory. No
.proto file is copied.

The cache is keyed by the versions of p4runtime, protobuf and grpcio-tools, so it is rebuilt
exactly when one of them changes; generation is idempotent and atomic (a rename), so parallel
first runs are safe. `make` runs `python -m lossless_ctl.p4rt_proto` in the venv step; otherwise
the first `bindings()` call generates. `LOSSLESS_CTL_CACHE` overrides the cache root
(default `$XDG_CACHE_HOME/lossless-ctl`, else `~/.cache/lossless-ctl`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from lossless_paths import P4RUNTIME_EXPORTER

PROTO_FILES = (
    "p4/v1/p4runtime.proto",
    "p4/v1/p4data.proto",
    "p4/config/v1/p4info.proto",
    "p4/config/v1/p4types.proto",
)
PACKAGES = ("p4", "p4/v1", "p4/config", "p4/config/v1")


class BindingsError(RuntimeError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("LOSSLESS_CTL_CACHE")
    if root is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "lossless-ctl")
    versions = []
    for dist in ("p4runtime", "protobuf", "grpcio-tools"):
        try:
            versions.append(f"{dist}-{importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError as err:
            raise BindingsError(f"the {dist} package is not installed in {sys.prefix}") from err
    return Path(root) / "p4rt-py" / "_".join(versions)


def generate(dest: Path) -> Path:
    """Generate the bindings into `dest` unless they are there already."""
    if (dest / "p4" / "v1" / "p4runtime_pb2_grpc.py").exists():
        return dest
    from grpc_tools import protoc

    # The controller is installed editable from the repository (make's venv step), which holds
    # the schema exporter shared with the Rust build.
    script = P4RUNTIME_EXPORTER
    if not script.exists():
        raise BindingsError(
            f"{script} not found: install lossless-ctl editable from the repository"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=dest.parent))
    try:
        fds = tmp / "p4runtime.fds"
        env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
        done = subprocess.run(
            [sys.executable, str(script), str(fds)], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise BindingsError(f"exporting the P4Runtime schema failed: {done.stderr.strip()}")
        out = tmp / "out"
        out.mkdir()
        args = [
            "protoc",
            f"--descriptor_set_in={fds}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            *PROTO_FILES,
        ]
        if protoc.main(args) != 0:
            raise BindingsError("grpc_tools.protoc failed on the exported P4Runtime schema")
        for package in PACKAGES:
            (out / package / "__init__.py").touch()
        try:
            os.replace(out, dest)
        except OSError:
            if not dest.exists():  # someone else finishing first is fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


@functools.cache
def bindings() -> SimpleNamespace:
    """The generated modules: p4runtime_pb2, p4runtime_pb2_grpc, p4info_pb2, p4data_pb2."""
    root = generate(cache_dir())
    loaded = sys.modules.get("p4")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").parent.parent != root:
        raise BindingsError(
            f"the p4 package was already imported from {loaded.__file__}; import lossless_ctl's "
            "P4Runtime bindings before anything imports p4.v1"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return SimpleNamespace(
        p4runtime_pb2=importlib.import_module("p4.v1.p4runtime_pb2"),
        p4runtime_pb2_grpc=importlib.import_module("p4.v1.p4runtime_pb2_grpc"),
        p4data_pb2=importlib.import_module("p4.v1.p4data_pb2"),
        p4info_pb2=importlib.import_module("p4.config.v1.p4info_pb2"),
    )


def varint(n: int) -> bytes:
    """Protobuf's base-128 varint (protobuf.dev/programming-guides/encoding)."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def length_delimited(field: int, payload: bytes) -> bytes:
    """Field `field` of wire type 2 (bytes, string, embedded message) holding `payload`. With
    it, the route path pre-encodes its updates: protobuf merges an embedded message given
    twice, so a serialized template followed by the varying part is the whole message."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


if __name__ == "__main__":
    print(generate(cache_dir()))
