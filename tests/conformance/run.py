"""`make conformance`: our tools measured against p4c's corpus and the real p4c's outputs.

Three measurements over the vendored corpus (tests/p4c-corpus/README.md):
- harness:   p4c's own run-bmv2-test.py, unmodified, with our p4c-bm2-ss, simple_switch and
             simple_switch_CLI, over the 191 STF programs;
- real-json: the real p4c's BMv2 JSON on our switch alone (`p4-stf JSON STF`), same 191;
- p4info:    our P4Info against p4c's expected P4Info for the 464 programs that have one,
             compared as protobuf messages (not text).

Each prints its count and the failing programs with their first error. The run fails when a
count is below `expected-counts.json` or a program fails that `expected-failures.txt` does not
list; a listed program that passes is reported so that the list shrinks.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CORPUS = ROOT / "tests/p4c-corpus"
SAMPLES = CORPUS / "p4_16_samples"
HARNESS = ROOT / "tests/p4c-harness"
MEASUREMENTS = ("harness", "real-json", "p4info")
# Far above a passing run (about 3 s: the harness waits 2 s for the switch); a hang is a failure.
TIMEOUT_S = 120

Outcome = tuple[str, bool, str]  # program, passed, first error


def programs(list_name: str) -> list[str]:
    return (CORPUS / list_name).read_text().split()


def first_error(text: str) -> str:
    # Without the run's temporary directories, so that the same error reads the same each run.
    text = re.sub(r"\S*/(conformance-[^/\s]*|tmp[^/\s]*)/", "", text).replace(f"{SAMPLES}/", "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        low = line.lower()
        if "error" in low or "fail" in low or "mismatch" in low:
            return line[:200]
    return lines[-1][:200] if lines else "no output"


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {TIMEOUT_S} s"
    return p.returncode, p.stdout + p.stderr


def harness(bin_dir: Path, scratch: Path) -> Callable[[str], Outcome]:
    """p4c's harness: DIR with p4c-bm2-ss and config.h, the switch and CLI from PATH."""
    build = scratch / "build"
    build.mkdir()
    (build / "p4c-bm2-ss").symlink_to(bin_dir / "p4c-bm2-ss")
    (build / "config.h").write_text("#define HAVE_SIMPLE_SWITCH 1\n")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    script = HARNESS / "backends/bmv2/run-bmv2-test.py"

    def one(name: str) -> Outcome:
        # One working directory for all: the harness allocates Thrift ports with lock
        # directories in it, so concurrent runs get different ports.
        cmd = [sys.executable, str(script), str(HARNESS), str(SAMPLES / f"{name}.p4")]
        cmd += ["-bd", str(build)]
        rc, out = run(cmd, scratch, env)
        if rc != 0 and "Address already in use" in out:
            # The harness picks its Thrift port at random from 9090-10090, which other
            # programs on the machine (not only other harness runs) may hold: once more.
            rc, out = run(cmd, scratch, env)
        return name, rc == 0, "" if rc == 0 else first_error(out)

    return one


def refused_by_real_p4c() -> dict[str, str]:
    """Programs the real p4c refuses, with its first error line."""
    return {
        line.split(":", 1)[0]: line.split(":", 1)[1].strip()
        for line in (CORPUS / "real-p4c/failed.txt").read_text().splitlines()
        if ":" in line
    }


def real_json(bin_dir: Path, scratch: Path) -> Callable[[str], Outcome]:
    """The real p4c's JSON on our switch alone."""
    refused = refused_by_real_p4c()

    def one(name: str) -> Outcome:
        gz = CORPUS / f"real-p4c/{name}.json.gz"
        if not gz.exists():
            return name, False, f"real p4c refuses it: {refused.get(name, '?')}"
        path = scratch / f"{name}.json"
        path.write_bytes(gzip.decompress(gz.read_bytes()))
        rc, out = run([str(bin_dir / "p4-stf"), str(path), f"{name}.stf"], SAMPLES)
        return name, rc == 0, "" if rc == 0 else first_error(out)

    return one


def load_p4info(path: Path):
    """A P4Info text file as a protobuf message."""
    from google.protobuf import text_format

    from lossless_ctl.p4rt_proto import bindings

    return text_format.Parse(path.read_text(), bindings().p4info_pb2.P4Info())


