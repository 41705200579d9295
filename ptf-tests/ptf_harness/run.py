"""`make ptf` / `make test-scale` / `make ptf-negative`: set up the namespaces, start $SWITCH,
program it with lossless-ctl from config_db.json, run PTF on the veth peers, and tear everything
down, also when something fails or the run is interrupted.

    python -m ptf_harness.run [--switch BIN] [--pipeline DIR] [--overlay FILE ...]
                              [--scale ci|full] [--results DIR] [--expect-fail] [--as-bmv2]
                              [TEST ...]
    python -m ptf_harness.run --negative [--baseline] [--as-bmv2] [OVERLAY ...]

TEST names PTF tests (`l3`, `pfc.XoffAtThreshold`); none runs the whole suite. Overlays are
config_db.json fragments merged over the suite's config before loading (`config/no_pfc.json`
turns PFC off): the tests still expect the suite's config, so they show what breaks.
`--expect-fail` succeeds only if every selected test fails with an assertion; `--negative` runs
negative.NEGATIVE (each mechanism-off overlay with the tests that must then fail) and succeeds
only if all of them fail; with `--baseline` they must also pass without the overlays first.
Each test's outcome is kept in RESULTS/outcomes.jsonl. Against bmv2 (or with `--as-bmv2`,
which runs the tests as against bmv2 on any switch, to check those paths on p4-switch) the
tests of bmv2_limits.BMV2_LIMITS are skipped and leave the negative check, register state is
written through the runtime CLI, and there is no statistics endpoint.
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

from lossless_kit.switch import SwitchError, SwitchProcess, is_bmv2
from lossless_paths import CONTROL, P4_BUILD, PTF_CONFIG_DB, PTF_TESTS, RESULTS
from ptf_harness.bmv2_limits import bmv2_limit
from ptf_harness.negative import NEGATIVE, TESTS, Negative, Verdict, module_tests
from ptf_harness.topology import PTF_MGMT_IP, SWITCH_MGMT_IP, Topology, TopologyError

GRPC_PORT = 9559
STATS_PORT = 9090
THRIFT_PORT = 9091  # the runtime CLI's (on bmv2), reached from the switch's namespace


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


def session(
    args: argparse.Namespace, overlays: list[Path], tests: list[str], results: Path
) -> tuple[int, dict[str, tuple[str, str]]]:
    """One run: topology, switch, load, PTF on `tests`, teardown. PTF's exit status and each
    test's (outcome, why)."""
    results.mkdir(parents=True, exist_ok=True)
    pipeline = Path(args.pipeline).resolve()
    check_inputs(args.switch, pipeline)
    configs = [PTF_CONFIG_DB, *(p.resolve() for p in overlays)]
    ports_json = results / "ports.json"
    port_config(configs, ports_json)
    outcomes = results / "outcomes.jsonl"
    outcomes.write_text("")

    topo = Topology(ports=4, prefix=args.prefix)
    bmv2 = as_bmv2(args)
    switch = SwitchProcess(
        binary=shutil.which(args.switch) or args.switch,
        interfaces={p: topo.switch_iface(p) for p in topo.port_numbers()},
        grpc_addr=f"0.0.0.0:{GRPC_PORT}",
        port_config=ports_json,
        stats_addr=f"{SWITCH_MGMT_IP}:{STATS_PORT}",
        thrift_port=THRIFT_PORT if bmv2 else None,
        exec_prefix=topo.exec_prefix(topo.switch_ns),
        log_path=results / "switch.log",
    )
    python = sys.executable
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PTF_TESTS), str(CONTROL)]))
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
            "target": "bmv2" if bmv2 else "p4-switch",
            "scale": args.scale,
            "results": str(results),
            "ptf_mgmt_ip": PTF_MGMT_IP,
            "stats_url": "" if bmv2 else f"http://{SWITCH_MGMT_IP}:{STATS_PORT}",
            "outcomes": str(outcomes),
            # Run from the PTF namespace into the switch's, where the CLI server listens.
            "runtime_cli": switch.runtime_cli() if bmv2 else [],
        }
        cmd = [
            *topo.exec_prefix(topo.ptf_ns), python, str(Path(python).parent / "ptf"),
            "--test-dir", str(PTF_TESTS / "tests"), "--pypath", str(PTF_TESTS),
            "--log-file", str(results / "ptf.log"),
            "--test-params", ";".join(f"{k}={v!r}" for k, v in params.items()),
        ]  # fmt: skip
        for p in topo.port_numbers():
            cmd += ["--interface", f"{p}@{topo.ptf_iface(p)}"]
        cmd += tests
        code = tee(cmd, env, results / "ptf.txt")
    finally:
        status = switch.stop()
        if status not in (None, 0, -signal.SIGTERM):
            print(f"ptf: the switch exited with status {status}; see {switch.log_path}")
        topo.down()
    return code, read_outcomes(outcomes)


