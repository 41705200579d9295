"""`lossless-ctl`: the controller's command line."""

from __future__ import annotations

import argparse
import ipaddress
import json
import queue
import sys
import time
from pathlib import Path

from lossless_ctl import config_db
from lossless_ctl.buffer_calc import (
    HeadroomInputs,
    parse_cable_length,
    seed000_profile,
    sonic_headroom,
    sonic_profile_name,
)
from lossless_ctl.chips import CHIPS

# `run --route-bulk`'s default: a burst (zebra's whole FIB at once) goes in WriteRequests of
# 4000, where per-request costs are small (seed 002's 64 per request more than doubles the
# controller's CPU time per route; 4000 took 265k routes to the switch in about two thirds of
# the time 1000 did, kit/README.md), and a lone route waits at most 50 ms.
ROUTE_BULK = "4000/0.05"


def _buffer_calc(args: argparse.Namespace) -> int:
    cell = args.cell_size if args.cell_size is not None else CHIPS[args.chip].cell_bytes
    if args.model == "seed000":
        if args.ports is None:
            raise ValueError("the seed 000 model needs --ports")
        profile = seed000_profile(args.mtu, cell, args.ports)
        name = args.profile or "pg_lossless_profile"
    else:
        if args.speed is None or args.cable_length is None:
            raise ValueError("the sonic model needs --speed and --cable-length")
        profile = sonic_headroom(
            HeadroomInputs(
                speed_mbps=args.speed,
                cable_m=parse_cable_length(args.cable_length),
                port_mtu=args.port_mtu or args.mtu,
                lossless_mtu=args.mtu,
                cell=cell,
                small_packet_percent=args.small_packet_percentage,
                pipeline_latency=args.pipeline_latency,
                mac_phy_delay=args.mac_phy_delay,
                gearbox_delay_ns=args.gearbox_delay_ns,
                shared_headroom=args.shared_headroom,
            )
        )
        name = args.profile or sonic_profile_name(args.speed, args.cable_length)
    fields = profile.as_config(args.pool)
    if args.dynamic_th is not None:
        fields["dynamic_th"] = str(args.dynamic_th)
    elif args.static_th is not None:
        fields["static_th"] = str(args.static_th)
    if args.write is None:
        print(json.dumps({"BUFFER_PROFILE": {name: fields}}, indent=4))
        return 0
    path = Path(args.write)
    tables = json.loads(path.read_text()) if path.exists() else {}
    tables.setdefault("BUFFER_PROFILE", {})[name] = fields
    path.write_text(json.dumps(tables, indent=4) + "\n")
    print(f"{path}: BUFFER_PROFILE|{name} = {json.dumps(fields)}")
    return 0


def _read_config(args: argparse.Namespace) -> config_db.ConfigDb | None:
    """Read, merge and check the --config files; print every issue; None if any is an error."""
    try:
        tables = config_db.load_files(args.config)
        cfg, issues = config_db.parse(tables, args.chip)
    except config_db.ConfigError as err:
        issues, cfg = err.issues, None
    for issue in issues:
        print(issue, file=sys.stderr)
    if cfg is None or any(i.error for i in issues):
        return None
    return cfg


def _validate(args: argparse.Namespace) -> int:
    cfg = _read_config(args)
    if cfg is None:
        return 1
    print(f"{', '.join(args.config)}: valid")
    return 0


def _sai(args: argparse.Namespace) -> int:
    from lossless_ctl.sai import derive

    cfg = _read_config(args)
    if cfg is None:
        return 1
    model = derive(cfg)

    def plain(value):
        if isinstance(value, bool | int | str) or value is None:
            return value
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return str(value)  # addresses and prefixes

    dump = {}
    for o in model.objects.values():
        fields = {k: plain(v) for k, v in o.attrs.items()}
        if o.entry is not None:
            fields = {"entry": {k: plain(v) for k, v in o.entry.items()}, **fields}
        dump[f"{o.type}:{o.key}"] = fields
    print(json.dumps(dump, indent=2))
    return 0


