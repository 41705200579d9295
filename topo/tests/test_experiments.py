"""The experiments' host command lines: scaled as the README says, and accepted by the tools."""

import shutil
import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from lossless_paths import BIN, CARGO_RELEASE
from lossless_topo import model
from lossless_topo.experiments import DCQCN_RAI_MBPS, DCQCN_TIMER_US, Runner
from lossless_topo.lab import LabError


def roce_host() -> str:
    for cand in (BIN / "roce-host", CARGO_RELEASE / "roce-host"):
        if cand.exists():
            return str(cand)
    found = shutil.which("roce-host")
    assert found, "roce-host is not built (make build builds it into build/bin)"
    return found


def runner(name="leafspine-7to1", mbps=25, quick=False):
    topo = model.load(name)
    lab = SimpleNamespace(topo=topo, scale=model.Scale.for_topology(topo, mbps))
    return Runner(lab, Path("/nonexistent"), quick)


def opt(args, name):
    return args[args.index(name) + 1]


def test_roce_args_are_scaled():
    r = runner()  # 25G links at 25 Mb/s: factor 1/1000
    args = r.roce_args("h1", 26, dcqcn=True)
    assert opt(args, "--rate") == "0.025"  # Gb/s
    assert float(opt(args, "--dcqcn-rate-timer-us")) == DCQCN_TIMER_US * 1000
    assert float(opt(args, "--dcqcn-rai-mbps")) == pytest.approx(DCQCN_RAI_MBPS / 1000)
    assert opt(args, "--peer-mac") == r.topo.switches["leaf1"].mac
    assert "--dcqcn-rai-mbps" not in r.roce_args("h1", 26, dcqcn=False)


def test_quick_mode_overrides_parameters():
    quick, full = runner(quick=True).params, runner(quick=False).params
    assert (quick["sizes"], quick["mixes"], quick["iters"]) == ([4096], ["9:1"], 5)
    assert (full["sizes"], len(full["mixes"]), full["iters"]) == ([1024, 4096], 5, 50)
    assert quick["flows_per_sender"] == full["flows_per_sender"]  # seed 003's 8x7 and 256x7


@pytest.mark.parametrize("mode", ["write_bw", "write_lat"])
def test_roce_host_accepts_the_scaled_options(mode):
    """roce-host parses every option we give it: with no server it fails on its time limit,
    not on usage (clap's exit code 2)."""
    args = runner().roce_args("h1", 26, dcqcn=True)
    args[args.index("-d") + 1] = "lo"
    args[args.index("--time-limit") + 1] = "1"
    r = subprocess.run(
        [roce_host(), mode, *args, "127.0.0.1"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 1, r.stderr
    assert "time limit of 1 s reached while connecting" in r.stderr, r.stderr


class _RootNode:
    """A Mininet node stand-in whose commands run in the root namespace."""

    def cmd(self, command):
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout


def test_wait_listening_waits_for_a_listener_and_times_out():
    r = runner()
    r.lab.net = {"h8": _RootNode()}
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        r.wait_listening("h8", srv.getsockname()[1], timeout_s=5)
        free = srv.getsockname()[1]
    with pytest.raises(LabError, match=f"nothing listens on h8:{free}"):
        r.wait_listening("h8", free, timeout_s=0.3)
