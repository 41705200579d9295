"""ROUTING=bgp: every switch routed by FRR, as SONiC runs it (topo/README.md, "ROUTING=bgp").

Per switch node, a network namespace `lab-<switch>` stands for the switch's control-plane CPU:
the lab makes a tap per routed port there and keeps it (`hostif.keep_taps`), `lossless-ctl run
--hostif` attaches to them (Ethernet0, ... with the config's
addresses and the router MAC; the punt path carries ARP and BGP between tap and port), and
FRR's zebra and bgpd run in it, zebra streaming its FIB over FPM to that `run`'s listener on the
namespace's loopback. The configs carry no STATIC_ROUTE: every route in the P4 tables beyond
the connected ones comes from BGP.

eBGP on the /31 of every switch-to-switch link, as SONiC's T0/T1 configs: a switch with hosts
(a leaf) has an AS of its own (65000 + its index), the others (spines) share AS 65100, so a
leaf's route back through another spine is refused by AS path, and `maximum-paths` makes the
paths through every spine one ECMP group. Leaves advertise their host subnets (`network`).

The switch does not report link state, so `CarrierSync` stands for SONiC's portsyncd: it
watches each switch port's interface (the root namespace's veth the switch runs on) and sets
its tap's carrier to match; FRR sees the port go down and up.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from lossless_ctl import config_db
from lossless_ctl.client import P4RuntimeClient, P4RuntimeError
from lossless_ctl.hostif import keep_taps
from lossless_ctl.neighbor import routed_interfaces
from lossless_ctl.p4info import P4InfoIndex, read_p4info
from lossless_ctl.show import RouteRow, neighbors, routes
from lossless_kit.frr import Frr, FrrError

from .configdb import port_name
from .model import Topology, ipv6_of

if TYPE_CHECKING:
    from .lab import Lab

FPM_PORT = 2620
SPINE_ASN = 65100
LEAF_ASN_BASE = 65000
# Seconds: BGP's keepalive/hold (FRR's datacenter defaults) and the connect retry after a
# session went down with its link.
KEEPALIVE_S, HOLD_S, CONNECT_RETRY_S = 3, 9, 2
# After zebra reconnects, the controller keeps the routes it has not sent again until it has
# been quiet this long: longer than bgpd takes to bring its sessions back (a few seconds).
FPM_RESTART_S = 30.0
READY_TIMEOUT_S = 120.0
CONVERGE_TIMEOUT_S = 120.0


class BgpError(RuntimeError):
    pass


def namespace(switch: str) -> str:
    return f"lab-{switch}"


def asn(topo: Topology, switch: str) -> int:
    leaf = any(h.switch == switch for h in topo.hosts.values())
    return LEAF_ASN_BASE + topo.switches[switch].index if leaf else SPINE_ASN


def bgpd_conf(topo: Topology, switch: str) -> str:
    """bgpd's config: a neighbour per switch-to-switch link, the host subnets as networks."""
    index = topo.switches[switch].index
    lines = [
        f"router bgp {asn(topo, switch)}",
        f" bgp router-id 10.254.{index // 256}.{index % 256}",
        " no bgp ebgp-requires-policy",
        " no bgp default ipv4-unicast",
        " bgp bestpath as-path multipath-relax",
        f" timers bgp {KEEPALIVE_S} {HOLD_S}",
    ]
    peers = [
        (remote.ip, asn(topo, remote.node))
        for _, remote, _ in topo.switch_links(switch)
        if remote.node in topo.switches and remote.ip is not None
    ]
    # A session per family: IPv4 over the link's /31, IPv6 over its /127.
    for ip, remote_as in peers:
        for address in (ip.ip, ipv6_of(ip).ip):
            lines += [
                f" neighbor {address} remote-as {remote_as}",
                f" neighbor {address} timers connect {CONNECT_RETRY_S}",
                f" neighbor {address} advertisement-interval 0",
            ]
    subnets = [h.ip for h in topo.hosts.values() if h.switch == switch]
    for family, of in (("ipv4", lambda ip: ip), ("ipv6", ipv6_of)):
        lines.append(f" address-family {family} unicast")
        for ip, _ in peers:
            lines.append(f"  neighbor {of(ip).ip} activate")
            if family == "ipv6":
                # bgpd would give zebra the peer's link-local next hop; the switch routes
                # through the /127's global address (SONiC's T0/T1 configs do the same).
                lines.append(f"  neighbor {of(ip).ip} route-map GLOBAL_NEXT_HOP in")
        lines += [f"  network {of(ip).network}" for ip in subnets]
        lines += ["  maximum-paths 64", " exit-address-family"]
    lines += ["exit", "route-map GLOBAL_NEXT_HOP permit 10", " set ipv6 next-hop prefer-global", ""]
    return "\n".join(lines)


