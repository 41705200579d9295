"""The `make run` command up to the lab: scale printed, missing pieces named, cleanup action."""

import subprocess
import sys

from lossless_topo import cleanup

RUNNER = [sys.executable, "-m", "lossless_topo.runner"]


def run(*args, tmp_path):
    return subprocess.run(
        [*RUNNER, *args, "--state", str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_switch_and_pipeline_are_named_and_nothing_is_faked(tmp_path):
    r = run(
        "--topo",
        "leafspine-7to1",
        "--switch",
        str(tmp_path / "p4-switch"),
        "--pipeline",
        str(tmp_path / "p4"),
        "--results",
        str(tmp_path / "results"),
        "--lab-link-mbps",
        "50",
        tmp_path=tmp_path,
    )
    assert r.returncode == 2
    assert "link-rate scale factor 1/500" in r.stdout
    assert f"switch binary {tmp_path / 'p4-switch'}: not found" in r.stderr
    assert "lossless.json: missing (`make p4`" in r.stderr
    assert not (tmp_path / "results").exists()  # no results without a run


def test_unknown_topology_and_experiment(tmp_path):
    r = run("--topo", "nope", tmp_path=tmp_path)
    assert r.returncode == 2 and "nope: no such topology" in r.stderr
    r = run("--topo", "prio-2to1", "--exp", "bogus", tmp_path=tmp_path)
    assert r.returncode == 2 and "unknown experiment 'bogus'" in r.stderr


def test_cleanup_action_stops_what_a_crashed_run_left(tmp_path):
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        state = cleanup.RunState(tmp_path / "state.json")
        state.add_process(orphan.pid, "switch s1")
        r = run("cleanup", tmp_path=tmp_path)
        assert r.returncode == 0, r.stderr
        assert f"stopped switch s1 (pid {orphan.pid})" in r.stdout
        assert orphan.wait(timeout=10) is not None
        assert not (tmp_path / "state.json").exists()
    finally:
        if orphan.poll() is None:
            orphan.kill()
