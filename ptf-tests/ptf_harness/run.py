"""`make ptf` / `make test-scale`: set up the namespaces, start $SWITCH, program it with
lossless-ctl from config_db.json, run PTF on the veth peers, and tear everything down, also
when something fails or the run is interrupted.

    python -m ptf_harness.run [--switch BIN] [--pipeline DIR] [--overlay FILE ...]
                              [--scale ci|full] [--results DIR] [TEST ...]

TEST names PTF tests (`l3`, `pfc.XoffAtThreshold`); none runs the whole suite. Overlays are
config_db.json fragments merged over the suite's config before loading (`config/no_pfc.json`
turns PFC off): the tests still expect the suite's config, so they show what breaks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ptf_harness.switch import SwitchError, SwitchProcess, is_bmv2
from ptf_harness.topology import PTF_MGMT_IP, SWITCH_MGMT_IP, Topology, TopologyError

HERE = Path(__file__).resolve().parent.parent  # ptf-tests/
ROOT = HERE.parent
GRPC_PORT = 9559


class RunError(Exception):
    pass


def port_config(configs: list[Path], out: Path) -> None:
    """The traffic manager's port configuration for the merged configs (lossless-ctl)."""
    from lossless_ctl import config_db
    from lossless_ctl.port_config import tm_config
    from lossless_ctl.sai import derive

    cfg = config_db.parse_checked(config_db.load_files(configs))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(tm_config(derive(cfg), cfg.chip), indent=2) + "\n")


def check_inputs(switch: str, pipeline: Path) -> None:
    if shutil.which(switch) is None:
        raise RunError(
            f"switch {switch!r} not found or not executable (set SWITCH=..., e.g. "
            f"build/bin/p4-switch after `make build`, or simple_switch_grpc)"
        )
    if not pipeline.is_dir() or not any(pipeline.glob("*.p4info.*")):
        raise RunError(
            f"{pipeline}: no compiled pipeline (NAME.json + NAME.p4info.txtpb); run `make p4`"
        )


def tee(cmd: list[str], env: dict[str, str], path: Path) -> int:
    """Run `cmd`, showing its output as it comes and keeping a copy in `path`."""
    with open(path, "w") as copy:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            copy.write(line)
        return proc.wait()


def run(args: argparse.Namespace) -> int:
    results = Path(args.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    pipeline = Path(args.pipeline).resolve()
    check_inputs(args.switch, pipeline)
    configs = [HERE / "config" / "config_db.json", *(Path(o).resolve() for o in args.overlay)]
    ports_json = results / "ports.json"
    port_config(configs, ports_json)

    topo = Topology(ports=4, prefix=args.prefix)
    switch = SwitchProcess(
        binary=shutil.which(args.switch) or args.switch,
        interfaces={p: topo.switch_iface(p) for p in topo.port_numbers()},
        grpc_port=GRPC_PORT,
        port_config=ports_json,
        exec_prefix=topo.exec_prefix(topo.switch_ns),
        log_path=results / "switch.log",
    )
    python = sys.executable
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT / "control")]))
    try:
        topo.up()
        switch.start()
        ready = switch.wait_ready(timeout=args.ready_timeout)
        print(f"ptf: {args.switch} (pid {switch.pid}) listening after {ready:.2f} s")
        address = f"{SWITCH_MGMT_IP}:{GRPC_PORT}"
        load = [
            *topo.exec_prefix(topo.ptf_ns), python, "-m", "lossless_ctl.cli", "load",
            "--switch", address, "--pipeline", str(pipeline), "--no-progress",
        ]  # fmt: skip
        for c in configs:
            load += ["--config", str(c)]
        start = time.monotonic()
        proc = subprocess.run(load, env=env, capture_output=True, text=True)
        (results / "load.txt").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise RunError(f"lossless-ctl load failed:\n{proc.stdout}{proc.stderr}")
        print(f"ptf: switch programmed from config_db.json in {time.monotonic() - start:.2f} s")
        params = {
            "grpc_addr": address,
            "pipeline": str(pipeline),
            "config": str(configs[0]),
            "configs": ",".join(str(c) for c in configs),
            "target": "bmv2" if is_bmv2(args.switch) else "p4-switch",
            "scale": args.scale,
            "results": str(results),
            "ptf_mgmt_ip": PTF_MGMT_IP,
        }
        cmd = [
            *topo.exec_prefix(topo.ptf_ns), python, str(Path(python).parent / "ptf"),
            "--test-dir", str(HERE / "tests"), "--pypath", str(HERE),
            "--log-file", str(results / "ptf.log"),
            "--test-params", ";".join(f"{k}={v!r}" for k, v in params.items()),
        ]  # fmt: skip
        for p in topo.port_numbers():
            cmd += ["--interface", f"{p}@{topo.ptf_iface(p)}"]
        cmd += args.tests
        return tee(cmd, env, results / "ptf.txt")
    finally:
        code = switch.stop()
        if code not in (None, 0, -signal.SIGTERM):
            print(f"ptf: the switch exited with status {code}; see {switch.log_path}")
        topo.down()


def _terminate(signum: int, _frame: object) -> None:
    # Turn SIGTERM into an exception so the finally blocks stop the switch and remove the
    # namespaces.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptf_harness.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--switch", default=os.environ.get("SWITCH", "build/bin/p4-switch"))
    p.add_argument("--pipeline", default=str(ROOT / "build" / "p4"))
    p.add_argument("--overlay", action="append", default=[], metavar="FILE")
    p.add_argument("--scale", choices=("ci", "full"), default="ci")
    p.add_argument("--results", default=str(ROOT / "results" / "ptf"))
    p.add_argument("--prefix", default="llptf", help="namespace name prefix")
    p.add_argument("--ready-timeout", type=float, default=30.0)
    p.add_argument("tests", nargs="*")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(args)
    except (RunError, SwitchError, TopologyError) as err:
        print(f"ptf: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
