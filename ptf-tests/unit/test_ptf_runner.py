"""The runner end to end with a stand-in switch (the fake P4Runtime server of tests/doubles, which
forwards nothing): namespaces up, switch started and ready, programmed through lossless-ctl
across the management link, PTF run on the veth peers, and everything torn down even though
the PTF test fails (the stand-in returns no counters)."""

import subprocess

import standins
from ptf_harness import run
from ptf_harness.topology import Topology


def test_runner_programs_runs_ptf_and_tears_down(tmp_path, capsys, compiled_pipeline):
    switch = standins.executable(tmp_path, standins.P4RUNTIME)
    pipeline = tmp_path / "p4"
    pipeline.mkdir()
    (pipeline / "lossless.p4info.txtpb").write_text(
        (compiled_pipeline / "lossless.p4info.txtpb").read_text()
    )
    (pipeline / "lossless.json").write_text("{}")
    results = tmp_path / "results"
    prefix = "llrun"
    code = run.main(
        [
            "--switch", str(switch), "--pipeline", str(pipeline), "--results", str(results),
            "--prefix", prefix, "l3.Drops",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "listening after" in out and "programmed from config_db.json" in out
    assert "written" in (results / "load.txt").read_text()
    assert code != 0, "the stand-in forwards nothing and returns no counters: PTF must fail"
    report = (results / "ptf.txt").read_text()
    assert "counter drop_reasons[1] not returned by the switch" in report
    assert "l3.Drops ... FAIL" in report
    assert (results / "ports.json").exists()
    assert "writes received:" in (results / "switch.log").read_text(), "stopped by SIGTERM"
    assert not Topology(prefix=prefix).exists()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in names
