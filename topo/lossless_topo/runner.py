"""`make run`: bring up a topology, run its experiment, write results, open the CLI.

python -m lossless_topo.runner [--topo prio-2to1] [--exp KIND|none] [--quick]
    [--switch BIN] [--pipeline DIR] [--results DIR] [--lab-link-mbps N] [--routing static|bgp]
python -m lossless_topo.runner cleanup     # undo a crashed run (the next run does it too)
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import cleanup, configdb, model, plots
from .lab import Lab, LabError, Pipeline, preflight
from .results import Results, StatsPoller, fetch_stats, queue_usage, table
from .switch import missing_features

DEFAULT_LAB_LINK_MBPS = 25


class Interrupt:
    """Ctrl-C and SIGTERM unwind the run through its finally blocks as KeyboardInterrupt.

    Python drops an exception raised inside a callback it runs for itself, such as the
    logging module's at-fork hook during subprocess.Popen or a finalizer ("Exception
    ignored in ..."). A signal landing there would be lost and the run would go on to its
    end, so until the runner's own except clause has taken the interrupt, it is raised
    again every RETRY_S.
    """

    RETRY_S = 0.2

    def __init__(self) -> None:
        self.signum: int | None = None

    def install(self) -> None:
        signal.signal(signal.SIGALRM, self._again)
        signal.signal(signal.SIGINT, self._first)
        signal.signal(signal.SIGTERM, self._first)

    def taken(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _first(self, signum, _frame):
        self.signum = signum
        signal.setitimer(signal.ITIMER_REAL, self.RETRY_S, self.RETRY_S)
        raise KeyboardInterrupt(f"signal {signum}")

    def _again(self, _signum, _frame):
        if self.signum is not None:
            raise KeyboardInterrupt(f"signal {self.signum}")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="lossless-lab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", nargs="?", default="run", choices=["run", "cleanup"])
    p.add_argument("--topo", default=os.environ.get("TOPO") or "prio-2to1")
    p.add_argument(
        "--exp",
        default=os.environ.get("EXP") or None,
        help="experiment kind (prio-2to1, incast, leafspine) or 'none' (CLI only)",
    )
    p.add_argument("--quick", action="store_true", default=os.environ.get("QUICK") == "1")
    p.add_argument("--switch", default=os.environ.get("SWITCH") or "build/bin/p4-switch")
    p.add_argument("--pipeline", type=Path, default=Path("build/p4"))
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument(
        "--lab-link-mbps",
        type=int,
        default=int(os.environ.get("LAB_LINK_MBPS", DEFAULT_LAB_LINK_MBPS)),
        help="the rate the fastest nominal link runs at in the lab",
    )
    p.add_argument(
        "--routing",
        choices=["static", "bgp"],
        default=os.environ.get("ROUTING") or "static",
        help="static: the configs' routes; bgp: FRR (zebra, bgpd) per switch over FPM",
    )
    p.add_argument("--state", type=Path, default=cleanup.DEFAULT_STATE)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    previous = cleanup.cleanup(cleanup.RunState.load(args.state))
    for line in previous:
        print(f"cleanup of an earlier run: {line}")
    if args.action == "cleanup":
        return 0
    try:
        topo = model.load(args.topo)
        scale = model.Scale.for_topology(topo, args.lab_link_mbps)
    except model.TopologyError as e:
        print(f"lossless-lab: {e}", file=sys.stderr)
        return 2
    kind = args.exp or topo.experiment.get("kind")
    from .experiments import EXPERIMENTS, Runner

    if kind not in EXPERIMENTS and kind != "none":
        print(
            f"lossless-lab: unknown experiment {kind!r} (have: {', '.join(EXPERIMENTS)}, none)",
            file=sys.stderr,
        )
        return 2
    print(f"{topo.name}: {topo.description}")
    print(scale.describe())
    pipeline = Pipeline(args.pipeline)
    missing = preflight(args.switch, pipeline, args.routing)
    if missing:
        print("lossless-lab: cannot run; missing:", file=sys.stderr)
        for m in missing:
            print(f"  - {m}", file=sys.stderr)
        return 2
    for m in missing_features(args.switch):
        print(f"note: {args.switch} lacks {m}")

    stamp = time.strftime("%Y%m%d-%H%M%S")
    outdir = args.results / f"{topo.name}-{stamp}"
    state = cleanup.RunState(args.state)
    state.save()
    lab = Lab(topo, scale, args.switch, pipeline, outdir, state, routing=args.routing)
    interrupt = Interrupt()
    interrupt.install()
    try:
        lab.start(configdb.Variant())
        capture(lab, outdir / "pcap", state)
        if kind == "none":
            return interact(lab, None)
        res = Results(
            topology=topo.name,
            experiment=kind,
            seed=topo.seed,
            scale={
                "factor": str(scale.factor),
                "nominal_mbps": scale.nominal_mbps,
                "lab_mbps": scale.rate_mbps(scale.nominal_mbps),
            },
            switch=args.switch,
            missing_features=missing_features(args.switch),
            routing=args.routing,
        )
        addrs = lab.stats_addrs()
        # One poll of a switch parses its whole TmStats; ten switches at 10 Hz would take
        # the CPU the switches need.
        poller = StatsPoller(addrs, interval_s=max(0.1, 0.05 * len(addrs))).start()
        try:
            EXPERIMENTS[kind](Runner(lab, outdir, args.quick), res)
        finally:
            res.stats = poller.stop()
        path = res.write(outdir)
        pngs = plots.write_all(res, outdir)
        for t in res.tables:
            print()
            print(t)
        print(f"\nresults: {path}; plots: {', '.join(p.name for p in pngs) or 'none'}")
        return interact(lab, res)
    except LabError as e:
        print(f"lossless-lab: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        interrupt.taken()
        print("\nlossless-lab: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        try:
            lab.stop()
        except Exception as e:  # a half-built net may fail to stop; the cleanup still runs
            print(f"lossless-lab: stopping Mininet: {e!r}", file=sys.stderr)
        finally:
            for line in cleanup.cleanup(state):
                print(f"cleanup: {line}")


def capture(lab: Lab, directory: Path, state: cleanup.RunState) -> None:
    """One tcpdump per switch port (root namespace), written to PCAP files as they go."""
    directory.mkdir(parents=True, exist_ok=True)
    for sw in lab.net.switches:
        for port, intf in sw.data_ports().items():
            pcap = directory / f"{sw.name}-port{port}.pcap"
            proc = subprocess.Popen(
                ["tcpdump", "-i", intf, "-U", "-w", str(pcap), "-s", "128"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            state.add_process(proc.pid, f"tcpdump {intf}")


def counters_text(lab: Lab) -> str:
    out = []
    for sw, addr in lab.stats_addrs().items():
        try:
            stats = fetch_stats(addr)
        except OSError as e:
            out.append(f"{sw}: stats endpoint {addr}: {e}")
            continue
        rows = [
            [
                u["port"],
                u["queue"],
                f"{u['current_cells']}/{u['current_kb']}",
                f"{u['peak_cells']}/{u['peak_kb']}",
                f"{u['average_cells']}/{u['average_kb']}",
            ]
            for u in queue_usage(stats)
            if u["peak_cells"]
        ]
        out.append(
            table(
                f"{sw}: buffer usage (cells/KB)",
                ["port", "queue", "current", "peak", "average"],
                rows,
            )
        )
        pfc = [
            [p["port"], *p.get("pfc_rx", [])]
            for p in stats.get("ports", [])
            if any(p.get("pfc_rx", []))
        ]
        out.append(
            table(
                f"{sw}: PFC frames received per priority",
                ["port", *(f"p{i}" for i in range(8))],
                pfc,
            )
        )
    return "\n\n".join(out) or "no stats endpoints (the switch has none)"


def interact(lab: Lab, res: Results | None) -> int:
    if not sys.stdin.isatty():
        if res is not None:
            print(f"summary: {len(res.measurements)} measurements, {len(res.stats)} stats samples")
        return 0
    from mininet.cli import CLI

    class LabCLI(CLI):
        prompt = "lossless-lab> "

        def do_counters(self, _line):
            """Queue occupancy and PFC frames per switch, from the stats endpoints."""
            print(counters_text(lab))

    # In the CLI, Ctrl-C stops the command it interrupts, as in Mininet, not the run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print("Mininet CLI: 'counters' shows queue and PFC counters; 'exit' ends the run.")
    LabCLI(lab.net)
    return 0


if __name__ == "__main__":
    sys.exit(main())