def expected_routes(topo: Topology, switch: str) -> dict[ipaddress._BaseNetwork, int]:
    """Every remote host subnet, IPv4 and IPv6, with its number of equal-cost next hops (the
    model's ECMP)."""
    out: dict[ipaddress._BaseNetwork, int] = {}
    for prefix, hops in topo.routes(switch).items():
        out[ipaddress.ip_network(prefix)] = len(hops)
        out[ipv6_of(ipaddress.IPv4Interface(prefix)).network] = len(hops)
    return out


class CarrierSync(threading.Thread):
    """Each port's tap carrier follows its interface's oper state (polled every `period_s`)."""

    def __init__(self, ports: dict[str, tuple[str, str]], period_s: float = 0.05):
        super().__init__(name="carrier-sync", daemon=True)
        self.ports = ports  # root-namespace interface -> (namespace, tap)
        self.period_s = period_s
        self.state = {intf: True for intf in ports}
        self.changes: list[tuple[float, str, bool]] = []
        self._halt = threading.Event()  # not _stop: threading.Thread has a method of that name

    def run(self) -> None:
        while not self._halt.wait(self.period_s):
            for intf, (ns, tap) in self.ports.items():
                try:
                    up = Path(f"/sys/class/net/{intf}/operstate").read_text().strip() == "up"
                except OSError:
                    continue  # the lab is stopping
                if up != self.state[intf]:
                    self.state[intf] = up
                    self.changes.append((time.monotonic(), intf, up))
                    subprocess.run(
                        ["ip", "-n", ns, "link", "set", tap, "carrier", "on" if up else "off"],
                        capture_output=True,
                    )

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=2)