def _port_config(args: argparse.Namespace) -> int:
    from lossless_ctl.port_config import tm_config
    from lossless_ctl.sai import derive

    cfg = _read_config(args)
    if cfg is None:
        return 1
    text = json.dumps(tm_config(derive(cfg), cfg.chip), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def _load(args: argparse.Namespace) -> int:
    from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
    from lossless_ctl.loader import load, plan, read_back, read_pipeline, reconcile
    from lossless_ctl.p4info import P4InfoError
    from lossless_ctl.p4map import MappingError
    from lossless_ctl.port_config import tm_config

    cfg = _read_config(args)
    if cfg is None:
        print("load: config has errors; nothing was written", file=sys.stderr)
        return 1
    try:
        pipeline = read_pipeline(args.pipeline)
        model, program = plan(cfg, pipeline.p4info)
    except (P4InfoError, MappingError) as err:
        problems = err.problems if isinstance(err, MappingError) else [str(err)]
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        print("load: nothing was written", file=sys.stderr)
        return 1
    for note in program.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.port_config is not None:
        Path(args.port_config).write_text(json.dumps(tm_config(model, cfg.chip), indent=2) + "\n")
        print(f"port configuration written to {args.port_config}")
    try:
        with P4RuntimeClient(
            args.switch, device_id=args.device_id, election_id=(0, args.election_id)
        ) as client:
            client.arbitrate()
            summary = (reconcile if args.reconcile else load)(
                client,
                pipeline,
                program,
                batch_size=args.batch_size,
                in_flight=args.in_flight,
                progress=not args.no_progress and sys.stderr.isatty(),
            )
            print(summary.render())
            if summary.errors:
                return 1
            if args.stats is not None and not _push_ports(args.stats, model, cfg):
                return 1
            if args.read_back:
                problems = read_back(client, pipeline, program)
                for problem in problems:
                    print(f"read-back: {problem}", file=sys.stderr)
                if problems:
                    return 1
                print("read-back: the switch holds exactly what the config describes")
    except P4RuntimeError as err:
        print(f"load: {args.switch}: {err}", file=sys.stderr)
        return 1
    return 0


def _push_ports(stats_addr: str, model, cfg: config_db.ConfigDb) -> bool:
    """The traffic manager's part of the config to the running switch (PUT /ports/N)."""
    from lossless_ctl.port_config import push, tm_config

    tm = tm_config(model, cfg.chip)
    problems = push(stats_addr, tm)
    for problem in problems:
        print(f"port configuration: {problem}", file=sys.stderr)
    if not problems:
        print(f"port configuration: {len(tm['ports'])} ports configured at {stats_addr}")
    return not problems


def _run(args: argparse.Namespace) -> int:
    """Reconcile the switch with the config, then learn neighbours (and, with --fpm, program
    zebra's routes; with --hostif, pass control-plane frames to and from kernel interfaces)
    until interrupted. When the switch's stream is lost (a restarted switch), reconnect and
    reconcile again: a switch that came back without the pipeline is loaded in full, i.e.
    replayed, and the FPM routes are written again. SIGHUP reads the config again and
    reconciles the switch with it (`config reload`), the FPM routes written again after it.
    SIGUSR1 clears the learned neighbours (`sonic-clear arp`), which are asked for again."""
    import signal
    import threading

    from lossless_ctl.loader import plan, read_pipeline
    from lossless_ctl.p4info import P4InfoError
    from lossless_ctl.p4map import MappingError

    cfg = _read_config(args)
    if cfg is None:
        print("run: config has errors; nothing was written", file=sys.stderr)
        return 1
    try:
        pipeline = read_pipeline(args.pipeline)
        model, program = plan(cfg, pipeline.p4info)
    except (P4InfoError, MappingError) as err:
        for problem in err.problems if isinstance(err, MappingError) else [str(err)]:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    stop, reload, session_end = threading.Event(), threading.Event(), threading.Event()
    clear = threading.Event()
    for sig, events in (
        (signal.SIGINT, (stop, session_end)),
        (signal.SIGTERM, (stop, session_end)),
        (signal.SIGHUP, (reload, session_end)),
        (signal.SIGUSR1, (clear,)),
    ):
        signal.signal(sig, lambda *_, events=events: [e.set() for e in events])
    try:
        routing = _start_fpm(args, cfg, pipeline, program) if args.fpm else None
    except (OSError, ValueError) as err:
        print(f"run: --fpm {args.fpm}: {err}", file=sys.stderr)
        return 1
    hostif = None
    if args.hostif:
        from lossless_ctl.hostif import HostIf, HostIfError
        from lossless_ctl.neighbor import routed_interfaces

        try:
            hostif = HostIf(
                args.hostif, routed_interfaces(cfg), lambda line: print(line, flush=True)
            ).start()
        except HostIfError as err:
            print(f"run: --hostif {args.hostif}: {err}", file=sys.stderr)
            return 1
    neighsync = None
    if args.neighsync:
        from lossless_ctl.neighbor import routed_interfaces
        from lossless_ctl.neighsync import NeighSync

        if not args.hostif:
            print("run: --neighsync needs --hostif (the kernel's interfaces)", file=sys.stderr)
            return 1
        neighsync = NeighSync(args.hostif, set(routed_interfaces(cfg))).start()
    try:
        events = (stop, reload, session_end, clear)
        kernel = neighsync.events if neighsync is not None else None
        return _sessions(args, cfg, pipeline, (model, program), events, routing, hostif, kernel)
    finally:
        if neighsync is not None:
            neighsync.close()
        if hostif is not None:
            hostif.close()
            print(f"hostif: {dict(hostif.counters)}", flush=True)
        if routing is not None:
            server, orch, _ = routing
            server.stop()
            orch.stop()
            print(orch.summary(server.counters), flush=True)


def _start_fpm(args: argparse.Namespace, cfg, pipeline, program):
    """The FPM listener and the route orchestrator behind it, for every session of `run`."""
    from lossless_ctl.fpm import FpmServer
    from lossless_ctl.neighbor import routed_interfaces
    from lossless_ctl.p4info import P4InfoIndex
    from lossless_ctl.routeorch import RouteOrch, parse_bulk

    # Next hops routeorch wants resolved; the neighbour learner's thread sends the ARP/NS.
    asks: queue.Queue = queue.Queue()

    def log(line: str) -> None:
        print(line, flush=True)

    orch = RouteOrch(
        P4InfoIndex(pipeline.p4info),
        program.ids,
        routed_interfaces(cfg),
        parse_bulk(args.route_bulk),
        log=log,
        resolve=asks.put,
        restart_s=args.fpm_restart,
    )
    server = FpmServer(
        args.fpm, orch.submit, log=log, netns=args.fpm_netns, on_connect=orch.zebra_connected
    )
    orch.start()
    server.start()
    log(f"fpm: listening on {server.address}" + (f" in {args.fpm_netns}" if args.fpm_netns else ""))
    return server, orch, asks


def _sessions(args, cfg, pipeline, planned, events, routing, hostif, kernel=None) -> int:
    """One P4Runtime session after the other, until stopped (see _run)."""
    from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
    from lossless_ctl.loader import plan, reconcile
    from lossless_ctl.neighbor import NeighborLearner, apply, routed_interfaces, serve
    from lossless_ctl.p4info import P4InfoIndex

    model, program = planned
    stop, reload, session_end, clear = events
    _, orch, resolve = routing if routing is not None else (None, None, None)
    sessions = 0
    learner = None
    while not stop.is_set():
        if reload.is_set():
            reload.clear()
            session_end.clear()
            fresh = _read_config(args)
            if fresh is None:
                print("run: reload: config has errors; keeping the one loaded", file=sys.stderr)
            else:
                cfg = fresh
                model, program = plan(cfg, pipeline.p4info)
                if orch is not None:
                    orch.rebase(program.ids, routed_interfaces(cfg))
                print(f"run: reload: {', '.join(args.config)} read again", flush=True)
        try:
            with P4RuntimeClient(
                args.switch,
                device_id=args.device_id,
                election_id=(0, args.election_id),
                connect_timeout=args.reconnect_timeout,
            ) as client:
                client.arbitrate()
                # What the last session learned: the switch holds none of it now (it was
                # replayed, or the reconcile removed it), so it is installed again at once.
                known = learner.forget() if learner is not None else {}
                if orch is not None:
                    orch.forget()
                learner = NeighborLearner(
                    cfg,
                    program,
                    P4InfoIndex(pipeline.p4info),
                    args.neighbor_age,
                    answer=hostif is None,
                )
                # A restarted `run` takes over the neighbours it learned and the FPM routes it
                # wrote before, which are still on the switch, so the reconcile writes only
                # the config's difference and forwarding never stops.
                adopted: set[tuple] = set()
                keep = None
                if sessions == 0:

                    def keep(state, learner=learner, adopted=adopted):
                        adopted.update(learner.adopt(state, time.monotonic()))
                        print(
                            f"run: took over {len(learner.learned)} learned neighbours, "
                            f"{len(learner.entries.kept)} pending removal"
                        )
                        if orch is not None:
                            adopted.update(orch.adopt(state))
                        return adopted

                summary = reconcile(client, pipeline, program, keep=keep)
                sessions += 1
                print(summary.render(), flush=True)
                if summary.errors:
                    return 1
                if args.stats is not None and not _push_ports(args.stats, model, cfg):
                    return 1
                for line in apply(client, learner, learner.relearn(known, time.monotonic())):
                    print(line, flush=True)
                if orch is not None:
                    orch.attach(client)
                if hostif is not None:
                    hostif.attach(
                        lambda port, frame, client=client, learner=learner: client.send_packet_out(
                            frame, learner.packet_out_metadata(port)
                        )
                    )
                print(f"run: ready (session {sessions})", flush=True)
                try:
                    serve(
                        client,
                        learner,
                        session_end,
                        log=lambda line: print(line, flush=True),
                        resolve=resolve,
                        hostif=hostif,
                        clear=clear,
                        kernel=kernel,
                    )
                finally:
                    if hostif is not None:
                        hostif.attach(None)
                    if orch is not None:
                        orch.detach()
        except P4RuntimeError as err:
            if sessions == 0:
                print(f"run: {args.switch}: {err}", file=sys.stderr)
                return 1
            print(f"run: {args.switch}: {err}; retrying", file=sys.stderr, flush=True)
            stop.wait(1.0)
            continue
        if not stop.is_set() and not reload.is_set():
            print(f"run: {args.switch}: stream lost; reconnecting to replay", flush=True)
    return 0


SHOW_COMMANDS = ("arp", "ndp", "ip route", "ipv6 route", "ip route summary", "ipv6 route summary")


def _show(args: argparse.Namespace) -> int:
    from lossless_ctl import counters
    from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
    from lossless_ctl.p4info import P4InfoIndex
    from lossless_ctl.show import neighbors, render_neighbors, route_summary

    what = " ".join(args.what)
    known = (*SHOW_COMMANDS, *counters.COMMANDS, *counters.ALIASES)
    if what not in known:
        raise ValueError(f"show {what!r}: known are {', '.join(known)}")
    port_names: dict[int, str] = {}
    cfg = None
    if args.config:
        cfg = _read_config(args)
        if cfg is None:
            return 1
        port_names = {p.index: name for name, p in cfg.ports.items() if p.index is not None}
    try:
        with P4RuntimeClient(args.switch, device_id=args.device_id) as client:
            client.connect()
            index = P4InfoIndex(client.p4info())
            if what in ("arp", "ndp"):
                rows = neighbors(client, index, port_names)
                print(render_neighbors(rows, 4 if what == "arp" else 6))
            elif what in ("ip route", "ipv6 route"):
                print(_show_routes(client, index, 4 if what == "ip route" else 6, cfg))
            elif what in SHOW_COMMANDS:
                print(route_summary(client, index, 4 if what.startswith("ip ") else 6))
            else:
                before = None
                if args.period:
                    before = counters.take_snapshot(client, index, args.stats, port_names)
                    time.sleep(args.period)
                snap = counters.take_snapshot(client, index, args.stats, port_names)
                data, text = counters.show(what, snap, before, args.period or 0.0)
                print(json.dumps(data, indent=2) if args.json else text)
    except (P4RuntimeError, counters.StatsError) as err:
        print(f"show: {err}", file=sys.stderr)
        return 1
    return 0


def _show_routes(client, index, version: int, cfg: config_db.ConfigDb | None) -> str:
    """`show ip route`: interface names and the config's neighbours come from the config when
    one is given (the switch knows router interface numbers only)."""
    from lossless_ctl.loader import plan
    from lossless_ctl.show import render_routes, routes

    rif_names: dict[int, str] = {}
    connected = {}
    neighbors = None
    if cfg is not None:
        _, program = plan(cfg, client.p4info())
        rif_names = {n: key.removeprefix("rif:") for key, n in program.ids.rif_ids.items()}
        connected = {r.ip.network: r.ifname for r in cfg.router_ips}
        connected |= {ipaddress.ip_network(r.ip.ip): r.ifname for r in cfg.router_ips}
        neighbors = {n.ip for n in cfg.neighbors}
    return render_routes(routes(client, index, version, rif_names, neighbors), connected)


def _clear(args: argparse.Namespace) -> int:
    from lossless_ctl import counters
    from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
    from lossless_ctl.p4info import P4InfoIndex

    what = " ".join(args.what)
    known = ("all", *counters.CLEAR_COMMANDS, *counters.CLEAR_ALIASES)
    if what not in known:
        raise ValueError(f"clear {what!r}: known are {', '.join(known)}")
    try:
        with P4RuntimeClient(
            args.switch, device_id=args.device_id, election_id=(0, args.election_id)
        ) as client:
            client.arbitrate()
            cells = counters.clear(client, P4InfoIndex(client.p4info()), args.stats, what)
    except (P4RuntimeError, counters.StatsError) as err:
        print(f"clear: {err}", file=sys.stderr)
        return 1
    print(f"cleared {what} ({cells} pipeline cells reset)")
    return 0


def _gen_routes(args: argparse.Namespace) -> int:
    from lossless_ctl.routegen import ScalePoint, generate

    point = ScalePoint(
        ipv4_routes=args.ipv4,
        ipv6_routes=args.ipv6,
        arp=args.arp,
        nd=args.nd,
        ecmp_groups=args.ecmp[0] if args.ecmp else 0,
        ecmp_paths=args.ecmp[1] if args.ecmp else 0,
        ports=args.ports,
    )
    tables = generate(point)
    text = json.dumps(tables, indent=1) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def _ecmp(text: str) -> tuple[int, int]:
    groups, sep, paths = text.partition("x")
    if not sep or not groups.isdigit() or not paths.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not GROUPSxPATHS (e.g. 512x32)")
    return int(groups), int(paths)


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        action="append",
        required=True,
        metavar="FILE",
        help="config_db.json; repeat to merge files in order, as `config load` does",
    )
    p.add_argument(
        "--chip",
        choices=sorted(CHIPS),
        help="chip for limit checks (default: from DEVICE_METADATA platform/hwsku)",
    )


