"""Stand-in switch binaries for tests of what starts, waits for and stops a switch."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SWITCH = HERE / "standin_switch.py"  # takes the command line, listens, forwards nothing
P4RUNTIME = HERE / "standin_p4runtime.py"  # the fake P4Runtime server on the switch's address


def executable(directory: Path, script: Path = SWITCH, name: str = "p4-switch") -> Path:
    """`directory/name`: runs `script` with this interpreter (the project venv's, which has
    grpcio and lossless_ctl) from where it is, so that it imports its neighbours here. `exec`
    keeps the PID that the caller started."""
    path = directory / name
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    path.chmod(0o755)
    return path