class BgpFabric:
    """Controllers with FPM and host interfaces, and FRR, on every switch of a lab."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.topo = lab.topo
        self.procs: dict[str, subprocess.Popen] = {}
        self.frr: dict[str, Frr] = {}
        self.carrier: CarrierSync | None = None
        self.kept: dict[str, list[int]] = {}  # the taps' keeper descriptors (keep_taps)
        self.index = P4InfoIndex(read_p4info(lab.pipeline.p4info))

    def log_path(self, switch: str) -> Path:
        return self.lab.workdir / f"{switch}.ctl.log"

    def _ready_count(self, switch: str) -> int:
        try:
            return self.log_path(switch).read_text().count("run: ready (session")
        except FileNotFoundError:
            return 0

    def _wait_ready(self, counts: dict[str, int]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        for sw, count in counts.items():
            while self._ready_count(sw) <= count:
                proc = self.procs[sw]
                if proc.poll() is not None or time.monotonic() > deadline:
                    what = "exited" if proc.poll() is not None else "is not ready"
                    tail = self.log_path(sw).read_text()[-3000:]
                    raise BgpError(f"{sw}: lossless-ctl run {what}:\n{tail}")
                time.sleep(0.1)

    def start(self) -> None:
        state = self.lab.state
        for sw in self.topo.switches:
            ns = namespace(sw)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            subprocess.run(["ip", "netns", "add", ns], check=True)
            state.add_namespace(ns)
            # IPv6 without duplicate address detection: a tap's address is usable at once
            # (nothing else on the /127 could hold it).
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
            for key in ("all.accept_dad=0", "default.accept_dad=0"):
                subprocess.run(
                    ["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}"],
                    check=True,
                    capture_output=True,
                )
        for sw in self.topo.switches:
            cfg, _ = config_db.parse(config_db.load_files([self.lab.config_path(sw)]))
            self.kept[sw] = keep_taps(namespace(sw), sorted(routed_interfaces(cfg)))
            self._start_controller(sw, "wb")
        self._wait_ready(dict.fromkeys(self.topo.switches, 0))
        for sw in self.topo.switches:
            self.frr[sw] = Frr(namespace(sw), FPM_PORT, {"bgpd": bgpd_conf(self.topo, sw)}, True)
            self._start_frr(sw)
        ports = {}
        for sw in self.topo.switches:
            for local, _, _ in self.topo.switch_links(sw):
                if local.ip is not None:
                    ports[local.intf] = (namespace(sw), port_name(local.port))
        self.carrier = CarrierSync(ports)
        self.carrier.start()
        self.wait_converged()
        self.host_ipv6()
        self.greet_hosts()

    def greet_hosts(self) -> None:
        """Each host pings its gateway, as a server's first packets would: the switch's kernel
        resolves it to answer, and the controller learns it from that ARP reply (the configs
        have no NEIGH), so traffic to it is not gleaned first."""
        for name, host in self.topo.hosts.items():
            gateway6 = ipv6_of(ipaddress.IPv4Interface(f"{host.gateway}/32")).ip
            for gateway in (host.gateway, gateway6):
                out = self.lab.net[name].cmd(f"ping -c 1 -W 2 {gateway}")
                if " 0% packet loss" not in out:
                    raise BgpError(f"{name} does not reach its gateway {gateway}:\n{out}")

    def host_ipv6(self) -> None:
        """The hosts' IPv6 (off for static routing): the address, a default route to the
        gateway and a permanent neighbour entry for it, as for IPv4."""
        for name, host in self.topo.hosts.items():
            node, intf = self.lab.net[name], f"{name}-eth0"
            gateway = ipv6_of(ipaddress.IPv4Interface(f"{host.gateway}/32")).ip
            for cmd in (
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=0",
                f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=0",
                f"sysctl -qw net.ipv6.conf.{intf}.accept_dad=0",
                f"ip -6 addr replace {ipv6_of(host.ip)} dev {intf}",
                f"ip -6 route replace default via {gateway} dev {intf}",
                f"ip -6 neigh replace {gateway} lladdr {self.topo.switches[host.switch].mac}"
                f" dev {intf} nud permanent",
            ):
                node.cmd(cmd)

    def clear_neighbors(self, switch: str) -> None:
        """`sonic-clear arp` on the switch: its controller removes every learned neighbour
        (those whose next hops routes use are kept pending removal) and asks for each again
        (SIGUSR1)."""
        self.procs[switch].send_signal(signal.SIGUSR1)

    def _start_controller(self, switch: str, mode: str) -> None:
        node = self.lab.net[switch]
        ns = namespace(switch)
        cmd = [
            *self.lab.ctl, "run", "--config", str(self.lab.config_path(switch)),
            "--switch", node.grpc_addr, "--pipeline", str(self.lab.pipeline.directory),
            "--device-id", str(node.device_id), "--fpm", f"127.0.0.1:{FPM_PORT}",
            "--fpm-netns", ns, "--fpm-restart", str(FPM_RESTART_S), "--hostif", ns, "--neighsync",
            *(["--stats", node.stats_addr] if node.stats_addr else []),
        ]  # fmt: skip
        with self.log_path(switch).open(mode) as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs[switch] = proc
        self.lab.state.add_process(proc.pid, f"lossless-ctl run {switch}")

    def restart_controller(self, switch: str) -> str:
        """Stop the switch's `lossless-ctl run` (SIGTERM) and start it again; returns what the
        new one logged up to ready (its reconcile). The taps are the lab's (keep_taps), so the
        kernel, FRR and BGP see nothing; the switch keeps forwarding meanwhile."""
        proc = self.procs[switch]
        proc.terminate()
        proc.wait(timeout=10)
        before = len(self.log_path(switch).read_text())
        count = self._ready_count(switch)
        self._start_controller(switch, "ab")
        self._wait_ready({switch: count})
        return self.log_path(switch).read_text()[before:]

    def _start_frr(self, switch: str) -> None:
        frr = self.frr[switch]
        try:
            frr.start()
        except FrrError as e:
            raise BgpError(f"{switch}: FRR: {e}\n{frr.logs()[-3000:]}") from e
        finally:
            for pid in frr.pids:
                self.lab.state.add_process(pid, f"FRR of {switch}")

    def restart_frr(self, switch: str) -> None:
        """Stop the switch's zebra and bgpd and start them again (a routing daemon restart:
        zebra, stopped first, retains its routes; the controller keeps them until zebra has
        sent them again)."""
        self.frr[switch].stop(zebra_first=True)
        self._start_frr(switch)

    def reload(self) -> None:
        """The configs were rewritten: every controller reads its own again (SIGHUP) and
        reconciles its switch; the FPM routes are written again, then waited for."""
        counts = {sw: self._ready_count(sw) for sw in self.procs}
        for proc in self.procs.values():
            proc.send_signal(signal.SIGHUP)
        self._wait_ready(counts)
        self.wait_converged()
        self.greet_hosts()

    def route_rows(self, switch: str) -> list[RouteRow]:
        node = self.lab.net[switch]
        with P4RuntimeClient(node.grpc_addr, device_id=node.device_id) as client:
            client.connect()
            return routes(client, self.index, 4, {}) + routes(client, self.index, 6, {})

    def neighbors(self, switch: str) -> dict[str, str]:
        """The switch's neighbour table: address -> MAC."""
        node = self.lab.net[switch]
        with P4RuntimeClient(node.grpc_addr, device_id=node.device_id) as client:
            client.connect()
            return {str(r.address): r.mac for r in neighbors(client, self.index, {})}

    def fpm_nexthops(self, switch: str) -> dict[ipaddress.IPv4Network, int]:
        """FPM routes on the switch's P4 tables, with their number of next hops."""
        return {r.prefix: len(r.nexthops) for r in self.route_rows(switch) if r.source == "fpm"}

    def sessions(self, switch: str) -> dict[str, str]:
        """BGP neighbour -> session state, from bgpd (both families)."""
        out = {}
        for family in ("ipv4", "ipv6"):
            data = json.loads(
                self.frr[switch].show(f"show bgp {family} unicast summary json") or "{}"
            )
            out |= {ip: peer.get("state", "?") for ip, peer in data.get("peers", {}).items()}
        return out

    def wait_converged(self, timeout_s: float = CONVERGE_TIMEOUT_S) -> float:
        """Until every switch's P4 tables hold the model's routes from FPM with all their
        equal-cost next hops; returns the seconds it took."""
        start = time.monotonic()
        pending = dict.fromkeys(self.topo.switches)
        while pending:
            for sw in list(pending):
                try:
                    have = self.fpm_nexthops(sw)
                except P4RuntimeError as e:
                    have = {"error": str(e)}
                want = expected_routes(self.topo, sw)
                if all(have.get(p) == n for p, n in want.items()):
                    del pending[sw]
                else:
                    pending[sw] = have
            if pending and time.monotonic() - start > timeout_s:
                detail = "; ".join(
                    f"{sw}: FPM routes {have}, BGP sessions {self.sessions(sw)}"
                    for sw, have in pending.items()
                )
                raise BgpError(f"BGP did not converge in {timeout_s:.0f} s: {detail}")
            if pending:
                time.sleep(0.5)
        return time.monotonic() - start

    def stop(self) -> None:
        if self.carrier is not None:
            self.carrier.stop()
        for proc in self.procs.values():
            proc.terminate()
        # Each Frr.stop waits for its daemons to exit, a second or more for zebra: all at once.
        with ThreadPoolExecutor(max_workers=len(self.frr) or 1) as pool:
            list(pool.map(Frr.stop, self.frr.values()))
        for frr in self.frr.values():
            frr.remove()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for fds in self.kept.values():
            for fd in fds:
                os.close(fd)
        for sw in self.topo.switches:
            subprocess.run(["ip", "netns", "del", namespace(sw)], capture_output=True)
        self.procs, self.frr, self.kept = {}, {}, {}