def _add_switch_args(p: argparse.ArgumentParser, examples: str) -> None:
    """The command words and the switch's addresses, for `show` and `clear`."""
    p.add_argument("what", nargs="+", help=f"e.g. {examples}")
    p.add_argument("--switch", required=True, metavar="ADDR", help="P4Runtime server")
    p.add_argument(
        "--stats",
        default="127.0.0.1:9090",
        metavar="ADDR",
        help="the switch's statistics endpoint (p4-switch --stats-addr) for counter commands",
    )
    p.add_argument("--device-id", type=int, default=1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lossless-ctl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    calc = sub.add_parser(
        "buffer-calc", help="derive a lossless BUFFER_PROFILE (seed 000 formula or SONiC model)"
    )
    calc.add_argument("--mtu", type=int, required=True, help="largest RoCE frame in bytes")
    cell = calc.add_mutually_exclusive_group(required=True)
    cell.add_argument("--cell-size", type=int, help="buffer cell size in bytes")
    cell.add_argument("--chip", choices=sorted(CHIPS), help="chip family")
    calc.add_argument(
        "--model",
        choices=["seed000", "sonic"],
        default="seed000",
        help="seed000: Edgecore MTU-cell formula; sonic: SONiC's dynamic headroom calculation",
    )
    calc.add_argument("--ports", type=int, help="front-panel ports on the switch (seed000)")
    calc.add_argument("--speed", type=int, help="port speed in Mb/s (sonic), e.g. 100000")
    calc.add_argument("--cable-length", help="cable length (sonic), e.g. 5m, 40m, 300m")
    calc.add_argument("--port-mtu", type=int, help="port MTU in bytes (sonic; default --mtu)")
    calc.add_argument("--small-packet-percentage", type=int, default=100, help="(sonic)")
    calc.add_argument(
        "--pipeline-latency", type=int, default=18 * 1024, help="bytes, = xon (sonic)"
    )
    calc.add_argument("--mac-phy-delay", type=int, default=820, help="bytes (sonic)")
    calc.add_argument("--gearbox-delay-ns", type=int, default=0, help="(sonic)")
    calc.add_argument(
        "--shared-headroom",
        action="store_true",
        help="headroom from the pool's shared headroom (BUFFER_POOL xoff): size = xon",
    )
    th = calc.add_mutually_exclusive_group()
    th.add_argument("--dynamic-th", type=int, help="add dynamic_th to the profile")
    th.add_argument("--static-th", type=int, help="add static_th to the profile")
    calc.add_argument("--profile", help="BUFFER_PROFILE key (default: by model)")
    calc.add_argument("--pool", default="ingress_lossless_pool", help="BUFFER_POOL of the profile")
    calc.add_argument("--write", metavar="CONFIG_DB", help="add the profile to this config_db.json")
    calc.set_defaults(func=_buffer_calc)

    validate = sub.add_parser("validate", help="check a config_db.json without touching a switch")
    _add_config_args(validate)
    validate.set_defaults(func=_validate)

    sai = sub.add_parser("sai", help="print the SAI objects a config_db.json describes")
    _add_config_args(sai)
    sai.set_defaults(func=_sai)

    port_config = sub.add_parser(
        "port-config", help="write the switch's port configuration (switch-tm JSON)"
    )
    _add_config_args(port_config)
    port_config.add_argument("-o", "--output", help="file (default: stdout)")
    port_config.set_defaults(func=_port_config)

    load = sub.add_parser("load", help="program a switch from config_db.json over P4Runtime")
    _add_config_args(load)
    load.add_argument("--switch", required=True, metavar="ADDR", help="P4Runtime server host:port")
    load.add_argument(
        "--pipeline",
        required=True,
        metavar="DIR",
        help="compiler output directory: NAME.json (BMv2) and NAME.p4info.txtpb",
    )
    load.add_argument("--device-id", type=int, default=1)
    load.add_argument("--election-id", type=int, default=1, help="low 64 bits of the election id")
    load.add_argument("--batch-size", type=int, default=1000, help="updates per WriteRequest")
    load.add_argument("--in-flight", type=int, default=4, help="WriteRequests outstanding")
    load.add_argument("--port-config", metavar="FILE", help="also write the port configuration")
    load.add_argument(
        "--stats",
        metavar="ADDR",
        help="also configure the running switch's ports (PUT /ports/N at p4-switch --stats-addr)",
    )
    load.add_argument("--read-back", action="store_true", help="read every table back and compare")
    load.add_argument(
        "--reconcile",
        action="store_true",
        help="keep the switch's pipeline if it is this one and write only the difference "
        "(a restarted controller); a switch running another pipeline or none is fully loaded",
    )
    load.add_argument("--no-progress", action="store_true", help="no progress bar")
    load.set_defaults(func=_load)

    run = sub.add_parser(
        "run", help="load (reconciling) and learn neighbours from ARP/ND until interrupted"
    )
    _add_config_args(run)
    run.add_argument("--switch", required=True, metavar="ADDR", help="P4Runtime server host:port")
    run.add_argument("--pipeline", required=True, metavar="DIR", help="compiler output directory")
    run.add_argument("--device-id", type=int, default=1)
    run.add_argument("--election-id", type=int, default=1)
    run.add_argument(
        "--neighbor-age", type=float, default=300.0, help="seconds before a silent neighbour goes"
    )
    run.add_argument(
        "--stats",
        metavar="ADDR",
        help="also configure the switch's ports (PUT /ports/N) at each (re)load",
    )
    run.add_argument(
        "--reconnect-timeout",
        type=float,
        default=30.0,
        help="seconds to wait for the switch at each (re)connection before retrying",
    )
    run.add_argument(
        "--fpm",
        metavar="ADDR",
        help="serve FPM here (host:port, e.g. 127.0.0.1:2620) and program the routes zebra's "
        "dplane_fpm_nl sends (zebra: `fpm address ...`, `no fpm use-next-hop-groups`)",
    )
    run.add_argument(
        "--fpm-netns",
        metavar="NAME",
        help="open the FPM socket in this network namespace (zebra's), e.g. a lab switch's",
    )
    run.add_argument(
        "--fpm-restart",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="after zebra reconnects, routes it has not sent again once it has been quiet "
        "this long are removed (until then they stay, as graceful restart keeps them)",
    )
    run.add_argument(
        "--hostif",
        metavar="NETNS",
        help="a kernel interface (tap) per routed port in this network namespace, with the "
        "config's addresses: ARP, ND and IP to the router go to it, what the kernel sends goes "
        "out of the port (SONiC's hostif; FRR runs there); its carrier is the port's oper state",
    )
    run.add_argument(
        "--neighsync",
        action="store_true",
        help="with --hostif: neighbours from the kernel's neighbour table of that namespace "
        "too (RTM_NEWNEIGH/RTM_DELNEIGH, as SONiC's neighsyncd)",
    )
    run.add_argument(
        "--route-bulk",
        default=ROUTE_BULK,
        metavar="SIZE/SECONDS",
        help=f"FPM routes per write and flush interval (default {ROUTE_BULK}; seed002 = 64/1, "
        "orchagent's)",
    )
    run.set_defaults(func=_run)

    show = sub.add_parser(
        "show",
        help="SONiC show commands: arp, ndp, ip|ipv6 route [summary], pfc counters, queue "
        "counters|wredcounters|watermark, priority-group watermark shared|headroom, "
        "priority-group drop|pause counters, interfaces counters, dropcounters counts, "
        "pfcwd stats",
    )
    _add_switch_args(show, "arp, pfc counters, queue watermark")
    show.add_argument("--json", action="store_true", help="counter commands: JSON output")
    show.add_argument(
        "-p",
        "--period",
        type=float,
        metavar="SECONDS",
        help="counter commands: counts over this period (rates for interfaces counters)",
    )
    show.add_argument("--config", action="append", metavar="FILE", help="for port names")
    show.add_argument("--chip", choices=sorted(CHIPS), help=argparse.SUPPRESS)
    show.set_defaults(func=_show)

    clear = sub.add_parser(
        "clear",
        help="sonic-clear: counters, pfccounters, queuecounters, pfcwdcounters, dropcounters, "
        "watermarks, queue watermark, priority-group watermark shared|headroom, "
        "priority-group drop|pause counters, all",
    )
    _add_switch_args(clear, "counters, pfccounters, watermarks")
    clear.add_argument(
        "--election-id",
        type=int,
        default=1,
        help="writing needs the primary role: above a running `run`'s id while it runs",
    )
    clear.set_defaults(func=_clear)

    gen = sub.add_parser(
        "gen-routes", help="config_db.json fragment at a SONiC scale point (seed 002)"
    )
    gen.add_argument("--ipv4", type=int, default=0, help="IPv4 routes")
    gen.add_argument("--ipv6", type=int, default=0, help="IPv6 routes (prefixes longer than /64)")
    gen.add_argument("--arp", type=int, default=0, help="IPv4 neighbours")
    gen.add_argument("--nd", type=int, default=0, help="IPv6 neighbours")
    gen.add_argument("--ecmp", type=_ecmp, help="GROUPSxPATHS, e.g. 512x32")
    gen.add_argument("--ports", type=int, default=32, help="routed ports to spread over")
    gen.add_argument("-o", "--output", help="file (default: stdout)")
    gen.set_defaults(func=_gen_routes)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    return 2


if __name__ == "__main__":
    sys.exit(main())
