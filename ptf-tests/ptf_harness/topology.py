"""The test topology: the switch in one network namespace, the PTF ports in another.

    namespace <prefix>-sw                 namespace <prefix>-ptf
    switch: port N on swN  <-- veth -->   PTF port N on hN        (N = 1..ports)
    swm 169.254.77.1/30    <-- veth -->   hm 169.254.77.2/30      (P4Runtime, management)

The test ports carry only what the tests and the switch send: IPv6 (router solicitations, MLD)
is off on them and they have no addresses. Both namespaces are the harness's own, named by a
prefix, so a run left behind by a crash is removed by the next one.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

SWITCH_MGMT_IP = "169.254.77.1"
PTF_MGMT_IP = "169.254.77.2"
MTU = 9216


class TopologyError(Exception):
    pass


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise TopologyError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


@dataclass(frozen=True)
class Topology:
    ports: int = 4
    prefix: str = "llptf"

    @property
    def switch_ns(self) -> str:
        return f"{self.prefix}-sw"

    @property
    def ptf_ns(self) -> str:
        return f"{self.prefix}-ptf"

    def switch_iface(self, port: int) -> str:
        return f"sw{port}"

    def ptf_iface(self, port: int) -> str:
        return f"h{port}"

    def port_numbers(self) -> list[int]:
        return list(range(1, self.ports + 1))

    def exists(self) -> bool:
        names = _ip("netns", "list").stdout.split()
        return self.switch_ns in names or self.ptf_ns in names

    def up(self) -> None:
        """Create both namespaces and all links; removes a stale topology of the same prefix."""
        self.down()
        try:
            for ns in (self.switch_ns, self.ptf_ns):
                _ip("netns", "add", ns)
                self._in(ns, "link", "set", "lo", "up")
                for conf in ("all", "default"):
                    self._sysctl(ns, f"net.ipv6.conf.{conf}.disable_ipv6=1")
            for port in self.port_numbers():
                self._veth(self.switch_iface(port), self.ptf_iface(port))
            self._veth("swm", "hm")
            self._in(self.switch_ns, "addr", "add", f"{SWITCH_MGMT_IP}/30", "dev", "swm")
            self._in(self.ptf_ns, "addr", "add", f"{PTF_MGMT_IP}/30", "dev", "hm")
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Delete both namespaces (their veths go with them). Safe to call at any time."""
        for ns in (self.switch_ns, self.ptf_ns):
            _ip("netns", "del", ns, check=False)

    def _veth(self, switch_end: str, ptf_end: str) -> None:
        # Created in the switch namespace, the peer moved into the PTF namespace at creation.
        self._in(
            self.switch_ns, "link", "add", switch_end, "type", "veth",
            "peer", "name", ptf_end, "netns", self.ptf_ns,
        )  # fmt: skip
        for ns, iface in ((self.switch_ns, switch_end), (self.ptf_ns, ptf_end)):
            self._in(ns, "link", "set", iface, "mtu", str(MTU), "up")

    def _in(self, ns: str, *args: str) -> None:
        _ip("-n", ns, *args)

    def _sysctl(self, ns: str, setting: str) -> None:
        proc = subprocess.run(
            ["ip", "netns", "exec", ns, "sysctl", "-q", "-w", setting],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise TopologyError(f"{ns}: sysctl {setting}: {proc.stderr.strip()}")

    def exec_prefix(self, ns: str) -> list[str]:
        """A command line prefix that runs a program in namespace `ns` (same PID: `ip netns
        exec` execs the program after entering the namespace)."""
        return ["ip", "netns", "exec", ns]
