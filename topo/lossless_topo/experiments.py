"""The three seed experiments, run on a started Lab: host commands, cases, tables.

Every rate given to a host tool is scaled (roce-host `--rate`, DCQCN's additive and hyper
increase and rate floor, iperf3 `-b`), every DCQCN timer dilated, and every latency reported
both as measured and at the nominal link rate (`Scale`).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import configdb
from .lab import Lab, LabError
from .model import Scale
from .results import (
    Measurement,
    Results,
    drops,
    fetch_stats,
    iperf3_throughput,
    latency_samples_from_csv,
    queue_usage,
    table,
)

# DCQCN paper defaults (REFERENCES.md), at the nominal rate; scaled per run.
DCQCN_TIMER_US = 55.0
CNP_INTERVAL_US = 50.0
DCQCN_RAI_MBPS = 40.0
DCQCN_RHAI_MBPS = 400.0
DCQCN_MIN_RATE_MBPS = 1.0
TOOL_TIME_LIMIT_S = 600


@dataclass
class HostProc:
    name: str
    proc: subprocess.Popen
    out: Path


class Runner:
    def __init__(self, lab: Lab, workdir: Path, quick: bool):
        self.lab = lab
        self.topo = lab.topo
        self.scale: Scale = lab.scale
        self.workdir = workdir
        self.quick = quick
        self.params = dict(lab.topo.experiment)
        if quick:
            self.params.update(self.params.get("quick", {}))
        self._qpn = 0
        self._port = 18515

    # --- host tools -------------------------------------------------------------------------

    def _next(self) -> tuple[int, int]:
        self._qpn += 4096 * 8
        self._port += 1
        return self._qpn, self._port

    def roce_args(self, host: str, dscp: int, dcqcn: bool) -> list[str]:
        _, _, rate = self.topo.host_link(host)
        sc = self.scale
        args = [
            "-d",
            f"{host}-eth0",
            "--rate",
            f"{sc.rate_mbps(rate) / 1000:g}",
            "--dscp",
            str(dscp),
            "--peer-mac",
            self.topo.switches[self.topo.hosts[host].switch].mac,
            "--time-limit",
            str(TOOL_TIME_LIMIT_S),
            "--json",
            "--dcqcn",
            "on" if dcqcn else "off",
        ]
        if dcqcn:
            args += [
                "--dcqcn-alpha-timer-us",
                f"{sc.duration_us(DCQCN_TIMER_US):g}",
                "--dcqcn-rate-timer-us",
                f"{sc.duration_us(DCQCN_TIMER_US):g}",
                "--cnp-interval-us",
                f"{sc.duration_us(CNP_INTERVAL_US):g}",
                "--dcqcn-rai-mbps",
                f"{float(DCQCN_RAI_MBPS * sc.factor):g}",
                "--dcqcn-rhai-mbps",
                f"{float(DCQCN_RHAI_MBPS * sc.factor):g}",
                "--dcqcn-min-rate-mbps",
                f"{float(DCQCN_MIN_RATE_MBPS * sc.factor):g}",
            ]
        return args

    def start(self, host: str, name: str, cmd: list[str]) -> HostProc:
        out = self.workdir / "logs" / f"{name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        node = self.lab.net[host]
        with open(out, "w") as f, open(out.with_suffix(".err"), "w") as err:
            proc = node.popen(cmd, stdout=f, stderr=err)
        self.lab.state.add_process(proc.pid, f"{name} on {host}")
        return HostProc(name, proc, out)

    def wait_listening(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        """Wait until a TCP server in `host`'s namespace listens on `port` (no fixed sleep)."""
        node = self.lab.net[host]
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while not node.cmd(f"ss -Hltn 'sport = :{port}'").strip():
            if time.monotonic() > deadline:
                raise LabError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")
            time.sleep(delay)
            delay = min(2 * delay, 0.2)

    def finish(self, hp: HostProc, timeout_s: float = TOOL_TIME_LIMIT_S + 30) -> dict:
        try:
            rc = hp.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            hp.proc.kill()
            raise LabError(f"{hp.name} did not finish in {timeout_s:.0f} s") from e
        text = hp.out.read_text()
        if rc != 0:
            err = hp.out.with_suffix(".err").read_text()
            raise LabError(f"{hp.name} exited with {rc}:\n{err[-2000:]}")
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise LabError(f"{hp.name}: output is not JSON ({e}): {text[:500]}") from e

    def roce(
        self,
        mode: str,
        client: str,
        servers: list[str],
        dscp: int,
        dcqcn: bool,
        extra: list[str],
        name: str,
    ) -> tuple[list[HostProc], HostProc]:
        qpn, port = self._next()
        srv = []
        for i, s in enumerate(servers):
            srv.append(
                self.start(
                    s,
                    f"{name}-server{i}",
                    [
                        "roce-host",
                        mode,
                        *self.roce_args(s, dscp, dcqcn),
                        "-p",
                        str(port),
                        "--qpn-base",
                        str(qpn + 4096 * (i + 1)),
                    ],
                )
            )
        peers = [str(self.topo.hosts[s].ip.ip) for s in servers]
        cli = self.start(
            client,
            f"{name}-client",
            [
                "roce-host",
                mode,
                *self.roce_args(client, dscp, dcqcn),
                "-p",
                str(port),
                "--qpn-base",
                str(qpn),
                *extra,
                *peers,
            ],
        )
        return srv, cli

    def stats_now(self) -> dict[str, dict]:
        return {sw: fetch_stats(addr) for sw, addr in self.lab.stats_addrs().items()}

    # --- experiments ------------------------------------------------------------------------

    def prio_2to1(self, results: Results) -> None:
        p = self.params
        rows = {}
        for ecn in (True, False):
            ek = p["ecn"]
            self.lab.load(
                configdb.Variant(
                    ecn=ecn, kmin=ek["kmin"], kmax=ek["kmax"], pmax_percent=ek["pmax_percent"]
                )
            )
            for case in p["cases"]:
                label = f"{case['name']} ecn={'on' if ecn else 'off'}"
                bw = None
                if case["bw_priority"] is not None:
                    # lab seconds: long enough to cover the write_lat run beside it
                    seconds = p["bw_seconds"]
                    bw = self.roce(
                        "write_bw",
                        p["bw_host"],
                        [p["receiver"]],
                        case["bw_priority"] * 8,
                        True,
                        ["-s", str(p["bw_size"]), "-D", f"{seconds:g}"],
                        f"bw-{label.replace(' ', '-')}",
                    )
                srv, cli = self.roce(
                    "write_lat",
                    p["lat_host"],
                    [p["receiver"]],
                    case["lat_priority"] * 8,
                    True,
                    ["-s", str(p["lat_size"]), "-n", str(p["lat_iters"])],
                    f"lat-{label.replace(' ', '-')}",
                )
                lat = self.finish(cli)["latency"]
                for s in srv:
                    self.finish(s)
                bw_gbps = None
                if bw is not None:
                    bw_report = self.finish(bw[1])
                    for s in bw[0]:
                        self.finish(s)
                    bw_gbps = bw_report["bw"]["bw_average_gbps"]
                nominal = self.scale.nominal_latency_us(lat["t_avg_usec"])
                results.measurements.append(
                    Measurement(
                        case=label,
                        params={"ecn": ecn, **case},
                        values={
                            "lat_t_avg_us_measured": lat["t_avg_usec"],
                            "lat_t_typical_us_measured": lat["t_typical_usec"],
                            "lat_t_avg_us_nominal": nominal,
                            "bw_gbps_lab": bw_gbps,
                        },
                    )
                )
                rows[(case["name"], ecn)] = nominal
        base = rows.get(("baseline", True))
        trs = [["(lat, bw) priorities", "ECN enabled on switches", "ECN disabled on switch"]]
        for case in p["cases"][1:]:
            trs.append(
                [
                    f"({case['lat_priority']}, {case['bw_priority']})",
                    rows.get((case["name"], True)),
                    rows.get((case["name"], False)),
                ]
            )
        results.tables.append(
            f"Baseline latency {base:.2f} us (nominal)\n"
            + table("write_lat t_avg (us at the nominal rate)", trs[0], trs[1:])
        )

    def incast(self, results: Results) -> None:
        p = self.params
        rows = []
        for case in p["cases"]:
            self.lab.load(
                configdb.Variant(pfc=case["pfc"], buffers=case["buffers"], roce_mtu=p["roce_mtu"])
            )
            before = self.stats_now()
            _, port = self._next()
            srv = self.start(
                p["receiver"],
                f"incast-{case['name']}-server",
                [
                    "roce-host",
                    "write_bw",
                    *self.roce_args(p["receiver"], p["priority"] * 8, True),
                    "-p",
                    str(port),
                    "--clients",
                    str(len(p["senders"])),
                    "-m",
                    str(p["roce_mtu"]),
                ],
            )
            clients = []
            for i, s in enumerate(p["senders"]):
                csv = self.workdir / "logs" / f"incast-{case['name']}-{s}.csv"
                clients.append(
                    (
                        csv,
                        self.start(
                            s,
                            f"incast-{case['name']}-{s}",
                            [
                                "roce-host",
                                "write_bw",
                                *self.roce_args(s, p["priority"] * 8, True),
                                "-p",
                                str(port),
                                "--qpn-base",
                                str(4096 * (i + 2)),
                                "-s",
                                str(p["size"]),
                                "-n",
                                str(p["iters"]),
                                "-m",
                                str(p["roce_mtu"]),
                                "--samples",
                                str(csv),
                                str(self.topo.hosts[p["receiver"]].ip.ip),
                            ],
                        ),
                    )
                )
            reports = [self.finish(c) for _, c in clients]
            self.finish(srv)
            after = self.stats_now()
            lat = [
                self.scale.nominal_latency_us(x)
                for csv, _ in clients
                for x in latency_samples_from_csv(csv)
            ]
            tm_drops = sum(drops(a, p["priority"]) for a in after.values()) - sum(
                drops(b, p["priority"]) for b in before.values()
            )
            retrans = sum(r["counters"].get("tx_retransmitted_pkts", 0) for r in reports)
            bw = sum(r["bw"]["bw_average_gbps"] for r in reports) * 1000
            avg = sum(lat) / len(lat) if lat else None
            results.measurements.append(
                Measurement(
                    case=case["name"],
                    params=case,
                    latency_us=lat,
                    values={
                        "bw_mbps_lab": bw,
                        "bw_mbps_nominal": bw / float(self.scale.factor),
                        "latency_avg_us_nominal": avg,
                        "drops_lossless": tm_drops,
                        "retransmissions": retrans,
                    },
                )
            )
            rows.append(
                [
                    case["name"],
                    "on" if case["pfc"] else "off",
                    bw / float(self.scale.factor),
                    avg,
                    tm_drops,
                ]
            )
        results.tables.append(
            table(
                f"{len(p['senders'])}-to-1 incast, priority {p['priority']}",
                ["profile", "PFC", "Bandwidth (Mbps, nominal)", "Latency (us)", "Drops"],
                rows,
            )
        )

    def leafspine(self, results: Results) -> None:
        p = self.params
        ek = p["ecn"]
        recv = self.topo.hosts[p["receiver"]]
        tables = {}
        for sfc in (False, True):
            self.lab.load(
                configdb.Variant(
                    ecn=True,
                    sfc=sfc,
                    kmin=ek["kmin"],
                    kmax=ek["kmax"],
                    pmax_percent=ek["pmax_percent"],
                    sfc_threshold=p["sfc_threshold_kmax"] * ek["kmax"],
                    roce_mtu=max(p["sizes"]),
                )
            )
            for size in p["sizes"]:
                for flows in p["flows_per_sender"]:
                    for mix in p["mixes"]:
                        label = f"sfc={'on' if sfc else 'off'} {mix} {size}B {flows}x7"
                        avg, m = self._leafspine_case(p, recv, mix, size, flows, label)
                        results.measurements.append(m)
                        tables.setdefault((size, flows), {}).setdefault(mix, {})[sfc] = avg
        for (size, flows), by_mix in sorted(tables.items()):
            rows = [
                [mix, float(size), f"{flows}*7", v.get(False), v.get(True)]
                for mix, v in by_mix.items()
            ]
            results.tables.append(
                table(
                    f"{size} B messages, {flows}x7 flows: average latency (us, nominal)",
                    ["roce:tcp", "Size(B)", "Flow number", "Without SFC", "With SFC"],
                    rows,
                )
            )
        final = self.stats_now().get(self.topo.hosts[p["receiver"]].switch, {})
        usage = [
            [
                u["queue"],
                f"{u['current_cells']}/{u['current_kb']}",
                f"{u['peak_cells']}/{u['peak_kb']}",
                f"{u['average_cells']}/{u['average_kb']}",
            ]
            for u in queue_usage(final)
            if u["port"] == self.topo.host_link(p["receiver"])[1].port
        ]
        results.tables.append(
            table(
                "Buffer Usage on each Queue: (cells/KBytes)",
                ["QueueIndex", "Current", "Peak", "Average"],
                usage,
            )
        )

    def _leafspine_case(self, p, recv, mix, size, flows, label):
        roce_share, tcp_share = (int(x) for x in mix.split(":"))
        _, _, rate = self.topo.host_link(p["receiver"])
        tcp_mbps = self.scale.rate_mbps(rate) * tcp_share / (roce_share + tcp_share)
        seconds = p["seconds"]
        _, port = self._next()
        iperf_srv = [
            self.start(
                p["receiver"],
                f"{label}-iperf-server{i}".replace(" ", "_"),
                ["iperf3", "-s", "-1", "-J", "-p", str(5201 + i)],
            )
            for i in range(len(p["senders"]))
        ]
        for i in range(len(p["senders"])):
            self.wait_listening(p["receiver"], 5201 + i)
        iperf = []
        for i, s in enumerate(p["senders"]):
            iperf.append(
                self.start(
                    s,
                    f"{label}-iperf-{s}".replace(" ", "_"),
                    [
                        "iperf3",
                        "-c",
                        str(recv.ip.ip),
                        "-p",
                        str(5201 + i),
                        "-J",
                        "-t",
                        str(seconds),
                        "-b",
                        f"{tcp_mbps / len(p['senders']):.3f}M",
                        "--connect-timeout",
                        "30000",
                        "-S",
                        str(p["tcp_priority"] * 8 * 4),
                    ],
                )
            )
        srv = self.start(
            p["receiver"],
            f"{label}-roce-server".replace(" ", "_"),
            [
                "roce-host",
                "write_bw",
                *self.roce_args(p["receiver"], p["roce_priority"] * 8 + 2, True),
                "-p",
                str(port),
                "--clients",
                str(len(p["senders"])),
            ],
        )
        clients = []
        for i, s in enumerate(p["senders"]):
            csv = self.workdir / "logs" / f"{label}-{s}.csv".replace(" ", "_")
            clients.append(
                (
                    csv,
                    self.start(
                        s,
                        f"{label}-roce-{s}".replace(" ", "_"),
                        [
                            "roce-host",
                            "write_bw",
                            *self.roce_args(s, p["roce_priority"] * 8 + 2, True),
                            "-p",
                            str(port),
                            "--qpn-base",
                            str(4096 * (i + 2) * 64),
                            "-s",
                            str(size),
                            "-n",
                            str(p["iters"]),
                            "-q",
                            str(flows),
                            "-t",
                            "1",
                            "--samples",
                            str(csv),
                            str(recv.ip.ip),
                        ],
                    ),
                )
            )
        for _, c in clients:
            self.finish(c)
        self.finish(srv)
        throughput = {}
        for hp in iperf:
            throughput.update(
                {f"{hp.name}:{k}": v for k, v in iperf3_throughput(self.finish(hp)).items()}
            )
        for hp in iperf_srv:
            self.finish(hp)
        lat = [
            self.scale.nominal_latency_us(x)
            for csv, _ in clients
            for x in latency_samples_from_csv(csv)
        ]
        avg = sum(lat) / len(lat) if lat else None
        return avg, Measurement(
            case=label,
            params={"mix": mix, "size": size, "flows": flows},
            values={"latency_avg_us_nominal": avg},
            latency_us=lat,
            throughput=throughput,
        )


EXPERIMENTS = {
    "prio-2to1": Runner.prio_2to1,
    "incast": Runner.incast,
    "leafspine": Runner.leafspine,
}
