"""p4src/lossless.p4 compiled as `make p4` does, for tests and benchmarks that need the pipeline
and do not go through make."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lossless_paths import BIN, LOSSLESS_P4


class CompileError(Exception):
    pass


def compile_pipeline(out: Path, compiler: Path = BIN / "p4-compile") -> Path:
    """lossless.json and lossless.p4info.txtpb in `out` (BMv2 JSON + P4Info)."""
    if not compiler.is_file():
        raise CompileError(f"{compiler} missing: run `make build` first")
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(compiler), "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
        "-o", str(out), "--p4runtime-files", str(out / "lossless.p4info.txtpb"),
        str(LOSSLESS_P4),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    return out