def p4info(bin_dir: Path, scratch: Path) -> Callable[[str], Outcome]:
    """Our P4Info against p4c's expected one, as parsed protobuf messages."""
    parse = load_p4info
    refused = refused_by_real_p4c()

    def one(name: str) -> Outcome:
        out = scratch / f"{name}.p4info.txtpb"
        cmd = [str(bin_dir / "p4c-bm2-ss"), "--arch", "v1model", "-o", str(scratch / name)]
        cmd += ["--p4runtime-files", str(out), f"{name}.p4"]
        rc, text = run(cmd, SAMPLES)
        # p4c-bm2-ss writes P4Info after its front end, so a program its midend refuses
        # (one without `main`) still has one: compare ours where both compilers refuse it.
        if rc != 0 and not (name in refused and out.exists()):
            return name, False, f"does not compile: {first_error(text)}"
        ours, expected = parse(out), parse(CORPUS / f"expected-p4info/{name}.p4info.txtpb")
        if ours == expected:
            return name, True, ""
        return name, False, f"differs: {difference(ours, expected)}"

    return one


def difference(ours, expected) -> str:
    """The first top-level P4Info field that differs, with the names in it that differ."""
    for field in expected.DESCRIPTOR.fields:
        a, b = getattr(ours, field.name), getattr(expected, field.name)
        if a == b:
            continue
        if not isinstance(b, Sequence):
            return field.name
        extra = sorted(set(map(name_of, a)) - set(map(name_of, b)))
        missing = sorted(set(map(name_of, b)) - set(map(name_of, a)))
        detail = [
            f"{k} {', '.join(v[:3])}" for k, v in (("extra", extra), ("missing", missing)) if v
        ]
        return f"{field.name} ({'; '.join(detail) or 'contents'})"
    return "unknown field"


def name_of(x) -> str:
    return x.preamble.name if hasattr(x, "preamble") else str(x).replace("\n", " ")[:60]


MEASURE = {
    "harness": (harness, "stf-programs.txt"),
    "real-json": (real_json, "stf-programs.txt"),
    "p4info": (p4info, "p4info-programs.txt"),
}


def expected_failures() -> dict[tuple[str, str], str]:
    """(measurement, program) -> reason, from expected-failures.txt."""
    out = {}
    for n, line in enumerate((HERE / "expected-failures.txt").read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[0] not in MEASUREMENTS:
            sys.exit(f"expected-failures.txt:{n}: expected 'MEASUREMENT PROGRAM REASON'")
        out[(parts[0], parts[1])] = parts[2]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # No `choices`: with nargs="*" argparse checks an empty list against them and refuses it.
    ap.add_argument("measurements", nargs="*", help=f"{', '.join(MEASUREMENTS)} (default: all)")
    ap.add_argument("--bin", type=Path, default=ROOT / "build/bin", help="our tools")
    ap.add_argument("--jobs", type=int, default=4, help="programs run at once")
    ap.add_argument("--only", nargs="+", metavar="PROGRAM", help="these programs only")
    ap.add_argument("--report", type=Path, help="write the outcomes as JSON")
    args = ap.parse_args()
    if unknown := sorted(set(args.measurements) - set(MEASUREMENTS)):
        ap.error(f"unknown measurement {', '.join(unknown)}; choose from {', '.join(MEASUREMENTS)}")
    counts = json.loads((HERE / "expected-counts.json").read_text())
    allowed = expected_failures()
    ok = True
    report = {}
    for m in args.measurements or MEASUREMENTS:
        make, list_name = MEASURE[m]
        names = programs(list_name)
        if args.only:
            names = [n for n in names if n in args.only]
        with tempfile.TemporaryDirectory(prefix=f"conformance-{m}-") as tmp:
            one = make(args.bin.resolve(), Path(tmp))
            # The first program runs alone: p4c's harness has PLY write its STF parser table
            # (parsetab.py, beside the harness) on first use, and runs started together race on
            # that file, a reader of a half-written table failing its test.
            outcomes = [one(n) for n in names[:1]]
            with ThreadPoolExecutor(args.jobs) as pool:
                outcomes += pool.map(one, names[1:])
        passed = sum(1 for _, p, _ in outcomes if p)
        print(f"{m}: {passed} of {len(names)} pass (expected at least {counts[m]})")
        for name, p, err in outcomes:
            listed = (m, name) in allowed
            if not p:
                print(f"  FAIL {name}: {err}" + ("" if listed else "  [not an expected failure]"))
                ok &= listed
            elif listed:
                print(f"  NOW PASSES {name}: remove it from expected-failures.txt")
        if not args.only and passed < counts[m]:
            print(f"{m}: {passed} passes, below the expected {counts[m]}")
            ok = False
        report[m] = {n: err for n, p, err in outcomes if not p}
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
