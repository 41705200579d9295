"""What a lab run started, recorded on disk, so that it can be undone after any exit.

Every process the lab starts (switches, Mininet's host shells, roce-host, iperf3, tcpdump, and
with ROUTING=bgp each switch's controller and FRR daemons) is recorded with its PID and its
kernel start time, and every interface and named namespace with its name, in a state file.
`cleanup` stops exactly those processes (a PID reused by someone else has another start
time and is left alone) and deletes exactly those interfaces. The runner calls it on exit and
on SIGINT/SIGTERM; after a crash or SIGKILL the next run calls it first, so it starts clean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_STATE = Path(os.environ.get("LOSSLESS_LAB_STATE", "/run/lossless-lab/state.json"))


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def alive(pid: int, started: int) -> bool:
    st = start_time(pid)
    if st is None or st != started:
        return False
    # A zombie has exited; only its parent's wait is missing.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] != "Z"


@dataclass
class RunState:
    """The state file of one run: processes and interfaces to undo."""

    path: Path = DEFAULT_STATE
    processes: list[dict] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)  # named ones (ROUTING=bgp)

    @classmethod
    def load(cls, path: Path = DEFAULT_STATE) -> RunState:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls(path)
        except (OSError, json.JSONDecodeError):
            # A state file cut short by a crash: what it lists can no longer be trusted.
            return cls(path)
        return cls(
            path,
            list(data.get("processes", [])),
            list(data.get("interfaces", [])),
            list(data.get("namespaces", [])),
        )

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "processes": self.processes,
                    "interfaces": self.interfaces,
                    "namespaces": self.namespaces,
                }
            )
        )
        os.replace(tmp, self.path)

    def add_process(self, pid: int, what: str) -> None:
        started = start_time(pid)
        if started is None:
            return  # already gone
        self.processes.append({"pid": pid, "start_time": started, "what": what})
        self.save()

    def add_namespace(self, name: str) -> None:
        if name not in self.namespaces:
            self.namespaces.append(name)
            self.save()

    def add_interfaces(self, names: list[str]) -> None:
        self.interfaces.extend(n for n in names if n not in self.interfaces)
        self.save()


def stop_process(pid: int, started: int, grace_s: float = 3.0) -> bool:
    """SIGTERM, then SIGKILL after `grace_s`; only if `pid` is still the process we started."""
    if not alive(pid, started):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not alive(pid, started):
            return True
        _reap(pid)
        time.sleep(0.02)
    if alive(pid, started):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return True
        while alive(pid, started):
            _reap(pid)
            time.sleep(0.01)
    return True


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not stay a zombie (not ours: nothing to do)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def interface_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def cleanup(state: RunState) -> list[str]:
    """Undo everything `state` lists; return what was done, for the log."""
    done = []
    # Processes in reverse start order: tools before the host shells they run in.
    for proc in reversed(state.processes):
        if stop_process(proc["pid"], proc["start_time"]):
            done.append(f"stopped {proc['what']} (pid {proc['pid']})")
    for name in state.interfaces:
        if interface_exists(name):
            subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
            done.append(f"deleted interface {name}")
    for name in state.namespaces:
        if Path(f"/run/netns/{name}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
            done.append(f"deleted namespace {name}")
    state.processes.clear()
    state.interfaces.clear()
    state.namespaces.clear()
    try:
        state.path.unlink()
    except FileNotFoundError:
        pass
    return done