def read_outcomes(path: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["test"]] = (rec["outcome"], rec["why"])
    return out


def expand(tests: list[str], tests_dir: Path = TESTS) -> list[str]:
    """Module names to their tests (`pfc` -> `pfc.XoffRefresh`, ...); tests as they are."""
    return [n for t in tests for n in (module_tests(tests_dir, t) if "." not in t else [t])]


def summary(outcomes: dict[str, tuple[str, str]]) -> str:
    counts: dict[str, int] = {}
    for outcome, _why in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test ran"


def as_bmv2(args: argparse.Namespace) -> bool:
    """Whether the tests run as against bmv2: the switch is bmv2's, or --as-bmv2."""
    return args.as_bmv2 or is_bmv2(args.switch)


def run(args: argparse.Namespace) -> int:
    results = Path(args.results).resolve()
    overlays = [Path(o) for o in args.overlay]
    if args.negative:
        chosen = [n for n in NEGATIVE if not args.tests or n.overlay in args.tests]
        unknown = set(args.tests) - {n.overlay for n in NEGATIVE}
        if unknown or not chosen:
            raise RunError(
                f"--negative takes overlay names from {[n.overlay for n in NEGATIVE]}, "
                f"not {sorted(unknown)}"
            )
        reports, ok = [], True
        baseline = None

        def runnable(neg: Negative) -> list[str]:
            # A test skipped for a bmv2 limit shows nothing there.
            return [t for t in neg.must_fail() if not (as_bmv2(args) and bmv2_limit(t))]

        if args.baseline:
            union = list(dict.fromkeys(t for n in chosen for t in runnable(n)))
            print(f"ptf: negative check baseline: {len(union)} tests must pass")
            _code, baseline = session(args, overlays, union, results / "negative" / "baseline")
        for neg in chosen:
            expected = runnable(neg)
            print(f"ptf: negative check {neg.overlay}: {len(expected)} tests must fail")
            _code, outcomes = session(
                args, [*overlays, neg.path], expected, results / "negative" / neg.overlay
            )
            verdict = Verdict(expected, outcomes, baseline)
            ok = ok and verdict.ok
            reports.append(verdict.report(f"with {neg.path.name}"))
            reports += [f"  (not run: {t}: {why})" for t, why in neg.unaffected.items()]
            reports += [
                f"  (not run: {t}: skipped against bmv2, bmv2_limits.py)"
                for t in neg.must_fail()
                if t not in expected
            ]
        text = "\n".join(reports)
        (results / "negative.txt").write_text(text + "\n")
        print(text)
        return 0 if ok else 1
    code, outcomes = session(args, overlays, args.tests, results)
    print(f"ptf: {summary(outcomes)}")
    if args.expect_fail:
        expected = expand(args.tests) if args.tests else sorted(outcomes)
        verdict = Verdict(expected, outcomes)
        print(verdict.report("--expect-fail"))
        return 0 if verdict.ok else 1
    return code


def _terminate(signum: int, _frame: object) -> None:
    # Turn SIGTERM into an exception so the finally blocks stop the switch and remove the
    # namespaces.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptf_harness.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--switch", default=os.environ.get("SWITCH", "build/bin/p4-switch"))
    p.add_argument("--pipeline", default=str(P4_BUILD))
    p.add_argument("--overlay", action="append", default=[], metavar="FILE")
    p.add_argument("--scale", choices=("ci", "full"), default="ci")
    p.add_argument("--results", default=str(RESULTS / "ptf"))
    p.add_argument("--prefix", default="llptf", help="namespace name prefix")
    p.add_argument("--ready-timeout", type=float, default=30.0)
    p.add_argument(
        "--expect-fail", action="store_true",
        help="succeed only if every selected test fails with an assertion",
    )  # fmt: skip
    p.add_argument(
        "--negative", action="store_true",
        help="each mechanism-off overlay (or those named) with the tests that must fail",
    )  # fmt: skip
    p.add_argument(
        "--as-bmv2", action="store_true",
        help="run the tests as against bmv2 (its skips, state through the runtime CLI)",
    )  # fmt: skip
    p.add_argument(
        "--baseline", action="store_true",
        help="with --negative: the same tests must first pass without the overlays",
    )  # fmt: skip
    p.add_argument("tests", nargs="*")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(args)
    except (RunError, SwitchError, TopologyError, ValueError) as err:
        print(f"ptf: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
