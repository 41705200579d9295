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
from .lab import HOST_QUEUE_MS, Lab, LabError
from .model import Scale
from .results import (
    Measurement,
    Results,
    drops,
    fetch_stats,
    iperf3_throughput,
    latency_samples_from_csv,
    queue_avg_bytes,
    queue_usage,
    roce_counters,
    table,
)
from .switch import hardware_priority

# DCQCN paper defaults (REFERENCES.md), at the nominal rate; scaled per run.
DCQCN_TIMER_US = 55.0
CNP_INTERVAL_US = 50.0
DCQCN_RAI_MBPS = 40.0
DCQCN_RHAI_MBPS = 400.0
DCQCN_MIN_RATE_MBPS = 1.0
TOOL_TIME_LIMIT_S = 600
# perftest's default retransmission timeout: 4.096 us x 2^14 (IB local ACK timeout 14).
RETRY_TIMEOUT_US = 67108.864
# QPNs of the incast's processes (two per sender, 4096 apart), clear of the other experiments'.
INCAST_QPN_BASE = 1 << 20


def poll_until(done, timeout_s: float, failure: str) -> None:
    """Poll `done()` with backoff (10 ms doubling to 200 ms); LabError naming `failure` if it
    is still false after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while not done():
        if time.monotonic() > deadline:
            raise LabError(f"{failure} after {timeout_s:.0f} s")
        time.sleep(delay)
        delay = min(2 * delay, 0.2)


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
        self.params = configdb.experiment_params(lab.topo.experiment, quick)
        self._qpn = 0
        self._port = 18515

    # --- host tools -------------------------------------------------------------------------

    def _next(self) -> tuple[int, int]:
        self._qpn += 4096 * 8
        self._port += 1
        return self._qpn, self._port

    def retry_timeout_us(self) -> float:
        """The retransmission timeout: perftest's, or twice the longest queueing delay.

        Queueing delays are dilated with the rates (a full buffer drains in buffer / (R x
        factor)), so perftest's 67 ms, far above any queueing delay at the nominal rate, would
        fire on a merely deep queue in the lab and turn congestion into spurious go-back-N
        retransmissions. The timeout is kept above a full switch buffer draining through the
        slowest lab link plus the host's shaper queue, and is otherwise not dilated.
        """
        slowest = min(self.scale.rate_mbps(link.rate_mbps) for link in self.topo.links)
        worst_queue_us = self.topo.buffer_bytes * 8 / slowest + HOST_QUEUE_MS * 1000
        return max(RETRY_TIMEOUT_US, 2 * worst_queue_us)

    def roce_args(self, host: str, dscp: int, dcqcn: bool) -> list[str]:
        _, _, rate = self.topo.host_link(host)
        sc = self.scale
        args = [
            "-d",
            f"{host}-eth0",
            "--rate",
            f"{sc.rate_mbps(rate) / 1000:g}",
            "--timeout-us",
            f"{self.retry_timeout_us():.0f}",
            "--dscp",
            str(dscp),
            "--peer-mac",
            self.topo.switches[self.topo.hosts[host].switch].mac,
            # Every host sits in its own subnet behind its ToR: peers are always routed.
            "--allow-remote",
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
            proc = node.popen(
                cmd,
                stdout=f,
                stderr=err,
                preexec_fn=hardware_priority if cmd[0] == "roce-host" else None,
            )
        self.lab.state.add_process(proc.pid, f"{name} on {host}")
        return HostProc(name, proc, out)

    def wait_listening(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        """Wait until a TCP server in `host`'s namespace listens on `port` (no fixed sleep)."""
        node = self.lab.net[host]
        poll_until(
            lambda: bool(node.cmd(f"ss -Hltn 'sport = :{port}'").strip()),
            timeout_s,
            f"nothing listens on {host}:{port}",
        )

    def wait_flowing(self, host: str, queue: int, packets: int = 64, timeout_s: float = 60.0):
        """Wait until `host`'s switch port has sent `packets` more from `queue` (a flow that
        was just started runs), so that a measurement beside it does not finish first."""
        sw, local = self.topo.hosts[host].switch, self.topo.host_link(host)[1].port
        addr = self.lab.stats_addrs().get(sw)
        if addr is None:
            return

        def sent() -> int:
            for port in fetch_stats(addr).get("ports", []):
                for q in port.get("queues", []) if port["port"] == local else []:
                    if q["queue"] == queue:
                        return q.get("tx_packets", 0)
            return 0

        start = sent()
        poll_until(
            lambda: sent() - start >= packets, timeout_s, f"no traffic on {host}'s queue {queue}"
        )

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
            self.lab.load(configdb.case_variants(p)[f"ecn={'on' if ecn else 'off'}"])
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
                if bw is not None:
                    self.wait_flowing(p["receiver"], case["bw_priority"])
                srv, cli = self.roce(
                    "write_lat",
                    p["lat_host"],
                    [p["receiver"]],
                    case["lat_priority"] * 8,
                    True,
                    ["-s", str(p["lat_size"]), "-n", str(p["lat_iters"])],
                    f"lat-{label.replace(' ', '-')}",
                )
                lat_report = self.finish(cli)
                lat = lat_report["latency"]
                reports = [lat_report, *(self.finish(s) for s in srv)]
                bw_gbps = None
                if bw is not None:
                    bw_report = self.finish(bw[1])
                    reports += [bw_report, *(self.finish(s) for s in bw[0])]
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
                            **roce_counters(reports),
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

    def outcome(self, hp: HostProc) -> tuple[dict | None, str | None]:
        """A tool's JSON report, or None and the reason it failed (its last stderr line).

        For the experiments whose point is that a mechanism is off (PFC-off incast), a QP
        that gives up (RetryExceeded) is a result, not a lab failure.
        """
        try:
            return self.finish(hp), None
        except LabError as e:
            lines = hp.out.with_suffix(".err").read_text(errors="replace").strip().splitlines()
            return None, (lines[-1] if lines else str(e))

    def incast(self, results: Results) -> None:
        p = self.params
        rows = []
        recv_ip = str(self.topo.hosts[p["receiver"]].ip.ip)
        for case in p["cases"]:
            self.lab.load(configdb.case_variants(p)[case["name"]])
            before = self.stats_now()
            pg_drops_before = self.lab.pg_drops(p["priority"])
            # One server process per sender (perftest runs one ib_write_bw server per client):
            # a sender whose QP fails then ends only its own test, not the other fifteen.
            servers = []
            for i, s in enumerate(p["senders"]):
                _, port = self._next()
                srv = self.start(
                    p["receiver"],
                    f"incast-{case['name']}-server-{s}",
                    [
                        "roce-host",
                        "write_bw",
                        *self.roce_args(p["receiver"], p["priority"] * 8, True),
                        "-p",
                        str(port),
                        "--qpn-base",
                        str(INCAST_QPN_BASE + 4096 * (2 * i + 1)),
                        "-m",
                        str(p["roce_mtu"]),
                    ],
                )
                servers.append((port, srv))
            for port, _ in servers:
                self.wait_listening(p["receiver"], port)
            clients = []
            started = time.monotonic()
            for i, (s, (port, _)) in enumerate(zip(p["senders"], servers, strict=True)):
                csv = self.workdir / "logs" / f"incast-{case['name']}-{s}.csv"
                hp = self.start(
                    s,
                    f"incast-{case['name']}-{s}",
                    [
                        "roce-host",
                        "write_bw",
                        *self.roce_args(s, p["priority"] * 8, True),
                        "-p",
                        str(port),
                        "--qpn-base",
                        str(INCAST_QPN_BASE + 4096 * 2 * i),
                        "-s",
                        str(p["size"]),
                        "-n",
                        str(p["iters"]),
                        "-m",
                        str(p["roce_mtu"]),
                        "--samples",
                        str(csv),
                        recv_ip,
                    ],
                )
                clients.append((s, csv, hp))
            outcomes = {s: self.outcome(hp) for s, _, hp in clients}
            elapsed = time.monotonic() - started
            # a server whose client failed exits with an error too
            server_reports = [self.outcome(srv)[0] for _, srv in servers]
            after = self.stats_now()
            samples = {s: latency_samples_from_csv(csv) for s, csv, _ in clients}
            lat = [self.scale.nominal_latency_us(x) for xs in samples.values() for x in xs]
            completed = sum(len(xs) for xs in samples.values())
            # Dropped on the lossless priority: by the pipeline's admission into its PG (a
            # lossy PG above the pool's threshold without PFC, a lossless one beyond its
            # headroom) or by the traffic manager on its queue.
            tm_drops = (
                sum(drops(a, p["priority"]) for a in after.values())
                - sum(drops(b, p["priority"]) for b in before.values())
                + self.lab.pg_drops(p["priority"])
                - pg_drops_before
            )
            failed = {s: err for s, (rep, err) in outcomes.items() if rep is None}
            counters = roce_counters(
                [r for r in [*(rep for rep, _ in outcomes.values()), *server_reports] if r]
            )
            # Goodput of the incast: bytes of completed messages over the case's wall time.
            bw = completed * p["size"] * 8 / elapsed / 1e6
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
                        "messages_posted": p["iters"] * len(p["senders"]),
                        "messages_completed": completed,
                        "drops_lossless": tm_drops,
                        **counters,
                        "qps_failed": len(failed),
                        "failures": failed,
                        "seconds_lab": elapsed,
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
                    f"{completed}/{p['iters'] * len(p['senders'])}",
                    len(failed),
                ]
            )
        results.tables.append(
            table(
                f"{len(p['senders'])}-to-1 incast, priority {p['priority']}",
                [
                    "profile",
                    "PFC",
                    "Bandwidth (Mbps, nominal)",
                    "Latency (us)",
                    "Drops",
                    "Messages",
                    "QPs failed",
                ],
                rows,
            )
        )

    def leafspine(self, results: Results) -> None:
        p = self.params
        recv = self.topo.hosts[p["receiver"]]
        tables = {}
        for sfc in (False, True):
            self.lab.load(configdb.case_variants(p)[f"sfc={'on' if sfc else 'off'}"])
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
        recv_switch, recv_port = recv.switch, self.topo.host_link(p["receiver"])[1].port
        before = self.stats_now().get(recv_switch)
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
        reports = [self.finish(c) for _, c in clients]
        after = self.stats_now().get(recv_switch)
        reports.append(self.finish(srv))
        # The receiver's port is the incast's congestion point: what SFC is to hold down.
        queue_bytes = (
            queue_avg_bytes(before, after, recv_port, p["roce_priority"])
            if before and after
            else None
        )
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
            values={
                "latency_avg_us_nominal": avg,
                "messages": len(lat),
                "queue_avg_bytes": queue_bytes,
                # the time a packet waits in that queue on average, at the nominal link rate
                "queueing_us_nominal": None
                if queue_bytes is None
                else queue_bytes * 8 / self.topo.host_link(p["receiver"])[2],
                **roce_counters(reports),
            },
            latency_us=lat,
            throughput=throughput,
        )


EXPERIMENTS = {
    "prio-2to1": Runner.prio_2to1,
    "incast": Runner.incast,
    "leafspine": Runner.leafspine,
}
